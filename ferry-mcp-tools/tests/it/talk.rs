//! `ferry_talk` through the protocol: what each refusal tells the agent, peeking, and long
//! texts read through their `ferry://<project>/msg/<id>` link.

use ferry_mcp_core::channel::ops;
use ferry_mcp_core::channel::session::Actor;
use ferry_mcp_testkit::temp_channel::TempChannel;
use serde_json::json;

use crate::support::{agent, error_text, fleet, log_len, post, read, report, serve, talk, texts};

#[test]
fn what_a_worker_an_unseated_and_a_paused_agent_each_get_when_posting() {
    let temp = fleet();
    let post_args = json!({ "action": "post", "to": "alice", "text": "may I take order m2?" });

    let worker = error_text(&talk(&mut agent(&temp, "wendy"), post_args.clone()));
    let unseated = error_text(&talk(
        &mut serve(&temp, Actor::Agent(TempChannel::agent("ghost"))),
        post_args.clone(),
    ));
    ops::pause(temp.home(), "the disk is being replaced", temp.now()).unwrap();
    let paused = error_text(&talk(&mut agent(&temp, "bob"), post_args));
    report(
        "talk_refusals.txt",
        &format!(
            "what each got from ferry_talk post:\n- a Worker (wendy): {worker}\n- an unseated agent (ghost, never joined): {unseated}\n- an agent on a paused machine (bob): {paused}"
        ),
    );

    assert!(
        worker.starts_with("denied: level worker: post needs member "),
        "{worker}"
    );
    assert!(
        unseated.starts_with("unseated: ghost is not seated"),
        "{unseated}"
    );
    assert!(
        unseated.contains("`ferry channel join --as ghost --project demo`"),
        "{unseated}"
    );
    assert!(
        paused.starts_with("paused: the machine is paused"),
        "{paused}"
    );
    assert!(paused.contains("the disk is being replaced"), "{paused}");
    assert!(paused.contains("ferry resume"), "{paused}");
}

#[test]
fn an_unknown_recipient_is_refused_with_the_names_it_could_have_meant_and_nothing_is_written() {
    let temp = fleet();
    let before = log_len(&temp, "alice");
    let text = error_text(&talk(
        &mut agent(&temp, "alice"),
        json!({ "action": "post", "to": "bobb", "text": "are you there?" }),
    ));
    assert_eq!(
        text,
        "unknown_recipient: bobb is not on the roster; did you mean bob?"
    );
    assert_eq!(log_len(&temp, "alice"), before);
    assert!(texts(&read(&mut agent(&temp, "bob"))).is_empty());
}

#[test]
fn a_reply_to_an_unknown_message_is_refused() {
    let temp = fleet();
    let before = log_len(&temp, "alice");
    let text = error_text(&talk(
        &mut agent(&temp, "alice"),
        json!({ "action": "post", "to": "bob", "text": "agreed", "reply_to": "bob-99" }),
    ));
    assert_eq!(text, "unknown_message: unknown message bob-99");
    assert_eq!(log_len(&temp, "alice"), before);
}

#[test]
fn a_peek_through_the_tool_leaves_the_message_for_the_next_read() {
    let temp = fleet();
    post(&mut agent(&temp, "alice"), "bob", "the staging box is free");
    let mut bob = agent(&temp, "bob");
    let peeked = talk(&mut bob, json!({ "action": "read", "peek": true }));
    assert_eq!(
        peeked["content"][0]["text"],
        "1 new message (peek: still unread)"
    );
    assert_eq!(texts(&read(&mut bob)), ["the staging box is free"]);
    assert!(texts(&read(&mut bob)).is_empty());
}

#[test]
fn a_read_on_a_paused_machine_says_the_messages_stay_unread() {
    let temp = fleet();
    post(&mut agent(&temp, "alice"), "bob", "the staging box is free");
    ops::pause(temp.home(), "maintenance", temp.now()).unwrap();
    let mut bob = agent(&temp, "bob");
    let result = talk(&mut bob, json!({ "action": "read" }));
    assert_eq!(
        result["content"][0]["text"],
        "1 new message (the machine is paused: still unread)"
    );
    assert_eq!(texts(&read(&mut bob)), ["the staging box is free"]);
}

/// Ordinary prose of `len` characters (no code, no secret).
fn long_text(len: usize) -> String {
    let sentence = "The migration ran on every machine of the fleet and the numbers look right. ";
    sentence.chars().cycle().take(len).collect()
}

#[test]
fn a_long_post_is_read_as_its_first_300_characters_with_a_link_to_the_whole_text() {
    let temp = fleet();
    let text = long_text(1_500);
    let id = post(&mut agent(&temp, "alice"), "bob", &text);

    let mut bob = agent(&temp, "bob");
    let got = read(&mut bob);
    let message = &got["messages"][0];
    assert_eq!(message["id"], id.as_str());
    let start: String = text.chars().take(300).collect();
    assert_eq!(message["text"], start.as_str());
    let link = message["link"].as_str().unwrap();
    assert_eq!(link, format!("ferry://demo/msg/{id}"));

    let resource = bob.result("resources/read", json!({ "uri": link }));
    let whole = resource["contents"][0]["text"].as_str().unwrap();
    assert!(whole.starts_with("From alice to bob:"), "{whole}");
    assert!(whole.ends_with(&text), "{whole}");
    assert_eq!(resource["contents"][0]["mimeType"], "text/plain");
}

#[test]
fn a_long_message_read_comes_with_a_resource_link_content_item_and_a_short_one_without() {
    let temp = fleet();
    let mut alice = agent(&temp, "alice");
    let long = post(&mut alice, "bob", &long_text(1_500));
    post(&mut alice, "bob", "short and sweet");
    let mut bob = agent(&temp, "bob");
    let result = bob.call("ferry_talk", json!({ "action": "read" }));
    assert_ne!(result["isError"], true, "{result}");
    let links: Vec<&str> = result["content"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|item| item["type"] == "resource_link")
        .map(|item| item["uri"].as_str().unwrap())
        .collect();
    assert_eq!(links, [format!("ferry://demo/msg/{long}")]);
}

#[test]
fn a_short_post_has_no_link() {
    let temp = fleet();
    post(&mut agent(&temp, "alice"), "bob", "short and sweet");
    let got = read(&mut agent(&temp, "bob"));
    assert!(got["messages"][0].get("link").is_none(), "{got}");
}

#[test]
fn a_link_to_an_unknown_message_is_not_found() {
    let temp = fleet();
    let mut bob = agent(&temp, "bob");
    let error = bob.error(
        "resources/read",
        json!({ "uri": "ferry://demo/msg/alice-99" }),
    );
    assert!(
        error["message"]
            .as_str()
            .unwrap()
            .contains("resource not found"),
        "{error}"
    );
}

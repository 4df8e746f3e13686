//! The opt-in `admin` group: `ferry_get` reads a `ferry://` link for a client that cannot read
//! resources, and `ferry_status` shows the channel as `ferry channel status` does, with what
//! anyone wrote into the folder masked.

use std::fs;

use ferry_mcp_core::channel::session::Actor;
use ferry_mcp_testkit::session::Session;
use ferry_mcp_testkit::temp_channel::TempChannel;
use serde_json::{Value, json};

use crate::support::{error_text, fleet, github_token, post, serve_groups};

fn admin(temp: &TempChannel, name: &str) -> Session {
    serve_groups(
        temp,
        Actor::Agent(TempChannel::agent(name)),
        &[&ferry_mcp_tools::ADMIN, &ferry_mcp_tools::CORE],
    )
}

fn structured(result: &Value) -> &Value {
    assert_ne!(result["isError"], true, "{result}");
    &result["structuredContent"]
}

#[test]
fn ferry_get_reads_the_whole_text_behind_a_message_link() {
    let temp = fleet();
    let long = format!("the plan, at length: {}", "step after step. ".repeat(40));
    let id = post(&mut admin(&temp, "alice"), "bob", &long);
    let mut bob = admin(&temp, "bob");
    let uri = format!("ferry://demo/msg/{id}");
    let got = bob.call("ferry_get", json!({ "uri": uri }));
    let out = structured(&got);
    assert_eq!(out["uri"], uri);
    assert_eq!(out["text"], format!("From alice to bob:\n\n{long}"));
    assert!(out.get("truncated").is_none(), "{out}");
}

#[test]
fn ferry_get_refuses_a_link_to_nothing_to_another_project_or_that_is_not_a_link() {
    let temp = fleet();
    let mut bob = admin(&temp, "bob");
    for (uri, code) in [
        ("ferry://demo/msg/alice-99", "not_found: "),
        ("ferry://other/msg/alice-1", "not_found: "),
        ("ferry://demo/secret/x", "not_found: "),
        ("https://example.com/x", "invalid: "),
    ] {
        let text = error_text(&bob.call("ferry_get", json!({ "uri": uri })));
        assert!(text.starts_with(code), "{uri}: {text}");
    }
}

#[test]
fn ferry_status_lists_the_agents_and_a_problem_planted_in_the_folder_with_its_secret_masked() {
    let temp = fleet();
    let token = github_token();
    fs::write(temp.channel_dir().join(format!("{token}.txt")), b"x").unwrap();
    let mut bob = admin(&temp, "bob");
    let result = bob.call("ferry_status", json!({}));
    let out = structured(&result);
    let agents: Vec<(String, String)> = out["agents"]
        .as_array()
        .unwrap()
        .iter()
        .map(|row| {
            (
                row["name"].as_str().unwrap().to_owned(),
                row["level"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    assert_eq!(
        agents,
        [
            ("alice".to_owned(), "member".to_owned()),
            ("bob".to_owned(), "member".to_owned()),
            ("carol".to_owned(), "member".to_owned()),
            ("wendy".to_owned(), "worker".to_owned()),
        ]
    );
    let problems = out["problems"].as_array().unwrap();
    assert_eq!(out["problems_total"], problems.len());
    assert!(
        problems.iter().any(|line| line
            .as_str()
            .unwrap()
            .contains("not part of the channel format")),
        "{out}"
    );
    assert!(!result.to_string().contains(&token), "the token came back");
}

#[test]
fn every_admin_tool_refuses_an_unseated_agent_with_the_command_that_seats_it() {
    let temp = fleet();
    let mut ghost = admin(&temp, "ghost");
    for (tool, args) in [
        ("ferry_status", json!({})),
        ("ferry_get", json!({ "uri": "ferry://demo/msg/alice-1" })),
        ("ferry_search", json!({ "query": "parser" })),
    ] {
        let text = error_text(&ghost.call(tool, args));
        assert!(
            text.starts_with("unseated: ghost is not seated"),
            "{tool}: {text}"
        );
        assert!(
            text.contains("`ferry channel join --as ghost --project demo`"),
            "{tool}: {text}"
        );
    }
}

#[test]
fn the_admin_tools_change_nothing_in_the_channel() {
    let temp = fleet();
    let before = crate::support::files(temp.channel_dir());
    let mut bob = admin(&temp, "bob");
    structured(&bob.call("ferry_status", json!({})));
    let _ = bob.call("ferry_get", json!({ "uri": "ferry://demo/msg/alice-99" }));
    // Nothing is written, not even bob's presence.
    let after = crate::support::files(temp.channel_dir());
    let changed: Vec<&String> = after
        .iter()
        .filter(|(path, bytes)| before.get(*path) != Some(bytes))
        .map(|(path, _)| path)
        .collect();
    assert!(changed.is_empty(), "{changed:?}");
}

#[test]
fn ferry_search_finds_a_message_to_the_caller_and_refuses_a_query_too_short() {
    let temp = fleet();
    let id = post(
        &mut admin(&temp, "alice"),
        "bob",
        "the parser review is at noon",
    );
    post(&mut admin(&temp, "alice"), "carol", "the parser is late");
    let mut bob = admin(&temp, "bob");
    let result = bob.call("ferry_search", json!({ "query": "parser" }));
    let out = structured(&result);
    assert_eq!(out["total"], 1, "{out}");
    assert_eq!(out["hits"][0]["kind"], "msg");
    assert_eq!(out["hits"][0]["id"], id);
    assert_eq!(
        out["hits"][0]["line"],
        "alice: the parser review is at noon"
    );
    let text = error_text(&bob.call("ferry_search", json!({ "query": "p" })));
    assert!(text.starts_with("invalid: a query is 2 to 200"), "{text}");
}

#[test]
fn a_ferry_search_page_that_leaves_hits_out_says_it_is_truncated_and_the_last_does_not() {
    let temp = fleet();
    let mut alice = admin(&temp, "alice");
    for n in 1..=25 {
        post(&mut alice, "bob", &format!("parser note number {n}"));
    }
    let mut bob = admin(&temp, "bob");
    let first = bob.call("ferry_search", json!({ "query": "parser" }));
    let out = structured(&first).clone();
    assert_eq!(out["total"], 25, "{out}");
    assert_eq!(out["truncated"], true, "{out}");
    let next = out["next"].as_str().unwrap().to_owned();
    let last = bob.call("ferry_search", json!({ "query": "parser", "cursor": next }));
    let out = structured(&last);
    assert!(out.get("truncated").is_none(), "{out}");
    assert!(out.get("next").is_none(), "{out}");
}

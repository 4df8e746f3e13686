//! The guard through the tools: a secret or a diff an agent posts is refused before anything
//! is written; code is fine in a progress line; secrets the human wrote are masked when an
//! agent reads them back.

use ferry_mcp_core::channel::ops::orders::{self, IssueRequest};
use ferry_mcp_testkit::plant;
use serde_json::{Value, json};

use crate::support::{agent, diff, error_text, files, fleet, github_token, log_len, read, talk};

#[test]
fn a_secret_in_a_post_is_refused_with_code_secret_and_nothing_is_written() {
    let temp = fleet();
    let token = github_token();
    let mut alice = agent(&temp, "alice");
    // Open the session first, so that what it writes on opening is not counted.
    read(&mut alice);
    let before = files(temp.channel_dir());
    let log_before = log_len(&temp, "alice");

    let short = format!("here is the key: {token}");
    // A long one would have gone to a blob: the guard comes first.
    let long = format!(
        "{} and the key is {token}",
        "The deploy needs the token again. ".repeat(20)
    );
    for text in [short, long] {
        let refused = error_text(&talk(
            &mut alice,
            json!({ "action": "post", "to": "bob", "text": text }),
        ));
        assert!(refused.starts_with("secret: "), "{refused}");
        assert!(refused.contains("ferry channel secret"), "{refused}");
        assert!(!refused.contains(&token), "the refusal repeats the secret");
    }
    assert_eq!(log_len(&temp, "alice"), log_before);
    assert!(
        files(temp.channel_dir()) == before,
        "the channel folder changed"
    );
    assert!(read(&mut agent(&temp, "bob"))["messages"] == json!([]));
}

#[test]
fn a_diff_in_a_post_is_refused_with_code_code_and_nothing_is_written() {
    let temp = fleet();
    let mut alice = agent(&temp, "alice");
    read(&mut alice);
    let before = log_len(&temp, "alice");
    let refused = error_text(&talk(
        &mut alice,
        json!({ "action": "post", "to": "all", "text": diff() }),
    ));
    assert!(refused.starts_with("code: "), "{refused}");
    assert!(refused.contains("git ref"), "{refused}");
    assert_eq!(log_len(&temp, "alice"), before);
}

#[test]
fn a_diff_in_a_progress_line_is_allowed() {
    let temp = fleet();
    let request = IssueRequest {
        title: "Add the guard module".into(),
        ..IssueRequest::default()
    };
    let id = orders::issue(&mut temp.master_session(), &request, temp.now()).unwrap();
    let mut alice = agent(&temp, "alice");
    let claimed = alice.call("ferry_orders", json!({ "action": "claim", "id": id }));
    assert_ne!(claimed["isError"], true, "{claimed}");
    let progress = alice.call(
        "ferry_orders",
        json!({ "action": "progress", "id": id, "note": diff() }),
    );
    assert_ne!(progress["isError"], true, "{progress}");
    let shown = alice.call("ferry_orders", json!({ "action": "show", "id": id }));
    let line = shown["structuredContent"]["order"]["progress"]
        .as_str()
        .unwrap();
    assert!(line.starts_with("alice: diff --git"), "{line}");
}

/// Every string in `value`, joined: what a model could read of an answer.
fn all_text(value: &Value) -> String {
    value.to_string()
}

#[test]
fn a_secret_in_an_order_the_human_wrote_is_masked_when_an_agent_shows_it() {
    let temp = fleet();
    let token = github_token();
    // Planted as a client without the guard would write it: the operations refuse it now.
    let id = plant::order(
        &mut temp.master_session(),
        &format!("Rotate {token} before Friday"),
        Some(&format!("The old deploy key is {token}; rotate it.")),
        false,
        temp.now(),
    );

    let mut alice = agent(&temp, "alice");
    let shown = alice.call("ferry_orders", json!({ "action": "show", "id": id }));
    assert_ne!(shown["isError"], true, "{shown}");
    assert!(!all_text(&shown).contains(&token), "{shown}");
    assert_eq!(shown["structuredContent"]["redacted"], true, "{shown}");
    assert_eq!(
        shown["structuredContent"]["order"]["title"],
        "Rotate [redacted: github_token] before Friday"
    );

    let listed = alice.call("ferry_orders", json!({ "action": "list" }));
    assert!(!all_text(&listed).contains(&token), "{listed}");
    assert_eq!(listed["structuredContent"]["redacted"], true, "{listed}");

    let body = alice.result(
        "resources/read",
        json!({ "uri": format!("ferry://demo/order/{id}") }),
    );
    let text = body["contents"][0]["text"].as_str().unwrap();
    assert!(!text.contains(&token), "{text}");
    assert!(
        text.contains("The old deploy key is [redacted: github_token]; rotate it."),
        "{text}"
    );
}

#[test]
fn a_secret_only_in_the_body_of_an_order_never_reaches_the_agent_that_shows_it() {
    let temp = fleet();
    let token = github_token();
    let id = plant::order(
        &mut temp.master_session(),
        "Rotate the deploy key",
        Some(&format!("The old deploy key is {token}; rotate it.")),
        false,
        temp.now(),
    );
    let mut alice = agent(&temp, "alice");
    let shown = alice.call("ferry_orders", json!({ "action": "show", "id": id }));
    assert!(!all_text(&shown).contains(&token), "{shown}");
    let body = alice.result(
        "resources/read",
        json!({ "uri": format!("ferry://demo/order/{id}") }),
    );
    assert!(!all_text(&body).contains(&token), "{body}");
}

#[test]
fn a_secret_in_a_message_the_human_sent_is_masked_when_the_agent_reads_it() {
    let temp = fleet();
    let token = github_token();
    let id = plant::post(
        &mut temp.master_session(),
        "bob",
        &format!("use {token} for the deploy"),
        temp.now(),
    );

    let mut bob = agent(&temp, "bob");
    let result = talk(&mut bob, json!({ "action": "read" }));
    assert!(!all_text(&result).contains(&token), "{result}");
    let got = &result["structuredContent"];
    assert_eq!(got["redacted"], true, "{got}");
    assert_eq!(
        got["messages"][0]["text"],
        "use [redacted: github_token] for the deploy"
    );

    let whole = bob.result(
        "resources/read",
        json!({ "uri": format!("ferry://demo/msg/{id}") }),
    );
    assert!(!all_text(&whole).contains(&token), "{whole}");
    assert!(
        whole["contents"][0]["text"]
            .as_str()
            .unwrap()
            .ends_with("use [redacted: github_token] for the deploy")
    );
}

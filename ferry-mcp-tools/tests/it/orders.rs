//! `ferry_orders` over JSON-RPC: protocol servers of agents on one temporary channel, each
//! reaching it through its own lazily opened session, driven by the testkit's scripted client
//! (which checks every `tools/call` result against the tool's outputSchema).

use ferry_mcp_core::channel::fold::levels::Level;
use ferry_mcp_core::channel::ops::orders::{self, IssueRequest};
use ferry_mcp_core::channel::session::{Actor, LazySession};
use ferry_mcp_core::protocol::{Server, ServerConfig};
use ferry_mcp_core::registry::Surface;
use ferry_mcp_testkit::session::Session;
use ferry_mcp_testkit::temp_channel::TempChannel;
use serde_json::{Value, json};

/// A server of the `core` group for the agent `name`, initialized.
fn agent_server(temp: &TempChannel, name: &str) -> Session {
    let surface = Surface::build(&[&ferry_mcp_tools::CORE], false).unwrap();
    let config = ServerConfig {
        name: "ferry",
        version: "0.0.0-test",
        instructions: ferry_mcp_tools::CORE_INSTRUCTIONS.to_owned(),
        project: temp.project().to_string(),
    };
    let lazy = LazySession::new(
        temp.home().clone(),
        temp.project().clone(),
        Actor::Agent(TempChannel::agent(name)),
    );
    let server = Server::new(config, surface).with_channel(Box::new(lazy));
    let mut session = Session::new(server);
    session.initialize("2025-11-25");
    session
}

fn issue(temp: &TempChannel, title: &str, review: bool) -> String {
    let request = IssueRequest {
        title: title.into(),
        review,
        ..IssueRequest::default()
    };
    orders::issue(&mut temp.master_session(), &request, temp.now()).unwrap()
}

/// Replaces what changes from run to run or with the setup: `since` cursors, and the ids
/// named in `ids` (wherever they appear, whole words only).
struct Redactor {
    ids: Vec<(String, String)>,
}

impl Redactor {
    fn value(&self, value: &Value) -> Value {
        match value {
            Value::String(text) if is_cursor(text) => Value::from("[cursor]"),
            Value::String(text) => Value::from(self.text(text)),
            Value::Array(items) => {
                Value::Array(items.iter().map(|item| self.value(item)).collect())
            }
            Value::Object(map) => Value::Object(
                map.iter()
                    .map(|(key, value)| (key.clone(), self.value(value)))
                    .collect(),
            ),
            other => other.clone(),
        }
    }

    fn text(&self, text: &str) -> String {
        let mut out = String::new();
        let mut word = String::new();
        let flush = |word: &mut String, out: &mut String| {
            let replaced = self
                .ids
                .iter()
                .find(|(id, _)| id == word)
                .map_or(word.as_str(), |(_, with)| with.as_str());
            out.push_str(replaced);
            word.clear();
        };
        for c in text.chars() {
            if c.is_ascii_alphanumeric() || c == '-' {
                word.push(c);
            } else {
                flush(&mut word, &mut out);
                out.push(c);
            }
        }
        flush(&mut word, &mut out);
        out
    }
}

/// `s<base36>.<base36>`.
fn is_cursor(text: &str) -> bool {
    text.strip_prefix('s')
        .and_then(|rest| rest.split_once('.'))
        .is_some_and(|(generation, counter)| {
            [generation, counter].iter().all(|part| {
                !part.is_empty()
                    && part
                        .chars()
                        .all(|c| c.is_ascii_digit() || c.is_ascii_lowercase())
            })
        })
}

#[test]
fn a_member_claims_reports_and_submits_an_orchestrator_accepts_and_since_shows_only_that() {
    let temp = TempChannel::with_each_level();
    let parser = issue(&temp, "Write the parser", true);
    let docs = issue(&temp, "Update the docs", false);
    let mut member = agent_server(&temp, "member");
    let mut orchestrator = agent_server(&temp, "orchestrator");
    let mut transcript = Vec::new();
    let mut call = |who: &str, session: &mut Session, arguments: Value| -> Value {
        let result = session.call("ferry_orders", arguments.clone());
        transcript.push(json!({"as": who, "arguments": arguments, "result": result}));
        result
    };

    let board = call("member", &mut member, json!({"action": "list"}));
    let rows = &board["structuredContent"]["orders"];
    assert_eq!(rows.as_array().map(Vec::len), Some(2), "{board}");
    let cursor = board["structuredContent"]["next"]
        .as_str()
        .unwrap()
        .to_owned();

    let shown = call(
        "member",
        &mut member,
        json!({"action": "show", "id": parser}),
    );
    assert_eq!(shown["structuredContent"]["order"]["review"], true);
    let claimed = call(
        "member",
        &mut member,
        json!({"action": "claim", "id": parser}),
    );
    assert_eq!(claimed["structuredContent"]["outcome"], "claimed");
    let progress = call(
        "member",
        &mut member,
        json!({"action": "progress", "id": parser, "note": "tokens done, grammar next"}),
    );
    assert_eq!(progress["structuredContent"]["state"], "in_progress");
    let submitted = call(
        "member",
        &mut member,
        json!({"action": "submit", "id": parser, "ref": "feature/parser", "note": "parser with tests"}),
    );
    assert_eq!(submitted["structuredContent"]["state"], "submitted");
    // The author of a submission does not review it (a Member could not review at all).
    let denied = call(
        "member",
        &mut member,
        json!({"action": "review", "id": parser, "verdict": "accept"}),
    );
    assert_eq!(denied["isError"], true);
    let refusal = denied["content"][0]["text"].as_str().unwrap();
    assert!(refusal.starts_with("own_submission: "), "{refusal}");
    let reviewed = call(
        "orchestrator",
        &mut orchestrator,
        json!({"action": "review", "id": parser, "verdict": "accept", "notes": "clean"}),
    );
    assert_eq!(reviewed["structuredContent"]["state"], "accepted");

    let news = call(
        "member",
        &mut member,
        json!({"action": "list", "since": cursor}),
    );
    let rows = news["structuredContent"]["orders"].as_array().unwrap();
    assert_eq!(rows.len(), 1, "only the order that changed: {news}");
    assert_eq!(rows[0]["id"], parser.as_str());
    assert_eq!(rows[0]["state"], "accepted");
    assert_ne!(news["structuredContent"]["reset"], true);

    let redactor = Redactor {
        ids: vec![
            (parser.clone(), "[parser]".into()),
            (docs.clone(), "[docs]".into()),
        ],
    };
    let transcript = redactor.value(&Value::Array(transcript));
    insta::assert_snapshot!(serde_json::to_string_pretty(&transcript).unwrap());
}

#[test]
fn a_workers_hand_in_is_submitted_by_the_holder_with_ref_the_hand_in_id() {
    let temp = TempChannel::builder()
        .agent("worker", Level::Worker)
        .agent("member", Level::Member)
        .build()
        .unwrap();
    let id = issue(&temp, "Split the work", false);
    let mut member = agent_server(&temp, "member");
    let mut worker = agent_server(&temp, "worker");
    // The Worker may not claim, but it may hand in for the holder.
    let refused = worker.call("ferry_orders", json!({"action": "claim", "id": id}));
    assert_eq!(refused["isError"], true);
    assert_eq!(
        refused["content"][0]["text"],
        "denied: level worker: claim needs member (ask the human with ferry_ask_human)"
    );
    let claimed = member.call("ferry_orders", json!({"action": "claim", "id": id}));
    assert_eq!(claimed["structuredContent"]["outcome"], "claimed");
    let handed = worker.call(
        "ferry_orders",
        json!({"action": "handin", "id": id, "ref": "worker/lexer", "note": "the lexer"}),
    );
    let handin = handed["structuredContent"]["handin"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(handin.starts_with("worker-"), "{handed}");
    let submitted = member.call(
        "ferry_orders",
        json!({"action": "submit", "id": id, "ref": handin, "note": "the worker's lexer"}),
    );
    assert_eq!(submitted["structuredContent"]["state"], "accepted");
    let detail = orders::show(&mut temp.view(), &id, None, temp.now()).unwrap();
    let submission = detail.submission.unwrap();
    assert_eq!(submission.handin.as_deref(), Some(handin.as_str()));
    assert_eq!(submission.git_ref, None);
}

#[test]
fn a_capped_list_of_the_board_says_how_many_orders_there_are_and_that_it_is_truncated() {
    let temp = TempChannel::builder()
        .agent("alice", Level::Member)
        .build()
        .unwrap();
    for n in 1..=25 {
        issue(&temp, &format!("Order number {n}"), false);
    }
    let mut alice = agent_server(&temp, "alice");
    let result = alice.call("ferry_orders", json!({ "action": "list" }));
    let out = &result["structuredContent"];
    assert_eq!(out["orders"].as_array().unwrap().len(), 20, "{out}");
    assert_eq!(out["truncated"], true, "{out}");
    assert_eq!(out["total"], 25, "{out}");
    let text = result["content"][0]["text"].as_str().unwrap();
    assert!(text.starts_with("20 of 25 orders"), "{text}");
    let next = out["next"].as_str().unwrap().to_owned();
    let rest = alice.call("ferry_orders", json!({ "action": "list", "since": next }));
    assert!(rest["structuredContent"].get("total").is_none(), "{rest}");
}

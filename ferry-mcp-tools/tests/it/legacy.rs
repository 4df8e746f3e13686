//! The opt-in `legacy` group: the original server's eight read tools, under their names and
//! arguments, reading this channel (ADR 0019), capped and masked like every other tool, and
//! writing nothing.

use ferry_mcp_core::channel::fold::levels::Level;
use ferry_mcp_core::channel::fold::state::orders::Verdict;
use ferry_mcp_core::channel::ops::orders::{self, IssueRequest, SubmitRequest};
use ferry_mcp_core::channel::ops::primary;
use ferry_mcp_core::channel::session::Actor;
use ferry_mcp_testkit::session::Session;
use ferry_mcp_testkit::temp_channel::TempChannel;
use serde_json::{Value, json};

use crate::support::{error_text, files, github_token, serve_groups};

/// Project `demo` with Members alice and bob and an Orchestrator, olga.
fn board() -> TempChannel {
    TempChannel::builder()
        .agent("alice", Level::Member)
        .agent("bob", Level::Member)
        .agent("olga", Level::Orchestrator)
        .build()
        .unwrap()
}

fn legacy(temp: &TempChannel, name: &str) -> Session {
    serve_groups(
        temp,
        Actor::Agent(TempChannel::agent(name)),
        &[&ferry_mcp_tools::CORE, &ferry_mcp_tools::LEGACY],
    )
}

fn issue(temp: &TempChannel, title: &str, review: bool) -> String {
    let request = IssueRequest {
        title: title.into(),
        review,
        ..IssueRequest::default()
    };
    orders::issue(&mut temp.master_session(), &request, temp.now()).unwrap()
}

/// `agent` claims order `id` and submits a ref with `summary`.
fn claim_and_submit(temp: &TempChannel, agent: &str, id: &str, summary: &str) {
    let mut session = temp.agent_session(agent);
    orders::claim(&mut session, id, temp.now()).unwrap();
    let request = SubmitRequest {
        handin: None,
        git_ref: Some("0123456789abcdef0123456789abcdef01234567".into()),
        summary: summary.into(),
    };
    orders::submit(&mut session, id, &request, temp.now()).unwrap();
    session.save().unwrap();
}

fn review(temp: &TempChannel, id: &str, verdict: Verdict, notes: &str) {
    let mut session = temp.agent_session("olga");
    orders::review(&mut session, id, verdict, Some(notes), temp.now()).unwrap();
    session.save().unwrap();
}

fn structured(result: &Value) -> &Value {
    assert_ne!(result["isError"], true, "{result}");
    &result["structuredContent"]
}

fn ids(list: &Value) -> Vec<String> {
    list.as_array()
        .unwrap()
        .iter()
        .map(|row| row["id"].as_str().unwrap().to_owned())
        .collect()
}

#[test]
fn channel_status_counts_the_orders_by_the_original_s_state_names() {
    let temp = board();
    issue(&temp, "Write the lexer", false);
    let reviewed = issue(&temp, "Write the parser", true);
    claim_and_submit(&temp, "alice", &reviewed, "parser in place");
    let mut bob = legacy(&temp, "bob");
    let out = structured(&bob.call("channel_status", json!({}))).clone();
    assert_eq!(out["project"], "demo");
    assert_eq!(out["agents"], 3);
    assert_eq!(out["total"], 2);
    assert_eq!(out["tasks"], json!({"awaiting_review": 1, "open": 1}));
}

#[test]
fn list_tasks_filters_by_the_original_s_names_and_by_ours_and_refuses_an_unknown_one() {
    let temp = board();
    let open = issue(&temp, "Write the lexer", false);
    let reviewed = issue(&temp, "Write the parser", true);
    claim_and_submit(&temp, "alice", &reviewed, "parser in place");
    let mut bob = legacy(&temp, "bob");
    let all = structured(&bob.call("list_tasks", json!({}))).clone();
    assert_eq!(ids(&all["tasks"]), [open.clone(), reviewed.clone()]);
    assert_eq!(all["total"], 2);
    assert!(all.get("truncated").is_none(), "{all}");
    for name in ["awaiting_review", "submitted"] {
        let listed = structured(&bob.call("list_tasks", json!({ "state": name }))).clone();
        assert_eq!(
            ids(&listed["tasks"]),
            std::slice::from_ref(&reviewed),
            "{name}"
        );
        assert_eq!(listed["tasks"][0]["state"], "awaiting_review");
        assert_eq!(listed["tasks"][0]["holder"], "alice");
    }
    let refused = error_text(&bob.call("list_tasks", json!({ "state": "lost" })));
    assert!(refused.starts_with("invalid: "), "{refused}");
    assert!(refused.contains("awaiting_review"), "{refused}");
}

#[test]
fn a_long_board_is_listed_twenty_at_a_time_with_its_total_and_a_cursor_to_the_rest() {
    let temp = board();
    let issued: Vec<String> = (1..=25)
        .map(|n| issue(&temp, &format!("Order number {n}"), false))
        .collect();
    let mut bob = legacy(&temp, "bob");
    let first = structured(&bob.call("list_tasks", json!({}))).clone();
    assert_eq!(first["total"], 25);
    assert_eq!(first["truncated"], true);
    let shown = ids(&first["tasks"]);
    assert_eq!(shown.len(), 20);
    let next = first["next"].as_str().unwrap();
    let rest = structured(&bob.call("list_tasks", json!({ "cursor": next }))).clone();
    assert!(rest.get("truncated").is_none(), "{rest}");
    let mut seen = shown;
    seen.extend(ids(&rest["tasks"]));
    assert_eq!(seen, issued);
    let refused = error_text(&bob.call("list_tasks", json!({ "cursor": "not-ours" })));
    assert!(refused.starts_with("invalid: "), "{refused}");
}

#[test]
fn get_task_shows_one_order_with_a_link_to_its_body_in_both_the_content_and_the_structure() {
    let temp = board();
    let id = issue(&temp, "Write the lexer", false);
    let mut bob = legacy(&temp, "bob");
    let result = bob.call("get_task", json!({ "id": id }));
    let out = structured(&result).clone();
    assert_eq!(out["task"]["id"], id.as_str());
    assert_eq!(out["state"], "open");
    let link = format!("ferry://demo/order/{id}");
    assert_eq!(out["link"], link.as_str());
    let linked = result["content"]
        .as_array()
        .unwrap()
        .iter()
        .any(|item| item["type"] == "resource_link" && item["uri"] == link.as_str());
    assert!(linked, "{result}");
    let missing = error_text(&bob.call("get_task", json!({ "id": "m999" })));
    assert!(missing.starts_with("unknown_order: "), "{missing}");
}

#[test]
fn read_memory_lists_the_brief_and_the_decisions_and_reads_each() {
    let temp = board();
    let mut olga = temp.agent_session("olga");
    primary::takeover(&mut olga, temp.now()).unwrap();
    primary::set_brief(
        &mut olga,
        "Ship the parser",
        &["Review every order".to_owned()],
        temp.now(),
    )
    .unwrap();
    primary::decide(&mut olga, "The lexer keeps its own errors", temp.now()).unwrap();
    primary::decide(&mut olga, "Spans are byte offsets", temp.now()).unwrap();
    olga.save().unwrap();
    let mut bob = legacy(&temp, "bob");
    let listed = structured(&bob.call("read_memory", json!({}))).clone();
    assert_eq!(
        listed["files"],
        json!([{"name": "brief", "items": 2}, {"name": "decisions", "items": 2}])
    );
    let brief = structured(&bob.call("read_memory", json!({ "file": "brief" }))).clone();
    assert_eq!(brief["brief"]["objective"], "Ship the parser");
    assert_eq!(brief["brief"]["by"], "olga");
    let decisions = structured(&bob.call("read_memory", json!({ "file": "decisions" }))).clone();
    assert_eq!(decisions["total"], 2);
    assert_eq!(decisions["decisions"][0]["line"], "Spans are byte offsets");
    assert!(decisions["decisions"][0]["at"].as_u64().is_some());
    let refused = error_text(&bob.call("read_memory", json!({ "file": "../keys" })));
    assert!(refused.starts_with("invalid: "), "{refused}");
}

#[test]
fn the_catch_up_s_decisions_carry_when_they_were_made() {
    let temp = board();
    let mut olga = temp.agent_session("olga");
    primary::takeover(&mut olga, temp.now()).unwrap();
    primary::decide(&mut olga, "Spans are byte offsets", temp.now()).unwrap();
    olga.save().unwrap();
    let mut bob = legacy(&temp, "bob");
    let out = structured(&bob.call("ferry_catchup", json!({}))).clone();
    assert_eq!(out["decisions"][0]["line"], "Spans are byte offsets");
    assert_eq!(out["decisions"][0]["at"], temp.now().0);
}

#[test]
fn list_ledger_shows_the_latest_changes_newest_first_within_the_limit_it_was_given() {
    let temp = board();
    let first = issue(&temp, "First", false);
    let second = issue(&temp, "Second", false);
    let third = issue(&temp, "Third", false);
    let mut bob = legacy(&temp, "bob");
    let all = structured(&bob.call("list_ledger", json!({}))).clone();
    assert_eq!(ids(&all["tasks"]), [third.clone(), second.clone(), first]);
    let two = structured(&bob.call("list_ledger", json!({ "limit": 2 }))).clone();
    assert_eq!(ids(&two["tasks"]), [third, second]);
    assert_eq!(two["total"], 2);
    for limit in [0, 501] {
        let refused = error_text(&bob.call("list_ledger", json!({ "limit": limit })));
        assert!(refused.contains("limit is 1 to 500"), "{limit}: {refused}");
    }
}

#[test]
fn list_learnings_and_list_engines_read_the_verdicts_and_the_acceptance_per_agent() {
    let temp = board();
    let accepted = issue(&temp, "Write the lexer", true);
    let sent_back = issue(&temp, "Write the parser", true);
    claim_and_submit(&temp, "alice", &accepted, "lexer in place");
    claim_and_submit(&temp, "bob", &sent_back, "parser in place");
    review(&temp, &accepted, Verdict::Accept, "clean and tested");
    review(&temp, &sent_back, Verdict::Changes, "spans are off by one");
    let mut bob = legacy(&temp, "bob");
    let learnings = structured(&bob.call("list_learnings", json!({}))).clone();
    assert_eq!(learnings["total"], 2);
    let rows = learnings["learnings"].as_array().unwrap();
    assert_eq!(rows[0]["id"], sent_back.as_str());
    assert_eq!(rows[0]["verdict"], "changes");
    assert_eq!(rows[0]["notes"], "spans are off by one");
    assert_eq!(rows[0]["summary"], "parser in place");
    assert_eq!(rows[1]["verdict"], "accept");
    assert_eq!(rows[1]["by"], "olga");
    let engines = structured(&bob.call("list_engines", json!({}))).clone();
    assert_eq!(
        engines["engines"],
        json!([
            {"agent": "alice", "submitted": 1, "accepted": 1, "confidence": 0.67},
            {"agent": "bob", "submitted": 1, "accepted": 0, "confidence": 0.33},
        ])
    );
    assert_eq!(engines["total"], 2);
}

#[test]
fn discover_lists_the_seated_agents_with_their_level_key_and_what_it_allows() {
    let temp = board();
    let mut bob = legacy(&temp, "bob");
    let out = structured(&bob.call("discover", json!({}))).clone();
    assert_eq!(out["total"], 3);
    let agents = out["agents"].as_array().unwrap();
    let olga = agents.iter().find(|row| row["name"] == "olga").unwrap();
    assert_eq!(olga["role"], "orchestrator");
    assert_eq!(olga["key"].as_str().unwrap().len(), 16);
    assert!(
        olga["capabilities"]
            .as_array()
            .unwrap()
            .contains(&json!("review"))
    );
    let alice = agents.iter().find(|row| row["name"] == "alice").unwrap();
    assert!(
        !alice["capabilities"]
            .as_array()
            .unwrap()
            .contains(&json!("review"))
    );
}

#[test]
fn a_secret_in_an_order_title_is_masked_by_every_legacy_list() {
    let temp = board();
    let token = github_token();
    // Planted as a client without the guard would write it: the operations refuse it.
    let id = ferry_mcp_testkit::plant::order(
        &mut temp.master_session(),
        &format!("Rotate {token} today"),
        None,
        true,
        temp.now(),
    );
    claim_and_submit(&temp, "alice", &id, "rotated");
    review(&temp, &id, Verdict::Accept, "done");
    let mut bob = legacy(&temp, "bob");
    for (tool, args) in [
        ("list_tasks", json!({})),
        ("list_ledger", json!({})),
        ("list_learnings", json!({})),
        ("get_task", json!({ "id": id })),
    ] {
        let result = bob.call(tool, args);
        let out = structured(&result);
        assert!(!result.to_string().contains(&token), "{tool}: {result}");
        assert_eq!(out["redacted"], true, "{tool}: {out}");
    }
}

#[test]
fn the_legacy_tools_write_nothing_into_the_channel() {
    let temp = board();
    let id = issue(&temp, "Write the lexer", false);
    let mut bob = legacy(&temp, "bob");
    // Open the session first: what opening writes (presence) is not the tools'.
    structured(&bob.call("channel_status", json!({})));
    let before = files(temp.channel_dir());
    for (tool, args) in [
        ("channel_status", json!({})),
        ("discover", json!({})),
        ("list_tasks", json!({})),
        ("get_task", json!({ "id": id })),
        ("read_memory", json!({})),
        ("list_ledger", json!({})),
        ("list_learnings", json!({})),
        ("list_engines", json!({})),
    ] {
        structured(&bob.call(tool, args));
    }
    assert!(
        files(temp.channel_dir()) == before,
        "a legacy tool changed the channel folder"
    );
}

#[test]
fn every_legacy_tool_is_read_only_and_says_what_it_reads_here() {
    for tool in ferry_mcp_tools::LEGACY.tools {
        let definition = tool.definition();
        assert!(definition.annotations.read_only, "{}", definition.name);
        assert!(
            definition.output_schema.is_some(),
            "{} has no outputSchema",
            definition.name
        );
        assert!(!definition.description.is_empty(), "{}", definition.name);
    }
    let names: Vec<&str> = ferry_mcp_tools::LEGACY
        .tools
        .iter()
        .map(|tool| tool.definition().name)
        .collect();
    assert_eq!(
        names,
        [
            "channel_status",
            "discover",
            "get_task",
            "list_engines",
            "list_learnings",
            "list_ledger",
            "list_tasks",
            "read_memory"
        ]
    );
}

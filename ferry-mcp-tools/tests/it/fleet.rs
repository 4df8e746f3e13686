//! The fleet tools through the protocol (`ferry_join`, `ferry_catchup`, `ferry_primary`,
//! `ferry_ask_human`, with `ferry_orders` and `ferry_talk`): what an unseated, a locked, a Worker
//! and a paused agent each get from every core tool, taking over, presence, who is alive, an
//! order whose holder went silent, resource links in the catch-up, and that no tool answers an
//! ask.

use std::fmt::Write as _;
use std::fs;

use ferry_mcp_core::channel::fold::identity::Seat;
use ferry_mcp_core::channel::fold::levels::Level;
use ferry_mcp_core::channel::fold::state::asks::AskState;
use ferry_mcp_core::channel::machine::home::KeyHolder;
use ferry_mcp_core::channel::ops::asks::{self, RaiseRequest};
use ferry_mcp_core::channel::ops::orders::{self, IssueRequest};
use ferry_mcp_core::channel::ops::{self, primary};
use ferry_mcp_core::channel::session::Actor;
use ferry_mcp_testkit::session::Session;
use ferry_mcp_testkit::temp_channel::{TEST_SEAL_COST, TempChannel};
use serde_json::{Value, json};

use crate::support::{agent, error_text, files, read, report, serve, texts};

/// The quiet period the master sets in these tests.
const QUIET_S: u64 = 120;

fn set_quiet_period(temp: &TempChannel) {
    primary::set_quiet_period(&mut temp.master_session(), QUIET_S, temp.now()).unwrap();
}

/// The server of `name`, its clock moved to the channel's.
fn at_now(session: &mut Session, temp: &TempChannel) {
    session.set_now(temp.now());
}

/// The first line of what a call answered: its error text, or `ok`.
fn got(result: &Value) -> String {
    if result["isError"] == true {
        error_text(result)
    } else {
        "ok".to_owned()
    }
}

fn summary(result: &Value) -> String {
    result["content"][0]["text"].as_str().unwrap().to_owned()
}

fn issue(temp: &TempChannel, title: &str, body: Option<&str>) -> String {
    let request = IssueRequest {
        title: title.into(),
        body: body.map(str::to_owned),
        ..IssueRequest::default()
    };
    orders::issue(&mut temp.master_session(), &request, temp.now()).unwrap()
}

/// How many lines (entries) `name`'s log holds.
fn log_lines(temp: &TempChannel, name: &str) -> Vec<String> {
    let view = temp.view();
    let agent = TempChannel::agent(name);
    let key = view.identity().holder(&agent).expect("a seated agent");
    fs::read_to_string(view.channel().log_path(&agent, key))
        .map(|text| text.lines().map(str::to_owned).collect())
        .unwrap_or_default()
}

fn kind_of(line: &str) -> String {
    let value: Value = serde_json::from_str(line).unwrap();
    value["entry"]["kind"].as_str().unwrap().to_owned()
}

// ---- every core tool as an unseated, a locked, a Worker and a paused agent ----

/// One call of the table: a label and the tool's arguments.
fn calls(order: &str, ask: &str) -> Vec<(&'static str, &'static str, Value)> {
    vec![
        ("join", "ferry_join", json!({})),
        ("catchup", "ferry_catchup", json!({})),
        ("orders list", "ferry_orders", json!({"action": "list"})),
        (
            "orders claim",
            "ferry_orders",
            json!({"action": "claim", "id": order}),
        ),
        (
            "orders handin",
            "ferry_orders",
            json!({"action": "handin", "id": order, "ref": "part/lexer", "note": "the lexer"}),
        ),
        ("talk read", "ferry_talk", json!({"action": "read"})),
        (
            "talk post",
            "ferry_talk",
            json!({"action": "post", "to": "alice", "text": "may I take the order?"}),
        ),
        (
            "primary status",
            "ferry_primary",
            json!({"action": "status"}),
        ),
        (
            "primary standby",
            "ferry_primary",
            json!({"action": "standby"}),
        ),
        (
            "primary takeover",
            "ferry_primary",
            json!({"action": "takeover"}),
        ),
        (
            "ask raise",
            "ferry_ask_human",
            json!({"action": "raise", "title": "May I take it?", "recommendation": "yes"}),
        ),
        (
            "ask status",
            "ferry_ask_human",
            json!({"action": "status", "id": ask}),
        ),
    ]
}

/// What a row expects of each call, in the order of [`calls`]: a prefix of the first line of
/// the answer (`ok` for a success).
fn expected(row: &str) -> Vec<String> {
    let unseated = "unseated: ghost is not seated: no key for it on this machine (run `ferry channel join --as ghost --project demo`)";
    let locked = "locked: lena's key is locked: run `ferry key unlock --as lena --project demo`";
    let paused = "paused: the machine is paused (the disk is being replaced): ";
    let level = |operation: &str, needed: &str| {
        format!(
            "denied: level worker: {operation} needs {needed} (ask the human with ferry_ask_human)"
        )
    };
    let ok = "ok".to_owned();
    match row {
        "unseated" => std::iter::once(ok)
            .chain(std::iter::repeat_n(unseated.to_owned(), 11))
            .collect(),
        "locked" => std::iter::once(ok)
            .chain(std::iter::repeat_n(locked.to_owned(), 11))
            .collect(),
        "worker" => vec![
            ok.clone(),
            ok.clone(),
            ok.clone(),
            level("claim", "member"),
            ok.clone(),
            ok.clone(),
            level("post", "member"),
            ok.clone(),
            ok.clone(),
            level("take over", "orchestrator"),
            ok.clone(),
            ok,
        ],
        "paused member" => vec![
            ok.clone(),
            ok.clone(),
            ok.clone(),
            format!("{paused}claim is refused until `ferry resume`"),
            format!("{paused}hand in is refused until `ferry resume`"),
            ok.clone(),
            format!("{paused}post is refused until `ferry resume`"),
            ok.clone(),
            format!("{paused}stand by is refused until `ferry resume`"),
            format!("{paused}take over is refused until `ferry resume`"),
            format!("{paused}ask is refused until `ferry resume`"),
            ok,
        ],
        other => panic!("no row {other}"),
    }
}

#[test]
fn an_unseated_a_locked_a_worker_and_a_paused_agent_each_get_what_their_standing_allows_from_every_core_tool()
 {
    let temp = TempChannel::builder()
        .agent("alice", Level::Member)
        .agent("wendy", Level::Worker)
        .agent("lena", Level::Member)
        .agent("mona", Level::Member)
        .build()
        .unwrap();
    let order = issue(&temp, "Write the lexer", None);
    let ask = asks::raise(
        &mut temp.agent_session("alice"),
        &RaiseRequest {
            title: "Merge the lexer?".into(),
            recommendation: "yes".into(),
            reasoning: String::new(),
        },
        temp.now(),
    )
    .unwrap();
    temp.home()
        .seal_key(
            temp.project(),
            &KeyHolder::Agent(TempChannel::agent("lena")),
            b"correct horse",
            TEST_SEAL_COST,
        )
        .unwrap();
    let calls = calls(&order, &ask);
    let keys = temp.home_dir().join("projects/demo/keys");
    let mut table: Vec<(&str, Vec<String>, Vec<Value>)> = Vec::new();
    for (row, name) in [
        ("unseated", "ghost"),
        ("locked", "lena"),
        ("worker", "wendy"),
        ("paused member", "mona"),
    ] {
        if row == "paused member" {
            ops::pause(temp.home(), "the disk is being replaced", temp.now()).unwrap();
        }
        let channel_before = files(temp.channel_dir());
        let mine_before = (name == "mona").then(|| log_lines(&temp, "mona"));
        let mut server = serve(&temp, Actor::Agent(TempChannel::agent(name)));
        let results: Vec<Value> = calls
            .iter()
            .map(|(_, tool, args)| server.call(tool, args.clone()))
            .collect();
        let answers = results.iter().map(got).collect();
        match row {
            "unseated" | "locked" => assert_eq!(
                files(temp.channel_dir()),
                channel_before,
                "{row}: something was written to the channel"
            ),
            "paused member" => assert_eq!(
                Some(log_lines(&temp, "mona")),
                mine_before,
                "the paused member wrote"
            ),
            _ => {}
        }
        table.push((row, answers, results));
    }

    // The table: what each got from each call (the first line of the text, or ok).
    let width = calls.iter().map(|(label, _, _)| label.len()).max().unwrap();
    let mut text = String::new();
    for (row, answers, results) in &table {
        let _ = writeln!(text, "{row}:");
        for ((label, _, _), (answer, result)) in calls.iter().zip(answers.iter().zip(results)) {
            let shown = if *label == "join" {
                format!("ok: {}", summary(result))
            } else {
                answer.clone()
            };
            let _ = writeln!(text, "  {label:<width$}  {shown}");
        }
    }
    report("fleet_standing_table.txt", &text);

    let mut wrong = Vec::new();
    for (row, answers, _) in &table {
        for (((label, _, _), answer), want) in calls.iter().zip(answers).zip(expected(row)) {
            if !answer.starts_with(&want) {
                wrong.push(format!(
                    "{row} / {label}: expected {want:?}, got {answer:?}"
                ));
            }
        }
    }
    assert!(wrong.is_empty(), "cells that differ:\n{}", wrong.join("\n"));

    // Join tells the unseated agent the command that seats it, and creates nothing.
    let joined = |row: &str| &table.iter().find(|(r, _, _)| *r == row).unwrap().2[0];
    let ghost = &joined("unseated")["structuredContent"];
    assert_eq!(
        (&ghost["granted"], &ghost["level"], &ghost["fix"]),
        (
            &json!(false),
            &json!("none"),
            &json!("ferry channel join --as ghost --project demo")
        ),
        "{ghost}"
    );
    assert!(
        summary(joined("unseated")).contains("nothing was created"),
        "{}",
        summary(joined("unseated"))
    );
    assert!(!keys.join("ghost.key").exists(), "a key was made for ghost");
    assert_eq!(
        temp.view().identity().seat(&TempChannel::agent("ghost")),
        Seat::Vacant
    );
    // The locked one is told how to unlock.
    let lena = &joined("locked")["structuredContent"];
    assert_eq!(
        (&lena["granted"], &lena["locked"], &lena["fix"]),
        (
            &json!(true),
            &json!(true),
            &json!("ferry key unlock --as lena --project demo")
        ),
        "{lena}"
    );
    // The Worker and the paused Member are seated at their levels.
    assert_eq!(
        joined("worker")["structuredContent"]["level"],
        json!("worker")
    );
    assert_eq!(
        joined("paused member")["structuredContent"]["level"],
        json!("member")
    );
}

// ---- taking over through ferry_primary ----

#[test]
fn ferry_primary_refuses_a_takeover_while_the_primary_is_alive_below_orchestrator_and_when_paused_and_allows_it_after_the_quiet_period()
 {
    let temp = TempChannel::builder()
        .agent("olga", Level::Orchestrator)
        .agent("oscar", Level::Orchestrator)
        .agent("otto", Level::Orchestrator)
        .agent("mia", Level::Member)
        .build()
        .unwrap();
    set_quiet_period(&temp);
    let takeover = json!({"action": "takeover"});
    let release = json!({"action": "release"});
    let mut olga = agent(&temp, "olga");
    let mut oscar = agent(&temp, "oscar");
    let mut mia = agent(&temp, "mia");
    let mut lines = Vec::new();
    let mut step = |who: &str, what: &str, result: &Value| {
        let shown = if result["isError"] == true {
            error_text(result)
        } else {
            format!("ok: {}", summary(result))
        };
        lines.push(format!("{who} {what}: {shown}"));
    };

    let first = olga.call("ferry_primary", takeover.clone());
    step("olga", "takeover", &first);
    assert_eq!(first["structuredContent"]["outcome"], "took_over");
    assert_eq!(summary(&first), "you are primary; call ferry_catchup");

    let alive = oscar.call("ferry_primary", takeover.clone());
    step("oscar", "takeover at once", &alive);
    assert_eq!(
        error_text(&alive),
        format!(
            "primary_alive: olga is alive (0s since it was heard from; silent after {QUIET_S}s): standby instead"
        )
    );
    let member = mia.call("ferry_primary", takeover.clone());
    step("mia", "takeover", &member);
    assert_eq!(
        error_text(&member),
        "denied: level member: take over needs orchestrator (ask the human with ferry_ask_human)"
    );

    temp.clock().advance_secs(QUIET_S + 1);
    at_now(&mut oscar, &temp);
    let took = oscar.call("ferry_primary", takeover.clone());
    step("oscar", &format!("takeover {}s later", QUIET_S + 1), &took);
    assert_eq!(took["structuredContent"]["outcome"], "took_over");
    assert_eq!(took["structuredContent"]["primary"], "oscar");
    assert_eq!(
        summary(&took),
        "you are primary, taking over from olga (the fleet was told); call ferry_catchup"
    );
    // One message to all: a reader gets it once.
    at_now(&mut mia, &temp);
    let told = read(&mut mia);
    assert_eq!(texts(&told), ["taking over from olga"]);
    assert_eq!(told["messages"][0]["from"], "oscar");
    assert_eq!(told["messages"][0]["to"], "all");
    assert!(texts(&read(&mut mia)).is_empty());

    let not_primary = mia.call("ferry_primary", release.clone());
    step("mia", "release", &not_primary);
    assert_eq!(
        error_text(&not_primary),
        "not_primary: mia is not primary (the primary is oscar)"
    );

    ops::pause(temp.home(), "the disk is being replaced", temp.now()).unwrap();
    let mut otto = agent(&temp, "otto");
    let paused = otto.call("ferry_primary", takeover);
    step("otto", "takeover on a paused machine", &paused);
    assert_eq!(
        error_text(&paused),
        "paused: the machine is paused (the disk is being replaced): take over is refused until `ferry resume`"
    );
    assert!(ops::resume(temp.home()).unwrap());

    let released = oscar.call("ferry_primary", release);
    step("oscar", "release", &released);
    assert_eq!(summary(&released), "released the primary's role");
    assert!(released["structuredContent"].get("primary").is_none());
    let standby = mia.call("ferry_primary", json!({"action": "standby"}));
    step("mia", "standby", &standby);
    assert_eq!(
        summary(&standby),
        "standing by; there is no primary: work your orders; an Orchestrator may take over"
    );
    eprintln!("{}", lines.join("\n"));
    let status = primary::status(&mut temp.view(), temp.now()).unwrap();
    assert_eq!(
        (status.primary, status.standing_by),
        (None, vec![TempChannel::agent("mia")])
    );
}

// ---- presence ----

#[test]
fn a_tool_call_records_at_most_one_presence_entry_per_minute_of_activity_and_none_when_paused_or_unseated()
 {
    let temp = crate::support::fleet();
    let mut alice = agent(&temp, "alice");
    let reads = [
        ("ferry_join", json!({})),
        ("ferry_catchup", json!({})),
        ("ferry_orders", json!({"action": "list"})),
        ("ferry_primary", json!({"action": "status"})),
        ("ferry_ask_human", json!({"action": "status"})),
        ("ferry_talk", json!({"action": "read"})),
    ];
    let start = alice.now();
    let mut seen = log_lines(&temp, "alice").len();
    let mut recorded_at = Vec::new();
    // Five minutes of calls, one every 10 s.
    for step in 1..=30 {
        alice.advance(10_000);
        let (tool, args) = &reads[step % reads.len()];
        alice.call(tool, args.clone());
        let lines = log_lines(&temp, "alice");
        if lines.len() > seen {
            for line in &lines[seen..] {
                assert_eq!(kind_of(line), "presence", "{line}");
            }
            recorded_at.extend(std::iter::repeat_n(
                alice.now().seconds_since(start),
                lines.len() - seen,
            ));
            seen = lines.len();
        }
    }
    eprintln!("30 calls 10 s apart: presence entries at {recorded_at:?} s");
    assert_eq!(recorded_at, [60, 120, 180, 240, 300]);

    // Paused: the calls read, and record nothing.
    ops::pause(temp.home(), "maintenance", alice.now()).unwrap();
    for step in 1..=18 {
        alice.advance(10_000);
        let (tool, args) = &reads[step % reads.len()];
        alice.call(tool, args.clone());
    }
    assert_eq!(
        log_lines(&temp, "alice").len(),
        seen,
        "presence while paused"
    );
    assert!(ops::resume(temp.home()).unwrap());

    // Unseated: nothing at all is written.
    let before = files(temp.channel_dir());
    let mut ghost = serve(&temp, Actor::Agent(TempChannel::agent("ghost")));
    ghost.set_now(alice.now());
    for step in 1..=18 {
        ghost.advance(10_000);
        let (tool, args) = &reads[step % reads.len()];
        ghost.call(tool, args.clone());
    }
    assert_eq!(files(temp.channel_dir()), before, "an unseated agent wrote");

    // Resumed, alice's next call records her again.
    alice.advance(10_000);
    alice.call("ferry_catchup", json!({}));
    let lines = log_lines(&temp, "alice");
    assert_eq!(lines.len(), seen + 1);
    assert_eq!(kind_of(lines.last().unwrap()), "presence");
}

// ---- who is alive ----

#[test]
fn ferry_join_lists_who_was_heard_from_recently_most_recent_first_at_most_ten_with_what_each_holds()
{
    let names: Vec<String> = (1..=12).map(|n| format!("ag{n:02}")).collect();
    let mut builder = TempChannel::builder().agent("zed", Level::Member);
    for name in &names {
        builder = builder.agent(name, Level::Member);
    }
    let temp = builder.build().unwrap();
    set_quiet_period(&temp);
    let order = issue(&temp, "Write the lexer", None);
    temp.clock().advance_secs(61);
    // Each is heard from a second after the one before; ag07 by claiming the order.
    for name in &names {
        let now = temp.clock().advance_secs(1);
        let mut session = temp.agent_session(name);
        if name == "ag07" {
            orders::claim(&mut session, &order, now).unwrap();
        } else {
            primary::note_alive(&mut session, now);
        }
    }
    let mut zed = agent(&temp, "zed");
    let joined = zed.call("ferry_join", json!({}));
    let alive = joined["structuredContent"]["alive"].as_array().unwrap();
    eprintln!("zed's ferry_join alive: {}", Value::from(alive.clone()));
    let listed: Vec<(&str, u64, Option<&str>)> = alive
        .iter()
        .map(|agent| {
            (
                agent["name"].as_str().unwrap(),
                agent["age_s"].as_u64().unwrap(),
                agent["doing"].as_str(),
            )
        })
        .collect();
    let want: Vec<(&str, u64, Option<&str>)> = (3..=12)
        .rev()
        .map(|n| {
            let doing = (n == 7).then_some(order.as_str());
            (names[n - 1].as_str(), 12 - n as u64, doing)
        })
        .collect();
    assert_eq!(listed, want);

    // Past the quiet period, only who was heard from since is listed.
    let now = temp.clock().advance_secs(QUIET_S + 1);
    primary::note_alive(&mut temp.agent_session("ag12"), now);
    at_now(&mut zed, &temp);
    let joined = zed.call("ferry_join", json!({}));
    assert_eq!(
        joined["structuredContent"]["alive"],
        json!([{"name": "ag12", "age_s": 0}])
    );
}

// ---- an order whose holder went silent ----

fn row_of<'a>(list: &'a Value, key: &str, id: &str) -> &'a Value {
    list["structuredContent"][key]
        .as_array()
        .unwrap()
        .iter()
        .find(|row| row["id"] == id)
        .unwrap_or_else(|| panic!("no {id} in {list}"))
}

#[test]
fn an_order_whose_holder_went_silent_is_shown_silent_in_the_list_and_the_catchup_and_an_orchestrator_hands_it_back()
 {
    let temp = TempChannel::builder()
        .agent("alice", Level::Member)
        .agent("bob", Level::Member)
        .agent("olga", Level::Orchestrator)
        .build()
        .unwrap();
    set_quiet_period(&temp);
    let id = issue(&temp, "Write the lexer", None);
    orders::claim(&mut temp.agent_session("alice"), &id, temp.now()).unwrap();
    let mut bob = agent(&temp, "bob");
    let list = json!({"action": "list"});
    let listed = bob.call("ferry_orders", list.clone());
    let row = row_of(&listed, "orders", &id);
    assert_eq!((&row["holder"], row.get("silent")), (&json!("alice"), None));
    let digest = bob.call("ferry_catchup", json!({}));
    assert_eq!(row_of(&digest, "open", &id).get("silent"), None);

    temp.clock().advance_secs(QUIET_S + 1);
    at_now(&mut bob, &temp);
    let listed = bob.call("ferry_orders", list.clone());
    let row = row_of(&listed, "orders", &id);
    eprintln!("ferry_orders list {}s later: {row}", QUIET_S + 1);
    assert_eq!(
        (&row["holder"], &row["silent"]),
        (&json!("alice"), &json!(true))
    );
    let digest = bob.call("ferry_catchup", json!({}));
    let row = row_of(&digest, "open", &id);
    eprintln!("ferry_catchup {}s later: {row}", QUIET_S + 1);
    assert_eq!(
        (&row["holder"], &row["silent"]),
        (&json!("alice"), &json!(true))
    );

    // An Orchestrator hands it back: it is open again, for anyone.
    orders::release(
        &mut temp.agent_session("olga"),
        &id,
        Some("alice went silent"),
        temp.now(),
    )
    .unwrap();
    let listed = bob.call("ferry_orders", list);
    let row = row_of(&listed, "orders", &id);
    assert_eq!(
        row,
        &json!({"id": id, "title": "Write the lexer", "state": "open"})
    );
    let claimed = bob.call("ferry_orders", json!({"action": "claim", "id": id}));
    assert_eq!(claimed["structuredContent"]["outcome"], "claimed");
}

// ---- the catch-up's links ----

#[test]
fn a_catchup_gives_the_bodies_of_the_callers_orders_as_resource_links() {
    let temp = crate::support::fleet();
    let body = "Write the lexer for the config format.\n\nKeep spans on every token.";
    let id = issue(&temp, "Write the lexer", Some(body));
    orders::claim(&mut temp.agent_session("alice"), &id, temp.now()).unwrap();
    let mut alice = agent(&temp, "alice");
    let digest = alice.call("ferry_catchup", json!({}));
    assert_eq!(digest["structuredContent"]["mine"][0]["id"], id.as_str());
    let uri = format!("ferry://demo/order/{id}");
    let links: Vec<&Value> = digest["content"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|block| block["type"] == "resource_link")
        .collect();
    eprintln!("catch-up links: {links:?}");
    assert_eq!(links.len(), 1, "{digest}");
    assert_eq!(links[0]["uri"], uri.as_str());
    // The body is not in the digest: it is behind the link.
    assert!(!digest["structuredContent"].to_string().contains("spans"));
    let resource = alice.result("resources/read", json!({ "uri": uri }));
    let text = resource["contents"][0]["text"].as_str().unwrap();
    assert!(text.contains(body), "{text}");
}

// ---- asks: the MCP can ask, never approve ----

#[test]
fn the_mcp_can_ask_but_never_approve_no_core_tool_answers_an_ask() {
    let temp = TempChannel::builder()
        .agent("olga", Level::Orchestrator)
        .agent("mia", Level::Member)
        .build()
        .unwrap();
    // No core tool has an action or a field that answers an ask.
    for tool in ferry_mcp_tools::CORE.tools {
        let definition = tool.definition();
        let schema: Value = serde_json::from_str(definition.input_schema).unwrap();
        let actions: Vec<&str> = schema["properties"]["action"]["enum"]
            .as_array()
            .map(|actions| actions.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        for answer in ["approve", "reject", "send_back", "send-back", "answer"] {
            assert!(
                !actions.contains(&answer),
                "{} can {answer}: {actions:?}",
                definition.name
            );
        }
    }
    let ask_schema: Value = serde_json::from_str(
        ferry_mcp_tools::CORE
            .tools
            .iter()
            .find(|tool| tool.definition().name == "ferry_ask_human")
            .unwrap()
            .definition()
            .input_schema,
    )
    .unwrap();
    assert_eq!(
        ask_schema["properties"]["action"]["enum"],
        json!(["raise", "status"])
    );
    assert!(ask_schema["properties"].get("verdict").is_none());

    let mut mia = agent(&temp, "mia");
    let raised = mia.call(
        "ferry_ask_human",
        json!({"action": "raise", "title": "Merge now?", "recommendation": "yes"}),
    );
    let id = raised["structuredContent"]["id"]
        .as_str()
        .unwrap()
        .to_owned();
    assert_eq!(raised["structuredContent"]["state"], "pending");
    let mut olga = agent(&temp, "olga");
    for (who, args) in [
        ("olga", json!({"action": "approve", "id": id})),
        ("mia", json!({"action": "approve", "id": id})),
        (
            "olga",
            json!({"action": "status", "id": id, "verdict": "approve"}),
        ),
    ] {
        let server = if who == "olga" { &mut olga } else { &mut mia };
        let refused = error_text(&server.call("ferry_ask_human", args.clone()));
        eprintln!("{who}: ferry_ask_human {args}: {refused}");
        assert!(
            refused.starts_with("invalid arguments for ferry_ask_human"),
            "{refused}"
        );
    }
    let status = olga.call("ferry_ask_human", json!({"action": "status", "id": id}));
    assert_eq!(status["structuredContent"]["state"], "pending");
    assert_eq!(
        asks::show(&mut temp.view(), &id, temp.now()).unwrap().state,
        AskState::Pending
    );
}

#[test]
fn a_capped_catch_up_says_how_many_orders_are_open_in_all_and_that_it_left_some_out() {
    let temp = crate::support::fleet();
    for n in 1..=10 {
        issue(&temp, &format!("Open order {n}"), None);
    }
    let mut bob = agent(&temp, "bob");
    let result = bob.call("ferry_catchup", json!({}));
    let out = &result["structuredContent"];
    assert_eq!(out["open"].as_array().unwrap().len(), 5, "{out}");
    assert_eq!(out["open_total"], 10, "{out}");
    assert_eq!(out["truncated"], true, "{out}");
    assert!(
        summary(&result).starts_with("10 open (5 shown)"),
        "{result}"
    );
    // Uncapped, no totals: they would only repeat the lengths.
    let detailed = bob.call("ferry_catchup", json!({ "detail": true }));
    let out = &detailed["structuredContent"];
    assert_eq!(out["open"].as_array().unwrap().len(), 10, "{out}");
    assert!(out.get("open_total").is_none(), "{out}");
    assert!(out.get("truncated").is_none(), "{out}");
}

#[test]
fn a_reader_with_more_unread_messages_than_are_counted_is_told_more_than_that() {
    let temp = crate::support::fleet();
    let mut alice = temp.agent_session("alice");
    for n in 1..=105 {
        ferry_mcp_core::channel::ops::talk::post(
            &mut alice,
            &ferry_mcp_core::channel::ops::talk::PostRequest {
                to: "bob".into(),
                text: format!("Note {n} about the standup."),
                reply_to: None,
            },
            temp.now(),
        )
        .unwrap();
    }
    alice.save().unwrap();
    let mut bob = agent(&temp, "bob");
    let result = bob.call("ferry_catchup", json!({}));
    let waiting = result["structuredContent"]["waiting_on_you"].to_string();
    assert!(
        waiting.contains("more than 100 unread messages"),
        "{waiting}"
    );
}

#[test]
fn a_refused_call_after_a_minute_of_silence_appends_no_presence() {
    let temp = crate::support::fleet();
    let mut bob = agent(&temp, "bob");
    let joined = bob.call("ferry_join", json!({}));
    assert_eq!(joined["structuredContent"]["level"], "member", "{joined}");
    bob.advance(61_000);
    let before = files(temp.channel_dir());
    for (tool, args) in [
        ("ferry_orders", json!({"action": "claim", "id": "m99"})),
        (
            "ferry_orders",
            json!({"action": "review", "id": "m99", "verdict": "accept"}),
        ),
        (
            "ferry_talk",
            json!({"action": "post", "to": "nobody", "text": "hi"}),
        ),
        ("ferry_ask_human", json!({"action": "status", "id": "a99"})),
        ("ferry_primary", json!({"action": "takeover"})),
        ("ferry_catchup", json!({"since": "not-a-cursor"})),
    ] {
        let refused = bob.call(tool, args.clone());
        assert_eq!(refused["isError"], true, "{tool} {args}: {refused}");
        assert!(
            files(temp.channel_dir()) == before,
            "{tool} {args} was refused and still wrote"
        );
    }
    // The same minute of silence and a call that works: presence is appended (the test sees it).
    let listed = bob.call("ferry_orders", json!({"action": "list"}));
    assert_ne!(listed["isError"], true, "{listed}");
    assert!(
        files(temp.channel_dir()) != before,
        "no presence was written"
    );
}

#[test]
fn ferry_join_and_ferry_catchup_say_they_write_and_their_read_only_twins_that_they_do_not() {
    for (tool, view) in [
        (
            &ferry_mcp_tools::join::FerryJoin as &dyn ferry_mcp_core::tool::Tool,
            &ferry_mcp_tools::read_only::JoinView as &dyn ferry_mcp_core::tool::Tool,
        ),
        (
            &ferry_mcp_tools::catchup::FerryCatchup,
            &ferry_mcp_tools::read_only::CatchupView,
        ),
    ] {
        let (written, read) = (tool.definition(), view.definition());
        assert_eq!(written.name, read.name);
        assert!(
            !written.annotations.read_only,
            "{}: it records presence",
            written.name
        );
        assert!(!written.annotations.destructive && written.annotations.idempotent);
        assert!(read.annotations.read_only, "{}", read.name);
    }
}

//! Calls that answer later (ADR 0027): the core keeps them in a table of pending calls keyed
//! by JSON-RPC id, answers everything else meanwhile, hands a `notifications/cancelled` to the
//! pending call and drops its answer, and never lets a late answer reach another request. A
//! JSON-RPC batch holding such a call waits whole, and goes out with the last answer it waits for.

use std::sync::{Arc, Mutex};

use ferry_mcp_core::protocol::Server;
use ferry_mcp_core::registry::{Group, Surface};
use ferry_mcp_core::shape::ToolOutcome;
use ferry_mcp_core::time::Timestamp;
use ferry_mcp_core::tool::{
    Annotations, CallContext, PendingCall, Progress, Started, Ticket, Tool, ToolDefinition,
};
use ferry_mcp_testkit::fixture;
use serde_json::{Map, Value, json};

const PROJECT: &str = "demo";
const NOW: Timestamp = Timestamp::from_millis(1_000);

/// What the tool that answers later was asked, as the test sees it.
#[derive(Debug, Default)]
struct Record {
    /// The tickets it took, in order.
    tickets: Vec<Ticket>,
    /// Which of its calls were told to stop, by ticket.
    cancelled: Vec<Ticket>,
    /// How often it answered at once (no leave to answer later).
    answered_now: usize,
}

/// `later`: reports that it started (when the request asked for progress), then answers later
/// whenever the core lets it, at once otherwise.
#[derive(Debug)]
struct Later {
    record: Arc<Mutex<Record>>,
}

#[derive(Debug)]
struct Waiting {
    ticket: Ticket,
    record: Arc<Mutex<Record>>,
}

impl PendingCall for Waiting {
    fn cancel(&self) {
        self.record.lock().unwrap().cancelled.push(self.ticket);
    }
}

static LATER: ToolDefinition = ToolDefinition {
    name: "later",
    title: "",
    description: "Answers later.",
    input_schema: r#"{"type":"object"}"#,
    output_schema: None,
    annotations: Annotations::READ_ONLY,
};

impl Tool for Later {
    fn definition(&self) -> &'static ToolDefinition {
        &LATER
    }
    fn call(&self, _args: &Map<String, Value>, _cx: &mut CallContext<'_>) -> ToolOutcome {
        self.record.lock().unwrap().answered_now += 1;
        ToolOutcome::text("answered at once")
    }
    fn start(&self, args: &Map<String, Value>, cx: &mut CallContext<'_>) -> Started {
        (cx.progress)(Progress {
            progress: 1.0,
            total: None,
            message: Some("started".into()),
        });
        let Some(ticket) = cx.later.take() else {
            return Started::Now(self.call(args, cx));
        };
        self.record.lock().unwrap().tickets.push(ticket);
        Started::Later(Box::new(Waiting {
            ticket,
            record: Arc::clone(&self.record),
        }))
    }
}

/// A server of the fixture group plus `later`, initialized under `version`.
fn server(version: &str, defers: bool) -> (Server, Arc<Mutex<Record>>) {
    let record = Arc::new(Mutex::new(Record::default()));
    let tool: &'static Later = Box::leak(Box::new(Later {
        record: Arc::clone(&record),
    }));
    let tools: &'static [&'static dyn Tool] = Box::leak(Box::new([tool as &dyn Tool]));
    let group: &'static Group = Box::leak(Box::new(Group {
        name: "later",
        tools,
        resources: &[],
        instructions: "",
    }));
    let surface = Surface::build(&[group, &fixture::GROUP], false).unwrap();
    let mut server = Server::new(fixture::config(PROJECT), surface);
    if defers {
        server = server.with_deferred_answers();
    }
    let initialize = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"protocolVersion": version, "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}}});
    assert_eq!(
        server
            .handle_line(initialize.to_string().as_bytes(), NOW)
            .len(),
        1
    );
    (server, record)
}

fn call(id: Value, name: &str) -> String {
    json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {"name": name, "arguments": {}}}).to_string()
}

fn ping(id: u64) -> String {
    json!({"jsonrpc": "2.0", "id": id, "method": "ping"}).to_string()
}

fn cancel(id: Value) -> String {
    json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": id}})
        .to_string()
}

fn send(server: &mut Server, lines: &[&str]) -> Vec<Value> {
    let lines: Vec<&[u8]> = lines.iter().map(|line| line.as_bytes()).collect();
    server
        .handle_lines(&lines, NOW)
        .iter()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect()
}

fn ids(answers: &[Value]) -> Vec<Value> {
    answers.iter().map(|answer| answer["id"].clone()).collect()
}

fn parse(lines: &[String]) -> Vec<Value> {
    lines
        .iter()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect()
}

#[test]
fn a_call_that_answers_later_leaves_every_other_request_answered_in_order_meanwhile() {
    let (mut server, record) = server("2025-11-25", true);
    let answers = send(
        &mut server,
        &[
            &call(json!(1), "later"),
            &ping(2),
            &call(json!(3), "fixture_status"),
            &json!({"jsonrpc": "2.0", "id": 4, "method": "tools/list"}).to_string(),
        ],
    );
    assert_eq!(ids(&answers), [json!(2), json!(3), json!(4)]);
    assert_eq!(server.pending_calls(), 1);
    let ticket = record.lock().unwrap().tickets[0];
    let later = parse(&server.complete(ticket, &ToolOutcome::text("done later")));
    assert_eq!(later.len(), 1);
    assert_eq!(later[0]["id"], 1);
    assert_eq!(later[0]["result"]["content"][0]["text"], "done later");
    assert_eq!(server.pending_calls(), 0);
    assert!(
        server
            .complete(ticket, &ToolOutcome::text("twice"))
            .is_empty(),
        "a call answers once"
    );
}

#[test]
fn a_cancellation_reaches_the_pending_call_and_its_answer_is_never_sent() {
    let (mut server, record) = server("2025-11-25", true);
    assert!(send(&mut server, &[&call(json!("a"), "later")]).is_empty());
    let ticket = record.lock().unwrap().tickets[0];
    // Its own line, after the request was read: the call is running.
    assert!(send(&mut server, &[&cancel(json!("a"))]).is_empty());
    assert_eq!(record.lock().unwrap().cancelled, [ticket]);
    assert_eq!(server.pending_calls(), 0);
    assert!(
        server
            .complete(ticket, &ToolOutcome::error("cancelled"))
            .is_empty(),
        "the spec: no response for a cancelled request"
    );
}

#[test]
fn a_late_answer_of_a_cancelled_call_never_answers_a_new_request_that_reuses_its_id() {
    let (mut server, record) = server("2025-11-25", true);
    send(&mut server, &[&call(json!(7), "later")]);
    send(&mut server, &[&cancel(json!(7))]);
    send(&mut server, &[&call(json!(7), "later")]);
    let (old, new) = {
        let record = record.lock().unwrap();
        (record.tickets[0], record.tickets[1])
    };
    assert_ne!(old, new);
    assert!(server.complete(old, &ToolOutcome::text("old")).is_empty());
    let answers = parse(&server.complete(new, &ToolOutcome::text("new")));
    assert_eq!(answers[0]["id"], 7);
    assert_eq!(answers[0]["result"]["content"][0]["text"], "new");
}

#[test]
fn a_request_under_the_id_of_a_call_still_running_is_refused_and_runs_nothing() {
    let (mut server, record) = server("2025-11-25", true);
    send(&mut server, &[&call(json!(5), "later")]);
    // `5.0` is the same id as `5`.
    let answers = send(&mut server, &[&call(json!(5.0), "later"), &ping(5)]);
    assert_eq!(answers.len(), 2);
    for answer in &answers {
        assert_eq!(answer["error"]["code"], -32600, "{answer}");
    }
    assert_eq!(record.lock().unwrap().tickets.len(), 1);
    assert_eq!(server.pending_calls(), 1);
}

#[test]
fn without_the_host_s_leave_a_call_answers_at_once_alone_or_in_a_batch() {
    let (mut plain, record) = server("2025-11-25", false);
    let answers = send(&mut plain, &[&call(json!(1), "later")]);
    assert_eq!(
        answers[0]["result"]["content"][0]["text"],
        "answered at once"
    );
    assert_eq!(record.lock().unwrap().answered_now, 1);

    let (mut batched, record) = server("2025-03-26", false);
    let batch = format!("[{},{}]", call(json!(1), "later"), ping(2));
    let answers = send(&mut batched, &[&batch]);
    assert_eq!(answers.len(), 1, "one array, at once");
    let items = answers[0].as_array().unwrap();
    assert_eq!(ids(items), [json!(1), json!(2)]);
    assert_eq!(items[0]["result"]["content"][0]["text"], "answered at once");
    let record = record.lock().unwrap();
    assert_eq!(record.answered_now, 1);
    assert!(record.tickets.is_empty(), "no ticket was offered");
    assert_eq!(batched.pending_calls(), 0);
    assert_eq!(batched.pending_batches(), 0);
}

/// A `tools/call` of `name` that asks for progress under `token`.
fn call_with_progress(id: Value, name: &str, token: &str) -> String {
    json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {"name": name, "arguments": {}, "_meta": {"progressToken": token}}}).to_string()
}

#[test]
fn a_batch_holding_a_call_that_answers_later_goes_out_whole_when_it_answers() {
    let (mut server, record) = server("2025-03-26", true);
    let batch = format!(
        "[{},{},{},{}]",
        call_with_progress(json!(1), "later", "p1"),
        ping(2),
        call(json!(3), "fixture_status"),
        call(json!(4), "later"),
    );
    // The batch waits; the ping after it, and the progress of its first call, go out at once.
    let answers = send(&mut server, &[&batch, &ping(5)]);
    assert_eq!(answers.len(), 2, "{answers:?}");
    assert_eq!(answers[0]["method"], "notifications/progress");
    assert_eq!(answers[0]["params"]["progressToken"], "p1");
    assert_eq!(answers[1]["id"], 5);
    assert_eq!(server.pending_calls(), 2);
    assert_eq!(server.pending_batches(), 1);
    let (first, last) = {
        let record = record.lock().unwrap();
        (record.tickets[0], record.tickets[1])
    };
    // Answered out of order: the batch still waits for its first call.
    assert!(
        server
            .complete(last, &ToolOutcome::text("fourth"))
            .is_empty()
    );
    assert_eq!(server.pending_batches(), 1);
    let out = parse(&server.complete(first, &ToolOutcome::text("first")));
    assert_eq!(out.len(), 1, "one line: {out:?}");
    let items = out[0].as_array().expect("the batch's array");
    assert_eq!(
        ids(items),
        [json!(1), json!(2), json!(3), json!(4)],
        "in the order of the requests"
    );
    assert_eq!(items[0]["result"]["content"][0]["text"], "first");
    assert_eq!(items[1]["result"], json!({}));
    assert!(items[2]["result"]["content"].is_array(), "{}", items[2]);
    assert_eq!(items[3]["result"]["content"][0]["text"], "fourth");
    assert_eq!(server.pending_calls(), 0);
    assert_eq!(server.pending_batches(), 0);
    assert!(
        server
            .complete(first, &ToolOutcome::text("twice"))
            .is_empty(),
        "a batch goes out once"
    );
}

#[test]
fn a_call_cancelled_in_a_waiting_batch_is_left_out_of_its_answer() {
    let (mut server, record) = server("2025-03-26", true);
    let tickets = |record: &Arc<Mutex<Record>>| record.lock().unwrap().tickets.clone();

    // Cancelled while the batch waits for another call: left out of the array.
    let batch = format!(
        "[{},{},{}]",
        call(json!(1), "later"),
        ping(2),
        call(json!(3), "later")
    );
    assert!(send(&mut server, &[&batch]).is_empty());
    let [one, three] = tickets(&record)[..] else {
        panic!("two tickets")
    };
    assert!(send(&mut server, &[&cancel(json!(1))]).is_empty());
    assert_eq!(record.lock().unwrap().cancelled, [one]);
    let out = parse(&server.complete(three, &ToolOutcome::text("third")));
    assert_eq!(ids(out[0].as_array().unwrap()), [json!(2), json!(3)]);
    assert!(server.complete(one, &ToolOutcome::text("late")).is_empty());

    // The last call it waited for cancelled: the array goes out with the cancellation.
    let batch = format!("[{},{}]", call(json!(4), "later"), ping(5));
    assert!(send(&mut server, &[&batch]).is_empty());
    let out = send(&mut server, &[&cancel(json!(4))]);
    assert_eq!(out.len(), 1);
    assert_eq!(ids(out[0].as_array().unwrap()), [json!(5)]);

    // Cancelled by a notification inside the batch itself: the array goes out at once.
    let batch = format!(
        "[{},{},{}]",
        call(json!(6), "later"),
        cancel(json!(6)),
        ping(7)
    );
    let out = send(&mut server, &[&batch]);
    assert_eq!(out.len(), 1);
    assert_eq!(ids(out[0].as_array().unwrap()), [json!(7)]);

    // Every call cancelled: no array at all.
    let batch = format!("[{},{}]", call(json!(8), "later"), call(json!(9), "later"));
    assert!(send(&mut server, &[&batch]).is_empty());
    let all = tickets(&record);
    let (eight, nine) = (all[all.len() - 2], all[all.len() - 1]);
    assert!(send(&mut server, &[&cancel(json!(8))]).is_empty());
    assert!(send(&mut server, &[&cancel(json!(9))]).is_empty());
    assert_eq!(server.pending_calls(), 0);
    assert_eq!(server.pending_batches(), 0);
    assert!(
        server
            .complete(eight, &ToolOutcome::text("late"))
            .is_empty()
    );
    assert!(server.complete(nine, &ToolOutcome::text("late")).is_empty());
    let cancelled = record.lock().unwrap().cancelled.len();
    assert_eq!(cancelled, 5, "every cancelled call was told to stop");
}

#[test]
fn a_stateless_call_answered_later_carries_its_result_type() {
    let (mut server, record) = server("2025-11-25", true);
    let stateless = json!({"jsonrpc": "2.0", "id": 9, "method": "tools/call", "params": {"name": "later", "arguments": {}, "_meta": ferry_mcp_testkit::session::stateless_meta()}});
    assert!(send(&mut server, &[&stateless.to_string()]).is_empty());
    let ticket = record.lock().unwrap().tickets[0];
    let answers = parse(&server.complete(ticket, &ToolOutcome::text("done")));
    assert_eq!(answers[0]["result"]["resultType"], "complete");
}

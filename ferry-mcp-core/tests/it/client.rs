//! The gateway's MCP client state machine (ADR 0021): lines from an external server in,
//! events out, with no process behind it.

use ferry_mcp_core::protocol::ProtocolVersion;
use ferry_mcp_core::protocol::client::{Client, ClientError, Event, Reply, RequestId};
use serde_json::{Map, Value, json};

fn parsed(line: &str) -> Value {
    serde_json::from_str(line).unwrap()
}

fn sent(events: &[Event]) -> Vec<Value> {
    events
        .iter()
        .filter_map(|event| match event {
            Event::Send(line) => Some(parsed(line)),
            _ => None,
        })
        .collect()
}

fn replies(events: Vec<Event>) -> Vec<(RequestId, Result<Reply, ClientError>)> {
    events
        .into_iter()
        .filter_map(|event| match event {
            Event::Reply { id, outcome } => Some((id, outcome)),
            _ => None,
        })
        .collect()
}

fn reply_line(id: u64, result: Value) -> String {
    json!({"jsonrpc": "2.0", "id": id, "result": result}).to_string()
}

/// A client whose handshake is done.
fn ready() -> Client {
    let mut client = Client::new("ferry", "0.1.0");
    let (id, _) = client.initialize();
    let events = client.handle_line(
        reply_line(
            id.get(),
            json!({"protocolVersion": "2025-06-18", "capabilities": {}, "serverInfo": {"name": "x"}}),
        )
        .as_bytes(),
    );
    assert_eq!(replies(events).len(), 1);
    client
}

#[test]
fn the_handshake_offers_the_latest_version_and_accepts_an_older_one_the_server_chose() {
    let mut client = Client::new("ferry", "0.1.0");
    let (id, line) = client.initialize();
    let request = parsed(&line);
    assert_eq!(request["method"], "initialize");
    assert_eq!(request["params"]["protocolVersion"], "2025-11-25");
    assert_eq!(request["params"]["clientInfo"]["name"], "ferry");
    let events = client.handle_line(
        reply_line(
            id.get(),
            json!({"protocolVersion": "2024-11-05", "serverInfo": {"name": "everything"}}),
        )
        .as_bytes(),
    );
    assert_eq!(
        sent(&events),
        [json!({"jsonrpc": "2.0", "method": "notifications/initialized"})]
    );
    assert_eq!(
        replies(events),
        [(
            id,
            Ok(Reply::Initialized {
                version: ProtocolVersion::V2024_11_05,
                server: "everything".into()
            })
        )]
    );
    assert_eq!(client.negotiated(), Some(ProtocolVersion::V2024_11_05));
}

#[test]
fn a_version_the_client_does_not_speak_fails_the_handshake_and_nothing_is_called() {
    let mut client = Client::new("ferry", "0.1.0");
    let (id, _) = client.initialize();
    let events = client
        .handle_line(reply_line(id.get(), json!({"protocolVersion": "1999-01-01"})).as_bytes());
    assert!(sent(&events).is_empty(), "no initialized notification");
    assert_eq!(
        replies(events),
        [(
            id,
            Err(ClientError::UnsupportedVersion("1999-01-01".into()))
        )]
    );
    assert_eq!(
        client.call_tool("echo", &Map::new()).unwrap_err(),
        ClientError::NotReady
    );
}

#[test]
fn replies_are_matched_by_id_whatever_order_they_come_in() {
    let mut client = ready();
    let (first, _) = client.call_tool("a", &Map::new()).unwrap();
    let (second, _) = client.call_tool("b", &Map::new()).unwrap();
    let late =
        client.handle_line(reply_line(second.get(), json!({"content": [], "n": 2})).as_bytes());
    let early =
        client.handle_line(reply_line(first.get(), json!({"content": [], "n": 1})).as_bytes());
    let (id, Ok(Reply::Called(result))) = replies(late).remove(0) else {
        panic!()
    };
    assert_eq!((id, &result["n"]), (second, &json!(2)));
    let (id, Ok(Reply::Called(result))) = replies(early).remove(0) else {
        panic!()
    };
    assert_eq!((id, &result["n"]), (first, &json!(1)));
    assert_eq!(client.pending(), 0);
}

#[test]
fn a_reply_to_an_id_that_is_not_pending_is_dropped() {
    let mut client = ready();
    let (id, _) = client.call_tool("a", &Map::new()).unwrap();
    let events = client.handle_line(reply_line(id.get() + 40, json!({"content": []})).as_bytes());
    assert!(matches!(&events[..], [Event::Ignored(_)]), "{events:?}");
    assert_eq!(client.pending(), 1);
}

#[test]
fn a_cancelled_request_is_cancelled_downstream_and_its_late_reply_dropped() {
    let mut client = ready();
    let (id, _) = client.call_tool("slow", &Map::new()).unwrap();
    let line = client.cancel(id, "timed out").unwrap();
    assert_eq!(
        parsed(&line),
        json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": id.get(), "reason": "timed out"}})
    );
    assert!(client.cancel(id, "again").is_none());
    let events = client.handle_line(reply_line(id.get(), json!({"content": []})).as_bytes());
    assert!(replies(events).is_empty());
}

#[test]
fn an_initialize_given_up_on_is_never_cancelled_on_the_wire() {
    let mut client = Client::new("ferry", "0.1.0");
    let (id, _) = client.initialize();
    // The spec: "the initialize request MUST NOT be cancelled by clients".
    assert!(client.cancel(id, "timed out").is_none());
    assert_eq!(client.pending(), 0, "it is no longer waited for");
}

#[test]
fn tools_list_follows_next_cursor_until_the_last_page() {
    let mut client = ready();
    let (origin, _) = client.list_tools().unwrap();
    let tool = |name: &str| json!({"name": name, "inputSchema": {"type": "object"}});
    let events = client.handle_line(
        reply_line(
            origin.get(),
            json!({"tools": [tool("a")], "nextCursor": "p2"}),
        )
        .as_bytes(),
    );
    let next = sent(&events);
    assert_eq!(next.len(), 1);
    assert_eq!(next[0]["params"], json!({"cursor": "p2"}));
    let page_two = next[0]["id"].as_u64().unwrap();
    let events = client.handle_line(reply_line(page_two, json!({"tools": [tool("b")]})).as_bytes());
    let (id, Ok(Reply::Tools(tools))) = replies(events).remove(0) else {
        panic!()
    };
    assert_eq!(
        id, origin,
        "the listing answers the request that started it"
    );
    let names: Vec<&str> = tools.iter().map(|tool| tool.name.as_str()).collect();
    assert_eq!(names, ["a", "b"]);
}

#[test]
fn a_cursor_that_never_ends_stops_at_the_page_bound() {
    let mut client = ready();
    let (origin, line) = client.list_tools().unwrap();
    let mut id = parsed(&line)["id"].as_u64().unwrap();
    for _ in 0..200 {
        let events = client
            .handle_line(reply_line(id, json!({"tools": [], "nextCursor": "again"})).as_bytes());
        if let Some(next) = sent(&events).first() {
            id = next["id"].as_u64().unwrap();
            continue;
        }
        assert_eq!(replies(events), [(origin, Err(ClientError::TooManyPages))]);
        return;
    }
    panic!("the listing never stopped");
}

#[test]
fn sampling_elicitation_and_roots_are_refused_by_name_and_ping_is_answered() {
    let mut client = ready();
    for method in ["sampling/createMessage", "elicitation/create", "roots/list"] {
        let request = json!({"jsonrpc": "2.0", "id": "s1", "method": method, "params": {}});
        let answers = sent(&client.handle_line(request.to_string().as_bytes()));
        assert_eq!(answers.len(), 1, "{method}");
        assert_eq!(answers[0]["id"], "s1");
        assert_eq!(answers[0]["error"]["code"], -32601);
        assert!(
            answers[0]["error"]["message"]
                .as_str()
                .unwrap()
                .contains(method)
        );
    }
    let ping = json!({"jsonrpc": "2.0", "id": 9, "method": "ping"});
    assert_eq!(
        sent(&client.handle_line(ping.to_string().as_bytes())),
        [json!({"jsonrpc": "2.0", "id": 9, "result": {}})]
    );
}

#[test]
fn notifications_and_lines_that_are_not_json_are_ignored() {
    let mut client = ready();
    let (id, _) = client.call_tool("a", &Map::new()).unwrap();
    let note = r#"{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"x"}}"#;
    assert_eq!(
        client.handle_line(note.as_bytes()),
        [Event::Notification("notifications/message".into())]
    );
    for line in ["Server listening on stdio", "[1, 2"] {
        let events = client.handle_line(line.as_bytes());
        assert!(
            matches!(&events[..], [Event::Ignored(_)]),
            "{line}: {events:?}"
        );
    }
    assert!(client.handle_line(b"   ").is_empty());
    assert_eq!(client.pending(), 1);
    let events = client.handle_line(reply_line(id.get(), json!({"content": []})).as_bytes());
    assert_eq!(replies(events).len(), 1);
}

#[test]
fn an_oversized_line_fails_the_request_it_answers() {
    let mut client = ready();
    let (first, _) = client.call_tool("a", &Map::new()).unwrap();
    let (second, _) = client.call_tool("b", &Map::new()).unwrap();
    let prefix = format!(
        r#"{{"jsonrpc":"2.0","id":{},"result":{{"content":[{{"text":"xxxx"#,
        second.get()
    );
    let events = client.handle_oversized_line(prefix.as_bytes(), 4096);
    assert_eq!(
        replies(events),
        [(second, Err(ClientError::Oversized(4096)))]
    );
    // With one request left, a cut line whose id was not in its prefix is taken to answer it.
    let events = client.handle_oversized_line(br#"{"result":{"content":[{"text":"xxxx"#, 4096);
    assert_eq!(
        replies(events),
        [(first, Err(ClientError::Oversized(4096)))]
    );
    assert_eq!(client.pending(), 0);
}

#[test]
fn an_error_reply_carries_the_server_s_code_and_message() {
    let mut client = ready();
    let (id, _) = client.call_tool("nope", &Map::new()).unwrap();
    let line = json!({"jsonrpc": "2.0", "id": id.get(), "error": {"code": -32602, "message": "unknown tool"}});
    assert_eq!(
        replies(client.handle_line(line.to_string().as_bytes())),
        [(
            id,
            Err(ClientError::Rpc {
                code: -32602,
                message: "unknown tool".into()
            })
        )]
    );
}

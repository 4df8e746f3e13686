//! The bad-input table: every kind of bad input we know of, the state the server is in, and
//! the answer it must give at once. The same table, rendered, is in `docs/protocol.md`; a test
//! fails when the two differ.

use ferry_mcp_core::protocol::MAX_LINE_BYTES;
use ferry_mcp_testkit::session::Session;
use serde_json::Value;

#[derive(Clone, Copy)]
enum State {
    /// Nothing received yet.
    Fresh,
    /// After `initialize` with this version.
    Initialized(&'static str),
}

#[derive(Clone, Copy)]
enum Input {
    Line(&'static [u8]),
    /// A line over the size cap whose first bytes are these.
    Oversized(&'static str),
}

pub(crate) struct Case {
    state: State,
    input: Input,
    answer: &'static str,
}

const STATELESS_META: &str = r#""_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}"#;

const fn line(bytes: &'static str) -> Input {
    Input::Line(bytes.as_bytes())
}

/// A request line whose params carry the 2026-07-28 `_meta` (after `params_before`, if any).
fn stateless(id: u32, method: &str, params_before: &str) -> Input {
    let params = if params_before.is_empty() {
        format!("{{{STATELESS_META}}}")
    } else {
        format!("{{{params_before},{STATELESS_META}}}")
    };
    let text = format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"{method}","params":{params}}}"#);
    Input::Line(Box::leak(text.into_boxed_str()).as_bytes())
}

const FRESH: State = State::Fresh;
const V1125: State = State::Initialized("2025-11-25");

pub(crate) fn cases() -> Vec<Case> {
    vec![
        Case {
            state: FRESH,
            input: line("not json"),
            answer: "`-32700` parse error: invalid json, id null",
        },
        Case {
            state: FRESH,
            input: line(r#"{"jsonrpc":"2.0","id":1,"method":"ping""#),
            answer: "`-32700` parse error: invalid json, id null",
        },
        Case {
            state: FRESH,
            input: Input::Line(b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"p\xffng\"}"),
            answer: "`-32700` parse error: invalid utf-8, id null",
        },
        Case {
            state: FRESH,
            input: line("42"),
            answer: "`-32600` invalid request: not a json-rpc object, id null",
        },
        Case {
            state: FRESH,
            input: line(r#"{"jsonrpc":"1.0","id":1,"method":"ping"}"#),
            answer: "`-32600` invalid request: jsonrpc must be \"2.0\", id 1",
        },
        Case {
            state: FRESH,
            input: line(r#"{"jsonrpc":"2.0","id":2}"#),
            answer: "`-32600` invalid request: no method, id 2",
        },
        Case {
            state: FRESH,
            input: line(r#"{"jsonrpc":"2.0","id":{"a":1},"method":"ping"}"#),
            answer: "`-32600` invalid request: id must be a string or a number, id null",
        },
        Case {
            state: FRESH,
            input: line(r#"{"jsonrpc":"2.0","id":3,"method":"ping","params":[1]}"#),
            answer: "`-32600` invalid request: params must be an object, id 3",
        },
        Case {
            state: FRESH,
            input: line(r#"{"jsonrpc":"2.0","id":4,"method":"tools/list"}"#),
            answer: "`-32600` invalid request: server not initialized (send initialize first, or name protocol version 2026-07-28 in _meta), id 4",
        },
        Case {
            state: FRESH,
            input: line(
                r#"{"jsonrpc":"2.0","id":30,"method":"tools/call","params":{"name":"fixture_status","arguments":{}}}"#,
            ),
            answer: "`-32600` invalid request: server not initialized (send initialize first, or name protocol version 2026-07-28 in _meta), id 30",
        },
        Case {
            state: FRESH,
            input: line(r#"{"jsonrpc":"2.0","id":null,"method":"ping"}"#),
            answer: "`-32600` invalid request: id must be a string or a number, id null",
        },
        Case {
            state: FRESH,
            input: line(r#"{"jsonrpc":"2.0","id":5,"method":"prompts/list"}"#),
            answer: "`-32601` method not found: prompts/list, id 5",
        },
        Case {
            state: V1125,
            input: line(r#"{"jsonrpc":"2.0","id":5,"method":"prompts/list"}"#),
            answer: "`-32601` method not found: prompts/list, id 5",
        },
        Case {
            state: FRESH,
            input: line(r#"{"jsonrpc":"2.0","id":6,"method":"server/discover"}"#),
            answer: "result",
        },
        Case {
            state: FRESH,
            input: line(r#"[{"jsonrpc":"2.0","id":7,"method":"ping"}]"#),
            answer: "`-32600` invalid request: batches are not supported in this protocol version, id null",
        },
        Case {
            state: State::Initialized("2024-11-05"),
            input: line(r#"[{"jsonrpc":"2.0","id":7,"method":"ping"}]"#),
            answer: "`-32600` invalid request: batches are not supported in this protocol version, id null",
        },
        Case {
            state: State::Initialized("2025-06-18"),
            input: line(r#"[{"jsonrpc":"2.0","id":7,"method":"ping"}]"#),
            answer: "`-32600` invalid request: batches are not supported in this protocol version, id null",
        },
        Case {
            state: V1125,
            input: line(r#"[{"jsonrpc":"2.0","id":7,"method":"ping"}]"#),
            answer: "`-32600` invalid request: batches are not supported in this protocol version, id null",
        },
        Case {
            state: State::Initialized("2025-03-26"),
            input: line(r#"[{"jsonrpc":"2.0","id":7,"method":"ping"}]"#),
            answer: "batch of 1 answers",
        },
        Case {
            state: State::Initialized("2025-03-26"),
            input: line(
                r#"[{"jsonrpc":"2.0","id":31,"method":"initialize","params":{"protocolVersion":"2025-03-26","capabilities":{},"clientInfo":{"name":"t","version":"0"}}}]"#,
            ),
            answer: "batch of 1 answers",
        },
        Case {
            state: State::Initialized("2025-03-26"),
            input: line("[]"),
            answer: "`-32600` invalid request: empty batch, id null",
        },
        Case {
            state: V1125,
            input: line(
                r#"{"jsonrpc":"2.0","id":8,"method":"tools/call","params":{"name":"nope"}}"#,
            ),
            answer: "`-32602` unknown tool: nope, id 8",
        },
        Case {
            state: V1125,
            input: line(r#"{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{}}"#),
            answer: "`-32602` missing tool name, id 9",
        },
        Case {
            state: V1125,
            input: line(
                r#"{"jsonrpc":"2.0","id":10,"method":"tools/call","params":{"name":"fixture_post","arguments":{"body":42}}}"#,
            ),
            answer: "isError result: invalid arguments for fixture_post: `body`: 42 is not of type \"string\"",
        },
        Case {
            state: V1125,
            input: line(
                r#"{"jsonrpc":"2.0","id":11,"method":"tools/call","params":{"name":"fixture_post","arguments":{}}}"#,
            ),
            answer: "isError result: invalid arguments for fixture_post: \"body\" is a required property",
        },
        Case {
            state: V1125,
            input: line(
                r#"{"jsonrpc":"2.0","id":12,"method":"tools/call","params":{"name":"fixture_post","arguments":"hi"}}"#,
            ),
            answer: "isError result: invalid arguments for fixture_post: arguments must be an object",
        },
        Case {
            state: V1125,
            input: line(
                r#"{"jsonrpc":"2.0","id":13,"method":"tools/list","params":{"cursor":"bogus"}}"#,
            ),
            answer: "`-32602` invalid cursor, id 13",
        },
        Case {
            state: V1125,
            input: line(
                r#"{"jsonrpc":"2.0","id":32,"method":"tools/list","params":{"cursor":"c1"}}"#,
            ),
            answer: "`-32602` invalid cursor, id 32",
        },
        Case {
            state: V1125,
            input: line(
                r#"{"jsonrpc":"2.0","id":14,"method":"resources/read","params":{"uri":"ferry://demo/fixture-order/7"}}"#,
            ),
            answer: "`-32002` resource not found: ferry://demo/fixture-order/7, id 14, data `{\"uri\":\"ferry://demo/fixture-order/7\"}`",
        },
        Case {
            state: FRESH,
            input: stateless(
                22,
                "resources/read",
                r#""uri":"ferry://demo/fixture-order/7""#,
            ),
            answer: "`-32602` resource not found: ferry://demo/fixture-order/7, id 22, data `{\"uri\":\"ferry://demo/fixture-order/7\"}`",
        },
        Case {
            state: FRESH,
            input: line(
                r#"{"jsonrpc":"2.0","id":15,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2099-01-01"}}}"#,
            ),
            answer: "`-32022` unsupported protocol version, id 15, data `{\"requested\":\"2099-01-01\",\"supported\":[\"2026-07-28\"]}`",
        },
        Case {
            state: FRESH,
            input: line(
                r#"{"jsonrpc":"2.0","id":23,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2025-11-25"}}}"#,
            ),
            answer: "`-32022` unsupported protocol version, id 23, data `{\"requested\":\"2025-11-25\",\"supported\":[\"2026-07-28\"]}`",
        },
        Case {
            state: FRESH,
            input: line(
                r#"{"jsonrpc":"2.0","id":24,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":20260728}}}"#,
            ),
            answer: "`-32602` invalid params: _meta io.modelcontextprotocol/protocolVersion must be a string, id 24",
        },
        Case {
            state: FRESH,
            input: line(
                r#"{"jsonrpc":"2.0","id":25,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}"#,
            ),
            answer: "`-32602` invalid params: _meta lacks io.modelcontextprotocol/clientCapabilities, id 25",
        },
        Case {
            state: FRESH,
            input: stateless(26, "prompts/list", ""),
            answer: "`-32601` method not found: prompts/list, id 26",
        },
        Case {
            state: FRESH,
            input: stateless(27, "tools/call", r#""name":"nope""#),
            answer: "`-32602` unknown tool: nope, id 27",
        },
        Case {
            state: FRESH,
            input: stateless(
                28,
                "tools/call",
                r#""name":"fixture_order","arguments":{"id":7}"#,
            ),
            answer: "isError result: invalid arguments for fixture_order: `id`: 7 is not of type \"string\"",
        },
        Case {
            state: FRESH,
            input: line(
                r#"[{"jsonrpc":"2.0","id":29,"method":"ping","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}]"#,
            ),
            answer: "`-32600` invalid request: batches are not supported in this protocol version, id null",
        },
        Case {
            state: FRESH,
            input: line(r#"{"jsonrpc":"2.0","method":"no/such/notification"}"#),
            answer: "no answer",
        },
        Case {
            state: V1125,
            input: line(r#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":[1]}"#),
            answer: "no answer",
        },
        Case {
            state: FRESH,
            input: line("   "),
            answer: "no answer",
        },
        Case {
            state: FRESH,
            input: line(r#"{"jsonrpc":"2.0","id":16,"result":{}}"#),
            answer: "no answer",
        },
        Case {
            state: FRESH,
            input: Input::Oversized(
                r#"{"jsonrpc":"2.0","id":17,"method":"tools/call","params":{"name":"fixture_post","arguments":{"body":"aaaa"#,
            ),
            answer: "`-32600` invalid request: line longer than 1048576 bytes, id 17",
        },
        Case {
            state: FRESH,
            input: Input::Oversized(
                r#"{"jsonrpc":"2.0","method":"x","params":{"id":18,"body":"aaaa"#,
            ),
            answer: "`-32600` invalid request: line longer than 1048576 bytes, id null",
        },
        Case {
            state: FRESH,
            input: Input::Oversized(
                r#"{"jsonrpc":"2.0", "id" : "req-19","method":"tools/call","params":{"body":"aaaa"#,
            ),
            answer: "`-32600` invalid request: line longer than 1048576 bytes, id \"req-19\"",
        },
    ]
}

/// What the server wrote, in the words of the table.
fn describe(out: &[String]) -> String {
    match out {
        [] => "no answer".into(),
        [line] => {
            let message: Value = serde_json::from_str(line).unwrap();
            if let Some(batch) = message.as_array() {
                return format!("batch of {} answers", batch.len());
            }
            if let Some(error) = message.get("error") {
                let message_text = error["message"].as_str().unwrap_or_default();
                let data = error
                    .get("data")
                    .map(|data| format!(", data `{data}`"))
                    .unwrap_or_default();
                return format!(
                    "`{}` {message_text}, id {}{data}",
                    error["code"], message["id"]
                );
            }
            let result = &message["result"];
            if result["isError"] == true {
                return format!(
                    "isError result: {}",
                    result["content"][0]["text"].as_str().unwrap_or_default()
                );
            }
            "result".into()
        }
        more => format!("{} lines", more.len()),
    }
}

fn shown(input: Input) -> String {
    let text = match input {
        Input::Line(bytes) => bytes
            .utf8_chunks()
            .map(|chunk| {
                let invalid: String = chunk
                    .invalid()
                    .iter()
                    .map(|b| format!("\\x{b:02x}"))
                    .collect();
                format!("{}{invalid}", chunk.valid())
            })
            .collect(),
        Input::Oversized(prefix) => format!("{prefix}... ({} bytes or more)", MAX_LINE_BYTES + 1),
    };
    text.replace('|', "\\|")
}

pub(crate) fn run(case: &Case) -> Vec<String> {
    let mut session = Session::fixture("demo");
    if let State::Initialized(version) = case.state {
        session.initialize(version);
    }
    match case.input {
        Input::Line(bytes) => {
            let out = session.send_raw(bytes);
            let ping = session.send_raw(br#"{"jsonrpc":"2.0","id":"after","method":"ping"}"#);
            assert_eq!(
                ping.last().map(String::as_str),
                Some(r#"{"jsonrpc":"2.0","id":"after","result":{}}"#),
                "the server stopped serving after {}",
                shown(case.input)
            );
            out
        }
        Input::Oversized(prefix) => {
            let out = ferry_mcp_testkit::fixture::server("demo")
                .handle_oversized_line(prefix.as_bytes(), session.now());
            out.iter()
                .for_each(|line| ferry_mcp_testkit::session::check_wire_line(line));
            out
        }
    }
}

fn render(rows: &[(String, String, String)]) -> String {
    let mut table = String::from("| state | input | answer |\n|---|---|---|\n");
    for (state, input, answer) in rows {
        table.push_str(&format!("| {state} | `{input}` | {answer} |\n"));
    }
    table
}

fn state_name(state: State) -> String {
    match state {
        State::Fresh => "fresh".into(),
        State::Initialized(version) => format!("after initialize {version}"),
    }
}

#[test]
fn every_bad_input_gets_its_answer_at_once() {
    let mut failures = Vec::new();
    for case in cases() {
        let got = describe(&run(&case));
        if got != case.answer {
            failures.push(format!(
                "{} {}: expected {} but got {got}",
                state_name(case.state),
                shown(case.input),
                case.answer
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn the_bad_input_table_in_docs_matches_the_test() {
    let rows: Vec<_> = cases()
        .iter()
        .map(|case| {
            (
                state_name(case.state),
                shown(case.input),
                case.answer.to_owned(),
            )
        })
        .collect();
    let table = render(&rows);
    let docs = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../docs/protocol.md"))
        .unwrap_or_default();
    assert!(
        docs.contains(&table),
        "docs/protocol.md must contain this table:\n{table}"
    );
}

#[test]
fn every_cut_of_a_request_gets_at_most_one_answer_and_the_server_keeps_serving() {
    let line = br#"{"jsonrpc":"2.0","id":"a\"b","method":"tools/call","params":{"name":"fixture_post","arguments":{"body":"\u00e9\n"},"_meta":{"progressToken":1}}}"#;
    let mut session = Session::fixture("demo");
    session.initialize("2025-11-25");
    for end in 0..=line.len() {
        let answers = session.send_raw(&line[..end]);
        assert!(answers.len() <= 1, "cut at {end}: {answers:?}");
        let oversized = ferry_mcp_testkit::fixture::server("demo")
            .handle_oversized_line(&line[..end], session.now());
        assert_eq!(oversized.len(), 1, "cut at {end}");
        ferry_mcp_testkit::session::check_wire_line(&oversized[0]);
    }
    let ping = session.send(r#"{"jsonrpc":"2.0","id":"last","method":"ping"}"#);
    assert_eq!(ping[0]["result"], serde_json::json!({}));
}

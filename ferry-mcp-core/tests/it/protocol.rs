//! The protocol state machine driven through the testkit's scripted session: handshakes of both
//! eras, tools, resources, progress, cancellation and pagination.

use ferry_mcp_core::protocol::Server;
use ferry_mcp_core::registry::{Group, Surface};
use ferry_mcp_core::shape::ToolOutcome;
use ferry_mcp_core::time::Timestamp;
use ferry_mcp_core::tool::{Annotations, CallContext, Tool, ToolDefinition};
use ferry_mcp_testkit::fixture;
use ferry_mcp_testkit::session::{Session, stateless_meta};
use serde_json::{Map, Value, json};

const PROJECT: &str = "demo";

fn initialized(version: &str) -> Session {
    Session::fixture_initialized(PROJECT, version)
}

#[test]
fn initialize_echoes_every_supported_initialize_era_version() {
    for version in ["2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25"] {
        let result = Session::fixture(PROJECT).initialize(version);
        assert_eq!(result["protocolVersion"], version);
    }
}

#[test]
fn initialize_answers_our_latest_for_an_unknown_or_stateless_version() {
    for version in ["1999-01-01", "2026-07-28", ""] {
        let result = Session::fixture(PROJECT).initialize(version);
        assert_eq!(result["protocolVersion"], "2025-11-25", "asked {version}");
    }
}

#[test]
fn initialize_gives_server_info_capabilities_and_instructions() {
    let result = Session::fixture(PROJECT).initialize("2025-11-25");
    assert_eq!(
        result["serverInfo"],
        json!({ "name": "ferry", "version": "0.0.0-test" })
    );
    assert_eq!(result["instructions"], fixture::INSTRUCTIONS);
    assert!(result["capabilities"]["tools"].is_object());
    assert!(result["capabilities"]["resources"].is_object());
}

#[test]
fn ping_answers_an_empty_object_before_and_after_initialize() {
    let mut session = Session::fixture(PROJECT);
    assert_eq!(session.result("ping", json!({})), json!({}));
    session.initialize("2025-11-25");
    assert_eq!(session.result("ping", json!({})), json!({}));
}

#[test]
fn server_discover_is_answered_at_once_with_versions_and_cache_hints() {
    let mut session = Session::fixture(PROJECT);
    let result = session.result("server/discover", json!({ "_meta": stateless_meta() }));
    assert_eq!(result["resultType"], "complete");
    // Only what a request can name in `_meta`: the initialize-era revisions are reached through
    // `initialize`, and a client that picked one from this list would get -32022.
    assert_eq!(result["supportedVersions"], json!(["2026-07-28"]));
    assert!(result["ttlMs"].is_u64());
    assert_eq!(result["cacheScope"], "public");
    assert_eq!(result["instructions"], fixture::INSTRUCTIONS);
    assert_eq!(
        result["_meta"]["io.modelcontextprotocol/serverInfo"]["name"],
        "ferry"
    );
}

#[test]
fn a_stateless_request_is_served_without_initialize_and_carries_result_type_and_cache_hints() {
    let mut session = Session::fixture(PROJECT);
    let answer = session.stateless("tools/list", json!({}));
    let result = &answer["result"];
    assert_eq!(result["resultType"], "complete");
    assert_eq!(result["cacheScope"], "public");
    assert!(result["ttlMs"].is_u64());
    assert_eq!(result["tools"].as_array().unwrap().len(), 5);
    let call = session.stateless(
        "tools/call",
        json!({ "name": "fixture_status", "arguments": {} }),
    );
    assert_eq!(call["result"]["resultType"], "complete");
    assert!(
        call["result"].get("ttlMs").is_none(),
        "call results are not cacheable: {call}"
    );
    let read = session.stateless(
        "resources/read",
        json!({ "uri": "ferry://demo/fixture-order/1" }),
    );
    assert_eq!(read["result"]["cacheScope"], "private");
    assert_eq!(read["result"]["ttlMs"], 0);
}

#[test]
fn an_unsupported_stateless_version_gets_32022_with_supported_and_requested() {
    let mut session = Session::fixture(PROJECT);
    let params = json!({ "_meta": { "io.modelcontextprotocol/protocolVersion": "2099-01-01" } });
    let error = session.error("tools/list", params);
    assert_eq!(error["code"], -32022);
    assert_eq!(error["data"]["requested"], "2099-01-01");
    assert_eq!(error["data"]["supported"], json!(["2026-07-28"]));
}

#[test]
fn every_version_that_32022_and_discover_offer_is_served_when_a_request_names_it() {
    let mut session = Session::fixture(PROJECT);
    let offered = session.result("server/discover", json!({}))["supportedVersions"].clone();
    let refused = session.error(
        "tools/list",
        json!({ "_meta": { "io.modelcontextprotocol/protocolVersion": "2099-01-01", "io.modelcontextprotocol/clientCapabilities": {} } }),
    );
    assert_eq!(refused["data"]["supported"], offered);
    for version in offered.as_array().unwrap() {
        let params = json!({ "_meta": { "io.modelcontextprotocol/protocolVersion": version, "io.modelcontextprotocol/clientCapabilities": {} } });
        let answer = session.request("tools/list", params);
        assert!(answer.get("result").is_some(), "{version}: {answer}");
    }
}

#[test]
fn a_stateless_request_needs_its_client_capabilities_and_a_string_version() {
    let mut session = Session::fixture(PROJECT);
    for meta in [
        json!({ "io.modelcontextprotocol/protocolVersion": "2026-07-28" }),
        json!({ "io.modelcontextprotocol/protocolVersion": "2026-07-28", "io.modelcontextprotocol/clientCapabilities": [] }),
        json!({ "io.modelcontextprotocol/protocolVersion": 2026, "io.modelcontextprotocol/clientCapabilities": {} }),
    ] {
        let error = session.error("tools/list", json!({ "_meta": meta }));
        assert_eq!(error["code"], -32602, "{meta}");
    }
}

#[test]
fn the_negotiated_version_named_in_meta_is_served_on_its_connection() {
    let mut session = initialized("2025-06-18");
    let named =
        |version: &str| json!({ "_meta": { "io.modelcontextprotocol/protocolVersion": version } });
    assert!(
        session
            .request("tools/list", named("2025-06-18"))
            .get("result")
            .is_some()
    );
    assert_eq!(
        session.error("tools/list", named("2025-11-25"))["code"],
        -32022
    );
}

#[test]
fn initialize_era_results_carry_no_stateless_fields() {
    let mut session = initialized("2025-11-25");
    let result = session.result("tools/list", json!({}));
    assert!(
        result.get("resultType").is_none() && result.get("ttlMs").is_none(),
        "{result}"
    );
}

#[test]
fn tools_call_answers_structured_content_and_a_one_line_summary() {
    let mut session = Session::fixture(PROJECT);
    session.set_now(Timestamp::from_millis(1234));
    session.initialize("2025-11-25");
    let result = session.call("fixture_status", json!({}));
    assert_eq!(
        result["structuredContent"],
        json!({ "project": "demo", "now_ms": 1234, "ok": true })
    );
    assert_eq!(
        result["content"],
        json!([{ "type": "text", "text": "fixture server for demo is ok" }])
    );
    assert!(result.get("isError").is_none());
}

#[test]
fn arguments_that_do_not_match_the_input_schema_are_a_tool_error_naming_the_field() {
    let mut session = initialized("2025-11-25");
    let result = session.call("fixture_post", json!({ "body": 42 }));
    assert_eq!(result["isError"], true);
    let text = result["content"][0]["text"].as_str().unwrap();
    assert!(text.contains("`body`") && text.contains("string"), "{text}");

    let result = session.call("fixture_post", json!({}));
    let text = result["content"][0]["text"].as_str().unwrap();
    assert!(
        result["isError"] == true && text.contains("body") && text.contains("required"),
        "{text}"
    );

    let result = session.call("fixture_post", json!({ "body": "hi", "extra": 1 }));
    let text = result["content"][0]["text"].as_str().unwrap();
    assert!(
        result["isError"] == true && text.contains("extra"),
        "{text}"
    );
}

#[test]
fn an_order_answers_a_resource_link_that_resources_read_serves() {
    let mut session = initialized("2025-11-25");
    let result = session.call("fixture_order", json!({ "id": "42" }));
    let link = &result["content"][1];
    assert_eq!(link["type"], "resource_link");
    assert_eq!(link["uri"], "ferry://demo/fixture-order/42");
    let read = session.result(
        "resources/read",
        json!({ "uri": "ferry://demo/fixture-order/42" }),
    );
    let contents = &read["contents"][0];
    assert_eq!(contents["uri"], "ferry://demo/fixture-order/42");
    assert_eq!(contents["mimeType"], "text/markdown");
    assert!(contents["text"].as_str().unwrap().contains("order 42"));
}

#[test]
fn clients_older_than_2025_06_18_get_a_link_as_a_text_line() {
    let mut session = initialized("2025-03-26");
    let result = session.call("fixture_order", json!({ "id": "1" }));
    assert_eq!(
        result["content"][1],
        json!({ "type": "text", "text": "[Resource link: order 1] ferry://demo/fixture-order/1" })
    );
}

#[test]
fn a_missing_resource_is_32002_in_the_initialize_era_and_32602_when_stateless() {
    for uri in [
        "ferry://demo/fixture-order/7",
        "ferry://other/fixture-order/1",
        "ferry://demo/nokind/1",
        "https://x/y",
        "ferry://demo/../1",
    ] {
        let error = initialized("2025-11-25").error("resources/read", json!({ "uri": uri }));
        assert_eq!(error["code"], -32002, "{uri}");
        assert_eq!(error["data"]["uri"], uri);
        let answer = Session::fixture(PROJECT).stateless("resources/read", json!({ "uri": uri }));
        assert_eq!(answer["error"]["code"], -32602, "{uri}");
    }
}

#[test]
fn templates_advertise_each_resource_kind_of_the_surface() {
    let mut session = initialized("2025-11-25");
    let result = session.result("resources/templates/list", json!({}));
    assert_eq!(
        result["resourceTemplates"][0]["uriTemplate"],
        "ferry://demo/fixture-order/{id}"
    );
    assert_eq!(result["resourceTemplates"].as_array().unwrap().len(), 1);
    assert_eq!(
        session.result("resources/list", json!({})),
        json!({ "resources": [] })
    );
}

#[test]
fn progress_is_reported_only_when_the_request_carries_a_progress_token() {
    let mut session = initialized("2025-11-25");
    let params = json!({ "name": "fixture_count", "arguments": { "n": 3 }, "_meta": { "progressToken": "tok" } });
    let answer = session.request("tools/call", params);
    assert_eq!(
        answer["result"]["structuredContent"],
        json!({ "counted": 3 })
    );
    let notes = session.take_notifications();
    assert_eq!(notes.len(), 3);
    for (step, note) in notes.iter().enumerate() {
        assert_eq!(note["method"], "notifications/progress");
        assert_eq!(note["params"]["progressToken"], "tok");
        assert_eq!(note["params"]["progress"], json!((step + 1) as f64));
        assert_eq!(note["params"]["total"], json!(3.0));
    }
    session.call("fixture_count", json!({ "n": 3 }));
    assert!(session.take_notifications().is_empty());
}

fn call_line(id: u64) -> String {
    json!({ "jsonrpc": "2.0", "id": id, "method": "tools/call", "params": { "name": "fixture_count", "arguments": { "n": 1 } } })
        .to_string()
}

fn cancel_line(id: u64) -> String {
    json!({ "jsonrpc": "2.0", "method": "notifications/cancelled", "params": { "requestId": id } })
        .to_string()
}

fn ids(lines: &[String]) -> Vec<Value> {
    lines
        .iter()
        .map(|line| serde_json::from_str::<Value>(line).unwrap()["id"].clone())
        .collect()
}

#[test]
fn a_cancellation_in_the_same_batch_suppresses_the_earlier_request() {
    let mut session = initialized("2025-11-25");
    let out = session.send_together(&[&call_line(10), &call_line(11), &cancel_line(10)]);
    assert_eq!(ids(&out), [json!(11)]);
}

#[test]
fn a_cancellation_of_another_id_or_before_the_request_suppresses_nothing() {
    let mut session = initialized("2025-11-25");
    let out = session.send_together(&[
        &cancel_line(20),
        &call_line(20),
        &call_line(21),
        &cancel_line(99),
    ]);
    assert_eq!(ids(&out), [json!(20), json!(21)]);
    assert!(
        session.send(&cancel_line(21)).is_empty(),
        "a late cancellation is not answered"
    );
}

#[test]
fn tools_list_pages_follow_next_cursor_to_the_same_tools() {
    let full = initialized("2025-11-25").result("tools/list", json!({}));
    let mut session = Session::new(fixture::server(PROJECT).with_tools_page_size(2));
    session.initialize("2025-11-25");
    let mut tools = Vec::new();
    let mut cursor = Value::Null;
    for _ in 0..10 {
        let params = if cursor.is_null() {
            json!({})
        } else {
            json!({ "cursor": cursor })
        };
        let page = session.result("tools/list", params);
        assert!(page["tools"].as_array().unwrap().len() <= 2);
        tools.extend(page["tools"].as_array().unwrap().iter().cloned());
        cursor = page.get("nextCursor").cloned().unwrap_or(Value::Null);
        if cursor.is_null() {
            break;
        }
    }
    assert_eq!(Value::Array(tools), full["tools"]);
}

#[test]
fn tools_list_bytes_do_not_change_with_time_project_or_server_version() {
    let mut config = fixture::config("other-project");
    config.version = "9.9.9";
    let mut first = Session::fixture(PROJECT);
    let mut second = Session::new(Server::new(config, fixture::surface()));
    second.set_now(Timestamp::from_millis(42));
    first.initialize("2025-11-25");
    second.initialize("2025-06-18");
    let a = first.send_raw(br#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#);
    let b = second.send_raw(br#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#);
    assert_eq!(a, b);
}

#[test]
fn a_batch_is_served_as_one_array_under_2025_03_26() {
    let mut session = initialized("2025-03-26");
    let line = r#"[{"jsonrpc":"2.0","id":1,"method":"ping"},{"jsonrpc":"2.0","method":"notifications/progress","params":{}},{"jsonrpc":"2.0","id":2,"method":"nope"}]"#;
    let out = session.send_raw(line.as_bytes());
    assert_eq!(out.len(), 1);
    assert_eq!(
        out[0],
        r#"[{"jsonrpc":"2.0","id":1,"result":{}},{"jsonrpc":"2.0","id":2,"error":{"code":-32601,"message":"method not found: nope"}}]"#
    );
    let initialize = r#"[{"jsonrpc":"2.0","id":3,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"0"}}}]"#;
    assert_eq!(
        session.send_raw(initialize.as_bytes()),
        [
            r#"[{"jsonrpc":"2.0","id":3,"error":{"code":-32600,"message":"invalid request: initialize cannot be part of a batch"}}]"#
        ]
    );
    assert_eq!(
        session.server().negotiated_version().map(|v| v.as_str()),
        Some("2025-03-26"),
        "a batched initialize negotiates nothing"
    );
    let only_notifications = r#"[{"jsonrpc":"2.0","method":"notifications/initialized"}]"#;
    assert!(session.send_raw(only_notifications.as_bytes()).is_empty());
}

#[test]
fn a_trailing_carriage_return_is_tolerated() {
    let mut session = Session::fixture(PROJECT);
    let out = session.send_raw(b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}\r");
    assert_eq!(out, [r#"{"jsonrpc":"2.0","id":1,"result":{}}"#]);
}

#[test]
fn bad_input_never_stops_the_server() {
    let mut session = initialized("2025-11-25");
    session.send("{");
    session.send(r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":7}}"#);
    session.send_raw(&[0xff, 0xfe]);
    assert_eq!(session.result("ping", json!({})), json!({}));
}

struct Panics;

static PANICS: ToolDefinition = ToolDefinition {
    name: "panics",
    title: "",
    description: "Always panics.",
    input_schema: r#"{"type":"object"}"#,
    output_schema: None,
    annotations: Annotations::READ_ONLY,
};

impl Tool for Panics {
    fn definition(&self) -> &'static ToolDefinition {
        &PANICS
    }
    fn call(&self, _args: &Map<String, Value>, _cx: &mut CallContext<'_>) -> ToolOutcome {
        panic!("this tool always panics")
    }
}

static PANIC_GROUP: Group = Group {
    name: "panics",
    tools: &[&Panics],
    resources: &[],
    instructions: "",
};

#[test]
fn a_panicking_tool_is_a_tool_error_and_the_server_keeps_serving() {
    let surface = Surface::build(&[&PANIC_GROUP], false).unwrap();
    let mut session = Session::new(Server::new(fixture::config(PROJECT), surface));
    session.initialize("2025-11-25");
    let result = session.call("panics", json!({}));
    assert_eq!(result["isError"], true);
    assert_eq!(
        result["content"][0]["text"],
        "internal error: panics failed"
    );
    assert_eq!(session.result("ping", json!({})), json!({}));
}

/// Ids whose text a parsed `f64` or `Value` would change: too long for any integer type,
/// negative zero, exponents, a trailing zero, and escapes.
const VERBATIM_IDS: [&str; 7] = [
    "123456789012345678901234567890",
    "-0",
    "1e2",
    "1.50",
    "-1.0E+3",
    r#""a\u00e9\"b""#,
    r#""\ud83d\ude00""#,
];

fn id_prefix(id: &str) -> String {
    format!(r#"{{"jsonrpc":"2.0","id":{id},"#)
}

#[test]
fn every_answer_echoes_the_id_byte_for_byte() {
    for id in VERBATIM_IDS {
        let mut session = initialized("2025-11-25");
        for line in [
            format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"ping"}}"#),
            format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"prompts/list"}}"#),
            format!(r#"{{"jsonrpc":"1.0","id":{id},"method":"ping"}}"#),
            format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"ping","params":[1]}}"#),
            format!(
                r#"{{ "method" : "tools/call", "id" : {id} , "jsonrpc":"2.0","params":{{"name":"fixture_status"}}}}"#
            ),
        ] {
            let out = session.send_raw(line.as_bytes());
            assert_eq!(out.len(), 1, "{line}");
            assert!(out[0].starts_with(&id_prefix(id)), "{line} -> {}", out[0]);
        }
    }
}

#[test]
fn the_last_of_duplicate_ids_is_echoed_as_it_is_read() {
    let mut session = initialized("2025-11-25");
    let out = session.send_raw(br#"{"jsonrpc":"2.0","id":1,"method":"ping","id":1.50}"#);
    assert_eq!(out, [r#"{"jsonrpc":"2.0","id":1.50,"result":{}}"#]);
}

#[test]
fn a_batch_echoes_each_id_byte_for_byte() {
    let mut session = initialized("2025-03-26");
    let items: Vec<String> = VERBATIM_IDS
        .iter()
        .map(|id| format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"ping"}}"#))
        .collect();
    let out = session.send_raw(format!("[{}]", items.join(",")).as_bytes());
    let answers: Vec<String> = VERBATIM_IDS
        .iter()
        .map(|id| format!(r#"{{"jsonrpc":"2.0","id":{id},"result":{{}}}}"#))
        .collect();
    assert_eq!(out, [format!("[{}]", answers.join(","))]);
}

#[test]
fn an_oversized_line_echoes_its_id_byte_for_byte() {
    for id in VERBATIM_IDS {
        let mut server = fixture::server(PROJECT);
        let prefix =
            format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"body":"aaaa"#);
        let out = server.handle_oversized_line(prefix.as_bytes(), Timestamp::from_millis(0));
        assert_eq!(out.len(), 1);
        assert!(out[0].starts_with(&id_prefix(id)), "{}", out[0]);
    }
}

#[test]
fn a_progress_token_is_echoed_byte_for_byte() {
    for token in VERBATIM_IDS {
        let mut session = initialized("2025-11-25");
        let line = format!(
            r#"{{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{{"name":"fixture_count","arguments":{{"n":1}},"_meta":{{"progressToken":{token}}}}}}}"#
        );
        let out = session.send_raw(line.as_bytes());
        assert_eq!(out.len(), 2, "{out:?}");
        assert_eq!(
            out[0],
            format!(
                r#"{{"jsonrpc":"2.0","method":"notifications/progress","params":{{"message":"step 1","progress":1.0,"progressToken":{token},"total":1.0}}}}"#
            )
        );
    }
}

fn raw_call_line(id: &str) -> String {
    format!(
        r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"fixture_count","arguments":{{"n":1}}}}}}"#
    )
}

fn raw_cancel_line(id: &str) -> String {
    format!(
        r#"{{"jsonrpc":"2.0","method":"notifications/cancelled","params":{{"requestId":{id}}}}}"#
    )
}

#[test]
fn a_cancellation_matches_a_huge_number_id_exactly() {
    let mut session = initialized("2025-11-25");
    let huge = "123456789012345678901234567890";
    // One more: the same f64, another request.
    let next = "123456789012345678901234567891";
    let out = session.send_together(&[
        &raw_call_line(huge),
        &raw_call_line(next),
        &raw_cancel_line(huge),
    ]);
    assert_eq!(out.len(), 1, "{out:?}");
    assert!(out[0].starts_with(&id_prefix(next)), "{}", out[0]);
}

#[test]
fn a_cancellation_matches_an_id_by_value() {
    for (request, cancel) in [
        (r#""a\u00e9\"b""#, r#""aé\"b""#),
        ("1.50", "15e-1"),
        ("-0", "0"),
        ("100", "1e2"),
    ] {
        let mut session = initialized("2025-11-25");
        let out = session.send_together(&[&raw_call_line(request), &raw_cancel_line(cancel)]);
        assert!(out.is_empty(), "{request} cancelled by {cancel}: {out:?}");
    }
    for (request, cancel) in [("1", r#""1""#), ("1.5", "1.05"), (r#""a""#, r#""A""#)] {
        let mut session = initialized("2025-11-25");
        let out = session.send_together(&[&raw_call_line(request), &raw_cancel_line(cancel)]);
        assert_eq!(out.len(), 1, "{request} is not {cancel}");
    }
}

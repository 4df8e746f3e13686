//! The official Rust SDK as an oracle: `rmcp`'s model types (default features off) parse every
//! kind of message the core emits, each into the type a client would read it as: the initialize
//! and server/discover results, ping's empty result, tools/list (whole and paged), call results
//! (structured, isError, resource_link, and the text line older clients get), resources/read,
//! resources/list and templates/list, stateless results with their cache hints, every error
//! answer of the bad-input table, and progress notifications.
//!
//! One kind is outside the oracle: the JSON-RPC batch array answered under 2025-03-26. rmcp 3.11
//! has no batch message type (its `JsonRpcMessage` is one request, response, notification or
//! error), so the test parses each element of the array as a server message instead.

use ferry_mcp_testkit::session::{Session, stateless_meta};
use rmcp::model::{
    CallToolResult, ContentBlock, DiscoverResult, EmptyResult, InitializeResult, JsonRpcMessage,
    ListResourceTemplatesResult, ListResourcesResult, ListToolsResult, ReadResourceResult,
    ServerJsonRpcMessage, ServerNotification,
};
use serde::de::DeserializeOwned;
use serde_json::{Value, json};

/// Sends `params` to `method` and returns the raw output lines, all parsed by rmcp as server messages.
fn exchange(session: &mut Session, method: &str, params: Value) -> Vec<String> {
    let id = session.next_id();
    let line =
        json!({ "jsonrpc": "2.0", "id": id, "method": method, "params": params }).to_string();
    let out = session.send_raw(line.as_bytes());
    for line in &out {
        serde_json::from_str::<ServerJsonRpcMessage>(line)
            .unwrap_or_else(|e| panic!("rmcp rejects ({e}): {line}"));
    }
    out
}

/// The `result` of the last line, parsed by rmcp as `T`.
fn result_as<T: DeserializeOwned>(out: &[String]) -> T {
    let message: Value = serde_json::from_str(out.last().expect("an answer")).unwrap();
    let result = message
        .get("result")
        .unwrap_or_else(|| panic!("not a result: {message}"))
        .clone();
    serde_json::from_value(result.clone())
        .unwrap_or_else(|e| panic!("rmcp rejects ({e}): {result}"))
}

#[test]
fn rmcp_parses_the_initialize_result_of_every_version() {
    for version in ["2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25"] {
        let mut session = Session::fixture("demo");
        let out = exchange(
            &mut session,
            "initialize",
            json!({ "protocolVersion": version, "capabilities": {}, "clientInfo": { "name": "t", "version": "0" } }),
        );
        let result: InitializeResult = result_as(&out);
        assert_eq!(result.protocol_version.to_string(), version);
        assert_eq!(
            result.instructions.as_deref(),
            Some(ferry_mcp_testkit::fixture::INSTRUCTIONS)
        );
        assert_eq!(result.server_info.name, "ferry");
    }
}

#[test]
fn rmcp_parses_tools_list_and_every_tool_definition() {
    let mut session = Session::fixture_initialized("demo", "2025-11-25");
    let result: ListToolsResult = result_as(&exchange(&mut session, "tools/list", json!({})));
    assert_eq!(result.tools.len(), 5);
    assert!(
        result
            .tools
            .iter()
            .all(|tool| tool.output_schema.is_some() && tool.annotations.is_some())
    );
}

#[test]
fn rmcp_parses_call_results_with_structured_content_errors_and_resource_links() {
    let mut session = Session::fixture_initialized("demo", "2025-11-25");
    let ok: CallToolResult = result_as(&exchange(
        &mut session,
        "tools/call",
        json!({ "name": "fixture_status", "arguments": {} }),
    ));
    assert!(ok.structured_content.is_some() && ok.is_error.is_none());

    let error: CallToolResult = result_as(&exchange(
        &mut session,
        "tools/call",
        json!({ "name": "fixture_post", "arguments": {} }),
    ));
    assert_eq!(error.is_error, Some(true));

    let linked: CallToolResult = result_as(&exchange(
        &mut session,
        "tools/call",
        json!({ "name": "fixture_order", "arguments": { "id": "1" } }),
    ));
    let link = linked.content.iter().find_map(|block| match block {
        ContentBlock::ResourceLink(resource) => Some(resource.uri.clone()),
        _ => None,
    });
    assert_eq!(link.as_deref(), Some("ferry://demo/fixture-order/1"));
}

#[test]
fn rmcp_parses_resource_results() {
    let mut session = Session::fixture_initialized("demo", "2025-11-25");
    let read: ReadResourceResult = result_as(&exchange(
        &mut session,
        "resources/read",
        json!({ "uri": "ferry://demo/fixture-order/1" }),
    ));
    assert_eq!(read.contents.len(), 1);
    let templates: ListResourceTemplatesResult = result_as(&exchange(
        &mut session,
        "resources/templates/list",
        json!({}),
    ));
    assert_eq!(templates.resource_templates.len(), 1);
    let listed: ListResourcesResult =
        result_as(&exchange(&mut session, "resources/list", json!({})));
    assert!(listed.resources.is_empty());
}

#[test]
fn rmcp_parses_stateless_results_with_their_cache_hints() {
    let mut session = Session::fixture("demo");
    let discover: DiscoverResult = result_as(&exchange(
        &mut session,
        "server/discover",
        json!({ "_meta": stateless_meta() }),
    ));
    assert!(
        discover
            .supported_versions
            .iter()
            .any(|v| v.to_string().contains("2026-07-28"))
    );
    let tools: ListToolsResult = result_as(&exchange(
        &mut session,
        "tools/list",
        json!({ "_meta": stateless_meta() }),
    ));
    assert!(tools.result_type.is_some());
    let read: ReadResourceResult = result_as(&exchange(
        &mut session,
        "resources/read",
        json!({ "uri": "ferry://demo/fixture-order/2", "_meta": stateless_meta() }),
    ));
    assert_eq!(read.contents.len(), 1);
}

#[test]
fn rmcp_parses_error_answers() {
    let mut session = Session::fixture_initialized("demo", "2025-11-25");
    let cases = [
        ("nope/nope", json!({}), -32601),
        ("tools/call", json!({ "name": "nope" }), -32602),
        (
            "resources/read",
            json!({ "uri": "ferry://demo/fixture-order/9" }),
            -32002,
        ),
        (
            "tools/list",
            json!({ "_meta": { "io.modelcontextprotocol/protocolVersion": "2099-01-01" } }),
            -32022,
        ),
    ];
    for (method, params, code) in cases {
        let out = exchange(&mut session, method, params);
        let message: ServerJsonRpcMessage = serde_json::from_str(&out[0]).unwrap();
        let JsonRpcMessage::Error(error) = message else {
            panic!("not an error: {}", out[0])
        };
        assert_eq!(error.error.code.0, code, "{method}");
    }
    for line in [&b"not json"[..], b"42"] {
        let out = session.send_raw(line);
        assert!(
            matches!(
                serde_json::from_str::<ServerJsonRpcMessage>(&out[0]),
                Ok(JsonRpcMessage::Error(_))
            ),
            "{}",
            out[0]
        );
    }
}

#[test]
fn rmcp_parses_progress_notifications() {
    let mut session = Session::fixture_initialized("demo", "2025-11-25");
    let params = json!({ "name": "fixture_count", "arguments": { "n": 2 }, "_meta": { "progressToken": 7 } });
    let out = exchange(&mut session, "tools/call", params);
    assert_eq!(out.len(), 3);
    for line in &out[..2] {
        let message: ServerJsonRpcMessage = serde_json::from_str(line).unwrap();
        assert!(
            matches!(message, JsonRpcMessage::Notification(ref n) if matches!(n.notification, ServerNotification::ProgressNotification(_))),
            "{line}"
        );
    }
}

/// A stateless ping answers `{"resultType":"complete"}` (2026-07-28 puts `resultType` on every
/// result); rmcp's `EmptyResult` denies unknown fields, so that one is checked as a server
/// message with the field, not as `EmptyResult`.
#[test]
fn rmcp_parses_ping_as_an_empty_result() {
    let mut session = Session::fixture("demo");
    let _: EmptyResult = result_as(&exchange(&mut session, "ping", json!({})));
    let out = exchange(&mut session, "ping", json!({ "_meta": stateless_meta() }));
    let stateless: Value = serde_json::from_str(&out[0]).unwrap();
    assert_eq!(stateless["result"], json!({ "resultType": "complete" }));
}

#[test]
fn rmcp_parses_a_paged_tools_list_and_its_next_cursor() {
    let server = ferry_mcp_testkit::fixture::server("demo").with_tools_page_size(2);
    let mut session = Session::new(server);
    session.initialize("2025-11-25");
    let page: ListToolsResult = result_as(&exchange(&mut session, "tools/list", json!({})));
    assert_eq!(page.tools.len(), 2);
    let cursor = page.next_cursor.expect("a next cursor");
    let next: ListToolsResult = result_as(&exchange(
        &mut session,
        "tools/list",
        json!({ "cursor": cursor }),
    ));
    assert_eq!(next.tools.len(), 2);
}

#[test]
fn rmcp_parses_a_stateless_call_result_and_the_text_link_older_clients_get() {
    let mut session = Session::fixture("demo");
    let stateless: CallToolResult = result_as(&exchange(
        &mut session,
        "tools/call",
        json!({ "name": "fixture_order", "arguments": { "id": "2" }, "_meta": stateless_meta() }),
    ));
    assert!(stateless.structured_content.is_some());
    assert!(
        stateless
            .content
            .iter()
            .any(|block| matches!(block, ContentBlock::ResourceLink(_)))
    );
    let mut old = Session::fixture_initialized("demo", "2024-11-05");
    let linked: CallToolResult = result_as(&exchange(
        &mut old,
        "tools/call",
        json!({ "name": "fixture_order", "arguments": { "id": "2" } }),
    ));
    assert!(
        linked
            .content
            .iter()
            .all(|block| matches!(block, ContentBlock::Text(_))),
        "a 2024-11-05 client gets no resource_link block"
    );
}

#[test]
fn rmcp_parses_every_answer_of_the_bad_input_table() {
    let mut parsed = 0;
    for case in crate::protocol_bad_input::cases() {
        for line in crate::protocol_bad_input::run(&case) {
            let elements: Vec<String> = match serde_json::from_str::<Value>(&line).unwrap() {
                // No batch type in rmcp: each answer of the array is parsed on its own.
                Value::Array(items) => items.iter().map(Value::to_string).collect(),
                _ => vec![line],
            };
            for element in elements {
                let message = serde_json::from_str::<ServerJsonRpcMessage>(&element)
                    .unwrap_or_else(|e| panic!("rmcp rejects ({e}): {element}"));
                if element.contains(r#""error":"#) {
                    assert!(matches!(message, JsonRpcMessage::Error(_)), "{element}");
                }
                parsed += 1;
            }
        }
    }
    assert!(parsed >= 30, "only {parsed} answers parsed");
}

//! Every frozen schema is valid JSON Schema in the draft-07 / 2020-12 common subset that every
//! client's validator understands, and every fixture result validates against its outputSchema.

use ferry_mcp_core::port::NoChannel;
use ferry_mcp_core::registry::Surface;
use ferry_mcp_core::tool::{CallContext, Progress};
use ferry_mcp_testkit::fixture;
use ferry_mcp_testkit::session::{START, Session, check_call_result};
use serde_json::{Map, Value, json};

/// The keywords both draft-07 and 2020-12 validators read the same way.
const COMMON_SUBSET: [&str; 14] = [
    "type",
    "properties",
    "required",
    "items",
    "enum",
    "additionalProperties",
    "description",
    "minimum",
    "maximum",
    "minLength",
    "maxLength",
    "maxItems",
    "default",
    "const",
];

/// The keywords of `schema` (at any depth) that are outside [`COMMON_SUBSET`].
pub fn keywords_outside_subset(schema: &Value) -> Vec<String> {
    let mut outside = Vec::new();
    walk(schema, "", &mut outside);
    outside
}

fn walk(schema: &Value, path: &str, outside: &mut Vec<String>) {
    let Some(object) = schema.as_object() else {
        outside.push(format!("{path}: a schema that is not an object"));
        return;
    };
    for (keyword, value) in object {
        let here = format!("{path}/{keyword}");
        if !COMMON_SUBSET.contains(&keyword.as_str()) {
            outside.push(here);
            continue;
        }
        match keyword.as_str() {
            "properties" => {
                for (name, property) in value.as_object().into_iter().flatten() {
                    walk(property, &format!("{here}/{name}"), outside);
                }
            }
            "items" => walk(value, &here, outside),
            "additionalProperties" if value.is_object() => walk(value, &here, outside),
            _ => {}
        }
    }
}

/// Every frozen schema text of a surface: (tool, which, text).
pub fn frozen_schemas(surface: &Surface) -> Vec<(&'static str, &'static str, &'static str)> {
    let mut schemas = Vec::new();
    for tool in surface.tools() {
        let definition = tool.definition();
        schemas.push((definition.name, "inputSchema", definition.input_schema));
        if let Some(output) = definition.output_schema {
            schemas.push((definition.name, "outputSchema", output));
        }
    }
    schemas
}

#[test]
fn every_frozen_schema_parses_and_compiles_as_draft_07_and_2020_12() {
    for (tool, which, text) in frozen_schemas(&fixture::surface()) {
        let schema: Value =
            serde_json::from_str(text).unwrap_or_else(|e| panic!("{tool} {which}: {e}"));
        for draft in [jsonschema::Draft::Draft7, jsonschema::Draft::Draft202012] {
            jsonschema::options()
                .with_draft(draft)
                .build(&schema)
                .unwrap_or_else(|e| panic!("{tool} {which}: {e}"));
        }
        assert!(
            schema.get("$schema").is_none(),
            "{tool} {which}: $schema costs tokens on every list"
        );
    }
}

#[test]
fn every_frozen_schema_stays_in_the_common_subset() {
    for (tool, which, text) in frozen_schemas(&fixture::surface()) {
        let outside = keywords_outside_subset(&serde_json::from_str(text).unwrap());
        assert!(outside.is_empty(), "{tool} {which} uses {outside:?}");
    }
}

#[test]
fn the_subset_walk_finds_keywords_outside_at_any_depth() {
    let schema = json!({
        "type": "object",
        "properties": { "a": { "type": "array", "prefixItems": [], "items": { "$ref": "#/x" } } },
        "unevaluatedProperties": false,
    });
    assert_eq!(
        keywords_outside_subset(&schema),
        [
            "/properties/a/items/$ref",
            "/properties/a/prefixItems",
            "/unevaluatedProperties"
        ]
    );
}

/// Arguments that make each fixture tool succeed, several per tool where paths differ.
fn sample_calls() -> Vec<(&'static str, Value)> {
    vec![
        ("fixture_count", json!({ "n": 0 })),
        ("fixture_count", json!({ "n": 5 })),
        ("fixture_list", json!({})),
        ("fixture_list", json!({ "cursor": "p2d" })),
        ("fixture_order", json!({ "id": "1" })),
        ("fixture_order", json!({ "id": "42" })),
        ("fixture_post", json!({ "body": "hello" })),
        ("fixture_status", json!({})),
    ]
}

#[test]
fn every_fixture_result_validates_against_its_output_schema() {
    let surface = fixture::surface();
    let mut checked = Vec::new();
    for (name, args) in sample_calls() {
        let served = surface.find(name).unwrap();
        let tool = served.tool();
        let object = args.as_object().unwrap();
        assert_eq!(
            served.arguments().problems(object, 5),
            Vec::<String>::new(),
            "{name}"
        );
        let input: Value = serde_json::from_str(tool.definition().input_schema).unwrap();
        let input = jsonschema::validator_for(&input).unwrap();
        assert!(input.is_valid(&args), "{name} sample arguments are invalid");
        let mut ignore = |_: Progress| {};
        let mut no_channel = NoChannel;
        let request = ferry_mcp_core::protocol::wire::Id::parse("1").unwrap();
        let mut cx = CallContext {
            now: START,
            request: &request,
            later: None,
            project: "demo",
            progress: &mut ignore,
            channel: &mut no_channel,
        };
        let args: Map<String, Value> = args.as_object().cloned().unwrap();
        let outcome = tool.call(&args, &mut cx);
        assert!(!outcome.is_error, "{name}: {}", outcome.summary);
        let output: Value = serde_json::from_str(tool.definition().output_schema.unwrap()).unwrap();
        let structured = outcome
            .structured
            .unwrap_or_else(|| panic!("{name} gave no structuredContent"));
        let validator = jsonschema::validator_for(&output).unwrap();
        let errors: Vec<String> = validator
            .iter_errors(&structured)
            .map(|e| e.to_string())
            .collect();
        assert!(errors.is_empty(), "{name}: {errors:?} in {structured}");
        ferry_mcp_core::shape::check_caps(&structured).unwrap_or_else(|e| panic!("{name}: {e}"));
        checked.push(name);
    }
    checked.dedup();
    assert_eq!(
        checked.len(),
        surface.tools().len(),
        "every fixture tool has a sample call"
    );
}

#[test]
fn every_fixture_call_through_the_protocol_has_a_summary_and_valid_structured_content_in_every_era()
{
    for version in [
        "2024-11-05",
        "2025-03-26",
        "2025-06-18",
        "2025-11-25",
        "2026-07-28",
    ] {
        let mut session = Session::fixture("demo");
        if version != "2026-07-28" {
            session.initialize(version);
        }
        for (name, args) in sample_calls() {
            let params = json!({ "name": name, "arguments": args });
            let answer = if version == "2026-07-28" {
                session.stateless("tools/call", params)
            } else {
                session.request("tools/call", params)
            };
            let result = &answer["result"];
            assert_ne!(result["isError"], true, "{version} {name}: {answer}");
            check_call_result(&fixture::surface(), name, result);
        }
    }
}

#[test]
#[should_panic(expected = "does not match the outputSchema")]
fn the_call_check_refuses_structured_content_that_breaks_the_output_schema() {
    let result = json!({ "content": [{ "type": "text", "text": "posted" }], "structuredContent": { "chars": "two" } });
    check_call_result(&fixture::surface(), "fixture_post", &result);
}

#[test]
#[should_panic(expected = "gave no structuredContent")]
fn the_call_check_refuses_a_result_without_structured_content() {
    let result = json!({ "content": [{ "type": "text", "text": "posted" }] });
    check_call_result(&fixture::surface(), "fixture_post", &result);
}

#[test]
#[should_panic(expected = "one-line text summary")]
fn the_call_check_refuses_a_result_without_a_one_line_summary() {
    let result = json!({ "content": [{ "type": "text", "text": "two\nlines" }], "structuredContent": { "chars": 2 } });
    check_call_result(&fixture::surface(), "fixture_post", &result);
}

#[test]
#[should_panic(expected = "over 4000")]
fn the_call_check_refuses_structured_content_over_the_caps() {
    let long = "x".repeat(4_000);
    let result = json!({ "content": [{ "type": "text", "text": "order 1" }], "structuredContent": { "id": "1", "title": long, "link": "ferry://demo/fixture-order/1" } });
    check_call_result(&fixture::surface(), "fixture_order", &result);
}

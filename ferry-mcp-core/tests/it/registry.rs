//! The registry's rules: unique groups, sorted unique tools, valid schemas, read-only selection,
//! and the frozen `tools/list` bytes.

use ferry_mcp_core::registry::{Group, Registry, RegistryError, Selection, Surface};
use ferry_mcp_core::shape::ToolOutcome;
use ferry_mcp_core::tool::{Annotations, CallContext, Tool, ToolDefinition};
use ferry_mcp_testkit::fixture;
use ferry_mcp_testkit::schema::check_compiles;
use serde_json::{Map, Value};

/// A tool whose only interesting part is its definition.
struct Named(&'static ToolDefinition);

impl Tool for Named {
    fn definition(&self) -> &'static ToolDefinition {
        self.0
    }
    fn call(&self, _args: &Map<String, Value>, _cx: &mut CallContext<'_>) -> ToolOutcome {
        ToolOutcome::text("done")
    }
}

const fn definition(name: &'static str, input_schema: &'static str) -> ToolDefinition {
    ToolDefinition {
        name,
        title: "",
        description: "A test tool.",
        input_schema,
        output_schema: None,
        annotations: Annotations::APPEND,
    }
}

const OBJECT: &str = r#"{"type":"object"}"#;
static ALPHA: ToolDefinition = definition("alpha", OBJECT);
static BETA: ToolDefinition = definition("beta", OBJECT);
static NEWLINE: ToolDefinition = definition("gamma", "{\"type\":\n\"object\"}");
static NOT_OBJECT: ToolDefinition = definition("delta", r#"{"type":"string"}"#);
static NOT_JSON: ToolDefinition = definition("epsilon", r#"{"type":"object""#);
static BAD_NAME: ToolDefinition = definition("has space", OBJECT);
/// Parses and is an object schema, but is not valid JSON Schema: only compiling finds it.
static BAD_KEYWORD: ToolDefinition = definition(
    "zeta",
    r#"{"type":"object","properties":{"a":{"type":"bogus"}}}"#,
);
static BAD_OUTPUT: ToolDefinition = ToolDefinition {
    output_schema: Some(r#"{"type":"object","required":"a"}"#),
    ..definition("eta", OBJECT)
};

static SORTED: Group = Group {
    name: "sorted",
    tools: &[&Named(&ALPHA), &Named(&BETA)],
    resources: &[],
    instructions: "",
};
static UNSORTED: Group = Group {
    name: "unsorted",
    tools: &[&Named(&BETA), &Named(&ALPHA)],
    resources: &[],
    instructions: "",
};
static DUPLICATED: Group = Group {
    name: "duplicated",
    tools: &[&Named(&ALPHA), &Named(&ALPHA)],
    resources: &[],
    instructions: "",
};
static SORTED_AGAIN: Group = Group {
    name: "sorted",
    tools: &[],
    resources: &[],
    instructions: "",
};
static ALSO_ALPHA: Group = Group {
    name: "also",
    tools: &[&Named(&ALPHA)],
    resources: &[],
    instructions: "",
};
static BAD_TOOL_NAME: Group = Group {
    name: "badname",
    tools: &[&Named(&BAD_NAME)],
    resources: &[],
    instructions: "",
};
static BAD_GROUP_NAME: Group = Group {
    name: "Bad Group",
    tools: &[],
    resources: &[],
    instructions: "",
};

fn group_of(tool: &'static ToolDefinition) -> &'static Group {
    let named: &'static Named = Box::leak(Box::new(Named(tool)));
    let tools: &'static [&'static dyn Tool] = Box::leak(Box::new([named as &dyn Tool]));
    Box::leak(Box::new(Group {
        name: "schemas",
        tools,
        resources: &[],
        instructions: "",
    }))
}

fn schema_error(tool: &'static ToolDefinition) -> RegistryError {
    Surface::build(&[group_of(tool)], false).unwrap_err()
}

#[test]
fn the_registry_rejects_a_group_listed_twice() {
    assert_eq!(
        Registry::new(&[&SORTED, &SORTED_AGAIN]).unwrap_err(),
        RegistryError::DuplicateGroup("sorted")
    );
}

#[test]
fn the_registry_rejects_unsorted_tools() {
    assert_eq!(
        Registry::new(&[&UNSORTED]).unwrap_err(),
        RegistryError::UnsortedTools {
            group: "unsorted",
            tool: "alpha"
        }
    );
}

#[test]
fn the_registry_rejects_a_tool_listed_twice() {
    assert_eq!(
        Registry::new(&[&DUPLICATED]).unwrap_err(),
        RegistryError::DuplicateTool {
            group: "duplicated",
            tool: "alpha"
        }
    );
}

#[test]
fn the_registry_rejects_a_tool_in_two_groups() {
    assert_eq!(
        Registry::new(&[&SORTED, &ALSO_ALPHA]).unwrap_err(),
        RegistryError::ToolInTwoGroups {
            tool: "alpha",
            first: "sorted",
            second: "also"
        }
    );
}

#[test]
fn the_registry_rejects_bad_tool_and_group_names() {
    assert_eq!(
        Registry::new(&[&BAD_TOOL_NAME]).unwrap_err(),
        RegistryError::BadToolName("has space")
    );
    assert_eq!(
        Registry::new(&[&BAD_GROUP_NAME]).unwrap_err(),
        RegistryError::BadGroupName("Bad Group")
    );
}

#[test]
fn a_surface_rejects_schemas_that_break_the_wire_or_are_not_object_schemas() {
    for (tool, reason) in [
        (&NEWLINE, "contains a line break"),
        (&NOT_OBJECT, "not an object schema"),
    ] {
        assert_eq!(
            schema_error(tool),
            RegistryError::BadSchema {
                tool: tool.name,
                which: "inputSchema",
                reason: reason.into()
            }
        );
    }
    assert!(matches!(
        schema_error(&NOT_JSON),
        RegistryError::BadSchema {
            tool: "epsilon",
            ..
        }
    ));
}

#[test]
fn selecting_an_unknown_group_is_an_error() {
    let registry = Registry::new(&[&fixture::GROUP]).unwrap();
    let error = registry
        .surface(&Selection {
            groups: &["nope"],
            read_only: false,
        })
        .unwrap_err();
    assert_eq!(error, RegistryError::UnknownGroup("nope".into()));
}

#[test]
fn read_only_keeps_only_tools_annotated_read_only() {
    let registry = Registry::new(&[&fixture::GROUP, &SORTED]).unwrap();
    let names = |read_only| -> Vec<&str> {
        let surface = registry
            .surface(&Selection {
                groups: &["sorted", "fixture"],
                read_only,
            })
            .unwrap();
        surface
            .tools()
            .iter()
            .map(|tool| tool.definition().name)
            .collect()
    };
    assert_eq!(
        names(false),
        [
            "alpha",
            "beta",
            "fixture_count",
            "fixture_list",
            "fixture_order",
            "fixture_post",
            "fixture_status"
        ]
    );
    assert_eq!(
        names(true),
        [
            "fixture_count",
            "fixture_list",
            "fixture_order",
            "fixture_status"
        ]
    );
}

#[test]
fn the_tools_list_bytes_of_the_fixture_surface_are_frozen() {
    insta::assert_snapshot!("fixture_tools_list", fixture::surface().tools_list_json());
}

#[test]
fn the_tools_list_bytes_are_the_tools_array_that_tools_list_answers() {
    let mut session =
        ferry_mcp_testkit::session::Session::fixture_initialized("demo", "2025-11-25");
    let out = session.send_raw(br#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#);
    let expected = format!(
        r#"{{"jsonrpc":"2.0","id":1,"result":{{"tools":{}}}}}"#,
        fixture::surface().tools_list_json()
    );
    assert_eq!(out, [expected]);
}

#[test]
fn a_stateless_tools_list_answers_the_same_tools_bytes_after_its_cache_hints() {
    let mut session = ferry_mcp_testkit::session::Session::fixture("demo");
    let out = session.send_raw(
        br#"{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}"#,
    );
    let expected = format!(
        r#"{{"jsonrpc":"2.0","id":1,"result":{{"resultType":"complete","ttlMs":300000,"cacheScope":"public","tools":{}}}}}"#,
        fixture::surface().tools_list_json()
    );
    assert_eq!(out, [expected]);
}

#[test]
fn the_fixture_group_is_sorted_and_valid() {
    let registry = Registry::new(&[&fixture::GROUP]).unwrap();
    assert_eq!(registry.groups().len(), 1);
    let surface = registry
        .surface(&Selection {
            groups: &["fixture"],
            read_only: false,
        })
        .unwrap();
    assert_eq!(surface.tools().len(), fixture::GROUP.tools.len());
    assert!(surface.resource_kind(fixture::FIXTURE_KIND).is_some());
}

#[test]
fn a_schema_that_is_not_valid_json_schema_is_named() {
    // An input schema is read when the surface is built: a bad one is refused there, by name.
    let error = Surface::build(&[group_of(&BAD_KEYWORD)], false).unwrap_err();
    assert!(
        matches!(
            &error,
            RegistryError::BadSchema {
                tool: "zeta",
                which: "inputSchema",
                ..
            }
        ),
        "{error:?}"
    );
    let registry = Registry::new(&[group_of(&BAD_KEYWORD)]).unwrap();
    let selection = Selection {
        groups: &["schemas"],
        read_only: false,
    };
    assert!(registry.surface(&selection).is_err());
    // An output schema is never compiled by the server; the testkit's check names it.
    let surface = Surface::build(&[group_of(&BAD_OUTPUT)], false)
        .expect("building reads only the input schemas");
    let error = check_compiles(&surface).unwrap_err();
    assert!(
        matches!(
            &error,
            RegistryError::BadSchema {
                tool: "eta",
                which: "outputSchema",
                ..
            }
        ),
        "{error:?}"
    );
}

#[test]
fn every_schema_of_the_fixture_group_compiles() {
    let surface = Registry::new(&[&fixture::GROUP])
        .unwrap()
        .surface(&Selection {
            groups: &["fixture"],
            read_only: false,
        })
        .unwrap();
    check_compiles(&surface).unwrap();
}

#[test]
fn a_call_is_checked_against_the_schema_read_when_the_surface_was_built_and_serving_goes_on() {
    let mut server = fixture::server("demo");
    let now = ferry_mcp_testkit::session::START;
    server.handle_line(
        br#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"0"}}}"#,
        now,
    );
    server.handle_line(br#"{"jsonrpc":"2.0","id":2,"method":"tools/list"}"#, now);
    for id in [3, 4] {
        let line = format!(
            r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"fixture_post","arguments":{{"body":42}}}}}}"#
        );
        let out = server.handle_line(line.as_bytes(), now);
        assert!(out[0].contains(r#""isError":true"#), "{out:?}");
        assert!(out[0].contains("`body`: 42 is not of type"), "{out:?}");
    }
    let ping = server.handle_line(br#"{"jsonrpc":"2.0","id":5,"method":"ping"}"#, now);
    assert_eq!(ping, [r#"{"jsonrpc":"2.0","id":5,"result":{}}"#]);
}

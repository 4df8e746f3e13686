//! The registry's rules: unique groups, sorted unique tools, valid schemas, read-only selection,
//! and the frozen `tools/list` bytes.

use ferry_mcp_core::registry::{Group, Registry, RegistryError, Selection, Surface};
use ferry_mcp_core::shape::ToolOutcome;
use ferry_mcp_core::tool::{Annotations, CallContext, Tool, ToolDefinition};
use ferry_mcp_testkit::fixture;
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

static SORTED: Group = Group {
    name: "sorted",
    tools: &[&Named(&ALPHA), &Named(&BETA)],
    resources: &[],
};
static UNSORTED: Group = Group {
    name: "unsorted",
    tools: &[&Named(&BETA), &Named(&ALPHA)],
    resources: &[],
};
static DUPLICATED: Group = Group {
    name: "duplicated",
    tools: &[&Named(&ALPHA), &Named(&ALPHA)],
    resources: &[],
};
static SORTED_AGAIN: Group = Group {
    name: "sorted",
    tools: &[],
    resources: &[],
};
static ALSO_ALPHA: Group = Group {
    name: "also",
    tools: &[&Named(&ALPHA)],
    resources: &[],
};
static BAD_TOOL_NAME: Group = Group {
    name: "badname",
    tools: &[&Named(&BAD_NAME)],
    resources: &[],
};
static BAD_GROUP_NAME: Group = Group {
    name: "Bad Group",
    tools: &[],
    resources: &[],
};

fn schema_error(tool: &'static ToolDefinition) -> RegistryError {
    let named: &'static Named = Box::leak(Box::new(Named(tool)));
    let tools: &'static [&'static dyn Tool] = Box::leak(Box::new([named as &dyn Tool]));
    let group: &'static Group = Box::leak(Box::new(Group {
        name: "schemas",
        tools,
        resources: &[],
    }));
    Surface::build(&[group], false).unwrap_err()
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
    assert!(surface.resource_kind("order").is_some());
}

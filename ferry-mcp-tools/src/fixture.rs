//! The `fixture` tool group: small tools that exercise every protocol path (outputSchema,
//! resource links and `resources/read`, a write-annotated tool, progress, truncation) so the
//! protocol, the binary and real clients can be tested before the real tools exist.
//!
//! It is never part of a default surface, and it is compiled only with this crate's `fixture`
//! feature, which tests turn on: a shipped `ferry` has no such group, and a test build serves
//! it only with `--tools fixture`.

use ferry_mcp_core::protocol::{Server, ServerConfig};
use ferry_mcp_core::registry::{Group, Surface};
use ferry_mcp_core::shape::{self, ResourceLink, ResourceUri, ToolOutcome};
use ferry_mcp_core::tool::{
    Annotations, CallContext, Progress, ReadContext, ResourceError, ResourceKind, ResourceTemplate,
    ResourceText, Tool, ToolDefinition,
};
use serde_json::{Map, Value, json};

/// The fixture group: `fixture_count`, `fixture_list`, `fixture_order`, `fixture_post`, `fixture_status`.
pub static GROUP: Group = Group {
    name: "fixture",
    tools: &[
        &FixtureCount,
        &FixtureList,
        &FixtureOrder,
        &FixturePost,
        &FixtureStatus,
    ],
    resources: &[&FixtureOrders],
    instructions: INSTRUCTIONS,
};

/// The order ids that exist; any other id is a missing resource.
pub const ORDER_IDS: [&str; 3] = ["1", "2", "42"];

/// How many rows `fixture_list` has in all (more than one capped page holds).
pub const LIST_ROWS: usize = 50;

/// The instructions text the fixture server sends.
pub const INSTRUCTIONS: &str = "Fixture server for tests. Call fixture_status first.";

/// The configuration of a fixture server scoped to `project`.
pub fn config(project: &str) -> ServerConfig {
    ServerConfig {
        name: "ferry",
        version: "0.0.0-test",
        instructions: INSTRUCTIONS.to_owned(),
        project: project.to_owned(),
    }
}

/// The surface of the fixture group alone.
pub fn surface() -> Surface {
    Surface::build(&[&GROUP], false).expect("the fixture group is valid")
}

/// A protocol server over the fixture surface.
pub fn server(project: &str) -> Server {
    Server::new(config(project), surface())
}

fn field<'a>(args: &'a Map<String, Value>, name: &str) -> Option<&'a Value> {
    args.get(name)
}

/// `fixture_status`: read-only, with an outputSchema.
#[derive(Debug)]
pub struct FixtureStatus;

static STATUS: ToolDefinition = ToolDefinition {
    name: "fixture_status",
    title: "Fixture status",
    description: "Report the fixture server's project and clock.",
    input_schema: r#"{"type":"object","additionalProperties":false}"#,
    output_schema: Some(
        r#"{"type":"object","properties":{"project":{"type":"string"},"now_ms":{"type":"integer","minimum":0},"ok":{"type":"boolean"}},"required":["project","now_ms","ok"],"additionalProperties":false}"#,
    ),
    annotations: Annotations::READ_ONLY,
};

impl Tool for FixtureStatus {
    fn definition(&self) -> &'static ToolDefinition {
        &STATUS
    }
    fn call(&self, _args: &Map<String, Value>, cx: &mut CallContext<'_>) -> ToolOutcome {
        let structured = json!({ "project": cx.project, "now_ms": cx.now.as_millis(), "ok": true });
        ToolOutcome::ok(
            structured,
            format!("fixture server for {} is ok", cx.project),
        )
    }
}

/// `fixture_order {id}`: answers a `resource_link` to `ferry://<project>/order/<id>`.
#[derive(Debug)]
pub struct FixtureOrder;

static ORDER: ToolDefinition = ToolDefinition {
    name: "fixture_order",
    title: "Fixture order",
    description: "Show an order; its body comes back as a resource link.",
    input_schema: r#"{"type":"object","properties":{"id":{"type":"string","description":"Order id.","minLength":1,"maxLength":64}},"required":["id"],"additionalProperties":false}"#,
    output_schema: Some(
        r#"{"type":"object","properties":{"id":{"type":"string"},"title":{"type":"string"},"link":{"type":"string"}},"required":["id","title","link"],"additionalProperties":false}"#,
    ),
    annotations: Annotations::READ_ONLY,
};

impl Tool for FixtureOrder {
    fn definition(&self) -> &'static ToolDefinition {
        &ORDER
    }
    fn call(&self, args: &Map<String, Value>, cx: &mut CallContext<'_>) -> ToolOutcome {
        let id = field(args, "id")
            .and_then(Value::as_str)
            .unwrap_or_default();
        if !ORDER_IDS.contains(&id) {
            return ToolOutcome::error(format!(
                "no order {id}; known orders: {}",
                ORDER_IDS.join(", ")
            ));
        }
        let Ok(uri) = ResourceUri::new(cx.project, FIXTURE_KIND, id) else {
            return ToolOutcome::error(format!(
                "order {id} has no ferry:// link in project {}",
                cx.project
            ));
        };
        let structured = json!({ "id": id, "title": order_title(id), "link": uri.to_string() });
        let link = ResourceLink::new(uri, format!("order {id}")).mime_type("text/markdown");
        ToolOutcome::ok(structured, format!("order {id}: {}", order_title(id))).with_link(link)
    }
}

fn order_title(id: &str) -> String {
    format!("Fixture order {id}")
}

/// `fixture_post {body}`: a write-annotated tool (it changes nothing; its arguments test validation).
#[derive(Debug)]
pub struct FixturePost;

static POST: ToolDefinition = ToolDefinition {
    name: "fixture_post",
    title: "Fixture post",
    description: "Post a message to nowhere.",
    input_schema: r#"{"type":"object","properties":{"body":{"type":"string","description":"Message text.","minLength":1,"maxLength":2000}},"required":["body"],"additionalProperties":false}"#,
    output_schema: Some(
        r#"{"type":"object","properties":{"chars":{"type":"integer","minimum":1}},"required":["chars"],"additionalProperties":false}"#,
    ),
    annotations: Annotations::APPEND,
};

impl Tool for FixturePost {
    fn definition(&self) -> &'static ToolDefinition {
        &POST
    }
    fn call(&self, args: &Map<String, Value>, _cx: &mut CallContext<'_>) -> ToolOutcome {
        let chars = field(args, "body")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .chars()
            .count();
        ToolOutcome::ok(
            json!({ "chars": chars }),
            format!("posted {chars} characters"),
        )
    }
}

/// `fixture_count {n}`: reports progress `n` times, then answers.
#[derive(Debug)]
pub struct FixtureCount;

static COUNT: ToolDefinition = ToolDefinition {
    name: "fixture_count",
    title: "Fixture count",
    description: "Count to n, reporting progress at each step.",
    input_schema: r#"{"type":"object","properties":{"n":{"type":"integer","description":"Steps.","minimum":0,"maximum":100}},"required":["n"],"additionalProperties":false}"#,
    output_schema: Some(
        r#"{"type":"object","properties":{"counted":{"type":"integer","minimum":0}},"required":["counted"],"additionalProperties":false}"#,
    ),
    annotations: Annotations::READ_ONLY,
};

impl Tool for FixtureCount {
    fn definition(&self) -> &'static ToolDefinition {
        &COUNT
    }
    fn call(&self, args: &Map<String, Value>, cx: &mut CallContext<'_>) -> ToolOutcome {
        let n = field(args, "n").and_then(Value::as_u64).unwrap_or_default();
        for step in 1..=n {
            (cx.progress)(Progress {
                progress: step as f64,
                total: Some(n as f64),
                message: Some(format!("step {step}")),
            });
        }
        ToolOutcome::ok(json!({ "counted": n }), format!("counted to {n}"))
    }
}

/// `fixture_list {cursor?}`: a long list, cut to the T4 caps (docs/mcp-budgets.md) with `truncated` and `next`.
#[derive(Debug)]
pub struct FixtureList;

static LIST: ToolDefinition = ToolDefinition {
    name: "fixture_list",
    title: "Fixture list",
    description: "List fixture rows, a capped page at a time.",
    input_schema: r#"{"type":"object","properties":{"cursor":{"type":"string","description":"The next value of the previous page.","maxLength":64}},"additionalProperties":false}"#,
    output_schema: Some(
        r#"{"type":"object","properties":{"rows":{"type":"array","maxItems":20,"items":{"type":"object","properties":{"n":{"type":"integer"},"line":{"type":"string"}},"required":["n","line"],"additionalProperties":false}},"truncated":{"type":"boolean"},"next":{"type":"string"}},"required":["rows","truncated"],"additionalProperties":false}"#,
    ),
    annotations: Annotations::READ_ONLY,
};

/// One row of `fixture_list`: long enough that the character cap, not the item cap, cuts a page.
pub fn list_row(n: usize) -> Value {
    json!({ "n": n, "line": format!("row {n}: {}", "lorem ipsum dolor sit amet ".repeat(8)) })
}

impl Tool for FixtureList {
    fn definition(&self) -> &'static ToolDefinition {
        &LIST
    }
    fn call(&self, args: &Map<String, Value>, _cx: &mut CallContext<'_>) -> ToolOutcome {
        let rows: Vec<Value> = (1..=LIST_ROWS).map(list_row).collect();
        let cursor = field(args, "cursor").and_then(Value::as_str);
        let reserve = r#"{"rows":[]}"#.len() + shape::TRUNCATION_FIELDS_CHARS;
        match shape::paginate(rows, cursor, reserve) {
            Ok(page) => {
                let summary = format!(
                    "{} rows{}",
                    page.items.len(),
                    if page.truncated {
                        ", more with next"
                    } else {
                        ""
                    }
                );
                let mut structured = json!({ "rows": page.items, "truncated": page.truncated });
                if let Some(next) = page.next {
                    structured["next"] = Value::String(next);
                }
                ToolOutcome::ok(structured, summary)
            }
            Err(error) => {
                ToolOutcome::error(format!("{error}: pass the next value of the previous page"))
            }
        }
    }
}

/// The fixture's resource kind: `fixture-order`, so that it never meets the core group's
/// `order` kind in one registry.
pub const FIXTURE_KIND: &str = "fixture-order";

/// The `fixture-order` resources: `ferry://<project>/fixture-order/<id>` for [`ORDER_IDS`].
#[derive(Debug)]
pub struct FixtureOrders;

static ORDERS: ResourceTemplate = ResourceTemplate {
    kind: FIXTURE_KIND,
    name: "fixture-order",
    title: "Fixture order",
    description: "The body of a fixture order.",
    mime_type: "text/markdown",
};

impl ResourceKind for FixtureOrders {
    fn template(&self) -> &'static ResourceTemplate {
        &ORDERS
    }
    fn read(
        &self,
        uri: &ResourceUri,
        _cx: &mut ReadContext<'_>,
    ) -> Result<ResourceText, ResourceError> {
        if !ORDER_IDS.contains(&uri.id()) {
            return Err(ResourceError::NotFound);
        }
        Ok(ResourceText {
            mime_type: "text/markdown",
            text: format!(
                "# {}\n\nDo the fixture thing for order {}.\n",
                order_title(uri.id()),
                uri.id()
            ),
        })
    }
}

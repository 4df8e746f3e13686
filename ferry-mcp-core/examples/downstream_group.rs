//! A downstream crate adding its own tool group without touching ferry's crates.
//!
//! Everything a group needs is public: the `Tool` trait, static definitions, `ToolOutcome`,
//! and `ResourceKind` for its `ferry://<project>/<kind>/<id>` links. The binary that serves
//! it lists the group next to ferry's own (here the testkit's `fixture` group stands in for
//! `core`) and assembles the surface with the same registry rules: sorted, unique, valid.
//!
//! Run: `cargo run -p ferry-mcp-core --example downstream_group`

#![allow(clippy::print_stdout, reason = "an example shows its output")]

use ferry_mcp_core::protocol::{Server, ServerConfig};
use ferry_mcp_core::registry::{Group, Registry, Selection};
use ferry_mcp_core::shape::{ResourceLink, ResourceUri, ToolOutcome};
use ferry_mcp_core::time::Timestamp;
use ferry_mcp_core::tool::{
    Annotations, CallContext, ReadContext, ResourceError, ResourceKind, ResourceTemplate,
    ResourceText, Tool, ToolDefinition,
};
use serde_json::{Map, Value, json};

/// `build_status {job}`: the state of a CI job, with the log as a resource link.
struct BuildStatus;

static BUILD_STATUS: ToolDefinition = ToolDefinition {
    name: "build_status",
    title: "Build status",
    description: "State of a CI job; the log comes back as a link.",
    input_schema: r#"{"type":"object","properties":{"job":{"type":"string","description":"Job id.","maxLength":32}},"required":["job"],"additionalProperties":false}"#,
    output_schema: Some(
        r#"{"type":"object","properties":{"job":{"type":"string"},"state":{"type":"string","enum":["passed","failed"]}},"required":["job","state"],"additionalProperties":false}"#,
    ),
    annotations: Annotations::READ_ONLY,
};

impl Tool for BuildStatus {
    fn definition(&self) -> &'static ToolDefinition {
        &BUILD_STATUS
    }
    fn call(&self, args: &Map<String, Value>, cx: &mut CallContext<'_>) -> ToolOutcome {
        let job = args.get("job").and_then(Value::as_str).unwrap_or_default();
        let Ok(uri) = ResourceUri::new(cx.project, "buildlog", job) else {
            return ToolOutcome::error(format!("job id `{job}` may hold only [A-Za-z0-9_.-]"));
        };
        ToolOutcome::ok(
            json!({ "job": job, "state": "passed" }),
            format!("job {job} passed"),
        )
        .with_link(ResourceLink::new(uri, format!("log of job {job}")).mime_type("text/plain"))
    }
}

/// The `buildlog` resources: `ferry://<project>/buildlog/<job>`.
struct BuildLogs;

static BUILD_LOGS: ResourceTemplate = ResourceTemplate {
    kind: "buildlog",
    name: "buildlog",
    title: "Build log",
    description: "The full log of a CI job.",
    mime_type: "text/plain",
};

impl ResourceKind for BuildLogs {
    fn template(&self) -> &'static ResourceTemplate {
        &BUILD_LOGS
    }
    fn read(
        &self,
        uri: &ResourceUri,
        _cx: &mut ReadContext<'_>,
    ) -> Result<ResourceText, ResourceError> {
        Ok(ResourceText {
            mime_type: "text/plain",
            text: format!("job {}: all tests passed\n", uri.id()),
        })
    }
}

/// The downstream group: a plain static list, sorted by tool name.
static CI: Group = Group {
    name: "ci",
    tools: &[&BuildStatus],
    resources: &[&BuildLogs],
    instructions: "ci_build_status: the status of a CI build; its log is a ferry:// link.",
};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let registry = Registry::new(&[&ferry_mcp_testkit::fixture::GROUP, &CI])?;
    let surface = registry.surface(&Selection {
        groups: &["fixture", "ci"],
        read_only: true,
    })?;
    let config = ServerConfig {
        name: "ferry-with-ci",
        version: "0.1.0",
        // The groups served say what they are: the fixture's line, then this group's.
        instructions: surface.instructions().to_owned(),
        project: "demo".into(),
    };
    let mut server = Server::new(config, surface);
    let now = Timestamp::from_millis(0);
    let lines = [
        r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"example","version":"0"}}}"#,
        r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
        r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"build_status","arguments":{"job":"1234"}}}"#,
        r#"{"jsonrpc":"2.0","id":3,"method":"resources/read","params":{"uri":"ferry://demo/buildlog/1234"}}"#,
    ];
    for line in lines {
        for answer in server.handle_line(line.as_bytes(), now) {
            println!("{answer}");
            // CI runs this example: a refused request or a tool error fails it.
            let message: Value = serde_json::from_str(&answer)?;
            if message.get("result").is_none() || message["result"]["isError"] == true {
                return Err(format!("the downstream group was not served: {answer}").into());
            }
        }
    }
    let names: Vec<&str> = server
        .surface()
        .tools()
        .iter()
        .map(|tool| tool.definition().name)
        .collect();
    println!("tools: {}", names.join(", "));
    Ok(())
}

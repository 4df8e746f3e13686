//! The default surface (the `core` group), the legacy group and every group together: their exact
//! `tools/list` bytes; that nothing about a
//! server (time, agent, project) changes them, and what `ferry_orders` costs the model.

use ferry_mcp_core::channel::log::names::{AgentName, ProjectId};
use ferry_mcp_core::channel::machine::home::Home;
use ferry_mcp_core::channel::session::{Actor, LazySession};
use ferry_mcp_core::protocol::{Server, ServerConfig};
use ferry_mcp_core::registry::Surface;
use ferry_mcp_core::tokens;
use ferry_mcp_testkit::session::Session;
use serde_json::Value;

fn surface() -> Surface {
    Surface::build(&[&ferry_mcp_tools::CORE], false).expect("the core group is valid")
}

/// A server of `agent` in `project`; its channel is never opened by `tools/list`.
fn server(home: &Home, project: &str, agent: &str) -> Server {
    let config = ServerConfig {
        name: "ferry",
        version: "0.0.0-test",
        instructions: ferry_mcp_tools::CORE_INSTRUCTIONS.to_owned(),
        project: project.to_owned(),
    };
    let lazy = LazySession::new(
        home.clone(),
        ProjectId::parse(project).unwrap(),
        Actor::Agent(AgentName::parse(agent).unwrap()),
    );
    Server::new(config, surface()).with_channel(Box::new(lazy))
}

#[test]
fn the_tools_list_bytes_of_the_default_surface_are_frozen() {
    let surface = surface();
    let bytes = surface.tools_list_json();
    assert!(!bytes.contains(['\n', '\r']), "one line: {bytes}");
    insta::assert_snapshot!("core_tools_list", bytes);
}

#[test]
fn the_tools_list_bytes_and_instructions_of_the_read_only_surface_are_frozen() {
    let surface = Surface::build(ferry_mcp_tools::READ_ONLY_DEFAULT, true).expect("read-only");
    let bytes = surface.tools_list_json();
    assert!(!bytes.contains(['\n', '\r']), "one line: {bytes}");
    assert!(
        surface
            .tools()
            .iter()
            .all(|tool| tool.definition().annotations.read_only)
    );
    assert_eq!(
        surface.instructions(),
        ferry_mcp_tools::read_only::READ_ONLY_INSTRUCTIONS
    );
    insta::assert_snapshot!("read_only_tools_list", bytes);
}

#[test]
fn the_tools_list_bytes_of_the_legacy_group_are_frozen() {
    let surface = Surface::build(&[&ferry_mcp_tools::LEGACY], false).expect("the legacy group");
    let bytes = surface.tools_list_json();
    assert!(!bytes.contains(['\n', '\r']), "one line: {bytes}");
    insta::assert_snapshot!("legacy_tools_list", bytes);
}

#[test]
fn the_tools_list_bytes_of_every_group_together_are_frozen() {
    let surface = Surface::build(
        &[
            &ferry_mcp_tools::ADMIN,
            &ferry_mcp_tools::CORE,
            &ferry_mcp_tools::LEGACY,
        ],
        false,
    )
    .expect("every group together");
    insta::assert_snapshot!("every_group_tools_list", surface.tools_list_json());
}

#[test]
fn the_tools_list_bytes_are_the_same_whatever_the_time_the_agent_and_the_project() {
    let dir = tempfile::tempdir().unwrap();
    let home = Home::at(dir.path());
    let mut answers = Vec::new();
    for (project, agent, days) in [
        ("demo", "member", 0),
        ("other-project", "orchestrator", 400),
    ] {
        let mut session = Session::new(server(&home, project, agent));
        session.advance(days * 86_400_000);
        session.initialize("2025-11-25");
        let answer = session.send_raw(br#"{"jsonrpc":"2.0","id":7,"method":"tools/list"}"#);
        answers.push(answer);
    }
    assert_eq!(answers[0], answers[1]);
    assert_eq!(
        answers[0],
        [format!(
            r#"{{"jsonrpc":"2.0","id":7,"result":{{"tools":{}}}}}"#,
            surface().tools_list_json()
        )]
    );
    // Listing opened no channel (the project does not even exist).
    assert!(!dir.path().join("projects").exists());
}

#[test]
fn ferry_orders_costs_the_model_this_many_tokens_as_claude_code_sends_it() {
    let surface = surface();
    let definition = surface.find("ferry_orders").unwrap().tool().definition();
    let quote = |text: &str| Value::from(text).to_string();
    // Claude Code prefixes the server name and sends name, description and input_schema.
    let sent = format!(
        r#"{{"name":{},"description":{},"input_schema":{}}}"#,
        quote("mcp__ferry__ferry_orders"),
        quote(definition.description),
        definition.input_schema
    );
    let parsed: Value = serde_json::from_str(&sent).unwrap();
    assert_eq!(parsed.to_string().len(), sent.len(), "compact JSON");
    let estimate = tokens::estimate(&sent);
    eprintln!(
        "ferry_orders as Claude Code sends it: {} characters, about {estimate} tokens (chars/4)",
        sent.chars().count()
    );
    let listed = surface.tool_json(0);
    eprintln!(
        "ferry_orders in tools/list (with title, outputSchema and annotations): {} characters, about {} tokens",
        listed.chars().count(),
        tokens::estimate(listed)
    );
    assert!(estimate > 0);
}

#[test]
fn a_bad_call_is_refused_naming_the_field_before_the_channel_is_opened() {
    let dir = tempfile::tempdir().unwrap();
    let home = Home::at(dir.path());
    let mut session = Session::new(server(&home, "demo", "member"));
    session.initialize("2025-11-25");
    for (tool, args, refusal) in [
        (
            "ferry_join",
            serde_json::json!({"x": 1}),
            "invalid arguments for ferry_join: `x`: unknown field (this tool takes no arguments)",
        ),
        // What the action needs is the typed parser's to name.
        (
            "ferry_orders",
            serde_json::json!({"action": "claim"}),
            "invalid arguments for ferry_orders: missing field `id`",
        ),
        (
            "ferry_orders",
            serde_json::json!({"action": "claim", "id": 7}),
            "invalid arguments for ferry_orders: `id`: 7 is not of type \"string\"",
        ),
        (
            "ferry_orders",
            serde_json::json!({"action": "grab"}),
            "invalid arguments for ferry_orders: `action`: \"grab\" is not one of \"list\", \"show\", \"claim\", \"release\", \"progress\", \"handin\", \"submit\", \"review\"",
        ),
        (
            "ferry_orders",
            serde_json::json!({"action": "list", "verdict": "maybe"}),
            "invalid arguments for ferry_orders: `verdict`: \"maybe\" is not one of \"accept\", \"changes\"",
        ),
    ] {
        let result = session.call(tool, args);
        assert_eq!(result["isError"], true, "{result}");
        assert_eq!(result["content"][0]["text"], refusal, "{result}");
    }
    assert!(
        !dir.path().join("projects").exists(),
        "no channel was opened"
    );
}

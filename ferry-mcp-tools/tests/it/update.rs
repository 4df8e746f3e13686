//! `ferry_update` and the `update` field (ADR 0020): an agent hears of a release only when the
//! master approved one newer than what runs for its platform, an Orchestrator's apply installs
//! it over the binary this server was given (a copy here) and says the app must restart it, a
//! Member's apply is denied, and the instructions name the tool only when the admin group is
//! served.

use std::fs;
use std::path::PathBuf;

use ferry_mcp_core::channel::fold::levels::Level;
use ferry_mcp_core::channel::ops::install;
use ferry_mcp_core::channel::ops::releases::{
    self, ApproveRequest, ArtifactInput, Installed, THIS_PLATFORM,
};
use ferry_mcp_core::channel::session::{Actor, LazySession};
use ferry_mcp_core::protocol::{Server, ServerConfig};
use ferry_mcp_core::registry::Surface;
use ferry_mcp_testkit::https::{self, Reply};
use ferry_mcp_testkit::session::Session;
use ferry_mcp_testkit::temp_channel::TempChannel;
use serde_json::{Value, json};

use crate::support::error_text;

const NEW: &[u8] = b"#!/bin/sh\necho 'ferry 9.9.9'\n";
const OLD: &[u8] = b"#!/bin/sh\necho 'ferry 0.1.0'\n";

fn fleet() -> (TempChannel, PathBuf) {
    let temp = TempChannel::builder()
        .agent("lead", Level::Orchestrator)
        .agent("bob", Level::Member)
        .build()
        .unwrap();
    let dir = temp.root().join("bin");
    fs::create_dir_all(&dir).unwrap();
    let binary = dir.join("ferry");
    fs::write(&binary, OLD).unwrap();
    (temp, binary)
}

/// The pin of the approval the human signs for 9.9.9 on this platform.
fn approve(temp: &TempChannel) -> String {
    let artifact = temp.root().join("ferry-9.9.9");
    fs::write(&artifact, NEW).unwrap();
    let request = ApproveRequest {
        version: "9.9.9".into(),
        artifacts: vec![(THIS_PLATFORM.to_owned(), ArtifactInput::Store(artifact))],
        ..ApproveRequest::default()
    };
    let view = releases::approve(&mut temp.master_session(), &request, temp.now()).unwrap();
    view.artifacts[0].sha256.clone().unwrap()
}

/// A server of `agent` over the admin and core groups, replacing `binary`, running 0.1.0.
fn server(temp: &TempChannel, agent: &str, binary: &PathBuf) -> Session {
    server_fetching(temp, agent, binary, install::Https::default())
}

/// [`server`], fetching `https://` as `https` says.
fn server_fetching(
    temp: &TempChannel,
    agent: &str,
    binary: &PathBuf,
    https: install::Https,
) -> Session {
    let surface =
        Surface::build(&[&ferry_mcp_tools::ADMIN, &ferry_mcp_tools::CORE], false).unwrap();
    let config = ServerConfig {
        name: "ferry",
        version: "0.0.0-test",
        instructions: surface.instructions().to_owned(),
        project: temp.project().to_string(),
    };
    let lazy = LazySession::new(
        temp.home().clone(),
        temp.project().clone(),
        Actor::Agent(TempChannel::agent(agent)),
    )
    .with_installed(Installed {
        version: "0.1.0".parse().unwrap(),
        https,
        ..Installed::at(binary)
    });
    let mut session = Session::new(Server::new(config, surface).with_channel(Box::new(lazy)));
    session.set_now(temp.now());
    session.initialize("2025-11-25");
    session
}

fn structured(result: &Value) -> &Value {
    assert_ne!(result["isError"], true, "{result}");
    &result["structuredContent"]
}

#[test]
fn join_and_catch_up_carry_update_only_once_the_master_approved_a_newer_release() {
    let (temp, binary) = fleet();
    let mut lead = server(&temp, "lead", &binary);
    for tool in ["ferry_join", "ferry_catchup"] {
        let result = lead.call(tool, json!({}));
        assert!(
            structured(&result).get("update").is_none(),
            "{tool}: {result}"
        );
    }
    approve(&temp);
    let mut lead = server(&temp, "lead", &binary);
    for tool in ["ferry_join", "ferry_catchup"] {
        let result = lead.call(tool, json!({}));
        assert_eq!(
            structured(&result)["update"],
            "9.9.9 approved (running 0.1.0)",
            "{tool}"
        );
        let text = result["content"][0]["text"].as_str().unwrap();
        assert!(text.contains("tell the human"), "{tool}: {text}");
    }
}

#[test]
fn an_orchestrator_s_apply_installs_the_pinned_artifact_and_says_the_app_must_restart() {
    let (temp, binary) = fleet();
    let pin = approve(&temp);
    let mut lead = server(&temp, "lead", &binary);
    let check = lead.call("ferry_update", json!({"action": "check"}));
    let out = structured(&check);
    assert_eq!(out["newest"], "9.9.9");
    assert_eq!(out["newer"], true);
    assert_eq!(out["platform"], THIS_PLATFORM);

    let text = error_text(&lead.call(
        "ferry_update",
        json!({"action": "apply", "version": "nine"}),
    ));
    assert!(text.starts_with("invalid: \"nine\""), "{text}");
    assert_eq!(fs::read(&binary).unwrap(), OLD);

    let applied = lead.call("ferry_update", json!({"action": "apply"}));
    let out = structured(&applied);
    assert_eq!(out["installed"], "9.9.9");
    assert_eq!(out["sha256"], pin.as_str());
    assert!(
        out["restart"].as_str().unwrap().contains("must restart"),
        "{out}"
    );
    // What runs has not changed: the server still says 0.1.0.
    assert_eq!(out["running"], "0.1.0");
    let text = applied["content"][0]["text"].as_str().unwrap();
    assert!(text.contains("the app must restart it"), "{text}");
    assert_eq!(fs::read(&binary).unwrap(), NEW);
}

#[test]
fn an_orchestrator_s_apply_installs_a_release_served_over_https_and_refuses_a_redirect_to_http() {
    let (temp, binary) = fleet();
    let served = https::serve(&[
        ("ferry", Reply::Body(NEW.to_vec())),
        ("moved", Reply::Redirect("http://127.0.0.1:9/ferry".into())),
    ]);
    let trusting = install::Https {
        test_roots: Some(served.roots.clone()),
        ..install::Https::default()
    };
    let pin = install::hash(&mut &NEW[..]).unwrap();
    let mut human = temp.master_session();
    for (version, path) in [("9.9.9", "ferry"), ("9.9.10", "moved")] {
        let request = ApproveRequest {
            version: version.into(),
            artifacts: vec![(
                THIS_PLATFORM.to_owned(),
                ArtifactInput::Url(served.url(path)),
            )],
            sha256: vec![(THIS_PLATFORM.to_owned(), pin)],
            ..ApproveRequest::default()
        };
        releases::approve(&mut human, &request, temp.now()).unwrap();
    }
    let mut lead = server_fetching(&temp, "lead", &binary, trusting);
    let text = error_text(&lead.call(
        "ferry_update",
        json!({"action": "apply", "version": "9.9.10"}),
    ));
    assert!(
        text.contains("a redirect led to a URL that is not https: refused"),
        "{text}"
    );
    assert_eq!(fs::read(&binary).unwrap(), OLD);
    let applied = lead.call(
        "ferry_update",
        json!({"action": "apply", "version": "9.9.9"}),
    );
    let out = structured(&applied);
    assert_eq!(out["installed"], "9.9.9");
    assert_eq!(out["sha256"], pin.to_hex().as_str());
    assert_eq!(fs::read(&binary).unwrap(), NEW);
}

#[test]
fn a_member_s_apply_is_denied_and_the_binary_is_left_alone() {
    let (temp, binary) = fleet();
    approve(&temp);
    let mut bob = server(&temp, "bob", &binary);
    let text = error_text(&bob.call("ferry_update", json!({"action": "apply"})));
    assert!(
        text.starts_with("denied: level member: apply updates needs orchestrator"),
        "{text}"
    );
    assert_eq!(fs::read(&binary).unwrap(), OLD);
}

#[test]
fn ferry_update_is_marked_destructive_and_named_in_the_instructions_only_with_the_admin_group() {
    let definition = ferry_mcp_tools::update::FerryUpdate;
    let annotations = ferry_mcp_core::tool::Tool::definition(&definition).annotations;
    assert!(annotations.destructive && !annotations.idempotent && !annotations.read_only);
    assert!(ferry_mcp_tools::ADMIN_INSTRUCTIONS.contains("never ferry_update apply mid-order"));
    let core = Surface::build(&[&ferry_mcp_tools::CORE], false).unwrap();
    assert!(!core.instructions().contains("ferry_update"));
    let both = Surface::build(&[&ferry_mcp_tools::ADMIN, &ferry_mcp_tools::CORE], false).unwrap();
    assert!(both.instructions().contains("ferry_update apply"));
}

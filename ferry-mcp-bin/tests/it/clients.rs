//! Real MCP clients drive the built binary (issue 2, item 6): the official Python SDK 1.30
//! and 2.3, the TypeScript SDK 1.32.2 and the Inspector CLI 0.15.0, each against
//! `ferry mcp serve --tools fixture`; and the whole fleet flow of `e2e.rs` through the Python
//! SDK 2.3 (auto mode) and the TypeScript SDK, each agent a client of its own server.
//!
//! The clients are installed by `.ci/install-clients` (py1/ and py2/ venvs, ts/node_modules);
//! `FERRY_CLIENTS_DIR` points at that folder. Without it, or when a client a test needs is
//! missing from it (or `node` from `PATH`), the test skips with a message, except under CI,
//! where it fails: a skipped client would hide a broken server.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::Output;
use std::time::Duration;

use serde_json::Value;

const FERRY: &str = env!("CARGO_BIN_EXE_ferry");
/// A client that has not finished by then is stuck (each takes about a second).
const CLIENT_TIMEOUT: Duration = Duration::from_secs(90);
/// The whole fleet flow starts three servers and waits for one to go silent (about 2 s).
const FLOW_TIMEOUT: Duration = Duration::from_secs(180);
/// Claude Code gives a server about 2 s to start; Python SDK 2.x's auto mode must not wait
/// on a probe (server/discover must be answered at once).
const AUTO_MODE_CONNECT_LIMIT_MS: f64 = 2000.0;

/// The demo channel (created in the test's own state folder on the first start) with the
/// fixture group: the clients drive a real, seated agent's server.
const SERVER_ARGS: [&str; 5] = ["mcp", "serve", "--demo", "--tools", "fixture"];

/// A state folder of the test's own; the server creates the demo project in it.
fn client_home() -> tempfile::TempDir {
    tempfile::tempdir().unwrap()
}

/// What a client test needs: a file of the install in `FERRY_CLIENTS_DIR`, or a program.
#[derive(Debug, Clone, Copy)]
enum Need {
    /// A path inside the clients folder.
    Installed(&'static str),
    /// A program on `PATH`.
    OnPath(&'static str),
}

const PY1: Need = Need::Installed("py1/bin/python");
const PY2: Need = Need::Installed("py2/bin/python");
const TS_SDK: Need = Need::Installed("ts/node_modules/@modelcontextprotocol/sdk");
const INSPECTOR: Need = Need::Installed("ts/node_modules/.bin/mcp-inspector");
const NODE: Need = Need::OnPath("node");

/// The clients folder, when it holds everything `needs` names. When something is missing the
/// test skips with a message, except under CI, where it fails: a skipped client would hide a
/// broken server.
fn clients_dir(needs: &[Need]) -> Option<PathBuf> {
    let in_ci = std::env::var("CI")
        .is_ok_and(|value| !value.is_empty() && value != "false" && value != "0");
    let found = find_clients(
        std::env::var_os("FERRY_CLIENTS_DIR"),
        needs,
        std::env::var_os("PATH"),
    );
    match skip_or_fail(found, in_ci) {
        Ok(dir) => dir,
        Err(missing) => panic!(
            "{missing} under CI: run .ci/install-clients and point FERRY_CLIENTS_DIR at the install"
        ),
    }
}

/// The clients folder (`dir`, relative to the workspace root) when it holds `needs`, else
/// what is missing.
fn find_clients(
    dir: Option<OsString>,
    needs: &[Need],
    path: Option<OsString>,
) -> Result<PathBuf, String> {
    let Some(dir) = dir else {
        return Err("FERRY_CLIENTS_DIR is unset".into());
    };
    // Tests run in the crate's folder; a relative path is meant from the workspace root.
    let workspace = Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap();
    let dir = workspace.join(dir);
    let missing: Vec<String> = needs
        .iter()
        .filter_map(|need| match *need {
            Need::Installed(file) => {
                let file = dir.join(file);
                (!file.exists()).then(|| format!("{} is missing", file.display()))
            }
            Need::OnPath(program) => {
                let found = path.as_deref().is_some_and(|path| {
                    std::env::split_paths(path).any(|folder| folder.join(program).is_file())
                });
                (!found).then(|| format!("{program} is not on PATH"))
            }
        })
        .collect();
    if missing.is_empty() {
        Ok(dir)
    } else {
        Err(missing.join(", "))
    }
}

/// `Ok(Some(dir))` to run, `Ok(None)` to skip (said on stderr), `Err` to fail (under CI).
fn skip_or_fail(found: Result<PathBuf, String>, in_ci: bool) -> Result<Option<PathBuf>, String> {
    match found {
        Ok(dir) => Ok(Some(dir)),
        Err(missing) if in_ci => Err(missing),
        Err(missing) => {
            eprintln!(
                "skipped: {missing} (run .ci/install-clients, then FERRY_CLIENTS_DIR=.ci-cache/clients)"
            );
            Ok(None)
        }
    }
}

#[test]
fn a_missing_client_fails_under_ci_and_skips_elsewhere() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("py1/bin")).unwrap();
    std::fs::write(dir.path().join("py1/bin/python"), "").unwrap();
    let clients = Some(dir.path().as_os_str().to_owned());
    let no_path = Some(OsString::new());
    let missing = find_clients(clients.clone(), &[PY1, PY2, NODE], no_path.clone()).unwrap_err();
    assert!(missing.contains("py2/bin/python is missing"), "{missing}");
    assert!(missing.contains("node is not on PATH"), "{missing}");
    assert!(!missing.contains("py1"), "{missing}");
    assert_eq!(
        skip_or_fail(Err(missing.clone()), true),
        Err(missing.clone())
    );
    assert_eq!(skip_or_fail(Err(missing), false), Ok(None));
    assert_eq!(
        find_clients(None, &[PY1], no_path.clone()),
        Err("FERRY_CLIENTS_DIR is unset".into())
    );
    assert!(skip_or_fail(find_clients(None, &[], None), true).is_err());
    assert_eq!(
        find_clients(clients, &[PY1], no_path),
        Ok(dir.path().to_owned())
    );
}

#[test]
fn a_program_on_path_is_found_in_any_of_its_folders() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("bin")).unwrap();
    std::fs::write(dir.path().join("bin/node"), "").unwrap();
    let path = std::env::join_paths([dir.path().join("empty"), dir.path().join("bin")]).unwrap();
    let clients = Some(dir.path().as_os_str().to_owned());
    assert!(find_clients(clients, &[NODE], Some(path)).is_ok());
}

fn scripts_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/clients")
}

/// Runs a client to completion, prints what it said, and returns its output.
fn run_client(command: assert_cmd::Command, what: &str) -> Output {
    run_client_for(command, what, CLIENT_TIMEOUT)
}

/// [`run_client`] with a timeout of its own.
fn run_client_for(mut command: assert_cmd::Command, what: &str, timeout: Duration) -> Output {
    let output = command.timeout(timeout).output().unwrap();
    eprintln!(
        "--- {what}: {}\n{}",
        output.status,
        String::from_utf8_lossy(&output.stdout)
    );
    eprintln!("{}", String::from_utf8_lossy(&output.stderr));
    output
}

fn assert_passed(output: &Output, what: &str) {
    assert!(
        output.status.success(),
        "{what} failed ({}):\n{}\n{}",
        output.status,
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
}

fn python_probe(clients: &Path, venv: &str, script: &str, mode: Option<&str>) -> Output {
    let home = client_home();
    let mut command = assert_cmd::Command::new(clients.join(venv).join("bin/python"));
    command
        .env("FERRY_HOME", home.path())
        .arg(scripts_dir().join(script))
        .arg(FERRY)
        .args(SERVER_ARGS);
    if let Some(mode) = mode {
        command.env("PYMODE", mode);
    }
    run_client(command, &format!("{venv} {script} {}", mode.unwrap_or("")))
}

#[test]
fn the_python_sdk_1_30_passes_the_probe() {
    let Some(clients) = clients_dir(&[PY1]) else {
        return;
    };
    let output = python_probe(&clients, "py1", "py1_client.py", None);
    assert_passed(&output, "python sdk 1.30");
}

#[test]
fn the_python_sdk_2_3_in_legacy_mode_passes_the_probe() {
    let Some(clients) = clients_dir(&[PY2]) else {
        return;
    };
    let output = python_probe(&clients, "py2", "py2_client.py", Some("legacy"));
    assert_passed(&output, "python sdk 2.3 legacy");
}

#[test]
fn the_python_sdk_2_3_in_2026_07_28_mode_passes_the_probe() {
    let Some(clients) = clients_dir(&[PY2]) else {
        return;
    };
    let output = python_probe(&clients, "py2", "py2_client.py", Some("2026-07-28"));
    assert_passed(&output, "python sdk 2.3 2026-07-28");
}

#[test]
fn the_python_sdk_2_3_in_auto_mode_connects_through_discover_in_under_2_seconds() {
    let Some(clients) = clients_dir(&[PY2]) else {
        return;
    };
    let output = python_probe(&clients, "py2", "py2_client.py", Some("auto"));
    assert_passed(&output, "python sdk 2.3 auto");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let connect_ms: f64 = stdout
        .lines()
        .find_map(|line| line.strip_prefix("connect_ms="))
        .expect("the probe prints connect_ms")
        .parse()
        .unwrap();
    eprintln!("python sdk 2.3 auto mode connected in {connect_ms:.1} ms");
    assert!(
        connect_ms < AUTO_MODE_CONNECT_LIMIT_MS,
        "auto mode took {connect_ms} ms to connect"
    );
}

/// Node resolves ES module imports from the script's own folder, so a script runs from a
/// temporary folder beside a link to the installed node_modules: that folder and the copy.
fn ts_script(clients: &Path, name: &str) -> (tempfile::TempDir, PathBuf) {
    let folder = tempfile::tempdir().unwrap();
    std::os::unix::fs::symlink(
        clients.join("ts/node_modules"),
        folder.path().join("node_modules"),
    )
    .unwrap();
    let script = folder.path().join(name);
    std::fs::copy(scripts_dir().join(name), &script).unwrap();
    (folder, script)
}

#[test]
fn the_typescript_sdk_1_32_passes_the_probe() {
    let Some(clients) = clients_dir(&[TS_SDK, NODE]) else {
        return;
    };
    let (_folder, script) = ts_script(&clients, "ts_client.mjs");
    let home = client_home();
    let mut command = assert_cmd::Command::new("node");
    command
        .env("FERRY_HOME", home.path())
        .arg(&script)
        .arg(FERRY)
        .args(SERVER_ARGS);
    let output = run_client(command, "typescript sdk");
    assert_passed(&output, "typescript sdk 1.32.2");
}

/// The fleet flow of `e2e.rs` (set up by [`super::e2e::fleet`]) driven by a client script:
/// `PROGRAM SCRIPT <ferry> <project>` with the fleet's state folder as `FERRY_HOME`.
fn fleet_flow(program: &Path, script: &Path, what: &str) -> Output {
    let dir = tempfile::tempdir().unwrap();
    let fleet = super::e2e::fleet(&dir);
    let mut command = assert_cmd::Command::new(program);
    command
        .env("FERRY_HOME", &fleet.home)
        .env_remove("XDG_STATE_HOME")
        .env_remove("XDG_RUNTIME_DIR")
        .arg(script)
        .arg(FERRY)
        .arg(super::e2e::PROJECT);
    run_client_for(command, what, FLOW_TIMEOUT)
}

#[test]
fn the_python_sdk_2_3_in_auto_mode_runs_the_whole_fleet_flow() {
    let Some(clients) = clients_dir(&[PY2]) else {
        return;
    };
    let output = fleet_flow(
        &clients.join("py2/bin/python"),
        &scripts_dir().join("e2e_py2.py"),
        "py2 e2e_py2.py",
    );
    assert_passed(&output, "python sdk 2.3 (auto) fleet flow");
}

#[test]
fn the_typescript_sdk_runs_the_whole_fleet_flow() {
    let Some(clients) = clients_dir(&[TS_SDK, NODE]) else {
        return;
    };
    let (_folder, script) = ts_script(&clients, "e2e_ts.mjs");
    let output = fleet_flow(Path::new("node"), &script, "typescript sdk e2e_ts.mjs");
    assert_passed(&output, "typescript sdk 1.32.2 fleet flow");
}

/// `mcp-inspector --cli <server argv> --method ...`; exits 0 on success and 1 on any error.
fn inspector(clients: &Path, method_args: &[&str]) -> Output {
    let home = client_home();
    let mut command = assert_cmd::Command::new(clients.join("ts/node_modules/.bin/mcp-inspector"));
    command
        .env("FERRY_HOME", home.path())
        .arg("--cli")
        .arg("-e")
        .arg(format!("FERRY_HOME={}", home.path().display()))
        .arg(FERRY)
        .args(SERVER_ARGS)
        .args(method_args);
    run_client(command, &format!("inspector {}", method_args.join(" ")))
}

fn stdout_json(output: &Output) -> Value {
    serde_json::from_slice(&output.stdout).unwrap_or_else(|err| {
        panic!(
            "inspector stdout is not JSON ({err}): {}",
            String::from_utf8_lossy(&output.stdout)
        )
    })
}

#[test]
fn the_inspector_cli_lists_the_fixture_tools() {
    let Some(clients) = clients_dir(&[INSPECTOR, NODE]) else {
        return;
    };
    let output = inspector(&clients, &["--method", "tools/list"]);
    assert_passed(&output, "inspector tools/list");
    let names: Vec<String> = stdout_json(&output)["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|tool| tool["name"].as_str().unwrap().to_owned())
        .collect();
    assert!(
        names.iter().any(|name| name == "fixture_status"),
        "{names:?}"
    );
}

#[test]
fn the_inspector_cli_calls_a_tool_and_gets_structured_content() {
    let Some(clients) = clients_dir(&[INSPECTOR, NODE]) else {
        return;
    };
    let output = inspector(
        &clients,
        &["--method", "tools/call", "--tool-name", "fixture_status"],
    );
    assert_passed(&output, "inspector tools/call fixture_status");
    let result = stdout_json(&output);
    assert!(result["structuredContent"].is_object(), "{result}");
    assert_ne!(result["isError"], true, "{result}");
}

#[test]
fn the_inspector_cli_reads_the_ferry_link_a_tool_answered() {
    let Some(clients) = clients_dir(&[INSPECTOR, NODE]) else {
        return;
    };
    let order = inspector(
        &clients,
        &[
            "--method",
            "tools/call",
            "--tool-name",
            "fixture_order",
            "--tool-arg",
            "id=42",
        ],
    );
    assert_passed(&order, "inspector tools/call fixture_order");
    let content = stdout_json(&order)["content"].clone();
    let uri = content
        .as_array()
        .unwrap()
        .iter()
        .find(|item| item["type"] == "resource_link")
        .and_then(|link| link["uri"].as_str())
        .expect("fixture_order answers a resource_link")
        .to_owned();
    assert!(uri.starts_with("ferry://demo/"), "{uri}");
    let read = inspector(&clients, &["--method", "resources/read", "--uri", &uri]);
    assert_passed(&read, "inspector resources/read");
    let contents = stdout_json(&read)["contents"].clone();
    assert_eq!(contents[0]["uri"], uri.as_str());
    assert!(
        contents[0]["text"]
            .as_str()
            .is_some_and(|text| !text.is_empty()),
        "{contents}"
    );
}

#[test]
fn the_inspector_cli_reports_an_unknown_tool_as_a_failure() {
    let Some(clients) = clients_dir(&[INSPECTOR, NODE]) else {
        return;
    };
    let output = inspector(
        &clients,
        &["--method", "tools/call", "--tool-name", "no_such_tool"],
    );
    // A protocol error makes the inspector exit 1 and print it; a failure to connect would
    // exit 1 too, so the test also wants our error in the inspector's words.
    assert!(!output.status.success(), "the unknown tool was not refused");
    let said = format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(
        said.contains("-32602") && said.contains("unknown tool: no_such_tool"),
        "{said}"
    );
}

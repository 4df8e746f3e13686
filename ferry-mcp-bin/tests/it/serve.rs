//! `ferry mcp serve` over real pipes: the handshake, end of input, oversized and invalid
//! lines, and that stdout carries nothing but JSON-RPC lines.

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{self, Receiver};
use std::thread;
use std::time::Duration;

use ferry_mcp_core::protocol::MAX_LINE_BYTES;
use serde_json::Value;

const FERRY: &str = env!("CARGO_BIN_EXE_ferry");
/// A state folder with no project in it: these tests serve a project this machine does not
/// know, and must never read or write the real state folder.
const UNSET_UP_HOME: &str = concat!(env!("CARGO_TARGET_TMPDIR"), "/serve-unset-up-home");
/// How long a test waits for one answer before it calls the server stuck.
const ANSWER_TIMEOUT: Duration = Duration::from_secs(10);

const INITIALIZE: &str = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"serve-test","version":"0"}}}"#;
const INITIALIZED: &str = r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#;
const TOOLS_LIST: &str = r#"{"jsonrpc":"2.0","id":2,"method":"tools/list"}"#;

fn serve_args(tools: Option<&str>) -> Vec<&str> {
    let mut args = vec!["mcp", "serve", "--as", "tester", "--project", "demo"];
    if let Some(tools) = tools {
        args.extend(["--tools", tools]);
    }
    args
}

/// A running server whose stdout lines arrive on a channel, so a test can wait for an
/// answer with a timeout while stdin is still open.
struct Running {
    child: Child,
    stdin: Option<ChildStdin>,
    lines: Receiver<String>,
}

impl Running {
    fn start(tools: Option<&str>) -> Self {
        let mut child = Command::new(FERRY)
            .env("FERRY_HOME", UNSET_UP_HOME)
            .args(serve_args(tools))
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let stdout = BufReader::new(child.stdout.take().unwrap());
        let (sender, lines) = mpsc::channel();
        thread::spawn(move || {
            for line in stdout.lines() {
                if sender.send(line.unwrap()).is_err() {
                    break;
                }
            }
        });
        let stdin = child.stdin.take();
        Self {
            child,
            stdin,
            lines,
        }
    }

    fn send(&mut self, bytes: &[u8]) {
        let stdin = self.stdin.as_mut().unwrap();
        stdin.write_all(bytes).unwrap();
        stdin.write_all(b"\n").unwrap();
        stdin.flush().unwrap();
    }

    fn answer(&self) -> Value {
        let line = self
            .lines
            .recv_timeout(ANSWER_TIMEOUT)
            .expect("an answer within the timeout");
        serde_json::from_str(&line)
            .unwrap_or_else(|err| panic!("stdout line is not JSON ({err}): {line}"))
    }

    /// Closes stdin and returns whether the server exited with 0.
    fn finish(mut self) -> bool {
        drop(self.stdin.take());
        self.child.wait().unwrap().success()
    }
}

/// Runs a whole session: writes `input`, closes stdin, waits for the exit.
fn run_session(tools: Option<&str>, input: &[u8]) -> std::process::Output {
    assert_cmd::Command::new(FERRY)
        .env("FERRY_HOME", UNSET_UP_HOME)
        .args(serve_args(tools))
        .write_stdin(input.to_vec())
        .timeout(ANSWER_TIMEOUT)
        .output()
        .unwrap()
}

fn stdout_messages(output: &std::process::Output) -> Vec<Value> {
    let stdout = std::str::from_utf8(&output.stdout).expect("stdout is UTF-8");
    assert!(
        stdout.is_empty() || stdout.ends_with('\n'),
        "stdout ends with a newline: {stdout:?}"
    );
    stdout
        .lines()
        .map(|line| {
            serde_json::from_str(line).unwrap_or_else(|err| panic!("not JSON ({err}): {line}"))
        })
        .collect()
}

fn session(lines: &[&[u8]]) -> Vec<u8> {
    lines
        .iter()
        .flat_map(|line| line.iter().copied().chain([b'\n']))
        .collect()
}

fn is_error(message: &Value, code: i64) -> bool {
    message["jsonrpc"] == "2.0" && message["error"]["code"] == code
}

#[test]
fn the_handshake_is_answered_over_real_pipes_while_stdin_stays_open() {
    let mut server = Running::start(Some("fixture"));
    server.send(INITIALIZE.as_bytes());
    let init = server.answer();
    assert_eq!(init["id"], 1);
    assert_eq!(init["result"]["protocolVersion"], "2025-11-25");
    assert_eq!(init["result"]["serverInfo"]["name"], "ferry");
    server.send(INITIALIZED.as_bytes());
    server.send(TOOLS_LIST.as_bytes());
    let list = server.answer();
    assert_eq!(list["id"], 2);
    let names: Vec<&str> = list["result"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|tool| tool["name"].as_str().unwrap())
        .collect();
    assert!(names.contains(&"fixture_status"), "{names:?}");
    assert!(server.finish(), "exit code 0 after stdin closes");
}

#[test]
fn at_end_of_input_everything_read_is_answered_and_the_exit_code_is_0() {
    let pings: Vec<String> = (10..60)
        .map(|id| format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"ping"}}"#))
        .collect();
    let mut lines: Vec<&[u8]> = vec![INITIALIZE.as_bytes(), INITIALIZED.as_bytes()];
    lines.extend(pings.iter().map(|ping| ping.as_bytes()));
    let output = run_session(Some("fixture"), &session(&lines));
    assert!(output.status.success(), "{:?}", output.status);
    let ids: Vec<i64> = stdout_messages(&output)
        .iter()
        .map(|answer| answer["id"].as_i64().unwrap())
        .collect();
    let expected: Vec<i64> = [1].into_iter().chain(10..60).collect();
    assert_eq!(ids, expected);
}

#[test]
fn a_last_line_without_a_newline_is_still_answered() {
    let input = format!("{INITIALIZE}\n{INITIALIZED}\n{TOOLS_LIST}");
    let output = run_session(Some("fixture"), input.as_bytes());
    let answers = stdout_messages(&output);
    assert_eq!(answers.len(), 2);
    assert_eq!(answers[1]["id"], 2);
}

#[test]
fn an_oversized_line_is_answered_and_the_next_line_is_still_served() {
    let mut huge = br#"{"jsonrpc":"2.0","id":7,"method":"ping","params":{"pad":""#.to_vec();
    huge.resize(MAX_LINE_BYTES + 4096, b'x');
    huge.extend_from_slice(br#""}}"#);
    let ping = br#"{"jsonrpc":"2.0","id":8,"method":"ping"}"#;
    let mut server = Running::start(Some("fixture"));
    server.send(INITIALIZE.as_bytes());
    server.answer();
    server.send(INITIALIZED.as_bytes());
    server.send(&huge);
    let refused = server.answer();
    assert!(
        refused.get("error").is_some(),
        "the oversized line gets an error: {refused}"
    );
    server.send(ping);
    let pong = server.answer();
    assert_eq!(pong["id"], 8);
    assert!(pong.get("result").is_some(), "{pong}");
    assert!(server.finish());
}

#[test]
fn invalid_utf8_is_answered_with_a_parse_error_and_serving_goes_on() {
    let bad: &[u8] = b"{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"p\xffing\"}";
    let output = run_session(
        Some("fixture"),
        &session(&[INITIALIZE.as_bytes(), bad, TOOLS_LIST.as_bytes()]),
    );
    let answers = stdout_messages(&output);
    assert_eq!(answers.len(), 3, "{answers:?}");
    assert!(is_error(&answers[1], -32700), "{}", answers[1]);
    assert_eq!(answers[2]["id"], 2);
}

#[test]
fn stdout_carries_only_json_rpc_lines_and_logs_go_to_stderr() {
    let garbage: &[&[u8]] = &[
        b"not json",
        b"[]",
        b"{}",
        b"\"text\"",
        b"",
        b"   ",
        b"{\"jsonrpc\":\"2.0\",\"id\":9}",
    ];
    let mut lines: Vec<&[u8]> = vec![
        INITIALIZE.as_bytes(),
        INITIALIZED.as_bytes(),
        TOOLS_LIST.as_bytes(),
    ];
    lines.extend(garbage);
    let output = run_session(Some("fixture"), &session(&lines));
    assert!(output.status.success());
    let messages = stdout_messages(&output);
    // initialize, tools/list, and one error each for the five garbage lines that are not blank.
    assert_eq!(messages.len(), 7, "{messages:?}");
    for message in messages {
        assert_eq!(message["jsonrpc"], "2.0", "{message}");
        assert!(
            message.get("result").is_some() != message.get("error").is_some(),
            "{message}"
        );
    }
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("ferry mcp serve"),
        "the start is logged on stderr: {stderr}"
    );
}

/// The exact `tools/list` answer line of `ferry mcp serve --tools fixture` run as `agent` in
/// `project` (a real process each time, so the wall clock differs between runs too).
fn tools_list_line(agent: &str, project: &str) -> String {
    let output = assert_cmd::Command::new(FERRY)
        .env("FERRY_HOME", UNSET_UP_HOME)
        .args([
            "mcp",
            "serve",
            "--as",
            agent,
            "--project",
            project,
            "--tools",
            "fixture",
        ])
        .write_stdin(session(&[
            INITIALIZE.as_bytes(),
            INITIALIZED.as_bytes(),
            TOOLS_LIST.as_bytes(),
        ]))
        .timeout(ANSWER_TIMEOUT)
        .output()
        .unwrap();
    assert!(output.status.success(), "{:?}", output.status);
    let stdout = String::from_utf8(output.stdout).unwrap();
    let line = stdout
        .lines()
        .find(|line| line.starts_with(r#"{"jsonrpc":"2.0","id":2,"#))
        .unwrap_or_else(|| panic!("no tools/list answer in {stdout}"));
    line.to_owned()
}

#[test]
fn tools_list_bytes_do_not_change_with_the_agent_the_project_or_the_time() {
    let first = tools_list_line("alice", "demo");
    thread::sleep(Duration::from_millis(20));
    let second = tools_list_line("bob-the-reviewer", "another-project");
    assert!(first.contains(r#""name":"fixture_status""#), "{first}");
    assert!(
        !first.contains("alice") && !first.contains("demo"),
        "a definition names the agent or the project: {first}"
    );
    assert_eq!(first.as_bytes(), second.as_bytes());
}

/// The `tools/list` answer line of `ferry mcp serve --tools TOOLS` on an unset-up state folder.
fn tools_list_of(tools: &str) -> String {
    let output = run_session(Some(tools), &initialize_and_list());
    assert!(output.status.success(), "--tools {tools}: {output:?}");
    let stdout = String::from_utf8(output.stdout).unwrap();
    stdout
        .lines()
        .find(|line| line.starts_with(r#"{"jsonrpc":"2.0","id":2,"#))
        .unwrap_or_else(|| panic!("--tools {tools}: no tools/list answer in {stdout}"))
        .to_owned()
}

fn tool_names(line: &str) -> Vec<String> {
    let answer: Value = serde_json::from_str(line).unwrap();
    answer["result"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|tool| tool["name"].as_str().unwrap().to_owned())
        .collect()
}

#[test]
fn groups_add_to_the_core_tools_and_their_order_on_the_command_line_changes_no_byte_of_tools_list()
{
    let core = tool_names(&tools_list_of("core"));
    let admin = tool_names(&tools_list_of("admin"));
    assert!(core.contains(&"ferry_join".to_owned()), "{core:?}");
    assert!(
        core.iter().all(|tool| admin.contains(tool)) && admin.contains(&"ferry_status".to_owned()),
        "--tools admin adds to the core tools: {admin:?}"
    );
    let every = tools_list_of("core,admin,legacy");
    for order in [
        "legacy,admin,core",
        "admin,legacy",
        "legacy,admin",
        "admin,core,legacy",
    ] {
        assert_eq!(
            tools_list_of(order).as_bytes(),
            every.as_bytes(),
            "--tools {order} and --tools core,admin,legacy differ"
        );
    }
    let names = tool_names(&every);
    for tool in ["ferry_join", "ferry_status", "list_tasks"] {
        assert!(
            names.contains(&tool.to_owned()),
            "{tool} missing: {names:?}"
        );
    }
}

#[test]
fn progress_notifications_and_the_answer_are_one_line_each() {
    let call = br#"{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"fixture_count","arguments":{"n":3},"_meta":{"progressToken":"p"}}}"#;
    let output = run_session(
        Some("fixture"),
        &session(&[INITIALIZE.as_bytes(), INITIALIZED.as_bytes(), call]),
    );
    assert!(output.status.success());
    assert_eq!(
        output.stdout.iter().filter(|&&byte| byte == b'\n').count(),
        5,
        "initialize, three progress notifications, the result: {}",
        String::from_utf8_lossy(&output.stdout)
    );
    let messages = stdout_messages(&output);
    let methods: Vec<&str> = messages
        .iter()
        .map(|message| message["method"].as_str().unwrap_or("answer"))
        .collect();
    assert_eq!(
        methods,
        [
            "answer",
            "notifications/progress",
            "notifications/progress",
            "notifications/progress",
            "answer"
        ]
    );
    assert_eq!(messages[4]["result"]["structuredContent"]["counted"], 3);
}

#[test]
fn the_default_surface_does_not_serve_the_fixture_group() {
    let output = run_session(
        None,
        &session(&[
            INITIALIZE.as_bytes(),
            INITIALIZED.as_bytes(),
            TOOLS_LIST.as_bytes(),
        ]),
    );
    let answers = stdout_messages(&output);
    let tools = answers[1]["result"]["tools"].as_array().unwrap();
    assert!(
        tools
            .iter()
            .all(|tool| !tool["name"].as_str().unwrap().starts_with("fixture")),
        "{tools:?}"
    );
}

#[test]
fn an_unknown_tool_group_is_a_one_line_error_and_a_failing_exit() {
    let output = run_session(Some("core,nope"), b"");
    assert!(!output.status.success());
    assert!(output.stdout.is_empty());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(stderr.contains("unknown tool group `nope`"), "{stderr}");
    assert!(
        !stderr.contains("fixture"),
        "hidden groups stay hidden: {stderr}"
    );
}

#[test]
fn help_does_not_mention_the_hidden_fixture_group() {
    let output = Command::new(FERRY)
        .env("FERRY_HOME", UNSET_UP_HOME)
        .args(["mcp", "serve", "--help"])
        .output()
        .unwrap();
    assert!(output.status.success());
    let help = String::from_utf8_lossy(&output.stdout);
    assert!(help.contains("--tools"), "{help}");
    assert!(!help.contains("fixture"), "{help}");
}

#[test]
fn a_scripted_session_answers_exactly_these_bytes() {
    let lines: &[&[u8]] = &[
        INITIALIZE.as_bytes(),
        INITIALIZED.as_bytes(),
        br#"{"jsonrpc":"2.0","id":2,"method":"ping"}"#,
        br#"{"jsonrpc":"2.0","id":3,"method":"no/such/method"}"#,
        b"{not json",
        br#"{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"no_such_tool","arguments":{}}}"#,
    ];
    let output = run_session(Some("fixture"), &session(lines));
    assert!(output.status.success());
    let stdout = String::from_utf8(output.stdout).unwrap();
    // The initialize answer carries the version and the instructions, which change on their
    // own schedule; everything after it is the loop's and the core's business alone.
    let (initialize, rest) = stdout.split_once('\n').unwrap();
    assert!(
        initialize
            .starts_with(r#"{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":"2025-11-25""#),
        "{initialize}"
    );
    insta::assert_snapshot!(rest);
}

#[test]
fn a_client_that_stops_reading_ends_the_server_quietly() {
    let mut child = Command::new(FERRY)
        .env("FERRY_HOME", UNSET_UP_HOME)
        .args(serve_args(Some("fixture")))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    drop(child.stdout.take());
    let mut stdin = child.stdin.take().unwrap();
    // The server may already be gone when the last lines arrive; that is the point.
    let _ = stdin.write_all(session(&[INITIALIZE.as_bytes(), TOOLS_LIST.as_bytes()]).as_slice());
    drop(stdin);
    let output = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{:?}: {stderr}", output.status);
    assert!(stderr.contains("stdout closed"), "{stderr}");
}

fn initialize_and_list() -> Vec<u8> {
    session(&[
        br#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"0"}}}"#,
        br#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
        br#"{"jsonrpc":"2.0","id":2,"method":"tools/list"}"#,
    ])
}

fn serve_demo(home: &std::path::Path) -> std::process::Output {
    assert_cmd::Command::new(FERRY)
        .env("FERRY_HOME", home)
        .args(["mcp", "serve", "--demo"])
        .write_stdin(initialize_and_list())
        .timeout(ANSWER_TIMEOUT)
        .output()
        .unwrap()
}

#[test]
fn the_demo_creates_a_seated_member_agent_once_and_serves_it() {
    let home = tempfile::tempdir().unwrap();
    let first = serve_demo(home.path());
    assert!(first.status.success(), "{first:?}");
    let answers = stdout_messages(&first);
    assert_eq!(answers.len(), 2, "{answers:?}");
    let tools: Vec<&str> = answers[1]["result"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|tool| tool["name"].as_str().unwrap())
        .collect();
    assert!(tools.contains(&"ferry_orders"), "{tools:?}");
    let stderr = String::from_utf8_lossy(&first.stderr);
    assert!(stderr.contains("created project demo"), "{stderr}");
    assert!(stderr.contains("seated as demo-agent (member)"), "{stderr}");

    let again = serve_demo(home.path());
    assert!(again.status.success(), "{again:?}");
    let stderr = String::from_utf8_lossy(&again.stderr);
    assert!(!stderr.contains("created project"), "{stderr}");
    assert!(stderr.contains("seated as demo-agent (member)"), "{stderr}");

    let status = assert_cmd::Command::new(FERRY)
        .env("FERRY_HOME", home.path())
        .args(["channel", "status", "--project", "demo", "--json"])
        .output()
        .unwrap();
    let status: Value = serde_json::from_slice(&status.stdout).unwrap();
    let agents: Vec<(String, String)> = status["agents"]
        .as_array()
        .unwrap()
        .iter()
        .map(|agent| {
            assert_eq!(agent["seat"], "seated", "{agent}");
            (
                agent["name"].as_str().unwrap().to_owned(),
                agent["level"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    assert_eq!(
        agents,
        [
            ("builder".to_owned(), "member".to_owned()),
            ("demo-agent".to_owned(), "member".to_owned()),
            ("lead".to_owned(), "orchestrator".to_owned()),
        ]
    );
    assert_eq!(status["problems"], serde_json::json!([]));
}

#[test]
fn serving_a_project_this_machine_does_not_know_still_serves_and_says_how_to_set_it_up() {
    let output = run_session(None, &initialize_and_list());
    assert!(output.status.success(), "{output:?}");
    assert_eq!(stdout_messages(&output).len(), 2);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("ferry init --project"), "{stderr}");
}

#[test]
fn a_tool_called_on_a_project_this_machine_does_not_know_names_the_fix_once_in_the_facade_s_words()
{
    let join = br#"{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"ferry_catchup","arguments":{}}}"#;
    let mut input = initialize_and_list();
    input.extend_from_slice(join);
    input.push(b'\n');
    let output = run_session(None, &input);
    assert!(output.status.success(), "{output:?}");
    let messages = stdout_messages(&output);
    let answer = messages
        .iter()
        .find(|m| m["id"] == 3)
        .expect("the call is answered");
    assert_eq!(answer["result"]["isError"], true, "{answer}");
    // The core's text is "unknown project demo"; the pointer is the facade's, said once.
    assert_eq!(
        answer["result"]["content"][0]["text"],
        "unknown_project: unknown project demo (run `ferry init --project demo`)",
        "{answer}"
    );
}

#[test]
fn a_bad_agent_name_is_a_one_line_error_and_a_failing_exit() {
    let output = assert_cmd::Command::new(FERRY)
        .env("FERRY_HOME", UNSET_UP_HOME)
        .args(["mcp", "serve", "--as", "no/slash", "--project", "demo"])
        .write_stdin(Vec::new())
        .timeout(ANSWER_TIMEOUT)
        .output()
        .unwrap();
    assert!(!output.status.success());
    assert!(output.stdout.is_empty());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(
        stderr.starts_with("ferry: bad agent name `no/slash`"),
        "{stderr}"
    );
}

/// The `genesis.json` files under `dir`.
fn genesis_files(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            found.extend(genesis_files(&path));
        } else if path.file_name().is_some_and(|name| name == "genesis.json") {
            found.push(path);
        }
    }
    found
}

#[test]
fn the_first_serve_after_the_genesis_is_rewritten_says_so_on_stderr() {
    let home = tempfile::tempdir().unwrap();
    let first = serve_demo(home.path());
    assert!(first.status.success(), "{first:?}");
    let stderr = String::from_utf8_lossy(&first.stderr);
    assert!(!stderr.contains("genesis.json was rewritten"), "{stderr}");
    // Re-saved with a leading space: it still verifies, its bytes differ.
    let genesis = genesis_files(home.path());
    assert_eq!(genesis.len(), 1, "{genesis:?}");
    let was = std::fs::read_to_string(&genesis[0]).unwrap();
    std::fs::write(&genesis[0], format!(" {was}")).unwrap();

    let again = serve_demo(home.path());
    assert!(again.status.success(), "{again:?}");
    let stderr = String::from_utf8_lossy(&again.stderr);
    let reported: Vec<&str> = stderr
        .lines()
        .filter(|line| line.contains("genesis.json was rewritten"))
        .collect();
    assert_eq!(reported.len(), 1, "said once: {stderr}");
    assert!(reported[0].starts_with("ferry mcp serve: "), "{stderr}");
    // A command says it too, once.
    let orders = assert_cmd::Command::new(FERRY)
        .env("FERRY_HOME", home.path())
        .args(["order", "list", "--project", "demo"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&orders.stderr);
    assert_eq!(
        stderr
            .lines()
            .filter(|line| line.contains("genesis.json was rewritten"))
            .count(),
        1,
        "{stderr}"
    );
}

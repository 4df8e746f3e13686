//! The gateway (issue 21, ADR 0021): external MCP servers behind `ferry mcp serve`, driven by a
//! fixture server (`fixtures/mcp_fixture.py`) that misbehaves one way per tool, and by the real
//! `@modelcontextprotocol/server-everything` when `FERRY_GATEWAY_FIXTURE_DIR` names its install.
//!
//! The timeouts are lowered with `FERRYMAN_MCP_TIMEOUT_SECS`. Each case asserts what the gateway
//! answered (a timeout's error names the timeout that fired) and, where it matters, the order
//! the answers came in: never how long anything took, so a loaded machine cannot fail them.
//! The must-show table's figures are printed by the ignored `must_show_table_figures`
//! (`cargo nextest run -p ferry-mcp-bin --run-ignored only -E 'test(must_show_table_figures)'
//! --no-capture`).

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{self, Receiver};
use std::thread;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

const FERRY: &str = env!("CARGO_BIN_EXE_ferry");
const FIXTURE: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/it/fixtures/mcp_fixture.py"
);
const PROJECT: &str = "gw";
/// The timeout the tests of a hung or flooding server give it (start and call alike).
const TIMEOUT_SECS: f64 = 2.5;
/// The timeout every other test gives a server: enough to start python on a loaded machine.
const ROOMY_TIMEOUT_SECS: f64 = 8.0;
/// How long a test waits for any answer before it calls the server stuck.
const ANSWER_TIMEOUT: Duration = Duration::from_secs(20);
const TOKEN: &str = "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";

const INITIALIZE: &str = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"gateway-test","version":"0"}}}"#;
const INITIALIZE_2025_03_26: &str = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-03-26","capabilities":{},"clientInfo":{"name":"gateway-test","version":"0"}}}"#;
const INITIALIZED: &str = r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#;

/// A state folder of the test's own with the fixture added as `fx`.
struct Setup {
    home: tempfile::TempDir,
}

impl Setup {
    fn new() -> Self {
        let setup = Self {
            home: tempfile::tempdir().unwrap(),
        };
        setup.add("fx");
        setup
    }

    /// Adds the fixture as `name`, reading its mode from [`Setup::mode_file_of`] `name`.
    fn add(&self, name: &str) {
        let mut added = self.ferry(&[
            "mcp",
            "add",
            name,
            "--project",
            PROJECT,
            "--env",
            "MY_API_KEY",
            "--",
            "python3",
            FIXTURE,
        ]);
        let added = added.arg(self.mode_file_of(name)).output().unwrap();
        assert!(
            added.status.success(),
            "{}",
            String::from_utf8_lossy(&added.stderr)
        );
    }

    /// The mode file of `fx`.
    fn mode_file(&self) -> PathBuf {
        self.mode_file_of("fx")
    }

    fn mode_file_of(&self, name: &str) -> PathBuf {
        let file = if name == "fx" {
            "fixture-mode".to_owned()
        } else {
            format!("fixture-mode-{name}")
        };
        self.home.path().join(file)
    }

    fn ferry(&self, args: &[&str]) -> Command {
        let mut command = Command::new(FERRY);
        command
            .env("FERRY_HOME", self.home.path())
            .env("FERRYMAN_MCP_TIMEOUT_SECS", ROOMY_TIMEOUT_SECS.to_string())
            .args(args);
        command
    }

    fn serve(&self, tools: &str) -> Serving {
        Serving::start(self.ferry(&["mcp", "serve", "--project", PROJECT, "--tools", tools]))
    }

    /// `serve` with the timeout lowered to [`TIMEOUT_SECS`].
    fn serve_impatient(&self) -> Serving {
        self.serve_impatient_with("gateway")
    }

    fn serve_impatient_with(&self, tools: &str) -> Serving {
        Serving::start(self.impatient(tools))
    }

    /// `serve` with the timeout lowered, initialized under 2025-03-26 (the one version that
    /// takes JSON-RPC batches).
    fn serve_impatient_batching(&self, tools: &str) -> Serving {
        Serving::start_under(self.impatient(tools), INITIALIZE_2025_03_26)
    }

    fn impatient(&self, tools: &str) -> Command {
        let mut command = self.ferry(&["mcp", "serve", "--project", PROJECT, "--tools", tools]);
        command.env("FERRYMAN_MCP_TIMEOUT_SECS", TIMEOUT_SECS.to_string());
        command
    }
}

/// A running `ferry mcp serve`, its stdout lines on a channel.
struct Serving {
    child: Child,
    stdin: Option<ChildStdin>,
    lines: Receiver<String>,
    next_id: u64,
}

impl Serving {
    fn start(command: Command) -> Self {
        Self::start_under(command, INITIALIZE)
    }

    /// Starts `command` and initializes it with `initialize` (whose id is 1).
    fn start_under(mut command: Command, initialize: &str) -> Self {
        let mut child = command
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
        let mut serving = Self {
            stdin: child.stdin.take(),
            child,
            lines,
            next_id: 10,
        };
        serving.send(initialize);
        let answer = serving.answer();
        assert_eq!(answer["id"], 1);
        assert!(answer["result"]["protocolVersion"].is_string(), "{answer}");
        serving.send(INITIALIZED);
        serving
    }

    fn send(&mut self, line: &str) {
        let stdin = self.stdin.as_mut().unwrap();
        stdin.write_all(line.as_bytes()).unwrap();
        stdin.write_all(b"\n").unwrap();
        stdin.flush().unwrap();
    }

    fn answer(&self) -> Value {
        let line = self
            .lines
            .recv_timeout(ANSWER_TIMEOUT)
            .expect("an answer within the timeout");
        serde_json::from_str(&line).unwrap()
    }

    /// Sends a request without waiting for its answer: its id.
    fn send_request(&mut self, method: &str, params: Value) -> u64 {
        self.next_id += 1;
        let id = self.next_id;
        self.send(
            &json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}).to_string(),
        );
        id
    }

    /// Sends a `tools/call` without waiting for its answer: its id.
    fn send_call(&mut self, tool: &str, arguments: Value) -> u64 {
        self.send_request("tools/call", json!({"name": tool, "arguments": arguments}))
    }

    /// Every answer, in the order they came, up to and with the answer to `id`.
    fn answers_until(&self, id: u64) -> Vec<Value> {
        let mut answers = Vec::new();
        loop {
            let answer = self.answer();
            let last = answer["id"] == id;
            answers.push(answer);
            if last {
                return answers;
            }
        }
    }

    fn cancel(&mut self, id: u64) {
        self.send(&json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": id, "reason": "test"}}).to_string());
    }

    fn request(&mut self, method: &str, params: Value) -> (Value, Duration) {
        let started = Instant::now();
        let id = self.send_request(method, params);
        let answer = self.answer();
        assert_eq!(answer["id"], id, "{answer}");
        (answer["result"].clone(), started.elapsed())
    }

    /// Calls `tool` and returns its result and how long it took.
    fn call(&mut self, tool: &str, arguments: Value) -> (Value, Duration) {
        let (result, took) =
            self.request("tools/call", json!({"name": tool, "arguments": arguments}));
        eprintln!(
            "{tool}: {took:?}: {}",
            text_of(&result).chars().take(300).collect::<String>()
        );
        (result, took)
    }

    /// Starts the fixture with a call that behaves, so that what follows is timed as a call
    /// alone (a loaded machine may take longer than the lowered timeout to start python: a
    /// start that timed out is tried again).
    fn warm_up(&mut self) {
        for _ in 0..3 {
            let (result, _) = self.call("fx_echo", json!({"text": "warm"}));
            if !is_error(&result) {
                return;
            }
        }
        panic!("the fixture never started");
    }

    /// Our own tools still answer.
    fn assert_still_answers(&mut self) {
        assert_eq!(self.request("ping", json!({})).0, json!({}));
        let (result, _) = self.request("tools/list", json!({}));
        assert!(result["tools"].as_array().unwrap().len() > 6);
    }

    fn rss_kib(&self) -> u64 {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.child.id())).unwrap();
        let line = status
            .lines()
            .find(|line| line.starts_with("VmRSS:"))
            .unwrap();
        line.split_whitespace().nth(1).unwrap().parse().unwrap()
    }

    fn finish(mut self) -> bool {
        drop(self.stdin.take());
        self.child.wait().unwrap().success()
    }
}

impl Drop for Serving {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Every text block of a result, joined by newlines.
fn text_of(result: &Value) -> String {
    result["content"]
        .as_array()
        .map(|blocks| {
            blocks
                .iter()
                .filter_map(|block| block["text"].as_str())
                .collect::<Vec<_>>()
                .join("\n")
        })
        .unwrap_or_default()
}

fn is_error(result: &Value) -> bool {
    result["isError"] == true
}

fn ids(answers: &[Value]) -> Vec<Value> {
    answers.iter().map(|answer| answer["id"].clone()).collect()
}

/// Waits until `path` exists (the fixture writes it when a call reached it).
fn await_file(path: &Path) {
    let until = Instant::now() + ANSWER_TIMEOUT;
    while !path.exists() {
        assert!(Instant::now() < until, "{} never appeared", path.display());
        thread::sleep(Duration::from_millis(10));
    }
}

fn alive(pid: u32) -> bool {
    // A zombie has been killed and waits only for its reaper.
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| {
        !stat
            .split(") ")
            .nth(1)
            .is_some_and(|rest| rest.starts_with('Z'))
    })
}

fn gone_within(pid: u32, bound: Duration) -> bool {
    let until = Instant::now() + bound;
    while Instant::now() < until {
        if !alive(pid) {
            return true;
        }
        thread::sleep(Duration::from_millis(20));
    }
    false
}

#[test]
fn serve_lists_every_page_of_a_server_s_tools_under_its_prefix_byte_for_byte_each_start() {
    let setup = Setup::new();
    let mut first = setup.serve("gateway");
    let (list, _) = first.request("tools/list", json!({}));
    let names: Vec<&str> = list["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|tool| tool["name"].as_str().unwrap())
        .collect();
    for tool in ["fx_crash", "fx_echo", "fx_huge", "fx_secret", "ferry_join"] {
        assert!(names.contains(&tool), "{tool}: {names:?}");
    }
    assert_eq!(
        names.iter().filter(|name| name.starts_with("fx_")).count(),
        15,
        "both pages"
    );
    let mut sorted = names.clone();
    sorted.sort_unstable();
    assert_eq!(names, sorted);
    let echo =
        &list["tools"].as_array().unwrap()[names.iter().position(|n| *n == "fx_echo").unwrap()];
    assert!(
        echo["description"]
            .as_str()
            .unwrap()
            .contains("external MCP server `fx`")
    );
    let mut second = setup.serve("fx");
    let (again, _) = second.request("tools/list", json!({}));
    assert_eq!(list.to_string(), again.to_string());
    // The default list does not change.
    let mut plain = Serving::start(setup.ferry(&["mcp", "serve", "--project", PROJECT]));
    let (core, _) = plain.request("tools/list", json!({}));
    assert!(!core.to_string().contains("fx_"));
}

#[test]
fn a_server_that_hangs_at_start_fails_its_call_naming_the_start_timeout_after_our_tools_answered() {
    let setup = Setup::new();
    std::fs::write(setup.mode_file(), "hang-at-start").unwrap();
    let mut serving = setup.serve_impatient();
    let hung = serving.send_call("fx_echo", json!({"text": "hi"}));
    let ping = serving.send_request("ping", json!({}));
    let list = serving.send_request("tools/list", json!({}));
    let answers = serving.answers_until(hung);
    assert_eq!(ids(&answers), [json!(ping), json!(list), json!(hung)]);
    let result = &answers[2]["result"];
    assert!(is_error(result), "{result}");
    let text = text_of(result);
    assert!(text.contains("MCP server `fx` failed"), "{text}");
    assert!(
        text.contains("did not finish its start and handshake within 2.5 s"),
        "{text}"
    );
}

#[test]
fn a_call_that_hangs_fails_naming_the_call_timeout_and_is_cancelled_downstream() {
    let setup = Setup::new();
    let mut serving = setup.serve_impatient();
    serving.warm_up();
    let (result, _) = serving.call("fx_wait_cancel", json!({}));
    assert!(is_error(&result), "{result}");
    let text = text_of(&result);
    assert!(
        text.contains("did not answer within 2.5 s (the call was cancelled)"),
        "{text}"
    );
    let (seen, _) = serving.call("fx_cancelled", json!({}));
    let seen = text_of(&seen);
    assert!(
        seen.lines().last().unwrap().starts_with("cancelled: ")
            && seen.lines().last().unwrap().len() > "cancelled: ".len(),
        "the server saw the cancellation: {seen}"
    );
    serving.assert_still_answers();
}

#[test]
fn while_a_call_hangs_our_own_tools_and_another_server_answer_and_the_hung_call_stays_pending() {
    let setup = Setup::new();
    setup.add("fy");
    let mut serving = setup.serve("admin,gateway");
    serving.warm_up();
    let (warm, _) = serving.call("fy_echo", json!({"text": "warm"}));
    assert!(!is_error(&warm), "{warm}");
    let hung = serving.send_call("fx_hang", json!({}));
    let status = serving.send_call("ferry_status", json!({}));
    let list = serving.send_request("tools/list", json!({}));
    let other = serving.send_call("fy_echo", json!({"text": "meanwhile"}));
    let answers = serving.answers_until(other);
    assert_eq!(
        ids(&answers),
        [json!(status), json!(list), json!(other)],
        "the hung call is still pending"
    );
    assert!(text_of(&answers[2]["result"]).contains("echo: meanwhile"));
    // Cancelled, it is never answered (the MCP spec: no response for a cancelled request).
    serving.cancel(hung);
    let ping = serving.send_request("ping", json!({}));
    assert_eq!(ids(&serving.answers_until(ping)), [json!(ping)]);
}

#[test]
fn a_call_that_hangs_inside_a_batch_holds_that_batch_alone_while_other_messages_are_answered() {
    let setup = Setup::new();
    let mut serving = setup.serve_impatient_batching("admin,gateway");
    serving.warm_up();
    let (hung, inner_ping) = (901, 902);
    let started = Instant::now();
    serving.send(&format!(
        "[{},{}]",
        json!({"jsonrpc": "2.0", "id": hung, "method": "tools/call", "params": {"name": "fx_hang", "arguments": {}}}),
        json!({"jsonrpc": "2.0", "id": inner_ping, "method": "ping"}),
    ));
    let ping = serving.send_request("ping", json!({}));
    let status = serving.send_call("ferry_status", json!({}));
    // The plain requests sent after the batch are answered first, while its call hangs.
    let first = serving.answer();
    assert_eq!(first["id"], ping, "{first}");
    assert_eq!(first["result"], json!({}));
    let second = serving.answer();
    assert_eq!(second["id"], status, "{second}");
    assert!(second["result"]["content"].is_array(), "{second}");
    let answered = started.elapsed();
    // The batch goes out whole once its call timed out, its answers in the order asked.
    let batch = serving.answer();
    eprintln!(
        "plain answers {answered:?} after the batch was sent; the batch {:?}",
        started.elapsed()
    );
    let items = batch
        .as_array()
        .unwrap_or_else(|| panic!("an array: {batch}"));
    assert_eq!(ids(items), [json!(hung), json!(inner_ping)]);
    let result = &items[0]["result"];
    assert!(is_error(result), "{result}");
    let text = text_of(result);
    assert!(text.contains("MCP server `fx` failed"), "{text}");
    assert!(text.contains("did not answer within 2.5 s"), "{text}");
    assert_eq!(items[1]["result"], json!({}));
    serving.assert_still_answers();
}

#[test]
fn a_call_our_client_cancels_is_cancelled_downstream_and_never_answered() {
    let setup = Setup::new();
    let mut serving = setup.serve("gateway");
    serving.warm_up();
    let waiting = serving.send_call("fx_wait_cancel", json!({}));
    // Cancelled once it runs downstream (the fixture says so), not while it is queued.
    let marker = PathBuf::from(format!("{}.waiting", setup.mode_file().display()));
    await_file(&marker);
    serving.cancel(waiting);
    let seen = serving.send_call("fx_cancelled", json!({}));
    let answers = serving.answers_until(seen);
    assert_eq!(
        ids(&answers),
        [json!(seen)],
        "no answer to the cancelled call"
    );
    // Downstream, the cancellation names the gateway's own id for the call (a number).
    let text = text_of(&answers[0]["result"]);
    let downstream = text
        .lines()
        .last()
        .unwrap()
        .trim_start_matches("cancelled: ");
    assert!(
        !downstream.is_empty() && downstream.split(' ').all(|id| id.parse::<u64>().is_ok()),
        "{text}"
    );
    let ping = serving.send_request("ping", json!({}));
    assert_eq!(ids(&serving.answers_until(ping)), [json!(ping)]);
}

#[test]
fn a_server_that_crashes_mid_call_fails_the_call_with_its_stderr_and_restarts_on_the_next() {
    let setup = Setup::new();
    let mut serving = setup.serve("fx");
    let (mut before, _) = serving.call("fx_pid", json!({}));
    // Three crashes: the child's last stderr line races its exit, and the error must carry it
    // every time (a busy machine once lost it when the exit was seen first).
    for crash in 0..3 {
        let (result, _) = serving.call("fx_crash", json!({}));
        assert!(is_error(&result), "crash {crash}: {result}");
        let text = text_of(&result);
        assert!(
            text.contains("exited (exit status: 3)"),
            "crash {crash}: {text}"
        );
        assert!(
            text.contains("fixture: crashing in the middle of a call"),
            "crash {crash}: {text}"
        );
        let (after, _) = serving.call("fx_pid", json!({}));
        assert!(!is_error(&after), "{after}");
        assert_ne!(text_of(&before), text_of(&after), "a new process answered");
        before = after;
    }
    let (echo, _) = serving.call("fx_echo", json!({"text": "back"}));
    assert!(text_of(&echo).contains("echo: back"));
}

/// Out-of-order replies, interleaved notifications and non-JSON lines share one server (its
/// start is the cost of each case).
#[test]
fn replies_out_of_order_interleaved_notifications_and_non_json_lines_leave_each_call_its_right_reply()
 {
    let setup = Setup::new();
    let mut serving = setup.serve("gateway");
    for (tool, expected) in [
        ("fx_out_of_order", "the right reply"),
        ("fx_notify", "after 100 notifications"),
        ("fx_garbage", "after garbage"),
    ] {
        let (result, _) = serving.call(tool, json!({}));
        assert!(!is_error(&result), "{tool}: {result}");
        let text = text_of(&result);
        assert!(
            text.contains(expected) && !text.contains("never made"),
            "{tool}: {text}"
        );
    }
}

#[test]
fn a_server_that_floods_its_output_times_out_with_memory_bounded_and_blocks_nothing_else() {
    let setup = Setup::new();
    let mut serving = setup.serve_impatient();
    serving.warm_up();
    let (result, _) = serving.call("fx_flood", json!({}));
    assert!(is_error(&result), "{result}");
    assert!(
        text_of(&result).contains("did not answer within 2.5 s (the call was cancelled)"),
        "{result}"
    );
    let rss = serving.rss_kib();
    eprintln!("flood: serve's RSS {rss} KiB");
    assert!(rss < 200 * 1024, "{rss} KiB");
    serving.assert_still_answers();
}

#[test]
fn a_100_mb_line_is_cut_at_the_bound_and_fails_the_call_cleanly() {
    let setup = Setup::new();
    let mut serving = setup.serve("gateway");
    let (result, _) = serving.call("fx_huge", json!({}));
    assert!(is_error(&result), "{result}");
    assert!(
        text_of(&result).contains("a line longer than 4194304 bytes"),
        "{result}"
    );
    let rss = serving.rss_kib();
    eprintln!("100 MB line: serve's RSS {rss} KiB");
    assert!(rss < 100 * 1024, "{rss} KiB");
    let (echo, _) = serving.call("fx_echo", json!({"text": "after"}));
    assert!(text_of(&echo).contains("echo: after"), "{echo}");
}

#[test]
fn a_sampling_request_from_the_server_is_refused_with_a_clear_error() {
    let setup = Setup::new();
    let mut serving = setup.serve("gateway");
    let (result, _) = serving.call("fx_sample", json!({}));
    assert!(!is_error(&result), "{result}");
    let text = text_of(&result);
    assert!(text.contains("-32601"), "{text}");
    assert!(
        text.contains("does not serve `sampling/createMessage`"),
        "{text}"
    );
}

#[test]
fn a_result_is_marked_as_third_party_and_its_secrets_redacted() {
    let setup = Setup::new();
    let mut serving = setup.serve("gateway");
    let (result, _) = serving.call("fx_secret", json!({}));
    let whole = result.to_string();
    assert!(!whole.contains(TOKEN), "{whole}");
    assert!(text_of(&result).starts_with("third-party data from MCP server `fx`"));
    assert!(text_of(&result).contains("[redacted: "), "{result}");
    assert!(
        result["structuredContent"]["token"]
            .as_str()
            .unwrap()
            .starts_with("[redacted: ")
    );
    assert_eq!(result["structuredContent"]["n"], 1);
    assert_eq!(
        result["_meta"]["ferry/thirdParty"],
        json!({"server": "fx", "redacted": true, "truncated": false})
    );
}

#[test]
fn a_child_sees_no_secret_shaped_variable_unless_its_entry_names_it() {
    let setup = Setup::new();
    let mut command = setup.ferry(&["mcp", "serve", "--project", PROJECT, "--tools", "fx"]);
    command
        .env("GITHUB_TOKEN", "x")
        .env("SOME_SECRET", "x")
        .env("DB_PASSWORD", "x")
        .env("AWS_CREDENTIALS", "x")
        .env("MY_API_KEY", "x")
        .env("PLAIN_SETTING", "x");
    let mut serving = Serving::start(command);
    let (result, _) = serving.call("fx_env", json!({}));
    let text = text_of(&result);
    let names: Vec<&str> = text.lines().last().unwrap().split(' ').collect();
    assert!(
        names.contains(&"PLAIN_SETTING") && names.contains(&"PATH"),
        "{names:?}"
    );
    assert!(names.contains(&"MY_API_KEY"), "named by --env: {names:?}");
    for secret in [
        "GITHUB_TOKEN",
        "SOME_SECRET",
        "DB_PASSWORD",
        "AWS_CREDENTIALS",
        "FERRYMAN_MCP_TIMEOUT_SECS",
    ] {
        let kept = names.contains(&secret);
        assert_eq!(
            kept,
            secret == "FERRYMAN_MCP_TIMEOUT_SECS",
            "{secret}: {names:?}"
        );
    }
}

/// As an app that leaks descriptors to its servers would: `serve` gets one this process opened
/// without close-on-exec, and its child must not.
#[test]
fn a_child_inherits_no_descriptor_beyond_stdio_not_even_one_serve_s_parent_leaked() {
    let setup = Setup::new();
    let leaked = std::fs::File::open(FIXTURE).unwrap();
    let flags = rustix::io::fcntl_getfd(&leaked).unwrap();
    rustix::io::fcntl_setfd(&leaked, flags - rustix::io::FdFlags::CLOEXEC).unwrap();
    let leaked_fd = std::os::fd::AsRawFd::as_raw_fd(&leaked);
    let mut serving = setup.serve("gateway");
    let serve_fds = std::fs::read_dir(format!("/proc/{}/fd", serving.child.id()))
        .unwrap()
        .map(|entry| entry.unwrap().file_name().into_string().unwrap())
        .collect::<Vec<_>>();
    assert!(
        serve_fds.contains(&leaked_fd.to_string()),
        "serve itself inherited it, as a leaky parent makes it: {serve_fds:?}"
    );
    // Open the channel first: the server then holds its database, logs and watches too.
    serving.call("ferry_catchup", json!({}));
    let (result, _) = serving.call("fx_fds", json!({}));
    let text = text_of(&result);
    let fds: Vec<u32> = text
        .lines()
        .last()
        .unwrap()
        .split(' ')
        .map(|fd| fd.parse().unwrap())
        .collect();
    // Stdio and the listing's own handle on /proc/self/fd (the lowest free number): nothing
    // `ferry` opened, nothing its parent leaked to it.
    assert_eq!(fds, [0, 1, 2, 3], "{text}");
    drop(leaked);
}

#[test]
fn children_are_reaped_when_serve_ends_and_killed_when_it_is_killed() {
    let setup = Setup::new();
    let mut serving = setup.serve("gateway");
    let (pid, _) = serving.call("fx_pid", json!({}));
    let pid: u32 = text_of(&pid).lines().last().unwrap().parse().unwrap();
    assert!(alive(pid));
    assert!(serving.finish());
    assert!(
        gone_within(pid, Duration::from_secs(2)),
        "after end of input"
    );

    let mut serving = setup.serve("gateway");
    let (pid, _) = serving.call("fx_pid", json!({}));
    let pid: u32 = text_of(&pid).lines().last().unwrap().parse().unwrap();
    Command::new("kill")
        .args(["-9", &serving.child.id().to_string()])
        .status()
        .unwrap();
    assert!(
        gone_within(pid, Duration::from_secs(2)),
        "after SIGKILL of serve"
    );
}

#[test]
fn a_name_that_collides_or_is_badly_formed_is_refused_at_add() {
    let setup = Setup::new();
    for (name, why) in [
        ("ferry", "would shadow the first-party tool `ferry_"),
        ("list", "would shadow the first-party tool `list_"),
        ("discover", "would shadow the first-party tool `discover`"),
        ("core", "is the name of a tool group"),
        ("gateway", "is the name of a tool group"),
        ("legacy", "is the name of a tool group"),
        ("fx", "is configured already"),
        ("a_b", "is not a server name"),
        ("Upper", "is not a server name"),
    ] {
        let out = setup
            .ferry(&[
                "mcp",
                "add",
                name,
                "--project",
                PROJECT,
                "--",
                "python3",
                FIXTURE,
            ])
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            !out.status.success() && stderr.contains(why),
            "{name}: {stderr}"
        );
    }
}

#[test]
fn a_hand_edited_configuration_that_collides_is_refused_at_start() {
    let setup = Setup::new();
    let path: &Path = &setup
        .home
        .path()
        .join("projects")
        .join(PROJECT)
        .join("gateway.json");
    let text = std::fs::read_to_string(path)
        .unwrap()
        .replace("\"fx\"", "\"ferry\"");
    std::fs::write(path, text).unwrap();
    let out = setup
        .ferry(&["mcp", "serve", "--project", PROJECT, "--tools", "gateway"])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{stderr}");
    assert!(
        stderr.contains("would shadow the first-party tool `ferry_"),
        "{stderr}"
    );
}

#[test]
fn the_cli_lists_calls_and_removes_a_server() {
    let setup = Setup::new();
    let servers = setup
        .ferry(&["mcp", "servers", "--project", PROJECT])
        .output()
        .unwrap();
    assert!(String::from_utf8_lossy(&servers.stdout).starts_with("fx: 15 tools: python3 "));
    let list = setup
        .ferry(&["mcp", "list", "--project", PROJECT])
        .output()
        .unwrap();
    assert!(list.status.success());
    assert!(String::from_utf8_lossy(&list.stdout).contains("  fx_echo: the echo fixture"));
    let call = setup
        .ferry(&[
            "mcp",
            "call",
            "fx",
            "echo",
            "--project",
            PROJECT,
            "--args",
            r#"{"text":"cli"}"#,
            "--json",
        ])
        .output()
        .unwrap();
    let json: Value = serde_json::from_slice(&call.stdout).unwrap();
    assert_eq!(json["isError"], false);
    assert_eq!(json["content"][1], "echo: cli");
    assert_eq!(json["_meta"]["ferry/thirdParty"]["server"], "fx");
    for (args, why) in [
        (r#"{"text":"#, "--args is not JSON"),
        ("[1]", "--args must be a JSON object"),
    ] {
        let out = setup
            .ferry(&[
                "mcp",
                "call",
                "fx",
                "echo",
                "--project",
                PROJECT,
                "--args",
                args,
            ])
            .output()
            .unwrap();
        assert!(String::from_utf8_lossy(&out.stderr).contains(why), "{args}");
    }
    let removed = setup
        .ferry(&["mcp", "remove", "fx", "--project", PROJECT])
        .output()
        .unwrap();
    assert!(removed.status.success());
    let again = setup
        .ferry(&["mcp", "remove", "fx", "--project", PROJECT])
        .output()
        .unwrap();
    assert!(String::from_utf8_lossy(&again.stderr).contains("no MCP server named `fx`"));
    let out = setup
        .ferry(&["mcp", "serve", "--project", PROJECT, "--tools", "gateway"])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(String::from_utf8_lossy(&out.stderr).contains("no MCP servers are configured"));
}

/// The real `@modelcontextprotocol/server-everything`, installed by
/// `.ci/install-gateway-fixture` into the folder `FERRY_GATEWAY_FIXTURE_DIR` names.
#[test]
fn the_reference_server_everything_is_served_and_its_echo_called_through_serve() {
    let Some(dir) = std::env::var_os("FERRY_GATEWAY_FIXTURE_DIR") else {
        eprintln!(
            "skipped: FERRY_GATEWAY_FIXTURE_DIR is unset (run .ci/install-gateway-fixture DIR and point it at DIR)"
        );
        return;
    };
    let index = PathBuf::from(dir)
        .join("node_modules/@modelcontextprotocol/server-everything/dist/index.js");
    assert!(
        index.exists(),
        "{} is missing: run .ci/install-gateway-fixture",
        index.display()
    );
    let home = tempfile::tempdir().unwrap();
    let ferry = |args: &[&str]| {
        let mut command = Command::new(FERRY);
        command.env("FERRY_HOME", home.path()).args(args);
        command
    };
    let index = index.to_str().unwrap();
    let added = ferry(&[
        "mcp",
        "add",
        "everything",
        "--project",
        PROJECT,
        "--",
        "node",
        index,
        "stdio",
    ])
    .output()
    .unwrap();
    assert!(
        added.status.success(),
        "{}",
        String::from_utf8_lossy(&added.stderr)
    );
    eprintln!("{}", String::from_utf8_lossy(&added.stdout));
    let mut serving = Serving::start(ferry(&[
        "mcp",
        "serve",
        "--project",
        PROJECT,
        "--tools",
        "gateway",
    ]));
    let (list, _) = serving.request("tools/list", json!({}));
    let names: Vec<&str> = list["tools"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|tool| tool["name"].as_str())
        .filter(|name| name.starts_with("everything_"))
        .collect();
    eprintln!("served: {names:?}");
    assert!(
        names.contains(&"everything_echo") && names.len() > 5,
        "{names:?}"
    );
    let (result, took) = serving.call("everything_echo", json!({"message": "hello from ferry"}));
    eprintln!("everything_echo: {took:?}: {result}");
    assert!(!is_error(&result), "{result}");
    assert!(
        text_of(&result).contains("Echo: hello from ferry"),
        "{result}"
    );
    assert_eq!(result["_meta"]["ferry/thirdParty"]["server"], "everything");
    assert!(serving.finish());
}

#[test]
fn a_client_that_floods_one_server_with_calls_gets_those_beyond_its_queue_refused_at_once() {
    let setup = Setup::new();
    let mut serving = setup.serve("gateway");
    serving.warm_up();
    let running = serving.send_call("fx_wait_cancel", json!({}));
    await_file(&PathBuf::from(format!(
        "{}.waiting",
        setup.mode_file().display()
    )));
    // Eight wait behind the running call; the ninth is refused.
    let queued: Vec<u64> = (0..9)
        .map(|n| serving.send_call("fx_echo", json!({"text": format!("queued {n}")})))
        .collect();
    let ping = serving.send_request("ping", json!({}));
    let answers = serving.answers_until(ping);
    assert_eq!(ids(&answers), [json!(queued[8]), json!(ping)]);
    let refused = &answers[0]["result"];
    assert!(is_error(refused), "{refused}");
    assert!(
        text_of(refused).contains("8 calls wait for it already"),
        "{refused}"
    );
    // Once the running call is cancelled, the eight queued are answered, in order.
    serving.cancel(running);
    let answers = serving.answers_until(queued[7]);
    let expected: Vec<Value> = queued[..8].iter().map(|id| json!(id)).collect();
    assert_eq!(ids(&answers), expected);
    for (n, answer) in answers.iter().enumerate() {
        assert!(
            text_of(&answer["result"]).contains(&format!("echo: queued {n}")),
            "{answer}"
        );
    }
}

#[test]
fn at_end_of_input_serve_answers_a_gateway_call_still_running_before_it_exits() {
    let setup = Setup::new();
    let mut serving = setup.serve("gateway");
    let id = serving.send_call("fx_echo", json!({"text": "last words"}));
    drop(serving.stdin.take());
    let answers = serving.answers_until(id);
    assert_eq!(ids(&answers), [json!(id)]);
    assert!(text_of(&answers[0]["result"]).contains("echo: last words"));
    assert!(serving.finish());
}

/// One row of the must-show table: the case, what the gateway answered, how long it took.
fn row(case: &str, result: &Value, took: Duration, extra: &str) {
    let text = text_of(result).replace('\n', " ");
    let text: String = text.chars().take(110).collect();
    let kind = if is_error(result) { "isError" } else { "ok" };
    eprintln!(
        "| {case} | {kind}: {text}{extra} | {:.2} s |",
        took.as_secs_f64()
    );
}

/// Prints the issue's must-show table (timeout lowered to 2.5 s): each case, what the gateway
/// answered and how long it took, and how long our own tools took while a call hung. Run
/// by hand: `cargo nextest run -p ferry-mcp-bin --run-ignored only -E
/// 'test(must_show_table_figures)' --no-capture`.
#[test]
#[ignore = "prints figures; run by hand"]
fn must_show_table_figures() {
    eprintln!("| case | answer | took |\n|---|---|---|");
    let hung = Setup::new();
    std::fs::write(hung.mode_file(), "hang-at-start").unwrap();
    let mut serving = hung.serve_impatient();
    let (result, took) = serving.call("fx_echo", json!({"text": "hi"}));
    row("hangs at start", &result, took, "");
    drop(serving);

    let setup = Setup::new();
    setup.add("fy");
    let mut serving = setup.serve_impatient_with("admin,gateway");
    serving.warm_up();
    let (_, _) = serving.call("fy_echo", json!({"text": "warm"}));
    let started = Instant::now();
    let hang = serving.send_call("fx_hang", json!({}));
    let (_, ping_took) = serving.request("ping", json!({}));
    let (_, list_took) = serving.request("tools/list", json!({}));
    let (status, status_took) = serving.call("ferry_status", json!({}));
    let (other, other_took) = serving.call("fy_echo", json!({"text": "meanwhile"}));
    let answer = serving.answers_until(hang).pop().unwrap();
    row("hangs on a call", &answer["result"], started.elapsed(), "");
    eprintln!(
        "| meanwhile: ping, tools/list, ferry_status, another server's call | ok, ok, {}, {} | {:.3} s, {:.3} s, {:.3} s, {:.3} s |",
        if is_error(&status) {
            "isError (no channel)"
        } else {
            "ok"
        },
        if is_error(&other) { "isError" } else { "ok" },
        ping_took.as_secs_f64(),
        list_took.as_secs_f64(),
        status_took.as_secs_f64(),
        other_took.as_secs_f64()
    );
    drop(serving);

    let mut serving = setup.serve_impatient();
    serving.warm_up();
    for (case, tool) in [
        ("crashes mid-call", "fx_crash"),
        ("answers out of order", "fx_out_of_order"),
        ("100 notifications interleaved", "fx_notify"),
        ("non-JSON on stdout", "fx_garbage"),
        ("asks for sampling", "fx_sample"),
    ] {
        serving.warm_up();
        let (result, took) = serving.call(tool, json!({}));
        row(case, &result, took, "");
    }
    let (result, took) = serving.call("fx_huge", json!({}));
    row(
        "a 100 MB line",
        &result,
        took,
        &format!("; serve's RSS {:.1} MB", serving.rss_kib() as f64 / 1024.0),
    );
    serving.warm_up();
    let (result, took) = serving.call("fx_flood", json!({}));
    row(
        "floods its output",
        &result,
        took,
        &format!("; serve's RSS {:.1} MB", serving.rss_kib() as f64 / 1024.0),
    );
    drop(serving);

    let mut serving = setup.serve("gateway");
    serving.warm_up();
    let waiting = serving.send_call("fx_wait_cancel", json!({}));
    await_file(&PathBuf::from(format!(
        "{}.waiting",
        setup.mode_file().display()
    )));
    let started = Instant::now();
    serving.cancel(waiting);
    let (seen, took) = serving.call("fx_cancelled", json!({}));
    row(
        "our client cancels (until the server's next call answers; the cancelled call gets no answer)",
        &seen,
        started.elapsed().max(took),
        "",
    );
}

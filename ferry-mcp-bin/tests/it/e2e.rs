//! The whole fleet flow against the real binary (issue 10, item 5): the human sets up a project
//! with the commands, then three agents, each a long-lived `ferry mcp serve` child over real
//! pipes, work an order from claim to review, talk, ask the human (who answers with the CLI
//! while the servers keep running), and hand the primary's role on when the primary goes
//! silent. Every `tools/call` result is checked against the tool's outputSchema.
//!
//! `fleet` is the setup the real-client versions of this flow (`clients.rs`) share.

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError};
use std::thread;
use std::time::{Duration, Instant};

use ferry_mcp_core::registry::Surface;
use ferry_mcp_testkit::session::{check_call_result, stateless_meta};
use serde_json::{Value, json};

use super::admin::{join_args, project, run_ok, set_args};

const FERRY: &str = env!("CARGO_BIN_EXE_ferry");
/// The project `admin::project` creates.
pub(crate) const PROJECT: &str = "demo";
/// How long one answer may take before the server counts as stuck (generous: the machine may
/// be loaded; an answer normally takes milliseconds).
const ANSWER_TIMEOUT: Duration = Duration::from_secs(60);
/// How long the primary may take to go silent after its server stopped (the quiet period is
/// 1 s, so it is silent 2 s after it was last heard from).
const SILENCE_TIMEOUT: Duration = Duration::from_secs(60);
/// How often the orchestrator asks whether the primary has gone silent.
const POLL_EVERY: Duration = Duration::from_millis(100);

/// The agents, their levels, and the orders the human issues.
pub(crate) const AGENTS: [(&str, &str); 3] = [
    ("lead", "orchestrator"),
    ("dev", "member"),
    ("ops2", "orchestrator"),
];
pub(crate) const PARSER_TITLE: &str = "Write the parser";
pub(crate) const DOCS_TITLE: &str = "Update the docs";
pub(crate) const OBJECTIVE: &str = "Ship the parser this week";

/// A project set up by the human for the flow.
pub(crate) struct Fleet {
    /// The state folder (`FERRY_HOME`).
    pub(crate) home: PathBuf,
    /// The order that needs a review.
    pub(crate) parser: String,
    /// An order nobody touches (it must stay out of a `since` catch-up).
    pub(crate) docs: String,
}

/// `ferry ARGS --project demo` as the human (the master) or `--as` an agent; its stdout.
pub(crate) fn ferry_cli(home: &Path, args: &[&str]) -> String {
    let mut all = args.to_vec();
    all.extend(["--project", PROJECT]);
    run_ok(home, &all)
}

/// Project `demo` with `lead` (orchestrator, primary, with a brief), `dev` (member) and `ops2`
/// (orchestrator), and two orders issued by the human, the first with `--review`.
pub(crate) fn fleet(dir: &tempfile::TempDir) -> Fleet {
    let home = project(dir);
    for (name, level) in AGENTS {
        run_ok(&home, &join_args(name));
        run_ok(&home, &set_args(name, level));
    }
    let took = ferry_cli(&home, &["primary", "takeover", "--as", "lead"]);
    assert_eq!(took.trim_end(), "you are primary", "{took}");
    ferry_cli(
        &home,
        &[
            "brief",
            "set",
            "--as",
            "lead",
            "--objective",
            OBJECTIVE,
            "--constraint",
            "no new dependencies",
        ],
    );
    let issue = |args: &[&str]| {
        let mut all = vec!["order", "issue"];
        all.extend(args);
        all.push("--json");
        let issued: Value = serde_json::from_str(&ferry_cli(&home, &all)).unwrap();
        issued["id"].as_str().unwrap().to_owned()
    };
    let parser = issue(&[PARSER_TITLE, "--review"]);
    let docs = issue(&[DOCS_TITLE]);
    Fleet { home, parser, docs }
}

/// How an agent's client speaks MCP.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Era {
    /// `initialize` with this version, then `notifications/initialized`.
    Initialize(&'static str),
    /// 2026-07-28: `server/discover`, then `_meta` on every request.
    Stateless,
}

/// One agent: `ferry mcp serve --as NAME --project demo` over real pipes, and a scripted client
/// that writes one request line and reads lines until the answer with its id.
struct Agent {
    name: &'static str,
    era: Era,
    child: Child,
    stdin: Option<ChildStdin>,
    lines: Receiver<String>,
    next_id: u64,
    surface: Surface,
}

impl Agent {
    fn start(home: &Path, name: &'static str, era: Era) -> Self {
        let core = Surface::build(&[&ferry_mcp_tools::CORE], false).unwrap();
        Self::start_serving(home, name, era, &["--as", name], core)
    }

    /// `ferry mcp serve --project demo ARGS`, whose results are checked against `surface`.
    fn start_serving(
        home: &Path,
        name: &'static str,
        era: Era,
        args: &[&str],
        surface: Surface,
    ) -> Self {
        let mut child = Command::new(FERRY)
            .env("FERRY_HOME", home)
            .env_remove("XDG_STATE_HOME")
            .env_remove("XDG_RUNTIME_DIR")
            .args(["mcp", "serve", "--project", PROJECT])
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .unwrap();
        let stdout = BufReader::new(child.stdout.take().unwrap());
        let (sender, lines) = mpsc::channel();
        thread::spawn(move || {
            for line in stdout.lines() {
                let Ok(line) = line else { break };
                if sender.send(line).is_err() {
                    break;
                }
            }
        });
        let stdin = child.stdin.take();
        Self {
            name,
            era,
            child,
            stdin,
            lines,
            next_id: 1,
            surface,
        }
    }

    fn send_line(&mut self, line: &str) {
        let stdin = self.stdin.as_mut().expect("the server is running");
        stdin.write_all(line.as_bytes()).unwrap();
        stdin.write_all(b"\n").unwrap();
        stdin.flush().unwrap();
    }

    /// Sends a request and returns the whole answer message (notifications are skipped).
    fn request(&mut self, method: &str, mut params: Value) -> Value {
        let id = self.next_id;
        self.next_id += 1;
        if self.era == Era::Stateless {
            params["_meta"] = stateless_meta();
        }
        let request = json!({ "jsonrpc": "2.0", "id": id, "method": method, "params": params });
        self.send_line(&request.to_string());
        loop {
            let line = match self.lines.recv_timeout(ANSWER_TIMEOUT) {
                Ok(line) => line,
                Err(RecvTimeoutError::Timeout) => panic!(
                    "{}: no answer to {method} (id {id}) within {ANSWER_TIMEOUT:?}",
                    self.name
                ),
                Err(RecvTimeoutError::Disconnected) => {
                    panic!(
                        "{}: the server closed stdout before answering {method}",
                        self.name
                    )
                }
            };
            let message: Value = serde_json::from_str(&line).unwrap_or_else(|err| {
                panic!("{}: stdout line is not JSON ({err}): {line}", self.name)
            });
            assert_eq!(message["jsonrpc"], "2.0", "{}: {message}", self.name);
            match message.get("id") {
                Some(answered) if *answered == json!(id) => return message,
                Some(_) => panic!("{}: an answer to another request: {message}", self.name),
                None => eprintln!("{}: notification {message}", self.name),
            }
        }
    }

    /// The result of a request that must succeed.
    fn result(&mut self, method: &str, params: Value) -> Value {
        let answer = self.request(method, params);
        assert!(
            answer.get("error").is_none(),
            "{}: {method} was answered with an error: {answer}",
            self.name
        );
        let result = answer["result"].clone();
        if self.era == Era::Stateless {
            assert_eq!(result["resultType"], "complete", "{}: {result}", self.name);
        }
        result
    }

    fn notify(&mut self, method: &str) {
        self.send_line(&json!({ "jsonrpc": "2.0", "method": method }).to_string());
    }

    /// The handshake of its era, then `tools/list`: the six core tools, each with the
    /// outputSchema this test checks results against.
    fn handshake(&mut self) {
        self.handshake_listing(&[
            "ferry_ask_human",
            "ferry_catchup",
            "ferry_join",
            "ferry_orders",
            "ferry_primary",
            "ferry_talk",
        ]);
    }

    /// The handshake of its era, then `tools/list`: exactly `served`, each with the
    /// outputSchema this test checks results against.
    fn handshake_listing(&mut self, served: &[&str]) {
        match self.era {
            Era::Initialize(version) => {
                let init = self.result(
                    "initialize",
                    json!({
                        "protocolVersion": version,
                        "capabilities": {},
                        "clientInfo": { "name": "ferry-e2e", "version": "0" },
                    }),
                );
                assert_eq!(init["protocolVersion"], version, "{init}");
                assert_eq!(init["serverInfo"]["name"], "ferry", "{init}");
                self.notify("notifications/initialized");
            }
            Era::Stateless => {
                let discover = self.result("server/discover", json!({}));
                let supported = discover["supportedVersions"].as_array().unwrap();
                assert!(supported.contains(&json!("2026-07-28")), "{discover}");
                assert!(discover["instructions"].is_string(), "{discover}");
            }
        }
        let list = self.result("tools/list", json!({}));
        assert!(list.get("nextCursor").is_none(), "one page: {list}");
        let tools = list["tools"].as_array().unwrap();
        let names: Vec<&str> = tools
            .iter()
            .map(|tool| tool["name"].as_str().unwrap())
            .collect();
        assert_eq!(names, served);
        for tool in tools {
            let name = tool["name"].as_str().unwrap();
            let ours = self.surface.find(name).unwrap().tool().definition();
            let schema: Value = serde_json::from_str(ours.output_schema.unwrap()).unwrap();
            assert_eq!(
                tool["outputSchema"], schema,
                "{name} serves another outputSchema"
            );
        }
    }

    /// A `tools/call` result, checked against the tool's outputSchema and the shaping rules.
    fn tool_result(&mut self, tool: &str, arguments: Value) -> Value {
        let result = self.result(
            "tools/call",
            json!({ "name": tool, "arguments": arguments }),
        );
        check_call_result(&self.surface, tool, &result);
        eprintln!(
            "{} {tool} {arguments} -> {}{} | {}",
            self.name,
            if result["isError"] == true {
                "ERROR "
            } else {
                ""
            },
            result["content"][0]["text"].as_str().unwrap_or_default(),
            result["structuredContent"]
        );
        result
    }

    /// A call that must succeed: its structuredContent.
    fn call(&mut self, tool: &str, arguments: Value) -> Value {
        let result = self.tool_result(tool, arguments.clone());
        assert_ne!(
            result["isError"], true,
            "{}: {tool} {arguments} failed: {result}",
            self.name
        );
        result["structuredContent"].clone()
    }

    /// A call the flow expects to be refused: the tool error's text.
    fn refused(&mut self, tool: &str, arguments: Value) -> String {
        let result = self.tool_result(tool, arguments.clone());
        assert_eq!(
            result["isError"], true,
            "{}: {tool} {arguments} was not refused: {result}",
            self.name
        );
        result["content"][0]["text"].as_str().unwrap().to_owned()
    }

    /// Closes stdin (the app quits) and waits for a clean exit.
    fn stop(&mut self) {
        drop(self.stdin.take());
        let deadline = Instant::now() + ANSWER_TIMEOUT;
        loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                assert!(status.success(), "{} exited with {status}", self.name);
                return;
            }
            assert!(
                Instant::now() < deadline,
                "{} did not exit after stdin closed",
                self.name
            );
            thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for Agent {
    fn drop(&mut self) {
        // A failed test must not leave its servers running.
        if matches!(self.child.try_wait(), Ok(None)) {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

fn strs(value: &Value, field: &str) -> Vec<String> {
    value
        .as_array()
        .unwrap_or_else(|| panic!("not an array: {value}"))
        .iter()
        .map(|item| item[field].as_str().unwrap().to_owned())
        .collect()
}

#[test]
fn two_agents_an_orchestrator_and_the_human_run_the_whole_fleet_flow() {
    let started = Instant::now();
    let dir = tempfile::tempdir().unwrap();
    let Fleet { home, parser, docs } = fleet(&dir);
    let mut dev = Agent::start(&home, "dev", Era::Initialize("2025-11-25"));
    let mut lead = Agent::start(&home, "lead", Era::Stateless);
    let mut ops2 = Agent::start(&home, "ops2", Era::Stateless);
    for agent in [&mut dev, &mut lead, &mut ops2] {
        agent.handshake();
    }

    // Join and catch up.
    for (agent, level) in [
        (&mut dev, "member"),
        (&mut lead, "orchestrator"),
        (&mut ops2, "orchestrator"),
    ] {
        let joined = agent.call("ferry_join", json!({}));
        assert_eq!(joined["agent"], agent.name, "{joined}");
        assert_eq!(joined["project"], PROJECT, "{joined}");
        assert_eq!(joined["level"], level, "{joined}");
        assert_eq!(joined["granted"], true, "{joined}");
        assert_eq!(joined["primary"]["name"], "lead", "{joined}");
        assert_eq!(joined["primary"]["alive"], true, "{joined}");
        assert_eq!(joined["next"], "ferry_catchup", "{joined}");
    }
    let first = dev.call("ferry_catchup", json!({}));
    assert_eq!(
        first["primary"],
        json!({ "name": "lead", "state": "alive" })
    );
    assert_eq!(first["brief"]["objective"], OBJECTIVE, "{first}");
    assert_eq!(strs(&first["open"], "id"), [parser.as_str(), docs.as_str()]);
    assert!(first.get("mine").is_none(), "{first}");
    let since = first["next"].as_str().unwrap().to_owned();
    let lead_digest = lead.call("ferry_catchup", json!({}));
    assert_eq!(lead_digest["brief"]["objective"], OBJECTIVE);

    // dev works the order that needs a review.
    let claimed = dev.call("ferry_orders", json!({ "action": "claim", "id": parser }));
    assert_eq!(claimed["outcome"], "claimed", "{claimed}");
    let progress = dev.call(
        "ferry_orders",
        json!({ "action": "progress", "id": parser, "note": "lexer done, grammar next" }),
    );
    assert_eq!(progress["state"], "in_progress", "{progress}");
    let submitted = dev.call(
        "ferry_orders",
        json!({ "action": "submit", "id": parser, "ref": "dev/parser", "note": "parser with tests" }),
    );
    assert_eq!(submitted["state"], "submitted", "{submitted}");
    let own_review = dev.refused(
        "ferry_orders",
        json!({ "action": "review", "id": parser, "verdict": "accept" }),
    );
    assert_eq!(
        own_review,
        "own_submission: dev submitted this revision and cannot review it"
    );

    // dev tells lead; lead reads it.
    let posted = dev.call(
        "ferry_talk",
        json!({ "action": "post", "to": "lead", "text": "parser submitted as dev/parser" }),
    );
    let message = posted["id"].as_str().unwrap().to_owned();
    let read = lead.call("ferry_talk", json!({ "action": "read" }));
    assert_eq!(
        read["messages"],
        json!([{ "id": message, "from": "dev", "to": "lead", "text": "parser submitted as dev/parser" }])
    );

    // dev asks the human, who answers with the CLI while the servers run.
    let raised = dev.call(
        "ferry_ask_human",
        json!({
            "action": "raise",
            "title": "Publish the parser crate?",
            "recommendation": "yes, as 0.1.0",
            "reasoning": "the review is under way and the API is small",
        }),
    );
    assert_eq!(raised["state"], "pending", "{raised}");
    let ask = raised["id"].as_str().unwrap().to_owned();
    let listed: Value =
        serde_json::from_str(&ferry_cli(&home, &["ask", "list", "--pending", "--json"])).unwrap();
    assert_eq!(strs(&listed["asks"], "id"), [ask.as_str()], "{listed}");
    assert_eq!(listed["asks"][0]["by"], "dev", "{listed}");
    let approved = ferry_cli(&home, &["ask", "approve", &ask, "--note", "go ahead"]);
    assert_eq!(approved.trim_end(), format!("ask {ask} is approved"));
    let status = dev.call("ferry_ask_human", json!({ "action": "status", "id": ask }));
    assert_eq!(
        status,
        json!({ "id": ask, "state": "approved", "note": "go ahead" })
    );

    // ops2, an orchestrator that is not the author, reviews and accepts.
    let ops2_digest = ops2.call("ferry_catchup", json!({}));
    let waiting = format!("{parser} is submitted: review it");
    assert!(
        ops2_digest["waiting_on_you"]
            .as_array()
            .unwrap()
            .contains(&json!(waiting)),
        "{ops2_digest}"
    );
    let reviewed = ops2.call(
        "ferry_orders",
        json!({ "action": "review", "id": parser, "verdict": "accept" }),
    );
    assert_eq!(reviewed["state"], "accepted", "{reviewed}");

    // The primary is alive: no takeover yet.
    let early = ops2.refused("ferry_primary", json!({ "action": "takeover" }));
    assert!(early.starts_with("primary_alive: "), "{early}");

    // The human shortens the quiet period; lead's app quits; ops2 waits until lead is silent.
    ferry_cli(&home, &["primary", "quiet-period", "8s"]);
    lead.stop();
    let waited = Instant::now();
    let silent = loop {
        let status = ops2.call("ferry_primary", json!({ "action": "status" }));
        assert_eq!(status["primary"], "lead", "{status}");
        if status["state"] == "silent" {
            break status;
        }
        assert!(
            waited.elapsed() < SILENCE_TIMEOUT,
            "lead is still not silent: {status}"
        );
        thread::sleep(POLL_EVERY);
    };
    let silence_wait = waited.elapsed();
    assert_eq!(
        silent["rule"], "lead is silent: you may take over (action takeover)",
        "{silent}"
    );
    let took = ops2.call("ferry_primary", json!({ "action": "takeover" }));
    assert_eq!(took["outcome"], "took_over", "{took}");
    assert_eq!(took["primary"], "ops2", "{took}");

    // dev hears of it, and its receipt says lead read its message.
    let news = dev.call("ferry_talk", json!({ "action": "read" }));
    let messages = news["messages"].as_array().unwrap();
    assert_eq!(messages.len(), 1, "{news}");
    assert_eq!(messages[0]["from"], "ops2", "{news}");
    assert_eq!(messages[0]["to"], "all", "{news}");
    assert_eq!(messages[0]["text"], "taking over from lead", "{news}");
    assert_eq!(
        news["sent"],
        json!([{ "id": message, "read": ["lead"], "unread": [] }]),
        "{news}"
    );

    // dev's catch-up from its first cursor holds only the news.
    let since_digest = dev.call("ferry_catchup", json!({ "since": since }));
    assert_eq!(since_digest["primary"]["name"], "ops2", "{since_digest}");
    assert_eq!(since_digest["primary"]["state"], "alive", "{since_digest}");
    assert_eq!(strs(&since_digest["mine"], "id"), [parser.as_str()]);
    assert_eq!(
        since_digest["mine"][0]["state"], "accepted",
        "{since_digest}"
    );
    assert_eq!(
        since_digest["asks"],
        json!([{ "id": ask, "state": "approved" }])
    );
    for unchanged in ["brief", "decisions", "open", "waiting_on_you", "reset"] {
        assert!(
            since_digest.get(unchanged).is_none(),
            "`{unchanged}` did not change but is in {since_digest}"
        );
    }
    assert_ne!(since_digest["next"], since.as_str());

    dev.stop();
    ops2.stop();
    eprintln!(
        "the whole fleet flow took {:.1} s (of which {:.1} s waiting for lead to go silent)",
        started.elapsed().as_secs_f64(),
        silence_wait.as_secs_f64()
    );
}

/// What Codex 0.169 shows its model of a result (the reference's measurement): the
/// structuredContent alone, with no text block and no `resource_link` item.
fn as_codex_shows_it(agent: &mut Agent, tool: &str, arguments: Value) -> Value {
    let result = agent.tool_result(tool, arguments.clone());
    assert_ne!(result["isError"], true, "{tool} {arguments}: {result}");
    result["structuredContent"].clone()
}

#[test]
fn an_agent_shown_only_structured_content_finds_its_order_s_text_and_every_next_step() {
    let dir = tempfile::tempdir().unwrap();
    let Fleet { home, parser, .. } = fleet(&dir);
    // Codex asks for 2025-06-18.
    let mut dev = Agent::start(&home, "dev", Era::Initialize("2025-06-18"));
    dev.handshake();
    let joined = as_codex_shows_it(&mut dev, "ferry_join", json!({}));
    assert_eq!(joined["next"], "ferry_catchup", "{joined}");

    // The order's text: its link is in show's structuredContent, and it reads.
    let shown = as_codex_shows_it(
        &mut dev,
        "ferry_orders",
        json!({ "action": "show", "id": parser }),
    );
    let link = format!("ferry://{PROJECT}/order/{parser}");
    assert_eq!(shown["order"]["link"], link.as_str(), "{shown}");
    let body = dev.result("resources/read", json!({ "uri": link }));
    assert!(
        body["contents"][0]["text"]
            .as_str()
            .is_some_and(|text| text.contains(PARSER_TITLE)),
        "{body}"
    );

    // What to do after a claim, and where the order is in the catch-up.
    let claimed = as_codex_shows_it(
        &mut dev,
        "ferry_orders",
        json!({ "action": "claim", "id": parser }),
    );
    assert_eq!(
        claimed["hint"], "work in the repo, report with progress, then submit a ref",
        "{claimed}"
    );
    let digest = as_codex_shows_it(&mut dev, "ferry_catchup", json!({}));
    assert_eq!(digest["mine"][0]["id"], parser.as_str(), "{digest}");
    assert_eq!(digest["mine"][0]["link"], link.as_str(), "{digest}");

    // A hand-in says how to submit it; an ask says how to hear back.
    let handed = as_codex_shows_it(
        &mut dev,
        "ferry_orders",
        json!({ "action": "handin", "id": parser, "ref": "dev/parser", "note": "lexer" }),
    );
    let handin = handed["handin"].as_str().unwrap();
    assert_eq!(
        handed["hint"],
        format!("submit with ref {handin} when the order is done").as_str(),
        "{handed}"
    );
    let raised = as_codex_shows_it(
        &mut dev,
        "ferry_ask_human",
        json!({ "action": "raise", "title": "Merge now?", "recommendation": "yes" }),
    );
    let ask = raised["id"].as_str().unwrap();
    assert_eq!(
        raised["hint"],
        format!("check back with status id {ask}").as_str(),
        "{raised}"
    );
    dev.stop();
}

/// Every file under `root` and its bytes.
fn every_byte(root: &Path) -> std::collections::BTreeMap<PathBuf, Vec<u8>> {
    let mut files = std::collections::BTreeMap::new();
    let mut dirs = vec![root.to_path_buf()];
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let entry = entry.unwrap();
            let path = entry.path();
            if entry.file_type().unwrap().is_dir() {
                files.insert(path.clone(), Vec::new());
                dirs.push(path);
            } else {
                files.insert(path.clone(), std::fs::read(&path).unwrap());
            }
        }
    }
    files
}

/// Arguments that make a valid read of each tool of the read-only surface.
fn a_read_of(tool: &str, order: &str) -> Value {
    match tool {
        "ferry_orders" => json!({ "action": "show", "id": order }),
        "ferry_talk" => json!({ "action": "read" }),
        "ferry_primary" | "ferry_ask_human" => json!({ "action": "status" }),
        "get_task" => json!({ "id": order }),
        "read_memory" => json!({ "file": "brief" }),
        _ => json!({}),
    }
}

#[test]
fn a_read_only_server_driven_through_every_tool_it_serves_changes_no_byte_of_the_channel_or_the_state_folder()
 {
    let dir = tempfile::tempdir().unwrap();
    let Fleet { home, parser, .. } = fleet(&dir);
    ferry_cli(
        &home,
        &[
            "talk",
            "post",
            "standup at 10",
            "--as",
            "lead",
            "--to",
            "dev",
        ],
    );
    // Presence is due every quarter of the quiet period: at 8 s, after 2 s of silence.
    ferry_cli(&home, &["primary", "quiet-period", "8s"]);
    // The state folder and the channel folder are both under `dir`.
    let before = every_byte(dir.path());
    let surface = Surface::build(ferry_mcp_tools::READ_ONLY_DEFAULT, true).unwrap();
    let read_only: Vec<&str> = surface
        .tools()
        .iter()
        .map(|tool| tool.definition().name)
        .collect();
    assert_eq!(
        read_only,
        [
            "channel_status",
            "discover",
            "ferry_ask_human",
            "ferry_catchup",
            "ferry_join",
            "ferry_orders",
            "ferry_primary",
            "ferry_talk",
            "get_task",
            "list_engines",
            "list_learnings",
            "list_ledger",
            "list_tasks",
            "read_memory"
        ]
    );
    thread::sleep(Duration::from_millis(2_100));
    for args in [&["--as", "dev", "--read-only"][..], &[]] {
        let surface = Surface::build(ferry_mcp_tools::READ_ONLY_DEFAULT, true).unwrap();
        let mut dev =
            Agent::start_serving(&home, "dev", Era::Initialize("2025-06-18"), args, surface);
        dev.handshake_listing(&read_only);
        for tool in &read_only {
            let result = dev.tool_result(tool, a_read_of(tool, &parser));
            // Nobody has raised an ask, and without --as there is no inbox: those reads say
            // so (a tool error), and write nothing either.
            let refused = *tool == "ferry_ask_human" || (args.is_empty() && *tool == "ferry_talk");
            if !refused {
                assert_ne!(result["isError"], true, "{args:?} {tool}: {result}");
            }
        }
        // A second catch-up from the cursor, the whole messages, and an order's text.
        let digest = dev.call("ferry_catchup", json!({}));
        dev.call("ferry_catchup", json!({ "since": digest["next"] }));
        if !args.is_empty() {
            // Read again: the first was a peek, so the message is still there.
            let messages = dev.call("ferry_talk", json!({ "action": "read" }));
            assert_eq!(
                messages["messages"][0]["text"], "standup at 10",
                "{messages}"
            );
        }
        dev.call("ferry_orders", json!({ "action": "list" }));
        let link = format!("ferry://{PROJECT}/order/{parser}");
        dev.result("resources/read", json!({ "uri": link }));
        // A write is refused, and writes nothing either.
        let claim = dev.refused("ferry_orders", json!({ "action": "claim", "id": parser }));
        assert!(claim.contains("claim"), "{claim}");
        dev.stop();
        let after = every_byte(dir.path());
        let changed: Vec<&PathBuf> = after
            .iter()
            .filter(|(path, bytes)| before.get(*path) != Some(bytes))
            .map(|(path, _)| path)
            .chain(before.keys().filter(|path| !after.contains_key(*path)))
            .collect();
        assert!(changed.is_empty(), "{args:?} changed {changed:?}");
        assert_eq!(after, before, "{args:?}");
    }
}

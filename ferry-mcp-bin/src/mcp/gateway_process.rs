//! The process side of the gateway (ADR 0021): one external MCP server as a child process,
//! driven through the core's sans-IO client (`protocol::client`).
//!
//! Everything that can block is on a thread of its own or behind a deadline, so that a child
//! that hangs, floods, crashes or never reads holds only its own calls, and only until their
//! timeout: a reader thread splits its stdout into capped lines (a 100 MB line is cut at the cap
//! and fails its call at once, never held whole) and hands them on through a small bounded
//! queue; another keeps the last bytes of its stderr; a writer thread feeds its stdin. A call
//! waits on the queue with a deadline. A child that exited is started again by the next call.
//!
//! The child is started through `ferry mcp gateway-exec` (ours), which asks the kernel to kill
//! it when the thread that started it dies (in `serve`, the server's call thread, which lives
//! as long as the process: `gateway_calls.rs`), marks every descriptor it inherited beyond
//! stdio close-on-exec, and becomes the command, in a process group of its own that
//! [`Downstream::shutdown`] kills whole; its environment is the scrubbed one it is given.

use std::collections::VecDeque;
use std::ffi::OsString;
use std::io::{BufRead, BufReader, Read, Write};
use std::path::PathBuf;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender, SyncSender};
use std::sync::{Arc, Mutex, PoisonError};
use std::thread;
use std::time::{Duration, Instant};

use ferry_mcp_core::protocol::client::{Client, ClientError, Event, RemoteTool, Reply, RequestId};
use serde_json::{Map, Value};

use super::lines::Line;

/// The longest line read from a child; longer ones are cut and fail the call they answer.
pub const MAX_CHILD_LINE_BYTES: usize = 4 << 20;
/// Lines read ahead of a call at most: with the cap, at most ~16 MiB of a child's output is
/// held, however fast it writes.
const READ_AHEAD_LINES: usize = 4;
/// The end of a child's stderr that is kept, for error texts.
const STDERR_TAIL_BYTES: usize = 4096;
/// How long a stopped child's stderr is read on for its last words: the pipe closes as soon
/// as the killed process group is gone, unless something that escaped the group holds it.
const STDERR_DRAIN: Duration = Duration::from_millis(500);
/// How often a waiting call looks whether our client cancelled it, when the child is quiet.
const CANCEL_POLL: Duration = Duration::from_millis(50);
/// Lines of a child's that were ignored (not JSON, notifications) that are logged to our
/// stderr per start; the rest are only counted.
const LOGGED_IGNORED: usize = 3;

/// How long a child may take: to start and finish the handshake, and to answer a call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Timeouts {
    pub start: Duration,
    pub call: Duration,
}

impl Timeouts {
    pub const DEFAULT: Timeouts = Timeouts {
        start: Duration::from_secs(30),
        call: Duration::from_secs(120),
    };

    /// `FERRYMAN_MCP_TIMEOUT_SECS` (seconds, fractions allowed) replaces both; unset, the
    /// defaults.
    pub fn from_env() -> anyhow::Result<Self> {
        let Some(raw) = std::env::var_os("FERRYMAN_MCP_TIMEOUT_SECS") else {
            return Ok(Self::DEFAULT);
        };
        let raw = raw.to_string_lossy();
        match raw.trim().parse::<f64>() {
            Ok(secs) if secs.is_finite() && secs > 0.0 && secs <= 86_400.0 => {
                let each = Duration::from_secs_f64(secs);
                Ok(Self {
                    start: each,
                    call: each,
                })
            }
            _ => anyhow::bail!(
                "FERRYMAN_MCP_TIMEOUT_SECS is `{raw}`: give a number of seconds above 0, at most 86400"
            ),
        }
    }
}

/// How to start one external server.
#[derive(Debug, Clone)]
pub struct Launch {
    /// The server's name (for logs).
    pub name: String,
    pub command: String,
    pub args: Vec<String>,
    /// The child's whole environment (already scrubbed).
    pub env: Vec<(OsString, OsString)>,
    /// The `ferry` binary that execs the command (`ferry mcp gateway-exec`).
    pub ferry: PathBuf,
}

/// Why a request to an external server failed.
#[derive(Debug, thiserror::Error)]
pub enum DownstreamError {
    #[error("cannot start it: {0}")]
    Spawn(std::io::Error),
    #[error("it did not finish its start and handshake within {} s", secs(*.0))]
    StartTimeout(Duration),
    #[error("it did not answer within {} s (the call was cancelled)", secs(*.0))]
    CallTimeout(Duration),
    #[error("the client cancelled the call (cancelled downstream too)")]
    Cancelled,
    #[error("it exited ({0})")]
    Exited(String),
    #[error("{0}")]
    Client(#[from] ClientError),
}

fn secs(duration: Duration) -> String {
    let secs = duration.as_secs_f64();
    if secs.fract() == 0.0 {
        format!("{secs:.0}")
    } else {
        format!("{secs:.1}")
    }
}

/// One external server: its launch and, once started, its running child.
#[derive(Debug)]
pub struct Downstream {
    launch: Launch,
    timeouts: Timeouts,
    running: Option<Running>,
    /// The stderr tail of the last child, kept after it exits for the error text.
    stderr: Arc<Mutex<VecDeque<u8>>>,
}

#[derive(Debug)]
struct Running {
    child: Child,
    /// The thread keeping the stderr tail: a child that exited may have written its last
    /// words just before, so its end is awaited (briefly) before the tail is read.
    stderr_reader: thread::JoinHandle<()>,
    client: Client,
    lines: Receiver<Line>,
    to_child: Sender<String>,
    ignored: usize,
}

impl Downstream {
    pub fn new(launch: Launch, timeouts: Timeouts) -> Self {
        Self {
            launch,
            timeouts,
            running: None,
            stderr: Arc::default(),
        }
    }

    /// Every tool the server lists (all pages), starting it if needed.
    pub fn list_tools(&mut self) -> Result<Vec<RemoteTool>, DownstreamError> {
        self.ensure_started(&|| false)?;
        let running = self.running.as_mut().expect("started");
        let (id, line) = running.client.list_tools()?;
        let _ = running.to_child.send(line);
        match self.wait_for(id, self.timeouts.call, &|| false)? {
            Reply::Tools(tools) => Ok(tools),
            _ => Err(ClientError::Malformed("tools/list was answered as something else").into()),
        }
    }

    /// Calls `tool` with `arguments`, starting the server if needed: its result object.
    /// `cancelled` is asked while the call waits: once it says so, the call is cancelled
    /// downstream and fails.
    pub fn call(
        &mut self,
        tool: &str,
        arguments: &Map<String, Value>,
        cancelled: &dyn Fn() -> bool,
    ) -> Result<Map<String, Value>, DownstreamError> {
        self.ensure_started(cancelled)?;
        let running = self.running.as_mut().expect("started");
        let (id, line) = running.client.call_tool(tool, arguments)?;
        let _ = running.to_child.send(line);
        match self.wait_for(id, self.timeouts.call, cancelled)? {
            Reply::Called(result) => Ok(result),
            _ => Err(ClientError::Malformed("tools/call was answered as something else").into()),
        }
    }

    /// The last line the server wrote to its stderr, if any.
    pub fn last_stderr_line(&self) -> Option<String> {
        let tail = self.stderr.lock().unwrap_or_else(PoisonError::into_inner);
        let bytes: Vec<u8> = tail.iter().copied().collect();
        let text = String::from_utf8_lossy(&bytes);
        text.lines()
            .rev()
            .map(str::trim)
            .find(|line| !line.is_empty())
            .map(|line| line.chars().take(300).collect())
    }

    /// Kills the child (and its process group), reaps it and lets the stderr reader take
    /// what the child wrote last (it ends once every writer of the pipe is gone).
    pub fn shutdown(&mut self) {
        if let Some(mut running) = self.running.take() {
            kill(&mut running.child);
            let until = Instant::now() + STDERR_DRAIN;
            while !running.stderr_reader.is_finished() && Instant::now() < until {
                thread::sleep(Duration::from_millis(5));
            }
        }
    }

    /// Starts the child and does the handshake, unless it runs; a cancelled call stops
    /// waiting for a start too (and the half-started child is killed).
    fn ensure_started(&mut self, cancelled: &dyn Fn() -> bool) -> Result<(), DownstreamError> {
        if let Some(running) = &mut self.running
            && matches!(running.child.try_wait(), Ok(None))
        {
            return Ok(());
        }
        // Gone (or never started): the next call starts it again.
        self.shutdown();
        self.stderr
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clear();
        let mut running = self.spawn().map_err(DownstreamError::Spawn)?;
        let (id, line) = running.client.initialize();
        let _ = running.to_child.send(line);
        self.running = Some(running);
        match self.wait_for(id, self.timeouts.start, cancelled) {
            Ok(_) => Ok(()),
            Err(err) => {
                self.shutdown();
                Err(match err {
                    DownstreamError::CallTimeout(limit) => DownstreamError::StartTimeout(limit),
                    other => other,
                })
            }
        }
    }

    fn spawn(&self) -> std::io::Result<Running> {
        let launch = &self.launch;
        let mut command = Command::new(&launch.ferry);
        command
            .args(["mcp", "gateway-exec", "--parent"])
            .arg(std::process::id().to_string())
            .arg("--")
            .arg(&launch.command)
            .args(&launch.args)
            .env_clear()
            .envs(launch.env.iter().map(|(name, value)| (name, value)))
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        #[cfg(unix)]
        std::os::unix::process::CommandExt::process_group(&mut command, 0);
        let mut child = command.spawn()?;
        let stdout = child.stdout.take().expect("piped");
        let stdin = child.stdin.take().expect("piped");
        let stderr = child.stderr.take().expect("piped");
        let (line_sender, lines) = mpsc::sync_channel(READ_AHEAD_LINES);
        let started = (|| {
            thread::Builder::new()
                .name(format!("mcp-{}-out", launch.name))
                .spawn(move || read_stdout(stdout, line_sender))?;
            let tail = Arc::clone(&self.stderr);
            let stderr_reader = thread::Builder::new()
                .name(format!("mcp-{}-err", launch.name))
                .spawn(move || keep_stderr_tail(stderr, &tail))?;
            let (to_child, outgoing) = mpsc::channel();
            thread::Builder::new()
                .name(format!("mcp-{}-in", launch.name))
                .spawn(move || write_stdin(stdin, &outgoing))?;
            Ok::<_, std::io::Error>((to_child, stderr_reader))
        })();
        match started {
            Ok((to_child, stderr_reader)) => Ok(Running {
                child,
                stderr_reader,
                client: Client::new("ferry", env!("CARGO_PKG_VERSION")),
                lines,
                to_child,
                ignored: 0,
            }),
            Err(err) => {
                kill(&mut child);
                Err(err)
            }
        }
    }

    /// Feeds the child's lines to the client until `id` is answered, `limit` has passed or
    /// `cancelled` says so (asked every [`CANCEL_POLL`]).
    fn wait_for(
        &mut self,
        id: RequestId,
        limit: Duration,
        cancelled: &dyn Fn() -> bool,
    ) -> Result<Reply, DownstreamError> {
        let deadline = Instant::now() + limit;
        let name = self.launch.name.clone();
        let running = self.running.as_mut().expect("started");
        loop {
            // Asked before every line too, not only when the child is quiet: a child that
            // floods its output must not keep a call past its deadline or its cancellation.
            let now = Instant::now();
            let stop = if cancelled() {
                Some(("cancelled by the client", DownstreamError::Cancelled))
            } else if now >= deadline {
                Some(("timed out", DownstreamError::CallTimeout(limit)))
            } else {
                None
            };
            if let Some((reason, err)) = stop {
                if let Some(cancel) = running.client.cancel(id, reason) {
                    let _ = running.to_child.send(cancel);
                }
                return Err(err);
            }
            let left = deadline.saturating_duration_since(now);
            let events = match running.lines.recv_timeout(left.min(CANCEL_POLL)) {
                Ok(Line::Complete(bytes)) => running.client.handle_line(&bytes),
                Ok(Line::Oversized(prefix)) => running
                    .client
                    .handle_oversized_line(&prefix, MAX_CHILD_LINE_BYTES),
                Err(RecvTimeoutError::Timeout) => continue,
                Err(RecvTimeoutError::Disconnected) => {
                    let status = exit_status(&mut running.child);
                    self.shutdown();
                    return Err(DownstreamError::Exited(status));
                }
            };
            for event in events {
                match event {
                    Event::Send(line) => {
                        let _ = running.to_child.send(line);
                    }
                    Event::Reply {
                        id: answered,
                        outcome,
                    } if answered == id => {
                        return outcome.map_err(DownstreamError::from);
                    }
                    Event::Reply { .. } | Event::Notification(_) => {}
                    Event::Ignored(why) => {
                        running.ignored += 1;
                        if running.ignored <= LOGGED_IGNORED {
                            eprintln!(
                                "ferry mcp: server `{name}`: ignored {}",
                                crate::display::escape(&why)
                            );
                        }
                    }
                }
            }
        }
    }
}

impl Drop for Downstream {
    fn drop(&mut self) {
        self.shutdown();
    }
}

/// How a child whose stdout closed ended: its status once it has exited (waited for a moment),
/// else that it closed its output.
fn exit_status(child: &mut Child) -> String {
    let until = Instant::now() + Duration::from_millis(500);
    loop {
        match child.try_wait() {
            Ok(Some(status)) => return status.to_string(),
            Ok(None) if Instant::now() < until => thread::sleep(Duration::from_millis(10)),
            Ok(None) => return "it closed its output".into(),
            Err(err) => return err.to_string(),
        }
    }
}

/// Kills the child's process group (the command and whatever it started) and reaps the child.
fn kill(child: &mut Child) {
    #[cfg(target_os = "linux")]
    if let Some(group) = i32::try_from(child.id())
        .ok()
        .and_then(rustix::process::Pid::from_raw)
    {
        let _ = rustix::process::kill_process_group(group, rustix::process::Signal::KILL);
    }
    let _ = child.kill();
    let _ = child.wait();
}

/// Splits the child's stdout into lines. A line over the cap is handed on as soon as the cap
/// is reached (the call it answers fails then, not once the child has written all of it) and
/// the rest of it is skipped unread into memory.
fn read_stdout(stdout: impl Read, sender: SyncSender<Line>) {
    let mut input = BufReader::new(stdout);
    let mut kept = Vec::new();
    let mut skipping = false;
    loop {
        let available = match input.fill_buf() {
            Ok([]) | Err(_) => break,
            Ok(bytes) => bytes,
        };
        let newline = available.iter().position(|&byte| byte == b'\n');
        let content = &available[..newline.unwrap_or(available.len())];
        if !skipping {
            let room = MAX_CHILD_LINE_BYTES - kept.len();
            if content.len() > room {
                kept.extend_from_slice(&content[..room]);
                skipping = true;
                if sender
                    .send(Line::Oversized(std::mem::take(&mut kept)))
                    .is_err()
                {
                    return;
                }
            } else {
                kept.extend_from_slice(content);
            }
        }
        let used = newline.map_or(available.len(), |at| at + 1);
        input.consume(used);
        if newline.is_some() {
            if !std::mem::take(&mut skipping)
                && sender
                    .send(Line::Complete(std::mem::take(&mut kept)))
                    .is_err()
            {
                return;
            }
            kept.clear();
        }
    }
    if !kept.is_empty() && !skipping {
        let _ = sender.send(Line::Complete(kept));
    }
}

fn keep_stderr_tail(mut stderr: impl Read, tail: &Mutex<VecDeque<u8>>) {
    let mut buffer = [0u8; 4096];
    loop {
        match stderr.read(&mut buffer) {
            Ok(0) | Err(_) => return,
            Ok(read) => {
                let mut tail = tail.lock().unwrap_or_else(PoisonError::into_inner);
                tail.extend(&buffer[..read]);
                let excess = tail.len().saturating_sub(STDERR_TAIL_BYTES);
                tail.drain(..excess);
            }
        }
    }
}

fn write_stdin(mut stdin: ChildStdin, outgoing: &Receiver<String>) {
    while let Ok(line) = outgoing.recv() {
        let written = stdin
            .write_all(line.as_bytes())
            .and_then(|()| stdin.write_all(b"\n"))
            .and_then(|()| stdin.flush());
        if written.is_err() {
            return;
        }
    }
}

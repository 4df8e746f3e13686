//! One external server's calls, run on a thread of their own (ADR 0027), so that a server that
//! hangs, floods or crashes holds only its own calls: the stdio loop keeps reading and
//! answering our tools and the other servers' while one of its calls waits.
//!
//! A server's calls run one at a time, in the order they came, on its one thread (the child
//! is one process with one stdin: its calls would share it anyway). At most
//! [`MAX_WAITING_CALLS`] wait behind the running one; a call beyond that is refused at once
//! with an `isError` result naming the server, so a client that floods calls holds one
//! thread and a short queue per server, nothing more. A cancelled call that has not started
//! is never sent; a running one is cancelled downstream within the wait's poll.

use std::panic::AssertUnwindSafe;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{self, Receiver, Sender, SyncSender, TrySendError};
use std::sync::{Arc, Mutex, PoisonError};
use std::thread;

use ferry_mcp_core::guard;
use ferry_mcp_core::shape::ToolOutcome;
use ferry_mcp_core::tool::{PendingCall, Ticket};
use serde_json::{Map, Value};

use super::gateway_process::{Downstream, DownstreamError};
use super::gateway_tools::{failure, mark};
use super::stdio::Answers;

/// Calls that may wait behind a server's running call; more are refused at once.
pub const MAX_WAITING_CALLS: usize = 8;

/// One server's queue of calls and the thread that runs them.
#[derive(Debug)]
pub struct CallQueue {
    server: &'static str,
    jobs: SyncSender<Job>,
    downstream: Arc<Mutex<Downstream>>,
    /// Set when `serve` stops: a waiting call stops waiting and no new one starts.
    stopping: Arc<AtomicBool>,
}

/// Where a call's answer goes.
#[derive(Debug)]
pub enum Reply {
    /// To the stdio loop, as the answer of the call `Ticket`.
    Later(Answers, Ticket),
    /// To a caller that waits for it (where the core offered no ticket).
    Now(Sender<ToolOutcome>),
}

impl Reply {
    fn give(self, outcome: ToolOutcome) {
        match self {
            Reply::Later(answers, ticket) => answers.give(ticket, outcome),
            Reply::Now(sender) => {
                let _ = sender.send(outcome);
            }
        }
    }
}

#[derive(Debug)]
struct Job {
    tool: String,
    arguments: Map<String, Value>,
    cancelled: Arc<AtomicBool>,
    reply: Reply,
}

/// A call queued or running, as the protocol core holds it until it answers.
#[derive(Debug)]
pub struct QueuedCall {
    cancelled: Arc<AtomicBool>,
}

impl PendingCall for QueuedCall {
    fn cancel(&self) {
        self.cancelled.store(true, Ordering::Relaxed);
    }
}

impl CallQueue {
    /// The queue of `server`'s calls, and its thread (which also starts the child, so the
    /// child's death signal is tied to a thread that lives as long as `serve`).
    pub fn start(server: &'static str, downstream: Downstream) -> std::io::Result<Self> {
        let (jobs, queued) = mpsc::sync_channel(MAX_WAITING_CALLS);
        let downstream = Arc::new(Mutex::new(downstream));
        let stopping = Arc::new(AtomicBool::new(false));
        let running = Arc::clone(&downstream);
        let stop = Arc::clone(&stopping);
        thread::Builder::new()
            .name(format!("mcp-{server}-calls"))
            .spawn(move || run(server, &queued, &running, &stop))?;
        Ok(Self {
            server,
            jobs,
            downstream,
            stopping,
        })
    }

    /// Queues a call of the remote `tool`: what the core holds while it runs, or the
    /// `isError` result of a call refused at once (the queue is full).
    pub fn submit(
        &self,
        tool: &str,
        arguments: &Map<String, Value>,
        reply: Reply,
    ) -> Result<QueuedCall, ToolOutcome> {
        let cancelled = Arc::new(AtomicBool::new(false));
        let job = Job {
            tool: tool.to_owned(),
            arguments: arguments.clone(),
            cancelled: Arc::clone(&cancelled),
            reply,
        };
        match self.jobs.try_send(job) {
            Ok(()) => Ok(QueuedCall { cancelled }),
            Err(TrySendError::Full(_)) => Err(failure(
                self.server,
                &format!(
                    "{MAX_WAITING_CALLS} calls wait for it already behind the one it is running: this one was not sent (try again once they are answered)"
                ),
            )),
            Err(TrySendError::Disconnected(_)) => {
                Err(failure(self.server, "its call thread is gone"))
            }
        }
    }

    /// Stops waiting calls and every child (killed and reaped): called when `serve` ends.
    pub fn shutdown(&self) {
        self.stopping.store(true, Ordering::Relaxed);
        self.downstream
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .shutdown();
    }
}

/// The queue's thread: each call in turn, each answered exactly once, even if it panics.
fn run(
    server: &'static str,
    queued: &Receiver<Job>,
    downstream: &Mutex<Downstream>,
    stopping: &AtomicBool,
) {
    while let Ok(job) = queued.recv() {
        let outcome = std::panic::catch_unwind(AssertUnwindSafe(|| {
            call(server, &job, downstream, stopping)
        }))
        .unwrap_or_else(|_| failure(server, "internal error: its call failed"));
        job.reply.give(outcome);
    }
}

fn call(
    server: &'static str,
    job: &Job,
    downstream: &Mutex<Downstream>,
    stopping: &AtomicBool,
) -> ToolOutcome {
    let stop = || job.cancelled.load(Ordering::Relaxed) || stopping.load(Ordering::Relaxed);
    let cancelled = || failure(server, &DownstreamError::Cancelled.to_string());
    if stop() {
        return cancelled();
    }
    let mut downstream = downstream.lock().unwrap_or_else(PoisonError::into_inner);
    // `serve` may have stopped while this call waited for the lock: start no child then.
    if stop() {
        return cancelled();
    }
    match downstream.call(&job.tool, &job.arguments, &stop) {
        Ok(result) => mark(server, &result),
        Err(err) => {
            let stderr = downstream
                .last_stderr_line()
                .map(|line| format!("; its last stderr line: {}", guard::redact(&line).text))
                .unwrap_or_default();
            failure(server, &format!("{err}{stderr}"))
        }
    }
}

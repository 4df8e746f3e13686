//! The channel as tools see it: the operations they call, and nothing of how the channel is kept.
//!
//! Why: a tool is a thin facade (parse, call one operation, shape the answer), so what it needs
//! of the channel is the set of operations, not the session that performs them. Naming them here
//! lets the protocol, the registry and every tool compile against a port: the channel store
//! implements it ([`crate::channel::session::Session`]), and an embedder may implement it over a
//! store of its own and serve ferry's core tools unchanged (`examples/port.rs`). The requests,
//! answers and errors are the operations' own typed values (`channel::ops`), data that name no
//! store.
//!
//! The methods are grouped as the domains are; each is one operation of `channel::ops`, with the
//! same arguments, so the `ferry` command and the tool still run the same function.

use crate::channel::fold::levels::{Fix, Operation};
use crate::channel::fold::state::orders::{Hints, OrderState, Verdict};
use crate::channel::log::names::AgentName;
use crate::channel::ops::OpsError;
use crate::channel::ops::asks::{AskView, AsksError, RaiseRequest};
use crate::channel::ops::fleet::{Digest, DigestLimits, Joined};
use crate::channel::ops::legacy::{
    Acceptance, BoardCounts, Memory, Page, PageRequest, TaskFilter, TaskRow, VerdictRow,
};
use crate::channel::ops::orders::{
    ClaimOutcome, ListRequest, OrderDetail, OrderList, OrdersError, SubmitRequest,
};
use crate::channel::ops::primary::{Liveness, PrimaryError, PrimaryStatus, Takeover};
use crate::channel::ops::releases::{Applied, ReleasesError, UpdateCheck};
use crate::channel::ops::search::{SearchError, SearchPage, SearchRequest};
use crate::channel::ops::status::Status;
use crate::channel::ops::talk::{MessageView, PostRequest, ReadRequest, ReadResult, TalkError};
use crate::time::Timestamp;

/// How a server reaches its channel: opened on the first call that needs it, so that nothing
/// waits for the channel before `tools/list` is answered (one process, one agent, one project).
pub trait ChannelAccess: Send {
    /// The channel, or why there is none (an unknown project, say: the tool says so).
    fn channel(&mut self, now: Timestamp) -> Result<&mut dyn Channel, Unavailable>;
    /// The channel and this machine's queue for heavy work (when the binary found one).
    fn channel_and_queue(
        &mut self,
        now: Timestamp,
    ) -> Result<(&mut dyn Channel, Option<&dyn HeavyQueue>), Unavailable> {
        self.channel(now).map(|channel| (channel, None))
    }
    /// Called once the answers to a batch of lines are out: keep what was verified (the
    /// implementer decides how often it writes).
    fn flush(&mut self, now: Timestamp) {
        let _ = now;
    }
}

/// Why a tool cannot reach the channel.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Unavailable {
    #[error("this server serves no channel")]
    NoChannel,
    /// The channel could not be opened; `code` is the operation error's stable code, `fix`
    /// what fixes it here (each facade words the pointer).
    #[error("{message}")]
    Failed {
        code: &'static str,
        message: String,
        fix: Option<Fix>,
    },
}

impl Unavailable {
    pub fn code(&self) -> &'static str {
        match self {
            Unavailable::NoChannel => "no_channel",
            Unavailable::Failed { code, .. } => code,
        }
    }

    /// What fixes it on this machine, when a command does.
    pub fn fix(&self) -> Option<&Fix> {
        match self {
            Unavailable::NoChannel => None,
            Unavailable::Failed { fix, .. } => fix.as_ref(),
        }
    }
}

/// A server without a channel (protocol tests, the fixture group).
#[derive(Debug, Clone, Copy, Default)]
pub struct NoChannel;

impl ChannelAccess for NoChannel {
    fn channel(&mut self, _now: Timestamp) -> Result<&mut dyn Channel, Unavailable> {
        Err(Unavailable::NoChannel)
    }
}

/// This machine's queue for heavy work (`snifrig`), as the caller found it: the channel never
/// runs it, it only tells an agent whether to start.
pub trait HeavyQueue {
    /// Whether the agent's config sends heavy orders to the queue and the queue is there.
    fn enabled(&self) -> bool;
    /// The queue's answer for these hints (`snifrig can-i-start`).
    fn can_i_start(&self, hints: &Hints) -> bool;
}

/// Everything a tool may do with the channel: the seat, then one group per domain.
///
/// Every operation but the seat's has a default that answers `unsupported`, so an embedder
/// implements what its channel serves and a new operation does not break old implementers.
pub trait Channel: Seat + Orders + Talk + Primary + Asks + Fleet + Updates {}

impl<T: Seat + Orders + Talk + Primary + Asks + Fleet + Updates> Channel for T {}

/// Who acts, and what every tool does before its operation.
pub trait Seat {
    /// The agent this channel acts for (none for the human or an observer).
    fn me(&self) -> Option<AgentName>;
    /// This machine's name.
    fn machine(&self) -> String;
    /// May the actor do `operation` now? The refusal is the operation error tools answer.
    fn authorize(&self, operation: Operation, now: Timestamp) -> Result<(), OpsError>;
    /// Folds what is new in the channel; returns how many entries that was.
    fn refresh(&mut self, now: Timestamp) -> u64;
    /// Records that the actor is alive (presence), at most as often as the channel's rule says.
    fn note_alive(&mut self, now: Timestamp);
}

/// The order board.
#[allow(unused_variables, reason = "a default serves nothing")]
pub trait Orders {
    fn claim(&mut self, id: &str, now: Timestamp) -> Result<ClaimOutcome, OrdersError> {
        Err(OpsError::Unsupported("claim").into())
    }
    fn release_order(
        &mut self,
        id: &str,
        note: Option<&str>,
        now: Timestamp,
    ) -> Result<OrderState, OrdersError> {
        Err(OpsError::Unsupported("release_order").into())
    }
    fn progress(
        &mut self,
        id: &str,
        text: &str,
        now: Timestamp,
    ) -> Result<OrderState, OrdersError> {
        Err(OpsError::Unsupported("progress").into())
    }
    /// Returns the hand-in's id.
    fn hand_in(
        &mut self,
        id: &str,
        git_ref: &str,
        summary: &str,
        now: Timestamp,
    ) -> Result<String, OrdersError> {
        Err(OpsError::Unsupported("hand_in").into())
    }
    /// Whether `reference` is the id of a hand-in of order `order` (else it is a git ref).
    fn names_handin(&mut self, order: &str, reference: &str) -> bool {
        false
    }
    fn submit(
        &mut self,
        id: &str,
        request: &SubmitRequest,
        now: Timestamp,
    ) -> Result<OrderState, OrdersError> {
        Err(OpsError::Unsupported("submit").into())
    }
    fn review(
        &mut self,
        id: &str,
        verdict: Verdict,
        notes: Option<&str>,
        now: Timestamp,
    ) -> Result<OrderState, OrdersError> {
        Err(OpsError::Unsupported("review").into())
    }
    fn list_orders(
        &mut self,
        request: &ListRequest,
        now: Timestamp,
    ) -> Result<OrderList, OrdersError> {
        Err(OpsError::Unsupported("list_orders").into())
    }
    fn show_order(
        &mut self,
        id: &str,
        queue: Option<&dyn HeavyQueue>,
        now: Timestamp,
    ) -> Result<OrderDetail, OrdersError> {
        Err(OpsError::Unsupported("show_order").into())
    }
    /// An order's whole body (the `ferry://<project>/order/<id>` resource).
    fn order_body(&mut self, id: &str, now: Timestamp) -> Result<String, OrdersError> {
        Err(OpsError::Unsupported("order_body").into())
    }
    /// How many orders are in each state (the legacy `channel_status`).
    fn board_counts(&mut self, now: Timestamp) -> Result<BoardCounts, OrdersError> {
        Err(OpsError::Unsupported("board_counts").into())
    }
    /// The orders matching `filter`, oldest change first (the legacy `list_tasks`).
    fn tasks(
        &mut self,
        filter: Option<TaskFilter>,
        page: PageRequest,
        now: Timestamp,
    ) -> Result<Page<TaskRow>, OrdersError> {
        Err(OpsError::Unsupported("tasks").into())
    }
    /// The board's `walk` latest changes, newest first (the legacy `list_ledger`).
    fn board_changes(
        &mut self,
        walk: usize,
        page: PageRequest,
        now: Timestamp,
    ) -> Result<Page<TaskRow>, OrdersError> {
        Err(OpsError::Unsupported("board_changes").into())
    }
    /// Review verdicts with their notes, newest first (the legacy `list_learnings`).
    fn verdicts(
        &mut self,
        walk: usize,
        page: PageRequest,
        now: Timestamp,
    ) -> Result<Page<VerdictRow>, OrdersError> {
        Err(OpsError::Unsupported("verdicts").into())
    }
    /// Acceptance per agent (the legacy `list_engines`).
    fn acceptance(
        &mut self,
        page: PageRequest,
        now: Timestamp,
    ) -> Result<Page<Acceptance>, OrdersError> {
        Err(OpsError::Unsupported("acceptance").into())
    }
}

/// Talk between the agents.
#[allow(unused_variables, reason = "a default serves nothing")]
pub trait Talk {
    /// Returns the message's id.
    fn post(&mut self, request: &PostRequest, now: Timestamp) -> Result<String, TalkError> {
        Err(OpsError::Unsupported("post").into())
    }
    /// Reads what is new; `fits` says whether one more message still fits the answer.
    fn read(
        &mut self,
        request: &ReadRequest,
        fits: &mut dyn FnMut(&MessageView) -> bool,
        now: Timestamp,
    ) -> Result<ReadResult, TalkError> {
        Err(OpsError::Unsupported("read").into())
    }
    /// A message's whole text (the `ferry://<project>/msg/<id>` resource).
    fn message_text(&mut self, id: &str, now: Timestamp) -> Result<String, TalkError> {
        Err(OpsError::Unsupported("message_text").into())
    }
}

/// Who leads the fleet.
#[allow(unused_variables, reason = "a default serves nothing")]
pub trait Primary {
    fn primary_status(&mut self, now: Timestamp) -> Result<PrimaryStatus, PrimaryError> {
        Err(OpsError::Unsupported("primary_status").into())
    }
    fn standby(&mut self, now: Timestamp) -> Result<PrimaryStatus, PrimaryError> {
        Err(OpsError::Unsupported("standby").into())
    }
    fn takeover(&mut self, now: Timestamp) -> Result<Takeover, PrimaryError> {
        Err(OpsError::Unsupported("takeover").into())
    }
    fn release_primary(&mut self, now: Timestamp) -> Result<(), PrimaryError> {
        Err(OpsError::Unsupported("release_primary").into())
    }
    /// How long ago `agent` was heard from, and what that makes it.
    fn liveness(&self, agent: &AgentName, now: Timestamp) -> Option<(u64, Liveness)> {
        None
    }
    /// Whether `agent` has been quiet longer than the quiet period (or was never heard from).
    fn is_silent(&self, agent: &AgentName, now: Timestamp) -> bool {
        false
    }
    /// The brief and a page of the decisions, newest first (the legacy `read_memory`).
    fn memory(&mut self, page: PageRequest, now: Timestamp) -> Result<Memory, PrimaryError> {
        Err(OpsError::Unsupported("memory").into())
    }
}

/// Approvals only the human can give.
#[allow(unused_variables, reason = "a default serves nothing")]
pub trait Asks {
    /// Returns the ask's id.
    fn raise(&mut self, request: &RaiseRequest, now: Timestamp) -> Result<String, AsksError> {
        Err(OpsError::Unsupported("raise").into())
    }
    fn ask(&mut self, id: &str, now: Timestamp) -> Result<AskView, AsksError> {
        Err(OpsError::Unsupported("ask").into())
    }
    fn asks(
        &mut self,
        by: Option<&AgentName>,
        pending_only: bool,
        now: Timestamp,
    ) -> Result<Vec<AskView>, AsksError> {
        Err(OpsError::Unsupported("asks").into())
    }
}

/// Joining, catching up, and looking around.
#[allow(unused_variables, reason = "a default serves nothing")]
pub trait Fleet {
    fn join(&mut self, now: Timestamp) -> Result<Joined, OpsError> {
        Err(OpsError::Unsupported("join"))
    }
    fn catchup(
        &mut self,
        since: Option<&str>,
        limits: DigestLimits,
        now: Timestamp,
    ) -> Result<Digest, OpsError> {
        Err(OpsError::Unsupported("catchup"))
    }
    fn search(
        &mut self,
        request: &SearchRequest,
        now: Timestamp,
    ) -> Result<SearchPage, SearchError> {
        Err(OpsError::Unsupported("search").into())
    }
    fn status(&mut self, now: Timestamp) -> Result<Status, OpsError> {
        Err(OpsError::Unsupported("status"))
    }
}

/// Releases the master approved, and installing one (ADR 0020).
#[allow(unused_variables, reason = "a default serves nothing")]
pub trait Updates {
    /// What is approved for this platform, what runs, whether it is newer.
    fn update_check(&mut self, now: Timestamp) -> Result<UpdateCheck, ReleasesError> {
        Err(OpsError::Unsupported("update_check").into())
    }
    /// Installs `version` (else the newest approved) over the binary; the running process is
    /// unchanged.
    fn update_apply(
        &mut self,
        version: Option<&str>,
        now: Timestamp,
    ) -> Result<Applied, ReleasesError> {
        Err(OpsError::Unsupported("update_apply").into())
    }
}

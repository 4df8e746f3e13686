//! The channel operations the `ferry` commands and the MCP tools call: one library function
//! per operation, in a module per domain.
//!
//! - [`project`]: create a project, register a synced channel, pause and resume the machine;
//! - [`seats`]: seat an agent on this machine;
//! - [`access`]: show and set levels;
//! - [`mastership`]: hand mastership on;
//! - [`status`]: what a project looks like from this machine;
//! - [`search`]: order titles, decisions and messages that hold a word;
//! - [`orders`]: issue, claim, progress, hand in, submit, review, release, cancel.
//!
//! Each operation goes through a [`Session`](super::session::Session) (read what is new,
//! authorize, append) and returns a typed value; nothing here prints. Errors are [`OpsError`]:
//! one short line each, with a stable [`OpsError::code`] that tool results carry.

pub mod access;
pub mod asks;
pub mod fleet;
pub mod mastership;
pub mod orders;
pub mod primary;
pub mod project;
pub mod search;
pub mod seats;
pub mod secrets;
pub mod status;
pub mod talk;

use std::path::PathBuf;

use super::home::HomeError;
use super::levels::Refusal;
use super::names::{AgentName, ProjectId};
use super::state::ids::BadId;
use super::state::orders::{OrderState, VoidReason};
use super::state::primary::PrimaryVoid;
use super::store::StoreError;

pub use access::{AgentRow, GrantRequest, access_set, access_show};
pub use mastership::{NewMasterKey, master_handover, new_master_key};
pub use project::{Created, add_existing, init, pause, resume};
pub use seats::{Joined, join};
pub use status::{Status, status};

/// Why an operation failed. One variant per cause; [`OpsError::code`] is stable.
#[derive(Debug, thiserror::Error)]
pub enum OpsError {
    #[error(transparent)]
    Home(#[from] HomeError),
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error("project {0} already exists on this machine")]
    ProjectExists(ProjectId),
    #[error("a channel already exists in {} (register it with `ferry channel add`)", .0.display())]
    ChannelExists(PathBuf),
    #[error("the channel belongs to project {found}, not {expected}")]
    WrongProject {
        expected: ProjectId,
        found: ProjectId,
    },
    #[error("the name {name} is taken by another key")]
    NameTaken { name: AgentName },
    #[error("{name} is not seated in project {project}")]
    NotSeated { name: AgentName, project: ProjectId },
    #[error("{name} is contested by several keys; pick one with --key")]
    Contested { name: AgentName },
    #[error(
        "{name} joined, but {keys} keys joined under this name: no key holds it until the master grants one (`ferry access set {name} LEVEL --key HEX --project {project}`)"
    )]
    JoinContested {
        name: AgentName,
        keys: usize,
        project: ProjectId,
    },
    #[error("key {key} has not joined as {name}")]
    KeyNotJoined { name: AgentName, key: String },
    #[error("this machine does not hold the current master key of project {0}")]
    NotTheMaster(ProjectId),
    #[error(
        "the genesis master key of project {project} differs from the one pinned on this machine"
    )]
    MasterPinChanged { project: ProjectId },
    #[error("key {0} has been master of this project before; mastership is never handed back")]
    FormerMaster(String),
    #[error("the new key did not prove it is held: {0}")]
    BadHandover(String),
    #[error("the handover to this master key is not in the former master's log on this machine")]
    HandoverLineMissing,
    #[error("no random bytes for a new key: {0}")]
    Random(String),
    #[error("this session only reads (no agent is named)")]
    ReadOnly,
    #[error(transparent)]
    Refused(#[from] Refusal),
    #[error(transparent)]
    BadId(#[from] BadId),
    #[error("unknown order {0}")]
    UnknownOrder(String),
    #[error("order {order} is {}; {action} needs it {wanted}", .state.as_str())]
    WrongState {
        order: String,
        state: OrderState,
        action: &'static str,
        wanted: &'static str,
    },
    #[error("order {order} is held by {holder}, not {agent}")]
    NotHolder {
        order: String,
        holder: String,
        agent: AgentName,
    },
    #[error("order {order} is offered to {to}")]
    OfferedToAnother { order: String, to: AgentName },
    #[error("order {order}: this would not count ({reason})")]
    DoesNotCount { order: String, reason: VoidReason },
    #[error("this would not count: {reason}")]
    PrimaryDoesNotCount { reason: PrimaryVoid },
    #[error("{agent} submitted this revision and cannot review it")]
    OwnSubmission { agent: AgentName },
    #[error("unknown hand-in {handin} for order {order}")]
    UnknownHandIn { handin: String, order: String },
    #[error("{what} is {len} {unit}, the limit is {max}")]
    TooLong {
        what: &'static str,
        len: usize,
        max: usize,
        unit: &'static str,
    },
    #[error("{0} is empty")]
    Empty(&'static str),
    #[error(transparent)]
    Guarded(#[from] crate::guard::GuardRefusal),
    #[error("{name} is not on the roster{}", suggest(.suggestions))]
    UnknownRecipient {
        name: String,
        suggestions: Vec<String>,
    },
    #[error("unknown message {0}")]
    UnknownMessage(String),
    #[error(
        "{primary} is {} ({age_s}s since it was heard from; silent after {quiet_period_s}s): standby instead", .state.as_str()
    )]
    PrimaryAlive {
        primary: AgentName,
        state: primary::Liveness,
        age_s: u64,
        quiet_period_s: u64,
    },
    #[error("{agent} is not primary (the primary is {})", .primary.as_ref().map_or("nobody".to_owned(), ToString::to_string))]
    NotPrimary {
        agent: AgentName,
        primary: Option<AgentName>,
    },
    #[error("unknown ask {0}")]
    UnknownAsk(String),
    #[error("the human does not {action}: agents do (name one with --as)")]
    AgentsOnly { action: &'static str },
    #[error("only the human (the master key) may {action}")]
    HumanOnly { action: &'static str },
    #[error("{0}")]
    Invalid(String),
}

impl OpsError {
    /// A stable machine-readable code (tool results carry it).
    pub fn code(&self) -> &'static str {
        match self {
            OpsError::Home(HomeError::UnknownProject(_)) => "unknown_project",
            OpsError::Home(HomeError::Locked { .. }) => "locked",
            OpsError::Home(HomeError::KeyMissing { .. }) => "key_missing",
            OpsError::Home(_) => "machine_state",
            OpsError::Store(_) => "channel_io",
            OpsError::ProjectExists(_) => "project_exists",
            OpsError::ChannelExists(_) => "channel_exists",
            OpsError::WrongProject { .. } => "wrong_project",
            OpsError::NameTaken { .. } => "name_taken",
            OpsError::NotSeated { .. } => "not_seated",
            OpsError::Contested { .. } | OpsError::JoinContested { .. } => "contested",
            OpsError::KeyNotJoined { .. } => "key_not_joined",
            OpsError::NotTheMaster(_) => "not_the_master",
            OpsError::MasterPinChanged { .. } => "master_pin_changed",
            OpsError::FormerMaster(_) => "former_master",
            OpsError::BadHandover(_) => "bad_handover",
            OpsError::HandoverLineMissing => "handover_missing",
            OpsError::Random(_) => "no_randomness",
            OpsError::ReadOnly => "read_only",
            OpsError::Refused(refusal) => refusal.code(),
            OpsError::BadId(_) => "bad_id",
            OpsError::UnknownOrder(_) => "unknown_order",
            OpsError::WrongState { .. } => "wrong_state",
            OpsError::NotHolder { .. } => "not_holder",
            OpsError::OfferedToAnother { .. } => "offered_to_another",
            OpsError::DoesNotCount { .. } | OpsError::PrimaryDoesNotCount { .. } => {
                "does_not_count"
            }
            OpsError::OwnSubmission { .. } => "own_submission",
            OpsError::UnknownHandIn { .. } => "unknown_handin",
            OpsError::TooLong { .. } => "too_long",
            OpsError::Empty(_) => "empty",
            OpsError::Guarded(refusal) => refusal.code(),
            OpsError::UnknownRecipient { .. } => "unknown_recipient",
            OpsError::UnknownMessage(_) => "unknown_message",
            OpsError::PrimaryAlive { .. } => "primary_alive",
            OpsError::NotPrimary { .. } => "not_primary",
            OpsError::UnknownAsk(_) => "unknown_ask",
            OpsError::AgentsOnly { .. } => "agents_only",
            OpsError::HumanOnly { .. } => "master_only",
            OpsError::Invalid(_) => "invalid",
        }
    }
}

/// `; did you mean a, b?`, or nothing.
fn suggest(names: &[String]) -> String {
    if names.is_empty() {
        "; post to a seated agent, `master` (the human) or `all`".to_owned()
    } else {
        format!("; did you mean {}?", names.join(", "))
    }
}

/// Refuses text longer than `max` characters.
pub(crate) fn check_chars(what: &'static str, text: &str, max: usize) -> Result<(), OpsError> {
    let len = text.chars().count();
    if len > max {
        return Err(OpsError::TooLong {
            what,
            len,
            max,
            unit: "characters",
        });
    }
    Ok(())
}

/// Refuses empty (or blank) text.
pub(crate) fn check_not_empty(what: &'static str, text: &str) -> Result<(), OpsError> {
    if text.trim().is_empty() {
        return Err(OpsError::Empty(what));
    }
    Ok(())
}

/// A fresh signing key.
pub(crate) fn generate_key() -> Result<super::keys::SecretKey, OpsError> {
    super::keys::SecretKey::generate().map_err(|err| OpsError::Random(err.to_string()))
}

//! The channel operations the `ferry` commands and the MCP tools call: one library function
//! per operation, in a module per domain.
//!
//! - [`project`]: create a project, register a synced channel, pause and resume the machine;
//! - [`seats`]: seat an agent on this machine;
//! - [`access`]: show and set levels;
//! - [`mastership`]: hand mastership on;
//! - [`status`]: what a project looks like from this machine;
//! - [`search`]: order titles, decisions and messages that hold a word;
//! - [`orders`]: issue, claim, progress, hand in, submit, review, release, cancel;
//! - [`releases`]: approve and revoke releases, check for and apply an update ([`install`]
//!   puts an artifact in place of the binary).
//!
//! Each operation goes through a [`Session`](super::session::Session) (read what is new,
//! authorize, append) and returns a typed value; nothing here prints. Each domain has its
//! error (wrapping [`OpsError`], what any operation can fail with): one short line each, with a
//! stable code that tool results carry ([`OperationError`]). The texts name no command or
//! flag: the tool facade and the CLI add the pointer their reader needs.

pub mod access;
pub mod asks;
pub mod checkpoint;
pub mod fleet;
pub mod git_ref;
pub mod install;
pub mod legacy;
pub mod mastership;
pub mod orders;
mod port;
pub mod primary;
pub mod project;
pub mod releases;
pub mod search;
pub mod seats;
pub mod secrets;
pub mod status;
pub mod talk;

use crate::channel::fold::levels::{BadScope, Fix, Refusal};
use crate::channel::fold::state::ids::BadId;
use crate::channel::fold::state::since::SinceError;
use crate::channel::log::names::{AgentName, ProjectId};
use crate::channel::log::store::StoreError;
use crate::channel::machine::home::HomeError;

pub use access::{AgentRow, GrantRequest, access_set, access_show};
pub use mastership::{NewMasterKey, master_handover, new_master_key};
pub use project::{Created, add_existing, init, pause, resume};
pub use seats::{Joined, join};
pub use status::{Status, status};

/// What an operation that opens its own session did, and what this machine could not keep
/// (issue 17, finding 9): once its entry is appended and synced (or what it read is read) the
/// operation succeeded, so a kept state that could not be saved is said, never its failure (a
/// command that said it failed would be run again: a grant or a seat written twice). The kept
/// state is a cache: the next open reads again what this one could not keep.
#[derive(Debug)]
pub struct Saved<T> {
    pub value: T,
    /// Why the kept state was not saved, if it was not.
    pub unsaved: Option<OpsError>,
}

impl<T> Saved<T> {
    /// `value`, after saving `session`'s kept state.
    pub(crate) fn after(session: &mut super::session::Session, value: T) -> Self {
        Self {
            value,
            unsaved: session.save().err(),
        }
    }

    pub fn into_inner(self) -> T {
        self.value
    }
}

impl<T> std::ops::Deref for Saved<T> {
    type Target = T;
    fn deref(&self) -> &T {
        &self.value
    }
}

/// What any operation can fail with, whatever its domain: the session's causes (the machine's
/// state, the channel's IO, a refusal of the level check, a read-only session, the master
/// key) and the shape of its arguments (an id, a cursor, a text too long, empty or refused by
/// the guard). Each domain's error wraps it ([`orders::OrdersError`], [`talk::TalkError`],
/// [`primary::PrimaryError`], [`asks::AsksError`], [`access::AccessError`],
/// [`project::ProjectError`], [`secrets::SecretsError`], [`search::SearchError`]) beside its own
/// causes. One variant per cause; [`OpsError::code`] is stable.
#[derive(Debug, thiserror::Error)]
pub enum OpsError {
    #[error(transparent)]
    Home(#[from] HomeError),
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error("the channel belongs to project {found}, not {expected}")]
    WrongProject {
        expected: ProjectId,
        found: ProjectId,
    },
    #[error("{name} is not seated in project {project}")]
    NotSeated { name: AgentName, project: ProjectId },
    #[error("this machine does not hold the current master key of project {0}")]
    NotTheMaster(ProjectId),
    #[error(
        "the genesis master key of project {project} differs from the one pinned on this machine"
    )]
    MasterPinChanged { project: ProjectId },
    #[error("the handover to this master key is not in the former master's log on this machine")]
    HandoverLineMissing,
    #[error("no random bytes for a new key: {0}")]
    Random(String),
    /// No agent is named: name one to act.
    #[error("this session only reads (no agent is named)")]
    ReadOnly,
    #[error(transparent)]
    Refused(#[from] Refusal),
    #[error(transparent)]
    BadId(#[from] BadId),
    #[error(transparent)]
    BadSince(#[from] SinceError),
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
    /// A fold read before the session paged it in (the session's bug, never a crash).
    #[error(transparent)]
    NotPaged(#[from] crate::channel::fold::state::NotPaged),
    #[error(transparent)]
    BadScope(#[from] BadScope),
    /// An embedder's channel (`crate::port`) that does not serve this operation.
    #[error("this channel does not serve {0}")]
    Unsupported(&'static str),
}

impl OpsError {
    /// What fixes it on this machine, when a command does (a refusal's or the machine
    /// state's); the texts name no command, each facade words the pointer.
    pub fn fix(&self) -> Option<Fix> {
        match self {
            OpsError::Refused(refusal) => refusal.fix(),
            OpsError::Home(home) => home.fix(),
            _ => None,
        }
    }

    /// A stable machine-readable code (tool results carry it).
    pub fn code(&self) -> &'static str {
        match self {
            OpsError::Home(HomeError::UnknownProject(_)) => "unknown_project",
            OpsError::Home(HomeError::Locked { .. } | HomeError::MasterSealed { .. }) => "locked",
            OpsError::Home(HomeError::KeyMissing { .. }) => "key_missing",
            OpsError::Home(_) => "machine_state",
            OpsError::Store(_) => "channel_io",
            OpsError::WrongProject { .. } => "wrong_project",
            OpsError::NotSeated { .. } => "not_seated",
            OpsError::NotTheMaster(_) => "not_the_master",
            OpsError::MasterPinChanged { .. } => "master_pin_changed",
            OpsError::HandoverLineMissing => "handover_missing",
            OpsError::Random(_) => "no_randomness",
            OpsError::ReadOnly => "read_only",
            OpsError::Refused(refusal) => refusal.code(),
            OpsError::BadId(_) => "bad_id",
            OpsError::BadSince(_) => "invalid",
            OpsError::TooLong { .. } => "too_long",
            OpsError::Empty(_) => "empty",
            OpsError::Guarded(refusal) => refusal.code(),
            OpsError::NotPaged(_) => "not_paged",
            OpsError::Unsupported(_) => "unsupported",
            OpsError::BadScope(_) => "bad_scope",
        }
    }
}

/// What a tool or a command needs of any operation's error, whatever its domain: its stable
/// code, and the error every operation can fail with when that is what it is (the tool facade
/// and the CLI word a refusal's fix each their own way).
pub trait OperationError: std::error::Error {
    /// A stable machine-readable code (tool results carry it).
    fn code(&self) -> &'static str;
    /// The error of any operation inside, when it is one.
    fn common(&self) -> Option<&OpsError>;
}

impl OperationError for OpsError {
    fn code(&self) -> &'static str {
        OpsError::code(self)
    }
    fn common(&self) -> Option<&OpsError> {
        Some(self)
    }
}

macro_rules! operation_error {
    ($($domain:ty),* $(,)?) => {
        $(impl OperationError for $domain {
            fn code(&self) -> &'static str {
                <$domain>::code(self)
            }
            fn common(&self) -> Option<&OpsError> {
                match self {
                    Self::Ops(err) => Some(err),
                    _ => None,
                }
            }
        })*
    };
}

/// A domain error from any cause of [`OpsError`], so `?` works on what returns one.
macro_rules! via_ops {
    ($($domain:ty),* $(,)?) => {
        $(
            impl From<HomeError> for $domain {
                fn from(err: HomeError) -> Self {
                    Self::Ops(err.into())
                }
            }
            impl From<StoreError> for $domain {
                fn from(err: StoreError) -> Self {
                    Self::Ops(err.into())
                }
            }
            impl From<BadId> for $domain {
                fn from(err: BadId) -> Self {
                    Self::Ops(err.into())
                }
            }
            impl From<Refusal> for $domain {
                fn from(err: Refusal) -> Self {
                    Self::Ops(err.into())
                }
            }
            impl From<crate::guard::GuardRefusal> for $domain {
                fn from(err: crate::guard::GuardRefusal) -> Self {
                    Self::Ops(err.into())
                }
            }
            impl From<crate::channel::fold::state::NotPaged> for $domain {
                fn from(err: crate::channel::fold::state::NotPaged) -> Self {
                    Self::Ops(err.into())
                }
            }
        )*
    };
}

via_ops!(
    orders::OrdersError,
    talk::TalkError,
    primary::PrimaryError,
    asks::AsksError,
    access::AccessError,
    project::ProjectError,
    secrets::SecretsError,
    search::SearchError,
);

operation_error!(
    orders::OrdersError,
    talk::TalkError,
    asks::AsksError,
    access::AccessError,
    project::ProjectError,
    secrets::SecretsError,
    search::SearchError,
);

impl OperationError for primary::PrimaryError {
    fn code(&self) -> &'static str {
        primary::PrimaryError::code(self)
    }
    fn common(&self) -> Option<&OpsError> {
        match self {
            Self::Ops(err) | Self::Talk(talk::TalkError::Ops(err)) => Some(err),
            _ => None,
        }
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
pub(crate) fn generate_key() -> Result<crate::channel::log::keys::SecretKey, OpsError> {
    crate::channel::log::keys::SecretKey::generate()
        .map_err(|err| OpsError::Random(err.to_string()))
}

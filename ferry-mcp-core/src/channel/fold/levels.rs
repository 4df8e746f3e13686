//! Levels and the one authority check.
//!
//! Levels come from master-signed grants (folded in [`crate::channel::fold::identity`]); a seated agent
//! without a grant is a Worker. [`authorize`] is the single place that answers "may this
//! agent do this operation now", for the CLI and the MCP tools alike, and its refusal
//! names what is missing (a level, a scope, or a condition: paused, unseated, locked,
//! expired). The table it applies is the one in `docs/mcp-server.md` ("Levels: what an agent may do").

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

use crate::channel::fold::identity::{GrantStanding, Identity, Seat};
use crate::channel::log::keys::PublicKey;
use crate::channel::log::names::{AgentName, ProjectId};
use crate::time::Timestamp;

/// What an agent may do, in increasing order of trust.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Level {
    /// Reads, hands work in, asks the human.
    Worker,
    /// Also claims, reports progress, submits and posts.
    Member,
    /// Also reviews, takes over as primary, applies updates.
    Orchestrator,
}

impl Level {
    pub const ALL: [Level; 3] = [Level::Worker, Level::Member, Level::Orchestrator];

    pub const fn as_str(self) -> &'static str {
        match self {
            Level::Worker => "worker",
            Level::Member => "member",
            Level::Orchestrator => "orchestrator",
        }
    }
}

impl fmt::Display for Level {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A level name that is not one of `worker`, `member`, `orchestrator`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown level {0:?} (expected worker, member or orchestrator)")]
pub struct UnknownLevel(pub String);

impl FromStr for Level {
    type Err = UnknownLevel;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.to_ascii_lowercase().as_str() {
            "worker" => Ok(Level::Worker),
            "member" => Ok(Level::Member),
            "orchestrator" => Ok(Level::Orchestrator),
            _ => Err(UnknownLevel(s.to_owned())),
        }
    }
}

/// Everything an agent can ask to do through the channel.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Operation {
    Read,
    HandIn,
    /// Ask the human for an approval.
    Ask,
    /// Say that one waits to take over as primary.
    StandBy,
    /// Give the primary role back (the primary's own).
    ReleasePrimary,
    Claim,
    Progress,
    Submit,
    Post,
    Review,
    /// Issue an order (the master does too).
    Issue,
    /// Hand another agent's order back to the board (a holder gone silent).
    HandBack,
    TakeOver,
    ApplyUpdate,
    /// Give an approval or answer an ask: the human's (master's) alone.
    Approve,
}

/// Who may do an operation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Requirement {
    /// Any agent at this level or above.
    AtLeast(Level),
    /// Only the master key, never an agent.
    Master,
}

impl Operation {
    pub const ALL: [Operation; 15] = [
        Operation::Read,
        Operation::HandIn,
        Operation::Ask,
        Operation::StandBy,
        Operation::ReleasePrimary,
        Operation::Claim,
        Operation::Progress,
        Operation::Submit,
        Operation::Post,
        Operation::Review,
        Operation::Issue,
        Operation::HandBack,
        Operation::TakeOver,
        Operation::ApplyUpdate,
        Operation::Approve,
    ];

    pub const fn as_str(self) -> &'static str {
        match self {
            Operation::Read => "read",
            Operation::HandIn => "hand in",
            Operation::Ask => "ask",
            Operation::StandBy => "stand by",
            Operation::ReleasePrimary => "release the primary role",
            Operation::Claim => "claim",
            Operation::Progress => "progress",
            Operation::Submit => "submit",
            Operation::Post => "post",
            Operation::Review => "review",
            Operation::Issue => "issue orders",
            Operation::HandBack => "hand back an order",
            Operation::TakeOver => "take over",
            Operation::ApplyUpdate => "apply updates",
            Operation::Approve => "approve",
        }
    }

    /// The level table of `docs/mcp-server.md`.
    pub const fn requirement(self) -> Requirement {
        match self {
            Operation::Read
            | Operation::HandIn
            | Operation::Ask
            | Operation::StandBy
            | Operation::ReleasePrimary => Requirement::AtLeast(Level::Worker),
            Operation::Claim | Operation::Progress | Operation::Submit | Operation::Post => {
                Requirement::AtLeast(Level::Member)
            }
            Operation::Review
            | Operation::Issue
            | Operation::HandBack
            | Operation::TakeOver
            | Operation::ApplyUpdate => Requirement::AtLeast(Level::Orchestrator),
            Operation::Approve => Requirement::Master,
        }
    }

    /// Whether the operation changes the channel (or the machine), and so is refused
    /// while the machine is paused.
    pub const fn is_write(self) -> bool {
        !matches!(self, Operation::Read)
    }
}

impl fmt::Display for Operation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The state of an agent's key on this machine.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LocalKey {
    /// No key for this agent on this machine.
    Missing,
    /// A sealed key without an unlock.
    Locked(PublicKey),
    /// A usable key.
    Ready(PublicKey),
}

impl LocalKey {
    pub fn public(&self) -> Option<&PublicKey> {
        match self {
            LocalKey::Missing => None,
            LocalKey::Locked(key) | LocalKey::Ready(key) => Some(key),
        }
    }
}

/// One authority question: may `agent`, whose key on this machine is `local_key`, do
/// `operation` (inside `scope`, if the operation has one) at `now`?
#[derive(Debug, Clone, Copy)]
pub struct Request<'a> {
    pub agent: &'a AgentName,
    pub local_key: &'a LocalKey,
    pub operation: Operation,
    /// The project scope the operation touches (an order's scope), if any.
    pub scope: Option<&'a str>,
    /// The machine-wide pause, with its reason, if the machine is paused.
    pub paused: Option<&'a PauseReason>,
    pub now: Timestamp,
}

/// Why the machine is paused (free text from the human; may be empty).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct PauseReason(pub String);

/// Why an operation was refused. Every variant names what is missing.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Refusal {
    #[error("{agent} is not seated: {why}")]
    Unseated {
        agent: AgentName,
        project: ProjectId,
        why: String,
        /// It has not joined here (no key, no roster entry): joining seats it.
        joins: bool,
    },
    #[error("{agent}'s key is locked")]
    Locked {
        agent: AgentName,
        project: ProjectId,
    },
    #[error("the machine is paused ({reason}): {operation} is refused")]
    Paused {
        operation: Operation,
        reason: String,
    },
    #[error("only the human (master key) may {operation}")]
    MasterOnly { operation: Operation },
    #[error("{operation} needs {needed}; {agent} is {has}")]
    MissingLevel {
        agent: AgentName,
        operation: Operation,
        needed: Level,
        has: Level,
    },
    #[error("{operation} needs {needed}; {agent}'s {granted} grant expired")]
    Expired {
        agent: AgentName,
        operation: Operation,
        needed: Level,
        granted: Level,
        at: Timestamp,
    },
    #[error("{operation} needs {needed} {}; {agent}'s grant covers {granted}", in_scope(.scope.as_deref()))]
    OutOfScope {
        agent: AgentName,
        operation: Operation,
        needed: Level,
        /// The order's scope (`None`: an order without one, which only an unscoped grant
        /// covers).
        scope: Option<String>,
        granted: String,
    },
}

/// Where an act falls short, in a refusal's words.
fn in_scope(scope: Option<&str>) -> String {
    match scope {
        Some(scope) => format!("in scope {scope}"),
        None => "on an order without a scope".to_owned(),
    }
}

/// The longest scope name, in characters.
pub const MAX_SCOPE: usize = 64;

/// Why a scope name is refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BadScope {
    #[error("a scope cannot be empty")]
    Empty,
    #[error("a scope is at most {MAX_SCOPE} characters")]
    TooLong,
    #[error("a scope cannot contain {0:?}")]
    Char(char),
}

/// A project scope as grants and orders name it: a non-empty word of at most [`MAX_SCOPE`]
/// characters without spaces, commas or control characters (scopes are listed
/// comma-separated). Scopes match exactly, case included.
pub fn check_scope(raw: &str) -> Result<(), BadScope> {
    if raw.is_empty() {
        return Err(BadScope::Empty);
    }
    if raw.chars().count() > MAX_SCOPE {
        return Err(BadScope::TooLong);
    }
    match raw
        .chars()
        .find(|c| c.is_whitespace() || c.is_control() || *c == ',')
    {
        Some(bad) => Err(BadScope::Char(bad)),
        None => Ok(()),
    }
}

/// What fixes a refusal on this machine. The refusal's text names no command: the CLI and the
/// tool facade each point to the fix in their own words ([`Fix::command`] is the command).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Fix {
    Join {
        agent: AgentName,
        project: ProjectId,
    },
    Unlock {
        agent: AgentName,
        project: ProjectId,
    },
    Resume,
    /// An unknown project: the human creates it (or registers its channel).
    Init {
        project: ProjectId,
    },
}

impl Fix {
    /// The `ferry` command that fixes it.
    pub fn command(&self) -> String {
        match self {
            Fix::Join { agent, project } => {
                format!("ferry channel join --as {agent} --project {project}")
            }
            Fix::Unlock { agent, project } => {
                format!("ferry key unlock --as {agent} --project {project}")
            }
            Fix::Resume => "ferry resume".to_owned(),
            Fix::Init { project } => format!("ferry init --project {project}"),
        }
    }

    /// The refusal's text with its fix, as the CLI and the facade say it.
    pub fn with(&self, refusal: &str) -> String {
        let command = self.command();
        match self {
            Fix::Join { .. } | Fix::Init { .. } => format!("{refusal} (run `{command}`)"),
            Fix::Unlock { .. } => format!("{refusal}: run `{command}`"),
            Fix::Resume => format!("{refusal} until `{command}`"),
        }
    }
}

impl Refusal {
    /// What fixes it here, when a command does.
    pub fn fix(&self) -> Option<Fix> {
        match self {
            Refusal::Unseated {
                agent,
                project,
                joins: true,
                ..
            } => Some(Fix::Join {
                agent: agent.clone(),
                project: project.clone(),
            }),
            Refusal::Locked { agent, project } => Some(Fix::Unlock {
                agent: agent.clone(),
                project: project.clone(),
            }),
            Refusal::Paused { .. } => Some(Fix::Resume),
            _ => None,
        }
    }

    /// A stable machine-readable code for the refusal (for tool results).
    pub const fn code(&self) -> &'static str {
        match self {
            Refusal::Unseated { .. } => "unseated",
            Refusal::Locked { .. } => "locked",
            Refusal::Paused { .. } => "paused",
            Refusal::MasterOnly { .. } => "master_only",
            Refusal::MissingLevel { .. } => "missing_level",
            Refusal::Expired { .. } => "expired",
            Refusal::OutOfScope { .. } => "out_of_scope",
        }
    }
}

/// The one answer to "may this agent do this operation now". On success, returns the level
/// the agent acted at.
///
/// Checks, in order: the agent is seated (its roster key is the key on this machine), its key
/// is not locked, the operation is an agent's at all, the machine is not paused (for writes,
/// which include taking over), and its level (from its grant, which must name its roster key,
/// be unexpired and cover the scope) reaches the operation's.
pub fn authorize(identity: &Identity, request: &Request<'_>) -> Result<Level, Refusal> {
    let agent = request.agent;
    let project = identity.project();
    let unseated = |why: &str, joins: bool| Refusal::Unseated {
        agent: agent.clone(),
        project: project.clone(),
        why: why.to_owned(),
        joins,
    };
    let Some(local) = request.local_key.public() else {
        // A name seated with a key another machine holds: joining here would not help.
        return Err(match identity.seat(agent) {
            Seat::Seated(_) => unseated(
                "no key for it on this machine (its seat's key is on another machine, where it writes; reading needs none)",
                false,
            ),
            _ => unseated("no key for it on this machine", true),
        });
    };
    match identity.seat(agent) {
        Seat::Seated(key) if key == local => {}
        Seat::Seated(_) => {
            return Err(unseated("the name is held by another key", false));
        }
        Seat::Contested(_) => {
            return Err(unseated(
                "several keys joined under this name; the master must grant one",
                false,
            ));
        }
        Seat::Vacant => {
            return Err(unseated("no roster entry in the channel", true));
        }
    }
    if matches!(request.local_key, LocalKey::Locked(_)) {
        return Err(Refusal::Locked {
            agent: agent.clone(),
            project: project.clone(),
        });
    }
    let needed = match request.operation.requirement() {
        Requirement::Master => {
            return Err(Refusal::MasterOnly {
                operation: request.operation,
            });
        }
        Requirement::AtLeast(level) => level,
    };
    if let Some(reason) = request.paused
        && request.operation.is_write()
    {
        return Err(Refusal::Paused {
            operation: request.operation,
            reason: if reason.0.is_empty() {
                "no reason given".into()
            } else {
                reason.0.clone()
            },
        });
    }
    let standing = identity.standing_in(agent, request.now, request.scope);
    if standing.level >= needed {
        return Ok(standing.level);
    }
    // The agent's own level falls short; say which condition, if any, kept a grant from
    // counting, before naming the plain missing level.
    if let GrantStanding::Expired { level, at } = standing.grant
        && level >= needed
    {
        return Err(Refusal::Expired {
            agent: agent.clone(),
            operation: request.operation,
            needed,
            granted: level,
            at,
        });
    }
    // A grant that would do, but not for this scope (its level counted above where it does).
    if let GrantStanding::Active { level, scopes } = &standing.grant
        && *level >= needed
        && !scopes.is_empty()
    {
        return Err(Refusal::OutOfScope {
            agent: agent.clone(),
            operation: request.operation,
            needed,
            scope: request.scope.map(str::to_owned),
            granted: scopes.join(", "),
        });
    }
    Err(Refusal::MissingLevel {
        agent: agent.clone(),
        operation: request.operation,
        needed,
        has: standing.level,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn levels_parse_in_any_case_and_order_by_trust() {
        assert_eq!("Member".parse::<Level>(), Ok(Level::Member));
        assert_eq!("admin".parse::<Level>(), Err(UnknownLevel("admin".into())));
        assert!(Level::Worker < Level::Member && Level::Member < Level::Orchestrator);
    }

    #[test]
    fn only_reading_is_allowed_while_paused() {
        let reads: Vec<_> = Operation::ALL.iter().filter(|op| !op.is_write()).collect();
        assert_eq!(reads, vec![&Operation::Read]);
    }
}

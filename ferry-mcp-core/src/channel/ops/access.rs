//! Levels: who stands at which, and the master's grants that set them.

use serde::Serialize;

use super::{OpsError, Saved};
use crate::channel::fold::identity::{GrantBody, GrantStanding, Seat};
use crate::channel::fold::levels::{Level, LocalKey, Operation, check_scope};
use crate::channel::log::keys::PublicKey;
use crate::channel::log::names::{AgentName, ProjectId};
use crate::channel::machine::home::{Home, KeyHolder};
use crate::channel::session::{Actor, Session};
use crate::time::Timestamp;

/// Why seating an agent, granting a level or handing mastership on failed. One variant per
/// cause; [`AccessError::code`] is stable.
#[derive(Debug, thiserror::Error)]
pub enum AccessError {
    /// What any operation can fail with (the session, the machine's state).
    #[error(transparent)]
    Ops(#[from] OpsError),
    #[error("the name {name} is taken by another key")]
    NameTaken { name: AgentName },
    /// Several keys joined under the name: one is picked by its key.
    #[error("{name} is contested by several keys")]
    Contested { name: AgentName },
    /// The master grants one of the keys (by its key).
    #[error(
        "{name} joined, but {keys} keys joined under this name: no key holds it until the master grants one"
    )]
    JoinContested {
        name: AgentName,
        keys: usize,
        project: ProjectId,
    },
    #[error("key {key} has not joined as {name}")]
    KeyNotJoined { name: AgentName, key: String },
    #[error("key {0} has been master of this project before; mastership is never handed back")]
    FormerMaster(String),
    #[error("the new key did not prove it is held: {0}")]
    BadHandover(String),
}

impl AccessError {
    /// A stable machine-readable code (tool results carry it).
    pub fn code(&self) -> &'static str {
        match self {
            Self::Ops(err) => err.code(),
            Self::NameTaken { .. } => "name_taken",
            Self::Contested { .. } | Self::JoinContested { .. } => "contested",
            Self::KeyNotJoined { .. } => "key_not_joined",
            Self::FormerMaster(_) => "former_master",
            Self::BadHandover(_) => "bad_handover",
        }
    }
}

/// How a name is held on the roster.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum SeatState {
    Seated,
    Contested,
}

impl SeatState {
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Seated => "seated",
            Self::Contested => "contested",
        }
    }
}

impl std::fmt::Display for SeatState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Where an agent's key stands on this machine.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum KeyHere {
    Missing,
    Locked,
    Ready,
    /// Its key file does not read (reported).
    Unreadable,
}

impl KeyHere {
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Missing => "missing",
            Self::Locked => "locked",
            Self::Ready => "ready",
            Self::Unreadable => "unreadable",
        }
    }
}

impl std::fmt::Display for KeyHere {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One agent's row in `access show` and `channel status`.
#[derive(Debug, Clone, Serialize)]
pub struct AgentRow {
    pub name: AgentName,
    pub seat: SeatState,
    /// The key holding the name (hex), or every candidate when contested.
    pub keys: Vec<String>,
    pub level: Level,
    /// The latest grant, described (`none`, `member`, `member in docs`, `orchestrator
    /// (expired)`, `member (void: names another key)`).
    pub grant: String,
    /// The agent's key on this machine.
    pub local_key: KeyHere,
    /// Whether the key holding the name differs from the one this machine pinned first.
    pub pin_changed: bool,
}

fn describe_grant(grant: &GrantStanding) -> String {
    match grant {
        GrantStanding::None => "none".into(),
        GrantStanding::Active { level, scopes } if scopes.is_empty() => level.to_string(),
        GrantStanding::Active { level, scopes } => format!("{level} in {}", scopes.join(", ")),
        GrantStanding::Expired { level, .. } => format!("{level} (expired)"),
        GrantStanding::Void { level, .. } => format!("{level} (void: names another key)"),
    }
}

/// The rows of every seated or contested agent (or only `name`). A machine-state file that
/// does not read (a key file, the pins) is reported in `problems`, never fatal.
pub(crate) fn agent_rows(
    session: &Session,
    only: Option<&AgentName>,
    now: Timestamp,
    problems: &mut Vec<String>,
) -> Result<Vec<AgentRow>, OpsError> {
    let home = session.home();
    let project = session.project();
    let identity = session.identity();
    let mut rows = Vec::new();
    for (name, seat) in identity.names() {
        if only.is_some_and(|only| only != name) {
            continue;
        }
        let (seat_word, keys) = match seat {
            Seat::Seated(key) => (SeatState::Seated, vec![key.to_string()]),
            Seat::Contested(keys) => (
                SeatState::Contested,
                keys.iter().map(ToString::to_string).collect(),
            ),
            Seat::Vacant => continue,
        };
        let standing = identity.standing(name, now);
        let local = home
            .key_state(project, &KeyHolder::Agent(name.clone()), now)
            .map_err(|err| problems.push(err.to_string()));
        let pin_changed = session.pin_changed().contains(name);
        rows.push(AgentRow {
            name: name.clone(),
            seat: seat_word,
            keys,
            level: standing.level,
            grant: describe_grant(&standing.grant),
            local_key: match local {
                Ok(LocalKey::Missing) => KeyHere::Missing,
                Ok(LocalKey::Locked(_)) => KeyHere::Locked,
                Ok(LocalKey::Ready(_)) => KeyHere::Ready,
                Err(()) => KeyHere::Unreadable,
            },
            pin_changed,
        });
    }
    if let Some(name) = only
        && rows.is_empty()
    {
        return Err(OpsError::NotSeated {
            name: name.clone(),
            project: project.clone(),
        });
    }
    Ok(rows)
}

/// Every agent with its level (or only `name`).
pub fn access_show(
    home: &Home,
    project: &ProjectId,
    name: Option<&AgentName>,
    now: Timestamp,
) -> Result<Saved<Vec<AgentRow>>, AccessError> {
    let mut session = Session::open(home, project, Actor::Observer, now)?;
    let rows = agent_rows(&session, name, now, &mut Vec::new())?;
    Ok(Saved::after(&mut session, rows))
}

/// Whether `new` lets its key do less than `previous` did: a lower level in some scope (or
/// outside every scope: scopes where there were none, or fewer of them), or an expiry where
/// there was none or an earlier one.
fn takes_away(previous: Option<&GrantBody>, new: &GrantBody) -> bool {
    let Some(previous) = previous.filter(|previous| previous.key == new.key) else {
        return false;
    };
    // Each scope either names, and every other (`None` stands for them all).
    let lower = previous
        .scopes
        .iter()
        .chain(&new.scopes)
        .map(|scope| Some(scope.as_str()))
        .chain([None])
        .any(|scope| new.level_in(scope) < previous.level_in(scope));
    let sooner = match (new.expires, previous.expires) {
        (Some(_), None) => true,
        (Some(new), Some(previous)) => new < previous,
        (None, _) => false,
    };
    lower || sooner
}

/// A level to grant.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GrantRequest {
    pub level: Level,
    pub scopes: Vec<String>,
    pub expires: Option<Timestamp>,
    /// Which key to grant when the name is contested.
    pub key: Option<PublicKey>,
}

/// Grants `name` a level, signed by the master key on this machine (which must be the
/// project's current master). The grant names the agent's roster key.
pub fn access_set(
    home: &Home,
    project: &ProjectId,
    name: &AgentName,
    request: &GrantRequest,
    now: Timestamp,
) -> Result<Saved<GrantBody>, AccessError> {
    for scope in &request.scopes {
        check_scope(scope).map_err(OpsError::from)?;
    }
    let mut session = Session::open(home, project, Actor::Master, now)?;
    session.master_key(now)?;
    let key = match (session.identity().seat(name), &request.key) {
        (Seat::Vacant, _) => {
            return Err(OpsError::NotSeated {
                name: name.clone(),
                project: project.clone(),
            }
            .into());
        }
        (Seat::Seated(held), None) => *held,
        (Seat::Seated(held), Some(key)) if held == key => *key,
        (Seat::Seated(_), Some(key)) => {
            return Err(AccessError::KeyNotJoined {
                name: name.clone(),
                key: key.to_string(),
            });
        }
        (Seat::Contested(_), None) => return Err(AccessError::Contested { name: name.clone() }),
        (Seat::Contested(keys), Some(key)) if keys.contains(key) => *key,
        (Seat::Contested(_), Some(key)) => {
            return Err(AccessError::KeyNotJoined {
                name: name.clone(),
                key: key.to_string(),
            });
        }
    };
    let mut body = GrantBody {
        agent: name.clone(),
        key,
        level: request.level,
        scopes: request.scopes.clone(),
        expires: request.expires,
        after_seq: None,
    };
    // A grant that takes something away binds everything of the key's log not read here yet
    // (ADR 0005, rule 2a): old `seen` positions cannot keep the lost level alive.
    if takes_away(
        session.identity().grant(name).map(|grant| &grant.body),
        &body,
    ) {
        body.after_seq = Some(session.log_seq(name, &key));
    }
    session.append(Operation::Approve, None, &body, now)?;
    Ok(Saved::after(&mut session, body))
}

//! The channel operations the `ferry` commands (and later the MCP tools) call: create a
//! project, seat an agent, show and set levels, hand mastership on, pause and resume, and
//! report status.
//!
//! Each operation is a plain function over a [`Home`] (machine state) and the channel it
//! registers; the caller passes `now`. Nothing here prints: results are values the caller
//! renders, errors are [`OpsError`] with one short line each.

use std::path::{Path, PathBuf};

use serde::Serialize;
use serde_json::json;

use super::entry::VerifiedEntry;
use super::home::{Home, HomeError, KeyHolder, Pause, PinOutcome, SealCost};
use super::identity::{FoldProblem, GrantBody, GrantStanding, HandoverBody, Identity, Seat, kinds};
use super::keys::{PublicKey, SecretKey};
use super::levels::{self, Level, LocalKey, Operation, Refusal, Request};
use super::names::{AgentName, ProjectId};
use super::reader::{IntegrityProblem, Reader};
use super::store::{Channel, StoreError};
use crate::time::Timestamp;

/// Why an operation failed.
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
    #[error("no random bytes for a new key: {0}")]
    Random(String),
    #[error(transparent)]
    Refused(#[from] Refusal),
}

/// A project's channel, opened and folded: what every operation starts from.
#[derive(Debug)]
pub struct ProjectView {
    pub project: ProjectId,
    pub channel: Channel,
    reader: Reader,
    pub identity: Identity,
    /// Integrity problems the log layer reported so far.
    pub integrity: Vec<IntegrityProblem>,
    /// Machine-state files that did not read while opening (reported, not fatal).
    pub local_problems: Vec<String>,
}

impl ProjectView {
    /// Opens the registered channel of `project` and folds everything in it.
    pub fn open(home: &Home, project: &ProjectId) -> Result<Self, OpsError> {
        let channel_dir = home.channel_dir(project)?;
        let channel = Channel::open(&channel_dir)?;
        check_project(&channel, project)?;
        let genesis = *channel.genesis_master();
        pin_genesis_master(home, project, &genesis)?;
        let reader = channel.reader();
        let mut view = Self {
            project: project.clone(),
            channel,
            reader,
            identity: Identity::new(project.clone(), genesis),
            integrity: Vec::new(),
            local_problems: Vec::new(),
        };
        view.refresh();
        if let Err(err) = view.pin_roster(home) {
            view.local_problems.push(err.to_string());
        }
        Ok(view)
    }

    /// Pins the key holding each seated name, if this machine has not seen the name before,
    /// and returns the names whose key differs from the pinned one (never re-pinned).
    pub fn pin_roster(&self, home: &Home) -> Result<Vec<AgentName>, OpsError> {
        let mut changed = Vec::new();
        for (name, seat) in self.identity.names() {
            if let Seat::Seated(key) = seat
                && let PinOutcome::Changed { .. } = home.pin_agent(&self.project, name, key)?
            {
                changed.push(name.clone());
            }
        }
        Ok(changed)
    }

    /// Reads and folds what is new in the channel; returns the new entries. It cannot fail:
    /// what does not read is kept in [`ProjectView::integrity`].
    pub fn refresh(&mut self) -> Vec<VerifiedEntry> {
        let batch = self.reader.poll();
        self.identity.feed(&batch.entries);
        self.integrity.extend(batch.problems);
        batch.entries
    }

    fn append(
        &mut self,
        author: &AgentName,
        key: &SecretKey,
        kind: &str,
        body: serde_json::Value,
        now: Timestamp,
    ) -> Result<VerifiedEntry, OpsError> {
        let mut writer = self.channel.writer(author, key)?;
        let entry = writer.append(kind, body, now)?;
        self.refresh();
        Ok(entry)
    }
}

/// Refuses a channel whose genesis names another project than `project`.
fn check_project(channel: &Channel, project: &ProjectId) -> Result<(), OpsError> {
    if channel.project() != project {
        return Err(OpsError::WrongProject {
            expected: project.clone(),
            found: channel.project().clone(),
        });
    }
    Ok(())
}

/// Pins the genesis master of `project`, refusing one that differs from the pinned key.
fn pin_genesis_master(
    home: &Home,
    project: &ProjectId,
    master: &PublicKey,
) -> Result<(), OpsError> {
    if let PinOutcome::Changed { .. } = home.pin_master(project, master)? {
        return Err(OpsError::MasterPinChanged {
            project: project.clone(),
        });
    }
    Ok(())
}

fn generate_key() -> Result<SecretKey, OpsError> {
    SecretKey::generate().map_err(|err| OpsError::Random(err.to_string()))
}

/// What [`init`] created.
#[derive(Debug, Clone, Serialize)]
pub struct Created {
    pub project: ProjectId,
    pub channel: PathBuf,
    pub master: PublicKey,
}

/// Creates `project`: its channel folder (genesis signed by a new master key), the master
/// key on this machine (sealed when a passphrase is given), and the registry entry.
pub fn init(
    home: &Home,
    project: &ProjectId,
    channel_dir: &Path,
    passphrase: Option<(&[u8], SealCost)>,
    now: Timestamp,
) -> Result<Created, OpsError> {
    if home.channel_dir(project).is_ok() {
        return Err(OpsError::ProjectExists(project.clone()));
    }
    let master = generate_key()?;
    // The key is stored before the channel exists, so a failure never leaves a channel
    // whose master key is lost.
    home.store_key(project, &KeyHolder::Master, &master, passphrase)?;
    if let Err(err) = Channel::create(channel_dir, project, &master, now) {
        // No channel names this key: drop it so that `init` can be retried.
        home.discard_new_key(project, &KeyHolder::Master)?;
        return Err(match err {
            StoreError::AlreadyExists(dir) => OpsError::ChannelExists(dir),
            other => other.into(),
        });
    }
    home.register_project(project, channel_dir)?;
    home.pin_master(project, &master.public_key())?;
    Ok(Created {
        project: project.clone(),
        channel: channel_dir.to_owned(),
        master: master.public_key(),
    })
}

/// Registers an existing channel folder (synced from another machine) as `project` on this
/// machine, after checking that it is that project's channel; pins its master key.
pub fn add_existing(
    home: &Home,
    project: &ProjectId,
    channel_dir: &Path,
) -> Result<PublicKey, OpsError> {
    let channel = Channel::open(channel_dir)?;
    check_project(&channel, project)?;
    home.register_project(project, channel_dir)?;
    let master = *channel.genesis_master();
    pin_genesis_master(home, project, &master)?;
    Ok(master)
}

/// What [`join`] did.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Joined {
    /// A new roster entry seats the agent.
    Seated,
    /// The agent was seated already with this machine's key; nothing was written.
    AlreadySeated,
}

/// Seats `name` in `project` on this machine: a key here (created, sealed when a passphrase
/// is given, if there is none yet) and its roster entry in the channel. Idempotent; a name
/// that another key holds is refused.
pub fn join(
    home: &Home,
    project: &ProjectId,
    name: &AgentName,
    passphrase: Option<(&[u8], SealCost)>,
    now: Timestamp,
) -> Result<(Joined, PublicKey), OpsError> {
    let mut view = ProjectView::open(home, project)?;
    let holder = KeyHolder::Agent(name.clone());
    let local = home.key_state(project, &holder, now)?;
    let contested = |keys: usize| OpsError::JoinContested {
        name: name.clone(),
        keys,
        project: project.clone(),
    };
    let taken = |key: &PublicKey| match view.identity.seat(name) {
        Seat::Vacant => false,
        Seat::Seated(held) => held != key,
        Seat::Contested(keys) => !keys.contains(key),
    };
    let key = match local {
        LocalKey::Missing => {
            if view.identity.seat(name) != Seat::Vacant {
                return Err(OpsError::NameTaken { name: name.clone() });
            }
            let key = generate_key()?;
            home.store_key(project, &holder, &key, passphrase)?;
            key
        }
        LocalKey::Locked(public) | LocalKey::Ready(public) => {
            if taken(&public) {
                return Err(OpsError::NameTaken { name: name.clone() });
            }
            match view.identity.seat(name) {
                Seat::Seated(held) if *held == public => {
                    home.pin_agent(project, name, &public)?;
                    return Ok((Joined::AlreadySeated, public));
                }
                // Already a candidate: another roster entry would change nothing.
                Seat::Contested(keys) => return Err(contested(keys.len())),
                _ => {}
            }
            home.load_key(project, &holder, now)?
        }
    };
    view.append(name, &key, kinds::ROSTER_JOIN, json!({}), now)?;
    // A roster entry another machine wrote for this name may have synced meanwhile.
    if let Seat::Contested(keys) = view.identity.seat(name) {
        return Err(contested(keys.len()));
    }
    home.pin_agent(project, name, &key.public_key())?;
    Ok((Joined::Seated, key.public_key()))
}

/// One agent's row in `access show` and `channel status`.
#[derive(Debug, Clone, Serialize)]
pub struct AgentRow {
    pub name: AgentName,
    /// `seated` or `contested`.
    pub seat: &'static str,
    /// The key holding the name (hex), or every candidate when contested.
    pub keys: Vec<String>,
    pub level: Level,
    /// The latest grant, described (`none`, `member`, `member in docs`, `orchestrator
    /// (expired)`, `member (void: names another key)`).
    pub grant: String,
    /// The agent's key on this machine: `missing`, `locked` or `ready`.
    pub local_key: &'static str,
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
fn agent_rows(
    home: &Home,
    view: &ProjectView,
    only: Option<&AgentName>,
    now: Timestamp,
    problems: &mut Vec<String>,
) -> Result<Vec<AgentRow>, OpsError> {
    let pins = home.pins(&view.project).unwrap_or_else(|err| {
        problems.push(err.to_string());
        Default::default()
    });
    let mut rows = Vec::new();
    for (name, seat) in view.identity.names() {
        if only.is_some_and(|only| only != name) {
            continue;
        }
        let (seat_word, keys): (&'static str, Vec<String>) = match seat {
            Seat::Seated(key) => ("seated", vec![key.to_string()]),
            Seat::Contested(keys) => ("contested", keys.iter().map(ToString::to_string).collect()),
            Seat::Vacant => continue,
        };
        let standing = view.identity.standing(name, now);
        let local = home
            .key_state(&view.project, &KeyHolder::Agent(name.clone()), now)
            .map_err(|err| problems.push(err.to_string()));
        let pin_changed = match (pins.agents.get(name.as_str()), seat) {
            (Some(pinned), Seat::Seated(key)) => *pinned != key.to_string(),
            _ => false,
        };
        rows.push(AgentRow {
            name: name.clone(),
            seat: seat_word,
            keys,
            level: standing.level,
            grant: describe_grant(&standing.grant),
            local_key: match local {
                Ok(LocalKey::Missing) => "missing",
                Ok(LocalKey::Locked(_)) => "locked",
                Ok(LocalKey::Ready(_)) => "ready",
                Err(()) => "unreadable",
            },
            pin_changed,
        });
    }
    if let Some(name) = only
        && rows.is_empty()
    {
        return Err(OpsError::NotSeated {
            name: name.clone(),
            project: view.project.clone(),
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
) -> Result<Vec<AgentRow>, OpsError> {
    let view = ProjectView::open(home, project)?;
    agent_rows(home, &view, name, now, &mut Vec::new())
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
) -> Result<GrantBody, OpsError> {
    let mut view = ProjectView::open(home, project)?;
    let master = current_master_key(home, &view, now)?;
    let key = match (view.identity.seat(name), &request.key) {
        (Seat::Vacant, _) => {
            return Err(OpsError::NotSeated {
                name: name.clone(),
                project: project.clone(),
            });
        }
        (Seat::Seated(held), None) => *held,
        (Seat::Seated(held), Some(key)) if held == key => *key,
        (Seat::Seated(_), Some(key)) => {
            return Err(OpsError::KeyNotJoined {
                name: name.clone(),
                key: key.to_string(),
            });
        }
        (Seat::Contested(_), None) => return Err(OpsError::Contested { name: name.clone() }),
        (Seat::Contested(keys), Some(key)) if keys.contains(key) => *key,
        (Seat::Contested(_), Some(key)) => {
            return Err(OpsError::KeyNotJoined {
                name: name.clone(),
                key: key.to_string(),
            });
        }
    };
    let body = GrantBody {
        agent: name.clone(),
        key,
        level: request.level,
        scopes: request.scopes.clone(),
        expires: request.expires,
    };
    view.append(
        &AgentName::master(),
        &master,
        kinds::GRANT,
        Identity::grant_body(&body),
        now,
    )?;
    Ok(body)
}

/// The current master key on this machine, or [`OpsError::NotTheMaster`].
fn current_master_key(
    home: &Home,
    view: &ProjectView,
    now: Timestamp,
) -> Result<SecretKey, OpsError> {
    let master = match home.load_key(&view.project, &KeyHolder::Master, now) {
        Ok(master) => master,
        Err(HomeError::KeyMissing { .. }) => {
            return Err(OpsError::NotTheMaster(view.project.clone()));
        }
        Err(other) => return Err(other.into()),
    };
    if master.public_key() != *view.identity.master() {
        return Err(OpsError::NotTheMaster(view.project.clone()));
    }
    Ok(master)
}

/// Hands mastership of `project` on to `to`, by a `master.handover` entry signed with the
/// current master key on this machine. Afterwards this machine's master key is a former
/// master's: its grants are void and it can never be master again.
pub fn master_handover(
    home: &Home,
    project: &ProjectId,
    to: &PublicKey,
    now: Timestamp,
) -> Result<PublicKey, OpsError> {
    let mut view = ProjectView::open(home, project)?;
    let master = current_master_key(home, &view, now)?;
    if view.identity.masters().contains(to) {
        return Err(OpsError::FormerMaster(to.to_string()));
    }
    let body =
        serde_json::to_value(HandoverBody { key: *to }).expect("a handover body always serializes");
    view.append(
        &AgentName::master(),
        &master,
        kinds::MASTER_HANDOVER,
        body,
        now,
    )?;
    debug_assert_eq!(view.identity.master(), to);
    Ok(master.public_key())
}

/// Creates a master key on this machine for a registered project whose master will hand
/// mastership to it (`ferry master handover --to-key` on the master's machine). The key
/// is master only once that handover is in the channel.
pub fn new_master_key(
    home: &Home,
    project: &ProjectId,
    passphrase: Option<(&[u8], SealCost)>,
) -> Result<PublicKey, OpsError> {
    home.channel_dir(project)?;
    let key = generate_key()?;
    home.store_key(project, &KeyHolder::Master, &key, passphrase)?;
    Ok(key.public_key())
}

/// Pauses every agent on this machine.
pub fn pause(home: &Home, reason: &str, now: Timestamp) -> Result<(), OpsError> {
    Ok(home.pause(reason, now)?)
}

/// Lifts the pause; returns whether the machine was paused.
pub fn resume(home: &Home) -> Result<bool, OpsError> {
    Ok(home.resume()?)
}

/// A project's status: who is seated at which level, and every problem found.
#[derive(Debug, Clone, Serialize)]
pub struct Status {
    pub project: ProjectId,
    pub channel: PathBuf,
    pub master: String,
    /// The current master key on this machine: `missing`, `locked`, `ready`, `former` (this
    /// machine holds a key that handed mastership on) or `not_master` (a key made with
    /// `ferry master new-key` that no handover names yet).
    pub master_key_here: &'static str,
    pub paused: Option<Pause>,
    pub agents: Vec<AgentRow>,
    /// One line each: integrity problems of the logs, machine-state files that did not
    /// read, identity problems, and names whose key differs from the pinned one.
    pub problems: Vec<String>,
}

/// The status of `project`.
pub fn status(home: &Home, project: &ProjectId, now: Timestamp) -> Result<Status, OpsError> {
    let view = ProjectView::open(home, project)?;
    let mut problems: Vec<String> = view.integrity.iter().map(ToString::to_string).collect();
    let agents = agent_rows(home, &view, None, now, &mut problems)?;
    problems.extend(view.identity.problems().iter().map(FoldProblem::to_string));
    problems.extend(view.local_problems.iter().cloned());
    problems.extend(agents.iter().filter(|row| row.pin_changed).map(|row| {
        format!(
            "{}: the key holding the name differs from the key pinned on this machine",
            row.name
        )
    }));
    let master_key_here = match home.key_state(project, &KeyHolder::Master, now) {
        Ok(LocalKey::Missing) => "missing",
        Ok(LocalKey::Locked(key) | LocalKey::Ready(key)) if key != *view.identity.master() => {
            if view.identity.masters().contains(&key) {
                "former"
            } else {
                "not_master"
            }
        }
        Ok(LocalKey::Locked(_)) => "locked",
        Ok(LocalKey::Ready(_)) => "ready",
        Err(err) => {
            problems.push(err.to_string());
            "unreadable"
        }
    };
    Ok(Status {
        master_key_here,
        project: project.clone(),
        channel: view.channel.dir().to_owned(),
        master: view.identity.master().to_string(),
        paused: home.pause_state()?,
        agents,
        problems,
    })
}

/// May agent `name`, with its key on this machine, do `operation` (in `scope`) now?
/// The machine's pause switch and key state are read from `home`; the level from `view`.
pub fn authorize(
    home: &Home,
    view: &ProjectView,
    name: &AgentName,
    operation: Operation,
    scope: Option<&str>,
    now: Timestamp,
) -> Result<Level, OpsError> {
    let local_key = home.key_state(&view.project, &KeyHolder::Agent(name.clone()), now)?;
    let pause = home.pause_state()?;
    let request = Request {
        agent: name,
        local_key: &local_key,
        operation,
        scope,
        paused: pause.as_ref().map(|pause| &pause.reason),
        now,
    };
    Ok(levels::authorize(&view.identity, &request)?)
}

//! What a project looks like from this machine: agents, levels, keys, and every problem.

use std::path::PathBuf;

use serde::Serialize;

use super::OpsError;
use super::access::{AgentRow, agent_rows};
use crate::channel::fold::identity::FoldProblem;
use crate::channel::fold::levels::LocalKey;
use crate::channel::fold::state::Sections;
use crate::channel::log::names::ProjectId;
use crate::channel::machine::home::{Home, KeyHolder, Pause};
use crate::channel::session::{Actor, Session};
use crate::time::Timestamp;

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

/// The status of `project`. A kept state that could not be saved is one of its problems: the
/// status was read all the same.
pub fn status(home: &Home, project: &ProjectId, now: Timestamp) -> Result<Status, OpsError> {
    let mut session = Session::open(home, project, Actor::Observer, now)?;
    let mut status = status_of(&mut session, now)?;
    if let Err(err) = session.save() {
        status.problems.push(format!(
            "this machine's kept state could not be saved ({err}); the next open reads again what it could not keep"
        ));
    }
    Ok(status)
}

/// The status of the project `session` is open on, as it stands after its last refresh (the
/// `ferry_status` tool's, through the server's session).
pub fn status_of(session: &mut Session, now: Timestamp) -> Result<Status, OpsError> {
    // The folds' problems are in every fold: all are loaded.
    session.load(Sections::ALL, now);
    let (home, project) = (session.home(), session.project());
    let (integrity, dropped) = session.integrity_problems();
    let mut problems: Vec<String> = integrity.iter().map(ToString::to_string).collect();
    if dropped > 0 {
        problems.push(format!("{dropped} more integrity problems were not kept"));
    }
    let agents = agent_rows(session, None, now, &mut problems)?;
    let identity = session.identity();
    problems.extend(
        session
            .state()
            .problems()?
            .iter()
            .map(FoldProblem::to_string),
    );
    let dropped = session.state().dropped_problems();
    if dropped > 0 {
        problems.push(format!("{dropped} more fold problems were not kept"));
    }
    problems.extend(session.local_problems().iter().cloned());
    problems.extend(agents.iter().filter(|row| row.pin_changed).map(|row| {
        format!(
            "{}: the key holding the name differs from the key pinned on this machine",
            row.name
        )
    }));
    let master_key_here = match home.key_state(project, &KeyHolder::Master, now) {
        Ok(LocalKey::Missing) => "missing",
        Ok(LocalKey::Locked(key) | LocalKey::Ready(key)) if key != *identity.master() => {
            if identity.masters().contains(&key) {
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
    let status = Status {
        master_key_here,
        project: project.clone(),
        channel: session.channel_dir(),
        master: identity.master().to_string(),
        paused: home.pause_state()?,
        agents,
        problems,
    };
    Ok(status)
}

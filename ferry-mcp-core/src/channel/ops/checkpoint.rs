//! Writing a master's checkpoint (ADR 0023): the tip of every agent's log this machine
//! verified, signed with the master key, so that a new machine reads the history up to those
//! tips without checking each signature again.

use serde::Serialize;

use super::access::AccessError;
use crate::channel::fold::checkpoint::CheckpointBody;
use crate::channel::fold::levels::Operation;
use crate::channel::log::names::ProjectId;
use crate::channel::machine::home::Home;
use crate::channel::session::{Actor, Session};
use crate::time::Timestamp;

/// What a checkpoint written now holds.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Written {
    /// The checkpoint's seq in the master's log.
    pub seq: u64,
    /// How many logs it vouches for, and their entries in all.
    pub logs: usize,
    pub entries: u64,
}

/// Writes a checkpoint of `session`'s verified tips (the session must be the master's).
pub fn write(session: &mut Session, now: Timestamp) -> Result<Written, AccessError> {
    session.refresh(now);
    session.master_key(now)?;
    let body = CheckpointBody::of_tips(session.verified_tips());
    let written = Written {
        seq: 0,
        logs: body.tips.len(),
        entries: body.tips.iter().map(|tip| tip.seq).sum(),
    };
    let entry = session.append(Operation::Approve, None, &body, now)?;
    Ok(Written {
        seq: entry.seq(),
        ..written
    })
}

/// `ferry channel checkpoint`: opens `project` as the master, writes a checkpoint, keeps the
/// state.
pub fn checkpoint(
    home: &Home,
    project: &ProjectId,
    now: Timestamp,
) -> Result<Written, AccessError> {
    let mut session = Session::open(home, project, Actor::Master, now)?;
    let written = write(&mut session, now)?;
    session.save()?;
    Ok(written)
}

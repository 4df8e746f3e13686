//! Mastership: making a key for the next master, and handing mastership on to it.
//!
//! A handover needs the new key's countersignature (ADR 0004): `ferry master new-key` makes
//! the key and its proof on the new master's machine, and `ferry master handover` on the
//! current master's machine puts both in the handover. A key nobody holds, or a weak one,
//! can make no proof, so mastership can never be handed to it.

use super::access::AccessError;
use serde::Serialize;

use super::{Saved, generate_key};
use crate::channel::fold::identity::{self, HandoverBody};
use crate::channel::fold::levels::Operation;
use crate::channel::log::keys::{PublicKey, Signature};
use crate::channel::log::names::ProjectId;
use crate::channel::machine::home::{Home, KeyHolder, SealCost};
use crate::channel::session::{Actor, Session};
use crate::time::Timestamp;

/// A new master key made on this machine, and its proof for the handover.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct NewMasterKey {
    pub key: PublicKey,
    pub proof: Signature,
}

/// Hands mastership of `project` on to `to` (with its `proof`), by a `master.handover` entry
/// signed with the current master key on this machine. Afterwards this machine's master key is
/// a former master's: what it signed until now stays valid, nothing it signs later counts.
pub fn master_handover(
    home: &Home,
    project: &ProjectId,
    to: &PublicKey,
    proof: &Signature,
    now: Timestamp,
) -> Result<Saved<PublicKey>, AccessError> {
    let mut session = Session::open(home, project, Actor::Master, now)?;
    let master = session.master_key(now)?;
    if session.identity().masters().contains(to) {
        return Err(AccessError::FormerMaster(to.to_string()));
    }
    let body = HandoverBody {
        key: *to,
        proof: *proof,
    };
    identity::check_handover(project, &body)
        .map_err(|err| AccessError::BadHandover(err.to_string()))?;
    session.append(Operation::Approve, None, &body, now)?;
    Ok(Saved::after(&mut session, master.public_key()))
}

/// Creates a master key on this machine for a registered project whose master will hand
/// mastership to it, with the proof the handover needs. The key is master only once that
/// handover is in the channel.
pub fn new_master_key(
    home: &Home,
    project: &ProjectId,
    passphrase: Option<(&[u8], SealCost)>,
) -> Result<NewMasterKey, AccessError> {
    home.channel_dir(project)?;
    let key = generate_key()?;
    home.store_key(project, &KeyHolder::Master, &key, passphrase)?;
    Ok(NewMasterKey {
        key: key.public_key(),
        proof: identity::handover_proof(project, &key),
    })
}

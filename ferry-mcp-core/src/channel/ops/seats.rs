//! Seating an agent on this machine: its key here and its roster entry in the channel.

use super::access::AccessError;
use serde::Serialize;

use super::{Saved, generate_key};
use crate::channel::fold::body::JoinBody;
use crate::channel::fold::identity::Seat;
use crate::channel::fold::levels::LocalKey;
use crate::channel::log::keys::PublicKey;
use crate::channel::log::names::{AgentName, ProjectId};
use crate::channel::machine::home::{Home, KeyHolder, SealCost};
use crate::channel::session::{Actor, Session};
use crate::time::Timestamp;

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
) -> Result<Saved<(Joined, PublicKey)>, AccessError> {
    let mut session = Session::open(home, project, Actor::Observer, now)?;
    let result = join_in(&mut session, name, passphrase, now);
    // What was read is kept even when the join was refused.
    let saved = Saved::after(&mut session, ());
    Ok(Saved {
        value: result?,
        unsaved: saved.unsaved,
    })
}

fn join_in(
    session: &mut Session,
    name: &AgentName,
    passphrase: Option<(&[u8], SealCost)>,
    now: Timestamp,
) -> Result<(Joined, PublicKey), AccessError> {
    // A name is copied into every entry and path: one shaped like a secret never gets in.
    crate::guard::check_name(name.as_str())?;
    let home = session.home().clone();
    let project = session.project().clone();
    let holder = KeyHolder::Agent(name.clone());
    let local = home.key_state(&project, &holder, now)?;
    let contested = |keys: usize| AccessError::JoinContested {
        name: name.clone(),
        keys,
        project: project.clone(),
    };
    let identity = session.identity();
    let taken = |key: &PublicKey| match identity.seat(name) {
        Seat::Vacant => false,
        Seat::Seated(held) => held != key,
        Seat::Contested(keys) => !keys.contains(key),
    };
    let key = match local {
        LocalKey::Missing => {
            if identity.seat(name) != Seat::Vacant {
                return Err(AccessError::NameTaken { name: name.clone() });
            }
            let key = generate_key()?;
            home.store_key(&project, &holder, &key, passphrase)?;
            key
        }
        LocalKey::Locked(public) | LocalKey::Ready(public) => {
            if taken(&public) {
                return Err(AccessError::NameTaken { name: name.clone() });
            }
            match identity.seat(name) {
                Seat::Seated(held) if *held == public => {
                    // Pins are a witness: a pins file that does not read is reported by status,
                    // and never undoes a seat.
                    let _ = home.pin_agent(&project, name, &public);
                    return Ok((Joined::AlreadySeated, public));
                }
                // Already a candidate: another roster entry would change nothing.
                Seat::Contested(keys) => return Err(contested(keys.len())),
                _ => {}
            }
            home.open_key(&project, &holder, passphrase.map(|(phrase, _)| phrase), now)?
        }
    };
    session.append_unchecked(name, &key, &JoinBody {}, now)?;
    // A roster entry another machine wrote for this name may have synced meanwhile.
    if let Seat::Contested(keys) = session.identity().seat(name) {
        return Err(contested(keys.len()));
    }
    // The seat is written: a pins file that does not read is reported, not a failure.
    let _ = home.pin_agent(&project, name, &key.public_key());
    Ok((Joined::Seated, key.public_key()))
}

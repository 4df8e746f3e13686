//! Secrets shared with one agent (`secret.share`): which named secret was sealed to whom, in
//! which blob. The values never enter the fold: they are sealed in the blob to the recipient's
//! key (`channel::log::secret`), and only `ferry channel secret get` on that agent's machine opens
//! them. A share counts when its sender is the master or a seated agent at Member or above.
//!
//! **Which share stands** is decided by causal rules, never by the author's claimed time
//! (ADR 0017): a sender can date its entry as it likes, so the first version, where the latest
//! by time stood, let a Member forward-date its share and replace the human's value for
//! another agent.
//! 1. A share from the master outranks every share from an agent: once the human has sent a
//!    secret to an agent, only the human replaces it, with its latest share in master order.
//! 2. Among agents' shares, each names `after`, the share of that secret to that agent that
//!    stood when its sender wrote it (none at first): the shares form a chain resolved from
//!    its root like the primary's. A share replaces only the one it follows; shares following
//!    the same one are ordered by the race tie-break ([`super::race`]); one that follows a
//!    share that does not count or is unknown does not count.

use std::collections::{BTreeMap, HashMap};

use serde::{Deserialize, Serialize};

use super::race::tiebreak;
use super::{Acted, EntryId};
use crate::channel::fold::identity::{FoldProblem, FoldProblemKind, Identity, MasterPos, Seat};
use crate::channel::fold::levels::Level;
use crate::channel::log::entry::EntryHash;
use crate::channel::log::keys::PublicKey;
use crate::channel::log::names::AgentName;
use crate::time::Timestamp;

/// The entry kind of a shared secret.
pub const SHARE: &str = "secret.share";

/// The body of `secret.share`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ShareBody {
    pub name: String,
    pub to: AgentName,
    /// The recipient's key the secret is sealed to (hex): a new key cannot open it.
    pub key: PublicKey,
    /// The sealed bytes' blob id (hex).
    pub blob: String,
    /// The share of this secret to this agent that stood when it was written (none: the
    /// first). Only an agent's share is judged by it; the master's outranks them all.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub after: Option<EntryHash>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seen: Option<MasterPos>,
}

/// One share, as folded.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Share {
    pub id: EntryId,
    pub name: String,
    pub from: AgentName,
    from_key: PublicKey,
    by_master: bool,
    pub to: AgentName,
    pub to_key: PublicKey,
    pub blob: String,
    pub time: Timestamp,
    pos: MasterPos,
    /// This share's entry hash: what a later share names as `after`.
    pub hash: EntryHash,
    after: Option<EntryHash>,
}

impl Share {
    fn counts(&self, identity: &Identity) -> bool {
        self.by_master
            || (identity.seat(&self.from) == Seat::Seated(&self.from_key)
                && identity.level_at(
                    &self.from,
                    &self.from_key,
                    self.id.seq(),
                    self.pos,
                    self.time,
                ) >= Level::Member)
    }
}

/// Every share, by recipient then name. See the module docs for which one stands.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Secrets {
    shares: BTreeMap<AgentName, BTreeMap<String, Vec<Share>>>,
    problems: Vec<FoldProblem>,
}

impl Secrets {
    pub fn problems(&self) -> Vec<FoldProblem> {
        self.problems.clone()
    }

    pub fn feed(&mut self, acted: &Acted<'_>) {
        if acted.kind() != SHARE {
            return;
        }
        let body = match ShareBody::deserialize(acted.body()) {
            Ok(body) => body,
            Err(err) => {
                if self.problems.len() < 100 {
                    self.problems.push(FoldProblem::about(
                        acted.entry,
                        FoldProblemKind::MalformedBody,
                        format!("bad secret.share: {err}"),
                    ));
                }
                return;
            }
        };
        let share = Share {
            id: acted.id.clone(),
            name: body.name,
            from: acted.author.clone(),
            from_key: *acted.key,
            by_master: acted.by_master,
            to: body.to,
            to_key: body.key,
            blob: body.blob,
            time: acted.time,
            pos: acted.pos,
            hash: *acted.entry.hash(),
            after: body.after,
        };
        self.shares
            .entry(share.to.clone())
            .or_default()
            .entry(share.name.clone())
            .or_default()
            .push(share);
    }

    /// The share of secret `name` to `to` that stands, if any counts (see the module docs).
    pub fn standing(&self, to: &AgentName, name: &str, identity: &Identity) -> Option<&Share> {
        standing(self.shares.get(to)?.get(name)?, identity)
    }

    /// The names of the secrets shared with `to`.
    pub fn names<'a>(&'a self, to: &AgentName, identity: &'a Identity) -> Vec<&'a str> {
        self.shares
            .get(to)
            .map(|named| {
                named
                    .iter()
                    .filter(|(_, shares)| standing(shares, identity).is_some())
                    .map(|(name, _)| name.as_str())
                    .collect()
            })
            .unwrap_or_default()
    }
}

/// The share that stands among `shares` (one secret, one recipient).
fn standing<'a>(shares: &'a [Share], identity: &Identity) -> Option<&'a Share> {
    let counting = || shares.iter().filter(|share| share.counts(identity));
    // The master's latest, in its own order, outranks everything an agent sent.
    if let Some(master) = counting()
        .filter(|share| share.by_master)
        .max_by_key(|share| (share.pos, share.id.seq()))
    {
        return Some(master);
    }
    let mut children: HashMap<Option<EntryHash>, Vec<&Share>> = HashMap::new();
    for share in counting() {
        children.entry(share.after).or_default().push(share);
    }
    let mut tip: Option<&Share> = None;
    while let Some(kids) = children.get(&tip.map(|share| share.hash)) {
        let input = tip.map_or(EntryHash::ZERO, |share| share.hash);
        let winner = kids.iter().min_by_key(|share| {
            (
                tiebreak(input.as_bytes(), &share.from_key),
                &share.from,
                share.id.seq(),
            )
        })?;
        tip = Some(winner);
    }
    tip
}

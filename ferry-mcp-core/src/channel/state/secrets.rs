//! Secrets shared with one agent (`secret.share`): which named secret was sealed to whom, in
//! which blob. The values never enter the fold: they are sealed in the blob to the recipient's
//! key (`channel::secret`), and only `ferry channel secret get` on that agent's machine opens
//! them. A share counts when its sender is the master or a seated agent at Member or above.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::{Acted, EntryId};
use crate::channel::identity::{FoldProblem, FoldProblemKind, Identity, MasterPos, Seat};
use crate::channel::keys::PublicKey;
use crate::channel::levels::Level;
use crate::channel::names::AgentName;
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

/// Every share, by recipient then name; the latest (by effective time, then id) stands.
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
        };
        let named = self
            .shares
            .entry(share.to.clone())
            .or_default()
            .entry(share.name.clone())
            .or_default();
        named.push(share);
        named.sort_by(|a, b| (a.time, &a.id).cmp(&(b.time, &b.id)));
    }

    /// The share of secret `name` to `to` that stands, if any counts.
    pub fn latest(&self, to: &AgentName, name: &str, identity: &Identity) -> Option<&Share> {
        self.shares
            .get(to)?
            .get(name)?
            .iter()
            .rev()
            .find(|share| share.counts(identity))
    }

    /// The names of the secrets shared with `to`.
    pub fn names<'a>(&'a self, to: &AgentName, identity: &'a Identity) -> Vec<&'a str> {
        self.shares
            .get(to)
            .map(|named| {
                named
                    .iter()
                    .filter(|(_, shares)| shares.iter().any(|share| share.counts(identity)))
                    .map(|(name, _)| name.as_str())
                    .collect()
            })
            .unwrap_or_default()
    }
}

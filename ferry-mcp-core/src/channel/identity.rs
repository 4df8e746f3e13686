//! Identity: the fold of verified entries into the roster (who holds which name) and
//! mastership (which key is the human's), and the record of master-signed grants.
//!
//! The log layer has already checked every entry's signature, chain and that its named
//! author is its signer. This fold decides *authority*, on every machine alike and from
//! the entries alone, never from who wrote a file or when:
//!
//! - **Mastership.** The master is the genesis key, fixed when the project was created.
//!   Only the current master hands mastership on, by a signed `master.handover` entry in
//!   its own log naming the next key. Master-authored entries by a key that is not (yet)
//!   master are held, not applied: if a handover to that key arrives later (sync order is
//!   arbitrary) they are applied then; until then they are reported. Entries a former
//!   master signs after its handover are void. Handing back to a former master is refused,
//!   so the chain of masters never loops.
//! - **Master order.** "Later" for grants means later in the chain of masters: by era
//!   (genesis = 0, each handover + 1), then by sequence number in that master's log. No
//!   wall-clock time is compared, so no one can win by backdating.
//! - **Seating.** An agent's `roster.join` entry, in its own log and signed by its own key,
//!   makes that key a candidate for its name. **The seating rule** (deterministic, and no
//!   agent can bias it): a name with exactly one candidate key is held by that key; a name
//!   with several candidates is *contested* and held by none of them, until the master's
//!   latest grant for that name names one of the candidates. Ordering by time, key bytes
//!   or hashes would let a claimant backdate or grind keys until it wins; a contested name
//!   instead costs an interloper nothing but a report, and the human decides. Honest
//!   clients never contest: `ferry channel join` refuses a name that another key holds, so
//!   a contest means two machines joined one name before syncing, or an interloper.
//! - **Grants** (`grant`, master-signed): see [`super::levels`]. A grant names the agent's
//!   key; a grant naming a key other than the one holding the name is void.
//!
//! Problems found while folding (an identity entry not signed by the master, an agent
//! entry by a key that does not hold its name, a malformed body, a contested name) are
//! reported beside the log layer's integrity problems; the entry is not applied.
//! The fold is incremental: feed it each new batch from the reader.

use std::collections::BTreeMap;
use std::fmt;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::entry::VerifiedEntry;
use super::keys::PublicKey;
use super::levels::Level;
use super::names::{AgentName, ProjectId};
use crate::time::Timestamp;

/// Entry kinds that this fold interprets.
pub mod kinds {
    /// An agent seats its key under its name (in its own log, signed by that key).
    pub const ROSTER_JOIN: &str = "roster.join";
    /// The master grants a level (body: [`super::GrantBody`]).
    pub const GRANT: &str = "grant";
    /// The current master hands mastership to another key (body: `{"key": hex}`).
    pub const MASTER_HANDOVER: &str = "master.handover";
}

/// The body of a `grant` entry.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GrantBody {
    pub agent: AgentName,
    /// The agent's roster key (hex); the grant is void for any other key.
    pub key: PublicKey,
    pub level: Level,
    /// Project scopes the level is limited to; empty means the whole project.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub scopes: Vec<String>,
    /// When the grant stops counting (the agent is a Worker again).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expires: Option<Timestamp>,
}

/// The body of a `master.handover` entry.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HandoverBody {
    pub key: PublicKey,
}

/// A grant as folded: its body and its place in master order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FoldedGrant {
    pub body: GrantBody,
    /// (master era, seq in that master's log).
    pub order: (usize, u64),
}

/// Who holds a name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Seat<'a> {
    /// No key has joined under this name.
    Vacant,
    /// This key holds the name.
    Seated(&'a PublicKey),
    /// Several keys joined under this name and the master has picked none of them.
    Contested(&'a [PublicKey]),
}

/// The state of an agent's latest grant.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum GrantStanding {
    /// No grant: a Worker.
    None,
    /// The grant counts (within `scopes`, when not empty).
    Active { level: Level, scopes: Vec<String> },
    /// The grant expired at `at`.
    Expired { level: Level, at: Timestamp },
    /// The grant names `key`, which does not hold the name.
    Void { level: Level, key: PublicKey },
}

/// An agent's effective level now, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Standing {
    /// The level outside any scope (a scoped grant leaves the agent a Worker elsewhere).
    pub level: Level,
    pub grant: GrantStanding,
}

/// What was wrong with an entry the fold did not apply.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum FoldProblemKind {
    /// A master-only entry (grant, handover) in an agent's log.
    NotSignedByMaster,
    /// A master-authored entry by a key that is not the master (held in case a handover
    /// to it arrives).
    NotTheMaster,
    /// An entry a former master signed after handing mastership on.
    FormerMaster,
    /// A handover to a key that was master before.
    HandoverLoop,
    /// An agent entry by a key that does not hold the author's name.
    NotOnRoster,
    /// A second key joined under a name already joined by another key.
    NameContested,
    /// An identity entry whose body does not parse.
    MalformedBody,
}

#[derive(Debug, Clone)]
struct OtherEntries {
    count: u64,
    first_seq: u64,
    first_kind: String,
}

/// A problem found while folding identity, reported like an integrity problem.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FoldProblem {
    pub author: AgentName,
    pub key: PublicKey,
    pub seq: u64,
    pub kind: FoldProblemKind,
    pub detail: String,
}

impl fmt::Display for FoldProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let key = self.key.to_string();
        write!(
            f,
            "{} #{} (key {}): {}",
            self.author,
            self.seq,
            &key[..key.len().min(12)],
            self.detail
        )
    }
}

/// The identity fold. Create it with the channel's genesis, then [`Identity::feed`] every
/// batch the reader returns.
#[derive(Debug, Clone)]
pub struct Identity {
    project: ProjectId,
    /// Keys of the masters in order; the last is the current master.
    masters: Vec<PublicKey>,
    /// For every era but the current one, the seq of the handover that ended it.
    handed_over_at: Vec<u64>,
    /// Master-authored entries by keys that are not master, by key, in arrival order.
    held: BTreeMap<PublicKey, Vec<VerifiedEntry>>,
    /// Candidate keys per name, sorted by key bytes (the order carries no meaning).
    candidates: BTreeMap<AgentName, Vec<PublicKey>>,
    /// The seq of each candidate's first `roster.join`.
    join_seq: BTreeMap<(AgentName, PublicKey), u64>,
    /// Other agent entries per (author, key): how many, and the first one's seq and kind.
    /// Whether they count is decided against the roster as it is *now*, so the answer does
    /// not depend on the order logs were read in.
    other_entries: BTreeMap<(AgentName, PublicKey), OtherEntries>,
    /// The latest grant per name, in master order.
    grants: BTreeMap<AgentName, FoldedGrant>,
    problems: Vec<FoldProblem>,
}

fn problem(entry: &VerifiedEntry, kind: FoldProblemKind, detail: impl Into<String>) -> FoldProblem {
    FoldProblem {
        author: entry.author().clone(),
        key: *entry.key(),
        seq: entry.seq(),
        kind,
        detail: detail.into(),
    }
}

impl Identity {
    /// An empty fold for `project`, whose root of trust is `genesis_master`.
    pub fn new(project: ProjectId, genesis_master: PublicKey) -> Self {
        Self {
            project,
            masters: vec![genesis_master],
            handed_over_at: Vec::new(),
            held: BTreeMap::new(),
            candidates: BTreeMap::new(),
            join_seq: BTreeMap::new(),
            other_entries: BTreeMap::new(),
            grants: BTreeMap::new(),
            problems: Vec::new(),
        }
    }

    pub fn project(&self) -> &ProjectId {
        &self.project
    }

    /// The current master key.
    pub fn master(&self) -> &PublicKey {
        self.masters
            .last()
            .expect("the genesis master is never removed")
    }

    /// Every key that has been master, genesis first.
    pub fn masters(&self) -> &[PublicKey] {
        &self.masters
    }

    /// Folds a batch of verified entries (from [`super::reader::Reader::poll`]).
    pub fn feed<'e>(&mut self, entries: impl IntoIterator<Item = &'e VerifiedEntry>) {
        for entry in entries {
            if entry.author().is_master() {
                self.fold_master_entry(entry);
            } else {
                self.fold_agent_entry(entry);
            }
        }
    }

    fn fold_master_entry(&mut self, entry: &VerifiedEntry) {
        let era = self.masters.len() - 1;
        if *entry.key() == self.masters[era] {
            self.apply_master_entry(entry, era);
        } else if let Some(former) = self.masters.iter().position(|key| key == entry.key()) {
            let handed_at = self.handed_over_at[former];
            self.problems.push(problem(
                entry,
                FoldProblemKind::FormerMaster,
                format!("signed by a former master after its handover (#{handed_at})"),
            ));
        } else {
            self.held
                .entry(*entry.key())
                .or_default()
                .push(entry.clone());
        }
    }

    fn apply_master_entry(&mut self, entry: &VerifiedEntry, era: usize) {
        match entry.kind() {
            kinds::GRANT => match GrantBody::deserialize(entry.body()) {
                Ok(body) => {
                    self.grants.insert(
                        body.agent.clone(),
                        FoldedGrant {
                            body,
                            order: (era, entry.seq()),
                        },
                    );
                }
                Err(err) => self.problems.push(problem(
                    entry,
                    FoldProblemKind::MalformedBody,
                    format!("bad grant: {err}"),
                )),
            },
            kinds::MASTER_HANDOVER => match HandoverBody::deserialize(entry.body()) {
                Ok(body) if self.masters.contains(&body.key) => self.problems.push(problem(
                    entry,
                    FoldProblemKind::HandoverLoop,
                    "handover to a key that was master before",
                )),
                Ok(body) => {
                    self.handed_over_at.push(entry.seq());
                    self.masters.push(body.key);
                    // Entries the new master wrote before this handover reached us.
                    let held = self.held.remove(&body.key).unwrap_or_default();
                    self.feed(held.iter());
                }
                Err(err) => self.problems.push(problem(
                    entry,
                    FoldProblemKind::MalformedBody,
                    format!("bad handover: {err}"),
                )),
            },
            // Answers, approvals and orders are the master's too; other folds read them.
            _ => {}
        }
    }

    fn fold_agent_entry(&mut self, entry: &VerifiedEntry) {
        match entry.kind() {
            kinds::ROSTER_JOIN => {
                let keys = self.candidates.entry(entry.author().clone()).or_default();
                if let Err(at) = keys.binary_search(entry.key()) {
                    keys.insert(at, *entry.key());
                    self.join_seq
                        .insert((entry.author().clone(), *entry.key()), entry.seq());
                }
                // A repeated join by the same key changes nothing.
            }
            kinds::GRANT | kinds::MASTER_HANDOVER => self.problems.push(problem(
                entry,
                FoldProblemKind::NotSignedByMaster,
                format!("{} not signed by the master", entry.kind()),
            )),
            _ => {
                self.other_entries
                    .entry((entry.author().clone(), *entry.key()))
                    .and_modify(|seen| seen.count += 1)
                    .or_insert_with(|| OtherEntries {
                        count: 1,
                        first_seq: entry.seq(),
                        first_kind: entry.kind().to_owned(),
                    });
            }
        }
    }

    /// Whether an entry of another kind counts. An agent's: its key must hold its author's
    /// name. A master's: its key was master when it signed it, i.e. the current master, or a
    /// former one up to and including its handover (what a master signed in its own era
    /// stays valid, as its grants do). Other folds (orders, talk, answers, ...) call this for
    /// every entry they apply.
    pub fn admits(&self, entry: &VerifiedEntry) -> bool {
        if entry.author().is_master() {
            match self.masters.iter().position(|key| key == entry.key()) {
                Some(era) if era + 1 == self.masters.len() => true,
                Some(era) => entry.seq() <= self.handed_over_at[era],
                None => false,
            }
        } else {
            self.seat(entry.author()) == Seat::Seated(entry.key())
        }
    }

    /// Who holds `name` (see the seating rule in the module docs).
    pub fn seat(&self, name: &AgentName) -> Seat<'_> {
        let Some(keys) = self.candidates.get(name) else {
            return Seat::Vacant;
        };
        match keys.as_slice() {
            [] => Seat::Vacant,
            [only] => Seat::Seated(only),
            several => match self.grants.get(name) {
                Some(grant) => match several.iter().find(|key| **key == grant.body.key) {
                    Some(picked) => Seat::Seated(picked),
                    None => Seat::Contested(several),
                },
                None => Seat::Contested(several),
            },
        }
    }

    /// Every name that has a roster entry, with its seat, sorted by name.
    pub fn names(&self) -> impl Iterator<Item = (&AgentName, Seat<'_>)> {
        self.candidates.keys().map(|name| (name, self.seat(name)))
    }

    /// The latest grant for `name`, valid or not.
    pub fn grant(&self, name: &AgentName) -> Option<&FoldedGrant> {
        self.grants.get(name)
    }

    /// `name`'s effective level at `now`.
    pub fn standing(&self, name: &AgentName, now: Timestamp) -> Standing {
        let worker = |grant| Standing {
            level: Level::Worker,
            grant,
        };
        let Some(FoldedGrant { body, .. }) = self.grants.get(name) else {
            return worker(GrantStanding::None);
        };
        if self.seat(name) != Seat::Seated(&body.key) {
            return worker(GrantStanding::Void {
                level: body.level,
                key: body.key,
            });
        }
        if let Some(at) = body.expires
            && at <= now
        {
            return worker(GrantStanding::Expired {
                level: body.level,
                at,
            });
        }
        let level = if body.scopes.is_empty() {
            body.level
        } else {
            Level::Worker
        };
        Standing {
            level,
            grant: GrantStanding::Active {
                level: body.level,
                scopes: body.scopes.clone(),
            },
        }
    }

    /// Every problem with the entries folded so far, sorted by author, key and seq: entries
    /// not applied, master-authored entries held because their key is not the master, keys
    /// that contest a name, and agent entries by keys that do not hold their name. Apart
    /// from the first kind, these are judged against the current state, so two machines
    /// holding the same entries report the same problems.
    pub fn problems(&self) -> Vec<FoldProblem> {
        let mut all = self.problems.clone();
        for (name, keys) in &self.candidates {
            if keys.len() < 2 {
                continue;
            }
            let holder = match self.seat(name) {
                Seat::Seated(holder) => Some(*holder),
                _ => None,
            };
            for key in keys.iter().filter(|key| Some(**key) != holder) {
                let detail = match holder {
                    None => format!(
                        "{} keys joined as {name}; the master must grant one",
                        keys.len()
                    ),
                    Some(_) => format!("joined as {name}, but the master granted another key"),
                };
                all.push(FoldProblem {
                    author: name.clone(),
                    key: *key,
                    seq: self
                        .join_seq
                        .get(&(name.clone(), *key))
                        .copied()
                        .unwrap_or(1),
                    kind: FoldProblemKind::NameContested,
                    detail,
                });
            }
        }
        for ((name, key), seen) in &self.other_entries {
            if self.seat(name) != Seat::Seated(key) {
                all.push(FoldProblem {
                    author: name.clone(),
                    key: *key,
                    seq: seen.first_seq,
                    kind: FoldProblemKind::NotOnRoster,
                    detail: format!(
                        "{} entries (first: {}) by a key that does not hold the name",
                        seen.count, seen.first_kind
                    ),
                });
            }
        }
        for entry in self.held.values().flatten() {
            all.push(problem(
                entry,
                FoldProblemKind::NotTheMaster,
                format!(
                    "{} signed as master by a key that is not the master",
                    entry.kind()
                ),
            ));
        }
        all.sort_by(|a, b| {
            (&a.author, &a.key, a.seq, a.kind).cmp(&(&b.author, &b.key, b.seq, b.kind))
        });
        all
    }

    /// Builds the body of a grant entry (for the master's writer).
    pub fn grant_body(body: &GrantBody) -> Value {
        serde_json::to_value(body).expect("a grant body always serializes")
    }
}

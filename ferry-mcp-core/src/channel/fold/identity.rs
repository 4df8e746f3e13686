//! Identity: the fold of verified entries into the roster (who holds which name) and
//! mastership (which key is the human's), and the record of master-signed grants.
//!
//! The log layer has already checked every entry's signature, chain and that its named
//! author is its signer. This fold decides *authority*, on every machine alike and from
//! the entries alone, never from who wrote a file or when:
//!
//! - **Mastership.** The master is the genesis key, fixed when the project was created.
//!   Only the current master hands mastership on, by a signed `master.handover` entry in
//!   its own log naming the next key and carrying that key's countersignature (proof that
//!   someone holds it; weak and small-order keys cannot make one). Master-authored entries by
//!   a key that is not (yet) master are not applied: they are counted, and once a handover
//!   to that key is folded (sync order is arbitrary) the fold asks for that log to be read
//!   again ([`Identity::take_replays`]), so nothing is held in memory meanwhile. Entries a
//!   former master signs after its handover are void. Handing back to a former master is
//!   refused, so the chain of masters never loops. A new master's first entry
//!   (`master.accept`) embeds the signed handover it accepts, so deleting the handover's line
//!   from the former master's log cannot undo it on any machine that sees the new master.
//! - **Master order.** "Later" means later in the chain of masters: by era (genesis = 0,
//!   each handover + 1), then by sequence number in that master's log ([`MasterPos`]). No
//!   wall-clock time is compared, so no one can win by backdating.
//! - **Seating.** An agent's `roster.join` entry, in its own log and signed by its own key,
//!   makes that key a candidate for its name. A name with exactly one candidate key is held by
//!   that key; a name with several candidates is *contested* and held by none of them, until
//!   the master's latest grant for that name names one of the candidates (ADR 0002).
//! - **Grants** (`grant`, master-signed) are kept as a history per name, so other folds can ask
//!   which grant was in force for an entry ([`Identity::level_at`], ADR 0005). A grant naming a
//!   key other than the one holding the name is void.
//!
//! Problems found while folding are reported beside the log layer's integrity problems; the
//! entry is not applied. The fold is incremental and its result does not depend on the order
//! logs are read in.

use std::collections::BTreeMap;
use std::fmt;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::channel::fold::levels::Level;
use crate::channel::fold::state::lazy::{self, Lazy};
use crate::channel::log::entry::{self, EntryHash, VerifiedEntry};
use crate::channel::log::keys::{PublicKey, SecretKey, Signature};
use crate::channel::log::names::{AgentName, ProjectId};
use crate::time::Timestamp;

/// Entry kinds that this fold interprets.
pub mod kinds {
    /// An agent seats its key under its name (in its own log, signed by that key).
    pub const ROSTER_JOIN: &str = "roster.join";
    /// The master grants a level (body: [`super::GrantBody`]).
    pub const GRANT: &str = "grant";
    /// The current master hands mastership to another key (body: [`super::HandoverBody`]).
    pub const MASTER_HANDOVER: &str = "master.handover";
    /// A new master's first entry: the handover it accepts, embedded (body:
    /// [`super::AcceptBody`]).
    pub const MASTER_ACCEPT: &str = "master.accept";
}

/// Signed by a key that is to become master: proof that someone holds it.
pub const HANDOVER_PROOF_DOMAIN: &[u8] = b"ferry-master-accept-v1\n";

/// At most this many fold problems are kept; more are counted (anyone can write bad entries).
const MAX_PROBLEMS: usize = 1_000;

/// A position in master order: the master's era (genesis 0, +1 per handover) and the sequence
/// number in that master's log. Written `[era, seq]` in entries' `seen`.
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize,
)]
pub struct MasterPos(pub u32, pub u64);

impl MasterPos {
    pub const START: MasterPos = MasterPos(0, 0);
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
    #[serde(default)]
    pub scopes: Vec<String>,
    /// When the grant stops counting (the agent is a Worker again).
    #[serde(default)]
    pub expires: Option<Timestamp>,
    /// Set on a grant that takes something away: the last seq of the key's log the master had
    /// read when it wrote the grant. The key's later entries are judged by this grant whatever
    /// master position they show (ADR 0005, rule 2a), so an agent that never looks at the
    /// master log cannot go on acting at the level it lost.
    #[serde(default)]
    pub after_seq: Option<u64>,
}

/// The body of a `master.handover` entry.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HandoverBody {
    pub key: PublicKey,
    /// The new key's signature over [`handover_proof_message`]: someone holds it.
    pub proof: Signature,
}

/// The body of a `master.accept` entry.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AcceptBody {
    /// The whole signed line of the `master.handover` entry this master accepts.
    pub handover: String,
}

/// What a key that is to become master signs to prove that someone holds it.
pub fn handover_proof_message(project: &ProjectId, key: &PublicKey) -> Vec<u8> {
    let mut message = HANDOVER_PROOF_DOMAIN.to_vec();
    message.extend_from_slice(project.as_str().as_bytes());
    message.push(b'\n');
    message.extend_from_slice(key.as_bytes());
    message
}

/// The proof a new master key gives for a handover to it.
pub fn handover_proof(project: &ProjectId, key: &SecretKey) -> Signature {
    key.sign(&handover_proof_message(project, &key.public_key()))
}

/// Why a handover is refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum HandoverError {
    #[error("the key's proof does not verify: nobody has shown they hold it")]
    BadProof,
    #[error("the key is weak (small order): no one can sign with it")]
    WeakKey,
}

/// Checks a handover's countersignature: made by the named key over this project and key.
pub fn check_handover(project: &ProjectId, body: &HandoverBody) -> Result<(), HandoverError> {
    if body.key.is_weak() {
        return Err(HandoverError::WeakKey);
    }
    body.key
        .verify(&handover_proof_message(project, &body.key), &body.proof)
        .map_err(|_| HandoverError::BadProof)
}

/// A grant as folded: its body and its place in master order.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FoldedGrant {
    pub body: GrantBody,
    pub order: MasterPos,
}

impl GrantBody {
    /// The level this grant gives for an order of `scope` (`None`: an order without a scope,
    /// or an act that has none, as a post): its level when it has no scopes or names that
    /// scope, else a Worker's. The one rule of scopes, for the folds and the writing side.
    pub fn level_in(&self, scope: Option<&str>) -> Level {
        if self.scopes.is_empty()
            || scope.is_some_and(|scope| self.scopes.iter().any(|s| s == scope))
        {
            self.level
        } else {
            Level::Worker
        }
    }
}

impl FoldedGrant {
    /// Whether it judges entry `seq` of `key`'s log whatever master position the entry shows.
    fn binds(&self, key: &PublicKey, seq: u64) -> bool {
        self.body.key == *key && self.body.after_seq.is_some_and(|after| seq > after)
    }
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
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FoldProblemKind {
    /// A master-only entry (grant, handover) in an agent's log.
    NotSignedByMaster,
    /// A master-authored entry by a key that is not the master (applied if a handover to it
    /// arrives).
    NotTheMaster,
    /// An entry a former master signed after handing mastership on.
    FormerMaster,
    /// A handover to a key that was master before.
    HandoverLoop,
    /// A handover whose new key did not prove it is held (or is a weak key).
    BadHandover,
    /// An agent entry by a key that does not hold the author's name.
    NotOnRoster,
    /// A second key joined under a name already joined by another key.
    NameContested,
    /// An identity entry whose body does not parse.
    MalformedBody,
    /// An entry naming master entries this machine has not folded (the master's log is behind
    /// here: not synced yet, or rolled back).
    AheadOfMaster,
    /// An entry a fold refused: not allowed at its author's level then, or against the state
    /// of what it acts on (other folds report these).
    Refused,
    /// An event that lost a race (ADR 0006) or followed one that did.
    LostRace,
}

impl FoldProblemKind {
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::NotSignedByMaster => "not_signed_by_master",
            Self::NotTheMaster => "not_the_master",
            Self::FormerMaster => "former_master",
            Self::HandoverLoop => "handover_loop",
            Self::BadHandover => "bad_handover",
            Self::NotOnRoster => "not_on_roster",
            Self::NameContested => "name_contested",
            Self::MalformedBody => "malformed_body",
            Self::AheadOfMaster => "ahead_of_master",
            Self::Refused => "refused",
            Self::LostRace => "lost_race",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
struct OtherEntries {
    count: u64,
    first_seq: u64,
    first_kind: String,
}

/// A problem found while folding, reported like an integrity problem.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
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
            "{} #{} (key {}): {}: {}",
            self.author,
            self.seq,
            &key[..key.len().min(12)],
            self.kind.as_str(),
            self.detail
        )
    }
}

impl FoldProblem {
    /// A problem about `entry`.
    pub fn about(entry: &VerifiedEntry, kind: FoldProblemKind, detail: impl Into<String>) -> Self {
        Self {
            author: entry.author().clone(),
            key: *entry.key(),
            seq: entry.seq(),
            kind,
            detail: detail.into(),
        }
    }
}

/// Master-authored entries by a key that is not master: counted, not kept.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
struct Unapplied {
    count: u64,
    first_seq: u64,
    first_kind: String,
}

/// One master's era: its key, and where its log stood.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
struct Era {
    key: PublicKey,
    /// The seq of the handover that ended the era (`None` for the current master).
    handed_over_at: Option<u64>,
    /// The hash of that handover entry.
    handover: Option<EntryHash>,
    /// The highest seq of this master's log folded so far.
    folded: u64,
}

/// `(seq, time)` of every master entry folded, by era, each in seq order: the master's own
/// times bound everyone's backdating (ADR 0005). It grows with the master's history, and only
/// judging a new entry reads it, so the kept state keeps it in a section of its own
/// ([`Lazy`]): an open that finds nothing new never reads it.
///
/// A save writes it after every master entry: its bytes are made by appending the new
/// entries' deltas to those of the last save ([`MasterTimes::encoded`]), so a save costs what
/// the entries since cost, not the master's whole history (70,000 entries at 1,000,000:
/// issue 23, item 3). The bytes are those `postcard` makes of it whole.
#[derive(Debug, Clone, Default)]
pub struct MasterTimes {
    eras: Vec<EraTimes>,
    /// Each era's deltas as encoded so far (see [`MasterTimes::encoded`]).
    encoding: Vec<EraEncoding>,
}

/// One era's times as encoded so far: how many, the last one, and their deltas' bytes.
#[derive(Debug, Clone, Default)]
struct EraEncoding {
    count: usize,
    last: (u64, i64),
    deltas: Vec<u8>,
}

impl PartialEq for MasterTimes {
    fn eq(&self, other: &Self) -> bool {
        self.eras == other.eras
    }
}

impl Eq for MasterTimes {}

impl Serialize for MasterTimes {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_newtype_struct("MasterTimes", &self.eras)
    }
}

impl<'de> Deserialize<'de> for MasterTimes {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        struct Plain(Vec<EraTimes>);
        let Plain(eras) = Plain::deserialize(d)?;
        Ok(Self {
            eras,
            encoding: Vec::new(),
        })
    }
}

impl lazy::Section for MasterTimes {
    const NAME: &'static str = "master times";
}

/// One era's times, kept as deltas (see [`delta_times`]).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
struct EraTimes(#[serde(with = "delta_times")] Vec<(u64, Timestamp)>);

impl MasterTimes {
    fn push(&mut self, era: usize, seq: u64, time: Timestamp) {
        if self.eras.len() <= era {
            self.eras.resize_with(era + 1, EraTimes::default);
        }
        self.eras[era].0.push((seq, time));
    }

    fn of_era(&self, era: usize) -> &[(u64, Timestamp)] {
        self.eras.get(era).map_or(&[], |times| &times.0)
    }

    /// The bytes `postcard` makes of these times (what the kept state holds), made from those
    /// of the last call and the times pushed since: times are only ever pushed, so the deltas
    /// encoded stand.
    pub(crate) fn encoded(&mut self) -> Result<Vec<u8>, String> {
        let fail = |e: postcard::Error| e.to_string();
        self.encoding
            .resize_with(self.eras.len(), EraEncoding::default);
        for (times, encoding) in self.eras.iter().zip(&mut self.encoding) {
            for &(seq, time) in times.0.get(encoding.count..).unwrap_or_default() {
                let (seq, millis) = delta_times::pair(seq, time);
                let delta = delta_times::delta(encoding.last, (seq, millis));
                encoding.deltas = postcard::to_extend(&delta, std::mem::take(&mut encoding.deltas))
                    .map_err(fail)?;
                encoding.last = (seq, millis);
            }
            encoding.count = times.0.len();
        }
        let mut bytes = postcard::to_stdvec(&self.eras.len()).map_err(fail)?;
        for encoding in &self.encoding {
            bytes = postcard::to_extend(&encoding.count, bytes).map_err(fail)?;
            bytes.extend_from_slice(&encoding.deltas);
        }
        Ok(bytes)
    }
}

/// The master's `(seq, time)` list as deltas from the one before: seqs climb by one and times
/// by a little, so each pair costs two or three bytes in the verified state instead of ten,
/// and the master's history weighs little on every open.
mod delta_times {
    use serde::{Deserialize, Deserializer, Serialize, Serializer};

    use crate::time::Timestamp;

    /// A time as the deltas count it.
    pub(super) fn pair(seq: u64, time: Timestamp) -> (u64, i64) {
        (seq, i64::try_from(time.as_millis()).unwrap_or(i64::MAX))
    }

    /// The delta from `last` to `next`.
    pub(super) fn delta(last: (u64, i64), next: (u64, i64)) -> (u64, i64) {
        (next.0.wrapping_sub(last.0), next.1.wrapping_sub(last.1))
    }

    pub fn serialize<S: Serializer>(times: &[(u64, Timestamp)], s: S) -> Result<S::Ok, S::Error> {
        let mut last = (0u64, 0i64);
        let deltas: Vec<(u64, i64)> = times
            .iter()
            .map(|&(seq, time)| {
                let next = pair(seq, time);
                let delta = delta(last, next);
                last = next;
                delta
            })
            .collect();
        deltas.serialize(s)
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<(u64, Timestamp)>, D::Error> {
        let deltas = Vec::<(u64, i64)>::deserialize(d)?;
        let mut last = (0u64, 0i64);
        Ok(deltas
            .into_iter()
            .map(|(seq, millis)| {
                last = (last.0.wrapping_add(seq), last.1.wrapping_add(millis));
                (
                    last.0,
                    Timestamp::from_millis(u64::try_from(last.1).unwrap_or(0)),
                )
            })
            .collect())
    }
}

/// How a master-authored entry stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MasterEntry {
    /// Signed by the master of `pos.0` within its era: it counts, at `pos`.
    Counts(MasterPos),
    /// Not (yet) by a master, or by a former master after its handover: it does not count.
    DoesNotCount,
}

/// The identity fold. Create it with the channel's genesis, then [`Identity::feed`] every
/// entry the reader returns.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Identity {
    project: ProjectId,
    eras: Vec<Era>,
    /// Master-authored entries by keys that are not master, by key.
    unapplied: BTreeMap<PublicKey, Unapplied>,
    /// Keys whose master logs must be read again (a handover to them was just folded).
    replays: Vec<PublicKey>,
    /// Candidate keys per name, sorted by key bytes (the order carries no meaning).
    candidates: BTreeMap<AgentName, Vec<PublicKey>>,
    /// The seq of each candidate's first `roster.join`.
    join_seq: BTreeMap<AgentName, Vec<(PublicKey, u64)>>,
    /// Other agent entries per (author, key): how many, and the first one's seq and kind.
    other_entries: BTreeMap<AgentName, Vec<(PublicKey, OtherEntries)>>,
    /// Every grant per name, in master order.
    grants: BTreeMap<AgentName, Vec<FoldedGrant>>,
    /// Bumped whenever who holds a name may have changed: other folds re-judge then.
    seat_epoch: u64,
    #[serde(skip)]
    times: Lazy<MasterTimes>,
    /// Everything must be folded again (a handover learned late voids entries already folded).
    #[serde(skip)]
    refold: bool,
    problems: Vec<FoldProblem>,
    dropped_problems: u64,
}

impl Identity {
    /// An empty fold for `project`, whose root of trust is `genesis_master`.
    pub fn new(project: ProjectId, genesis_master: PublicKey) -> Self {
        Self {
            project,
            eras: vec![Era {
                key: genesis_master,
                handed_over_at: None,
                handover: None,
                folded: 0,
            }],
            unapplied: BTreeMap::new(),
            replays: Vec::new(),
            candidates: BTreeMap::new(),
            join_seq: BTreeMap::new(),
            other_entries: BTreeMap::new(),
            grants: BTreeMap::new(),
            seat_epoch: 0,
            times: Lazy::default(),
            refold: false,
            problems: Vec::new(),
            dropped_problems: 0,
        }
    }

    pub fn project(&self) -> &ProjectId {
        &self.project
    }

    /// The current master key.
    pub fn master(&self) -> &PublicKey {
        &self
            .eras
            .last()
            .expect("the genesis era is never removed")
            .key
    }

    /// Every key that has been master, genesis first.
    pub fn masters(&self) -> Vec<PublicKey> {
        self.eras.iter().map(|era| era.key).collect()
    }

    /// The current era (0 until the first handover).
    pub fn era(&self) -> u32 {
        u32::try_from(self.eras.len() - 1).unwrap_or(u32::MAX)
    }

    /// How far master order has been folded here: the current era and the last seq of the
    /// current master's log folded. An agent writing now writes this as its `seen`.
    pub fn master_position(&self) -> MasterPos {
        MasterPos(self.era(), self.eras.last().map_or(0, |era| era.folded))
    }

    /// The seq of the handover that ended `era`, and its hash (`None` for the current era).
    pub fn handover_of(&self, era: u32) -> Option<(u64, EntryHash)> {
        let era = self.eras.get(era as usize)?;
        Some((era.handed_over_at?, era.handover?))
    }

    /// Whether `pos` lies within what has been folded here (so grants at or before it are all
    /// known), after clamping it to the end of its era.
    pub fn has_folded(&self, pos: MasterPos) -> bool {
        pos <= self.master_position()
    }

    /// `pos` clamped to what a master could sign: a position past the handover that ended its
    /// era is the handover itself.
    pub fn clamp(&self, pos: MasterPos) -> MasterPos {
        match self.eras.get(pos.0 as usize) {
            Some(Era {
                handed_over_at: Some(end),
                ..
            }) if pos.1 > *end => MasterPos(pos.0, *end),
            _ => pos,
        }
    }

    /// The time of the latest master entry at or before `pos`, if any.
    pub fn master_time_at(&self, pos: MasterPos) -> Option<Timestamp> {
        let mut era = pos.0 as usize;
        let mut seq = pos.1;
        let kept = self.times.get()?;
        loop {
            self.eras.get(era)?;
            let times = kept.of_era(era);
            let at = times.partition_point(|(s, _)| *s <= seq);
            if at > 0 {
                return Some(times[at - 1].1);
            }
            era = era.checked_sub(1)?;
            seq = u64::MAX;
        }
    }

    /// The master's times, once loaded (the session loads them before it feeds anything).
    #[cfg(feature = "internals")]
    pub(crate) fn master_times(&self) -> Option<&MasterTimes> {
        self.times.get()
    }

    pub(crate) fn master_times_lazy(&self) -> &Lazy<MasterTimes> {
        &self.times
    }

    /// The master's times are in the kept state, not loaded yet.
    pub(crate) fn times_left_kept(&mut self) {
        self.times = Lazy::kept();
    }

    /// The master's times, as the session read them from the kept state.
    pub(crate) fn load_master_times(&mut self, times: MasterTimes) {
        self.times.load(times);
    }

    /// The master's times count as kept (a save wrote them).
    pub(crate) fn master_times_kept(&mut self) {
        self.times.mark_kept();
    }

    /// The bytes of the master's times as the kept state holds them, if they are loaded
    /// ([`MasterTimes::encoded`]: what was encoded before is reused, nothing changes).
    pub(crate) fn master_times_encoded(&mut self) -> Option<Result<Vec<u8>, String>> {
        self.times.get_mut_paging().map(MasterTimes::encoded)
    }

    /// Whether a `roster.join` by `key` under `name` would be new (a repeated join changes
    /// nothing): what the session asks before it pages in the orders a join judges again.
    pub(crate) fn joins_anew(&self, name: &AgentName, key: &PublicKey) -> bool {
        self.candidates
            .get(name)
            .is_none_or(|keys| keys.binary_search(key).is_err())
    }

    /// Bumped whenever who holds a name may have changed.
    pub fn seat_epoch(&self) -> u64 {
        self.seat_epoch
    }

    /// Keys whose master logs should be read again and fed (a handover to them was folded).
    pub fn take_replays(&mut self) -> Vec<PublicKey> {
        std::mem::take(&mut self.replays)
    }

    /// Whether `key`'s master log is to be read again from its start: its entries are folded
    /// then, in order, and not before.
    pub fn replay_pending(&self, key: &PublicKey) -> bool {
        self.replays.contains(key)
    }

    fn report(&mut self, problem: FoldProblem) {
        if self.problems.len() < MAX_PROBLEMS {
            self.problems.push(problem);
        } else {
            self.dropped_problems += 1;
        }
    }

    /// Folds a batch of verified entries. After it, read again the logs that
    /// [`Identity::take_replays`] names, and feed them too.
    pub fn feed<'e>(&mut self, entries: impl IntoIterator<Item = &'e VerifiedEntry>) {
        for entry in entries {
            self.feed_one(entry);
        }
    }

    /// Folds one entry; for a master-authored one, says whether and where it counts.
    pub fn feed_one(&mut self, entry: &VerifiedEntry) -> Option<MasterEntry> {
        if entry.author().is_master() {
            Some(self.fold_master_entry(entry))
        } else {
            self.fold_agent_entry(entry);
            None
        }
    }

    /// Whether and where a master-authored entry counts, without folding it.
    pub fn master_entry(&self, entry: &VerifiedEntry) -> MasterEntry {
        match self.eras.iter().position(|era| era.key == *entry.key()) {
            Some(era) => match self.eras[era].handed_over_at {
                Some(end) if entry.seq() > end => MasterEntry::DoesNotCount,
                // In place of the handover, only the handover itself.
                Some(end)
                    if entry.seq() == end && self.eras[era].handover != Some(*entry.hash()) =>
                {
                    MasterEntry::DoesNotCount
                }
                _ => MasterEntry::Counts(MasterPos(
                    u32::try_from(era).unwrap_or(u32::MAX),
                    entry.seq(),
                )),
            },
            None => MasterEntry::DoesNotCount,
        }
    }

    fn fold_master_entry(&mut self, entry: &VerifiedEntry) -> MasterEntry {
        let Some(era) = self.eras.iter().position(|era| era.key == *entry.key()) else {
            // A new master's first entry can carry the handover that makes it master.
            if entry.kind() == kinds::MASTER_ACCEPT && entry.seq() == 1 {
                self.accept_embedded_handover(entry);
                if self.eras.iter().any(|era| era.key == *entry.key()) {
                    return self.fold_master_entry(entry);
                }
            }
            let seen = self
                .unapplied
                .entry(*entry.key())
                .or_insert_with(|| Unapplied {
                    count: 0,
                    first_seq: entry.seq(),
                    first_kind: entry.kind().to_owned(),
                });
            seen.count += 1;
            return MasterEntry::DoesNotCount;
        };
        if let Some(end) = self.eras[era].handed_over_at
            && (entry.seq() > end
                || (entry.seq() == end && self.eras[era].handover != Some(*entry.hash())))
        {
            self.report(FoldProblem::about(
                entry,
                FoldProblemKind::FormerMaster,
                format!("signed by a former master after its handover (#{end})"),
            ));
            return MasterEntry::DoesNotCount;
        }
        let pos = MasterPos(u32::try_from(era).unwrap_or(u32::MAX), entry.seq());
        let record = &mut self.eras[era];
        if entry.seq() > record.folded {
            record.folded = entry.seq();
            if let Some(times) = self.times.get_mut() {
                times.push(era, entry.seq(), entry.time());
            }
        }
        match entry.kind() {
            kinds::GRANT => match GrantBody::deserialize(entry.body()) {
                Ok(body) => {
                    let history = self.grants.entry(body.agent.clone()).or_default();
                    // Logs of two eras can be read in either order: keep master order.
                    let at = history.partition_point(|grant| grant.order < pos);
                    history.insert(at, FoldedGrant { body, order: pos });
                    // A grant may pick a key for a contested name.
                    self.seat_epoch += 1;
                }
                Err(err) => self.report(FoldProblem::about(
                    entry,
                    FoldProblemKind::MalformedBody,
                    format!("bad grant: {err}"),
                )),
            },
            kinds::MASTER_HANDOVER => self.apply_handover(entry, era),
            // Orders, answers, settings and the like are the master's too; other folds read
            // them through the answer.
            _ => {}
        }
        MasterEntry::Counts(pos)
    }

    fn apply_handover(&mut self, entry: &VerifiedEntry, era: usize) {
        if self.eras[era].handed_over_at.is_some() {
            // Already applied from the new master's `master.accept`.
            return;
        }
        let body = match HandoverBody::deserialize(entry.body()) {
            Ok(body) => body,
            Err(err) => {
                return self.report(FoldProblem::about(
                    entry,
                    FoldProblemKind::MalformedBody,
                    format!("bad handover: {err}"),
                ));
            }
        };
        if self.eras.iter().any(|known| known.key == body.key) {
            return self.report(FoldProblem::about(
                entry,
                FoldProblemKind::HandoverLoop,
                "handover to a key that was master before",
            ));
        }
        if let Err(err) = check_handover(&self.project, &body) {
            return self.report(FoldProblem::about(
                entry,
                FoldProblemKind::BadHandover,
                err.to_string(),
            ));
        }
        if era + 1 != self.eras.len() {
            return;
        }
        let current = &mut self.eras[era];
        current.handed_over_at = Some(entry.seq());
        current.handover = Some(*entry.hash());
        self.eras.push(Era {
            key: body.key,
            handed_over_at: None,
            handover: None,
            folded: 0,
        });
        self.seat_epoch += 1;
        // Entries the new master wrote before this handover reached us are read again.
        if self.unapplied.remove(&body.key).is_some() {
            self.replays.push(body.key);
        }
    }

    /// Applies the handover a new master's `master.accept` embeds, when it is a valid handover
    /// by the current master to this entry's key (its line may be gone from the former master's
    /// log here, or not synced yet).
    fn accept_embedded_handover(&mut self, accept: &VerifiedEntry) {
        let Ok(body) = AcceptBody::deserialize(accept.body()) else {
            return self.report(FoldProblem::about(
                accept,
                FoldProblemKind::MalformedBody,
                "bad master.accept",
            ));
        };
        let Ok(handover) = entry::decode_line(body.handover.as_bytes()) else {
            return self.report(FoldProblem::about(
                accept,
                FoldProblemKind::BadHandover,
                "the handover it embeds does not verify",
            ));
        };
        let names_this_key =
            HandoverBody::deserialize(handover.body()).is_ok_and(|body| body.key == *accept.key());
        if handover.project() != &self.project
            || !handover.author().is_master()
            || handover.kind() != kinds::MASTER_HANDOVER
            || !names_this_key
        {
            return self.report(FoldProblem::about(
                accept,
                FoldProblemKind::BadHandover,
                "the handover it embeds is not a handover to this key in this project",
            ));
        }
        let current = self.eras.len() - 1;
        if *handover.key() != self.eras[current].key {
            // Signed by a master this machine does not know yet (an earlier handover is missing
            // here): the entry waits, counted, until that one is folded.
            return;
        }
        // Entries of the former master at or after the handover's seq were folded before the
        // handover was known here (its line is gone from that log): they must not count, and
        // the only way to be sure nothing they did remains is to fold everything again, knowing
        // the handover from the start.
        let folded_past = self.eras[current].folded >= handover.seq();
        self.apply_handover(&handover, current);
        if folded_past && self.eras[current].handed_over_at == Some(handover.seq()) {
            self.refold = true;
        }
    }

    /// Whether everything must be folded again (see [`Identity::handovers`]); taken.
    pub fn take_refold(&mut self) -> bool {
        std::mem::take(&mut self.refold)
    }

    /// The handovers folded so far, genesis era first: a fold started with them knows from its
    /// first entry which master entries count.
    pub fn handovers(&self) -> Vec<(PublicKey, u64, EntryHash)> {
        self.eras
            .windows(2)
            .filter_map(|pair| match (&pair[0].handed_over_at, &pair[0].handover) {
                (Some(at), Some(hash)) => Some((pair[1].key, *at, *hash)),
                _ => None,
            })
            .collect()
    }

    /// An empty fold that already knows `handovers` (from [`Identity::handovers`]).
    pub fn with_handovers(
        project: ProjectId,
        genesis_master: PublicKey,
        handovers: &[(PublicKey, u64, EntryHash)],
    ) -> Self {
        let mut identity = Self::new(project, genesis_master);
        for (key, at, hash) in handovers {
            let current = identity.eras.len() - 1;
            identity.eras[current].handed_over_at = Some(*at);
            identity.eras[current].handover = Some(*hash);
            identity.eras.push(Era {
                key: *key,
                handed_over_at: None,
                handover: None,
                folded: 0,
            });
        }
        identity
    }

    fn fold_agent_entry(&mut self, entry: &VerifiedEntry) {
        match entry.kind() {
            kinds::ROSTER_JOIN => {
                let keys = self.candidates.entry(entry.author().clone()).or_default();
                if let Err(at) = keys.binary_search(entry.key()) {
                    keys.insert(at, *entry.key());
                    self.join_seq
                        .entry(entry.author().clone())
                        .or_default()
                        .push((*entry.key(), entry.seq()));
                    self.seat_epoch += 1;
                }
                // A repeated join by the same key changes nothing.
            }
            kinds::GRANT | kinds::MASTER_HANDOVER | kinds::MASTER_ACCEPT => {
                self.report(FoldProblem::about(
                    entry,
                    FoldProblemKind::NotSignedByMaster,
                    format!("{} not signed by the master", entry.kind()),
                ));
            }
            _ => {
                let per_key = self
                    .other_entries
                    .entry(entry.author().clone())
                    .or_default();
                match per_key.iter_mut().find(|(key, _)| key == entry.key()) {
                    Some((_, seen)) => seen.count += 1,
                    None => per_key.push((
                        *entry.key(),
                        OtherEntries {
                            count: 1,
                            first_seq: entry.seq(),
                            first_kind: entry.kind().to_owned(),
                        },
                    )),
                }
            }
        }
    }

    /// Whether an entry of another kind counts. An agent's: its key must hold its author's
    /// name. A master's: its key was master when it signed it, i.e. the current master, or a
    /// former one up to and including its handover. Other folds call this for every entry
    /// they apply.
    pub fn admits(&self, entry: &VerifiedEntry) -> bool {
        if entry.author().is_master() {
            matches!(self.master_entry(entry), MasterEntry::Counts(_))
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
            several => match self.latest_grant(name) {
                Some(grant) => match several.iter().find(|key| **key == grant.body.key) {
                    Some(picked) => Seat::Seated(picked),
                    None => Seat::Contested(several),
                },
                None => Seat::Contested(several),
            },
        }
    }

    /// The key holding `name`, if one does.
    pub fn holder(&self, name: &AgentName) -> Option<&PublicKey> {
        match self.seat(name) {
            Seat::Seated(key) => Some(key),
            _ => None,
        }
    }

    /// Every name that has a roster entry, with its seat, sorted by name.
    pub fn names(&self) -> impl Iterator<Item = (&AgentName, Seat<'_>)> {
        self.candidates.keys().map(|name| (name, self.seat(name)))
    }

    /// The latest grant for `name`, valid or not.
    pub fn grant(&self, name: &AgentName) -> Option<&FoldedGrant> {
        self.latest_grant(name)
    }

    /// The grant for `name` in force at master position `pos`: its latest at or before it.
    pub fn grant_at(&self, name: &AgentName, pos: MasterPos) -> Option<&FoldedGrant> {
        let history = self.grants.get(name)?;
        let upto = history.partition_point(|grant| grant.order <= pos);
        upto.checked_sub(1).map(|last| &history[last])
    }

    fn latest_grant(&self, name: &AgentName) -> Option<&FoldedGrant> {
        self.grants.get(name).and_then(|history| history.last())
    }

    /// `name`'s effective level at `now`, from its latest grant: what an operation asked for
    /// now is allowed at (the writing side's check).
    pub fn standing(&self, name: &AgentName, now: Timestamp) -> Standing {
        self.standing_of(name, self.latest_grant(name), now, None)
    }

    /// [`Identity::standing`] for an act on an order of `scope`: its level is the one a grant
    /// scoped to it gives there ([`GrantBody::level_in`]).
    pub fn standing_in(&self, name: &AgentName, now: Timestamp, scope: Option<&str>) -> Standing {
        self.standing_of(name, self.latest_grant(name), now, scope)
    }

    fn standing_of(
        &self,
        name: &AgentName,
        grant: Option<&FoldedGrant>,
        at: Timestamp,
        scope: Option<&str>,
    ) -> Standing {
        let worker = |grant| Standing {
            level: Level::Worker,
            grant,
        };
        let Some(FoldedGrant { body, .. }) = grant else {
            return worker(GrantStanding::None);
        };
        if self.seat(name) != Seat::Seated(&body.key) {
            return worker(GrantStanding::Void {
                level: body.level,
                key: body.key,
            });
        }
        if let Some(expires) = body.expires
            && expires <= at
        {
            return worker(GrantStanding::Expired {
                level: body.level,
                at: expires,
            });
        }
        Standing {
            level: body.level_in(scope),
            grant: GrantStanding::Active {
                level: body.level,
                scopes: body.scopes.clone(),
            },
        }
    }

    /// The level `name`, holding its name with `key`, acted at for its entry `seq` whose
    /// effective master position is `pos` and effective time `at` (ADR 0005): its latest grant
    /// at or before `pos`, or a later one that binds the entry by its seq (`after_seq`; the
    /// entry's time is then at least that grant's), unexpired at that time, naming `key`.
    /// Worker when the key does not hold the name (the entry does not count at all then: see
    /// [`Identity::admits`]). Outside any scope: a scoped grant makes a Worker here.
    pub fn level_at(
        &self,
        name: &AgentName,
        key: &PublicKey,
        seq: u64,
        pos: MasterPos,
        at: Timestamp,
    ) -> Level {
        self.level_in(name, key, seq, pos, at, None)
    }

    /// [`Identity::level_at`] for an entry about an order of `scope`: a grant scoped to it
    /// counts in full ([`GrantBody::level_in`]).
    pub fn level_in(
        &self,
        name: &AgentName,
        key: &PublicKey,
        seq: u64,
        pos: MasterPos,
        at: Timestamp,
        scope: Option<&str>,
    ) -> Level {
        if self.seat(name) != Seat::Seated(key) {
            return Level::Worker;
        }
        let Some(history) = self.grants.get(name) else {
            return self.standing_of(name, None, at, scope).level;
        };
        let upto = history.partition_point(|grant| grant.order <= pos);
        let in_force = upto.checked_sub(1).map(|last| &history[last]);
        // A later grant that binds the entry by its seq only ever takes away (ADR 0005, rule
        // 2a): the entry acts at the least of what its position and each binding grant allow,
        // so nothing the master writes later raises what an entry was written at, and an
        // entry too low to count when it is folded never counts (the folds need not keep it).
        history[upto..]
            .iter()
            .filter(|grant| grant.binds(key, seq))
            .map(|grant| {
                let floor = self.master_time_at(grant.order).unwrap_or(at);
                self.standing_of(name, Some(grant), at.max(floor), scope)
                    .level
            })
            .fold(
                self.standing_of(name, in_force, at, scope).level,
                Level::min,
            )
    }

    /// Every problem with the entries folded so far, sorted by author, key and seq: entries
    /// not applied, master-authored entries by keys that are not the master, keys that
    /// contest a name, and agent entries by keys that do not hold their name. Apart from the
    /// first kind, these are judged against the current state, so two machines holding the
    /// same entries report the same problems.
    pub fn problems(&self) -> Vec<FoldProblem> {
        let mut all = self.problems.clone();
        for (name, keys) in &self.candidates {
            if keys.len() < 2 {
                continue;
            }
            let holder = self.holder(name).copied();
            for key in keys.iter().filter(|key| Some(**key) != holder) {
                let detail = match holder {
                    None => format!(
                        "{} keys joined as {name}; the master must grant one",
                        keys.len()
                    ),
                    Some(_) => format!("joined as {name}, but the master granted another key"),
                };
                let seq = self
                    .join_seq
                    .get(name)
                    .and_then(|seqs| seqs.iter().find(|(k, _)| k == key))
                    .map_or(1, |(_, seq)| *seq);
                all.push(FoldProblem {
                    author: name.clone(),
                    key: *key,
                    seq,
                    kind: FoldProblemKind::NameContested,
                    detail,
                });
            }
        }
        for (name, per_key) in &self.other_entries {
            for (key, seen) in per_key {
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
        }
        for (key, seen) in &self.unapplied {
            all.push(FoldProblem {
                author: AgentName::master(),
                key: *key,
                seq: seen.first_seq,
                kind: FoldProblemKind::NotTheMaster,
                detail: format!(
                    "{} entries (first: {}) signed as master by a key that is not the master",
                    seen.count, seen.first_kind
                ),
            });
        }
        all.sort_by(|a, b| {
            (&a.author, &a.key, a.seq, a.kind).cmp(&(&b.author, &b.key, b.seq, b.kind))
        });
        all
    }

    /// How many problems were not kept (beyond the first thousand).
    pub fn dropped_problems(&self) -> u64 {
        self.dropped_problems
    }

    /// The body of a grant entry as a raw writer takes it (its [`EntryBody`] form).
    ///
    /// [`EntryBody`]: crate::channel::fold::body::EntryBody
    pub fn grant_body(body: &GrantBody) -> Value {
        Value::Object(crate::channel::fold::body::EntryBody::to_entry(body))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_master_s_times_encoded_bit_by_bit_as_they_grow_are_the_bytes_of_them_encoded_whole() {
        let mut times = MasterTimes::default();
        let mut time = 1_767_225_600_000u64;
        for step in 0..600u64 {
            // Two eras (a handover), times that go back as well as on, and a save now and then.
            let era = usize::from(step >= 400);
            time = if step % 7 == 3 {
                time - 50
            } else {
                time + 100 * (step % 5)
            };
            times.push(era, step + 1, Timestamp::from_millis(time));
            if step % 3 == 0 || step == 599 {
                let whole = postcard::to_stdvec(&times).unwrap();
                assert_eq!(times.encoded().unwrap(), whole, "after {} times", step + 1);
                // Read back, it encodes the same, and goes on from there.
                let mut read: MasterTimes = postcard::from_bytes(&whole).unwrap();
                assert_eq!(read, times);
                assert_eq!(read.encoded().unwrap(), whole);
            }
        }
        assert_eq!(times.of_era(1).len(), 200);
    }
}

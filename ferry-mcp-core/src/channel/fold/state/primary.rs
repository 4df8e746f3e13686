//! The primary (the agent that leads the fleet), the project's settings, and the briefs.
//!
//! **The primary** is decided by a chain like an order's (ADR 0006): every `primary.take` and
//! `primary.release` names `after`, the latest such event its author had folded (the chain
//! starts at [`ROOT`], no primary). Among the children of the tip that are valid (a take by an
//! Orchestrator in force; a release by the primary itself), the least by rank, then by the
//! tie-break over the tip and the taker's roster key ([`super::race`]), wins; the others are
//! void. Two concurrent takeovers on two machines therefore end with one primary everywhere
//! after sync.
//!
//! **The quiet period is the fold's rule** (ADR 0017): a take of a role someone holds counts
//! only when it is dated at least the quiet period after the primary's last activity the logs
//! prove (the latest effective time of the primary's own entries, from its take on, not after
//! the take's), with the quiet period in force at the take's master position. A seated
//! Orchestrator signing its own take while the primary posted a second ago takes nothing, on
//! every machine. A take also names the primary's last entry its author had folded
//! ([`TakeBody::primary_seq`]): it is judged no earlier than that entry, and does not count
//! where that entry has not been folded. An event dated after the reading time does not count
//! before its time: the fold is given the reading time ([`Leadership::advance`]) and never
//! reads a clock. A take by an author below Orchestrator at its position can never count (a
//! later grant never raises that level), so it is reported and not kept.
//! `primary.standby` records that an agent waits; it changes nothing.
//!
//! **A fold step judges one event** (issue 17, finding 8): the last resolve of the chain is
//! remembered ([`Walk`]), and an event that can change nothing but itself (it follows no event
//! that counts, is refused where it follows, or loses to the winner there) or that extends the
//! chain at its tip is folded alone, in O(1) besides its author's level; the chain is walked
//! again only when the event may change a race already decided, a setting or a seat changed,
//! an event came due, or the primary's proven activity moved under a take already judged. The
//! result is the walk's, so a seated Worker's thousands of takes cost what they are.
//!
//! **Settings** (`settings`, master-signed): the quiet period after which an agent counts as
//! silent. The latest in master order stands.
//!
//! **Briefs** (`brief.set`, `brief.decide`, written with `ferry brief` by a Member or above):
//! an agent's objective and constraints, and decisions it recorded.

use std::collections::{BTreeMap, HashMap, HashSet, VecDeque};

use serde::{Deserialize, Serialize};

use super::race::{self, tiebreak};
use super::{Acted, Changes, EntryId};
use crate::channel::fold::identity::{FoldProblem, FoldProblemKind, Identity, MasterPos, Seat};
use crate::channel::fold::levels::Level;
use crate::channel::log::entry::EntryHash;
use crate::channel::log::keys::PublicKey;
use crate::channel::log::names::AgentName;
use crate::time::Timestamp;

/// The entry kinds of this module.
pub mod kinds {
    pub const TAKE: &str = "primary.take";
    pub const RELEASE: &str = "primary.release";
    pub const STANDBY: &str = "primary.standby";
    pub const SETTINGS: &str = "settings";
    pub const BRIEF_SET: &str = "brief.set";
    pub const BRIEF_DECIDE: &str = "brief.decide";
}

/// The tip of the primary's chain before anyone took it: no primary.
pub const ROOT: EntryHash = EntryHash::ZERO;

/// The quiet period when the master set none: after it an agent counts as silent.
pub const DEFAULT_QUIET_PERIOD_S: u64 = 300;
/// The shortest presence interval: a tool call writes presence at most this often.
pub const PRESENCE_FLOOR_MS: u64 = 2_000;
/// The longest presence interval (with a long quiet period).
pub const PRESENCE_CEILING_MS: u64 = 60_000;
/// How many presence records an active agent writes within one quiet period, at least.
pub const PRESENCE_PER_QUIET_PERIOD: u64 = 4;
/// The shortest quiet period the presence interval can serve: an agent active within it
/// always has a record dated within it.
pub const MIN_QUIET_PERIOD_S: u64 = PRESENCE_FLOOR_MS * PRESENCE_PER_QUIET_PERIOD / 1000;

/// How often a tool call records that its agent is alive, for `quiet_period_s`: a few times per
/// quiet period, so that an agent calling tools is never silent by the fold's rule.
pub fn presence_every_ms(quiet_period_s: u64) -> u64 {
    (quiet_period_s.saturating_mul(1000) / PRESENCE_PER_QUIET_PERIOD)
        .clamp(PRESENCE_FLOOR_MS, PRESENCE_CEILING_MS)
}
/// The most constraint lines a brief keeps.
pub const MAX_CONSTRAINTS: usize = 5;
/// The longest objective, constraint line or decision, in characters.
pub const MAX_BRIEF_LINE: usize = 300;
/// Decisions kept (the newest).
const KEPT_DECISIONS: usize = 32;

/// The body of `primary.take`: the chain event it follows, and what its author had seen of
/// the primary's log.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TakeBody {
    pub after: EntryHash,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seen: Option<MasterPos>,
    /// The seq of the last entry of the primary's log (the primary as the chain stands at
    /// `after`) its author had folded, when someone held the role (ADR 0017, rule 2): the take
    /// is dated no earlier than that entry, and does not count where it has not been folded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub primary_seq: Option<u64>,
}

/// The body of `primary.release`: the chain event it follows.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PrimaryReleaseBody {
    pub after: EntryHash,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seen: Option<MasterPos>,
}

/// The body of `primary.standby`: the entry itself says its author waits.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct StandbyBody {}

/// The body of `settings`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SettingsBody {
    pub quiet_period_s: u64,
}

/// The body of `brief.set`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BriefBody {
    pub objective: String,
    #[serde(default)]
    pub constraints: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seen: Option<MasterPos>,
}

/// The body of `brief.decide`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DecideBody {
    pub line: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seen: Option<MasterPos>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
struct Made {
    author: AgentName,
    key: PublicKey,
    seq: u64,
    id: EntryId,
    pos: MasterPos,
    time: Timestamp,
}

impl Made {
    fn from(acted: &Acted<'_>) -> Self {
        Self {
            author: acted.author.clone(),
            key: *acted.key,
            seq: acted.entry.seq(),
            id: acted.id.clone(),
            pos: acted.pos,
            time: acted.time,
        }
    }

    fn level(&self, identity: &Identity) -> Option<Level> {
        (identity.seat(&self.author) == Seat::Seated(&self.key))
            .then(|| identity.level_at(&self.author, &self.key, self.seq, self.pos, self.time))
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
struct Event {
    take: bool,
    made: Made,
    hash: EntryHash,
    after: EntryHash,
    /// A take's [`TakeBody::primary_seq`].
    primary_seq: Option<u64>,
}

/// The effective times of one log's entries from its first take of the role on: what proves
/// its author active while it was primary. Effective times never go back in a log, so the list
/// is sorted; each time is kept once, with the first seq dated at it, so the time of any
/// entry from the first take on is known.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
struct Activity {
    author: AgentName,
    key: PublicKey,
    times: Vec<Timestamp>,
    /// For each of `times`, the first seq of the log dated at it.
    seqs: Vec<u64>,
    /// The highest seq of the log folded here.
    last_seq: u64,
}

impl Activity {
    /// The latest activity at or before `at`.
    fn latest_by(&self, at: Timestamp) -> Option<Timestamp> {
        let upto = self.times.partition_point(|time| *time <= at);
        upto.checked_sub(1).map(|index| self.times[index])
    }

    /// The effective time of the log's entry `seq`: `Err` while it is not folded here,
    /// `Ok(None)` for an entry before the log's first take (dated no later than it, so the
    /// quiet rule already bounds a take by it).
    fn time_of(&self, seq: u64) -> Result<Option<Timestamp>, ()> {
        if seq > self.last_seq {
            return Err(());
        }
        let upto = self.seqs.partition_point(|first| *first <= seq);
        Ok(upto.checked_sub(1).map(|index| self.times[index]))
    }
}

/// Who is primary, as resolved from the chain.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct PrimaryView {
    pub primary: Option<AgentName>,
    /// When the current primary took over (its take's effective time).
    pub since: Option<Timestamp>,
    /// Who held it before the latest take (for "taking over from X").
    pub previous: Option<AgentName>,
    /// What the next take or release names as `after`.
    pub tip: EntryHash,
    /// Takes and releases that do not count (lost races, refusals), latest last.
    pub voided: Vec<(EntryId, AgentName, PrimaryVoid)>,
}

/// Why a take or a release of the primary's role does not count: the one judgement the fold
/// makes and an operation asks before it writes ([`Leadership::judge`]).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, thiserror::Error)]
#[serde(rename_all = "snake_case")]
pub enum PrimaryVoid {
    #[error("{author} does not hold its name")]
    Unseated { author: AgentName },
    #[error("taking over needs orchestrator; {author} was {level}")]
    LevelTooLow { author: AgentName, level: Level },
    #[error("already primary")]
    AlreadyPrimary,
    #[error("{author} was not primary")]
    NotPrimary { author: AgentName },
    /// Valid, but another take or release following the same tip won (ADR 0006).
    #[error("lost the race to {winner}")]
    LostRace { winner: AgentName },
    #[error("it follows an event that does not count")]
    FollowsVoid,
    /// A take dated within the quiet period after the primary's last proven activity.
    #[error("{primary} was active at {active_ms} (ms): a take counts from {from_ms}")]
    PrimaryActive {
        primary: AgentName,
        active_ms: u64,
        from_ms: u64,
    },
    /// Dated after the reading time: it does not count before its time.
    #[error("dated in the future ({at_ms} ms)")]
    NotYet { at_ms: u64 },
    /// A take naming an entry of the primary's log that this machine has not folded: what it
    /// claims to have seen is not proven here (yet).
    #[error("it names {primary}'s entry {seq}, not folded here")]
    Unseen { primary: AgentName, seq: u64 },
}

impl PrimaryVoid {
    /// Whether it lost a race (rather than being refused).
    pub fn is_lost_race(&self) -> bool {
        matches!(self, Self::LostRace { .. })
    }
}

/// A brief as folded.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Brief {
    pub by: AgentName,
    pub objective: String,
    pub constraints: Vec<String>,
    pub time: Timestamp,
    pub stamp: u64,
    made: Made,
}

/// A decision as folded.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Decision {
    pub id: EntryId,
    pub by: AgentName,
    pub line: String,
    pub time: Timestamp,
    pub stamp: u64,
    made: Made,
}

/// The primary, settings and briefs. See the module docs.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Leadership {
    events: Vec<Event>,
    view: PrimaryView,
    /// The stamp of the primary's last change.
    changed: u64,
    standby: BTreeMap<AgentName, Timestamp>,
    /// Every quiet period the master set, with the master position that set it, in master
    /// order: a take is judged by the one in force at its position.
    quiet_periods: Vec<(MasterPos, u64)>,
    /// The activity of every log that ever took the role (see [`Activity`]).
    activity: Vec<Activity>,
    /// The reading time the chain was last resolved at ([`Leadership::advance`]).
    as_of: Timestamp,
    /// The earliest time after `as_of` at which an event dated in the future comes due.
    due: Option<Timestamp>,
    /// What the last walk of the chain found (not kept: derived, walked again when absent).
    #[serde(skip)]
    walk: Walk,
    briefs: BTreeMap<AgentName, Brief>,
    decisions: VecDeque<Decision>,
    problems: Vec<FoldProblem>,
}

impl Default for Leadership {
    fn default() -> Self {
        Self {
            events: Vec::new(),
            view: PrimaryView {
                tip: ROOT,
                ..PrimaryView::default()
            },
            changed: 0,
            standby: BTreeMap::new(),
            quiet_periods: Vec::new(),
            activity: Vec::new(),
            as_of: Timestamp::default(),
            due: None,
            walk: Walk::default(),
            briefs: BTreeMap::new(),
            decisions: VecDeque::new(),
            problems: Vec::new(),
        }
    }
}

impl Leadership {
    pub fn problems(&self) -> Vec<FoldProblem> {
        self.problems.clone()
    }

    fn report(&mut self, acted: &Acted<'_>, detail: String) {
        self.report_as(acted, FoldProblemKind::MalformedBody, detail);
    }

    fn report_as(&mut self, acted: &Acted<'_>, kind: FoldProblemKind, detail: String) {
        if self.problems.len() < 100 {
            self.problems
                .push(FoldProblem::about(acted.entry, kind, detail));
        }
    }

    /// Reports a take that can never count, which is kept nowhere else.
    fn report_never(&mut self, acted: &Acted<'_>, level: Level) {
        let detail = format!("a take by {}, a {level}: it never counts", acted.author);
        self.report_as(acted, FoldProblemKind::Refused, detail);
    }

    /// Whether a take (`take`) or a release that `author` is about to write at `now`,
    /// following the chain's tip, would count by the role's rules: the fold's own judgement
    /// (the quiet period included), against the primary as it stands. Standing is the
    /// session's authorize to judge and word.
    pub(crate) fn judge(
        &self,
        take: bool,
        author: &AgentName,
        now: Timestamp,
    ) -> Result<(), PrimaryVoid> {
        rules(take, author, self.view.primary.as_ref())?;
        match (take, &self.view.primary) {
            (true, Some(primary)) => {
                let activity = self.primary_activity();
                let seen = activity.map(|log| log.last_seq);
                let at = dated_after_seen(primary, activity, seen, now)?;
                quiet_rule(primary, activity, at, self.quiet_period_at(None))
            }
            _ => Ok(()),
        }
    }

    /// The seq of the primary's last entry folded here, while someone holds the role: what a
    /// take written now names as seen ([`TakeBody::primary_seq`]).
    pub fn primary_last_seq(&self) -> Option<u64> {
        self.view.primary.as_ref()?;
        self.primary_activity().map(|log| log.last_seq)
    }

    /// The activity of the primary as the chain stands.
    fn primary_activity(&self) -> Option<&Activity> {
        let tip = self
            .events
            .iter()
            .find(|event| event.hash == self.view.tip)?;
        self.activity
            .iter()
            .find(|log| log.key == tip.made.key && log.author == tip.made.author)
    }

    /// The quiet period in force at master position `pos` (the latest setting when `None`).
    fn quiet_period_at(&self, pos: Option<MasterPos>) -> u64 {
        quiet_period_at(&self.quiet_periods, pos)
    }

    pub fn view(&self) -> &PrimaryView {
        &self.view
    }

    /// The stamp of the primary's last change.
    pub fn changed(&self) -> u64 {
        self.changed
    }

    /// The quiet period: the master's setting, or the default.
    pub fn quiet_period_s(&self) -> u64 {
        self.quiet_period_at(None)
    }

    /// Agents that recorded that they wait, with when.
    pub fn standing_by(&self) -> impl Iterator<Item = (&AgentName, Timestamp)> {
        self.standby.iter().map(|(name, at)| (name, *at))
    }

    /// The brief of `agent`, if it wrote one that counts.
    pub fn brief(&self, agent: &AgentName) -> Option<&Brief> {
        self.briefs.get(agent)
    }

    /// The brief catch-up shows: the primary's, else the latest one.
    pub fn current_brief(&self) -> Option<&Brief> {
        self.view
            .primary
            .as_ref()
            .and_then(|primary| self.briefs.get(primary))
            .or_else(|| {
                self.briefs
                    .values()
                    .max_by(|a, b| (a.time, &a.by).cmp(&(b.time, &b.by)))
            })
    }

    /// Decisions, newest first.
    pub fn decisions(&self) -> impl Iterator<Item = &Decision> {
        self.decisions.iter().rev()
    }

    pub fn feed(&mut self, acted: &Acted<'_>, identity: &Identity, changes: &mut Changes) {
        self.as_of = self.as_of.max(acted.arrived);
        let moved = !acted.by_master && self.note_activity(acted);
        match acted.kind() {
            kinds::TAKE | kinds::RELEASE => {
                let parsed = if acted.kind() == kinds::TAKE {
                    TakeBody::deserialize(acted.body()).map(|body| (body.after, body.primary_seq))
                } else {
                    PrimaryReleaseBody::deserialize(acted.body()).map(|body| (body.after, None))
                };
                let (after, primary_seq) = match parsed {
                    Ok(parsed) => parsed,
                    Err(err) => return self.report(acted, format!("bad {}: {err}", acted.kind())),
                };
                if acted.by_master {
                    return self.report(acted, "the master is never primary".into());
                }
                let take = acted.kind() == kinds::TAKE;
                let made = Made::from(acted);
                if take
                    && let Some(level) = made.level(identity)
                    && level < Level::Orchestrator
                {
                    // It can never count (ADR 0005, rule 2a: a later grant never raises the
                    // level an entry was written at), so it is not kept: reported, and gone.
                    return self.report_never(acted, level);
                }
                if take && !self.tracks(acted) {
                    // From its first take on, its log's entries prove its author active.
                    self.activity.push(Activity {
                        author: acted.author.clone(),
                        key: *acted.key,
                        times: vec![acted.time],
                        seqs: vec![acted.entry.seq()],
                        last_seq: acted.entry.seq(),
                    });
                }
                self.events.push(Event {
                    take,
                    made,
                    hash: *acted.entry.hash(),
                    after,
                    primary_seq,
                });
                if !self.fold_alone(identity, changes) {
                    self.rejudge(identity, changes);
                }
            }
            kinds::STANDBY if !acted.by_master => {
                self.standby.insert(acted.author.clone(), acted.time);
            }
            kinds::SETTINGS if acted.by_master => match SettingsBody::deserialize(acted.body()) {
                Ok(body) => {
                    let at = self
                        .quiet_periods
                        .partition_point(|(pos, _)| *pos <= acted.pos);
                    self.quiet_periods
                        .insert(at, (acted.pos, body.quiet_period_s));
                    // Takes already folded are judged by the period in force at theirs.
                    self.rejudge(identity, changes);
                }
                Err(err) => self.report(acted, format!("bad settings: {err}")),
            },
            kinds::SETTINGS => self.report(acted, "settings not signed by the master".into()),
            kinds::BRIEF_SET if !acted.by_master => self.feed_brief(acted, identity, changes),
            kinds::BRIEF_DECIDE if !acted.by_master => self.feed_decision(acted, identity, changes),
            _ => {}
        }
        if moved && !matches!(acted.kind(), kinds::TAKE | kinds::RELEASE | kinds::SETTINGS) {
            // The primary's activity moved under a take already judged (or reached the entry a
            // take named as seen): the chain is walked again now, so that a machine that
            // folded the take first ends where one that folded this entry first does.
            self.rejudge(identity, changes);
        }
    }

    fn counts_as_member(made: &Made, identity: &Identity) -> bool {
        made.level(identity)
            .is_some_and(|level| level >= Level::Member)
    }

    fn feed_brief(&mut self, acted: &Acted<'_>, identity: &Identity, changes: &mut Changes) {
        let body = match BriefBody::deserialize(acted.body()) {
            Ok(body) => body,
            Err(err) => return self.report(acted, format!("bad brief.set: {err}")),
        };
        let made = Made::from(acted);
        if !Self::counts_as_member(&made, identity)
            || body.constraints.len() > MAX_CONSTRAINTS
            || body.objective.chars().count() > MAX_BRIEF_LINE
            || body
                .constraints
                .iter()
                .any(|line| line.chars().count() > MAX_BRIEF_LINE)
        {
            return self.report(acted, "a brief by a Worker, or over its limits".into());
        }
        let newer = self
            .briefs
            .get(acted.author)
            .is_none_or(|brief| (brief.time, brief.made.seq) <= (made.time, made.seq));
        if newer {
            self.briefs.insert(
                acted.author.clone(),
                Brief {
                    by: acted.author.clone(),
                    objective: body.objective,
                    constraints: body.constraints,
                    time: made.time,
                    stamp: changes.stamp(),
                    made,
                },
            );
        }
    }

    fn feed_decision(&mut self, acted: &Acted<'_>, identity: &Identity, changes: &mut Changes) {
        let body = match DecideBody::deserialize(acted.body()) {
            Ok(body) => body,
            Err(err) => return self.report(acted, format!("bad brief.decide: {err}")),
        };
        let made = Made::from(acted);
        if !Self::counts_as_member(&made, identity) || body.line.chars().count() > MAX_BRIEF_LINE {
            return self.report(acted, "a decision by a Worker, or over its limit".into());
        }
        let decision = Decision {
            id: made.id.clone(),
            by: made.author.clone(),
            line: body.line,
            time: made.time,
            stamp: changes.stamp(),
            made,
        };
        // Newest last, by effective time (then id): the same on every machine.
        let at = self
            .decisions
            .iter()
            .position(|d| (d.time, &d.id) > (decision.time, &decision.id))
            .unwrap_or(self.decisions.len());
        self.decisions.insert(at, decision);
        while self.decisions.len() > KEPT_DECISIONS {
            self.decisions.pop_front();
        }
    }

    /// Whether `acted`'s log is one whose activity is kept.
    fn tracks(&self, acted: &Acted<'_>) -> bool {
        self.activity
            .iter()
            .any(|log| log.key == *acted.key && log.author == *acted.author)
    }

    /// Records `acted` as activity of its log, if that log ever took the role. Says whether a
    /// take already judged may be judged otherwise now (its primary's activity moved at or
    /// before it, or the entry it names as seen arrived): the last walk is then forgotten.
    fn note_activity(&mut self, acted: &Acted<'_>) -> bool {
        let Some(index) = self
            .activity
            .iter()
            .position(|log| log.key == *acted.key && log.author == *acted.author)
        else {
            return false;
        };
        let seq = acted.entry.seq();
        let log = &mut self.activity[index];
        let before = log.last_seq;
        log.last_seq = log.last_seq.max(seq);
        // In log order effective times never go back; a replayed log keeps the list sorted.
        let at = log.times.partition_point(|time| *time <= acted.time);
        let mut moved = false;
        if at == 0 || log.times[at - 1] != acted.time {
            log.times.insert(at, acted.time);
            log.seqs.insert(at, seq);
            // A take already judged against this log's activity, dated at or after the new
            // time, may be judged otherwise now.
            let judged = self
                .walk
                .0
                .as_ref()
                .and_then(|walk| walk.quiet_judged.get(&index));
            moved = judged.is_some_and(|until| *until >= acted.time);
        } else if log.seqs[at - 1] > seq {
            log.seqs[at - 1] = seq;
        }
        // A take that named an entry of this log not folded then may count now.
        let waited = self
            .walk
            .0
            .as_ref()
            .and_then(|walk| walk.unseen.get(&index))
            .is_some_and(|named| *named > before && *named <= seq);
        // A walk not made since the state was read from the kept state remembers nothing of
        // what was judged: the chain is walked again, once.
        let forgotten = self.walk.0.is_none() && !self.events.is_empty();
        if moved || waited {
            self.walk = Walk::default();
        }
        moved || waited || forgotten
    }

    /// Folds the event just pushed by itself, when the last walk shows it can change nothing
    /// but itself or extends the chain at its tip; says whether it did (else the chain is
    /// walked again). The view is the one a walk would give.
    fn fold_alone(&mut self, identity: &Identity, changes: &mut Changes) -> bool {
        if self.due.is_some_and(|due| due <= self.as_of) {
            return false;
        }
        let index = self.events.len() - 1;
        let Some(walk) = self.walk.0.as_deref_mut() else {
            return false;
        };
        let event = &self.events[index];
        let context = Context {
            identity,
            activity: &self.activity,
            quiet_periods: &self.quiet_periods,
            now: self.as_of,
        };
        let mut view = self.view.clone();
        let reason = match walk.at.get(&event.after) {
            None => {
                walk.pending.insert(event.after);
                PrimaryVoid::FollowsVoid
            }
            Some(&at) => {
                let step = &walk.steps[at];
                let holder = step.holder.map(|log| &self.activity[log]);
                if event.take
                    && step.primary.is_some()
                    && let Some(log) = step.holder
                {
                    let until = walk.quiet_judged.entry(log).or_insert(event.made.time);
                    *until = (*until).max(event.made.time);
                }
                let step = &walk.steps[at];
                match judge(
                    event.take,
                    &event.made,
                    event.primary_seq,
                    step.primary.as_ref(),
                    holder,
                    &context,
                ) {
                    Err(reason) => {
                        if let (PrimaryVoid::Unseen { seq, .. }, Some(log)) = (&reason, step.holder)
                        {
                            note_unseen(&mut walk.unseen, log, *seq);
                        }
                        reason
                    }
                    Ok(()) => {
                        let key = race_key(event, &step.race_input);
                        let date = race::race_date(event.made.time, step.tip_time);
                        match &step.won {
                            Some(won) => match won.beats(&key, date) {
                                Some(true) => PrimaryVoid::LostRace {
                                    winner: won.key.2.clone(),
                                },
                                // It may win, or move which rival is late: walk again.
                                _ => return false,
                            },
                            // It follows the tip, uncontested so far: it extends the chain,
                            // unless events folded before it follow it.
                            None if walk.pending.contains(&event.hash) => return false,
                            None => {
                                walk.steps[at].won = Some(Won {
                                    key,
                                    late: false,
                                    earliest: date,
                                });
                                view.previous = view.primary.take();
                                let holder = if event.take {
                                    view.primary = Some(event.made.author.clone());
                                    view.since = Some(event.made.time);
                                    self.activity.iter().position(|log| {
                                        log.key == event.made.key && log.author == event.made.author
                                    })
                                } else {
                                    view.since = None;
                                    None
                                };
                                view.tip = event.hash;
                                walk.at.insert(event.hash, walk.steps.len());
                                walk.steps.push(Step {
                                    primary: view.primary.clone(),
                                    holder,
                                    tip_time: date,
                                    race_input: *event.hash.as_bytes(),
                                    won: None,
                                });
                                return self.settle(view, event.made.time, changes);
                            }
                        }
                    }
                }
            }
        };
        push_void(&mut view.voided, event, reason);
        self.settle(view, event.made.time, changes)
    }

    /// Takes `view` as the chain's after folding an event dated `time` alone.
    fn settle(&mut self, view: PrimaryView, time: Timestamp, changes: &mut Changes) -> bool {
        if time > self.as_of {
            self.due = Some(self.due.map_or(time, |due| due.min(time)));
        }
        if view != self.view {
            self.view = view;
            self.changed = changes.stamp();
        }
        true
    }

    /// Resolves the chain again at the reading time `now`, when an event dated in the future
    /// may have come due since it was last resolved. Pure: the reading time is a parameter.
    pub fn advance(&mut self, now: Timestamp, identity: &Identity, changes: &mut Changes) {
        let due = self.due.is_some_and(|due| due <= now);
        self.as_of = self.as_of.max(now);
        if due {
            self.rejudge(identity, changes);
        }
    }

    /// Resolves the chain again (an event came, or a seat changed).
    pub fn rejudge(&mut self, identity: &Identity, changes: &mut Changes) {
        let context = Context {
            identity,
            activity: &self.activity,
            quiet_periods: &self.quiet_periods,
            now: self.as_of,
        };
        let (view, due, walk) = resolve(&self.events, &context);
        self.due = due;
        self.walk = Walk(Some(Box::new(walk)));
        if view != self.view {
            self.view = view;
            self.changed = changes.stamp();
        }
    }
}

/// The quiet period in force at master position `pos` among `settings` (in master order).
fn quiet_period_at(settings: &[(MasterPos, u64)], pos: Option<MasterPos>) -> u64 {
    let upto = match pos {
        Some(pos) => settings.partition_point(|(at, _)| *at <= pos),
        None => settings.len(),
    };
    upto.checked_sub(1)
        .map_or(DEFAULT_QUIET_PERIOD_S, |index| settings[index].1)
}

/// The quiet-period rule: a take dated `at` of the role `primary` holds counts only when the
/// primary's last activity at or before `at` is at least `quiet_period_s` older.
fn quiet_rule(
    primary: &AgentName,
    activity: Option<&Activity>,
    at: Timestamp,
    quiet_period_s: u64,
) -> Result<(), PrimaryVoid> {
    let Some(active) = activity.and_then(|log| log.latest_by(at)) else {
        return Ok(());
    };
    let from = active
        .as_millis()
        .saturating_add(quiet_period_s.saturating_mul(1000));
    if at.as_millis() < from {
        return Err(PrimaryVoid::PrimaryActive {
            primary: primary.clone(),
            active_ms: active.as_millis(),
            from_ms: from,
        });
    }
    Ok(())
}

/// What the last walk of the chain found: each chain node (the root, then each winner) with
/// what judging a child of it needs. Derived, so it is not kept and any two are equal.
#[derive(Debug, Clone, Default)]
struct Walk(Option<Box<Steps>>);

impl PartialEq for Walk {
    fn eq(&self, _: &Self) -> bool {
        true
    }
}

impl Eq for Walk {}

#[derive(Debug, Clone, Default)]
struct Steps {
    /// The chain node of each hash on the chain.
    at: HashMap<EntryHash, usize>,
    steps: Vec<Step>,
    /// What events that follow no chain node name: one of them may extend the chain later.
    pending: HashSet<EntryHash>,
    /// For each activity log (by index), the latest take judged against it as the primary's.
    quiet_judged: HashMap<usize, Timestamp>,
    /// For each activity log (by index), the lowest seq a take named as seen that is not
    /// folded here: the chain is walked again when it arrives.
    unseen: HashMap<usize, u64>,
}

#[derive(Debug, Clone)]
struct Step {
    /// The primary as the chain stands at this node: what its children are judged against.
    primary: Option<AgentName>,
    /// The primary's activity log (an index into `activity`).
    holder: Option<usize>,
    /// The node's race date: what its children are dated at least.
    tip_time: Timestamp,
    race_input: [u8; 32],
    /// The child that won here, if one did.
    won: Option<Won>,
}

#[derive(Debug, Clone)]
struct Won {
    key: RaceKey,
    /// Whether it was late among the rivals of its rank.
    late: bool,
    /// The earliest race date among the rivals of its rank.
    earliest: Timestamp,
}

impl Won {
    /// Whether the winner still beats a valid rival keyed `key` and dated `date` (`None`: the
    /// rival may change the race, which a walk decides).
    fn beats(&self, key: &RaceKey, date: Timestamp) -> Option<bool> {
        if key.0 != self.key.0 {
            return (key.0 > self.key.0).then_some(true);
        }
        if date < self.earliest {
            return None;
        }
        let late = date.as_millis()
            > self
                .earliest
                .as_millis()
                .saturating_add(race::RACE_WINDOW_MS);
        let rival = (late, &key.1, &key.2, key.3);
        ((self.late, &self.key.1, &self.key.2, self.key.3) < rival).then_some(true)
    }
}

fn race_key(event: &Event, race_input: &[u8; 32]) -> RaceKey {
    (
        u8::from(event.take),
        tiebreak(race_input, &event.made.key),
        event.made.author.clone(),
        event.made.seq,
    )
}

/// Remembers that a take named entry `seq` of activity log `log`, not folded here.
fn note_unseen(unseen: &mut HashMap<usize, u64>, log: usize, seq: u64) {
    let lowest = unseen.entry(log).or_insert(seq);
    *lowest = (*lowest).min(seq);
}

/// The voids a view keeps, latest folded last.
const KEPT_VOID: usize = 8;

fn push_void(
    voided: &mut Vec<(EntryId, AgentName, PrimaryVoid)>,
    event: &Event,
    reason: PrimaryVoid,
) {
    if voided.len() >= KEPT_VOID {
        voided.remove(0);
    }
    voided.push((event.made.id.clone(), event.made.author.clone(), reason));
}

/// What the chain is resolved against besides its events.
struct Context<'a> {
    identity: &'a Identity,
    activity: &'a [Activity],
    quiet_periods: &'a [(MasterPos, u64)],
    /// The reading time.
    now: Timestamp,
}

/// Whether a take (or a release) by `made` may follow the chain's tip, where `view` stands:
/// its author holds its name (an Orchestrator's, to take), and the role's rules allow it.
fn judge(
    take: bool,
    made: &Made,
    primary_seq: Option<u64>,
    holder: Option<&AgentName>,
    primary: Option<&Activity>,
    context: &Context<'_>,
) -> Result<(), PrimaryVoid> {
    if made.time > context.now {
        return Err(PrimaryVoid::NotYet {
            at_ms: made.time.as_millis(),
        });
    }
    match (take, made.level(context.identity)) {
        (_, None) => {
            return Err(PrimaryVoid::Unseated {
                author: made.author.clone(),
            });
        }
        (true, Some(level)) if level < Level::Orchestrator => {
            return Err(PrimaryVoid::LevelTooLow {
                author: made.author.clone(),
                level,
            });
        }
        _ => rules(take, &made.author, holder)?,
    }
    match (take, holder) {
        (true, Some(holder)) => {
            let at = dated_after_seen(holder, primary, primary_seq, made.time)?;
            if at > context.now {
                return Err(PrimaryVoid::NotYet {
                    at_ms: at.as_millis(),
                });
            }
            quiet_rule(
                holder,
                primary,
                at,
                quiet_period_at(context.quiet_periods, Some(made.pos)),
            )
        }
        _ => Ok(()),
    }
}

/// The date a take of the role `holder` holds is judged at (ADR 0017, rule 2): its own, or
/// the time of the primary's entry it names as seen when that is later (an entry is never
/// dated before what it names). A named entry not folded here leaves the take uncounted:
/// what it claims to have seen is not proven yet.
fn dated_after_seen(
    holder: &AgentName,
    primary: Option<&Activity>,
    primary_seq: Option<u64>,
    at: Timestamp,
) -> Result<Timestamp, PrimaryVoid> {
    let (Some(seq), Some(log)) = (primary_seq, primary) else {
        return Ok(at);
    };
    match log.time_of(seq) {
        Ok(named) => Ok(named.map_or(at, |named| named.max(at))),
        Err(()) => Err(PrimaryVoid::Unseen {
            primary: holder.clone(),
            seq,
        }),
    }
}

/// The role's rules: one takes it who is not primary, one gives it back who is.
fn rules(take: bool, author: &AgentName, primary: Option<&AgentName>) -> Result<(), PrimaryVoid> {
    let is_primary = primary == Some(author);
    match take {
        true if is_primary => Err(PrimaryVoid::AlreadyPrimary),
        false if !is_primary => Err(PrimaryVoid::NotPrimary {
            author: author.clone(),
        }),
        _ => Ok(()),
    }
}

/// How concurrent events are ordered (ADR 0006): rank, tie-break, author, seq.
type RaceKey = (u8, [u8; 32], AgentName, u64);

/// Orders the valid children of a tip dated `parent` (ADR 0016): by rank; among the best rank,
/// one dated more than the race window after the earliest loses; then by the rest of the key.
/// Returns, for the first, whether it was late and the earliest date among its rank.
fn sort_rivals(
    valid: &mut [(RaceKey, usize)],
    events: &[Event],
    parent: Timestamp,
) -> Option<(bool, Timestamp)> {
    let best = valid.iter().map(|(key, _)| key.0).min()?;
    let rivals: Vec<usize> = valid
        .iter()
        .filter(|(key, _)| key.0 == best)
        .map(|&(_, index)| index)
        .collect();
    let dates: Vec<Timestamp> = rivals
        .iter()
        .map(|&index| race::race_date(events[index].made.time, parent))
        .collect();
    let earliest = dates.iter().min().copied()?;
    let late: HashMap<usize, bool> = rivals.into_iter().zip(race::late(&dates)).collect();
    valid.sort_by(|(a, ia), (b, ib)| {
        let late_a = late.get(ia).copied().unwrap_or(false);
        let late_b = late.get(ib).copied().unwrap_or(false);
        (a.0, late_a, &a.1, &a.2, a.3).cmp(&(b.0, late_b, &b.1, &b.2, b.3))
    });
    let first = valid.first().map(|(_, index)| *index)?;
    Some((late.get(&first).copied().unwrap_or(false), earliest))
}

/// The view the chain resolves to at the context's reading time, the earliest time after it
/// at which an event dated in the future comes due, and what the walk found.
fn resolve(events: &[Event], context: &Context<'_>) -> (PrimaryView, Option<Timestamp>, Steps) {
    let mut view = PrimaryView {
        tip: ROOT,
        ..PrimaryView::default()
    };
    let mut children: HashMap<EntryHash, Vec<usize>> = HashMap::new();
    for (index, event) in events.iter().enumerate() {
        children.entry(event.after).or_default().push(index);
    }
    let mut decided = vec![false; events.len()];
    // Every void with its event's index: the view keeps the latest folded.
    let mut voids: Vec<(usize, PrimaryVoid)> = Vec::new();
    let mut walk = Steps::default();
    let due = events
        .iter()
        .map(|event| event.made.time)
        .filter(|time| *time > context.now)
        .min();
    // The root's race is the first in a channel: its input is the genesis master key, which
    // no one knew before the channel was made (ROOT is the same in every channel).
    let root = *context.identity.masters()[0].as_bytes();
    // The log of the primary as the chain stands, whose activity a take is judged against.
    let mut holder: Option<usize> = None;
    // The date of the tip: what its children are dated at least (ADR 0016, rule 2).
    let mut tip_time = Timestamp::from_millis(0);
    loop {
        let race_input = if view.tip == ROOT {
            root
        } else {
            *view.tip.as_bytes()
        };
        walk.at.insert(view.tip, walk.steps.len());
        walk.steps.push(Step {
            primary: view.primary.clone(),
            holder,
            tip_time,
            race_input,
            won: None,
        });
        let Some(kids) = children.get(&view.tip) else {
            break;
        };
        let mut valid: Vec<(RaceKey, usize)> = Vec::new();
        for &index in kids {
            let event = &events[index];
            if event.take
                && view.primary.is_some()
                && let Some(log) = holder
            {
                let until = walk.quiet_judged.entry(log).or_insert(event.made.time);
                *until = (*until).max(event.made.time);
            }
            let activity = holder.map(|log| &context.activity[log]);
            match judge(
                event.take,
                &event.made,
                event.primary_seq,
                view.primary.as_ref(),
                activity,
                context,
            ) {
                Ok(()) => valid.push((race_key(event, &race_input), index)),
                Err(reason) => {
                    if let (PrimaryVoid::Unseen { seq, .. }, Some(log)) = (&reason, holder) {
                        note_unseen(&mut walk.unseen, log, *seq);
                    }
                    decided[index] = true;
                    voids.push((index, reason));
                }
            }
        }
        let Some((late, earliest)) = sort_rivals(&mut valid, events, tip_time) else {
            break;
        };
        let (key, winner) = valid[0].clone();
        for &(_, loser) in &valid[1..] {
            decided[loser] = true;
            let reason = PrimaryVoid::LostRace {
                winner: events[winner].made.author.clone(),
            };
            voids.push((loser, reason));
        }
        if let Some(step) = walk.steps.last_mut() {
            step.won = Some(Won {
                key,
                late,
                earliest,
            });
        }
        decided[winner] = true;
        let event = &events[winner];
        view.previous = view.primary.take();
        if event.take {
            view.primary = Some(event.made.author.clone());
            view.since = Some(event.made.time);
            holder = context
                .activity
                .iter()
                .position(|log| log.key == event.made.key && log.author == event.made.author);
        } else {
            view.since = None;
            holder = None;
        }
        view.tip = event.hash;
        tip_time = race::race_date(event.made.time, tip_time);
    }
    for (index, event) in events.iter().enumerate() {
        if !decided[index] {
            walk.pending.insert(event.after);
            voids.push((index, PrimaryVoid::FollowsVoid));
        }
    }
    voids.sort_by_key(|(index, _)| *index);
    let keep = voids.len().saturating_sub(KEPT_VOID);
    for (index, reason) in voids.drain(keep..) {
        push_void(&mut view.voided, &events[index], reason);
    }
    (view, due, walk)
}

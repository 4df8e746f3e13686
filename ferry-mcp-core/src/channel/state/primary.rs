//! The primary (the agent that leads the fleet), the project's settings, and the briefs.
//!
//! **The primary** is decided by a chain like an order's (ADR 0006): every `primary.take` and
//! `primary.release` names `after`, the latest such event its author had folded (the chain
//! starts at [`ROOT`], no primary). Among the children of the tip that are valid (a take by an
//! Orchestrator in force; a release by the primary itself), the least by rank, then by the
//! tie-break over the taker's roster key, wins; the others are void. Two concurrent takeovers
//! on two machines therefore end with one primary everywhere after sync, with no clock
//! compared. Whether the primary was silent enough to take over is the taker's machine's check
//! when it writes (ADR 0005: liveness depends on the reading time and is never folded).
//! `primary.standby` records that an agent waits; it changes nothing.
//!
//! **Settings** (`settings`, master-signed): the quiet period after which an agent counts as
//! silent. The latest in master order stands.
//!
//! **Briefs** (`brief.set`, `brief.decide`, written with `ferry brief` by a Member or above):
//! an agent's objective and constraints, and decisions it recorded.

use std::collections::{BTreeMap, HashMap, VecDeque};

use serde::{Deserialize, Serialize};

use super::orders::tiebreak;
use super::{Acted, Changes, EntryId, race};
use crate::channel::entry::EntryHash;
use crate::channel::identity::{FoldProblem, FoldProblemKind, Identity, MasterPos, Seat};
use crate::channel::keys::PublicKey;
use crate::channel::levels::Level;
use crate::channel::names::AgentName;
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
/// The most constraint lines a brief keeps.
pub const MAX_CONSTRAINTS: usize = 5;
/// The longest objective, constraint line or decision, in characters.
pub const MAX_BRIEF_LINE: usize = 300;
/// Decisions kept (the newest).
const KEPT_DECISIONS: usize = 32;

/// The body of `primary.take`: the chain event it follows.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TakeBody {
    pub after: EntryHash,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seen: Option<MasterPos>,
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
    /// The quiet period in seconds and the master position that set it.
    quiet_period_s: Option<(MasterPos, u64)>,
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
            quiet_period_s: None,
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
        if self.problems.len() < 100 {
            self.problems.push(FoldProblem::about(
                acted.entry,
                FoldProblemKind::MalformedBody,
                detail,
            ));
        }
    }

    /// Who is primary.
    /// Whether a take (`take`) or a release that `author` is about to write, following the
    /// chain's tip, would count by the role's rules: the fold's own judgement, against the
    /// primary as it stands. Standing is the session's authorize to judge and word.
    pub(crate) fn judge(&self, take: bool, author: &AgentName) -> Result<(), PrimaryVoid> {
        rules(take, author, &self.view)
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
        self.quiet_period_s
            .map_or(DEFAULT_QUIET_PERIOD_S, |(_, seconds)| seconds)
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
        match acted.kind() {
            kinds::TAKE | kinds::RELEASE => {
                let after = if acted.kind() == kinds::TAKE {
                    TakeBody::deserialize(acted.body()).map(|body| body.after)
                } else {
                    PrimaryReleaseBody::deserialize(acted.body()).map(|body| body.after)
                };
                let after = match after {
                    Ok(after) => after,
                    Err(err) => return self.report(acted, format!("bad {}: {err}", acted.kind())),
                };
                if acted.by_master {
                    return self.report(acted, "the master is never primary".into());
                }
                self.events.push(Event {
                    take: acted.kind() == kinds::TAKE,
                    made: Made::from(acted),
                    hash: *acted.entry.hash(),
                    after,
                });
                self.rejudge(identity, changes);
            }
            kinds::STANDBY if !acted.by_master => {
                self.standby.insert(acted.author.clone(), acted.time);
            }
            kinds::SETTINGS if acted.by_master => match SettingsBody::deserialize(acted.body()) {
                Ok(body) => {
                    let newer = self.quiet_period_s.is_none_or(|(pos, _)| acted.pos >= pos);
                    if newer {
                        self.quiet_period_s = Some((acted.pos, body.quiet_period_s));
                    }
                }
                Err(err) => self.report(acted, format!("bad settings: {err}")),
            },
            kinds::SETTINGS => self.report(acted, "settings not signed by the master".into()),
            kinds::BRIEF_SET if !acted.by_master => self.feed_brief(acted, identity, changes),
            kinds::BRIEF_DECIDE if !acted.by_master => self.feed_decision(acted, identity, changes),
            _ => {}
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

    /// Resolves the chain again (an event came, or a seat changed).
    pub fn rejudge(&mut self, identity: &Identity, changes: &mut Changes) {
        let view = resolve(&self.events, identity);
        if view != self.view {
            self.view = view;
            self.changed = changes.stamp();
        }
    }
}

/// Whether a take (or a release) by `made` may follow the chain's tip, where `view` stands:
/// its author holds its name (an Orchestrator's, to take), and the role's rules allow it.
fn judge(
    take: bool,
    made: &Made,
    view: &PrimaryView,
    identity: &Identity,
) -> Result<(), PrimaryVoid> {
    match (take, made.level(identity)) {
        (_, None) => Err(PrimaryVoid::Unseated {
            author: made.author.clone(),
        }),
        (true, Some(level)) if level < Level::Orchestrator => Err(PrimaryVoid::LevelTooLow {
            author: made.author.clone(),
            level,
        }),
        _ => rules(take, &made.author, view),
    }
}

/// The role's rules: one takes it who is not primary, one gives it back who is.
fn rules(take: bool, author: &AgentName, view: &PrimaryView) -> Result<(), PrimaryVoid> {
    let is_primary = view.primary.as_ref() == Some(author);
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
fn sort_rivals(valid: &mut [(RaceKey, usize)], events: &[Event], parent: Timestamp) {
    let Some(best) = valid.iter().map(|(key, _)| key.0).min() else {
        return;
    };
    let rivals: Vec<usize> = valid
        .iter()
        .filter(|(key, _)| key.0 == best)
        .map(|&(_, index)| index)
        .collect();
    let dates: Vec<Timestamp> = rivals
        .iter()
        .map(|&index| race::race_date(events[index].made.time, parent))
        .collect();
    let late: HashMap<usize, bool> = rivals.into_iter().zip(race::late(&dates)).collect();
    valid.sort_by(|(a, ia), (b, ib)| {
        let late_a = late.get(ia).copied().unwrap_or(false);
        let late_b = late.get(ib).copied().unwrap_or(false);
        (a.0, late_a, &a.1, &a.2, a.3).cmp(&(b.0, late_b, &b.1, &b.2, b.3))
    });
}

fn resolve(events: &[Event], identity: &Identity) -> PrimaryView {
    let mut view = PrimaryView {
        tip: ROOT,
        ..PrimaryView::default()
    };
    let mut children: HashMap<EntryHash, Vec<usize>> = HashMap::new();
    for (index, event) in events.iter().enumerate() {
        children.entry(event.after).or_default().push(index);
    }
    let mut decided = vec![false; events.len()];
    let void = |view: &mut PrimaryView, event: &Event, reason: PrimaryVoid| {
        if view.voided.len() >= 8 {
            view.voided.remove(0);
        }
        view.voided
            .push((event.made.id.clone(), event.made.author.clone(), reason));
    };
    // The date of the tip: what its children are dated at least (ADR 0016, rule 2).
    let mut tip_time = Timestamp::from_millis(0);
    while let Some(kids) = children.get(&view.tip) {
        let mut valid: Vec<(RaceKey, usize)> = Vec::new();
        for &index in kids {
            let event = &events[index];
            match judge(event.take, &event.made, &view, identity) {
                Ok(()) => valid.push((
                    (
                        u8::from(event.take),
                        tiebreak("primary", &event.made.key),
                        event.made.author.clone(),
                        event.made.seq,
                    ),
                    index,
                )),
                Err(reason) => {
                    decided[index] = true;
                    void(&mut view, event, reason);
                }
            }
        }
        sort_rivals(&mut valid, events, tip_time);
        let Some(&(_, winner)) = valid.first() else {
            break;
        };
        for &(_, loser) in &valid[1..] {
            decided[loser] = true;
            let reason = PrimaryVoid::LostRace {
                winner: events[winner].made.author.clone(),
            };
            void(&mut view, &events[loser], reason);
        }
        decided[winner] = true;
        let event = &events[winner];
        if event.take {
            view.previous = view.primary.take();
            view.primary = Some(event.made.author.clone());
            view.since = Some(event.made.time);
        } else {
            view.previous = view.primary.take();
            view.since = None;
        }
        view.tip = event.hash;
        tip_time = race::race_date(event.made.time, tip_time);
    }
    for (index, event) in events.iter().enumerate() {
        if !decided[index] {
            void(&mut view, event, PrimaryVoid::FollowsVoid);
        }
    }
    view
}

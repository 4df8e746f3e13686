//! The order board: a pure fold of order entries into each order's state.
//!
//! An order is issued by the master or an Orchestrator (`order.issue`); its id is the issue
//! entry's short id (ADR 0007). Who holds it and where it stands is decided by its **chain**
//! (ADR 0006): every claim, release, submit, review and cancel names `after`, the latest such
//! event of the order its author had folded (the issue entry at first). From the issue on, the
//! children of the chain's tip that are valid there compete; one on a path a master's review or
//! cancel ruled on first, then the least by rank, then one dated within the race window of the
//! earliest, then by a tie-break no claimant can bias, then by seq, wins and becomes the tip
//! (ADR 0016: an entry may claim not to have seen only what the logs do not prove it saw);
//! every other one is void, and so is everything that follows a void event. Validity is judged with the level in
//! force for the event (ADR 0005) and the roster as it is now; the board is judged again when
//! a seat changes ([`OrderBoard::rejudge`]).
//!
//! Progress lines and hand-ins are not chain events. A progress line counts when its author
//! held the order right after the event it names; a hand-in counts when its author is seated.

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use super::race::{self, tiebreak};
use super::{Acted, Changes, EntryId};
use crate::channel::fold::identity::{FoldProblem, FoldProblemKind, Identity, MasterPos, Seat};
use crate::channel::fold::levels::{Level, check_scope};
use crate::channel::log::entry::EntryHash;
use crate::channel::log::keys::PublicKey;
use crate::channel::log::names::AgentName;
use crate::time::Timestamp;

/// The entry kinds of orders.
pub mod kinds {
    pub const ISSUE: &str = "order.issue";
    pub const CLAIM: &str = "order.claim";
    pub const RELEASE: &str = "order.release";
    pub const PROGRESS: &str = "order.progress";
    pub const SUBMIT: &str = "order.submit";
    pub const REVIEW: &str = "order.review";
    pub const CANCEL: &str = "order.cancel";
    /// A hand-in: a git ref and a short summary of work done for an order (any seated agent).
    pub const HANDIN: &str = "work.handin";

    /// Every kind the order board folds.
    pub const ALL: &[&str] = &[
        ISSUE, CLAIM, RELEASE, PROGRESS, SUBMIT, REVIEW, CANCEL, HANDIN,
    ];
}

/// Whether the order board folds entries of `kind`.
pub fn is_kind(kind: &str) -> bool {
    kinds::ALL.contains(&kind)
}

/// The order `entry` acts on, from its body alone (none for an issue, which makes its own):
/// a pure function, so the session pages that order's record in before it feeds the entry.
pub fn touches(entry: &crate::channel::log::entry::VerifiedEntry) -> Option<EntryId> {
    if entry.kind() == kinds::ISSUE || !is_kind(entry.kind()) {
        return None;
    }
    entry.body().get("order")?.as_str()?.parse().ok()
}

/// The longest order title, in characters.
pub const MAX_TITLE: usize = 200;
/// The longest order body kept in the entry itself; a longer one goes to a blob.
pub const MAX_INLINE_BODY: usize = 1_000;
/// The longest progress line, in bytes.
pub const MAX_PROGRESS_BYTES: usize = 2_048;
/// The longest submit or hand-in summary, in characters.
pub const MAX_SUMMARY: usize = 500;
/// The longest review notes or release note, in characters.
pub const MAX_NOTES: usize = 2_000;
/// The longest git ref, in characters.
pub const MAX_REF: usize = 200;

/// The compressed Ed25519 base point: the key of an order that is gone ([`Order::gone`]).
const GONE_KEY: [u8; 32] = {
    let mut key = [0x66; 32];
    key[0] = 0x58;
    key
};

/// Progress lines kept per order (older ones are counted, not kept).
const KEPT_PROGRESS: usize = 8;
/// Hand-ins kept per order.
const KEPT_HANDINS: usize = 32;
/// Void events kept per order view (the latest).
const KEPT_VOID: usize = 8;

/// Resource hints of a heavy order (`docs/mcp-server.md`, heavy orders): all optional.
///
/// No `skip_serializing_if` here: the verified state keeps it in a format that needs every
/// field; [`Hints::to_json`] writes the compact entry form.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Hints {
    #[serde(default)]
    pub cores: Option<u32>,
    #[serde(default)]
    pub ram_gb: Option<u32>,
    #[serde(default)]
    pub gpu_mem_gb: Option<u32>,
    #[serde(default)]
    pub expected_minutes: Option<u32>,
}

impl Hints {
    pub fn is_empty(&self) -> bool {
        *self == Hints::default()
    }

    /// The hints as an entry writes them: only those given.
    pub fn to_json(&self) -> serde_json::Value {
        let mut map = serde_json::Map::new();
        for (name, value) in [
            ("cores", self.cores),
            ("ram_gb", self.ram_gb),
            ("gpu_mem_gb", self.gpu_mem_gb),
            ("expected_minutes", self.expected_minutes),
        ] {
            if let Some(value) = value {
                map.insert(name.into(), value.into());
            }
        }
        serde_json::Value::Object(map)
    }

    /// [`Hints::to_json`] as a serde field writer (an issue's entry form).
    fn serialize_given<S: serde::Serializer>(hints: &Hints, s: S) -> Result<S::Ok, S::Error> {
        hints.to_json().serialize(s)
    }
}

/// The body of `order.issue`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct IssueBody {
    pub title: String,
    /// A short body kept in the entry.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub body: Option<String>,
    /// A longer body's blob id (hex).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub blob: Option<String>,
    /// Offered to one agent: only it may claim.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub to: Option<AgentName>,
    /// Whether a submission needs a review (else a submission completes the order).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub review: bool,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub heavy: bool,
    #[serde(
        default,
        skip_serializing_if = "Hints::is_empty",
        serialize_with = "Hints::serialize_given"
    )]
    pub hints: Hints,
    /// The project scope it belongs to: only an unscoped grant, or one scoped to it, lets an
    /// agent act on it above a Worker's level. None: only unscoped grants do.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scope: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seen: Option<MasterPos>,
}

/// A review's verdict.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Verdict {
    Accept,
    Changes,
}

/// The body of every chain event (`order.claim`, `.release`, `.submit`, `.review`, `.cancel`)
/// and of `order.progress`: the order, the event it follows, and what the kind needs.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EventBody {
    pub order: String,
    pub after: EntryHash,
    /// Progress: the line. Release and cancel: an optional note.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
    /// Submit: the hand-in it submits.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub handin: Option<String>,
    /// Submit: a git ref or sha.
    #[serde(default, rename = "ref", skip_serializing_if = "Option::is_none")]
    pub git_ref: Option<String>,
    /// Submit: the summary.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub summary: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub verdict: Option<Verdict>,
    /// Review: notes (required for changes).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub notes: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seen: Option<MasterPos>,
}

/// The body of `order.claim` (read as an [`EventBody`], like every chain event).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ClaimBody {
    pub order: String,
    pub after: EntryHash,
}

/// The body of `order.release`: an optional note.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ReleaseBody {
    pub order: String,
    pub after: EntryHash,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
}

/// The body of `order.progress`: the line.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ProgressBody {
    pub order: String,
    pub after: EntryHash,
    pub text: String,
}

/// The body of `order.submit`: a hand-in or a git ref, and the summary.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SubmitBody {
    pub order: String,
    pub after: EntryHash,
    pub summary: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub handin: Option<String>,
    #[serde(rename = "ref", skip_serializing_if = "Option::is_none")]
    pub git_ref: Option<String>,
}

/// The body of `order.review`: the verdict, and notes (required for changes).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ReviewBody {
    pub order: String,
    pub after: EntryHash,
    pub verdict: Verdict,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub notes: Option<String>,
}

/// The body of `order.cancel`: an optional note.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CancelBody {
    pub order: String,
    pub after: EntryHash,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
}

/// A chain event's body as the fold judges it.
pub(crate) trait ChainEvent {
    fn event_kind(&self) -> EventKind;
}

impl ChainEvent for ClaimBody {
    fn event_kind(&self) -> EventKind {
        EventKind::Claim
    }
}

impl ChainEvent for ReleaseBody {
    fn event_kind(&self) -> EventKind {
        EventKind::Release {
            note: self.text.clone(),
        }
    }
}

impl ChainEvent for SubmitBody {
    fn event_kind(&self) -> EventKind {
        EventKind::Submit {
            handin: self.handin.clone(),
            git_ref: self.git_ref.clone(),
            summary: self.summary.clone(),
        }
    }
}

impl ChainEvent for ReviewBody {
    fn event_kind(&self) -> EventKind {
        EventKind::Review {
            verdict: self.verdict,
            notes: self.notes.clone(),
        }
    }
}

impl ChainEvent for CancelBody {
    fn event_kind(&self) -> EventKind {
        EventKind::Cancel {
            note: self.text.clone(),
        }
    }
}

/// The body of `work.handin`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HandInBody {
    pub order: String,
    #[serde(rename = "ref")]
    pub git_ref: String,
    pub summary: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seen: Option<MasterPos>,
}

/// Where an order stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum OrderState {
    Open,
    Offered,
    Claimed,
    InProgress,
    Submitted,
    ChangesRequested,
    Accepted,
    Cancelled,
}

impl std::fmt::Display for OrderState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl OrderState {
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Open => "open",
            Self::Offered => "offered",
            Self::Claimed => "claimed",
            Self::InProgress => "in_progress",
            Self::Submitted => "submitted",
            Self::ChangesRequested => "changes_requested",
            Self::Accepted => "accepted",
            Self::Cancelled => "cancelled",
        }
    }

    /// Open or offered: someone may claim it.
    pub const fn is_claimable(self) -> bool {
        matches!(self, Self::Open | Self::Offered)
    }

    /// Held by an agent who works on it.
    pub const fn is_held(self) -> bool {
        matches!(
            self,
            Self::Claimed | Self::InProgress | Self::ChangesRequested
        )
    }

    /// Accepted or cancelled: nothing more happens to it.
    pub const fn is_done(self) -> bool {
        matches!(self, Self::Accepted | Self::Cancelled)
    }
}

/// An order's body, where it lives.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum Body {
    None,
    Inline(String),
    /// A blob id (hex).
    Blob(String),
}

/// The issue of an order, as folded.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Issue {
    pub by: AgentName,
    pub key: PublicKey,
    pub by_master: bool,
    pub pos: MasterPos,
    pub time: Timestamp,
    pub hash: EntryHash,
    pub title: String,
    pub body: Body,
    pub to: Option<AgentName>,
    pub review: bool,
    pub heavy: bool,
    pub hints: Hints,
    /// Its project scope ([`IssueBody::scope`]).
    pub scope: Option<String>,
}

/// What a chain event does, as the fold judges it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) enum EventKind {
    Claim,
    Release {
        note: Option<String>,
    },
    Submit {
        handin: Option<String>,
        git_ref: Option<String>,
        summary: String,
    },
    Review {
        verdict: Verdict,
        notes: Option<String>,
    },
    Cancel {
        note: Option<String>,
    },
}

impl EventKind {
    /// Rank among concurrent events (ADR 0006): lower wins.
    fn rank(&self) -> u8 {
        match self {
            Self::Cancel { .. } => 0,
            Self::Review { .. } => 1,
            Self::Submit { .. } => 2,
            Self::Release { .. } => 3,
            Self::Claim => 4,
        }
    }

    fn name(&self) -> EventName {
        match self {
            Self::Claim => EventName::Claim,
            Self::Release { .. } => EventName::Release,
            Self::Submit { .. } => EventName::Submit,
            Self::Review { .. } => EventName::Review,
            Self::Cancel { .. } => EventName::Cancel,
        }
    }
}

/// Which chain event: what a void names.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum EventName {
    Claim,
    Release,
    Submit,
    Review,
    Cancel,
    /// A progress line (not a chain event, judged on its own).
    Progress,
}

impl EventName {
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Claim => "claim",
            Self::Release => "release",
            Self::Submit => "submit",
            Self::Review => "review",
            Self::Cancel => "cancel",
            Self::Progress => "progress",
        }
    }
}

impl std::fmt::Display for EventName {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A text of an event that has a length limit.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TextField {
    Note,
    Notes,
    Ref,
    Summary,
}

impl std::fmt::Display for TextField {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Self::Note => "note",
            Self::Notes => "notes",
            Self::Ref => "ref",
            Self::Summary => "summary",
        })
    }
}

/// Why an event of an order does not count (ADR 0006): the one judgement the fold makes and
/// an operation asks before it writes ([`Order::judge`]). The text is the fold's own words.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, thiserror::Error)]
#[serde(rename_all = "snake_case")]
pub enum VoidReason {
    #[error("{author} does not hold its name")]
    Unseated { author: AgentName },
    #[error("{event} needs {needed}; {author} was {level}")]
    LevelTooLow {
        event: EventName,
        needed: Level,
        author: AgentName,
        level: Level,
    },
    #[error("the master does not claim orders")]
    MasterClaims,
    /// The order did not stand where the event needs it.
    #[error("the order was {}", .state.as_str())]
    WrongState { state: OrderState },
    #[error("the order is offered to {to}")]
    OfferedToAnother { to: AgentName },
    #[error("{author} does not hold the order")]
    NotHolder { author: AgentName },
    #[error("a submission names a hand-in or a git ref")]
    NoWork,
    #[error("{field} is over {max} characters")]
    TooLong { field: TextField, max: usize },
    #[error("the author of a submission does not review it")]
    OwnSubmission,
    #[error("asking for changes needs notes")]
    ChangesWithoutNotes,
    #[error("only the master cancels an order")]
    MasterOnly,
    /// Valid, but another event following the same tip won (ADR 0006).
    #[error("lost the race to {winner}'s {event}")]
    LostRace { winner: AgentName, event: EventName },
    #[error("it follows an event that does not count")]
    FollowsVoid,
    /// A submission names no counted hand-in of its order (ADR 0030).
    #[error("the submission names no hand-in of this order")]
    UnknownHandIn { handin: String },
    /// A submission names a hand-in by another agent that was not a Worker when it handed
    /// in (ADR 0030): a holder submits its own hand-ins and its Workers'.
    #[error("hand-in {handin} is {by}'s, who was {level} when it handed in")]
    HandInOfAnother {
        handin: String,
        by: AgentName,
        level: Level,
    },
}

impl VoidReason {
    /// Whether it lost a race (rather than being refused).
    pub fn is_lost_race(&self) -> bool {
        matches!(self, Self::LostRace { .. })
    }
}

/// Who made an event or a line, and where it stands. Every order keeps many (its events and
/// progress lines), so it holds only what the judging needs; the entry's id follows from it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
struct Made {
    author: AgentName,
    key: PublicKey,
    by_master: bool,
    seq: u64,
    /// For the master's own entries, their position (its era names their id).
    pos: MasterPos,
    time: Timestamp,
}

impl Made {
    fn from(acted: &Acted<'_>) -> Self {
        let made = Self {
            author: acted.author.clone(),
            key: *acted.key,
            by_master: acted.by_master,
            seq: acted.entry.seq(),
            pos: acted.pos,
            time: acted.time,
        };
        debug_assert_eq!(&made.id(), acted.id, "an id follows from who made it");
        made
    }

    /// The id of the entry (ADR 0007): the master's names its era, an agent's its name.
    fn id(&self) -> EntryId {
        if self.by_master {
            EntryId::Master {
                era: self.pos.0,
                seq: self.seq,
            }
        } else {
            EntryId::Agent {
                name: self.author.clone(),
                seq: self.seq,
            }
        }
    }

    /// Whether it counts as its author's at all: the master's, or an agent's whose key holds
    /// its name.
    fn seated(&self, identity: &Identity) -> bool {
        self.by_master || identity.seat(&self.author) == Seat::Seated(&self.key)
    }

    /// The level in force for it on an order of `scope`.
    fn level(&self, identity: &Identity, scope: Option<&str>) -> Level {
        identity.level_in(
            &self.author,
            &self.key,
            self.seq,
            self.pos,
            self.time,
            scope,
        )
    }

    /// The level in force for it as a chain event on an order of `scope` that names an event
    /// standing at `floor` (ADR 0016, rule 2: neither its position nor its time is before
    /// what it names).
    fn level_after(
        &self,
        identity: &Identity,
        floor: (MasterPos, Timestamp),
        scope: Option<&str>,
    ) -> Level {
        identity.level_in(
            &self.author,
            &self.key,
            self.seq,
            self.pos.max(floor.0),
            self.time.max(floor.1),
            scope,
        )
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
struct Event {
    kind: EventKind,
    made: Made,
    hash: EntryHash,
    after: EntryHash,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
struct ProgressLine {
    made: Made,
    after: EntryHash,
    text: String,
}

/// A hand-in of work for an order.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct HandIn {
    pub id: EntryId,
    pub by: AgentName,
    key: PublicKey,
    /// Where its author stood when it handed in: its level there is judged at this position
    /// (ADR 0030).
    pos: MasterPos,
    pub git_ref: String,
    pub summary: String,
    pub time: Timestamp,
}

/// The latest submission of an order.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Submission {
    pub id: EntryId,
    pub by: AgentName,
    pub handin: Option<String>,
    pub git_ref: Option<String>,
    pub summary: String,
    pub time: Timestamp,
}

/// The latest review of an order.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReviewRecord {
    pub by: AgentName,
    pub verdict: Verdict,
    pub notes: Option<String>,
    pub time: Timestamp,
}

/// An event of the order that does not count, and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Voided {
    pub id: EntryId,
    pub by: AgentName,
    pub what: EventName,
    pub reason: VoidReason,
}

impl Voided {
    /// Whether it lost a race (rather than being refused).
    pub fn lost_race(&self) -> bool {
        self.reason.is_lost_race()
    }
}

/// The last counted progress line.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LastProgress {
    pub by: AgentName,
    pub text: String,
    pub time: Timestamp,
}

/// An order's state, resolved from its chain.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct OrderView {
    /// Whether the issue counts (the master's, or an Orchestrator's at the time).
    pub counts: bool,
    pub state: OrderState,
    pub holder: Option<AgentName>,
    /// When the current holder's claim was made (its effective time).
    pub held_since: Option<Timestamp>,
    /// How many submissions counted.
    pub revision: u32,
    pub submission: Option<Submission>,
    pub review: Option<ReviewRecord>,
    pub progress: Option<LastProgress>,
    /// Counted progress lines among those kept.
    pub progress_lines: u32,
    /// The hash of the chain's tip: what the next event names as `after`.
    pub tip: EntryHash,
    /// The effective time of the last event that counted.
    pub updated: Timestamp,
    pub voided: Vec<Voided>,
    /// Hand-ins that count, newest last.
    pub handins: Vec<EntryId>,
}

/// One order: its issue, every event, and its resolved view.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Order {
    pub id: EntryId,
    pub issue: Issue,
    events: Vec<Event>,
    progress: Vec<ProgressLine>,
    handins: Vec<HandIn>,
    view: OrderView,
    /// The stamp of the view's last change (for `since`).
    changed: u64,
    /// What the last walk of its chain found (not kept: derived, walked again when absent).
    #[serde(skip)]
    walk: Walk,
}

impl Order {
    pub fn view(&self) -> &OrderView {
        &self.view
    }

    /// The stamp of this order's last change.
    pub fn changed(&self) -> u64 {
        self.changed
    }

    /// Counted hand-ins.
    pub fn handins(&self) -> impl Iterator<Item = &HandIn> {
        self.handins
            .iter()
            .filter(|handin| self.view.handins.contains(&handin.id))
    }

    /// An order whose record did not read and that the channel no longer holds: it does not
    /// count, and keeps only what its brief says.
    fn gone(id: &EntryId, brief: &Brief) -> Self {
        // Any valid key: it is never judged (the issue does not count).
        let key = PublicKey::from_bytes(&GONE_KEY).expect("the Ed25519 base point is a key");
        let issue = Issue {
            by: brief
                .involves
                .first()
                .cloned()
                .unwrap_or_else(AgentName::master),
            key,
            by_master: false,
            pos: MasterPos::START,
            time: Timestamp::from_millis(0),
            hash: EntryHash::ZERO,
            title: brief.title.to_string(),
            body: Body::None,
            to: brief.to.clone(),
            review: false,
            heavy: false,
            hints: Hints::default(),
            scope: brief.scope.as_deref().map(str::to_owned),
        };
        let view = initial_view(&issue, false);
        Self {
            id: id.clone(),
            issue,
            events: Vec::new(),
            progress: Vec::new(),
            handins: Vec::new(),
            view,
            changed: brief.changed,
            walk: Walk::default(),
        }
    }

    /// Whether an event `kind` that `author` (the master, when `by_master`) is about to write,
    /// following this order's tip, would count by the order's rules: the fold's own judgement
    /// of a chain event, against the order as it stands. An operation asks it before it
    /// writes, so a refusal is its error and never a void entry, and the rules exist once.
    /// Standing (the seat, the level in force) is the session's authorize to judge and word.
    pub(crate) fn judge(
        &self,
        kind: &EventKind,
        author: &AgentName,
        by_master: bool,
        identity: &Identity,
    ) -> Result<(), VoidReason> {
        rules(kind, author, by_master, None, &self.issue, &self.view)?;
        handin_rule(
            kind,
            author,
            &self.handins,
            identity,
            self.issue.scope.as_deref(),
        )
    }

    /// Whether a progress line `text` that `author` is about to write, naming this order's
    /// tip, would count by a line's rules.
    pub(crate) fn judge_progress(&self, author: &AgentName, text: &str) -> Result<(), VoidReason> {
        line_rules(author, self.view.holder.as_ref(), text)
    }

    /// The hand-in `id` of this order, if it counts.
    pub fn handin(&self, id: &EntryId) -> Option<&HandIn> {
        self.handins().find(|handin| handin.id == *id)
    }
}

/// What lists, catch-ups, searches and the indexes read of an order: kept in memory for every
/// order, while the order whole (its issue, events, lines and hand-ins) is read from its record
/// in the kept state when something needs it (ADR 0009).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Brief {
    pub counts: bool,
    pub state: OrderState,
    pub holder: Option<AgentName>,
    /// Whom it was offered to.
    pub to: Option<AgentName>,
    pub title: Box<str>,
    /// Its project scope.
    pub scope: Option<Box<str>>,
    /// Who made the latest counted submission.
    pub submitted_by: Option<AgentName>,
    /// Its events that lost a race (a catch-up tells their authors).
    pub lost_races: Box<[Voided]>,
    /// Every name that issued it or wrote one of its events, lines or hand-ins, sorted.
    involves: Box<[AgentName]>,
    changed: u64,
}

impl Brief {
    fn of(order: &Order) -> Self {
        let view = &order.view;
        let mut involves: Vec<AgentName> = std::iter::once(&order.issue.by)
            .chain(order.events.iter().map(|event| &event.made.author))
            .chain(order.progress.iter().map(|line| &line.made.author))
            .chain(order.handins.iter().map(|handin| &handin.by))
            .cloned()
            .collect();
        involves.sort();
        involves.dedup();
        Self {
            counts: view.counts,
            state: view.state,
            holder: view.holder.clone(),
            to: order.issue.to.clone(),
            title: order.issue.title.as_str().into(),
            scope: order.issue.scope.as_deref().map(Into::into),
            submitted_by: view.submission.as_ref().map(|s| s.by.clone()),
            lost_races: view
                .voided
                .iter()
                .filter(|void| void.lost_race())
                .cloned()
                .collect(),
            involves: involves.into(),
            changed: order.changed,
        }
    }

    /// The stamp of the order's last change.
    pub fn changed(&self) -> u64 {
        self.changed
    }
}

/// Which record of an order the kept state holds: its length and SHA-256 (records are kept
/// by digest, so a record is never changed where it is: ADR 0011).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
struct RecordAt {
    len: u64,
    digest: [u8; 32],
}

/// What a save writes the records that changed to.
pub trait RecordSink {
    fn put(&mut self, id: &EntryId, digest: &[u8; 32], bytes: &[u8]) -> Result<(), String>;
}

/// One order of the board: its brief, and the order whole when it is in memory.
#[derive(Debug, Clone)]
struct Slot {
    brief: Brief,
    /// Made or changed here, or paged in from its record by the session.
    whole: Option<Box<Order>>,
    /// Its record in the kept state the board was read from, if any.
    record: Option<RecordAt>,
}

impl Slot {
    fn resident(order: Order) -> Box<Self> {
        Box::new(Self {
            brief: Brief::of(&order),
            whole: Some(Box::new(order)),
            record: None,
        })
    }
}

/// An order of the board, as its readers see it: the brief at once, the order whole when
/// it is in memory ([`OrderRef::whole`]: the session pages it in first, `Session::order`).
#[derive(Clone, Copy)]
pub struct OrderRef<'a> {
    id: &'a EntryId,
    slot: &'a Slot,
}

impl<'a> OrderRef<'a> {
    pub fn id(&self) -> &'a EntryId {
        self.id
    }

    pub fn brief(&self) -> &'a Brief {
        &self.slot.brief
    }

    /// The order whole, if it is in memory (paged in by the session, or made here).
    pub fn whole(&self) -> Option<&'a Order> {
        self.slot.whole.as_deref()
    }

    /// The counted hand-in `id` of this order; none when the order whole is not in memory.
    pub fn handin(&self, id: &EntryId) -> Option<&'a HandIn> {
        self.whole()?.handin(id)
    }
}

impl std::fmt::Debug for OrderRef<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OrderRef")
            .field("id", self.id)
            .field("brief", &self.slot.brief)
            .finish_non_exhaustive()
    }
}

/// Every order. See the module docs. The orders whole live in the kept state's records
/// section (ADR 0009): in memory are their briefs, and those read or changed since.
#[derive(Debug, Clone, Default)]
pub struct OrderBoard {
    /// Boxed: a B-tree node keeps room for eleven entries and is often half full, and a slot
    /// is ten times the size of its pointer.
    orders: BTreeMap<EntryId, Box<Slot>>,
    /// Every order by the stamp of its last change, for `since` queries.
    by_change: BTreeMap<u64, EntryId>,
    /// Orders by what a catch-up or a join asks of them, so those never walk the board.
    index: Index,
    /// Events and lines that name an order not issued (yet) here, by order id: folded when
    /// its issue arrives (logs are read in any order).
    waiting: BTreeMap<EntryId, Vec<Waiting>>,
    problems: Vec<FoldProblem>,
    /// A fold step needed an order whole that was not in memory (the session's paging missed
    /// it): the step was not folded, and the session folds everything again.
    unpaged: bool,
    /// The orders whose row in the kept state (brief and record) changed since it was last
    /// kept: a save writes theirs and no other ([`OrderBoard::brief_rows`]).
    dirty: BTreeSet<EntryId>,
    /// The orders in memory whole: what a save encodes and then drops, so that it walks these
    /// and not every brief (70,000 at 1,000,000 entries: issue 23, item 3).
    resident: BTreeSet<EntryId>,
}

/// The board as the kept state holds it: every order's brief and where its record is in the
/// records section written with it.
#[derive(Serialize)]
struct KeptBoardRef<'a> {
    orders: Vec<(&'a EntryId, &'a Brief, RecordAt)>,
    by_change: &'a BTreeMap<u64, EntryId>,
    index: &'a Index,
    waiting: &'a BTreeMap<EntryId, Vec<Waiting>>,
    problems: &'a [FoldProblem],
}

#[derive(Deserialize)]
struct KeptBoard {
    /// Read straight into slots, one at a time: a list of every brief beside the map made
    /// from it would double the board's peak.
    #[serde(deserialize_with = "slots")]
    orders: BTreeMap<EntryId, Box<Slot>>,
    by_change: BTreeMap<u64, EntryId>,
    index: Index,
    waiting: BTreeMap<EntryId, Vec<Waiting>>,
    problems: Vec<FoldProblem>,
}

impl Serialize for OrderBoard {
    /// The briefs and where each record is: every record must be in the records file
    /// ([`OrderBoard::append_records`] first).
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let orders = self
            .orders
            .iter()
            .map(|(id, slot)| match slot.record {
                Some(at) => Ok((id, &slot.brief, at)),
                None => Err(serde::ser::Error::custom(format!(
                    "order {id} has no record: its records were not appended"
                ))),
            })
            .collect::<Result<Vec<_>, S::Error>>()?;
        KeptBoardRef {
            orders,
            by_change: &self.by_change,
            index: &self.index,
            waiting: &self.waiting,
            problems: &self.problems,
        }
        .serialize(s)
    }
}

impl<'de> Deserialize<'de> for OrderBoard {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let kept = KeptBoard::deserialize(d)?;
        Ok(Self {
            orders: kept.orders,
            by_change: kept.by_change,
            index: kept.index,
            waiting: kept.waiting,
            problems: kept.problems,
            unpaged: false,
            dirty: BTreeSet::new(),
            resident: BTreeSet::new(),
        })
    }
}

/// What the kept state holds of the board beside one row per order (ADR 0011): the entries
/// waiting for their issue and the problems. The indexes are made again from the briefs.
#[derive(Serialize)]
struct KeptRestRef<'a> {
    waiting: &'a BTreeMap<EntryId, Vec<Waiting>>,
    problems: &'a [FoldProblem],
}

#[derive(Deserialize)]
struct KeptRest {
    waiting: BTreeMap<EntryId, Vec<Waiting>>,
    problems: Vec<FoldProblem>,
}

/// One order's row in the kept state: its id, its brief and which record holds it whole.
#[derive(Serialize)]
struct BriefRowRef<'a>(&'a EntryId, &'a Brief, RecordAt);

#[derive(Deserialize)]
struct BriefRow(EntryId, Brief, RecordAt);

/// The kept board's `(id, brief, record)` list, as slots whose orders are in their records.
fn slots<'de, D: serde::Deserializer<'de>>(d: D) -> Result<BTreeMap<EntryId, Box<Slot>>, D::Error> {
    struct Slots;
    impl<'de> serde::de::Visitor<'de> for Slots {
        type Value = BTreeMap<EntryId, Box<Slot>>;
        fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str("the orders' briefs")
        }
        fn visit_seq<A: serde::de::SeqAccess<'de>>(
            self,
            mut seq: A,
        ) -> Result<Self::Value, A::Error> {
            let mut slots = BTreeMap::new();
            while let Some((id, brief, at)) = seq.next_element::<(EntryId, Brief, RecordAt)>()? {
                let slot = Slot {
                    brief,
                    whole: None,
                    record: Some(at),
                };
                slots.insert(id, Box::new(slot));
            }
            Ok(slots)
        }
    }
    d.deserialize_seq(Slots)
}

impl PartialEq for OrderBoard {
    /// Equal when they hold the same orders (the same orders whole, or the same records of
    /// them) and the same indexes, waiting entries and problems.
    fn eq(&self, other: &Self) -> bool {
        self.by_change == other.by_change
            && self.index == other.index
            && self.waiting == other.waiting
            && self.problems == other.problems
            && self.orders.len() == other.orders.len()
            && self
                .orders
                .iter()
                .zip(&other.orders)
                .all(|((a, sa), (b, sb))| {
                    let same = match (&sa.whole, &sb.whole) {
                        (Some(wa), Some(wb)) => wa == wb,
                        _ => sa.record.is_some() && sa.record == sb.record,
                    };
                    a == b && sa.brief == sb.brief && same
                })
    }
}

impl Eq for OrderBoard {}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
enum Waiting {
    Event(Event),
    Progress(ProgressLine),
    HandIn(HandIn),
}

const MAX_PROBLEMS: usize = 500;
/// At most this many entries wait for an order that is not issued here.
const MAX_WAITING: usize = 10_000;

/// Bytes of one order's record.
fn encode_record(order: &Order) -> Vec<u8> {
    postcard::to_stdvec(order).expect("an order always encodes")
}

impl OrderBoard {
    fn refs(&self) -> impl Iterator<Item = OrderRef<'_>> {
        self.orders.iter().map(|(id, slot)| OrderRef { id, slot })
    }

    fn ref_of(&self, id: &EntryId) -> Option<OrderRef<'_>> {
        let (id, slot) = self.orders.get_key_value(id)?;
        Some(OrderRef { id, slot })
    }

    /// The digest of order `id`'s kept record, when its whole is not in memory: what the
    /// session reads to page it in.
    pub(crate) fn record_to_page(&self, id: &EntryId) -> Option<[u8; 32]> {
        let slot = self.orders.get(id)?;
        match (&slot.whole, slot.record) {
            (None, Some(at)) => Some(at.digest),
            _ => None,
        }
    }

    /// Takes order `id` whole, as the session read it from its record (`bytes`, whose SHA-256
    /// the session checked against [`OrderBoard::record_to_page`]). A record that does not
    /// decode or holds another order is refused: the session reports it and folds everything
    /// again; meanwhile the order stands as one that does not count.
    pub(crate) fn page_in(&mut self, id: &EntryId, bytes: &[u8]) -> Result<(), String> {
        let Some(slot) = self.orders.get_mut(id) else {
            return Ok(());
        };
        let read = super::lazy::decode::<Order>(bytes).and_then(|order| {
            if order.id == *id {
                Ok(order)
            } else {
                Err(format!("the record of {id} holds {}", order.id))
            }
        });
        self.resident.insert(id.clone());
        match read {
            Ok(order) => {
                slot.whole = Some(Box::new(order));
                Ok(())
            }
            Err(why) => {
                slot.whole = Some(Box::new(Order::gone(id, &slot.brief)));
                Err(why)
            }
        }
    }

    /// Takes order `id` as gone (its record did not read): it does not count, and keeps only
    /// what its brief says, until the session has folded everything again.
    pub(crate) fn page_in_gone(&mut self, id: &EntryId) {
        if let Some(slot) = self.orders.get_mut(id) {
            slot.whole = Some(Box::new(Order::gone(id, &slot.brief)));
            self.resident.insert(id.clone());
        }
    }

    /// The orders whose records are kept and not in memory that `name`'s seat changing would
    /// judge again (every one when `name` is none: a handover judges them all).
    pub(crate) fn to_page_for_seat(&self, name: Option<&AgentName>) -> Vec<EntryId> {
        self.orders
            .iter()
            .filter(|(_, slot)| slot.whole.is_none() && slot.record.is_some())
            .filter(|(_, slot)| {
                name.is_none_or(|name| slot.brief.involves.binary_search(name).is_ok())
            })
            .map(|(id, _)| id.clone())
            .collect()
    }

    /// Drops from memory the orders of `ids` whose view did not change since stamp `since`
    /// and whose record is kept: paged in only to be judged again, they are as kept.
    pub(crate) fn drop_unchanged(&mut self, ids: &[EntryId], since: u64) {
        for id in ids {
            if let Some(slot) = self.orders.get_mut(id)
                && slot.record.is_some()
                && slot.brief.changed <= since
            {
                slot.whole = None;
                self.resident.remove(id);
            }
        }
    }

    /// Whether a fold step found an order whole it needed not in memory.
    pub(crate) fn is_unpaged(&self) -> bool {
        self.unpaged
    }

    /// Writes to `out` (the kept state a save writes) the record of every order in memory
    /// whose encoding is not the record the board names: afterwards every slot names its
    /// record there.
    pub(crate) fn put_records(&mut self, out: &mut dyn RecordSink) -> Result<(), String> {
        for id in &self.resident {
            let Some(slot) = self.orders.get_mut(id) else {
                continue;
            };
            let Some(order) = slot.whole.as_deref() else {
                continue;
            };
            let bytes = encode_record(order);
            let digest: [u8; 32] = Sha256::digest(&bytes).into();
            if slot.record.is_some_and(|at| at.digest == digest) {
                continue;
            }
            out.put(id, &digest, &bytes)?;
            slot.record = Some(RecordAt {
                len: bytes.len() as u64,
                digest,
            });
            self.dirty.insert(id.clone());
        }
        Ok(())
    }

    /// The bytes of what the kept state holds of the board beside its orders' rows.
    pub(crate) fn encode_rest(&self) -> Result<Vec<u8>, String> {
        postcard::to_stdvec(&KeptRestRef {
            waiting: &self.waiting,
            problems: &self.problems,
        })
        .map_err(|e| e.to_string())
    }

    /// The rows of the orders that changed since the board was last kept (of every order when
    /// `all`), each as its key and bytes: every order must name its record
    /// ([`OrderBoard::put_records`] first).
    pub(crate) fn brief_rows(&self, all: bool) -> Result<super::lazy::Rows, String> {
        let row = |id: &EntryId, slot: &Slot| {
            let at = slot
                .record
                .ok_or_else(|| format!("order {id} has no record: its records were not put"))?;
            let bytes = postcard::to_stdvec(&BriefRowRef(id, &slot.brief, at))
                .map_err(|e| e.to_string())?;
            Ok((id.to_string().into_bytes(), bytes))
        };
        if all {
            self.orders.iter().map(|(id, slot)| row(id, slot)).collect()
        } else {
            self.dirty
                .iter()
                .filter_map(|id| self.orders.get(id).map(|slot| row(id, slot)))
                .collect()
        }
    }

    /// The board as the kept state holds it: `rest` ([`OrderBoard::encode_rest`]) and one row
    /// per order ([`OrderBoard::brief_rows`]), the indexes made from the briefs. This is its
    /// small row, no order yet: each order's row is then taken by [`OrderBoard::insert_kept`]
    /// as the rows are read, so they are never all in memory at once beside the board. Must
    /// be called within [`super::lazy::with_memos`].
    pub(crate) fn rest_from_kept(rest: &[u8]) -> Result<Self, String> {
        let rest: KeptRest = super::lazy::decode_in_memos(rest)?;
        Ok(Self {
            waiting: rest.waiting,
            problems: rest.problems,
            ..Self::default()
        })
    }

    /// Takes one order's kept row (see [`OrderBoard::rest_from_kept`]).
    pub(crate) fn insert_kept(&mut self, bytes: &[u8]) -> Result<(), String> {
        let BriefRow(id, brief, at) = super::lazy::decode_in_memos(bytes)?;
        self.by_change.insert(brief.changed, id.clone());
        self.index.add(&id, &brief);
        let slot = Slot {
            brief,
            whole: None,
            record: Some(at),
        };
        self.orders.insert(id, Box::new(slot));
        Ok(())
    }

    /// Every order's row is as kept now (after a save encoded them).
    pub(crate) fn rows_kept(&mut self) {
        self.dirty.clear();
    }

    /// The orders whose records are kept and not in memory (a save to a new kept state pages
    /// them all in first, since it writes every record anew).
    pub(crate) fn not_resident(&self) -> Vec<EntryId> {
        self.to_page_for_seat(None)
    }

    /// Forgets where the records are kept: every record is written anew by the next save
    /// (a new kept state); every order must be in memory.
    pub(crate) fn forget_records(&mut self) {
        for id in &self.resident {
            if let Some(slot) = self.orders.get_mut(id) {
                slot.record = None;
            }
        }
    }

    /// Drops every order whole from memory whose record is kept (after a save wrote them).
    pub(crate) fn move_to_kept(&mut self) {
        let orders = &mut self.orders;
        self.resident.retain(|id| match orders.get_mut(id) {
            Some(slot) if slot.record.is_some() => {
                slot.whole = None;
                false
            }
            Some(_) => true,
            None => false,
        });
    }

    /// The order `id` whole, to be changed. `Err` when it is not issued (here, yet); `Ok(None)`
    /// when it is and is not in memory: the session's paging missed it, which is marked.
    fn whole_mut(&mut self, id: &EntryId) -> Result<Option<&mut Order>, NotIssued> {
        let Some(slot) = self.orders.get_mut(id) else {
            return Err(NotIssued);
        };
        match slot.whole.as_deref_mut() {
            Some(order) => Ok(Some(order)),
            None => {
                self.unpaged = true;
                Ok(None)
            }
        }
    }

    /// Every order that counts, by id.
    pub fn iter(&self) -> impl Iterator<Item = OrderRef<'_>> {
        self.refs().filter(|order| order.brief().counts)
    }

    /// The order `id`, if it counts.
    pub fn get(&self, id: &EntryId) -> Option<OrderRef<'_>> {
        self.ref_of(id).filter(|order| order.brief().counts)
    }

    /// Orders that count, by their last change, oldest first, changed after stamp `after`.
    pub fn changed_after(&self, after: u64) -> impl Iterator<Item = OrderRef<'_>> {
        self.by_change
            .range(after.saturating_add(1)..)
            .filter_map(|(_, id)| self.get(id))
    }

    /// Orders that count and are submitted or have changes requested, by id.
    pub fn awaiting_action(&self) -> impl Iterator<Item = OrderRef<'_>> {
        self.index.awaiting.iter().filter_map(|id| self.get(id))
    }

    /// Orders that count, are not done, and that `agent` holds or that are offered to it.
    pub fn of_agent<'a>(&'a self, agent: &'a AgentName) -> impl Iterator<Item = OrderRef<'a>> + 'a {
        self.index
            .by_agent
            .get(agent)
            .into_iter()
            .flatten()
            .filter_map(|id| self.get(id))
    }

    /// How many orders that count stand in each state (states without one left out), from
    /// the board's index: no walk of the board.
    pub fn count_by_state(&self) -> &BTreeMap<OrderState, usize> {
        &self.index.by_state
    }

    /// How many orders count.
    pub fn len(&self) -> usize {
        self.iter().count()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// How many orders are in memory whole (the rest are briefs, read from their records when
    /// asked for).
    pub fn resident(&self) -> usize {
        self.resident.len()
    }

    /// Problems with order entries that could not be folded at all (bad bodies).
    pub fn problems(&self) -> Vec<FoldProblem> {
        self.problems.clone()
    }

    fn report(&mut self, acted: &Acted<'_>, detail: String) {
        self.report_as(acted, FoldProblemKind::MalformedBody, detail);
    }

    fn report_as(&mut self, acted: &Acted<'_>, kind: FoldProblemKind, detail: String) {
        if self.problems.len() < MAX_PROBLEMS {
            self.problems
                .push(FoldProblem::about(acted.entry, kind, detail));
        }
    }

    /// Folds one entry (any kind; other kinds are ignored).
    pub fn feed(&mut self, acted: &Acted<'_>, identity: &Identity, changes: &mut Changes) {
        match acted.kind() {
            kinds::ISSUE => self.feed_issue(acted, identity, changes),
            kinds::CLAIM
            | kinds::RELEASE
            | kinds::SUBMIT
            | kinds::REVIEW
            | kinds::CANCEL
            | kinds::PROGRESS => self.feed_event(acted, identity, changes),
            kinds::HANDIN => self.feed_handin(acted, identity, changes),
            _ => {}
        }
    }

    fn feed_issue(&mut self, acted: &Acted<'_>, identity: &Identity, changes: &mut Changes) {
        let body = match IssueBody::deserialize(acted.body()) {
            Ok(body) => body,
            Err(err) => return self.report(acted, format!("bad order.issue: {err}")),
        };
        if body.title.trim().is_empty() || body.title.chars().count() > MAX_TITLE {
            return self.report(
                acted,
                format!("order title empty or over {MAX_TITLE} characters"),
            );
        }
        if let Some(Err(bad)) = body.scope.as_deref().map(check_scope) {
            return self.report(acted, format!("bad order scope: {bad}"));
        }
        let order_body = match (body.body, body.blob) {
            (Some(text), None) => Body::Inline(text),
            (None, Some(blob)) => Body::Blob(blob),
            (None, None) => Body::None,
            (Some(_), Some(_)) => {
                return self.report(acted, "order has both a body and a blob".into());
            }
        };
        let issue = Issue {
            by: acted.author.clone(),
            key: *acted.key,
            by_master: acted.by_master,
            pos: acted.pos,
            time: acted.time,
            hash: *acted.entry.hash(),
            title: body.title,
            body: order_body,
            to: body.to,
            review: body.review,
            heavy: body.heavy,
            hints: body.hints,
            scope: body.scope,
        };
        let id = acted.id.clone();
        let mut order = Order {
            view: initial_view(&issue, false),
            id: id.clone(),
            issue,
            events: Vec::new(),
            progress: Vec::new(),
            handins: Vec::new(),
            changed: changes.stamp(),
            walk: Walk::default(),
        };
        for waiting in self.waiting.remove(&id).unwrap_or_default() {
            match waiting {
                Waiting::Event(event) => order.events.push(event),
                Waiting::Progress(line) => push_kept(&mut order.progress, line, KEPT_PROGRESS),
                Waiting::HandIn(handin) => push_kept(&mut order.handins, handin, KEPT_HANDINS),
            }
        }
        order.view = walk(&mut order, identity);
        self.by_change.insert(order.changed, id.clone());
        let slot = Slot::resident(order);
        // The replaced one's index keys first: the index counts orders by state.
        self.dirty.insert(id.clone());
        if let Some(replaced) = self.orders.remove(&id) {
            self.index.remove(&id, &replaced.brief);
            self.by_change.remove(&replaced.brief.changed);
        }
        self.index.add(&id, &slot.brief);
        self.resident.insert(id.clone());
        self.orders.insert(id.clone(), slot);
    }

    fn wait(&mut self, order: EntryId, waiting: Waiting) {
        let total: usize = self.waiting.values().map(Vec::len).sum();
        if total < MAX_WAITING {
            self.waiting.entry(order).or_default().push(waiting);
        }
    }

    fn feed_event(&mut self, acted: &Acted<'_>, identity: &Identity, changes: &mut Changes) {
        let body = match EventBody::deserialize(acted.body()) {
            Ok(body) => body,
            Err(err) => return self.report(acted, format!("bad {}: {err}", acted.kind())),
        };
        let Ok(order_id) = body.order.parse::<EntryId>() else {
            return self.report(acted, format!("{} names no order id", acted.kind()));
        };
        let made = Made::from(acted);
        if acted.kind() == kinds::PROGRESS {
            let Some(text) = body.text else {
                return self.report(acted, "order.progress without text".into());
            };
            let line = ProgressLine {
                made,
                after: body.after,
                text,
            };
            return match self.whole_mut(&order_id) {
                Ok(Some(order)) => {
                    push_kept(&mut order.progress, line, KEPT_PROGRESS);
                    self.update(&order_id, identity, changes, Folded::Line);
                }
                Ok(None) => {}
                Err(NotIssued) => self.wait(order_id, Waiting::Progress(line)),
            };
        }
        let kind = match acted.kind() {
            kinds::CLAIM => EventKind::Claim,
            kinds::RELEASE => EventKind::Release { note: body.text },
            kinds::CANCEL => EventKind::Cancel { note: body.text },
            kinds::SUBMIT => EventKind::Submit {
                handin: body.handin,
                git_ref: body.git_ref,
                summary: body.summary.unwrap_or_default(),
            },
            _ => match body.verdict {
                Some(verdict) => EventKind::Review {
                    verdict,
                    notes: body.notes,
                },
                None => return self.report(acted, "order.review without a verdict".into()),
            },
        };
        let event = Event {
            kind,
            made,
            hash: *acted.entry.hash(),
            after: body.after,
        };
        match self.whole_mut(&order_id) {
            Ok(Some(order)) if repeats_a_standing_claim(order, &event, identity) => {
                let detail = format!(
                    "{} repeats its claim on the same event: it never counts",
                    acted.author
                );
                self.report_as(acted, FoldProblemKind::Refused, detail);
            }
            Ok(Some(order)) => {
                order.events.push(event);
                self.update(&order_id, identity, changes, Folded::Event);
            }
            Ok(None) => {}
            Err(NotIssued) => self.wait(order_id, Waiting::Event(event)),
        }
    }

    fn feed_handin(&mut self, acted: &Acted<'_>, identity: &Identity, changes: &mut Changes) {
        let body = match HandInBody::deserialize(acted.body()) {
            Ok(body) => body,
            Err(err) => return self.report(acted, format!("bad work.handin: {err}")),
        };
        let Ok(order_id) = body.order.parse::<EntryId>() else {
            return self.report(acted, "work.handin names no order id".into());
        };
        let handin = HandIn {
            id: acted.id.clone(),
            by: acted.author.clone(),
            key: *acted.key,
            pos: acted.pos,
            git_ref: body.git_ref,
            summary: body.summary,
            time: acted.time,
        };
        match self.whole_mut(&order_id) {
            Ok(Some(order)) => {
                // A submission that names it may count now (it synced after the submission):
                // its chain is judged again.
                let id = handin.id.to_string();
                let named = order.events.iter().any(|event| {
                    matches!(&event.kind, EventKind::Submit { handin: Some(named), .. } if *named == id)
                });
                push_kept(&mut order.handins, handin, KEPT_HANDINS);
                let folded = if named { Folded::Seats } else { Folded::Line };
                self.update(&order_id, identity, changes, folded);
            }
            Ok(None) => {}
            Err(NotIssued) => self.wait(order_id, Waiting::HandIn(handin)),
        }
    }

    /// Judges every order again (a seat changed); orders whose view changes are stamped.
    pub fn rejudge(&mut self, identity: &Identity, changes: &mut Changes) {
        let ids: Vec<EntryId> = self.orders.keys().cloned().collect();
        for id in &ids {
            self.rejudge_one(id, identity, changes);
        }
    }

    /// Judges again the orders `name` issued or wrote anything for (its seat or levels
    /// changed): the view of any other order does not depend on it. A scan of the briefs, so
    /// a fleet seating its agents after the orders were folded reads no record.
    pub fn rejudge_name(&mut self, name: &AgentName, identity: &Identity, changes: &mut Changes) {
        let ids: Vec<EntryId> = self
            .orders
            .iter()
            .filter(|(_, slot)| slot.brief.involves.binary_search(name).is_ok())
            .map(|(id, _)| id.clone())
            .collect();
        for id in &ids {
            self.rejudge_one(id, identity, changes);
        }
    }

    /// Judges `id` again (the session paged it in first; one paged in only for this whose
    /// view stands, the session drops again).
    fn rejudge_one(&mut self, id: &EntryId, identity: &Identity, changes: &mut Changes) {
        let Some(slot) = self.orders.get(id) else {
            return;
        };
        let Some(order) = slot.whole.as_deref() else {
            self.unpaged = true;
            return;
        };
        if resolve(order, identity).0 == order.view {
            return;
        }
        self.update(id, identity, changes, Folded::Seats);
    }

    /// Resolves `id` again after `folded` changed it; stamps it if its view changed. Its brief
    /// and the indexes follow.
    fn update(&mut self, id: &EntryId, identity: &Identity, changes: &mut Changes, folded: Folded) {
        let Ok(Some(order)) = self.whole_mut(id) else {
            return;
        };
        let view = refold(order, identity, folded);
        let changed = view != order.view;
        if changed {
            order.view = view;
            order.changed = changes.stamp();
        }
        let brief = Brief::of(order);
        let slot = self.orders.get_mut(id).expect("made resident above");
        let old = std::mem::replace(&mut slot.brief, brief);
        self.index.remove(id, &old);
        self.index.add(id, &slot.brief);
        self.dirty.insert(id.clone());
        if changed {
            self.by_change.remove(&old.changed);
            self.by_change.insert(slot.brief.changed, id.clone());
        }
    }
}

/// An order not issued (here, yet): what names it waits for its issue.
struct NotIssued;

/// What changed an order: what its next view must be resolved from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Folded {
    /// A chain event was pushed last.
    Event,
    /// A progress line or a hand-in: the chain is as it was.
    Line,
    /// A seat or a level changed: everything is judged again.
    Seats,
}

/// What the last walk of an order's chain found, so that a chain event folded after it is
/// judged alone when it can change nothing but itself or extends the chain at its tip (issue
/// 17, finding 8: a Member's thousands of claims that lose cost what they are, not a walk of
/// every earlier one each). Derived, so it is not kept and any two are equal.
#[derive(Debug, Clone, Default)]
struct Walk(Option<Box<Steps>>);

impl PartialEq for Walk {
    fn eq(&self, _: &Self) -> bool {
        true
    }
}

impl Eq for Walk {}

#[derive(Debug, Clone)]
struct Steps {
    /// The chain node of each hash on the chain (the issue, then each winner).
    at: HashMap<EntryHash, usize>,
    steps: Vec<Step>,
    /// What events that follow no chain node name: one of them may extend the chain later, or
    /// lie on a path the master decided.
    pending: HashSet<EntryHash>,
    /// The view at the chain's end, its voids included, before the lines are counted.
    end: OrderView,
    /// The holder right after each chain event (and the issue), for progress lines.
    holder_after: HashMap<EntryHash, Option<AgentName>>,
}

#[derive(Debug, Clone)]
struct Step {
    /// The order as it stands at this node (without voids): what its children are judged on.
    view: OrderView,
    /// Where the node stands: what its children are judged and dated at (ADR 0016, rule 2).
    floor: (MasterPos, Timestamp),
    won: Option<Won>,
}

/// The child that won at a node, with what a later rival is compared with.
#[derive(Debug, Clone)]
struct Won {
    /// Off a path the master decided, and its rank.
    standing: (bool, u8),
    late: bool,
    /// The earliest race date among the rivals of its standing.
    earliest: Timestamp,
    tiebreak: [u8; 32],
    author: AgentName,
    seq: u64,
}

impl Won {
    /// Whether it still beats a valid rival `event` off every decided path, dated `date`, at a
    /// node `contested` (`None`: the rival may change the race, which a walk decides).
    fn beats(&self, event: &Event, date: Timestamp, contested: &EntryHash) -> Option<bool> {
        let standing = (true, event.kind.rank());
        if standing != self.standing {
            return (standing > self.standing).then_some(true);
        }
        if date < self.earliest {
            return None;
        }
        let late = date.as_millis()
            > self
                .earliest
                .as_millis()
                .saturating_add(race::RACE_WINDOW_MS);
        let made = &event.made;
        let rival = (
            late,
            tiebreak(contested.as_bytes(), &made.key),
            &made.author,
            made.seq,
        );
        ((self.late, self.tiebreak, &self.author, self.seq) < rival).then_some(true)
    }
}

/// The order's view after `folded` changed it: by the last walk when that can tell, else by
/// walking its chain again.
fn refold(order: &mut Order, identity: &Identity, folded: Folded) -> OrderView {
    if order.walk.0.is_some() {
        let end = match folded {
            Folded::Line => order.walk.0.as_ref().map(|walk| walk.end.clone()),
            Folded::Event => fold_alone(order, identity),
            Folded::Seats => None,
        };
        if let (Some(end), Some(walk)) = (end, order.walk.0.as_deref()) {
            return count_lines(end, order, &walk.holder_after, identity);
        }
    }
    walk(order, identity)
}

/// Walks the order's chain and keeps what the walk found.
fn walk(order: &mut Order, identity: &Identity) -> OrderView {
    let (view, steps) = resolve(order, identity);
    order.walk = Walk(steps.map(Box::new));
    view
}

/// The view at the chain's end after the event pushed last, judged alone, when the last walk
/// shows it changes nothing but itself or extends the chain at its tip (`None`: walk again).
fn fold_alone(order: &mut Order, identity: &Identity) -> Option<OrderView> {
    let event = order.events.last()?;
    let walk = order.walk.0.as_deref_mut()?;
    // The master's decisions pin paths, and an event others follow may lie on one.
    if event.made.by_master || walk.pending.contains(&event.hash) {
        return None;
    }
    let mut end = walk.end.clone();
    let reason = match walk.at.get(&event.after) {
        None => {
            walk.pending.insert(event.after);
            VoidReason::FollowsVoid
        }
        Some(&at) => {
            let step = &walk.steps[at];
            match judge(
                event,
                (&order.issue, &order.handins),
                &step.view,
                identity,
                step.floor,
            ) {
                Err(reason) => reason,
                Ok(()) => {
                    let date = race::race_date(event.made.time, step.floor.1);
                    match &step.won {
                        Some(won) => match won.beats(event, date, &step.view.tip) {
                            Some(true) => VoidReason::LostRace {
                                winner: won.author.clone(),
                                event: event.kind.name(),
                            },
                            _ => return None,
                        },
                        None => {
                            let made = &event.made;
                            let floor = (step.floor.0.max(made.pos), date);
                            let won = Won {
                                standing: (true, event.kind.rank()),
                                late: false,
                                earliest: date,
                                tiebreak: tiebreak(step.view.tip.as_bytes(), &made.key),
                                author: made.author.clone(),
                                seq: made.seq,
                            };
                            walk.steps[at].won = Some(won);
                            let mut view = walk.steps[at].view.clone();
                            apply(event, &order.issue, &mut view);
                            apply(event, &order.issue, &mut end);
                            walk.holder_after.insert(event.hash, view.holder.clone());
                            walk.at.insert(event.hash, walk.steps.len());
                            walk.steps.push(Step {
                                view,
                                floor,
                                won: None,
                            });
                            walk.end = end.clone();
                            return Some(end);
                        }
                    }
                }
            }
        }
    };
    void(&mut end, event, reason);
    walk.end = end.clone();
    Some(end)
}

/// Whether `event` is a claim its own log already made following the same chain event, by a
/// claim that stands as a rival there now (ADR 0016, rule 5). Such a repeat never counts: it
/// ranks after the earlier one in every race (the same key, so the same tie-break; a later
/// seq, dated no earlier), and whatever voids the earlier one later (a grant that binds by seq,
/// an expiry, a seat) voids it too, since a later grant never raises a level. So it is not
/// kept. Judged only where the event it follows is on the chain as last walked.
fn repeats_a_standing_claim(order: &Order, event: &Event, identity: &Identity) -> bool {
    if !matches!(event.kind, EventKind::Claim) || event.made.by_master {
        return false;
    }
    let Some(walk) = order.walk.0.as_deref() else {
        return false;
    };
    let Some(&at) = walk.at.get(&event.after) else {
        return false;
    };
    let step = &walk.steps[at];
    order.events.iter().any(|earlier| {
        matches!(earlier.kind, EventKind::Claim)
            && earlier.after == event.after
            && earlier.made.key == event.made.key
            && earlier.made.author == event.made.author
            && !earlier.made.by_master
            && earlier.made.seq < event.made.seq
            && judge(
                earlier,
                (&order.issue, &order.handins),
                &step.view,
                identity,
                step.floor,
            )
            .is_ok()
    })
}

fn push_kept<T>(list: &mut Vec<T>, item: T, keep: usize) {
    if list.len() >= keep {
        list.remove(0);
    }
    list.push(item);
}

/// Orders by what the digests ask of them; derived from each order's view alone.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
struct Index {
    /// Submitted (waiting on a review) or with changes requested (on a new revision).
    awaiting: BTreeSet<EntryId>,
    /// Not done, by the agent that holds it or that it is offered to.
    by_agent: BTreeMap<AgentName, BTreeSet<EntryId>>,
    /// How many orders that count stand in each state (none at zero), so an overview counts
    /// the board without listing it.
    by_state: BTreeMap<OrderState, usize>,
}

impl Index {
    fn keys(brief: &Brief) -> (bool, [Option<&AgentName>; 2]) {
        if !brief.counts {
            return (false, [None, None]);
        }
        let awaits = matches!(
            brief.state,
            OrderState::Submitted | OrderState::ChangesRequested
        );
        if brief.state.is_done() {
            return (awaits, [None, None]);
        }
        let offered = (brief.state == OrderState::Offered)
            .then_some(brief.to.as_ref())
            .flatten();
        (awaits, [brief.holder.as_ref(), offered])
    }

    fn add(&mut self, id: &EntryId, brief: &Brief) {
        if brief.counts {
            *self.by_state.entry(brief.state).or_default() += 1;
        }
        let (awaits, agents) = Self::keys(brief);
        if awaits {
            self.awaiting.insert(id.clone());
        }
        for agent in agents.into_iter().flatten() {
            self.by_agent
                .entry(agent.clone())
                .or_default()
                .insert(id.clone());
        }
    }

    fn remove(&mut self, id: &EntryId, brief: &Brief) {
        if brief.counts
            && let Some(count) = self.by_state.get_mut(&brief.state)
        {
            *count -= 1;
            if *count == 0 {
                self.by_state.remove(&brief.state);
            }
        }
        let (awaits, agents) = Self::keys(brief);
        if awaits {
            self.awaiting.remove(id);
        }
        for agent in agents.into_iter().flatten() {
            if let Some(ids) = self.by_agent.get_mut(agent) {
                ids.remove(id);
                if ids.is_empty() {
                    self.by_agent.remove(agent);
                }
            }
        }
    }
}

fn initial_view(issue: &Issue, counts: bool) -> OrderView {
    OrderView {
        counts,
        state: if issue.to.is_some() {
            OrderState::Offered
        } else {
            OrderState::Open
        },
        holder: None,
        held_since: None,
        revision: 0,
        submission: None,
        review: None,
        progress: None,
        progress_lines: 0,
        tip: issue.hash,
        updated: issue.time,
        voided: Vec::new(),
        handins: Vec::new(),
    }
}

/// Whether the issue counts: the master's, or an Orchestrator's whose grant was in force for
/// the order's scope.
fn issue_counts(id: &EntryId, issue: &Issue, identity: &Identity) -> bool {
    if issue.by_master {
        return true;
    }
    identity.seat(&issue.by) == Seat::Seated(&issue.key)
        && identity.level_in(
            &issue.by,
            &issue.key,
            id.seq(),
            issue.pos,
            issue.time,
            issue.scope.as_deref(),
        ) >= Level::Orchestrator
}

/// Whether `event` may happen to an order standing at `view` (ADR 0006, rule 1): its author
/// holds its name, and the order's rules allow it at the level in force for it.
fn judge(
    event: &Event,
    (issue, handins): (&Issue, &[HandIn]),
    view: &OrderView,
    identity: &Identity,
    floor: (MasterPos, Timestamp),
) -> Result<(), VoidReason> {
    let made = &event.made;
    if !made.seated(identity) {
        return Err(VoidReason::Unseated {
            author: made.author.clone(),
        });
    }
    let level =
        (!made.by_master).then(|| made.level_after(identity, floor, issue.scope.as_deref()));
    rules(
        &event.kind,
        &made.author,
        made.by_master,
        level,
        issue,
        view,
    )?;
    handin_rule(
        &event.kind,
        &made.author,
        handins,
        identity,
        issue.scope.as_deref(),
    )
}

/// Whether a hand-in counts for its order: its author holds its name with its key, and its
/// texts are within their lengths.
fn handin_counts(handin: &HandIn, identity: &Identity) -> bool {
    identity.seat(&handin.by) == Seat::Seated(&handin.key)
        && handin.git_ref.chars().count() <= MAX_REF
        && handin.summary.chars().count() <= MAX_SUMMARY
}

/// The hand-in rule of a submission by `author` (ADR 0030): the hand-in it names is one of
/// the order's that counts, handed in by `author` itself or by an agent that was a Worker
/// there (its level judged at the hand-in's position, on the order's `scope`). Any other
/// event, and a submission naming only a git ref, passes.
fn handin_rule(
    kind: &EventKind,
    author: &AgentName,
    handins: &[HandIn],
    identity: &Identity,
    scope: Option<&str>,
) -> Result<(), VoidReason> {
    let EventKind::Submit {
        handin: Some(named),
        ..
    } = kind
    else {
        return Ok(());
    };
    let found = named.parse::<EntryId>().ok().and_then(|id| {
        handins
            .iter()
            .find(|handin| handin.id == id && handin_counts(handin, identity))
    });
    let Some(found) = found else {
        return Err(VoidReason::UnknownHandIn {
            handin: named.clone(),
        });
    };
    if found.by == *author {
        return Ok(());
    }
    let level = identity.level_in(
        &found.by,
        &found.key,
        found.id.seq(),
        found.pos,
        found.time,
        scope,
    );
    if level == Level::Worker {
        Ok(())
    } else {
        Err(VoidReason::HandInOfAnother {
            handin: named.clone(),
            by: found.by.clone(),
            level,
        })
    }
}

/// The order's rules for an event `kind` by `author` (the master's when `by_master`), at
/// `level` when it is judged (`None`: the master's, or a candidate whose standing the
/// session's authorize judges).
fn rules(
    kind: &EventKind,
    author: &AgentName,
    by_master: bool,
    level: Option<Level>,
    issue: &Issue,
    view: &OrderView,
) -> Result<(), VoidReason> {
    let at_least = |needed: Level| match level {
        None => Ok(()),
        Some(level) if level >= needed => Ok(()),
        Some(level) => Err(VoidReason::LevelTooLow {
            event: kind.name(),
            needed,
            author: author.clone(),
            level,
        }),
    };
    let was = || VoidReason::WrongState { state: view.state };
    let is_holder = view.holder.as_ref() == Some(author) && !by_master;
    match kind {
        EventKind::Claim => {
            if by_master {
                return Err(VoidReason::MasterClaims);
            }
            if !view.state.is_claimable() {
                return Err(was());
            }
            if let Some(to) = &issue.to
                && to != author
            {
                return Err(VoidReason::OfferedToAnother { to: to.clone() });
            }
            at_least(Level::Member)
        }
        EventKind::Release { note } => {
            check_len(note.as_deref(), MAX_NOTES, TextField::Note)?;
            if !view.state.is_held() {
                return Err(was());
            }
            if is_holder {
                Ok(())
            } else {
                // Handing back another agent's order: the master or an Orchestrator.
                at_least(Level::Orchestrator)
            }
        }
        EventKind::Submit {
            handin,
            git_ref,
            summary,
        } => {
            if !view.state.is_held() {
                return Err(was());
            }
            if !is_holder {
                return Err(VoidReason::NotHolder {
                    author: author.clone(),
                });
            }
            if handin.is_none() && git_ref.is_none() {
                return Err(VoidReason::NoWork);
            }
            check_len(git_ref.as_deref(), MAX_REF, TextField::Ref)?;
            check_len(Some(summary), MAX_SUMMARY, TextField::Summary)?;
            at_least(Level::Member)
        }
        EventKind::Review { verdict, notes } => {
            if view.state != OrderState::Submitted {
                return Err(was());
            }
            if view
                .submission
                .as_ref()
                .is_some_and(|submission| submission.by == *author)
            {
                return Err(VoidReason::OwnSubmission);
            }
            if *verdict == Verdict::Changes && notes.as_deref().is_none_or(|n| n.trim().is_empty())
            {
                return Err(VoidReason::ChangesWithoutNotes);
            }
            check_len(notes.as_deref(), MAX_NOTES, TextField::Notes)?;
            at_least(Level::Orchestrator)
        }
        EventKind::Cancel { note } => {
            check_len(note.as_deref(), MAX_NOTES, TextField::Note)?;
            if !by_master {
                return Err(VoidReason::MasterOnly);
            }
            if view.state.is_done() {
                return Err(was());
            }
            Ok(())
        }
    }
}

fn check_len(text: Option<&str>, max: usize, field: TextField) -> Result<(), VoidReason> {
    match text {
        Some(text) if text.chars().count() > max => Err(VoidReason::TooLong { field, max }),
        _ => Ok(()),
    }
}

/// Whether a progress line by `made` counts, when `holder` held the order (of `scope`) right
/// after the event it names: the line's rules, by its author seated at Member or above there.
fn judge_line(
    made: &Made,
    holder: Option<&AgentName>,
    text: &str,
    identity: &Identity,
    scope: Option<&str>,
) -> Result<(), VoidReason> {
    line_rules(&made.author, holder, text)?;
    if !made.seated(identity) {
        return Err(VoidReason::Unseated {
            author: made.author.clone(),
        });
    }
    let level = made.level(identity, scope);
    if level < Level::Member {
        return Err(VoidReason::LevelTooLow {
            event: EventName::Progress,
            needed: Level::Member,
            author: made.author.clone(),
            level,
        });
    }
    Ok(())
}

/// A progress line's rules: its author held the order, and it is not too long.
fn line_rules(
    author: &AgentName,
    holder: Option<&AgentName>,
    text: &str,
) -> Result<(), VoidReason> {
    if holder != Some(author) {
        return Err(VoidReason::NotHolder {
            author: author.clone(),
        });
    }
    if text.len() > MAX_PROGRESS_BYTES {
        return Err(VoidReason::TooLong {
            field: TextField::Note,
            max: MAX_PROGRESS_BYTES,
        });
    }
    Ok(())
}

fn apply(event: &Event, issue: &Issue, view: &mut OrderView) {
    let made = &event.made;
    match &event.kind {
        EventKind::Claim => {
            view.state = OrderState::Claimed;
            view.holder = Some(made.author.clone());
            view.held_since = Some(made.time);
        }
        EventKind::Release { .. } => {
            view.state = OrderState::Open;
            view.holder = None;
            view.held_since = None;
        }
        EventKind::Submit {
            handin,
            git_ref,
            summary,
        } => {
            view.revision += 1;
            view.submission = Some(Submission {
                id: made.id(),
                by: made.author.clone(),
                handin: handin.clone(),
                git_ref: git_ref.clone(),
                summary: summary.clone(),
                time: made.time,
            });
            view.state = if issue.review {
                OrderState::Submitted
            } else {
                OrderState::Accepted
            };
        }
        EventKind::Review { verdict, notes } => {
            view.review = Some(ReviewRecord {
                by: made.author.clone(),
                verdict: *verdict,
                notes: notes.clone(),
                time: made.time,
            });
            view.state = match verdict {
                Verdict::Accept => OrderState::Accepted,
                Verdict::Changes => OrderState::ChangesRequested,
            };
        }
        EventKind::Cancel { .. } => {
            view.state = OrderState::Cancelled;
            view.holder = None;
            view.held_since = None;
        }
    }
    view.tip = event.hash;
    view.updated = view.updated.max(made.time);
}

fn void(view: &mut OrderView, event: &Event, reason: VoidReason) {
    if view.voided.len() >= KEPT_VOID {
        view.voided.remove(0);
    }
    view.voided.push(Voided {
        id: event.made.id(),
        by: event.made.author.clone(),
        what: event.kind.name(),
        reason,
    });
}

/// The events on a path a master's decision ruled on (ADR 0016, rule 3): each review or cancel
/// the master signed, and every event it follows back to the issue.
fn decided_paths(order: &Order) -> HashSet<EntryHash> {
    let by_hash: HashMap<EntryHash, &Event> = order
        .events
        .iter()
        .map(|event| (event.hash, event))
        .collect();
    let mut pinned = HashSet::new();
    for event in order.events.iter().filter(|event| event.made.by_master) {
        let mut at = Some(event);
        while let Some(step) = at {
            if !pinned.insert(step.hash) {
                break;
            }
            at = by_hash.get(&step.after).copied();
        }
    }
    pinned
}

/// The winner among the valid children of a tip dated `parent` (ADR 0016): on a path the
/// master decided first, then by rank; among those, one dated within the race window of the
/// earliest; then the tie-break of ADR 0006, the author and the seq.
fn race_winner(
    order: &Order,
    valid: &[usize],
    pinned: &HashSet<EntryHash>,
    contested: &EntryHash,
    parent: Timestamp,
) -> Option<(usize, Won)> {
    let standing = |index: usize| {
        let event = &order.events[index];
        (!pinned.contains(&event.hash), event.kind.rank())
    };
    let best = valid.iter().map(|&index| standing(index)).min()?;
    let rivals: Vec<usize> = valid
        .iter()
        .copied()
        .filter(|&index| standing(index) == best)
        .collect();
    let dates: Vec<Timestamp> = rivals
        .iter()
        .map(|&index| race::race_date(order.events[index].made.time, parent))
        .collect();
    let earliest = dates.iter().min().copied()?;
    let late = race::late(&dates);
    rivals
        .iter()
        .zip(late)
        .map(|(&index, late)| {
            let made = &order.events[index].made;
            let key = (
                late,
                tiebreak(contested.as_bytes(), &made.key),
                made.author.clone(),
                made.seq,
            );
            (key, index)
        })
        .min()
        .map(|((late, tiebreak, author, seq), index)| {
            let won = Won {
                standing: best,
                late,
                earliest,
                tiebreak,
                author,
                seq,
            };
            (index, won)
        })
}

/// Resolves an order's chain (ADR 0006, ADR 0016) into its view, with what the walk found
/// (`None` when the issue does not count: nothing is judged).
fn resolve(order: &Order, identity: &Identity) -> (OrderView, Option<Steps>) {
    let issue = &order.issue;
    let mut view = initial_view(issue, issue_counts(&order.id, issue, identity));
    if !view.counts {
        return (view, None);
    }
    let mut children: HashMap<EntryHash, Vec<usize>> = HashMap::new();
    for (index, event) in order.events.iter().enumerate() {
        children.entry(event.after).or_default().push(index);
    }
    let pinned = decided_paths(order);
    let mut decided = vec![false; order.events.len()];
    // Every void with its event's index: the view keeps the latest folded.
    let mut voids: Vec<(usize, VoidReason)> = Vec::new();
    let mut steps = Steps {
        at: HashMap::new(),
        steps: Vec::new(),
        pending: HashSet::new(),
        end: view.clone(),
        holder_after: HashMap::from([(issue.hash, None)]),
    };
    // Where the tip stands: what its children are judged and dated at (ADR 0016, rule 2).
    let mut floor = (issue.pos, issue.time);
    loop {
        let tip = view.tip;
        steps.at.insert(tip, steps.steps.len());
        steps.steps.push(Step {
            view: view.clone(),
            floor,
            won: None,
        });
        let Some(kids) = children.get(&tip) else {
            break;
        };
        let mut valid: Vec<usize> = Vec::new();
        for &index in kids {
            let event = &order.events[index];
            match judge(
                event,
                (&order.issue, &order.handins),
                &view,
                identity,
                floor,
            ) {
                Ok(()) => valid.push(index),
                Err(reason) => {
                    decided[index] = true;
                    voids.push((index, reason));
                }
            }
        }
        let Some((winner, won)) = race_winner(order, &valid, &pinned, &tip, floor.1) else {
            break;
        };
        if let Some(step) = steps.steps.last_mut() {
            step.won = Some(won);
        }
        for &loser in valid.iter().filter(|&&index| index != winner) {
            decided[loser] = true;
            let winner = order.events[winner].made.author.clone();
            let event = &order.events[loser];
            let reason = VoidReason::LostRace {
                winner,
                event: event.kind.name(),
            };
            voids.push((loser, reason));
        }
        decided[winner] = true;
        let event = &order.events[winner];
        apply(event, issue, &mut view);
        steps.holder_after.insert(event.hash, view.holder.clone());
        floor = (
            floor.0.max(event.made.pos),
            race::race_date(event.made.time, floor.1),
        );
    }
    for (index, event) in order.events.iter().enumerate() {
        if !decided[index] {
            steps.pending.insert(event.after);
            voids.push((index, VoidReason::FollowsVoid));
        }
    }
    voids.sort_by_key(|(index, _)| *index);
    let keep = voids.len().saturating_sub(KEPT_VOID);
    for (index, reason) in voids.drain(keep..) {
        void(&mut view, &order.events[index], reason);
    }
    steps.end = view.clone();
    let view = count_lines(view, order, &steps.holder_after, identity);
    (view, Some(steps))
}

/// The view at the chain's end with its progress lines and hand-ins counted: lines by the
/// holder right after the event they name, at Member or above.
fn count_lines(
    mut view: OrderView,
    order: &Order,
    holder_after: &HashMap<EntryHash, Option<AgentName>>,
    identity: &Identity,
) -> OrderView {
    let mut counted = 0u32;
    for line in &order.progress {
        let holder = holder_after.get(&line.after).and_then(Option::as_ref);
        let scope = order.issue.scope.as_deref();
        if judge_line(&line.made, holder, &line.text, identity, scope).is_ok() {
            counted += 1;
            if view.holder.as_ref() == Some(&line.made.author) && view.state == OrderState::Claimed
            {
                view.state = OrderState::InProgress;
            }
            view.progress = Some(LastProgress {
                by: line.made.author.clone(),
                text: line.text.clone(),
                time: line.made.time,
            });
        }
    }
    view.progress_lines = counted;
    view.handins = order
        .handins
        .iter()
        .filter(|handin| handin_counts(handin, identity))
        .map(|handin| handin.id.clone())
        .collect();
    view
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_order_that_is_gone_keeps_its_brief_and_does_not_count() {
        let brief = Brief {
            counts: true,
            state: OrderState::Accepted,
            holder: None,
            to: None,
            title: "a title".into(),
            scope: None,
            submitted_by: None,
            lost_races: Box::new([]),
            involves: vec![AgentName::parse("ada").unwrap()].into(),
            changed: 7,
        };
        let id: EntryId = "m3".parse().unwrap();
        let gone = Order::gone(&id, &brief);
        assert_eq!(gone.id, id);
        assert_eq!(gone.issue.title, "a title");
        assert_eq!(gone.changed(), 7);
        assert!(!gone.view().counts);
        assert!(!Brief::of(&gone).counts);
    }
}

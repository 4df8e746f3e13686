//! Orders: issue, claim, release, progress, hand in, submit, review, cancel, list and show.
//!
//! One function per operation, called by the `ferry order` commands and by the `ferry_orders`
//! tool alike. Each reads what is new, checks its arguments, asks the fold whether the entry it
//! is about to write would count ([`Order::judge`]: so a refusal is a clear error, not a
//! silently void entry, and the rules are the fold's, written once) and appends through the
//! session's one path. The board itself is the fold of `state::orders`; nothing here decides
//! who holds an order.

use serde::Serialize;

use super::{OpsError, check_chars, check_not_empty};
use crate::channel::fold::levels::{Level, Operation, check_scope};
use crate::channel::fold::state::orders::{
    self, Body, CancelBody, ChainEvent, ClaimBody, HandInBody, Hints, IssueBody, MAX_INLINE_BODY,
    MAX_NOTES, MAX_PROGRESS_BYTES, MAX_REF, MAX_SUMMARY, MAX_TITLE, Order, OrderRef, OrderState,
    ProgressBody, ReleaseBody, ReviewBody, SubmitBody, Verdict, VoidReason,
};
use crate::channel::fold::state::since::Since;
use crate::channel::fold::state::{EntryId, Sections};
use crate::channel::log::names::AgentName;
use crate::channel::session::{Actor, Session};
use crate::guard::TextUse;
use crate::time::Timestamp;

/// Why an order operation failed. One variant per cause; [`OrdersError::code`] is stable.
#[derive(Debug, thiserror::Error)]
pub enum OrdersError {
    /// What any operation can fail with (the session, the arguments' shape).
    #[error(transparent)]
    Ops(#[from] OpsError),
    #[error("unknown order {0}")]
    UnknownOrder(String),
    #[error("order {order} is {}; {action} needs it {wanted}", .state.as_str())]
    WrongState {
        order: String,
        state: OrderState,
        action: &'static str,
        wanted: &'static str,
    },
    #[error("order {order} is held by {holder}, not {agent}")]
    NotHolder {
        order: String,
        holder: String,
        agent: AgentName,
    },
    #[error("order {order} is offered to {to}")]
    OfferedToAnother { order: String, to: AgentName },
    #[error("order {order}: this would not count ({reason})")]
    DoesNotCount { order: String, reason: VoidReason },
    #[error("{agent} submitted this revision and cannot review it")]
    OwnSubmission { agent: AgentName },
    #[error("unknown hand-in {handin} for order {order}")]
    UnknownHandIn { handin: String, order: String },
    #[error(
        "hand-in {handin} of order {order} is {by}'s, who was {level} when it handed in: a submission names a hand-in of its own or a worker's"
    )]
    HandInOfAnother {
        handin: String,
        order: String,
        by: AgentName,
        level: Level,
    },
    #[error("the human does not {action}: agents do")]
    AgentsOnly { action: &'static str },
    #[error("only the human (the master key) may {action}")]
    HumanOnly { action: &'static str },
    #[error("the title is one line")]
    TitleNotOneLine,
    #[error("a ref is one word (a branch, tag or sha), never work content")]
    RefNotOneWord,
    #[error(
        "`{git_ref}` is not a git ref: {reason} (a commit id of 7-40 hex digits or a ref name)"
    )]
    NotAGitRef {
        git_ref: String,
        reason: &'static str,
    },

    #[error("a submission names a hand-in or a git ref")]
    NoWork,
    #[error("order {0} names a bad blob")]
    BadBlob(String),
}

impl OrdersError {
    /// A stable machine-readable code (tool results carry it).
    pub fn code(&self) -> &'static str {
        match self {
            Self::Ops(err) => err.code(),
            Self::UnknownOrder(_) => "unknown_order",
            Self::WrongState { .. } => "wrong_state",
            Self::NotHolder { .. } => "not_holder",
            Self::OfferedToAnother { .. } => "offered_to_another",
            Self::DoesNotCount { .. } => "does_not_count",
            Self::OwnSubmission { .. } => "own_submission",
            Self::UnknownHandIn { .. } => "unknown_handin",
            Self::HandInOfAnother { .. } => "handin_of_another",
            Self::NotAGitRef { .. } => "not_a_git_ref",
            Self::AgentsOnly { .. } => "agents_only",
            Self::HumanOnly { .. } => "master_only",
            Self::TitleNotOneLine | Self::RefNotOneWord | Self::NoWork | Self::BadBlob(_) => {
                "invalid"
            }
        }
    }
}

/// What to issue.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct IssueRequest {
    pub title: String,
    pub body: Option<String>,
    /// Offer it to one agent.
    pub to: Option<AgentName>,
    /// A submission needs a review.
    pub review: bool,
    pub heavy: bool,
    pub hints: Hints,
    /// The project scope: only agents granted it (or granted without scopes) work on it.
    pub scope: Option<String>,
}

/// One row of the board: what a list shows.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct OrderRow {
    pub id: String,
    pub title: String,
    pub state: OrderState,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub holder: Option<AgentName>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub scope: Option<String>,
}

/// What [`list`] gives: rows in the order of their last change, oldest first.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OrderList {
    pub rows: Vec<ListedOrder>,
    /// More rows match than `limit`.
    pub more: bool,
    /// The `since` given was from another verified state (another machine, or a rebuilt one):
    /// these are the whole board's rows.
    pub reset: bool,
    generation: u64,
    last_change: u64,
}

/// One row and the stamp of its last change.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ListedOrder {
    pub changed: u64,
    pub row: OrderRow,
}

impl OrderList {
    /// A list of `rows` (oldest change first) from a channel of an embedder's own (`crate::port`):
    /// its cursors continue after the latest change given.
    pub fn new(rows: Vec<ListedOrder>, more: bool) -> Self {
        let last_change = rows.iter().map(|listed| listed.changed).max().unwrap_or(0);
        Self {
            rows,
            more,
            reset: false,
            generation: 0,
            last_change,
        }
    }

    /// The cursor that continues after the first `given` rows: the rows not given yet, then
    /// only what changes later.
    pub fn next(&self, given: usize) -> Since {
        let counter = if given < self.rows.len() || self.more {
            given
                .checked_sub(1)
                .and_then(|last| self.rows.get(last))
                .map_or(0, |listed| listed.changed)
        } else {
            self.last_change
        };
        Since {
            generation: self.generation,
            counter,
        }
    }
}

/// Which orders a list shows.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ListRequest {
    /// Accepted and cancelled orders too (a `since` list always has them: they left).
    pub all: bool,
    /// Only orders that changed after this cursor.
    pub since: Option<String>,
    /// At most this many rows.
    pub limit: usize,
}

/// How a heavy order would start on this machine (`docs/mcp-server.md`, heavy orders).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum RunVia {
    /// Through the machine's queue: `snifrig run --name <order-id> -- <command>`.
    Snifrig,
    Direct,
}

pub use crate::port::HeavyQueue;

/// Everything [`show`] tells about one order.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct OrderDetail {
    pub row: OrderRow,
    pub issued_by: AgentName,
    pub to: Option<AgentName>,
    pub review: bool,
    pub heavy: bool,
    pub hints: Hints,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub scope: Option<String>,
    pub run_via: RunVia,
    /// The command a heavy order runs through the queue with (`<command>` stands for the work).
    pub run_command: Option<String>,
    /// The body: short ones inline, long ones in a blob (its id).
    pub body: Option<String>,
    pub body_blob: Option<String>,
    pub revision: u32,
    pub submission: Option<orders::Submission>,
    pub review_verdict: Option<orders::ReviewRecord>,
    pub progress: Option<orders::LastProgress>,
    pub progress_lines: u32,
    pub handins: Vec<String>,
    /// Events of this order that do not count (lost races, refusals), latest last.
    pub voided: Vec<orders::Voided>,
}

/// What a claim came to (its [`ClaimResult`] names it in an answer).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ClaimOutcome {
    Claimed {
        id: String,
        /// Where the order stands now, as folded.
        state: OrderState,
    },
    /// Another claim made without seeing this one won the tie-break (ADR 0006).
    LostRace { id: String, holder: AgentName },
}

/// The name of what a claim came to, serialized once (snake_case) for every answer that says
/// it: the tool's `outcome`, the CLI's `--json`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ClaimResult {
    Claimed,
    LostRace,
}

impl ClaimOutcome {
    pub fn result(&self) -> ClaimResult {
        match self {
            Self::Claimed { .. } => ClaimResult::Claimed,
            Self::LostRace { .. } => ClaimResult::LostRace,
        }
    }
}

/// A row from the brief alone: listing (and a digest) reads no order's record.
pub(super) fn row(order: OrderRef<'_>) -> OrderRow {
    let brief = order.brief();
    OrderRow {
        id: order.id().to_string(),
        title: brief.title.to_string(),
        state: brief.state,
        holder: brief.holder.clone(),
        scope: brief.scope.as_deref().map(str::to_owned),
    }
}

/// Pages in the order `id` names (and the board), so that [`find`] finds it whole.
fn page(session: &mut Session, id: &str) {
    match id.parse::<EntryId>() {
        Ok(parsed) => session.page_order(&parsed),
        // The id does not parse: `find` says so, after the board is paged in like any find's
        // (a board that did not page is `find`'s error too).
        Err(_) => {
            let _ = session.board();
        }
    }
}

/// The order `id` whole: [`page`] it in first.
fn find<'s>(session: &'s Session, id: &str) -> Result<&'s Order, OrdersError> {
    find_ref(session, id)?
        .whole()
        .ok_or_else(|| OrdersError::UnknownOrder(id.to_owned()))
}

fn find_ref<'s>(session: &'s Session, id: &str) -> Result<OrderRef<'s>, OrdersError> {
    let parsed: EntryId = id.parse()?;
    session
        .state()
        .orders()?
        .get(&parsed)
        .ok_or_else(|| OrdersError::UnknownOrder(id.to_owned()))
}

fn wrong_state(order: &Order, action: &'static str, wanted: &'static str) -> OrdersError {
    OrdersError::WrongState {
        order: order.id.to_string(),
        state: order.view().state,
        action,
        wanted,
    }
}

/// What an operation is, for the words of its refusal: its action and the state it wants.
#[derive(Clone, Copy)]
struct Asked {
    action: &'static str,
    wanted: &'static str,
}

const HELD: &str = "claimed, in progress or with changes requested";

/// Who the acting actor would write an entry as (and whether as the master), for the fold to
/// judge; `None` for an observer, which the session refuses when it appends.
fn proposer(session: &Session) -> Option<(AgentName, bool)> {
    match session.actor() {
        Actor::Agent(name) => Some((name.clone(), false)),
        Actor::Master => Some((AgentName::master(), true)),
        Actor::Observer => None,
    }
}

/// Asks the fold whether `body`, written now by the acting actor, would count on `order`, and
/// turns its reason into the operation's error.
fn judged<B: ChainEvent>(
    session: &Session,
    order: &Order,
    body: &B,
    asked: Asked,
) -> Result<(), OrdersError> {
    let Some((me, by_master)) = proposer(session) else {
        return Ok(());
    };
    order
        .judge(&body.event_kind(), &me, by_master, session.identity())
        .map_err(|reason| refusal(order, &me, reason, asked))
}

/// The error of an operation the fold would not count.
fn refusal(order: &Order, me: &AgentName, reason: VoidReason, asked: Asked) -> OrdersError {
    let id = order.id.to_string();
    match reason {
        VoidReason::WrongState { .. } => wrong_state(order, asked.action, asked.wanted),
        VoidReason::OfferedToAnother { to } => OrdersError::OfferedToAnother { order: id, to },
        VoidReason::NotHolder { .. } => OrdersError::NotHolder {
            order: id,
            holder: order
                .view()
                .holder
                .as_ref()
                .map_or_else(|| "nobody".to_owned(), ToString::to_string),
            agent: me.clone(),
        },
        VoidReason::OwnSubmission => OrdersError::OwnSubmission { agent: me.clone() },
        VoidReason::MasterClaims => OrdersError::AgentsOnly {
            action: "claim orders",
        },
        VoidReason::MasterOnly => OrdersError::HumanOnly {
            action: "cancel an order",
        },
        VoidReason::UnknownHandIn { handin } => OrdersError::UnknownHandIn { handin, order: id },
        VoidReason::HandInOfAnother { handin, by, level } => OrdersError::HandInOfAnother {
            handin,
            order: id,
            by,
            level,
        },
        reason => OrdersError::DoesNotCount { order: id, reason },
    }
}

fn agent_of(session: &Session) -> Result<AgentName, OrdersError> {
    match session.actor() {
        Actor::Agent(name) => Ok(name.clone()),
        Actor::Master => Ok(AgentName::master()),
        Actor::Observer => Err(OpsError::ReadOnly.into()),
    }
}

/// Issues an order: the master, or an Orchestrator with its own key. Returns its id.
pub fn issue(
    session: &mut Session,
    request: &IssueRequest,
    now: Timestamp,
) -> Result<String, OrdersError> {
    check_not_empty("the title", &request.title)?;
    check_chars("the title", &request.title, MAX_TITLE)?;
    if let Some(scope) = &request.scope {
        check_scope(scope).map_err(OpsError::from)?;
    }
    if request.title.contains(['\n', '\r']) {
        return Err(OrdersError::TitleNotOneLine);
    }
    session.guard(&request.title, TextUse::OrderBody)?;
    if let Some(body) = &request.body {
        if body.len() as u64 > crate::channel::log::store::MAX_BLOB_LEN {
            return Err(OpsError::TooLong {
                what: "the body",
                len: body.len(),
                max: crate::channel::log::store::MAX_BLOB_LEN as usize,
                unit: "bytes",
            }
            .into());
        }
        session.guard(body, TextUse::OrderBody)?;
    }
    session.refresh(now);
    session.load(Sections::BOARD, now);
    if let Some(to) = &request.to
        && session.identity().holder(to).is_none()
    {
        return Err(OpsError::NotSeated {
            name: to.clone(),
            project: session.project().clone(),
        }
        .into());
    }
    let mut body = IssueBody {
        title: request.title.clone(),
        body: None,
        blob: None,
        to: request.to.clone(),
        review: request.review,
        heavy: request.heavy,
        hints: request.hints,
        scope: request.scope.clone(),
        seen: None,
    };
    if let Some(text) = request
        .body
        .as_deref()
        .filter(|text| !text.trim().is_empty())
    {
        if text.chars().count() > MAX_INLINE_BODY {
            body.blob = Some(session.channel().put_blob(text.as_bytes())?.to_hex());
        } else {
            body.body = Some(text.to_owned());
        }
    }
    let entry = session.append(Operation::Issue, request.scope.as_deref(), &body, now)?;
    Ok(session.id_of(&entry).to_string())
}

/// Claims an order for the acting agent (Member and up; an offered order only by its named
/// agent). Says whether the claim won.
pub fn claim(session: &mut Session, id: &str, now: Timestamp) -> Result<ClaimOutcome, OrdersError> {
    session.refresh(now);
    page(session, id);
    let order = find(session, id)?;
    let body = ClaimBody {
        order: order.id.to_string(),
        after: order.view().tip,
    };
    let asked = Asked {
        action: "claim",
        wanted: "open or offered",
    };
    judged(session, order, &body, asked)?;
    let scope = order.issue.scope.clone();
    let entry = session.append(Operation::Claim, scope.as_deref(), &body, now)?;
    let mine = session.id_of(&entry);
    let order = find(session, id)?;
    // What the fold made of it: a claim that lost a race is void, and says to whom.
    let void = order.view().voided.iter().find(|void| void.id == mine);
    match (void, &order.view().holder) {
        (Some(void), holder) => match &void.reason {
            VoidReason::LostRace { winner, .. } => Ok(ClaimOutcome::LostRace {
                id: id.to_owned(),
                holder: holder.clone().unwrap_or_else(|| winner.clone()),
            }),
            reason => Err(OrdersError::DoesNotCount {
                order: id.to_owned(),
                reason: reason.clone(),
            }),
        },
        (None, Some(holder)) if holder == entry.author() => Ok(ClaimOutcome::Claimed {
            id: id.to_owned(),
            state: order.view().state,
        }),
        (None, Some(holder)) => Ok(ClaimOutcome::LostRace {
            id: id.to_owned(),
            holder: holder.clone(),
        }),
        (None, None) => Err(OrdersError::DoesNotCount {
            order: id.to_owned(),
            reason: VoidReason::FollowsVoid,
        }),
    }
}

/// A note that says something, or none.
fn given(note: Option<&str>) -> Option<String> {
    note.filter(|note| !note.trim().is_empty())
        .map(str::to_owned)
}

/// Gives an order back to the board: its holder, or the master or an Orchestrator handing back
/// a holder's order (one gone silent, say).
pub fn release(
    session: &mut Session,
    id: &str,
    note: Option<&str>,
    now: Timestamp,
) -> Result<OrderState, OrdersError> {
    session.refresh(now);
    page(session, id);
    let me = agent_of(session)?;
    if let Some(note) = note {
        check_chars("the note", note, MAX_NOTES)?;
        session.guard(note, TextUse::Post)?;
    }
    let order = find(session, id)?;
    // A holder gives its own order back at any level (a demoted one too): the fold accepts
    // it; handing back another's order is an Orchestrator's.
    let operation = if order.view().holder.as_ref() == Some(&me) {
        Operation::HandIn
    } else {
        Operation::HandBack
    };
    let body = ReleaseBody {
        order: order.id.to_string(),
        after: order.view().tip,
        text: given(note),
    };
    let asked = Asked {
        action: "release",
        wanted: HELD,
    };
    judged(session, order, &body, asked)?;
    let scope = order.issue.scope.clone();
    session.append(operation, scope.as_deref(), &body, now)?;
    Ok(find_ref(session, id)?.brief().state)
}

/// Adds a progress line (holder only, at most 2 KB) to an order. Returns the order's state
/// after it.
pub fn progress(
    session: &mut Session,
    id: &str,
    text: &str,
    now: Timestamp,
) -> Result<OrderState, OrdersError> {
    check_not_empty("the progress line", text)?;
    if text.len() > MAX_PROGRESS_BYTES {
        return Err(OpsError::TooLong {
            what: "the progress line",
            len: text.len(),
            max: MAX_PROGRESS_BYTES,
            unit: "bytes",
        }
        .into());
    }
    session.guard(text, TextUse::Progress)?;
    session.refresh(now);
    page(session, id);
    let me = agent_of(session)?;
    let order = find(session, id)?;
    let asked = Asked {
        action: "progress",
        wanted: HELD,
    };
    // The fold counts a holder's line on a submitted order too; a line is written only while
    // the order is being worked.
    if !order.view().state.is_held() {
        return Err(wrong_state(order, asked.action, asked.wanted));
    }
    order
        .judge_progress(&me, text)
        .map_err(|reason| refusal(order, &me, reason, asked))?;
    let body = ProgressBody {
        order: order.id.to_string(),
        after: order.view().tip,
        text: text.to_owned(),
    };
    let scope = order.issue.scope.clone();
    session.append(Operation::Progress, scope.as_deref(), &body, now)?;
    Ok(find_ref(session, id)?.brief().state)
}

/// Hands work in for an order: a git ref and a short summary, recorded in the acting agent's
/// log (any seated agent, a Worker too). The work stays in the work repository. Returns the
/// hand-in's id.
pub fn hand_in(
    session: &mut Session,
    id: &str,
    git_ref: &str,
    summary: &str,
    now: Timestamp,
) -> Result<String, OrdersError> {
    check_git_ref(git_ref)?;
    check_not_empty("the summary", summary)?;
    check_chars("the summary", summary, MAX_SUMMARY)?;
    session.guard(git_ref, TextUse::Progress)?;
    session.guard(summary, TextUse::Summary)?;
    if agent_of(session)?.is_master() {
        return Err(OrdersError::AgentsOnly {
            action: "hand work in",
        });
    }
    session.refresh(now);
    page(session, id);
    let order = find(session, id)?;
    if order.view().state.is_done() {
        return Err(wrong_state(order, "hand in", "not accepted or cancelled"));
    }
    let body = HandInBody {
        order: order.id.to_string(),
        git_ref: git_ref.to_owned(),
        summary: summary.to_owned(),
        seen: None,
    };
    let scope = order.issue.scope.clone();
    let entry = session.append(Operation::HandIn, scope.as_deref(), &body, now)?;
    Ok(EntryId::Agent {
        name: entry.author().clone(),
        seq: entry.seq(),
    }
    .to_string())
}

/// A git ref or sha: one word of printable characters, never work content.
fn check_git_ref(git_ref: &str) -> Result<(), OrdersError> {
    check_not_empty("the ref", git_ref)?;
    check_chars("the ref", git_ref, MAX_REF)?;
    if git_ref.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return Err(OrdersError::RefNotOneWord);
    }
    super::git_ref::judge(git_ref).map_err(|reason| OrdersError::NotAGitRef {
        git_ref: git_ref.to_owned(),
        reason,
    })
}

/// What to submit: a hand-in or a git ref, and a summary of at most 500 characters.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SubmitRequest {
    pub handin: Option<String>,
    pub git_ref: Option<String>,
    pub summary: String,
}

/// Whether `reference` is the id of a hand-in of order `order` (else a submit names a git ref).
pub fn names_handin(session: &mut Session, order: &str, reference: &str) -> bool {
    let (Ok(handin), Ok(order)) = (reference.parse::<EntryId>(), order.parse::<EntryId>()) else {
        return false;
    };
    // Its hand-ins are in the order whole: paged in from the kept state.
    // A board the session could not page answers "no": the submit then pages the order
    // itself and fails with that error.
    matches!(session.order(&order), Ok(Some(order)) if order.handin(&handin).is_some())
}

/// Submits an order (holder only): a new revision for review, or done when the order needs
/// none. Returns the order's state after it.
pub fn submit(
    session: &mut Session,
    id: &str,
    request: &SubmitRequest,
    now: Timestamp,
) -> Result<OrderState, OrdersError> {
    check_not_empty("the summary", &request.summary)?;
    check_chars("the summary", &request.summary, MAX_SUMMARY)?;
    if let Some(git_ref) = &request.git_ref {
        check_git_ref(git_ref)?;
        session.guard(git_ref, TextUse::Progress)?;
    }
    session.guard(&request.summary, TextUse::Summary)?;
    session.refresh(now);
    page(session, id);
    let order = find(session, id)?;
    match (&request.handin, &request.git_ref) {
        (None, None) => {
            return Err(OrdersError::NoWork);
        }
        // Which hand-in it may name is the fold's rule (ADR 0030): `judged` below asks it.
        (Some(handin), _) => {
            let _: EntryId = handin.parse()?;
        }
        _ => {}
    }
    let body = SubmitBody {
        order: order.id.to_string(),
        after: order.view().tip,
        summary: request.summary.clone(),
        handin: request.handin.clone(),
        git_ref: request.git_ref.clone(),
    };
    let asked = Asked {
        action: "submit",
        wanted: HELD,
    };
    judged(session, order, &body, asked)?;
    let scope = order.issue.scope.clone();
    session.append(Operation::Submit, scope.as_deref(), &body, now)?;
    Ok(find_ref(session, id)?.brief().state)
}

/// Reviews an order's submission: accept, or ask for changes (notes required). An
/// Orchestrator who is not the submission's author, or the master.
pub fn review(
    session: &mut Session,
    id: &str,
    verdict: Verdict,
    notes: Option<&str>,
    now: Timestamp,
) -> Result<OrderState, OrdersError> {
    let notes = notes.filter(|notes| !notes.trim().is_empty());
    if verdict == Verdict::Changes && notes.is_none() {
        return Err(OpsError::Empty("the notes (asking for changes needs them)").into());
    }
    if let Some(notes) = notes {
        check_chars("the notes", notes, MAX_NOTES)?;
        session.guard(notes, TextUse::ReviewNote)?;
    }
    session.refresh(now);
    page(session, id);
    let order = find(session, id)?;
    let body = ReviewBody {
        order: order.id.to_string(),
        after: order.view().tip,
        verdict,
        notes: notes.map(str::to_owned),
    };
    let asked = Asked {
        action: "review",
        wanted: "submitted",
    };
    judged(session, order, &body, asked)?;
    let scope = order.issue.scope.clone();
    session.append(Operation::Review, scope.as_deref(), &body, now)?;
    Ok(find_ref(session, id)?.brief().state)
}

/// Cancels an order (the master only). Returns the order's state after it.
pub fn cancel(
    session: &mut Session,
    id: &str,
    note: Option<&str>,
    now: Timestamp,
) -> Result<OrderState, OrdersError> {
    if let Some(note) = note {
        check_chars("the note", note, MAX_NOTES)?;
        session.guard(note, TextUse::ReviewNote)?;
    }
    session.refresh(now);
    page(session, id);
    let order = find(session, id)?;
    let body = CancelBody {
        order: order.id.to_string(),
        after: order.view().tip,
        text: given(note),
    };
    let asked = Asked {
        action: "cancel",
        wanted: "not accepted or cancelled",
    };
    judged(session, order, &body, asked)?;
    session.append(Operation::Approve, None, &body, now)?;
    Ok(find_ref(session, id)?.brief().state)
}

/// The board: open and held orders (every order with `request.all`), in the order of their
/// last change; with `since`, only orders that changed after that cursor.
pub fn list(
    session: &mut Session,
    request: &ListRequest,
    now: Timestamp,
) -> Result<OrderList, OrdersError> {
    session.authorize(Operation::Read, None, now)?;
    session.refresh(now);
    session.load(Sections::BOARD, now);
    let since = request
        .since
        .as_deref()
        .map(str::parse::<Since>)
        .transpose()
        .map_err(OpsError::from)?;
    let generation = session.generation();
    let (after, reset) = match since {
        Some(since) if since.generation == generation => (Some(since.counter), false),
        Some(_) => (None, true),
        None => (None, false),
    };
    let board = &session.state().orders()?;
    let mut matching = board
        .changed_after(after.unwrap_or(0))
        // Changes include orders that became done: the reader learns they left the board.
        .filter(|order| after.is_some() || request.all || !order.brief().state.is_done())
        .map(|order| ListedOrder {
            changed: order.brief().changed(),
            row: row(order),
        });
    let rows: Vec<ListedOrder> = matching.by_ref().take(request.limit).collect();
    let more = matching.next().is_some();
    Ok(OrderList {
        rows,
        more,
        reset,
        generation,
        last_change: session.state().last_change(),
    })
}

/// How many orders stand in each state (states without one left out): the fold's count, so an
/// overview of a large board lists none of it.
pub fn count_by_state(
    session: &mut Session,
    now: Timestamp,
) -> Result<std::collections::BTreeMap<OrderState, usize>, OrdersError> {
    session.authorize(Operation::Read, None, now)?;
    session.refresh(now);
    session.load(Sections::BOARD, now);
    Ok(session.state().orders()?.count_by_state().clone())
}

/// Everything about one order, and how it would run here when it is heavy.
pub fn show(
    session: &mut Session,
    id: &str,
    queue: Option<&dyn HeavyQueue>,
    now: Timestamp,
) -> Result<OrderDetail, OrdersError> {
    session.authorize(Operation::Read, None, now)?;
    session.refresh(now);
    page(session, id);
    let found = find_ref(session, id)?;
    let order = find(session, id)?;
    let view = order.view();
    let issue = &order.issue;
    let via_queue = issue.heavy
        && queue.is_some_and(|queue| queue.enabled() && queue.can_i_start(&issue.hints));
    let (body, body_blob) = match &issue.body {
        Body::None => (None, None),
        Body::Inline(text) => (Some(text.clone()), None),
        Body::Blob(blob) => (None, Some(blob.clone())),
    };
    Ok(OrderDetail {
        row: row(found),
        issued_by: issue.by.clone(),
        to: issue.to.clone(),
        review: issue.review,
        heavy: issue.heavy,
        hints: issue.hints,
        scope: issue.scope.clone(),
        run_via: if via_queue {
            RunVia::Snifrig
        } else {
            RunVia::Direct
        },
        run_command: via_queue.then(|| format!("snifrig run --name {} -- <command>", order.id)),
        body,
        body_blob,
        revision: view.revision,
        submission: view.submission.clone(),
        review_verdict: view.review.clone(),
        progress: view.progress.clone(),
        progress_lines: view.progress_lines,
        handins: view.handins.iter().map(ToString::to_string).collect(),
        voided: view.voided.clone(),
    })
}

/// The full text of an order's body (a blob's, or the inline one): what
/// `ferry://<project>/order/<id>` serves.
pub fn body_text(session: &mut Session, id: &str, now: Timestamp) -> Result<String, OrdersError> {
    session.authorize(Operation::Read, None, now)?;
    session.refresh(now);
    page(session, id);
    let order = find(session, id)?;
    let mut text = format!("# {}\n", order.issue.title);
    match &order.issue.body {
        Body::None => {}
        Body::Inline(body) => {
            text.push('\n');
            text.push_str(body);
        }
        Body::Blob(blob) => {
            let blob = blob
                .parse()
                .map_err(|_| OrdersError::BadBlob(id.to_owned()))?;
            let bytes = session.channel().get_blob(&blob)?;
            text.push('\n');
            text.push_str(&String::from_utf8_lossy(&bytes));
        }
    }
    Ok(text)
}

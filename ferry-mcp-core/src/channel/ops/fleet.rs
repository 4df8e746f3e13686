//! Joining and catching up: who the caller is here, who is primary and alive, and a bounded
//! digest of what matters to it (`ferry_join`, `ferry_catchup`: `docs/mcp-server.md`), built from the
//! folded state, never from history.
//!
//! Joining creates nothing: an agent that is not seated is told the exact command that seats
//! it (no key, no roster entry is made on its behalf), a locked one how to unlock.

use serde::Serialize;

use super::OpsError;
use super::primary::{Liveness, liveness};
use crate::channel::fold::levels::{Fix, Level, Operation, Refusal};
use crate::channel::fold::state::asks::AskState;
use crate::channel::fold::state::orders::{OrderRef, OrderState};
use crate::channel::fold::state::since::Since;
use crate::channel::fold::state::{OrderBoard, Sections};
use crate::channel::log::names::{AgentName, ProjectId};
use crate::channel::session::{Actor, Session};
use crate::time::Timestamp;

/// Whether the caller can act, and if not, what fixes it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "seat", rename_all = "snake_case")]
pub enum Standing {
    Seated {
        level: Level,
    },
    /// Not seated: `fix` is the exact command that seats it.
    Unseated {
        why: String,
        fix: String,
    },
    /// Seated, but its key is sealed and not unlocked on this machine.
    Locked {
        fix: String,
    },
    /// No agent was named (a read-only server).
    Observer,
}

/// The primary as `ferry_join` shows it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PrimaryNow {
    pub name: AgentName,
    pub age_s: Option<u64>,
    pub state: Option<Liveness>,
}

/// An agent heard from recently, and what it is doing.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct AliveAgent {
    pub name: AgentName,
    /// The order it holds, if any.
    pub doing: Option<String>,
    pub age_s: u64,
}

/// What `ferry_join` answers.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Joined {
    pub agent: Option<AgentName>,
    pub project: ProjectId,
    pub standing: Standing,
    pub primary: Option<PrimaryNow>,
    /// Agents heard from within the quiet period, most recent first (at most 10).
    pub alive: Vec<AliveAgent>,
    /// Orders the caller holds or that are offered to it.
    pub mine_open: usize,
    /// A newer release the master approved for this platform (ADR 0020), if any.
    pub update: Option<super::releases::UpdateNote>,
}

/// Unread messages are counted up to this many.
pub const MAX_UNREAD_COUNTED: usize = 100;

/// At most this many agents in `alive`.
pub const MAX_ALIVE: usize = 10;

/// Who the caller is here and what the fleet looks like. Records that it is alive when it may
/// write.
pub fn join(session: &mut Session, now: Timestamp) -> Result<Joined, OpsError> {
    session.refresh(now);
    session.load(Sections::BOARD, now);
    let agent = session.actor().agent().cloned();
    let project = session.project().clone();
    let standing = match session.authorize(Operation::Read, None, now) {
        Ok(level) => match (&agent, level) {
            (Some(_), Some(level)) => Standing::Seated { level },
            _ => Standing::Observer,
        },
        Err(OpsError::Refused(refused @ Refusal::Unseated { .. })) => {
            let Refusal::Unseated { agent, why, .. } = &refused else {
                unreachable!("matched above")
            };
            // Joining seats it, whatever else is wrong (another key, a contest: the human's).
            let fix = Fix::Join {
                agent: agent.clone(),
                project: project.clone(),
            };
            Standing::Unseated {
                why: refused
                    .fix()
                    .map_or_else(|| why.clone(), |fix| fix.with(why)),
                fix: fix.command(),
            }
        }
        Err(OpsError::Refused(refused @ Refusal::Locked { .. })) => Standing::Locked {
            fix: refused.fix().map(|fix| fix.command()).unwrap_or_default(),
        },
        Err(other) => return Err(other),
    };
    if matches!(standing, Standing::Seated { .. }) {
        super::primary::note_alive(session, now);
    }
    let view = session.state().leadership.view().clone();
    let primary = view.primary.map(|name| {
        let live = liveness(session, &name, now);
        PrimaryNow {
            age_s: live.map(|(age, _)| age),
            state: live.map(|(_, state)| state),
            name,
        }
    });
    let quiet = session.state().leadership.quiet_period_s();
    let mut heard: Vec<(&AgentName, u64)> = session
        .state()
        .heard_all()
        .filter(|(name, _)| Some(*name) != agent.as_ref())
        .map(|(name, at)| (name, now.seconds_since(at)))
        .filter(|(_, age)| *age <= quiet)
        .collect();
    heard.sort_by(|a, b| (a.1, a.0).cmp(&(b.1, b.0)));
    heard.truncate(MAX_ALIVE);
    // What each does is looked up only for those shown.
    let board = session.state().orders()?;
    let alive: Vec<AliveAgent> = heard
        .into_iter()
        .map(|(name, age_s)| AliveAgent {
            doing: held_by(board, name).map(|order| order.id().to_string()),
            name: name.clone(),
            age_s,
        })
        .collect();
    let mine_open = agent.as_ref().map_or(0, |me| mine(board, me).count());
    Ok(Joined {
        agent,
        project,
        standing,
        primary,
        alive,
        mine_open,
        update: super::releases::update_note(session),
    })
}

/// The first order `agent` holds.
fn held_by<'s>(board: &'s OrderBoard, agent: &'s AgentName) -> Option<OrderRef<'s>> {
    board.of_agent(agent).find(|order| {
        let brief = order.brief();
        brief.holder.as_ref() == Some(agent) && brief.state.is_held()
    })
}

/// Orders `me` holds or that are offered to it, not done.
fn mine<'s>(board: &'s OrderBoard, me: &'s AgentName) -> impl Iterator<Item = OrderRef<'s>> + 's {
    board.of_agent(me)
}

/// One order row of a digest.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct DigestOrder {
    pub id: String,
    pub title: String,
    pub state: OrderState,
    pub holder: Option<AgentName>,
    /// Its holder has gone silent past the quiet period (it can be handed back).
    pub silent: bool,
}

/// One decision of a digest.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct DigestDecision {
    pub id: String,
    pub line: String,
    pub at: Timestamp,
}

/// The brief of a digest.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct DigestBrief {
    pub by: AgentName,
    pub objective: String,
    pub constraints: Vec<String>,
}

/// What `ferry_catchup` answers: built from the folded state, bounded.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Digest {
    /// The primary (on a `since` digest: only when it changed).
    pub primary: Option<PrimaryNow>,
    pub brief: Option<DigestBrief>,
    /// The newest decisions first.
    pub decisions: Vec<DigestDecision>,
    /// Open and held orders (not the caller's), oldest change first.
    pub open: Vec<DigestOrder>,
    /// The caller's orders (held, or offered to it).
    pub mine: Vec<DigestOrder>,
    /// The caller's asks.
    pub asks: Vec<(String, AskState)>,
    /// What needs the caller, one short line each.
    pub waiting_on_you: Vec<String>,
    /// How many orders `open` would hold without its limit, and `mine` without its.
    pub open_total: usize,
    pub mine_total: usize,
    /// Messages for the caller not read yet, counted up to [`MAX_UNREAD_COUNTED`].
    pub unread: usize,
    /// More messages wait unread than `unread` counts.
    pub unread_more: bool,
    pub next: Since,
    /// The `since` given was from another machine or state: this is the full digest.
    pub reset: bool,
    /// A newer release the master approved for this platform (ADR 0020): in every digest while
    /// it is newer than what runs, so an agent mentions it to the human.
    pub update: Option<super::releases::UpdateNote>,
}

/// How large a digest is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DigestLimits {
    pub decisions: usize,
    pub open: usize,
    pub mine: usize,
    pub asks: usize,
    pub waiting: usize,
}

impl DigestLimits {
    /// A typical digest, well within ADR T6 (800 tokens) and under the design's 500 on the
    /// busy fixture, with room for the links to the caller's orders.
    pub const DEFAULT: DigestLimits = DigestLimits {
        decisions: 5,
        open: 5,
        mine: 5,
        asks: 3,
        waiting: 5,
    };
    /// `detail`: the ADR's limits (at most 8 decisions and 10 open orders).
    pub const DETAIL: DigestLimits = DigestLimits {
        decisions: 8,
        open: 10,
        mine: 10,
        asks: 5,
        waiting: 8,
    };
}

/// A bounded digest for the caller, from the folded state; with `since`, only what changed
/// after that cursor.
pub fn catchup(
    session: &mut Session,
    since: Option<&str>,
    limits: DigestLimits,
    now: Timestamp,
) -> Result<Digest, OpsError> {
    session.authorize(Operation::Read, None, now)?;
    let since = since
        .map(str::parse::<Since>)
        .transpose()
        .map_err(OpsError::from)?;
    session.refresh(now);
    // After the arguments are judged: a refused call writes nothing, presence included.
    if session.actor().agent().is_some() {
        super::primary::note_alive(session, now);
    }
    session.load(Sections::BOARD_AND_TALK, now);
    let generation = session.generation();
    let (after, reset) = match since {
        Some(since) if since.generation == generation => (since.counter, false),
        Some(_) => (0, true),
        None => (0, false),
    };
    let me = match session.actor() {
        Actor::Agent(name) => name.clone(),
        _ => AgentName::master(),
    };
    // The unread messages among those talk paged out, counted up to the bound below (read
    // from the kept state); the rest are counted in memory.
    let unread_paged = session
        .paged_unread_for((&me, 0, true), MAX_UNREAD_COUNTED + 1)?
        .len();
    let state = session.state();
    let identity = session.identity();
    let quiet = state.leadership.quiet_period_s();
    let silent = |holder: Option<&AgentName>| {
        holder
            .is_some_and(|holder| liveness(session, holder, now).is_none_or(|(age, _)| age > quiet))
    };
    // Briefs only: a digest never reads an order's record.
    let row = |order: OrderRef<'_>| {
        let held = order.brief().state.is_held();
        let super::orders::OrderRow {
            id,
            title,
            state,
            holder,
            ..
        } = super::orders::row(order);
        DigestOrder {
            silent: held && silent(holder.as_ref()),
            id,
            title,
            state,
            holder,
        }
    };
    let leadership = &state.leadership;
    let primary = (leadership.changed() > after || after == 0)
        .then(|| leadership.view().primary.clone())
        .flatten()
        .map(|name| {
            let live = liveness(session, &name, now);
            PrimaryNow {
                age_s: live.map(|(age, _)| age),
                state: live.map(|(_, state)| state),
                name,
            }
        });
    let brief = leadership
        .current_brief()
        .filter(|brief| brief.stamp > after)
        .map(|brief| DigestBrief {
            by: brief.by.clone(),
            objective: brief.objective.clone(),
            constraints: brief.constraints.clone(),
        });
    let decisions = leadership
        .decisions()
        .filter(|decision| decision.stamp > after)
        .take(limits.decisions)
        .map(|decision| DigestDecision {
            id: decision.id.to_string(),
            line: decision.line.clone(),
            at: decision.time,
        })
        .collect();
    let is_mine = |order: &OrderRef<'_>| {
        let view = order.brief();
        view.holder.as_ref() == Some(&me)
            || (view.state == OrderState::Offered && view.to.as_ref() == Some(&me))
    };
    let board = state.orders()?;
    let others = || {
        board
            .changed_after(after)
            .filter(|order| !is_mine(order))
            .filter(|order| after > 0 || !order.brief().state.is_done())
    };
    let open = others().take(limits.open).map(row).collect();
    // Counted over briefs, so a capped digest still says how many there are.
    let open_total = others().count();
    let mine_orders = || board.changed_after(after).filter(|order| is_mine(order));
    let mine: Vec<DigestOrder> = mine_orders().take(limits.mine).map(row).collect();
    let mine_total = mine_orders().count();
    let asks = state
        .asks
        .iter(identity)
        .filter(|ask| ask.by == me && ask.changed > after)
        .collect::<Vec<_>>()
        .into_iter()
        .rev()
        .take(limits.asks)
        .map(|ask| (ask.id.to_string(), ask.state))
        .collect();
    let mut waiting = Vec::new();
    let may_review = session.authorize(Operation::Review, None, now).is_ok()
        || session.actor() == &Actor::Master;
    // From the indexes, never a walk of the board: the caller's own orders with changes
    // requested, then (for a reviewer) submissions by others, only as many as are shown.
    for order in state.orders()?.of_agent(&me) {
        let view = order.brief();
        if view.state == OrderState::ChangesRequested && view.holder.as_ref() == Some(&me) {
            waiting.push(format!(
                "{}: changes requested: submit a new revision",
                order.id()
            ));
        }
    }
    if may_review {
        let submitted = state.orders()?.awaiting_action().filter(|order| {
            let view = order.brief();
            view.state == OrderState::Submitted
                && view.submitted_by.as_ref().is_some_and(|by| *by != me)
        });
        for order in submitted.take(limits.waiting.saturating_sub(waiting.len())) {
            waiting.push(format!("{} is submitted: review it", order.id()));
        }
    }
    for ask in state.asks.iter(identity) {
        if ask.by == me && ask.state == AskState::SentBack {
            waiting.push(format!("ask {} was sent back: see its note", ask.id));
        }
    }
    // A race lost on another machine is learned here, on the next call (ADR 0006).
    for order in state.orders()?.changed_after(after) {
        for void in &order.brief().lost_races {
            if void.by == me {
                waiting.push(format!(
                    "{}: your {} {} {}",
                    order.id(),
                    void.what,
                    void.id,
                    void.reason
                ));
            }
        }
    }
    if leadership.changed() > after {
        for (id, by, reason) in &leadership.view().voided {
            if *by == me && reason.is_lost_race() {
                waiting.push(format!("your takeover {id} {reason}"));
            }
        }
    }
    // Secrets sent to the caller: the name and the sender, never the value, and how to open it
    // (on its machine, with its key). In a whole digest only: a cursor's digest says what is new.
    if after == 0
        && let Actor::Agent(agent) = session.actor()
    {
        for name in state.secrets.names(agent, identity) {
            if let Some(share) = state.secrets.standing(agent, name, identity) {
                waiting.push(format!(
                    "secret {name} from {}: open it with ferry channel secret get {name}",
                    share.from
                ));
            }
        }
    }
    waiting.truncate(limits.waiting);
    // Counted up to a bound: a reader far behind is told "many", not walked through.
    let counted = unread_paged
        + state
            .talk()?
            .for_reader(&me, identity, 0, true)
            .take((MAX_UNREAD_COUNTED + 1).saturating_sub(unread_paged))
            .count();
    let unread_more = counted > MAX_UNREAD_COUNTED;
    let unread = counted.min(MAX_UNREAD_COUNTED);
    if unread_more {
        waiting.push(format!(
            "more than {MAX_UNREAD_COUNTED} unread messages: ferry_talk read"
        ));
    } else if unread > 0 {
        waiting.push(format!(
            "{unread} unread message{}: ferry_talk read",
            if unread == 1 { "" } else { "s" }
        ));
    }
    Ok(Digest {
        primary,
        brief,
        decisions,
        open,
        mine,
        asks,
        waiting_on_you: waiting,
        open_total,
        mine_total,
        unread,
        unread_more,
        next: Since {
            generation,
            counter: state.last_change(),
        },
        reset,
        update: super::releases::update_note(session),
    })
}

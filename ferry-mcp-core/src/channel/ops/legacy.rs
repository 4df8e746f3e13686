//! What the legacy tools read (ADR 0019): the original server's tasks, ledger, learnings,
//! engines and memory have no counterpart in this channel, so each is read from what is here
//! (the order board, its reviews, the primary's brief and decisions).
//!
//! Why a module of its own: these reads walk the board in ways no core tool does (counts per
//! state, newest change first, acceptance per agent), and they stay readers: nothing here
//! writes, and nothing reads an order's record except for the rows a page shows.

use std::collections::BTreeMap;

use serde::Serialize;

use super::orders::{OrderRow, OrdersError, row};
use super::primary::{PrimaryError, is_silent};
use crate::channel::fold::levels::Operation;
use crate::channel::fold::state::orders::{OrderRef, OrderState, Verdict};
use crate::channel::fold::state::{EntryId, Sections};
use crate::channel::log::names::AgentName;
use crate::channel::session::Session;
use crate::time::Timestamp;

/// Which rows of a list a page holds: `skip` rows, then at most `limit`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct PageRequest {
    pub skip: usize,
    pub limit: usize,
}

/// One page of a list, and how many rows the whole list has.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Page<T> {
    pub rows: Vec<T>,
    pub total: usize,
}

impl<T> Page<T> {
    /// Takes the page of `request` from `rows`, counting them all.
    fn of(rows: impl Iterator<Item = T>, request: PageRequest) -> Self {
        let mut total = 0;
        let mut page = Vec::new();
        for item in rows {
            if total >= request.skip && page.len() < request.limit {
                page.push(item);
            }
            total += 1;
        }
        Self { rows: page, total }
    }
}

/// Which orders `list_tasks` lists.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TaskFilter {
    /// Orders in one of these states.
    In(&'static [OrderState]),
    /// Held orders whose holder has gone silent (the original's `stale`).
    Stale,
}

/// One order as the legacy lists show it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct TaskRow {
    pub row: OrderRow,
    /// Held by an agent that has gone silent.
    pub stale: bool,
}

/// How many orders are in each state.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize)]
pub struct BoardCounts {
    pub by_state: BTreeMap<OrderState, usize>,
    /// Held orders whose holder has gone silent.
    pub stale: usize,
    pub total: usize,
}

/// The latest verdict on an order (none for an order accepted without review), with its
/// submission's note.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct VerdictRow {
    pub row: OrderRow,
    pub verdict: Option<Verdict>,
    pub by: Option<AgentName>,
    pub notes: Option<String>,
    /// The note of the submission the verdict is about.
    pub summary: Option<String>,
    pub at: Option<Timestamp>,
}

/// How often an agent's submissions were accepted.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Acceptance {
    pub agent: AgentName,
    /// Orders whose latest counted submission is this agent's.
    pub submitted: usize,
    /// Of those, the accepted ones.
    pub accepted: usize,
}

impl Acceptance {
    /// `(accepted + 1) / (submitted + 2)`: one half for an agent never judged, moving towards
    /// its acceptance rate as it submits.
    pub fn confidence(&self) -> f64 {
        // Counts of orders stay far below 2^52: the conversion is exact.
        #[allow(clippy::cast_precision_loss)]
        let (accepted, total) = (self.accepted as f64, self.submitted as f64);
        (accepted + 1.0) / (total + 2.0)
    }
}

/// The brief as `read_memory` shows it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct MemoryBrief {
    pub by: AgentName,
    pub objective: String,
    pub constraints: Vec<String>,
    pub at: Timestamp,
}

/// A decision as `read_memory` shows it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct MemoryDecision {
    pub id: String,
    pub by: AgentName,
    pub line: String,
    pub at: Timestamp,
}

/// The primary's brief and a page of its decisions (newest first).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Memory {
    pub brief: Option<MemoryBrief>,
    pub decisions: Page<MemoryDecision>,
}

fn task_row(session: &Session, order: OrderRef<'_>, now: Timestamp) -> TaskRow {
    let stale = order.brief().state.is_held()
        && order
            .brief()
            .holder
            .as_ref()
            .is_some_and(|holder| is_silent(session, holder, now));
    TaskRow {
        row: row(order),
        stale,
    }
}

fn open_board(session: &mut Session, now: Timestamp) -> Result<(), OrdersError> {
    session.authorize(Operation::Read, None, now)?;
    session.refresh(now);
    session.load(Sections::BOARD, now);
    Ok(())
}

/// How many orders are in each state, and how many held ones are stale.
pub fn board_counts(session: &mut Session, now: Timestamp) -> Result<BoardCounts, OrdersError> {
    open_board(session, now)?;
    let mut counts = BoardCounts::default();
    for order in session.state().orders()?.iter() {
        *counts.by_state.entry(order.brief().state).or_default() += 1;
        counts.total += 1;
        if task_row(session, order, now).stale {
            counts.stale += 1;
        }
    }
    Ok(counts)
}

/// The orders (those that match `filter`), oldest change first.
pub fn tasks(
    session: &mut Session,
    filter: Option<TaskFilter>,
    page: PageRequest,
    now: Timestamp,
) -> Result<Page<TaskRow>, OrdersError> {
    open_board(session, now)?;
    let board = session.state().orders()?;
    let rows = board
        .changed_after(0)
        .map(|order| task_row(session, order, now))
        .filter(|task| match filter {
            None => true,
            Some(TaskFilter::In(states)) => states.contains(&task.row.state),
            Some(TaskFilter::Stale) => task.stale,
        });
    Ok(Page::of(rows, page))
}

/// The board's `walk` most recent changes, newest first: each changed order as it stands now.
pub fn board_changes(
    session: &mut Session,
    walk: usize,
    page: PageRequest,
    now: Timestamp,
) -> Result<Page<TaskRow>, OrdersError> {
    open_board(session, now)?;
    let board = session.state().orders()?;
    let newest: Vec<OrderRef<'_>> = board.changed_after(0).collect();
    let rows = newest
        .into_iter()
        .rev()
        .take(walk)
        .map(|order| task_row(session, order, now));
    Ok(Page::of(rows, page))
}

/// The latest verdict of every accepted or changes-requested order, newest change first (at
/// most `walk` of them); only the page's orders are read whole.
pub fn verdicts(
    session: &mut Session,
    walk: usize,
    page: PageRequest,
    now: Timestamp,
) -> Result<Page<VerdictRow>, OrdersError> {
    open_board(session, now)?;
    let judged: Vec<EntryId> = session
        .state()
        .orders()?
        .changed_after(0)
        .filter(|order| {
            matches!(
                order.brief().state,
                OrderState::Accepted | OrderState::ChangesRequested
            )
        })
        .map(|order| order.id().clone())
        .collect();
    let judged = Page::of(judged.into_iter().rev().take(walk), page);
    // Only the page's orders are paged in whole.
    for id in &judged.rows {
        session.page_order(id);
    }
    let board = session.state().orders()?;
    let rows = judged
        .rows
        .iter()
        .filter_map(|id| board.get(id))
        .filter_map(|order| {
            let view = order.whole()?.view();
            Some(VerdictRow {
                row: row(order),
                verdict: view.review.as_ref().map(|review| review.verdict),
                by: view.review.as_ref().map(|review| review.by.clone()),
                notes: view.review.as_ref().and_then(|review| review.notes.clone()),
                summary: view.submission.as_ref().map(|s| s.summary.clone()),
                at: view
                    .review
                    .as_ref()
                    .map(|review| review.time)
                    .or_else(|| view.submission.as_ref().map(|s| s.time)),
            })
        })
        .collect();
    Ok(Page {
        rows,
        total: judged.total,
    })
}

/// Acceptance per agent that submitted anything, by name.
pub fn acceptance(
    session: &mut Session,
    page: PageRequest,
    now: Timestamp,
) -> Result<Page<Acceptance>, OrdersError> {
    open_board(session, now)?;
    let mut per_agent = BTreeMap::<AgentName, (usize, usize)>::new();
    for order in session.state().orders()?.iter() {
        let brief = order.brief();
        if let Some(by) = &brief.submitted_by {
            let counts = per_agent.entry(by.clone()).or_default();
            counts.0 += 1;
            if brief.state == OrderState::Accepted {
                counts.1 += 1;
            }
        }
    }
    let rows = per_agent
        .into_iter()
        .map(|(agent, (submitted, accepted))| Acceptance {
            agent,
            submitted,
            accepted,
        });
    Ok(Page::of(rows, page))
}

/// The brief the catch-up shows (the primary's, else the latest) and a page of the decisions,
/// newest first.
pub fn memory(
    session: &mut Session,
    page: PageRequest,
    now: Timestamp,
) -> Result<Memory, PrimaryError> {
    session.authorize(Operation::Read, None, now)?;
    session.refresh(now);
    let leadership = &session.state().leadership;
    let brief = leadership.current_brief().map(|brief| MemoryBrief {
        by: brief.by.clone(),
        objective: brief.objective.clone(),
        constraints: brief.constraints.clone(),
        at: brief.time,
    });
    let decisions = leadership.decisions().map(|decision| MemoryDecision {
        id: decision.id.to_string(),
        by: decision.by.clone(),
        line: decision.line.clone(),
        at: decision.time,
    });
    Ok(Memory {
        brief,
        decisions: Page::of(decisions, page),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_page_counts_every_row_and_holds_only_those_asked_for() {
        let page = Page::of(0..10, PageRequest { skip: 3, limit: 4 });
        assert_eq!(page.rows, [3, 4, 5, 6]);
        assert_eq!(page.total, 10);
        let past = Page::of(0..2, PageRequest { skip: 5, limit: 4 });
        assert!(past.rows.is_empty());
        assert_eq!(past.total, 2);
    }

    #[test]
    fn confidence_is_one_half_for_an_agent_never_judged_and_follows_its_acceptance() {
        let agent = AgentName::parse("a").unwrap();
        let never = Acceptance {
            agent: agent.clone(),
            submitted: 0,
            accepted: 0,
        };
        assert!((never.confidence() - 0.5).abs() < 1e-12);
        let good = Acceptance {
            agent,
            submitted: 8,
            accepted: 8,
        };
        assert!((good.confidence() - 0.9).abs() < 1e-12);
    }
}

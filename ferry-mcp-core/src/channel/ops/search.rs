//! Searching what the fleet has written: order titles, the primary's decisions, and the
//! messages the caller may read, for a word or a phrase. `ferry search` and the admin group's
//! `ferry_search` call [`search`].
//!
//! It reads the folded state only (never the history), newest first within each kind, orders
//! then decisions then messages, and pages through the hits with an opaque cursor. A text that
//! comes from the channel is masked by the guard before it is returned.

use serde::Serialize;

use super::OpsError;
use crate::channel::fold::levels::Operation;
use crate::channel::fold::state::Sections;
use crate::channel::log::names::AgentName;
use crate::channel::session::{Actor, Session};
use crate::guard;
use crate::time::Timestamp;

/// Why a search failed. One variant per cause; [`SearchError::code`] is stable.
#[derive(Debug, thiserror::Error)]
pub enum SearchError {
    /// What any operation can fail with (the session, the arguments' shape).
    #[error(transparent)]
    Ops(#[from] OpsError),
    #[error("{0:?} is not a search cursor (like s20)")]
    BadCursor(String),
    #[error("a query is {} to {} characters, not {chars}", QUERY_CHARS.start(), QUERY_CHARS.end())]
    QueryLength { chars: usize },
}

impl SearchError {
    /// A stable machine-readable code (tool results carry it).
    pub fn code(&self) -> &'static str {
        match self {
            Self::Ops(err) => err.code(),
            Self::BadCursor(_) | Self::QueryLength { .. } => "invalid",
        }
    }
}

/// The shortest and the longest query.
pub const QUERY_CHARS: std::ops::RangeInclusive<usize> = 2..=200;

/// The most hits a page holds (T4 of `docs/mcp-budgets.md`: 20 items).
pub const MAX_PAGE: usize = 20;

/// The most characters of a hit's line.
pub const MAX_LINE: usize = 200;

/// What a search asks for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SearchRequest {
    pub query: String,
    /// The cursor of the previous page (`next`), to go on from there.
    pub cursor: Option<String>,
    /// At most [`MAX_PAGE`].
    pub limit: usize,
}

/// One thing that matched.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Hit {
    /// `order`, `decision` or `msg`.
    pub kind: &'static str,
    pub id: String,
    /// The matching text, at most 200 characters, secrets masked.
    pub line: String,
}

/// A page of hits.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SearchPage {
    pub hits: Vec<Hit>,
    /// How many hits there are in all.
    pub total: usize,
    /// The cursor of the next page, when there is one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub next: Option<String>,
}

/// The cursor of a page starting at hit `at`: `s<at>`, never mistaken for a page cursor
/// (`p…`) or a `since` cursor (`s<generation>.<counter>`, always with its dot).
fn cursor_at(at: usize) -> String {
    format!("s{at}")
}

fn parse_cursor(text: &str) -> Result<usize, SearchError> {
    text.strip_prefix('s')
        .filter(|digits| !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit()))
        .and_then(|digits| digits.parse().ok())
        .ok_or_else(|| SearchError::BadCursor(text.to_owned()))
}

/// The first [`MAX_LINE`] characters of `text` with its secrets masked, on one line.
fn shown(text: &str) -> String {
    let masked = guard::redact(text).text;
    let one_line: String = masked
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect();
    match one_line.char_indices().nth(MAX_LINE) {
        Some((at, _)) => format!("{}...", &one_line[..at]),
        None => one_line,
    }
}

/// Searches the state `session` has folded for `request.query`, case-insensitively.
pub fn search(
    session: &mut Session,
    request: &SearchRequest,
    now: Timestamp,
) -> Result<SearchPage, SearchError> {
    session.authorize(Operation::Read, None, now)?;
    let chars = request.query.chars().count();
    if !QUERY_CHARS.contains(&chars) {
        return Err(SearchError::QueryLength { chars });
    }
    let from = request
        .cursor
        .as_deref()
        .map(parse_cursor)
        .transpose()?
        .unwrap_or(0);
    let limit = request.limit.clamp(1, MAX_PAGE);
    session.refresh(now);
    let needle = request.query.to_lowercase();
    let matches = |text: &str| text.to_lowercase().contains(&needle);
    let me = match session.actor() {
        Actor::Agent(name) => name.clone(),
        _ => AgentName::master(),
    };
    session.load(Sections::BOARD_AND_TALK, now);
    // Messages talk paged out are read from the kept state, only the matching ones kept.
    let older = session.paged_messages_for((&me, 0, false), usize::MAX, &mut |message| {
        matches(&message.text)
    })?;
    let state = session.state();
    let identity = state.identity();

    let mut hits = Vec::new();
    // Titles are in the briefs: a search reads no order's record.
    let mut orders: Vec<_> = state
        .orders()?
        .iter()
        .filter(|order| matches(&order.brief().title))
        .collect();
    // The most recently changed first; ties by id, so a page is the same on every call.
    orders.sort_by(|a, b| {
        b.brief()
            .changed()
            .cmp(&a.brief().changed())
            .then_with(|| a.id().cmp(b.id()))
    });
    hits.extend(orders.into_iter().map(|order| Hit {
        kind: "order",
        id: order.id().to_string(),
        line: shown(&format!(
            "{} ({})",
            order.brief().title,
            order.brief().state.as_str()
        )),
    }));
    hits.extend(
        state
            .leadership
            .decisions()
            .filter(|decision| matches(&decision.line))
            .map(|decision| Hit {
                kind: "decision",
                id: decision.id.to_string(),
                line: shown(&format!("{}: {}", decision.by, decision.line)),
            }),
    );
    let mut messages: Vec<_> = older
        .iter()
        .chain(
            state
                .talk()?
                .for_reader(&me, identity, 0, false)
                .filter(|message| matches(&message.text)),
        )
        .collect();
    messages.reverse();
    hits.extend(messages.into_iter().map(|message| Hit {
        kind: "msg",
        id: message.id.to_string(),
        line: shown(&format!("{}: {}", message.from, message.text)),
    }));

    let total = hits.len();
    let page: Vec<Hit> = hits.into_iter().skip(from).take(limit).collect();
    let end = from + page.len();
    Ok(SearchPage {
        hits: page,
        total,
        next: (end < total).then(|| cursor_at(end)),
    })
}

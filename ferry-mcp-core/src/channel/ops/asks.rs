//! Asks to the human: an agent raises a question with a recommendation; the human answers
//! (`ferry ask approve|reject|send-back`, signed with the master key). The MCP can ask, never
//! approve: only the master's answer counts (the fold decides).

use serde::Serialize;

use super::{OpsError, check_chars, check_not_empty};
use crate::channel::fold::levels::Operation;
use crate::channel::fold::state::EntryId;
use crate::channel::fold::state::asks::{
    AnswerBody, Ask, AskState, MAX_NOTE, MAX_REASONING, MAX_RECOMMENDATION, MAX_TITLE, RaiseBody,
    Verdict,
};
use crate::channel::log::names::AgentName;
use crate::channel::session::{Actor, Session};
use crate::guard::TextUse;
use crate::time::Timestamp;

/// Why an ask operation failed. One variant per cause; [`AsksError::code`] is stable.
#[derive(Debug, thiserror::Error)]
pub enum AsksError {
    /// What any operation can fail with (the session, the arguments' shape).
    #[error(transparent)]
    Ops(#[from] OpsError),
    #[error("unknown ask {0}")]
    UnknownAsk(String),
    #[error("only the human (the master key) may {action}")]
    HumanOnly { action: &'static str },
    /// Asks are the agents' questions for the human, who answers them.
    #[error("asks are the agents' questions for you: answer them")]
    HumanAsks,
    #[error("you have raised no ask yet")]
    NoAskYet,
}

impl AsksError {
    /// A stable machine-readable code (tool results carry it).
    pub fn code(&self) -> &'static str {
        match self {
            Self::Ops(err) => err.code(),
            Self::UnknownAsk(_) => "unknown_ask",
            Self::HumanOnly { .. } => "master_only",
            Self::HumanAsks | Self::NoAskYet => "invalid",
        }
    }
}

/// What to ask.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RaiseRequest {
    pub title: String,
    pub recommendation: String,
    pub reasoning: String,
}

/// An ask as the commands and tools show it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct AskView {
    pub id: String,
    pub by: AgentName,
    pub title: String,
    pub recommendation: String,
    pub reasoning: String,
    pub state: AskState,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
    pub time: Timestamp,
}

fn view(ask: &Ask) -> AskView {
    AskView {
        id: ask.id.to_string(),
        by: ask.by.clone(),
        title: ask.title.clone(),
        recommendation: ask.recommendation.clone(),
        reasoning: ask.reasoning.clone(),
        state: ask.state,
        note: ask.note.clone(),
        time: ask.time,
    }
}

/// Raises an ask (any seated agent, a Worker too): title, recommendation and reasoning (at
/// most 1,200 characters), each through the guard. Returns its id.
pub fn raise(
    session: &mut Session,
    request: &RaiseRequest,
    now: Timestamp,
) -> Result<String, AsksError> {
    check_not_empty("the title", &request.title)?;
    check_chars("the title", &request.title, MAX_TITLE)?;
    check_not_empty("the recommendation", &request.recommendation)?;
    check_chars(
        "the recommendation",
        &request.recommendation,
        MAX_RECOMMENDATION,
    )?;
    check_chars("the reasoning", &request.reasoning, MAX_REASONING)?;
    session.guard(&request.title, TextUse::AskTitle)?;
    session.guard(&request.recommendation, TextUse::AskRecommendation)?;
    session.guard(&request.reasoning, TextUse::AskReasoning)?;
    if session.actor() == &Actor::Master {
        return Err(AsksError::HumanAsks);
    }
    let body = RaiseBody {
        title: request.title.clone(),
        recommendation: request.recommendation.clone(),
        reasoning: request.reasoning.clone(),
        seen: None,
    };
    let entry = session.append(Operation::Ask, None, &body, now)?;
    Ok(session.id_of(&entry).to_string())
}

/// One ask.
pub fn show(session: &mut Session, id: &str, now: Timestamp) -> Result<AskView, AsksError> {
    session.authorize(Operation::Read, None, now)?;
    session.refresh(now);
    let parsed: EntryId = id.parse()?;
    session
        .state()
        .asks
        .get(&parsed, session.identity())
        .map(view)
        .ok_or_else(|| AsksError::UnknownAsk(id.to_owned()))
}

/// Asks, newest first: every one (`pending_only`: only those waiting for the human), or only
/// `by`'s.
pub fn list(
    session: &mut Session,
    by: Option<&AgentName>,
    pending_only: bool,
    now: Timestamp,
) -> Result<Vec<AskView>, AsksError> {
    session.authorize(Operation::Read, None, now)?;
    session.refresh(now);
    let identity = session.identity();
    let mut asks: Vec<AskView> = session
        .state()
        .asks
        .iter(identity)
        .filter(|ask| by.is_none_or(|by| ask.by == *by))
        .filter(|ask| !pending_only || ask.state == AskState::Pending)
        .map(view)
        .collect();
    asks.reverse();
    Ok(asks)
}

/// The human answers an ask (the master only): approve, reject or send back, with a note.
pub fn answer(
    session: &mut Session,
    id: &str,
    verdict: Verdict,
    note: Option<&str>,
    now: Timestamp,
) -> Result<AskView, AsksError> {
    if session.actor() != &Actor::Master {
        return Err(AsksError::HumanOnly {
            action: "answer an ask",
        });
    }
    if let Some(note) = note {
        check_chars("the note", note, MAX_NOTE)?;
        session.guard(note, TextUse::ReviewNote)?;
    }
    session.refresh(now);
    let parsed: EntryId = id.parse()?;
    let Some(hash) = session
        .state()
        .asks
        .get(&parsed, session.identity())
        .map(|ask| ask.hash)
    else {
        return Err(AsksError::UnknownAsk(id.to_owned()));
    };
    let body = AnswerBody {
        ask: id.to_owned(),
        hash: Some(hash),
        verdict,
        note: note
            .filter(|note| !note.trim().is_empty())
            .map(str::to_owned),
    };
    session.append(Operation::Approve, None, &body, now)?;
    show(session, id, now)
}

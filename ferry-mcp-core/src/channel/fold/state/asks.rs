//! Asks: questions an agent raises for the human, with a recommendation, and the human's
//! answer. Any seated agent may raise one (`ask.raise`, in its own log); only the master's
//! answer (`ask.answer`, in the master's log) counts: an answer signed by an agent is ignored
//! and reported, an edited one does not verify at all. The latest answer in master order
//! stands. An answer binds the exact ask it answers, by its digest (ADR 0016): a re-keyed
//! name's new ask with the same id is not answered by the old one's answer.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::{Acted, Changes, EntryId};
use crate::channel::fold::identity::{FoldProblem, FoldProblemKind, Identity, MasterPos, Seat};
use crate::channel::log::entry::EntryHash;
use crate::channel::log::keys::PublicKey;
use crate::channel::log::names::AgentName;
use crate::time::Timestamp;

pub mod kinds {
    pub const RAISE: &str = "ask.raise";
    pub const ANSWER: &str = "ask.answer";
}

/// The longest title, in characters.
pub const MAX_TITLE: usize = 200;
/// The longest recommendation, in characters.
pub const MAX_RECOMMENDATION: usize = 500;
/// The longest reasoning, in characters (`docs/mcp-server.md`, asks).
pub const MAX_REASONING: usize = 1_200;
/// The longest note of an answer.
pub const MAX_NOTE: usize = 2_000;

/// The body of `ask.raise`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RaiseBody {
    pub title: String,
    pub recommendation: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub reasoning: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seen: Option<MasterPos>,
}

/// The human's verdict.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    Approve,
    Reject,
    SendBack,
}

/// The body of `ask.answer`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AnswerBody {
    pub ask: String,
    /// The digest of the `ask.raise` it answers. Answers written before it was carried have
    /// none; they bind as ADR 0016 says.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hash: Option<EntryHash>,
    pub verdict: Verdict,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

/// Where an ask stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AskState {
    Pending,
    Approved,
    Rejected,
    SentBack,
}

impl std::fmt::Display for AskState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl AskState {
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Pending => "pending",
            Self::Approved => "approved",
            Self::Rejected => "rejected",
            Self::SentBack => "sent_back",
        }
    }
}

/// One ask, as folded.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Ask {
    pub id: EntryId,
    pub by: AgentName,
    key: PublicKey,
    /// The digest of its `ask.raise`: what an answer names.
    pub hash: EntryHash,
    pub title: String,
    pub recommendation: String,
    pub reasoning: String,
    pub time: Timestamp,
    pub state: AskState,
    pub note: Option<String>,
    /// The master position of the answer that stands.
    answered_at: Option<MasterPos>,
    /// The stamp of its last change.
    pub changed: u64,
}

/// Every ask. See the module docs.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Asks {
    asks: BTreeMap<EntryId, Ask>,
    /// Answers that name an ask not raised (yet) here.
    /// With each, the key of the name's grant in force at the answer (for an answer without
    /// a digest).
    waiting: BTreeMap<EntryId, Vec<(MasterPos, AnswerBody, Option<PublicKey>)>>,
    problems: Vec<FoldProblem>,
}

impl Asks {
    pub fn problems(&self) -> Vec<FoldProblem> {
        self.problems.clone()
    }

    fn report(&mut self, acted: &Acted<'_>, kind: FoldProblemKind, detail: String) {
        if self.problems.len() < 200 {
            self.problems
                .push(FoldProblem::about(acted.entry, kind, detail));
        }
    }

    /// Every ask whose author holds its name, oldest first.
    pub fn iter<'a>(&'a self, identity: &'a Identity) -> impl Iterator<Item = &'a Ask> + 'a {
        self.asks
            .values()
            .filter(move |ask| identity.seat(&ask.by) == Seat::Seated(&ask.key))
    }

    /// The ask `id`, if its author holds its name.
    pub fn get(&self, id: &EntryId, identity: &Identity) -> Option<&Ask> {
        self.asks
            .get(id)
            .filter(|ask| identity.seat(&ask.by) == Seat::Seated(&ask.key))
    }

    pub fn feed(&mut self, acted: &Acted<'_>, identity: &Identity, changes: &mut Changes) {
        match acted.kind() {
            kinds::RAISE if !acted.by_master => self.feed_raise(acted, identity, changes),
            kinds::RAISE => self.report(
                acted,
                FoldProblemKind::MalformedBody,
                "the master does not ask itself".into(),
            ),
            kinds::ANSWER if acted.by_master => self.feed_answer(acted, identity, changes),
            kinds::ANSWER => self.report(
                acted,
                FoldProblemKind::NotSignedByMaster,
                "an answer to an ask signed by an agent: only the human answers".into(),
            ),
            _ => {}
        }
    }

    fn feed_raise(&mut self, acted: &Acted<'_>, identity: &Identity, changes: &mut Changes) {
        let body = match RaiseBody::deserialize(acted.body()) {
            Ok(body) => body,
            Err(err) => {
                return self.report(
                    acted,
                    FoldProblemKind::MalformedBody,
                    format!("bad ask.raise: {err}"),
                );
            }
        };
        if body.title.chars().count() > MAX_TITLE
            || body.recommendation.chars().count() > MAX_RECOMMENDATION
            || body.reasoning.chars().count() > MAX_REASONING
        {
            return self.report(
                acted,
                FoldProblemKind::MalformedBody,
                "an ask over its limits".into(),
            );
        }
        let mut ask = Ask {
            id: acted.id.clone(),
            by: acted.author.clone(),
            key: *acted.key,
            hash: *acted.entry.hash(),
            title: body.title,
            recommendation: body.recommendation,
            reasoning: body.reasoning,
            time: acted.time,
            state: AskState::Pending,
            note: None,
            answered_at: None,
            changed: changes.stamp(),
        };
        for (pos, answer, granted) in self.waiting.remove(&ask.id).unwrap_or_default() {
            let legacy = legacy_binds(identity, &ask, granted.as_ref());
            if binds(&ask, &answer, legacy) {
                apply(&mut ask, pos, &answer);
            }
        }
        self.asks.insert(ask.id.clone(), ask);
    }

    fn feed_answer(&mut self, acted: &Acted<'_>, identity: &Identity, changes: &mut Changes) {
        let body = match AnswerBody::deserialize(acted.body()) {
            Ok(body) => body,
            Err(err) => {
                return self.report(
                    acted,
                    FoldProblemKind::MalformedBody,
                    format!("bad ask.answer: {err}"),
                );
            }
        };
        let Ok(id) = body.ask.parse::<EntryId>() else {
            return self.report(
                acted,
                FoldProblemKind::MalformedBody,
                "ask.answer names no ask id".into(),
            );
        };
        let granted = match &id {
            EntryId::Agent { name, .. } => identity
                .grant_at(name, acted.pos)
                .map(|grant| grant.body.key),
            EntryId::Master { .. } => None,
        };
        match self.asks.get_mut(&id) {
            Some(ask) => {
                let legacy = legacy_binds(identity, ask, granted.as_ref());
                if binds(ask, &body, legacy) && apply(ask, acted.pos, &body) {
                    ask.changed = changes.stamp();
                }
            }
            None => self
                .waiting
                .entry(id)
                .or_default()
                .push((acted.pos, body, granted)),
        }
    }
}

/// Whether an answer without a digest binds `ask` (ADR 0016): the master's grant in force at
/// the answer (`granted`) named the ask's key, or the master never granted the name and the
/// ask's key is its only one.
fn legacy_binds(identity: &Identity, ask: &Ask, granted: Option<&PublicKey>) -> bool {
    match granted {
        Some(key) => *key == ask.key,
        None => identity.grant(&ask.by).is_none() && identity.holder(&ask.by) == Some(&ask.key),
    }
}

/// Whether `answer` answers `ask`: it names the ask's digest, or (written before answers
/// carried one) `legacy` says it binds the ask's key.
fn binds(ask: &Ask, answer: &AnswerBody, legacy: bool) -> bool {
    match answer.hash {
        Some(hash) => hash == ask.hash,
        None => legacy,
    }
}

/// Applies an answer when it is the latest in master order; says whether it changed the ask.
fn apply(ask: &mut Ask, pos: MasterPos, answer: &AnswerBody) -> bool {
    if ask.answered_at.is_some_and(|at| at > pos) {
        return false;
    }
    ask.answered_at = Some(pos);
    ask.state = match answer.verdict {
        Verdict::Approve => AskState::Approved,
        Verdict::Reject => AskState::Rejected,
        Verdict::SendBack => AskState::SentBack,
    };
    ask.note = answer.note.clone();
    true
}

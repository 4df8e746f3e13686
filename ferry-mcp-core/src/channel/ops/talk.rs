//! Talk: post to an agent, to the human or to all, and read only what is new.
//!
//! One function per operation, for the `ferry talk` commands and the `ferry_talk` tool alike.
//! A read returns the messages for the reader that its marker has not covered, oldest first,
//! and then moves its marker (a signed entry in its own log) past what it returned, unless it
//! only peeks, or the machine is paused (a marker is a write). It also says, for the reader's
//! latest sent messages, who has read them (read receipts).

use serde::Serialize;

use super::{OpsError, check_chars, check_not_empty};
use crate::channel::fold::levels::Operation;
use crate::channel::fold::state::since::Since;
use crate::channel::fold::state::talk::{
    MAX_INLINE_TEXT, MAX_TEXT, MarkBody, Message, PostBody, Recipient,
};
use crate::channel::fold::state::{EntryId, Sections};
use crate::channel::log::names::AgentName;
use crate::channel::session::{Actor, Session};
use crate::guard::{self, TextUse};
use crate::time::Timestamp;

/// Why a talk operation failed. One variant per cause; [`TalkError::code`] is stable.
#[derive(Debug, thiserror::Error)]
pub enum TalkError {
    /// What any operation can fail with (the session, the arguments' shape).
    #[error(transparent)]
    Ops(#[from] OpsError),
    #[error("{name} is not on the roster{}", suggest(.suggestions))]
    UnknownRecipient {
        name: String,
        suggestions: Vec<String>,
    },
    #[error("unknown message {0}")]
    UnknownMessage(String),
    #[error("a message to yourself goes nowhere")]
    ToYourself,
    #[error("message {0} names a bad blob")]
    BadBlob(String),
}

impl TalkError {
    /// A stable machine-readable code (tool results carry it).
    pub fn code(&self) -> &'static str {
        match self {
            Self::Ops(err) => err.code(),
            Self::UnknownRecipient { .. } => "unknown_recipient",
            Self::UnknownMessage(_) => "unknown_message",
            Self::ToYourself | Self::BadBlob(_) => "invalid",
        }
    }
}

/// `; did you mean a, b?`, or who may be written to.
fn suggest(names: &[String]) -> String {
    if names.is_empty() {
        "; post to a seated agent, `master` (the human) or `all`".to_owned()
    } else {
        format!("; did you mean {}?", names.join(", "))
    }
}

/// What to post.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PostRequest {
    /// An agent's name, `master` (the human) or `all`.
    pub to: String,
    pub text: String,
    /// The id of the message this answers.
    pub reply_to: Option<String>,
}

/// One message as a reader sees it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct MessageView {
    pub id: String,
    pub from: AgentName,
    pub to: String,
    /// The text, or its first 300 characters when it is longer (`long`).
    pub text: String,
    /// The whole text is longer: read `ferry://<project>/msg/<id>`.
    pub long: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reply_to: Option<String>,
    pub time: Timestamp,
    /// For a takeover's announcement whose takeover does not count: why (`lost the race to
    /// oscar`). Such a message says something that did not happen.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub void: Option<String>,
}

/// Who has read one of the reader's own messages.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Receipt {
    pub id: String,
    pub to: String,
    pub read: Vec<AgentName>,
    /// Who has not read it, by name: of a broadcast, the first [`UNREAD_NAMED`] in name order.
    pub unread: Vec<AgentName>,
    /// More have not read it than `unread` names (a broadcast to a large roster).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub more_unread: bool,
}

/// How many of those who have not read a broadcast its receipt names: a roster of thousands
/// is not listed (nor walked) on every read of its sender.
pub const UNREAD_NAMED: usize = 20;

/// What a read gives.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ReadResult {
    pub messages: Vec<MessageView>,
    /// More messages wait than were given.
    pub more: bool,
    /// Whether the reader's marker moved past what was given.
    pub marked: bool,
    /// Why it did not, when it did not (`peek`, `paused`, `read_only`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub unmarked: Option<&'static str>,
    /// A cursor past what was given.
    pub next: Since,
    /// The `since` given was from another machine or state: messages were read by the marker.
    pub reset: bool,
    /// The reader's latest sent messages and who has read them.
    pub sent: Vec<Receipt>,
}

/// How a read goes.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ReadRequest {
    /// Leave the marker where it was.
    pub peek: bool,
    /// Messages brought after this cursor, read or not (instead of the unread ones).
    pub since: Option<String>,
    /// At most this many messages.
    pub limit: usize,
    /// At most this many of the reader's sent messages with receipts.
    pub receipts: usize,
}

fn reader_of(session: &Session) -> Result<AgentName, TalkError> {
    match session.actor() {
        Actor::Agent(name) => Ok(name.clone()),
        Actor::Master => Ok(AgentName::master()),
        Actor::Observer => Err(OpsError::ReadOnly.into()),
    }
}

/// Refuses a recipient that is not on the roster, naming the ones it could have meant.
fn recipient(session: &Session, to: &str, me: &AgentName) -> Result<Recipient, TalkError> {
    let to = to.trim().to_ascii_lowercase();
    let unknown = |suggestions: Vec<String>| TalkError::UnknownRecipient {
        name: to.clone(),
        suggestions,
    };
    let Some(parsed) = Recipient::parse(&to) else {
        return Err(unknown(Vec::new()));
    };
    if let Recipient::One(name) = &parsed {
        if name == me {
            return Err(TalkError::ToYourself);
        }
        if !name.is_master() && session.identity().holder(name).is_none() {
            let mut names: Vec<String> = session
                .identity()
                .names()
                .filter(|(candidate, _)| session.identity().holder(candidate).is_some())
                .map(|(candidate, _)| candidate.to_string())
                .filter(|candidate| close(candidate, &to))
                .collect();
            names.truncate(5);
            return Err(unknown(names));
        }
    }
    Ok(parsed)
}

/// Whether `candidate` is a name `typed` could have meant: a prefix either way, or at most
/// two edits apart.
fn close(candidate: &str, typed: &str) -> bool {
    candidate.starts_with(typed) || typed.starts_with(candidate) || edits(candidate, typed) <= 2
}

fn edits(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut previous = row[0];
        row[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let substitute = previous + usize::from(ca != *cb);
            previous = row[j + 1];
            row[j + 1] = substitute.min(row[j] + 1).min(row[j + 1] + 1);
        }
    }
    row[b.len()]
}

/// Posts a message (Member and up, or the human). Returns its id.
pub fn post(
    session: &mut Session,
    request: &PostRequest,
    now: Timestamp,
) -> Result<String, TalkError> {
    post_announcing(session, request, None, now)
}

/// Posts a message that announces the takeover `take` (the primary's `taking over from X`).
pub(super) fn post_announcing(
    session: &mut Session,
    request: &PostRequest,
    take: Option<&EntryId>,
    now: Timestamp,
) -> Result<String, TalkError> {
    check_not_empty("the text", &request.text)?;
    check_chars("the text", &request.text, MAX_TEXT)?;
    session.guard(&request.text, TextUse::Post)?;
    session.refresh(now);
    let me = reader_of(session)?;
    let to = recipient(session, &request.to, &me)?;
    session.load(Sections::TALK, now);
    if let Some(reply_to) = &request.reply_to {
        let id: EntryId = reply_to.parse()?;
        if session.talk_message(&id)?.is_none() {
            return Err(TalkError::UnknownMessage(reply_to.clone()));
        }
    }
    // Check the level before a long text goes into a blob.
    session.authorize(Operation::Post, None, now)?;
    let (text, blob) = if request.text.chars().count() > MAX_INLINE_TEXT {
        let blob = session.channel().put_blob(request.text.as_bytes())?;
        let start: String = request.text.chars().take(MAX_INLINE_TEXT).collect();
        (start, Some(blob.to_hex()))
    } else {
        (request.text.clone(), None)
    };
    let body = PostBody {
        to: to.as_str().to_owned(),
        text,
        blob,
        reply_to: request.reply_to.clone(),
        takeover: take.map(ToString::to_string),
        seen: None,
    };
    let entry = session.append(Operation::Post, None, &body, now)?;
    Ok(session.id_of(&entry).to_string())
}

fn view(
    message: &Message,
    leadership: &crate::channel::fold::state::primary::Leadership,
) -> MessageView {
    let void = message.takeover.as_ref().and_then(|take| {
        leadership
            .view()
            .voided
            .iter()
            .find(|(id, _, _)| id == take)
            .map(|(_, _, reason)| reason.to_string())
    });
    MessageView {
        void,
        id: message.id.to_string(),
        from: message.from.clone(),
        to: message.to.as_str().to_owned(),
        // Cut where no secret-shaped span is split, so the mask the reader applies covers it;
        // the inline part of a long message was cut by its writer, maybe inside a token.
        text: if message.blob.is_some() {
            crate::guard::cut_start(&message.text, MAX_INLINE_TEXT)
        } else {
            crate::guard::cut(&message.text, MAX_INLINE_TEXT)
        }
        .to_owned(),
        long: message.blob.is_some() || message.text.chars().count() > MAX_INLINE_TEXT,
        reply_to: message.reply_to.clone(),
        time: message.time,
    }
}

/// Reads what is new for the acting agent (or the human): its unread messages, oldest first,
/// at most `request.limit` and as many as `fits` accepts (the caller's size budget); then moves
/// its marker past them unless it peeks or may not write.
pub fn read(
    session: &mut Session,
    request: &ReadRequest,
    fits: &mut dyn FnMut(&MessageView) -> bool,
    now: Timestamp,
) -> Result<ReadResult, TalkError> {
    session.authorize(Operation::Read, None, now)?;
    session.refresh(now);
    session.load(Sections::TALK, now);
    // The person at a keyboard that holds no key (an observer) peeks at the human's own
    // messages: reading needs no key, only a read marker (a signed write) does.
    let me = match session.actor() {
        Actor::Observer if request.peek => AgentName::master(),
        _ => reader_of(session)?,
    };
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
    // The read's messages among those talk paged out first (read from the kept state), then
    // those in memory; one more than the page, to tell whether there is more.
    let reading = (&me, after.unwrap_or(0), after.is_none());
    let older = session.paged_unread_for(reading, request.limit.saturating_add(1))?;
    let identity = session.identity();
    let talk = &session.state().talk()?;
    let mut given: Vec<(MessageView, AgentName, u64, u64)> = Vec::new();
    let mut more = false;
    let newer = talk.for_reader(&me, identity, after.unwrap_or(0), after.is_none());
    for message in older.iter().chain(newer) {
        if given.len() >= request.limit {
            more = true;
            break;
        }
        let shown = view(message, &session.state().leadership);
        // The first is given even when it does not fit: a reader always makes progress.
        if !fits(&shown) && !given.is_empty() {
            more = true;
            break;
        }
        given.push((shown, message.from.clone(), message.seq, message.stamp));
    }
    let next_counter = match given.last() {
        Some((_, _, _, stamp)) if more => *stamp,
        _ => session.state().last_change(),
    };
    let sent = receipts(session, &me, request.receipts)?;
    let unmarked = if given.is_empty() {
        None
    } else if request.peek {
        Some("peek")
    } else if session.home().pause_state()?.is_some() {
        Some("paused")
    } else {
        None
    };
    let mut marked = false;
    if !given.is_empty() && unmarked.is_none() {
        let mut upto: std::collections::BTreeMap<AgentName, u64> = Default::default();
        for (_, from, seq, _) in &given {
            let at = upto.entry(from.clone()).or_default();
            *at = (*at).max(*seq);
        }
        let body = MarkBody { upto, seen: None };
        // A marker is the reader's own record: any seated agent writes it.
        session.append(Operation::Read, None, &body, now)?;
        marked = true;
    }
    Ok(ReadResult {
        messages: given.into_iter().map(|(shown, ..)| shown).collect(),
        more,
        marked,
        unmarked,
        next: Since {
            generation,
            counter: next_counter,
        },
        reset,
        sent,
    })
}

/// The reader's latest sent messages with who has read them.
fn receipts(session: &Session, me: &AgentName, limit: usize) -> Result<Vec<Receipt>, TalkError> {
    let identity = session.identity();
    let talk = session.state().talk()?;
    Ok(talk
        .sent_by(me, identity)
        .take(limit)
        .map(|message| {
            let (read, unread, more_unread) = match &message.to {
                Recipient::One(name) => {
                    if talk.has_read(name, message, identity) {
                        (vec![name.clone()], Vec::new(), false)
                    } else {
                        (Vec::new(), vec![name.clone()], false)
                    }
                }
                Recipient::All => {
                    // Those who read it are those with a marker that says so; those who did
                    // not, the first seated names without one, walked no further than it
                    // takes to name them: what a read costs follows what it shows.
                    let counts = |name: &AgentName| name != me && identity.holder(name).is_some();
                    let read: Vec<AgentName> = talk
                        .readers_of(message, identity)
                        .filter(|name| counts(name))
                        .cloned()
                        .collect();
                    let mut unread = identity
                        .names()
                        .map(|(name, _)| name)
                        .filter(|name| counts(name) && read.binary_search(name).is_err());
                    let named: Vec<AgentName> =
                        unread.by_ref().take(UNREAD_NAMED).cloned().collect();
                    let more = unread.next().is_some();
                    (read, named, more)
                }
            };
            Receipt {
                id: message.id.to_string(),
                to: message.to.as_str().to_owned(),
                read,
                unread,
                more_unread,
            }
        })
        .collect())
}

/// The whole text of a message (its blob's, when the entry holds only its start): what
/// `ferry://<project>/msg/<id>` serves.
pub fn message_text(session: &mut Session, id: &str, now: Timestamp) -> Result<String, TalkError> {
    session.authorize(Operation::Read, None, now)?;
    session.refresh(now);
    session.load(Sections::TALK, now);
    let parsed: EntryId = id.parse()?;
    let message = session
        .talk_message(&parsed)?
        .ok_or_else(|| TalkError::UnknownMessage(id.to_owned()))?;
    let text = match &message.blob {
        None => message.text.clone(),
        Some(blob) => {
            let blob = blob
                .parse()
                .map_err(|_| TalkError::BadBlob(id.to_owned()))?;
            String::from_utf8_lossy(&session.channel().get_blob(&blob)?).into_owned()
        }
    };
    Ok(format!(
        "From {} to {}:\n\n{}",
        message.from,
        message.to.as_str(),
        guard::redact(&text).text
    ))
}

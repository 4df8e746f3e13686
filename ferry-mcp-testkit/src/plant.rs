//! Entries written as another client (or a folder writer) would write them: signed and
//! well-formed, but never shown to the guard nor to an operation's checks. The tests that
//! check every read masks a secret plant it with these, because the operations now refuse it
//! on the way in; the attack tests plant what a seated agent signing whatever it likes with
//! its own key (or a former master's key) would write.

use std::path::Path;

use serde_json::Value;

use ferry_mcp_core::channel::fold::identity::{GrantBody, Identity};
use ferry_mcp_core::channel::fold::levels::Level;
use ferry_mcp_core::channel::fold::levels::Operation;
use ferry_mcp_core::channel::fold::state::orders::{Hints, IssueBody, MAX_INLINE_BODY};
use ferry_mcp_core::channel::fold::state::talk::{MAX_INLINE_TEXT, PostBody};
use ferry_mcp_core::channel::log::entry::VerifiedEntry;
use ferry_mcp_core::channel::log::keys::{PublicKey, SecretKey};
use ferry_mcp_core::channel::log::names::AgentName;
use ferry_mcp_core::channel::log::store::Channel;
use ferry_mcp_core::channel::session::Session;
use ferry_mcp_core::time::Timestamp;

/// Appends an entry of `kind` with `body`, dated `at`, to the log of `author` signed by `key`
/// in the channel at `channel_dir`, past every check an operation makes (levels, the folds'
/// judgement, the guard): its chain continues from the log's verified tip, as any client's
/// would. Returns the entry.
pub fn raw(
    channel_dir: &Path,
    author: &AgentName,
    key: &SecretKey,
    kind: &str,
    body: Value,
    at: Timestamp,
) -> VerifiedEntry {
    let channel = Channel::open(channel_dir).unwrap();
    let mut writer = channel.writer(author, key).unwrap();
    writer.append(kind, body, at).unwrap()
}

/// The body of a grant of `level` to `agent`'s roster `key`: unscoped, never expiring and
/// taking nothing away (what most planted grants say).
pub fn grant(agent: AgentName, key: PublicKey, level: Level) -> Value {
    Identity::grant_body(&GrantBody {
        agent,
        key,
        level,
        scopes: Vec::new(),
        expires: None,
        after_seq: None,
    })
}

/// A `talk.post` of `text` to `to` by the session's actor; returns the message's id.
pub fn post(session: &mut Session, to: &str, text: &str, now: Timestamp) -> String {
    let (text, blob) = if text.chars().count() > MAX_INLINE_TEXT {
        let blob = session.channel().put_blob(text.as_bytes()).unwrap();
        (
            text.chars().take(MAX_INLINE_TEXT).collect(),
            Some(blob.to_hex()),
        )
    } else {
        (text.to_owned(), None)
    };
    let body = PostBody {
        to: to.to_owned(),
        text,
        blob,
        reply_to: None,
        takeover: None,
        seen: None,
    };
    let entry = session.append(Operation::Post, None, &body, now).unwrap();
    session.id_of(&entry).to_string()
}

/// An `order.issue` with `title` and `body` (its submissions reviewed when `review`) by the
/// session's actor; returns the order's id.
pub fn order(
    session: &mut Session,
    title: &str,
    body: Option<&str>,
    review: bool,
    now: Timestamp,
) -> String {
    let mut issue = IssueBody {
        title: title.to_owned(),
        body: None,
        blob: None,
        to: None,
        review,
        heavy: false,
        hints: Hints::default(),
        scope: None,
        seen: None,
    };
    if let Some(text) = body {
        if text.chars().count() > MAX_INLINE_BODY {
            issue.blob = Some(
                session
                    .channel()
                    .put_blob(text.as_bytes())
                    .unwrap()
                    .to_hex(),
            );
        } else {
            issue.body = Some(text.to_owned());
        }
    }
    let entry = session.append(Operation::Issue, None, &issue, now).unwrap();
    session.id_of(&entry).to_string()
}

/// The body of a `note`: a kind no fold reads, for tests of the log itself.
#[derive(Debug, serde::Serialize)]
pub struct Note {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub n: Option<u64>,
}

impl ferry_mcp_core::channel::fold::body::EntryBody for Note {
    const KIND: &'static str = "note";
}

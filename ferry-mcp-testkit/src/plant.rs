//! Entries written as another client (or a folder writer) would write them: signed and
//! well-formed, but never shown to the guard. The tests that check every read masks a secret
//! plant it with these, because the operations now refuse it on the way in.

use ferry_mcp_core::channel::fold::levels::Operation;
use ferry_mcp_core::channel::fold::state::orders::{Hints, IssueBody, MAX_INLINE_BODY};
use ferry_mcp_core::channel::fold::state::talk::{MAX_INLINE_TEXT, PostBody};
use ferry_mcp_core::channel::session::Session;
use ferry_mcp_core::time::Timestamp;

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

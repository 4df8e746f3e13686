//! The end of what each author wrote last, whatever kind of entry it was: what the guard
//! reads across the seam with that author's next text (ADR 0015).
//!
//! A token cut in two (half in a progress line, half in the next post) passes the guard one
//! half at a time. To refuse it, the write of the second half is checked joined with the end
//! of its author's previous text. Finding that text in the folds that keep it (talk, an
//! order's record) would page the order board in on every post, which a post never does, so
//! this fold keeps, in the core, only what the seam check reads: per author, the bounded end
//! ([`guard::seam_tail`]) of the last text field of its latest entry that has one.
//!
//! Latest is by the entry's own time, then its seq: a pure function of the entries, whatever
//! order the logs are read in.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::Acted;
use super::{asks, orders, primary, releases, talk};
use crate::channel::log::names::AgentName;
use crate::guard;
use crate::time::Timestamp;

/// One author's last text end, and which entry it came from.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
struct Tail {
    time: Timestamp,
    seq: u64,
    /// At most [`guard::SEAM_TAIL_BYTES`]; empty when the entry's text ends in a blob the fold
    /// does not read (a long message), so nothing is joined across it.
    text: String,
}

/// Per author, the end of its last text. See the module docs.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Tails {
    by_author: BTreeMap<AgentName, Tail>,
}

/// The free-text fields of an entry of `kind`, in the order its operation judges them (the
/// last one is what its author wrote last); ids, refs, hashes and keys are not text.
fn text_fields(kind: &str) -> &'static [&'static str] {
    match kind {
        talk::kinds::POST => &["text"],
        orders::kinds::ISSUE => &["title", "body"],
        orders::kinds::PROGRESS | orders::kinds::RELEASE | orders::kinds::CANCEL => &["text"],
        orders::kinds::SUBMIT | orders::kinds::HANDIN => &["summary"],
        orders::kinds::REVIEW => &["notes"],
        asks::kinds::RAISE => &["title", "recommendation", "reasoning"],
        asks::kinds::ANSWER => &["note"],
        primary::kinds::BRIEF_SET => &["objective", "constraints"],
        primary::kinds::BRIEF_DECIDE => &["line"],
        releases::kinds::APPROVE => &["notes"],
        _ => &[],
    }
}

/// The last text an entry's body holds, if any: `None` for an entry with no text (a claim,
/// presence), `Some("")` for a text whose end is in a blob.
fn last_text<'a>(kind: &str, body: &'a Value) -> Option<&'a str> {
    let mut last = None;
    for field in text_fields(kind) {
        match body.get(field) {
            Some(Value::String(text)) if !text.trim().is_empty() => last = Some(text.as_str()),
            Some(Value::Array(lines)) => {
                if let Some(text) = lines
                    .iter()
                    .rev()
                    .filter_map(Value::as_str)
                    .find(|line| !line.trim().is_empty())
                {
                    last = Some(text);
                }
            }
            _ => {}
        }
    }
    // The inline part of a long text is its start: its end, in the blob, is not read here.
    if last.is_some() && body.get("blob").is_some_and(|blob| !blob.is_null()) {
        return Some("");
    }
    last
}

impl Tails {
    /// Folds one entry that counts as its author's (an admitted agent's, or the master's).
    pub(super) fn feed(&mut self, acted: &Acted<'_>) {
        let Some(text) = last_text(acted.kind(), acted.body()) else {
            return;
        };
        let (time, seq) = (acted.entry.time(), acted.entry.seq());
        let tail = self.by_author.entry(acted.author.clone()).or_default();
        if (time, seq) < (tail.time, tail.seq) {
            return;
        }
        *tail = Tail {
            time,
            seq,
            text: guard::seam_tail(text).to_owned(),
        };
    }

    /// The end of what `author` wrote last, for the guard's seam check; `None` if it wrote no
    /// text this machine folded.
    pub fn of(&self, author: &AgentName) -> Option<&str> {
        self.by_author
            .get(author)
            .map(|tail| tail.text.as_str())
            .filter(|text| !text.is_empty())
    }
}

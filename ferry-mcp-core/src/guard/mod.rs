//! The guard: one pure function that every text an agent sends passes through.
//!
//! The channel is append-only, signed and copied to every machine of the fleet by Syncthing or
//! git. A secret written into it cannot be taken back: it is on every disk, in every backup,
//! and no later entry can remove it. So the guard refuses, before anything is written, any
//! text shaped like a secret ([`check`]), and masks secret-shaped spans in anything read back
//! ([`redact`]): an order body the human wrote, an entry another client wrote without a guard.
//!
//! Posts and summaries are also refused when they look like code or a diff. The channel
//! carries coordination, not work: results are a git ref and a short note, and the work
//! stays in the repository, where review, history and size limits apply.
//!
//! The guard judges shapes, not meaning: the right prefixes, lengths, alphabets and, where a
//! format has one, its checksum (a GitHub token's CRC32, an age key's bech32). A leaked
//! secret costs far more than a refused message, but the guard must still let ordinary talk
//! through: commit ids, SHA-256 pins, UUIDs, public keys in hex, placeholders and prose about
//! tokens never trigger it (the corpus under `tests/guard_corpus` holds it to that).
//!
//! A secret is looked for in the text as written and as it would read undisguised
//! (`disguise`: decoded, normalised, letters joined), and across what its author sent just
//! before ([`check_with_previous`]). A cut of a text read back never shows part of one
//! ([`cut`]).
//!
//! Like the rest of the core it does no IO and reads no clock; its patterns are compiled
//! once, on first use.

mod checksum;
mod code;
mod disguise;
mod secrets;
mod services;

use std::borrow::Cow;

pub use code::CodeKind;
pub use secrets::{SecretKind, SecretMatch, find_secrets};

/// Where a text is going; code/diff detection applies only to Post and Summary.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TextUse {
    /// A message posted to the channel or to an agent.
    Post,
    /// The summary an agent hands in with its work.
    Summary,
    /// A one-line progress note on an order.
    Progress,
    /// A reviewer's note on submitted work.
    ReviewNote,
    /// The title of a question for the human.
    AskTitle,
    /// The option an agent recommends in a question for the human.
    AskRecommendation,
    /// The reasoning behind a question for the human.
    AskReasoning,
    /// The body of an order an agent writes.
    OrderBody,
}

impl TextUse {
    /// Whether text for this use must not be code or a diff.
    const fn refuses_code(self) -> bool {
        matches!(self, Self::Post | Self::Summary)
    }
}

/// Why the guard refused a text. The messages name the shape, never the text.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum GuardRefusal {
    /// The text holds something shaped like a secret.
    #[error(
        "text looks like {}: send secrets with `ferry channel secret`, never in a message",
        .kind.described()
    )]
    Secret {
        /// The kind of the first secret in the text.
        kind: SecretKind,
    },
    /// A post or summary looks like code or a diff.
    #[error("text looks like {}: hand in a git ref, not the work", .kind.described())]
    Code {
        /// The shape the text has.
        kind: CodeKind,
    },
}

impl GuardRefusal {
    /// A stable code for the refusal, for tool results and logs: `"secret"` or `"code"`.
    pub const fn code(&self) -> &'static str {
        match self {
            Self::Secret { .. } => "secret",
            Self::Code { .. } => "code",
        }
    }
}

/// Refuses text shaped like a secret (any use) or like code/a diff (Post, Summary). Nothing is written when this errs.
///
/// Secrets are looked for first: a diff that also holds a token is refused as a secret, so
/// the agent learns the more important reason.
pub fn check(text: &str, used_as: TextUse) -> Result<(), GuardRefusal> {
    if let Some(kind) = secrets::first_secret(text) {
        return Err(GuardRefusal::Secret { kind });
    }
    if used_as.refuses_code()
        && let Some(kind) = code::detect(text)
    {
        return Err(GuardRefusal::Code { kind });
    }
    Ok(())
}

/// Refuses text shaped like a secret, whatever its use: what the human writes is judged by
/// this (the human may paste code into an order or a post; never a secret).
pub fn check_secrets(text: &str) -> Result<(), GuardRefusal> {
    match secrets::first_secret(text) {
        Some(kind) => Err(GuardRefusal::Secret { kind }),
        None => Ok(()),
    }
}

/// Refuses a name (an agent's, a project's, a secret's) shaped like a secret.
///
/// Names are case-folded to lower case before they are stored, and a key id of upper-case
/// letters and digits (an AWS access key id) folded is still that id: the name is judged as
/// given and upper-cased.
pub fn check_name(name: &str) -> Result<(), GuardRefusal> {
    check_secrets(name)?;
    check_secrets(&name.to_ascii_uppercase())
}

/// [`check`], and refuses a secret split between this text and what the same author sent
/// just before (`previous`, oldest first: their last posts, a progress line).
///
/// Each text alone may look harmless (`ghp_M7H4jxUDDWHP` then `4kZ6A4dxlQYs…`); read as one,
/// they are a token. Only a secret that runs across the seam counts here: one wholly inside
/// an earlier text was that text's to refuse.
pub fn check_with_previous(
    text: &str,
    used_as: TextUse,
    previous: &[&str],
) -> Result<(), GuardRefusal> {
    check(text, used_as)?;
    check_seam(text, previous)
}

/// The part of [`check_with_previous`] that reads across the seam only: for a caller that
/// judged `text` alone already.
pub fn check_seam(text: &str, previous: &[&str]) -> Result<(), GuardRefusal> {
    if previous.is_empty() {
        return Ok(());
    }
    let mut before = String::new();
    for earlier in previous {
        before.push_str(earlier.trim());
    }
    let tail_from = floor_boundary(&before, before.len().saturating_sub(SEAM_BYTES));
    let head_to = floor_boundary(text.trim_start(), SEAM_BYTES);
    let seam = before.len() - tail_from;
    let joined = format!("{}{}", &before[tail_from..], &text.trim_start()[..head_to]);
    match find_secrets(&joined).into_iter().find(|m| {
        m.range.start < seam
            && m.range.end > seam
            && (!m.kind.named_by_its_context() || continues_a_value(&joined[seam..m.range.end]))
    }) {
        Some(m) => Err(GuardRefusal::Secret { kind: m.kind }),
        None => Ok(()),
    }
}

/// Whether the part of a seam-crossing find after the seam goes on with a value drawn at
/// random: its first word has eight characters or more, with a letter and a digit.
///
/// A format with its own prefix, length and alphabet crossing the seam is a token cut in two.
/// A value that counts only by what names it (`TOKEN=…`, `password: …`, a PEM block) runs on
/// to the first blank, so an earlier text that ends in a harmless assignment would run into
/// the first word of the next one (`token: process.env.FERRY_TOKEN` then `Merged`): that word
/// must itself look like the rest of a secret.
fn continues_a_value(after_seam: &str) -> bool {
    let word = after_seam.split_whitespace().next().unwrap_or("");
    word.len() >= 8
        && word.bytes().any(|b| b.is_ascii_digit())
        && word.bytes().any(|b| b.is_ascii_alphabetic())
}

/// How much of each side of a seam is read together: longer than any token the guard knows
/// but a PEM key, which no one splits by hand.
const SEAM_BYTES: usize = 1024;

/// How much of the end of an author's last text the channel's folds keep for the seam check
/// ([`seam_tail`]): more than the longest token the guard knows (a Grafana key's 400
/// characters) but a PEM key, and the key name or service name before it. Kept per author on
/// every machine, so no more than the check needs.
pub const SEAM_TAIL_BYTES: usize = 512;

/// The end of `text` that a later [`check_seam`] needs of it: its last [`SEAM_TAIL_BYTES`]
/// (on a character boundary), trailing blanks left out as the check leaves them out.
pub fn seam_tail(text: &str) -> &str {
    let text = text.trim_end();
    let mut from = text.len().saturating_sub(SEAM_TAIL_BYTES);
    while !text.is_char_boundary(from) {
        from += 1;
    }
    &text[from..]
}

fn floor_boundary(text: &str, mut at: usize) -> usize {
    at = at.min(text.len());
    while !text.is_char_boundary(at) {
        at -= 1;
    }
    at
}

/// The longest start of `text` of at most `max_chars` characters that ends outside every
/// secret-shaped span and every `[redacted: …]` mark: a cut never shows part of a token
/// (the part left could be finished from its checksum), nor half of a mark.
pub fn cut(text: &str, max_chars: usize) -> &str {
    let Some((mut end, _)) = text.char_indices().nth(max_chars) else {
        return text;
    };
    for secret in find_secrets(text) {
        if secret.range.start < end && secret.range.end > end {
            end = secret.range.start;
        }
    }
    if let Some(open) = text[..end].rfind("[redacted: ")
        && !text[open..end].contains(']')
    {
        end = open;
    }
    &text[..end]
}

/// [`cut`] of a text that is itself the start of a longer one (a long message's or body's
/// inline part, cut where its writer cut it): its last word, if it is as long as the start
/// of a token worth finishing (eight characters), may be a token that ran on past it,
/// unrecognisable cut, so it is left out too.
pub fn cut_start(text: &str, max_chars: usize) -> &str {
    let shown = cut(text, max_chars);
    let kept = shown.trim_end_matches(|c: char| !c.is_whitespace());
    if shown[kept.len()..].chars().count() >= 8 {
        kept
    } else {
        shown
    }
}

/// A text with its secret-shaped spans masked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Redacted<'a> {
    /// The text, borrowed when nothing was masked.
    pub text: Cow<'a, str>,
    /// Whether anything was masked (shown to agents as `redacted: true`).
    pub redacted: bool,
}

/// For anything read back (an order body the human wrote, an entry from another client): secrets replaced by `[redacted: <kind>]`.
pub fn redact(text: &str) -> Redacted<'_> {
    let found = find_secrets(text);
    if found.is_empty() {
        return Redacted {
            text: Cow::Borrowed(text),
            redacted: false,
        };
    }
    let mut out = String::with_capacity(text.len());
    let mut at = 0;
    for SecretMatch { kind, range } in found {
        out.push_str(&text[at..range.start]);
        out.push_str("[redacted: ");
        out.push_str(kind.as_str());
        out.push(']');
        at = range.end;
    }
    out.push_str(&text[at..]);
    Redacted {
        text: Cow::Owned(out),
        redacted: true,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_use_but_post_and_summary_allows_code() {
        let all = [
            TextUse::Post,
            TextUse::Summary,
            TextUse::Progress,
            TextUse::ReviewNote,
            TextUse::AskTitle,
            TextUse::AskRecommendation,
            TextUse::AskReasoning,
            TextUse::OrderBody,
        ];
        let refusing: Vec<_> = all.into_iter().filter(|u| u.refuses_code()).collect();
        assert_eq!(refusing, [TextUse::Post, TextUse::Summary]);
    }
}

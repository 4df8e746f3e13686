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
//! Like the rest of the core it does no IO and reads no clock; its patterns are compiled
//! once, on first use.

mod checksum;
mod code;
mod secrets;

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

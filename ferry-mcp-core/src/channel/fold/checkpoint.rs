//! Master-signed checkpoints (ADR 0023): what lets a new machine skip the signature checks of
//! the history a master already verified, and nothing else.
//!
//! A checkpoint is an entry of the master's log (`channel.checkpoint`) naming, for agents'
//! logs, the last entry the master's machine had verified there: its seq and its hash. The
//! hash chain (every entry names its predecessor's SHA-256 as `prev`) pins every byte of each
//! entry up to that tip, so a machine that finds the chain intact up to the named hash holds
//! exactly the entries the master's machine verified, and need not check their signatures
//! again. It still folds every entry itself: a checkpoint vouches for bytes, never for a
//! folded state, so it cannot leave out a demotion or any other entry's effect.
//!
//! This module is the pure half: the body's type, which checkpoint among those read counts
//! (by the fold's master rules, a handover included) and the tips it vouches for. It does no
//! IO; the reader checks the chains and the session falls back to checking every signature
//! when one does not hold.

use serde::{Deserialize, Serialize};

use crate::channel::fold::identity::{Identity, MasterEntry, MasterPos};
use crate::channel::log::entry::VerifiedEntry;
use crate::channel::log::reader::LogId;
// A log's tip is the log layer's own notion (the reader hands them out and takes them).
pub use crate::channel::log::reader::{Tip, Vouches};

/// The entry kind of a checkpoint, in the master's log.
pub const KIND: &str = "channel.checkpoint";

/// The body's version this build writes and reads; another is ignored (reported).
pub const VERSION: u32 = 1;

/// The body of `channel.checkpoint`: the tip of every agent's log the master's machine had
/// verified when it wrote it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CheckpointBody {
    /// The body's format ([`VERSION`]).
    pub v: u32,
    /// One tip per log, sorted by log (author, then key).
    pub tips: Vec<Tip>,
}

/// Why a counted checkpoint's body vouches for nothing.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CheckpointError {
    #[error("the checkpoint's body does not read: {0}")]
    Body(String),
    #[error("the checkpoint has version {0}; this build reads version {VERSION}")]
    Version(u32),
    #[error("the checkpoint names log {0} more than once")]
    LogTwice(String),
    #[error("the checkpoint names entry 0 of log {0}")]
    NoEntry(String),
    #[error(
        "the checkpoint names a log of the master's ({0}); the master's logs are always verified"
    )]
    MasterLog(String),
}

impl CheckpointBody {
    /// A checkpoint of these tips (sorted here), of agents' logs only.
    pub fn of_tips(tips: impl IntoIterator<Item = Tip>) -> Self {
        let mut tips: Vec<Tip> = tips
            .into_iter()
            .filter(|tip| !tip.author.is_master() && tip.seq > 0)
            .collect();
        tips.sort_by(|a, b| (&a.author, &a.key).cmp(&(&b.author, &b.key)));
        Self { v: VERSION, tips }
    }

    /// The tips as the reader takes them; a body that names a log twice, entry 0 or a
    /// master's log vouches for nothing (a master's tool never writes one).
    pub fn vouches(&self) -> Result<Vouches, CheckpointError> {
        if self.v != VERSION {
            return Err(CheckpointError::Version(self.v));
        }
        let mut vouches = Vouches::new();
        for tip in &self.tips {
            let named = || format!("{}/{}", tip.author, tip.key);
            if tip.author.is_master() {
                return Err(CheckpointError::MasterLog(named()));
            }
            if tip.seq == 0 {
                return Err(CheckpointError::NoEntry(named()));
            }
            let id = LogId {
                author: tip.author.clone(),
                key: tip.key,
            };
            if vouches.insert(id, (tip.seq, tip.hash)).is_some() {
                return Err(CheckpointError::LogTwice(named()));
            }
        }
        Ok(vouches)
    }
}

/// Whether `entry` is a checkpoint candidate at all: of the checkpoint kind, in a master log.
/// Whether it counts is for [`latest_counted`] to say, once the master's logs are folded.
pub fn is_candidate(entry: &VerifiedEntry) -> bool {
    entry.author().is_master() && entry.kind() == KIND
}

/// The checkpoint a new machine starts from: of `candidates` (checkpoint entries read from
/// the master's logs), the latest in master order that counts by the fold's master rules, a
/// handover included. An entry signed by any other key, or by a former master after its
/// handover, counts for nothing.
pub fn latest_counted<'a>(
    identity: &Identity,
    candidates: &'a [VerifiedEntry],
) -> Option<(&'a VerifiedEntry, MasterPos)> {
    candidates
        .iter()
        .filter(|entry| is_candidate(entry))
        .filter_map(|entry| match identity.master_entry(entry) {
            MasterEntry::Counts(pos) => Some((entry, pos)),
            MasterEntry::DoesNotCount => None,
        })
        .max_by_key(|(_, pos)| *pos)
}

/// The body of a counted checkpoint entry.
pub fn body_of(entry: &VerifiedEntry) -> Result<CheckpointBody, CheckpointError> {
    serde_json::from_value(entry.body().clone()).map_err(|e| CheckpointError::Body(e.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::channel::log::entry::EntryHash;
    use crate::channel::log::keys::SecretKey;
    use crate::channel::log::names::AgentName;

    fn tip(author: &str, seed: u8, seq: u64) -> Tip {
        Tip {
            author: AgentName::parse_any(author).unwrap(),
            key: SecretKey::from_bytes(&[seed; 32]).public_key(),
            seq,
            hash: EntryHash::of(&[seed]),
        }
    }

    #[test]
    fn a_checkpoint_vouches_for_agents_logs_only_sorted_and_drops_empty_ones() {
        let body = CheckpointBody::of_tips([
            tip("tom", 2, 5),
            tip("master", 1, 9),
            tip("ada", 3, 0),
            tip("ada", 4, 2),
        ]);
        let authors: Vec<&str> = body.tips.iter().map(|t| t.author.as_str()).collect();
        assert_eq!(authors, ["ada", "tom"]);
        assert_eq!(body.vouches().unwrap().len(), 2);
    }

    #[test]
    fn a_body_naming_a_log_twice_entry_zero_a_master_log_or_another_version_vouches_for_nothing() {
        let twice = CheckpointBody {
            v: VERSION,
            tips: vec![tip("ada", 3, 1), tip("ada", 3, 2)],
        };
        assert!(matches!(twice.vouches(), Err(CheckpointError::LogTwice(_))));
        let zero = CheckpointBody {
            v: VERSION,
            tips: vec![tip("ada", 3, 0)],
        };
        assert!(matches!(zero.vouches(), Err(CheckpointError::NoEntry(_))));
        let master = CheckpointBody {
            v: VERSION,
            tips: vec![tip("master", 3, 4)],
        };
        assert!(matches!(
            master.vouches(),
            Err(CheckpointError::MasterLog(_))
        ));
        let newer = CheckpointBody {
            v: VERSION + 1,
            tips: Vec::new(),
        };
        assert_eq!(newer.vouches(), Err(CheckpointError::Version(VERSION + 1)));
    }
}

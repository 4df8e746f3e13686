//! The machine's verified state of one project (ADR 0004): how far every log was verified,
//! and the folded state, kept in the state folder between processes.
//!
//! It is an optimisation and a witness, never an authority: deleting it costs only time (and
//! the witness); a corrupt, foreign (another channel's genesis) or stale (another format) file
//! is reported and rebuilt from the channel, never trusted.
//!
//! File: the magic line `ferry-verified\n`, the format version (4 bytes, little endian), the
//! postcard encoding of [`Kept`], and the SHA-256 of everything before it.

use std::path::Path;

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use super::reader::{IntegrityProblem, ReaderState};
use super::state::ChannelState;

const MAGIC: &[u8] = b"ferry-verified\n";
/// Bumped whenever what is kept changes shape; an older file is rebuilt.
pub const FORMAT: u32 = 1;

/// What is kept of a project between processes.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Kept {
    /// SHA-256 of the channel's `genesis.json`: the channel this state belongs to.
    pub genesis: [u8; 32],
    /// A random tag of this state; `since` cursors name it (ADR 0007).
    pub generation: u64,
    pub reader: ReaderState,
    pub state: ChannelState,
    /// Integrity problems of lines and logs found so far (listing problems are found again).
    pub problems: Vec<IntegrityProblem>,
    pub dropped_problems: u64,
}

/// Why a kept state was not used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Rejected {
    #[error("the verified state is corrupt ({0}); rebuilt from the channel")]
    Corrupt(String),
    #[error("the verified state belongs to another channel; rebuilt from this one")]
    Foreign,
    #[error("the verified state has format {0}, this build keeps {FORMAT}; rebuilt")]
    Stale(u32),
    #[error("the verified state could not be read ({0}); rebuilt from the channel")]
    Unreadable(String),
}

/// What loading found.
#[derive(Debug)]
pub enum Loaded {
    /// No kept state: the first open on this machine (or it was deleted).
    Missing,
    Kept(Box<Kept>),
    Rejected(Rejected),
}

/// Reads the kept state at `path` for the channel whose genesis digest is `genesis`.
pub fn load(path: &Path, genesis: &[u8; 32]) -> Loaded {
    let bytes = match std::fs::read(path) {
        Ok(bytes) => bytes,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Loaded::Missing,
        Err(e) => return Loaded::Rejected(Rejected::Unreadable(e.to_string())),
    };
    match decode(&bytes) {
        Ok(kept) if kept.genesis != *genesis => Loaded::Rejected(Rejected::Foreign),
        Ok(kept) => Loaded::Kept(Box::new(kept)),
        Err(rejected) => Loaded::Rejected(rejected),
    }
}

fn decode(bytes: &[u8]) -> Result<Kept, Rejected> {
    let corrupt = |why: &str| Rejected::Corrupt(why.to_owned());
    if bytes.len() < MAGIC.len() + 4 + 32 || !bytes.starts_with(MAGIC) {
        return Err(corrupt("not a verified-state file"));
    }
    let (body, digest) = bytes.split_at(bytes.len() - 32);
    if Sha256::digest(body).as_slice() != digest {
        return Err(corrupt("checksum mismatch"));
    }
    let format = u32::from_le_bytes(
        body[MAGIC.len()..MAGIC.len() + 4]
            .try_into()
            .expect("four bytes"),
    );
    if format != FORMAT {
        return Err(Rejected::Stale(format));
    }
    // The state names a few keys very many times: each is decompressed once.
    super::keys::with_key_memo(|| postcard::from_bytes(&body[MAGIC.len() + 4..]))
        .map_err(|e| Rejected::Corrupt(e.to_string()))
}

/// The bytes of a kept state.
pub fn encode(kept: &Kept) -> Vec<u8> {
    let mut bytes = MAGIC.to_vec();
    bytes.extend_from_slice(&FORMAT.to_le_bytes());
    let body = postcard::to_stdvec(kept).expect("the verified state always encodes");
    bytes.extend_from_slice(&body);
    let digest = Sha256::digest(&bytes);
    bytes.extend_from_slice(&digest);
    bytes
}

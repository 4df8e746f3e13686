//! The tie-break that orders concurrent events of one chain (ADR 0006, ADR 0017): an order's
//! claims, the primary's takes.
//!
//! Why its own module: the input is the security of the race. It hashes the event both sides
//! follow (the chain's tip they name as `after`) with the racer's roster key, so the order
//! changes with every event decided: a key is fixed when its agent is seated, and the events
//! it will race on do not exist yet, so no key can be ground to win races in general. (The
//! first version hashed the thing's id, which for the primary was the constant `"primary"`: a
//! key in the best 1/65,536, found offline in seconds, won every concurrent takeover.)

use sha2::{Digest, Sha256};

use crate::channel::keys::PublicKey;

/// `SHA-256("ferry-race-v2\n" || after || key)`, where `after` is the hash of the event
/// both sides follow (for the primary's first race, the genesis master key): lower wins.
pub fn tiebreak(after: &[u8; 32], key: &PublicKey) -> [u8; 32] {
    let mut hasher = Sha256::new();
    hasher.update(b"ferry-race-v2\n");
    hasher.update(after);
    hasher.update(key.as_bytes());
    hasher.finalize().into()
}

//! The part of the race rule every chain shares (ADR 0016, ADR 0017): which concurrent rivals
//! lose for being dated later than the race window after the earliest, and the tie-break that
//! orders the rest (an order's claims, the primary's takes, agents' secret shares).
//!
//! Why its own module: the order board and the primary resolve their chains separately, and
//! the rule that bounds what an entry may claim not to have seen must be the same for both.
//! The tie-break's input is the security of the race: it hashes the event both sides follow
//! (the chain's tip they name as `after`) with the racer's roster key, so the order changes
//! with every event decided. A key is fixed when its agent is seated, and the events it will
//! race on do not exist yet, so no key can be ground to win races in general. (The first
//! version hashed the thing's id, which for the primary was the constant `"primary"`: a key in
//! the best 1/65,536, found offline in seconds, won every concurrent takeover.)

use sha2::{Digest, Sha256};

use crate::channel::log::keys::PublicKey;
use crate::time::Timestamp;

/// How far apart two rivals' dates may be and still race by the tie-break (ADR 0016, rule 4).
pub const RACE_WINDOW_MS: u64 = 60_000;

/// The date an event races with (ADR 0016, rule 2): never before the event it names.
pub fn race_date(own: Timestamp, parent: Timestamp) -> Timestamp {
    own.max(parent)
}

/// `SHA-256("ferry-race-v2\n" || after || key)`, where `after` is the hash of the event
/// both sides follow (for the primary's first race, the genesis master key): lower wins.
pub fn tiebreak(after: &[u8; 32], key: &PublicKey) -> [u8; 32] {
    let mut hasher = Sha256::new();
    hasher.update(b"ferry-race-v2\n");
    hasher.update(after);
    hasher.update(key.as_bytes());
    hasher.finalize().into()
}

/// For each rival's race date, whether it loses for being more than [`RACE_WINDOW_MS`] after
/// the earliest rival.
pub fn late(dates: &[Timestamp]) -> Vec<bool> {
    let Some(earliest) = dates.iter().min().copied() else {
        return Vec::new();
    };
    let limit = earliest.as_millis().saturating_add(RACE_WINDOW_MS);
    dates.iter().map(|date| date.as_millis() > limit).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_rivals_beyond_the_window_after_the_earliest_are_late() {
        let at = Timestamp::from_millis;
        let dates = [
            at(100_000),
            at(100_000 + RACE_WINDOW_MS),
            at(100_001 + RACE_WINDOW_MS),
        ];
        assert_eq!(late(&dates), vec![false, false, true]);
        assert!(late(&[]).is_empty());
        assert_eq!(race_date(at(5), at(9)), at(9));
    }
}

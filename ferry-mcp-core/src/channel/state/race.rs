//! The part of the race rule every chain shares (ADR 0016): which concurrent rivals lose for
//! being dated later than the race window after the earliest.
//!
//! Why its own module: the order board and the primary resolve their chains separately, and
//! the rule that bounds what an entry may claim not to have seen must be the same for both.

use crate::time::Timestamp;

/// How far apart two rivals' dates may be and still race by the tie-break (ADR 0016, rule 4).
pub const RACE_WINDOW_MS: u64 = 60_000;

/// The date an event races with (ADR 0016, rule 2): never before the event it names.
pub fn race_date(own: Timestamp, parent: Timestamp) -> Timestamp {
    own.max(parent)
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

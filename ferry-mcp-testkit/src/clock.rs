//! A deterministic clock for tests.
//!
//! The core never reads the wall clock; tests pass `clock.now()` wherever a
//! [`Timestamp`] is needed and move time on explicitly, so every time-dependent
//! decision (expiry, quiet periods) is reproducible.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use ferry_mcp_core::time::Timestamp;

/// The fixed instant every fresh [`Clock`] starts at: 2026-01-01T00:00:00Z.
pub const START: Timestamp = Timestamp::from_millis(1_767_225_600_000);

/// A clock that only moves when told to. Shared by reference across threads if need be.
#[derive(Debug)]
pub struct Clock {
    now: AtomicU64,
}

impl Clone for Clock {
    fn clone(&self) -> Self {
        Self::at(self.now())
    }
}

impl Default for Clock {
    fn default() -> Self {
        Self::at(START)
    }
}

impl Clock {
    /// A clock starting at [`START`].
    pub fn new() -> Self {
        Self::default()
    }

    /// A clock starting at `start`.
    pub fn at(start: Timestamp) -> Self {
        Self {
            now: AtomicU64::new(start.as_millis()),
        }
    }

    /// The current instant.
    pub fn now(&self) -> Timestamp {
        Timestamp::from_millis(self.now.load(Ordering::SeqCst))
    }

    /// Moves the clock forward by `by` and returns the new instant.
    pub fn advance(&self, by: Duration) -> Timestamp {
        let millis = u64::try_from(by.as_millis()).unwrap_or(u64::MAX);
        let before = self
            .now
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |now| {
                Some(now.saturating_add(millis))
            })
            .unwrap_or_else(|now| now);
        Timestamp::from_millis(before.saturating_add(millis))
    }

    /// Moves the clock forward by whole seconds and returns the new instant.
    pub fn advance_secs(&self, secs: u64) -> Timestamp {
        self.advance(Duration::from_secs(secs))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_clock_only_moves_when_advanced() {
        let clock = Clock::new();
        assert_eq!(clock.now(), START);
        assert_eq!(clock.now(), START);
        let later = clock.advance_secs(90);
        assert_eq!(later.seconds_since(START), 90);
        assert_eq!(clock.now(), later);
    }
}

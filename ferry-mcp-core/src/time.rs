//! Time as a value that callers pass in.
//!
//! The core never reads the wall clock: the binary reads it once per input line and tests
//! pass a deterministic clock, so every decision that depends on time is reproducible.

use serde::{Deserialize, Serialize};

/// Milliseconds since the Unix epoch (UTC).
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize,
)]
#[serde(transparent)]
pub struct Timestamp(pub u64);

impl Timestamp {
    pub const fn from_millis(ms: u64) -> Self {
        Self(ms)
    }
    pub const fn as_millis(self) -> u64 {
        self.0
    }
    /// Whole seconds from `earlier` to `self`, zero when `earlier` is later.
    pub const fn seconds_since(self, earlier: Timestamp) -> u64 {
        self.0.saturating_sub(earlier.0) / 1000
    }
}

//! The wall clock. The library never reads it; the binary reads it here and passes the time in.

use std::time::{SystemTime, UNIX_EPOCH};

use ferry_mcp_core::time::Timestamp;

/// Now, as milliseconds since the Unix epoch (zero if the system clock is before 1970).
pub fn now() -> Timestamp {
    let since_epoch = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default();
    Timestamp::from_millis(u64::try_from(since_epoch.as_millis()).unwrap_or(u64::MAX))
}

//! (channel log layer: filled in by the log work)

//! (deterministic clock: filled in by the identity work)

//! Test fixtures for ferry MCP.
//!
//! Temporary channels on temporary folders (never the real home), channels built in bulk
//! (busy and large ones, for benches), a deterministic clock,
//! a scripted JSON-RPC session driver, the token estimator and budget assertions, and a
//! fixture tool group that serves the protocol tests until the real tools exist.

pub mod bulk;
pub mod clock;
pub mod fixture;
pub mod session;
pub mod temp_channel;
pub mod tokens;

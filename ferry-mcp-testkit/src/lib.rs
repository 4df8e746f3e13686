//! Test fixtures for ferry MCP.
//!
//! Temporary channels on temporary folders (never the real home), channels built in bulk
//! (busy and large ones, for budgets and benches), a deterministic clock, loopback HTTP and
//! HTTPS servers, a scripted JSON-RPC session driver, the compact schemas the tools' frozen
//! ones are checked against, the token estimator and budget assertions, a tiny disk to fill (as
//! root), and a fixture tool group that serves the protocol tests.

pub mod bulk;
pub mod clock;
pub mod http;
pub mod https;
pub mod plant;
pub mod schema;
pub mod session;
pub mod temp_channel;
pub mod tiny_disk;
pub mod tokens;

/// The fixture tool group (it lives in the tools crate behind its `fixture` feature, so that
/// the binary's tests can serve it without the binary depending on this crate).
pub use ferry_mcp_tools::fixture;

//! The ferry MCP library.
//!
//! Everything the `ferry` binary does lives here, so that other Rust tools can embed
//! the server and downstream crates can add tool groups:
//!
//! - [`protocol`]: MCP as a sans-IO state machine (one line in, lines out; no IO, no clock).
//! - [`tool`] and [`registry`]: the `Tool` trait and the static, group-keyed registry.
//! - [`port`]: the channel as tools see it (the operations they call), which the channel
//!   store implements and an embedder may implement over a store of its own.
//! - [`shape`]: response shaping shared by every tool (caps, truncation, cursors, links).
//! - [`tokens`]: the token estimate that the budgets are written in.
//! - [`channel`]: the channel store (signed per-author logs, identity, levels, machine state).
//! - [`guard`]: the pure check every text an agent sends passes (no secrets; no code in posts),
//!   and the redaction of anything read back.
//!
//! Time is always passed in as a [`time::Timestamp`]; nothing here reads the wall clock.

pub mod channel;
pub mod guard;
pub mod port;
pub mod protocol;
pub mod registry;
pub mod shape;
pub mod time;
pub mod tokens;
pub mod tool;

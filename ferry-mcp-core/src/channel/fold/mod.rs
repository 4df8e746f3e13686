//! The fold layer: authority decided from verified entries alone, as pure functions.
//!
//! One typed body per entry kind, levels and the one authority check, identity (roster,
//! mastership, grants), the master's checkpoints and one fold per domain (orders, talk,
//! primary, asks, secrets, releases). The same
//! entries fold to the same state on every machine at every time, so nothing here touches a
//! file, the clock or the machine's kept state (a test of the source holds it); it imports only
//! the log layer's types.

pub mod body;
pub mod checkpoint;
pub mod identity;
pub mod levels;
pub mod state;

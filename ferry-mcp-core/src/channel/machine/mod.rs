//! The machine layer: what this machine keeps between processes, never synced.
//!
//! The state folder (keys, seats, pause, the sealed master key) and the kept state, a SQLite
//! database that witnesses what this machine verified and caches the folded state. It stores
//! the fold layer's values and the log layer's positions; only the session above reads and
//! writes it, so its files (`kept/`) are declared by the session (`channel::session::kept`),
//! the one module that may name them.

pub mod home;

//! The channel store: a folder of signed, append-only, per-author logs that Syncthing or git
//! carries between machines, folded into current state; plus the machine-local state folder.
//!
//! Every file in the channel has exactly one writer, named by its path. The format is
//! specified in `docs/channel-format.md`.

pub mod fold;
pub mod log;
pub mod machine;
pub mod ops;
pub mod session;

//! The channel store: a folder of signed, append-only, per-author logs that Syncthing or git
//! carries between machines, folded into current state; plus the machine-local state folder.
//!
//! Every file in the channel has exactly one writer, named by its path. The format is
//! specified in `docs/channel-format.md`.

pub mod body;
pub mod checkpoint;
pub mod entry;
pub mod home;
pub mod identity;
pub mod kept;
pub mod keys;
pub mod levels;
pub mod names;
pub mod ops;
pub mod reader;
pub mod secret;
pub mod session;
pub mod stamp;
pub mod state;
pub mod store;

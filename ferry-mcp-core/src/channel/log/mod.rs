//! The log layer: what a channel folder holds and how it is read and written, knowing nothing
//! of what entries mean.
//!
//! Names that become paths, Ed25519 keys, the signed line format of an entry, the folder on
//! disk (genesis, per-author logs, blobs) and its one writer per log, the verified incremental
//! reader with its integrity problems, file stamps, and sealed secrets. Everything above reads
//! the channel through this layer; it imports nothing of the layers above it.

pub mod entry;
pub mod keys;
pub mod names;
pub mod reader;
pub mod secret;
pub mod stamp;
pub mod store;

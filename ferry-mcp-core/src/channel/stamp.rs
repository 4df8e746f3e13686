//! What the file system says of a file or folder, to tell "unchanged" without reading it.
//!
//! A log's stamp lets an open skip reading its last verified line; a folder's lets a poll skip
//! listing it (a folder's modification and change times move whenever a name in it is added,
//! removed or renamed); the pins file's lets an open skip reading the pins.

use serde::{Deserialize, Serialize};

/// What the file system says of a file or folder: any write to it (or a file put in its
/// place) changes it. The change time cannot be set back by a writer, so an edit that restores the length and
/// the modification time still shows. `None` where the platform does not tell all of it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct FileStamp {
    len: u64,
    modified_ns: i128,
    changed_ns: i128,
    inode: u64,
    device: u64,
}

impl FileStamp {
    /// The stamp of the file at `path` (not following a link), if it has one.
    pub(crate) fn of_path(path: &std::path::Path) -> Option<Self> {
        std::fs::symlink_metadata(path)
            .ok()
            .and_then(|meta| Self::of(&meta))
    }

    /// Equal to no stamp the file system gives (a change time of zero with no inode).
    pub(crate) const NONE: FileStamp = FileStamp {
        len: u64::MAX,
        modified_ns: i128::MIN,
        changed_ns: i128::MIN,
        inode: 0,
        device: 0,
    };

    #[cfg(unix)]
    pub(crate) fn of(meta: &std::fs::Metadata) -> Option<Self> {
        use std::os::unix::fs::MetadataExt as _;
        let ns = |secs: i64, nanos: i64| i128::from(secs) * 1_000_000_000 + i128::from(nanos);
        Some(Self {
            len: meta.len(),
            modified_ns: ns(meta.mtime(), meta.mtime_nsec()),
            changed_ns: ns(meta.ctime(), meta.ctime_nsec()),
            inode: meta.ino(),
            device: meta.dev(),
        })
    }

    /// The stamp `statx` gave: the same fields as [`FileStamp::of`] takes from the metadata
    /// the standard library reads through the same call.
    #[cfg(target_os = "linux")]
    pub(crate) fn of_statx(stat: &rustix::fs::Statx) -> Self {
        let ns = |t: &rustix::fs::StatxTimestamp| {
            i128::from(t.tv_sec) * 1_000_000_000 + i128::from(t.tv_nsec)
        };
        Self {
            len: stat.stx_size,
            modified_ns: ns(&stat.stx_mtime),
            changed_ns: ns(&stat.stx_ctime),
            inode: stat.stx_ino,
            device: rustix::fs::makedev(stat.stx_dev_major, stat.stx_dev_minor),
        }
    }

    #[cfg(not(unix))]
    pub(crate) fn of(_meta: &std::fs::Metadata) -> Option<Self> {
        None
    }
}

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

    /// Whether this stamp of a folder, taken by a look that began at `looked_from`, will
    /// change with the folder's next change: its times lie at least [`SETTLE_NS`] before the
    /// look, so any later change falls in a later tick of the file system's clock. A stamp
    /// taken in the tick of the folder's last change may stay the same after another change in
    /// that tick (a file added changes a folder's times, not its length).
    pub(crate) fn settled(&self, looked_from: std::time::SystemTime) -> bool {
        let Ok(since_epoch) = looked_from.duration_since(std::time::UNIX_EPOCH) else {
            return false;
        };
        let from = i128::try_from(since_epoch.as_nanos()).unwrap_or(i128::MAX);
        self.modified_ns
            .max(self.changed_ns)
            .saturating_add(SETTLE_NS)
            <= from
    }
}

/// How long before a look a folder's times must lie for its stamp to be trusted: the coarsest
/// tick of the file systems a channel lives on (Linux before 6.13 stamps with a clock moving
/// every 1-10 ms, FAT every 2 s).
pub(crate) const SETTLE_NS: i128 = 2_000_000_000;

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::{Duration, UNIX_EPOCH};

    fn changed_at(secs: i128) -> FileStamp {
        FileStamp {
            len: 4096,
            modified_ns: secs * 1_000_000_000 - 5,
            changed_ns: secs * 1_000_000_000,
            inode: 7,
            device: 1,
        }
    }

    #[test]
    fn a_folder_s_stamp_settles_two_seconds_after_its_last_change() {
        let stamp = changed_at(100);
        let at = |ms: u64| UNIX_EPOCH + Duration::from_millis(ms);
        assert!(!stamp.settled(at(100_000)));
        assert!(!stamp.settled(at(101_999)));
        assert!(stamp.settled(at(102_000)));
        // Times from the future (another machine's clock, through a network file system).
        assert!(!changed_at(200).settled(at(102_000)));
    }
}

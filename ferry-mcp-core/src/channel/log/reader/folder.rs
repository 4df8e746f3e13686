//! The channel folder, held open while one poll looks at it.
//!
//! A look at everything (every open for a command, and a server's periodic full look) stats
//! every author folder and every log once: with nothing resident, that is how an append, a
//! rollback or a new log is noticed. Taken by full path, each stat walks every name from the
//! root to the file again, which was most of its cost. On Linux the folder is opened once
//! (`O_PATH`) and each stat is taken relative to it, so the kernel walks only the two or three
//! names under the channel. Elsewhere, or when the handle cannot be had, stats take the path.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::SystemTime;

use serde::{Deserialize, Serialize};

use crate::channel::log::stamp::FileStamp;

/// What a folder entry is. Symbolic links are never followed: a link could make the reader
/// read outside the channel folder.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub(super) enum Kind {
    Folder,
    File,
    Link,
    Other,
}

impl Kind {
    pub(super) fn of(file_type: std::fs::FileType) -> Self {
        if file_type.is_dir() {
            Kind::Folder
        } else if file_type.is_file() {
            Kind::File
        } else if file_type.is_symlink() {
            Kind::Link
        } else {
            Kind::Other
        }
    }
}

/// One stat of a name under the channel folder (a link is not followed).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Looked {
    pub kind: Kind,
    pub len: u64,
    pub stamp: Option<FileStamp>,
}

/// The channel folder for one poll: its path, and on Linux a handle stats are taken from.
#[derive(Debug)]
pub(super) struct ChannelFolder {
    path: PathBuf,
    /// The system clock before this look's first stat (the stats taken ahead included): what
    /// a folder's times are compared with to tell whether its stamp can be trusted
    /// ([`FileStamp::settled`]). The file system's own times, never the session's.
    looked_from: SystemTime,
    /// Stats already taken during this open (see [`Prelook`]).
    ahead: Prelooked,
    /// Whether stats carry their stamps ([`ChannelFolder::trusting_stamps`]).
    stamps: bool,
    #[cfg(target_os = "linux")]
    handle: Option<rustix::fd::OwnedFd>,
}

impl ChannelFolder {
    /// Holds `path` open for stats (the folder itself may be reached through a link: the
    /// channel can live wherever its user put it; what is under it is never followed).
    pub(super) fn open(path: &Path) -> Self {
        #[cfg(target_os = "linux")]
        {
            use rustix::fs::{Mode, OFlags};
            let handle = rustix::fs::open(
                path,
                OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC,
                Mode::empty(),
            )
            .ok();
            Self {
                path: path.to_owned(),
                looked_from: SystemTime::now(),
                ahead: Prelooked::default(),
                stamps: true,
                handle,
            }
        }
        #[cfg(not(target_os = "linux"))]
        Self {
            path: path.to_owned(),
            looked_from: SystemTime::now(),
            ahead: Prelooked::default(),
            stamps: true,
        }
    }

    /// Off, every stat answers without a stamp, as on a platform that tells none: every kept
    /// stamp then differs, so every log's last verified line is read and every folder listed
    /// (the open bench's A/B of stamps, ADR 0011).
    pub(super) fn trusting_stamps(mut self, on: bool) -> Self {
        self.stamps = on;
        self
    }

    /// Answers the stats in `ahead` from it (each was taken during this same open).
    pub(super) fn with_ahead(mut self, ahead: Option<Prelooked>) -> Self {
        self.ahead = ahead.unwrap_or_default();
        if let Some(earlier) = self.ahead.looked_from {
            self.looked_from = self.looked_from.min(earlier);
        }
        self
    }

    /// When this look began: the system clock before its first stat.
    pub(super) fn looked_from(&self) -> SystemTime {
        self.looked_from
    }

    /// The same folder, as if the look had begun at `at` (tests of what a later look trusts).
    #[cfg(test)]
    pub(super) fn looked_from_at(mut self, at: SystemTime) -> Self {
        self.looked_from = at;
        self
    }

    pub(super) fn path(&self) -> &Path {
        &self.path
    }

    /// The full path of `rel`, for opening or listing it.
    pub(super) fn join(&self, rel: &Path) -> PathBuf {
        self.path.join(rel)
    }

    /// Stats `rel` (relative to the channel folder), not following a link at its end.
    pub(super) fn look(&self, rel: &Path) -> std::io::Result<Looked> {
        let looked = match self.ahead.get(rel) {
            Some(looked) => looked,
            None => self.look_now(rel)?,
        };
        Ok(Looked {
            stamp: looked.stamp.filter(|_| self.stamps),
            ..looked
        })
    }

    fn look_now(&self, rel: &Path) -> std::io::Result<Looked> {
        #[cfg(target_os = "linux")]
        if let Some(handle) = &self.handle {
            use rustix::fs::{AtFlags, FileType, StatxFlags};
            match rustix::fs::statx(
                handle,
                rel,
                AtFlags::SYMLINK_NOFOLLOW,
                StatxFlags::BASIC_STATS,
            ) {
                Ok(stat) => {
                    let kind = match FileType::from_raw_mode(stat.stx_mode.into()) {
                        FileType::Directory => Kind::Folder,
                        FileType::RegularFile => Kind::File,
                        FileType::Symlink => Kind::Link,
                        _ => Kind::Other,
                    };
                    return Ok(Looked {
                        kind,
                        len: stat.stx_size,
                        stamp: Some(FileStamp::of_statx(&stat)),
                    });
                }
                // A kernel or sandbox without statx: the path, as elsewhere.
                Err(rustix::io::Errno::NOSYS | rustix::io::Errno::PERM) => {}
                Err(e) => return Err(e.into()),
            }
        }
        let meta = std::fs::symlink_metadata(self.path.join(rel))?;
        Ok(Looked {
            kind: Kind::of(meta.file_type()),
            len: meta.len(),
            stamp: FileStamp::of(&meta),
        })
    }
}

/// Stats taken ahead of a poll, by path under the channel folder: only those that succeeded
/// (a path that failed is stat'ed again by the poll, which reports why). The paths stay in the
/// one string they were read as, with a sorted index into it: a path costs no allocation.
#[derive(Debug, Clone, Default)]
pub struct Prelooked {
    paths: String,
    looked: Vec<Stat>,
    /// When the first of them was taken, at the latest.
    looked_from: Option<SystemTime>,
}

impl Prelooked {
    /// Stats every line of `paths` through `folder`.
    #[cfg(test)]
    fn take(folder: &ChannelFolder, paths: String) -> Self {
        let lines = Lines::of(paths);
        let looked = lines.look(folder, &AtomicUsize::new(0));
        Self::sorted(lines.paths, looked, folder.looked_from)
    }

    fn sorted(paths: String, mut looked: Vec<Stat>, looked_from: SystemTime) -> Self {
        looked.sort_unstable_by(|a, b| {
            paths[a.0 as usize..a.1 as usize].cmp(&paths[b.0 as usize..b.1 as usize])
        });
        Self {
            paths,
            looked,
            looked_from: Some(looked_from),
        }
    }

    fn get(&self, rel: &Path) -> Option<Looked> {
        let rel = rel.to_str()?;
        let found = self
            .looked
            .binary_search_by(|(start, end, _)| self.paths[*start as usize..*end as usize].cmp(rel))
            .ok()?;
        Some(self.looked[found].2)
    }

    #[cfg(test)]
    fn len(&self) -> usize {
        self.looked.len()
    }
}

/// Below this many bytes of paths (about 40 author folders with their logs), stats are left
/// to the poll: starting a thread costs more than they do.
const PRELOOK_FROM_BYTES: u64 = 4096;

/// One stat taken ahead: where its path is in the paths, and what it found.
type Stat = (u32, u32, Looked);

/// Paths stat'ed ahead are claimed this many at a time by whichever thread is free.
const CLAIM: usize = 8;

/// The paths to stat ahead, one a line, with where each line is.
#[derive(Debug)]
struct Lines {
    paths: String,
    spans: Vec<(u32, u32)>,
}

impl Lines {
    fn of(paths: String) -> Self {
        let mut spans = Vec::new();
        let mut at = 0usize;
        for line in paths.split('\n') {
            let (start, end) = (at, at + line.len());
            at = end + 1;
            let (Ok(start), Ok(end)) = (u32::try_from(start), u32::try_from(end)) else {
                break;
            };
            spans.push((start, end));
        }
        Self { paths, spans }
    }

    /// Stats the lines not yet claimed through `next`, a few at a time, until none is left;
    /// those that succeeded, with their spans.
    fn look(&self, folder: &ChannelFolder, next: &AtomicUsize) -> Vec<Stat> {
        let mut looked = Vec::new();
        loop {
            let from = next.fetch_add(CLAIM, Ordering::Relaxed);
            if from >= self.spans.len() {
                return looked;
            }
            for &(start, end) in &self.spans[from..(from + CLAIM).min(self.spans.len())] {
                let line = &self.paths[start as usize..end as usize];
                if let Ok(stat) = folder.look_now(Path::new(line)) {
                    looked.push((start, end, stat));
                }
            }
        }
    }
}

/// Where the paths to stat ahead come from (the kept state's looks, read by whichever thread
/// needs them first).
type Paths = Box<dyn FnOnce() -> String + Send>;

/// What the opening thread and the stat thread share: the folder's handle, the paths (read by
/// whichever thread comes to them first: the stat thread may not have started when the
/// opening thread is done), and which are claimed.
struct Shared {
    folder: ChannelFolder,
    paths: std::sync::Mutex<Option<Paths>>,
    lines: OnceLock<Lines>,
    next: AtomicUsize,
}

impl std::fmt::Debug for Shared {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Shared")
            .field("lines", &self.lines)
            .finish_non_exhaustive()
    }
}

impl Shared {
    fn new(channel_dir: &Path, paths: impl FnOnce() -> String + Send + 'static) -> Self {
        Self {
            folder: ChannelFolder::open(channel_dir),
            paths: std::sync::Mutex::new(Some(Box::new(paths))),
            lines: OnceLock::new(),
            next: AtomicUsize::new(0),
        }
    }

    fn lines(&self) -> &Lines {
        self.lines.get_or_init(|| {
            let paths = self
                .paths
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .take();
            Lines::of(paths.map(|paths| paths()).unwrap_or_default())
        })
    }

    /// Stats what is left, on the calling thread.
    fn look(&self) -> Vec<Stat> {
        self.lines().look(&self.folder, &self.next)
    }
}

/// The stats an open's first poll will take, taken on another thread while the open reads
/// its kept state (a warm open's two largest costs, one per log or folder each, run side by
/// side on two cores); the opening thread stats those still left once it is done (a thread
/// can take tens of microseconds to start running). Every stat is a real one of this open:
/// taken a moment before the poll would take it, it says what the poll would have seen a
/// moment earlier, which is what any write landing just after the poll's own stat leaves it
/// with too. The paths are a hint (the last full look's, kept in the verified state): a path
/// the poll does not ask for is never used, one it asks for and is missing here is stat'ed by
/// the poll.
#[derive(Debug)]
pub struct Prelook(Option<(Arc<Shared>, std::thread::JoinHandle<Vec<Stat>>)>);

impl Prelook {
    /// Starts stat'ing the paths `paths` gives (relative to `channel_dir`), on a thread of
    /// its own, when they take at least enough bytes (`len`) to be worth one.
    pub fn start(
        channel_dir: &Path,
        len: u64,
        paths: impl FnOnce() -> String + Send + 'static,
    ) -> Self {
        if len < PRELOOK_FROM_BYTES {
            return Self(None);
        }
        let shared = Arc::new(Shared::new(channel_dir, paths));
        let on_thread = Arc::clone(&shared);
        let spawned = std::thread::Builder::new()
            .name("ferry-prelook".into())
            .stack_size(256 << 10)
            .spawn(move || on_thread.look());
        Self(spawned.ok().map(|thread| (shared, thread)))
    }

    /// The stats taken, the calling thread taking its share of those left (none if no thread
    /// ran or it failed: the poll then takes them all).
    pub fn finish(self) -> Option<Prelooked> {
        let (shared, thread) = self.0?;
        let mine = shared.look();
        // A thread that failed leaves every stat to the poll.
        let mut looked = thread.join().ok()?;
        looked.extend(mine);
        let shared = Arc::into_inner(shared)?;
        let looked_from = shared.folder.looked_from;
        let lines = shared.lines.into_inner()?;
        Some(Prelooked::sorted(lines.paths, looked, looked_from))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_look_through_the_handle_gives_the_stamp_a_look_by_path_gives() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("logs")).unwrap();
        std::fs::write(dir.path().join("logs/a.jsonl"), b"line\n").unwrap();
        #[cfg(unix)]
        std::os::unix::fs::symlink("a.jsonl", dir.path().join("logs/link")).unwrap();
        let folder = ChannelFolder::open(dir.path());
        for (rel, kind) in [
            ("logs", Kind::Folder),
            ("logs/a.jsonl", Kind::File),
            #[cfg(unix)]
            ("logs/link", Kind::Link),
        ] {
            let looked = folder.look(Path::new(rel)).unwrap();
            let meta = std::fs::symlink_metadata(dir.path().join(rel)).unwrap();
            assert_eq!(looked.kind, kind, "{rel}");
            assert_eq!(looked.kind, Kind::of(meta.file_type()), "{rel}");
            assert_eq!(looked.len, meta.len(), "{rel}");
            assert_eq!(looked.stamp, FileStamp::of(&meta), "{rel}");
        }
        let missing = folder.look(Path::new("logs/none.jsonl")).unwrap_err();
        assert_eq!(missing.kind(), std::io::ErrorKind::NotFound);
    }

    /// `n` author folders under `logs/`, each with one log: the paths a full look stats.
    fn folder_with_logs(n: usize) -> (tempfile::TempDir, Vec<String>) {
        let dir = tempfile::tempdir().unwrap();
        let mut paths = vec!["logs".to_owned()];
        for i in 0..n {
            let author = format!("logs/agent-{i:03}");
            std::fs::create_dir_all(dir.path().join(&author)).unwrap();
            let log = format!("{author}/{}.jsonl", "ab".repeat(32));
            std::fs::write(dir.path().join(&log), b"{}\n").unwrap();
            paths.push(author);
            paths.push(log);
        }
        (dir, paths)
    }

    #[test]
    fn stats_taken_ahead_are_those_of_the_paths_given_and_only_of_those_that_exist() {
        let (dir, mut paths) = folder_with_logs(50);
        paths.push("logs/gone/none.jsonl".into());
        paths.push("../outside".into());
        let bytes = paths.iter().map(|p| p.len() as u64 + 1).sum();
        assert!(bytes >= PRELOOK_FROM_BYTES, "{bytes}");
        let given = paths.join("\n");
        let ahead = Prelook::start(dir.path(), bytes, move || given)
            .finish()
            .expect("enough paths for a thread");
        let folder = ChannelFolder::open(dir.path());
        for path in &paths[..paths.len() - 2] {
            let path = Path::new(path);
            assert_eq!(ahead.get(path), Some(folder.look_now(path).unwrap()));
        }
        assert_eq!(
            ahead.len(),
            paths.len() - 2,
            "a missing path is left to the poll"
        );
    }

    #[test]
    fn the_opening_thread_reads_the_paths_and_takes_every_stat_a_late_thread_has_not_come_to() {
        let (dir, paths) = folder_with_logs(30);
        let given = paths.join("\n");
        let shared = Shared::new(dir.path(), move || given);
        // The opening thread comes first: it reads the paths and stats them all.
        let mine = shared.look();
        assert_eq!(mine.len(), paths.len());
        // The thread, starting late, finds nothing left.
        assert!(
            std::thread::scope(|scope| scope.spawn(|| shared.look()).join().unwrap()).is_empty()
        );
        let looked_from = shared.folder.looked_from;
        let ahead = Prelooked::sorted(shared.lines.into_inner().unwrap().paths, mine, looked_from);
        let folder = ChannelFolder::open(dir.path());
        for path in &paths {
            let path = Path::new(path);
            assert_eq!(ahead.get(path), Some(folder.look_now(path).unwrap()));
        }
    }

    #[test]
    fn a_few_paths_are_left_to_the_poll_without_a_thread() {
        let (dir, paths) = folder_with_logs(2);
        let bytes = paths.iter().map(|p| p.len() as u64 + 1).sum();
        let given = paths.join("\n");
        assert!(
            Prelook::start(dir.path(), bytes, move || given)
                .finish()
                .is_none()
        );
    }

    #[test]
    fn a_poll_answers_from_the_stats_taken_ahead_and_stats_the_rest_itself() {
        let (dir, paths) = folder_with_logs(40);
        let log = Path::new(&paths[2]).to_owned();
        let other = Path::new(&paths[4]).to_owned();
        let before = ChannelFolder::open(dir.path()).look_now(&log).unwrap();
        let ahead = Prelooked::take(&ChannelFolder::open(dir.path()), paths[2].clone());
        assert_eq!(ahead.get(&log), Some(before));
        // Written after the stat ahead: this open answers what it saw then (a write that lands
        // after a poll's own stat is found by the next poll alike).
        std::fs::write(dir.path().join(&log), b"{}\n{}\n").unwrap();
        let folder = ChannelFolder::open(dir.path()).with_ahead(Some(ahead));
        assert_eq!(folder.look(&log).unwrap(), before);
        std::fs::write(dir.path().join(&other), b"{}\n{}\n{}\n").unwrap();
        assert_eq!(folder.look(&other).unwrap().len, 9);
        // The next poll's folder holds nothing ahead: it sees the write.
        assert_eq!(ChannelFolder::open(dir.path()).look(&log).unwrap().len, 6);
    }
}

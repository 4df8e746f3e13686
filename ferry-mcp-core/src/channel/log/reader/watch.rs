//! Which author folders and logs changed since the last poll, as the kernel tells it (Linux
//! inotify), so that a long-running reader (a server) looks only at what changed instead of
//! every log and every author folder on every call: a poll's cost follows the news, not the
//! size of the fleet.
//!
//! It is an optimisation, never an authority. Whatever it cannot tell for sure (an event queue
//! that overflowed, a change to the channel's top folder or to `logs/`, a watched folder that
//! went away, a watch that could not be added) asks for a full look, which is what a reader
//! without it does on every poll. A change the kernel reports no event for (a write through a
//! memory map, a network file system) is found by the full look a session asks for from time
//! to time (`Session::refresh`).

use std::collections::{BTreeSet, HashMap};
use std::path::Path;

/// What changed since the last [`Watch::take`].
#[derive(Debug, PartialEq, Eq)]
pub(super) enum Changed {
    /// Unknown: look at everything.
    Everything,
    Some {
        /// Author folders whose list of files may have changed.
        relist: BTreeSet<String>,
        /// Files written to, as (author folder, file name).
        files: BTreeSet<(String, String)>,
    },
}

impl Changed {
    fn none() -> Self {
        Changed::Some {
            relist: BTreeSet::new(),
            files: BTreeSet::new(),
        }
    }
}

#[cfg(target_os = "linux")]
mod imp {
    use std::collections::{HashMap, HashSet};
    use std::mem::MaybeUninit;
    use std::os::fd::OwnedFd;
    use std::path::Path;

    use rustix::fs::inotify::{self, CreateFlags, ReadFlags, WatchFlags};
    use rustix::io::Errno;

    use super::Changed;
    use crate::channel::log::store::LOGS_DIR;

    /// A watched folder: the channel's own two, or an author's.
    #[derive(Debug, Clone, PartialEq, Eq)]
    enum Folder {
        Top,
        Logs,
        Author(String),
    }

    pub(in crate::channel::log::reader) struct Kernel {
        fd: OwnedFd,
        by_wd: HashMap<i32, Folder>,
        /// The author folders watched.
        authors: HashSet<String>,
    }

    /// Events that change a folder's list of files.
    fn listing_events() -> ReadFlags {
        ReadFlags::CREATE | ReadFlags::DELETE | ReadFlags::MOVED_FROM | ReadFlags::MOVED_TO
    }

    /// Events after which the folder itself is not what was watched.
    fn gone_events() -> ReadFlags {
        ReadFlags::DELETE_SELF | ReadFlags::MOVE_SELF | ReadFlags::IGNORED | ReadFlags::UNMOUNT
    }

    fn watch_flags() -> WatchFlags {
        // Never a link: a linked folder is refused by the listing, and watched by nobody.
        WatchFlags::MODIFY
            | WatchFlags::ATTRIB
            | WatchFlags::CLOSE_WRITE
            | WatchFlags::CREATE
            | WatchFlags::DELETE
            | WatchFlags::MOVED_FROM
            | WatchFlags::MOVED_TO
            | WatchFlags::DELETE_SELF
            | WatchFlags::MOVE_SELF
            | WatchFlags::DONT_FOLLOW
            | WatchFlags::ONLYDIR
    }

    impl Kernel {
        pub(in crate::channel::log::reader) fn new(dir: &Path) -> Option<Self> {
            let fd = inotify::init(CreateFlags::CLOEXEC | CreateFlags::NONBLOCK).ok()?;
            let mut kernel = Self {
                fd,
                by_wd: HashMap::new(),
                authors: HashSet::new(),
            };
            kernel.add(dir, Folder::Top)?;
            // A channel without `logs/` yet is watched from its top: creating it is an event.
            let logs = dir.join(LOGS_DIR);
            if logs.is_dir() {
                kernel.add(&logs, Folder::Logs)?;
            }
            Some(kernel)
        }

        fn add(&mut self, path: &Path, folder: Folder) -> Option<()> {
            let wd = inotify::add_watch(&self.fd, path, watch_flags()).ok()?;
            self.by_wd.insert(wd, folder);
            Some(())
        }

        /// Watches `logs/<author>` too, if it is not yet; `None` if it cannot be.
        pub(in crate::channel::log::reader) fn follow(
            &mut self,
            dir: &Path,
            author: &str,
        ) -> Option<()> {
            if self.authors.contains(author) {
                return Some(());
            }
            self.add(
                &dir.join(LOGS_DIR).join(author),
                Folder::Author(author.to_owned()),
            )?;
            self.authors.insert(author.to_owned());
            Some(())
        }

        /// Watches `logs/` too, if it is not yet; `None` if it cannot be.
        pub(in crate::channel::log::reader) fn follow_logs(&mut self, dir: &Path) -> Option<()> {
            if self.by_wd.values().any(|folder| *folder == Folder::Logs) {
                return Some(());
            }
            self.add(&dir.join(LOGS_DIR), Folder::Logs)
        }

        /// Every event since the last call, as what changed.
        pub(in crate::channel::log::reader) fn take(&mut self) -> Changed {
            let mut changed = Changed::none();
            let mut buf = [MaybeUninit::<u8>::uninit(); 4096];
            let mut events = inotify::Reader::new(&self.fd, &mut buf);
            loop {
                let event = match events.next() {
                    Ok(event) => event,
                    Err(Errno::AGAIN) => return changed,
                    Err(Errno::INTR) => continue,
                    Err(_) => return Changed::Everything,
                };
                let flags = event.events();
                if flags.contains(ReadFlags::QUEUE_OVERFLOW) {
                    changed = Changed::Everything;
                    continue;
                }
                let folder = self.by_wd.get(&event.wd()).cloned();
                if flags.intersects(gone_events()) {
                    if let Some(Folder::Author(author)) = self.by_wd.remove(&event.wd()) {
                        self.authors.remove(&author);
                    }
                    changed = Changed::Everything;
                    continue;
                }
                let Changed::Some { relist, files } = &mut changed else {
                    continue;
                };
                match folder {
                    Some(Folder::Author(author)) => {
                        if flags.intersects(listing_events()) {
                            relist.insert(author.clone());
                        }
                        if let Some(name) = event.file_name() {
                            files.insert((author, name.to_string_lossy().into_owned()));
                        }
                    }
                    // The top folder or `logs/` changed (a folder made or removed, a file put
                    // where it does not belong), or a watch this reader no longer knows.
                    Some(Folder::Top | Folder::Logs) | None => changed = Changed::Everything,
                }
            }
        }
    }
}

#[cfg(not(target_os = "linux"))]
mod imp {
    use std::path::Path;

    use super::Changed;

    /// No kernel notifications here: every poll is a full look.
    pub(in crate::channel::log::reader) struct Kernel;

    impl Kernel {
        pub(in crate::channel::log::reader) fn new(_dir: &Path) -> Option<Self> {
            None
        }
        pub(in crate::channel::log::reader) fn follow(
            &mut self,
            _dir: &Path,
            _author: &str,
        ) -> Option<()> {
            None
        }
        pub(in crate::channel::log::reader) fn follow_logs(&mut self, _dir: &Path) -> Option<()> {
            None
        }
        pub(in crate::channel::log::reader) fn take(&mut self) -> Changed {
            Changed::Everything
        }
    }
}

/// A reader's watch over its channel folder. A clone does not watch (the kernel's events go to
/// one reader): it looks at everything on every poll, as a reader without a watch does.
#[derive(Default)]
pub(super) struct Watch {
    kernel: Option<imp::Kernel>,
    /// The next poll looks at everything (just started, or asked to).
    full_look_next: bool,
}

impl std::fmt::Debug for Watch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Watch")
            .field("watching", &self.kernel.is_some())
            .field("full_look_next", &self.full_look_next)
            .finish()
    }
}

impl Clone for Watch {
    fn clone(&self) -> Self {
        Self::default()
    }
}

impl Watch {
    /// Starts watching `dir`; false where the platform or the folder does not allow it. The
    /// next poll looks at everything (what changed before the watch began is not in it).
    pub(super) fn start(&mut self, dir: &Path) -> bool {
        if self.kernel.is_none() {
            self.kernel = imp::Kernel::new(dir);
        }
        self.full_look_next = true;
        self.kernel.is_some()
    }

    pub(super) fn is_watching(&self) -> bool {
        self.kernel.is_some()
    }

    /// The next poll looks at everything.
    pub(super) fn look_everywhere_next(&mut self) {
        self.full_look_next = true;
    }

    /// What to look at in this poll. Taken before the poll looks, so what changes while it
    /// does is told by the next one.
    pub(super) fn take(&mut self) -> Changed {
        let Some(kernel) = &mut self.kernel else {
            return Changed::Everything;
        };
        let changed = kernel.take();
        if std::mem::take(&mut self.full_look_next) {
            return Changed::Everything;
        }
        changed
    }

    /// During a full look, before `logs/` is listed: watches it once it exists.
    pub(super) fn follow_logs(&mut self, dir: &Path) {
        if let Some(kernel) = &mut self.kernel
            && dir.join(crate::channel::log::store::LOGS_DIR).is_dir()
            && kernel.follow_logs(dir).is_none()
        {
            self.kernel = None;
        }
    }

    /// During a full look, before `logs/<author>` is listed: watches it, so that whatever
    /// changes in it after the listing is told by the next poll. A watch that cannot be added
    /// ends watching (every poll is then a full look).
    pub(super) fn follow(&mut self, dir: &Path, author: &str) {
        if let Some(kernel) = &mut self.kernel
            && kernel.follow(dir, author).is_none()
        {
            self.kernel = None;
        }
    }
}

/// The files of `changed` by author folder, for a reader to look up quickly.
pub(super) fn by_author(files: &BTreeSet<(String, String)>) -> HashMap<&str, Vec<&str>> {
    let mut out: HashMap<&str, Vec<&str>> = HashMap::new();
    for (author, file) in files {
        out.entry(author.as_str()).or_default().push(file.as_str());
    }
    out
}

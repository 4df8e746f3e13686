//! The orders' records, appended to a file of their own beside the verified state (ADR 0010),
//! so a save writes the records that changed, not every record of the board.
//!
//! File: the magic line `ferry-records\n`, a random tag (u64, little endian), then records one
//! after another. Nothing in it is ever changed where it is: a save appends, under
//! `records.lock`, and syncs before the verified state that names the new records is written;
//! a compaction writes the live records to a new file with a new tag and renames it over the
//! old one. A reader holds its file open, so a compaction by another process never moves a
//! record it reads.

use std::fs::{self, File, OpenOptions};
use std::io::{self, BufWriter, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

/// The records file's name, beside `verified.bin`.
pub const FILE: &str = "records.bin";
/// Held by whoever appends to the records file and writes the state naming what it appended.
const LOCK_FILE: &str = "records.lock";
const MAGIC: &[u8] = b"ferry-records\n";
/// Bytes before the first record.
pub(crate) const HEADER: u64 = MAGIC.len() as u64 + 8;
/// Dead bytes a compaction waits for beyond as many as are live.
const COMPACT_SLACK: u64 = 8 << 20;

/// The records file of the verified state at `verified`.
pub(crate) fn path_beside(verified: &Path) -> PathBuf {
    verified.with_file_name(FILE)
}

/// The records file at `path`, opened for reading, if it is there and has `tag`; with its
/// length.
pub(crate) fn open_tagged(path: &Path, tag: u64) -> Option<(File, u64)> {
    let mut file = File::open(path).ok()?;
    (read_tag(&mut file).ok()? == tag).then_some(())?;
    let len = file.metadata().ok()?.len();
    Some((file, len))
}

fn read_tag(file: &mut File) -> io::Result<u64> {
    let mut header = [0u8; HEADER as usize];
    file.seek(SeekFrom::Start(0))?;
    file.read_exact(&mut header)?;
    if !header.starts_with(MAGIC) {
        return Err(io::Error::other("not a records file"));
    }
    Ok(u64::from_le_bytes(
        header[MAGIC.len()..].try_into().expect("8 bytes"),
    ))
}

/// Files made here are the owner's alone, like the verified state: records hold the orders'
/// texts.
fn private(options: &mut OpenOptions) -> &mut OpenOptions {
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt as _;
        options.mode(0o600);
    }
    options
}

/// A new tag: random (the time and the process when no random bytes are to be had).
fn new_tag() -> u64 {
    let mut bytes = [0u8; 8];
    if getrandom::fill(&mut bytes).is_ok() {
        return u64::from_le_bytes(bytes);
    }
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64);
    nanos ^ u64::from(std::process::id()).rotate_left(32)
}

/// The records lock of the verified state at `verified`, held until dropped.
pub(crate) struct Locked {
    _file: File,
}

/// Takes the records lock beside `verified` (waiting for another saver on this machine).
pub(crate) fn lock(verified: &Path) -> io::Result<Locked> {
    let path = verified.with_file_name(LOCK_FILE);
    let file = private(OpenOptions::new().create(true).truncate(false).write(true)).open(&path)?;
    file.lock()?;
    Ok(Locked { _file: file })
}

/// A records file open for appending, under the records lock.
pub(crate) struct Appender {
    out: BufWriter<File>,
    tag: u64,
    len: u64,
    /// The length when it was opened (a new file: nothing).
    opened_len: u64,
    /// Where a compaction's file is renamed to once it is whole (`None`: it is in place).
    rename_to: Option<(PathBuf, PathBuf)>,
}

impl Appender {
    /// The records file at `path`, to append to; a new one (with a new tag) where there is
    /// none or what is there is not one.
    pub(crate) fn open(path: &Path) -> io::Result<Self> {
        if let Ok(mut file) = OpenOptions::new().read(true).append(true).open(path)
            && let Ok(tag) = read_tag(&mut file)
        {
            let len = file.seek(SeekFrom::End(0))?;
            return Ok(Self {
                out: BufWriter::with_capacity(256 << 10, file),
                tag,
                len,
                opened_len: len,
                rename_to: None,
            });
        }
        let mut fresh = Self::new_file(path)?;
        fresh.finish()?;
        Self::open(path)
    }

    /// A new records file with a new tag, written beside `path` and put in its place by
    /// [`Appender::finish`]. Called under the records lock: a temporary file of an earlier
    /// compaction that did not finish (its process died) is removed first.
    pub(crate) fn new_file(path: &Path) -> io::Result<Self> {
        remove_unfinished(path);
        let tag = new_tag();
        let temp = path.with_file_name(format!("{TEMP_PREFIX}{tag:016x}.tmp"));
        // Readable too: the board reads its records through this handle after the save.
        let file =
            private(OpenOptions::new().read(true).write(true).create_new(true)).open(&temp)?;
        let mut out = BufWriter::with_capacity(256 << 10, file);
        out.write_all(MAGIC)?;
        out.write_all(&tag.to_le_bytes())?;
        Ok(Self {
            out,
            tag,
            len: HEADER,
            opened_len: 0,
            rename_to: Some((temp, path.to_owned())),
        })
    }

    pub(crate) fn tag(&self) -> u64 {
        self.tag
    }

    /// The file's length, what was appended included.
    pub(crate) fn len(&self) -> u64 {
        self.len
    }

    /// The bytes written through it (a new file's header included).
    pub(crate) fn written(&self) -> u64 {
        self.len - self.opened_len
    }

    /// Appends one record; where it starts.
    pub(crate) fn append(&mut self, record: &[u8]) -> io::Result<u64> {
        let at = self.len;
        self.out.write_all(record)?;
        self.len += record.len() as u64;
        Ok(at)
    }

    /// Makes what was appended durable (and a new file the records file): after this, a state
    /// may name it.
    pub(crate) fn finish(&mut self) -> io::Result<()> {
        self.out.flush()?;
        // Only this appender writes while the records lock is held: a file longer than what it
        // wrote was written by someone else at once, and these records are not where it says.
        if self.out.get_ref().metadata()?.len() != self.len {
            return Err(io::Error::other(
                "the records file grew under this save (another writer without the lock)",
            ));
        }
        self.out.get_ref().sync_data()?;
        if let Some((temp, path)) = self.rename_to.take() {
            fs::rename(&temp, &path)?;
            if let Some(dir) = path.parent()
                && let Ok(dir) = File::open(dir)
            {
                let _ = dir.sync_all();
            }
        }
        Ok(())
    }

    /// A handle for reading what this file holds (the same file, whatever is renamed later).
    pub(crate) fn reader(&self) -> io::Result<File> {
        self.out.get_ref().try_clone()
    }
}

/// How a compaction's file is named until it takes the records file's place.
const TEMP_PREFIX: &str = ".records.bin.";

/// Removes what compactions that did not finish left beside `path`.
fn remove_unfinished(path: &Path) {
    let Some(dir) = path.parent() else {
        return;
    };
    let Ok(entries) = fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let name = name.to_string_lossy();
        if name.starts_with(TEMP_PREFIX) && name.ends_with(".tmp") {
            let _ = fs::remove_file(entry.path());
        }
    }
}

/// Whether a records file of `len` bytes, of which `live` are records a state names, is worth
/// writing anew.
pub(crate) fn worth_compacting(len: u64, live: u64) -> bool {
    let dead = len.saturating_sub(HEADER).saturating_sub(live);
    dead > live.saturating_add(COMPACT_SLACK)
}

impl Drop for Appender {
    fn drop(&mut self) {
        // A compaction that did not finish leaves no file behind.
        if let Some((temp, _)) = &self.rename_to {
            let _ = fs::remove_file(temp);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_records_file_is_made_with_a_tag_and_appended_to_where_it_ends() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(FILE);
        let mut first = Appender::open(&path).unwrap();
        let tag = first.tag();
        assert_eq!(first.append(b"abc").unwrap(), HEADER);
        first.finish().unwrap();
        drop(first);
        let mut again = Appender::open(&path).unwrap();
        assert_eq!(again.tag(), tag);
        assert_eq!(again.append(b"de").unwrap(), HEADER + 3);
        again.finish().unwrap();
        let (_, len) = open_tagged(&path, tag).unwrap();
        assert_eq!(len, HEADER + 5);
        assert!(open_tagged(&path, tag ^ 1).is_none());
    }

    #[test]
    fn a_new_file_takes_the_place_of_the_old_only_once_it_is_finished() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(FILE);
        let old = Appender::open(&path).unwrap().tag();
        let mut fresh = Appender::new_file(&path).unwrap();
        fresh.append(b"live").unwrap();
        assert!(open_tagged(&path, old).is_some());
        fresh.finish().unwrap();
        assert!(open_tagged(&path, old).is_none());
        assert!(open_tagged(&path, fresh.tag()).is_some());

        // One dropped before it is finished leaves the old file and no temporary one.
        let unfinished = Appender::new_file(&path).unwrap();
        drop(unfinished);
        assert_eq!(fs::read_dir(dir.path()).unwrap().count(), 1);

        // One whose process died leaves its file, which the next compaction removes.
        let died = Appender::new_file(&path).unwrap();
        std::mem::forget(died);
        assert_eq!(fs::read_dir(dir.path()).unwrap().count(), 2);
        Appender::new_file(&path).unwrap().finish().unwrap();
        assert_eq!(fs::read_dir(dir.path()).unwrap().count(), 1);
    }

    #[test]
    fn an_appender_whose_file_grew_under_it_fails_rather_than_name_records_where_they_are_not() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(FILE);
        Appender::open(&path).unwrap().finish().unwrap();
        let mut first = Appender::open(&path).unwrap();
        let mut second = Appender::open(&path).unwrap();
        first.append(b"one").unwrap();
        first.finish().unwrap();
        second.append(b"two").unwrap();
        assert!(second.finish().is_err());
    }

    #[test]
    fn the_records_lock_is_held_until_it_is_dropped() {
        let dir = tempfile::tempdir().unwrap();
        let verified = dir.path().join("verified.bin");
        let held = lock(&verified).unwrap();
        let other = File::options()
            .write(true)
            .open(verified.with_file_name(LOCK_FILE))
            .unwrap();
        assert!(other.try_lock().is_err(), "a second saver got the lock");
        drop(held);
        assert!(other.try_lock().is_ok());
    }

    #[cfg(unix)]
    #[test]
    fn a_records_file_is_the_owner_s_alone() {
        use std::os::unix::fs::PermissionsExt as _;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(FILE);
        Appender::open(&path).unwrap().finish().unwrap();
        let mode = fs::metadata(&path).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
    }

    #[test]
    fn a_file_is_compacted_once_its_dead_bytes_pass_its_live_ones_by_8_mb() {
        assert!(!worth_compacting(HEADER + (16 << 20), 8 << 20));
        assert!(worth_compacting(HEADER + (16 << 20) + 1, 4 << 20));
        assert!(!worth_compacting(HEADER, 0));
    }
}

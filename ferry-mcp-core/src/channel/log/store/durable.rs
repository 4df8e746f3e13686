//! Durable file operations: whole files replaced atomically, folder fsyncs, and the one way a
//! lock or state file is opened.
//!
//! A rename is only durable once the folder holding it is synced (`persist` alone does not
//! fsync), and a new file only exists after a crash once its folder entry is synced.
//!
//! Opening a FIFO waits until its other end is opened: one planted as a lock, a key, a log or
//! the genesis would hang every command that opens it. [`open_regular`] never waits and never
//! follows a link at the path's end, and refuses anything but a regular file.

use std::fs;
use std::io::{self, Write};
use std::path::Path;

/// The prefix of every temporary file the store writes; readers skip such files.
pub const TEMP_PREFIX: &str = ".ferry-tmp-";

/// Opens `path` with `options`, without following a link at its end and without blocking on
/// a FIFO or device planted there; anything but a regular file is refused (`InvalidInput`,
/// "not a regular file").
pub fn open_regular(path: &Path, options: &mut fs::OpenOptions) -> io::Result<fs::File> {
    #[cfg(target_os = "linux")]
    {
        use std::os::unix::fs::OpenOptionsExt as _;
        let flags = rustix::fs::OFlags::NOFOLLOW | rustix::fs::OFlags::NONBLOCK;
        options.custom_flags(flags.bits() as i32);
    }
    #[cfg(not(target_os = "linux"))]
    if fs::symlink_metadata(path).is_ok_and(|meta| !meta.file_type().is_file()) {
        return Err(not_regular());
    }
    let file = match options.open(path) {
        Ok(file) => file,
        // What O_NOFOLLOW answers for a link, and a FIFO opened to write with no reader.
        #[cfg(target_os = "linux")]
        Err(e)
            if [rustix::io::Errno::LOOP, rustix::io::Errno::NXIO]
                .iter()
                .any(|errno| e.raw_os_error() == Some(errno.raw_os_error())) =>
        {
            return Err(not_regular());
        }
        Err(e) => return Err(e),
    };
    if !file.metadata()?.file_type().is_file() {
        return Err(not_regular());
    }
    Ok(file)
}

fn not_regular() -> io::Error {
    io::Error::new(
        io::ErrorKind::InvalidInput,
        "not a regular file (a link, a FIFO or a device?); not opened",
    )
}

/// Syncs a folder so that entries created or renamed in it survive a crash.
pub fn sync_dir(dir: &Path) -> io::Result<()> {
    #[cfg(unix)]
    {
        fs::File::open(dir)?.sync_all()
    }
    #[cfg(not(unix))]
    {
        // Other systems cannot open a folder as a file; their renames are journaled.
        let _ = dir;
        Ok(())
    }
}

/// How [`write_atomic`] treats an existing file at the target path.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Existing {
    Replace,
    Keep,
}

/// Writes `bytes` to `dir/name` through a synced temporary file in the same folder, a rename
/// and a folder fsync. With [`Existing::Keep`] an existing file is left alone and the error
/// kind is `AlreadyExists`.
pub fn write_atomic(dir: &Path, name: &str, bytes: &[u8], existing: Existing) -> io::Result<()> {
    let mut tmp = tempfile::Builder::new()
        .prefix(TEMP_PREFIX)
        .tempfile_in(dir)?;
    tmp.write_all(bytes)?;
    tmp.as_file().sync_all()?;
    let target = dir.join(name);
    match existing {
        Existing::Replace => tmp.persist(&target).map(drop).map_err(|e| e.error)?,
        Existing::Keep => tmp
            .persist_noclobber(&target)
            .map(drop)
            .map_err(|e| e.error)?,
    }
    sync_dir(dir)
}

/// Creates `dir` and any missing parents, syncing each parent whose entries changed.
pub fn create_dir_durably(dir: &Path) -> io::Result<()> {
    if dir.is_dir() {
        return Ok(());
    }
    let parent = dir.parent().filter(|p| !p.as_os_str().is_empty());
    if let Some(parent) = parent {
        create_dir_durably(parent)?;
    }
    match fs::create_dir(dir) {
        Ok(()) => {}
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => return Ok(()),
        Err(e) => return Err(e),
    }
    if let Some(parent) = parent {
        sync_dir(parent)?;
    }
    Ok(())
}

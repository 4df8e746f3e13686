//! Durable file operations: whole files replaced atomically, and folder fsyncs.
//!
//! A rename is only durable once the folder holding it is synced (`persist` alone does not
//! fsync), and a new file only exists after a crash once its folder entry is synced.

use std::fs;
use std::io::{self, Write};
use std::path::Path;

/// The prefix of every temporary file the store writes; readers skip such files.
pub const TEMP_PREFIX: &str = ".ferry-tmp-";

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

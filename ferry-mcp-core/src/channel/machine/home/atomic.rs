//! Atomic whole-file writes for the machine-local state: a temporary file in the same
//! folder, written and fsynced, renamed over the target, then the folder fsynced so the
//! rename itself survives a crash. Every file is created 0600 (the temporary file is
//! created that way), folders 0700: the state folder holds keys.

use std::fs;
use std::io;
use std::path::Path;

use super::{HomeError, io_err};
use crate::channel::log::store::durable;

/// Creates `dir` (and its parents) as 0700 folders.
pub fn create_private_dir(dir: &Path) -> Result<(), HomeError> {
    let mut builder = fs::DirBuilder::new();
    builder.recursive(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::DirBuilderExt;
        builder.mode(0o700);
    }
    builder.create(dir).map_err(io_err(dir))
}

fn sync_dir(dir: &Path) -> Result<(), HomeError> {
    durable::sync_dir(dir).map_err(io_err(dir))
}

/// Replaces `path` with `bytes`, durably and atomically, as a 0600 file.
pub fn write(path: &Path, bytes: &[u8]) -> Result<(), HomeError> {
    write_inner(path, bytes, true).map(drop)
}

/// Creates `path` with `bytes` like [`write`], unless a file is already there (even one
/// created a moment ago by another process): returns whether this call created it.
pub fn write_new(path: &Path, bytes: &[u8]) -> Result<bool, HomeError> {
    write_inner(path, bytes, false)
}

/// Through the store's one atomic write (a synced temporary file, which tempfile makes 0600,
/// renamed into place, the folder synced), in a 0700 folder.
fn write_inner(path: &Path, bytes: &[u8], replace: bool) -> Result<bool, HomeError> {
    let dir = path.parent().unwrap_or(Path::new("."));
    create_private_dir(dir)?;
    let name = path
        .file_name()
        .and_then(|name| name.to_str())
        .ok_or_else(|| io_err(path)(io::Error::other("not a file name")))?;
    let existing = if replace {
        durable::Existing::Replace
    } else {
        durable::Existing::Keep
    };
    match durable::write_atomic(dir, name, bytes, existing) {
        Ok(()) => Ok(true),
        Err(err) if !replace && err.kind() == io::ErrorKind::AlreadyExists => Ok(false),
        Err(err) => Err(io_err(path)(err)),
    }
}

/// Removes `path` durably; returns whether it existed.
pub fn remove(path: &Path) -> Result<bool, HomeError> {
    match fs::remove_file(path) {
        Ok(()) => {
            sync_dir(path.parent().unwrap_or(Path::new(".")))?;
            Ok(true)
        }
        Err(err) if err.kind() == io::ErrorKind::NotFound => Ok(false),
        Err(err) => Err(io_err(path)(err)),
    }
}

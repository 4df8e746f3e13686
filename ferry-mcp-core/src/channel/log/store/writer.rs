//! Appending to one log, durably and without forking its chain.
//!
//! Every append takes an exclusive lock on the log file, reads what another process of the
//! same agent may have appended since (verifying it, as any reader does), and continues from
//! the **verified** tip: the highest entry this machine ever verified in the log, never a line
//! found by scanning the file (a copied old line, or junk, could set a scan back). It appends
//! one line, `sync_data`s, and only then returns: an acknowledged entry survives a crash. A
//! torn tail left by a crash is never extended: the new line starts on a fresh line, so the
//! fragment stays a separate, reported, excluded line. An append that fails (a full disk) cuts
//! the log back to where it was, so a command that says it failed wrote nothing.

use std::fs::{File, OpenOptions};
use std::io::{self, Read, Seek, SeekFrom, Write};
use std::path::PathBuf;

use serde_json::Value;

use super::{Channel, MAX_LINE_LEN, StoreError, durable};
use crate::channel::log::entry::{self, Entry, VerifiedEntry};
use crate::channel::log::keys::{PublicKey, SecretKey};
use crate::channel::log::names::{AgentName, ProjectId};
use crate::channel::log::reader::{IntegrityProblem, LogId, LogState, Reader};
use crate::time::Timestamp;

/// Appends entries to the log of one (author, key). Get one from [`Channel::writer`].
#[derive(Debug)]
pub struct LogWriter {
    path: PathBuf,
    dir: PathBuf,
    file: File,
    project: ProjectId,
    id: LogId,
    key: SecretKey,
    /// The writer's own reader of its log: where the verified tip comes from.
    reader: Reader,
    /// Problems its reader found in the log (lines another process or an intruder wrote).
    problems: Vec<IntegrityProblem>,
}

impl LogWriter {
    pub(super) fn open(
        channel: &Channel,
        author: &AgentName,
        key: &SecretKey,
        verified: Option<LogState>,
    ) -> Result<LogWriter, StoreError> {
        channel.check_own_folders()?;
        let path = channel.log_path(author, &key.public_key());
        let dir = path.parent().expect("a log path has a folder").to_owned();
        // A synced peer could plant a link at our folder or path; appending through it
        // would write outside the channel.
        if std::fs::symlink_metadata(&dir).is_ok_and(|meta| !meta.file_type().is_dir()) {
            return Err(StoreError::NotRegular(dir));
        }
        durable::create_dir_durably(&dir).map_err(StoreError::io(&dir))?;
        let existed = match std::fs::symlink_metadata(&path) {
            Ok(meta) if meta.file_type().is_file() => true,
            Ok(_) => return Err(StoreError::NotRegular(path)),
            Err(e) if e.kind() == io::ErrorKind::NotFound => false,
            Err(e) => return Err(StoreError::io(&path)(e)),
        };
        // Checked again as it is opened: a FIFO or link put there since is refused, not waited on.
        let file = durable::open_regular(
            &path,
            OpenOptions::new().read(true).append(true).create(true),
        )
        .map_err(|e| match e.kind() {
            io::ErrorKind::InvalidInput => StoreError::NotRegular(path.clone()),
            _ => StoreError::io(&path)(e),
        })?;
        if !existed {
            durable::sync_dir(&dir).map_err(StoreError::io(&dir))?;
        }
        let id = LogId {
            author: author.clone(),
            key: key.public_key(),
        };
        Ok(LogWriter {
            reader: Reader::for_log(channel, &id, verified),
            path,
            dir: channel.dir().to_owned(),
            file,
            project: channel.project().clone(),
            id,
            key: SecretKey::from_bytes(&key.to_bytes()),
            problems: Vec::new(),
        })
    }

    #[cfg(feature = "internals")]
    pub fn path(&self) -> &std::path::Path {
        &self.path
    }

    pub fn author(&self) -> &AgentName {
        &self.id.author
    }

    pub fn key(&self) -> PublicKey {
        self.key.public_key()
    }

    /// The problems the writer's reader found in its log so far (taken).
    pub fn take_problems(&mut self) -> Vec<IntegrityProblem> {
        std::mem::take(&mut self.problems)
    }

    /// Appends one entry and returns it once it is durable on disk.
    pub fn append(
        &mut self,
        kind: &str,
        body: Value,
        now: Timestamp,
    ) -> Result<VerifiedEntry, StoreError> {
        entry::check_kind(kind)?;
        self.file.lock().map_err(StoreError::io(&self.path))?;
        let result = self.append_locked(kind, body, now);
        let unlocked = self.file.unlock().map_err(StoreError::io(&self.path));
        let entry = result?;
        unlocked?;
        Ok(entry)
    }

    fn append_locked(
        &mut self,
        kind: &str,
        body: Value,
        now: Timestamp,
    ) -> Result<VerifiedEntry, StoreError> {
        // What another process of this agent appended since: read and verified like any log.
        let problems = self.reader.poll_log(&self.id, &mut |_| {});
        self.problems.extend(problems);
        let len = self
            .file
            .metadata()
            .map_err(StoreError::io(&self.path))?
            .len();
        let ends_with_newline = self.ends_with_newline(len)?;
        let mut tip = self.reader.write_tip(&self.id, len, ends_with_newline);
        if !ends_with_newline
            && let Some(state) = self.reader.log(&self.id)
            && let Some(found) = state.unterminated_tip(&self.dir, len)
        {
            // A complete entry that lost only its newline in a crash is the tip: the newline
            // written before the next line completes it.
            tip.seq = found.seq();
            tip.hash = Some(*found.hash());
        }
        let signed = Entry {
            project: self.project.clone(),
            author: self.id.author.clone(),
            key: self.key.public_key(),
            seq: tip.seq + 1,
            prev: tip.hash,
            kind: kind.to_owned(),
            time: now,
            body,
        }
        .sign(&self.key)?;
        if signed.line.len() > MAX_LINE_LEN {
            return Err(StoreError::EntryTooLarge {
                len: signed.line.len(),
            });
        }
        let mut bytes = Vec::with_capacity(signed.line.len() + 2);
        if tip.needs_newline {
            bytes.push(b'\n');
        }
        bytes.extend_from_slice(signed.line.as_bytes());
        bytes.push(b'\n');
        // One write call on an O_APPEND handle: the line lands at the end, whole or torn.
        if let Err(cause) = self
            .file
            .write_all(&bytes)
            .and_then(|()| self.file.sync_data())
        {
            self.undo_to(len);
            return Err(StoreError::io(&self.path)(cause));
        }
        // Our own line is read (and verified) like any other, so the tip stays the verified one.
        let problems = self.reader.poll_log(&self.id, &mut |_| {});
        self.problems.extend(problems);
        Ok(signed.entry)
    }

    /// Cuts the log back to `len` bytes, its length before an append that failed (a full disk
    /// takes part of a line: the page it fills first), so that an append that says it failed
    /// left nothing: no torn line reported for ever after, no entry a later newline completes
    /// (issue 17, finding 9). Only this agent's processes write the log, and the lock is held.
    /// Best effort: a cut that fails too leaves a torn line, reported and never extended.
    fn undo_to(&mut self, len: u64) {
        if self.file.set_len(len).is_ok() {
            let _ = self.file.sync_data();
        }
    }

    /// Whether the file is empty or ends with a newline (one byte read).
    fn ends_with_newline(&mut self, len: u64) -> Result<bool, StoreError> {
        if len == 0 {
            return Ok(true);
        }
        let mut last = [0u8; 1];
        self.file
            .seek(SeekFrom::Start(len - 1))
            .and_then(|_| self.file.read_exact(&mut last))
            .map_err(StoreError::io(&self.path))?;
        Ok(last[0] == b'\n')
    }
}

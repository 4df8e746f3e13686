//! Appending to one log, durably and without forking its chain.
//!
//! Every append takes an exclusive lock on the log file, finds the chain's tip as it is on
//! disk now (another process of the same agent may have appended since), appends one line,
//! `sync_data`s, and only then returns: an acknowledged entry survives a crash. A torn tail
//! left by a crash is never extended: the new line starts on a fresh line, so the fragment
//! stays a separate, reported, excluded line.

use std::fs::{File, OpenOptions};
use std::io::{self, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

use serde_json::Value;

use super::{Channel, MAX_LINE_LEN, StoreError, durable};
use crate::channel::entry::{self, Entry, EntryHash, VerifiedEntry};
use crate::channel::keys::{PublicKey, SecretKey};
use crate::channel::names::{AgentName, ProjectId};
use crate::time::Timestamp;

/// The end of a log's chain as found on disk.
#[derive(Debug, Clone, Copy)]
struct Tip {
    /// File length the tip was computed for.
    len: u64,
    seq: u64,
    hash: Option<EntryHash>,
    /// Whether the file ends inside a line, so the next line must start with a newline.
    needs_newline: bool,
}

/// Appends entries to the log of one (author, key). Get one from [`Channel::writer`].
#[derive(Debug)]
pub struct LogWriter {
    path: PathBuf,
    file: File,
    project: ProjectId,
    author: AgentName,
    key: SecretKey,
    /// The tip after this writer's last append; reused while the file has not grown.
    known_tip: Option<Tip>,
}

impl LogWriter {
    pub(super) fn open(
        channel: &Channel,
        author: &AgentName,
        key: &SecretKey,
    ) -> Result<LogWriter, StoreError> {
        let path = channel.log_path(author, &key.public_key());
        let dir = path.parent().expect("a log path has a folder");
        durable::create_dir_durably(dir).map_err(StoreError::io(dir))?;
        // A synced peer could plant a link at our path; appending through it would write
        // outside the channel.
        if is_symlink(dir) {
            return Err(StoreError::NotRegular(dir.to_owned()));
        }
        let existed = match std::fs::symlink_metadata(&path) {
            Ok(meta) if meta.file_type().is_file() => true,
            Ok(_) => return Err(StoreError::NotRegular(path)),
            Err(e) if e.kind() == io::ErrorKind::NotFound => false,
            Err(e) => return Err(StoreError::io(&path)(e)),
        };
        let file = OpenOptions::new()
            .read(true)
            .append(true)
            .create(true)
            .open(&path)
            .map_err(StoreError::io(&path))?;
        if !existed {
            durable::sync_dir(dir).map_err(StoreError::io(dir))?;
        }
        Ok(LogWriter {
            path,
            file,
            project: channel.project().clone(),
            author: author.clone(),
            key: SecretKey::from_bytes(&key.to_bytes()),
            known_tip: None,
        })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    pub fn author(&self) -> &AgentName {
        &self.author
    }

    pub fn key(&self) -> PublicKey {
        self.key.public_key()
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
        if result.is_err() {
            self.known_tip = None;
        }
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
        let len = self
            .file
            .metadata()
            .map_err(StoreError::io(&self.path))?
            .len();
        let tip = match self.known_tip {
            Some(tip) if tip.len == len => tip,
            _ => self.find_tip(len).map_err(StoreError::io(&self.path))?,
        };
        let signed = Entry {
            project: self.project.clone(),
            author: self.author.clone(),
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
        self.file
            .write_all(&bytes)
            .and_then(|()| self.file.sync_data())
            .map_err(StoreError::io(&self.path))?;
        self.known_tip = Some(Tip {
            len: len + bytes.len() as u64,
            seq: signed.entry.seq(),
            hash: Some(*signed.entry.hash()),
            needs_newline: false,
        });
        Ok(signed.entry)
    }

    /// Scans back from the end for the valid entries of this log and takes the one with the
    /// highest seq (the first of equals, as readers do). Not simply the last line: anyone who
    /// can write to the synced folder could append a copy of an older line, and a tip taken
    /// from it would give every later entry a seq that readers exclude as a duplicate.
    fn find_tip(&mut self, len: u64) -> io::Result<Tip> {
        let mut window: u64 = 64 * 1024;
        loop {
            let start = len.saturating_sub(window);
            let mut buf = Vec::with_capacity((len - start) as usize);
            self.file.seek(SeekFrom::Start(start))?;
            (&mut self.file).take(len - start).read_to_end(&mut buf)?;
            let needs_newline = buf.last().is_some_and(|&b| b != b'\n');
            // The first piece may be cut by the window; it only counts when the window
            // reaches the start of the file.
            let mut pieces: Vec<&[u8]> = buf.split(|&b| b == b'\n').collect();
            if start > 0 {
                pieces.remove(0);
            }
            let mut best: Option<(u64, EntryHash)> = None;
            for piece in pieces.iter().rev() {
                if piece.is_empty() {
                    continue;
                }
                // Verifying is the cost: skip lines that cannot beat the tip found so far.
                if let (Some((tip_seq, _)), Some(claim)) = (best, claimed_seq(piece))
                    && claim < tip_seq
                {
                    continue;
                }
                let Ok(found) = entry::decode_line(piece) else {
                    continue;
                };
                if found.project() != &self.project
                    || found.author() != &self.author
                    || found.key() != &self.key.public_key()
                {
                    continue;
                }
                if best.is_none_or(|(seq, _)| found.seq() >= seq) {
                    best = Some((found.seq(), *found.hash()));
                }
            }
            if let Some((seq, hash)) = best {
                // A complete entry that lost only its newline in a crash is the tip: the
                // newline written before the next line completes it.
                return Ok(Tip {
                    len,
                    seq,
                    hash: Some(hash),
                    needs_newline,
                });
            }
            if start == 0 {
                return Ok(Tip {
                    len,
                    seq: 0,
                    hash: None,
                    needs_newline,
                });
            }
            window = window.saturating_mul(4);
        }
    }
}

/// The seq a line claims, read without parsing or verifying it (the reference writer puts
/// `"seq"` before every free-text field). Only used to skip lines that cannot raise the tip;
/// a line is never trusted on its claim.
fn claimed_seq(line: &[u8]) -> Option<u64> {
    const FIELD: &[u8] = b",\"seq\":";
    let at = line.windows(FIELD.len()).position(|w| w == FIELD)? + FIELD.len();
    let digits = line[at..].iter().take_while(|b| b.is_ascii_digit()).count();
    std::str::from_utf8(&line[at..at + digits])
        .ok()?
        .parse()
        .ok()
}

fn is_symlink(path: &Path) -> bool {
    std::fs::symlink_metadata(path).is_ok_and(|meta| meta.file_type().is_symlink())
}

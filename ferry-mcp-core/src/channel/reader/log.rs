//! Reading one log incrementally: byte offset, chain state, and the per-entry checks.
//!
//! The rules, also in `docs/channel-format.md`:
//! - a line that is not a validly signed entry of this log (wrong project, key or author)
//!   is excluded;
//! - an entry whose seq is not above the last accepted one is excluded (`out_of_order` when
//!   it fills a reported gap, `duplicate_seq` otherwise): entries are delivered per log in
//!   strictly increasing seq order;
//! - any other validly signed entry is accepted, even after a gap (`missing_entries`) or
//!   with a `prev` that is not the hash of the entry before it (`chain_mismatch`): the
//!   signature proves the key holder wrote it, and the chain only detects loss and tampering.

use std::fs::File;
use std::io::{BufRead, BufReader, Read, Seek, SeekFrom, Take};
use std::path::{Path, PathBuf};

use super::problem::{IntegrityProblem, ProblemKind};
use crate::channel::entry::{self, EntryHash, LineError, VerifiedEntry};
use crate::channel::keys::PublicKey;
use crate::channel::names::{AgentName, ProjectId};
use crate::channel::store::MAX_LINE_LEN;

/// Where an accepted entry's line is, so a cursor can re-read it without a full scan.
#[derive(Debug, Clone, Copy)]
struct Located {
    seq: u64,
    offset: u64,
    line: u64,
}

/// The reader's state for one log.
#[derive(Clone)]
pub(super) struct LogState {
    author: AgentName,
    key: PublicKey,
    rel_path: PathBuf,
    /// Bytes of complete lines consumed.
    offset: u64,
    /// Complete lines consumed.
    lines: u64,
    last_seq: u64,
    last_hash: Option<EntryHash>,
    /// Seq ranges (inclusive) reported missing; a late entry inside one is out of order.
    gaps: Vec<(u64, u64)>,
    accepted: Vec<Located>,
    /// Offset of an incomplete last line already reported, to report it once.
    torn_reported_at: Option<u64>,
    /// Entries up to this seq were delivered before the log was truncated and re-read.
    delivered_up_to: u64,
    /// Whether the log's current failure to be read was already reported.
    unreadable_reported: bool,
}

impl std::fmt::Debug for LogState {
    // The index of accepted entries can hold a whole history: show its size only.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LogState")
            .field("path", &self.rel_path)
            .field("offset", &self.offset)
            .field("lines", &self.lines)
            .field("last_seq", &self.last_seq)
            .field("accepted", &self.accepted.len())
            .field("gaps", &self.gaps)
            .finish_non_exhaustive()
    }
}

/// Context shared by every log of one poll.
pub(super) struct Sink<'a> {
    pub project: &'a ProjectId,
    pub entries: &'a mut Vec<VerifiedEntry>,
    pub problems: &'a mut Vec<IntegrityProblem>,
}

impl LogState {
    pub fn new(author: AgentName, key: PublicKey, rel_path: PathBuf) -> Self {
        Self {
            author,
            key,
            rel_path,
            offset: 0,
            lines: 0,
            last_seq: 0,
            last_hash: None,
            gaps: Vec::new(),
            accepted: Vec::new(),
            torn_reported_at: None,
            delivered_up_to: 0,
            unreadable_reported: false,
        }
    }

    pub fn author(&self) -> &AgentName {
        &self.author
    }

    pub fn key(&self) -> &PublicKey {
        &self.key
    }

    pub fn last_seq(&self) -> u64 {
        self.last_seq
    }

    fn problem(&self, line: Option<u64>, kind: ProblemKind, detail: String) -> IntegrityProblem {
        IntegrityProblem {
            path: self.rel_path.clone(),
            line,
            kind,
            detail,
        }
    }

    fn report_unreadable(&self, error: &std::io::Error, sink: &mut Sink<'_>) {
        sink.problems
            .push(self.problem(None, ProblemKind::Unreadable, error.to_string()));
    }

    /// A buffered reader of the log's bytes from `start` to `end`; a failure to open is
    /// reported and gives `None`.
    fn open_range(
        &self,
        path: &Path,
        start: u64,
        end: u64,
        sink: &mut Sink<'_>,
    ) -> Option<BufReader<Take<File>>> {
        let opened = File::open(path).and_then(|mut file| {
            file.seek(SeekFrom::Start(start))?;
            Ok(file)
        });
        match opened {
            Ok(file) => Some(BufReader::with_capacity(64 * 1024, file.take(end - start))),
            Err(e) => {
                self.report_unreadable(&e, sink);
                None
            }
        }
    }

    /// Reads the complete lines appended since the last call.
    pub fn read_new(&mut self, channel_dir: &Path, sink: &mut Sink<'_>) {
        let path = channel_dir.join(&self.rel_path);
        // A stat first: most polls find most logs unchanged and open nothing.
        let len = match std::fs::metadata(&path) {
            Ok(meta) => meta.len(),
            Err(e) => {
                if !self.unreadable_reported {
                    self.unreadable_reported = true;
                    self.report_unreadable(&e, sink);
                }
                return;
            }
        };
        self.unreadable_reported = false;
        if len < self.offset {
            sink.problems.push(self.problem(
                None,
                ProblemKind::Truncated,
                format!(
                    "the log shrank from {} to {len} bytes; reading it again from the start",
                    self.offset
                ),
            ));
            let delivered = self.delivered_up_to.max(self.last_seq);
            *self = Self::new(self.author.clone(), self.key, self.rel_path.clone());
            self.delivered_up_to = delivered;
        }
        if len == self.offset {
            return;
        }
        let Some(mut reader) = self.open_range(&path, self.offset, len, sink) else {
            return;
        };
        let mut line = Vec::new();
        loop {
            line.clear();
            // Bounded: a line longer than any writer makes is never held in memory whole.
            let limit = MAX_LINE_LEN as u64 + 1;
            match (&mut reader).take(limit).read_until(b'\n', &mut line) {
                Ok(0) => break,
                Ok(_) => {}
                Err(e) => {
                    self.report_unreadable(&e, sink);
                    return;
                }
            }
            let mut consumed = line.len() as u64;
            let mut complete = line.last() == Some(&b'\n');
            let overlong = !complete && line.len() > MAX_LINE_LEN;
            if overlong {
                match skip_line(&mut reader) {
                    Ok((skipped, found_end)) => {
                        consumed += skipped;
                        complete = found_end;
                    }
                    Err(e) => {
                        self.report_unreadable(&e, sink);
                        return;
                    }
                }
            }
            if !complete {
                // Not consumed: it is read again once its writer finishes it.
                if self.torn_reported_at != Some(self.offset) {
                    self.torn_reported_at = Some(self.offset);
                    sink.problems.push(self.problem(
                        Some(self.lines + 1),
                        ProblemKind::TornLine,
                        "incomplete last line: a writer crashed or is still appending".to_owned(),
                    ));
                }
                break;
            }
            let line_no = self.lines + 1;
            if overlong {
                let detail = format!("line is longer than {MAX_LINE_LEN} bytes");
                sink.problems
                    .push(self.problem(Some(line_no), ProblemKind::Malformed, detail));
            } else {
                self.check_line(&line[..line.len() - 1], line_no, self.offset, sink);
            }
            self.lines = line_no;
            self.offset += consumed;
        }
    }

    fn check_line(&mut self, line: &[u8], line_no: u64, offset: u64, sink: &mut Sink<'_>) {
        let at = Some(line_no);
        let found = match entry::decode_line(line) {
            Ok(found) => found,
            Err(error) => {
                let kind = match error {
                    LineError::Torn => ProblemKind::TornLine,
                    LineError::Malformed(_) | LineError::BadEntry(_) => ProblemKind::Malformed,
                    LineError::UnsupportedVersion(_) => ProblemKind::UnsupportedVersion,
                    LineError::BadSignature => ProblemKind::BadSignature,
                };
                let detail = match error {
                    LineError::Torn => "incomplete line followed by more lines".to_owned(),
                    other => other.to_string(),
                };
                sink.problems.push(self.problem(at, kind, detail));
                return;
            }
        };
        if found.project() != sink.project {
            let detail = format!(
                "entry of project {:?}, not this one",
                found.project().as_str()
            );
            sink.problems
                .push(self.problem(at, ProblemKind::WrongProject, detail));
            return;
        }
        if found.key() != &self.key {
            let detail = format!("signed by key {}, not the log's key", found.key());
            sink.problems
                .push(self.problem(at, ProblemKind::WrongKey, detail));
            return;
        }
        if found.author() != &self.author {
            let detail = format!(
                "names author {:?} but is in the log of {:?}",
                found.author().as_str(),
                self.author.as_str()
            );
            sink.problems
                .push(self.problem(at, ProblemKind::ForgedAuthor, detail));
            return;
        }
        let seq = found.seq();
        if seq <= self.last_seq {
            let in_gap = self.gaps.iter().any(|&(lo, hi)| (lo..=hi).contains(&seq));
            let (kind, detail) = if in_gap {
                (
                    ProblemKind::OutOfOrder,
                    format!("entry {seq} comes after entry {}", self.last_seq),
                )
            } else {
                (
                    ProblemKind::DuplicateSeq,
                    format!("a second entry {seq}: the log forked or a line repeats"),
                )
            };
            sink.problems.push(self.problem(at, kind, detail));
            return;
        }
        if seq > self.last_seq + 1 {
            let (lo, hi) = (self.last_seq + 1, seq - 1);
            self.gaps.push((lo, hi));
            let detail = if lo == hi {
                format!("entry {lo} is missing")
            } else {
                format!("entries {lo} to {hi} are missing")
            };
            sink.problems
                .push(self.problem(at, ProblemKind::MissingEntries, detail));
        } else if self.last_seq > 0 && found.prev() != self.last_hash.as_ref() {
            let detail = format!("prev is not the hash of entry {}", self.last_seq);
            sink.problems
                .push(self.problem(at, ProblemKind::ChainMismatch, detail));
        }
        self.last_seq = seq;
        self.last_hash = Some(*found.hash());
        self.accepted.push(Located {
            seq,
            offset,
            line: line_no,
        });
        if seq > self.delivered_up_to {
            sink.entries.push(found);
        }
    }

    /// Re-reads the accepted entries with seq above `after`, up to what was consumed.
    pub fn read_since(&self, channel_dir: &Path, after: u64, sink: &mut Sink<'_>) {
        let first = self.accepted.partition_point(|l| l.seq <= after);
        let wanted = &self.accepted[first..];
        let Some(start) = wanted.first() else {
            return;
        };
        let path = channel_dir.join(&self.rel_path);
        let Some(mut reader) = self.open_range(&path, start.offset, self.offset, sink) else {
            return;
        };
        let mut offset = start.offset;
        let mut next = wanted.iter().peekable();
        let mut line = Vec::new();
        while let Some(&&want) = next.peek() {
            line.clear();
            match reader.read_until(b'\n', &mut line) {
                Ok(0) | Err(_) => break,
                Ok(_) => {}
            }
            let line_offset = offset;
            offset += line.len() as u64;
            if line_offset != want.offset {
                continue;
            }
            next.next();
            let content = line.strip_suffix(b"\n").unwrap_or(&line);
            match entry::decode_line(content) {
                Ok(found) if found.seq() == want.seq => sink.entries.push(found),
                _ => sink.problems.push(self.problem(
                    Some(want.line),
                    ProblemKind::Rewritten,
                    format!("entry {} changed after it was read", want.seq),
                )),
            }
        }
        if let Some(missing) = next.next() {
            sink.problems.push(self.problem(
                Some(missing.line),
                ProblemKind::Rewritten,
                "the log changed after it was read".to_owned(),
            ));
        }
    }
}

/// Skips to just after the next newline: the bytes skipped, and whether a newline was found.
fn skip_line(reader: &mut impl BufRead) -> std::io::Result<(u64, bool)> {
    let mut skipped = 0u64;
    loop {
        let buf = reader.fill_buf()?;
        if buf.is_empty() {
            return Ok((skipped, false));
        }
        if let Some(end) = buf.iter().position(|&b| b == b'\n') {
            reader.consume(end + 1);
            return Ok((skipped + end as u64 + 1, true));
        }
        let len = buf.len();
        reader.consume(len);
        skipped += len as u64;
    }
}

//! Reading one log incrementally: byte offset, chain state, the verified anchor, and the
//! per-entry checks.
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
//!
//! **Once verified, never forgotten.** The state remembers the highest entry this machine ever
//! verified in the log (`high`) and where the last accepted line is (`tip_at`). A log that got
//! shorter than what was read (`rolled_back`), whose last verified line no longer holds that
//! entry (`diverged`) or that disappeared (`vanished`) is reported; it is read again from the
//! start without delivering anything twice, and the writer keeps counting from `high`.
//!
//! Memory does not grow with the history: no per-entry index is kept, and lines are read in
//! bounded chunks whose signatures are checked on every core.

use std::fs::File;
use std::io::{BufRead, BufReader, Read, Seek, SeekFrom, Take};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::folder::{ChannelFolder, Kind};
use super::problem::{Cleared, IntegrityProblem, ProblemKind};
use crate::channel::log::entry::{self, EntryHash, LineError, VerifiedEntry};
use crate::channel::log::keys::{PublicKey, Verifier};
use crate::channel::log::names::{AgentName, ProjectId};
use crate::channel::log::stamp::FileStamp;
use crate::channel::log::store::{MAX_LINE_LEN, durable, rel_log_path};

/// Lines are checked in chunks of at most this many bytes, so a poll of a huge log holds a
/// bounded amount of it in memory.
const CHUNK_BYTES: usize = 4 << 20;
/// Below this many lines a chunk is checked on the calling thread: starting threads costs more.
const PARALLEL_MIN_LINES: usize = 64;

/// The reader's state for one log; what the verified state keeps of it between processes
/// (through [`KeptLog`], which leaves out what the log's id says).
#[derive(Clone, PartialEq, Eq)]
pub struct LogState {
    author: AgentName,
    key: PublicKey,
    /// The key in hex, as log lines name it (compared as text, never decoded again); made when
    /// a line is first read.
    key_hex: Option<String>,
    /// The key decompressed once (when a line is first checked), for every line's signature.
    verifier: Option<Verifier>,
    rel_path: PathBuf,
    /// Bytes of complete lines consumed.
    offset: u64,
    /// Complete lines consumed.
    lines: u64,
    last_seq: u64,
    last_hash: Option<EntryHash>,
    /// Where the line of the last accepted entry starts, and its length with the newline:
    /// the anchor a later open checks.
    tip_at: u64,
    tip_len: u64,
    /// The highest entry this machine ever verified in this log, kept across rollbacks.
    high: Option<(u64, EntryHash)>,
    /// Seq ranges (inclusive) reported missing; a late entry inside one is out of order.
    gaps: Vec<(u64, u64)>,
    /// Offset and file length of an incomplete last line already reported, to report it once
    /// and not read it again while the file does not change.
    torn_seen: Option<(u64, u64)>,
    /// Entries up to this seq were delivered before the log was read again from the start.
    delivered_up_to: u64,
    /// The file as it was when it was last read to its end: while it is still so, nothing in
    /// it changed, and a later open needs no read to check the anchor.
    stamp: Option<FileStamp>,
    /// On a read again from the start: how many entries at or below `delivered_up_to` are
    /// still in the log (the rest went missing).
    reread_verified: u64,

    /// Whether the anchor was checked since this state was loaded.
    anchor_checked: bool,
    /// Whether the log's current failure to be read (or absence) was already reported. Kept
    /// between processes: the problem was kept (or counted) when it was reported, and
    /// reporting it again at every open would count it again once the problems are full.
    unreadable_reported: bool,
    /// Whether the poll running now found the log's file listed.
    present: bool,
    /// A checkpoint's tip for this log (ADR 0023), for the one poll of a new machine that
    /// starts from it: never kept.
    vouch: Option<Vouch>,
}

/// What a checkpoint vouches for in one log: the entries up to `seq`, the last of which
/// hashes to `hash`. Their signatures are not checked; the chain must reach the tip intact.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Vouch {
    seq: u64,
    hash: EntryHash,
    /// Why the chain does not hold up to the tip, once that is known.
    broken: Option<String>,
    /// Whether the entry at the tip was read, with the tip's hash.
    reached: bool,
}

impl Vouch {
    pub(super) fn new(seq: u64, hash: EntryHash) -> Self {
        Self {
            seq,
            hash,
            broken: None,
            reached: false,
        }
    }

    /// Whether the chain held up to the tip; why not otherwise.
    pub(super) fn outcome(&self) -> Result<(), String> {
        match &self.broken {
            Some(why) => Err(why.clone()),
            None if !self.reached => Err(format!(
                "the log ends before entry {} that the checkpoint names",
                self.seq
            )),
            None => Ok(()),
        }
    }
}

impl std::fmt::Debug for LogState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LogState")
            .field("path", &self.rel_path)
            .field("offset", &self.offset)
            .field("lines", &self.lines)
            .field("last_seq", &self.last_seq)
            .field("high", &self.high.map(|(seq, _)| seq))
            .field("gaps", &self.gaps)
            .finish_non_exhaustive()
    }
}

/// What the verified state keeps of one log, beside its id: everything [`LogState`] holds
/// between processes except what the id says (author, key, and so the path,
/// `logs/<author>/<key-hex>.jsonl`), and the highest verified entry when it is the last
/// accepted one. A hundred logs are a few kilobytes less to check and decode at every open.
#[derive(Serialize, Deserialize)]
pub(super) struct KeptLog {
    offset: u64,
    lines: u64,
    last_seq: u64,
    last_hash: Option<EntryHash>,
    tip_at: u64,
    tip_len: u64,
    high: KeptHigh,
    gaps: Vec<(u64, u64)>,
    torn_seen: Option<(u64, u64)>,
    delivered_up_to: u64,
    stamp: Option<FileStamp>,
    unreadable_reported: bool,
}

/// [`LogState::high`] as kept.
#[derive(Serialize, Deserialize)]
enum KeptHigh {
    None,
    /// The last accepted entry.
    AtLast,
    At(u64, EntryHash),
}

impl LogState {
    /// What the verified state keeps of it.
    pub(super) fn kept(&self) -> KeptLog {
        let high = match self.high {
            None => KeptHigh::None,
            Some((seq, hash)) if seq == self.last_seq && Some(hash) == self.last_hash => {
                KeptHigh::AtLast
            }
            Some((seq, hash)) => KeptHigh::At(seq, hash),
        };
        KeptLog {
            offset: self.offset,
            lines: self.lines,
            last_seq: self.last_seq,
            last_hash: self.last_hash,
            tip_at: self.tip_at,
            tip_len: self.tip_len,
            high,
            gaps: self.gaps.clone(),
            torn_seen: self.torn_seen,
            delivered_up_to: self.delivered_up_to,
            stamp: self.stamp,
            unreadable_reported: self.unreadable_reported,
        }
    }

    /// The state of the log of `author` and `key` from what was kept of it, as loaded: its
    /// anchor not yet checked in this process.
    pub(super) fn from_kept(author: AgentName, key: PublicKey, kept: KeptLog) -> Self {
        let high = match kept.high {
            KeptHigh::None => None,
            KeptHigh::AtLast => kept.last_hash.map(|hash| (kept.last_seq, hash)),
            KeptHigh::At(seq, hash) => Some((seq, hash)),
        };
        Self {
            rel_path: rel_log_path(&author, &key),
            author,
            key,
            key_hex: None,
            verifier: None,
            offset: kept.offset,
            lines: kept.lines,
            last_seq: kept.last_seq,
            last_hash: kept.last_hash,
            tip_at: kept.tip_at,
            tip_len: kept.tip_len,
            high,
            gaps: kept.gaps,
            torn_seen: kept.torn_seen,
            delivered_up_to: kept.delivered_up_to,
            stamp: kept.stamp,
            reread_verified: 0,
            anchor_checked: false,
            unreadable_reported: kept.unreadable_reported,
            present: false,
            vouch: None,
        }
    }
}

/// Context shared by every log of one poll.
pub(super) struct Sink<'a> {
    pub project: &'a ProjectId,
    pub on_entry: &'a mut dyn FnMut(VerifiedEntry),
    pub problems: &'a mut Vec<IntegrityProblem>,
    /// Problems reported before that no longer hold (a log back where it was).
    pub cleared: &'a mut Vec<Cleared>,
}

/// Where the writer of this log continues: the verified tip, and whether the file ends inside
/// a line (so the next line must start with a newline).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WriteTip {
    pub seq: u64,
    pub hash: Option<EntryHash>,
    pub needs_newline: bool,
}

impl LogState {
    /// The state of a log not read yet: that of `author` signed by `key`, at the path they
    /// give.
    pub(super) fn new(author: AgentName, key: PublicKey) -> Self {
        Self {
            rel_path: rel_log_path(&author, &key),
            key_hex: None,
            verifier: None,
            author,
            key,
            offset: 0,
            lines: 0,
            last_seq: 0,
            last_hash: None,
            tip_at: 0,
            tip_len: 0,
            high: None,
            gaps: Vec::new(),
            torn_seen: None,
            delivered_up_to: 0,
            stamp: None,
            reread_verified: 0,
            anchor_checked: true,
            unreadable_reported: false,
            present: false,
            vouch: None,
        }
    }

    /// Restores what `serde(skip)` left out after loading a kept state.
    pub(super) fn after_load(&mut self) {
        self.key_hex = None;
        self.verifier = None;
        self.anchor_checked = false;
        self.unreadable_reported = false;
    }

    /// Takes a checkpoint's tip for the next read of a log read from its start (ADR 0023);
    /// none on a log already read: what this machine verified is never vouched for again.
    pub(super) fn set_vouch(&mut self, vouch: Option<Vouch>) {
        self.vouch = vouch.filter(|_| self.offset == 0 && self.last_seq == 0);
    }

    /// The checkpoint's tip taken, with what the read found of it.
    pub(super) fn take_vouch(&mut self) -> Option<Vouch> {
        self.vouch.take()
    }

    pub(super) fn mark_present(&mut self) {
        self.present = true;
    }

    /// Whether this poll found the log listed (and forgets it for the next poll).
    fn take_present(&mut self) -> bool {
        std::mem::take(&mut self.present)
    }

    pub fn author(&self) -> &AgentName {
        &self.author
    }

    pub fn key(&self) -> &PublicKey {
        &self.key
    }

    pub fn rel_path(&self) -> &Path {
        &self.rel_path
    }

    /// Whether `name` is this log's file name in its author's folder.
    pub(super) fn is_file(&self, name: &str) -> bool {
        self.rel_path.file_name().is_some_and(|own| own == name)
    }

    /// The last seq accepted from the file as it is now.
    pub fn last_seq(&self) -> u64 {
        self.last_seq
    }

    /// The hash of the last accepted entry.
    pub fn last_hash(&self) -> Option<EntryHash> {
        self.last_hash
    }

    /// Whether entries were reported missing in this log.
    pub fn has_gaps(&self) -> bool {
        !self.gaps.is_empty()
    }

    /// The highest seq this machine ever verified in this log.
    pub fn verified_seq(&self) -> u64 {
        self.high.map_or(0, |(seq, _)| seq)
    }

    /// Bytes of complete lines consumed.
    pub fn offset(&self) -> u64 {
        self.offset
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

    /// Reads the log again from the start, delivering only entries above everything delivered
    /// so far; the highest verified entry is kept for the writer.
    fn restart(&mut self) {
        let delivered = self.delivered_up_to.max(self.last_seq);
        let high = self.high;
        *self = Self::new(self.author.clone(), self.key);
        self.delivered_up_to = delivered;
        self.high = high;
    }

    /// The log disappeared: reported once; what was verified keeps counting.
    fn report_vanished(&mut self, sink: &mut Sink<'_>) {
        if self.unreadable_reported {
            return;
        }
        self.unreadable_reported = true;
        if self.verified_seq() > 0 || self.offset > 0 {
            let detail = format!(
                "the log disappeared; this machine verified {} entries of it, which keep counting here",
                self.verified_seq()
            );
            sink.problems
                .push(self.problem(None, ProblemKind::Vanished, detail));
        }
    }

    /// Checks that the last verified line still holds the entry this machine verified there.
    /// Reads one line; no signature is checked (the entry hash is compared).
    fn anchor_holds(&self, file: &mut File) -> std::io::Result<bool> {
        let Some(hash) = self.last_hash else {
            return Ok(true);
        };
        let len = self.tip_len;
        if len == 0 || len > MAX_LINE_LEN as u64 + 2 || self.tip_at + len > self.offset {
            return Ok(false);
        }
        let mut line = vec![0u8; usize::try_from(len).unwrap_or(0)];
        file.seek(SeekFrom::Start(self.tip_at))?;
        if file.read_exact(&mut line).is_err() {
            return Ok(false);
        }
        let Some(content) = line.strip_suffix(b"\n") else {
            return Ok(false);
        };
        Ok(entry::raw_entry(content).is_some_and(|raw| EntryHash::of(raw) == hash))
    }

    /// Opens the log for reading without following a link put in its place, nor waiting on a
    /// FIFO.
    fn open(&self, path: &Path) -> std::io::Result<File> {
        durable::open_regular(path, std::fs::OpenOptions::new().read(true))
    }

    /// Reads the complete lines appended since the last call, delivering each new entry.
    /// After a listing: reads what is new if the listing found the log, else reports it gone,
    /// once stats agree: a listing taken while a sync tool renames a new copy onto the log
    /// may miss its name, and the log is not gone. Those stats never go through a link (the
    /// folders above the log are stat'ed too: a linked folder is not read).
    pub(super) fn read_if_listed(&mut self, folder: &ChannelFolder, sink: &mut Sink<'_>) {
        let listed = self.take_present();
        if listed || self.is_there_unlinked(folder) {
            self.read_new(folder, sink);
        } else {
            self.report_vanished(sink);
        }
    }

    /// Whether the log is a regular file under real folders (no link on its path).
    fn is_there_unlinked(&self, folder: &ChannelFolder) -> bool {
        let is =
            |path: &Path, kind: Kind| folder.look(path).is_ok_and(|looked| looked.kind == kind);
        self.rel_path
            .ancestors()
            .skip(1)
            .filter(|dir| !dir.as_os_str().is_empty())
            .all(|dir| is(dir, Kind::Folder))
            && is(&self.rel_path, Kind::File)
    }

    pub(super) fn read_new(&mut self, folder: &ChannelFolder, sink: &mut Sink<'_>) {
        // A stat first: most polls find most logs unchanged and open nothing.
        let (len, stamp) = match folder.look(&self.rel_path) {
            Ok(looked) if looked.kind == Kind::File => (looked.len, looked.stamp),
            Ok(_) => {
                if !self.unreadable_reported {
                    self.unreadable_reported = true;
                    sink.problems.push(self.problem(
                        None,
                        ProblemKind::UnknownFile,
                        "not a regular file (a symbolic link?); not read".into(),
                    ));
                }
                return;
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                self.report_vanished(sink);
                return;
            }
            Err(e) => {
                if !self.unreadable_reported {
                    self.unreadable_reported = true;
                    self.report_unreadable(&e, sink);
                }
                return;
            }
        };
        if std::mem::take(&mut self.unreadable_reported) {
            // Gone or unreadable before, a regular file again: what was reported no longer
            // holds (a log read again after a rollback still reports that).
            sink.cleared.push(Cleared::Log(self.rel_path.clone()));
        }
        // A rollback is reported once the log was read again: only then is it known how many of
        // the entries this machine verified are gone.
        let mut rolled_back = None;
        if len < self.offset {
            rolled_back = Some((ProblemKind::RolledBack, self.offset, self.verified_seq()));
            self.restart();
        }
        let path = folder.join(&self.rel_path);
        self.read_rest(&path, len, stamp, &mut rolled_back, sink);
        if let Some((kind, before, verified)) = rolled_back {
            let gone = verified.saturating_sub(self.reread_verified);
            let what = match kind {
                ProblemKind::RolledBack => format!("the log shrank from {before} to {len} bytes"),
                _ => format!(
                    "entry {verified} that this machine verified is no longer where it was: the log was rewritten"
                ),
            };
            let entries = if gone == 1 { "entry" } else { "entries" };
            let detail = format!(
                "{what}: {gone} {entries} this machine verified {} gone from it and keep counting here; it was read again from the start",
                if gone == 1 { "is" } else { "are" }
            );
            sink.problems.push(self.problem(None, kind, detail));
        }
    }

    /// Reads what is new after the rollback check (see [`LogState::read_new`]).
    fn read_rest(
        &mut self,
        path: &Path,
        len: u64,
        stamp: Option<FileStamp>,
        rolled_back: &mut Option<(ProblemKind, u64, u64)>,
        sink: &mut Sink<'_>,
    ) {
        if self.stamp.is_some() {
            // Unchanged since it was read to its end: the anchor holds without a read. Changed
            // (even to the same length): the anchor is looked at again.
            self.anchor_checked = self.stamp == stamp;
        }
        if len == self.offset && self.anchor_checked {
            return;
        }
        if self
            .torn_seen
            .is_some_and(|(at, seen_len)| at == self.offset && seen_len == len)
            && self.anchor_checked
        {
            return;
        }
        let mut file = match self.open(path) {
            Ok(file) => file,
            Err(e) => {
                self.report_unreadable(&e, sink);
                return;
            }
        };
        if self.offset > 0 && (!self.anchor_checked || len != self.offset) {
            match self.anchor_holds(&mut file) {
                Ok(true) => {}
                Ok(false) => {
                    *rolled_back = Some((ProblemKind::Diverged, self.offset, self.verified_seq()));
                    self.restart();
                }
                Err(e) => {
                    self.report_unreadable(&e, sink);
                    return;
                }
            }
        }
        self.anchor_checked = true;
        if len == self.offset {
            self.stamp = stamp;
            return;
        }
        if let Err(e) = file.seek(SeekFrom::Start(self.offset)) {
            self.report_unreadable(&e, sink);
            return;
        }
        let mut reader = BufReader::with_capacity(64 * 1024, file.take(len - self.offset));
        let read_to_end = self.read_lines(&mut reader, len, sink);
        self.stamp = if read_to_end { stamp } else { None };
    }

    /// Reads and checks the lines up to `len`; false when a read failed before the end.
    fn read_lines(
        &mut self,
        reader: &mut BufReader<Take<File>>,
        len: u64,
        sink: &mut Sink<'_>,
    ) -> bool {
        let mut chunk = Chunk::default();
        // Where the chunk's first line starts, and the lines consumed before it.
        let mut at = self.offset;
        loop {
            let mut line = Vec::new();
            // Bounded: a line longer than any writer makes is never held in memory whole.
            let limit = MAX_LINE_LEN as u64 + 1;
            match reader.by_ref().take(limit).read_until(b'\n', &mut line) {
                Ok(0) => break,
                Ok(_) => {}
                Err(e) => {
                    self.finish_chunk(&mut chunk, sink);
                    self.report_unreadable(&e, sink);
                    return false;
                }
            }
            let mut consumed = line.len() as u64;
            let mut complete = line.last() == Some(&b'\n');
            let overlong = !complete && line.len() > MAX_LINE_LEN;
            if overlong {
                line = Vec::new();
                match skip_line(reader) {
                    Ok((skipped, found_end)) => {
                        consumed += skipped;
                        complete = found_end;
                    }
                    Err(e) => {
                        self.finish_chunk(&mut chunk, sink);
                        self.report_unreadable(&e, sink);
                        return false;
                    }
                }
            }
            if !complete {
                // Not consumed: it is read again once its writer finishes it.
                self.finish_chunk(&mut chunk, sink);
                if self
                    .torn_seen
                    .is_none_or(|(torn_at, _)| torn_at != self.offset)
                {
                    sink.problems.push(self.problem(
                        Some(self.lines + 1),
                        ProblemKind::TornLine,
                        "incomplete last line: a writer crashed or is still appending".to_owned(),
                    ));
                }
                self.torn_seen = Some((self.offset, len));
                return true;
            }
            let line_no = self.lines + 1 + chunk.lines.len() as u64;
            if overlong {
                chunk.lines.push(PendingLine {
                    at,
                    len: consumed,
                    line_no,
                    bytes: None,
                });
            } else {
                line.pop();
                chunk.bytes += line.len();
                chunk.lines.push(PendingLine {
                    at,
                    len: consumed,
                    line_no,
                    bytes: Some(line),
                });
            }
            at += consumed;
            if chunk.bytes >= CHUNK_BYTES {
                self.finish_chunk(&mut chunk, sink);
            }
        }
        self.finish_chunk(&mut chunk, sink);
        true
    }

    /// Checks the signatures of a chunk of lines (on every core when it is large), then applies
    /// the checks that need order, line by line.
    fn finish_chunk(&mut self, chunk: &mut Chunk, sink: &mut Sink<'_>) {
        if chunk.lines.is_empty() {
            return;
        }
        let lines = std::mem::take(&mut chunk.lines);
        chunk.bytes = 0;
        let verifier = *self.verifier.get_or_insert_with(|| self.key.verifier());
        let key = self.key;
        let hex = self.key_hex.get_or_insert_with(|| key.to_hex());
        let vouched_up_to = self
            .vouch
            .as_ref()
            .filter(|vouch| vouch.broken.is_none() && !vouch.reached)
            .map_or(0, |vouch| vouch.seq);
        let checked = check_all(&lines, (&self.key, &verifier, hex.as_str()), vouched_up_to);
        for (pending, result) in lines.into_iter().zip(checked) {
            let at = Some(pending.line_no);
            match result {
                Checked::Overlong => {
                    let detail = format!("line is longer than {MAX_LINE_LEN} bytes");
                    sink.problems
                        .push(self.problem(at, ProblemKind::Malformed, detail));
                }
                Checked::Bad(error) => self.report_line_error(at, error, sink),
                Checked::Good(found) => {
                    self.accept(*found, (pending.at, pending.len), pending.line_no, sink);
                }
            }
            self.lines = pending.line_no;
            self.offset = pending.at + pending.len;
        }
    }

    fn report_line_error(&self, at: Option<u64>, error: LineError, sink: &mut Sink<'_>) {
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
    }

    fn accept(
        &mut self,
        found: VerifiedEntry,
        (line_at, line_len): (u64, u64),
        line_no: u64,
        sink: &mut Sink<'_>,
    ) {
        let at = Some(line_no);
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
        if let Some(vouch) = self
            .vouch
            .as_mut()
            .filter(|v| v.broken.is_none() && !v.reached)
        {
            // Unchecked entries stand only on an unbroken chain up to the tip the checkpoint
            // names: anything else and the whole open checks every signature instead.
            if seq > self.last_seq + 1 {
                vouch.broken = Some(format!("entry {} is missing", self.last_seq + 1));
            } else if self.last_seq > 0 && found.prev() != self.last_hash.as_ref() {
                vouch.broken = Some(format!(
                    "prev of entry {seq} is not the hash of entry {}",
                    self.last_seq
                ));
            } else if seq == vouch.seq {
                if found.hash() == &vouch.hash {
                    vouch.reached = true;
                } else {
                    vouch.broken = Some(format!("entry {seq} is not the one the checkpoint names"));
                }
            }
        }
        if seq > self.last_seq + 1 {
            let (lo, hi) = (self.last_seq + 1, seq - 1);
            // Entries this machine delivered before a rollback are reported by the rollback.
            if hi > self.delivered_up_to {
                self.gaps.push((lo, hi));
                let detail = if lo == hi {
                    format!("entry {lo} is missing")
                } else {
                    format!("entries {lo} to {hi} are missing")
                };
                sink.problems
                    .push(self.problem(at, ProblemKind::MissingEntries, detail));
            }
        } else if self.last_seq > 0 && found.prev() != self.last_hash.as_ref() {
            let detail = format!("prev is not the hash of entry {}", self.last_seq);
            sink.problems
                .push(self.problem(at, ProblemKind::ChainMismatch, detail));
        }
        self.last_seq = seq;
        self.last_hash = Some(*found.hash());
        self.tip_at = line_at;
        self.tip_len = line_len;
        if self.high.is_none_or(|(high, _)| seq > high) {
            self.high = Some((seq, *found.hash()));
        }
        if seq > self.delivered_up_to {
            (sink.on_entry)(found);
        } else {
            self.reread_verified += 1;
        }
    }

    /// Where the writer of this log continues, given the file's length now: the highest entry
    /// ever verified here (never a seq readers would exclude), after a poll of the log.
    pub fn write_tip(&self, file_len: u64, ends_with_newline: bool) -> WriteTip {
        let (seq, hash) = match self.high {
            Some((seq, hash)) if seq >= self.last_seq => (seq, Some(hash)),
            _ => (self.last_seq, self.last_hash),
        };
        WriteTip {
            seq,
            hash,
            needs_newline: file_len > 0 && !ends_with_newline,
        }
    }

    /// The incomplete line at the end of the file, if it is a complete, valid next entry of
    /// this log that lost only its newline (a crash between writing it and its newline).
    pub fn unterminated_tip(&self, channel_dir: &Path, file_len: u64) -> Option<VerifiedEntry> {
        if file_len <= self.offset || file_len - self.offset > MAX_LINE_LEN as u64 {
            return None;
        }
        let mut file = self.open(&channel_dir.join(&self.rel_path)).ok()?;
        file.seek(SeekFrom::Start(self.offset)).ok()?;
        let mut tail = Vec::new();
        file.take(file_len - self.offset)
            .read_to_end(&mut tail)
            .ok()?;
        if tail.contains(&b'\n') {
            return None;
        }
        let verifier = self.key.verifier();
        let hex = self.key.to_hex();
        let found = entry::parse_line(&tail, Some((&self.key, &verifier, &hex)))
            .ok()?
            .verify()
            .ok()?;
        let next = self.write_tip(file_len, false).seq + 1;
        (found.author() == &self.author && found.key() == &self.key && found.seq() == next)
            .then_some(found)
    }
}

/// A line read but not checked yet.
struct PendingLine {
    /// Where it starts in the file, and its length with the newline.
    at: u64,
    len: u64,
    line_no: u64,
    /// `None` for a line too long to be an entry (skipped unread).
    bytes: Option<Vec<u8>>,
}

#[derive(Default)]
struct Chunk {
    lines: Vec<PendingLine>,
    bytes: usize,
}

enum Checked {
    Overlong,
    Bad(LineError),
    Good(Box<VerifiedEntry>),
}

/// Parses and verifies each line; on every core when there are enough of them. The signature
/// of an entry at or below `vouched_up_to` is not checked: a checkpoint vouches for it, if
/// the chain reaches the checkpoint's tip intact ([`LogState::accept`] sees to it).
fn check_all(
    lines: &[PendingLine],
    known: (&PublicKey, &Verifier, &str),
    vouched_up_to: u64,
) -> Vec<Checked> {
    let check = |pending: &PendingLine| match &pending.bytes {
        None => Checked::Overlong,
        Some(bytes) => {
            let found = entry::parse_line(bytes, Some(known)).and_then(|parsed| {
                if parsed.entry().seq <= vouched_up_to {
                    Ok(parsed.vouched())
                } else {
                    parsed.verify()
                }
            });
            match found {
                Ok(found) => Checked::Good(Box::new(found)),
                Err(error) => Checked::Bad(error),
            }
        }
    };
    // Asked only when it may matter: the answer reads the cgroup files (tens of microseconds).
    if lines.len() < PARALLEL_MIN_LINES {
        return lines.iter().map(check).collect();
    }
    let threads = std::thread::available_parallelism().map_or(1, std::num::NonZero::get);
    if threads < 2 {
        return lines.iter().map(check).collect();
    }
    let per = lines.len().div_ceil(threads);
    std::thread::scope(|scope| {
        let handles: Vec<_> = lines
            .chunks(per)
            .map(|part| scope.spawn(move || part.iter().map(check).collect::<Vec<_>>()))
            .collect();
        handles
            .into_iter()
            .flat_map(|handle| handle.join().expect("checking a line never panics"))
            .collect()
    })
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

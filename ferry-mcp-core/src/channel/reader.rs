//! Incremental, verified reading of every log in a channel.
//!
//! A [`Reader`] keeps, per log, the byte offset of what it has consumed and the chain state,
//! so each [`Reader::poll`] reads only bytes appended since the last one, whatever the size of
//! the history. Every entry is checked (shape, signature with `verify_strict`, key and author
//! against the log's path, project, seq and `prev` chain); a bad line or file is excluded and
//! reported as an [`IntegrityProblem`], never fatal.
//!
//! Order: a batch holds the new entries of each log in seq order, logs taken in the order of
//! (author name, key bytes). The order across logs carries no meaning (it is not a time
//! order); folds must not depend on it except through their own deterministic rules.

mod cursor;
mod log;
mod problem;
mod scan;

use std::collections::btree_map::Entry;
use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;

use self::log::{LogState, Sink};
use super::entry::VerifiedEntry;
use super::keys::PublicKey;
use super::names::{AgentName, ProjectId};
use super::store::Channel;

pub use cursor::{Cursor, CursorError};
pub use problem::{IntegrityProblem, ProblemKind};

/// Names one log: its author and signing key, as in its path.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct LogId {
    pub author: AgentName,
    pub key: PublicKey,
}

/// What one read found: new verified entries, and what was skipped.
#[derive(Debug, Default)]
pub struct ReadBatch {
    pub entries: Vec<VerifiedEntry>,
    pub problems: Vec<IntegrityProblem>,
}

/// Reads a channel's logs incrementally. Get one from [`Channel::reader`]; a clone continues
/// independently from the same position.
#[derive(Debug, Clone)]
pub struct Reader {
    dir: PathBuf,
    project: ProjectId,
    logs: BTreeMap<LogId, LogState>,
    /// Skipped files already reported, so each is reported once.
    reported: BTreeSet<PathBuf>,
}

impl Reader {
    pub(super) fn new(channel: &Channel) -> Self {
        Self {
            dir: channel.dir().to_owned(),
            project: channel.project().clone(),
            logs: BTreeMap::new(),
            reported: BTreeSet::new(),
        }
    }

    /// Reads everything appended since the last poll (the whole history on the first).
    ///
    /// Problems with a file (a conflict copy, an unknown file) are reported on the first poll
    /// that sees it; problems with a line on the poll that reads the line.
    pub fn poll(&mut self) -> ReadBatch {
        let mut batch = ReadBatch::default();
        let listing = scan::list(&self.dir);
        for problem in listing.skipped {
            if self.reported.insert(problem.path.clone()) {
                batch.problems.push(problem);
            }
        }
        for found in listing.logs {
            let id = LogId {
                author: found.author,
                key: found.key,
            };
            // Most polls find only known logs: their ids are not cloned.
            if let Entry::Vacant(slot) = self.logs.entry(id) {
                let LogId { author, key } = slot.key().clone();
                slot.insert(LogState::new(author, key, found.rel_path));
            }
        }
        let mut sink = Sink {
            project: &self.project,
            entries: &mut batch.entries,
            problems: &mut batch.problems,
        };
        for state in self.logs.values_mut() {
            state.read_new(&self.dir, &mut sink);
        }
        batch
    }

    /// The position after everything delivered so far.
    pub fn cursor(&self) -> Cursor {
        let mut cursor = Cursor::start();
        for state in self.logs.values() {
            cursor.set(state.author(), state.key(), state.last_seq());
        }
        cursor
    }

    /// The entries already read (by earlier polls) that come after `since`, in the same order
    /// as a poll. It reads only those entries' lines, located through an index of the
    /// accepted entries; it does not read new bytes (poll first for those). Logs the cursor
    /// does not name are given from their start.
    pub fn entries_since(&self, since: &Cursor) -> ReadBatch {
        let mut batch = ReadBatch::default();
        let mut sink = Sink {
            project: &self.project,
            entries: &mut batch.entries,
            problems: &mut batch.problems,
        };
        for state in self.logs.values() {
            let after = since.seq_of(state.author(), state.key());
            state.read_since(&self.dir, after, &mut sink);
        }
        batch
    }

    /// Every log seen so far with the last seq accepted from it.
    pub fn logs(&self) -> impl Iterator<Item = (&LogId, u64)> + '_ {
        self.logs.iter().map(|(id, state)| (id, state.last_seq()))
    }
}

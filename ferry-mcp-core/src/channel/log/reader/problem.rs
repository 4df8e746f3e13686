//! Integrity problems: what the reader skipped and why, for status output.
//!
//! A bad line or file is never fatal: it is excluded, everything else still reads, and a
//! problem names the file (relative to the channel folder), the line when there is one, a
//! kind that tests and tools can match on, and a human detail.
//!
//! A problem with a file holds only while the file does: a later look that finds it gone (or,
//! for a log, back) says so with a [`Cleared`], and whoever keeps the problems drops it.

use std::fmt;
use std::path::PathBuf;

use serde::Serialize;

/// What is wrong with a line or file.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, serde::Deserialize,
)]
#[serde(rename_all = "snake_case")]
pub enum ProblemKind {
    /// An incomplete line: at the end of a log (a writer crashed, or is mid-append and the
    /// line will be read once complete) or followed by more lines (a crash fragment).
    TornLine,
    /// Not a `{"entry":...,"sig":...}` line with a well-formed entry.
    Malformed,
    /// An entry of a format version this build does not read.
    UnsupportedVersion,
    /// The signature does not verify with the key the entry names (an edited entry).
    BadSignature,
    /// The entry names another key than the one in its log's path.
    WrongKey,
    /// The entry names another author than the one in its log's path: its actor is not its
    /// signer.
    ForgedAuthor,
    /// The entry belongs to another project (copied or replayed from elsewhere).
    WrongProject,
    /// Sequence numbers skip: entries are missing (removed, or excluded as bad).
    MissingEntries,
    /// The entry's `prev` is not the hash of the entry before it.
    ChainMismatch,
    /// An entry arrived after a later one of its log (swapped lines); it is excluded.
    OutOfOrder,
    /// A second entry with a sequence number already read: the log forked or a line was
    /// duplicated; the first one read stands.
    DuplicateSeq,
    /// The log got shorter than what this machine verified: entries were removed. What was
    /// verified keeps counting here; the log is read again from the start.
    RolledBack,
    /// The last line this machine verified no longer holds the entry it verified there: the
    /// log was rewritten. What was verified keeps counting; the log is read again.
    Diverged,
    /// A log (or its author's folder) that this machine verified disappeared; what was
    /// verified keeps counting here.
    Vanished,
    /// A symbolic link where the format expects a folder or a file; never followed.
    Link,
    /// A Syncthing conflict copy (`*.sync-conflict-*`); never read.
    ConflictCopy,
    /// A temporary file; never read.
    TempFile,
    /// A file or folder that is not part of the channel format; never read.
    UnknownFile,
    /// The file could not be read (permissions, IO error).
    Unreadable,
}

impl ProblemKind {
    /// The snake-case name used in status output and JSON.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::TornLine => "torn_line",
            Self::Malformed => "malformed",
            Self::UnsupportedVersion => "unsupported_version",
            Self::BadSignature => "bad_signature",
            Self::WrongKey => "wrong_key",
            Self::ForgedAuthor => "forged_author",
            Self::WrongProject => "wrong_project",
            Self::MissingEntries => "missing_entries",
            Self::ChainMismatch => "chain_mismatch",
            Self::OutOfOrder => "out_of_order",
            Self::DuplicateSeq => "duplicate_seq",
            Self::RolledBack => "rolled_back",
            Self::Diverged => "diverged",
            Self::Vanished => "vanished",
            Self::Link => "link",
            Self::ConflictCopy => "conflict_copy",
            Self::TempFile => "temp_file",
            Self::UnknownFile => "unknown_file",
            Self::Unreadable => "unreadable",
        }
    }
}

impl fmt::Display for ProblemKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One skipped line or file.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, serde::Deserialize)]
pub struct IntegrityProblem {
    /// Relative to the channel folder.
    pub path: PathBuf,
    /// 1-based line number in the file, when the problem is one line.
    pub line: Option<u64>,
    pub kind: ProblemKind,
    pub detail: String,
}

impl fmt::Display for IntegrityProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.path.display())?;
        if let Some(line) = self.line {
            write!(f, ":{line}")?;
        }
        write!(f, ": {}: {}", self.kind, self.detail)
    }
}

/// A problem that no longer holds, as a later look found it.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Cleared {
    /// A listing no longer finds what it reported at this path (a conflict copy, a temporary or
    /// unknown file, a link, a folder that did not list): it was removed.
    Listed(PathBuf),
    /// The log at this path is there again and reads as a regular file: it did not vanish (a
    /// sync tool replaced it by a rename, or a look raced one).
    Log(PathBuf),
}

impl Cleared {
    /// The path whose problems no longer hold.
    pub fn path(&self) -> &std::path::Path {
        match self {
            Self::Listed(path) | Self::Log(path) => path,
        }
    }

    /// Whether `problem` is one this clears.
    pub fn clears(&self, problem: &IntegrityProblem) -> bool {
        if problem.line.is_some() || problem.path != self.path() {
            return false;
        }
        match self {
            Self::Listed(_) => matches!(
                problem.kind,
                ProblemKind::ConflictCopy
                    | ProblemKind::TempFile
                    | ProblemKind::UnknownFile
                    | ProblemKind::Link
                    | ProblemKind::Unreadable
            ),
            Self::Log(_) => matches!(
                problem.kind,
                ProblemKind::Vanished | ProblemKind::UnknownFile | ProblemKind::Unreadable
            ),
        }
    }
}

//! Incremental, verified reading of every log in a channel.
//!
//! A [`Reader`] keeps, per log, the byte offset of what it has consumed and the chain state,
//! so each [`Reader::poll`] reads only bytes appended since the last one, whatever the size of
//! the history. Every entry is checked (shape, signature with `verify_strict`, key and author
//! against the log's path, project, seq and `prev` chain); a bad line or file is excluded and
//! reported as an [`IntegrityProblem`], never fatal.
//!
//! Order: a batch holds the new entries of each log in seq order, the master's logs first,
//! then the others in the order of (author name, key bytes). The order across logs carries no
//! meaning (it is not a time order); folds must not depend on it except through their own
//! deterministic rules. Master logs come first because agents' entries name master positions:
//! an agent's entry read before the master entry it names waits, and its log is read again.

mod folder;
mod log;
mod problem;
mod scan;
mod watch;

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use self::folder::ChannelFolder;
use self::log::Sink;
use crate::channel::log::entry::VerifiedEntry;
use crate::channel::log::keys::PublicKey;
use crate::channel::log::names::{AgentName, ProjectId};
use crate::channel::log::store::Channel;

pub use folder::{Prelook, Prelooked};
pub use log::{LogState, WriteTip};

/// The last verified entry of one log: its seq and the SHA-256 of its raw bytes.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Tip {
    pub author: crate::channel::log::names::AgentName,
    pub key: crate::channel::log::keys::PublicKey,
    pub seq: u64,
    pub hash: crate::channel::log::entry::EntryHash,
}

/// The entries a master's checkpoint vouches for (ADR 0023): each agent log's tip (seq, hash).
pub type Vouches = std::collections::BTreeMap<LogId, (u64, crate::channel::log::entry::EntryHash)>;

pub use problem::{Cleared, IntegrityProblem, ProblemKind};

/// The key of a log file name's hex, decoded once per reader: a decode is a point
/// decompression (about 6 us).
fn known_key(keys: &mut HashMap<String, PublicKey>, hex: &str) -> Option<PublicKey> {
    if let Some(key) = keys.get(hex) {
        return Some(*key);
    }
    let key = PublicKey::from_hex(hex).ok()?;
    keys.insert(hex.to_owned(), key);
    Some(key)
}

/// Names one log: its author and signing key, as in its path.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
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

/// What a reader keeps between processes (in the machine's verified state): every log's
/// position, chain and verified anchor.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReaderState {
    #[serde(with = "kept_logs")]
    logs: Vec<(LogId, LogState)>,
    /// The folders under `logs/` as last listed, to list again only those that changed.
    folders: scan::Folders,
}

/// Each log kept as its id and [`log::KeptLog`]: decoded, a log's state is as loaded (its
/// anchor to be checked again by the first poll).
mod kept_logs {
    use serde::de::{SeqAccess, Visitor};
    use serde::ser::SerializeSeq as _;
    use serde::{Deserializer, Serializer};

    use super::{LogId, LogState, log::KeptLog};

    pub(in crate::channel) fn serialize<S: Serializer>(
        logs: &[(LogId, LogState)],
        s: S,
    ) -> Result<S::Ok, S::Error> {
        let mut seq = s.serialize_seq(Some(logs.len()))?;
        for (id, log) in logs {
            seq.serialize_element(&(id, log.kept()))?;
        }
        seq.end()
    }

    pub(in crate::channel) fn deserialize<'de, D: Deserializer<'de>>(
        d: D,
    ) -> Result<Vec<(LogId, LogState)>, D::Error> {
        struct Logs;
        impl<'de> Visitor<'de> for Logs {
            type Value = Vec<(LogId, LogState)>;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("kept logs")
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
                // Bounded: the length comes from the file.
                let mut logs = Vec::with_capacity(seq.size_hint().unwrap_or(0).min(4096));
                while let Some((id, kept)) = seq.next_element::<(LogId, KeptLog)>()? {
                    let log = LogState::from_kept(id.author.clone(), id.key, kept);
                    logs.push((id, log));
                }
                Ok(logs)
            }
        }
        d.deserialize_seq(Logs)
    }
}

impl ReaderState {
    /// What a full look stats, relative to the channel folder: the folder itself, `logs/`,
    /// every author folder and every log (kept in the verified state's looks, for
    /// [`Prelook`]).
    pub fn look_paths(&self) -> Vec<String> {
        let mut paths = vec![
            ".".to_owned(),
            crate::channel::log::store::LOGS_DIR.to_owned(),
        ];
        paths.extend(
            self.folders
                .author_names()
                .map(|name| format!("{}/{name}", crate::channel::log::store::LOGS_DIR)),
        );
        paths.extend(
            self.logs
                .iter()
                .filter_map(|(_, log)| log.rel_path().to_str().map(str::to_owned)),
        );
        paths
    }

    /// Every log it names, with its state.
    pub fn logs(&self) -> impl Iterator<Item = (&LogId, &LogState)> {
        self.logs.iter().map(|(id, log)| (id, log))
    }

    /// How many logs it names.
    pub fn len(&self) -> usize {
        self.logs.len()
    }

    pub fn is_empty(&self) -> bool {
        self.logs.is_empty()
    }
}

/// Reads a channel's logs incrementally. Get one from [`Channel::reader`]; a clone continues
/// independently from the same position.
#[derive(Debug, Clone)]
pub struct Reader {
    dir: PathBuf,
    project: ProjectId,
    logs: BTreeMap<LogId, LogState>,
    /// Skipped files already reported by this reader, so each is reported once per process.
    reported: BTreeSet<PathBuf>,
    /// The keys of the log file names seen, by their hex: every poll lists every log, and
    /// decoding a key is a point decompression (about 6 us).
    keys: HashMap<String, PublicKey>,
    folders: scan::Folders,
    /// Tells a long-running reader what changed, so a poll looks only there.
    watch: watch::Watch,
    /// Stats taken during the open, for its first full look.
    ahead: Option<Prelooked>,
    /// Whether a stat's stamp may spare a read or a listing (see [`Reader::use_stamps`]).
    stamps: bool,
    /// Problems reported before that the polls since the last [`Reader::take_cleared`] found
    /// no longer hold.
    cleared: Vec<Cleared>,
}

impl Reader {
    pub(in crate::channel) fn new(channel: &Channel) -> Self {
        Self {
            dir: channel.dir().to_owned(),
            project: channel.project().clone(),
            logs: BTreeMap::new(),
            reported: BTreeSet::new(),
            keys: HashMap::new(),
            folders: scan::Folders::default(),
            watch: watch::Watch::default(),
            ahead: None,
            stamps: true,
            cleared: Vec::new(),
        }
    }

    /// Whether this reader trusts the file system's stamps (on by default): an unchanged
    /// stamp spares reading a log's last verified line and listing a folder. Off, every look
    /// reads and lists as on a platform that tells no stamp: what the A/B of the open bench
    /// compares (ADR 0011).
    pub fn use_stamps(&mut self, on: bool) {
        self.stamps = on;
    }

    /// The channel folder for one look, with this reader's trust in stamps.
    fn folder(&self) -> ChannelFolder {
        ChannelFolder::open(&self.dir).trusting_stamps(self.stamps)
    }

    /// Asks the kernel to tell this reader what changes in the channel folder (Linux), so that
    /// later polls look only at the folders and logs that changed rather than at every log:
    /// for a reader that lives long and polls often (a server). False where it cannot; polls
    /// then look at everything, as they do without it. The next poll looks at everything.
    pub fn watch(&mut self) -> bool {
        self.watch.start(&self.dir)
    }

    /// Whether a poll since the last call could trust the stamp of a folder it could not
    /// before (it had changed just before the look that last listed it): keeping the state
    /// spares the next open listing it again.
    pub fn take_settled(&mut self) -> bool {
        self.folders.take_settled()
    }

    /// Whether the kernel tells this reader what changes.
    pub fn is_watching(&self) -> bool {
        self.watch.is_watching()
    }

    /// Makes the next poll look at every log, whatever the watch says (a safety net for
    /// changes no event tells, such as a write through a memory map).
    pub fn look_everywhere_next(&mut self) {
        self.watch.look_everywhere_next();
    }

    /// A reader that continues where a kept state stopped. Its first poll checks, for every
    /// log, that what was verified is still there (one line read per log, no signature).
    pub fn restore(channel: &Channel, state: ReaderState) -> Self {
        let mut reader = Self::new(channel);
        reader.folders = state.folders;
        reader.logs = state.logs.into_iter().collect();
        reader
    }

    /// What to keep of this reader between processes.
    pub fn state(&self) -> ReaderState {
        ReaderState {
            logs: self
                .logs
                .iter()
                .map(|(id, log)| (id.clone(), log.clone()))
                .collect(),
            folders: self.folders.clone(),
        }
    }

    /// What the polls since the last call found no longer holds of the problems reported
    /// before (a temporary file removed, a log back after it vanished): whoever keeps the
    /// problems drops those.
    pub fn take_cleared(&mut self) -> Vec<Cleared> {
        std::mem::take(&mut self.cleared)
    }

    /// Stats taken ahead for the next full look (see [`Prelook`]).
    pub fn use_prelooked(&mut self, ahead: Option<Prelooked>) {
        self.ahead = ahead;
    }

    /// Reads everything appended since the last poll (the whole history on the first) and
    /// collects it. Prefer [`Reader::poll_with`], which holds no history in memory.
    pub fn poll(&mut self) -> ReadBatch {
        let mut entries = Vec::new();
        let problems = self.poll_with(&mut |entry| entries.push(entry));
        ReadBatch { entries, problems }
    }

    /// Reads everything appended since the last poll, handing each new entry to `on_entry` as
    /// it is verified, and returns what was skipped.
    ///
    /// Problems with a file (a conflict copy, an unknown file, a link) are reported on the
    /// first poll of this reader that sees it; problems with a line on the poll that reads
    /// the line; a log that disappeared, once.
    pub fn poll_with(&mut self, on_entry: &mut dyn FnMut(VerifiedEntry)) -> Vec<IntegrityProblem> {
        match self.watch.take() {
            watch::Changed::Everything => self.poll_everything(on_entry),
            watch::Changed::Some { relist, files } => self.poll_changed(&relist, &files, on_entry),
        }
    }

    /// A full look: every folder listed (or its kept listing confirmed by its stamp), every
    /// log's stamp checked and what is new read.
    fn poll_everything(
        &mut self,
        on_entry: &mut dyn FnMut(VerifiedEntry),
    ) -> Vec<IntegrityProblem> {
        self.poll_logs(on_entry, &[true, false])
    }

    /// Reads only the master's logs, from a full listing (every log is then known to the
    /// reader): what a new machine reads first, to find the checkpoint it may start from
    /// (ADR 0023). The next poll reads the rest.
    pub fn poll_masters(
        &mut self,
        on_entry: &mut dyn FnMut(VerifiedEntry),
    ) -> Vec<IntegrityProblem> {
        self.poll_logs(on_entry, &[true])
    }

    /// Takes a checkpoint's tips for the next poll: each named log this reader has not read
    /// yet is read without checking the signatures up to its tip, which its chain must reach
    /// intact ([`Reader::take_vouch_outcome`] says whether it did). A log not there vouches
    /// for nothing and costs nothing: none of its entries is read unchecked.
    pub fn vouch(&mut self, vouches: &Vouches) {
        for (id, (seq, hash)) in vouches {
            if let Some(state) = self.logs.get_mut(id)
                && !id.author.is_master()
            {
                state.set_vouch(Some(log::Vouch::new(*seq, *hash)));
            }
        }
    }

    /// Where a checkpoint's tips taken by [`Reader::vouch`] did not hold, after the poll that
    /// read them: each log whose chain broke or ended before its tip, and why. Any such log
    /// means entries were read unchecked that nothing vouches for. The tips are dropped.
    pub fn take_vouch_outcome(&mut self) -> Vec<String> {
        let mut broken = Vec::new();
        for state in self.logs.values_mut() {
            if let Some(vouch) = state.take_vouch()
                && let Err(why) = vouch.outcome()
            {
                broken.push(format!("{}: {why}", state.rel_path().display()));
            }
        }
        broken
    }

    /// Reads the logs whose master-ness is in `masters`, the master's logs first.
    fn poll_logs(
        &mut self,
        on_entry: &mut dyn FnMut(VerifiedEntry),
        passes: &[bool],
    ) -> Vec<IntegrityProblem> {
        let mut problems = Vec::new();
        let folder = self.folder().with_ahead(self.ahead.take());
        let keys = &mut self.keys;
        let listing = scan::list(
            &folder,
            &mut self.folders,
            &mut |hex| known_key(keys, hex),
            &mut self.watch,
        );
        self.report_skipped(listing, &mut problems);
        self.mark_listed(None);
        let mut sink = Sink {
            project: &self.project,
            on_entry,
            problems: &mut problems,
            cleared: &mut self.cleared,
        };
        // The master's logs first: agents' entries name master positions (`seen`); read
        // before them, an agent's entries would wait and its log be read and verified again.
        for &masters in passes {
            for (id, state) in &mut self.logs {
                if id.author.is_master() != masters {
                    continue;
                }
                state.read_if_listed(&folder, &mut sink);
            }
        }
        problems
    }

    /// A look at what the watch said changed: the author folders whose files changed are
    /// listed again, and only the logs written to (or in those folders) are read.
    fn poll_changed(
        &mut self,
        relist: &BTreeSet<String>,
        files: &BTreeSet<(String, String)>,
        on_entry: &mut dyn FnMut(VerifiedEntry),
    ) -> Vec<IntegrityProblem> {
        let mut problems = Vec::new();
        let folder = self.folder();
        if !relist.is_empty() {
            let keys = &mut self.keys;
            let listing = scan::relist(&folder, &mut self.folders, relist, &mut |hex| {
                known_key(keys, hex)
            });
            self.report_skipped(listing, &mut problems);
            self.mark_listed(Some(relist));
        }
        let written = watch::by_author(files);
        let mut sink = Sink {
            project: &self.project,
            on_entry,
            problems: &mut problems,
            cleared: &mut self.cleared,
        };
        // Only the logs of the authors the watch named are visited (a look at one new line
        // of a channel of thousands of logs costs that line, not a walk of every log), the
        // master's first.
        let authors: BTreeSet<AgentName> = relist
            .iter()
            .map(String::as_str)
            .chain(written.keys().copied())
            .filter_map(|author| AgentName::parse_any(author).ok())
            .collect();
        for masters in [true, false] {
            for author in authors
                .iter()
                .filter(|author| author.is_master() == masters)
            {
                let from = LogId {
                    author: author.clone(),
                    key: PublicKey::LOWEST,
                };
                let relisted = relist.contains(author.as_str());
                let files = written.get(author.as_str());
                for (_, state) in self
                    .logs
                    .range_mut(from..)
                    .take_while(|(id, _)| id.author == *author)
                {
                    if relisted {
                        state.read_if_listed(&folder, &mut sink);
                    } else if files
                        .is_some_and(|names| names.iter().any(|name| state.is_file(name)))
                    {
                        state.read_new(&folder, &mut sink);
                    }
                }
            }
        }
        problems
    }

    fn report_skipped(&mut self, listing: scan::Listing, problems: &mut Vec<IntegrityProblem>) {
        for cleared in listing.cleared {
            // Gone: should it come back, it is reported again.
            self.reported.remove(cleared.path());
            self.cleared.push(cleared);
        }
        for problem in listing.skipped {
            if self.reported.insert(problem.path.clone()) {
                problems.push(problem);
            }
        }
    }

    /// Marks the logs the listing holds as present (only those of `authors`, when given),
    /// adding the ones new to this reader.
    fn mark_listed(&mut self, authors: Option<&BTreeSet<String>>) {
        for (author, key) in self.folders.logs() {
            if authors.is_some_and(|authors| !authors.contains(author.as_str())) {
                continue;
            }
            let id = LogId {
                author: author.clone(),
                key: *key,
            };
            // Most polls find only known logs: their paths are not made again.
            self.logs
                .entry(id)
                .or_insert_with_key(|id| LogState::new(id.author.clone(), id.key))
                .mark_present();
        }
    }

    /// Reads what is new in one log only (the writer does, under its lock, to find its tip).
    pub fn poll_log(
        &mut self,
        id: &LogId,
        on_entry: &mut dyn FnMut(VerifiedEntry),
    ) -> Vec<IntegrityProblem> {
        let mut problems = Vec::new();
        let state = self
            .logs
            .entry(id.clone())
            .or_insert_with(|| LogState::new(id.author.clone(), id.key));
        let mut sink = Sink {
            project: &self.project,
            on_entry,
            problems: &mut problems,
            cleared: &mut self.cleared,
        };
        state.read_new(&ChannelFolder::open(&self.dir), &mut sink);
        problems
    }

    /// Delivers again every entry of one log that this reader accepted, from the start of the
    /// file (verifying each again). For folds that could not use a log's entries when they
    /// first came, and can now: a new master's log once the handover to its key is folded.
    pub fn replay_log(
        &self,
        id: &LogId,
        on_entry: &mut dyn FnMut(VerifiedEntry),
    ) -> Vec<IntegrityProblem> {
        let Some(known) = self.logs.get(id) else {
            return Vec::new();
        };
        let mut fresh = LogState::new(id.author.clone(), id.key);
        let mut problems = Vec::new();
        let mut cleared = Vec::new();
        let mut sink = Sink {
            cleared: &mut cleared,
            project: &self.project,
            on_entry: &mut |entry: VerifiedEntry| {
                if entry.seq() <= known.last_seq() {
                    on_entry(entry);
                }
            },
            problems: &mut problems,
        };
        fresh.read_new(&ChannelFolder::open(&self.dir), &mut sink);
        // The problems of those lines were reported when they were first read.
        Vec::new()
    }

    /// The stored line of entry `seq` of log `id`, if it is still there and still hashes to
    /// `hash` (a scan of that one log; for the rare entries that are embedded elsewhere).
    pub fn line_of(
        &self,
        id: &LogId,
        seq: u64,
        hash: &crate::channel::log::entry::EntryHash,
    ) -> Option<String> {
        use std::io::{BufRead as _, Read as _};
        let state = self.logs.get(id)?;
        let file = crate::channel::log::store::durable::open_regular(
            &self.dir.join(state.rel_path()),
            std::fs::OpenOptions::new().read(true),
        )
        .ok()?;
        let mut reader = std::io::BufReader::new(file);
        let limit = crate::channel::log::store::MAX_LINE_LEN as u64 + 1;
        loop {
            // Bounded like every read: a junk line is skipped, never held whole.
            let mut line = Vec::new();
            let read = (&mut reader)
                .take(limit)
                .read_until(b'\n', &mut line)
                .ok()?;
            if read == 0 {
                return None;
            }
            if line.last() != Some(&b'\n') && line.len() as u64 >= limit {
                let mut rest = Vec::new();
                loop {
                    rest.clear();
                    let more = (&mut reader)
                        .take(limit)
                        .read_until(b'\n', &mut rest)
                        .ok()?;
                    if more == 0 || rest.last() == Some(&b'\n') {
                        break;
                    }
                }
                continue;
            }
            if line.last() == Some(&b'\n') {
                line.pop();
            }
            let Some(raw) = crate::channel::log::entry::raw_entry(&line) else {
                continue;
            };
            if crate::channel::log::entry::EntryHash::of(raw) == *hash {
                let text = String::from_utf8(line).ok()?;
                let found = crate::channel::log::entry::decode_line(text.as_bytes()).ok()?;
                return (found.seq() == seq).then(|| text.trim_end_matches('\r').to_owned());
            }
        }
    }

    /// A reader of one log only, continuing from `state` (a writer's own reader).
    pub fn for_log(channel: &Channel, id: &LogId, state: Option<LogState>) -> Self {
        let mut reader = Self::new(channel);
        if let Some(mut state) = state {
            state.after_load();
            reader.logs.insert(id.clone(), state);
        }
        reader
    }

    /// The state of one log, if this reader has seen it.
    pub fn log(&self, id: &LogId) -> Option<&LogState> {
        self.logs.get(id)
    }

    /// Where the writer of `id` continues (see [`WriteTip`]), for a file of `file_len` bytes.
    pub fn write_tip(&self, id: &LogId, file_len: u64, ends_with_newline: bool) -> WriteTip {
        match self.logs.get(id) {
            Some(log) => log.write_tip(file_len, ends_with_newline),
            None => WriteTip {
                seq: 0,
                hash: None,
                needs_newline: file_len > 0 && !ends_with_newline,
            },
        }
    }

    /// The tip of every agent's log this reader read without a gap: what a master's
    /// checkpoint vouches for (ADR 0023). A log with entries missing is left out (a new
    /// machine checks its signatures), so one bad log costs the others nothing.
    pub fn tips(&self) -> Vec<Tip> {
        self.logs
            .iter()
            .filter(|(id, state)| !id.author.is_master() && !state.has_gaps())
            .filter_map(|(id, state)| {
                Some(Tip {
                    author: id.author.clone(),
                    key: id.key,
                    seq: state.last_seq(),
                    hash: state.last_hash()?,
                })
            })
            .collect()
    }

    /// Every log seen so far with the last seq accepted from it.
    pub fn logs(&self) -> impl Iterator<Item = (&LogId, u64)> + '_ {
        self.logs.iter().map(|(id, state)| (id, state.last_seq()))
    }

    /// The channel folder this reader reads.
    pub fn dir(&self) -> &std::path::Path {
        &self.dir
    }
}

//! The machine's kept state of one project (ADR 0004, 0011): how far every log was verified,
//! the folded state and the orders' records, in one SQLite database in the state folder
//! ([`db`]), which every `ferry` process on the machine (the agents' servers, the human's
//! commands) reads and writes at once. It is this machine's witness of what it verified and a
//! cache, never an authority: a database that does not open, a row that does not decode, a
//! state of another channel or of another format is reported and rebuilt from the channel. The
//! folds never name it: the session owns the store, reads from it (by `&mut`) the folds and
//! the orders' records a fold step or a reader needs before it feeds or hands out the state,
//! and saves through it.

mod batch;
mod db;

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::channel::fold::state::lazy;
use crate::channel::fold::state::orders::OrderBoard;
use crate::channel::fold::state::talk::{Message, Talk};
use crate::channel::fold::state::{ChannelState, EntryId, RecordSink, Sections};
use crate::channel::log::names::AgentName;
use crate::channel::log::reader::{IntegrityProblem, ReaderState};
use crate::channel::log::stamp::FileStamp;
use batch::Batch;

pub use db::FORMAT;

/// What is kept of a project between processes.
#[derive(Debug, Clone, PartialEq)]
pub struct Kept {
    /// SHA-256 of the channel's `genesis.json` as this machine first kept it: a file
    /// rewritten since (same channel, other bytes) is reported as tampering.
    pub genesis: [u8; 32],
    /// The channel's identity ([`crate::channel::log::store::Channel::identity`]): the channel this
    /// state belongs to.
    pub channel: [u8; 32],
    /// A random tag of this state; `since` cursors name it (ADR 0007).
    pub generation: u64,
    pub reader: ReaderState,
    pub state: ChannelState,
    /// Integrity problems of lines, logs and files found so far, each kept when first found.
    pub problems: Vec<IntegrityProblem>,
    pub dropped_problems: u64,
    /// The roster as this machine last pinned it: while it has not changed, an open need not
    /// read the pins again.
    pub pinned: Option<Pinned>,
}

/// The last pinning of the seated names (`Session` pins on open).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Pinned {
    /// The identity's seat epoch then: any change of who holds a name moves it.
    pub seat_epoch: u64,
    /// The pins file as it was after: any change to it (an edit, a deletion, another process
    /// pinning) makes the next open read it again.
    pub pins_file: Option<FileStamp>,
    /// Names whose key differed from the pinned one.
    pub changed: Vec<AgentName>,
}

/// Why a kept state was not used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Rejected {
    #[error("the kept state is corrupt ({0}); rebuilt from the channel")]
    Corrupt(String),
    #[error("the kept state belongs to another channel; rebuilt from this one")]
    Foreign,
    #[error("the kept state has format {0}, this build keeps {FORMAT}; rebuilt")]
    Stale(u32),
    #[error("the kept state could not be read ({0}); rebuilt from the channel")]
    Unreadable(String),
    /// Never removed for it: a full disk is not a kept state that does not read, and what it
    /// witnessed (how far this machine verified every log) stands for the next open.
    #[error(
        "the kept state was neither read nor written: no space left on the device (it stands as it was, for the next open)"
    )]
    DiskFull,
    #[error(
        "the kept state's path {0} is not a regular file; it is neither read nor written (remove it)"
    )]
    NotAFile(PathBuf),
}

/// What loading found.
#[derive(Debug)]
pub enum Loaded {
    /// No kept state: the first open on this machine (or it was deleted).
    Missing,
    Kept(Box<Kept>),
    Rejected(Rejected),
}

/// What is written of a kept state, borrowed from where it lives.
#[derive(Debug)]
pub struct KeptRef<'a> {
    pub genesis: &'a [u8; 32],
    pub channel: &'a [u8; 32],
    pub generation: u64,
    pub reader: &'a ReaderState,
    pub problems: &'a [IntegrityProblem],
    pub dropped_problems: u64,
    pub pinned: &'a Option<Pinned>,
}

/// The core row: everything but the lazy folds and the orders' records.
#[derive(Serialize)]
struct CoreRef<'a> {
    reader: &'a ReaderState,
    state: &'a ChannelState,
    problems: &'a [IntegrityProblem],
    dropped_problems: u64,
    pinned: &'a Option<Pinned>,
}

#[derive(Deserialize)]
struct Core {
    reader: ReaderState,
    state: ChannelState,
    problems: Vec<IntegrityProblem>,
    dropped_problems: u64,
    pinned: Option<Pinned>,
}

/// The database of one project's kept state, owned by a session.
#[derive(Debug)]
pub struct Store {
    /// The database; none until the first save when there was none (an open that writes
    /// nothing makes no file).
    db: Option<db::Db>,
    path: PathBuf,
    /// The file the connection opened (device, inode): a database replaced or removed under
    /// the session is opened again before a save.
    file_id: Option<(u64, u64)>,
    /// Digests of the rows this store last wrote or read, so a save writes only what changed.
    written: std::collections::HashMap<&'static str, [u8; 32]>,
    /// What the database holds is not this session's (another channel's, another format's,
    /// or rows that did not read): the next save replaces it whole.
    replace: bool,
    /// The digest of each lazy fold's row as of the core the session loaded (or last saved):
    /// the row read when the fold is first needed, even if another process saved since.
    snapshot: std::collections::HashMap<&'static str, [u8; 32]>,
    /// A save being written on a thread of its own, with the connection (ADR 0024).
    pending: batch::Pending,
    /// The save the folds' rows are read as of: the one the loaded core came from, then each
    /// save this store wrote (ADR 0011).
    as_of: u64,
    /// The stamp of the last message whose row is kept as of [`Store::as_of`] (none: not
    /// known, the next save writes talk whole).
    talk_through: Option<u64>,
    /// The next save writes every fold's parts whole (a save of only what changed met
    /// another process's).
    whole_next: bool,
    /// A save wrote nothing but records (it met another process's): the state is to be
    /// saved again.
    unkept: bool,
    /// How many of talk's newest messages are held in memory; the rest stay in their rows,
    /// read when asked for (ADR 0011, "Talk paged").
    talk_window: usize,
    /// How many of talk's rows this store has read back (what the tests of a read that needs
    /// no row count).
    #[cfg(feature = "internals")]
    talk_rows_read: u64,
}

/// How many of talk's newest messages a session holds in memory by default.
pub const TALK_WINDOW: usize = 2_000;

/// Rows read at a time when a session walks talk's messages paged out.
const TALK_CHUNK: usize = 512;

/// The device and inode of the file at `path`, not following a link.
fn file_id(path: &Path) -> Option<(u64, u64)> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt as _;
        std::fs::symlink_metadata(path)
            .ok()
            .map(|meta| (meta.dev(), meta.ino()))
    }
    #[cfg(not(unix))]
    {
        std::fs::symlink_metadata(path).ok().map(|_| (0, 0))
    }
}

impl Store {
    /// Opens (or makes) the database at `path`. One that is not a database, or whose schema
    /// does not read, is removed and made anew (the reason is returned to be reported); a path
    /// that is not a regular file (a FIFO, a link) is refused unopened.
    pub fn open(path: &Path) -> Result<(Self, Option<Rejected>), Rejected> {
        let missing = std::fs::symlink_metadata(path)
            .is_err_and(|e| e.kind() == std::io::ErrorKind::NotFound);
        let opened = if missing {
            Ok(None)
        } else {
            db::Db::open(path).map(Some)
        };
        let (db, why) = match opened {
            Ok(db) => (db, None),
            Err(db::OpenError::NotAFile(path)) => return Err(Rejected::NotAFile(path)),
            Err(db::OpenError::DiskFull) => return Err(Rejected::DiskFull),
            Err(db::OpenError::Sqlite(why)) => {
                db::remove(path).map_err(|e| Rejected::Unreadable(e.to_string()))?;
                let db = db::Db::open(path).map_err(|e| Rejected::Unreadable(e.to_string()))?;
                (Some(db), Some(Rejected::Corrupt(why)))
            }
        };
        Ok((
            Self {
                db,
                path: path.to_owned(),
                file_id: file_id(path),
                written: Default::default(),
                replace: false,
                snapshot: Default::default(),
                pending: Default::default(),
                as_of: 0,
                talk_through: None,
                whole_next: false,
                unkept: false,
                talk_window: TALK_WINDOW,
                #[cfg(feature = "internals")]
                talk_rows_read: 0,
            },
            why,
        ))
    }

    /// The paths the last full look stat'ed, one a line (a hint for [`crate::channel::log::reader::Prelook`],
    /// trusted for nothing else).
    pub fn looks(&self) -> String {
        self.db
            .as_ref()
            .and_then(|db| db.looks().ok())
            .unwrap_or_default()
    }

    /// Reads the kept state's meta rows and core, for the channel whose identity is
    /// `channel` and whose genesis file's digest is `genesis`: a state kept for another
    /// channel is refused. The lazy folds stay in the database until [`Store::load_sections`].
    /// A state kept by an older build, which named its channel by the file's digest alone, is
    /// this channel's if that digest is the file's.
    pub fn load(&mut self, channel: &[u8; 32], genesis: &[u8; 32]) -> Loaded {
        let read = self.db.as_mut().map(db::Db::load);
        let head = match read.unwrap_or(Ok(None)) {
            Ok(Some(head)) => head,
            Ok(None) => return Loaded::Missing,
            // Left as it is: the session neither reads nor writes it this time.
            Err(db::OpenError::DiskFull) => return Loaded::Rejected(Rejected::DiskFull),
            Err(why) => {
                let why = why.to_string();
                // A database that does not read may not take a save either: it goes, and the
                // next save makes a new one.
                self.db = None;
                if db::remove(&self.path).is_ok() {
                    self.file_id = None;
                }
                return self.rejected(Rejected::Corrupt(why));
            }
        };
        if head.format != FORMAT {
            return self.rejected(Rejected::Stale(head.format));
        }
        let ours = match head.channel {
            Some(kept) => kept == *channel,
            None => head.genesis == *genesis,
        };
        if !ours {
            return self.rejected(Rejected::Foreign);
        }
        let core: Core = match lazy::decode(&head.core.bytes) {
            Ok(core) => core,
            Err(why) => return self.rejected(Rejected::Corrupt(format!("its core: {why}"))),
        };
        self.written.insert(head.core.name, head.core.digest);
        self.snapshot = head.sections.iter().copied().collect();
        self.as_of = head.saves;
        let mut state = core.state;
        state.left_kept();
        Loaded::Kept(Box::new(Kept {
            genesis: head.genesis,
            channel: *channel,
            generation: head.generation,
            reader: core.reader,
            state,
            problems: core.problems,
            dropped_problems: core.dropped_problems,
            pinned: core.pinned,
        }))
    }

    /// Reads the lazy folds of `wanted` that `state` has not loaded, each row checked against
    /// its digest and decoded, and hands them to `state`. A row that is missing, does not match
    /// its digest or does not decode is an error: the caller reports it and folds the channel
    /// again (the state is then not this store's to trust).
    pub fn load_sections(
        &mut self,
        state: &mut ChannelState,
        wanted: Sections,
    ) -> Result<(), String> {
        let loaded = self.read_sections(state, wanted);
        if loaded.is_err() {
            // A row that did not read may still match the digest kept beside it (a value
            // changed under it): nothing of the database is compared against again, the next
            // save writes it whole.
            self.replace = true;
        }
        loaded
    }

    fn read_sections(&mut self, state: &mut ChannelState, wanted: Sections) -> Result<(), String> {
        let missing = state.missing(wanted);
        if !missing.any() {
            return Ok(());
        }
        self.settle()?;
        let Some(db) = self.db.as_ref() else {
            return Err("the kept state's folds are not there".into());
        };
        let snapshot = &self.snapshot;
        let read = |name: &'static str| -> Result<db::Row, String> {
            snapshot
                .get(name)
                .ok_or_else(|| format!("its {name} row is missing"))
                .and_then(|digest| db.section(name, digest))
                .map_err(|why| {
                    format!("the kept state is corrupt ({why}); rebuilt from the channel")
                })
        };
        let undecoded = |what: &str, why: String| {
            format!("the kept state's {what} does not decode ({why}); rebuilt from the channel")
        };
        let mut rows = Vec::new();
        if missing.board {
            let row = read(db::BOARD)?;
            // Each order's row decoded as it is read: the rows are never all in memory beside
            // the board (at 1,000,000 entries they are 9 MB).
            let board = lazy::with_memos(|| -> Result<Result<OrderBoard, String>, String> {
                let mut board = match OrderBoard::rest_from_kept(&row.bytes) {
                    Ok(board) => board,
                    Err(why) => return Ok(Err(why)),
                };
                let read = db
                    .for_each_item(db::BOARD, self.as_of, &mut |bytes| board.insert_kept(bytes))
                    .map_err(|why| {
                        format!("the kept state is corrupt ({why}); rebuilt from the channel")
                    })?;
                Ok(read.map(|()| board))
            })?
            .map_err(|why| undecoded("order board", why))?;
            state.load_board(board);
            rows.push((row.name, row.digest));
        }
        if missing.talk {
            // The newest messages only, and each sender's latest (read receipts show them):
            // the rest stay in their rows, read when asked for.
            let row = read(db::TALK)?;
            let corrupt =
                |why| format!("the kept state is corrupt ({why}); rebuilt from the channel");
            let newest = db
                .items_between(
                    db::TALK,
                    self.as_of,
                    (&[], &[0xff; 8]),
                    self.talk_window,
                    true,
                )
                .map_err(corrupt)?;
            let paged = if newest.len() < self.talk_window {
                0
            } else {
                newest
                    .last()
                    .and_then(|(key, _)| stamp_of(key))
                    .map_or(0, |stamp| stamp.saturating_sub(1))
            };
            let talk = lazy::with_memos(|| -> Result<Talk, String> {
                let mut talk = Talk::rest_from_kept(&row.bytes, paged)?;
                talk.insert_kept(newest.iter().rev().map(|(_, value)| value.as_slice()))?;
                for stamp in talk.pinned_paged() {
                    let key = stamp.to_be_bytes();
                    let before = stamp.saturating_sub(1).to_be_bytes();
                    let pinned = db
                        .items_between(db::TALK, self.as_of, (&before, &key), 1, false)
                        .map_err(corrupt)?;
                    talk.insert_kept(pinned.iter().map(|(_, value)| value.as_slice()))?;
                }
                Ok(talk)
            })
            .map_err(|why| undecoded("talk", why))?;
            self.talk_through = Some(talk.last_stamp());
            state.load_talk(talk);
            rows.push((row.name, row.digest));
        }
        if missing.times {
            let row = read(db::TIMES)?;
            let times = lazy::decode(&row.bytes).map_err(|why| undecoded("master times", why))?;
            state.load_master_times(times);
            rows.push((row.name, row.digest));
        }
        self.written.extend(rows);
        Ok(())
    }

    /// Sets how many of talk's newest messages a session holds in memory.
    pub fn set_talk_window(&mut self, messages: usize) {
        self.talk_window = messages;
    }

    /// Talk's messages paged out brought after stamp `after` and up to `upto`, at most
    /// `limit`, oldest first, read as of the save this state goes with, each checked against
    /// its digest. An error is the kept state's: the caller reports it and folds again.
    pub fn talk_messages(
        &mut self,
        (after, upto): (u64, u64),
        limit: usize,
    ) -> Result<Vec<Message>, String> {
        let rows = self.talk_rows((&after.to_be_bytes(), &upto.to_be_bytes()), limit)?;
        lazy::with_memos(|| {
            rows.iter()
                .map(|(_, value)| Talk::decode_message(value))
                .collect::<Result<Vec<_>, _>>()
        })
        .map_err(|why| {
            format!("the kept state's talk does not decode ({why}); rebuilt from the channel")
        })
    }

    /// Talk's rows between two stamps (as of the save this state goes with), once what is
    /// being written has settled.
    fn talk_rows(&mut self, range: (&[u8], &[u8]), limit: usize) -> Result<lazy::Rows, String> {
        self.settle()?;
        let Some(db) = self.db.as_ref() else {
            return Err("the kept state's folds are not there".into());
        };
        let rows = db
            .items_between(db::TALK, self.as_of, range, limit, false)
            .map_err(|why| {
                format!("the kept state is corrupt ({why}); rebuilt from the channel")
            })?;
        #[cfg(feature = "internals")]
        {
            self.talk_rows_read += rows.len() as u64;
        }
        Ok(rows)
    }

    /// How many of talk's rows this store has read back since it opened.
    #[cfg(feature = "internals")]
    pub fn talk_rows_read(&self) -> u64 {
        self.talk_rows_read
    }

    /// Walks talk's messages paged out brought after stamp `after` (up to where talk is paged
    /// out), [`TALK_CHUNK`] rows at a time, handing each chunk and the stamp it reaches to
    /// `each` until it says to stop.
    pub fn walk_talk(
        &mut self,
        after: u64,
        upto: u64,
        each: &mut dyn FnMut(&[Message], u64) -> bool,
    ) -> Result<(), String> {
        let mut from = after;
        // A read of one page mostly needs few rows: the first chunks are small.
        let mut size = TALK_CHUNK / 8;
        while from < upto {
            let chunk = self.talk_messages((from, upto), size)?;
            let reached = if chunk.len() < size {
                upto
            } else {
                chunk.last().map_or(upto, |message| message.stamp)
            };
            if !each(&chunk, reached) {
                return Ok(());
            }
            from = reached;
            size = (size * 2).min(TALK_CHUNK);
        }
        Ok(())
    }

    /// Takes every message talk paged out back into memory (a fold step that judges them all
    /// again, a save that writes talk whole).
    pub fn page_in_talk(&mut self, state: &mut ChannelState) -> Result<(), String> {
        let paged = state.talk().map_or(0, Talk::paged_through);
        if paged == 0 {
            return Ok(());
        }
        let rows = self.talk_rows((&[], &paged.to_be_bytes()), usize::MAX)?;
        let Some(talk) = state.talk_paging() else {
            return Ok(());
        };
        lazy::with_memos(|| talk.page_in(rows.iter().map(|(_, value)| value.as_slice()))).map_err(
            |why| {
                format!("the kept state's talk does not decode ({why}); rebuilt from the channel")
            },
        )
    }

    /// The folds whose row in the database is no longer the one the loaded core goes with
    /// (another process saved since).
    fn stale_sections(&self) -> Sections {
        let Some(db) = &self.db else {
            return Sections::default();
        };
        let stale = |name: &'static str| {
            self.snapshot
                .get(name)
                .is_some_and(|kept| db.current_digest(name).as_ref() != Some(kept))
                || !db.items_saved(name).is_ok_and(|saved| saved <= self.as_of)
        };
        Sections {
            board: stale(db::BOARD),
            talk: stale(db::TALK),
            times: stale(db::TIMES),
        }
    }

    /// Pages in the orders whole of `ids` from their records, each checked against the digest
    /// the board names and decoded. One that does not read stands as gone (it does not count)
    /// and its reason is returned: the caller reports it and folds everything again.
    pub fn page_orders(&mut self, state: &mut ChannelState, ids: &[EntryId]) -> Result<(), String> {
        if ids.iter().any(|id| state.record_to_page(id).is_some()) {
            self.settle()?;
        }
        let mut failure = None;
        for id in ids {
            let Some(digest) = state.record_to_page(id) else {
                continue;
            };
            let read = match &self.db {
                Some(db) => db.record(&id.to_string(), &digest).and_then(|bytes| {
                    if db::digest(&bytes) == digest {
                        Ok(bytes)
                    } else {
                        Err("checksum mismatch".into())
                    }
                }),
                None => Err("nothing is kept".into()),
            };
            let paged = read.and_then(|bytes| state.page_in_order(id, &bytes));
            if let Err(why) = paged {
                state.page_in_gone(id);
                failure.get_or_insert(format!(
                    "the kept state's record of order {id} does not read ({why}); rebuilt from the channel"
                ));
            }
        }
        failure.map_or(Ok(()), Err)
    }

    fn rejected(&mut self, why: Rejected) -> Loaded {
        self.replace = true;
        Loaded::Rejected(why)
    }

    /// Writes `kept` and `state` in one transaction: the rows that changed since this store
    /// last read or wrote them, and the records of the orders in memory that changed. Returns
    /// the bytes written. Afterwards the board keeps no order whole.
    pub fn save(&mut self, kept: &KeptRef<'_>, state: &mut ChannelState) -> Result<u64, String> {
        let mut bytes = 0;
        // A save that met another process's is made again at once, every fold whole (which
        // meets nothing).
        for _ in 0..2 {
            let batch = self.prepare(kept, state)?;
            let db = self.db.as_mut().expect("opened by prepare");
            let written = batch::write(db, &batch)?;
            bytes += written.bytes;
            self.wrote(written);
            if !self.unkept {
                break;
            }
            self.unkept = false;
        }
        Ok(bytes)
    }

    /// As [`Store::save`], but the transaction is written on a thread of its own (ADR 0024):
    /// the caller goes on at once, and whatever reads or writes this store next waits for it.
    /// Returns the bytes the save holds. A write that fails is returned by the next call that
    /// reads or writes (the caller then rebuilds from the channel).
    pub fn save_in_background(
        &mut self,
        kept: &KeptRef<'_>,
        state: &mut ChannelState,
    ) -> Result<u64, String> {
        let batch = self.prepare(kept, state)?;
        let len = batch.len();
        let db = self.db.take().expect("opened by prepare");
        self.pending.start(db, batch);
        Ok(len)
    }

    /// Waits for a save being written in the background, if any. `Err` when it failed: what
    /// it held is in no row (the board dropped those orders whole), so the caller folds the
    /// channel again; the next save then writes everything anew.
    pub fn settle(&mut self) -> Result<(), String> {
        let Some((db, written)) = self.pending.settle() else {
            return Ok(());
        };
        self.db = db;
        match written {
            Ok(written) => {
                self.wrote(written);
                Ok(())
            }
            Err(why) => {
                self.replace = true;
                Err(format!(
                    "the kept state was not written ({why}); rebuilt from the channel"
                ))
            }
        }
    }

    /// Remembers what a save wrote: the digests of its rows (or those found unchanged), and
    /// the save its folds are as of now. A save that met another process's wrote only records:
    /// the state is saved again, every fold's parts whole.
    fn wrote(&mut self, written: batch::Written) {
        if written.conflicted {
            self.whole_next = true;
            self.unkept = true;
            return;
        }
        for (name, digest) in &written.digests {
            if *name != db::CORE && *name != db::LOOKS {
                self.snapshot.insert(name, *digest);
            }
        }
        self.written.extend(written.digests);
        self.as_of = written.save;
    }

    /// Whether a save since the last call wrote only records (it met another process's save):
    /// the caller saves the state again.
    pub fn take_unkept(&mut self) -> bool {
        std::mem::take(&mut self.unkept)
    }

    /// Encodes what a save of `kept` and `state` writes (see [`Store::save`]) and marks it
    /// kept in `state`; afterwards the store has a connection to write it through.
    fn prepare(&mut self, kept: &KeptRef<'_>, state: &mut ChannelState) -> Result<Batch, String> {
        self.settle()?;
        // Removed or replaced under this session (a database it never had is made now).
        let moved = self.file_id.is_some() && file_id(&self.path) != self.file_id;
        if moved || self.replace {
            // Every row and record is written anew: read those not in memory while the
            // connection still reads the file they are in.
            self.load_sections(state, Sections::ALL)?;
            self.page_in_talk(state)?;
            let ids = state.orders_not_resident();
            self.page_orders(state, &ids)?;
            state.forget_order_records();
        }
        if moved {
            // Removed or replaced under this session: what it named is not there.
            let (fresh, _) = Store::open(&self.path).map_err(|e| e.to_string())?;
            *self = Self {
                replace: true,
                ..fresh
            };
        }
        let replace = self.replace;
        if self.db.is_none() {
            self.db = Some(db::Db::open(&self.path).map_err(|e| e.to_string())?);
            self.file_id = file_id(&self.path);
        }
        // Another process may have saved its folds since this session read its core: a fold
        // whose row is no longer the one this core goes with is loaded (as of this core) and
        // written back with it, so the database never pairs this core with another's folds.
        let stale = if replace {
            Sections::default()
        } else if self.whole_next {
            Sections {
                times: self.stale_sections().times,
                ..Sections::ALL
            }
        } else {
            self.stale_sections()
        };
        self.load_sections(state, stale)?;
        let mut records = Records::default();
        // The records first: the board's row names them.
        state.put_order_records(&mut records)?;
        let core = postcard::to_stdvec(&CoreRef {
            reader: kept.reader,
            state,
            problems: kept.problems,
            dropped_problems: kept.dropped_problems,
            pinned: kept.pinned,
        })
        .map_err(|e| e.to_string())?;
        let looks = kept.reader.look_paths().join("\n").into_bytes();
        let mut rows: Vec<(&'static str, Vec<u8>, bool)> =
            vec![(db::CORE, core, false), (db::LOOKS, looks, false)];
        // A fold not loaded is as it was kept: its row stands (a database replaced whole has
        // every fold loaded, above).
        // The board and talk: their small rest in a row, and a row per order or message, of
        // those that changed only unless the fold is written whole (ADR 0011).
        let since = self.as_of;
        let mut items = Vec::new();
        if let Some(board) = state.orders_lazy().get()
            && (replace || stale.board || state.orders_lazy().changed())
        {
            let whole = replace || stale.board || !state.orders_lazy().is_from_kept();
            rows.push((db::BOARD, board.encode_rest()?, stale.board));
            items.push(batch::Items {
                fold: db::BOARD,
                whole,
                since,
                rows: board.brief_rows(whole)?,
            });
        }
        if let Some(talk) = state.talk_lazy().get()
            && (replace || stale.talk || state.talk_lazy().changed())
        {
            let whole = replace
                || stale.talk
                || !state.talk_lazy().is_from_kept()
                || self.talk_through.is_none();
            if whole && talk.paged_through() > 0 {
                // Written whole: every message, those paged out read back first.
                self.page_in_talk(state)?;
            }
            let Some(talk) = state.talk_lazy().get() else {
                return Err("talk went while it was saved".into());
            };
            let after = if whole {
                0
            } else {
                self.talk_through.unwrap_or(0)
            };
            rows.push((db::TALK, talk.encode_rest()?, stale.talk));
            items.push(batch::Items {
                fold: db::TALK,
                whole,
                since,
                rows: talk.message_rows_after(after)?,
            });
            self.talk_through = Some(talk.last_stamp());
        }
        let times = state.identity().master_times_lazy();
        if times.is_loaded()
            && (replace || stale.times || times.changed())
            && let Some(encoded) = state.master_times_encoded()
        {
            rows.push((db::TIMES, encoded?, stale.times));
        }
        self.replace = false;
        self.whole_next = false;
        state.saved();
        // Talk's messages kept now (and not among the newest) go out of memory: their rows
        // hold them, read when asked for (whoever reads them waits for this save).
        if let (Some(talk), Some(kept_through)) = (state.talk_paging(), self.talk_through) {
            talk.page_out(self.talk_window, kept_through);
        }
        Ok(Batch {
            replace,
            genesis: *kept.genesis,
            channel: *kept.channel,
            generation: kept.generation,
            records: records.0,
            rows,
            written: self.written.clone(),
            items,
        })
    }

    /// Writes a whole kept state (for tests that keep one made elsewhere).
    #[cfg(feature = "internals")]
    pub fn write(&mut self, kept: &mut Kept) -> Result<u64, String> {
        self.replace = true;
        let Kept {
            genesis,
            channel,
            generation,
            reader,
            state,
            problems,
            dropped_problems,
            pinned,
        } = kept;
        self.save(
            &KeptRef {
                genesis,
                channel,
                generation: *generation,
                reader,
                problems,
                dropped_problems: *dropped_problems,
                pinned,
            },
            state,
        )
    }
}

/// How the kept state says an error SQLite gave (a full disk in the words the store uses),
/// for tests that cannot fill a real disk.
#[cfg(feature = "internals")]
pub fn describe_sqlite(e: rusqlite::Error) -> String {
    db::sqlite(e)
}

/// The bytes of everything `kept` holds, as a save writes them (for tests that compare what
/// reads back): the core, then the lazy folds. Its orders' records must be kept already.
#[cfg(feature = "internals")]
pub fn encode(kept: &Kept) -> Result<Vec<u8>, String> {
    let mut bytes = postcard::to_stdvec(&CoreRef {
        reader: &kept.reader,
        state: &kept.state,
        problems: &kept.problems,
        dropped_problems: kept.dropped_problems,
        pinned: &kept.pinned,
    })
    .map_err(|e| e.to_string())?;
    for part in [
        postcard::to_stdvec(kept.state.orders().map_err(|e| e.to_string())?),
        postcard::to_stdvec(kept.state.talk().map_err(|e| e.to_string())?),
        postcard::to_stdvec(
            kept.state
                .identity()
                .master_times()
                .ok_or("the master's times are not loaded")?,
        ),
    ] {
        bytes.extend(part.map_err(|e| e.to_string())?);
    }
    Ok(bytes)
}

/// The stamp a talk row's key names (big-endian).
fn stamp_of(key: &[u8]) -> Option<u64> {
    key.try_into().ok().map(u64::from_be_bytes)
}

/// The records a save writes, gathered before it is written.
#[derive(Default)]
struct Records(Vec<(String, [u8; 32], Vec<u8>)>);

impl RecordSink for Records {
    fn put(&mut self, id: &EntryId, digest: &[u8; 32], bytes: &[u8]) -> Result<(), String> {
        self.0.push((id.to_string(), *digest, bytes.to_vec()));
        Ok(())
    }
}

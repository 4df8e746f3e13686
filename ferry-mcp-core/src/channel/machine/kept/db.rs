//! The SQLite database a kept state lives in: its schema, and the rows read and written.
//!
//! Why SQLite (ADR 0011): several `ferry` processes on one machine read and write one
//! project's kept state at once, and a save must be all or nothing whatever kills the process;
//! WAL gives readers a consistent snapshot while one writer saves, and the busy timeout lets
//! savers wait their turn instead of failing.
//!
//! Tables: `meta` (format, the channel's identity and its genesis file's digest, generation,
//! a save counter), `sections` (the core, the looks, and one row per lazy fold, each with its
//! SHA-256, checked when the row is read: the core at every open, a fold's row when the fold
//! is first needed), `orders` (each order's record, keyed by id and digest: a record is never
//! changed where it is, so a state loaded by another process still finds the records it
//! names; a record superseded by a newer one of its order is removed [`KEEP_SUPERSEDED`]
//! saves later), `items` (the folds that grow with the work kept one row per part: the
//! board's orders, talk's messages; each row version is tagged with the save that wrote it,
//! so a session reads a fold as of the save its core came from, and a save writes only the
//! parts that changed: issue 23, ADR 0011).

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use rusqlite::{Connection, OpenFlags, OptionalExtension as _, TransactionBehavior, params};
use sha2::{Digest, Sha256};

/// Bumped whenever what is kept changes shape; an older state is rebuilt.
pub const FORMAT: u32 = 18;

pub const CORE: &str = "core";
pub const LOOKS: &str = "looks";
pub const BOARD: &str = "board";
pub const TALK: &str = "talk";
pub const TIMES: &str = "master_times";

/// How many saves a superseded record outlives its successor: a process that loaded the
/// state before it was superseded may still read it.
const KEEP_SUPERSEDED: u64 = 1_000;

/// How many saves a superseded fold's row outlives its successor: a command reads the rows it
/// needs within moments of its open, and a server loads every fold once it has opened, so
/// this covers them at a fraction of the disk 1,000 copies of the board would take.
const KEEP_SUPERSEDED_SECTIONS: u64 = 50;

/// How long a save waits for another process's save to finish.
const BUSY_TIMEOUT: Duration = Duration::from_secs(10);

const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS meta (name TEXT PRIMARY KEY, value BLOB NOT NULL) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS sections (
    name TEXT PRIMARY KEY, digest BLOB NOT NULL, value BLOB NOT NULL
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS orders (
    id TEXT NOT NULL, digest BLOB NOT NULL, record BLOB NOT NULL, superseded INTEGER,
    PRIMARY KEY (id, digest)
);
CREATE INDEX IF NOT EXISTS orders_superseded ON orders (superseded)
    WHERE superseded IS NOT NULL;
CREATE TABLE IF NOT EXISTS items (
    fold TEXT NOT NULL, key BLOB NOT NULL, save INTEGER NOT NULL,
    digest BLOB, value BLOB, superseded INTEGER,
    PRIMARY KEY (fold, key, save)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS items_superseded ON items (superseded)
    WHERE superseded IS NOT NULL;
CREATE TABLE IF NOT EXISTS superseded_sections (
    name TEXT NOT NULL, digest BLOB NOT NULL, value BLOB NOT NULL, superseded INTEGER NOT NULL,
    PRIMARY KEY (name, digest)
) WITHOUT ROWID;
";

/// Why a database did not open.
#[derive(Debug)]
pub enum OpenError {
    /// The path (or its journal's) is there and not a regular file.
    NotAFile(PathBuf),
    /// SQLite refused it: not a database, or corrupt.
    Sqlite(String),
    /// The disk is full: the database is as it was, and is neither read nor removed.
    DiskFull,
}

impl std::fmt::Display for OpenError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::NotAFile(path) => write!(f, "{} is not a regular file", path.display()),
            Self::Sqlite(why) => f.write_str(why),
            Self::DiskFull => f.write_str(DISK_FULL),
        }
    }
}

/// The files SQLite keeps for the database at `path`: itself, its WAL and its shared memory.
fn files_of(path: &Path) -> [PathBuf; 3] {
    let with = |suffix: &str| {
        let mut name = path.as_os_str().to_owned();
        name.push(suffix);
        PathBuf::from(name)
    };
    [path.to_owned(), with("-wal"), with("-shm")]
}

/// Removes the database at `path` and its journal files.
pub fn remove(path: &Path) -> std::io::Result<()> {
    for file in files_of(path) {
        match std::fs::remove_file(&file) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => return Err(e),
            _ => {}
        }
    }
    Ok(())
}

/// The SHA-256 of a row's bytes.
pub fn digest(bytes: &[u8]) -> [u8; 32] {
    Sha256::digest(bytes).into()
}

/// One section row, checked against its digest.
#[derive(Debug)]
pub struct Row {
    pub name: &'static str,
    pub digest: [u8; 32],
    pub bytes: Arc<[u8]>,
}

/// What an open reads: the meta rows and the core, from one snapshot. The lazy folds' rows
/// are read (and their digests checked) only when a fold is first needed ([`Db::section`]).
#[derive(Debug)]
pub struct Head {
    pub format: u32,
    /// The SHA-256 of the genesis file this state was kept for.
    pub genesis: [u8; 32],
    /// The identity of the channel it was kept for (none in a state an older build kept,
    /// which named the channel by its file alone).
    pub channel: Option<[u8; 32]>,
    pub generation: u64,
    pub core: Row,
    /// The digest of each lazy fold's row in the same snapshot as the core: the row a session
    /// that loaded this core reads later, even after another process saved a newer one.
    pub sections: Vec<(&'static str, [u8; 32])>,
    /// The save this snapshot is of: the folds' rows are read as of it ([`Db::for_each_item`]).
    pub saves: u64,
}

/// An open database.
#[derive(Debug)]
pub struct Db {
    conn: Connection,
}

/// How a full disk is said, wherever the kept state meets it.
const DISK_FULL: &str = "no space left on the device";

/// What an error SQLite gave says.
pub fn sqlite(e: rusqlite::Error) -> String {
    // SQLite says "database or disk is full": the disk, every time a save meets it.
    if is_disk_full(&e) {
        return DISK_FULL.to_owned();
    }
    e.to_string()
}

/// Whether SQLite met a full disk, not a database it could not read: `SQLITE_FULL` (a write to
/// the database or its WAL), or `SQLITE_IOERR_SHMSIZE` (its shared memory file could not be
/// grown, which is what an open on a full disk meets first).
fn is_disk_full(e: &rusqlite::Error) -> bool {
    match e {
        rusqlite::Error::SqliteFailure(failure, _) => {
            failure.code == rusqlite::ErrorCode::DiskFull
                || failure.extended_code == rusqlite::ffi::SQLITE_IOERR_SHMSIZE
        }
        _ => false,
    }
}

/// An error opening the database: a full disk apart from a database that does not read.
fn open_error(e: rusqlite::Error) -> OpenError {
    if is_disk_full(&e) {
        return OpenError::DiskFull;
    }
    OpenError::Sqlite(e.to_string())
}

/// An OS error making the database: a full disk apart from the rest.
fn open_io_error(e: std::io::Error) -> OpenError {
    if e.kind() == std::io::ErrorKind::StorageFull {
        return OpenError::DiskFull;
    }
    OpenError::Sqlite(e.to_string())
}

fn flags() -> OpenFlags {
    OpenFlags::SQLITE_OPEN_READ_WRITE
        | OpenFlags::SQLITE_OPEN_CREATE
        | OpenFlags::SQLITE_OPEN_NO_MUTEX
        | OpenFlags::SQLITE_OPEN_NOFOLLOW
}

/// The connection's settings: WAL (readers see a snapshot while one process saves), a busy
/// timeout (a saver waits for another), and a commit synced before it is acknowledged.
fn configure(conn: &Connection) -> rusqlite::Result<()> {
    conn.busy_timeout(BUSY_TIMEOUT)?;
    conn.query_row("PRAGMA journal_mode=WAL", [], |row| row.get::<_, String>(0))?;
    conn.execute_batch("PRAGMA synchronous=FULL;")?;
    conn.execute_batch(SCHEMA)
}

/// Makes the database at `path` if none is there: whole (schema and all) beside it, then
/// moved into place, the owner's alone (the kept state holds the orders' texts; SQLite makes
/// its journal files with the same mode). So an empty file at `path` is never one being made,
/// and is reported.
fn create(path: &Path) -> Result<(), OpenError> {
    if std::fs::symlink_metadata(path).is_ok() {
        return Ok(());
    }
    let io = open_io_error;
    let dir = path.parent().unwrap_or(Path::new("."));
    let mut builder = std::fs::DirBuilder::new();
    builder.recursive(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::DirBuilderExt as _;
        builder.mode(0o700);
    }
    builder.create(dir).map_err(io)?;
    // tempfile makes it 0600.
    let temp = tempfile::Builder::new()
        .prefix(".kept-")
        .suffix(".db")
        .tempfile_in(dir)
        .map_err(io)?;
    {
        let conn = Connection::open_with_flags(temp.path(), flags()).map_err(open_error)?;
        configure(&conn).map_err(open_error)?;
    }
    match temp.persist_noclobber(path) {
        Ok(_) => {}
        // Another process made it first: that one is used.
        Err(err) if err.error.kind() == std::io::ErrorKind::AlreadyExists => {}
        Err(err) => return Err(io(err.error)),
    }
    crate::channel::log::store::durable::sync_dir(dir).map_err(io)
}

impl Db {
    /// Opens the database at `path`, making it if it is not there. Each of its files that is
    /// there must be a regular file, looked at without following a link: a FIFO would hang
    /// the open, a link would send the writes elsewhere.
    pub fn open(path: &Path) -> Result<Self, OpenError> {
        for file in files_of(path) {
            if let Ok(meta) = std::fs::symlink_metadata(&file)
                && !meta.file_type().is_file()
            {
                return Err(OpenError::NotAFile(file));
            }
        }
        if std::fs::symlink_metadata(path).is_ok_and(|meta| meta.len() == 0) {
            return Err(OpenError::Sqlite("it is empty".into()));
        }
        create(path)?;
        let conn = Connection::open_with_flags(path, flags()).map_err(open_error)?;
        configure(&conn).map_err(open_error)?;
        Ok(Self { conn })
    }

    /// The looks row, if there is one.
    pub fn looks(&self) -> Result<String, String> {
        let bytes: Option<Vec<u8>> = self
            .conn
            .query_row(
                "SELECT value FROM sections WHERE name = ?1",
                [LOOKS],
                |row| row.get(0),
            )
            .optional()
            .map_err(sqlite)?;
        Ok(bytes
            .and_then(|bytes| String::from_utf8(bytes).ok())
            .unwrap_or_default())
    }

    fn meta(conn: &Connection, name: &str) -> Result<Option<Vec<u8>>, String> {
        conn.query_row("SELECT value FROM meta WHERE name = ?1", [name], |row| {
            row.get(0)
        })
        .optional()
        .map_err(sqlite)
    }

    /// The meta rows and the core, from one snapshot: `None` when nothing is kept. A full disk
    /// met on the way (the read's journal files) is [`OpenError::DiskFull`], never a database
    /// that does not read.
    pub fn load(&mut self) -> Result<Option<Head>, OpenError> {
        self.read_head().map_err(|why| {
            if why == DISK_FULL {
                OpenError::DiskFull
            } else {
                OpenError::Sqlite(why)
            }
        })
    }

    fn read_head(&mut self) -> Result<Option<Head>, String> {
        let tx = self.conn.transaction().map_err(sqlite)?;
        let Some(format) = Self::meta(&tx, "format")? else {
            return Ok(None);
        };
        let format = u32::from_le_bytes(
            format
                .try_into()
                .map_err(|_| "its format does not read".to_owned())?,
        );
        if format != FORMAT {
            return Ok(Some(Head {
                format,
                genesis: [0; 32],
                channel: None,
                generation: 0,
                core: empty(CORE),
                sections: Vec::new(),
                saves: 0,
            }));
        }
        let saves = Self::counter(&tx, "saves")?;
        let genesis: [u8; 32] = Self::meta(&tx, "genesis")?
            .and_then(|bytes| bytes.try_into().ok())
            .ok_or("its genesis does not read")?;
        let channel = match Self::meta(&tx, "channel")? {
            None => None,
            Some(bytes) => Some(
                <[u8; 32]>::try_from(bytes).map_err(|_| "its channel does not read".to_owned())?,
            ),
        };
        let generation = Self::meta(&tx, "generation")?
            .and_then(|bytes| bytes.try_into().ok())
            .map(u64::from_le_bytes)
            .ok_or("its generation does not read")?;
        let core = Self::row(&tx, CORE)?;
        let mut sections = Vec::new();
        for name in [BOARD, TALK, TIMES] {
            let digest: Option<Vec<u8>> = tx
                .query_row(
                    "SELECT digest FROM sections WHERE name = ?1",
                    [name],
                    |row| row.get(0),
                )
                .optional()
                .map_err(sqlite)?;
            if let Some(digest) = digest.and_then(|digest| <[u8; 32]>::try_from(digest).ok()) {
                sections.push((name, digest));
            }
        }
        drop(tx);
        Ok(Some(Head {
            format,
            genesis,
            channel,
            generation,
            core,
            sections,
            saves,
        }))
    }

    /// A counter of the meta rows (0 when it is not there).
    fn counter(conn: &Connection, name: &str) -> Result<u64, String> {
        Ok(Self::meta(conn, name)?
            .and_then(|bytes| bytes.try_into().ok())
            .map_or(0, u64::from_le_bytes))
    }

    /// The last save that wrote rows of the fold `fold` ([`Db::for_each_item`]).
    pub fn items_saved(&self, fold: &str) -> Result<u64, String> {
        Self::counter(&self.conn, &format!("items:{fold}"))
    }

    /// Hands `each` the values of the rows of the fold `fold` as of save `as_of` (for each part, its
    /// latest row written by that save or an earlier one, unless that row removed it), in the
    /// order of their keys, each checked against its digest. A state older than the rows
    /// still kept (another process saved more than [`KEEP_SUPERSEDED_SECTIONS`] times since)
    /// is an error: the caller folds the channel again.
    ///
    /// Each value is handed over as it is read (never all in memory at once). The outer error
    /// is the database's; the inner one is `each`'s.
    pub fn for_each_item(
        &self,
        fold: &'static str,
        as_of: u64,
        each: &mut dyn FnMut(&[u8]) -> Result<(), String>,
    ) -> Result<Result<(), String>, String> {
        let tx = self.conn.unchecked_transaction().map_err(sqlite)?;
        if Self::counter(&tx, "horizon")? > as_of {
            return Err(format!("its {fold} rows of this state are gone"));
        }
        let mut select = tx
            .prepare_cached(
                "SELECT digest, value, MAX(save) FROM items
                 WHERE fold = ?1 AND save <= ?2 GROUP BY key ORDER BY key",
            )
            .map_err(sqlite)?;
        let mut rows = select.query(params![fold, as_of as i64]).map_err(sqlite)?;
        let mut outcome = Ok(());
        while let Some(row) = rows.next().map_err(sqlite)? {
            let digest = row
                .get_ref(0)
                .map_err(sqlite)?
                .as_blob_or_null()
                .map_err(|e| e.to_string())?;
            let value = row
                .get_ref(1)
                .map_err(sqlite)?
                .as_blob_or_null()
                .map_err(|e| e.to_string())?;
            let (Some(digest), Some(value)) = (digest, value) else {
                // Removed as of this save.
                continue;
            };
            if self::digest(value)[..] != digest[..] {
                return Err(format!("its {fold} row does not match its digest"));
            }
            if let Err(why) = each(value) {
                outcome = Err(why);
                break;
            }
        }
        drop(rows);
        drop(select);
        tx.finish().map_err(sqlite)?;
        Ok(outcome)
    }

    /// Part of [`Db::for_each_item`]: the rows of the fold `fold` as of save `as_of` whose keys lie
    /// after `after` and up to `upto`, each as its key and value, checked
    /// against its digest; at most `limit`, the first ones in key order, or the last ones
    /// when `newest`. What a session pages in of a fold it keeps only the newest parts of
    /// in memory (talk, ADR 0011).
    pub fn items_between(
        &self,
        fold: &'static str,
        as_of: u64,
        (after, upto): (&[u8], &[u8]),
        limit: usize,
        newest: bool,
    ) -> Result<crate::channel::fold::state::lazy::Rows, String> {
        let tx = self.conn.unchecked_transaction().map_err(sqlite)?;
        if Self::counter(&tx, "horizon")? > as_of {
            return Err(format!("its {fold} rows of this state are gone"));
        }
        let order = if newest { "DESC" } else { "ASC" };
        let mut select = tx
            .prepare_cached(&format!(
                "SELECT key, digest, value, MAX(save) FROM items
                 WHERE fold = ?1 AND key > ?3 AND key <= ?4 AND save <= ?2
                 GROUP BY key ORDER BY key {order} LIMIT ?5"
            ))
            .map_err(sqlite)?;
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        let mut rows = select
            .query(params![fold, as_of as i64, after, upto, limit])
            .map_err(sqlite)?;
        let mut values = Vec::new();
        while let Some(row) = rows.next().map_err(sqlite)? {
            let key: Vec<u8> = row.get(0).map_err(sqlite)?;
            let digest: Option<Vec<u8>> = row.get(1).map_err(sqlite)?;
            let value: Option<Vec<u8>> = row.get(2).map_err(sqlite)?;
            let (Some(digest), Some(value)) = (digest, value) else {
                continue;
            };
            if self::digest(&value)[..] != digest[..] {
                return Err(format!("its {fold} row does not match its digest"));
            }
            values.push((key, value));
        }
        drop(rows);
        drop(select);
        tx.finish().map_err(sqlite)?;
        Ok(values)
    }

    /// The digest the section row `name` holds now, if it reads.
    pub fn current_digest(&self, name: &str) -> Option<[u8; 32]> {
        let digest: Option<Vec<u8>> = self
            .conn
            .query_row(
                "SELECT digest FROM sections WHERE name = ?1",
                [name],
                |row| row.get(0),
            )
            .optional()
            .ok()
            .flatten();
        digest.and_then(|digest| digest.try_into().ok())
    }

    /// The section row `name` whose SHA-256 is `digest` (the one the loaded core was saved
    /// with: the current row, or one a later save superseded), checked against its digest.
    pub fn section(&self, name: &'static str, digest: &[u8; 32]) -> Result<Row, String> {
        let current = Self::row(&self.conn, name);
        if let Ok(row) = &current
            && row.digest == *digest
        {
            return current;
        }
        let kept: Option<Vec<u8>> = self
            .conn
            .query_row(
                "SELECT value FROM superseded_sections WHERE name = ?1 AND digest = ?2",
                params![name, &digest[..]],
                |row| row.get(0),
            )
            .optional()
            .map_err(sqlite)?;
        match kept {
            Some(bytes) if self::digest(&bytes) == *digest => Ok(Row {
                name,
                digest: *digest,
                bytes: bytes.into(),
            }),
            Some(_) => Err(format!("its {name} row does not match its digest")),
            // Not superseded: the current row is the one, or it is damaged or missing.
            None => current.and_then(|row| {
                if row.digest == *digest {
                    Ok(row)
                } else {
                    Err(format!("its {name} row of this state is gone"))
                }
            }),
        }
    }

    fn row(conn: &Connection, name: &'static str) -> Result<Row, String> {
        let (digest, bytes): (Vec<u8>, Vec<u8>) = conn
            .query_row(
                "SELECT digest, value FROM sections WHERE name = ?1",
                [name],
                |row| Ok((row.get(0)?, row.get(1)?)),
            )
            .optional()
            .map_err(sqlite)?
            .ok_or_else(|| format!("its {name} row is missing"))?;
        let digest: [u8; 32] = digest
            .try_into()
            .map_err(|_| format!("its {name} row has no digest"))?;
        if self::digest(&bytes) != digest {
            return Err(format!("its {name} row does not match its digest"));
        }
        Ok(Row {
            name,
            digest,
            bytes: bytes.into(),
        })
    }

    /// The record of order `id` whose SHA-256 is `digest`.
    pub fn record(&self, id: &str, digest: &[u8; 32]) -> Result<Vec<u8>, String> {
        self.conn
            .query_row(
                "SELECT record FROM orders WHERE id = ?1 AND digest = ?2",
                params![id, &digest[..]],
                |row| row.get(0),
            )
            .optional()
            .map_err(sqlite)?
            .ok_or_else(|| "it is not in the kept state".to_owned())
    }

    /// Starts a save: one transaction that holds the database's write lock (waiting for
    /// another process's save), emptied first when `replace`.
    pub fn begin(&mut self, replace: bool) -> Result<Save<'_>, String> {
        let tx = self
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .map_err(sqlite)?;
        let saves = Self::counter(&tx, "saves")? + 1;
        if replace {
            tx.execute_batch(
                "DELETE FROM orders; DELETE FROM sections; DELETE FROM superseded_sections;
                 DELETE FROM items; DELETE FROM meta;",
            )
            .map_err(sqlite)?;
            // The count goes on, and no state of an earlier save reads what this one writes.
            tx.execute(
                "INSERT INTO meta (name, value) VALUES ('horizon', ?1)",
                [&saves.to_le_bytes()[..]],
            )
            .map_err(sqlite)?;
        }
        Ok(Save {
            tx,
            saves,
            bytes: 0,
        })
    }
}

fn empty(name: &'static str) -> Row {
    Row {
        name,
        digest: [0; 32],
        bytes: Arc::from(&[][..]),
    }
}

/// A save in progress: nothing of it is seen by anyone until [`Save::commit`].
#[derive(Debug)]
pub struct Save<'a> {
    tx: rusqlite::Transaction<'a>,
    /// This save's number.
    saves: u64,
    /// Bytes written so far.
    bytes: u64,
}

impl Save<'_> {
    fn put_meta(&mut self, name: &str, value: &[u8]) -> Result<(), String> {
        self.tx
            .execute(
                "INSERT OR REPLACE INTO meta (name, value) VALUES (?1, ?2)",
                params![name, value],
            )
            .map_err(sqlite)?;
        Ok(())
    }

    /// The format, the channel (its identity and the digest of its genesis file) and the
    /// generation this state is of.
    pub fn meta(
        &mut self,
        genesis: &[u8; 32],
        channel: &[u8; 32],
        generation: u64,
    ) -> Result<(), String> {
        self.put_meta("format", &FORMAT.to_le_bytes())?;
        self.put_meta("genesis", genesis)?;
        self.put_meta("channel", channel)?;
        self.put_meta("generation", &generation.to_le_bytes())?;
        let saves = self.saves;
        self.put_meta("saves", &saves.to_le_bytes())
    }

    pub fn section(&mut self, name: &str, digest: &[u8; 32], bytes: &[u8]) -> Result<(), String> {
        // The row it replaces stays readable by digest for a while: a session that loaded the
        // core it was saved with reads it later (ADR 0011).
        self.tx
            .execute(
                "INSERT OR IGNORE INTO superseded_sections (name, digest, value, superseded)
                 SELECT name, digest, value, ?2 FROM sections WHERE name = ?1 AND digest <> ?3",
                params![name, self.saves as i64, &digest[..]],
            )
            .map_err(sqlite)?;
        self.tx
            .execute(
                "INSERT OR REPLACE INTO sections (name, digest, value) VALUES (?1, ?2, ?3)",
                params![name, &digest[..], bytes],
            )
            .map_err(sqlite)?;
        self.bytes += bytes.len() as u64;
        Ok(())
    }

    /// Keeps order `id`'s record `bytes` (of SHA-256 `digest`); its other records are
    /// superseded by it.
    pub fn record(&mut self, id: &str, digest: &[u8; 32], bytes: &[u8]) -> Result<(), String> {
        self.tx
            .execute(
                "INSERT INTO orders (id, digest, record, superseded) VALUES (?1, ?2, ?3, NULL)
                 ON CONFLICT (id, digest) DO UPDATE
                 SET record = excluded.record, superseded = NULL",
                params![id, &digest[..], bytes],
            )
            .map_err(sqlite)?;
        self.tx
            .execute(
                "UPDATE orders SET superseded = ?1
                 WHERE id = ?2 AND digest <> ?3 AND superseded IS NULL",
                params![self.saves as i64, id, &digest[..]],
            )
            .map_err(sqlite)?;
        self.bytes += bytes.len() as u64;
        Ok(())
    }

    /// This save's number.
    pub fn number(&self) -> u64 {
        self.saves
    }

    /// The last save that wrote rows of the fold `fold`.
    pub fn items_saved(&self, fold: &str) -> Result<u64, String> {
        Db::counter(&self.tx, &format!("items:{fold}"))
    }

    /// The digest of each part of the fold `fold` as the database holds it now (its parts
    /// removed left out).
    pub fn live_items(
        &self,
        fold: &str,
    ) -> Result<std::collections::HashMap<Vec<u8>, Vec<u8>>, String> {
        let mut select = self
            .tx
            .prepare_cached(
                "SELECT key, digest FROM items
                 WHERE fold = ?1 AND superseded IS NULL AND digest IS NOT NULL",
            )
            .map_err(sqlite)?;
        let rows = select
            .query_map([fold], |row| Ok((row.get(0)?, row.get(1)?)))
            .map_err(sqlite)?;
        rows.collect::<rusqlite::Result<_>>().map_err(sqlite)
    }

    /// Keeps `bytes` as the part `key` of the fold `fold` from this save on (none: the part is
    /// removed). The row it replaces stays readable by the states of earlier saves for a while.
    pub fn item(&mut self, fold: &str, key: &[u8], bytes: Option<&[u8]>) -> Result<(), String> {
        let saves = self.saves as i64;
        self.tx
            .prepare_cached(
                "UPDATE items SET superseded = ?3
                 WHERE fold = ?1 AND key = ?2 AND superseded IS NULL AND save < ?3",
            )
            .map_err(sqlite)?
            .execute(params![fold, key, saves])
            .map_err(sqlite)?;
        let digest = bytes.map(|bytes| self::digest(bytes).to_vec());
        // A removal is superseded by itself: once no state older than it is read, neither it
        // nor the rows before it are needed.
        let superseded = bytes.is_none().then_some(saves);
        self.tx
            .prepare_cached(
                "INSERT OR REPLACE INTO items (fold, key, save, digest, value, superseded)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
            )
            .map_err(sqlite)?
            .execute(params![fold, key, saves, digest, bytes, superseded])
            .map_err(sqlite)?;
        self.bytes += bytes.map_or(0, <[u8]>::len) as u64;
        Ok(())
    }

    /// Marks the fold `fold`'s rows as written by this save.
    pub fn items_written(&mut self, fold: &str) -> Result<(), String> {
        let saves = self.saves;
        self.put_meta(&format!("items:{fold}"), &saves.to_le_bytes())
    }

    /// Makes the save durable and seen; returns the bytes it wrote.
    pub fn commit(self) -> Result<u64, String> {
        let horizon = self.saves.saturating_sub(KEEP_SUPERSEDED);
        self.tx
            .execute(
                "DELETE FROM orders WHERE superseded IS NOT NULL AND superseded <= ?1",
                [horizon as i64],
            )
            .map_err(sqlite)?;
        let horizon = self.saves.saturating_sub(KEEP_SUPERSEDED_SECTIONS);
        self.tx
            .execute(
                "DELETE FROM superseded_sections WHERE superseded <= ?1",
                [horizon as i64],
            )
            .map_err(sqlite)?;
        let pruned = self
            .tx
            .execute(
                "DELETE FROM items WHERE superseded IS NOT NULL AND superseded <= ?1",
                [horizon as i64],
            )
            .map_err(sqlite)?;
        if pruned > 0 && Db::counter(&self.tx, "horizon")? < horizon {
            // A state of a save before this one may miss a row it would read: it is refused.
            self.tx
                .execute(
                    "INSERT OR REPLACE INTO meta (name, value) VALUES ('horizon', ?1)",
                    [&horizon.to_le_bytes()[..]],
                )
                .map_err(sqlite)?;
        }
        self.tx.commit().map_err(sqlite)?;
        Ok(self.bytes)
    }
}

#[cfg(test)]
mod disk_full_tests {
    use super::*;

    #[test]
    fn sqlite_s_full_disk_is_said_as_no_space_left_on_the_device() {
        let full = rusqlite::Error::SqliteFailure(
            rusqlite::ffi::Error::new(rusqlite::ffi::SQLITE_FULL),
            Some("database or disk is full".to_owned()),
        );
        assert_eq!(sqlite(full), "no space left on the device");
        let busy = rusqlite::Error::SqliteFailure(
            rusqlite::ffi::Error::new(rusqlite::ffi::SQLITE_BUSY),
            Some("database is locked".to_owned()),
        );
        assert_eq!(sqlite(busy), "database is locked");
    }
}

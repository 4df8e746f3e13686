//! The SQLite database a kept state lives in: its schema, and the rows read and written.
//!
//! Why SQLite (ADR 0011): several `ferry` processes on one machine read and write one
//! project's kept state at once, and a save must be all or nothing whatever kills the process;
//! WAL gives readers a consistent snapshot while one writer saves, and the busy timeout lets
//! savers wait their turn instead of failing.
//!
//! Tables: `meta` (format, the channel's genesis digest, generation, a save counter),
//! `sections` (the core, the looks, and one row per lazy fold, each with its SHA-256, checked
//! when read), `orders` (each order's record, keyed by id and digest: a record is never
//! changed where it is, so a state loaded by another process still finds the records it
//! names; a record superseded by a newer one of its order is removed [`KEEP_SUPERSEDED`]
//! saves later).

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use rusqlite::{Connection, OpenFlags, OptionalExtension as _, TransactionBehavior, params};
use sha2::{Digest, Sha256};

/// Bumped whenever what is kept changes shape; an older state is rebuilt.
pub const FORMAT: u32 = 11;

pub const CORE: &str = "core";
pub const LOOKS: &str = "looks";
pub const BOARD: &str = "board";
pub const TALK: &str = "talk";
pub const TIMES: &str = "master_times";

/// How many saves a superseded record outlives its successor: a process that loaded the
/// state before it was superseded may still read it.
const KEEP_SUPERSEDED: u64 = 1_000;

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
";

/// Why a database did not open.
#[derive(Debug)]
pub enum OpenError {
    /// The path (or its journal's) is there and not a regular file.
    NotAFile(PathBuf),
    /// SQLite refused it: not a database, or corrupt.
    Sqlite(String),
}

impl std::fmt::Display for OpenError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::NotAFile(path) => write!(f, "{} is not a regular file", path.display()),
            Self::Sqlite(why) => f.write_str(why),
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

/// Every row an open reads, from one snapshot.
#[derive(Debug)]
pub struct Rows {
    pub format: u32,
    pub genesis: [u8; 32],
    pub generation: u64,
    pub core: Row,
    pub looks: Row,
    pub board: Row,
    pub talk: Row,
    pub times: Row,
}

/// An open database.
#[derive(Debug)]
pub struct Db {
    conn: Connection,
}

fn sqlite(e: rusqlite::Error) -> String {
    // SQLite says "database or disk is full": the disk, every time a save meets it.
    if e.sqlite_error_code() == Some(rusqlite::ErrorCode::DiskFull) {
        return "no space left on the device".to_owned();
    }
    e.to_string()
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
    let io = |e: std::io::Error| OpenError::Sqlite(e.to_string());
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
        let conn = Connection::open_with_flags(temp.path(), flags())
            .map_err(|e| OpenError::Sqlite(e.to_string()))?;
        configure(&conn).map_err(|e| OpenError::Sqlite(e.to_string()))?;
    }
    match temp.persist_noclobber(path) {
        Ok(_) => {}
        // Another process made it first: that one is used.
        Err(err) if err.error.kind() == std::io::ErrorKind::AlreadyExists => {}
        Err(err) => return Err(io(err.error)),
    }
    crate::channel::store::durable::sync_dir(dir).map_err(io)
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
        let fail = |e: rusqlite::Error| OpenError::Sqlite(e.to_string());
        let conn = Connection::open_with_flags(path, flags()).map_err(fail)?;
        configure(&conn).map_err(fail)?;
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

    /// Every row an open needs, from one snapshot: `None` when nothing is kept.
    pub fn load(&mut self) -> Result<Option<Rows>, String> {
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
            return Ok(Some(Rows {
                format,
                genesis: [0; 32],
                generation: 0,
                core: empty(CORE),
                looks: empty(LOOKS),
                board: empty(BOARD),
                talk: empty(TALK),
                times: empty(TIMES),
            }));
        }
        let genesis: [u8; 32] = Self::meta(&tx, "genesis")?
            .and_then(|bytes| bytes.try_into().ok())
            .ok_or("its genesis does not read")?;
        let generation = Self::meta(&tx, "generation")?
            .and_then(|bytes| bytes.try_into().ok())
            .map(u64::from_le_bytes)
            .ok_or("its generation does not read")?;
        let row = |name: &'static str| -> Result<Row, String> {
            let (digest, bytes): (Vec<u8>, Vec<u8>) = tx
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
        };
        let rows = Rows {
            format,
            genesis,
            generation,
            core: row(CORE)?,
            looks: row(LOOKS)?,
            board: row(BOARD)?,
            talk: row(TALK)?,
            times: row(TIMES)?,
        };
        drop(tx);
        Ok(Some(rows))
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
        if replace {
            tx.execute_batch("DELETE FROM orders; DELETE FROM sections; DELETE FROM meta;")
                .map_err(sqlite)?;
        }
        let saves = Self::meta(&tx, "saves")?
            .and_then(|bytes| bytes.try_into().ok())
            .map_or(0, u64::from_le_bytes)
            + 1;
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

    /// The format, the channel and the generation this state is of.
    pub fn meta(&mut self, genesis: &[u8; 32], generation: u64) -> Result<(), String> {
        self.put_meta("format", &FORMAT.to_le_bytes())?;
        self.put_meta("genesis", genesis)?;
        self.put_meta("generation", &generation.to_le_bytes())?;
        let saves = self.saves;
        self.put_meta("saves", &saves.to_le_bytes())
    }

    pub fn section(&mut self, name: &str, digest: &[u8; 32], bytes: &[u8]) -> Result<(), String> {
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

    /// Makes the save durable and seen; returns the bytes it wrote.
    pub fn commit(self) -> Result<u64, String> {
        let horizon = self.saves.saturating_sub(KEEP_SUPERSEDED);
        self.tx
            .execute(
                "DELETE FROM orders WHERE superseded IS NOT NULL AND superseded <= ?1",
                [horizon as i64],
            )
            .map_err(sqlite)?;
        self.tx.commit().map_err(sqlite)?;
        Ok(self.bytes)
    }
}

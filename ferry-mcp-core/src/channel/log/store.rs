//! The channel folder on disk: its genesis file (the root of trust), the per-author logs and
//! the content-addressed blobs.
//!
//! ```text
//! <channel>/genesis.json                    written once at creation, signed by the master key
//! <channel>/logs/<author>/<key-hex>.jsonl   one append-only log per (author, key)
//! <channel>/blobs/<sha256-hex>              long bodies, named by their hash
//! ```
//!
//! Every file has exactly one writer, named by its path, so a synced folder never sees two
//! machines write one file. The store does file IO only inside the folder it is given.

pub(crate) mod durable;
mod writer;

use std::fmt;
use std::fs;
use std::io;
use std::path::{Path, PathBuf};
use std::str::FromStr;

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::channel::log::entry::{EntryError, FORMAT_VERSION};
use crate::channel::log::keys::{KeyError, PublicKey, SecretKey, Signature};
use crate::channel::log::names::{AgentName, ProjectId};
use crate::channel::log::reader::{LogState, Reader};
use crate::time::Timestamp;

pub use durable::TEMP_PREFIX;
// A writer is the session's alone (`Session::append`: authorize, then append); tests that plant
// entries as another client would reach it through the `internals` feature, which only the
// testkit turns on and the shipped binary never has.
#[cfg(feature = "internals")]
pub use writer::LogWriter;
#[cfg(not(feature = "internals"))]
pub(crate) use writer::LogWriter;

/// The genesis file's name in the channel folder.
pub const GENESIS_FILE: &str = "genesis.json";
/// The folder of per-author logs.
pub const LOGS_DIR: &str = "logs";
/// The folder of content-addressed blobs.
pub const BLOBS_DIR: &str = "blobs";
/// The extension of a log file.
pub const LOG_EXTENSION: &str = "jsonl";

/// The longest log line the writer produces; longer bodies belong in blobs.
pub const MAX_LINE_LEN: usize = 256 * 1024;

/// Where the log of `author` signed by `key` lives under the channel folder:
/// `logs/<author>/<key-hex>.jsonl` (nothing else is a log). Made with one allocation: every
/// warm open makes one for each log it kept.
pub(crate) fn rel_log_path(author: &AgentName, key: &PublicKey) -> PathBuf {
    let mut hex = [0u8; 64];
    hex::encode_to_slice(key.as_bytes(), &mut hex).expect("64 hex digits for 32 bytes");
    let hex = std::str::from_utf8(&hex).expect("hex digits");
    let sep = std::path::MAIN_SEPARATOR_STR;
    let parts = [LOGS_DIR, sep, author.as_str(), sep, hex, ".", LOG_EXTENSION];
    let mut path = String::with_capacity(parts.iter().map(|part| part.len()).sum());
    for part in parts {
        path.push_str(part);
    }
    PathBuf::from(path)
}

/// A genesis file is one short line; anything longer is refused unread (not held in memory).
pub const MAX_GENESIS_LEN: u64 = 4096;

/// Prefixed to the raw genesis bytes to form the signed message.
pub const GENESIS_SIGNING_DOMAIN: &[u8] = b"ferry-channel-genesis-v1\n";

/// Why a channel operation failed. Each message names its cause itself, so no variant also
/// gives it as its `source()` (an error chain printed whole would name it twice).
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("{path}: {cause}")]
    Io { path: PathBuf, cause: io::Error },
    /// Said plainly: the OS's words for it are easy to miss among the path and the code.
    #[error("{0}: no space left on the device")]
    DiskFull(PathBuf),
    #[error("a channel already exists in {0}")]
    AlreadyExists(PathBuf),
    #[error("no channel in {0}: genesis.json is missing")]
    NotAChannel(PathBuf),
    #[error("genesis.json is malformed: {0}")]
    BadGenesis(String),
    #[error("genesis.json is not signed by the master key it names")]
    GenesisSignature,
    #[error("bad entry: {0}")]
    Entry(EntryError),
    #[error("entry line is {len} bytes, the limit is {MAX_LINE_LEN}; put long bodies in a blob")]
    EntryTooLarge { len: usize },
    #[error("{0} is a symbolic link or not a regular file; refusing to write through it")]
    NotRegular(PathBuf),
    #[error("blob {0} is not in the channel")]
    BlobMissing(BlobId),
    #[error("blob {0} does not match its hash")]
    BlobCorrupt(BlobId),
}

impl From<EntryError> for StoreError {
    fn from(error: EntryError) -> Self {
        StoreError::Entry(error)
    }
}

impl StoreError {
    /// The store's reading of an OS error met at `path`: a full disk (`ENOSPC`) is
    /// [`StoreError::DiskFull`], said plainly; anything else is [`StoreError::Io`].
    pub fn from_io(path: &Path, cause: io::Error) -> StoreError {
        if cause.kind() == io::ErrorKind::StorageFull {
            return StoreError::DiskFull(path.to_owned());
        }
        StoreError::Io {
            path: path.to_owned(),
            cause,
        }
    }

    fn io(path: &Path) -> impl FnOnce(io::Error) -> StoreError + '_ {
        move |cause| Self::from_io(path, cause)
    }
}

/// The largest blob a reader takes into memory; a longer file is refused unread.
pub const MAX_BLOB_LEN: u64 = 16 << 20;

/// Reads at most `limit` bytes of a file: `None` when it is longer.
fn read_bounded(path: &Path, limit: u64) -> io::Result<Option<Vec<u8>>> {
    use std::io::Read as _;
    let file = durable::open_regular(path, fs::OpenOptions::new().read(true))?;
    let mut bytes = Vec::new();
    file.take(limit + 1).read_to_end(&mut bytes)?;
    Ok((bytes.len() as u64 <= limit).then_some(bytes))
}

/// The SHA-256 of a blob's bytes, which is also its file name; lower-case hex in text.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct BlobId([u8; 32]);

impl BlobId {
    pub fn of(bytes: &[u8]) -> Self {
        Self(Sha256::digest(bytes).into())
    }
    pub fn to_hex(&self) -> String {
        hex::encode(self.0)
    }
    pub fn from_hex(text: &str) -> Result<Self, KeyError> {
        let hash = crate::channel::log::entry::EntryHash::from_hex(text)?;
        Ok(Self(*hash.as_bytes()))
    }
}

impl fmt::Display for BlobId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.to_hex())
    }
}

impl fmt::Debug for BlobId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "BlobId({})", self.to_hex())
    }
}

impl FromStr for BlobId {
    type Err = KeyError;
    fn from_str(s: &str) -> Result<Self, KeyError> {
        Self::from_hex(s)
    }
}

/// The signed content of `genesis.json`; field order is byte order.
#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct Genesis {
    v: u32,
    project: ProjectId,
    master: PublicKey,
    time: Timestamp,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct GenesisFile<'a> {
    #[serde(borrow)]
    genesis: &'a serde_json::value::RawValue,
    sig: Signature,
}

fn genesis_message(raw: &[u8]) -> Vec<u8> {
    [GENESIS_SIGNING_DOMAIN, raw].concat()
}

/// An opened channel folder whose genesis file verified.
#[derive(Debug, Clone)]
pub struct Channel {
    dir: PathBuf,
    project: ProjectId,
    master: PublicKey,
    genesis_digest: [u8; 32],
    identity: [u8; 32],
}

/// The channel's identity: the SHA-256 of its signed genesis fields, written out again in
/// one canonical form, so that a file re-saved with other spacing or line ends names the same
/// channel (the kept state is keyed by it: ADR 0011).
fn identity_of(genesis: &Genesis) -> [u8; 32] {
    let canonical = serde_json::to_vec(genesis).expect("genesis always serializes");
    Sha256::digest([GENESIS_SIGNING_DOMAIN, &canonical[..]].concat()).into()
}

impl Channel {
    /// Creates the channel in `dir` (made if missing): the genesis file, signed by the master
    /// key and written once, and the empty `logs` and `blobs` folders.
    pub fn create(
        dir: &Path,
        project: &ProjectId,
        master: &SecretKey,
        now: Timestamp,
    ) -> Result<Channel, StoreError> {
        durable::create_dir_durably(dir).map_err(StoreError::io(dir))?;
        if dir.join(GENESIS_FILE).exists() {
            return Err(StoreError::AlreadyExists(dir.to_owned()));
        }
        for sub in [LOGS_DIR, BLOBS_DIR] {
            let path = dir.join(sub);
            durable::create_dir_durably(&path).map_err(StoreError::io(&path))?;
        }
        let genesis = Genesis {
            v: FORMAT_VERSION,
            project: project.clone(),
            master: master.public_key(),
            time: now,
        };
        let raw = serde_json::to_string(&genesis).expect("genesis always serializes");
        let sig = master.sign(&genesis_message(raw.as_bytes()));
        let file = format!("{{\"genesis\":{raw},\"sig\":\"{sig}\"}}\n");
        durable::write_atomic(dir, GENESIS_FILE, file.as_bytes(), durable::Existing::Keep)
            .map_err(|e| match e.kind() {
                io::ErrorKind::AlreadyExists => StoreError::AlreadyExists(dir.to_owned()),
                _ => StoreError::io(&dir.join(GENESIS_FILE))(e),
            })?;
        Ok(Channel {
            dir: dir.to_owned(),
            project: project.clone(),
            master: master.public_key(),
            genesis_digest: Sha256::digest(file.as_bytes()).into(),
            identity: identity_of(&genesis),
        })
    }

    /// Opens the channel in `dir`, checking that its genesis file is signed by the master key
    /// it names.
    pub fn open(dir: &Path) -> Result<Channel, StoreError> {
        let path = dir.join(GENESIS_FILE);
        // Never follow a link out of the channel (or into an endless device).
        if fs::symlink_metadata(&path).is_ok_and(|meta| !meta.file_type().is_file()) {
            return Err(StoreError::BadGenesis("not a regular file".to_owned()));
        }
        let bytes = match read_bounded(&path, MAX_GENESIS_LEN) {
            Ok(Some(bytes)) => bytes,
            Ok(None) => {
                return Err(StoreError::BadGenesis(format!(
                    "longer than {MAX_GENESIS_LEN} bytes"
                )));
            }
            Err(e) if e.kind() == io::ErrorKind::NotFound => {
                return Err(StoreError::NotAChannel(dir.to_owned()));
            }
            Err(e) => return Err(StoreError::io(&path)(e)),
        };
        let file: GenesisFile<'_> =
            serde_json::from_slice(&bytes).map_err(|e| StoreError::BadGenesis(e.to_string()))?;
        let raw = file.genesis.get().as_bytes();
        let genesis: Genesis =
            serde_json::from_slice(raw).map_err(|e| StoreError::BadGenesis(e.to_string()))?;
        if genesis.v != FORMAT_VERSION {
            return Err(StoreError::BadGenesis(format!(
                "unsupported format version {}",
                genesis.v
            )));
        }
        genesis
            .master
            .verify(&genesis_message(raw), &file.sig)
            .map_err(|_| StoreError::GenesisSignature)?;
        Ok(Channel {
            dir: dir.to_owned(),
            identity: identity_of(&genesis),
            project: genesis.project,
            master: genesis.master,
            // Of the bytes whose signature was checked: never of the file read again later,
            // which may have been replaced meanwhile.
            genesis_digest: Sha256::digest(&bytes).into(),
        })
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    pub fn project(&self) -> &ProjectId {
        &self.project
    }

    /// The master key fixed at creation: the root of trust.
    pub fn genesis_master(&self) -> &PublicKey {
        &self.master
    }

    /// Where the log of `author` signed by `key` lives.
    pub fn log_path(&self, author: &AgentName, key: &PublicKey) -> PathBuf {
        self.dir.join(rel_log_path(author, key))
    }

    /// A writer for the log of `author` signed by `key` (created on first use), outside any
    /// session: for tests that plant entries as another client would (the `internals`
    /// feature). Its tip is what it verifies of the log now.
    #[cfg(feature = "internals")]
    pub fn writer(&self, author: &AgentName, key: &SecretKey) -> Result<LogWriter, StoreError> {
        LogWriter::open(self, author, key, None)
    }

    /// A writer that continues from `verified`, this machine's verified state of the log, so
    /// that a log rolled back under it never reuses a seq: the session's, for `Session::append`.
    pub(crate) fn writer_from(
        &self,
        author: &AgentName,
        key: &SecretKey,
        verified: Option<LogState>,
    ) -> Result<LogWriter, StoreError> {
        LogWriter::open(self, author, key, verified)
    }

    /// Refuses a channel whose own folders (`logs/`, `blobs/`) are links or not folders:
    /// reading or writing through them would work outside the synced folder.
    pub fn check_own_folders(&self) -> Result<(), StoreError> {
        for sub in [LOGS_DIR, BLOBS_DIR] {
            let path = self.dir.join(sub);
            match fs::symlink_metadata(&path) {
                Ok(meta) if !meta.file_type().is_dir() => {
                    return Err(StoreError::NotRegular(path));
                }
                Ok(_) => {}
                Err(e) if e.kind() == io::ErrorKind::NotFound => {}
                Err(e) => return Err(StoreError::io(&path)(e)),
            }
        }
        Ok(())
    }

    /// A reader at the start of every log; its first poll reads the whole history.
    pub fn reader(&self) -> Reader {
        Reader::new(self)
    }

    /// The SHA-256 of `genesis.json` as its signature was checked: the kept state remembers
    /// it, so a file rewritten since (still signed for the same channel) is reported.
    pub fn genesis_digest(&self) -> [u8; 32] {
        self.genesis_digest
    }

    /// The channel's identity: the SHA-256 of the fields its genesis signs (the format, the
    /// project, the master key, the time), whatever the spacing of the file they were read
    /// from. The kept state is this machine's witness of this identity; the file's bytes
    /// ([`Channel::genesis_digest`]) changing under it is reported as tampering.
    pub fn identity(&self) -> [u8; 32] {
        self.identity
    }

    /// Stores `bytes` as a blob named by their SHA-256 (a no-op when it is already there).
    pub fn put_blob(&self, bytes: &[u8]) -> Result<BlobId, StoreError> {
        self.check_own_folders()?;
        let id = BlobId::of(bytes);
        let dir = self.dir.join(BLOBS_DIR);
        let name = id.to_hex();
        // Not `is_file`, which follows links: a planted link is replaced, never trusted.
        if fs::symlink_metadata(dir.join(&name)).is_ok_and(|meta| meta.file_type().is_file()) {
            return Ok(id);
        }
        durable::create_dir_durably(&dir).map_err(StoreError::io(&dir))?;
        durable::write_atomic(&dir, &name, bytes, durable::Existing::Replace)
            .map_err(StoreError::io(&dir.join(&name)))?;
        Ok(id)
    }

    /// Opens a blob to be read as a stream (a release artifact may be larger than
    /// [`MAX_BLOB_LEN`]): the caller checks the hash of what it reads. A symbolic link or other
    /// non-regular file in its place is refused unopened, as by [`Channel::get_blob`].
    pub fn open_blob(&self, id: &BlobId) -> Result<fs::File, StoreError> {
        self.check_own_folders()?;
        let path = self.dir.join(BLOBS_DIR).join(id.to_hex());
        match fs::symlink_metadata(&path) {
            Ok(meta) if !meta.file_type().is_file() => return Err(StoreError::BlobCorrupt(*id)),
            _ => {}
        }
        durable::open_regular(&path, fs::OpenOptions::new().read(true)).map_err(|e| {
            if e.kind() == io::ErrorKind::NotFound {
                StoreError::BlobMissing(*id)
            } else {
                StoreError::io(&path)(e)
            }
        })
    }

    /// Reads a blob and checks that its bytes still hash to its id. A symbolic link or other
    /// non-regular file in its place is refused unread: it could point outside the channel
    /// (or at an endless device).
    pub fn get_blob(&self, id: &BlobId) -> Result<Vec<u8>, StoreError> {
        self.check_own_folders()?;
        let path = self.dir.join(BLOBS_DIR).join(id.to_hex());
        match fs::symlink_metadata(&path) {
            Ok(meta) if !meta.file_type().is_file() => return Err(StoreError::BlobCorrupt(*id)),
            _ => {}
        }
        let bytes = match read_bounded(&path, MAX_BLOB_LEN) {
            Ok(Some(bytes)) => bytes,
            Ok(None) => return Err(StoreError::BlobCorrupt(*id)),
            Err(e) if e.kind() == io::ErrorKind::NotFound => {
                return Err(StoreError::BlobMissing(*id));
            }
            Err(e) => return Err(StoreError::io(&path)(e)),
        };
        if BlobId::of(&bytes) != *id {
            return Err(StoreError::BlobCorrupt(*id));
        }
        Ok(bytes)
    }
}

#[cfg(test)]
mod disk_full_tests {
    use std::io::Write as _;

    use super::*;

    /// A write the device refuses for want of space (ENOSPC): `/dev/full` answers every
    /// write so, for any user, so the mapping is held with the errno a full disk gives.
    #[test]
    fn a_write_that_meets_a_full_device_is_said_to_be_a_full_disk_with_its_path() {
        let device = Path::new("/dev/full");
        let mut file = fs::OpenOptions::new()
            .write(true)
            .open(device)
            .expect("/dev/full is on every Linux machine these tests run on");
        let cause = file
            .write_all(b"{}\n")
            .and_then(|()| file.sync_all())
            .expect_err("/dev/full refuses every write");
        let path = Path::new("/channel/agents/ann.log");
        let err = StoreError::io(path)(cause);
        assert!(
            matches!(&err, StoreError::DiskFull(p) if p == path),
            "{err:?}"
        );
        assert_eq!(
            err.to_string(),
            "/channel/agents/ann.log: no space left on the device"
        );
    }

    #[test]
    fn any_other_write_failure_stays_an_io_error_with_its_path() {
        let path = Path::new("/channel/agents/ann.log");
        let err = StoreError::io(path)(io::Error::from(io::ErrorKind::PermissionDenied));
        assert!(
            matches!(&err, StoreError::Io { path: p, .. } if p == path),
            "{err:?}"
        );
    }
}

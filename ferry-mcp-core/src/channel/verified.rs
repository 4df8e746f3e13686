//! The machine's verified state of one project (ADR 0004): how far every log was verified,
//! and the folded state, kept in the state folder between processes.
//!
//! It is an optimisation and a witness, never an authority: deleting it costs only time (and
//! the witness); a corrupt, foreign (another channel's genesis) or stale (another format) file
//! is reported and rebuilt from the channel, never trusted.
//!
//! Opening costs what the command needs, not what the channel holds: the folds that grow with
//! the channel's work (the order board, talk) are kept in sections of their own and read only
//! when something asks for them (a [`Lazy`]): a command about the primary, or a poll that
//! brings only talk, never decodes the order board. The file handle of the open is kept, so a
//! section read later comes from the same file even if another process replaced it since.
//!
//! File, all integers little endian:
//! - the magic line `ferry-verified\n`, the format version (u32), the core's length (u64), the
//!   looks' length (u64);
//! - the looks: the paths under the channel folder a full look stats (`logs/`, every author
//!   folder, every log), one a line, so an open can stat them on another core while it decodes
//!   the rest ([`looks`]);
//! - the core: the postcard encoding of [`Kept`] without its lazy sections;
//! - the section table: for each lazy section, its length (u64) and SHA-256 (32 bytes);
//! - the SHA-256 of everything above (header, core and table);
//! - the sections' bytes, one after another, in table order.
//!
//! The orders' records are in a file of their own beside it (`records.bin`, ADR 0010), whose
//! tag the core names.

use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::path::Path;
use std::sync::{Arc, Mutex, OnceLock};

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use super::identity::MasterTimes;
use super::reader::{IntegrityProblem, ReaderState};
use super::state::{ChannelState, OrderBoard, Talk};

const MAGIC: &[u8] = b"ferry-verified\n";
/// Bumped whenever what is kept changes shape; an older file is rebuilt.
pub const FORMAT: u32 = 11;
/// Bytes before the looks: magic, format, core length, looks length.
const HEADER: usize = MAGIC.len() + 4 + 8 + 8;
/// The longest looks this build reads (a path a line, for every log and author folder).
const MAX_LOOKS: u64 = 64 << 20;
/// The lazy sections, in file order.
const SECTIONS: usize = 3;
/// One entry of the section table: length and digest.
const TABLE_ENTRY: usize = 8 + 32;
/// The longest core this build reads (it holds the identity and the reader's logs, never the
/// folds that grow with the work); a longer one is corrupt.
const MAX_CORE: u64 = 1 << 30;

/// What is kept of a project between processes.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Kept {
    /// SHA-256 of the channel's `genesis.json`: the channel this state belongs to.
    pub genesis: [u8; 32],
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
    /// The tag of the records file the board's records are in (ADR 0010).
    pub records: Option<u64>,
}

/// The last pinning of the seated names (`Session` pins on open).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Pinned {
    /// The identity's seat epoch then: any change of who holds a name moves it.
    pub seat_epoch: u64,
    /// The pins file as it was after: any change to it (an edit, a deletion, another process
    /// pinning) makes the next open read it again.
    pub pins_file: Option<super::stamp::FileStamp>,
    /// Names whose key differed from the pinned one.
    pub changed: Vec<super::names::AgentName>,
}

/// Why a kept state was not used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Rejected {
    #[error("the verified state is corrupt ({0}); rebuilt from the channel")]
    Corrupt(String),
    #[error("the verified state belongs to another channel; rebuilt from this one")]
    Foreign,
    #[error("the verified state has format {0}, this build keeps {FORMAT}; rebuilt")]
    Stale(u32),
    #[error("the verified state could not be read ({0}); rebuilt from the channel")]
    Unreadable(String),
}

/// What loading found.
#[derive(Debug)]
pub enum Loaded {
    /// No kept state: the first open on this machine (or it was deleted).
    Missing,
    Kept(Box<Kept>),
    Rejected(Rejected),
}

/// Reads the kept state at `path`: the core now, the lazy sections when asked for. Of any
/// channel: [`Loaded::of_genesis`] refuses one kept for another.
pub fn load(path: &Path) -> Loaded {
    match load_once(path) {
        // Another process may have just compacted the records and written a state naming the
        // new file: one more try.
        Loaded::Rejected(Rejected::Corrupt(why)) if why == NO_RECORDS => load_once(path),
        loaded => loaded,
    }
}

/// Why a state whose records file is gone, or is another one, is not used.
const NO_RECORDS: &str = "its records file is missing or another one";

fn load_once(path: &Path) -> Loaded {
    let file = match File::open(path) {
        Ok(file) => file,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Loaded::Missing,
        Err(e) => return Loaded::Rejected(Rejected::Unreadable(e.to_string())),
    };
    match decode(file, path) {
        Ok(kept) => Loaded::Kept(Box::new(kept)),
        Err(rejected) => Loaded::Rejected(rejected),
    }
}

impl Loaded {
    /// What was loaded, for the channel whose genesis digest is `genesis`: a state kept for
    /// another channel is refused.
    pub fn of_genesis(self, genesis: &[u8; 32]) -> Self {
        match self {
            Loaded::Kept(kept) if kept.genesis != *genesis => Loaded::Rejected(Rejected::Foreign),
            other => other,
        }
    }
}

/// Format, core length and looks length, from a header whose magic was checked.
fn header_fields(header: &[u8; HEADER]) -> (u32, u64, u64) {
    let at = MAGIC.len();
    let format = u32::from_le_bytes(header[at..at + 4].try_into().expect("4"));
    let core_len = u64::from_le_bytes(header[at + 4..at + 12].try_into().expect("8"));
    let looks_len = u64::from_le_bytes(header[at + 12..at + 20].try_into().expect("8"));
    (format, core_len, looks_len)
}

/// The looks of a kept state: the paths (relative to the channel folder) its last full look
/// stat'ed, not yet read. Never checked against the file's digest: a hint of what to stat
/// ahead, trusted for nothing else (whatever is stat'ed is the file system's own answer, and a
/// path the reader does not ask for is never used).
#[derive(Debug)]
pub struct Looks {
    file: File,
    len: u64,
}

impl Looks {
    /// Opens the kept state at `path` and reads its header: `None` when it is missing or of
    /// another format.
    pub fn open(path: &Path) -> Option<Self> {
        let mut file = File::open(path).ok()?;
        let mut header = [0u8; HEADER];
        file.read_exact(&mut header).ok()?;
        let (format, _, len) = header_fields(&header);
        (header.starts_with(MAGIC) && format == FORMAT && len <= MAX_LOOKS)
            .then_some(Self { file, len })
    }

    /// How many bytes the paths take.
    pub fn len(&self) -> u64 {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The paths, one a line (none if they do not read).
    pub fn read(mut self) -> String {
        let mut bytes = vec![0u8; usize::try_from(self.len).unwrap_or(0)];
        if self.file.read_exact(&mut bytes).is_err() {
            return String::new();
        }
        String::from_utf8(bytes).unwrap_or_default()
    }
}

fn corrupt(why: &str) -> Rejected {
    Rejected::Corrupt(why.to_owned())
}

fn decode(mut file: File, path: &Path) -> Result<Kept, Rejected> {
    let unreadable = |e: std::io::Error| Rejected::Unreadable(e.to_string());
    let file_len = file.metadata().map_err(unreadable)?.len();
    let mut header = [0u8; HEADER];
    if file_len < HEADER as u64 {
        return Err(corrupt("not a verified-state file"));
    }
    file.read_exact(&mut header).map_err(unreadable)?;
    if !header.starts_with(MAGIC) {
        return Err(corrupt("not a verified-state file"));
    }
    let (format, core_len, looks_len) = header_fields(&header);
    let framed = HEADER as u64 + looks_len + core_len + (SECTIONS * TABLE_ENTRY) as u64 + 32;
    if core_len > MAX_CORE || looks_len > MAX_LOOKS || framed > file_len {
        return Err(corrupt("cut short"));
    }
    let mut rest = vec![0u8; usize::try_from(framed).expect("bounded") - HEADER];
    file.read_exact(&mut rest).map_err(unreadable)?;
    let (covered, digest) = rest.split_at(rest.len() - 32);
    let mut hasher = Sha256::new();
    hasher.update(header);
    hasher.update(covered);
    if hasher.finalize().as_slice() != digest {
        return Err(corrupt("checksum mismatch"));
    }
    if format != FORMAT {
        return Err(Rejected::Stale(format));
    }
    let covered = &covered[usize::try_from(looks_len).expect("bounded")..];
    let (core, table) = covered.split_at(usize::try_from(core_len).expect("bounded"));
    let mut sections = Vec::with_capacity(SECTIONS);
    let mut offset = framed;
    for entry in table.chunks_exact(TABLE_ENTRY) {
        let len = u64::from_le_bytes(entry[..8].try_into().expect("8"));
        let digest: [u8; 32] = entry[8..].try_into().expect("32");
        sections.push((offset, len, digest));
        offset = offset
            .checked_add(len)
            .ok_or_else(|| corrupt("cut short"))?;
    }
    if offset != file_len {
        return Err(corrupt("cut short or grown"));
    }
    let mut kept: Kept = decode_value(core).map_err(|e| Rejected::Corrupt(e.to_string()))?;
    let source = KeptFile::new(file);
    if let Some(tag) = kept.records {
        let (records, len) = super::records::open_tagged(&super::records::path_beside(path), tag)
            .ok_or_else(|| corrupt(NO_RECORDS))?;
        let (_, section) = records_in(records, tag, len, Arc::clone(&source.recovery));
        let _ = source.records.set(section);
    }
    let mut at = sections.into_iter().map(|(offset, len, digest)| {
        Arc::new(KeptSection {
            file: source.clone(),
            offset,
            len,
            digest,
        })
    });
    kept.state.attach_kept(
        at.next().expect("orders"),
        at.next().expect("talk"),
        at.next().expect("master times"),
    );
    Ok(kept)
}

/// The records file `file` (of `tag`, `len` bytes long) as the section a board reads its
/// records from, failing over through `recovery`.
fn records_in(
    file: File,
    tag: u64,
    len: u64,
    recovery: Arc<Recovery>,
) -> (Arc<KeptFile>, Arc<KeptSection>) {
    let kept = Arc::new(KeptFile {
        file: Mutex::new(file),
        recovery,
        records: OnceLock::new(),
        tag: Some(tag),
    });
    let section = Arc::new(KeptSection {
        file: Arc::clone(&kept),
        offset: 0,
        len,
        digest: [0; 32],
    });
    (kept, section)
}

/// The records file a save just appended to (`file`, of `tag`, `len` bytes long): what the
/// board reads its records from once it has moved to it.
pub(crate) fn records_written(file: File, tag: u64, len: u64) -> (Arc<KeptFile>, Arc<KeptSection>) {
    records_in(file, tag, len, Arc::default())
}

/// Decodes one value kept whole (an order's record), through the same memos, refusing bytes
/// after it.
pub(crate) fn decode_kept<T: DeserializeOwned>(bytes: &[u8]) -> Result<T, String> {
    let (value, rest) = super::keys::with_key_memo(|| {
        super::names::with_name_memo(|| postcard::take_from_bytes::<T>(bytes))
    })
    .map_err(|e| e.to_string())?;
    if rest.is_empty() {
        Ok(value)
    } else {
        Err(format!("{} bytes after the value", rest.len()))
    }
}

/// Decodes postcard bytes of the state; it names a few keys and names very many times, so
/// each is checked once.
fn decode_value<T: DeserializeOwned>(bytes: &[u8]) -> Result<T, postcard::Error> {
    super::keys::with_key_memo(|| super::names::with_name_memo(|| postcard::from_bytes(bytes)))
}

/// What is written of a kept state, borrowed from where it lives (a session's state is never
/// copied to be saved). The same fields as [`Kept`], encoded the same.
#[derive(Debug, Serialize)]
pub struct KeptRef<'a> {
    pub genesis: &'a [u8; 32],
    pub generation: u64,
    pub reader: &'a ReaderState,
    pub state: &'a ChannelState,
    pub problems: &'a [IntegrityProblem],
    pub dropped_problems: u64,
    pub pinned: &'a Option<Pinned>,
    pub records: Option<u64>,
}

impl Kept {
    pub fn as_ref(&self) -> KeptRef<'_> {
        KeptRef {
            genesis: &self.genesis,
            generation: self.generation,
            reader: &self.reader,
            state: &self.state,
            problems: &self.problems,
            dropped_problems: self.dropped_problems,
            pinned: &self.pinned,
            records: self.records,
        }
    }
}

/// Appends the records of `kept`'s board to the records file beside the verified state at
/// `verified` (made if there is none) and names that file in `kept`: what [`encode`] needs
/// first when the board holds orders whose records are not in that file.
pub fn keep_records(kept: &mut Kept, verified: &Path) -> std::io::Result<()> {
    if kept.state.orders().is_empty() {
        kept.records = None;
        return Ok(());
    }
    let mut out = super::records::Appender::open(&super::records::path_beside(verified))?;
    kept.state.append_order_records(&mut out)?;
    out.finish()?;
    kept.records = Some(out.tag());
    Ok(())
}

/// The bytes of a kept state (see [`write`]).
pub fn encode(kept: &Kept) -> Vec<u8> {
    let mut bytes = Vec::new();
    write(&kept.as_ref(), &mut bytes).expect("the verified state always encodes");
    bytes
}

/// A sink that only counts and hashes what is written: a section's length and digest, which
/// the table before it needs, without holding its bytes.
#[derive(Default)]
struct Measure {
    len: u64,
    hasher: Sha256,
}

impl std::io::Write for Measure {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        self.len += bytes.len() as u64;
        self.hasher.update(bytes);
        Ok(bytes.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// How one section is written: copied from its kept file (not read since it was loaded), or
/// encoded from the value in memory.
enum Source<'a> {
    Copy(&'a KeptSection),
    Encode(&'a dyn erased::Encode),
}

/// Object-safe postcard encoding, so the sections (of different types) are written alike.
mod erased {
    pub trait Encode {
        fn encode_to(&self, out: &mut dyn std::io::Write) -> postcard::Result<()>;
    }

    impl<T: super::Section> Encode for T {
        fn encode_to(&self, out: &mut dyn std::io::Write) -> postcard::Result<()> {
            postcard::to_io(self, out).map(drop)
        }
    }
}

impl Source<'_> {
    fn of<T: Section>(lazy: &Lazy<T>) -> Source<'_> {
        match (&lazy.kept, lazy.value.get()) {
            (Some(section), None) => Source::Copy(section),
            _ => Source::Encode(lazy.get()),
        }
    }

    /// Length and digest, without holding the bytes.
    fn measure(&self) -> std::io::Result<(u64, [u8; 32])> {
        match self {
            Source::Copy(section) => Ok((section.len, section.digest)),
            Source::Encode(value) => {
                let mut measure = Measure::default();
                value
                    .encode_to(&mut measure)
                    .map_err(std::io::Error::other)?;
                Ok((measure.len, measure.hasher.finalize().into()))
            }
        }
    }

    fn write_to(&self, out: &mut dyn std::io::Write) -> std::io::Result<()> {
        match self {
            Source::Copy(section) => section.copy_to(out),
            Source::Encode(value) => value.encode_to(out).map_err(std::io::Error::other),
        }
    }
}

/// Writes a kept state to `out`, streamed: sections never read since they were loaded are
/// copied from their file (checked against their digest on the way; a section that changed
/// there fails the write, so the caller reads it, which rebuilds it, and writes again), the
/// others encoded twice (once to measure, once to write) rather than held in memory. The
/// board's records must be in the records file `kept.records` names already (see
/// [`OrderBoard::append_records`]).
pub fn write(kept: &KeptRef<'_>, out: &mut dyn std::io::Write) -> std::io::Result<()> {
    let core = postcard::to_stdvec(kept).map_err(std::io::Error::other)?;
    let looks = kept.reader.look_paths().join("\n");
    let sections = [
        Source::of(kept.state.orders_lazy()),
        Source::of(kept.state.talk_lazy()),
        Source::of(kept.state.identity().master_times_lazy()),
    ];
    let mut head = MAGIC.to_vec();
    head.extend_from_slice(&FORMAT.to_le_bytes());
    head.extend_from_slice(&(core.len() as u64).to_le_bytes());
    head.extend_from_slice(&(looks.len() as u64).to_le_bytes());
    head.extend_from_slice(looks.as_bytes());
    head.extend_from_slice(&core);
    for section in &sections {
        let (len, digest) = section.measure()?;
        head.extend_from_slice(&len.to_le_bytes());
        head.extend_from_slice(&digest);
    }
    let digest = Sha256::digest(&head);
    head.extend_from_slice(&digest);
    out.write_all(&head)?;
    for section in &sections {
        section.write_to(out)?;
    }
    Ok(())
}

/// Folds the channel from nothing: what a section that does not read is taken from.
pub type Rebuild = Box<dyn Fn() -> ChannelState + Send>;

/// A file a state was loaded from (the verified state, or its records file), kept open for
/// what is read from it later.
pub struct KeptFile {
    file: Mutex<File>,
    /// How what does not read is taken from the channel; shared by a verified state and its
    /// records file.
    recovery: Arc<Recovery>,
    /// Where the orders' records are (ADR 0010): a section of the records file, never of this
    /// one (which it would hold and never let go).
    records: OnceLock<Arc<KeptSection>>,
    /// For a records file: its tag.
    tag: Option<u64>,
}

/// What a section or record that does not read is taken from, and the failures to report.
#[derive(Default)]
pub(crate) struct Recovery {
    rebuild: Mutex<Option<Rebuild>>,
    /// The state folded from nothing, once a section did not read.
    rebuilt: Mutex<Option<ChannelState>>,
    /// Sections that did not read, as problems to report.
    failures: Mutex<Vec<String>>,
}

impl std::fmt::Debug for KeptFile {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("KeptFile").finish_non_exhaustive()
    }
}

impl KeptFile {
    /// A kept state read through `file`.
    fn new(file: File) -> Arc<Self> {
        Arc::new(Self {
            file: Mutex::new(file),
            recovery: Arc::default(),
            records: OnceLock::new(),
            tag: None,
        })
    }

    /// The orders' records section of this state, if it has one.
    fn records_section(&self) -> Option<Arc<KeptSection>> {
        self.records.get().cloned()
    }

    /// For a records file: its tag.
    pub(crate) fn tag(&self) -> Option<u64> {
        self.tag
    }

    /// How a section that does not read is rebuilt (the session sets it: it knows the channel).
    pub fn set_rebuild(&self, rebuild: Rebuild) {
        *lock(&self.recovery.rebuild) = Some(rebuild);
    }

    /// Takes the problems of sections that did not read since the last call.
    pub fn take_failures(&self) -> Vec<String> {
        std::mem::take(&mut *lock(&self.recovery.failures))
    }
}

/// A section up to this long is read whole and decoded from memory; a longer one is streamed.
const WHOLE_SECTION: u64 = 1 << 20;

/// The scratch a section is decoded through: more than the longest string a fold keeps.
const SCRATCH: usize = 1 << 20;

/// A reader that hashes and counts what passes through it.
struct Hashing<R> {
    inner: R,
    hasher: Sha256,
    read: u64,
}

impl<R> Hashing<R> {
    fn new(inner: R) -> Self {
        Self {
            inner,
            hasher: Sha256::new(),
            read: 0,
        }
    }

    fn digest(&self) -> [u8; 32] {
        self.hasher.clone().finalize().into()
    }
}

impl<R: Read> Read for Hashing<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.hasher.update(&buf[..n]);
        self.read += n as u64;
        Ok(n)
    }
}

/// A poisoned lock only means another thread panicked while holding it; what it guards (a
/// file handle, a list) is still whole.
fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// Where one lazy section is in its file.
#[derive(Debug)]
pub struct KeptSection {
    file: Arc<KeptFile>,
    offset: u64,
    len: u64,
    digest: [u8; 32],
}

impl KeptSection {
    /// The file this section is in.
    pub fn file(&self) -> &Arc<KeptFile> {
        &self.file
    }

    /// The orders' records section of the state this section is in, if it has one.
    fn records(&self) -> Option<Arc<KeptSection>> {
        self.file.records_section()
    }

    /// Streams the section's bytes to `out`, checking them against the table's digest.
    fn copy_to(&self, out: &mut dyn std::io::Write) -> std::io::Result<()> {
        let mut file = lock(&self.file.file);
        file.seek(SeekFrom::Start(self.offset))?;
        let mut reader = Hashing::new((&mut *file).take(self.len));
        let copied = std::io::copy(&mut reader, out)?;
        if copied != self.len || reader.digest() != self.digest {
            return Err(std::io::Error::other(
                "a kept section changed in its file; read it again",
            ));
        }
        Ok(())
    }

    /// Decodes the section from its file as a stream (its bytes are never held whole), then
    /// checks that exactly its bytes were read and that they match the table's digest.
    fn decode<T: Section>(&self) -> Result<T, String> {
        let mut file = lock(&self.file.file);
        file.seek(SeekFrom::Start(self.offset))
            .map_err(|e| e.to_string())?;
        if self.len <= WHOLE_SECTION {
            // Small enough to hold: one read and a decode from memory, which is several times
            // faster than a stream that is read and hashed a few bytes at a time.
            let mut bytes = vec![0u8; usize::try_from(self.len).expect("bounded")];
            file.read_exact(&mut bytes).map_err(|e| e.to_string())?;
            if <[u8; 32]>::from(Sha256::digest(&bytes)) != self.digest {
                return Err("checksum mismatch".into());
            }
            return decode_kept(&bytes);
        }
        let reader = Hashing::new(std::io::BufReader::with_capacity(
            64 * 1024,
            (&mut *file).take(self.len),
        ));
        // Room for the longest single string or byte string (owned values are decoded
        // through it, never kept in it).
        // No string in a section is longer than the section.
        let mut scratch = vec![0u8; SCRATCH.min(usize::try_from(self.len).unwrap_or(SCRATCH))];
        let (value, (mut reader, _)) = super::keys::with_key_memo(|| {
            super::names::with_name_memo(|| postcard::from_io::<T, _>((reader, &mut scratch)))
        })
        .map_err(|e| e.to_string())?;
        let mut rest = Vec::new();
        reader.read_to_end(&mut rest).map_err(|e| e.to_string())?;
        if !rest.is_empty() {
            return Err(format!("{} bytes after the value", rest.len()));
        }
        if reader.read != self.len || reader.digest() != self.digest {
            return Err("checksum mismatch".into());
        }
        Ok(value)
    }

    fn load<T: Section>(&self) -> T {
        match self.decode() {
            Ok(value) => value,
            Err(why) => self.rebuilt(why),
        }
    }

    /// The `len` bytes at `offset` in this section, if they hash to `digest`.
    pub(crate) fn read_at(
        &self,
        offset: u64,
        len: u64,
        digest: &[u8; 32],
    ) -> Result<Vec<u8>, String> {
        let bytes = self.read_span(offset, len)?;
        if <[u8; 32]>::from(Sha256::digest(&bytes)) != *digest {
            return Err("checksum mismatch".into());
        }
        Ok(bytes)
    }

    /// The `len` bytes at `offset` in this section (the caller checks them).
    pub(crate) fn read_span(&self, offset: u64, len: u64) -> Result<Vec<u8>, String> {
        if offset.checked_add(len).is_none_or(|end| end > self.len) || len > MAX_CORE {
            return Err("outside its section".into());
        }
        let mut file = lock(&self.file.file);
        file.seek(SeekFrom::Start(self.offset + offset))
            .map_err(|e| e.to_string())?;
        let mut bytes = vec![0u8; usize::try_from(len).map_err(|e| e.to_string())?];
        file.read_exact(&mut bytes).map_err(|e| e.to_string())?;
        Ok(bytes)
    }

    /// `take` of the channel folded from nothing, after `failure` (kept for the session to
    /// report; it then folds again). `None` when no rebuild was set.
    pub(crate) fn rebuilt_with<R>(
        &self,
        failure: String,
        take: impl FnOnce(&ChannelState) -> R,
    ) -> Option<R> {
        let recovery = &self.file.recovery;
        lock(&recovery.failures).push(failure);
        let mut rebuilt = lock(&recovery.rebuilt);
        if rebuilt.is_none()
            && let Some(rebuild) = lock(&recovery.rebuild).as_ref()
        {
            *rebuilt = Some(rebuild());
        }
        rebuilt.as_ref().map(take)
    }

    /// The section taken from the channel folded from nothing, after `why` kept it from
    /// being read; the failure is kept for the session to report (it then folds again).
    fn rebuilt<T: Section>(&self, why: String) -> T {
        let failure = format!(
            "the verified state's {} section does not read ({why}); rebuilt from the channel",
            T::NAME
        );
        self.rebuilt_with(failure, |state| T::of(state).clone())
            .unwrap_or_default()
    }
}

/// A fold kept in a lazy section of its own.
pub trait Section: Default + Clone + Serialize + DeserializeOwned {
    /// Its name in problems.
    const NAME: &'static str;
    /// This fold of a whole state.
    fn of(state: &ChannelState) -> &Self;
    /// Once read from `section`: what else of its file it reads from later.
    fn attach(&mut self, _section: &Arc<KeptSection>) {}
}

impl Section for OrderBoard {
    const NAME: &'static str = "order board";
    fn of(state: &ChannelState) -> &Self {
        state.orders()
    }
    fn attach(&mut self, section: &Arc<KeptSection>) {
        self.attach_records(section.records());
    }
}

impl Section for MasterTimes {
    const NAME: &'static str = "master times";
    fn of(state: &ChannelState) -> &Self {
        state.identity().master_times()
    }
}

impl Section for Talk {
    const NAME: &'static str = "talk";
    fn of(state: &ChannelState) -> &Self {
        state.talk()
    }
}

/// A fold read from its kept section the first time it is asked for (see the module docs).
pub struct Lazy<T> {
    value: OnceLock<T>,
    /// Where it is kept, while what is there is still its value (cleared on a change).
    kept: Option<Arc<KeptSection>>,
}

impl<T: Section> Lazy<T> {
    /// A value in memory, kept nowhere yet.
    pub fn new(value: T) -> Self {
        Self {
            value: OnceLock::from(value),
            kept: None,
        }
    }

    /// A value still in its section.
    pub fn kept(section: Arc<KeptSection>) -> Self {
        Self {
            value: OnceLock::new(),
            kept: Some(section),
        }
    }

    pub fn get(&self) -> &T {
        self.value.get_or_init(|| match &self.kept {
            Some(section) => {
                let mut value: T = section.load();
                value.attach(section);
                value
            }
            None => T::default(),
        })
    }

    /// The value, to change it: what its section holds is no longer it.
    pub fn get_mut(&mut self) -> &mut T {
        self.get();
        self.kept = None;
        self.value.get_mut().expect("initialized just above")
    }

    /// The section it is still read from, until it is changed.
    pub fn section(&self) -> Option<&Arc<KeptSection>> {
        self.kept.as_ref()
    }

    /// Whether it was read from its section (or made here).
    pub fn is_loaded(&self) -> bool {
        self.value.get().is_some()
    }
}

impl<T: Section> Default for Lazy<T> {
    fn default() -> Self {
        Self::new(T::default())
    }
}

impl<T: Section> Clone for Lazy<T> {
    fn clone(&self) -> Self {
        Self {
            value: self.value.clone(),
            kept: self.kept.clone(),
        }
    }
}

impl<T: Section + PartialEq> PartialEq for Lazy<T> {
    fn eq(&self, other: &Self) -> bool {
        self.get() == other.get()
    }
}

impl<T: Section + Eq> Eq for Lazy<T> {}

impl<T: Section + std::fmt::Debug> std::fmt::Debug for Lazy<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.value.get() {
            Some(value) => value.fmt(f),
            None => f.write_str("<kept, not read yet>"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A section type of its own, to put more than [`WHOLE_SECTION`] bytes in one.
    #[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
    struct Big(Vec<String>);

    impl Section for Big {
        const NAME: &'static str = "big";
        fn of(_state: &ChannelState) -> &Self {
            unreachable!("never rebuilt in these tests")
        }
    }

    /// `value` encoded as a section at offset 5 of a file (its bytes changed when `corrupt`).
    fn section_of(value: &Big, corrupt: bool) -> (tempfile::NamedTempFile, KeptSection) {
        let bytes = postcard::to_stdvec(value).unwrap();
        let digest: [u8; 32] = Sha256::digest(&bytes).into();
        let mut stored = bytes.clone();
        if corrupt {
            let middle = stored.len() / 2;
            stored[middle] ^= 0x01;
        }
        let mut file = tempfile::NamedTempFile::new().unwrap();
        std::io::Write::write_all(&mut file, b"head:").unwrap();
        std::io::Write::write_all(&mut file, &stored).unwrap();
        let kept = KeptFile::new(File::open(file.path()).unwrap());
        let section = KeptSection {
            file: kept,
            offset: 5,
            len: bytes.len() as u64,
            digest,
        };
        (file, section)
    }

    fn big() -> Big {
        Big((0..40_000).map(|i| format!("line {i:>30}")).collect())
    }

    #[test]
    fn a_section_larger_than_is_held_whole_is_streamed_and_checked() {
        let value = big();
        let (_file, section) = section_of(&value, false);
        assert!(section.len > WHOLE_SECTION, "{} bytes", section.len);
        assert_eq!(section.decode::<Big>().unwrap(), value);
        let (_file, corrupt) = section_of(&value, true);
        let err = corrupt.decode::<Big>().unwrap_err();
        assert!(err.contains("checksum"), "{err}");
    }

    #[test]
    fn a_section_held_whole_is_checked_and_refuses_bytes_after_its_value() {
        let value = Big(vec!["small".into(); 3]);
        let (_file, section) = section_of(&value, false);
        assert!(section.len <= WHOLE_SECTION);
        assert_eq!(section.decode::<Big>().unwrap(), value);
        let (_file, corrupt) = section_of(&value, true);
        assert!(corrupt.decode::<Big>().unwrap_err().contains("checksum"));
        // One byte more in the section than the value takes.
        let (_file, mut longer) = section_of(&value, false);
        let mut bytes = postcard::to_stdvec(&value).unwrap();
        bytes.push(0);
        longer.len = bytes.len() as u64;
        longer.digest = Sha256::digest(&bytes).into();
        let mut file = tempfile::NamedTempFile::new().unwrap();
        std::io::Write::write_all(&mut file, b"head:").unwrap();
        std::io::Write::write_all(&mut file, &bytes).unwrap();
        *lock(&longer.file.file) = File::open(file.path()).unwrap();
        assert!(
            longer
                .decode::<Big>()
                .unwrap_err()
                .contains("after the value")
        );
    }

    #[test]
    fn a_record_is_read_only_whole_inside_its_section_and_matching_its_digest() {
        let value = Big(vec!["a record".into()]);
        let (_file, section) = section_of(&value, false);
        let bytes = postcard::to_stdvec(&value).unwrap();
        let digest: [u8; 32] = Sha256::digest(&bytes).into();
        assert_eq!(section.read_at(0, section.len, &digest).unwrap(), bytes);
        assert!(
            section.read_at(1, section.len, &digest).is_err(),
            "past the section's end"
        );
        assert!(section.read_at(u64::MAX, 2, &digest).is_err());
        assert!(
            section
                .read_at(0, section.len, &[0; 32])
                .unwrap_err()
                .contains("checksum")
        );
    }
}

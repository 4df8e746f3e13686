//! One signed entry of a per-author log, and its exact line format.
//!
//! A log line is `{"entry":<raw entry JSON>,"sig":"<128 hex>"}`. The signature covers a domain
//! tag followed by the raw entry bytes exactly as stored, and the entry's hash (which the next
//! entry names as `prev`) is the SHA-256 of those same bytes, so nothing is ever re-encoded
//! before checking. The entry names its project, so an entry copied into another project's
//! channel never verifies there. `docs/channel-format.md` is the specification; the test
//! vectors there are pinned by a test.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::Value;
use sha2::{Digest, Sha256};

use crate::channel::log::keys::{KeyError, PublicKey, SecretKey, Signature, Verifier};
use crate::channel::log::names::{AgentName, ProjectId};
use crate::time::Timestamp;

/// The version written in every entry (`"v"`) and in the genesis file.
pub const FORMAT_VERSION: u32 = 1;

/// Prefixed to the raw entry bytes to form the signed message, so that a signature made for
/// an entry can never be passed off as a signature of any other kind of message.
pub const ENTRY_SIGNING_DOMAIN: &[u8] = b"ferry-channel-entry-v1\n";

/// The longest entry kind, in bytes.
pub const MAX_KIND_LEN: usize = 64;

const LINE_PREFIX: &[u8] = b"{\"entry\":";
const LINE_SIG_OPEN: &[u8] = b",\"sig\":\"";
const LINE_SUFFIX: &[u8] = b"\"}";
const SIG_HEX_LEN: usize = 128;

/// SHA-256 of an entry's raw bytes; lower-case hex in text.
#[derive(Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct EntryHash([u8; 32]);

impl EntryHash {
    /// All zeroes: the hash of no entry (a chain's start when there is no entry to name).
    pub const ZERO: EntryHash = EntryHash([0; 32]);

    /// The hash of an entry's raw stored bytes.
    pub fn of(raw_entry: &[u8]) -> Self {
        Self(Sha256::digest(raw_entry).into())
    }

    pub fn as_bytes(&self) -> &[u8; 32] {
        &self.0
    }

    pub fn from_hex(text: &str) -> Result<Self, KeyError> {
        if text.len() != 64 {
            return Err(KeyError::BadLength {
                expected: 32,
                found: text.len() / 2,
            });
        }
        if text.bytes().any(|b| b.is_ascii_uppercase()) {
            return Err(KeyError::BadHex);
        }
        let mut out = [0u8; 32];
        hex::decode_to_slice(text, &mut out).map_err(|_| KeyError::BadHex)?;
        Ok(Self(out))
    }

    pub fn to_hex(&self) -> String {
        hex::encode(self.0)
    }
}

impl fmt::Display for EntryHash {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.to_hex())
    }
}

impl fmt::Debug for EntryHash {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "EntryHash({})", self.to_hex())
    }
}

impl FromStr for EntryHash {
    type Err = KeyError;
    fn from_str(s: &str) -> Result<Self, KeyError> {
        Self::from_hex(s)
    }
}

/// Hex in the channel's JSON; the raw bytes in binary formats (the verified state).
impl Serialize for EntryHash {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        if s.is_human_readable() {
            s.serialize_str(&self.to_hex())
        } else {
            s.serialize_bytes(&self.0)
        }
    }
}

impl<'de> Deserialize<'de> for EntryHash {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        if d.is_human_readable() {
            let raw = <std::borrow::Cow<'de, str>>::deserialize(d)?;
            Self::from_hex(&raw).map_err(serde::de::Error::custom)
        } else {
            // Owned, not borrowed: the verified state is decoded from a stream.
            d.deserialize_byte_buf(crate::channel::log::keys::FixedBytes::<32>)
                .map(Self)
        }
    }
}

/// The content of one log entry, before signing or after verification.
#[derive(Debug, Clone, PartialEq)]
pub struct Entry {
    pub project: ProjectId,
    pub author: AgentName,
    pub key: PublicKey,
    /// Per-log sequence number, from 1.
    pub seq: u64,
    /// Hash of the previous entry of the same log; `None` only for seq 1.
    pub prev: Option<EntryHash>,
    /// What the entry records, such as `roster.join` or `grant`.
    pub kind: String,
    pub time: Timestamp,
    pub body: Value,
}

/// The wire form: field order here is the byte order on disk.
#[derive(Serialize)]
struct WireOut<'a> {
    v: u32,
    project: &'a ProjectId,
    author: &'a AgentName,
    key: &'a PublicKey,
    seq: u64,
    prev: &'a Option<EntryHash>,
    kind: &'a str,
    time: Timestamp,
    body: &'a Value,
}

/// The wire form as read: strings are borrowed from the line, so a key that equals the log's
/// known key is never decoded (point decompression is a tenth of the cost of a line).
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct WireIn<'a> {
    v: u32,
    #[serde(borrow)]
    project: std::borrow::Cow<'a, str>,
    #[serde(borrow)]
    author: std::borrow::Cow<'a, str>,
    #[serde(borrow)]
    key: std::borrow::Cow<'a, str>,
    seq: u64,
    #[serde(borrow)]
    prev: Option<std::borrow::Cow<'a, str>>,
    #[serde(borrow)]
    kind: std::borrow::Cow<'a, str>,
    time: Timestamp,
    body: Value,
}

/// Why an entry could not be signed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum EntryError {
    #[error("the signing key is not the key the entry names")]
    KeyMismatch,
    #[error("entry kind {0:?} is not 1 to 64 of a-z, 0-9, '.', '-', '_'")]
    BadKind(String),
    #[error("seq must start at 1")]
    ZeroSeq,
    #[error("prev must be absent exactly when seq is 1")]
    PrevMismatch,
}

/// Why a line is not a valid, correctly signed entry (checked on the line alone).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LineError {
    #[error("incomplete line")]
    Torn,
    #[error("malformed line: {0}")]
    Malformed(String),
    #[error("unsupported format version {0}")]
    UnsupportedVersion(u32),
    #[error("bad entry: {0}")]
    BadEntry(EntryError),
    #[error("signature does not verify with the entry's key")]
    BadSignature,
}

/// Checks the kind rules: 1 to 64 bytes of `a-z`, `0-9`, `.`, `-`, `_`.
pub fn check_kind(kind: &str) -> Result<(), EntryError> {
    let ok = !kind.is_empty()
        && kind.len() <= MAX_KIND_LEN
        && kind.bytes().all(|b| {
            b.is_ascii_lowercase() || b.is_ascii_digit() || matches!(b, b'.' | b'-' | b'_')
        });
    if ok {
        Ok(())
    } else {
        Err(EntryError::BadKind(kind.to_owned()))
    }
}

fn check_shape(entry: &Entry) -> Result<(), EntryError> {
    check_kind(&entry.kind)?;
    if entry.seq == 0 {
        return Err(EntryError::ZeroSeq);
    }
    if (entry.seq == 1) != entry.prev.is_none() {
        return Err(EntryError::PrevMismatch);
    }
    Ok(())
}

fn signed_message(raw_entry: &[u8]) -> Vec<u8> {
    let mut message = Vec::with_capacity(ENTRY_SIGNING_DOMAIN.len() + raw_entry.len());
    message.extend_from_slice(ENTRY_SIGNING_DOMAIN);
    message.extend_from_slice(raw_entry);
    message
}

impl Entry {
    /// The raw entry bytes as they are stored, hashed and signed (compact JSON, fields in
    /// wire order, object keys of `body` sorted).
    pub fn to_bytes(&self) -> Vec<u8> {
        let wire = WireOut {
            v: FORMAT_VERSION,
            project: &self.project,
            author: &self.author,
            key: &self.key,
            seq: self.seq,
            prev: &self.prev,
            kind: &self.kind,
            time: self.time,
            body: &self.body,
        };
        serde_json::to_vec(&wire).expect("an entry always serializes")
    }

    /// Signs the entry with `key`, which must be the key it names.
    pub fn sign(self, key: &SecretKey) -> Result<SignedLine, EntryError> {
        if key.public_key() != self.key {
            return Err(EntryError::KeyMismatch);
        }
        check_shape(&self)?;
        let raw = self.to_bytes();
        let signature = key.sign(&signed_message(&raw));
        let mut line = Vec::with_capacity(raw.len() + SIG_HEX_LEN + 20);
        line.extend_from_slice(LINE_PREFIX);
        line.extend_from_slice(&raw);
        line.extend_from_slice(LINE_SIG_OPEN);
        line.extend_from_slice(signature.to_hex().as_bytes());
        line.extend_from_slice(LINE_SUFFIX);
        let line = String::from_utf8(line).expect("serde_json writes UTF-8");
        Ok(SignedLine {
            line,
            entry: VerifiedEntry {
                hash: EntryHash::of(&raw),
                entry: self,
                signature,
            },
        })
    }
}

/// A freshly signed entry: the line to store (without its newline) and the entry it holds.
#[derive(Debug, Clone)]
pub struct SignedLine {
    pub line: String,
    pub entry: VerifiedEntry,
}

/// An entry whose line parsed and whose signature verified with the key it names.
///
/// Only [`decode_line`] and [`Entry::sign`] make one, and the reader from a line a master's
/// checkpoint vouches for (ADR 0023: its chain up to the checkpoint's tip). The reader adds the checks that need
/// context (path, project, chain) before handing it out.
#[derive(Debug, Clone, PartialEq)]
pub struct VerifiedEntry {
    entry: Entry,
    hash: EntryHash,
    signature: Signature,
}

impl VerifiedEntry {
    pub fn entry(&self) -> &Entry {
        &self.entry
    }
    /// SHA-256 of the raw entry bytes; the next entry's `prev`.
    pub fn hash(&self) -> &EntryHash {
        &self.hash
    }
    pub fn signature(&self) -> &Signature {
        &self.signature
    }
    pub fn project(&self) -> &ProjectId {
        &self.entry.project
    }
    pub fn author(&self) -> &AgentName {
        &self.entry.author
    }
    pub fn key(&self) -> &PublicKey {
        &self.entry.key
    }
    pub fn seq(&self) -> u64 {
        self.entry.seq
    }
    pub fn prev(&self) -> Option<&EntryHash> {
        self.entry.prev.as_ref()
    }
    pub fn kind(&self) -> &str {
        &self.entry.kind
    }
    pub fn time(&self) -> Timestamp {
        self.entry.time
    }
    pub fn body(&self) -> &Value {
        &self.entry.body
    }
}

/// Splits a line into its raw entry bytes and signature hex, if it has the exact frame.
fn split_frame(line: &[u8]) -> Option<(&[u8], &[u8])> {
    let rest = line.strip_prefix(LINE_PREFIX)?;
    let rest = rest.strip_suffix(LINE_SUFFIX)?;
    if rest.len() < SIG_HEX_LEN + LINE_SIG_OPEN.len() {
        return None;
    }
    let (head, sig) = rest.split_at(rest.len() - SIG_HEX_LEN);
    let raw = head.strip_suffix(LINE_SIG_OPEN)?;
    Some((raw, sig))
}

/// A line whose frame and entry parsed, whose signature is not checked yet.
///
/// Parsing and checking are apart so that a reader can parse lines in order and check their
/// signatures on every core: [`ParsedLine::verify`] is the costly half.
#[derive(Debug, Clone)]
pub struct ParsedLine {
    entry: Entry,
    hash: EntryHash,
    signature: Signature,
    /// The signed message (domain tag + raw entry bytes).
    message: Vec<u8>,
    /// The key decompressed, when the caller had it (the log's key).
    verifier: Option<Verifier>,
}

impl ParsedLine {
    /// The entry as parsed; not yet proven to be signed by its key.
    pub fn entry(&self) -> &Entry {
        &self.entry
    }

    /// Checks the signature with the key the entry names (`verify_strict`).
    pub fn verify(self) -> Result<VerifiedEntry, LineError> {
        let verifier = self.verifier.unwrap_or_else(|| self.entry.key.verifier());
        verifier
            .verify(&self.message, &self.signature)
            .map_err(|_| LineError::BadSignature)?;
        Ok(VerifiedEntry {
            entry: self.entry,
            hash: self.hash,
            signature: self.signature,
        })
    }

    /// The entry taken without its signature checked, for the reader alone: a master's
    /// checkpoint vouches for it, and the reader holds it to the checkpoint's hash chain
    /// (ADR 0023) before anything it folded from it may stand.
    pub(crate) fn vouched(self) -> VerifiedEntry {
        VerifiedEntry {
            entry: self.entry,
            hash: self.hash,
            signature: self.signature,
        }
    }
}

/// Parses one line (without its newline) and verifies its signature with the key it names.
/// A trailing carriage return (a checkout that converted line endings) is ignored: it lies
/// outside the signed bytes.
pub fn decode_line(line: &[u8]) -> Result<VerifiedEntry, LineError> {
    parse_line(line, None)?.verify()
}

/// The raw entry bytes of a line with the exact frame (the bytes its hash is taken over), or
/// `None`. Nothing is parsed or checked: for re-reading a line this machine verified before.
pub fn raw_entry(line: &[u8]) -> Option<&[u8]> {
    let line = line.strip_suffix(b"\r").unwrap_or(line);
    split_frame(line).map(|(raw, _)| raw)
}

/// Parses one line without checking its signature. `known_key` is the key of the log the line
/// is in, decompressed, with its hex: when the entry names it, the key is taken as is instead
/// of decoded again, and the signature is checked with it.
pub fn parse_line(
    line: &[u8],
    known_key: Option<(&PublicKey, &Verifier, &str)>,
) -> Result<ParsedLine, LineError> {
    let line = line.strip_suffix(b"\r").unwrap_or(line);
    if line.is_empty() {
        return Err(LineError::Malformed("empty line".to_owned()));
    }
    let Some((raw, sig_hex)) = split_frame(line) else {
        return Err(
            match serde_json::from_slice::<serde::de::IgnoredAny>(line) {
                Err(e) if e.is_eof() => LineError::Torn,
                _ => LineError::Malformed("not a {\"entry\":...,\"sig\":...} line".to_owned()),
            },
        );
    };
    let sig_hex = std::str::from_utf8(sig_hex)
        .map_err(|_| LineError::Malformed("signature is not hex".to_owned()))?;
    let signature = Signature::from_hex(sig_hex)
        .map_err(|_| LineError::Malformed("signature is not lower-case hex".to_owned()))?;
    let wire: WireIn<'_> = match serde_json::from_slice(raw) {
        Ok(wire) => wire,
        Err(e) => {
            // A newer version may add fields: say so rather than "unknown field".
            if let Ok(Value::Object(map)) = serde_json::from_slice::<Value>(raw)
                && let Some(v) = map.get("v").and_then(Value::as_u64)
                && v != u64::from(FORMAT_VERSION)
            {
                return Err(LineError::UnsupportedVersion(
                    u32::try_from(v).unwrap_or(u32::MAX),
                ));
            }
            return Err(LineError::Malformed(e.to_string()));
        }
    };
    if wire.v != FORMAT_VERSION {
        return Err(LineError::UnsupportedVersion(wire.v));
    }
    let malformed =
        |what: &str, e: &dyn std::fmt::Display| LineError::Malformed(format!("{what}: {e}"));
    let (key, verifier) = match known_key {
        Some((key, verifier, hex)) if wire.key == hex => (*key, Some(*verifier)),
        _ => (
            PublicKey::from_hex(&wire.key).map_err(|e| malformed("key", &e))?,
            None,
        ),
    };
    let prev = match &wire.prev {
        None => None,
        Some(text) => Some(EntryHash::from_hex(text).map_err(|e| malformed("prev", &e))?),
    };
    let entry = Entry {
        project: ProjectId::parse(&wire.project).map_err(|e| malformed("project", &e))?,
        author: AgentName::parse_any(&wire.author).map_err(|e| malformed("author", &e))?,
        key,
        seq: wire.seq,
        prev,
        kind: wire.kind.into_owned(),
        time: wire.time,
        body: wire.body,
    };
    check_shape(&entry).map_err(LineError::BadEntry)?;
    Ok(ParsedLine {
        hash: EntryHash::of(raw),
        message: signed_message(raw),
        entry,
        signature,
        verifier,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn sample(key: &SecretKey) -> Entry {
        Entry {
            project: ProjectId::parse("demo").unwrap(),
            author: AgentName::parse("alice").unwrap(),
            key: key.public_key(),
            seq: 1,
            prev: None,
            kind: "talk.post".to_owned(),
            time: Timestamp(1_000),
            body: json!({"text": "hi"}),
        }
    }

    #[test]
    fn a_signed_line_decodes_to_the_same_entry_and_hash() {
        let key = SecretKey::from_bytes(&[1; 32]);
        let signed = sample(&key).sign(&key).unwrap();
        let decoded = decode_line(signed.line.as_bytes()).unwrap();
        assert_eq!(decoded, signed.entry);
    }

    #[test]
    fn one_changed_byte_breaks_the_signature() {
        let key = SecretKey::from_bytes(&[1; 32]);
        let line = sample(&key).sign(&key).unwrap().line.replace("hi", "ho");
        assert_eq!(decode_line(line.as_bytes()), Err(LineError::BadSignature));
    }

    #[test]
    fn a_cut_line_is_torn_and_garbage_is_malformed() {
        let key = SecretKey::from_bytes(&[1; 32]);
        let line = sample(&key).sign(&key).unwrap().line;
        assert_eq!(decode_line(&line.as_bytes()[..40]), Err(LineError::Torn));
        assert!(matches!(
            decode_line(b"hello"),
            Err(LineError::Malformed(_))
        ));
    }

    #[test]
    fn signing_with_another_key_than_the_named_one_is_refused() {
        let key = SecretKey::from_bytes(&[1; 32]);
        let other = SecretKey::from_bytes(&[2; 32]);
        assert_eq!(
            sample(&key).sign(&other).unwrap_err(),
            EntryError::KeyMismatch
        );
    }

    #[test]
    fn a_carriage_return_at_the_end_is_ignored_and_an_empty_line_is_malformed() {
        let key = SecretKey::from_bytes(&[1; 32]);
        let signed = sample(&key).sign(&key).unwrap();
        let crlf = format!("{}\r", signed.line);
        assert_eq!(decode_line(crlf.as_bytes()), Ok(signed.entry));
        assert!(matches!(decode_line(b""), Err(LineError::Malformed(_))));
    }

    #[test]
    fn kinds_are_short_lower_case_words() {
        assert!(check_kind("roster.join").is_ok());
        assert!(check_kind("Roster").is_err());
        assert!(check_kind("").is_err());
        assert!(check_kind(&"a".repeat(65)).is_err());
    }
}

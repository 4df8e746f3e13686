//! Ed25519 keys and signatures, in the lower-case hex the channel files use.
//!
//! Thin wrappers over `ed25519-dalek` so that the rest of the crate never sees raw bytes:
//! secret keys are zeroized on drop and never printed, public keys and signatures round-trip
//! through hex, and verification is always `verify_strict` (no malleable signatures, no
//! small-order keys).
//!
//! A [`PublicKey`] is its 32 compressed bytes, proven on construction to be a point: the folded
//! state names a key in every order event and line, and a decompressed point costs six times
//! the memory. Checking many signatures of one key goes through its [`Verifier`], which holds
//! the decompressed point (the reader makes one per log).
//!
//! Serialization is lower-case hex for human-readable formats (the channel's JSON) and the raw
//! bytes for binary ones (the machine's verified state, ADR 0004).

use std::fmt;
use std::str::FromStr;

use ed25519_dalek::{Signer, SigningKey, VerifyingKey};
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use zeroize::Zeroizing;

/// Why a key or signature could not be made, parsed or verified.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum KeyError {
    #[error("the operating system gave no random bytes")]
    NoRandomness,
    #[error("not lower-case hex")]
    BadHex,
    #[error("expected {expected} bytes, found {found}")]
    BadLength { expected: usize, found: usize },
    #[error("not a valid ed25519 public key")]
    BadPublicKey,
    #[error("signature does not verify")]
    BadSignature,
}

/// Decodes lower-case hex of exactly `N` bytes (upper case is refused: one spelling per value).
fn decode_hex<const N: usize>(text: &str) -> Result<[u8; N], KeyError> {
    if text.len() != 2 * N {
        return Err(KeyError::BadLength {
            expected: N,
            found: text.len() / 2,
        });
    }
    if text.bytes().any(|b| b.is_ascii_uppercase()) {
        return Err(KeyError::BadHex);
    }
    let mut out = [0u8; N];
    hex::decode_to_slice(text, &mut out).map_err(|_| KeyError::BadHex)?;
    Ok(out)
}

/// A signing key. Zeroized on drop; its `Debug` shows only the public half.
pub struct SecretKey(SigningKey);

impl SecretKey {
    /// A fresh key from the operating system's random source.
    pub fn generate() -> Result<Self, KeyError> {
        let mut seed = Zeroizing::new([0u8; 32]);
        getrandom::fill(seed.as_mut_slice()).map_err(|_| KeyError::NoRandomness)?;
        Ok(Self::from_bytes(&seed))
    }

    pub fn from_bytes(seed: &[u8; 32]) -> Self {
        Self(SigningKey::from_bytes(seed))
    }

    pub fn to_bytes(&self) -> Zeroizing<[u8; 32]> {
        Zeroizing::new(self.0.to_bytes())
    }

    pub fn from_hex(text: &str) -> Result<Self, KeyError> {
        let seed = Zeroizing::new(decode_hex::<32>(text.trim())?);
        Ok(Self::from_bytes(&seed))
    }

    pub fn to_hex(&self) -> Zeroizing<String> {
        Zeroizing::new(hex::encode(*self.to_bytes()))
    }

    pub fn public_key(&self) -> PublicKey {
        PublicKey(self.0.verifying_key().to_bytes())
    }

    /// The clamped scalar of this key: its X25519 secret (for sealed secrets).
    pub fn to_scalar_bytes(&self) -> Zeroizing<[u8; 32]> {
        Zeroizing::new(self.0.to_scalar_bytes())
    }

    pub fn sign(&self, message: &[u8]) -> Signature {
        Signature(self.0.sign(message))
    }
}

impl fmt::Debug for SecretKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SecretKey")
            .field("public", &self.public_key())
            .finish_non_exhaustive()
    }
}

/// A verifying key: its compressed bytes, known to decompress to a point. `Display` and
/// human-readable serde use lower-case hex.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct PublicKey([u8; 32]);

impl PublicKey {
    /// Sorts before every key: a bound for a range of keys, never a key to check with.
    pub(crate) const LOWEST: PublicKey = PublicKey([0; 32]);

    pub fn from_bytes(bytes: &[u8; 32]) -> Result<Self, KeyError> {
        VerifyingKey::from_bytes(bytes)
            .map(|_| Self(*bytes))
            .map_err(|_| KeyError::BadPublicKey)
    }

    pub fn as_bytes(&self) -> &[u8; 32] {
        &self.0
    }

    pub fn from_hex(text: &str) -> Result<Self, KeyError> {
        Self::from_bytes(&decode_hex::<32>(text)?)
    }

    pub fn to_hex(&self) -> String {
        hex::encode(self.0)
    }

    /// The decompressed key, for checking signatures (or anything else needing the point).
    pub fn verifier(&self) -> Verifier {
        Verifier(VerifyingKey::from_bytes(&self.0).ok())
    }

    /// The X25519 (Montgomery) form of this key: what secrets are sealed to.
    pub fn to_montgomery_bytes(&self) -> Result<[u8; 32], KeyError> {
        self.verifier()
            .0
            .map(|key| key.to_montgomery().to_bytes())
            .ok_or(KeyError::BadPublicKey)
    }

    /// Whether the key is of small order (or not a point at all): no one can make a signature
    /// that `verify_strict` accepts with it.
    pub fn is_weak(&self) -> bool {
        self.verifier().0.is_none_or(|key| key.is_weak())
    }

    /// `verify_strict`: rejects malleable signatures and small-order keys. Decompresses the
    /// key first; for many signatures of one key, use its [`Verifier`].
    pub fn verify(&self, message: &[u8], signature: &Signature) -> Result<(), KeyError> {
        self.verifier().verify(message, signature)
    }
}

/// A public key decompressed once, to check many signatures with it. (`None` for bytes that
/// are not a point, which only a tampered state file can hold: nothing verifies with it.)
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct Verifier(Option<VerifyingKey>);

impl Verifier {
    /// `verify_strict`: rejects malleable signatures and small-order keys.
    pub fn verify(&self, message: &[u8], signature: &Signature) -> Result<(), KeyError> {
        self.0
            .ok_or(KeyError::BadSignature)?
            .verify_strict(message, &signature.0)
            .map_err(|_| KeyError::BadSignature)
    }
}

impl fmt::Debug for Verifier {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.0 {
            Some(key) => write!(f, "Verifier({})", hex::encode(key.as_bytes())),
            None => f.write_str("Verifier(not a point)"),
        }
    }
}

impl PartialOrd for PublicKey {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for PublicKey {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.0.cmp(&other.0)
    }
}

/// An Ed25519 signature; `Display` and serde use lower-case hex.
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct Signature(ed25519_dalek::Signature);

impl Signature {
    pub fn from_bytes(bytes: &[u8; 64]) -> Self {
        Self(ed25519_dalek::Signature::from_bytes(bytes))
    }

    pub fn to_bytes(&self) -> [u8; 64] {
        self.0.to_bytes()
    }

    pub fn from_hex(text: &str) -> Result<Self, KeyError> {
        Ok(Self::from_bytes(&decode_hex::<64>(text)?))
    }

    pub fn to_hex(&self) -> String {
        hex::encode(self.to_bytes())
    }
}

/// Accepts exactly `N` bytes from a binary format.
pub(crate) struct FixedBytes<const N: usize>;

impl<'de, const N: usize> serde::de::Visitor<'de> for FixedBytes<N> {
    type Value = [u8; N];

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{N} bytes")
    }

    fn visit_bytes<E: serde::de::Error>(self, bytes: &[u8]) -> Result<[u8; N], E> {
        bytes
            .try_into()
            .map_err(|_| E::invalid_length(bytes.len(), &self))
    }
}

macro_rules! hex_text {
    ($ty:ident, $n:literal, $text:ident => $parse:expr, $bytes:ident => $from_bytes:expr) => {
        impl fmt::Display for $ty {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(&self.to_hex())
            }
        }
        impl fmt::Debug for $ty {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                write!(f, "{}({})", stringify!($ty), self.to_hex())
            }
        }
        impl FromStr for $ty {
            type Err = KeyError;
            fn from_str(s: &str) -> Result<Self, KeyError> {
                Self::from_hex(s)
            }
        }
        impl Serialize for $ty {
            fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                if s.is_human_readable() {
                    s.serialize_str(&self.to_hex())
                } else {
                    s.serialize_bytes(&self.byte_array())
                }
            }
        }
        impl<'de> Deserialize<'de> for $ty {
            fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                if d.is_human_readable() {
                    let raw = <std::borrow::Cow<'de, str>>::deserialize(d)?;
                    let $text: &str = &raw;
                    $parse.map_err(serde::de::Error::custom)
                } else {
                    // Owned, not borrowed: the verified state is decoded from a stream.
                    let $bytes: [u8; $n] = d.deserialize_byte_buf(FixedBytes::<$n>)?;
                    $from_bytes.map_err(serde::de::Error::custom)
                }
            }
        }
    };
}

// Binary formats are the machine's own checksummed verified state (ADR 0004), written from
// keys that were checked when they were read from the channel: taken as they are, without a
// point decompression each (a state file holding something else verifies nothing).
hex_text!(PublicKey, 32, text => PublicKey::from_hex_memo(text), bytes => Ok::<_, KeyError>(PublicKey(bytes)));
hex_text!(Signature, 64, text => Signature::from_hex(text), bytes => Ok::<_, KeyError>(Signature::from_bytes(&bytes)));

impl PublicKey {
    fn byte_array(&self) -> [u8; 32] {
        self.0
    }
}

impl Signature {
    fn byte_array(&self) -> [u8; 64] {
        self.to_bytes()
    }
}

std::thread_local! {
    /// Keys decoded while [`with_key_memo`] runs on this thread (see there).
    static KEY_MEMO: std::cell::RefCell<Option<foldhash::HashSet<[u8; 32]>>> =
        const { std::cell::RefCell::new(None) };
}

/// Runs `decode` with a memo of the public keys it deserializes: each distinct key is
/// proven to decompress (an Ed25519 point decompression, about 6 us) once instead of at every
/// occurrence. For decoding the machine's verified state, which names a few keys very many
/// times (every order event names its author's key). The memo is dropped when `decode`
/// returns; the keys it yields are exactly those decompression yields.
pub(crate) fn with_key_memo<R>(decode: impl FnOnce() -> R) -> R {
    struct Clear;
    impl Drop for Clear {
        fn drop(&mut self) {
            KEY_MEMO.with(|memo| memo.borrow_mut().take());
        }
    }
    KEY_MEMO.with(|memo| *memo.borrow_mut() = Some(foldhash::HashSet::default()));
    let _clear = Clear;
    decode()
}

impl PublicKey {
    /// [`PublicKey::from_hex`], through the memo of [`with_key_memo`] when one is running.
    fn from_hex_memo(text: &str) -> Result<Self, KeyError> {
        let bytes = &decode_hex::<32>(text)?;
        let known = KEY_MEMO.with(|memo| memo.borrow().as_ref().map(|m| m.contains(bytes)));
        match known {
            None => Self::from_bytes(bytes),
            Some(true) => Ok(Self(*bytes)),
            Some(false) => {
                let key = Self::from_bytes(bytes)?;
                KEY_MEMO.with(|memo| {
                    if let Some(memo) = memo.borrow_mut().as_mut() {
                        memo.insert(*bytes);
                    }
                });
                Ok(key)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_secret_key_round_trips_through_hex() {
        let key = SecretKey::generate().unwrap();
        let again = SecretKey::from_hex(&key.to_hex()).unwrap();
        assert_eq!(key.public_key(), again.public_key());
    }

    #[test]
    fn a_signature_verifies_only_for_its_message_and_key() {
        let key = SecretKey::from_bytes(&[7; 32]);
        let other = SecretKey::from_bytes(&[8; 32]);
        let sig = key.sign(b"hello");
        let parsed: Signature = sig.to_string().parse().unwrap();
        assert_eq!(key.public_key().verify(b"hello", &parsed), Ok(()));
        assert_eq!(
            key.public_key().verify(b"hellO", &parsed),
            Err(KeyError::BadSignature)
        );
        assert_eq!(
            other.public_key().verify(b"hello", &parsed),
            Err(KeyError::BadSignature)
        );
    }

    #[test]
    fn hex_must_be_lower_case_and_the_right_length() {
        let key = SecretKey::from_bytes(&[7; 32]).public_key();
        assert_eq!(PublicKey::from_hex(&key.to_hex()), Ok(key));
        assert_eq!(
            PublicKey::from_hex(&key.to_hex().to_uppercase()),
            Err(KeyError::BadHex)
        );
        assert!(matches!(
            PublicKey::from_hex("abcd"),
            Err(KeyError::BadLength { expected: 32, .. })
        ));
    }

    #[test]
    fn keys_decoded_through_the_memo_are_the_keys_decoded_without_it() {
        let keys: Vec<PublicKey> = (0..4u8)
            .map(|i| SecretKey::from_bytes(&[i; 32]).public_key())
            .collect();
        let text = serde_json::to_string(&[keys.clone(), keys.clone()].concat()).unwrap();
        let plain: Vec<PublicKey> = serde_json::from_str(&text).unwrap();
        let memo: Vec<PublicKey> = with_key_memo(|| serde_json::from_str(&text).unwrap());
        assert_eq!(plain, memo);
        assert_eq!(memo[..4], keys[..]);
        // Not a key, with or without the memo; and the memo is gone afterwards.
        let not_a_point = (0..=255u8)
            .map(|i| [i; 32])
            .find(|bytes| PublicKey::from_bytes(bytes).is_err())
            .unwrap();
        let bad = format!("[\"{}\"]", hex::encode(not_a_point));
        assert!(serde_json::from_str::<Vec<PublicKey>>(&bad).is_err());
        assert!(with_key_memo(|| serde_json::from_str::<Vec<PublicKey>>(&bad)).is_err());
        assert!(KEY_MEMO.with(|memo| memo.borrow().is_none()));
    }

    #[test]
    fn keys_and_signatures_are_raw_bytes_in_binary_formats_and_hex_in_json() {
        let key = SecretKey::from_bytes(&[7; 32]);
        let public = key.public_key();
        let sig = key.sign(b"hello");
        let bytes = postcard::to_stdvec(&(public, sig)).unwrap();
        // A length byte and the bytes, for each.
        assert_eq!(bytes.len(), 1 + 32 + 1 + 64);
        let (back, back_sig): (PublicKey, Signature) = postcard::from_bytes(&bytes).unwrap();
        assert_eq!((back, back_sig), (public, sig));
        assert_eq!(
            serde_json::to_string(&public).unwrap(),
            format!("\"{}\"", public.to_hex())
        );
        assert!(postcard::from_bytes::<PublicKey>(&[31, 0]).is_err());
    }

    #[test]
    fn bytes_that_are_not_a_point_in_a_state_file_verify_nothing_and_panic_nowhere() {
        let not_a_point = (0..=255u8)
            .map(|i| [i; 32])
            .find(|bytes| PublicKey::from_bytes(bytes).is_err())
            .unwrap();
        let mut encoded = vec![32u8];
        encoded.extend_from_slice(&not_a_point);
        let key: PublicKey = postcard::from_bytes(&encoded).unwrap();
        let sig = SecretKey::from_bytes(&[7; 32]).sign(b"hello");
        assert_eq!(key.verify(b"hello", &sig), Err(KeyError::BadSignature));
        assert!(key.is_weak());
        assert_eq!(key.to_montgomery_bytes(), Err(KeyError::BadPublicKey));
    }

    #[test]
    fn a_secret_key_is_not_printed_by_debug() {
        let key = SecretKey::from_bytes(&[7; 32]);
        let shown = format!("{key:?}");
        assert!(!shown.contains(key.to_hex().as_str()));
        assert!(shown.contains(&key.public_key().to_hex()));
    }
}

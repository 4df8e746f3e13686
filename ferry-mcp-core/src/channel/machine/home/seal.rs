//! Passphrase sealing of a 32-byte secret key: argon2id stretches the passphrase into a
//! key for XChaCha20-Poly1305, which encrypts the secret.
//!
//! The public key is authenticated as associated data, so a sealed secret cannot be
//! moved under another public key without the unseal failing. The argon2 costs are
//! stored beside the ciphertext, so they can be raised later without breaking old files.

use chacha20poly1305::aead::{Aead, Payload};
use chacha20poly1305::{KeyInit, XChaCha20Poly1305, XNonce};
use serde::{Deserialize, Serialize};

/// Domain tag bound into every seal, so a ciphertext made for anything else never opens.
const AAD_TAG: &[u8] = b"ferry-key-seal/1\0";

/// Costs of the argon2id key derivation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct SealCost {
    /// Memory in KiB.
    pub m_kib: u32,
    /// Iterations.
    pub t: u32,
    /// Lanes.
    pub p: u32,
}

impl Default for SealCost {
    /// The OWASP baseline for argon2id (19 MiB, 2 iterations, 1 lane).
    fn default() -> Self {
        Self {
            m_kib: 19 * 1024,
            t: 2,
            p: 1,
        }
    }
}

/// A sealed secret as stored in a key file (all bytes in lower-case hex).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SealedSecret {
    pub kdf: String,
    #[serde(flatten)]
    pub cost: SealCost,
    pub salt: String,
    pub nonce: String,
    pub ciphertext: String,
}

/// Why a seal or unseal failed.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum SealError {
    #[error("wrong passphrase")]
    WrongPassphrase,
    #[error("the passphrase is empty")]
    EmptyPassphrase,
    #[error("unsupported key derivation {0:?}")]
    UnsupportedKdf(String),
    #[error("bad sealed key: {0}")]
    Malformed(String),
    #[error("no randomness available: {0}")]
    Random(String),
}

const KDF_NAME: &str = "argon2id";

fn derive(passphrase: &[u8], salt: &[u8], cost: SealCost) -> Result<[u8; 32], SealError> {
    let params = argon2::Params::new(cost.m_kib, cost.t, cost.p, Some(32))
        .map_err(|err| SealError::Malformed(format!("argon2 costs: {err}")))?;
    let argon = argon2::Argon2::new(argon2::Algorithm::Argon2id, argon2::Version::V0x13, params);
    let mut out = [0u8; 32];
    argon
        .hash_password_into(passphrase, salt, &mut out)
        .map_err(|err| SealError::Malformed(format!("argon2: {err}")))?;
    Ok(out)
}

fn aad(public_hex: &str) -> Vec<u8> {
    let mut aad = AAD_TAG.to_vec();
    aad.extend_from_slice(public_hex.as_bytes());
    aad
}

/// Seals `secret` (whose public key, in hex, is `public_hex`) under `passphrase`.
pub fn seal(
    secret: &[u8; 32],
    public_hex: &str,
    passphrase: &[u8],
    cost: SealCost,
) -> Result<SealedSecret, SealError> {
    if passphrase.is_empty() {
        return Err(SealError::EmptyPassphrase);
    }
    let mut salt = [0u8; 16];
    let mut nonce = [0u8; 24];
    getrandom::fill(&mut salt).map_err(|err| SealError::Random(err.to_string()))?;
    getrandom::fill(&mut nonce).map_err(|err| SealError::Random(err.to_string()))?;
    let mut key = derive(passphrase, &salt, cost)?;
    let cipher = XChaCha20Poly1305::new_from_slice(&key)
        .map_err(|_| SealError::Malformed("cipher key length".into()))?;
    key.fill(0);
    let aad = aad(public_hex);
    let ciphertext = cipher
        .encrypt(
            &XNonce::from(nonce),
            Payload {
                msg: secret,
                aad: &aad,
            },
        )
        .map_err(|_| SealError::Malformed("encryption failed".into()))?;
    Ok(SealedSecret {
        kdf: KDF_NAME.into(),
        cost,
        salt: hex::encode(salt),
        nonce: hex::encode(nonce),
        ciphertext: hex::encode(ciphertext),
    })
}

/// Opens a sealed secret; a wrong passphrase (or a seal moved under another public key)
/// is [`SealError::WrongPassphrase`].
pub fn unseal(
    sealed: &SealedSecret,
    public_hex: &str,
    passphrase: &[u8],
) -> Result<[u8; 32], SealError> {
    if sealed.kdf != KDF_NAME {
        return Err(SealError::UnsupportedKdf(sealed.kdf.clone()));
    }
    let salt = hex::decode(&sealed.salt).map_err(|_| SealError::Malformed("salt".into()))?;
    let nonce: [u8; 24] = hex::decode(&sealed.nonce)
        .ok()
        .and_then(|bytes| bytes.try_into().ok())
        .ok_or_else(|| SealError::Malformed("nonce".into()))?;
    let ciphertext =
        hex::decode(&sealed.ciphertext).map_err(|_| SealError::Malformed("ciphertext".into()))?;
    let mut key = derive(passphrase, &salt, sealed.cost)?;
    let cipher = XChaCha20Poly1305::new_from_slice(&key)
        .map_err(|_| SealError::Malformed("cipher key length".into()))?;
    key.fill(0);
    let aad = aad(public_hex);
    let mut plain = cipher
        .decrypt(
            &XNonce::from(nonce),
            Payload {
                msg: &ciphertext,
                aad: &aad,
            },
        )
        .map_err(|_| SealError::WrongPassphrase)?;
    let secret: Result<[u8; 32], _> = plain.as_slice().try_into();
    plain.fill(0);
    secret.map_err(|_| SealError::Malformed("secret length".into()))
}

#[cfg(test)]
mod tests {
    use super::*;

    const CHEAP: SealCost = SealCost {
        m_kib: 64,
        t: 1,
        p: 1,
    };

    #[test]
    fn a_sealed_secret_opens_with_its_passphrase_only() {
        let secret = [7u8; 32];
        let sealed = seal(&secret, "ab", b"correct horse", CHEAP).unwrap();
        assert_eq!(unseal(&sealed, "ab", b"correct horse").unwrap(), secret);
        assert_eq!(
            unseal(&sealed, "ab", b"wrong horse"),
            Err(SealError::WrongPassphrase)
        );
    }

    #[test]
    fn a_seal_moved_under_another_public_key_does_not_open() {
        let sealed = seal(&[1u8; 32], "ab", b"pass", CHEAP).unwrap();
        assert_eq!(
            unseal(&sealed, "cd", b"pass"),
            Err(SealError::WrongPassphrase)
        );
    }

    #[test]
    fn an_empty_passphrase_is_refused() {
        assert_eq!(
            seal(&[1u8; 32], "ab", b"", CHEAP),
            Err(SealError::EmptyPassphrase)
        );
    }
}

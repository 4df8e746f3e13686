//! Sealing a secret to one agent (`ferry channel secret`): a libsodium sealed box
//! (`crypto_box`, X25519 + XSalsa20-Poly1305) to the X25519 key that matches the agent's Ed25519
//! roster key. Only the holder of that agent's secret key opens it, so the sealed bytes can
//! sit in the synced channel as a blob; a changed byte makes opening fail.

use crate::channel::log::keys::{PublicKey, SecretKey};

/// Why a sealed secret did not open.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum SecretError {
    #[error("the sealed secret does not open with this key (tampered, or sealed to another key)")]
    DoesNotOpen,
    #[error("no random bytes to seal with")]
    NoRandomness,
    #[error("the recipient's key is not an ed25519 point")]
    NotAKey,
}

/// Seals `value` so that only the holder of `recipient`'s secret key can open it.
pub fn seal(recipient: &PublicKey, value: &[u8]) -> Result<Vec<u8>, SecretError> {
    let montgomery = recipient
        .to_montgomery_bytes()
        .map_err(|_| SecretError::NotAKey)?;
    crypto_box::PublicKey::from(montgomery)
        .seal(&mut crypto_box::aead::OsRng, value)
        .map_err(|_| SecretError::NoRandomness)
}

/// Opens a sealed secret with the recipient's secret key.
pub fn open(recipient: &SecretKey, sealed: &[u8]) -> Result<Vec<u8>, SecretError> {
    let secret = crypto_box::SecretKey::from(*recipient.to_scalar_bytes());
    secret.unseal(sealed).map_err(|_| SecretError::DoesNotOpen)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_sealed_secret_opens_only_with_its_recipients_key_and_not_after_a_change() {
        let alice = SecretKey::from_bytes(&[7; 32]);
        let bob = SecretKey::from_bytes(&[8; 32]);
        let sealed = seal(&alice.public_key(), b"hunter2").unwrap();
        assert_eq!(open(&alice, &sealed).unwrap(), b"hunter2");
        assert_eq!(open(&bob, &sealed), Err(SecretError::DoesNotOpen));
        let mut tampered = sealed.clone();
        let last = tampered.len() - 1;
        tampered[last] ^= 1;
        assert_eq!(open(&alice, &tampered), Err(SecretError::DoesNotOpen));
        assert!(!sealed.windows(7).any(|w| w == b"hunter2"));
    }
}

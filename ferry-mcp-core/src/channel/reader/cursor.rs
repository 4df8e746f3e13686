//! A cursor: a printable position in every log of a channel.
//!
//! It maps each log, named by its author and the first 16 hex digits (64 bits) of its key,
//! to the last sequence number delivered. The text form is `c1` followed by
//! `.<author>~<key16>~<seq>` per log, sorted; `c1` alone is the start of every log. Callers
//! treat it as opaque.

use std::collections::BTreeMap;
use std::fmt;
use std::str::FromStr;

use crate::channel::keys::PublicKey;
use crate::channel::names::AgentName;

const TAG: &str = "c1";
const KEY_PREFIX_BYTES: usize = 8;

/// Why a cursor string could not be parsed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CursorError {
    #[error("not a channel cursor")]
    NotACursor,
    /// A page cursor (`shape::Cursor`, `p<hex>`) given where a channel cursor belongs.
    #[error("that is a page cursor, pass it as `cursor`")]
    PageCursor,
    #[error("cursor position {0:?} is malformed")]
    BadPosition(String),
}

/// The key of one log inside a cursor: author and key prefix.
type LogKey = (AgentName, [u8; KEY_PREFIX_BYTES]);

fn log_key(author: &AgentName, key: &PublicKey) -> LogKey {
    let mut prefix = [0u8; KEY_PREFIX_BYTES];
    prefix.copy_from_slice(&key.as_bytes()[..KEY_PREFIX_BYTES]);
    (author.clone(), prefix)
}

/// A position in every log: for each, the last sequence number already delivered.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
pub struct Cursor {
    positions: BTreeMap<LogKey, u64>,
}

impl Cursor {
    /// The start of every log.
    pub fn start() -> Self {
        Self::default()
    }

    /// The last sequence number delivered from the log of `author` signed by `key` (0: none).
    pub fn seq_of(&self, author: &AgentName, key: &PublicKey) -> u64 {
        self.positions
            .get(&log_key(author, key))
            .copied()
            .unwrap_or(0)
    }

    /// Records that entries up to `seq` of that log were delivered.
    pub fn set(&mut self, author: &AgentName, key: &PublicKey, seq: u64) {
        if seq == 0 {
            self.positions.remove(&log_key(author, key));
        } else {
            self.positions.insert(log_key(author, key), seq);
        }
    }
}

impl fmt::Display for Cursor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(TAG)?;
        for ((author, prefix), seq) in &self.positions {
            write!(f, ".{author}~{}~{seq}", hex::encode(prefix))?;
        }
        Ok(())
    }
}

impl FromStr for Cursor {
    type Err = CursorError;

    fn from_str(text: &str) -> Result<Self, CursorError> {
        if text.starts_with('p') {
            return Err(CursorError::PageCursor);
        }
        let rest = text.strip_prefix(TAG).ok_or(CursorError::NotACursor)?;
        let mut positions = BTreeMap::new();
        if rest.is_empty() {
            return Ok(Cursor { positions });
        }
        // Names may contain '.', so positions are split on ".<name>~" by parsing the
        // fixed-width tail of each one: "~<16 hex>~<digits>".
        let mut remaining = rest.strip_prefix('.').ok_or(CursorError::NotACursor)?;
        while !remaining.is_empty() {
            let bad = || CursorError::BadPosition(remaining.to_owned());
            let (author, after) = remaining.split_once('~').ok_or_else(bad)?;
            let (prefix_hex, after) = after.split_once('~').ok_or_else(bad)?;
            let digits_len = after.bytes().take_while(u8::is_ascii_digit).count();
            let (digits, after) = after.split_at(digits_len);
            let author = AgentName::parse_any(author).map_err(|_| bad())?;
            let mut prefix = [0u8; KEY_PREFIX_BYTES];
            if prefix_hex.bytes().any(|b| b.is_ascii_uppercase()) {
                return Err(bad());
            }
            hex::decode_to_slice(prefix_hex, &mut prefix).map_err(|_| bad())?;
            let seq: u64 = digits.parse().map_err(|_| bad())?;
            if seq == 0 || positions.insert((author, prefix), seq).is_some() {
                return Err(bad());
            }
            remaining = match after {
                "" => "",
                _ => after.strip_prefix('.').ok_or_else(bad)?,
            };
        }
        Ok(Cursor { positions })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::channel::keys::SecretKey;

    #[test]
    fn a_cursor_round_trips_through_its_text() {
        let key = SecretKey::from_bytes(&[3; 32]).public_key();
        let mut cursor = Cursor::start();
        cursor.set(&AgentName::parse("a.b-c").unwrap(), &key, 42);
        cursor.set(&AgentName::master(), &key, 7);
        let text = cursor.to_string();
        assert_eq!(text.parse::<Cursor>(), Ok(cursor.clone()));
        assert_eq!(cursor.seq_of(&AgentName::parse("a.b-c").unwrap(), &key), 42);
        assert_eq!("c1".parse::<Cursor>(), Ok(Cursor::start()));
    }

    #[test]
    fn a_malformed_cursor_is_a_typed_error() {
        assert_eq!("zz".parse::<Cursor>(), Err(CursorError::NotACursor));
        assert!(matches!(
            "c1.alice~00~3".parse::<Cursor>(),
            Err(CursorError::BadPosition(_))
        ));
        assert!(matches!(
            "c1.alice~0011223344556677~x".parse::<Cursor>(),
            Err(CursorError::BadPosition(_))
        ));
    }
}

//! `since` cursors (ADR 0007): a point of this machine's fold, `s<generation>.<counter>` in
//! base 36. Whatever the fold changed after that point is news.

use std::fmt;
use std::str::FromStr;

use serde::{Serialize, Serializer};

/// A point of this machine's fold of one channel.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Since {
    /// The random tag of the verified state the counter belongs to.
    pub generation: u64,
    /// The fold counter.
    pub counter: u64,
}

/// Why a text is not a `since` cursor.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SinceError {
    #[error("that is a page cursor (pass it as `cursor`), not a `since` cursor")]
    Page,
    #[error("not a `since` cursor (it starts with `s`; pass back the `next` a call gave)")]
    NotASince,
}

fn base36(mut n: u64) -> String {
    const DIGITS: &[u8; 36] = b"0123456789abcdefghijklmnopqrstuvwxyz";
    let mut out = Vec::new();
    loop {
        out.push(DIGITS[(n % 36) as usize]);
        n /= 36;
        if n == 0 {
            break;
        }
    }
    out.reverse();
    String::from_utf8(out).expect("ascii")
}

fn from_base36(text: &str) -> Option<u64> {
    if text.is_empty() || text.len() > 13 {
        return None;
    }
    let mut n: u64 = 0;
    for b in text.bytes() {
        let digit = match b {
            b'0'..=b'9' => b - b'0',
            b'a'..=b'z' => b - b'a' + 10,
            _ => return None,
        };
        n = n.checked_mul(36)?.checked_add(u64::from(digit))?;
    }
    Some(n)
}

impl fmt::Display for Since {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "s{}.{}", base36(self.generation), base36(self.counter))
    }
}

impl Serialize for Since {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl FromStr for Since {
    type Err = SinceError;

    fn from_str(text: &str) -> Result<Self, SinceError> {
        if text.starts_with('p') {
            return Err(SinceError::Page);
        }
        let rest = text.strip_prefix('s').ok_or(SinceError::NotASince)?;
        let (generation, counter) = rest.split_once('.').ok_or(SinceError::NotASince)?;
        Ok(Since {
            generation: from_base36(generation).ok_or(SinceError::NotASince)?,
            counter: from_base36(counter).ok_or(SinceError::NotASince)?,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_since_cursor_round_trips_and_a_page_cursor_is_told_apart() {
        let since = Since {
            generation: u64::MAX,
            counter: 12_345,
        };
        assert_eq!(since.to_string().parse(), Ok(since));
        assert_eq!("p1a".parse::<Since>(), Err(SinceError::Page));
        for bad in ["", "s", "s1", "s1.", "s.1", "c1.alice~0~1", "sZ.1"] {
            assert_eq!(bad.parse::<Since>(), Err(SinceError::NotASince), "{bad}");
        }
    }
}

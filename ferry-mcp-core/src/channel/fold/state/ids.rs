//! Short ids: the position of the entry that made a thing (ADR 0007).
//!
//! An agent's entry is `<name>-<seq>`; the master's is `m<seq>` in the genesis era and
//! `m<seq>e<era>` after a handover. Agent ids always end in `-<digits>` and master ids never
//! contain `-`, so the two never collide, and both are safe `ferry://` URI components.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

use crate::channel::log::names::AgentName;

/// The id of a thing made by one entry (an order, a message, an ask, a hand-in). Serialized
/// as its text, everywhere.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum EntryId {
    Agent { name: AgentName, seq: u64 },
    Master { era: u32, seq: u64 },
}

/// Why a text is not an id.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0:?} is not an id (expected like `m12` or `alice-3`)")]
pub struct BadId(pub String);

impl EntryId {
    /// The entry's sequence number in its author's log.
    pub fn seq(&self) -> u64 {
        match self {
            EntryId::Agent { seq, .. } | EntryId::Master { seq, .. } => *seq,
        }
    }
}

impl fmt::Display for EntryId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            EntryId::Agent { name, seq } => write!(f, "{name}-{seq}"),
            EntryId::Master { era: 0, seq } => write!(f, "m{seq}"),
            EntryId::Master { era, seq } => write!(f, "m{seq}e{era}"),
        }
    }
}

fn digits(text: &str) -> Option<u64> {
    if text.is_empty() || !text.bytes().all(|b| b.is_ascii_digit()) || text.starts_with('0') {
        return None;
    }
    text.parse().ok()
}

impl FromStr for EntryId {
    type Err = BadId;

    fn from_str(text: &str) -> Result<Self, BadId> {
        let bad = || BadId(text.to_owned());
        let lower = text.trim().to_ascii_lowercase();
        if let Some((name, seq)) = lower.rsplit_once('-') {
            let name = AgentName::parse(name).map_err(|_| bad())?;
            let seq = digits(seq).ok_or_else(bad)?;
            return Ok(EntryId::Agent { name, seq });
        }
        let rest = lower.strip_prefix('m').ok_or_else(bad)?;
        let (seq, era) = match rest.split_once('e') {
            Some((seq, era)) => (seq, digits(era).ok_or_else(bad)?),
            None => (rest, 0),
        };
        if era == 0 && rest.contains('e') {
            return Err(bad());
        }
        Ok(EntryId::Master {
            era: u32::try_from(era).map_err(|_| bad())?,
            seq: digits(seq).ok_or_else(bad)?,
        })
    }
}

/// The binary form of an id (the verified state): no text to format and parse again.
#[derive(Serialize, Deserialize)]
enum Compact {
    Agent(AgentName, u64),
    Master(u32, u64),
}

/// The text everywhere a person or a client may read it; [`Compact`] in binary formats.
impl Serialize for EntryId {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        if s.is_human_readable() {
            return s.collect_str(self);
        }
        match self {
            EntryId::Agent { name, seq } => Compact::Agent(name.clone(), *seq),
            EntryId::Master { era, seq } => Compact::Master(*era, *seq),
        }
        .serialize(s)
    }
}

impl<'de> Deserialize<'de> for EntryId {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        if !d.is_human_readable() {
            return Ok(match Compact::deserialize(d)? {
                Compact::Agent(name, seq) => EntryId::Agent { name, seq },
                Compact::Master(era, seq) => EntryId::Master { era, seq },
            });
        }
        let raw = <std::borrow::Cow<'de, str>>::deserialize(d)?;
        raw.parse().map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_round_trip_and_agent_and_master_ids_never_collide() {
        for text in ["m1", "m12", "m3e1", "alice-3", "a.b-c-12", "m12-4", "m-7"] {
            let id: EntryId = text.parse().unwrap();
            assert_eq!(id.to_string(), text);
        }
        assert!(matches!("m12-4".parse(), Ok(EntryId::Agent { .. })));
        for bad in [
            "", "m", "m0", "m01", "alice", "alice-", "alice-x", "m1e0", "master-3", "-3",
        ] {
            assert!(bad.parse::<EntryId>().is_err(), "{bad}");
        }
    }
}

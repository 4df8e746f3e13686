//! Names that become path components in the channel folder: agent names and project ids.
//!
//! Both are "safe components" (ASCII letters, digits, `.`, `-`, `_`; not `.` or `..`; at most
//! 128 bytes) so that a name can never escape the folder it is joined onto, and both are
//! case-folded to lower case so that `Fang` and `fang` are one identity on every file system.
//! The agent name `master` is reserved for the human's log.

use std::fmt;
use std::str::FromStr;
use std::sync::Arc;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// The longest name, in bytes.
pub const MAX_NAME_LEN: usize = 128;

/// The reserved name of the human's (master key's) log.
pub const MASTER_NAME: &str = "master";

/// Why a string is not a valid name.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NameError {
    #[error("name is empty")]
    Empty,
    #[error("name is {len} bytes long, the limit is {MAX_NAME_LEN}")]
    TooLong { len: usize },
    #[error("name contains {found:?}; only ASCII letters, digits, '.', '-' and '_' are allowed")]
    BadChar { found: char },
    #[error("name cannot be '.' or '..'")]
    DotName,
    #[error("the name 'master' is reserved for the human's log")]
    Reserved,
}

/// Checks the safe-component rules and returns the case-folded form.
fn fold_component(raw: &str) -> Result<String, NameError> {
    if raw.is_empty() {
        return Err(NameError::Empty);
    }
    if raw.len() > MAX_NAME_LEN {
        return Err(NameError::TooLong { len: raw.len() });
    }
    if let Some(found) = raw
        .chars()
        .find(|c| !(c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '_')))
    {
        return Err(NameError::BadChar { found });
    }
    if raw == "." || raw == ".." {
        return Err(NameError::DotName);
    }
    Ok(raw.to_ascii_lowercase())
}

/// An agent's name: a safe path component, lower case. `master` names the human's log.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct AgentName(Arc<str>);

impl AgentName {
    /// Parses a name an agent may take: the safe-component rules, and not `master`.
    pub fn parse(raw: &str) -> Result<Self, NameError> {
        let name = Self::parse_any(raw)?;
        if name.is_master() {
            return Err(NameError::Reserved);
        }
        Ok(name)
    }

    /// Parses any name found in the channel, including the reserved `master`.
    /// Use [`AgentName::parse`] for names that agents choose.
    pub fn parse_any(raw: &str) -> Result<Self, NameError> {
        fold_component(raw).map(|name| Self(name.into()))
    }

    /// The reserved name of the human's log.
    pub fn master() -> Self {
        Self(MASTER_NAME.into())
    }

    /// [`AgentName::parse_any`], through the memo of [`with_name_memo`] when one is running.
    fn parse_any_memo(raw: &str) -> Result<Self, NameError> {
        let known = NAME_MEMO.with(|memo| memo.borrow().as_ref().map(|m| m.get(raw).cloned()));
        match known {
            None => Self::parse_any(raw),
            Some(Some(name)) => Ok(Self(name)),
            Some(None) => {
                let name = Self::parse_any(raw)?;
                NAME_MEMO.with(|memo| {
                    if let Some(memo) = memo.borrow_mut().as_mut() {
                        memo.insert(name.0.clone());
                    }
                });
                Ok(name)
            }
        }
    }

    pub fn is_master(&self) -> bool {
        &*self.0 == MASTER_NAME
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// Maps keyed by name are looked up by the folder name as found on disk.
impl std::borrow::Borrow<str> for AgentName {
    fn borrow(&self) -> &str {
        &self.0
    }
}

/// A project's id: a safe path component, lower case.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ProjectId(String);

impl ProjectId {
    pub fn parse(raw: &str) -> Result<Self, NameError> {
        fold_component(raw).map(Self)
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

macro_rules! string_like {
    ($ty:ident, $parse:path) => {
        impl fmt::Display for $ty {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(&self.0)
            }
        }
        impl FromStr for $ty {
            type Err = NameError;
            fn from_str(s: &str) -> Result<Self, NameError> {
                $parse(s)
            }
        }
        impl AsRef<str> for $ty {
            fn as_ref(&self) -> &str {
                &self.0
            }
        }
        impl Serialize for $ty {
            fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                s.serialize_str(&self.0)
            }
        }
        impl<'de> Deserialize<'de> for $ty {
            fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                struct Text;
                impl serde::de::Visitor<'_> for Text {
                    type Value = $ty;
                    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                        f.write_str("a name")
                    }
                    fn visit_str<E: serde::de::Error>(self, raw: &str) -> Result<$ty, E> {
                        $parse(raw).map_err(E::custom)
                    }
                }
                // A string the visitor only looks at (never borrowed from the input): the
                // verified state is decoded from a stream.
                d.deserialize_string(Text)
            }
        }
    };
}

// Deserializing accepts `master`: entries of the human's log name it as their author.
string_like!(AgentName, AgentName::parse_any_memo);

std::thread_local! {
    /// Names decoded while [`with_name_memo`] runs on this thread (see there).
    static NAME_MEMO: std::cell::RefCell<Option<foldhash::HashSet<Arc<str>>>> =
        const { std::cell::RefCell::new(None) };
}

/// Runs `decode` with a memo of the agent names it deserializes: every occurrence of a name
/// shares one allocation, checked once. For decoding the machine's verified state, which
/// names a few agents very many times (every order event names its author); the names it
/// yields are exactly those parsing yields. The memo is dropped when `decode` returns.
pub(crate) fn with_name_memo<R>(decode: impl FnOnce() -> R) -> R {
    struct Clear;
    impl Drop for Clear {
        fn drop(&mut self) {
            NAME_MEMO.with(|memo| memo.borrow_mut().take());
        }
    }
    NAME_MEMO.with(|memo| *memo.borrow_mut() = Some(foldhash::HashSet::default()));
    let _clear = Clear;
    decode()
}
string_like!(ProjectId, ProjectId::parse);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_case_folded() {
        assert_eq!(AgentName::parse("Fang").unwrap().as_str(), "fang");
        assert_eq!(
            ProjectId::parse("Web-App_2.0").unwrap().as_str(),
            "web-app_2.0"
        );
    }

    #[test]
    fn unsafe_components_are_rejected_with_their_cause() {
        assert_eq!(AgentName::parse(""), Err(NameError::Empty));
        assert_eq!(AgentName::parse(".."), Err(NameError::DotName));
        assert_eq!(AgentName::parse("."), Err(NameError::DotName));
        assert_eq!(
            AgentName::parse("a/b"),
            Err(NameError::BadChar { found: '/' })
        );
        assert_eq!(
            ProjectId::parse("é"),
            Err(NameError::BadChar { found: 'é' })
        );
        assert_eq!(
            AgentName::parse(&"a".repeat(129)),
            Err(NameError::TooLong { len: 129 })
        );
        assert!(AgentName::parse(&"a".repeat(128)).is_ok());
    }

    #[test]
    fn an_agent_cannot_take_the_master_name_in_any_case() {
        assert_eq!(AgentName::parse("Master"), Err(NameError::Reserved));
        assert!(AgentName::parse_any("MASTER").unwrap().is_master());
        assert_eq!(AgentName::master().as_str(), "master");
    }
}

//! A fold that may still be in the kept state (ADR 0008, 0011): loaded, or not yet.
//!
//! Why: the folds that grow with the channel's work (the order board, talk, the master's
//! times) cost more to read and decode than an open that needs none of them costs in all. An
//! open leaves them in the kept state; the session reads one (by `&mut`, checking its digest)
//! the first time a fold step or a reader needs it, and hands it over here. Nothing here reads
//! anything: a fold not loaded is simply not there, and asking for it is the session's bug.

use serde::Serialize;
use serde::de::DeserializeOwned;

/// A fold that may be kept in a section of its own.
pub trait Section: Default + Serialize + DeserializeOwned {
    /// Its name in problems.
    const NAME: &'static str;
}

/// A fold, or the mark that it is still in the kept state.
#[derive(Clone)]
pub struct Lazy<T> {
    /// None while it is still in the kept state.
    value: Option<T>,
    /// Whether it changed since it was kept (a save writes it only then).
    changed: bool,
    /// Whether it is the kept value and the changes since (read from the kept state, or kept
    /// by a save): a fold kept a row per part writes only the parts that changed then, and
    /// every part otherwise (a value made here, a channel folded again).
    from_kept: bool,
}

impl<T: Section> Lazy<T> {
    /// A value made here, kept nowhere yet.
    pub fn new(value: T) -> Self {
        Self {
            value: Some(value),
            changed: true,
            from_kept: false,
        }
    }

    /// A value still in the kept state: the session loads it before it is used.
    pub fn kept() -> Self {
        Self {
            value: None,
            changed: false,
            from_kept: true,
        }
    }

    /// Takes the value the session read from the kept state (unchanged since it was kept).
    pub fn load(&mut self, value: T) {
        self.value = Some(value);
        self.changed = false;
        self.from_kept = true;
    }

    /// The value, if it is loaded.
    pub fn get(&self) -> Option<&T> {
        self.value.as_ref()
    }

    /// The value, to change it (if it is loaded): what was kept is no longer it.
    pub fn get_mut(&mut self) -> Option<&mut T> {
        let value = self.value.as_mut()?;
        self.changed = true;
        Some(value)
    }

    /// The value, to change what of it is in memory but not what it is (paging parts of it
    /// out to the kept state and back): it stays as kept, or as changed, as it was.
    pub fn get_mut_paging(&mut self) -> Option<&mut T> {
        self.value.as_mut()
    }

    /// Whether it is loaded (or made here).
    pub fn is_loaded(&self) -> bool {
        self.value.is_some()
    }

    /// Whether it changed since it was kept.
    pub fn changed(&self) -> bool {
        self.changed
    }

    /// Marks what it holds now as kept.
    pub fn mark_kept(&mut self) {
        self.changed = false;
        self.from_kept = true;
    }

    /// Whether it is the kept value and the changes since (see the field).
    pub fn is_from_kept(&self) -> bool {
        self.from_kept
    }
}

/// The parts of a fold kept a row per part (ADR 0011), each as its key and its bytes.
pub type Rows = Vec<(Vec<u8>, Vec<u8>)>;

/// Decodes one kept value, through the memos of keys and names, refusing bytes after it.
pub fn decode<T: DeserializeOwned>(bytes: &[u8]) -> Result<T, String> {
    with_memos(|| decode_in_memos(bytes))
}

/// Runs `decode` with the memos of keys and names: a fold kept as many rows (ADR 0011) is
/// decoded row by row through one memo, so each name and key is checked once.
pub fn with_memos<R>(decode: impl FnOnce() -> R) -> R {
    crate::channel::log::keys::with_key_memo(|| crate::channel::log::names::with_name_memo(decode))
}

/// Decodes one kept value (within [`with_memos`], or without the memos), refusing bytes after
/// it.
pub fn decode_in_memos<T: DeserializeOwned>(bytes: &[u8]) -> Result<T, String> {
    let (value, rest) = postcard::take_from_bytes::<T>(bytes).map_err(|e| e.to_string())?;
    if rest.is_empty() {
        Ok(value)
    } else {
        Err(format!("{} bytes after the value", rest.len()))
    }
}

impl<T: Section> Default for Lazy<T> {
    fn default() -> Self {
        Self::new(T::default())
    }
}

/// Equal when they hold the same value (or both are still kept): whether one changed since it
/// was kept is no part of what it is.
impl<T: PartialEq> PartialEq for Lazy<T> {
    fn eq(&self, other: &Self) -> bool {
        self.value == other.value
    }
}

impl<T: Eq> Eq for Lazy<T> {}

impl<T: Section + std::fmt::Debug> std::fmt::Debug for Lazy<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.value {
            Some(value) => value.fmt(f),
            None => f.write_str("<kept, not loaded yet>"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde::Deserialize;

    #[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
    struct Lines(Vec<String>);

    impl Section for Lines {
        const NAME: &'static str = "lines";
    }

    #[test]
    fn a_kept_fold_is_absent_until_loaded_and_counts_as_unchanged_until_changed() {
        let value = Lines(vec!["a".into(), "b".into()]);
        let bytes = postcard::to_stdvec(&value).unwrap();
        let mut lazy = Lazy::<Lines>::kept();
        assert!(!lazy.is_loaded());
        assert_eq!(lazy.get(), None);
        assert_eq!(lazy.get_mut(), None);
        assert!(
            !lazy.changed(),
            "asking for a fold not loaded changes nothing"
        );
        lazy.load(decode(&bytes).unwrap());
        assert_eq!(lazy.get(), Some(&value));
        assert!(!lazy.changed());
        lazy.get_mut().unwrap().0.push("c".into());
        assert!(lazy.changed());
    }

    #[test]
    fn kept_bytes_with_anything_after_the_value_do_not_decode() {
        let mut bytes = postcard::to_stdvec(&Lines(vec!["a".into()])).unwrap();
        bytes.push(0);
        let why = decode::<Lines>(&bytes).unwrap_err();
        assert!(why.contains("after the value"), "{why}");
    }
}

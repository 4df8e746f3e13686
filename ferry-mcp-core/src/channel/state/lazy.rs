//! A fold held as the bytes it was kept in until something asks for it (ADR 0008).
//!
//! Why: the folds that grow with the channel's work (the order board, talk, the master's
//! times) cost more to decode than an open that needs none of them costs in all. The kept
//! state hands their encoded bytes over at open, already checked against their digest; the
//! first read decodes them. Decoding is a pure function of bytes in memory: nothing here
//! reads a file, so a fold stays a value.

use std::sync::{Arc, Mutex, OnceLock};

use serde::Serialize;
use serde::de::DeserializeOwned;

/// A fold that may be kept in a section of its own.
pub trait Section: Default + Serialize + DeserializeOwned {
    /// Its name in problems.
    const NAME: &'static str;
}

/// A fold decoded from its kept bytes the first time it is asked for.
pub struct Lazy<T> {
    value: OnceLock<T>,
    /// Its kept bytes, until decoded.
    bytes: Mutex<Option<Arc<[u8]>>>,
    /// Whether it changed since it was kept (a save writes it only then).
    changed: bool,
    /// Why its bytes did not decode (the session reports it and folds everything again).
    failed: OnceLock<String>,
    /// What is done to the value once decoded (the board is handed where its records are).
    prepare: Option<Prepare<T>>,
}

/// See [`Lazy::prepare_with`].
pub type Prepare<T> = Arc<dyn Fn(&T) + Send + Sync>;

impl<T: Section> Lazy<T> {
    /// A value made here, kept nowhere yet.
    pub fn new(value: T) -> Self {
        Self {
            value: OnceLock::from(value),
            bytes: Mutex::new(None),
            changed: true,
            failed: OnceLock::new(),
            prepare: None,
        }
    }

    /// A value still in the bytes it was kept in.
    pub fn kept(bytes: Arc<[u8]>) -> Self {
        Self {
            value: OnceLock::new(),
            bytes: Mutex::new(Some(bytes)),
            changed: false,
            failed: OnceLock::new(),
            prepare: None,
        }
    }

    /// Runs `prepare` on the value once it is decoded (at once if it is).
    pub fn prepare_with(&mut self, prepare: Prepare<T>) {
        if let Some(value) = self.value.get() {
            prepare(value);
        }
        self.prepare = Some(prepare);
    }

    pub fn get(&self) -> &T {
        self.value.get_or_init(|| {
            let bytes = self
                .bytes
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .take();
            match bytes.map(|bytes| decode::<T>(&bytes)) {
                Some(Ok(value)) => {
                    if let Some(prepare) = &self.prepare {
                        prepare(&value);
                    }
                    value
                }
                Some(Err(why)) => {
                    let _ = self.failed.set(format!(
                        "the kept state's {} does not decode ({why}); rebuilt from the channel",
                        T::NAME
                    ));
                    T::default()
                }
                None => T::default(),
            }
        })
    }

    /// The value, to change it: what was kept is no longer it.
    pub fn get_mut(&mut self) -> &mut T {
        self.get();
        self.changed = true;
        self.value.get_mut().expect("initialized just above")
    }

    /// Whether it was decoded (or made here).
    pub fn is_loaded(&self) -> bool {
        self.value.get().is_some()
    }

    /// Whether it changed since it was kept.
    pub fn changed(&self) -> bool {
        self.changed
    }

    /// Marks what it holds now as kept.
    pub fn mark_kept(&mut self) {
        self.changed = false;
    }

    /// Why its kept bytes did not decode, if they did not.
    pub fn failure(&self) -> Option<&str> {
        self.failed.get().map(String::as_str)
    }
}

/// Decodes one kept value, through the memos of keys and names, refusing bytes after it.
pub fn decode<T: DeserializeOwned>(bytes: &[u8]) -> Result<T, String> {
    let (value, rest) = crate::channel::keys::with_key_memo(|| {
        crate::channel::names::with_name_memo(|| postcard::take_from_bytes::<T>(bytes))
    })
    .map_err(|e| e.to_string())?;
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

impl<T: Section + Clone> Clone for Lazy<T> {
    fn clone(&self) -> Self {
        Self {
            value: OnceLock::from(self.get().clone()),
            bytes: Mutex::new(None),
            changed: self.changed,
            failed: self.failed.clone(),
            prepare: self.prepare.clone(),
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
            None => f.write_str("<kept, not decoded yet>"),
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
    fn a_kept_fold_is_decoded_on_first_read_and_counts_as_unchanged_until_changed() {
        let value = Lines(vec!["a".into(), "b".into()]);
        let bytes: Arc<[u8]> = postcard::to_stdvec(&value).unwrap().into();
        let mut lazy = Lazy::<Lines>::kept(bytes);
        assert!(!lazy.is_loaded());
        assert_eq!(lazy.get(), &value);
        assert!(!lazy.changed());
        lazy.get_mut().0.push("c".into());
        assert!(lazy.changed());
        assert!(lazy.failure().is_none());
    }

    #[test]
    fn kept_bytes_that_do_not_decode_are_reported_never_taken_for_a_value() {
        let mut bytes = postcard::to_stdvec(&Lines(vec!["a".into()])).unwrap();
        bytes.push(0);
        let lazy = Lazy::<Lines>::kept(bytes.into());
        assert_eq!(lazy.get(), &Lines::default());
        assert!(lazy.failure().unwrap().contains("after the value"));
    }
}

//! What one save writes, as owned bytes, and the thread a server's save is written on.
//!
//! Why: a save of a large kept state is mostly SQLite's work (the rows that changed, the rows
//! they supersede copied aside, a synced commit): tens of milliseconds at 100,000 entries,
//! hundreds at 1,000,000. A server answered its call before it saves, but the call after waited
//! for the save (issue 23). So a save is made in two steps: the session's thread encodes what
//! changed into a [`Batch`] (the state is its own again at once), and the batch is written on
//! a thread of its own, holding the database's connection. Whoever reads or writes the
//! database next waits for that write first ([`Pending::settle`]), so nothing reads a row or
//! record before the save that wrote it has committed; a write that failed is reported there
//! and the caller rebuilds from the channel (what the batch held is then nowhere else).

use std::collections::HashMap;

use super::db;

/// The rows and records of one save, encoded.
#[derive(Debug, Default)]
pub(super) struct Batch {
    /// Everything is written anew: the database is emptied first.
    pub replace: bool,
    pub genesis: [u8; 32],
    pub channel: [u8; 32],
    pub generation: u64,
    /// Orders' records: id, SHA-256, bytes. Written first: the board's row names them.
    pub records: Vec<(String, [u8; 32], Vec<u8>)>,
    /// Section rows: name, bytes, and whether it is written even when its digest is the one
    /// last written (a fold another process replaced since).
    pub rows: Vec<(&'static str, Vec<u8>, bool)>,
    /// The digest of each row as this store last wrote or read it: a row whose bytes are the
    /// same is not written again.
    pub written: HashMap<&'static str, [u8; 32]>,
    /// The parts of the folds kept one row per part (ADR 0011) that this save writes.
    pub items: Vec<Items>,
}

/// The rows of one fold kept a row per part (the board's orders, talk's messages) that a save
/// writes.
#[derive(Debug)]
pub(super) struct Items {
    pub fold: &'static str,
    /// Every part the fold holds: a part the database holds and this fold does not is removed,
    /// and one whose row is the same is not written again. Else only the parts that changed
    /// since the save `since`.
    pub whole: bool,
    /// The save the fold was read as of (or last written by): the parts not in `rows` are as
    /// they were then.
    pub since: u64,
    /// Each part's key and bytes.
    pub rows: crate::channel::fold::state::lazy::Rows,
}

impl Batch {
    /// The bytes it holds (what a save policy paces itself by).
    pub fn len(&self) -> u64 {
        let records: usize = self.records.iter().map(|(_, _, bytes)| bytes.len()).sum();
        let rows: usize = self.rows.iter().map(|(_, bytes, _)| bytes.len()).sum();
        let items: usize = self
            .items
            .iter()
            .flat_map(|items| &items.rows)
            .map(|(_, bytes)| bytes.len())
            .sum();
        (records + rows + items) as u64
    }
}

/// What a written batch leaves for the store to remember.
#[derive(Debug)]
pub(super) struct Written {
    /// The digest of every row of the batch, written or found unchanged.
    pub digests: Vec<(&'static str, [u8; 32])>,
    /// The bytes written.
    pub bytes: u64,
    /// The save's number: the store's folds are as of it now.
    pub save: u64,
    /// Another process wrote a fold's parts since this store read them, so this save's parts
    /// (only what changed since then) would have been laid over another state's: only the
    /// orders' records were written (they are kept by digest, whoever names them), and the next
    /// save writes every part whole.
    pub conflicted: bool,
}

/// Writes `batch` in one transaction of `db`.
pub(super) fn write(db: &mut db::Db, batch: &Batch) -> Result<Written, String> {
    let mut save = db.begin(batch.replace)?;
    // Checked in the transaction that writes: another process may have saved since the batch
    // was made.
    let mut conflicted = false;
    for items in batch.items.iter().filter(|items| !items.whole) {
        conflicted |= save.items_saved(items.fold)? > items.since;
    }
    for (id, digest, bytes) in &batch.records {
        save.record(id, digest, bytes)?;
    }
    if conflicted {
        let number = save.number();
        let bytes = save.commit()?;
        return Ok(Written {
            digests: Vec::new(),
            bytes,
            save: number,
            conflicted: true,
        });
    }
    save.meta(&batch.genesis, &batch.channel, batch.generation)?;
    for items in &batch.items {
        write_items(&mut save, items)?;
    }
    let mut digests = Vec::with_capacity(batch.rows.len());
    for (name, bytes, forced) in &batch.rows {
        let digest = db::digest(bytes);
        digests.push((*name, digest));
        if !batch.replace && !forced && batch.written.get(name) == Some(&digest) {
            continue;
        }
        save.section(name, &digest, bytes)?;
    }
    let number = save.number();
    let bytes = save.commit()?;
    Ok(Written {
        digests,
        bytes,
        save: number,
        conflicted: false,
    })
}

/// Writes one fold's parts: those that changed, or (`whole`) every part whose row differs and
/// the removal of every part the fold no longer holds.
fn write_items(save: &mut db::Save<'_>, items: &Items) -> Result<(), String> {
    if items.whole {
        let mut live = save.live_items(items.fold)?;
        for (key, bytes) in &items.rows {
            let same = live
                .remove(key)
                .is_some_and(|digest| digest[..] == db::digest(bytes)[..]);
            if !same {
                save.item(items.fold, key, Some(bytes))?;
            }
        }
        for key in live.keys() {
            save.item(items.fold, key, None)?;
        }
    } else {
        for (key, bytes) in &items.rows {
            save.item(items.fold, key, Some(bytes))?;
        }
    }
    save.items_written(items.fold)
}

/// The connection back (none if it was lost with its thread) and what the write did.
pub(super) type Outcome = (Option<db::Db>, Result<Written, String>);

/// A batch being written on its own thread, with the connection it writes through.
#[derive(Debug, Default)]
pub(super) struct Pending {
    writing: Option<std::thread::JoinHandle<Outcome>>,
    /// The outcome of a batch that never reached a thread.
    unstarted: Option<Outcome>,
}

impl Pending {
    /// Starts writing `batch` through `db` on a thread of its own.
    pub fn start(&mut self, mut db: db::Db, batch: Batch) {
        let spawned = std::thread::Builder::new()
            .name("kept-save".into())
            .spawn(move || {
                let written = write(&mut db, &batch);
                (Some(db), written)
            });
        match spawned {
            Ok(handle) => self.writing = Some(handle),
            // The batch and the connection went with the closure: the caller rebuilds.
            Err(why) => {
                self.unstarted = Some((None, Err(format!("no thread to write it on: {why}"))));
            }
        }
    }

    /// Waits for the batch being written, if any: its connection and what it wrote.
    pub fn settle(&mut self) -> Option<Outcome> {
        if let Some(outcome) = self.unstarted.take() {
            return Some(outcome);
        }
        let handle = self.writing.take()?;
        Some(
            handle
                .join()
                .unwrap_or_else(|_| (None, Err("its writer stopped".to_owned()))),
        )
    }
}

impl Drop for Pending {
    /// A process that ends waits for its save: a save that was started is finished (and is
    /// whole or not there at all, as every save).
    fn drop(&mut self) {
        if let Some(handle) = self.writing.take() {
            let _ = handle.join();
        }
    }
}

//! Listing the channel folder: which files are logs, and which are reported and skipped.
//!
//! A log is `logs/<author>/<key-hex>.jsonl` with a canonical (lower-case) author name and a
//! valid key. Everything else under the channel folder that the format does not name is a
//! conflict copy, a temporary file or an unknown file, reported once and never read; once a
//! listing no longer finds it, it is cleared.

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::folder::{ChannelFolder, Kind};
use super::problem::{Cleared, IntegrityProblem, ProblemKind};
use super::watch::Watch;
use crate::channel::log::keys::PublicKey;
use crate::channel::log::names::AgentName;
use crate::channel::log::stamp::FileStamp;
use crate::channel::log::store::{BLOBS_DIR, GENESIS_FILE, LOG_EXTENSION, LOGS_DIR, TEMP_PREFIX};

/// Names at the top of the channel folder that belong to the format or to the sync tool.
const KNOWN_TOP_LEVEL: &[&str] = &[
    ".git",
    ".gitattributes",
    ".gitignore",
    ".stfolder",
    ".stignore",
    ".stversions",
    BLOBS_DIR,
    GENESIS_FILE,
    LOGS_DIR,
];

/// What a listing found besides the logs (which [`Folders::logs`] gives): files to report, and
/// what an earlier listing reported that this one no longer finds.
#[derive(Debug, Default)]
pub(super) struct Listing {
    pub skipped: Vec<IntegrityProblem>,
    pub cleared: Vec<Cleared>,
}

impl Listing {
    /// Clears what the listings of author folders no longer there reported.
    fn clear_authors(&mut self, gone: BTreeMap<AgentName, (FileStamp, AuthorFolder)>) {
        for (_, (_, folder)) in gone {
            self.cleared.extend(
                folder
                    .skipped
                    .into_iter()
                    .map(|problem| Cleared::Listed(problem.path)),
            );
        }
    }
}

/// Classifies a name that is not what its folder expects.
fn skipped(rel_path: PathBuf, what: &str) -> IntegrityProblem {
    let name = rel_path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let (kind, detail) = if name.contains(".sync-conflict-") {
        (
            ProblemKind::ConflictCopy,
            "a Syncthing conflict copy; not read".to_owned(),
        )
    } else if name.starts_with(TEMP_PREFIX)
        || name.starts_with(".syncthing.")
        || name.starts_with(".tmp")
        || name.ends_with(".tmp")
    {
        (
            ProblemKind::TempFile,
            "a temporary file; not read".to_owned(),
        )
    } else {
        (ProblemKind::UnknownFile, format!("{what}; not read"))
    };
    IntegrityProblem {
        path: rel_path,
        line: None,
        kind,
        detail,
    }
}

fn unreadable(rel_path: PathBuf, error: &std::io::Error) -> IntegrityProblem {
    IntegrityProblem {
        path: rel_path,
        line: None,
        kind: ProblemKind::Unreadable,
        detail: error.to_string(),
    }
}

/// Sorted names of a folder's entries, with what each is.
type Names = Vec<(String, Kind)>;

/// The sorted entries of the folder at `dir`. A name removed or renamed away while the folder
/// is listed (a sync tool's temporary file renamed onto a log) is left out, not a failure of
/// the whole listing: a failed listing would report every log of the folder gone.
fn entries(dir: &Path) -> std::io::Result<Names> {
    let mut out = Vec::new();
    for item in fs::read_dir(dir)? {
        let item = item?;
        let kind = match item.file_type() {
            Ok(kind) => Kind::of(kind),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
            Err(e) => return Err(e),
        };
        out.push((item.file_name().to_string_lossy().into_owned(), kind));
    }
    out.sort();
    Ok(out)
}

/// The folders of the channel as last listed, with their stamps: a folder whose stamp did not
/// change is not listed (nor its names parsed) again. What a folder holds that is not a log is
/// reported when a listing first finds it (and kept in the problems then), never again while
/// it stays: a file the format does not name costs one report, not one at every open.
///
/// A stamp is kept only once it has settled ([`FileStamp::settled`]); until then the folder is
/// kept with [`FileStamp::NONE`], which no stamp equals, so the next look lists it again.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub(super) struct Folders {
    /// The channel folder: its stamp, taken before its names were last listed, and what that
    /// listing reported.
    top: Option<(FileStamp, Vec<IntegrityProblem>)>,
    logs: Option<(FileStamp, Vec<(String, Kind)>)>,
    /// By author folder name: what listing it found.
    authors: BTreeMap<AgentName, (FileStamp, AuthorFolder)>,
    /// Whether a look since the last [`Folders::take_settled`] could trust a stamp it could
    /// not before (so the state is worth writing: the next open need not list it again).
    #[serde(skip)]
    settled: bool,
}

/// The stamp to keep of a folder a look that began at `looked_from` stamped `stamp`: itself once
/// it has settled, else [`FileStamp::NONE`] (listed again by the next look).
fn kept_stamp(stamp: FileStamp, looked_from: std::time::SystemTime) -> FileStamp {
    if stamp.settled(looked_from) {
        stamp
    } else {
        FileStamp::NONE
    }
}

/// The entries of `logs/` for one look.
struct LogsEntries {
    stamp: Option<FileStamp>,
    names: Names,
    /// The entries of the listing before, when `logs/` was listed again.
    before: Option<Names>,
}

/// What one author's folder holds: its logs, by key (a log's file is named by its key, in
/// lower-case hex: nothing else is a log), and the files reported.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
struct AuthorFolder {
    logs: Vec<PublicKey>,
    skipped: Vec<IntegrityProblem>,
}

/// The stamp of the folder at `rel` under the channel, when it is one.
fn folder_stamp(folder: &ChannelFolder, rel: &Path) -> Option<FileStamp> {
    folder
        .look(rel)
        .ok()
        .filter(|looked| looked.kind == Kind::Folder)
        .and_then(|looked| looked.stamp)
}

impl Folders {
    /// The author folders the last listing found, by name.
    pub(super) fn author_names(&self) -> impl Iterator<Item = &str> {
        self.authors.keys().map(AgentName::as_str)
    }

    /// Every log the last [`list`] found, by author (sorted) then file name: author and key.
    pub(super) fn logs(&self) -> impl Iterator<Item = (&AgentName, &PublicKey)> {
        self.authors
            .iter()
            .flat_map(|(author, (_, folder))| folder.logs.iter().map(move |key| (author, key)))
    }

    /// The sorted entries of `logs/`, listed again only if it changed: taken out of the kept
    /// listing (put back by [`list`] once it has gone through them, never copied). When listed
    /// again, also the entries of the listing before (what it reported was reported then).
    /// `None` when `logs` is a link: never listed through.
    fn take_logs_entries(
        &mut self,
        folder: &ChannelFolder,
    ) -> std::io::Result<Option<LogsEntries>> {
        let looked = folder.look(Path::new(LOGS_DIR))?;
        if looked.kind == Kind::Link {
            return Ok(None);
        }
        let stamp = looked.stamp.filter(|_| looked.kind == Kind::Folder);
        match (stamp, self.logs.take()) {
            (Some(stamp), Some((kept, names))) if kept == stamp => Ok(Some(LogsEntries {
                stamp: Some(stamp),
                names,
                before: None,
            })),
            (_, kept) => {
                self.settled |= settles(
                    kept.as_ref().map(|(kept, _)| kept),
                    stamp,
                    folder.looked_from(),
                );
                let names = entries(&folder.join(Path::new(LOGS_DIR)))?;
                let before = kept.map(|(_, names)| names).unwrap_or_default();
                Ok(Some(LogsEntries {
                    stamp,
                    names,
                    before: Some(before),
                }))
            }
        }
    }

    /// Whether a look since the last call could trust a folder's stamp it could not before.
    pub(super) fn take_settled(&mut self) -> bool {
        std::mem::take(&mut self.settled)
    }
}

/// Lists one author's folder (`rel_author`, under `dir`).
fn list_author(
    folder: &ChannelFolder,
    rel_author: &Path,
    key_of: &mut dyn FnMut(&str) -> Option<PublicKey>,
) -> AuthorFolder {
    let mut listed = AuthorFolder {
        logs: Vec::new(),
        skipped: Vec::new(),
    };
    let files = match entries(&folder.join(rel_author)) {
        Ok(files) => files,
        Err(e) => {
            listed.skipped.push(unreadable(rel_author.to_owned(), &e));
            return listed;
        }
    };
    for (file_name, kind) in files {
        match (log_key(&file_name, key_of), kind) {
            (Some(key), Kind::File) => listed.logs.push(key),
            (_, Kind::Link) => listed
                .skipped
                .push(link(rel_author.join(&file_name), "a log")),
            _ => listed.skipped.push(skipped(
                rel_author.join(&file_name),
                "not a regular log file named by its key",
            )),
        }
    }
    listed
}

/// Parses `<key-hex>.jsonl`, decoding the key with `key_of`.
fn log_key(
    file_name: &str,
    key_of: &mut dyn FnMut(&str) -> Option<PublicKey>,
) -> Option<PublicKey> {
    let hex = file_name.strip_suffix(LOG_EXTENSION)?.strip_suffix('.')?;
    key_of(hex)
}

fn link(rel_path: PathBuf, what: &str) -> IntegrityProblem {
    IntegrityProblem {
        path: rel_path,
        line: None,
        kind: ProblemKind::Link,
        detail: format!("a symbolic link in place of {what}; never followed"),
    }
}

/// Lists the channel folder `dir` into `folders` (whose [`Folders::logs`] then gives the logs)
/// and returns what to report: what this listing found that the last listing of the same
/// folder did not. `key_of` decodes the hex key of a log's file name (the reader answers known
/// keys without decoding them again: a decode is a point decompression).
pub(super) fn list(
    folder: &ChannelFolder,
    folders: &mut Folders,
    key_of: &mut dyn FnMut(&str) -> Option<PublicKey>,
    watch: &mut Watch,
) -> Listing {
    let dir = folder.path();
    let looked_from = folder.looked_from();
    let mut listing = Listing::default();
    // Until `logs/` is listed, no log is known to be there.
    let mut authors_before = std::mem::take(&mut folders.authors);
    // Stamped before it is listed: a name added after this changes the stamp the next look
    // compares. Unchanged, its names are those listed then (`logs/` among them, and not a link:
    // putting one in its place changes the folder), and were reported then.
    let top = folder_stamp(folder, Path::new("."));
    let top_reported = match (top, folders.top.take()) {
        (Some(stamp), Some((kept, reported))) if kept == stamp => reported,
        (_, kept) => {
            folders.settled |= settles(kept.as_ref().map(|(kept, _)| kept), top, looked_from);
            let (found, logs_linked) = list_top(dir);
            let before = kept.map(|(_, reported)| reported).unwrap_or_default();
            report_new(&mut listing, &found, &before);
            if logs_linked {
                // Listed again every time: nothing under it is read.
                listing.clear_authors(authors_before);
                return listing;
            }
            found
        }
    };
    folders.top = top.map(|stamp| (kept_stamp(stamp, looked_from), top_reported));
    watch.follow_logs(dir);
    let LogsEntries {
        stamp: logs_stamp,
        names: authors,
        before: logs_before,
    } = match folders.take_logs_entries(folder) {
        Ok(Some(entries)) => entries,
        Ok(None) => {
            listing
                .skipped
                .push(link(PathBuf::from(LOGS_DIR), "the logs folder"));
            listing.clear_authors(authors_before);
            return listing;
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            listing.clear_authors(authors_before);
            return listing;
        }
        Err(e) => {
            listing
                .skipped
                .push(unreadable(PathBuf::from(LOGS_DIR), &e));
            listing.clear_authors(authors_before);
            return listing;
        }
    };
    // What `logs/` held that was reported and is gone (or changed kind) is cleared.
    if let Some(logs_before) = &logs_before {
        for entry in logs_before {
            if reported_in_logs(entry) && authors.binary_search(entry).is_err() {
                listing
                    .cleared
                    .push(Cleared::Listed(Path::new(LOGS_DIR).join(&entry.0)));
            }
        }
    }
    // An entry of `logs/` that is not an author's folder is reported by the listing that
    // first finds it.
    let new_in_logs = |entry: &(String, Kind)| {
        logs_before
            .as_ref()
            .is_some_and(|before| before.binary_search(entry).is_err())
    };
    let mut rel_author = PathBuf::from(LOGS_DIR);
    for entry in &authors {
        let (author_name, kind) = entry;
        rel_author.push(author_name);
        if *kind == Kind::Link {
            if new_in_logs(entry) {
                listing
                    .skipped
                    .push(link(rel_author.clone(), "an author's folder"));
            }
            rel_author.pop();
            continue;
        }
        let kept = authors_before.remove_entry(author_name.as_str());
        // A name kept from an earlier listing was parsed then.
        let author = match (&kept, kind) {
            (Some((author, _)), Kind::Folder) => Some(author.clone()),
            _ => AgentName::parse_any(author_name)
                .ok()
                .filter(|a| a.as_str() == author_name),
        };
        let (Some(author), Kind::Folder) = (author, kind) else {
            if new_in_logs(entry) {
                listing.skipped.push(skipped(
                    rel_author.clone(),
                    "not a folder named by an author",
                ));
            }
            rel_author.pop();
            continue;
        };
        // Watched before it is looked at: what changes after this is told by the next poll.
        watch.follow(dir, author_name);
        let stamp = folder_stamp(folder, &rel_author);
        let author_folder = match (stamp, kept) {
            (Some(stamp), Some((_, (kept, listed)))) if kept == stamp => listed,
            (_, kept) => {
                let kept = kept.map(|(_, kept)| kept);
                folders.settled |= settles(kept.as_ref().map(|(kept, _)| kept), stamp, looked_from);
                let listed = list_author(folder, &rel_author, key_of);
                let before = kept.as_ref().map_or(&[][..], |(_, kept)| &kept.skipped[..]);
                report_new(&mut listing, &listed.skipped, before);
                listed
            }
        };
        // A folder without a stamp (a platform that tells none) is listed again every time.
        let stamp = stamp.map_or(FileStamp::NONE, |stamp| kept_stamp(stamp, looked_from));
        folders.authors.insert(author, (stamp, author_folder));
        rel_author.pop();
    }
    listing.clear_authors(authors_before);
    folders.logs = logs_stamp.map(|stamp| (kept_stamp(stamp, looked_from), authors));
    listing
}

/// Whether a listing of `logs/` reports this entry: anything but a folder named by an author.
fn reported_in_logs((name, kind): &(String, Kind)) -> bool {
    *kind != Kind::Folder
        || AgentName::parse_any(name)
            .ok()
            .is_none_or(|author| author.as_str() != name)
}

/// What the channel folder holds that is not part of the format, to report; and whether
/// `logs` is a link (then nothing under it is read).
fn list_top(dir: &Path) -> (Vec<IntegrityProblem>, bool) {
    let mut found = Vec::new();
    let top = match entries(dir) {
        Ok(top) => top,
        Err(e) => return (vec![unreadable(PathBuf::new(), &e)], false),
    };
    for (name, kind) in top {
        if !KNOWN_TOP_LEVEL.contains(&name.as_str()) {
            found.push(skipped(
                PathBuf::from(&name),
                "not part of the channel format",
            ));
        } else if kind == Kind::Link && (name == LOGS_DIR || name == BLOBS_DIR) {
            // A link here would make readers and writers work outside the channel.
            found.push(link(PathBuf::from(&name), &format!("the {name} folder")));
            if name == LOGS_DIR {
                return (found, true);
            }
        }
    }
    (found, false)
}

/// Reports what a folder listed again holds (`found`) that its last listing (`before`) did
/// not, and clears what its last listing reported that this one does not find (gone, or at
/// its path now something else, reported anew). Looked up by hash: a folder may hold as many
/// files as anyone cares to write.
fn report_new(listing: &mut Listing, found: &[IntegrityProblem], before: &[IntegrityProblem]) {
    use std::collections::HashSet;
    let found_set: HashSet<&IntegrityProblem> = found.iter().collect();
    listing.cleared.extend(
        before
            .iter()
            .filter(|problem| !found_set.contains(problem))
            .map(|problem| Cleared::Listed(problem.path.clone())),
    );
    let before: HashSet<&IntegrityProblem> = before.iter().collect();
    listing.skipped.extend(
        found
            .iter()
            .filter(|problem| !before.contains(problem))
            .cloned(),
    );
}

/// Whether a look that stamps a folder `now`, which the last look kept unstamped (`kept`
/// is [`FileStamp::NONE`]: it had just changed), can keep its stamp this time.
fn settles(
    kept: Option<&FileStamp>,
    now: Option<FileStamp>,
    looked_from: std::time::SystemTime,
) -> bool {
    kept == Some(&FileStamp::NONE) && now.is_some_and(|stamp| stamp.settled(looked_from))
}

/// Lists again only the author folders in `authors` (a watch said their files changed; the
/// channel's top folder and `logs/` did not), updating `folders`, and returns what to report.
pub(super) fn relist(
    folder: &ChannelFolder,
    folders: &mut Folders,
    authors: &std::collections::BTreeSet<String>,
    key_of: &mut dyn FnMut(&str) -> Option<PublicKey>,
) -> Listing {
    let mut listing = Listing::default();
    for author_name in authors {
        let Some((author, _)) = folders.authors.get_key_value(author_name.as_str()) else {
            // Not a folder this reader knows: a full look finds it.
            continue;
        };
        let author = author.clone();
        let rel_author = Path::new(LOGS_DIR).join(author_name);
        let Some(looked) = folder
            .look(&rel_author)
            .ok()
            .filter(|looked| looked.kind == Kind::Folder)
        else {
            if let Some(gone) = folders.authors.remove_entry(author_name.as_str()) {
                listing.clear_authors(BTreeMap::from([gone]));
            }
            continue;
        };
        let stamp = looked.stamp.map_or(FileStamp::NONE, |stamp| {
            kept_stamp(stamp, folder.looked_from())
        });
        let author_folder = list_author(folder, &rel_author, key_of);
        let before = folders
            .authors
            .get(author_name.as_str())
            .map_or(&[][..], |(_, before)| &before.skipped[..]);
        report_new(&mut listing, &author_folder.skipped, before);
        folders.authors.insert(author, (stamp, author_folder));
    }
    listing
}

#[cfg(test)]
mod tests {
    use std::time::{Duration, SystemTime};

    use super::*;
    use crate::channel::log::keys::SecretKey;

    /// A channel folder holding `logs/alice/` with one log and one file that is not a log.
    fn channel_with_alice() -> (tempfile::TempDir, PathBuf) {
        let dir = tempfile::tempdir().unwrap();
        let alice = dir.path().join("logs/alice");
        fs::create_dir_all(&alice).unwrap();
        let key = SecretKey::from_bytes(&[1; 32]).public_key();
        fs::write(alice.join(format!("{key}.jsonl")), b"").unwrap();
        fs::write(alice.join("notes.txt"), b"hi").unwrap();
        (dir, alice)
    }

    /// One full look at `dir`, begun `later` after now.
    fn look(dir: &Path, folders: &mut Folders, later: Duration) -> Vec<PathBuf> {
        let folder = ChannelFolder::open(dir).looked_from_at(SystemTime::now() + later);
        let listing = list(
            &folder,
            folders,
            &mut |hex| PublicKey::from_hex(hex).ok(),
            &mut Watch::default(),
        );
        listing.skipped.into_iter().map(|p| p.path).collect()
    }

    fn alice_stamp(folders: &Folders) -> FileStamp {
        folders.authors.values().next().expect("alice is listed").0
    }

    #[test]
    fn a_folder_listed_just_after_it_changed_is_listed_again_by_the_next_look_which_reports_only_what_is_new()
     {
        let (dir, alice) = channel_with_alice();
        let mut folders = Folders::default();
        assert_eq!(
            look(dir.path(), &mut folders, Duration::ZERO),
            vec![PathBuf::from("logs/alice/notes.txt")]
        );
        // Changed less than 2 s before the look: a change in the same tick of a coarse clock
        // would leave the stamp as it is, so it is not kept.
        assert_eq!(alice_stamp(&folders), FileStamp::NONE);
        assert!(!folders.take_settled());

        let second = SecretKey::from_bytes(&[2; 32]).public_key();
        fs::write(alice.join(format!("{second}.jsonl")), b"").unwrap();
        fs::write(alice.join("more.txt"), b"hi").unwrap();
        assert_eq!(
            look(dir.path(), &mut folders, Duration::ZERO),
            vec![PathBuf::from("logs/alice/more.txt")]
        );
        assert_eq!(folders.logs().count(), 2, "the new log is found");
    }

    #[test]
    fn a_folder_looked_at_two_seconds_after_its_last_change_keeps_its_stamp_and_says_so_once() {
        let (dir, _alice) = channel_with_alice();
        let mut folders = Folders::default();
        look(dir.path(), &mut folders, Duration::ZERO);
        assert_eq!(alice_stamp(&folders), FileStamp::NONE);

        assert_eq!(
            look(dir.path(), &mut folders, Duration::from_secs(3)),
            Vec::<PathBuf>::new()
        );
        let settled = alice_stamp(&folders);
        assert_ne!(settled, FileStamp::NONE);
        assert!(folders.take_settled(), "the state is worth keeping now");
        assert!(
            folders
                .top
                .as_ref()
                .is_some_and(|(stamp, _)| *stamp != FileStamp::NONE)
        );
        assert!(
            folders
                .logs
                .as_ref()
                .is_some_and(|(stamp, _)| *stamp != FileStamp::NONE)
        );

        assert_eq!(
            look(dir.path(), &mut folders, Duration::from_secs(3)),
            Vec::<PathBuf>::new()
        );
        assert_eq!(alice_stamp(&folders), settled);
        assert!(!folders.take_settled());
    }
}

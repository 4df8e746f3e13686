//! Listing the channel folder: which files are logs, and which are reported and skipped.
//!
//! A log is `logs/<author>/<key-hex>.jsonl` with a canonical (lower-case) author name and a
//! valid key. Everything else under the channel folder that the format does not name is a
//! conflict copy, a temporary file or an unknown file, reported once and never read.

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::folder::{ChannelFolder, Kind};
use super::problem::{IntegrityProblem, ProblemKind};
use super::watch::Watch;
use crate::channel::keys::PublicKey;
use crate::channel::names::AgentName;
use crate::channel::stamp::FileStamp;
use crate::channel::store::{BLOBS_DIR, GENESIS_FILE, LOG_EXTENSION, LOGS_DIR, TEMP_PREFIX};

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

/// What a listing found besides the logs (which [`Folders::logs`] gives): files to report.
#[derive(Debug, Default)]
pub(super) struct Listing {
    pub skipped: Vec<IntegrityProblem>,
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

/// The sorted entries of the folder at `dir`.
fn entries(dir: &Path) -> std::io::Result<Names> {
    let mut out = Vec::new();
    for item in fs::read_dir(dir)? {
        let item = item?;
        let kind = Kind::of(item.file_type()?);
        out.push((item.file_name().to_string_lossy().into_owned(), kind));
    }
    out.sort();
    Ok(out)
}

/// The folders of the channel as last listed, with their stamps: a folder whose stamp did not
/// change is not listed (nor its names parsed) again, and what it holds that is not a log was
/// reported when it was listed (and kept in the problems then), so it is not reported again:
/// a file the format does not name costs one report, not one at every open.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub(super) struct Folders {
    /// The channel folder's own stamp, taken before its names were last listed.
    top: Option<FileStamp>,
    logs: Option<(FileStamp, Vec<(String, Kind)>)>,
    /// By author folder name: what listing it found.
    authors: BTreeMap<AgentName, (FileStamp, AuthorFolder)>,
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
    /// listing (put back by [`list`] once it has gone through them, never copied).
    /// Also says whether they are the kept ones (so what they hold that is not an author's
    /// folder was reported when they were listed).
    fn take_logs_entries(
        &mut self,
        folder: &ChannelFolder,
    ) -> std::io::Result<(Option<FileStamp>, Names, bool)> {
        let stamp = folder_stamp(folder, Path::new(LOGS_DIR));
        if let (Some(stamp), Some((kept, _))) = (stamp, &self.logs)
            && *kept == stamp
        {
            let (_, names) = self.logs.take().expect("matched just above");
            return Ok((Some(stamp), names, true));
        }
        self.logs = None;
        let names = entries(&folder.join(Path::new(LOGS_DIR)))?;
        Ok((stamp, names, false))
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
/// and returns what to report. `key_of` decodes the hex key of a log's file name (the reader
/// answers known keys without decoding them again: a decode is a point decompression).
pub(super) fn list(
    folder: &ChannelFolder,
    folders: &mut Folders,
    key_of: &mut dyn FnMut(&str) -> Option<PublicKey>,
    watch: &mut Watch,
) -> Listing {
    let dir = folder.path();
    let mut listing = Listing::default();
    // Until `logs/` is listed, no log is known to be there.
    let mut before = std::mem::take(&mut folders.authors);
    // Stamped before it is listed: a name added after this changes the stamp the next look
    // compares. Unchanged, its names are those listed then (`logs/` among them, and not a link:
    // putting one in its place changes the folder), and were reported then.
    let top = folder_stamp(folder, Path::new("."));
    let top_listed = top.is_some() && top == folders.top;
    folders.top = None;
    match if top_listed {
        Ok(Vec::new())
    } else {
        entries(dir)
    } {
        Ok(top) => {
            for (name, kind) in top {
                if !KNOWN_TOP_LEVEL.contains(&name.as_str()) {
                    listing.skipped.push(skipped(
                        PathBuf::from(&name),
                        "not part of the channel format",
                    ));
                } else if kind == Kind::Link && (name == LOGS_DIR || name == BLOBS_DIR) {
                    // A link here would make readers and writers work outside the channel.
                    listing
                        .skipped
                        .push(link(PathBuf::from(&name), &format!("the {name} folder")));
                    if name == LOGS_DIR {
                        return listing;
                    }
                }
            }
        }
        Err(e) => listing.skipped.push(unreadable(PathBuf::new(), &e)),
    }
    folders.top = top;
    watch.follow_logs(dir);
    let (logs_stamp, authors, logs_listed) = match folders.take_logs_entries(folder) {
        Ok(authors) => authors,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return listing,
        Err(e) => {
            listing
                .skipped
                .push(unreadable(PathBuf::from(LOGS_DIR), &e));
            return listing;
        }
    };
    let mut rel_author = PathBuf::from(LOGS_DIR);
    for (author_name, kind) in &authors {
        rel_author.push(author_name);
        if *kind == Kind::Link {
            if !logs_listed {
                listing
                    .skipped
                    .push(link(rel_author.clone(), "an author's folder"));
            }
            rel_author.pop();
            continue;
        }
        let kept = before.remove_entry(author_name.as_str());
        // A name kept from an earlier listing was parsed then.
        let author = match (&kept, kind) {
            (Some((author, _)), Kind::Folder) => Some(author.clone()),
            _ => AgentName::parse_any(author_name)
                .ok()
                .filter(|a| a.as_str() == author_name),
        };
        let (Some(author), Kind::Folder) = (author, kind) else {
            if !logs_listed {
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
            (Some(stamp), Some((_, (kept_stamp, kept)))) if kept_stamp == stamp => kept,
            _ => {
                let listed = list_author(folder, &rel_author, key_of);
                listing.skipped.extend(listed.skipped.iter().cloned());
                listed
            }
        };
        // A folder without a stamp (a platform that tells none) is listed again every time.
        let stamp = stamp.unwrap_or(FileStamp::NONE);
        folders.authors.insert(author, (stamp, author_folder));
        rel_author.pop();
    }
    folders.logs = logs_stamp.map(|stamp| (stamp, authors));
    listing
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
            folders.authors.remove(author_name.as_str());
            continue;
        };
        let stamp = looked.stamp.unwrap_or(FileStamp::NONE);
        let author_folder = list_author(folder, &rel_author, key_of);
        listing
            .skipped
            .extend(author_folder.skipped.iter().cloned());
        folders.authors.insert(author, (stamp, author_folder));
    }
    listing
}

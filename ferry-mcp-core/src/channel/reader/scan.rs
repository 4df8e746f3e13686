//! Listing the channel folder: which files are logs, and which are reported and skipped.
//!
//! A log is `logs/<author>/<key-hex>.jsonl` with a canonical (lower-case) author name and a
//! valid key. Everything else under the channel folder that the format does not name is a
//! conflict copy, a temporary file or an unknown file, reported once and never read.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::problem::{IntegrityProblem, ProblemKind};
use super::stamp::FileStamp;
use crate::channel::keys::PublicKey;
use crate::channel::names::AgentName;
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

/// A log file found on disk.
#[derive(Debug)]
pub(super) struct FoundLog {
    pub author: AgentName,
    pub key: PublicKey,
    /// Relative to the channel folder.
    pub rel_path: PathBuf,
}

/// What a listing found: logs, and files to report.
#[derive(Debug, Default)]
pub(super) struct Listing {
    pub logs: Vec<FoundLog>,
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

/// What a folder entry is. Symbolic links are never followed: a link could make the reader
/// read outside the channel folder.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
enum Kind {
    Folder,
    File,
    Link,
    Other,
}

/// Sorted names of a folder's entries, with what each is.
fn entries(dir: &Path) -> std::io::Result<Vec<(String, Kind)>> {
    let mut out = Vec::new();
    for item in fs::read_dir(dir)? {
        let item = item?;
        let file_type = item.file_type()?;
        let kind = if file_type.is_dir() {
            Kind::Folder
        } else if file_type.is_file() {
            Kind::File
        } else if file_type.is_symlink() {
            Kind::Link
        } else {
            Kind::Other
        };
        out.push((item.file_name().to_string_lossy().into_owned(), kind));
    }
    out.sort();
    Ok(out)
}

/// The folders under `logs/` (and `logs/` itself) as last listed, by path relative to the
/// channel folder, with their stamps: a folder whose stamp did not change is not listed again.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub(super) struct Folders(BTreeMap<PathBuf, (FileStamp, Vec<(String, Kind)>)>);

impl Folders {
    /// The sorted entries of the folder `rel` under `dir`, listed again only if it changed.
    fn entries(&mut self, dir: &Path, rel: &Path) -> std::io::Result<Vec<(String, Kind)>> {
        let path = dir.join(rel);
        let stamp = fs::symlink_metadata(&path)
            .ok()
            .filter(|meta| meta.is_dir())
            .and_then(|meta| FileStamp::of(&meta));
        if let (Some(stamp), Some((kept, names))) = (stamp, self.0.get(rel))
            && *kept == stamp
        {
            return Ok(names.clone());
        }
        let names = entries(&path)?;
        match stamp {
            Some(stamp) => {
                self.0.insert(rel.to_owned(), (stamp, names.clone()));
            }
            None => {
                self.0.remove(rel);
            }
        }
        Ok(names)
    }

    /// Forgets the folders not listed in this poll (they are gone).
    fn keep_only(&mut self, listed: &BTreeSet<PathBuf>) {
        self.0.retain(|rel, _| listed.contains(rel));
    }
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

/// Lists the channel folder `dir`. `key_of` decodes the hex key of a log's file name (the
/// reader answers known keys without decoding them again: a decode is a point decompression).
pub(super) fn list(
    dir: &Path,
    folders: &mut Folders,
    key_of: &mut dyn FnMut(&str) -> Option<PublicKey>,
) -> Listing {
    let mut listing = Listing::default();
    match entries(dir) {
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
    let mut listed = BTreeSet::new();
    listed.insert(PathBuf::from(LOGS_DIR));
    let authors = match folders.entries(dir, Path::new(LOGS_DIR)) {
        Ok(authors) => authors,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return listing,
        Err(e) => {
            listing
                .skipped
                .push(unreadable(PathBuf::from(LOGS_DIR), &e));
            return listing;
        }
    };
    for (author_name, kind) in authors {
        let rel_author = Path::new(LOGS_DIR).join(&author_name);
        let author = AgentName::parse_any(&author_name)
            .ok()
            .filter(|a| a.as_str() == author_name);
        if kind == Kind::Link {
            listing.skipped.push(link(rel_author, "an author's folder"));
            continue;
        }
        let (Some(author), Kind::Folder) = (author, kind) else {
            listing
                .skipped
                .push(skipped(rel_author, "not a folder named by an author"));
            continue;
        };
        listed.insert(rel_author.clone());
        let files = match folders.entries(dir, &rel_author) {
            Ok(files) => files,
            Err(e) => {
                listing.skipped.push(unreadable(rel_author, &e));
                continue;
            }
        };
        for (file_name, kind) in files {
            let rel_path = rel_author.join(&file_name);
            match (log_key(&file_name, key_of), kind) {
                (Some(key), Kind::File) => listing.logs.push(FoundLog {
                    author: author.clone(),
                    key,
                    rel_path,
                }),
                (_, Kind::Link) => listing.skipped.push(link(rel_path, "a log")),
                _ => listing
                    .skipped
                    .push(skipped(rel_path, "not a regular log file named by its key")),
            }
        }
    }
    folders.keep_only(&listed);
    listing
}

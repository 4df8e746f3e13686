//! Checks of the source itself that a type cannot make: the folds are data (issue 16).
//!
//! `channel::state` (every domain fold) and `channel::identity` take verified entries and
//! return state; the same entries fold to the same state on every machine at every time. So
//! they never touch a file, the clock, the process or the network, and never name the kept
//! state (the session owns that store and hands the board its records through the
//! `state::Records` trait). A line of code (comments aside) that names one fails this test.

use std::path::{Path, PathBuf};

/// What a fold's code never names.
const FORBIDDEN: &[&str] = &[
    "std::fs",
    "std::io",
    "std::env",
    "std::net",
    "std::process",
    "std::thread",
    "SystemTime",
    "Instant",
    "getrandom",
    "rusqlite",
    "channel::kept",
    "kept::",
    "super::super::kept",
    "channel::session",
    "channel::home",
    "channel::store",
    "channel::reader::Reader",
    "File::",
];

/// The source files of the folds.
fn fold_sources() -> Vec<PathBuf> {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src/channel");
    let mut files: Vec<PathBuf> = std::fs::read_dir(src.join("state"))
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .filter(|path| path.extension().is_some_and(|ext| ext == "rs"))
        .collect();
    files.push(src.join("identity.rs"));
    files.sort();
    files
}

/// The code of a line: what comes before a `//` comment (a string holding `//` is cut short
/// too, which can only hide a name, never invent one).
fn code_of(line: &str) -> &str {
    line.split("//").next().unwrap_or("")
}

/// Every `(file, line number, name)` where a fold's code names something it must not.
fn offences(files: &[PathBuf]) -> Vec<(PathBuf, usize, &'static str)> {
    let mut found = Vec::new();
    for file in files {
        let text = std::fs::read_to_string(file).unwrap();
        for (number, line) in text.lines().enumerate() {
            let code = code_of(line);
            for name in FORBIDDEN {
                if code.contains(name) {
                    found.push((file.clone(), number + 1, *name));
                }
            }
        }
    }
    found
}

#[test]
fn the_folds_name_no_file_clock_process_or_kept_state() {
    let files = fold_sources();
    assert!(files.len() >= 8, "{files:?}");
    assert_eq!(offences(&files), vec![]);
}

#[test]
fn the_fold_check_finds_a_file_read_and_a_clock_read_and_passes_over_comments() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("fold.rs");
    std::fs::write(
        &path,
        "// std::fs in a comment says why, and is not code\nfn f() { let _ = std::fs::read(\"x\"); }\nfn g() { std::time::Instant::now(); } // SystemTime\n",
    )
    .unwrap();
    let found: Vec<(usize, &str)> = offences(&[path])
        .into_iter()
        .map(|(_, line, name)| (line, name))
        .collect();
    assert_eq!(found, vec![(2, "std::fs"), (3, "Instant")]);
}

//! Checks of the source itself that a type cannot make: the folds are data (issue 16).
//!
//! `channel::fold::state` (every domain fold) and `channel::fold::identity` take verified entries and
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
    "channel::machine::kept",
    "kept::",
    "super::super::kept",
    "channel::session",
    "channel::machine",
    "channel::ops",
    "channel::machine::home",
    "channel::log::store",
    "channel::log::reader::Reader",
    "File::",
];

/// The modules of `std` a fold never imports, for a grouped import (`use std::{fs, io};`) that
/// names none of [`FORBIDDEN`] whole.
const FORBIDDEN_IN_GROUPS: &[&str] = &["fs", "io", "env", "net", "process", "thread"];

/// Every `.rs` file under `dir`, sorted.
fn sources_under(dir: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    let mut folders = vec![dir.to_path_buf()];
    while let Some(folder) = folders.pop() {
        for entry in std::fs::read_dir(&folder).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                folders.push(path);
            } else if path.extension().is_some_and(|ext| ext == "rs") {
                files.push(path);
            }
        }
    }
    files.sort();
    files
}

/// The channel's folder in the source.
fn channel_source() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src/channel")
}

/// The source files of the folds: the whole fold layer.
fn fold_sources() -> Vec<PathBuf> {
    sources_under(&channel_source().join("fold"))
}

/// The code of a line: what comes before a `//` comment (a string holding `//` is cut short
/// too, which can only hide a name, never invent one).
fn code_of(line: &str) -> &str {
    line.split("//").next().unwrap_or("")
}

/// Every `(line number, module)` where a grouped import of `std` (on one line or several) names
/// a module of [`FORBIDDEN_IN_GROUPS`] first in one of its paths.
fn grouped_offences(code: &[&str]) -> Vec<(usize, &'static str)> {
    let mut found = Vec::new();
    for (start, line) in code.iter().enumerate() {
        let Some(at) = line.find("std::{") else {
            continue;
        };
        // The group, from its brace to the brace that closes it, across lines.
        let mut group = String::new();
        let mut depth = 0usize;
        'lines: for part in
            std::iter::once(&line[at + "std::".len()..]).chain(code[start + 1..].iter().copied())
        {
            for ch in part.chars() {
                match ch {
                    '{' => depth += 1,
                    '}' => {
                        depth -= 1;
                        if depth == 0 {
                            break 'lines;
                        }
                    }
                    _ => {}
                }
                group.push(if depth == 1 && ch != '{' { ch } else { ' ' });
            }
            group.push(' ');
        }
        for path in group.split(',') {
            let first = path.trim().split("::").next().unwrap_or("").trim();
            if let Some(module) = FORBIDDEN_IN_GROUPS.iter().find(|module| **module == first) {
                found.push((start + 1, *module));
            }
        }
    }
    found
}

/// Every `(file, line number, name)` where a fold's code names something it must not.
fn offences(files: &[PathBuf]) -> Vec<(PathBuf, usize, &'static str)> {
    let mut found = Vec::new();
    for file in files {
        let text = std::fs::read_to_string(file).unwrap();
        let code: Vec<&str> = text.lines().map(code_of).collect();
        for (number, line) in code.iter().enumerate() {
            for name in FORBIDDEN {
                if line.contains(name) {
                    found.push((file.clone(), number + 1, *name));
                }
            }
        }
        for (number, module) in grouped_offences(&code) {
            found.push((file.clone(), number, module));
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

#[test]
fn the_fold_check_finds_std_modules_named_in_a_grouped_import_on_one_line_or_several() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("fold.rs");
    std::fs::write(
        &path,
        "use std::{collections::BTreeMap, fs};\nuse std::{\n    fmt,\n    io::Write, // why\n};\nuse std::{sync::Arc, fmt::Debug};\n",
    )
    .unwrap();
    let found: Vec<(usize, &str)> = offences(&[path])
        .into_iter()
        .map(|(_, line, name)| (line, name))
        .collect();
    assert_eq!(found, vec![(1, "fs"), (2, "io")]);
}

/// The channel's layers from the bottom up, and the modules of `channel` above each (issue 16,
/// item 12): a layer's code never names a layer above it.
const LAYERS: &[(&str, &[&str])] = &[
    (
        "log",
        &[
            "channel::fold",
            "channel::machine",
            "channel::session",
            "channel::ops",
        ],
    ),
    (
        "fold",
        &["channel::machine", "channel::session", "channel::ops"],
    ),
    ("machine", &["channel::session", "channel::ops"]),
];

#[test]
fn each_channel_layer_names_only_the_layers_below_it() {
    let mut found = Vec::new();
    for (layer, above) in LAYERS {
        let files = sources_under(&channel_source().join(layer));
        assert!(!files.is_empty(), "the {layer} layer has no source");
        for file in files {
            let text = std::fs::read_to_string(&file).unwrap();
            for (number, line) in text.lines().map(code_of).enumerate() {
                for name in above.iter().copied().filter(|name| line.contains(name)) {
                    found.push((file.clone(), number + 1, name));
                }
                // A path that climbs out of the layer by `super::` is named absolutely instead.
                let inside = channel_source().join(layer);
                let depth = file.strip_prefix(&inside).unwrap().components().count()
                    - usize::from(file.ends_with("mod.rs"));
                if line.matches("super::").count() > depth {
                    found.push((file.clone(), number + 1, "super:: out of the layer"));
                }
            }
        }
    }
    assert_eq!(found, vec![]);
}

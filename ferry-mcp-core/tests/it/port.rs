//! The protocol, the registry and the tools' contract reach the channel through the port
//! (`ferry_mcp_core::port`), never through the store that implements it (issue 16, item 5):
//! checked in their source, since one `use` of the session would compile and couple them again.

use std::path::{Path, PathBuf};

/// What the layers above the port never name: the concrete store and its parts.
const STORE: &[&str] = &[
    "Session",
    "channel::session",
    "session::",
    "channel::machine::kept",
    "kept::",
    "channel::log::store",
    "channel::log::reader",
    "channel::machine::home",
    "rusqlite",
    "std::fs",
];

/// The source files of the protocol, the registry, the tool contract, the port and shaping.
fn upper_sources() -> Vec<PathBuf> {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = vec![
        src.join("port.rs"),
        src.join("tool.rs"),
        src.join("shape.rs"),
        src.join("registry.rs"),
    ];
    for dir in ["protocol", "registry"] {
        for entry in std::fs::read_dir(src.join(dir)).unwrap() {
            let path = entry.unwrap().path();
            if path.extension().is_some_and(|ext| ext == "rs") {
                files.push(path);
            }
        }
    }
    files.sort();
    files
}

/// Every `(file, line, name)` where code (comments aside) names the store.
fn store_names(files: &[PathBuf]) -> Vec<(PathBuf, usize, &'static str)> {
    let mut found = Vec::new();
    for file in files {
        let text = std::fs::read_to_string(file).unwrap();
        for (number, line) in text.lines().enumerate() {
            let code = line.split("//").next().unwrap_or("");
            for name in STORE {
                if code.contains(name) {
                    found.push((file.clone(), number + 1, *name));
                }
            }
        }
    }
    found
}

#[test]
fn the_protocol_registry_and_tool_contract_name_no_part_of_the_channel_store() {
    let files = upper_sources();
    assert!(files.len() >= 8, "{files:?}");
    assert_eq!(store_names(&files), vec![]);
}

#[test]
fn the_store_check_finds_a_session_named_in_code_and_passes_over_comments() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("tool.rs");
    std::fs::write(
        &path,
        "// a Session in a comment is fine\nuse crate::channel::session::Session;\nfn f(_: &crate::channel::machine::kept::Kept) {}\n",
    )
    .unwrap();
    let found: Vec<(usize, &str)> = store_names(&[path])
        .into_iter()
        .map(|(_, line, name)| (line, name))
        .collect();
    assert_eq!(
        found,
        vec![
            (2, "Session"),
            (2, "channel::session"),
            (2, "session::"),
            (3, "channel::machine::kept"),
            (3, "kept::")
        ]
    );
}

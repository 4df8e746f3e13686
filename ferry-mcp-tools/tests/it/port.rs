//! The tools reach the channel only through the port (`ferry_mcp_core::port`): a tool is a
//! facade over operations, so an embedder's channel serves it as well as ferry's store does.

use std::path::Path;

#[test]
fn no_tool_names_the_channel_store_only_the_port() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut found = Vec::new();
    let mut files = 0;
    for entry in std::fs::read_dir(&src).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_none_or(|ext| ext != "rs") {
            continue;
        }
        files += 1;
        let text = std::fs::read_to_string(&path).unwrap();
        for (number, line) in text.lines().enumerate() {
            let code = line.split("//").next().unwrap_or("");
            for name in [
                "Session",
                "channel::session",
                "channel::machine::kept",
                "channel::log::store",
            ] {
                if code.contains(name) {
                    found.push(format!("{}:{}: {name}", path.display(), number + 1));
                }
            }
        }
    }
    assert!(
        files >= 9,
        "only {files} source files found in {}",
        src.display()
    );
    assert_eq!(found, Vec::<String>::new());
}

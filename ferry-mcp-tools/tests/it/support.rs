//! One protocol server per agent over a temporary channel, and what the tests read out of
//! their answers.

use std::collections::BTreeMap;
use std::fs;
use std::path::Path;

use ferry_mcp_core::channel::session::{Actor, LazySession};
use ferry_mcp_core::protocol::{Server, ServerConfig};
use ferry_mcp_core::registry::Surface;
use ferry_mcp_testkit::session::Session;
use ferry_mcp_testkit::temp_channel::TempChannel;
use serde_json::{Value, json};

/// The guard's corpus of real-shaped (fake) secrets, `kind<TAB>text` per line.
const SECRETS: &str = include_str!("../../../ferry-mcp-core/tests/guard_corpus/secrets.txt");
/// The guard's corpus of code and diffs.
const CODE: &str = include_str!("../../../ferry-mcp-core/tests/guard_corpus/code.txt");

/// The first sample of `kind` in a corpus file (its escapes undone: `\n`, `\t`, `\\`).
fn sample(file: &str, kind: &str) -> String {
    let line = file
        .lines()
        .find_map(|line| line.strip_prefix(kind)?.strip_prefix('\t'))
        .unwrap_or_else(|| panic!("no {kind} sample in the corpus"));
    let mut out = String::new();
    let mut chars = line.chars();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        match chars.next() {
            Some('n') => out.push('\n'),
            Some('t') => out.push('\t'),
            Some('\\') => out.push('\\'),
            other => panic!("bad escape {other:?} in the corpus"),
        }
    }
    out
}

/// A GitHub token from the guard's corpus, alone on its line there.
pub fn github_token() -> String {
    let token = sample(SECRETS, "github_token");
    assert!(token.starts_with("ghp_") && !token.contains(' '), "{token}");
    token
}

/// A `diff --git` from the guard's corpus.
pub fn diff() -> String {
    let diff = sample(CODE, "diff");
    assert!(
        diff.starts_with("diff --git") && diff.contains("\n+"),
        "{diff}"
    );
    diff
}

/// Project `demo` with Members alice, bob and carol, and a Worker, wendy.
pub fn fleet() -> TempChannel {
    TempChannel::builder()
        .agent(
            "alice",
            ferry_mcp_core::channel::fold::levels::Level::Member,
        )
        .agent("bob", ferry_mcp_core::channel::fold::levels::Level::Member)
        .agent(
            "carol",
            ferry_mcp_core::channel::fold::levels::Level::Member,
        )
        .agent(
            "wendy",
            ferry_mcp_core::channel::fold::levels::Level::Worker,
        )
        .build()
        .unwrap()
}

/// A server over the `core` group for `actor`, reaching the channel as `ferry mcp serve` does
/// (a lazily opened session), initialized, its clock at the channel's.
pub fn serve(temp: &TempChannel, actor: Actor) -> Session {
    serve_groups(temp, actor, &[&ferry_mcp_tools::CORE])
}

/// A server over `groups` for `actor`, as [`serve`] makes one.
pub fn serve_groups(
    temp: &TempChannel,
    actor: Actor,
    groups: &[&'static ferry_mcp_core::registry::Group],
) -> Session {
    let surface = Surface::build(groups, false).unwrap();
    let config = ServerConfig {
        name: "ferry",
        version: "0.0.0-test",
        instructions: surface.instructions().to_owned(),
        project: temp.project().to_string(),
    };
    let lazy = LazySession::new(temp.home().clone(), temp.project().clone(), actor);
    let server = Server::new(config, surface).with_channel(Box::new(lazy));
    let mut session = Session::new(server);
    session.set_now(temp.now());
    session.initialize("2025-11-25");
    session
}

/// The server of agent `name`.
pub fn agent(temp: &TempChannel, name: &str) -> Session {
    serve(temp, Actor::Agent(TempChannel::agent(name)))
}

/// `ferry_talk` with `arguments`: the whole `tools/call` result.
pub fn talk(session: &mut Session, arguments: Value) -> Value {
    session.call("ferry_talk", arguments)
}

/// `ferry_talk` post; panics unless it succeeded. Returns the message's id.
pub fn post(session: &mut Session, to: &str, text: &str) -> String {
    let result = talk(session, json!({ "action": "post", "to": to, "text": text }));
    assert_ne!(result["isError"], true, "the post failed: {result}");
    result["structuredContent"]["id"]
        .as_str()
        .unwrap()
        .to_owned()
}

/// `ferry_talk` read: its structuredContent; panics unless it succeeded.
pub fn read(session: &mut Session) -> Value {
    let result = talk(session, json!({ "action": "read" }));
    assert_ne!(result["isError"], true, "the read failed: {result}");
    result["structuredContent"].clone()
}

/// The texts of the messages of a read.
pub fn texts(read: &Value) -> Vec<String> {
    read["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|message| message["text"].as_str().unwrap().to_owned())
        .collect()
}

/// The text of a tool error; panics unless the result is one.
pub fn error_text(result: &Value) -> String {
    assert_eq!(result["isError"], true, "not an error: {result}");
    result["content"][0]["text"].as_str().unwrap().to_owned()
}

/// Every file under `dir` with its bytes, by path relative to `dir`.
pub fn files(dir: &Path) -> BTreeMap<String, Vec<u8>> {
    fn walk(root: &Path, dir: &Path, into: &mut BTreeMap<String, Vec<u8>>) {
        for entry in fs::read_dir(dir).unwrap() {
            let entry = entry.unwrap();
            let path = entry.path();
            if entry.file_type().unwrap().is_dir() {
                walk(root, &path, into);
            } else {
                let relative = path.strip_prefix(root).unwrap().display().to_string();
                into.insert(relative, fs::read(&path).unwrap());
            }
        }
    }
    let mut all = BTreeMap::new();
    walk(dir, dir, &mut all);
    all
}

/// The size of the log of `name` in the channel folder.
pub fn log_len(temp: &TempChannel, name: &str) -> u64 {
    let view = temp.view();
    let agent = TempChannel::agent(name);
    let key = view.identity().holder(&agent).expect("a seated agent");
    fs::metadata(view.channel().log_path(&agent, key))
        .unwrap()
        .len()
}

/// Writes `text` to stderr and to `name` under Cargo's temporary folder for integration tests.
pub fn report(name: &str, text: &str) {
    eprintln!("{text}");
    let path = Path::new(env!("CARGO_TARGET_TMPDIR")).join(name);
    fs::write(&path, text).unwrap();
    eprintln!("(written to {})", path.display());
}

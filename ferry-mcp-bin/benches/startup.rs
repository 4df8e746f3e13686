//! Start-up of `ferry mcp serve`: spawn to the `tools/list` reply, with the handshake written
//! at once and stdin closed (the server answers everything read before it exits).
//!
//! Agents drop a server that is not ready in about 1 s (Codex) or 2 s (Claude Code), so this
//! is the number that decides whether the tools exist at all. `.ci/measure-startup` reports
//! the same figure for the release binary without Rust; this bench tracks it over time.

use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};

use criterion::{Criterion, criterion_group, criterion_main};

const HANDSHAKE: &str = concat!(
    r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"bench","version":"0"}}}"#,
    "\n",
    r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
    "\n",
    r#"{"jsonrpc":"2.0","id":2,"method":"tools/list"}"#,
    "\n",
);

/// Spawns the server with `tools`, runs the handshake and returns the tools/list reply.
fn spawn_to_tools_list(tools: &str) -> String {
    let mut child = Command::new(env!("CARGO_BIN_EXE_ferry"))
        .args([
            "mcp",
            "serve",
            "--as",
            "bench",
            "--project",
            "bench",
            "--tools",
            tools,
        ])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("the ferry binary starts");
    let mut stdin = child.stdin.take().expect("piped stdin");
    stdin
        .write_all(HANDSHAKE.as_bytes())
        .expect("the handshake is written");
    drop(stdin);
    let reply = BufReader::new(child.stdout.take().expect("piped stdout"))
        .lines()
        .map(|line| line.expect("stdout is UTF-8 lines"))
        .find(|line| line.starts_with(r#"{"jsonrpc":"2.0","id":2,"#))
        .expect("tools/list is answered");
    child.wait().expect("the server exits");
    reply
}

fn startup(c: &mut Criterion) {
    let mut group = c.benchmark_group("startup");
    group.sample_size(20);
    for tools in ["core", "fixture"] {
        assert!(spawn_to_tools_list(tools).contains(r#""tools":["#));
        group.bench_function(format!("spawn_to_tools_list/{tools}"), |b| {
            b.iter(|| spawn_to_tools_list(tools));
        });
    }
    group.finish();
}

criterion_group!(benches, startup);
criterion_main!(benches);

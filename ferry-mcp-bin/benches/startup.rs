//! Start-up of `ferry mcp serve`: spawn to the `tools/list` reply, with the handshake written
//! at once.
//!
//! Agents drop a server that is not ready in about 1 s (Codex) or 2 s (Claude Code), so this
//! is the number that decides whether the tools exist at all. `.ci/measure-startup` reports
//! the same figure for the release binary without Rust; this bench tracks it over time.
//!
//! - `spawn_to_tools_list/{core,fixture}`: an unregistered project (the surface alone).
//! - `registered_tools_list/<size>`: a registered channel built in bulk
//!   (`ferry_mcp_testkit::bulk`) whose verified state this machine kept, at 0, 1,000,
//!   100,000 and 1,000,000 entries and with 10,000 seated names (1,000 entries plus 10,000
//!   names). The server opens the channel in the background, so `tools/list` should not
//!   wait for it: target within 1.2x of the empty channel at every size.
//! - `registered_first_list_call/<size>`: spawn to the reply of a first `tools/call` of
//!   `ferry_orders {"action":"list"}`, sent once `tools/list` is answered (as a client
//!   does); this one waits for the channel.
//!
//! Printed to stderr after the criterion runs: the medians, each relative to the empty
//! channel, and the peak RSS (`VmHWM`, Linux) of the server on every channel after it
//! answered that list call (target under 64 MB at 1,000,000 entries). Two million-entry
//! channels: `1M_10k_orders` (the large board's 10,000 orders under ten times its history)
//! and `1M` (an order per ten entries: 100,000 orders, a ten times larger state). The server is timed to
//! its reply, then killed. Under `cargo test --benches` (no `--bench` flag) the sizes are
//! 0, 100 and 1,000 entries and 1,000 names, each run once. `FERRY_BENCH_NO_1M=1` leaves the
//! 1,000,000 entries out of a bench run (building and warming it takes a few minutes).

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::time::{Duration, Instant};

use criterion::Criterion;
use ferry_mcp_testkit::bulk::{self, BulkChannel};

const HANDSHAKE: &str = concat!(
    r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"bench","version":"0"}}}"#,
    "\n",
    r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
    "\n",
    r#"{"jsonrpc":"2.0","id":2,"method":"tools/list"}"#,
    "\n",
);

const LIST_CALL: &str = concat!(
    r#"{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"ferry_orders","arguments":{"action":"list"}}}"#,
    "\n"
);

/// What one run of the server measured.
struct Run {
    tools_list: Duration,
    list_call: Option<Duration>,
    /// Peak resident set of the server, in KiB, after its last reply.
    peak_rss_kib: Option<u64>,
}

fn spawn(args: &[&str], home: Option<&std::path::Path>) -> (Child, ChildStdin) {
    let mut command = Command::new(env!("CARGO_BIN_EXE_ferry"));
    command
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null());
    if let Some(home) = home {
        command.env("FERRY_HOME", home);
    }
    let mut child = command.spawn().expect("the ferry binary starts");
    let stdin = child.stdin.take().expect("piped stdin");
    (child, stdin)
}

/// `VmHWM` of a running process, in KiB (Linux only).
fn peak_rss_kib(pid: u32) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let line = status.lines().find(|line| line.starts_with("VmHWM:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

/// Spawns the server with `args`, sends the handshake (and, with `call`, the list call once
/// `tools/list` is answered), and times spawn to each reply. The exit is not timed.
fn serve_once(args: &[&str], home: Option<&std::path::Path>, call: bool, rss: bool) -> Run {
    let started = Instant::now();
    let (mut child, mut stdin) = spawn(args, home);
    stdin
        .write_all(HANDSHAKE.as_bytes())
        .expect("the handshake is written");
    let mut stdin = Some(stdin);
    if !call {
        // The server answers everything it has read before it exits.
        drop(stdin.take());
    }
    let mut lines = BufReader::new(child.stdout.take().expect("piped stdout")).lines();
    let mut tools_list = None;
    let mut list_call = None;
    for line in lines.by_ref() {
        let line = line.expect("stdout is UTF-8 lines");
        if line.starts_with(r#"{"jsonrpc":"2.0","id":2,"#) {
            tools_list = Some(started.elapsed());
            assert!(line.contains(r#""tools":["#), "tools/list failed: {line}");
            if !call {
                break;
            }
            let input = stdin.as_mut().expect("stdin kept for the call");
            input
                .write_all(LIST_CALL.as_bytes())
                .expect("the call is written");
            input.flush().expect("the call is sent");
        } else if line.starts_with(r#"{"jsonrpc":"2.0","id":3,"#) {
            list_call = Some(started.elapsed());
            assert!(
                line.contains(r#""orders""#) && !line.contains(r#""isError":true"#),
                "the list call failed: {line}"
            );
            break;
        }
    }
    let peak_rss_kib = if rss { peak_rss_kib(child.id()) } else { None };
    // Killed, not asked to stop: a server asked to stop first finishes opening the channel in
    // the background, and criterion plans its iterations by the time reported here.
    drop(stdin);
    let _ = child.kill();
    drop(lines);
    child.wait().expect("the server is reaped");
    Run {
        tools_list: tools_list.expect("tools/list is answered"),
        list_call,
        peak_rss_kib,
    }
}

struct Size {
    label: String,
    bulk: BulkChannel,
}

impl Size {
    fn build(label: &str, entries: u64, names: u64) -> Self {
        Self::build_with(label, bulk::builder().entries(entries).names(names))
    }

    fn build_with(label: &str, builder: bulk::BulkBuilder) -> Self {
        let started = Instant::now();
        let bulk = builder.build();
        // This machine's verified state, as a server that ran before left it.
        drop(bulk.warm());
        eprintln!(
            "startup bench: {label}: {} entries built and warmed in {:.1?}",
            bulk.entries(),
            started.elapsed()
        );
        Self {
            label: label.to_owned(),
            bulk,
        }
    }

    fn serve(&self, call: bool, rss: bool) -> Run {
        let project = self.bulk.project().as_str();
        serve_once(
            &["mcp", "serve", "--project", project],
            Some(self.bulk.home_dir()),
            call,
            rss,
        )
    }
}

fn median(mut times: Vec<Duration>) -> Duration {
    times.sort();
    times[times.len() / 2]
}

fn main() {
    let bench_mode = std::env::args().any(|a| a == "--bench");
    let huge = bench_mode && std::env::var_os("FERRY_BENCH_NO_1M").is_none();
    let mut sizes = if bench_mode {
        vec![
            Size::build("0", 0, 0),
            Size::build("1k", 1_000, 0),
            Size::build("100k", 100_000, 0),
            Size::build("1k+10k_names", 1_000, 10_000),
        ]
    } else {
        vec![
            Size::build("0", 0, 0),
            Size::build("100", 100, 0),
            Size::build("1k", 1_000, 0),
            Size::build("1k+1k_names", 1_000, 1_000),
        ]
    };
    if huge {
        // A million entries of work on the large board (10,000 orders): ten times the history
        // of `100k`, the same folded state. Then a million with an order per ten entries
        // (100,000 orders): the state ten times larger too.
        sizes.push(Size::build_with(
            "1M_10k_orders",
            bulk::builder().entries(1_000_000).orders(10_000),
        ));
        sizes.push(Size::build("1M", 1_000_000, 0));
    }
    // Warmed again once the folders' stamps can be kept (2 s after their last change): as a
    // machine leaves a channel that has been quiet for a moment.
    std::thread::sleep(Duration::from_millis(2_100));
    for size in &sizes {
        drop(size.bulk.warm());
    }

    let mut criterion = Criterion::default().configure_from_args();
    {
        let mut group = criterion.benchmark_group("startup");
        group.sample_size(20);
        for tools in ["core", "fixture"] {
            let args = [
                "mcp",
                "serve",
                "--as",
                "bench",
                "--project",
                "bench",
                "--tools",
                tools,
            ];
            group.bench_function(format!("spawn_to_tools_list/{tools}"), |b| {
                b.iter_custom(|iters| {
                    (0..iters)
                        .map(|_| serve_once(&args, None, false, false).tools_list)
                        .sum()
                });
            });
        }
        for size in &sizes {
            group.bench_function(format!("registered_tools_list/{}", size.label), |b| {
                b.iter_custom(|iters| {
                    (0..iters)
                        .map(|_| size.serve(false, false).tools_list)
                        .sum()
                });
            });
            group.bench_function(format!("registered_first_list_call/{}", size.label), |b| {
                b.iter_custom(|iters| {
                    (0..iters)
                        .map(|_| size.serve(true, false).list_call.expect("answered"))
                        .sum()
                });
            });
        }
        group.finish();
    }
    criterion.final_summary();

    let rounds = if bench_mode { 21 } else { 1 };
    let mut rows = Vec::new();
    for size in &sizes {
        let listed = median(
            (0..rounds)
                .map(|_| size.serve(false, false).tools_list)
                .collect(),
        );
        let called = median(
            (0..rounds)
                .map(|_| size.serve(true, false).list_call.expect("answered"))
                .collect(),
        );
        rows.push((size.label.clone(), size.bulk.entries(), listed, called));
    }
    let (_, _, empty_listed, empty_called) = rows[0].clone();
    for (label, entries, listed, called) in &rows {
        let ratio = listed.as_secs_f64() / empty_listed.as_secs_f64();
        eprintln!(
            "startup {label} ({entries} entries): tools/list {listed:.2?} ({ratio:.2}x empty, target <= 1.2x: {}); first ferry_orders list {called:.2?} ({:.2}x empty)",
            if ratio <= 1.2 { "yes" } else { "NO" },
            called.as_secs_f64() / empty_called.as_secs_f64()
        );
    }
    // Memory follows the folded state, not the history: the peak of every size.
    for size in &sizes {
        match size.serve(true, true).peak_rss_kib {
            Some(kib) => eprintln!(
                "startup {} ({} entries, {} orders): peak RSS after the first list call {:.1} MB{}",
                size.label,
                size.bulk.entries(),
                size.bulk.orders(),
                kib as f64 / 1024.0,
                if size.bulk.entries() >= 1_000_000 {
                    format!(
                        " (target < 64 MB at 1,000,000 entries: {})",
                        if kib < 64 * 1024 { "yes" } else { "NO" }
                    )
                } else {
                    String::new()
                }
            ),
            None => eprintln!("startup: peak RSS not measurable here (no /proc)"),
        }
    }
}

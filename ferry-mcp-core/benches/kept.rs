//! The machine's kept state (ADR 0011), measured the way the ADR's table reports it: on a
//! channel of 1,000,000 entries of work on 100,000 orders (100 agents), the cold open (the
//! whole history read, verified, folded and saved), a warm open (nothing new), a save after
//! one claim (the agent's session opened warm, a fresh order issued and claimed, then the save
//! timed), and the resident memory a warm session adds once it listed every order (briefs
//! only) and once it read every order whole, from /proc/self/statm.
//!
//! Peak RSS is also measured in a process of its own (this bench binary again, told by
//! `FERRY_BENCH_RSS_OF` which kept state to open and how far to go): a warm open alone, then
//! with every order listed, then with every order read whole, each its own process's VmHWM
//! (in-process deltas read 0: the heap the fixture builder freed is reused).
//!
//! Not a criterion bench: each figure is the median of a few runs, printed to stderr. It uses
//! only what every kept-state format offers (`Session::open`, `ops::orders`, `Session::save`),
//! so the same file measures a build before and after a change. `FERRY_BENCH_ORDERS` sets
//! the orders (entries are ten times as many). Under `cargo test --benches` (no `--bench`
//! flag) it runs on 2,000 entries, once.

use std::hint::black_box;
use std::time::{Duration, Instant};

use ferry_mcp_core::channel::fold::levels::Level;
use ferry_mcp_core::channel::ops::orders::{self, ClaimOutcome, IssueRequest, ListRequest};
use ferry_mcp_core::channel::session::{Actor, Session};
use ferry_mcp_testkit::bulk;

fn median(mut times: Vec<Duration>) -> Duration {
    times.sort();
    times[times.len() / 2]
}

/// Resident memory of this process, in bytes (Linux; 0 elsewhere).
fn resident() -> u64 {
    std::fs::read_to_string("/proc/self/statm")
        .ok()
        .and_then(|statm| statm.split_whitespace().nth(1)?.parse::<u64>().ok())
        .map_or(0, |pages| pages * 4096)
}

fn mb(bytes: u64) -> f64 {
    bytes as f64 / 1e6
}

/// This process's peak and current resident memory (VmHWM, VmRSS), in bytes (Linux; 0
/// elsewhere).
fn peak_and_resident() -> (u64, u64) {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let field = |name: &str| {
        status
            .lines()
            .find_map(|line| line.strip_prefix(name))
            .and_then(|rest| rest.split_whitespace().next()?.parse::<u64>().ok())
            .map_or(0, |kb| kb * 1024)
    };
    (field("VmHWM:"), field("VmRSS:"))
}

const RSS_OF: &str = "FERRY_BENCH_RSS_OF";

/// The child's part: open the kept state named by [`RSS_OF`] (home, project, now in ms, and
/// `open`, `list` or `whole`, one a line), go as far as told, print the peak and resident
/// memory.
fn rss_child(spec: &str) {
    use ferry_mcp_core::channel::log::names::ProjectId;
    use ferry_mcp_core::channel::machine::home::Home;
    use ferry_mcp_core::time::Timestamp;
    let parts: Vec<&str> = spec.lines().collect();
    let [home, project, now, what] = parts[..] else {
        panic!("{RSS_OF}: home, project, now, what");
    };
    let home = Home::at(home);
    let project = ProjectId::parse(project).expect("project");
    let now = Timestamp::from_millis(now.parse().expect("now"));
    let mut view = Session::open(&home, &project, Actor::Observer, now).expect("opens");
    if what != "open" {
        let request = ListRequest {
            all: true,
            since: None,
            limit: 1_000_000,
        };
        black_box(orders::list(&mut view, &request, now).expect("list"));
    }
    if what == "whole" {
        let mut read = 0;
        for order in view.board_whole().unwrap().iter() {
            read += black_box(order.whole().unwrap()).view().revision as u64;
        }
        black_box(read);
    }
    let (peak, resident) = peak_and_resident();
    #[allow(clippy::print_stdout)]
    {
        println!("{peak} {resident}");
    }
}

/// Peak and resident memory of a process of its own that opens `bulk` warm and goes as far
/// as `what` says (see [`rss_child`]).
fn rss_of(bulk: &bulk::BulkChannel, what: &str) -> (u64, u64) {
    let spec = format!(
        "{}\n{}\n{}\n{what}",
        bulk.home().root().display(),
        bulk.project(),
        bulk.now().as_millis()
    );
    let out = std::process::Command::new(std::env::current_exe().expect("this bench"))
        .env(RSS_OF, spec)
        .output()
        .expect("the child runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8(out.stdout).expect("utf-8");
    let mut figures = text
        .split_whitespace()
        .map(|n| n.parse::<u64>().expect("a number"));
    (figures.next().unwrap_or(0), figures.next().unwrap_or(0))
}

fn main() {
    if let Ok(spec) = std::env::var(RSS_OF) {
        rss_child(&spec);
        return;
    }
    let bench_mode = std::env::args().any(|a| a == "--bench");
    let orders_wanted: u64 = std::env::var("FERRY_BENCH_ORDERS")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(if bench_mode { 100_000 } else { 200 });
    let runs = if bench_mode { 5 } else { 1 };
    let built = Instant::now();
    let bulk = bulk::builder()
        .entries(orders_wanted * 10)
        .agents(100)
        .orders(orders_wanted)
        .build();
    eprintln!(
        "kept: {} entries, {} orders, built in {:.1?}",
        bulk.entries(),
        bulk.orders(),
        built.elapsed()
    );
    let cold = Instant::now();
    drop(bulk.warm());
    eprintln!("kept: cold open and first save {:.1?}", cold.elapsed());

    let warm = median(
        (0..runs)
            .map(|_| {
                let start = Instant::now();
                let session = black_box(
                    Session::open(bulk.home(), bulk.project(), Actor::Observer, bulk.now())
                        .expect("opens"),
                );
                let spent = start.elapsed();
                drop(session);
                spent
            })
            .collect(),
    );
    eprintln!("kept: warm open {warm:.2?}");

    let member = bulk.agent_at(Level::Member).clone();
    let mut master = bulk.master_session();
    let saves: Vec<Duration> = (0..runs)
        .map(|n| {
            let now = bulk.now();
            let request = IssueRequest {
                title: format!("kept bench order {n}"),
                ..IssueRequest::default()
            };
            let id = orders::issue(&mut master, &request, now).expect("issue");
            master.save().expect("saved");
            let mut agent = bulk.agent_session(member.as_str());
            let outcome = orders::claim(&mut agent, &id, now).expect("claim");
            assert!(matches!(outcome, ClaimOutcome::Claimed { .. }));
            let start = Instant::now();
            agent.save().expect("saved");
            start.elapsed()
        })
        .collect();
    eprintln!("kept: save after one claim {:.2?}", median(saves));
    drop(master);

    let before = resident();
    let mut view = bulk.view();
    let listed = orders::list(
        &mut view,
        &ListRequest {
            all: true,
            since: None,
            limit: 1_000_000,
        },
        bulk.now(),
    )
    .expect("list");
    let briefs = resident().saturating_sub(before);
    let count = listed.rows.len();
    drop(listed);
    let mut read = 0;
    for order in view.board_whole().unwrap().iter() {
        read += black_box(order.whole().unwrap()).view().revision as u64;
    }
    black_box(read);
    let whole = resident().saturating_sub(before);
    eprintln!(
        "kept: RSS of a warm session, {count} orders listed: +{:.1} MB; every order read whole: +{:.1} MB",
        mb(briefs),
        mb(whole)
    );
    for what in ["open", "list", "whole"] {
        let (peak, resident) = rss_of(&bulk, what);
        eprintln!(
            "kept: a process of its own, warm open{}: peak RSS {:.1} MB, RSS at the end {:.1} MB",
            match what {
                "open" => "",
                "list" => ", every order listed",
                _ => ", every order listed and read whole",
            },
            mb(peak),
            mb(resident)
        );
    }
    let kept: u64 = std::fs::read_dir(bulk.verified_path().parent().unwrap())
        .unwrap()
        .filter_map(|entry| entry.ok()?.metadata().ok())
        .map(|meta| meta.len())
        .sum();
    eprintln!("kept: state folder of the project {:.1} MB", mb(kept));
}

//! The order board's two hot calls on a warm session (opened once, as a served agent's is):
//! `ops::orders::list` (the board's open orders, 20 at most) and `ops::orders::claim` of a
//! fresh order, on the busy channel (200 entries, 40 open orders) and on the large one
//! (100,000 entries, 10,000 orders, 100 agents).
//!
//! Targets: list under 1 ms, claim under 5 ms. A claim appends one entry and fsyncs it
//! (`sync_data`) before it returns, so the cost of one fsync on this disk is measured too and
//! printed beside it. Each claim needs an order nobody claimed: the master issues one before
//! every claim, outside the timing, and the agent's session reads it before the timing starts.
//!
//! Under `cargo test --benches` (no `--bench` flag) the large channel is 2,000 entries and
//! each call runs once.

use std::hint::black_box;
use std::io::Write as _;
use std::time::{Duration, Instant};

use criterion::Criterion;
use ferry_mcp_core::channel::fold::levels::Level;
use ferry_mcp_core::channel::ops::orders::{self, ClaimOutcome, IssueRequest, ListRequest};
use ferry_mcp_core::channel::session::Session;
use ferry_mcp_testkit::bulk::{self, BulkChannel};

const LIST: ListRequest = ListRequest {
    all: false,
    since: None,
    limit: 20,
};

struct Board {
    label: &'static str,
    bulk: BulkChannel,
    agent: Session,
    master: Session,
    issued: u64,
}

impl Board {
    fn new(label: &'static str, bulk: BulkChannel) -> Self {
        drop(bulk.warm());
        let member = bulk.agent_at(Level::Member).clone();
        let agent = bulk.agent_session(member.as_str());
        let master = bulk.master_session();
        Self {
            label,
            bulk,
            agent,
            master,
            issued: 0,
        }
    }

    fn list(&mut self) -> Duration {
        let start = Instant::now();
        let listed = orders::list(&mut self.agent, &LIST, self.bulk.now()).expect("list");
        let spent = start.elapsed();
        assert_eq!(listed.rows.len(), 20);
        black_box(listed);
        spent
    }

    /// Issues a fresh order (untimed), lets the agent read it (untimed), times its claim.
    fn claim(&mut self) -> Duration {
        let now = self.bulk.now();
        self.issued += 1;
        let request = IssueRequest {
            title: format!("bench order {}", self.issued),
            ..IssueRequest::default()
        };
        let id = orders::issue(&mut self.master, &request, now).expect("issue");
        self.agent.refresh(now);
        let start = Instant::now();
        let outcome = orders::claim(&mut self.agent, &id, now).expect("claim");
        let spent = start.elapsed();
        assert!(matches!(outcome, ClaimOutcome::Claimed { .. }));
        spent
    }
}

fn median(mut times: Vec<Duration>) -> Duration {
    times.sort();
    times[times.len() / 2]
}

/// One appended line and its `sync_data`, as the writer does, in the channel's file system.
fn fsync_once(dir: &std::path::Path) -> Duration {
    let mut file = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(dir.join("fsync-probe"))
        .expect("probe file");
    let line = [b'x'; 400];
    let start = Instant::now();
    file.write_all(&line)
        .and_then(|()| file.sync_data())
        .expect("probe written");
    start.elapsed()
}

fn main() {
    let bench_mode = std::env::args().any(|a| a == "--bench");
    let large = if bench_mode {
        bulk::large()
    } else {
        bulk::builder().entries(2_000).agents(10).build()
    };
    let mut boards = [Board::new("busy", bulk::busy()), Board::new("large", large)];

    let mut criterion = Criterion::default().configure_from_args();
    {
        let mut group = criterion.benchmark_group("orders_list_warm");
        for board in &mut boards {
            group.bench_function(board.label, |b| {
                b.iter_custom(|iters| (0..iters).map(|_| board.list()).sum());
            });
        }
        group.finish();
    }
    {
        let mut group = criterion.benchmark_group("orders_claim_warm");
        group.sample_size(20);
        group.warm_up_time(Duration::from_millis(500));
        group.measurement_time(Duration::from_secs(3));
        for board in &mut boards {
            group.bench_function(board.label, |b| {
                b.iter_custom(|iters| (0..iters).map(|_| board.claim()).sum());
            });
        }
        group.finish();
    }
    criterion.final_summary();

    let (list_rounds, claim_rounds) = if bench_mode { (201, 41) } else { (1, 1) };
    let probe_dir = boards[0].bulk.root().to_owned();
    let fsync = median((0..claim_rounds).map(|_| fsync_once(&probe_dir)).collect());
    for board in &mut boards {
        let list = median((0..list_rounds).map(|_| board.list()).collect());
        let claim = median((0..claim_rounds).map(|_| board.claim()).collect());
        eprintln!(
            "orders on {} ({} entries): list {list:.2?} (target < 1 ms: {}), claim {claim:.2?} (target < 5 ms: {}; {:.2?} of it is one fsync)",
            board.label,
            board.bulk.entries(),
            if list < Duration::from_millis(1) {
                "yes"
            } else {
                "NO"
            },
            if claim < Duration::from_millis(5) {
                "yes"
            } else {
                "NO"
            },
            fsync.min(claim),
        );
    }
    eprintln!("orders: one appended line and its sync_data on this disk: {fsync:.2?} (median)");
}

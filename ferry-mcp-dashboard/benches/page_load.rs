//! A page load of the dashboard, as the browser asks it (through the gate, a session opened
//! on the warm kept state, the view rendered): the overview and the board, on the busy
//! channel (200 entries, 40 open orders) and on the large one (100,000 entries, 10,000
//! orders, 100 agents). Each load is one `App::handle` with the visitor's cookie, no socket.
//!
//! Under `cargo test --benches` (no `--bench` flag) the large channel is 2,000 entries with
//! 500 orders and each load runs once.

use std::hint::black_box;
use std::sync::Arc;
use std::time::{Duration, Instant};

use criterion::Criterion;
use ferry_mcp_dashboard::{App, Config, Outcome, Request};
use ferry_mcp_testkit::bulk::{self, BulkChannel};

const PORT: u16 = 4765;

struct Page {
    label: &'static str,
    bulk: BulkChannel,
    app: App,
    cookie: String,
}

impl Page {
    fn new(label: &'static str, bulk: BulkChannel) -> Self {
        drop(bulk.warm());
        let clock = bulk.clock().clone();
        let config = Config {
            home: bulk.home().clone(),
            projects: vec![bulk.project().clone()],
            unlocked: vec![bulk.project().clone()],
            machine: "bench".into(),
            clock: Arc::new(move || clock.now()),
            connector: None,
            poll_ms: 250,
        };
        let app = App::new(config, PORT);
        let url = app.login_url();
        let target = url.split_once(&format!(":{PORT}")).unwrap().1;
        let Outcome::Page(login) = app.handle(&Request::get(target, PORT)) else {
            panic!("a page");
        };
        let cookie = login
            .header("Set-Cookie")
            .unwrap()
            .split(';')
            .next()
            .unwrap()
            .to_owned();
        Self {
            label,
            bulk,
            app,
            cookie,
        }
    }

    fn load(&self, view: &str) -> Duration {
        let target = format!("/p/{}/{view}", self.bulk.project());
        let request = Request::get(&target, PORT).with_cookie(&self.cookie);
        let start = Instant::now();
        let Outcome::Page(page) = self.app.handle(&request) else {
            panic!("a page");
        };
        let spent = start.elapsed();
        assert_eq!(page.status, 200, "{target}");
        black_box(page);
        spent
    }
}

fn median(mut times: Vec<Duration>) -> Duration {
    times.sort();
    times[times.len() / 2]
}

fn main() {
    let bench_mode = std::env::args().any(|a| a == "--bench");
    let large = if bench_mode {
        bulk::large()
    } else {
        bulk::builder()
            .entries(2_000)
            .agents(10)
            .orders(500)
            .build()
    };
    let pages = [Page::new("busy", bulk::busy()), Page::new("large", large)];
    let mut criterion = Criterion::default().configure_from_args();
    for (group, view) in [("dashboard_overview", ""), ("dashboard_orders", "orders")] {
        let mut group = criterion.benchmark_group(group);
        group.sample_size(20);
        for page in &pages {
            group.bench_function(page.label, |b| {
                b.iter_custom(|iters| (0..iters).map(|_| page.load(view)).sum());
            });
        }
        group.finish();
    }
    criterion.final_summary();
    let rounds = if bench_mode { 21 } else { 1 };
    for page in &pages {
        let overview = median((0..rounds).map(|_| page.load("")).collect());
        let board = median((0..rounds).map(|_| page.load("orders")).collect());
        eprintln!(
            "dashboard on {} ({} entries, {} orders): overview {overview:.2?}, orders {board:.2?} (median of {rounds})",
            page.label,
            page.bulk.entries(),
            page.bulk.orders(),
        );
    }
}

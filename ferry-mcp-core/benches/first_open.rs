//! A new machine's first open (`Session::open` on a state folder that kept nothing, then the
//! save a command makes), with and without the master's checkpoint at the end of the history
//! (ADR 0023), and the ratio. The channels are the bulk fixture's with talk mixed in (30%
//! talk, 70% order work).
//!
//! Target (issue 23, item 1): at most 1 s at 100,000 entries and 5 s at 1,000,000, at most
//! 128 MB peak (the peak is measured on the `first_open` example with `/usr/bin/time -v`).
//!
//! Under `cargo test --benches` (no `--bench`): 1,000 entries, each open once. Under
//! `cargo bench --bench first_open`: 1,000 and 100,000 entries, the median of 3 opens;
//! `FERRY_BENCH_1M=1` adds 1,000,000 (one open each: building it takes minutes).

use std::hint::black_box;
use std::time::{Duration, Instant};

use ferry_mcp_core::channel::session::{Actor, Session};
use ferry_mcp_testkit::bulk::{self, BulkChannel};

fn first_open(bulk: &BulkChannel) -> (Duration, bool) {
    let _ = std::fs::remove_file(bulk.verified_path());
    let start = Instant::now();
    let mut session = Session::open(bulk.home(), bulk.project(), Actor::Observer, bulk.now())
        .expect("the bulk channel opens");
    session.save().expect("the kept state is written");
    let spent = start.elapsed();
    let started = session.started_from_checkpoint().is_some();
    drop(black_box(session));
    (spent, started)
}

fn median(bulk: &BulkChannel, rounds: usize) -> (Duration, bool) {
    let mut times = Vec::new();
    let mut started = true;
    for _ in 0..rounds {
        let (spent, from_checkpoint) = first_open(bulk);
        times.push(spent);
        started &= from_checkpoint;
    }
    times.sort();
    (times[times.len() / 2], started)
}

fn main() {
    let bench_mode = std::env::args().any(|a| a == "--bench");
    let mut sizes = vec![("1k", 1_000u64)];
    if bench_mode {
        sizes.push(("100k", 100_000));
        if std::env::var_os("FERRY_BENCH_1M").is_some() {
            sizes.push(("1M", 1_000_000));
        }
    }
    for (label, entries) in sizes {
        let rounds = if !bench_mode || entries >= 1_000_000 {
            1
        } else {
            3
        };
        let mut row = Vec::new();
        for with_checkpoint in [false, true] {
            let builder = bulk::builder().entries(entries).talk_percent(30);
            let builder = if with_checkpoint {
                builder.checkpoint()
            } else {
                builder
            };
            let built = Instant::now();
            let channel = builder.build();
            eprintln!(
                "first_open bench: built {label} ({} entries{}) in {:.1?}",
                channel.entries(),
                if with_checkpoint {
                    ", a checkpoint"
                } else {
                    ""
                },
                built.elapsed()
            );
            let (spent, started) = median(&channel, rounds);
            assert_eq!(
                started, with_checkpoint,
                "a new machine starts from the checkpoint exactly when there is one"
            );
            row.push(spent);
        }
        eprintln!(
            "first_open {label}: without a checkpoint {:.2?}, with one {:.2?}: {:.1}x faster",
            row[0],
            row[1],
            row[0].as_secs_f64() / row[1].as_secs_f64()
        );
    }
}

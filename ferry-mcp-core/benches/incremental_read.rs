//! Incremental reading: a poll that finds 100 new entries should cost the same on a history
//! of 1,000 entries as on one of 100,000 (target: ratio below 1.5).
//!
//! Each history is spread over four authors' logs and written in bulk (pre-signed lines, no
//! fsync per entry). A reader is warmed on the history, then 100 entries are appended; every
//! iteration polls a clone of the warm reader, so each measures exactly those 100 entries on
//! top of exactly that history. After the criterion runs, the ratio is printed to stderr.
//! Under `cargo test --benches` (no `--bench` flag) the histories are 1,000 and 10,000 so
//! the single test run stays quick.

use std::fs;
use std::hint::black_box;
use std::path::Path;
use std::time::{Duration, Instant};

use criterion::{BatchSize, Criterion};
use ferry_mcp_core::channel::log::entry::{Entry, EntryHash};
use ferry_mcp_core::channel::log::keys::SecretKey;
use ferry_mcp_core::channel::log::names::{AgentName, ProjectId};
use ferry_mcp_core::channel::log::reader::Reader;
use ferry_mcp_core::channel::log::store::Channel;
use ferry_mcp_core::time::Timestamp;
use serde_json::json;

const AUTHORS: u8 = 4;
const NEW_ENTRIES: u64 = 100;

/// One author's log being built: its key and chain tip.
struct Chain {
    author: AgentName,
    key: SecretKey,
    seq: u64,
    prev: Option<EntryHash>,
}

impl Chain {
    /// Signs `count` more entries and appends their lines to the log file in one write.
    fn extend(&mut self, channel: &Channel, project: &ProjectId, count: u64) {
        let mut text = String::new();
        for _ in 0..count {
            self.seq += 1;
            let signed = Entry {
                project: project.clone(),
                author: self.author.clone(),
                key: self.key.public_key(),
                seq: self.seq,
                prev: self.prev,
                kind: "talk.post".to_owned(),
                time: Timestamp::from_millis(1_767_225_600_000 + self.seq),
                body: json!({"text": "a message of ordinary length for the channel", "n": self.seq}),
            }
            .sign(&self.key)
            .expect("bench entries are well formed");
            self.prev = Some(*signed.entry.hash());
            text.push_str(&signed.line);
            text.push('\n');
        }
        let path = channel.log_path(&self.author, &self.key.public_key());
        fs::create_dir_all(path.parent().expect("log folder")).expect("log folder");
        let mut existing = fs::read(&path).unwrap_or_default();
        existing.extend_from_slice(text.as_bytes());
        fs::write(&path, existing).expect("log written");
    }
}

/// A channel with `history` entries read by a warm reader, then 100 more appended.
fn prepared(dir: &Path, history: u64) -> Reader {
    let project = ProjectId::parse("bench").expect("project id");
    let channel = Channel::create(
        dir,
        &project,
        &SecretKey::from_bytes(&[200; 32]),
        Timestamp(0),
    )
    .expect("channel");
    let mut chains: Vec<Chain> = (0..AUTHORS)
        .map(|i| Chain {
            author: AgentName::parse(&format!("agent-{i}")).expect("name"),
            key: SecretKey::from_bytes(&[i + 1; 32]),
            seq: 0,
            prev: None,
        })
        .collect();
    for chain in &mut chains {
        chain.extend(&channel, &project, history / u64::from(AUTHORS));
    }
    let mut reader = channel.reader();
    let warm = reader.poll();
    assert_eq!(warm.entries.len() as u64, history);
    for (i, chain) in chains.iter_mut().enumerate() {
        // 100 new entries over the four logs: 25 each.
        let share = NEW_ENTRIES / u64::from(AUTHORS) + u64::from(i == 0) * (NEW_ENTRIES % 4);
        chain.extend(&channel, &project, share);
    }
    reader
}

fn poll_once(warm: &Reader) -> Duration {
    let mut reader = warm.clone();
    let start = Instant::now();
    let batch = black_box(reader.poll());
    let spent = start.elapsed();
    assert_eq!(batch.entries.len() as u64, NEW_ENTRIES);
    assert!(batch.problems.is_empty());
    spent
}

/// Median of `rounds` timed polls.
fn median_poll(warm: &Reader, rounds: usize) -> Duration {
    let mut times: Vec<Duration> = (0..rounds).map(|_| poll_once(warm)).collect();
    times.sort();
    times[rounds / 2]
}

fn main() {
    let bench_mode = std::env::args().any(|a| a == "--bench");
    let histories: [u64; 2] = if bench_mode {
        [1_000, 100_000]
    } else {
        [1_000, 10_000]
    };
    let dirs: Vec<tempfile::TempDir> = histories
        .iter()
        .map(|_| tempfile::tempdir().expect("temp dir"))
        .collect();
    let readers: Vec<Reader> = histories
        .iter()
        .zip(&dirs)
        .map(|(&history, dir)| prepared(dir.path(), history))
        .collect();

    let mut criterion = Criterion::default().configure_from_args();
    let mut group = criterion.benchmark_group("poll_100_new_entries");
    for (history, warm) in histories.iter().zip(&readers) {
        group.bench_function(format!("history_{history}"), |b| {
            // By reference: dropping the clone (and its index) stays outside the timing.
            b.iter_batched_ref(
                || warm.clone(),
                |reader| black_box(reader.poll()),
                BatchSize::LargeInput,
            )
        });
    }
    group.finish();
    criterion.final_summary();

    let rounds = if bench_mode { 101 } else { 3 };
    let small = median_poll(&readers[0], rounds);
    let large = median_poll(&readers[1], rounds);
    eprintln!(
        "incremental read of {NEW_ENTRIES} new entries: history {} -> {:?}, history {} -> {:?}, ratio {:.2} (target < 1.5)",
        histories[0],
        small,
        histories[1],
        large,
        large.as_secs_f64() / small.as_secs_f64()
    );
}

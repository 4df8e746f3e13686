//! The fleet's two first calls on a warm session: `ops::fleet::catchup` with a `since` cursor,
//! on a channel of 1,000 entries and on one of 100,000 (10,000 orders, 100 agents; target: the
//! ratio of the medians below 1.5), and `ops::fleet::join` on the large channel.
//!
//! A catch-up with a cursor is what a served agent calls again and again: it should cost what
//! changed, not the history. Every iteration does the same work: the channel is put back to its
//! warm state (the logs that the news went to are cut back to their warm length, the reader's
//! session is opened from the saved verified state and watched, as a server's is, and has read
//! its board and talk and looked at every log once, as a server's has after its first call, and
//! made the call before this one: a catch-up since the same cursor that found nothing new),
//! the same three pre-written entries are
//! appended (a decision and two progress lines on orders held by other agents), all untimed;
//! the timed catch-up since the warm cursor folds them and builds a digest holding exactly
//! them. The reader recorded its presence at the warm point, so the catch-up writes nothing.
//!
//! `join` is timed on the warm large channel with nothing new (a repeated call): the reader's
//! seat, the primary, who is alive and what each holds, and the reader's open orders.
//!
//! After the criterion runs, the medians (with p10 and p90) and the ratio are printed to
//! stderr, with where a catch-up's time goes: folding the news, a poll that finds nothing new
//! (one look at every log), and the digest itself. Under `cargo test --benches` (no `--bench` flag) the channels hold 300 and 3,000
//! entries and each call runs once.

use std::fs::{self, OpenOptions};
use std::hint::black_box;
use std::io::Write as _;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use criterion::{BatchSize, Criterion, SamplingMode};
use ferry_mcp_core::channel::fold::levels::Level;
use ferry_mcp_core::channel::log::names::AgentName;
use ferry_mcp_core::channel::ops::fleet::{self, Digest, DigestLimits};
use ferry_mcp_core::channel::ops::{orders, primary};
use ferry_mcp_core::channel::session::{Actor, Session};
use ferry_mcp_core::time::Timestamp;
use ferry_mcp_testkit::bulk::{self, BulkChannel};

/// A bulk channel with a reader at its warm point, and the news to replay on it.
struct Catchup {
    label: String,
    bulk: BulkChannel,
    reader: AgentName,
    now: Timestamp,
    /// The reader's cursor at the warm point.
    cursor: String,
    /// The logs the news goes to: their warm length, and the news' bytes.
    news: Vec<(PathBuf, u64, Vec<u8>)>,
    /// The orders the news changes.
    changed: Vec<String>,
}

fn session(bulk: &BulkChannel, name: &AgentName, now: Timestamp) -> Session {
    Session::open(bulk.home(), bulk.project(), Actor::Agent(name.clone()), now)
        .expect("the bulk channel opens")
}

fn log_of(session: &Session, name: &AgentName) -> PathBuf {
    let key = session.identity().holder(name).expect("a seated agent");
    session.channel().log_path(name, key)
}

fn len(path: &PathBuf) -> u64 {
    fs::metadata(path).map_or(0, |meta| meta.len())
}

impl Catchup {
    fn new(label: &str, bulk: BulkChannel) -> Self {
        let now = bulk.now();
        drop(bulk.warm());
        // Two orders held by two agents (Member or above), a decider, and a reader: four
        // different agents whose keys are on this machine.
        let mut view = bulk.view();
        let level_of = |name: &AgentName| {
            bulk.agents()
                .iter()
                .find(|agent| agent.name == *name)
                .map(|agent| agent.level)
        };
        let mut held: Vec<(AgentName, String)> = Vec::new();
        for order in view.board().unwrap().iter() {
            let order_view = order.brief();
            let Some(holder) = &order_view.holder else {
                continue;
            };
            if order_view.state.is_held()
                && level_of(holder).is_some_and(|level| level >= Level::Member)
                && held.iter().all(|(other, _)| other != holder)
            {
                held.push((holder.clone(), order.id().to_string()));
            }
            if held.len() == 2 {
                break;
            }
        }
        assert_eq!(held.len(), 2, "two held orders");
        let mut others = bulk
            .agents()
            .iter()
            .filter(|agent| agent.level >= Level::Member)
            .map(|agent| agent.name.clone())
            .filter(|name| held.iter().all(|(holder, _)| holder != name));
        let decider = others.next().expect("a decider");
        let reader = others.next().expect("a reader");
        drop(view);

        // The warm point: the reader's presence recorded, its cursor taken, the state saved.
        let mut warm = session(&bulk, &reader, now);
        primary::note_alive(&mut warm, now);
        let digest = fleet::catchup(&mut warm, None, DigestLimits::DEFAULT, now).expect("catchup");
        let cursor = digest.next.to_string();
        warm.save().expect("the warm state saved");

        // The news, written once by the operations, kept as bytes, and cut off again.
        let mut paths = vec![log_of(&warm, &decider)];
        paths.extend(held.iter().map(|(holder, _)| log_of(&warm, holder)));
        drop(warm);
        let lengths: Vec<u64> = paths.iter().map(len).collect();
        primary::decide(
            &mut session(&bulk, &decider, now),
            "the lexer keeps its own error type",
            now,
        )
        .expect("decide");
        for (holder, id) in &held {
            orders::progress(
                &mut session(&bulk, holder, now),
                id,
                "halfway: the tests pass",
                now,
            )
            .expect("progress");
        }
        let news = paths
            .into_iter()
            .zip(lengths)
            .map(|(path, warm_len)| {
                let bytes = fs::read(&path).expect("log");
                let tail = bytes[usize::try_from(warm_len).expect("size")..].to_vec();
                (path, warm_len, tail)
            })
            .collect();
        let catchup = Self {
            label: label.to_owned(),
            bulk,
            reader,
            now,
            cursor,
            news,
            changed: held.into_iter().map(|(_, id)| id).collect(),
        };
        catchup.cut_back();
        catchup
    }

    fn cut_back(&self) {
        for (path, warm_len, _) in &self.news {
            OpenOptions::new()
                .write(true)
                .open(path)
                .and_then(|file| file.set_len(*warm_len))
                .expect("log cut back");
        }
    }

    /// The reader's warm session, with the news appended (not folded yet). As a server's
    /// session after its first calls: the order board, talk and the master's times read from
    /// the kept state (a first call pays that once; the start-up bench's first list call
    /// measures it).
    fn fresh(&self) -> Session {
        self.cut_back();
        let mut session = session(&self.bulk, &self.reader, self.now);
        // A server watches its channel from its first call on, which looks at every log.
        if watched() {
            session.watch_channel();
        }
        session.refresh(self.now);
        black_box(session.board().unwrap());
        black_box(session.talk().unwrap());
        // And the master's times, which the first new entry a server judges reads once.
        black_box(
            session
                .identity()
                .master_time_at(ferry_mcp_core::channel::fold::identity::MasterPos::START),
        );
        // And the call before this one, a catch-up that found nothing new: a served agent
        // calls it again and again (so what a catch-up touches is as warm as between calls).
        black_box(
            fleet::catchup(
                &mut session,
                Some(&self.cursor),
                DigestLimits::DEFAULT,
                self.now,
            )
            .expect("catchup"),
        );
        for (path, _, bytes) in &self.news {
            OpenOptions::new()
                .append(true)
                .open(path)
                .and_then(|mut file| file.write_all(bytes))
                .expect("news appended");
        }
        session
    }

    fn catch_up(&self, session: &mut Session) -> Digest {
        let digest = fleet::catchup(session, Some(&self.cursor), DigestLimits::DEFAULT, self.now)
            .expect("catchup");
        assert_eq!(digest.decisions.len(), 1, "{digest:?}");
        let mut changed: Vec<&str> = digest
            .open
            .iter()
            .chain(&digest.mine)
            .map(|order| order.id.as_str())
            .collect();
        changed.sort_unstable();
        let mut want: Vec<&str> = self.changed.iter().map(String::as_str).collect();
        want.sort_unstable();
        assert_eq!(changed, want, "{digest:?}");
        assert!(!digest.reset && digest.primary.is_none());
        digest
    }

    /// Where a catch-up's time goes: folding the news (`refresh`), a poll that finds nothing
    /// new (a stat of every log), and the digest (the catch-up after both, less the poll).
    fn breakdown(&self, rounds: usize) -> [Duration; 3] {
        let mut parts = [Vec::new(), Vec::new(), Vec::new()];
        for _ in 0..rounds {
            let mut session = self.fresh();
            let start = Instant::now();
            session.refresh(self.now);
            let folded = Instant::now();
            session.refresh(self.now);
            let polled = Instant::now();
            black_box(self.catch_up(&mut session));
            let done = Instant::now();
            parts[0].push(folded - start);
            parts[1].push(polled - folded);
            parts[2].push((done - polled).saturating_sub(polled - folded));
        }
        parts.map(|mut times| {
            times.sort();
            times[times.len() / 2]
        })
    }

    fn timed(&self) -> Duration {
        let mut session = self.fresh();
        let start = Instant::now();
        let digest = black_box(self.catch_up(&mut session));
        let spent = start.elapsed();
        drop((digest, session));
        spent
    }
}

/// The 10th, 50th and 90th percentiles of `rounds` runs of `run`.
fn spread(rounds: usize, mut run: impl FnMut() -> Duration) -> [Duration; 3] {
    let mut times: Vec<Duration> = (0..rounds).map(|_| run()).collect();
    times.sort();
    [
        times[rounds / 10],
        times[rounds / 2],
        times[rounds * 9 / 10],
    ]
}

/// The warm session of a Member of the large channel for `join`, its presence recorded.
fn joiner(bulk: &BulkChannel) -> Session {
    let name = bulk.agent_at(Level::Member).clone();
    let mut session = session(bulk, &name, bulk.now());
    primary::note_alive(&mut session, bulk.now());
    session
}

fn join_once(session: &mut Session, now: Timestamp) -> Duration {
    let start = Instant::now();
    let joined = black_box(fleet::join(session, now).expect("join"));
    let spent = start.elapsed();
    assert!(!joined.alive.is_empty());
    spent
}

fn main() {
    let bench_mode = std::env::args().any(|a| a == "--bench");
    let (small, large) = if bench_mode {
        (bulk::builder().entries(1_000).build(), bulk::large())
    } else {
        (
            bulk::builder().entries(300).build(),
            bulk::builder()
                .entries(3_000)
                .agents(10)
                .orders(300)
                .build(),
        )
    };
    let channels = [
        Catchup::new(&format!("entries_{}", small.entries()), small),
        Catchup::new(&format!("entries_{}", large.entries()), large),
    ];

    let mut criterion = Criterion::default()
        .sample_size(10)
        .warm_up_time(Duration::from_millis(300))
        .measurement_time(Duration::from_millis(500))
        .configure_from_args();
    {
        let mut group = criterion.benchmark_group("catchup_since_3_new_entries_warm");
        group.sampling_mode(SamplingMode::Flat);
        for channel in &channels {
            group.bench_function(&channel.label, |b| {
                // By reference: opening the session and dropping it stay outside the timing.
                b.iter_batched_ref(
                    || channel.fresh(),
                    |session| channel.catch_up(session),
                    BatchSize::PerIteration,
                )
            });
        }
        group.finish();
    }
    let rounds = if bench_mode { 101 } else { 3 };
    let [small, large] = [&channels[0], &channels[1]].map(|c| spread(rounds, || c.timed()));
    eprintln!(
        "catch-up since a cursor, 3 new entries: {} entries -> {:?} (p10 {:?}, p90 {:?}), {} entries ({} orders, {} agents) -> {:?} (p10 {:?}, p90 {:?}), ratio of medians {:.2} (target < 1.5)",
        channels[0].bulk.entries(),
        small[1],
        small[0],
        small[2],
        channels[1].bulk.entries(),
        channels[1].bulk.orders(),
        channels[1].bulk.agents().len(),
        large[1],
        large[0],
        large[2],
        large[1].as_secs_f64() / small[1].as_secs_f64()
    );
    for channel in &channels {
        let [fold, poll, digest] = channel.breakdown(rounds.min(31));
        eprintln!(
            "catch-up on {} entries, medians of its parts: folding the 3 new entries {fold:?}, a watched poll with nothing new ({} logs) {poll:?}, the digest {digest:?}",
            channel.bulk.entries(),
            channel.bulk.agents().len() + 1,
        );
    }

    // Join, last: the news is appended for good, and the joiner records its presence.
    let large = &channels[1];
    drop(large.fresh());
    let mut joining = joiner(&large.bulk);
    {
        let mut group = criterion.benchmark_group("join_warm");
        group.bench_function(&large.label, |b| {
            b.iter(|| fleet::join(&mut joining, large.now).expect("join"))
        });
        group.finish();
    }
    criterion.final_summary();
    let join = spread(rounds, || join_once(&mut joining, large.now));
    eprintln!(
        "join on {} entries ({} orders, {} agents), nothing new: {:?} (p10 {:?}, p90 {:?})",
        large.bulk.entries(),
        large.bulk.orders(),
        large.bulk.agents().len(),
        join[1],
        join[0],
        join[2]
    );
}

/// Whether the reader's session is watched, as a server's is: `FERRY_BENCH_UNWATCHED=1` runs
/// the same bench without the watch, every poll looking at every log (the A/B of ADR 0011).
fn watched() -> bool {
    std::env::var_os("FERRY_BENCH_UNWATCHED").is_none()
}

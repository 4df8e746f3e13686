//! Scale (issue 23): what a warm server costs as the history grows, each target measured on a
//! small and a large channel side by side, with the ratio printed.
//!
//! - `after_master_entry`: a server's call right after one that folded a master entry. The
//!   server's `LazySession` (opened, every fold loaded, watched) folds the master's new order
//!   by a claim; then what the next call waits for is timed: the server's flush (the save its
//!   policy makes due: the identity moved) and a list of the agent's orders. Target: within
//!   5 ms at 1M.
//! - `first_join` / `warm_open` / `talk_read_names`: a channel of 1,000 entries and 10,000
//!   seated names (each in its own log): a server's first call (its session opened from the
//!   kept state, `ferry_join`, the flush after it), a command's warm open, and a talk read.
//!   Targets: first join at most 20 ms, warm open at most 5 ms.
//! - `catchup_since` / `talk_read`: a served agent's catch-up with a cursor (one message and
//!   one progress line new since it) and its talk read (one message new to it), each on its
//!   watched server session. Target: the large channel within 1.5x of the small one.
//!
//! Channels are made by the testkit's bulk fixture with 30% talk. Sizes: under
//! `cargo test --benches` (no `--bench` flag) 1,000 and 10,000 entries and 1,000 names, each
//! call once; with `--bench` 1,000 and 100,000 entries and 10,000 names, medians of 21 runs;
//! `FERRY_BENCH_LONG=1` adds 1,000,000 entries (building and folding it takes minutes: by
//! hand); `FERRY_BENCH_NAMES_ONLY=1` runs the names cases alone (their talk read's ratio is then
//! to a 1k channel measured for it). `FERRY_BENCH_FIXTURES=DIR` builds each channel once into
//! `DIR` and copies it from there on later runs (`BulkBuilder::build_cached`: the 1M channel
//! takes minutes to build); `FERRY_BENCH_SIZES=1k,100k` picks the sizes (of 1k, 10k, 100k,
//! 1M, and `1k-100-agents`: 1k entries with the 100 agents the larger channels have) and `FERRY_BENCH_CASES=after_master_entry,talk_read` the cases of a size (for a
//! profile; the names cases run when `names` and `talk_read` are named). Not a criterion bench: the
//! figures are medians of a few runs, printed to stderr; `FERRY_BENCH_RUNS=N` takes medians of
//! `N` runs instead (many, under a profiler).

use std::hint::black_box;
use std::time::{Duration, Instant};

use ferry_mcp_core::channel::fold::levels::Level;
use ferry_mcp_core::channel::log::names::AgentName;
use ferry_mcp_core::channel::ops::fleet::{self, DigestLimits};
use ferry_mcp_core::channel::ops::orders::{self, ClaimOutcome, IssueRequest, ListRequest};
use ferry_mcp_core::channel::ops::primary;
use ferry_mcp_core::channel::ops::talk::{self, PostRequest, ReadRequest};
use ferry_mcp_core::channel::session::{Actor, LazySession, SavePolicy, Session};
use ferry_mcp_core::time::Timestamp;
use ferry_mcp_testkit::bulk::{self, BulkChannel};

fn median(mut times: Vec<Duration>) -> Duration {
    times.sort();
    times[times.len() / 2]
}

fn ms(duration: Duration) -> f64 {
    duration.as_secs_f64() * 1e3
}

/// A clock that moves on by `step_ms` each time it is read: every timed call is later than
/// the last by more than the server's save interval.
struct Ticks {
    at: u64,
}

impl Ticks {
    fn new(start: Timestamp) -> Self {
        Self {
            at: start.as_millis(),
        }
    }

    fn next(&mut self, step_ms: u64) -> Timestamp {
        self.at += step_ms;
        Timestamp::from_millis(self.at)
    }
}

fn channel(entries: u64) -> BulkChannel {
    channel_of(entries, None)
}

/// A bulk channel of `entries` entries and `agents` acting agents (the builder's default:
/// one per 1,000 entries, 5 to 100).
fn channel_of(entries: u64, agents: Option<u32>) -> BulkChannel {
    let built = Instant::now();
    let mut builder = bulk::builder().entries(entries).talk_percent(30);
    if let Some(agents) = agents {
        builder = builder.agents(agents);
    }
    let bulk = match std::env::var_os("FERRY_BENCH_FIXTURES") {
        Some(cache) => builder.build_cached(std::path::Path::new(&cache)),
        None => builder.build(),
    };
    drop(bulk.warm());
    eprintln!(
        "scale: built and warmed {} entries ({} orders) in {:.1?}",
        bulk.entries(),
        bulk.orders(),
        built.elapsed()
    );
    bulk
}

/// An agent's server session: opened, every fold loaded, watched, its presence recorded.
fn server(bulk: &BulkChannel, agent: &AgentName, now: Timestamp) -> LazySession {
    server_saving(bulk, agent, now, SavePolicy::default())
}

fn server_saving(
    bulk: &BulkChannel,
    agent: &AgentName,
    now: Timestamp,
    policy: SavePolicy,
) -> LazySession {
    let mut lazy = LazySession::new(
        bulk.home().clone(),
        bulk.project().clone(),
        Actor::Agent(agent.clone()),
    )
    .with_save_policy(policy);
    let session = lazy.session(now).expect("the bulk channel opens");
    primary::note_alive(session, now);
    lazy.flush(now);
    lazy
}

fn two_members(bulk: &BulkChannel) -> (AgentName, AgentName) {
    let mut members = bulk
        .agents()
        .iter()
        .filter(|agent| agent.level == Level::Member)
        .map(|agent| agent.name.clone());
    let first = members.next().expect("a member");
    let second = members.next().expect("two members");
    (first, second)
}

/// What the call after one that folded a master entry waits for (see the module docs), the
/// server writing its saves in the background or not (before ADR 0024).
fn after_master_entry(
    bulk: &BulkChannel,
    ticks: &mut Ticks,
    runs: usize,
    in_background: bool,
) -> Duration {
    let (member, _) = two_members(bulk);
    let mut master = bulk.master_session();
    let policy = SavePolicy {
        in_background,
        ..SavePolicy::default()
    };
    let mut lazy = server_saving(bulk, &member, ticks.next(1), policy);
    let times = (0..runs)
        .map(|n| {
            let now = ticks.next(3_000);
            let request = IssueRequest {
                title: format!("scale bench order {n}"),
                ..IssueRequest::default()
            };
            let id = orders::issue(&mut master, &request, now).expect("issue");
            let session = lazy.session(now).expect("open");
            session.refresh(now);
            let claimed = orders::claim(session, &id, now).unwrap_or_else(|err| {
                panic!("claim {id}: {err:?}; {:?}", session.local_problems())
            });
            assert!(matches!(claimed, ClaimOutcome::Claimed { .. }));
            let start = Instant::now();
            lazy.flush(now);
            let session = lazy.session(now).expect("open");
            let request = ListRequest {
                all: false,
                since: None,
                limit: 20,
            };
            black_box(orders::list(session, &request, now).expect("list"));
            start.elapsed()
        })
        .collect();
    median(times)
}

/// A served agent's posts in quick succession (one every 50 ms of its clock), each followed by
/// the server's flush, under `policy`: the mean of what a call and its flush cost, saves
/// included (the A/B of the save-rate policy, ADR 0011: the default against a save at every
/// flush).
fn posts_in_a_row(
    bulk: &BulkChannel,
    ticks: &mut Ticks,
    runs: usize,
    policy: SavePolicy,
) -> Duration {
    let (member, _) = two_members(bulk);
    let mut lazy = server_saving(bulk, &member, ticks.next(3_000), policy);
    let start = Instant::now();
    for n in 0..runs * 4 {
        let now = ticks.next(50);
        let session = lazy.session(now).expect("open");
        let post = PostRequest {
            to: "all".into(),
            text: format!("scale bench progress {n}: the parser is green"),
            reply_to: None,
        };
        black_box(talk::post(session, &post, now).expect("post"));
        lazy.flush(now);
    }
    let spent = start.elapsed() / (runs as u32 * 4);
    drop(lazy);
    spent
}

/// A served agent's catch-up with a cursor, one message and one progress line new since it.
fn catchup_since(bulk: &BulkChannel, ticks: &mut Ticks, runs: usize) -> Duration {
    let (reader, writer) = two_members(bulk);
    let mut lazy = server(bulk, &reader, ticks.next(1));
    let mut other = bulk.agent_session(writer.as_str());
    let now = ticks.next(1);
    let session = lazy.session(now).expect("open");
    let mut cursor = fleet::catchup(session, None, DigestLimits::DEFAULT, now)
        .expect("catchup")
        .next
        .to_string();
    let times = (0..runs)
        .map(|n| {
            let now = ticks.next(1_000);
            let post = PostRequest {
                to: "all".into(),
                text: format!("scale bench news {n}: the lexer is green"),
                reply_to: None,
            };
            talk::post(&mut other, &post, now).expect("post");
            lazy.flush(now);
            let session = lazy.session(now).expect("open");
            let start = Instant::now();
            let digest = fleet::catchup(session, Some(&cursor), DigestLimits::DEFAULT, now)
                .expect("catchup");
            let spent = start.elapsed();
            cursor = digest.next.to_string();
            black_box(digest);
            spent
        })
        .collect();
    median(times)
}

/// A served agent's talk read, one message new to it.
fn talk_read(bulk: &BulkChannel, ticks: &mut Ticks, runs: usize) -> Duration {
    let (reader, writer) = two_members(bulk);
    let mut lazy = server(bulk, &reader, ticks.next(1));
    let mut other = bulk.agent_session(writer.as_str());
    let request = ReadRequest {
        peek: false,
        since: None,
        limit: 20,
        receipts: 3,
    };
    let now = ticks.next(1);
    let session = lazy.session(now).expect("open");
    black_box(talk::read(session, &request, &mut |_| true, now).expect("read"));
    let times = (0..runs)
        .map(|n| {
            let now = ticks.next(1_000);
            let post = PostRequest {
                to: reader.to_string(),
                text: format!("scale bench message {n}: the lexer is green"),
                reply_to: None,
            };
            talk::post(&mut other, &post, now).expect("post");
            lazy.flush(now);
            let session = lazy.session(now).expect("open");
            let start = Instant::now();
            let read = talk::read(session, &request, &mut |_| true, now).expect("read");
            let spent = start.elapsed();
            assert!(!read.messages.is_empty());
            black_box(read);
            spent
        })
        .collect();
    median(times)
}

struct Names {
    first_join: Duration,
    warm_open: Duration,
    talk_read: Duration,
}

/// A channel of 1,000 entries and `names` seated names (see the module docs).
fn names(names: u64, runs: usize) -> Names {
    let built = Instant::now();
    let bulk = bulk::builder()
        .entries(1_000)
        .talk_percent(30)
        .names(names)
        .build();
    drop(bulk.warm());
    eprintln!(
        "scale: built and warmed 1,000 entries + {names} names in {:.1?}",
        built.elapsed()
    );
    let (member, _) = two_members(&bulk);
    let mut ticks = Ticks::new(bulk.now());
    let first_join = median(
        (0..runs)
            .map(|_| {
                let now = ticks.next(3_000);
                let start = Instant::now();
                let mut lazy = LazySession::new(
                    bulk.home().clone(),
                    bulk.project().clone(),
                    Actor::Agent(member.clone()),
                );
                let session = lazy.session(now).expect("open");
                black_box(fleet::join(session, now).expect("join"));
                lazy.flush(now);
                let spent = start.elapsed();
                drop(lazy);
                spent
            })
            .collect(),
    );
    let warm_open = median(
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
    let talk_read = talk_read(&bulk, &mut ticks, runs);
    Names {
        first_join,
        warm_open,
        talk_read,
    }
}

struct Row {
    label: String,
    after_master_entry: Option<Duration>,
    after_master_entry_inline: Option<Duration>,
    catchup_since: Option<Duration>,
    talk_read: Option<Duration>,
    posts_rate_limited: Option<Duration>,
    posts_saving_always: Option<Duration>,
}

/// The cases `FERRY_BENCH_CASES` names (every one when it is not set).
struct Cases(Option<Vec<String>>);

impl Cases {
    fn from_env() -> Self {
        Self(std::env::var("FERRY_BENCH_CASES").ok().map(|cases| {
            cases
                .split(',')
                .map(|case| case.trim().to_owned())
                .collect()
        }))
    }

    fn wants(&self, case: &str) -> bool {
        self.0
            .as_ref()
            .is_none_or(|cases| cases.iter().any(|c| c == case))
    }
}

fn row(label: &str, (entries, agents): (u64, Option<u32>), runs: usize, cases: &Cases) -> Row {
    let bulk = channel_of(entries, agents);
    // One clock for every measurement: each writes entries later than the one before.
    let mut ticks = Ticks::new(bulk.now());
    let mut case = |name: &str, measure: &mut dyn FnMut(&mut Ticks) -> Duration| {
        cases.wants(name).then(|| measure(&mut ticks))
    };
    Row {
        label: label.to_owned(),
        after_master_entry: case("after_master_entry", &mut |ticks| {
            after_master_entry(&bulk, ticks, runs, true)
        }),
        after_master_entry_inline: case("after_master_entry_inline", &mut |ticks| {
            after_master_entry(&bulk, ticks, runs, false)
        }),
        catchup_since: case("catchup_since", &mut |ticks| {
            catchup_since(&bulk, ticks, runs)
        }),
        talk_read: case("talk_read", &mut |ticks| talk_read(&bulk, ticks, runs)),
        posts_rate_limited: case("posts", &mut |ticks| {
            posts_in_a_row(&bulk, ticks, runs, SavePolicy::default())
        }),
        posts_saving_always: case("posts", &mut |ticks| {
            posts_in_a_row(
                &bulk,
                ticks,
                runs,
                SavePolicy {
                    every_ms: 0,
                    bytes_per_ms: u64::MAX,
                    ..SavePolicy::default()
                },
            )
        }),
    }
}

/// `12.34 ms (1.23x)`, or `-` for a case not run.
fn figure(value: Option<Duration>, base: Option<Duration>) -> String {
    match (value, base) {
        (Some(value), Some(base)) => format!(
            "{:.2} ms ({:.2}x)",
            ms(value),
            value.as_secs_f64() / base.as_secs_f64()
        ),
        (Some(value), None) => format!("{:.2} ms", ms(value)),
        (None, _) => "-".to_owned(),
    }
}

fn main() {
    let bench_mode = std::env::args().any(|a| a == "--bench");
    let long = bench_mode && std::env::var_os("FERRY_BENCH_LONG").is_some();
    let runs = std::env::var("FERRY_BENCH_RUNS")
        .ok()
        .and_then(|runs| runs.parse().ok())
        .unwrap_or(if bench_mode { 21 } else { 1 });
    type Size = (&'static str, (u64, Option<u32>));
    let (mut sizes, names_count): (Vec<Size>, u64) = if bench_mode {
        let mut sizes = vec![("1k", (1_000, None)), ("100k", (100_000, None))];
        if long {
            sizes.push(("1M", (1_000_000, None)));
        }
        (sizes, 10_000)
    } else {
        (vec![("1k", (1_000, None)), ("10k", (10_000, None))], 1_000)
    };
    if let Ok(picked) = std::env::var("FERRY_BENCH_SIZES") {
        let known: [Size; 5] = [
            ("1k", (1_000, None)),
            // 1k entries with the 100 agents of the larger channels (the default is 5 at 1k):
            // what of a ratio to 1k is the fleet's size and not the history's.
            ("1k-100-agents", (1_000, Some(100))),
            ("10k", (10_000, None)),
            ("100k", (100_000, None)),
            ("1M", (1_000_000, None)),
        ];
        sizes = picked
            .split(',')
            .map(|label| {
                *known
                    .iter()
                    .find(|(known, _)| *known == label.trim())
                    .unwrap_or_else(|| panic!("FERRY_BENCH_SIZES: no size {label}"))
            })
            .collect();
    }
    let cases = Cases::from_env();
    let ratio = |large: Duration, small: Duration| large.as_secs_f64() / small.as_secs_f64();
    if std::env::var_os("FERRY_BENCH_NAMES_ONLY").is_some() {
        let small = channel(1_000);
        let base = talk_read(&small, &mut Ticks::new(small.now()), runs);
        drop(small);
        print_names(names_count, &names(names_count, runs), base);
        return;
    }
    let rows: Vec<Row> = sizes
        .iter()
        .map(|(label, size)| row(label, *size, runs, &cases))
        .collect();
    let base = &rows[0];
    for row in &rows {
        eprintln!(
            "scale {}: after a master entry {} (saved on the answering thread {}); catch-up since {}; talk read {}",
            row.label,
            figure(row.after_master_entry, base.after_master_entry),
            figure(
                row.after_master_entry_inline,
                base.after_master_entry_inline
            ),
            figure(row.catchup_since, base.catchup_since),
            figure(row.talk_read, base.talk_read),
        );
    }
    for row in &rows {
        if let (Some(limited), Some(always)) = (row.posts_rate_limited, row.posts_saving_always) {
            eprintln!(
                "scale {}: a post and its flush, 20 a second, mean: {:.3} ms under the default save policy, {:.3} ms saving at every flush ({:.2}x)",
                row.label,
                ms(limited),
                ms(always),
                ratio(always, limited),
            );
        }
    }
    if cases.wants("names")
        && let Some(base) = base.talk_read
    {
        print_names(names_count, &names(names_count, runs), base);
    }
}

fn print_names(count: u64, names: &Names, base_talk_read: Duration) {
    eprintln!(
        "scale 1k+{count} names: first join {:.2} ms (target 20); warm open {:.2} ms (target 5); talk read {:.2} ms ({:.2}x the 1k channel's)",
        ms(names.first_join),
        ms(names.warm_open),
        ms(names.talk_read),
        names.talk_read.as_secs_f64() / base_talk_read.as_secs_f64(),
    );
}

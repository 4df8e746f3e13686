//! The first open of a channel filled with junk (issue 17, finding 8): `primary.take` lines,
//! void claims on one order, and asks, each in one log. The first three shapes are signed by a
//! fresh key under a held name (a folder writer's); the seated ones by the key that holds its
//! name (a seated Worker's takes, a seated Member's claims that lose to its first, a seated
//! Worker's asks). Every open here is a first open (no kept state): the whole history is read,
//! verified and folded.
//!
//! Target: each fold step costs O(log n) in what it has folded, so the first open grows
//! linearly with the junk, and nothing of the junk is kept.
//!
//! Under `cargo test --benches` (no `--bench` flag) each shape holds 200 lines and is measured
//! once; with `--bench`, 8,000 takes, 8,000 claims and 50,000 asks of each signer, each opened once outside
//! criterion (a first open of the junk on main took seconds), and criterion measures the
//! 1,000-line shapes. Beside them, in the same run, a normal channel's first open (the bulk
//! fixture with talk mixed in: 100,000 entries with `--bench`, 1,000 without), so that the
//! junk's cost reads against what an honest history of that size costs.

use std::hint::black_box;
use std::time::{Duration, Instant};

use criterion::Criterion;
use ferry_mcp_core::channel::fold::levels::Level;
use ferry_mcp_core::channel::fold::state::SEEN_FIELD;
use ferry_mcp_core::channel::fold::state::orders::kinds as order_kinds;
use ferry_mcp_core::channel::fold::state::primary::{ROOT, kinds as primary_kinds};
use ferry_mcp_core::channel::log::keys::SecretKey;
use ferry_mcp_core::channel::ops::orders::{self, IssueRequest};
use ferry_mcp_core::channel::session::{Actor, Session};
use ferry_mcp_testkit::bulk;
use ferry_mcp_testkit::temp_channel::TempChannel;
use serde_json::{Value, json};

#[derive(Clone, Copy)]
enum Shape {
    Takes,
    Claims,
    Asks,
    SeatedTakes,
    SeatedClaims,
    SeatedAsks,
}

impl Shape {
    fn label(self) -> &'static str {
        match self {
            Self::Takes => "primary_takes",
            Self::Claims => "void_claims_on_one_order",
            Self::Asks => "asks",
            Self::SeatedTakes => "seated_worker_takes",
            Self::SeatedClaims => "seated_member_claims_on_one_order",
            Self::SeatedAsks => "seated_worker_asks",
        }
    }

    /// The seated agent that signs the junk, or `None` for a fresh key under `lead`.
    fn seated(self) -> Option<&'static str> {
        match self {
            Self::Takes | Self::Claims | Self::Asks => None,
            Self::SeatedTakes | Self::SeatedAsks => Some("worker"),
            Self::SeatedClaims => Some("member"),
        }
    }
}

/// A channel with an Orchestrator `lead`, a Member `member`, a Worker `worker` and one order,
/// and `lines` junk lines of `shape` by a fresh key signing as `lead`, or by the seated agent's
/// own key.
fn junk(shape: Shape, lines: u64) -> TempChannel {
    let temp = TempChannel::builder()
        .agent("lead", Level::Orchestrator)
        .agent("member", Level::Member)
        .agent("worker", Level::Worker)
        .build()
        .expect("a channel");
    let mut master = temp.master_session();
    let order = orders::issue(
        &mut master,
        &IssueRequest {
            title: "the one order".into(),
            ..IssueRequest::default()
        },
        temp.now(),
    )
    .expect("an order");
    let id = order.parse().expect("an id");
    let issue = master.order(&id).unwrap().expect("issued").issue.hash;
    let seen = master.identity().master_position();
    drop(master);
    let (signer, key) = match shape.seated() {
        Some(name) => (name, temp.agent_key(name)),
        None => ("lead", SecretKey::generate().expect("a key")),
    };
    let session = temp.view();
    let mut writer = session
        .channel()
        .writer(&TempChannel::agent(signer), &key)
        .expect("a writer");
    for n in 0..lines {
        let (kind, mut body): (&str, Value) = match shape {
            Shape::Takes | Shape::SeatedTakes => (primary_kinds::TAKE, json!({"after": ROOT})),
            Shape::Claims | Shape::SeatedClaims => {
                (order_kinds::CLAIM, json!({"order": order, "after": issue}))
            }
            Shape::Asks | Shape::SeatedAsks => (
                "ask.raise",
                json!({"title": format!("ask {n}"), "recommendation": "approve it"}),
            ),
        };
        body[SEEN_FIELD] = json!([seen.0, seen.1]);
        writer.append(kind, body, temp.now()).expect("appended");
    }
    temp
}

fn first_open(temp: &TempChannel) -> Duration {
    let _ = std::fs::remove_file(temp.home().verified_path(temp.project()));
    let start = Instant::now();
    let session = black_box(
        Session::open(temp.home(), temp.project(), Actor::Observer, temp.now())
            .expect("the channel opens"),
    );
    let spent = start.elapsed();
    drop(session);
    spent
}

fn main() {
    let bench_mode = std::env::args().any(|a| a == "--bench");
    let shapes = [
        Shape::Takes,
        Shape::Claims,
        Shape::Asks,
        Shape::SeatedTakes,
        Shape::SeatedClaims,
        Shape::SeatedAsks,
    ];

    let small: Vec<(Shape, TempChannel)> = shapes
        .iter()
        .map(|&shape| (shape, junk(shape, if bench_mode { 1_000 } else { 200 })))
        .collect();
    let mut criterion = Criterion::default().configure_from_args();
    {
        let mut group = criterion.benchmark_group("junk_first_open");
        group.sample_size(10);
        for (shape, temp) in &small {
            group.bench_function(shape.label(), |b| {
                b.iter_custom(|iters| (0..iters).map(|_| first_open(temp)).sum());
            });
        }
        group.finish();
    }
    criterion.final_summary();

    let sizes: [u64; 6] = if bench_mode {
        [8_000, 8_000, 50_000, 8_000, 8_000, 50_000]
    } else {
        [200; 6]
    };
    for (&shape, lines) in shapes.iter().zip(sizes) {
        let temp = junk(shape, lines);
        let _ = std::fs::remove_file(temp.home().verified_path(temp.project()));
        let start = Instant::now();
        let mut session =
            Session::open(temp.home(), temp.project(), Actor::Observer, temp.now()).expect("open");
        let open = start.elapsed();
        session.save().expect("saved");
        drop(session);
        // The database and its write-ahead log.
        let path = temp.home().verified_path(temp.project());
        let kept: u64 = [path.clone(), path.with_extension("db-wal")]
            .iter()
            .filter_map(|file| std::fs::metadata(file).ok())
            .map(|meta| meta.len())
            .sum();
        eprintln!(
            "junk {} ({lines} lines by {}): first open {open:.2?}, kept state {kept} bytes",
            shape.label(),
            shape
                .seated()
                .map_or("a key that holds no name", |name| name)
        );
    }

    let entries = if bench_mode { 100_000 } else { 1_000 };
    let normal = bulk::builder().entries(entries).talk_percent(30).build();
    let _ = std::fs::remove_file(normal.verified_path());
    let start = Instant::now();
    let mut session = Session::open(
        normal.home(),
        normal.project(),
        Actor::Observer,
        normal.now(),
    )
    .expect("the normal channel opens");
    let open = start.elapsed();
    session.save().expect("saved");
    drop(session);
    eprintln!(
        "junk none (a normal channel of {} entries): first open {open:.2?}",
        normal.entries()
    );
}

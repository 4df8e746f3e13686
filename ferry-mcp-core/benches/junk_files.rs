//! A first open of a channel whose folder holds 100,000 empty files that are not part of the
//! format (issue 17, finding 8): anyone who can write the synced folder can leave them, and
//! each is reported once. An app drops a server that does not answer within about 2 s, so the
//! target is a first open (no kept state) under 2 s; a warm open (the kept state's listings
//! confirmed by the folders' stamps) is printed beside it.
//!
//! The files are split between the channel's top folder and an agent's log folder, the two
//! listings that report them. Under `cargo test --benches` (no `--bench` flag) there are 1,000
//! files, each open measured once.

use std::hint::black_box;
use std::time::{Duration, Instant};

use criterion::Criterion;
use ferry_mcp_core::channel::fold::levels::Level;
use ferry_mcp_core::channel::session::{Actor, Session};
use ferry_mcp_testkit::temp_channel::TempChannel;

fn open(temp: &TempChannel) -> Session {
    Session::open(temp.home(), temp.project(), Actor::Observer, temp.now())
        .expect("the channel opens")
}

/// A first open: the kept state removed, every file listed and reported.
fn first_open(temp: &TempChannel) -> Duration {
    let verified = temp.home().verified_path(temp.project());
    let _ = remove_kept_state(&verified);
    let start = Instant::now();
    let mut session = black_box(open(temp));
    let spent = start.elapsed();
    session.save().expect("the kept state saves");
    spent
}

/// Removes a kept state and its journal files.
fn remove_kept_state(path: &std::path::Path) -> std::io::Result<()> {
    for suffix in ["", "-wal", "-shm"] {
        let mut name = path.as_os_str().to_owned();
        name.push(suffix);
        match std::fs::remove_file(&name) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => return Err(e),
            _ => {}
        }
    }
    Ok(())
}

fn warm_open(temp: &TempChannel) -> Duration {
    let start = Instant::now();
    drop(black_box(open(temp)));
    start.elapsed()
}

fn median(mut times: Vec<Duration>) -> Duration {
    times.sort();
    times[times.len() / 2]
}

fn channel_with_junk(files: usize) -> TempChannel {
    let temp = TempChannel::builder()
        .agent("fang", Level::Member)
        .build()
        .expect("a channel");
    let folder = temp.channel_dir().join("logs/fang");
    std::fs::create_dir_all(&folder).expect("fang's folder");
    for n in 0..files {
        let dir = if n % 2 == 0 {
            temp.channel_dir().to_owned()
        } else {
            folder.clone()
        };
        std::fs::write(dir.join(format!("junk-{n:06}")), b"").expect("a junk file");
    }
    temp
}

fn main() {
    let bench_mode = std::env::args().any(|a| a == "--bench");
    let files = if bench_mode { 100_000 } else { 1_000 };
    let temp = channel_with_junk(files);
    let label = format!("{}k_files", files / 1_000);

    let mut criterion = Criterion::default().configure_from_args();
    {
        let mut group = criterion.benchmark_group("open_junk");
        group.sample_size(10);
        group.warm_up_time(Duration::from_millis(500));
        group.bench_function(format!("first_{label}"), |b| {
            b.iter_custom(|iters| (0..iters).map(|_| first_open(&temp)).sum());
        });
        // Settled stamps (2 s after the last change) let a warm open trust the listings kept.
        std::thread::sleep(Duration::from_millis(2_100));
        let _ = first_open(&temp);
        group.bench_function(format!("warm_{label}"), |b| b.iter(|| warm_open(&temp)));
        group.finish();
    }
    criterion.final_summary();

    let rounds = if bench_mode { 3 } else { 1 };
    let first = median((0..rounds).map(|_| first_open(&temp)).collect());
    let warm = median((0..rounds).map(|_| warm_open(&temp)).collect());
    eprintln!(
        "open of a channel with {files} junk files: first {first:.2?} (under 2 s: {}), warm {warm:.2?}",
        if first < Duration::from_secs(2) {
            "yes"
        } else {
            "NO"
        }
    );
}

//! A new machine's first open of a bulk channel (70% order work, 30% talk), once: for a
//! profile (`perf record`) and for peak memory (`/usr/bin/time -v`), which the
//! `first_open` bench does not give.
//!
//! `cargo run --release -p ferry-mcp-core --example first_open -- ENTRIES [checkpoint] [keep]`
//! builds the channel (ending with the master's checkpoint when asked, ADR 0023) in another
//! process's folders, then opens it on an empty state folder and saves, and prints the time.
//! Building holds more memory than opening: with `FERRY_FIRST_OPEN_DIR=D` the channel is built
//! once into `D` by `ENTRIES build`, and later runs only open it (delete `D` afterwards).

use std::path::PathBuf;
use std::time::Instant;

use ferry_mcp_core::channel::log::names::ProjectId;
use ferry_mcp_core::channel::machine::home::Home;
use ferry_mcp_core::channel::session::{Actor, Session};
use ferry_mcp_core::time::Timestamp;
use ferry_mcp_testkit::bulk;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let entries: u64 = args.first().and_then(|n| n.parse().ok()).unwrap_or(100_000);
    let has = |word: &str| args.iter().any(|a| a == word);
    let kept_dir = std::env::var_os("FERRY_FIRST_OPEN_DIR").map(PathBuf::from);
    let project = ProjectId::parse("bulk").expect("a project id");
    let (home, now, _bulk) = match &kept_dir {
        Some(dir) if !has("build") => {
            let now = std::fs::read_to_string(dir.join("now"))
                .expect("a channel built by `ENTRIES build`")
                .trim()
                .parse()
                .expect("the time it was built at");
            (
                Home::at(dir.join("home")),
                Timestamp::from_millis(now),
                None,
            )
        }
        _ => {
            let started = Instant::now();
            let mut builder = bulk::builder().entries(entries).talk_percent(30);
            if has("checkpoint") {
                builder = builder.checkpoint();
            }
            let built = builder.build();
            eprintln!(
                "first_open: built {} entries in {:.1?}",
                built.entries(),
                started.elapsed()
            );
            if let Some(dir) = &kept_dir {
                copy_dir(built.root(), dir);
                // The state folder names the channel by its path: register it where it is now.
                let home = Home::at(dir.join("home"));
                std::fs::remove_file(dir.join("home/projects/bulk/project.json"))
                    .expect("the copied registration");
                home.register_project(&project, &dir.join("channel"))
                    .expect("the copied channel is registered");
                std::fs::write(dir.join("now"), built.now().as_millis().to_string())
                    .expect("the time is kept");
                return;
            }
            (built.home().clone(), built.now(), Some(built))
        }
    };
    let _ = std::fs::remove_file(home.verified_path(&project));
    let started = Instant::now();
    let mut session =
        Session::open(&home, &project, Actor::Observer, now).expect("the bulk channel opens");
    let opened = started.elapsed();
    session.save().expect("the kept state is written");
    eprintln!(
        "first_open: fresh open of {} in {opened:.2?}, saved at {:.2?}; from a checkpoint: {}",
        session.state().counter(),
        started.elapsed(),
        session.started_from_checkpoint().is_some()
    );
    if !has("keep") {
        let _ = std::fs::remove_file(home.verified_path(&project));
    }
}

fn copy_dir(from: &std::path::Path, to: &std::path::Path) {
    std::fs::create_dir_all(to).expect("a folder");
    for entry in std::fs::read_dir(from).expect("a folder to copy") {
        let entry = entry.expect("an entry");
        let target = to.join(entry.file_name());
        if entry.file_type().expect("a type").is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), target).expect("a copy");
        }
    }
}

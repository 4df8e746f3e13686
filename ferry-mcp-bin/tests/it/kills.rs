//! The kept state under a killed or a concurrent `ferry` (ADR 0011's crash-safety and two-writer
//! rows): a command killed with SIGKILL at any moment of its run, its save included, loses
//! nothing a command acknowledged and leaves a kept state that opens without being rebuilt; two
//! commands saving at once both save, and neither corrupts it.

use std::path::Path;
use std::process::{Child, Stdio};
use std::time::Instant;

use ferry_mcp_core::channel::log::names::ProjectId;
use ferry_mcp_core::channel::machine::home::Home;
use serde_json::Value;

use super::admin::{join_args, project, run, run_ok, set_args};

fn kept_state(home: &Path) -> std::path::PathBuf {
    Home::at(home.to_owned()).verified_path(&ProjectId::parse("demo").unwrap())
}

fn titles(home: &Path) -> Vec<String> {
    let out = run_ok(
        home,
        &["order", "list", "--all", "--project", "demo", "--json"],
    );
    let list: Value = serde_json::from_str(&out).unwrap();
    list["orders"]
        .as_array()
        .unwrap()
        .iter()
        .map(|row| row["title"].as_str().unwrap().to_owned())
        .collect()
}

/// SQLite's own check of the whole database file, and an open by `ferry` that keeps what it
/// finds (a kept state that could not be read would be rebuilt, and say so).
fn assert_kept_state_whole(home: &Path, after: &str) {
    let conn = rusqlite::Connection::open(kept_state(home)).unwrap();
    let check: String = conn
        .query_row("PRAGMA integrity_check", [], |row| row.get(0))
        .unwrap();
    assert_eq!(check, "ok", "{after}");
    drop(conn);
    let out = run_ok(home, &["channel", "status", "--project", "demo", "--json"]);
    let status: Value = serde_json::from_str(&out).unwrap();
    let problems = status["problems"].as_array().unwrap();
    assert!(
        problems
            .iter()
            .all(|p| !p.as_str().unwrap().contains("rebuilt")),
        "{after}: {problems:?}"
    );
}

fn issue(home: &Path, title: &str) -> Child {
    std::process::Command::new(assert_cmd::cargo::cargo_bin("ferry"))
        .env("FERRY_HOME", home)
        .env_remove("XDG_STATE_HOME")
        .env_remove("XDG_RUNTIME_DIR")
        .args(["order", "issue", title, "--project", "demo", "--json"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap()
}

#[test]
fn a_command_killed_at_any_moment_of_its_run_loses_no_acknowledged_order_and_never_corrupts_the_kept_state()
 {
    let dir = tempfile::tempdir().unwrap();
    let home = project(&dir);
    run_ok(&home, &join_args("fang"));
    // A board and records to save beside the core, as on a working channel.
    for n in 0..5 {
        run_ok(
            &home,
            &["order", "issue", &format!("Warm {n}"), "--project", "demo"],
        );
    }
    let started = Instant::now();
    assert!(issue(&home, "Timed").wait().unwrap().success());
    let whole_run = started.elapsed();
    let mut acknowledged = vec!["Timed".to_owned()];
    let mut killed = Vec::new();
    // Kills spread from a third of a command's run to past its end: the later ones land
    // after the entry is written, in or around the save that follows it.
    const KILLS: u32 = 12;
    for n in 0..KILLS {
        let title = format!("Killed {n}");
        let mut child = issue(&home, &title);
        std::thread::sleep(whole_run / 3 + whole_run * n / KILLS);
        let _ = child.kill();
        if child.wait().unwrap().success() {
            acknowledged.push(title);
        } else {
            killed.push(title);
        }
        assert_kept_state_whole(&home, &format!("after kill {n}"));
    }
    let board = titles(&home);
    for title in &acknowledged {
        assert_eq!(
            board.iter().filter(|t| *t == title).count(),
            1,
            "{title} acknowledged, on the board once: {board:?}"
        );
    }
    let written_unacknowledged = killed.iter().filter(|t| board.contains(t)).count();
    eprintln!(
        "{} kills: {} before the entry was written, {written_unacknowledged} after it (in or around the save), {} runs finished first",
        KILLS,
        killed.len() - written_unacknowledged,
        acknowledged.len() - 1
    );
}

#[test]
fn two_commands_saving_at_once_both_save_and_leave_the_kept_state_whole() {
    let dir = tempfile::tempdir().unwrap();
    let home = project(&dir);
    run_ok(&home, &join_args("fang"));
    run_ok(&home, &set_args("fang", "member"));
    run_ok(&home, &join_args("gus"));
    const EACH: usize = 6;
    // The master issuing orders and an agent posting, each in its own process, at once: both
    // save the same kept state (SQLite's lock and busy timeout serialize them).
    let (orders, posts) = std::thread::scope(|scope| {
        let orders = scope.spawn(|| {
            (0..EACH)
                .map(|n| {
                    run(
                        &home,
                        &["order", "issue", &format!("Order {n}"), "--project", "demo"],
                    )
                })
                .collect::<Vec<_>>()
        });
        let posts = scope.spawn(|| {
            (0..EACH)
                .map(|n| {
                    run(
                        &home,
                        &[
                            "talk",
                            "post",
                            &format!("progress {n}"),
                            "--to",
                            "all",
                            "--as",
                            "fang",
                            "--project",
                            "demo",
                        ],
                    )
                })
                .collect::<Vec<_>>()
        });
        (orders.join().unwrap(), posts.join().unwrap())
    });
    for (ok, _, stderr) in orders.iter().chain(&posts) {
        assert!(ok, "{stderr}");
        // A save that failed says so on stderr (the entry is written either way).
        assert!(!stderr.contains("could not be saved"), "{stderr}");
    }
    assert_kept_state_whole(&home, "after two writers");
    let board = titles(&home);
    for n in 0..EACH {
        assert!(board.contains(&format!("Order {n}")), "{board:?}");
    }
    let read = run_ok(
        &home,
        &[
            "talk",
            "read",
            "--peek",
            "--as",
            "gus",
            "--project",
            "demo",
            "--json",
        ],
    );
    for n in 0..EACH {
        assert!(read.contains(&format!("progress {n}")), "{read}");
    }
}

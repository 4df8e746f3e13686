//! Concurrent writers of one log: the file lock keeps one chain, across real processes.
//!
//! The child processes are this same test binary, re-run with `--ignored --exact` on
//! [`appender_child`] and told what to do through environment variables.

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use ferry_mcp_core::channel::store::Channel;
use serde_json::json;

use crate::channel_log::{NOW, demo_channel, key, name};

const DIR_VAR: &str = "FERRY_TEST_APPENDER_DIR";
const TAG_VAR: &str = "FERRY_TEST_APPENDER_TAG";
const COUNT_VAR: &str = "FERRY_TEST_APPENDER_COUNT";
const GO_FILE: &str = "go";

/// Says it is ready (a `ready-<tag>` file), then appends notes as alice once the parent creates
/// the `go` file next to the channel.
/// Ignored in normal runs; does nothing unless the parent test set its variables.
#[test]
#[ignore = "child process of two_processes_of_one_agent_append_one_intact_chain"]
fn appender_child() {
    let (Ok(dir), Ok(tag), Ok(count)) = (
        std::env::var(DIR_VAR),
        std::env::var(TAG_VAR),
        std::env::var(COUNT_VAR),
    ) else {
        return;
    };
    let dir = Path::new(&dir);
    let count: u64 = count.parse().unwrap();
    let channel = Channel::open(&dir.join("channel")).unwrap();
    let mut writer = channel.writer(&name("alice"), &key(1)).unwrap();
    std::fs::write(dir.join(format!("ready-{tag}")), b"").unwrap();
    let deadline = Instant::now() + Duration::from_secs(30);
    while !dir.join(GO_FILE).exists() {
        assert!(Instant::now() < deadline, "the parent never said go");
        std::thread::sleep(Duration::from_millis(1));
    }
    for n in 1..=count {
        writer
            .append("note", json!({ "by": tag, "n": n }), NOW)
            .unwrap();
    }
}

fn spawn_appender(dir: &Path, tag: &str, count: u64) -> std::process::Child {
    Command::new(std::env::current_exe().unwrap())
        .args([
            "concurrency::appender_child",
            "--exact",
            "--ignored",
            "--test-threads=1",
        ])
        .env(DIR_VAR, dir)
        .env(TAG_VAR, tag)
        .env(COUNT_VAR, count.to_string())
        .stdout(Stdio::null())
        .spawn()
        .unwrap()
}

#[test]
fn two_processes_of_one_agent_append_one_intact_chain() {
    let dir = tempfile::tempdir().unwrap();
    let channel = demo_channel(&dir.path().join("channel"));
    let children = [
        spawn_appender(dir.path(), "a", 1000),
        spawn_appender(dir.path(), "b", 1000),
    ];
    // Go only once both are waiting for it: a process that starts late would otherwise find
    // the other one done, and the writers would never overlap.
    let deadline = Instant::now() + Duration::from_secs(30);
    while !["a", "b"]
        .iter()
        .all(|tag| dir.path().join(format!("ready-{tag}")).exists())
    {
        assert!(Instant::now() < deadline, "a child never got ready");
        std::thread::sleep(Duration::from_millis(1));
    }
    std::fs::write(dir.path().join(GO_FILE), b"").unwrap();
    for mut child in children {
        assert!(child.wait().unwrap().success(), "a child process failed");
    }

    let batch = channel.reader().poll();
    assert_eq!(batch.problems, vec![]);
    let seqs: Vec<u64> = batch.entries.iter().map(|e| e.seq()).collect();
    assert_eq!(seqs, (1..=2000).collect::<Vec<u64>>());
    for pair in batch.entries.windows(2) {
        assert_eq!(pair[1].prev(), Some(pair[0].hash()));
    }
    let switches = batch
        .entries
        .windows(2)
        .filter(|pair| pair[0].body()["by"] != pair[1].body()["by"])
        .count();
    assert!(switches > 1, "the two writers never overlapped");
    for tag in ["a", "b"] {
        let mine: Vec<u64> = batch
            .entries
            .iter()
            .filter(|e| e.body()["by"] == tag)
            .map(|e| e.body()["n"].as_u64().unwrap())
            .collect();
        assert_eq!(mine, (1..=1000).collect::<Vec<u64>>(), "writer {tag}");
    }
}

#[test]
fn writers_on_separate_threads_with_separate_handles_keep_one_chain() {
    let dir = tempfile::tempdir().unwrap();
    let channel = demo_channel(dir.path());
    std::thread::scope(|scope| {
        for _ in 0..4 {
            let channel = &channel;
            scope.spawn(move || {
                let mut writer = channel.writer(&name("alice"), &key(1)).unwrap();
                for n in 0..50 {
                    writer.append("note", json!({ "n": n }), NOW).unwrap();
                }
            });
        }
    });
    let batch = channel.reader().poll();
    assert_eq!(batch.problems, vec![]);
    let seqs: Vec<u64> = batch.entries.iter().map(|e| e.seq()).collect();
    assert_eq!(seqs, (1..=200).collect::<Vec<u64>>());
}

//! Concurrent writers of one log: the file lock keeps one chain, across real processes.
//!
//! The child processes are this same test binary, re-run with `--ignored --exact` on
//! [`appender_child`] and told what to do through environment variables.

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use ferry_mcp_core::channel::log::store::Channel;
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

// ---- the kept state across processes (ADR 0011) ----

const HOME_VAR: &str = "FERRY_TEST_KEPT_HOME";
const AGENT_VAR: &str = "FERRY_TEST_KEPT_AGENT";
const NOW_VAR: &str = "FERRY_TEST_KEPT_NOW";
/// A file the saver child appends a line to after each save returned: what was acknowledged.
const ACKED_FILE: &str = "acked";

/// Saves as the agent the parent names, over and over: a message, then a save. Once both
/// children are ready it runs `count` rounds (0: until it is killed), noting each save that
/// returned in its `acked-<agent>` file.
/// Ignored in normal runs; does nothing unless the parent test set its variables.
#[test]
#[ignore = "child process of the kept-state tests across processes"]
fn saver_child() {
    use ferry_mcp_core::channel::log::names::ProjectId;
    use ferry_mcp_core::channel::machine::home::Home;
    use ferry_mcp_core::channel::ops;
    use ferry_mcp_core::channel::session::{Actor, Session};
    use std::io::Write as _;

    let (Ok(home), Ok(agent), Ok(now), Ok(count)) = (
        std::env::var(HOME_VAR),
        std::env::var(AGENT_VAR),
        std::env::var(NOW_VAR),
        std::env::var(COUNT_VAR),
    ) else {
        return;
    };
    let dir = Path::new(&home).parent().unwrap().to_owned();
    let home = Home::at(&home);
    let project = ProjectId::parse("demo").unwrap();
    let now = ferry_mcp_core::time::Timestamp::from_millis(now.parse().unwrap());
    let count: u64 = count.parse().unwrap();
    let name = ferry_mcp_core::channel::log::names::AgentName::parse(&agent).unwrap();
    std::fs::write(dir.join(format!("ready-{agent}")), b"").unwrap();
    let deadline = Instant::now() + Duration::from_secs(30);
    while !dir.join(GO_FILE).exists() {
        assert!(Instant::now() < deadline, "the parent never said go");
        std::thread::sleep(Duration::from_millis(1));
    }
    let mut acked = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(dir.join(format!("{ACKED_FILE}-{agent}")))
        .unwrap();
    let mut n = 0;
    while count == 0 || n < count {
        n += 1;
        let mut session = Session::open(&home, &project, Actor::Agent(name.clone()), now).unwrap();
        let request = ops::talk::PostRequest {
            to: "all".into(),
            text: format!("{agent} round {n}"),
            reply_to: None,
        };
        ops::talk::post(&mut session, &request, now).unwrap();
        session.save().unwrap();
        assert_eq!(session.local_problems(), &[] as &[String]);
        drop(session);
        writeln!(acked, "{n}").unwrap();
    }
}

fn spawn_saver(
    temp: &ferry_mcp_testkit::temp_channel::TempChannel,
    agent: &str,
    count: u64,
) -> std::process::Child {
    Command::new(std::env::current_exe().unwrap())
        .args([
            "concurrency::saver_child",
            "--exact",
            "--ignored",
            "--test-threads=1",
        ])
        .env(HOME_VAR, temp.home_dir())
        .env(AGENT_VAR, agent)
        .env(NOW_VAR, temp.now().as_millis().to_string())
        .env(COUNT_VAR, count.to_string())
        .stdout(Stdio::null())
        .spawn()
        .unwrap()
}

/// Waits for the children `agents` to be ready, then tells them to go.
fn go_when_ready(temp: &ferry_mcp_testkit::temp_channel::TempChannel, agents: &[&str]) {
    let dir = temp.home_dir().parent().unwrap().to_owned();
    let deadline = Instant::now() + Duration::from_secs(30);
    while !agents
        .iter()
        .all(|agent| dir.join(format!("ready-{agent}")).exists())
    {
        assert!(Instant::now() < deadline, "a child never got ready");
        std::thread::sleep(Duration::from_millis(1));
    }
    std::fs::write(dir.join(GO_FILE), b"").unwrap();
}

/// The messages a view of `temp` reads.
fn message_texts(temp: &ferry_mcp_testkit::temp_channel::TempChannel) -> Vec<String> {
    use ferry_mcp_core::channel::session::Actor;
    let mut view = temp.session(Actor::Master);
    let read = ferry_mcp_core::channel::ops::talk::read(
        &mut view,
        &ferry_mcp_core::channel::ops::talk::ReadRequest {
            limit: 10_000,
            ..Default::default()
        },
        &mut |_| true,
        temp.now(),
    )
    .unwrap();
    assert_eq!(view.local_problems(), &[] as &[String]);
    let mut texts: Vec<String> = read.messages.iter().map(|m| m.text.clone()).collect();
    texts.sort();
    texts
}

#[test]
fn two_processes_saving_the_kept_state_at_once_each_save_and_nothing_is_lost_or_reported() {
    use ferry_mcp_core::channel::fold::levels::Level;
    use ferry_mcp_testkit::temp_channel::TempChannel;

    let temp = TempChannel::builder()
        .agent("ada", Level::Member)
        .agent("bob", Level::Member)
        .build()
        .unwrap();
    let children = [spawn_saver(&temp, "ada", 40), spawn_saver(&temp, "bob", 40)];
    go_when_ready(&temp, &["ada", "bob"]);
    for mut child in children {
        assert!(child.wait().unwrap().success(), "a child process failed");
    }
    let mut expected: Vec<String> = ["ada", "bob"]
        .iter()
        .flat_map(|agent| (1..=40).map(move |n| format!("{agent} round {n}")))
        .collect();
    expected.sort();
    assert_eq!(message_texts(&temp), expected);
    // The kept state is whole: it is what a machine that folds everything reads.
    let conn = rusqlite::Connection::open(temp.home().verified_path(temp.project())).unwrap();
    let check: String = conn
        .query_row("PRAGMA integrity_check", [], |row| row.get(0))
        .unwrap();
    assert_eq!(check, "ok");
}

#[cfg(unix)]
#[test]
fn a_process_killed_while_it_saves_leaves_the_kept_state_whole_with_every_save_it_acknowledged() {
    use ferry_mcp_core::channel::fold::levels::Level;
    use ferry_mcp_testkit::temp_channel::TempChannel;

    let temp = TempChannel::builder()
        .agent("ada", Level::Member)
        .build()
        .unwrap();
    let dir = temp.home_dir().parent().unwrap().to_owned();
    let path = temp.home().verified_path(temp.project());
    let saves = || -> u64 {
        let conn = rusqlite::Connection::open(&path).unwrap();
        let check: String = conn
            .query_row("PRAGMA integrity_check", [], |row| row.get(0))
            .unwrap();
        assert_eq!(check, "ok", "the kept state is corrupt");
        let saves: Vec<u8> = conn
            .query_row("SELECT value FROM meta WHERE name = 'saves'", [], |row| {
                row.get(0)
            })
            .unwrap();
        u64::from_le_bytes(saves.try_into().unwrap())
    };
    let mut before = 0;
    for round in 0..5u64 {
        let _ = std::fs::remove_file(dir.join(GO_FILE));
        let _ = std::fs::remove_file(dir.join("ready-ada"));
        let _ = std::fs::remove_file(dir.join(format!("{ACKED_FILE}-ada")));
        let mut child = spawn_saver(&temp, "ada", 0);
        go_when_ready(&temp, &["ada"]);
        // Once it has saved (a busy machine starts it late), killed at a moment of no one's
        // choosing: some rounds in, likely inside a save.
        let acked_file = dir.join(format!("{ACKED_FILE}-ada"));
        let deadline = Instant::now() + Duration::from_secs(60);
        while std::fs::read_to_string(&acked_file).map_or(true, |acked| acked.is_empty()) {
            assert!(
                Instant::now() < deadline,
                "round {round}: the child never saved"
            );
            assert!(
                child.try_wait().unwrap().is_none(),
                "round {round}: the child died"
            );
            std::thread::sleep(Duration::from_millis(1));
        }
        std::thread::sleep(Duration::from_millis(50 + 37 * round));
        child.kill().unwrap();
        child.wait().unwrap();
        let acked = std::fs::read_to_string(dir.join(format!("{ACKED_FILE}-ada")))
            .unwrap_or_default()
            .lines()
            .count() as u64;
        assert!(acked > 0, "round {round}: no save returned before the kill");
        let now = saves();
        assert!(
            now >= before + acked,
            "round {round}: {acked} saves acknowledged, {} kept",
            now - before
        );
        before = now;
        // And it opens whole, without a report, holding every message acknowledged.
        let texts = message_texts(&temp);
        assert!(texts.len() as u64 >= acked);
    }
}

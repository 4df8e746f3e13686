//! Attacks on the machine's promises through the real binary: what one process finds is
//! still reported by the next, and `ferry init` killed at any moment can be run again.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

const FERRY: &str = env!("CARGO_BIN_EXE_ferry");

fn ferry(home: &Path) -> Command {
    let mut cmd = Command::new(FERRY);
    cmd.env("FERRY_HOME", home)
        .env_remove("XDG_STATE_HOME")
        .env_remove("XDG_RUNTIME_DIR")
        .stdin(Stdio::null());
    cmd
}

/// Runs `ferry args`: (success, stdout, stderr).
fn run(home: &Path, args: &[&str]) -> (bool, String, String) {
    let out = ferry(home).args(args).output().unwrap();
    (
        out.status.success(),
        String::from_utf8(out.stdout).unwrap(),
        String::from_utf8(out.stderr).unwrap(),
    )
}

fn run_ok(home: &Path, args: &[&str]) -> String {
    let (ok, stdout, stderr) = run(home, args);
    assert!(ok, "ferry {args:?} failed: {stderr}");
    stdout
}

fn init_args(channel: &Path) -> Vec<&str> {
    vec![
        "init",
        "--project",
        "demo",
        "--no-seal",
        "--channel",
        channel.to_str().unwrap(),
    ]
}

const STATUS: [&str; 5] = ["channel", "status", "--project", "demo", "--json"];

fn status_json(home: &Path) -> Value {
    serde_json::from_str(&run_ok(home, &STATUS)).unwrap()
}

fn problems(status: &Value) -> Vec<String> {
    status["problems"]
        .as_array()
        .unwrap()
        .iter()
        .map(|problem| problem.as_str().unwrap().to_owned())
        .collect()
}

/// The only log in `dir`.
fn only_log(dir: &Path) -> PathBuf {
    let mut logs: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|item| item.unwrap().path())
        .collect();
    assert_eq!(logs.len(), 1, "{logs:?}");
    logs.remove(0)
}

#[test]
fn an_integrity_problem_found_by_one_process_is_still_reported_by_channel_status_in_the_next() {
    let dir = tempfile::tempdir().unwrap();
    let home = dir.path().join("home");
    let channel = dir.path().join("channel");
    run_ok(&home, &init_args(&channel));
    run_ok(
        &home,
        &["channel", "join", "--as", "fang", "--project", "demo"],
    );
    run_ok(
        &home,
        &["access", "set", "fang", "member", "--project", "demo"],
    );
    run_ok(
        &home,
        &["access", "set", "fang", "worker", "--project", "demo"],
    );
    // The attacker deletes the demotion; one process finds it and says nothing of it.
    let log = only_log(&channel.join("logs/master"));
    let text = std::fs::read_to_string(&log).unwrap();
    let kept: String = text
        .lines()
        .take(1)
        .map(|line| format!("{line}\n"))
        .collect();
    std::fs::write(&log, kept).unwrap();
    let shown = run_ok(&home, &["access", "show", "fang", "--project", "demo"]);
    assert!(shown.contains("worker"), "{shown}");

    // Every later process reports it, and fang stays a worker.
    for _ in 0..2 {
        let status = status_json(&home);
        let rolled: Vec<String> = problems(&status)
            .into_iter()
            .filter(|problem| problem.contains(": rolled_back: "))
            .collect();
        assert_eq!(rolled.len(), 1, "{status}");
        assert!(rolled[0].starts_with("logs/master/"), "{rolled:?}");
        assert_eq!(status["agents"][0]["level"], "worker", "{status}");
    }
}

/// A small deterministic generator (xorshift), so a failing iteration can be run again.
struct Random(u64);

impl Random {
    fn below(&mut self, bound: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % bound.max(1)
    }
}

/// Runs `ferry init` and kills it (SIGKILL) after `delay`; returns whether it had finished.
fn init_killed_after(home: &Path, channel: &Path, delay: Duration) -> bool {
    let mut child = ferry(home)
        .args(init_args(channel))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    std::thread::sleep(delay);
    let finished = child.try_wait().unwrap().is_some();
    let _ = child.kill();
    child.wait().unwrap();
    finished
}

#[test]
fn ferry_init_killed_at_any_moment_leaves_no_project_or_a_whole_one_and_a_rerun_succeeds() {
    let loops: u64 = std::env::var("FERRY_KILL_LOOPS")
        .ok()
        .and_then(|loops| loops.parse().ok())
        .unwrap_or(20);
    // How long one init takes here: the kills are spread over that time.
    let dir = tempfile::tempdir().unwrap();
    let started = Instant::now();
    run_ok(
        &dir.path().join("home"),
        &init_args(&dir.path().join("channel")),
    );
    let full = u64::try_from(started.elapsed().as_micros()).unwrap();
    let mut random = Random(0x5eed_f00d_1234_5678);
    let mut finished = 0;
    for round in 0..loops {
        let dir = tempfile::tempdir().unwrap();
        let home = dir.path().join("home");
        let channel = dir.path().join("channel");
        let delay = Duration::from_micros(random.below(full * 5 / 4));
        if init_killed_after(&home, &channel, delay) {
            finished += 1;
        }
        let context = format!("round {round}, killed after {delay:?}");

        // No project, or a whole one.
        let (ok, stdout, stderr) = run(&home, &STATUS);
        if ok {
            let status: Value = serde_json::from_str(&stdout).unwrap();
            assert_eq!(status["master_key_here"], "ready", "{context}: {status}");
        } else {
            assert!(
                stderr.contains("unknown project demo"),
                "{context}: {stderr}"
            );
            assert!(
                std::fs::read_dir(home.join("projects/demo"))
                    .map(|items| items
                        .flatten()
                        .all(|item| item.file_name() != "project.json"))
                    .unwrap_or(true),
                "{context}"
            );
        }
        // Running init again finishes it (or says it is already whole).
        let (ok, _, stderr) = run(&home, &init_args(&channel));
        assert!(
            ok || stderr.contains("project demo already exists on this machine"),
            "{context}: the rerun failed: {stderr}"
        );
        let status = status_json(&home);
        assert_eq!(status["master_key_here"], "ready", "{context}: {status}");
        assert_eq!(status["channel"], channel.to_str().unwrap(), "{context}");
        // Not even a temporary file of a genesis write the kill cut short is left over: the
        // rerun removes it.
        assert_eq!(problems(&status), Vec::<String>::new(), "{context}");
        run_ok(
            &home,
            &["channel", "join", "--as", "fang", "--project", "demo"],
        );
        run_ok(
            &home,
            &["access", "set", "fang", "member", "--project", "demo"],
        );
        let status = status_json(&home);
        assert_eq!(
            status["agents"][0]["level"], "member",
            "{context}: {status}"
        );
    }
    // Most kills land while init runs, not after it finished.
    assert!(
        finished < loops,
        "every kill came too late to interrupt anything"
    );
}

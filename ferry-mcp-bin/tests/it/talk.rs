//! `ferry talk` and `ferry channel secret`, run as the real binary on temporary state folders:
//! the human and an agent talking, what may not post and why, and a secret that opens only
//! with its recipient's key on its recipient's machine and is never in the channel in clear.

use std::fs;
use std::path::{Path, PathBuf};

use assert_cmd::Command;

fn ferry(home: &Path) -> Command {
    let mut cmd = Command::cargo_bin("ferry").unwrap();
    cmd.env("FERRY_HOME", home)
        .env_remove("XDG_STATE_HOME")
        .env_remove("XDG_RUNTIME_DIR");
    cmd
}

/// Runs `ferry args` with `stdin`; returns (success, stdout, stderr).
fn run_with(home: &Path, args: &[&str], stdin: &str) -> (bool, String, String) {
    let out = ferry(home).args(args).write_stdin(stdin).output().unwrap();
    (
        out.status.success(),
        String::from_utf8(out.stdout).unwrap(),
        String::from_utf8(out.stderr).unwrap(),
    )
}

fn run_ok(home: &Path, args: &[&str]) -> String {
    let (ok, stdout, stderr) = run_with(home, args, "");
    assert!(ok, "ferry {args:?} failed: {stderr}");
    stdout
}

/// Runs a command that must fail; returns (stdout, its one-line error).
fn run_err(home: &Path, args: &[&str]) -> (String, String) {
    let (ok, stdout, stderr) = run_with(home, args, "");
    assert!(!ok, "ferry {args:?} succeeded: {stdout}");
    assert_eq!(stderr.lines().count(), 1, "one line: {stderr}");
    (stdout, stderr.trim_end().to_owned())
}

/// Project `demo` in `dir/channel` with `agents` joined (each a Worker) and the Members of
/// `members` granted; returns the state folder `dir/home`.
fn project(dir: &Path, agents: &[&str], members: &[&str]) -> PathBuf {
    let home = dir.join("home");
    let channel = dir.join("channel");
    let channel = channel.to_str().unwrap();
    run_ok(
        &home,
        &[
            "init",
            "--project",
            "demo",
            "--no-seal",
            "--channel",
            channel,
        ],
    );
    for name in agents {
        run_ok(
            &home,
            &["channel", "join", "--as", name, "--project", "demo"],
        );
    }
    for name in members {
        run_ok(
            &home,
            &["access", "set", name, "member", "--project", "demo"],
        );
    }
    home
}

fn copy_dir(from: &Path, to: &Path) {
    fs::create_dir_all(to).unwrap();
    for entry in fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            fs::copy(entry.path(), &target).unwrap();
        }
    }
}

/// Every file under `dir`, with its bytes.
fn files(dir: &Path) -> Vec<(PathBuf, Vec<u8>)> {
    let mut all = Vec::new();
    for entry in fs::read_dir(dir).unwrap() {
        let entry = entry.unwrap();
        if entry.file_type().unwrap().is_dir() {
            all.extend(files(&entry.path()));
        } else {
            all.push((entry.path(), fs::read(entry.path()).unwrap()));
        }
    }
    all
}

fn holds(bytes: &[u8], needle: &[u8]) -> bool {
    bytes.windows(needle.len()).any(|window| window == needle)
}

const SECRET: &str = "tok-7c1f0e9a2b44d1-for-bob-only";

fn send_secret(home: &Path) -> String {
    let (ok, stdout, stderr) = run_with(
        home,
        &[
            "channel",
            "secret",
            "send",
            "deploy-token",
            "--to",
            "bob",
            "--project",
            "demo",
        ],
        &format!("{SECRET}\n"),
    );
    assert!(ok, "send failed: {stderr}");
    assert!(!stdout.contains(SECRET), "{stdout}");
    stdout
}

fn get(home: &Path, agent: &str) -> (bool, String, String) {
    let args = [
        "channel",
        "secret",
        "get",
        "deploy-token",
        "--as",
        agent,
        "--project",
        "demo",
    ];
    run_with(home, &args, "")
}

#[test]
fn a_secret_sent_from_stdin_opens_with_get_for_its_recipient_on_its_machine() {
    let dir = tempfile::tempdir().unwrap();
    let home = project(dir.path(), &["bob", "carol"], &[]);
    let sent = send_secret(&home);
    assert!(
        sent.starts_with("sent secret deploy-token to bob (sealed to its key;"),
        "{sent}"
    );

    let (ok, stdout, stderr) = get(&home, "bob");
    assert!(ok, "{stderr}");
    assert_eq!(stdout, format!("{SECRET}\n"));
    let listed = run_ok(
        &home,
        &[
            "channel",
            "secret",
            "list",
            "--as",
            "bob",
            "--project",
            "demo",
        ],
    );
    assert_eq!(listed, "deploy-token\n");
}

#[test]
fn a_secret_does_not_open_for_another_agent_or_on_a_machine_without_the_recipients_key() {
    let dir = tempfile::tempdir().unwrap();
    let home = project(dir.path(), &["bob", "carol"], &[]);
    send_secret(&home);

    // Another agent on the same machine.
    let (ok, stdout, stderr) = get(&home, "carol");
    assert!(!ok && !stdout.contains(SECRET), "{stdout}");
    assert!(
        stderr.contains("no secret deploy-token was sent to carol"),
        "{stderr}"
    );

    // The channel synced to a second machine, which does not hold bob's key.
    let other = tempfile::tempdir().unwrap();
    let channel = other.path().join("channel");
    copy_dir(&dir.path().join("channel"), &channel);
    let home2 = other.path().join("home");
    run_ok(
        &home2,
        &[
            "channel",
            "add",
            "--project",
            "demo",
            "--channel",
            channel.to_str().unwrap(),
        ],
    );
    let (ok, stdout, stderr) = get(&home2, "bob");
    assert!(!ok && !stdout.contains(SECRET), "{stdout}");
    assert!(stderr.contains("no key for it on this machine"), "{stderr}");
}

#[test]
fn a_sealed_secret_whose_blob_was_changed_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let home = project(dir.path(), &["bob"], &[]);
    send_secret(&home);
    let blobs: Vec<PathBuf> = fs::read_dir(dir.path().join("channel/blobs"))
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .collect();
    assert_eq!(
        blobs.len(),
        1,
        "the sealed value is the only blob: {blobs:?}"
    );
    let mut sealed = fs::read(&blobs[0]).unwrap();
    let middle = sealed.len() / 2;
    sealed[middle] ^= 0x01;
    fs::write(&blobs[0], &sealed).unwrap();

    let (ok, stdout, stderr) = get(&home, "bob");
    assert!(!ok, "a changed blob opened: {stdout}");
    assert!(stdout.is_empty(), "{stdout}");
    assert!(stderr.starts_with("ferry: "), "{stderr}");
    eprintln!("a tampered sealed secret got: {}", stderr.trim_end());
}

#[test]
fn a_secret_sent_is_in_no_file_of_the_channel_or_of_either_state_folder() {
    let dir = tempfile::tempdir().unwrap();
    let home = project(dir.path(), &["bob"], &[]);
    send_secret(&home);
    let (ok, stdout, _) = get(&home, "bob");
    assert!(ok && stdout.contains(SECRET));

    let other = tempfile::tempdir().unwrap();
    let channel = other.path().join("channel");
    copy_dir(&dir.path().join("channel"), &channel);
    let home2 = other.path().join("home");
    run_ok(
        &home2,
        &[
            "channel",
            "add",
            "--project",
            "demo",
            "--channel",
            channel.to_str().unwrap(),
        ],
    );
    let _ = get(&home2, "bob");

    let mut checked = 0;
    for root in [dir.path(), other.path()] {
        for (path, bytes) in files(root) {
            assert!(
                !holds(&bytes, SECRET.as_bytes()),
                "the secret is in {}",
                path.display()
            );
            checked += 1;
        }
    }
    assert!(checked > 5, "only {checked} files");
}

#[test]
fn what_a_worker_an_unseated_and_a_paused_agent_each_get_from_ferry_talk_post() {
    let dir = tempfile::tempdir().unwrap();
    let home = project(dir.path(), &["wendy", "bob"], &["bob"]);
    let post = |agent: &'static str| {
        [
            "talk",
            "post",
            "may I take order m2?",
            "--to",
            "master",
            "--as",
            agent,
            "--project",
            "demo",
        ]
    };
    let (_, worker) = run_err(&home, &post("wendy"));
    let (_, unseated) = run_err(&home, &post("ghost"));
    run_ok(&home, &["pause", "--reason", "the disk is being replaced"]);
    let (_, paused) = run_err(&home, &post("bob"));
    eprintln!(
        "what each got from `ferry talk post`:\n- a Worker (wendy): {worker}\n- an unseated agent (ghost): {unseated}\n- an agent on a paused machine (bob): {paused}"
    );
    assert_eq!(worker, "ferry: post needs member; wendy is worker");
    assert!(
        unseated.contains("`ferry channel join --as ghost --project demo`"),
        "{unseated}"
    );
    assert!(
        paused.starts_with("ferry: the machine is paused (the disk is being replaced)"),
        "{paused}"
    );
}

#[test]
fn the_human_and_an_agent_talk_with_ferry_talk_and_each_reads_only_what_is_new() {
    let dir = tempfile::tempdir().unwrap();
    let home = project(dir.path(), &["bob"], &["bob"]);
    let posted = run_ok(
        &home,
        &[
            "talk",
            "post",
            "please take m2 today",
            "--to",
            "bob",
            "--project",
            "demo",
        ],
    );
    assert!(posted.starts_with("posted m"), "{posted}");
    let bob_read = ["talk", "read", "--as", "bob", "--project", "demo"];
    let read = run_ok(&home, &bob_read);
    let first = read.lines().next().unwrap();
    assert!(
        first.ends_with(" master -> bob: please take m2 today"),
        "{read}"
    );
    assert!(run_ok(&home, &bob_read).starts_with("no new messages\n"));

    let reply = run_ok(
        &home,
        &[
            "talk",
            "post",
            "m2 taken",
            "--to",
            "master",
            "--as",
            "bob",
            "--project",
            "demo",
        ],
    );
    let reply_id = reply.trim_end().strip_prefix("posted ").unwrap().to_owned();
    let human = run_ok(&home, &["talk", "read", "--project", "demo"]);
    assert!(
        human.starts_with(&format!("{reply_id} bob -> master: m2 taken\n")),
        "{human}"
    );
    let receipts = run_ok(&home, &bob_read);
    assert!(
        receipts.contains(&format!(
            "your {reply_id} to master: read by master; unread by nobody"
        )),
        "{receipts}"
    );
}

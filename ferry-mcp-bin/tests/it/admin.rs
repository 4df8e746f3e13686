//! The human's and operator's commands, run as the real binary on a temporary FERRY_HOME.

use std::path::Path;

use assert_cmd::Command;

pub(crate) fn ferry(home: &Path) -> Command {
    let mut cmd = Command::cargo_bin("ferry").unwrap();
    cmd.env("FERRY_HOME", home)
        .env_remove("XDG_STATE_HOME")
        .env_remove("XDG_RUNTIME_DIR");
    cmd
}

/// Runs `ferry args` and returns (success, stdout, stderr).
pub(crate) fn run(home: &Path, args: &[&str]) -> (bool, String, String) {
    let out = ferry(home).args(args).output().unwrap();
    (
        out.status.success(),
        String::from_utf8(out.stdout).unwrap(),
        String::from_utf8(out.stderr).unwrap(),
    )
}

pub(crate) fn run_ok(home: &Path, args: &[&str]) -> String {
    let (ok, stdout, stderr) = run(home, args);
    assert!(ok, "ferry {args:?} failed: {stderr}");
    stdout
}

/// Runs a command that must fail and returns its one-line error.
pub(crate) fn run_err(home: &Path, args: &[&str]) -> String {
    let (ok, _, stderr) = run(home, args);
    assert!(!ok, "ferry {args:?} succeeded");
    assert_eq!(stderr.lines().count(), 1, "one line: {stderr}");
    stderr.trim_end().to_owned()
}

/// The KEY HERE column of the only row of `ferry access show NAME`.
fn key_here(show: &str) -> String {
    let row: Vec<&str> = show.lines().nth(1).unwrap().split_whitespace().collect();
    row[4].to_owned()
}

/// `ferry init --project demo --no-seal --channel CHANNEL` (the master key unsealed).
fn init_args(channel: &Path) -> [&str; 6] {
    let channel = channel.to_str().unwrap();
    [
        "init",
        "--project",
        "demo",
        "--no-seal",
        "--channel",
        channel,
    ]
}

/// `ferry channel add --project demo --channel CHANNEL`.
fn add_args(channel: &Path) -> [&str; 6] {
    let channel = channel.to_str().unwrap();
    ["channel", "add", "--project", "demo", "--channel", channel]
}

/// `ferry channel join --as NAME --project demo`.
pub(crate) fn join_args(name: &str) -> [&str; 6] {
    ["channel", "join", "--as", name, "--project", "demo"]
}

/// `ferry access set NAME LEVEL --project demo`.
pub(crate) fn set_args<'a>(name: &'a str, level: &'a str) -> [&'a str; 6] {
    ["access", "set", name, level, "--project", "demo"]
}

/// `ferry master handover --to-key KEY --proof PROOF --project demo`.
fn handover_args<'a>(key: &'a str, proof: &'a str) -> [&'a str; 8] {
    [
        "master",
        "handover",
        "--to-key",
        key,
        "--proof",
        proof,
        "--project",
        "demo",
    ]
}

/// A proof that parses but proves nothing (for refusals that come before the proof is checked).
const NO_PROOF: &str = "00000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000";

/// Project `demo` with its channel in `dir/channel`; returns the state folder `dir/home`.
pub(crate) fn project(dir: &tempfile::TempDir) -> std::path::PathBuf {
    let home = dir.path().join("home");
    run_ok(&home, &init_args(&dir.path().join("channel")));
    home
}

#[test]
fn init_join_grant_and_status_work_together() {
    let dir = tempfile::tempdir().unwrap();
    let home = project(&dir);
    assert!(dir.path().join("channel").is_dir());
    let joined = run_ok(&home, &join_args("Fang"));
    assert!(joined.starts_with("fang seated in demo"), "{joined}");
    let again = run_ok(&home, &join_args("fang"));
    assert!(again.starts_with("fang already seated in demo"), "{again}");
    run_ok(&home, &join_args("bolt"));
    let set = run_ok(&home, &set_args("fang", "orchestrator"));
    assert_eq!(set, "fang is now orchestrator\n");

    let status = status_json(&home);
    let levels: Vec<(String, String)> = status["agents"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| {
            (
                a["name"].as_str().unwrap().into(),
                a["level"].as_str().unwrap().into(),
            )
        })
        .collect();
    assert_eq!(
        levels,
        vec![
            ("bolt".into(), "worker".into()),
            ("fang".into(), "orchestrator".into())
        ]
    );
    assert_eq!(status["problems"], serde_json::json!([]));
    assert_eq!(status["paused"], serde_json::Value::Null);
    assert_eq!(status["master_key_here"], "ready");

    let show = run_ok(&home, &["access", "show", "bolt", "--project", "demo"]);
    let rows: Vec<Vec<&str>> = show
        .lines()
        .map(|l| l.split_whitespace().collect())
        .collect();
    assert_eq!(rows.len(), 2, "a header and one row: {show}");
    assert_eq!(rows[0][..3], ["AGENT", "LEVEL", "SEAT"]);
    assert_eq!(rows[1][..3], ["bolt", "worker", "seated"]);
}

#[test]
fn pause_and_resume_show_in_status() {
    let dir = tempfile::tempdir().unwrap();
    let home = project(&dir);
    run_ok(&home, &["pause", "--reason", "release freeze"]);
    let status = run_ok(&home, &["channel", "status", "--project", "demo"]);
    assert!(status.contains("PAUSED: release freeze"), "{status}");
    assert_eq!(run_ok(&home, &["resume"]), "resumed\n");
    assert_eq!(run_ok(&home, &["resume"]), "was not paused\n");
    let status = run_ok(&home, &["channel", "status", "--project", "demo"]);
    assert!(!status.contains("PAUSED"), "{status}");
}

#[test]
fn an_unknown_project_is_a_one_line_error() {
    let dir = tempfile::tempdir().unwrap();
    let home = project(&dir);
    let err = run_err(&home, &["channel", "status", "--project", "nope"]);
    insta::assert_snapshot!(err, @"ferry: unknown project nope (run `ferry init --project nope`)");
    let key = "d75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a";
    for args in [
        &["channel", "join", "--as", "fang", "--project", "nope"][..],
        &["access", "show", "--project", "nope"][..],
        &["access", "set", "fang", "member", "--project", "nope"][..],
        &[
            "master",
            "handover",
            "--to-key",
            key,
            "--proof",
            NO_PROOF,
            "--project",
            "nope",
        ][..],
        &["master", "new-key", "--project", "nope"][..],
    ] {
        assert_eq!(
            run_err(&home, args),
            "ferry: unknown project nope (run `ferry init --project nope`)",
            "{args:?}"
        );
    }
}

#[test]
fn a_bad_agent_name_is_a_one_line_error() {
    let dir = tempfile::tempdir().unwrap();
    let home = project(&dir);
    let err = run_err(&home, &join_args("a/b"));
    insta::assert_snapshot!(err, @"ferry: invalid value 'a/b' for '--as <NAME>': name contains '/'; only ASCII letters, digits, '.', '-' and '_' are allowed (see --help)");
    let err = run_err(&home, &join_args("master"));
    insta::assert_snapshot!(err, @"ferry: invalid value 'master' for '--as <NAME>': the name 'master' is reserved for the human's log (see --help)");
    let err = run_err(&home, &set_args("fang", "boss"));
    insta::assert_snapshot!(err, @r#"ferry: invalid value 'boss' for '<LEVEL>': unknown level "boss" (expected worker, member or orchestrator) (see --help)"#);
}

#[test]
fn a_name_taken_by_another_key_is_a_one_line_error() {
    let dir = tempfile::tempdir().unwrap();
    let home = project(&dir);
    run_ok(&home, &join_args("fang"));
    let other = second_machine(&dir, &dir.path().join("channel"));
    let err = run_err(&other, &join_args("fang"));
    insta::assert_snapshot!(err, @"ferry: the name fang is taken by another key");
}

#[test]
fn setting_a_level_without_the_master_key_is_a_one_line_error() {
    let dir = tempfile::tempdir().unwrap();
    let home = project(&dir);
    run_ok(&home, &join_args("fang"));
    std::fs::remove_file(home.join("projects/demo/keys/master.key")).unwrap();
    let err = run_err(&home, &set_args("fang", "member"));
    insta::assert_snapshot!(err, @"ferry: this machine does not hold the current master key of project demo");
}

#[test]
fn setting_a_level_for_an_unseated_agent_is_a_one_line_error() {
    let dir = tempfile::tempdir().unwrap();
    let home = project(&dir);
    let err = run_err(&home, &set_args("ghost", "member"));
    insta::assert_snapshot!(err, @"ferry: ghost is not seated in project demo");
}

#[test]
fn a_sealed_key_needs_its_passphrase_to_unlock() {
    let dir = tempfile::tempdir().unwrap();
    let home = project(&dir);
    ferry(&home)
        .args([
            "channel",
            "join",
            "--as",
            "fang",
            "--project",
            "demo",
            "--seal",
        ])
        .write_stdin("open sesame\n")
        .assert()
        .success();
    let show = run_ok(&home, &["access", "show", "fang", "--project", "demo"]);
    assert_eq!(key_here(&show), "locked", "{show}");

    let out = ferry(&home)
        .args(["key", "unlock", "--as", "fang", "--project", "demo"])
        .write_stdin("guess\n")
        .output()
        .unwrap();
    assert!(!out.status.success());
    insta::assert_snapshot!(String::from_utf8(out.stderr).unwrap().trim_end(), @"ferry: wrong passphrase");

    ferry(&home)
        .args(["key", "unlock", "--as", "fang", "--project", "demo"])
        .write_stdin("open sesame\n")
        .assert()
        .success();
    let show = run_ok(&home, &["access", "show", "fang", "--project", "demo"]);
    assert_eq!(key_here(&show), "ready", "{show}");
    run_ok(&home, &["key", "lock", "--as", "fang", "--project", "demo"]);
    let show = run_ok(&home, &["access", "show", "fang", "--project", "demo"]);
    assert_eq!(key_here(&show), "locked", "{show}");
}

#[test]
fn init_twice_is_a_one_line_error() {
    let dir = tempfile::tempdir().unwrap();
    let home = project(&dir);
    let channel = dir.path().join("channel2");
    let err = run_err(&home, &init_args(&channel));
    insta::assert_snapshot!(err, @"ferry: project demo already exists on this machine");
}

#[test]
fn status_reports_an_edited_log_entry_as_a_problem() {
    let dir = tempfile::tempdir().unwrap();
    let home = project(&dir);
    run_ok(&home, &join_args("fang"));
    let logs = dir.path().join("channel/logs/fang");
    let log = std::fs::read_dir(&logs)
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    let text = std::fs::read_to_string(&log).unwrap();
    std::fs::write(&log, text.replace("roster.join", "roster.jxin")).unwrap();
    // This machine verified the entry before it was edited: it is reported, and keeps counting.
    let status = status_json(&home);
    let problems: Vec<&str> = status["problems"]
        .as_array()
        .unwrap()
        .iter()
        .map(|problem| problem.as_str().unwrap())
        .collect();
    assert_eq!(problems.len(), 2, "{problems:?}");
    let has = |what: &str| {
        problems
            .iter()
            .any(|problem| problem.contains("logs/fang/") && problem.contains(what))
    };
    assert!(
        has(": diverged: ") && has(":1: bad_signature: "),
        "{problems:?}"
    );
    assert_eq!(status["agents"][0]["name"], "fang");
    // A machine that never saw the entry excludes the edited one: fang is not seated there.
    let other = second_machine(&dir, &dir.path().join("channel"));
    let status = status_json(&other);
    let problems = status["problems"].as_array().unwrap();
    assert_eq!(problems.len(), 1, "{problems:?}");
    assert!(
        problems[0]
            .as_str()
            .unwrap()
            .contains(":1: bad_signature: ")
    );
    assert_eq!(status["agents"], serde_json::json!([]));
}

/// Panics if `out` holds a byte a terminal acts on: a C0 control other than the line break,
/// DEL, or the C1 control introducer 0x9b (or any C1 character).
fn assert_terminal_safe(out: &str) {
    for (at, byte) in out.bytes().enumerate() {
        assert!(
            (byte >= 0x20 || byte == b'\n') && byte != 0x7f && byte != 0x9b,
            "byte {byte:#04x} at {at} in {out:?}"
        );
    }
    assert!(!out.chars().any(|c| c.is_control() && c != '\n'), "{out:?}");
}

#[test]
fn channel_status_escapes_control_characters_in_names_from_the_channel() {
    let dir = tempfile::tempdir().unwrap();
    let home = dir.path().join("home");
    let channel = dir.path().join("chan\x1b[31mnel");
    let created = run_ok(&home, &init_args(&channel));
    assert_terminal_safe(&created);
    assert!(created.contains("chan\\x1b[31mnel"), "{created}");
    std::fs::write(channel.join("logs/\x1b[2Jevil\rfake"), "").unwrap();
    std::fs::create_dir(channel.join("author\rwith\u{9b}2Jcr")).unwrap();
    let status = run_ok(&home, &["channel", "status", "--project", "demo"]);
    assert_terminal_safe(&status);
    assert!(status.contains("chan\\x1b[31mnel"), "{status}");
    assert!(status.contains("logs/\\x1b[2Jevil\\rfake: "), "{status}");
    assert!(status.contains("author\\rwith\\u{9b}2Jcr: "), "{status}");
    assert!(status.contains("\n2 problem(s)\n"), "{status}");
    // JSON keeps the names as they are, escaped by JSON itself (DEL and C1 too).
    let raw = run_ok(&home, &["channel", "status", "--project", "demo", "--json"]);
    assert_terminal_safe(&raw);
    let json: serde_json::Value = serde_json::from_str(&raw).unwrap();
    let problems = json["problems"].as_array().unwrap();
    assert!(
        problems.iter().any(|problem| problem
            .as_str()
            .unwrap()
            .starts_with("logs/\x1b[2Jevil\rfake: ")),
        "{problems:?}"
    );
}

#[test]
fn an_error_line_escapes_control_characters_in_paths() {
    let dir = tempfile::tempdir().unwrap();
    let home = dir.path().join("home");
    let channel = dir.path().join("chan\x1b[2J\nnel");
    run_ok(&home, &init_args(&channel));
    std::fs::remove_file(channel.join("genesis.json")).unwrap();
    let (ok, _, stderr) = run(&home, &["channel", "status", "--project", "demo"]);
    assert!(!ok);
    assert_terminal_safe(stderr.trim_end_matches('\n'));
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(stderr.contains("chan\\x1b[2J\\nnel"), "{stderr}");
}

#[test]
fn an_empty_ferry_home_is_a_one_line_error_and_touches_no_other_state_folder() {
    let dir = tempfile::tempdir().unwrap();
    let xdg = dir.path().join("xdg");
    let user = dir.path().join("user");
    for args in [
        &["init", "--project", "demo"][..],
        &["channel", "status", "--project", "demo"],
        &["mcp", "serve", "--as", "fang", "--project", "demo"],
    ] {
        let out = Command::cargo_bin("ferry")
            .unwrap()
            .env("FERRY_HOME", "")
            .env("XDG_STATE_HOME", &xdg)
            .env("HOME", &user)
            .env_remove("XDG_RUNTIME_DIR")
            .args(args)
            .write_stdin("")
            .output()
            .unwrap();
        assert!(!out.status.success(), "{args:?}");
        assert_eq!(
            String::from_utf8(out.stderr).unwrap(),
            "ferry: FERRY_HOME is set but empty: unset it or name a folder\n",
            "{args:?}"
        );
    }
    assert!(
        !xdg.exists() && !user.exists(),
        "a fallback state folder was made"
    );
}

#[test]
fn an_io_error_names_its_cause_once() {
    let dir = tempfile::tempdir().unwrap();
    let cause = std::io::Error::from_raw_os_error(20).to_string();
    // The state folder is a regular file (HomeError).
    let file = dir.path().join("file");
    std::fs::write(&file, "").unwrap();
    let err = run_err(&file, &["init", "--project", "demo", "--no-seal"]);
    assert_eq!(err.matches(&cause).count(), 1, "{err}");
    // A registered channel folder replaced by a file (StoreError).
    let home = project(&dir);
    let channel = dir.path().join("channel");
    std::fs::remove_dir_all(&channel).unwrap();
    std::fs::write(&channel, "").unwrap();
    let err = run_err(&home, &["channel", "status", "--project", "demo"]);
    assert_eq!(err.matches(&cause).count(), 1, "{err}");
    assert!(err.contains("channel/genesis.json"), "{err}");
}

#[test]
fn adding_a_channel_under_the_wrong_project_id_is_a_one_line_error() {
    let dir = tempfile::tempdir().unwrap();
    project(&dir);
    let other = dir.path().join("other-home");
    let channel = dir.path().join("channel");
    let err = run_err(
        &other,
        &[
            "channel",
            "add",
            "--project",
            "web",
            "--channel",
            channel.to_str().unwrap(),
        ],
    );
    insta::assert_snapshot!(err, @"ferry: the channel belongs to project demo, not web");
}

#[test]
fn a_failed_init_can_be_retried() {
    let dir = tempfile::tempdir().unwrap();
    let home = dir.path().join("home");
    // A file where the channel folder should go makes creating the channel fail.
    let blocker = dir.path().join("blocker");
    std::fs::write(&blocker, "x").unwrap();
    let channel = blocker.join("channel");
    run_err(&home, &init_args(&channel));
    let good = dir.path().join("channel");
    run_ok(&home, &init_args(&good));
}

/// `ferry init` of project demo in `channel` under `home`, its master key sealed with `pw`
/// given through stdin (`--passphrase-fd 0`): what a script does where no terminal exists.
fn init_sealed(home: &Path, channel: &Path, pw: &str) {
    ferry(home)
        .args([
            "init",
            "--project",
            "demo",
            "--passphrase-fd",
            "0",
            "--channel",
            channel.to_str().unwrap(),
        ])
        .write_stdin(format!("{pw}\n"))
        .assert()
        .success();
}

#[test]
fn a_sealed_master_key_opens_for_one_command_with_its_passphrase_and_is_never_unlocked_to_disk() {
    let dir = tempfile::tempdir().unwrap();
    let home = dir.path().join("home");
    init_sealed(&home, &dir.path().join("channel"), "pw");
    run_ok(&home, &join_args("fang"));
    // No terminal here and no passphrase given: the master key stays shut.
    let err = run_err(&home, &set_args("fang", "member"));
    insta::assert_snapshot!(err, @"ferry: no terminal to ask for the master key's passphrase: run this in a terminal, or give the passphrase through a pipe with --passphrase-fd N");
    let with_fd = |pw: &str| {
        let mut args = set_args("fang", "member").to_vec();
        args.extend(["--passphrase-fd", "0"]);
        ferry(&home)
            .args(&args)
            .write_stdin(format!("{pw}\n"))
            .output()
            .unwrap()
    };
    let wrong = with_fd("not it");
    assert!(!wrong.status.success());
    assert_eq!(
        String::from_utf8(wrong.stderr).unwrap(),
        "ferry: wrong passphrase\n"
    );
    assert!(with_fd("pw").status.success());
    // `ferry key unlock` never leaves a plain copy of the master key.
    let err = run_err_with_stdin(
        &home,
        &["key", "unlock", "--master", "--project", "demo"],
        "pw\n",
    );
    insta::assert_snapshot!(err, @"ferry: the master key is never unlocked to disk: a command that needs it asks for its passphrase");
    assert!(!home.join("run").join("demo").join("master.key").exists());
    // Reading as the human needs no passphrase.
    run_ok(&home, &["access", "show", "--project", "demo"]);
}

#[test]
fn an_agent_with_a_shell_and_no_passphrase_cannot_approve_its_own_ask_nor_raise_its_own_level() {
    use ferry_mcp_core::channel::log::names::{AgentName, ProjectId};
    use ferry_mcp_core::channel::machine::home::Home;
    use ferry_mcp_core::channel::ops::asks::{self, RaiseRequest};
    use ferry_mcp_core::channel::session::{Actor, Session};
    use ferry_mcp_core::time::Timestamp;

    let dir = tempfile::tempdir().unwrap();
    let home = dir.path().join("home");
    init_sealed(&home, &dir.path().join("channel"), "the human's");
    run_ok(&home, &join_args("fang"));
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap();
    let now = Timestamp::from_millis(u64::try_from(now.as_millis()).unwrap());
    let project = ProjectId::parse("demo").unwrap();
    let fang = Actor::Agent(AgentName::parse("fang").unwrap());
    let request = RaiseRequest {
        title: "rotate the prod keys".into(),
        recommendation: "approve".into(),
        reasoning: "they are old".into(),
    };
    let mut session = Session::open(&Home::at(&home), &project, fang, now).unwrap();
    let ask = asks::raise(&mut session, &request, now).unwrap();
    session.save().unwrap();
    // Fang's shell tool runs the human's commands: the same OS user, the same state folder,
    // no terminal, no passphrase.
    let logs = || -> String {
        let Ok(logs) = std::fs::read_dir(dir.path().join("channel/logs/master")) else {
            return String::new();
        };
        logs.map(|log| std::fs::read_to_string(log.unwrap().path()).unwrap())
            .collect()
    };
    let before = logs();
    for args in [
        vec!["ask", "approve", ask.as_str(), "--project", "demo"],
        vec!["access", "set", "fang", "orchestrator", "--project", "demo"],
    ] {
        let err = run_err(&home, &args);
        assert!(err.contains("passphrase"), "{args:?}: {err}");
    }
    assert_eq!(logs(), before, "the master's log is unchanged");
    let shown = run_ok(&home, &["ask", "show", ask.as_str(), "--project", "demo"]);
    assert!(!shown.contains("approved"), "{shown}");
}

#[test]
fn init_seals_the_master_key_by_default_and_without_a_terminal_or_a_pipe_writes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let home = dir.path().join("home");
    let channel = dir.path().join("channel");
    let err = run_err(
        &home,
        &[
            "init",
            "--project",
            "demo",
            "--channel",
            channel.to_str().unwrap(),
        ],
    );
    insta::assert_snapshot!(err, @"ferry: no terminal to ask for the master key's passphrase: run this in a terminal, or give the passphrase through a pipe with --passphrase-fd N");
    assert!(!channel.exists() && !home.join("projects").exists());
    // A passphrase in a file on disk is refused, even named as a descriptor.
    let file = dir.path().join("pw.txt");
    std::fs::write(&file, "pw\n").unwrap();
    let out = std::process::Command::new(assert_cmd::cargo::cargo_bin("ferry"))
        .env("FERRY_HOME", &home)
        .env_remove("XDG_STATE_HOME")
        .env_remove("XDG_RUNTIME_DIR")
        .args(["init", "--project", "demo", "--passphrase-fd", "0"])
        .stdin(std::fs::File::open(&file).unwrap())
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert_eq!(
        String::from_utf8(out.stderr).unwrap(),
        "ferry: --passphrase-fd 0 is not a pipe: a passphrase is never read from a file\n"
    );
    // Sealed through a pipe: the key file holds no plain secret.
    init_sealed(&home, &channel, "pw");
    let key = std::fs::read_to_string(home.join("projects/demo/keys/master.key")).unwrap();
    assert!(
        key.contains("\"sealed\"") && !key.contains("\"secret\""),
        "{key}"
    );
}

#[test]
fn init_with_no_seal_warns_on_stderr_that_any_process_of_this_user_can_sign_as_the_human() {
    let dir = tempfile::tempdir().unwrap();
    let home = dir.path().join("home");
    let (ok, _, stderr) = run(&home, &init_args(&dir.path().join("channel")));
    assert!(ok, "{stderr}");
    insta::assert_snapshot!(stderr.trim_end(), @"ferry: warning: the master key of demo is stored unsealed: any process running as this OS user (an agent with a shell tool included) can sign as the human; seal it with `ferry key seal --master --project demo`");
}

#[test]
fn help_lists_the_admin_commands_and_exits_zero() {
    let dir = tempfile::tempdir().unwrap();
    let help = run_ok(dir.path(), &["--help"]);
    for command in [
        "init", "channel", "access", "master", "key", "pause", "resume",
    ] {
        assert!(help.contains(&format!("  {command} ")), "{command}: {help}");
    }
}

#[test]
fn showing_an_unknown_agent_is_a_one_line_error() {
    let dir = tempfile::tempdir().unwrap();
    let home = project(&dir);
    let err = run_err(&home, &["access", "show", "ghost", "--project", "demo"]);
    insta::assert_snapshot!(err, @"ferry: ghost is not seated in project demo");
}

#[test]
fn init_on_an_existing_channel_points_to_channel_add() {
    let dir = tempfile::tempdir().unwrap();
    project(&dir);
    let other = dir.path().join("other-home");
    let channel = dir.path().join("channel");
    let err = run_err(&other, &init_args(&channel));
    let err = err.replace(channel.to_str().unwrap(), "[CHANNEL]");
    insta::assert_snapshot!(err, @"ferry: a channel already exists in [CHANNEL] (register it with `ferry channel add`)");
    // The failed init left nothing behind: adding the channel works.
    run_ok(&other, &add_args(&channel));
}

/// Runs a command that must fail, with `stdin`, and returns its one-line error.
fn run_err_with_stdin(home: &Path, args: &[&str], stdin: &str) -> String {
    let out = ferry(home).args(args).write_stdin(stdin).output().unwrap();
    assert!(!out.status.success(), "ferry {args:?} succeeded");
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert_eq!(stderr.lines().count(), 1, "one line: {stderr}");
    stderr.trim_end().to_owned()
}

fn status_json(home: &Path) -> serde_json::Value {
    let status = run_ok(home, &["channel", "status", "--project", "demo", "--json"]);
    serde_json::from_str(&status).unwrap()
}

/// A second machine (its own state folder) that registered the same channel folder.
fn second_machine(dir: &tempfile::TempDir, channel: &Path) -> std::path::PathBuf {
    let other = dir.path().join("other-home");
    run_ok(&other, &add_args(channel));
    other
}

/// The hex key in `... key <hex> ...` or `... master key <hex> ...` output.
fn key_in(output: &str) -> String {
    hex_word_in(output, 64)
}

/// The first run of `len` hex digits in `output`.
fn hex_word_in(output: &str, len: usize) -> String {
    output
        .split(|c: char| !c.is_ascii_hexdigit())
        .find(|word| word.len() == len)
        .unwrap_or_else(|| panic!("no {len}-digit hex word in {output}"))
        .to_owned()
}

#[test]
fn a_wrong_passphrase_is_a_one_line_error() {
    let dir = tempfile::tempdir().unwrap();
    let home = project(&dir);
    ferry(&home)
        .args(["channel", "join", "--as", "fang", "--project", "demo"])
        .args(["--seal"])
        .write_stdin("right\n")
        .assert()
        .success();
    let err = run_err_with_stdin(
        &home,
        &["key", "unlock", "--as", "fang", "--project", "demo"],
        "wrong\n",
    );
    insta::assert_snapshot!(err, @"ferry: wrong passphrase");
    // Nothing was unlocked: the key is still reported locked.
    let status = status_json(&home);
    assert_eq!(status["agents"][0]["local_key"], "locked");
}

#[test]
fn a_grant_that_lowers_a_level_says_from_which_entry_on_it_judges_the_agent() {
    let dir = tempfile::tempdir().unwrap();
    let home = project(&dir);
    run_ok(&home, &join_args("fang"));
    assert_eq!(
        run_ok(&home, &set_args("fang", "orchestrator")),
        "fang is now orchestrator\n"
    );
    // Her log holds her roster.join (#1): the demotion binds what comes after it.
    assert_eq!(
        run_ok(&home, &set_args("fang", "member")),
        "fang is now member; its entries after #1 (the last read here) are judged by this grant\n"
    );
    // Raising it again binds nothing.
    assert_eq!(
        run_ok(&home, &set_args("fang", "orchestrator")),
        "fang is now orchestrator\n"
    );
}

#[test]
fn names_are_case_folded_in_every_command() {
    let dir = tempfile::tempdir().unwrap();
    let home = project(&dir);
    run_ok(&home, &join_args("Fang"));
    assert_eq!(
        run_ok(&home, &set_args("FANG", "member")),
        "fang is now member\n"
    );
    let show = run_ok(&home, &["access", "show", "fAnG", "--project", "demo"]);
    let row: Vec<&str> = show.lines().nth(1).unwrap().split_whitespace().collect();
    assert_eq!(row[..3], ["fang", "member", "seated"]);
    let again = run_ok(&home, &join_args("FANG"));
    assert!(again.starts_with("fang already seated"), "{again}");
}

#[cfg(unix)]
#[test]
fn ferry_home_overrides_the_state_folder_and_key_files_are_private() {
    use std::os::unix::fs::PermissionsExt;

    let dir = tempfile::tempdir().unwrap();
    let user_home = dir.path().join("user");
    let xdg_state = dir.path().join("xdg-state");
    let xdg_runtime = dir.path().join("xdg-runtime");
    let ferry_home = dir.path().join("ferry-home");
    let channel = dir.path().join("channel");
    for (args, stdin) in [
        (
            vec![
                "init",
                "--project",
                "demo",
                "--no-seal",
                "--channel",
                channel.to_str().unwrap(),
            ],
            "",
        ),
        (
            vec![
                "channel",
                "join",
                "--as",
                "fang",
                "--project",
                "demo",
                "--seal",
            ],
            "pw\n",
        ),
        (
            vec!["key", "unlock", "--as", "fang", "--project", "demo"],
            "pw\n",
        ),
        (vec!["pause"], ""),
    ] {
        Command::cargo_bin("ferry")
            .unwrap()
            .env("FERRY_HOME", &ferry_home)
            .env("HOME", &user_home)
            .env("XDG_STATE_HOME", &xdg_state)
            .env("XDG_RUNTIME_DIR", &xdg_runtime)
            .args(&args)
            .write_stdin(stdin)
            .assert()
            .success();
    }
    for untouched in [&user_home, &xdg_state, &xdg_runtime] {
        assert!(!untouched.exists(), "{} was written", untouched.display());
    }
    let keys = ferry_home.join("projects/demo/keys");
    for file in ["master.key", "fang.key"] {
        let mode = std::fs::metadata(keys.join(file))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o600, "{file}");
    }
    let unlocked = ferry_home.join("run");
    assert!(
        unlocked.is_dir(),
        "the unlocked copy stays inside FERRY_HOME"
    );
    assert!(ferry_home.join("pause.json").is_file());
}

#[test]
fn only_the_current_master_hands_mastership_on() {
    let dir = tempfile::tempdir().unwrap();
    let home = project(&dir);
    let channel = dir.path().join("channel");
    run_ok(&home, &join_args("fang"));
    let old_master = status_json(&home)["master"].as_str().unwrap().to_owned();
    let other = second_machine(&dir, &channel);
    let made = run_ok(
        &other,
        &["master", "new-key", "--project", "demo", "--no-seal"],
    );
    let (new_master, proof) = (key_in(&made), hex_word_in(&made, 128));
    assert_eq!(status_json(&other)["master_key_here"], "not_master");

    // The second machine's key is not master yet: it can neither grant nor hand on.
    let err = run_err(&other, &set_args("fang", "member"));
    insta::assert_snapshot!(err, @"ferry: this machine does not hold the current master key of project demo");
    let err = run_err(&other, &handover_args(&new_master, &proof));
    insta::assert_snapshot!(err, @"ferry: this machine does not hold the current master key of project demo");

    let said = run_ok(&home, &handover_args(&new_master, &proof));
    assert!(
        said.starts_with(&format!("handed mastership of demo on to {new_master}")),
        "{said}"
    );

    // Now the first machine holds a former master's key.
    let status = status_json(&home);
    assert_eq!(status["master"], new_master.as_str());
    assert_eq!(status["master_key_here"], "former");
    let err = run_err(&home, &set_args("fang", "orchestrator"));
    insta::assert_snapshot!(err, @"ferry: this machine does not hold the current master key of project demo");
    let err = run_err(&home, &handover_args(&new_master, &proof));
    insta::assert_snapshot!(err, @"ferry: this machine does not hold the current master key of project demo");

    // The new master grants, and can never hand mastership back.
    assert_eq!(status_json(&other)["master_key_here"], "ready");
    run_ok(&other, &set_args("fang", "member"));
    let err = run_err(&other, &handover_args(&old_master, NO_PROOF));
    let err = err.replace(&old_master, "[OLD]");
    insta::assert_snapshot!(err, @"ferry: key [OLD] has been master of this project before; mastership is never handed back");
    let status = status_json(&home);
    assert_eq!(status["agents"][0]["level"], "member");
    assert_eq!(status["problems"], serde_json::json!([]));
}

#[test]
fn a_bad_key_for_a_handover_is_a_one_line_error() {
    let dir = tempfile::tempdir().unwrap();
    let home = project(&dir);
    let err = run_err(&home, &handover_args("ABC", NO_PROOF));
    assert!(
        err.starts_with("ferry: invalid value 'ABC' for '--to-key"),
        "{err}"
    );
}

#[test]
fn mastership_is_never_handed_to_a_key_nobody_holds() {
    let dir = tempfile::tempdir().unwrap();
    let home = project(&dir);
    // The all-zero key and another small-order point: no one can sign with them.
    for weak in [
        "0000000000000000000000000000000000000000000000000000000000000000",
        "0100000000000000000000000000000000000000000000000000000000000000",
        "c7176a703d4dd84fba3c0b760d10670f2a2053fa2c39ccc64ec7fd7792ac037a",
    ] {
        let err = run_err(&home, &handover_args(weak, NO_PROOF));
        assert!(
            err == "ferry: the new key did not prove it is held: the key is weak (small order): no one can sign with it"
                || err.starts_with("ferry: invalid value"),
            "{weak}: {err}"
        );
    }
    // A real key whose proof is missing (someone's key, but not shown to be held).
    let stranger = "d75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a";
    let err = run_err(&home, &handover_args(stranger, NO_PROOF));
    insta::assert_snapshot!(err, @"ferry: the new key did not prove it is held: the key's proof does not verify: nobody has shown they hold it");
    let status = status_json(&home);
    assert_eq!(
        status["master_key_here"], "ready",
        "mastership did not move"
    );
}

/// Copies every file under `from` into `to` that `to` does not have (a one-way sync).
fn sync_into(from: &Path, to: &Path) {
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            std::fs::create_dir_all(&target).unwrap();
            sync_into(&entry.path(), &target);
        } else if !target.exists() {
            std::fs::copy(entry.path(), &target).unwrap();
        }
    }
}

#[test]
fn a_contested_name_and_a_changed_key_are_reported_by_channel_status() {
    let dir = tempfile::tempdir().unwrap();
    let home = project(&dir);
    let channel = dir.path().join("channel");
    // A second machine with its own copy of the channel, before the copies sync.
    let copy = dir.path().join("channel-copy");
    std::fs::create_dir(&copy).unwrap();
    sync_into(&channel, &copy);
    let other = second_machine(&dir, &copy);
    let first = key_in(&run_ok(&home, &join_args("fang")));
    let second = key_in(&run_ok(&other, &join_args("fang")));
    sync_into(&copy, &channel);

    // Two keys joined as fang: no key holds the name until the master picks one.
    let status = status_json(&home);
    assert_eq!(status["agents"][0]["seat"], "contested");
    let problems: Vec<&str> = status["problems"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p.as_str().unwrap())
        .collect();
    assert_eq!(problems.len(), 2, "{problems:?}");
    assert!(
        problems
            .iter()
            .all(|p| p.contains("2 keys joined as fang; the master must grant one")),
        "{problems:?}"
    );
    let err = run_err(&home, &set_args("fang", "member"));
    insta::assert_snapshot!(err, @"ferry: fang is contested by several keys; pick one with --key");
    // Joining again does not claim a seat the name does not give.
    let err = run_err(&home, &join_args("fang"));
    insta::assert_snapshot!(err, @"ferry: fang joined, but 2 keys joined under this name: no key holds it until the master grants one (`ferry access set fang LEVEL --key HEX --project demo`)");

    // The master picks the second machine's key: this machine pinned the first one.
    run_ok(
        &home,
        &[
            "access",
            "set",
            "fang",
            "member",
            "--project",
            "demo",
            "--key",
            &second,
        ],
    );
    let status = status_json(&home);
    assert_eq!(status["agents"][0]["seat"], "seated");
    assert_eq!(status["agents"][0]["keys"], serde_json::json!([second]));
    assert_eq!(status["agents"][0]["pin_changed"], true);
    let problems = status["problems"].as_array().unwrap();
    assert!(
        problems
            .iter()
            .any(|p| p
                == "fang: the key holding the name differs from the key pinned on this machine"),
        "{problems:?}"
    );
    let text = run_ok(&home, &["channel", "status", "--project", "demo"]);
    assert!(text.contains("KEY CHANGED"), "{text}");
    // The pin is kept: the change stays reported.
    let pins = std::fs::read_to_string(home.join("projects/demo/pins.json")).unwrap();
    assert!(pins.contains(&first) && !pins.contains(&second), "{pins}");
}

#[test]
fn a_channel_whose_genesis_names_another_master_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let home = project(&dir);
    // Someone creates a look-alike project `demo` with their own master key and puts its
    // (validly signed) genesis file in place of ours.
    let forger_home = dir.path().join("forger-home");
    let forged = dir.path().join("forged");
    run_ok(&forger_home, &init_args(&forged));
    std::fs::copy(
        forged.join("genesis.json"),
        dir.path().join("channel/genesis.json"),
    )
    .unwrap();
    for args in [
        &["channel", "status", "--project", "demo"][..],
        &["channel", "join", "--as", "fang", "--project", "demo"][..],
        &["access", "show", "--project", "demo"][..],
    ] {
        let err = run_err(&home, args);
        assert_eq!(
            err,
            "ferry: the genesis master key of project demo differs from the one pinned on this machine",
            "{args:?}"
        );
    }
}

#[test]
fn an_enormous_expiry_or_unlock_time_does_not_crash() {
    let dir = tempfile::tempdir().unwrap();
    let home = project(&dir);
    run_ok(&home, &join_args("fang"));
    let max = u64::MAX.to_string();
    let set = run_ok(
        &home,
        &[
            "access",
            "set",
            "fang",
            "member",
            "--project",
            "demo",
            "--expires-in",
            &max,
        ],
    );
    assert_eq!(set, format!("fang is now member for {max} s\n"));
    assert_eq!(status_json(&home)["agents"][0]["level"], "member");
    ferry(&home)
        .args(["key", "seal", "--as", "fang", "--project", "demo"])
        .write_stdin("pw\n")
        .assert()
        .success();
    ferry(&home)
        .args([
            "key",
            "unlock",
            "--as",
            "fang",
            "--project",
            "demo",
            "--for",
            &max,
        ])
        .write_stdin("pw\n")
        .assert()
        .success();
    assert_eq!(status_json(&home)["agents"][0]["local_key"], "ready");
}

#[test]
fn a_bad_scope_or_key_for_a_grant_is_a_one_line_error() {
    let dir = tempfile::tempdir().unwrap();
    let home = project(&dir);
    run_ok(&home, &join_args("fang"));
    let grant = |extra: &[&str]| {
        let mut args = set_args("fang", "member").to_vec();
        args.extend_from_slice(extra);
        run_err(&home, &args)
    };
    insta::assert_snapshot!(grant(&["--scope", ""]), @"ferry: invalid value '' for '--scope <SCOPES>': a scope cannot be empty (see --help)");
    insta::assert_snapshot!(grant(&["--scope", "a,b"]), @"ferry: invalid value 'a,b' for '--scope <SCOPES>': a scope cannot contain ',' (see --help)");
    let err = grant(&["--key", "XYZ"]);
    assert!(
        err.starts_with("ferry: invalid value 'XYZ' for '--key <KEY>'"),
        "{err}"
    );
    // Nothing was granted.
    assert_eq!(status_json(&home)["agents"][0]["grant"], "none");
}

#[test]
fn the_master_signs_a_checkpoint_of_every_agents_log_and_another_machine_opens_from_it() {
    let dir = tempfile::tempdir().unwrap();
    let home = project(&dir);
    run_ok(&home, &join_args("fang"));
    run_ok(&home, &join_args("bolt"));
    let said = run_ok(&home, &["channel", "checkpoint", "--project", "demo"]);
    insta::assert_snapshot!(said.trim_end(), @"checkpoint #1 of demo: 2 entries in 2 agents' logs vouched for");
    let other = dir.path().join("other");
    run_ok(&other, &add_args(&dir.path().join("channel")));
    let status = run_ok(
        &other,
        &["channel", "status", "--project", "demo", "--json"],
    );
    let status: serde_json::Value = serde_json::from_str(&status).unwrap();
    assert_eq!(status["problems"], serde_json::json!([]), "{status}");
    // An agent cannot write one: the command is the master's.
    let err = run_err(&other, &["channel", "checkpoint", "--project", "demo"]);
    assert!(err.contains("master"), "{err}");
}

#[test]
fn on_a_machine_without_the_master_key_or_an_agent_s_the_human_reads_the_board_the_primary_and_the_asks()
 {
    let dir = tempfile::tempdir().unwrap();
    let home = project(&dir);
    run_ok(&home, &join_args("lead"));
    run_ok(&home, &set_args("lead", "orchestrator"));
    let issued = run_ok(
        &home,
        &["order", "issue", "Write the parser", "--project", "demo"],
    );
    assert!(issued.contains("m"), "{issued}");
    run_ok(
        &home,
        &[
            "talk",
            "post",
            "the lexer is merged",
            "--to",
            "all",
            "--as",
            "lead",
            "--project",
            "demo",
        ],
    );
    // Another machine: the same channel folder registered, and no key at all.
    let other = dir.path().join("other-home");
    run_ok(&other, &add_args(&dir.path().join("channel")));
    let peeked = run_ok(&other, &["talk", "read", "--peek", "--project", "demo"]);
    assert!(peeked.contains("the lexer is merged"), "{peeked}");
    // Marking messages read is a signed write: without the key it is refused.
    let marked = run_err(&other, &["talk", "read", "--project", "demo"]);
    assert!(marked.contains("master"), "{marked}");
    for args in [
        &["order", "list", "--project", "demo"][..],
        &["order", "list", "--project", "demo", "--json"],
        &["primary", "status", "--project", "demo"],
        &["ask", "list", "--project", "demo"],
    ] {
        let out = run_ok(&other, args);
        eprintln!("ferry {args:?}: {out}");
        if args[0] == "order" {
            assert!(out.contains("Write the parser"), "{args:?}: {out}");
        }
    }
    // A write still needs the key, and says so.
    let refused = run_err(&other, &["order", "issue", "Another", "--project", "demo"]);
    assert!(refused.contains("master"), "{refused}");
}

#[test]
fn on_a_machine_without_an_agent_s_key_its_reads_with_as_work_from_its_side_and_its_writes_are_refused_with_the_reason()
 {
    let dir = tempfile::tempdir().unwrap();
    let home = project(&dir);
    run_ok(&home, &join_args("lead"));
    run_ok(&home, &set_args("lead", "orchestrator"));
    run_ok(&home, &join_args("bob"));
    let json = |home: &Path, args: &[&str]| -> serde_json::Value {
        serde_json::from_str(&run_ok(home, args)).unwrap()
    };
    let order = json(
        &home,
        &[
            "order",
            "issue",
            "Write the parser",
            "--project",
            "demo",
            "--json",
        ],
    )["id"]
        .as_str()
        .unwrap()
        .to_owned();
    for (text, to) in [("lead, take the parser", "lead"), ("for bob alone", "bob")] {
        run_ok(
            &home,
            &["talk", "post", text, "--to", to, "--project", "demo"],
        );
    }
    let ask = json(
        &home,
        &[
            "ask",
            "raise",
            "--title",
            "Merge now?",
            "--recommendation",
            "yes",
            "--as",
            "lead",
            "--project",
            "demo",
            "--json",
        ],
    )["id"]
        .as_str()
        .unwrap()
        .to_owned();
    // Another machine: the same channel folder registered, and no key at all.
    let other = dir.path().join("other-home");
    run_ok(&other, &add_args(&dir.path().join("channel")));
    fn as_lead<'a>(args: &[&'a str]) -> Vec<&'a str> {
        let mut all = args.to_vec();
        all.extend(["--as", "lead", "--project", "demo"]);
        all
    }
    for args in [
        &["order", "list"][..],
        &["order", "show", &order],
        &["primary", "status"],
        &["ask", "list"],
        &["ask", "show", &ask],
    ] {
        let out = run_ok(&other, &as_lead(args));
        eprintln!("ferry {args:?}: {out}");
        if args[0] == "order" {
            assert!(out.contains("Write the parser"), "{args:?}: {out}");
        }
        if args[0] == "ask" {
            assert!(out.contains("Merge now?"), "{args:?}: {out}");
        }
    }
    // A peek reads lead's own messages (not the human's, not another agent's).
    let peeked = run_ok(&other, &as_lead(&["talk", "read", "--peek"]));
    assert!(peeked.contains("lead, take the parser"), "{peeked}");
    assert!(!peeked.contains("for bob alone"), "{peeked}");
    // Every write as lead still needs lead's key, and says why; joining would not help.
    let reason = "ferry: lead is not seated: no key for it on this machine (its seat's key is on another machine, where it writes; reading needs none)";
    for args in [
        &["order", "claim", &order][..],
        &["talk", "post", "hello", "--to", "all"],
        &["talk", "read"],
        &[
            "ask",
            "raise",
            "--title",
            "Again?",
            "--recommendation",
            "no",
        ],
    ] {
        assert_eq!(run_err(&other, &as_lead(args)), reason, "{args:?}");
    }
    // `ferry join` says lead cannot act here.
    let joined = run_ok(&other, &as_lead(&["join"]));
    assert!(!joined.contains("orchestrator"), "{joined}");
}

#[test]
fn an_agent_s_ask_catch_up_join_and_standby_have_cli_twins_that_answer_as_the_tools_do() {
    let dir = tempfile::tempdir().unwrap();
    let home = project(&dir);
    run_ok(&home, &join_args("dev"));
    run_ok(&home, &set_args("dev", "member"));
    let json = |args: &[&str]| -> serde_json::Value {
        let mut all = args.to_vec();
        all.extend(["--as", "dev", "--project", "demo", "--json"]);
        serde_json::from_str(&run_ok(&home, &all)).unwrap()
    };
    let raised = json(&[
        "ask",
        "raise",
        "--title",
        "Merge now?",
        "--recommendation",
        "yes",
    ]);
    let id = raised["id"].as_str().unwrap().to_owned();
    assert_eq!(raised["state"], "pending", "{raised}");
    let latest = json(&["ask", "status"]);
    assert_eq!(latest["id"], id.as_str(), "{latest}");
    let named = json(&["ask", "status", &id]);
    assert_eq!(named["state"], "pending", "{named}");
    let text = run_ok(
        &home,
        &[
            "ask",
            "raise",
            "--as",
            "dev",
            "--project",
            "demo",
            "--title",
            "Again?",
            "--recommendation",
            "no",
        ],
    );
    assert!(text.contains("check back with ferry ask status"), "{text}");
    let digest = json(&["catchup"]);
    assert!(digest["next"].is_string(), "{digest}");
    let joined = json(&["join"]);
    assert_eq!(joined["standing"]["seat"], "seated", "{joined}");
    let standby = json(&["primary", "standby"]);
    assert!(standby["rule"].is_string(), "{standby}");
    // The human is told what it may run, never an MCP action.
    let status = run_ok(&home, &["primary", "status", "--project", "demo"]);
    assert!(
        status.contains("ferry primary takeover --as AGENT --project demo"),
        "{status}"
    );
    assert!(!status.contains("action takeover"), "{status}");
}

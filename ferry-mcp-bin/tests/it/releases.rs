//! `ferry release ...` and `ferry update ...`, and `ferry_update` served by the real binary
//! (ADR 0020). What is replaced is always a link to (or copy of) the built `ferry` in a folder
//! of the test's own, never the built binary itself: an apply renames a new file over the
//! link's name, so the build is never touched. The release artifact is a shell script that
//! answers `--version` with `ferry 9.9.9`, so "the new copy answers --version" is checked
//! without building a second ferry.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use ferry_mcp_core::channel::ops::install;
use ferry_mcp_core::channel::ops::releases::THIS_PLATFORM;
use serde_json::Value;

use super::admin::{join_args, project, run, run_ok, set_args};

const FERRY: &str = env!("CARGO_BIN_EXE_ferry");
const SCRIPT: &str = "#!/bin/sh\necho 'ferry 9.9.9'\n";

/// Project `demo` with `lead` (Orchestrator) and `bob` (Member), in a folder under cargo's
/// target (the same file system as the build, so a link to it costs nothing).
fn fleet() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let home = project(&dir);
    for (name, level) in [("lead", "orchestrator"), ("bob", "member")] {
        run_ok(&home, &join_args(name));
        run_ok(&home, &set_args(name, level));
    }
    (dir, home)
}

/// A `ferry` to be replaced: a hard link to the build (a copy where links fail).
fn ferry_copy(dir: &Path) -> PathBuf {
    let bin = dir.join("bin");
    fs::create_dir_all(&bin).unwrap();
    let copy = bin.join("ferry");
    if fs::hard_link(FERRY, &copy).is_err() {
        fs::copy(FERRY, &copy).unwrap();
    }
    copy
}

/// The release artifact: a script answering `--version` with `ferry 9.9.9`.
fn script(dir: &Path) -> PathBuf {
    use std::os::unix::fs::PermissionsExt as _;
    let path = dir.join("ferry-9.9.9");
    fs::write(&path, SCRIPT).unwrap();
    fs::set_permissions(&path, fs::Permissions::from_mode(0o755)).unwrap();
    path
}

fn sha256_of(path: &Path) -> String {
    install::hash(&mut fs::File::open(path).unwrap())
        .unwrap()
        .to_hex()
}

fn version_of(binary: &Path) -> String {
    let out = Command::new(binary).arg("--version").output().unwrap();
    assert!(out.status.success(), "{}: {out:?}", binary.display());
    String::from_utf8(out.stdout).unwrap().trim_end().to_owned()
}

/// `BINARY ARGS --project demo` on `home`: (success, stdout, stderr).
fn run_with(binary: &Path, home: &Path, args: &[&str]) -> (bool, String, String) {
    let out = Command::new(binary)
        .env("FERRY_HOME", home)
        .env_remove("XDG_STATE_HOME")
        .env_remove("XDG_RUNTIME_DIR")
        .args(args)
        .args(["--project", "demo"])
        .output()
        .unwrap();
    (
        out.status.success(),
        String::from_utf8(out.stdout).unwrap(),
        String::from_utf8(out.stderr).unwrap(),
    )
}

/// The approval of 9.9.9 for this platform from `artifact`, signed with the CLI; its pin.
fn approve(home: &Path, artifact: &str) -> String {
    let pair = format!("{THIS_PLATFORM}={artifact}");
    let out = run_ok(
        home,
        &[
            "release",
            "approve",
            "9.9.9",
            "--artifact",
            &pair,
            "--notes",
            "the parser release",
            "--project",
            "demo",
            "--json",
        ],
    );
    let view: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(view["state"], "approved", "{view}");
    view["artifacts"][0]["sha256"].as_str().unwrap().to_owned()
}

#[test]
fn a_release_approved_with_the_cli_is_shown_by_join_and_installed_by_ferry_update_over_a_copy() {
    let (dir, home) = fleet();
    let artifact = script(dir.path());
    let pin = approve(&home, artifact.to_str().unwrap());
    assert_eq!(pin, sha256_of(&artifact));
    let listed = run_ok(&home, &["release", "list", "--project", "demo"]);
    assert!(listed.starts_with("9.9.9 approved (m"), "{listed}");
    assert!(
        listed.contains(&format!("{THIS_PLATFORM}: sha256 {pin} from blob {pin}")),
        "{listed}"
    );

    let copy = ferry_copy(dir.path());
    assert_eq!(
        version_of(&copy),
        format!("ferry {}", env!("CARGO_PKG_VERSION"))
    );
    // The copy serves lead with the admin group: join, check, apply, in one session.
    let input = [
        r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"0"}}}"#,
        r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
        r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"ferry_join","arguments":{}}}"#,
        r#"{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"ferry_update","arguments":{"action":"apply"}}}"#,
    ]
    .join("\n")
        + "\n";
    let out = assert_cmd::Command::new(&copy)
        .env("FERRY_HOME", &home)
        .env_remove("XDG_STATE_HOME")
        .env_remove("XDG_RUNTIME_DIR")
        .args([
            "mcp",
            "serve",
            "--as",
            "lead",
            "--project",
            "demo",
            "--tools",
            "admin",
        ])
        .write_stdin(input)
        .timeout(std::time::Duration::from_secs(60))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let answers: Vec<Value> = String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect();
    let result = |id: u64| {
        let answer = answers.iter().find(|answer| answer["id"] == id).unwrap();
        assert_ne!(answer["result"]["isError"], true, "{answer}");
        answer["result"]["structuredContent"].clone()
    };
    let running = env!("CARGO_PKG_VERSION");
    assert_eq!(
        result(2)["update"],
        format!("9.9.9 approved (running {running})")
    );
    let applied = result(3);
    assert_eq!(applied["installed"], "9.9.9");
    assert_eq!(applied["sha256"], pin.as_str());
    assert!(
        applied["restart"]
            .as_str()
            .unwrap()
            .contains("must restart"),
        "{applied}"
    );

    // The file now at the copy's path is the pinned artifact, and answers as 9.9.9; the
    // replaced ferry is kept beside it.
    assert_eq!(sha256_of(&copy), pin);
    assert_eq!(version_of(&copy), "ferry 9.9.9");
    assert_eq!(
        version_of(&install::previous_path(&copy)),
        format!("ferry {running}")
    );
    assert!(!install::temp_path(&copy).exists());
    // The build itself is untouched.
    assert_eq!(version_of(Path::new(FERRY)), format!("ferry {running}"));
}

#[test]
fn each_refusal_of_the_cli_says_why_and_leaves_the_copy_as_it_was() {
    let (dir, home) = fleet();
    let artifact = script(dir.path());
    let copy = ferry_copy(dir.path());
    let before = sha256_of(&copy);
    let refused = |args: &[&str]| {
        let (ok, _, stderr) = run_with(&copy, &home, args);
        assert!(!ok, "{args:?} succeeded");
        assert_eq!(sha256_of(&copy), before, "{args:?} changed the binary");
        assert!(
            !install::temp_path(&copy).exists(),
            "{args:?} left a download"
        );
        assert!(
            !install::previous_path(&copy).exists(),
            "{args:?} kept a previous"
        );
        stderr.trim_end().to_owned()
    };
    let pair = format!("{THIS_PLATFORM}={}", artifact.display());

    // An agent cannot sign an approval; with none, there is nothing to apply.
    let text = refused(&[
        "release",
        "approve",
        "9.9.9",
        "--artifact",
        &pair,
        "--as",
        "lead",
    ]);
    assert_eq!(text, "ferry: only the human (master key) may approve");
    let text = refused(&["update", "apply", "--as", "lead"]);
    assert!(text.starts_with("ferry: no approved version for"), "{text}");
    let pin = approve(&home, artifact.to_str().unwrap());

    let text = refused(&["update", "apply", "--as", "bob"]);
    assert_eq!(
        text,
        "ferry: apply updates needs orchestrator; bob is member"
    );

    run_ok(&home, &["pause", "--reason", "release freeze"]);
    let text = refused(&["update", "apply", "--as", "lead"]);
    assert_eq!(
        text,
        "ferry: the machine is paused (release freeze): apply updates is refused until `ferry resume`"
    );
    run_ok(&home, &["resume"]);

    // The running version is the crate's; an approval of an older one says no downgrade.
    let older = format!("{THIS_PLATFORM}={}", artifact.display());
    run_ok(
        &home,
        &[
            "release",
            "approve",
            "0.0.1",
            "--artifact",
            &older,
            "--project",
            "demo",
        ],
    );
    let text = refused(&["update", "apply", "0.0.1", "--as", "lead"]);
    assert_eq!(
        text,
        format!(
            "ferry: 0.0.1 is older than the running {} and its approval does not allow a downgrade",
            env!("CARGO_PKG_VERSION")
        )
    );

    // A folder writer swaps the blob's bytes: the download does not match the pin.
    fs::write(
        dir.path().join("channel/blobs").join(&pin),
        "#!/bin/sh\necho pwned\n",
    )
    .unwrap();
    let text = refused(&["update", "apply", "--as", "lead"]);
    assert!(
        text.starts_with("ferry: the download's SHA-256 is ")
            && text.ends_with(&format!(
                "the approval pins {pin}: refused, the download was removed and nothing was installed"
            )),
        "{text}"
    );

    run_ok(&home, &["release", "revoke", "9.9.9", "--project", "demo"]);
    let text = refused(&["update", "apply", "9.9.9", "--as", "lead"]);
    assert_eq!(text, "ferry: the master revoked 9.9.9");
    let (_, check, _) = run_with(&copy, &home, &["update", "check", "--as", "lead"]);
    // 0.0.1 still stands, and is not newer.
    assert!(
        check.contains("the newest approved is 0.0.1: nothing newer"),
        "{check}"
    );

    let (ok, shown, stderr) = run(&home, &["release", "show", "9.9.9", "--project", "demo"]);
    assert!(ok, "{stderr}");
    assert!(shown.starts_with("9.9.9 revoked (m"), "{shown}");
}

#[test]
fn ferry_update_apply_fetches_an_https_artifact_with_curl_and_refuses_a_server_this_machine_does_not_trust()
 {
    use ferry_mcp_testkit::https::{self, Reply};
    let (dir, home) = fleet();
    let artifact = script(dir.path());
    let served = https::serve(&[("ferry", Reply::Body(fs::read(&artifact).unwrap()))]);
    let pair = format!("{THIS_PLATFORM}={}", served.url("ferry"));
    let pin = format!("{THIS_PLATFORM}={}", sha256_of(&artifact));
    run_ok(
        &home,
        &[
            "release",
            "approve",
            "9.9.9",
            "--artifact",
            &pair,
            "--sha256",
            &pin,
            "--project",
            "demo",
        ],
    );
    let copy = ferry_copy(dir.path());
    let before = sha256_of(&copy);
    // The shipped binary trusts the system's roots only: the certificate the test's server
    // made a moment ago is not among them.
    let (ok, _, stderr) = run_with(&copy, &home, &["update", "apply", "--as", "lead"]);
    assert!(!ok);
    assert!(
        stderr.starts_with(&format!(
            "ferry: fetching {}: the server's certificate is not trusted: refused (curl: (60)",
            served.url("ferry")
        )),
        "{stderr}"
    );
    assert_eq!(sha256_of(&copy), before);
    assert!(!install::temp_path(&copy).exists());
    assert!(!install::previous_path(&copy).exists());
}

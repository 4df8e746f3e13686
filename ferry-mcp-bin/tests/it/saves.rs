//! A command that wrote to the channel never says it failed because this machine's kept state
//! could not be saved (issue 17, finding 9): the entry is appended and synced by then, and a
//! command that exits 1 is run again (an order issued twice). The failing save is simulated in
//! the kept state's own database (a trigger refuses every write to it), which works whoever
//! runs the tests (root ignores a read-only file), and, as root, by a real full disk.

use std::path::Path;

use ferry_mcp_core::channel::log::names::ProjectId;
use ferry_mcp_core::channel::machine::home::Home;
use ferry_mcp_testkit::tiny_disk::TinyDisk;
use serde_json::Value;

use super::admin::{join_args, project, run, run_ok};

fn kept_state(home: &Path) -> std::path::PathBuf {
    Home::at(home.to_owned()).verified_path(&ProjectId::parse("demo").unwrap())
}

/// Makes every save of the kept state fail until [`allow_saves`].
fn refuse_saves(home: &Path) {
    assert!(
        kept_state(home).is_file(),
        "a kept state to refuse saves to"
    );
    let conn = rusqlite::Connection::open(kept_state(home)).unwrap();
    conn.execute_batch(
        "CREATE TRIGGER refuse_insert BEFORE INSERT ON meta
             BEGIN SELECT RAISE(ABORT, 'simulated: the disk refuses every write'); END;
         CREATE TRIGGER refuse_update BEFORE UPDATE ON meta
             BEGIN SELECT RAISE(ABORT, 'simulated: the disk refuses every write'); END;",
    )
    .unwrap();
}

fn allow_saves(home: &Path) {
    let conn = rusqlite::Connection::open(kept_state(home)).unwrap();
    conn.execute_batch("DROP TRIGGER refuse_insert; DROP TRIGGER refuse_update;")
        .unwrap();
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

/// Issues an order while the kept state cannot be kept, and checks that it succeeded once,
/// with one warning that says `why` the state was not kept.
fn issue_while_saves_fail(home: &Path, why: &str, make_room: impl FnOnce()) {
    let (ok, stdout, stderr) = run(
        home,
        &[
            "order",
            "issue",
            "Write the parser",
            "--project",
            "demo",
            "--json",
        ],
    );
    assert!(
        ok,
        "the order is on the board: the command succeeded: {stderr}"
    );
    let issued: Value = serde_json::from_str(&stdout).unwrap();
    assert!(issued["id"].is_string(), "{stdout}");
    assert_eq!(stderr.lines().count(), 1, "one warning: {stderr}");
    assert!(
        stderr.starts_with("ferry: ") && stderr.contains("kept state"),
        "says the kept state was not kept: {stderr}"
    );
    assert!(stderr.contains(why), "says why ({why}): {stderr}");

    make_room();
    assert_eq!(
        titles(home),
        vec!["Write the parser".to_owned()],
        "issued once"
    );
}

#[test]
fn an_order_issued_while_the_kept_state_cannot_be_saved_succeeds_once_and_warns_of_what_was_not_kept()
 {
    let dir = tempfile::tempdir().unwrap();
    let home = project(&dir);
    run_ok(&home, &join_args("fang"));
    assert_eq!(titles(&home), Vec::<String>::new());
    refuse_saves(&home);
    issue_while_saves_fail(&home, "simulated", || allow_saves(&home));
}

#[test]
fn an_order_issued_while_the_kept_state_s_disk_is_full_succeeds_once_and_says_the_disk_is_full() {
    let dir = tempfile::tempdir().unwrap();
    let home = project(&dir);
    run_ok(&home, &join_args("fang"));
    assert_eq!(titles(&home), Vec::<String>::new());
    let kept = kept_state(&home);
    let Some(disk) = TinyDisk::over(kept.parent().unwrap()) else {
        // Not root: the same promise, the save refused by the database instead of the disk.
        refuse_saves(&home);
        issue_while_saves_fail(&home, "simulated", || allow_saves(&home));
        return;
    };
    let kept_before = std::fs::read(&kept).unwrap();
    disk.fill();
    issue_while_saves_fail(&home, "no space left on the device", || {
        assert_eq!(
            std::fs::read(&kept).unwrap(),
            kept_before,
            "the kept state stands as it was: never removed for a full disk"
        );
        disk.free();
    });
    let out = run_ok(&home, &["channel", "status", "--project", "demo", "--json"]);
    let status: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(status["problems"], serde_json::json!([]), "{out}");
}

#[test]
fn a_status_taken_while_the_kept_state_cannot_be_saved_lists_the_failure_and_succeeds() {
    let dir = tempfile::tempdir().unwrap();
    let home = project(&dir);
    run_ok(&home, &join_args("fang"));
    refuse_saves(&home);
    // Something new to keep: a second agent seated since the last save.
    run(&home, &join_args("gus"));
    let out = run_ok(&home, &["channel", "status", "--project", "demo", "--json"]);
    let status: Value = serde_json::from_str(&out).unwrap();
    let problems: Vec<&str> = status["problems"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p.as_str().unwrap())
        .collect();
    assert!(
        problems
            .iter()
            .any(|p| p.contains("kept state could not be saved") && p.contains("simulated")),
        "{problems:?}"
    );
}

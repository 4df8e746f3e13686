//! A full disk, said plainly, and a command that says it failed never having written (issue 17,
//! finding 9). The disk is a real one: a tmpfs of a few pages mounted over the folder under
//! test and filled to its last page, which needs root. As root the mount must work (a refused
//! mount fails the test, it never passes unrun); as anyone else each test says so on stderr and
//! holds what it can without a mount: the mapping of the kernel's own `ENOSPC` (a write to
//! `/dev/full`) and of SQLite's `SQLITE_FULL` (a page limit) to the words a full disk is said in.

use std::fs;
use std::io::Write as _;
use std::path::PathBuf;

use ferry_mcp_core::channel::fold::levels::{Level, Operation};
use ferry_mcp_core::channel::log::store::StoreError;
use ferry_mcp_core::channel::ops::OpsError;
use ferry_mcp_core::channel::session::{Actor, Session, kept};
use ferry_mcp_testkit::plant::Note;
use ferry_mcp_testkit::temp_channel::TempChannel;
use ferry_mcp_testkit::tiny_disk::TinyDisk;

/// How a full disk is said, by the store and by the kept state.
const FULL: &str = "no space left on the device";

fn with_fang() -> TempChannel {
    TempChannel::builder()
        .agent("fang", Level::Member)
        .build()
        .unwrap()
}

fn fang_session(temp: &TempChannel) -> Session {
    Session::open(
        temp.home(),
        temp.project(),
        Actor::Agent(TempChannel::agent("fang")),
        temp.now(),
    )
    .unwrap()
}

fn note(session: &mut Session, temp: &TempChannel, n: u64) -> Result<(), OpsError> {
    session
        .append(Operation::HandIn, None, &Note { n: Some(n) }, temp.now())
        .map(drop)
}

fn fang_log(temp: &TempChannel) -> PathBuf {
    let fang = TempChannel::agent("fang");
    let logs = temp.channel_dir().join("logs").join(fang.as_str());
    let mut found = fs::read_dir(&logs)
        .unwrap()
        .map(|entry| entry.unwrap().path());
    let log = found.next().expect("fang's log");
    assert!(found.next().is_none(), "one log for fang");
    log
}

#[test]
fn an_append_that_meets_a_full_disk_says_so_names_the_log_and_leaves_the_log_as_it_was() {
    let temp = with_fang();
    let log = fang_log(&temp);
    let Some(disk) = TinyDisk::over(temp.channel_dir()) else {
        // The kernel's own ENOSPC, as the store reads it.
        let cause = fs::OpenOptions::new()
            .write(true)
            .open("/dev/full")
            .unwrap()
            .write_all(b"an entry\n")
            .unwrap_err();
        let said = StoreError::from_io(&log, cause);
        assert!(
            matches!(&said, StoreError::DiskFull(path) if *path == log),
            "{said:?}"
        );
        assert_eq!(said.to_string(), format!("{}: {FULL}", log.display()));
        return;
    };
    let mut session = fang_session(&temp);
    disk.fill();
    // The log's last page takes a few more lines; then the disk refuses one, part written.
    let mut failed = None;
    for n in 0..64 {
        let before = fs::metadata(&log).unwrap().len();
        if let Err(e) = note(&mut session, &temp, n) {
            failed = Some((e, before));
            break;
        }
    }
    let (error, before) = failed.expect("a full disk refuses an append");
    assert!(
        matches!(&error, OpsError::Store(StoreError::DiskFull(path)) if *path == log),
        "{error:?}"
    );
    assert_eq!(error.to_string(), format!("{}: {FULL}", log.display()));
    assert_eq!(
        fs::metadata(&log).unwrap().len(),
        before,
        "no part of the refused line is left in the log"
    );

    disk.free();
    note(&mut session, &temp, 100).expect("an append once there is room");
    let view = temp.view();
    assert_eq!(
        view.integrity_problems(),
        (&[][..], 0),
        "the refused append left no torn line behind"
    );
}

/// The project's folder in the machine's state folder: the kept state, the keys, the pins.
fn project_dir(temp: &TempChannel) -> PathBuf {
    temp.home()
        .verified_path(temp.project())
        .parent()
        .unwrap()
        .to_owned()
}

#[test]
fn a_full_disk_under_the_kept_state_is_said_plainly_and_never_removes_the_kept_state() {
    let temp = with_fang();
    let kept_db = temp.home().verified_path(temp.project());
    assert!(kept_db.is_file(), "a kept state was saved");
    let Some(disk) = TinyDisk::over(&project_dir(&temp)) else {
        // SQLite's own SQLITE_FULL (a database at its page limit), as the kept state says it.
        let conn = rusqlite::Connection::open_in_memory().unwrap();
        conn.execute_batch("PRAGMA max_page_count = 2; CREATE TABLE t (v BLOB);")
            .unwrap();
        let full = conn
            .execute("INSERT INTO t VALUES (zeroblob(100000))", [])
            .unwrap_err();
        assert_eq!(
            full.sqlite_error_code(),
            Some(rusqlite::ErrorCode::DiskFull)
        );
        assert_eq!(kept::describe_sqlite(full), FULL);
        return;
    };
    let kept_bytes = fs::read(&kept_db).unwrap();

    // A session that opened before the disk filled: its entry is appended (the channel is on
    // another disk), its save says why it kept nothing.
    let mut before = fang_session(&temp);
    disk.fill();
    note(&mut before, &temp, 1).expect("the channel has room");
    let unsaved = before.save().expect_err("the kept state's disk is full");
    assert_eq!(
        unsaved.to_string(),
        format!("{}: {FULL}", kept_db.display())
    );
    // Its journal files go as it closes: the disk is filled again.
    drop(before);
    disk.fill();

    // A session that opens on the full disk (its journal files cannot be made): told, it
    // neither reads nor writes the kept state.
    let mut during = fang_session(&temp);
    let said = during.local_problems().join("\n");
    assert!(
        said.contains(FULL) && !said.contains("rebuilt") && !said.contains("corrupt"),
        "{said}"
    );
    note(&mut during, &temp, 2).expect("the channel has room");
    during.save().expect("nothing to save into");
    drop(during);
    assert_eq!(
        fs::read(&kept_db).unwrap(),
        kept_bytes,
        "the kept state stands as it was"
    );

    disk.free();
    let after = fang_session(&temp);
    assert_eq!(
        after.local_problems(),
        &[] as &[String],
        "the kept state is read again, not rebuilt"
    );
}

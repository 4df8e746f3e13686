//! What a sync tool does to the channel folder while it carries it, and what this machine reports
//! of it (issue 17, "warnings that clear"). Syncthing writes each file it receives as
//! `.syncthing.<name>.tmp` beside it, removes the old file and renames the temporary one into
//! its place: a status taken in between sees a temporary file and a log gone, and both are
//! true only until the rename. A problem that no longer holds is dropped, and a log replaced by
//! a longer copy of itself is neither vanished nor rolled back.

use std::fs;
use std::path::{Path, PathBuf};

use ferry_mcp_core::channel::fold::levels::{Level, Operation};
use ferry_mcp_core::channel::log::reader::ProblemKind;
use ferry_mcp_core::channel::machine::home::Home;
use ferry_mcp_core::channel::ops;
use ferry_mcp_core::channel::session::{Actor, Session};
use ferry_mcp_testkit::plant::Note;
use ferry_mcp_testkit::temp_channel::TempChannel;

fn with_fang() -> TempChannel {
    TempChannel::builder()
        .agent("fang", Level::Member)
        .build()
        .unwrap()
}

/// Appends `count` notes as fang and returns fang's log.
fn fang_notes(temp: &TempChannel, count: u64) -> PathBuf {
    let mut fang = temp.agent_session("fang");
    for n in 0..count {
        fang.append(Operation::HandIn, None, &Note { n: Some(n) }, temp.now())
            .unwrap();
    }
    fang.save().unwrap();
    let key = fang.identity().holder(&TempChannel::agent("fang")).copied();
    fang.channel()
        .log_path(&TempChannel::agent("fang"), &key.unwrap())
}

/// A second machine on the same channel folder: its own state folder.
fn other_machine(temp: &TempChannel) -> Home {
    let home = Home::at(temp.root().join("other"));
    ops::add_existing(&home, temp.project(), temp.channel_dir()).unwrap();
    home
}

/// Opens the channel as an observer of `home` and keeps what it verified, as `ferry channel
/// status` does; returns the problems it keeps (kind and path) and how many more it counted.
fn look(temp: &TempChannel, home: &Home) -> (Vec<(ProblemKind, PathBuf)>, u64) {
    let mut session = Session::open(home, temp.project(), Actor::Observer, temp.now()).unwrap();
    session.save().unwrap();
    let (problems, dropped) = session.integrity_problems();
    let mut found: Vec<_> = problems
        .iter()
        .map(|problem| (problem.kind, problem.path.clone()))
        .collect();
    found.sort();
    (found, dropped)
}

/// The problem lines of `ferry channel status` on `home`.
fn status(temp: &TempChannel, home: &Home) -> Vec<String> {
    ops::status(home, temp.project(), temp.now())
        .unwrap()
        .problems
}

fn rel(temp: &TempChannel, path: &Path) -> PathBuf {
    path.strip_prefix(temp.channel_dir()).unwrap().to_owned()
}

/// Where Syncthing writes the new copy of `file` before it renames it into place.
fn syncthing_temp(file: &Path) -> PathBuf {
    let name = file.file_name().unwrap().to_string_lossy();
    file.with_file_name(format!(".syncthing.{name}.tmp"))
}

#[test]
fn a_syncthing_temporary_file_is_listed_while_it_is_there_and_never_once_it_is_gone() {
    let temp = with_fang();
    let log = fang_notes(&temp, 2);
    let beside_log = syncthing_temp(&log);
    let at_top = syncthing_temp(&temp.channel_dir().join("genesis.json"));
    fs::write(&beside_log, b"half a copy").unwrap();
    fs::write(&at_top, b"half a copy").unwrap();
    let (found, _) = look(&temp, temp.home());
    assert_eq!(
        found,
        vec![
            (ProblemKind::TempFile, rel(&temp, &at_top)),
            (ProblemKind::TempFile, rel(&temp, &beside_log)),
        ]
    );

    fs::remove_file(&beside_log).unwrap();
    fs::remove_file(&at_top).unwrap();
    assert_eq!(look(&temp, temp.home()), (vec![], 0));
    assert_eq!(status(&temp, temp.home()), Vec::<String>::new());
}

#[test]
fn a_log_that_syncthing_replaces_by_a_longer_copy_of_itself_is_neither_vanished_nor_rolled_back() {
    let temp = with_fang();
    let log = fang_notes(&temp, 5);
    let longer = fs::read(&log).unwrap();
    // This machine last saw the log with its first three entries.
    let text = String::from_utf8(longer.clone()).unwrap();
    let first_three: String = text
        .lines()
        .take(3)
        .map(|line| format!("{line}\n"))
        .collect();
    fs::write(&log, first_three).unwrap();
    let here = other_machine(&temp);
    assert_eq!(look(&temp, &here), (vec![], 0));

    // Syncthing's steps, each seen by an open: the new copy written beside the log, the old
    // log removed, the new copy renamed into its place.
    let tmp = syncthing_temp(&log);
    fs::write(&tmp, &longer).unwrap();
    assert_eq!(
        look(&temp, &here).0,
        vec![(ProblemKind::TempFile, rel(&temp, &tmp))]
    );
    fs::remove_file(&log).unwrap();
    assert_eq!(
        look(&temp, &here).0,
        vec![
            (ProblemKind::Vanished, rel(&temp, &log)),
            (ProblemKind::TempFile, rel(&temp, &tmp)),
        ],
        "while the log is not there, it is reported gone"
    );
    fs::rename(&tmp, &log).unwrap();

    assert_eq!(look(&temp, &here), (vec![], 0));
    assert_eq!(status(&temp, &here), Vec::<String>::new());
    let session = Session::open(&here, temp.project(), Actor::Observer, temp.now()).unwrap();
    let fang = TempChannel::agent("fang");
    let key = *session.identity().holder(&fang).unwrap();
    let entries = text.lines().count() as u64;
    assert_eq!(session.log_seq(&fang, &key), entries, "every entry is read");
}

#[test]
fn a_log_replaced_by_rename_between_two_opens_is_read_on_with_nothing_reported() {
    let temp = with_fang();
    let log = fang_notes(&temp, 4);
    let longer = fs::read(&log).unwrap();
    let text = String::from_utf8(longer.clone()).unwrap();
    let first_two: String = text
        .lines()
        .take(2)
        .map(|line| format!("{line}\n"))
        .collect();
    fs::write(&log, first_two).unwrap();
    let here = other_machine(&temp);
    assert_eq!(look(&temp, &here), (vec![], 0));

    let tmp = syncthing_temp(&log);
    fs::write(&tmp, &longer).unwrap();
    fs::rename(&tmp, &log).unwrap();
    assert_eq!(look(&temp, &here), (vec![], 0));
}

#[test]
fn junk_files_past_the_kept_problems_are_no_longer_counted_once_removed() {
    let temp = with_fang();
    let log = fang_notes(&temp, 1);
    let folder = log.parent().unwrap();
    let junk: Vec<PathBuf> = (0..1_100)
        .map(|n| folder.join(format!("junk-{n:05}")))
        .collect();
    for file in &junk {
        fs::write(file, b"").unwrap();
    }
    fs::write(temp.channel_dir().join("logs/stray.txt"), b"hi").unwrap();
    let (found, dropped) = look(&temp, temp.home());
    assert_eq!(found.len() as u64 + dropped, 1_101, "each is reported once");
    assert!(dropped > 0, "more than the session keeps");

    for file in &junk {
        fs::remove_file(file).unwrap();
    }
    fs::remove_file(temp.channel_dir().join("logs/stray.txt")).unwrap();
    assert_eq!(look(&temp, temp.home()), (vec![], 0));
    assert_eq!(status(&temp, temp.home()), Vec::<String>::new());
}

#[test]
fn a_junk_folder_under_logs_and_what_it_held_clear_once_it_is_removed() {
    let temp = with_fang();
    fang_notes(&temp, 1);
    let junk = temp.channel_dir().join("logs/Not-An-Author");
    fs::create_dir(&junk).unwrap();
    fs::write(junk.join("x.jsonl"), b"").unwrap();
    let (found, _) = look(&temp, temp.home());
    assert_eq!(found, vec![(ProblemKind::UnknownFile, rel(&temp, &junk))]);
    fs::remove_dir_all(&junk).unwrap();
    assert_eq!(look(&temp, temp.home()), (vec![], 0));
}

#[test]
fn a_problem_kept_by_one_process_clears_in_the_next_once_the_file_is_gone() {
    let temp = with_fang();
    let log = fang_notes(&temp, 1);
    let conflict = log.with_file_name("x.sync-conflict-20260101-120000-ABCDEFG.jsonl");
    fs::write(&conflict, b"").unwrap();
    assert_eq!(
        look(&temp, temp.home()).0,
        vec![(ProblemKind::ConflictCopy, rel(&temp, &conflict))]
    );
    // Another open finds it still there: still listed, nothing reported twice.
    assert_eq!(
        look(&temp, temp.home()).0,
        vec![(ProblemKind::ConflictCopy, rel(&temp, &conflict))]
    );
    fs::remove_file(&conflict).unwrap();
    assert_eq!(status(&temp, temp.home()), Vec::<String>::new());
}

//! Every lock and state file is opened without following a link and without blocking, and
//! anything but a regular file is refused (issue 17, finding 10): a FIFO planted as a lock, a
//! state file, a key, a log or the genesis would otherwise hang every command that opens it
//! (opening a FIFO blocks until the other end is opened). The machine's state folder is the
//! user's, but the channel folder is anyone's who can write the synced folder.
//!
//! Each test plants a FIFO and runs the operation on another thread: it must come back (with
//! an error or a reported problem), never wait for a writer that never comes.

use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::time::Duration;

use ferry_mcp_core::channel::fold::levels::{Level, Operation};
use ferry_mcp_core::channel::ops;
use ferry_mcp_core::channel::session::{Actor, Session};
use ferry_mcp_testkit::plant::Note;
use ferry_mcp_testkit::temp_channel::TempChannel;

/// A hang is told apart from a slow machine by a wide margin: a FIFO never opens at all.
const HANG: Duration = Duration::from_secs(60);

fn with_fang() -> TempChannel {
    TempChannel::builder()
        .agent("fang", Level::Member)
        .build()
        .unwrap()
}

/// Puts a FIFO where `path` was.
fn plant_fifo(path: &Path) {
    let _ = std::fs::remove_file(path);
    let made = std::process::Command::new("mkfifo")
        .arg(path)
        .status()
        .expect("mkfifo runs");
    assert!(made.success(), "mkfifo {}", path.display());
}

/// Runs `work` on another thread and returns what it returned, failing if it hangs.
fn returns<T: Send + 'static>(what: &str, work: impl FnOnce() -> T + Send + 'static) -> T {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(work());
    });
    rx.recv_timeout(HANG)
        .unwrap_or_else(|_| panic!("{what} hung on a FIFO"))
}

/// The project's folder in the machine's state folder (`pins.json`, `project.json`, keys).
fn project_dir(temp: &TempChannel) -> PathBuf {
    temp.home()
        .pins_path(temp.project())
        .parent()
        .unwrap()
        .to_owned()
}

/// Fang appends a note through a session opened now, as every tool call and command does.
fn fang_writes(temp: &TempChannel) -> impl FnOnce() -> Result<(), String> + Send + 'static {
    let (home, project, now) = (temp.home().clone(), temp.project().clone(), temp.now());
    move || {
        let fang = Actor::Agent(TempChannel::agent("fang"));
        let mut session = Session::open(&home, &project, fang, now).map_err(|e| e.to_string())?;
        session
            .append(Operation::HandIn, None, &Note { n: Some(1) }, now)
            .map_err(|e| e.to_string())?;
        session.save().map_err(|e| e.to_string())
    }
}

fn status_of(temp: &TempChannel) -> impl FnOnce() -> Result<Vec<String>, String> + Send + 'static {
    let (home, project, now) = (temp.home().clone(), temp.project().clone(), temp.now());
    move || {
        ops::status(&home, &project, now)
            .map(|status| status.problems)
            .map_err(|e| e.to_string())
    }
}

#[test]
fn a_fifo_as_the_pins_lock_is_refused_and_no_command_hangs_on_it() {
    let temp = with_fang();
    // A seat the pins do not hold yet: the next open pins it, under the lock.
    ops::join(
        temp.home(),
        temp.project(),
        &TempChannel::agent("gus"),
        None,
        temp.now(),
    )
    .unwrap();
    let pins = temp.home().pins_path(temp.project());
    std::fs::remove_file(&pins).unwrap();
    plant_fifo(&project_dir(&temp).join("pins.lock"));
    let problems = returns("a status", status_of(&temp)).unwrap();
    assert!(
        problems
            .iter()
            .any(|p| p.contains("pins.lock") && p.contains("not a regular file")),
        "{problems:?}"
    );
}

#[test]
fn a_fifo_as_the_pins_file_is_refused_and_no_command_hangs_on_it() {
    let temp = with_fang();
    plant_fifo(&temp.home().pins_path(temp.project()));
    let problems = returns("a status", status_of(&temp)).unwrap();
    assert!(
        problems
            .iter()
            .any(|p| p.contains("pins.json") && p.contains("not a regular file")),
        "{problems:?}"
    );
}

#[test]
fn a_fifo_as_the_project_s_registration_is_refused_and_no_command_hangs_on_it() {
    let temp = with_fang();
    plant_fifo(&project_dir(&temp).join("project.json"));
    let refused = returns("fang's write", fang_writes(&temp)).unwrap_err();
    assert!(refused.contains("not a regular file"), "{refused}");
}

#[test]
fn a_fifo_as_the_pause_switch_is_refused_and_no_command_hangs_on_it() {
    let temp = with_fang();
    plant_fifo(&temp.home().root().join("pause.json"));
    let refused = returns("fang's write", fang_writes(&temp)).unwrap_err();
    assert!(refused.contains("not a regular file"), "{refused}");
}

#[test]
fn a_fifo_as_an_agent_s_key_is_refused_and_no_command_hangs_on_it() {
    let temp = with_fang();
    plant_fifo(&project_dir(&temp).join("keys").join("fang.key"));
    let refused = returns("fang's write", fang_writes(&temp)).unwrap_err();
    assert!(refused.contains("not a regular file"), "{refused}");
}

#[test]
fn a_fifo_as_an_agent_s_log_is_never_read_or_written_and_no_command_hangs_on_it() {
    let temp = with_fang();
    let log = {
        let session = temp.agent_session("fang");
        let fang = TempChannel::agent("fang");
        let key = *session.identity().holder(&fang).unwrap();
        session.channel().log_path(&fang, &key)
    };
    plant_fifo(&log);
    let refused = returns("fang's write", fang_writes(&temp)).unwrap_err();
    assert!(refused.contains("not a regular file"), "{refused}");
    let problems = returns("a status", status_of(&temp)).unwrap();
    assert!(!problems.is_empty(), "the log is reported");
}

#[test]
fn a_fifo_as_the_genesis_is_refused_and_no_command_hangs_on_it() {
    let temp = with_fang();
    plant_fifo(&temp.channel_dir().join("genesis.json"));
    let refused = returns("a status", status_of(&temp)).unwrap_err();
    assert!(refused.contains("genesis"), "{refused}");
}

#[test]
fn a_fifo_as_the_kept_state_is_refused_and_no_command_hangs_on_it() {
    let temp = with_fang();
    plant_fifo(&temp.home().verified_path(temp.project()));
    let problems = returns("a status", status_of(&temp)).unwrap();
    assert!(
        problems.iter().any(|p| p.contains("not a regular file")),
        "{problems:?}"
    );
    returns("fang's write", fang_writes(&temp)).unwrap();
}

//! `TinyDisk`: a real full disk for tests of what a full disk does (issue 17, finding 9). A
//! tmpfs of a few pages is mounted over a folder (its files copied onto it first), filled to
//! its last page on demand, and unmounted when dropped.
//!
//! Mounting needs root. [`TinyDisk::over`] answers `None` when this process is not root, and
//! says so on stderr, so that a test takes its other path (the mapping of a full disk, or the
//! same promise with a simulated failure) instead of passing unrun; as root the mount must work, and a refused one fails the test.

use std::fs;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;

/// A tmpfs mounted over a folder. See the module docs.
#[derive(Debug)]
pub struct TinyDisk {
    dir: PathBuf,
}

impl TinyDisk {
    /// Mounts a 1 MiB tmpfs over `dir`, holding the files `dir` held: `None` when this process
    /// is not root. Panics when root cannot mount.
    pub fn over(dir: &Path) -> Option<TinyDisk> {
        if !is_root() {
            eprintln!(
                "not root: no tmpfs mounted over {}; the test takes its path without a real full disk",
                dir.display()
            );
            return None;
        }
        let stash = dir.with_extension("before-mount");
        run(Command::new("cp").arg("-a").arg(dir).arg(&stash));
        run(Command::new("mount")
            .args(["-t", "tmpfs", "-o", "size=1m", "tmpfs"])
            .arg(dir));
        let disk = TinyDisk {
            dir: dir.to_owned(),
        };
        run(Command::new("cp").arg("-a").arg(stash.join(".")).arg(dir));
        Some(disk)
    }

    /// Fills the disk to its last page: a file written until the disk refuses. What is left is
    /// the slack of the last page of each file already there.
    pub fn fill(&self) {
        let mut filler = fs::File::create(self.filler()).expect("a filler file");
        let page = [0u8; 4096];
        loop {
            match filler.write(&page) {
                Ok(0) => break,
                Ok(_) => {}
                Err(e) => {
                    assert_eq!(e.kind(), std::io::ErrorKind::StorageFull, "{e}");
                    break;
                }
            }
        }
    }

    /// Makes room again: the filler goes.
    pub fn free(&self) {
        fs::remove_file(self.filler()).expect("the filler is there");
    }

    fn filler(&self) -> PathBuf {
        self.dir.join(".tiny-disk-filler")
    }
}

impl Drop for TinyDisk {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg("-l").arg(&self.dir).status();
    }
}

fn is_root() -> bool {
    Command::new("id")
        .arg("-u")
        .output()
        .is_ok_and(|out| out.stdout.trim_ascii() == b"0")
}

fn run(command: &mut Command) {
    let out = command.output().expect("the command runs");
    assert!(
        out.status.success(),
        "as root, {command:?} must work: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

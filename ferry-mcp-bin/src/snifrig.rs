//! The machine's queue for heavy work (`docs/mcp-server.md`, heavy orders), as `ferry` finds it: the agent's
//! own config decides, `snifrig` must be on the PATH, and its `can-i-start` must say yes for
//! the order's hints.
//!
//! The config is `<state folder>/agent.toml`: `snifrig_heavy = true` sends this machine's
//! heavy orders through the queue; it is off when the file or the key is missing.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use ferry_mcp_core::channel::fold::state::orders::Hints;
use ferry_mcp_core::port::HeavyQueue;

/// The agent config file, in the state folder.
pub const CONFIG_FILE: &str = "agent.toml";

/// What `ferry` found of the queue on this machine.
#[derive(Debug, Clone)]
pub struct Snifrig {
    /// `snifrig` on the PATH, when the config turns the queue on.
    program: Option<PathBuf>,
}

impl Snifrig {
    /// Reads the config in `state_folder` and looks for `snifrig` on `path` (the `PATH`).
    pub fn find(state_folder: &Path, path: Option<&std::ffi::OsStr>) -> Self {
        let enabled = std::fs::read_to_string(state_folder.join(CONFIG_FILE))
            .ok()
            .and_then(|text| text.parse::<toml_edit::DocumentMut>().ok())
            .and_then(|doc| doc.get("snifrig_heavy").and_then(toml_edit::Item::as_bool))
            .unwrap_or(false);
        let program = enabled
            .then(|| path.and_then(|path| on_path(path, "snifrig")))
            .flatten();
        Self { program }
    }
}

fn on_path(path: &std::ffi::OsStr, program: &str) -> Option<PathBuf> {
    std::env::split_paths(path)
        .map(|dir| dir.join(program))
        .find(|candidate| candidate.is_file())
}

impl HeavyQueue for Snifrig {
    fn enabled(&self) -> bool {
        self.program.is_some()
    }

    fn can_i_start(&self, hints: &Hints) -> bool {
        let Some(program) = &self.program else {
            return false;
        };
        let mut command = Command::new(program);
        command.arg("can-i-start");
        for (flag, value) in [
            ("--cores", hints.cores),
            ("--ram-gb", hints.ram_gb),
            ("--gpu-mem-gb", hints.gpu_mem_gb),
            ("--expected-minutes", hints.expected_minutes),
        ] {
            if let Some(value) = value {
                command.arg(flag).arg(value.to_string());
            }
        }
        command
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|status| status.success())
    }
}

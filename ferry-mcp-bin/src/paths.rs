//! Where the machine-local state lives. The core never reads the environment; this does,
//! once: `FERRY_HOME`, else `$XDG_STATE_HOME/ferry`, else `~/.local/state/ferry`. A
//! `FERRY_HOME` that is set but empty is an error, not a fall back to the real state folder
//! (a script that meant to isolate itself must not touch the user's keys).
//! Unlocked keys go to `$XDG_RUNTIME_DIR/ferry` (a per-user tmpfs) when it is set and
//! `FERRY_HOME` is not (tests set `FERRY_HOME` and must stay inside it), else `<home>/run`.

use std::path::PathBuf;

use ferry_mcp_core::channel::log::names::ProjectId;

use anyhow::bail;
use ferry_mcp_core::channel::machine::home::Home;

/// The environment variable `var` as a path, unless it is unset or empty.
pub fn non_empty(var: &str) -> Option<PathBuf> {
    std::env::var_os(var)
        .filter(|value| !value.is_empty())
        .map(PathBuf::from)
}

/// `FERRY_HOME` when it is set. An app starts `ferry` without this shell's environment, so
/// `ferry mcp connect` writes it into the app's config to keep both on one state folder.
pub fn home_override() -> Option<PathBuf> {
    non_empty("FERRY_HOME")
}

pub fn home() -> anyhow::Result<Home> {
    if let Some(root) = std::env::var_os("FERRY_HOME") {
        if root.is_empty() {
            bail!("FERRY_HOME is set but empty: unset it or name a folder");
        }
        return Ok(Home::at(PathBuf::from(root)));
    }
    let root = if let Some(state) = non_empty("XDG_STATE_HOME") {
        state.join("ferry")
    } else if let Some(user) = non_empty("HOME") {
        user.join(".local/state/ferry")
    } else {
        bail!("cannot find a state folder: set FERRY_HOME");
    };
    Ok(match non_empty("XDG_RUNTIME_DIR") {
        Some(runtime) => Home::with_runtime(root, runtime.join("ferry")),
        None => Home::at(root),
    })
}

/// Where the gateway's configuration of `project` is (ADR 0021): beside the project's keys and
/// kept state in the state folder (`Home`'s `projects/<id>/`), never in the channel.
pub fn gateway_config(home: &Home, project: &ProjectId) -> PathBuf {
    home.root()
        .join("projects")
        .join(project.as_str())
        .join("gateway.json")
}

//! What the command modules share: the parsers of names on the command line, who acts
//! (`--project`, `--as`, `--json`), opening a session as the master or as an agent, saving what
//! it verified, and printing.
//!
//! The command modules (`admin`, `orders`, `talk`, `fleet`, `secrets`, `search`, `mcp`) import
//! from here and from `display`, never from each other, so that each stays one command's glue.

use std::io::Write as _;
use std::process::ExitCode;

use anyhow::Context as _;
use clap::Args;
use ferry_mcp_core::channel::fold::identity::Seat;
use ferry_mcp_core::channel::fold::levels::{LocalKey, Operation};
use ferry_mcp_core::channel::log::names::{AgentName, ProjectId};
use ferry_mcp_core::channel::ops::OpsError;
use ferry_mcp_core::channel::session::{Actor, Session};

use crate::{clock, display, passphrase, paths};

pub(crate) fn agent_name(raw: &str) -> Result<AgentName, String> {
    guarded_as_typed(raw)?;
    AgentName::parse(raw).map_err(|err| err.to_string())
}

pub(crate) fn project_id(raw: &str) -> Result<ProjectId, String> {
    guarded_as_typed(raw)?;
    ProjectId::parse(raw).map_err(|err| err.to_string())
}

/// The guard's judgement of a name as it was typed: names are folded to lower case when
/// parsed, and a mixed-case token folded loses its checksum, so only the name as given still
/// shows that it is one.
fn guarded_as_typed(raw: &str) -> Result<(), String> {
    ferry_mcp_core::guard::check_name(raw)
        .map_err(|refusal| format!("names are written in the clear, and this {refusal}"))
}

/// Who acts and where, for every command that reads or writes a channel.
#[derive(Debug, Args)]
pub struct Acting {
    #[arg(long, value_parser = project_id)]
    project: ProjectId,
    /// Act as this agent (its key on this machine) instead of the master.
    #[arg(long = "as", value_parser = agent_name)]
    agent: Option<AgentName>,
    /// Print JSON for scripts.
    #[arg(long)]
    json: bool,
    /// Read a sealed master key's passphrase from this file descriptor (a pipe), not the
    /// terminal.
    #[arg(long, value_name = "N")]
    passphrase_fd: Option<i32>,
}

pub(crate) fn open_session(acting: &Acting) -> anyhow::Result<Session> {
    let (home, actor) = match &acting.agent {
        Some(agent) => (paths::home()?, Actor::Agent(agent.clone())),
        None => (
            paths::home()?.unsealing_with(passphrase::unsealer(acting.passphrase_fd)),
            Actor::Master,
        ),
    };
    let session = Session::open(&home, &acting.project, actor, clock::now())?.for_one_operation();
    report_local_problems("ferry", &session);
    Ok(session)
}

/// A session for a command that only reads: as [`open_session`], except that the person at the
/// keyboard of a machine without the key reads anyway (the channel's logs are plain signed
/// text: reading them needs no key), instead of being refused: without the master key as an
/// observer, and with `--as AGENT` where AGENT's key is not here from AGENT's side
/// ([`Session::reading_without_key`]; a write it leads to is still refused).
/// `agent_without_key` says whether `--as AGENT` reads so (`ferry join` does not: what it tells
/// is whether AGENT can act here).
fn open_reading_session(acting: &Acting, agent_without_key: bool) -> anyhow::Result<Session> {
    let session = open_session(acting)?;
    if let Some(agent) = &acting.agent {
        // Only a name the roster seats (with a key another machine holds): a name it does not
        // know is a mistake, and is refused as before.
        let seated = matches!(session.identity().seat(agent), Seat::Seated(_));
        return Ok(match session.local_key(clock::now())? {
            LocalKey::Missing if agent_without_key && seated => session.reading_without_key(),
            _ => session,
        });
    }
    match session.authorize(Operation::Read, None, clock::now()) {
        Err(OpsError::NotTheMaster(_)) => {
            let home = paths::home()?;
            Ok(
                Session::open(&home, &acting.project, Actor::Observer, clock::now())?
                    .for_one_operation(),
            )
        }
        _ => Ok(session),
    }
}

/// [`with_session`] for a command that only reads ([`open_reading_session`]).
pub(crate) fn with_reading_session(
    acting: &Acting,
    work: impl FnOnce(&mut Session) -> anyhow::Result<(String, serde_json::Value)>,
) -> anyhow::Result<ExitCode> {
    with_reading_session_of(acting, true, work)
}

/// [`with_reading_session`] for `ferry join`, which says whether the agent can act here: an
/// agent without its key here is told that it is not seated on this machine.
pub(crate) fn with_joining_session(
    acting: &Acting,
    work: impl FnOnce(&mut Session) -> anyhow::Result<(String, serde_json::Value)>,
) -> anyhow::Result<ExitCode> {
    with_reading_session_of(acting, false, work)
}

fn with_reading_session_of(
    acting: &Acting,
    agent_without_key: bool,
    work: impl FnOnce(&mut Session) -> anyhow::Result<(String, serde_json::Value)>,
) -> anyhow::Result<ExitCode> {
    let mut session = open_reading_session(acting, agent_without_key)?;
    let result = work(&mut session);
    save_or_warn(&mut session);
    let (text, json) = result?;
    finish(acting, &text, &json)
}

/// Says on stderr, in one line, what of this machine's kept state was rebuilt or refused
/// when `session` opened (a witness rebuilt from the channel forgets what it verified, so the
/// human hears of it wherever it happens, not only from `ferry channel status`).
pub(crate) fn report_local_problems(who: &str, session: &Session) {
    let problems = session.local_problems();
    if !problems.is_empty() {
        eprintln!("{who}: {}", display::escape(&problems.join("; ")));
    }
}

/// Runs `work` on a session of `acting`, saves what was verified, and prints its text (or
/// its JSON with `--json`).
pub(crate) fn with_session(
    acting: &Acting,
    work: impl FnOnce(&mut Session) -> anyhow::Result<(String, serde_json::Value)>,
) -> anyhow::Result<ExitCode> {
    let mut session = open_session(acting)?;
    let result = work(&mut session);
    // What was read is kept even when the operation was refused.
    save_or_warn(&mut session);
    let (text, json) = result?;
    finish(acting, &text, &json)
}

/// Prints a command's text, or its JSON with `--json`.
fn finish(acting: &Acting, text: &str, json: &serde_json::Value) -> anyhow::Result<ExitCode> {
    let out = if acting.json {
        display::escape_json(&json.to_string()).into_owned()
    } else {
        display::escape_lines(text).into_owned()
    };
    print(&out)?;
    Ok(ExitCode::SUCCESS)
}

/// Keeps what the session verified in the machine's kept state. A save that fails is a warning
/// on stderr, never the command's failure: what the command wrote to the channel is appended
/// and synced by then, and a command that said it failed would be run again (an order issued
/// twice). The kept state is a cache: the next command reads what this one could not keep.
pub(crate) fn save_or_warn(session: &mut Session) {
    if let Err(err) = session.save() {
        warn_unsaved(&err);
    }
}

/// What an operation that saved its own session did, with the same warning as
/// [`save_or_warn`] when it could not keep its state.
pub(crate) fn kept<T>(saved: ferry_mcp_core::channel::ops::Saved<T>) -> T {
    if let Some(err) = &saved.unsaved {
        warn_unsaved(err);
    }
    saved.into_inner()
}

fn warn_unsaved(err: &dyn std::fmt::Display) {
    eprintln!(
        "ferry: warning: this machine's kept state could not be saved ({}); what the command \
         wrote stands, and the next command reads it again",
        display::escape(&err.to_string())
    );
}

/// Prints `text` and a newline; its lines are built from escaped parts, and any control
/// character but a line break that slipped in is escaped here too.
pub(crate) fn print(text: &str) -> anyhow::Result<()> {
    print_raw(&display::escape_lines(text))
}

/// Prints `text` and a newline as it is (for text already escaped, such as `--json` output).
pub(crate) fn print_raw(text: &str) -> anyhow::Result<()> {
    let mut out = std::io::stdout().lock();
    writeln!(out, "{text}").context("writing to stdout")
}

/// The rows a listing command shows by default: a page as the tools give (`docs/mcp-budgets.md`),
/// so that a long history costs a command what one page costs.
pub const PAGE: usize = 20;

/// How many rows a listing command asks for: every row with `--all`, else `--limit` or a page.
pub fn page_limit(all: bool, limit: Option<u32>) -> usize {
    match (all, limit) {
        (true, _) => usize::MAX,
        (false, Some(limit)) => limit as usize,
        (false, None) => PAGE,
    }
}

/// This machine's name: its host name where the system tells it, else `this-machine`.
pub(crate) fn machine_name() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .ok()
        .map(|name| name.trim().to_owned())
        .filter(|name| !name.is_empty())
        .or_else(|| std::env::var("COMPUTERNAME").ok())
        .or_else(|| std::env::var("HOSTNAME").ok())
        .map(|name| display::escape(&name).into_owned())
        .unwrap_or_else(|| "this-machine".to_owned())
}

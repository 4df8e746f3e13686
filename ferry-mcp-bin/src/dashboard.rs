//! `ferry dashboard`: serves the human's page (`ferry-mcp-dashboard`) on this machine's
//! loopback and prints its one-time URL.
//!
//! Why this glue is here: the binary is what reads the terminal, the clock and the state
//! folder's path. The master key is opened once, at start, from the passphrase typed here
//! (or given by `--passphrase-fd`), and lives only in this process's memory; the process asks
//! the kernel to refuse other processes of the same user a look into its memory (not
//! dumpable: no ptrace, no `/proc/<pid>/mem`). Enter (or `q`) on the terminal stops it and
//! wipes the key.

use std::io::{BufRead as _, Write as _};
use std::process::ExitCode;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use anyhow::Context as _;
use clap::Args;
use ferry_mcp_core::channel::fold::levels::LocalKey;
use ferry_mcp_core::channel::log::names::{AgentName, ProjectId};
use ferry_mcp_core::channel::machine::home::{Home, KeyHolder};
use ferry_mcp_core::time::Timestamp;
use ferry_mcp_dashboard::{Config, Connector};

use crate::common::{machine_name, project_id};
use crate::{clock, display, passphrase, paths};

#[derive(Debug, Args)]
pub struct DashboardArgs {
    /// The project shown first (default: the only one, or a picker).
    #[arg(long, value_name = "ID", value_parser = project_id)]
    project: Option<ProjectId>,
    /// The port on 127.0.0.1 (default: a free one).
    #[arg(long, value_name = "N", default_value_t = 0)]
    port: u16,
    /// Read the master key's passphrase from this file descriptor (a pipe), not the terminal.
    #[arg(long, value_name = "N")]
    passphrase_fd: Option<i32>,
    /// Show the demo project (created once, as `ferry mcp serve --demo` does).
    #[arg(long)]
    demo: bool,
}

/// What the binary lends the page: `ferry mcp connect`'s functions and the demo's setup.
pub struct Wiring {
    pub connector: Arc<dyn Connector>,
    pub demo: fn(&Home, Timestamp) -> anyhow::Result<(ProjectId, AgentName)>,
}

impl std::fmt::Debug for Wiring {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Wiring").finish_non_exhaustive()
    }
}

pub fn run(args: DashboardArgs, wiring: Wiring) -> anyhow::Result<ExitCode> {
    // Nothing of the same user may read this process's memory (the master key is there).
    #[cfg(target_os = "linux")]
    let _ = rustix::process::set_dumpable_behavior(rustix::process::DumpableBehavior::NotDumpable);
    let asking = Arc::new(AtomicBool::new(true));
    let home = paths::home()?.unsealing_with(passphrase::unsealer_at_start(
        args.passphrase_fd,
        asking.clone(),
    ));
    let now = clock::now();
    let first = match (&args.project, args.demo) {
        (Some(project), _) => Some(project.clone()),
        (None, true) => Some((wiring.demo)(&home, now)?.0),
        (None, false) => None,
    };
    let (listed, unreadable) = home.projects().context("reading this machine's projects")?;
    for err in unreadable {
        eprintln!("ferry dashboard: {}", display::escape(&err.to_string()));
    }
    let mut projects: Vec<ProjectId> = listed.into_iter().map(|(project, _)| project).collect();
    if let Some(first) = &first {
        anyhow::ensure!(
            projects.contains(first),
            "no project {first} on this machine (see `ferry channel status`)"
        );
        projects.retain(|project| project != first);
        projects.insert(0, first.clone());
    }
    let mut unlocked = Vec::new();
    if let Some(project) = projects
        .first()
        .filter(|_| projects.len() == 1 || first.is_some())
    {
        match home.key_state(project, &KeyHolder::Master, now) {
            Ok(LocalKey::Locked(_)) => match home.load_key(project, &KeyHolder::Master, now) {
                Ok(_) => unlocked.push(project.clone()),
                Err(err) => eprintln!(
                    "ferry dashboard: the master key stays sealed ({}); changes will ask for its passphrase in the page",
                    display::escape(&err.to_string())
                ),
            },
            Ok(LocalKey::Ready(_)) => unlocked.push(project.clone()),
            _ => {}
        }
    }
    asking.store(false, Ordering::SeqCst);
    let clock: ferry_mcp_dashboard::Clock = Arc::new(clock::now);
    let config = Config {
        home,
        projects,
        unlocked,
        machine: machine_name(),
        clock,
        connector: Some(wiring.connector),
        poll_ms: 250,
    };
    let (app, running) =
        ferry_mcp_dashboard::start(config, args.port).context("starting the dashboard")?;
    {
        let mut out = std::io::stdout().lock();
        writeln!(out, "ferry dashboard: open {}", app.login_url()).context("writing to stdout")?;
        writeln!(
            out,
            "ferry dashboard: the link works once; press Enter here to stop"
        )
        .context("writing to stdout")?;
        out.flush().context("writing to stdout")?;
    }
    // Enter (or a line) stops it; without a terminal (stdin closed) it serves until killed.
    let mut line = String::new();
    match std::io::stdin().lock().read_line(&mut line) {
        Ok(n) if n > 0 => {
            running.stop();
            drop(app);
            eprintln!("ferry dashboard: stopped; the master key was wiped from memory");
        }
        _ => running.wait(),
    }
    Ok(ExitCode::SUCCESS)
}

//! The human's and operator's commands (`ferry init`, `ferry channel ...`, `ferry access ...`,
//! `ferry master ...`, `ferry key ...`, `ferry pause`, `ferry resume`).
//!
//! Glue only: parse arguments, resolve the state folder and the clock, call one function of
//! `ferry_mcp_core::channel::ops` or `home`, and print its result. Every bad input ends in
//! one line on stderr and a non-zero exit (see `main`). Everything printed passes through
//! `display`, as names, paths and problem lines may come from the channel.

use std::io::BufRead;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context, bail};
use clap::{Args, Subcommand};

use crate::common::{agent_name, kept, print, print_raw, project_id};
use crate::{display, passphrase, paths};
use ferry_mcp_core::channel::fold::levels::{Level, check_scope};
use ferry_mcp_core::channel::log::keys::{PublicKey, Signature};
use ferry_mcp_core::channel::log::names::{AgentName, ProjectId};
use ferry_mcp_core::channel::machine::home::{KeyHolder, SealCost};
use ferry_mcp_core::channel::ops::{self, AgentRow, GrantRequest, Joined, Status};
use ferry_mcp_core::time::Timestamp;
use zeroize::Zeroizing;

/// A project scope as grants and orders name it (`levels::check_scope`).
pub(crate) fn scope(raw: &str) -> Result<String, String> {
    check_scope(raw).map_err(|err| err.to_string())?;
    Ok(raw.to_owned())
}

/// Boxed: a parsed signature is large next to the other arguments.
fn signature(raw: &str) -> Result<Box<Signature>, String> {
    Signature::from_hex(raw)
        .map(Box::new)
        .map_err(|err| err.to_string())
}

/// Boxed: a parsed key is large next to the other arguments.
fn public_key(raw: &str) -> Result<Box<PublicKey>, String> {
    PublicKey::from_hex(raw)
        .map(Box::new)
        .map_err(|err| err.to_string())
}

#[derive(Debug, Subcommand)]
pub enum AdminCommand {
    /// Create a project: its channel folder and the master key.
    Init(InitArgs),
    /// Seat agents and inspect the channel.
    Channel {
        #[command(subcommand)]
        command: ChannelCommand,
    },
    /// Show or set agents' levels (setting needs the master key).
    Access {
        #[command(subcommand)]
        command: AccessCommand,
    },
    /// Hand mastership of a project on to another key (only the current master can).
    Master {
        #[command(subcommand)]
        command: MasterCommand,
    },
    /// Seal, unlock or lock keys on this machine (an agent's passphrase is read from stdin;
    /// the master key's is asked on the terminal, and it is never unlocked to disk).
    Key {
        #[command(subcommand)]
        command: KeyCommand,
    },
    /// Pause every agent on this machine: writes are refused until `ferry resume`.
    Pause {
        /// Why (shown to the agents).
        #[arg(long, default_value = "")]
        reason: String,
    },
    /// Lift the pause.
    Resume,
}

#[derive(Debug, Args)]
pub struct InitArgs {
    #[arg(long, value_parser = project_id)]
    project: ProjectId,
    /// The channel folder to create (default: <state folder>/channels/<project>).
    #[arg(long)]
    channel: Option<PathBuf>,
    /// Store the master key unsealed, where every process of this OS user can read it and
    /// sign as the human (agents with a shell tool included). Sealed by default.
    #[arg(long)]
    no_seal: bool,
    /// Read the passphrase from this file descriptor (a pipe), not the terminal.
    #[arg(long, value_name = "N")]
    passphrase_fd: Option<i32>,
}

#[derive(Debug, Subcommand)]
pub enum ChannelCommand {
    /// Seat an agent on this machine: its key here and its roster entry in the channel.
    Join {
        #[arg(long = "as", value_parser = agent_name)]
        name: AgentName,
        #[arg(long, value_parser = project_id)]
        project: ProjectId,
        /// Seal the new key with a passphrase read from stdin.
        #[arg(long)]
        seal: bool,
    },
    /// Register a channel folder synced from another machine as a project on this one.
    Add {
        #[arg(long, value_parser = project_id)]
        project: ProjectId,
        #[arg(long)]
        channel: PathBuf,
    },
    /// Send a named secret to one agent, sealed to its key; open it on its machine.
    Secret {
        #[command(subcommand)]
        command: crate::secrets::SecretCommand,
    },
    /// Agents, levels and integrity problems.
    Status {
        #[arg(long, value_parser = project_id)]
        project: ProjectId,
        #[arg(long)]
        json: bool,
    },
    /// Sign a checkpoint of every agent's log verified here (the master's): a new machine
    /// then reads the history up to it without checking each signature again (ADR 0023).
    Checkpoint {
        #[arg(long, value_parser = project_id)]
        project: ProjectId,
        /// Read the passphrase from this file descriptor (a pipe), not the terminal.
        #[arg(long, value_name = "N")]
        passphrase_fd: Option<i32>,
    },
}

#[derive(Debug, Subcommand)]
pub enum AccessCommand {
    /// Show every agent's level, or one agent's.
    Show {
        #[arg(value_parser = agent_name)]
        name: Option<AgentName>,
        #[arg(long, value_parser = project_id)]
        project: ProjectId,
    },
    /// Grant a level (signed with the master key on this machine).
    Set {
        #[arg(value_parser = agent_name)]
        name: AgentName,
        level: Level,
        #[arg(long, value_parser = project_id)]
        project: ProjectId,
        /// Limit the level to a project scope (repeatable).
        #[arg(long = "scope", value_parser = scope)]
        scopes: Vec<String>,
        /// The grant lapses after this many seconds.
        #[arg(long)]
        expires_in: Option<u64>,
        /// The key to grant (hex), when several keys joined under the name.
        #[arg(long, value_parser = public_key)]
        key: Option<Box<PublicKey>>,
        /// Read a sealed master key's passphrase from this file descriptor (a pipe).
        #[arg(long, value_name = "N")]
        passphrase_fd: Option<i32>,
    },
}

#[derive(Debug, Subcommand)]
pub enum MasterCommand {
    /// Sign a handover to another key with the current master key on this machine.
    Handover {
        /// The next master's public key (hex, from `ferry master new-key` on its machine).
        #[arg(long = "to-key", value_parser = public_key)]
        to: Box<PublicKey>,
        /// The new key's proof that it is held (hex, printed by `ferry master new-key`).
        #[arg(long, value_parser = signature)]
        proof: Box<Signature>,
        #[arg(long, value_parser = project_id)]
        project: ProjectId,
        /// Read a sealed master key's passphrase from this file descriptor (a pipe).
        #[arg(long, value_name = "N")]
        passphrase_fd: Option<i32>,
    },
    /// Make a master key on this machine for the current master to hand mastership to.
    NewKey {
        #[arg(long, value_parser = project_id)]
        project: ProjectId,
        /// Store the new key unsealed (every process of this OS user can read it). Sealed by
        /// default.
        #[arg(long)]
        no_seal: bool,
        /// Read the passphrase from this file descriptor (a pipe), not the terminal.
        #[arg(long, value_name = "N")]
        passphrase_fd: Option<i32>,
    },
}

#[derive(Debug, Args)]
pub struct KeyTarget {
    /// The agent whose key it is.
    #[arg(long = "as", value_parser = agent_name, conflicts_with = "master", required_unless_present = "master")]
    name: Option<AgentName>,
    /// The project's master key.
    #[arg(long)]
    master: bool,
    #[arg(long, value_parser = project_id)]
    project: ProjectId,
    /// Read the master key's passphrase from this file descriptor (a pipe), not the terminal.
    #[arg(long, value_name = "N")]
    passphrase_fd: Option<i32>,
}

impl KeyTarget {
    fn holder(&self) -> KeyHolder {
        match &self.name {
            Some(name) => KeyHolder::Agent(name.clone()),
            None => KeyHolder::Master,
        }
    }
}

#[derive(Debug, Subcommand)]
pub enum KeyCommand {
    /// Seal a plain key with a passphrase (an agent's read from stdin, the master's asked).
    Seal(KeyTarget),
    /// Unlock an agent's sealed key for its server on this machine (passphrase read from
    /// stdin). The master key is never unlocked: a command that needs it asks.
    Unlock {
        #[command(flatten)]
        target: KeyTarget,
        /// How long the unlock lasts, in seconds (0: until `ferry key lock`).
        #[arg(long = "for", default_value_t = 12 * 3600)]
        seconds: u64,
    },
    /// Remove the unlocked copy of a key.
    Lock(KeyTarget),
}

/// `secs` seconds after `now`; an absurdly large count means "never" rather than overflowing.
fn after_seconds(now: Timestamp, secs: u64) -> Timestamp {
    Timestamp::from_millis(now.as_millis().saturating_add(secs.saturating_mul(1000)))
}

/// The passphrase to seal a new agent key with: read from stdin when `--seal` is given.
fn seal_passphrase(seal: bool) -> anyhow::Result<Option<Zeroizing<Vec<u8>>>> {
    seal.then(read_passphrase).transpose()
}

/// The passphrase to seal a new master key with (asked, or from `fd`), unless `no_seal`.
fn master_passphrase(
    no_seal: bool,
    fd: Option<i32>,
    project: &ProjectId,
) -> anyhow::Result<Option<Zeroizing<Vec<u8>>>> {
    if no_seal {
        return Ok(None);
    }
    passphrase::new_passphrase(fd, &format!("the master key of {project}")).map(Some)
}

/// Once a master key was stored unsealed: every process of this OS user can sign as the human.
fn warn_unsealed(passphrase: &Option<Zeroizing<Vec<u8>>>, project: &ProjectId) {
    if passphrase.is_none() {
        eprintln!(
            "ferry: warning: the master key of {project} is stored unsealed: any process running as this OS user (an agent with a shell tool included) can sign as the human; seal it with `ferry key seal --master --project {project}`"
        );
    }
}

/// What the core takes to seal a new key: the passphrase, if any, at the default cost.
fn sealing(passphrase: &Option<Zeroizing<Vec<u8>>>) -> Option<(&[u8], SealCost)> {
    passphrase
        .as_ref()
        .map(|p| (p.as_slice(), SealCost::default()))
}

/// The first line of stdin, without its line ending (an agent key's passphrase).
fn read_passphrase() -> anyhow::Result<Zeroizing<Vec<u8>>> {
    let mut line = String::new();
    std::io::stdin()
        .lock()
        .read_line(&mut line)
        .context("reading the passphrase from stdin")?;
    let line = line.trim_end_matches(['\n', '\r']);
    if line.is_empty() {
        bail!("no passphrase on stdin");
    }
    Ok(Zeroizing::new(line.as_bytes().to_vec()))
}

/// A value as printed inside one line: every control character escaped, line breaks too.
fn shown(value: impl std::fmt::Display) -> String {
    display::escape(&value.to_string()).into_owned()
}

fn table(rows: &[AgentRow]) -> String {
    if rows.is_empty() {
        return "no agents".into();
    }
    let names: Vec<String> = rows.iter().map(|row| shown(&row.name)).collect();
    let width = names
        .iter()
        .map(|name| name.chars().count())
        .max()
        .unwrap_or(0)
        .max("AGENT".len());
    let mut lines = vec![format!(
        "{:<width$}  {:<12}  {:<9}  {:<16}  {:<10}  GRANT",
        "AGENT", "LEVEL", "SEAT", "KEY", "KEY HERE"
    )];
    for (row, name) in rows.iter().zip(names) {
        let key: String = shown(row.keys.join(",")).chars().take(16).collect();
        let mut line = format!(
            "{name:<width$}  {:<12}  {:<9}  {key:<16}  {:<10}  {}",
            row.level.as_str(),
            row.seat,
            row.local_key,
            shown(&row.grant),
        );
        if row.pin_changed {
            line.push_str("  (KEY CHANGED since this machine pinned it)");
        }
        lines.push(line);
    }
    lines.join("\n")
}

/// `ferry channel status` for a human: the project, the master, the pause, the agents and
/// every problem.
fn status_text(status: &Status) -> String {
    let mut text = format!(
        "project {} ({})\nmaster {} (on this machine: {})\n",
        shown(&status.project),
        shown(status.channel.display()),
        shown(&status.master),
        status.master_key_here
    );
    if let Some(pause) = &status.paused {
        text.push_str(&format!("PAUSED: {}\n", shown(&pause.reason.0)));
    }
    text.push_str(&table(&status.agents));
    text.push_str(&format!("\n{} problem(s)", status.problems.len()));
    for problem in &status.problems {
        text.push_str(&format!("\n  {}", shown(problem)));
    }
    text
}

/// `dir` made absolute (against the working folder), as the project registry stores it.
fn absolute(dir: &Path) -> anyhow::Result<PathBuf> {
    std::path::absolute(dir).with_context(|| format!("resolving {}", dir.display()))
}

impl AdminCommand {
    /// The pipe a sealed master key's passphrase is read from, when the command names one.
    fn passphrase_fd(&self) -> Option<i32> {
        match self {
            AdminCommand::Access {
                command: AccessCommand::Set { passphrase_fd, .. },
            }
            | AdminCommand::Master {
                command: MasterCommand::Handover { passphrase_fd, .. },
            }
            | AdminCommand::Channel {
                command: ChannelCommand::Checkpoint { passphrase_fd, .. },
            } => *passphrase_fd,
            _ => None,
        }
    }
}

pub fn run(cmd: AdminCommand) -> anyhow::Result<ExitCode> {
    let home = paths::home()?.unsealing_with(passphrase::unsealer(cmd.passphrase_fd()));
    let now = crate::clock::now();
    match cmd {
        AdminCommand::Init(args) => {
            let channel = match args.channel {
                Some(dir) => absolute(&dir)?,
                None => home.default_channel_dir(&args.project),
            };
            let passphrase = master_passphrase(args.no_seal, args.passphrase_fd, &args.project)?;
            let created = ops::init(&home, &args.project, &channel, sealing(&passphrase), now)?;
            warn_unsealed(&passphrase, &args.project);
            print(&format!(
                "created project {} in {} (master key {})",
                shown(&created.project),
                shown(created.channel.display()),
                shown(created.master)
            ))?;
        }
        AdminCommand::Channel { command } => match command {
            ChannelCommand::Join {
                name,
                project,
                seal,
            } => {
                let passphrase = seal_passphrase(seal)?;
                let (joined, key) = kept(ops::join(
                    &home,
                    &project,
                    &name,
                    sealing(&passphrase),
                    now,
                )?);
                let what = match joined {
                    Joined::Seated => "seated",
                    Joined::AlreadySeated => "already seated",
                };
                print(&format!("{name} {what} in {project} (key {key})"))?;
            }
            ChannelCommand::Add { project, channel } => {
                let channel = absolute(&channel)?;
                let master = ops::add_existing(&home, &project, &channel)?;
                print(&format!(
                    "added project {project} from {} (master key {})",
                    shown(channel.display()),
                    shown(master)
                ))?;
            }
            ChannelCommand::Secret { command } => return crate::secrets::run(command),
            ChannelCommand::Status { project, json } => {
                let status = ops::status(&home, &project, now)?;
                if json {
                    print_raw(&display::escape_json(&serde_json::to_string(&status)?))?;
                } else {
                    print(&status_text(&status))?;
                }
            }
            ChannelCommand::Checkpoint {
                project,
                passphrase_fd: _,
            } => {
                let written = ops::checkpoint::checkpoint(&home, &project, now)?;
                print(&format!(
                    "checkpoint #{} of {project}: {} entries in {} agents' logs vouched for",
                    written.seq, written.entries, written.logs
                ))?;
            }
        },
        AdminCommand::Access { command } => match command {
            AccessCommand::Show { name, project } => {
                let rows = kept(ops::access_show(&home, &project, name.as_ref(), now)?);
                print(&table(&rows))?;
            }
            AccessCommand::Set {
                name,
                level,
                project,
                scopes,
                expires_in,
                key,
                passphrase_fd: _,
            } => {
                let request = GrantRequest {
                    level,
                    scopes,
                    expires: expires_in.map(|secs| after_seconds(now, secs)),
                    key: key.map(|key| *key),
                };
                let grant = kept(ops::access_set(&home, &project, &name, &request, now)?);
                let mut said = format!("{} is now {}", grant.agent, grant.level);
                if !grant.scopes.is_empty() {
                    said.push_str(&format!(" in {}", shown(grant.scopes.join(", "))));
                }
                if let Some(secs) = expires_in {
                    said.push_str(&format!(" for {secs} s"));
                }
                if let Some(after) = grant.after_seq {
                    said.push_str(&format!(
                        "; its entries after #{after} (the last read here) are judged by this grant"
                    ));
                }
                print(&said)?;
            }
        },
        AdminCommand::Master { command } => match command {
            MasterCommand::Handover {
                to,
                proof,
                project,
                passphrase_fd: _,
            } => {
                let former = kept(ops::master_handover(&home, &project, &to, &proof, now)?);
                print(&format!(
                    "handed mastership of {project} on to {to} (this machine's key {former} is now a former master's)"
                ))?;
            }
            MasterCommand::NewKey {
                project,
                no_seal,
                passphrase_fd,
            } => {
                // An unknown project is said before a passphrase is asked for.
                home.channel_dir(&project)?;
                let passphrase = master_passphrase(no_seal, passphrase_fd, &project)?;
                let made = ops::new_master_key(&home, &project, sealing(&passphrase))?;
                warn_unsealed(&passphrase, &project);
                let (key, proof) = (made.key, made.proof);
                print(&format!(
                    "new master key {key} for {project}; on the master's machine run `ferry master handover --to-key {key} --proof {proof} --project {project}`"
                ))?;
            }
        },
        AdminCommand::Key { command } => match command {
            KeyCommand::Seal(target) => {
                let passphrase = match target.holder() {
                    KeyHolder::Master => passphrase::new_passphrase(
                        target.passphrase_fd,
                        &format!("the master key of {}", target.project),
                    )?,
                    KeyHolder::Agent(_) => read_passphrase()?,
                };
                home.seal_key(
                    &target.project,
                    &target.holder(),
                    &passphrase,
                    SealCost::default(),
                )?;
                print(&format!("sealed the key of {}", target.holder()))?;
            }
            KeyCommand::Unlock { target, seconds } => {
                let passphrase = read_passphrase()?;
                let until = (seconds > 0).then(|| after_seconds(now, seconds));
                home.unlock_key(&target.project, &target.holder(), &passphrase, until)?;
                print(&format!("unlocked the key of {}", target.holder()))?;
            }
            KeyCommand::Lock(target) => {
                let was = home.lock_key(&target.project, &target.holder())?;
                let what = if was { "locked" } else { "was not unlocked:" };
                print(&format!("{what} the key of {}", target.holder()))?;
            }
        },
        AdminCommand::Pause { reason } => {
            ops::pause(&home, &reason, now)?;
            print("paused: agents on this machine cannot write until `ferry resume`")?;
        }
        AdminCommand::Resume => {
            let was = ops::resume(&home)?;
            print(if was { "resumed" } else { "was not paused" })?;
        }
    }
    Ok(ExitCode::SUCCESS)
}

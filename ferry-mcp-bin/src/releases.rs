//! `ferry release ...` (the human signs and withdraws release approvals with the master key) and
//! `ferry update ...` (check for, install and roll back an approved release over this very
//! binary), on the same library functions as the admin group's `ferry_update` (ADR 0020).

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context as _;
use clap::Subcommand;
use ferry_mcp_core::channel::fold::state::releases::Sha256;
use ferry_mcp_core::channel::ops::releases::{
    self, ApproveRequest, ArtifactInput, Installed, ReleaseView,
};
use ferry_mcp_core::channel::session::Session;
use serde_json::json;

use crate::clock;
use crate::common::{Acting, with_session};
use crate::display;

#[derive(Debug, Subcommand)]
pub enum ReleaseCommand {
    /// Approve a release (signed with the master key): per platform, the artifact and the
    /// SHA-256 computed from it.
    Approve {
        /// Its semver version.
        version: String,
        /// `TRIPLE=PATH` (copied into the channel), `TRIPLE=file:PATH` (read where it is
        /// applied) or `TRIPLE=https://...` (or `http://`); repeat for each platform.
        #[arg(long = "artifact", value_name = "TRIPLE=SOURCE", required = true)]
        artifacts: Vec<String>,
        /// `TRIPLE=HEX`: the pin of a URL's artifact, when this machine is not to fetch it.
        #[arg(long = "sha256", value_name = "TRIPLE=HEX")]
        sha256: Vec<String>,
        /// Allow machines running a newer version to install this one.
        #[arg(long)]
        downgrade: bool,
        #[arg(long)]
        notes: Option<String>,
        #[command(flatten)]
        acting: Acting,
    },
    /// Every release approved, newest first.
    List {
        #[command(flatten)]
        acting: Acting,
    },
    /// One release's approval in full.
    Show {
        version: String,
        #[command(flatten)]
        acting: Acting,
    },
    /// Withdraw a release's approval (signed with the master key).
    Revoke {
        version: String,
        #[command(flatten)]
        acting: Acting,
    },
}

#[derive(Debug, Subcommand)]
pub enum UpdateCommand {
    /// What is approved for this platform, what runs, and whether it is newer.
    Check {
        #[command(flatten)]
        acting: Acting,
    },
    /// Install an approved release over this binary (the newest, else VERSION), checked
    /// against the SHA-256 the master pinned; running servers keep the old one until restarted.
    Apply {
        version: Option<String>,
        #[command(flatten)]
        acting: Acting,
    },
    /// Put back the binary the last apply replaced.
    Rollback {
        #[command(flatten)]
        acting: Acting,
    },
}

/// `TRIPLE=VALUE`.
fn split_pair<'a>(raw: &'a str, what: &str) -> anyhow::Result<(&'a str, &'a str)> {
    match raw.split_once('=') {
        Some((triple, value)) if !triple.trim().is_empty() && !value.is_empty() => {
            Ok((triple.trim(), value))
        }
        _ => anyhow::bail!("{what} {raw:?} is not TRIPLE=VALUE"),
    }
}

fn artifact(raw: &str) -> anyhow::Result<(String, ArtifactInput)> {
    let (triple, source) = split_pair(raw, "--artifact")?;
    let input = if source.starts_with("http://") || source.starts_with("https://") {
        ArtifactInput::Url(source.to_owned())
    } else if let Some(path) = source.strip_prefix("file:") {
        ArtifactInput::Path(PathBuf::from(path))
    } else {
        ArtifactInput::Store(PathBuf::from(source))
    };
    Ok((triple.to_owned(), input))
}

fn pin(raw: &str) -> anyhow::Result<(String, Sha256)> {
    let (triple, hex) = split_pair(raw, "--sha256")?;
    let pin = Sha256::from_hex(hex)
        .with_context(|| format!("--sha256 for {triple}: not 64 hex digits"))?;
    Ok((triple.to_owned(), pin))
}

fn lines_of(view: &ReleaseView) -> String {
    let mut lines = vec![
        format!(
            "{} {:?} ({}){}",
            view.version,
            view.state,
            view.id,
            if view.downgrade {
                ", downgrade allowed"
            } else {
                ""
            }
        )
        .to_lowercase(),
    ];
    for artifact in &view.artifacts {
        lines.push(format!(
            "  {}: sha256 {} from {}",
            artifact.triple,
            artifact
                .sha256
                .as_deref()
                .unwrap_or("NONE (approves nothing here)"),
            artifact.source
        ));
    }
    if let Some(notes) = &view.notes {
        lines.push(format!("  notes: {notes}"));
    }
    display::escape_lines(&lines.join("\n")).into_owned()
}

pub fn run_release(command: ReleaseCommand) -> anyhow::Result<ExitCode> {
    let now = clock::now();
    match command {
        ReleaseCommand::Approve {
            version,
            artifacts,
            sha256,
            downgrade,
            notes,
            acting,
        } => {
            let request = ApproveRequest {
                version,
                artifacts: artifacts
                    .iter()
                    .map(|raw| artifact(raw))
                    .collect::<anyhow::Result<_>>()?,
                sha256: sha256
                    .iter()
                    .map(|raw| pin(raw))
                    .collect::<anyhow::Result<_>>()?,
                downgrade,
                notes,
            };
            with_session(&acting, |session| {
                let view = releases::approve(session, &request, now)?;
                Ok((lines_of(&view), serde_json::to_value(&view)?))
            })
        }
        ReleaseCommand::List { acting } => with_session(&acting, |session| {
            let views = releases::list(session, now)?;
            let text = if views.is_empty() {
                "no release is approved".to_owned()
            } else {
                views.iter().map(lines_of).collect::<Vec<_>>().join("\n")
            };
            Ok((text, serde_json::to_value(&views)?))
        }),
        ReleaseCommand::Show { version, acting } => with_session(&acting, |session| {
            let view = releases::show(session, &version, now)?;
            Ok((lines_of(&view), serde_json::to_value(&view)?))
        }),
        ReleaseCommand::Revoke { version, acting } => with_session(&acting, |session| {
            let view = releases::revoke(session, &version, now)?;
            Ok((lines_of(&view), serde_json::to_value(&view)?))
        }),
    }
}

/// Names this very binary as the one an update replaces.
fn this_binary(session: &mut Session) -> anyhow::Result<()> {
    let exe = std::env::current_exe().context("finding this binary")?;
    session.set_installed(Installed::at(exe));
    Ok(())
}

pub fn run_update(command: UpdateCommand) -> anyhow::Result<ExitCode> {
    let now = clock::now();
    match command {
        UpdateCommand::Check { acting } => with_session(&acting, |session| {
            this_binary(session)?;
            let check = releases::check(session, now)?;
            let mut text = format!("running {} on {}; ", check.running, check.platform);
            text.push_str(&match (&check.newest, check.newer) {
                (Some(newest), true) => {
                    format!("{newest} is approved and newer (`ferry update apply` installs it)")
                }
                (Some(newest), false) => format!("the newest approved is {newest}: nothing newer"),
                (None, _) => "no release is approved for this platform".to_owned(),
            });
            if check.leftover {
                text.push_str(
                    "; an interrupted apply left a temporary file (the next apply removes it)",
                );
            }
            Ok((text, serde_json::to_value(&check)?))
        }),
        UpdateCommand::Apply { version, acting } => with_session(&acting, |session| {
            this_binary(session)?;
            let applied = releases::apply(session, version.as_deref(), now)?;
            let text = format!(
                "installed {} at {} (sha256 {}, the pin){}; {}",
                applied.version,
                display::escape(&applied.binary.to_string_lossy()),
                applied.sha256,
                applied
                    .previous
                    .as_ref()
                    .map_or_else(String::new, |previous| format!(
                        "; the previous binary is kept at {} (`ferry update rollback`)",
                        display::escape(&previous.to_string_lossy())
                    )),
                applied.restart
            );
            Ok((text, serde_json::to_value(&applied)?))
        }),
        UpdateCommand::Rollback { acting } => with_session(&acting, |session| {
            this_binary(session)?;
            let binary = releases::rollback(session, now)?;
            let binary = binary.to_string_lossy().into_owned();
            Ok((
                format!(
                    "put the previous binary back at {}; running servers keep theirs until restarted",
                    display::escape(&binary)
                ),
                json!({ "binary": binary }),
            ))
        }),
    }
}

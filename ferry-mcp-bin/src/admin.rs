//! The human's and operator's commands (`ferry init`, `ferry channel ...`, `ferry access ...`,
//! `ferry pause`, `ferry resume`). (Filled in by the identity work.)

use clap::Subcommand;

#[derive(Debug, Subcommand)]
pub enum AdminCommand {
    /// Create a project: its channel folder and the master key.
    Init,
}

pub fn run(cmd: AdminCommand) -> anyhow::Result<std::process::ExitCode> {
    match cmd {
        AdminCommand::Init => Ok(std::process::ExitCode::SUCCESS),
    }
}

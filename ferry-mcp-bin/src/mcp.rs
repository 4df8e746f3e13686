//! `ferry mcp ...`: the stdio loop around the core's protocol state machine.
//! (Filled in by the serve work.)

use clap::{Args, Subcommand};

#[derive(Debug, Args)]
pub struct McpArgs {
    #[command(subcommand)]
    command: McpCommand,
}

#[derive(Debug, Subcommand)]
enum McpCommand {
    /// Serve MCP over stdio.
    Serve,
}

pub fn run(args: McpArgs) -> anyhow::Result<std::process::ExitCode> {
    match args.command {
        McpCommand::Serve => Ok(std::process::ExitCode::SUCCESS),
    }
}

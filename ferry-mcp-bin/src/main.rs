//! `ferry`: the stdio MCP server (`ferry mcp serve`) and the human's and operator's commands.
//!
//! This crate is glue: it parses arguments, resolves paths and the clock, and calls the
//! library. Errors become one line on stderr (control characters escaped) and a non-zero exit.

mod admin;
mod clock;
mod common;
mod dashboard;
mod display;
mod fleet;
mod hints;
mod mcp;
mod orders;
mod passphrase;
mod paths;
mod releases;
mod search;
mod secrets;
mod snifrig;
mod talk;

use clap::{Parser, Subcommand};

#[derive(Debug, Parser)]
#[command(
    name = "ferry",
    version,
    about = "A fleet of AI agents on one signed channel"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// The MCP server for AI apps.
    Mcp(mcp::McpArgs),
    /// Orders: the board, issuing, reviewing (and an agent's part with --as).
    Order {
        #[command(subcommand)]
        command: orders::OrderCommand,
    },
    /// The fleet's primary: status, the quiet period, takeover (and release with --as).
    Primary {
        #[command(subcommand)]
        command: fleet::PrimaryCommand,
    },
    /// An agent's brief (--as): objective, constraints, decisions.
    Brief {
        #[command(subcommand)]
        command: fleet::BriefCommand,
    },
    /// The agents' asks: list, show, and answer them (signed with the master key).
    Ask {
        #[command(subcommand)]
        command: fleet::AskCommand,
    },
    /// Talk to the fleet: post, and read what is new.
    Talk {
        #[command(subcommand)]
        command: talk::TalkCommand,
    },
    /// The digest an agent's ferry_catchup answers: primary, brief, decisions, open orders,
    /// yours, what waits on you.
    Catchup(fleet::CatchupArgs),
    /// What an agent's ferry_join answers: its seat, the primary, who is alive.
    Join(fleet::JoinArgs),
    /// Find order titles, decisions and messages that hold a phrase.
    Search(search::SearchArgs),
    /// Releases the master approves: approve, list, show, revoke.
    Release {
        #[command(subcommand)]
        command: releases::ReleaseCommand,
    },
    /// Install a release the master approved over this binary: check, apply, rollback.
    Update {
        #[command(subcommand)]
        command: releases::UpdateCommand,
    },
    /// Hand work in for an order.
    Work {
        #[command(subcommand)]
        command: orders::WorkCommand,
    },
    /// The human's page: a local web page for the fleet (loopback only, a one-time link).
    Dashboard(dashboard::DashboardArgs),
    #[command(flatten)]
    Admin(admin::AdminCommand),
}

/// Clap's error in one line: its first line names only the kind of mistake ("the following
/// required arguments were not provided:"), the lines after it the arguments and the allowed
/// values, up to the usage and the tip, which `(see --help)` stands for.
fn one_line(rendered: &str) -> String {
    let parts: Vec<&str> = rendered
        .lines()
        .map(str::trim)
        .take_while(|line| !line.starts_with("Usage:") && !line.starts_with("For more information"))
        .filter(|line| !line.is_empty() && !line.starts_with("tip:"))
        .collect();
    let joined = parts.join(" ");
    let text = joined.trim_start_matches("error: ");
    if text.is_empty() {
        "bad arguments".to_owned()
    } else {
        text.to_owned()
    }
}

fn main() -> std::process::ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        // `--help` and `--version` print as clap prints them.
        Err(err) if !err.use_stderr() => err.exit(),
        // A bad argument is one line, like every other error.
        Err(err) => {
            eprintln!(
                "ferry: {} (see --help)",
                display::escape(&one_line(&err.render().to_string()))
            );
            return std::process::ExitCode::from(2);
        }
    };
    let result = match cli.command {
        Command::Mcp(args) => mcp::run(args),
        Command::Order { command } => orders::run_order(command),
        Command::Talk { command } => talk::run(command),
        Command::Primary { command } => fleet::run_primary(command),
        Command::Brief { command } => fleet::run_brief(command),
        Command::Ask { command } => fleet::run_ask(command),
        Command::Catchup(args) => fleet::run_catchup(args),
        Command::Join(args) => fleet::run_join(args),
        Command::Search(args) => search::run(args),
        Command::Work { command } => orders::run_work(command),
        Command::Release { command } => releases::run_release(command),
        Command::Update { command } => releases::run_update(command),
        Command::Dashboard(args) => dashboard::run(
            args,
            dashboard::Wiring {
                connector: std::sync::Arc::new(mcp::connect::PageConnector),
                demo: mcp::demo::ensure,
            },
        ),
        Command::Admin(cmd) => admin::run(cmd),
    };
    match result {
        Ok(code) => code,
        Err(err) => {
            // Errors can carry channel paths: one line, every control character escaped.
            eprintln!("ferry: {}", display::escape(&hints::line(&err)));
            std::process::ExitCode::FAILURE
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_missing_argument_is_named_and_a_bad_value_lists_the_allowed_ones() {
        let missing = Cli::try_parse_from(["ferry", "order", "list"]).unwrap_err();
        let line = one_line(&missing.render().to_string());
        assert!(line.contains("--project"), "{line}");
        let bad = Cli::try_parse_from(["ferry", "mcp", "connect", "--app", "nope"]).unwrap_err();
        let line = one_line(&bad.render().to_string());
        assert!(line.contains("nope"), "{line}");
        assert!(line.contains("possible values"), "{line}");
        assert!(!line.contains("Usage"), "{line}");
    }
}

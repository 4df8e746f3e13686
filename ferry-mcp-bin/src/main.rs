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
    /// Find order titles, decisions and messages that hold a phrase.
    Search(search::SearchArgs),
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

fn main() -> std::process::ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        // `--help` and `--version` print as clap prints them.
        Err(err) if !err.use_stderr() => err.exit(),
        // A bad argument is one line, like every other error.
        Err(err) => {
            let text = err.render().to_string();
            let first = text.lines().next().unwrap_or("bad arguments");
            eprintln!(
                "ferry: {} (see --help)",
                display::escape(first.trim_start_matches("error: "))
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
        Command::Search(args) => search::run(args),
        Command::Work { command } => orders::run_work(command),
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

//! `ferry mcp ...`: the command line of the MCP server.
//!
//! `ferry mcp serve` picks the tool groups named by `--tools`, builds the core's protocol
//! state machine and runs the stdio loop ([`stdio`]). Everything the protocol decides lives
//! in `ferry_mcp_core::protocol`; this module only turns arguments into a surface.

mod lines;
mod stdio;

use std::process::ExitCode;

use anyhow::bail;
use clap::{Args, Subcommand};
use ferry_mcp_core::protocol::{Server, ServerConfig};
use ferry_mcp_core::registry::{Group, Surface};

#[derive(Debug, Args)]
pub struct McpArgs {
    #[command(subcommand)]
    command: McpCommand,
}

#[derive(Debug, Subcommand)]
enum McpCommand {
    /// Serve MCP over stdio (started by the AI app, not by hand).
    Serve(ServeArgs),
}

#[derive(Debug, Args)]
struct ServeArgs {
    /// The agent this server speaks as (its name on the roster).
    #[arg(long = "as", value_name = "AGENT")]
    agent: Option<String>,
    /// The project whose channel this server serves.
    #[arg(long, value_name = "ID")]
    project: String,
    /// Tool groups to serve, comma-separated: core, admin, legacy.
    #[arg(
        long,
        value_name = "GROUPS",
        value_delimiter = ',',
        default_value = DEFAULT_GROUPS
    )]
    tools: Vec<String>,
    /// Serve only the tools that change nothing.
    #[arg(long)]
    read_only: bool,
}

/// A group that `--tools` can name.
#[derive(Debug, Clone, Copy)]
struct Selectable {
    group: Group,
    /// Hidden groups serve the tests: they are never in help, in an error message or the default.
    hidden: bool,
}

/// What `--tools` selects when it is not given.
const DEFAULT_GROUPS: &str = "core";

/// The agent tools. (The tools work fills this group in `ferry_mcp_tools`.)
const CORE: Group = Group {
    name: "core",
    tools: &[],
};

/// Every group `--tools` can name, sorted by name.
fn selectable_groups() -> [Selectable; 1] {
    [Selectable {
        group: CORE,
        hidden: false,
    }]
}

pub fn run(args: McpArgs) -> anyhow::Result<ExitCode> {
    match args.command {
        McpCommand::Serve(args) => serve(args),
    }
}

fn serve(args: ServeArgs) -> anyhow::Result<ExitCode> {
    let groups = select_groups(&args.tools, &selectable_groups())?;
    let surface = assemble(&groups, args.read_only);
    eprintln!(
        "ferry mcp serve: project {} as {} with {} tools ({}{})",
        args.project,
        args.agent.as_deref().unwrap_or("(nobody)"),
        surface.tools().len(),
        args.tools.join(","),
        if args.read_only { ", read-only" } else { "" },
    );
    let config = ServerConfig {
        name: "ferry",
        version: concat!(env!("CARGO_PKG_VERSION"), "-beta"),
        instructions: ferry_mcp_tools::INSTRUCTIONS,
        project: args.project,
    };
    let mut server = Server::new(config, surface);
    stdio::serve_stdio(&mut server)?;
    Ok(ExitCode::SUCCESS)
}

/// The groups named by `--tools`, in the catalog's order, each once.
fn select_groups(names: &[String], catalog: &[Selectable]) -> anyhow::Result<Vec<Group>> {
    for name in names {
        if !catalog.iter().any(|entry| entry.group.name == name.trim()) {
            let known: Vec<&str> = catalog
                .iter()
                .filter(|entry| !entry.hidden)
                .map(|entry| entry.group.name)
                .collect();
            bail!(
                "unknown tool group `{}` in --tools (known: {})",
                name.trim(),
                known.join(", ")
            );
        }
    }
    Ok(catalog
        .iter()
        .filter(|entry| names.iter().any(|name| name.trim() == entry.group.name))
        .map(|entry| entry.group)
        .collect())
}

fn assemble(groups: &[Group], read_only: bool) -> Surface {
    let _ = (groups, read_only);
    Surface::default()
}

#[cfg(test)]
mod tests {
    use super::*;

    const VISIBLE: Group = Group {
        name: "admin",
        tools: &[],
    };
    const HIDDEN: Group = Group {
        name: "fixture",
        tools: &[],
    };
    const CATALOG: [Selectable; 3] = [
        Selectable {
            group: VISIBLE,
            hidden: false,
        },
        Selectable {
            group: CORE,
            hidden: false,
        },
        Selectable {
            group: HIDDEN,
            hidden: true,
        },
    ];

    fn names(list: &[&str]) -> Vec<String> {
        list.iter().map(|name| (*name).to_owned()).collect()
    }

    fn selected(list: &[&str]) -> Vec<&'static str> {
        select_groups(&names(list), &CATALOG)
            .unwrap()
            .iter()
            .map(|group| group.name)
            .collect()
    }

    #[test]
    fn groups_are_selected_in_catalog_order_and_once_each() {
        assert_eq!(selected(&["core", "admin", "core"]), ["admin", "core"]);
    }

    #[test]
    fn a_hidden_group_can_be_named_explicitly() {
        assert_eq!(selected(&["fixture"]), ["fixture"]);
    }

    #[test]
    fn an_unknown_group_is_an_error_that_lists_only_visible_groups() {
        let err = select_groups(&names(&["core", "nope"]), &CATALOG).unwrap_err();
        assert_eq!(
            err.to_string(),
            "unknown tool group `nope` in --tools (known: admin, core)"
        );
    }

    #[test]
    fn the_group_catalog_is_sorted_without_duplicates() {
        let catalog = selectable_groups();
        let names: Vec<&str> = catalog.iter().map(|entry| entry.group.name).collect();
        assert!(names.windows(2).all(|pair| pair[0] < pair[1]), "{names:?}");
    }

    #[test]
    fn the_default_selection_names_only_visible_groups() {
        let catalog = selectable_groups();
        for name in DEFAULT_GROUPS.split(',') {
            let entry = catalog.iter().find(|entry| entry.group.name == name);
            assert!(entry.is_some_and(|entry| !entry.hidden), "{name}");
        }
    }
}

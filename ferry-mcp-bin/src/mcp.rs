//! `ferry mcp ...`: the command line of the MCP server.
//!
//! `ferry mcp serve` picks the tool groups named by `--tools`, builds the core's protocol
//! state machine and runs the stdio loop ([`stdio`]). Everything the protocol decides lives
//! in `ferry_mcp_core::protocol`; this module only turns arguments into a surface.

pub(crate) mod connect;
pub(crate) mod demo;
mod gateway;
mod gateway_calls;
mod gateway_process;
mod gateway_tools;
mod lines;
mod stdio;

use std::process::ExitCode;

use anyhow::{Context as _, bail};
use clap::{Args, Subcommand};
use ferry_mcp_core::channel::fold::levels::Operation;
use ferry_mcp_core::channel::log::names::{AgentName, ProjectId};
use ferry_mcp_core::channel::ops::releases::Installed;
use ferry_mcp_core::channel::session::{Actor, LazySession, Session};
use ferry_mcp_core::port::HeavyQueue;
use ferry_mcp_core::port::{self, ChannelAccess, Unavailable};
use ferry_mcp_core::protocol::{Server, ServerConfig};
use ferry_mcp_core::registry::{Group, Registry, Selection, Surface};
use ferry_mcp_core::time::Timestamp;

use crate::clock;
use crate::common;
use crate::display;
use crate::paths;
use crate::snifrig::Snifrig;

#[derive(Debug, Args)]
pub struct McpArgs {
    #[command(subcommand)]
    command: McpCommand,
}

#[derive(Debug, Subcommand)]
enum McpCommand {
    /// Serve MCP over stdio (started by the AI app, not by hand).
    Serve(ServeArgs),
    /// Put this server into an AI app's config (prints it; `--write` merges it).
    Connect(connect::ConnectArgs),
    /// Configure an external MCP server on this machine, served as NAME_TOOL by
    /// `serve --tools NAME` (or `--tools gateway`): `ferry mcp add NAME -- COMMAND [ARGS...]`.
    Add(gateway::AddArgs),
    /// Remove an external MCP server from this machine's configuration.
    Remove(gateway::RemoveArgs),
    /// The external MCP servers configured for a project.
    Servers(gateway::ServersArgs),
    /// Start each external MCP server and list its tools.
    List(gateway::ServersArgs),
    /// Call one tool of an external MCP server and print its (marked) result.
    Call(gateway::CallArgs),
    /// What a gateway's child runs first (not for people).
    #[command(hide = true)]
    GatewayExec(gateway::ExecArgs),
}

#[derive(Debug, Args)]
struct ServeArgs {
    /// The agent this server speaks as (its name on the roster).
    #[arg(long = "as", value_name = "AGENT")]
    agent: Option<String>,
    /// The project whose channel this server serves.
    #[arg(long, value_name = "ID", required_unless_present = "demo")]
    project: Option<String>,
    /// Tool groups to serve, comma-separated: admin, legacy, gateway (every external MCP
    /// server configured with `ferry mcp add`) or a server's name add to the core tools (an
    /// unknown name lists the known ones).
    #[arg(
        long,
        value_name = "GROUPS",
        value_delimiter = ',',
        default_value = DEFAULT_GROUPS
    )]
    tools: Vec<String>,
    /// Serve only reads (the core tools' reads and the legacy group) and write nothing at all:
    /// no presence, no read marks, no kept state. Without --as a server is always read-only.
    #[arg(long)]
    read_only: bool,
    /// Serve the demo project as its demo agent, creating both in the state folder first if
    /// they do not exist yet (a working channel with nothing to set up).
    #[arg(long, conflicts_with_all = ["project", "agent"])]
    demo: bool,
}

/// A group that `--tools` can name.
#[derive(Debug, Clone, Copy)]
struct Selectable {
    group: &'static Group,
    /// Hidden groups serve the tests: they are never in help, in an error message or the default.
    hidden: bool,
}

/// What `--tools` selects when it is not given.
const DEFAULT_GROUPS: &str = "core";

/// Every group `--tools` can name, sorted by name: the tools crate's groups, and in a test
/// build its test groups (`fixture`, which exercises every protocol path for the real-client
/// tests), hidden and served only when named.
#[cfg(test)]
fn selectable_groups() -> Vec<Selectable> {
    selectable_groups_for(false)
}

/// The groups `--tools` can name on a server that writes (`read_only` false) or on a
/// read-only one, whose `core` is the core tools' reads.
fn selectable_groups_for(read_only: bool) -> Vec<Selectable> {
    let groups = if read_only {
        ferry_mcp_tools::READ_ONLY_GROUPS
    } else {
        ferry_mcp_tools::GROUPS
    };
    let shown = groups.iter().map(|group| Selectable {
        group,
        hidden: false,
    });
    let hidden = ferry_mcp_tools::TEST_GROUPS.iter().map(|group| Selectable {
        group,
        hidden: true,
    });
    let mut catalog: Vec<Selectable> = shown.chain(hidden).collect();
    catalog.sort_by_key(|entry| entry.group.name);
    catalog
}

pub fn run(args: McpArgs) -> anyhow::Result<ExitCode> {
    match args.command {
        McpCommand::Serve(args) => serve(args),
        McpCommand::Connect(args) => connect::run(args),
        McpCommand::Add(args) => gateway::add(args),
        McpCommand::Remove(args) => gateway::remove(args),
        McpCommand::Servers(args) => gateway::servers(args),
        McpCommand::List(args) => gateway::list(args),
        McpCommand::Call(args) => gateway::call(args),
        McpCommand::GatewayExec(args) => gateway::exec(args),
    }
}

fn serve(args: ServeArgs) -> anyhow::Result<ExitCode> {
    let built_in = selectable_groups_for(args.read_only);
    let built_in_names: Vec<&str> = built_in.iter().map(|entry| entry.group.name).collect();
    // Built-in groups are checked before anything is read; the gateway's are read from this
    // machine's configuration of the project (ADR 0021).
    if args
        .tools
        .iter()
        .all(|name| built_in_names.contains(&name.trim()))
    {
        assemble(&args.tools, args.read_only, &built_in)?;
    }
    let home = paths::home()?;
    let now = clock::now();
    let (project, agent) = if args.demo {
        let (project, agent) = demo::ensure(&home, now)?;
        (project, Some(agent))
    } else {
        let project = args.project.as_deref().unwrap_or_default();
        let project =
            ProjectId::parse(project).with_context(|| format!("bad project id `{project}`"))?;
        let agent = args
            .agent
            .as_deref()
            .map(|name| AgentName::parse(name).with_context(|| format!("bad agent name `{name}`")))
            .transpose()?;
        (project, agent)
    };
    let (answers, inbox) = stdio::inbox();
    let (names, gateway) = gateway::for_serve(&project, &args.tools, &built_in_names, &answers)?;
    // Without --as there is nobody to write as: the same read-only surface and session. A
    // gateway's servers are served as configured (their tools are not the channel's; whether
    // a server without --as may serve them is the coordinator's call: see the report).
    let read_only = args.read_only || (agent.is_none() && gateway.groups.is_empty());
    let built_in = selectable_groups_for(read_only);
    let mut catalog = built_in;
    catalog.extend(gateway.groups.iter().map(|group| Selectable {
        group,
        hidden: false,
    }));
    catalog.sort_by_key(|entry| entry.group.name);
    let surface = assemble(&names, read_only, &catalog)?;
    // The server starts whatever the channel's state: an app shows a server that exits as a
    // bare failure, while a running one can tell the agent what to do (ADR 0003; `ferry_join` says what to do).
    // Nothing here reads the channel: it is opened in the background, and the first tool call
    // that needs it waits for it only if it is not open yet.
    eprintln!(
        "ferry mcp serve: {} tools ({}{}); project {}, {}",
        surface.tools().len(),
        args.tools.join(","),
        if read_only { ", read-only" } else { "" },
        display::escape(project.as_str()),
        agent.as_ref().map_or_else(
            || "no --as: read-only".to_owned(),
            |agent| format!("as {agent}")
        ),
    );
    let actor = agent.map_or(Actor::Observer, Actor::Agent);
    let queue = Snifrig::find(home.root(), std::env::var_os("PATH").as_deref());
    let mut lazy = LazySession::new(home, project.clone(), actor)
        .with_queue(Box::new(queue))
        .with_machine(common::machine_name());
    if read_only {
        lazy = lazy.read_only();
    }
    // `ferry_update apply` replaces the file this server runs from (ADR 0020).
    if let Ok(exe) = std::env::current_exe() {
        lazy = lazy.with_installed(Installed::at(exe));
    }
    lazy.prefetch(now);
    let config = ServerConfig {
        name: "ferry",
        version: concat!(env!("CARGO_PKG_VERSION"), "-beta"),
        instructions: surface.instructions().to_owned(),
        project: project.to_string(),
    };
    // Calls that wait on a third party (the gateway's) answer later, so that a hung one holds
    // neither our own tools nor another server's (ADR 0027).
    let mut server = Server::new(config, surface)
        .with_channel(Box::new(Announced::new(lazy)))
        .with_deferred_answers();
    let served = stdio::serve_stdio(&mut server, inbox);
    // Every child is killed and reaped however serving ended (one that outlives a crash of
    // this process is killed by the kernel: `ferry mcp gateway-exec`).
    gateway.shutdown();
    served?;
    Ok(ExitCode::SUCCESS)
}

/// The server's session, saying on stderr once it is open whom the server speaks for and
/// whether that agent can act (or why the channel could not be opened).
struct Announced {
    inner: LazySession,
    said: bool,
}

impl Announced {
    fn new(inner: LazySession) -> Self {
        Self { inner, said: false }
    }
}

impl ChannelAccess for Announced {
    fn channel(&mut self, now: Timestamp) -> Result<&mut dyn port::Channel, Unavailable> {
        self.inner.channel(now)
    }

    fn channel_and_queue(
        &mut self,
        now: Timestamp,
    ) -> Result<(&mut dyn port::Channel, Option<&dyn HeavyQueue>), Unavailable> {
        self.inner.channel_and_queue(now)
    }

    fn flush(&mut self, now: Timestamp) {
        self.inner.flush(now);
        if self.said {
            return;
        }
        if let Some(session) = self.inner.opened() {
            self.said = true;
            eprintln!(
                "ferry mcp serve: {}",
                display::escape(&describe_seat(session, now))
            );
            common::report_local_problems("ferry mcp serve", session);
        }
    }
}

impl Drop for Announced {
    /// A server that stops before any call opened the channel still says what it found, so
    /// an app's log shows why an agent could not act.
    fn drop(&mut self) {
        if self.said {
            return;
        }
        let now = clock::now();
        let line = match self.inner.session(now) {
            Ok(session) => {
                let line = describe_seat(session, now);
                eprintln!("ferry mcp serve: {}", display::escape(&line));
                common::report_local_problems("ferry mcp serve", session);
                return;
            }
            Err(err) => {
                let text = err.to_string();
                let text = err
                    .fix()
                    .map_or_else(|| text.clone(), |fix| fix.with(&text));
                format!("cannot serve this project yet: {text}")
            }
        };
        eprintln!("ferry mcp serve: {}", display::escape(&line));
    }
}

/// One line for stderr saying whom this server speaks for and whether it can act.
fn describe_seat(session: &Session, now: Timestamp) -> String {
    let project = session.project();
    let problems = session.integrity_problems().0.len();
    let Some(agent) = session.actor().agent() else {
        return format!("project {project}, no --as: read-only; {problems} integrity problems");
    };
    let standing = match session.authorize(Operation::Read, None, now) {
        Ok(level) => format!(
            "seated as {agent} ({})",
            level.map_or("master".to_owned(), |level| level.to_string())
        ),
        Err(err) => format!("{agent} cannot act yet: {err}"),
    };
    format!("project {project}, {standing}; {problems} integrity problems")
}

/// The surface of the groups named by `--tools`. An unknown name is an error that lists the
/// groups a user may name (hidden ones stay hidden). An opt-in group adds its tools to the
/// default ones (`--tools admin` serves the core tools and the admin tools: ADR 0019), in
/// whatever order the names come; a hidden test group is served alone. A read-only surface
/// always has the legacy group (`ferry_mcp_tools::READ_ONLY_DEFAULT`).
fn assemble(names: &[String], read_only: bool, catalog: &[Selectable]) -> anyhow::Result<Surface> {
    let mut names: Vec<&str> = names.iter().map(|name| name.trim()).collect();
    if let Some(unknown) = names
        .iter()
        .find(|name| !catalog.iter().any(|entry| entry.group.name == **name))
    {
        let known: Vec<&str> = catalog
            .iter()
            .filter(|entry| !entry.hidden)
            .map(|entry| entry.group.name)
            .collect();
        bail!(
            "unknown tool group `{unknown}` in --tools (known: {})",
            known.join(", ")
        );
    }
    let names_visible = names.iter().any(|name| {
        catalog
            .iter()
            .any(|entry| entry.group.name == *name && !entry.hidden)
    });
    let defaults = if read_only {
        ferry_mcp_tools::READ_ONLY_DEFAULT
    } else {
        ferry_mcp_tools::DEFAULT
    };
    if names_visible {
        names.extend(defaults.iter().map(|group| group.name));
    }
    let groups: Vec<&'static Group> = catalog.iter().map(|entry| entry.group).collect();
    let registry = Registry::new(&groups).context("the built-in tool groups are inconsistent")?;
    registry
        .surface(&Selection {
            groups: &names,
            read_only,
        })
        .context("cannot assemble the tool surface")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(list: &[&str]) -> Vec<String> {
        list.iter().map(|name| (*name).to_owned()).collect()
    }

    fn served(list: &[&str], read_only: bool) -> Vec<&'static str> {
        let surface = assemble(&names(list), read_only, &selectable_groups()).unwrap();
        surface
            .tools()
            .iter()
            .map(|tool| tool.definition().name)
            .collect()
    }

    #[test]
    fn the_fixture_group_is_served_when_named() {
        let tools = served(&["fixture"], false);
        assert!(
            tools.contains(&"fixture_status") && tools.contains(&"fixture_post"),
            "{tools:?}"
        );
    }

    #[test]
    fn the_admin_group_is_served_only_when_named_and_is_read_only() {
        let default: Vec<String> = DEFAULT_GROUPS.split(',').map(str::to_owned).collect();
        let by_default = served(
            &default.iter().map(String::as_str).collect::<Vec<_>>(),
            false,
        );
        assert!(!by_default.contains(&"ferry_get"), "{by_default:?}");
        assert!(!by_default.contains(&"ferry_status"), "{by_default:?}");
        let named = served(&["core", "admin"], false);
        assert!(named.contains(&"ferry_get") && named.contains(&"ferry_status"));
        // Read-only keeps every admin tool (all three only read) and no tool that writes.
        let read_only = served(&["admin"], true);
        for tool in ["ferry_get", "ferry_search", "ferry_status"] {
            assert!(read_only.contains(&tool), "{read_only:?}");
        }
        let surface = assemble(&names(&["admin"]), true, &selectable_groups()).unwrap();
        assert!(
            surface
                .tools()
                .iter()
                .all(|tool| tool.definition().annotations.read_only)
        );
    }

    #[test]
    fn an_opt_in_group_adds_its_tools_to_the_core_tools() {
        let core = served(&["core"], false);
        for (group, tool) in [("admin", "ferry_status"), ("legacy", "list_tasks")] {
            let tools = served(&[group], false);
            assert!(tools.contains(&tool), "{group}: {tools:?}");
            for core_tool in &core {
                assert!(tools.contains(core_tool), "{group} lost {core_tool}");
            }
            assert_eq!(tools, served(&["core", group], false));
        }
        let all = served(&["core", "admin", "legacy"], false);
        assert_eq!(all, served(&["admin", "legacy"], false));
        assert!(all.contains(&"ferry_get") && all.contains(&"read_memory"));
    }

    #[test]
    fn the_order_of_the_group_names_does_not_change_the_bytes_of_tools_list() {
        let bytes = |list: &[&str]| {
            let surface = assemble(&names(list), false, &selectable_groups()).unwrap();
            (
                surface.tools_list_json().to_owned(),
                surface.instructions().to_owned(),
            )
        };
        let reference = bytes(&["core", "admin", "legacy"]);
        for order in [
            &["legacy", "admin", "core"][..],
            &["admin", "core", "legacy"],
            &["legacy", "core", "admin"],
            &["admin", "legacy"],
            &["legacy", "admin", "legacy"],
        ] {
            assert_eq!(bytes(order), reference, "{order:?}");
        }
        assert_eq!(bytes(&["legacy", "core"]), bytes(&["core", "legacy"]));
    }

    #[test]
    fn naming_a_group_twice_serves_it_once() {
        assert_eq!(
            served(&["fixture", "core", "fixture"], false),
            served(&["core", "fixture"], false)
        );
    }

    #[test]
    fn read_only_drops_the_tools_that_write() {
        let tools = served(&["fixture"], true);
        assert!(tools.contains(&"fixture_status"), "{tools:?}");
        assert!(!tools.contains(&"fixture_post"), "{tools:?}");
    }

    #[test]
    fn an_unknown_group_is_an_error_that_lists_only_visible_groups() {
        let err = assemble(&names(&["core", "nope"]), false, &selectable_groups()).unwrap_err();
        assert_eq!(
            err.to_string(),
            "unknown tool group `nope` in --tools (known: admin, core, legacy)"
        );
    }

    #[test]
    fn every_schema_of_every_selectable_group_compiles() {
        let groups: Vec<&'static Group> = selectable_groups()
            .iter()
            .map(|entry| entry.group)
            .collect();
        Registry::new(&groups).unwrap();
        let surface = Surface::build(&groups, false).unwrap();
        ferry_mcp_testkit::schema::check_compiles(&surface).unwrap();
    }

    #[test]
    fn the_group_catalog_is_sorted_without_duplicates() {
        let catalog = selectable_groups();
        let names: Vec<&str> = catalog.iter().map(|entry| entry.group.name).collect();
        assert!(names.windows(2).all(|pair| pair[0] < pair[1]), "{names:?}");
    }

    #[test]
    fn the_default_selection_is_the_tools_crate_s_default() {
        let named: Vec<&str> = DEFAULT_GROUPS.split(',').collect();
        let default: Vec<&str> = ferry_mcp_tools::DEFAULT
            .iter()
            .map(|group| group.name)
            .collect();
        assert_eq!(named, default);
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

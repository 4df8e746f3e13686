//! `ferry mcp add|remove|servers|list|call` and the gateway's part of `ferry mcp serve`
//! (ADR 0021): external MCP servers configured on this machine, per project, served under
//! `NAME_` when `--tools gateway` or `--tools NAME` asks for them.
//!
//! The configuration is `gateway.json` in the project's folder of the state folder, never in
//! the channel: a command line from a synced folder would run on every machine, so anyone who
//! can write the folder could run anything. It holds each server's command line, the names of
//! the variables it may see despite the scrub, and the tools it listed when it was added.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;

use anyhow::{Context as _, bail};
use clap::Args;
use ferry_mcp_core::channel::log::names::ProjectId;
use ferry_mcp_core::guard;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::gateway_calls::CallQueue;
use super::gateway_process::{Downstream, Launch, Timeouts};
use super::gateway_tools::{self, StoredTool};
use super::stdio::Answers;
use crate::{common, display, paths};

/// What `--tools` names to serve every configured server.
pub const ALL_SERVERS: &str = "gateway";
/// The longest server name.
const MAX_NAME_CHARS: usize = 32;
/// Parts of a variable's name that mark it as a secret: such a variable is not passed to a
/// child unless its entry names it.
const SECRET_NAME_PARTS: [&str; 7] = [
    "token",
    "key",
    "secret",
    "password",
    "passwd",
    "credential",
    "auth",
];

/// The external servers of one project, sorted by name.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct GatewayConfig {
    pub servers: Vec<ServerEntry>,
}

/// One external server.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ServerEntry {
    pub name: String,
    pub command: String,
    #[serde(default)]
    pub args: Vec<String>,
    /// Variables passed although their names look like secrets: names only, never values.
    #[serde(default)]
    pub env: Vec<String>,
    /// What it listed when it was added: what `serve` serves.
    #[serde(default)]
    pub tools: Vec<StoredTool>,
}

#[derive(Debug, Args)]
pub struct AddArgs {
    /// The server's name: its tools are served as NAME_TOOL (letters, digits and `-`).
    name: String,
    #[arg(long, value_parser = common::project_id)]
    project: ProjectId,
    /// A variable to pass although its name looks like a secret (repeatable; its value is
    /// read from `serve`'s environment when the server starts, never stored).
    #[arg(long = "env", value_name = "VAR")]
    env: Vec<String>,
    /// The command that starts the server, and its arguments (after `--`).
    #[arg(last = true, required = true, value_name = "COMMAND")]
    command: Vec<String>,
}

#[derive(Debug, Args)]
pub struct RemoveArgs {
    name: String,
    #[arg(long, value_parser = common::project_id)]
    project: ProjectId,
}

#[derive(Debug, Args)]
pub struct ServersArgs {
    #[arg(long, value_parser = common::project_id)]
    project: ProjectId,
    /// Print JSON for scripts.
    #[arg(long)]
    json: bool,
}

#[derive(Debug, Args)]
pub struct CallArgs {
    /// The server, as `ferry mcp servers` names it.
    name: String,
    /// The tool, as the server names it (without the NAME_ prefix).
    tool: String,
    #[arg(long, value_parser = common::project_id)]
    project: ProjectId,
    /// The arguments, a JSON object.
    #[arg(long, default_value = "{}")]
    args: String,
    /// Print the result as JSON for scripts.
    #[arg(long)]
    json: bool,
}

#[derive(Debug, Args)]
pub struct ExecArgs {
    /// The process that must be alive for the command to run.
    #[arg(long)]
    parent: u32,
    #[arg(last = true, required = true)]
    command: Vec<String>,
}

/// The configuration file of `project`.
fn config_path(project: &ProjectId) -> anyhow::Result<PathBuf> {
    Ok(paths::gateway_config(&paths::home()?, project))
}

/// Reads the configuration at `path` (none yet is an empty one).
pub fn load(path: &Path) -> anyhow::Result<GatewayConfig> {
    match std::fs::read(path) {
        Ok(bytes) => serde_json::from_slice(&bytes)
            .with_context(|| format!("{} is not a gateway configuration", path.display())),
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => Ok(GatewayConfig::default()),
        Err(err) => Err(err).with_context(|| format!("cannot read {}", path.display())),
    }
}

fn save(path: &Path, config: &GatewayConfig) -> anyhow::Result<()> {
    let folder = path.parent().context("the configuration has no folder")?;
    std::fs::create_dir_all(folder)
        .with_context(|| format!("cannot create {}", folder.display()))?;
    let mut bytes = serde_json::to_vec_pretty(config)?;
    bytes.push(b'\n');
    let mut file = tempfile::NamedTempFile::new_in(folder)?;
    std::io::Write::write_all(&mut file, &bytes)?;
    file.as_file().sync_all()?;
    file.persist(path)
        .with_context(|| format!("cannot write {}", path.display()))?;
    Ok(())
}

/// Why `name` cannot name a server, if it cannot: its form, a group's name, a first-party tool
/// it would shadow (every tool of every group is checked), or a server configured already.
pub fn refusal(name: &str, configured: &[ServerEntry]) -> Option<String> {
    let shaped = name.len() <= MAX_NAME_CHARS
        && name.starts_with(|c: char| c.is_ascii_lowercase())
        && name
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-');
    if !shaped {
        return Some(format!(
            "`{}` is not a server name: 1-{MAX_NAME_CHARS} characters of a-z, 0-9 and `-`, starting with a letter (no `_`: it separates the name from the tool's)",
            display::escape(name)
        ));
    }
    let groups = ferry_mcp_tools::GROUPS
        .iter()
        .chain(ferry_mcp_tools::TEST_GROUPS.iter());
    let mut group_names = vec![ALL_SERVERS];
    let mut tools = Vec::new();
    for group in groups {
        group_names.push(group.name);
        tools.extend(group.tools.iter().map(|tool| tool.definition().name));
    }
    if group_names.contains(&name) {
        return Some(format!("`{name}` is the name of a tool group"));
    }
    let prefix = format!("{name}_");
    if let Some(tool) = tools
        .iter()
        .find(|tool| **tool == name || tool.starts_with(&prefix))
    {
        return Some(format!(
            "`{name}` would shadow the first-party tool `{tool}`"
        ));
    }
    if configured.iter().any(|server| server.name == name) {
        return Some(format!(
            "a server named `{name}` is configured already (`ferry mcp remove {name}` first)"
        ));
    }
    None
}

/// The child's environment: ours without the variables whose names look like secrets, except
/// those the entry names.
pub fn scrubbed_env(
    ours: impl Iterator<Item = (OsString, OsString)>,
    allowed: &[String],
) -> Vec<(OsString, OsString)> {
    ours.filter(|(name, _)| {
        let name = name.to_string_lossy();
        if allowed.iter().any(|allowed| *allowed == name) {
            return true;
        }
        let lower = name.to_ascii_lowercase();
        !SECRET_NAME_PARTS.iter().any(|part| lower.contains(part))
    })
    .collect()
}

fn downstream(entry: &ServerEntry, timeouts: Timeouts) -> anyhow::Result<Downstream> {
    let ferry = std::env::current_exe().context("cannot find the ferry binary")?;
    Ok(Downstream::new(
        Launch {
            name: entry.name.clone(),
            command: entry.command.clone(),
            args: entry.args.clone(),
            env: scrubbed_env(std::env::vars_os(), &entry.env),
            ferry,
        },
        timeouts,
    ))
}

fn stored(tools: Vec<ferry_mcp_core::protocol::client::RemoteTool>) -> Vec<StoredTool> {
    let mut tools: Vec<StoredTool> = tools
        .into_iter()
        .map(|tool| StoredTool {
            name: tool.name,
            title: tool.title,
            description: tool.description,
            input_schema: tool.input_schema,
            annotations: tool.annotations,
        })
        .collect();
    tools.sort_by(|a, b| a.name.cmp(&b.name));
    tools
}

fn failed(name: &str, downstream: &Downstream, err: &dyn std::fmt::Display) -> anyhow::Error {
    let stderr = downstream
        .last_stderr_line()
        .map(|line| format!("; its last stderr line: {}", guard::redact(&line).text))
        .unwrap_or_default();
    anyhow::anyhow!("MCP server `{name}` failed: {err}{stderr}")
}

pub fn add(args: AddArgs) -> anyhow::Result<ExitCode> {
    let path = config_path(&args.project)?;
    let mut config = load(&path)?;
    if let Some(why) = refusal(&args.name, &config.servers) {
        bail!("cannot add this server: {why}");
    }
    let (command, rest) = args.command.split_first().context("no command given")?;
    let mut entry = ServerEntry {
        name: args.name,
        command: command.clone(),
        args: rest.to_vec(),
        env: args.env,
        tools: Vec::new(),
    };
    let mut server = downstream(&entry, Timeouts::from_env()?)?;
    let tools = server
        .list_tools()
        .map_err(|err| failed(&entry.name, &server, &err))?;
    server.shutdown();
    entry.tools = stored(tools);
    let count = entry.tools.len();
    let name = entry.name.clone();
    config.servers.push(entry);
    config.servers.sort_by(|a, b| a.name.cmp(&b.name));
    save(&path, &config)?;
    common::print(&format!(
        "added MCP server `{name}` with {count} tools (served as {name}_TOOL by `ferry mcp serve --tools {name}` or `--tools gateway`)"
    ))?;
    Ok(ExitCode::SUCCESS)
}

pub fn remove(args: RemoveArgs) -> anyhow::Result<ExitCode> {
    let path = config_path(&args.project)?;
    let mut config = load(&path)?;
    let before = config.servers.len();
    config.servers.retain(|server| server.name != args.name);
    if config.servers.len() == before {
        bail!(
            "no MCP server named `{}` is configured for project {} (see `ferry mcp servers`)",
            display::escape(&args.name),
            args.project
        );
    }
    save(&path, &config)?;
    common::print(&format!("removed MCP server `{}`", args.name))?;
    Ok(ExitCode::SUCCESS)
}

pub fn servers(args: ServersArgs) -> anyhow::Result<ExitCode> {
    let config = load(&config_path(&args.project)?)?;
    if args.json {
        let rows: Vec<Value> = config
            .servers
            .iter()
            .map(|server| {
                serde_json::json!({
                    "name": server.name, "command": server.command, "args": server.args,
                    "env": server.env, "tools": server.tools.len(),
                })
            })
            .collect();
        common::print_raw(&display::escape_json(&Value::Array(rows).to_string()))?;
        return Ok(ExitCode::SUCCESS);
    }
    if config.servers.is_empty() {
        common::print(&format!(
            "no MCP servers configured for project {} (`ferry mcp add NAME -- COMMAND`)",
            args.project
        ))?;
    }
    for server in &config.servers {
        let mut line = format!(
            "{}: {} tools: {}",
            display::escape(&server.name),
            server.tools.len(),
            display::escape(&command_line(server))
        );
        if !server.env.is_empty() {
            line.push_str(&format!(
                " (passes {})",
                display::escape(&server.env.join(", "))
            ));
        }
        common::print(&line)?;
    }
    Ok(ExitCode::SUCCESS)
}

fn command_line(server: &ServerEntry) -> String {
    std::iter::once(&server.command)
        .chain(&server.args)
        .map(String::as_str)
        .collect::<Vec<_>>()
        .join(" ")
}

/// `ferry mcp list`: each server started and asked for its tools now.
pub fn list(args: ServersArgs) -> anyhow::Result<ExitCode> {
    let config = load(&config_path(&args.project)?)?;
    let timeouts = Timeouts::from_env()?;
    let mut failures = 0;
    let mut rows = Vec::new();
    for entry in &config.servers {
        let mut server = downstream(entry, timeouts)?;
        match server.list_tools() {
            Ok(tools) => {
                let tools = stored(tools);
                if !args.json {
                    common::print(&format!("{}: {} tools", entry.name, tools.len()))?;
                    for tool in &tools {
                        let description = guard::redact(guard::cut(&tool.description, 100));
                        common::print(&format!(
                            "  {}_{}: {}",
                            entry.name,
                            display::escape(&tool.name),
                            display::escape(description.text.lines().next().unwrap_or_default())
                        ))?;
                    }
                }
                rows.push(serde_json::json!({"name": entry.name, "tools": tools.iter().map(|tool| format!("{}_{}", entry.name, tool.name)).collect::<Vec<_>>()}));
            }
            Err(err) => {
                failures += 1;
                let line = failed(&entry.name, &server, &err).to_string();
                if !args.json {
                    common::print(&display::escape(&line))?;
                }
                rows.push(
                    serde_json::json!({"name": entry.name, "error": guard::redact(&line).text}),
                );
            }
        }
        server.shutdown();
    }
    if args.json {
        common::print_raw(&display::escape_json(&Value::Array(rows).to_string()))?;
    }
    Ok(if failures == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}

/// `ferry mcp call`: one call, its result marked as `serve` would answer it.
pub fn call(args: CallArgs) -> anyhow::Result<ExitCode> {
    let arguments: Map<String, Value> = match serde_json::from_str::<Value>(&args.args) {
        Ok(Value::Object(arguments)) => arguments,
        Ok(_) => bail!("--args must be a JSON object, such as '{{\"message\":\"hi\"}}'"),
        Err(err) => bail!("--args is not JSON: {err}"),
    };
    let config = load(&config_path(&args.project)?)?;
    let Some(entry) = config
        .servers
        .iter()
        .find(|server| server.name == args.name)
    else {
        bail!(
            "no MCP server named `{}` is configured for project {} (see `ferry mcp servers`)",
            display::escape(&args.name),
            args.project
        );
    };
    let mut server = downstream(entry, Timeouts::from_env()?)?;
    let outcome = match server.call(&args.tool, &arguments, &|| false) {
        Ok(result) => gateway_tools::mark(&entry.name, &result),
        Err(err) => {
            let line = failed(&entry.name, &server, &err).to_string();
            gateway_tools::failure(
                &entry.name,
                line.trim_start_matches(&format!("MCP server `{}` failed: ", entry.name)),
            )
        }
    };
    server.shutdown();
    if args.json {
        let json = serde_json::json!({
            "isError": outcome.is_error,
            "content": std::iter::once(&outcome.summary).chain(&outcome.texts).collect::<Vec<_>>(),
            "structuredContent": outcome.structured,
            "_meta": outcome.meta,
        });
        common::print_raw(&display::escape_json(&json.to_string()))?;
    } else {
        common::print(&display::escape(&outcome.summary))?;
        for text in &outcome.texts {
            common::print(&display::escape_lines(text))?;
        }
        if let Some(structured) = &outcome.structured {
            common::print(&display::escape(&structured.to_string()))?;
        }
    }
    Ok(if outcome.is_error {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    })
}

/// `ferry mcp gateway-exec` (hidden): what a gateway's child runs first. It asks the kernel to
/// kill it when the thread that started it dies, checks that its parent did not die before
/// that, marks every descriptor it inherited beyond stdio close-on-exec, and becomes the
/// command: only stdio passes (every descriptor `ferry` opens is close-on-exec already; these
/// are what `ferry`'s own parent leaked to it).
pub fn exec(args: ExecArgs) -> anyhow::Result<ExitCode> {
    #[cfg(target_os = "linux")]
    {
        rustix::process::set_parent_process_death_signal(Some(rustix::process::Signal::KILL))
            .context("cannot ask to die with the server")?;
        let parent = rustix::process::getppid().map(|pid| pid.as_raw_nonzero().get());
        if parent.and_then(|pid| u32::try_from(pid).ok()) != Some(args.parent) {
            bail!("the server that started this command is gone");
        }
        close_inherited_descriptors().context("cannot close the descriptors it inherited")?;
    }
    let (command, rest) = args.command.split_first().context("no command given")?;
    let err =
        std::os::unix::process::CommandExt::exec(std::process::Command::new(command).args(rest));
    bail!("cannot run `{}`: {err}", display::escape(command))
}

/// Marks every open descriptor above stdio close-on-exec, so the command this process becomes
/// inherits none of them. Runs in `gateway-exec`, one thread, nothing opened but what std
/// opens close-on-exec, right before `exec`.
#[cfg(target_os = "linux")]
fn close_inherited_descriptors() -> std::io::Result<()> {
    use rustix::fs::{Dir, Mode, OFlags};
    use std::os::fd::{AsRawFd, BorrowedFd, RawFd};
    let listing = rustix::fs::open(
        "/proc/self/fd",
        OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
        Mode::empty(),
    )?;
    let own = listing.as_raw_fd();
    // Kept open until every descriptor is marked: none of the listed ones closes meanwhile.
    let mut listing = Dir::new(listing)?;
    let mut inherited: Vec<RawFd> = Vec::new();
    while let Some(entry) = listing.read() {
        let name = entry?;
        if let Some(fd) = name
            .file_name()
            .to_str()
            .ok()
            .and_then(|name| name.parse().ok())
            && fd > 2
            && fd != own
        {
            inherited.push(fd);
        }
    }
    for fd in inherited {
        // SAFETY: `fd` is open: /proc listed it, this process runs one thread here and closes
        // nothing until `exec`, and the listing's own handle (the one descriptor that could
        // close) is left out and held open. The borrow lives for this iteration only and
        // changes only the close-on-exec flag; ownership stays where it was. No safe API names
        // a descriptor by number (rustix 1.x has no `close_range`, std has nothing).
        #[allow(unsafe_code)]
        let borrowed = unsafe { BorrowedFd::borrow_raw(fd) };
        let flags = rustix::io::fcntl_getfd(borrowed)?;
        rustix::io::fcntl_setfd(borrowed, flags | rustix::io::FdFlags::CLOEXEC)?;
    }
    drop(listing);
    Ok(())
}

/// The gateway's part of one `serve`: the servers it starts on demand, and their groups.
#[derive(Debug, Default)]
pub struct Served {
    pub groups: Vec<&'static ferry_mcp_core::registry::Group>,
    servers: Vec<Arc<CallQueue>>,
}

impl Served {
    /// Stops every call still waiting and every child (and reaps it): called when `serve`
    /// ends.
    pub fn shutdown(&self) {
        for server in &self.servers {
            server.shutdown();
        }
    }
}

/// The groups `--tools` names that are not built in: `gateway` (every configured server) or a
/// server's name. Returns the names to select (with `gateway` replaced by every server) and
/// what serves them; a name that is neither stays for `assemble` to refuse. Each server's
/// calls answer later, through `answers`, from a thread of its own.
pub fn for_serve(
    project: &ProjectId,
    names: &[String],
    built_in: &[&str],
    answers: &Answers,
) -> anyhow::Result<(Vec<String>, Served)> {
    let wanted: Vec<&str> = names
        .iter()
        .map(|name| name.trim())
        .filter(|name| !built_in.contains(name))
        .collect();
    if wanted.is_empty() {
        return Ok((names.to_vec(), Served::default()));
    }
    let config = load(&config_path(project)?)?;
    if wanted.contains(&ALL_SERVERS) && config.servers.is_empty() {
        bail!(
            "--tools gateway: no MCP servers are configured for project {project} (`ferry mcp add NAME -- COMMAND`)"
        );
    }
    let mut selected: Vec<String> = names
        .iter()
        .map(|name| name.trim())
        .filter(|name| *name != ALL_SERVERS)
        .map(str::to_owned)
        .collect();
    let mut served = Served::default();
    let timeouts = Timeouts::from_env()?;
    for (index, entry) in config.servers.iter().enumerate() {
        if !wanted.contains(&ALL_SERVERS) && !wanted.contains(&entry.name.as_str()) {
            continue;
        }
        if let Some(why) = refusal(&entry.name, &config.servers[..index]) {
            bail!(
                "the gateway configuration of project {project} is refused: {why} (`ferry mcp remove {}`)",
                display::escape(&entry.name)
            );
        }
        let server = gateway_tools::leak(entry.name.clone());
        let queue = CallQueue::start(server, downstream(entry, timeouts)?)
            .with_context(|| format!("cannot start the call thread of MCP server `{server}`"))?;
        let queue = Arc::new(queue);
        let (group, skipped) = gateway_tools::group(server, &entry.tools, &queue, answers);
        for tool in skipped {
            eprintln!(
                "ferry mcp serve: server `{}`: tool `{}` left out (its served name would not be a valid or unique MCP tool name)",
                entry.name,
                display::escape(&tool)
            );
        }
        if !selected.contains(&entry.name) {
            selected.push(entry.name.clone());
        }
        served.groups.push(group);
        served.servers.push(queue);
    }
    Ok((selected, served))
}

//! `ferry mcp connect`: puts `ferry mcp serve` into an AI app's own MCP configuration.
//!
//! Why it exists: Claude Desktop, Claude Code and Codex each need the same facts (the absolute
//! path of this binary, `mcp serve --as NAME --project ID`, and `FERRY_HOME` when it moves the
//! state folder), but each wants them in its own format, in a file at its own per-platform
//! path that already holds the user's other servers. By hand that is a path to look up, a JSON
//! comma to get wrong and an agent to seat separately, and a mistake shows only as a server the
//! app quietly fails to start. This command seats the agent and prints the one entry, or with
//! `--write` merges it, changing no other byte of the file: JSON through `jsonc-parser`'s
//! CST, TOML through `toml_edit`. No key, token or passphrase ever goes into the file: the
//! agent's key stays in the state folder, where `ferry mcp serve` finds it.

use std::borrow::Cow;
use std::fmt::Write as _;
use std::fs;
use std::io::{self, Write as _};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context as _, anyhow, bail};
use clap::{Args, ValueEnum};
use ferry_mcp_core::channel::fold::levels::Level;
use ferry_mcp_core::channel::log::names::{AgentName, ProjectId};
use ferry_mcp_core::channel::machine::home::Home;
use ferry_mcp_core::channel::ops::access::{AccessError, KeyHere};
use ferry_mcp_core::channel::ops::{self, AgentRow, Joined, OpsError};
use ferry_mcp_core::time::Timestamp;
use jsonc_parser::ParseOptions;
use jsonc_parser::cst::{CstInputValue, CstRootNode};
use toml_edit::{Array, DocumentMut, InlineTable, Item, Table, Value};

use crate::clock;
use crate::common::{agent_name, project_id};
use crate::paths;

/// The name of the server entry in every app's config. Plain letters: Codex turns characters
/// outside `[A-Za-z0-9_]` into `_` in the names of the tools it shows.
const SERVER: &str = "ferry";

/// The apps `ferry mcp connect` knows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum App {
    ClaudeDesktop,
    ClaudeCode,
    Codex,
}

impl App {
    fn title(self) -> &'static str {
        match self {
            App::ClaudeDesktop => "Claude Desktop",
            App::ClaudeCode => "Claude Code",
            App::Codex => "Codex",
        }
    }
}

#[derive(Debug, Args)]
pub struct ConnectArgs {
    /// The app to connect.
    #[arg(long, value_enum)]
    app: App,
    /// The agent the app will be (seated on this machine by `--write` if it is not yet);
    /// default: the app and this machine's name, `claude-code-<hostname>`.
    #[arg(long = "as", value_name = "AGENT", value_parser = agent_name)]
    name: Option<AgentName>,
    /// The project the agent works in.
    #[arg(long, value_name = "ID", value_parser = project_id)]
    project: ProjectId,
    /// Seat the agent and merge the entry into the app's config file; without it, only print.
    #[arg(long)]
    write: bool,
    /// The app's config file (default: where the app keeps it on this platform).
    #[arg(long, value_name = "PATH")]
    config: Option<PathBuf>,
    /// With `--write`, seat a new agent as a Worker (it reads and hands work in) rather than a
    /// Member (it also claims, submits and posts).
    #[arg(long)]
    work_only: bool,
}

/// The server entry every app gets, in no app's format yet.
#[derive(Debug)]
struct Entry {
    command: String,
    args: Vec<String>,
    /// `FERRY_HOME`, when it is set, so that the app's server uses this state folder.
    env: Vec<(String, String)>,
}

impl Entry {
    fn new(ferry: &Path, name: &AgentName, project: &ProjectId) -> anyhow::Result<Self> {
        let command = utf8(ferry, "the path of the ferry binary")?;
        let args = [
            "mcp",
            "serve",
            "--as",
            name.as_str(),
            "--project",
            project.as_str(),
        ];
        let mut env = Vec::new();
        if let Some(home) = paths::home_override() {
            let home = std::path::absolute(&home)
                .with_context(|| format!("resolving FERRY_HOME {}", home.display()))?;
            env.push(("FERRY_HOME".to_owned(), utf8(&home, "FERRY_HOME")?));
        }
        Ok(Self {
            command,
            args: args.map(str::to_owned).to_vec(),
            env,
        })
    }

    /// The same server as `claude mcp add` arguments. The name goes before `-e`: that option
    /// takes several values and would swallow a name after it.
    fn claude_mcp_add(&self) -> String {
        let mut words = vec!["claude", "mcp", "add", "--scope", "user", SERVER];
        let env: Vec<String> = self.env.iter().map(|(k, v)| format!("{k}={v}")).collect();
        for pair in &env {
            words.extend(["-e", pair]);
        }
        words.push("--");
        words.push(&self.command);
        words.extend(self.args.iter().map(String::as_str));
        let words: Vec<Cow<'_, str>> = words.into_iter().map(shell_word).collect();
        words.join(" ")
    }
}

/// The `ferry` an entry names, and a warning to show with it.
#[derive(Debug)]
struct FerryToName {
    path: PathBuf,
    warning: Option<String>,
}

/// Which `ferry` the app is to start: one that outlives `cargo clean` and a moved checkout.
/// That is the installed `ferry` on `PATH` (the first, by its real path: a link on `PATH` may
/// be repointed, the file it names is what runs), else this very binary, with a warning when
/// it lives in a cargo build folder, which `cargo clean` empties.
fn ferry_to_name(path_var: Option<&std::ffi::OsStr>) -> anyhow::Result<FerryToName> {
    let on_path = path_var
        .into_iter()
        .flat_map(std::env::split_paths)
        .filter(|dir| dir.is_absolute())
        .map(|dir| dir.join(format!("ferry{}", std::env::consts::EXE_SUFFIX)))
        .find(|candidate| is_executable(candidate))
        .and_then(|found| fs::canonicalize(found).ok());
    let (path, installed) = match on_path {
        Some(path) => (path, true),
        None => {
            let exe = std::env::current_exe().context("finding the path of this ferry binary")?;
            (fs::canonicalize(&exe).unwrap_or(exe), false)
        }
    };
    let warning = match (in_build_folder(&path), installed) {
        (true, _) => Some(format!(
            "warning: {} is in a cargo build folder: `cargo clean` or moving the checkout breaks this entry; install ferry (`cargo install --path ferry-mcp-bin` in the checkout) and run this again",
            path.display()
        )),
        (false, false) => Some(format!(
            "warning: no ferry is on PATH, so the entry names this one, {}; if it moves, run this again",
            path.display()
        )),
        (false, true) => None,
    };
    Ok(FerryToName { path, warning })
}

fn is_executable(path: &Path) -> bool {
    let Ok(meta) = fs::metadata(path) else {
        return false;
    };
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt as _;
        meta.is_file() && meta.permissions().mode() & 0o111 != 0
    }
    #[cfg(not(unix))]
    {
        meta.is_file()
    }
}

/// Whether `binary` lives in a cargo build folder: one of its folders is tagged by cargo
/// (`CACHEDIR.TAG`, which cargo writes at the root of every target folder), or it sits in a
/// `target/debug` or `target/release` folder.
fn in_build_folder(binary: &Path) -> bool {
    binary.ancestors().skip(1).any(|dir| {
        let tagged = fs::read_to_string(dir.join("CACHEDIR.TAG"))
            .is_ok_and(|tag| tag.contains("created by cargo"));
        let profile = dir
            .file_name()
            .is_some_and(|name| name == "debug" || name == "release")
            && dir
                .parent()
                .and_then(Path::file_name)
                .is_some_and(|name| name == "target");
        tagged || profile
    })
}

fn utf8(path: &Path, what: &str) -> anyhow::Result<String> {
    path.to_str()
        .map(str::to_owned)
        .ok_or_else(|| anyhow!("{what} ({}) is not UTF-8", path.display()))
}

/// `word` quoted for a POSIX shell when it needs it.
fn shell_word(word: &str) -> Cow<'_, str> {
    let plain = |c: char| c.is_ascii_alphanumeric() || "-_./=:@%+,".contains(c);
    if !word.is_empty() && word.chars().all(plain) {
        Cow::Borrowed(word)
    } else {
        Cow::Owned(format!("'{}'", word.replace('\'', r"'\''")))
    }
}

// ---- where each app keeps its config ----

fn user_home() -> anyhow::Result<PathBuf> {
    std::env::home_dir()
        .filter(|home| !home.as_os_str().is_empty())
        .ok_or_else(|| anyhow!("cannot find your home folder: pass --config PATH"))
}

/// The app's config file on this platform, as the app itself finds it.
fn default_config(app: App) -> anyhow::Result<PathBuf> {
    Ok(match app {
        App::ClaudeDesktop => {
            // Electron's `appData` folder: what Claude Desktop's own Settings, Developer,
            // "Edit Config" opens.
            let app_data = if cfg!(target_os = "macos") {
                user_home()?.join("Library").join("Application Support")
            } else if cfg!(windows) {
                match paths::non_empty("APPDATA") {
                    Some(dir) => dir,
                    None => user_home()?.join("AppData").join("Roaming"),
                }
            } else {
                match paths::non_empty("XDG_CONFIG_HOME").filter(|dir| dir.is_absolute()) {
                    Some(dir) => dir,
                    None => user_home()?.join(".config"),
                }
            };
            app_data.join("Claude").join("claude_desktop_config.json")
        }
        // User scope, as `claude mcp add --scope user` writes it.
        App::ClaudeCode => match paths::non_empty("CLAUDE_CONFIG_DIR") {
            Some(dir) => dir.join(".claude.json"),
            None => user_home()?.join(".claude.json"),
        },
        App::Codex => match paths::non_empty("CODEX_HOME") {
            Some(dir) => dir.join("config.toml"),
            None => user_home()?.join(".codex").join("config.toml"),
        },
    })
}

// ---- merging ----

/// What a merge does to the file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Change {
    /// There was no file (or an empty one): it gets just our entry.
    Created,
    /// The file had no `ferry` server.
    Added,
    /// The file had a `ferry` server that differed.
    Replaced,
    /// The file had this very entry: nothing to write.
    Unchanged,
}

/// A config file with our entry in it.
#[derive(Debug)]
struct Merged {
    text: String,
    change: Change,
    /// How many other servers the file lists (all kept).
    others: usize,
}

/// Merges `entry` into the file `old` of `app` (`None`: there is no file).
fn merge(app: App, old: Option<&str>, entry: &Entry) -> anyhow::Result<Merged> {
    match app {
        App::ClaudeDesktop | App::ClaudeCode => merge_json(old, &json_entry(app, entry)),
        App::Codex => merge_toml(old, entry),
    }
}

/// The entry as the app writes its own: Claude Code's `claude mcp add` writes `type` and an
/// `env` (empty when there is none); Claude Desktop's documented form has neither.
fn json_entry(app: App, entry: &Entry) -> CstInputValue {
    let string = |s: &str| CstInputValue::String(s.to_owned());
    let mut fields = Vec::new();
    if app == App::ClaudeCode {
        fields.push(("type".to_owned(), string("stdio")));
    }
    fields.push(("command".to_owned(), string(&entry.command)));
    let args = entry.args.iter().map(|arg| string(arg)).collect();
    fields.push(("args".to_owned(), CstInputValue::Array(args)));
    if app == App::ClaudeCode || !entry.env.is_empty() {
        let env = entry.env.iter().map(|(k, v)| (k.clone(), string(v)));
        fields.push(("env".to_owned(), CstInputValue::Object(env.collect())));
    }
    CstInputValue::Object(fields)
}

/// Plain JSON, as the apps read it (`JSON.parse`): no comments, no trailing commas.
fn strict_json() -> ParseOptions {
    ParseOptions {
        allow_comments: false,
        allow_loose_object_property_names: false,
        allow_trailing_commas: false,
        allow_missing_commas: false,
        allow_single_quoted_strings: false,
        allow_hexadecimal_numbers: false,
        allow_unary_plus_numbers: false,
        allow_bare_decimal_point_numbers: false,
        allow_non_finite_numbers: false,
        allow_extended_string_escapes: false,
    }
}

fn to_serde(value: &CstInputValue) -> serde_json::Value {
    use serde_json::Value as J;
    match value {
        CstInputValue::Null => J::Null,
        CstInputValue::Bool(b) => J::Bool(*b),
        CstInputValue::Number(n) => serde_json::from_str(n).unwrap_or(J::Null),
        CstInputValue::String(s) => J::String(s.clone()),
        CstInputValue::Array(items) => J::Array(items.iter().map(to_serde).collect()),
        CstInputValue::Object(fields) => J::Object(
            fields
                .iter()
                .map(|(k, v)| (k.clone(), to_serde(v)))
                .collect(),
        ),
    }
}

/// Sets `mcpServers.ferry` in a JSON file, editing its syntax tree so that every other byte
/// (order, indentation, line endings, a byte-order mark) stays; a new file is 2-space JSON.
fn merge_json(old: Option<&str>, entry: &CstInputValue) -> anyhow::Result<Merged> {
    let (bom, text) = match old {
        Some(text) => match text.strip_prefix('\u{feff}') {
            Some(rest) => ("\u{feff}", rest),
            None => ("", text),
        },
        None => ("", ""),
    };
    let fresh = text.trim().is_empty();
    // Checked as strict JSON first (the syntax tree lets comments through, and this parser's
    // errors name a problem best); then the tree to edit, and the value it holds.
    let source = if fresh { "" } else { text };
    let not_json = |err: jsonc_parser::errors::ParseError| {
        let err = err.to_string();
        let mut chars = err.chars();
        let first: String = chars
            .next()
            .map(char::to_lowercase)
            .into_iter()
            .flatten()
            .collect();
        anyhow!("it is not valid JSON ({first}{})", chars.as_str())
    };
    jsonc_parser::parse_to_ast(source, &Default::default(), &strict_json()).map_err(not_json)?;
    let root = CstRootNode::parse(source, &strict_json()).map_err(not_json)?;
    let before: serde_json::Value = if fresh {
        serde_json::Value::Object(Default::default())
    } else {
        serde_json::from_str(text).map_err(|err| anyhow!("it is not valid JSON ({err})"))?
    };
    let Some(top) = before.as_object() else {
        bail!("it holds JSON that is not an object");
    };
    let servers = match top.get("mcpServers") {
        None => None,
        Some(serde_json::Value::Object(servers)) => Some(servers),
        Some(_) => bail!("its \"mcpServers\" is not an object"),
    };
    let others = servers.map_or(0, |servers| servers.keys().filter(|k| *k != SERVER).count());
    let want = to_serde(entry);
    let change = match servers.and_then(|servers| servers.get(SERVER)) {
        Some(have) if *have == want => Change::Unchanged,
        Some(_) => Change::Replaced,
        None if fresh => Change::Created,
        None => Change::Added,
    };
    if change == Change::Unchanged {
        return Ok(Merged {
            text: old.unwrap_or_default().to_owned(),
            change,
            others,
        });
    }

    let object = root.object_value_or_set();
    match object.object_value("mcpServers") {
        Some(servers) => match servers.get(SERVER) {
            Some(prop) => prop.set_value(entry.clone()),
            None => drop(servers.append(SERVER, entry.clone())),
        },
        None => {
            let servers = vec![(SERVER.to_owned(), entry.clone())];
            drop(object.append("mcpServers", CstInputValue::Object(servers)));
        }
    }
    let mut merged = format!("{bom}{root}");
    if fresh && !merged.ends_with('\n') {
        merged.push('\n');
    }

    // Never write a file that does not parse back to the old one plus our entry.
    let mut expected = before;
    expected["mcpServers"][SERVER] = want;
    let after: serde_json::Value = serde_json::from_str(&merged[bom.len()..])
        .map_err(|err| anyhow!("the merged file would not be valid JSON ({err})"))?;
    if after != expected {
        bail!("the merge would change more than the {SERVER} entry (is a key repeated?)");
    }
    Ok(Merged {
        text: merged,
        change,
        others,
    })
}

/// The entry as a `[mcp_servers.ferry]` table.
fn toml_entry(entry: &Entry) -> Table {
    let mut table = Table::new();
    table.insert("command", toml_edit::value(entry.command.as_str()));
    let args: Array = entry.args.iter().map(String::as_str).collect();
    table.insert("args", toml_edit::value(args));
    if !entry.env.is_empty() {
        let env: InlineTable = entry
            .env
            .iter()
            .map(|(k, v)| (k.as_str(), Value::from(v.as_str())))
            .collect();
        table.insert("env", toml_edit::value(env));
    }
    table
}

/// Whether `item` is exactly our entry (no other keys, the same command, args and env).
fn toml_is_entry(item: &Item, entry: &Entry) -> bool {
    let Some(table) = item.as_table_like() else {
        return false;
    };
    let strings = |item: Option<&Item>| -> Option<Vec<String>> {
        let array = item?.as_array()?;
        array
            .iter()
            .map(|v| v.as_str().map(str::to_owned))
            .collect()
    };
    let env = |item: Option<&Item>| -> Option<Vec<(String, String)>> {
        let Some(item) = item else {
            return Some(Vec::new());
        };
        let table = item.as_table_like()?;
        let mut pairs: Vec<(String, String)> = table
            .iter()
            .map(|(k, v)| v.as_str().map(|v| (k.to_owned(), v.to_owned())))
            .collect::<Option<_>>()?;
        pairs.sort();
        Some(pairs)
    };
    let mut want_env = entry.env.clone();
    want_env.sort();
    let known = ["command", "args", "env"];
    table.iter().all(|(key, _)| known.contains(&key))
        && table.get("command").and_then(Item::as_str) == Some(entry.command.as_str())
        && strings(table.get("args")).as_ref() == Some(&entry.args)
        && env(table.get("env")) == Some(want_env)
}

fn toml_error(text: &str, err: &toml_edit::TomlError) -> String {
    let message = err.message().trim().replace('\n', " ");
    let Some(span) = err.span() else {
        return message;
    };
    let before = &text[..span.start.min(text.len())];
    let line = before.matches('\n').count() + 1;
    let column = before.rsplit('\n').next().unwrap_or("").chars().count() + 1;
    format!("line {line}, column {column}: {message}")
}

/// Sets `mcp_servers.ferry` in a Codex `config.toml` with `toml_edit`, which keeps every
/// comment, blank line and other table as it was.
fn merge_toml(old: Option<&str>, entry: &Entry) -> anyhow::Result<Merged> {
    let text = old.unwrap_or_default();
    let fresh = text.trim().is_empty();
    let source = if fresh { "" } else { text };
    let mut doc: DocumentMut = source
        .parse()
        .map_err(|err| anyhow!("it is not valid TOML ({})", toml_error(text, &err)))?;
    let root = doc.as_table_mut();
    if !root.contains_key("mcp_servers") {
        let mut servers = Table::new();
        servers.set_implicit(true);
        root.insert("mcp_servers", Item::Table(servers));
    }
    let servers = root
        .get_mut("mcp_servers")
        .and_then(Item::as_table_like_mut)
        .ok_or_else(|| anyhow!("its `mcp_servers` is not a table"))?;
    let others = servers.iter().filter(|(k, _)| *k != SERVER).count();
    let change = match servers.get(SERVER) {
        Some(have) if toml_is_entry(have, entry) => Change::Unchanged,
        Some(_) => Change::Replaced,
        None if fresh => Change::Created,
        None => Change::Added,
    };
    if change == Change::Unchanged {
        return Ok(Merged {
            text: text.to_owned(),
            change,
            others,
        });
    }
    let fresh_table = toml_entry(entry);
    match root.get_mut("mcp_servers") {
        Some(Item::Table(servers)) => {
            let item = match servers.get(SERVER) {
                // An entry written inline stays inline, with its comments.
                Some(Item::Value(Value::InlineTable(old))) => {
                    let mut table = fresh_table.into_inline_table();
                    *table.decor_mut() = old.decor().clone();
                    Item::Value(Value::InlineTable(table))
                }
                // A table keeps its place in the file, its header comments and its style.
                Some(Item::Table(old)) => {
                    let mut table = fresh_table;
                    table.set_position(old.position());
                    table.set_dotted(old.is_dotted());
                    *table.decor_mut() = old.decor().clone();
                    Item::Table(table)
                }
                _ => Item::Table(fresh_table),
            };
            servers.insert(SERVER, item);
        }
        // `mcp_servers = { ... }` can hold only inline tables.
        Some(Item::Value(Value::InlineTable(servers))) => {
            let mut table = fresh_table.into_inline_table();
            if let Some(Value::InlineTable(old)) = servers.get(SERVER) {
                *table.decor_mut() = old.decor().clone();
            }
            servers.insert(SERVER, Value::InlineTable(table));
        }
        _ => bail!("its `mcp_servers` is not a table"),
    }
    let merged = doc.to_string();

    // Never write a file that does not parse back with our entry and the other servers in it.
    let check: DocumentMut = merged.parse().map_err(|err| {
        let err = toml_error(&merged, &err);
        anyhow!("the merged file would not be valid TOML ({err})")
    })?;
    let servers = check.get("mcp_servers").and_then(Item::as_table_like);
    let ours = servers.and_then(|servers| servers.get(SERVER));
    let kept = servers.map_or(0, |servers| servers.iter().count().saturating_sub(1));
    if !ours.is_some_and(|item| toml_is_entry(item, entry)) || kept != others {
        bail!("the merged file would not read back as intended");
    }
    Ok(Merged {
        text: merged,
        change,
        others,
    })
}

// ---- the file ----

/// An app's config file as read.
#[derive(Debug)]
struct ConfigFile {
    /// Where to write: the file, or the file a symlink at the path leads to (a dotfiles
    /// manager's link stays a link).
    target: PathBuf,
    /// Its text, if it exists.
    text: Option<String>,
    /// Its permissions, which the new file and the backup keep.
    permissions: Option<fs::Permissions>,
}

fn read_config(path: &Path) -> anyhow::Result<ConfigFile> {
    let target = match fs::canonicalize(path) {
        Ok(real) => real,
        Err(err) if err.kind() == io::ErrorKind::NotFound => path.to_owned(),
        Err(err) => return Err(err).context("cannot resolve it"),
    };
    let bytes = match fs::read(&target) {
        Ok(bytes) => bytes,
        Err(err) if err.kind() == io::ErrorKind::NotFound => {
            return Ok(ConfigFile {
                target,
                text: None,
                permissions: None,
            });
        }
        Err(err) => return Err(err).context("cannot read it"),
    };
    let text = String::from_utf8(bytes).map_err(|_| anyhow!("it is not UTF-8 text"))?;
    let permissions = fs::metadata(&target)
        .context("cannot read it")?
        .permissions();
    Ok(ConfigFile {
        target,
        text: Some(text),
        permissions: Some(permissions),
    })
}

/// Replaces the file with `text` atomically: a temporary file in the same folder, synced, then
/// renamed over it, so the app never reads half a file.
///
/// The first time ferry changes a file that already had content, it keeps that content in
/// `<file>.ferry-backup`, and only then: that copy is the file as the user had it before ferry
/// ever touched it, which a later run must not replace with a version ferry already edited,
/// and a file that ferry creates has nothing to restore. Returns the backup it made, if any.
fn write_config(file: &ConfigFile, text: &str) -> anyhow::Result<Option<PathBuf>> {
    let target = &file.target;
    let dir = match target.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => dir,
        _ => Path::new("."),
    };
    fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    let backup = match (&file.text, &file.permissions) {
        (Some(old), Some(permissions)) if !old.trim().is_empty() => {
            write_backup(target, old, permissions)?
        }
        _ => None,
    };
    let failed = |err: io::Error| anyhow!("cannot write {}: {err}", target.display());
    let mut temp = tempfile::Builder::new()
        .prefix(".ferry-")
        .suffix(".tmp")
        .tempfile_in(dir)
        .map_err(failed)?;
    temp.write_all(text.as_bytes()).map_err(failed)?;
    if let Some(permissions) = &file.permissions {
        temp.as_file()
            .set_permissions(permissions.clone())
            .map_err(failed)?;
    }
    temp.as_file().sync_all().map_err(failed)?;
    // The app may have rewritten its file meanwhile (Claude Code does often): keep its version.
    let now = match fs::read(target) {
        Ok(bytes) => Some(bytes),
        Err(err) if err.kind() == io::ErrorKind::NotFound => None,
        Err(err) => return Err(failed(err)),
    };
    if now.as_deref() != file.text.as_deref().map(str::as_bytes) {
        bail!(
            "{} changed while ferry was merging into it; nothing written, run this again",
            target.display()
        );
    }
    temp.persist(target).map_err(|err| failed(err.error))?;
    #[cfg(unix)]
    fs::File::open(dir)
        .and_then(|dir| dir.sync_all())
        .map_err(failed)?;
    Ok(backup)
}

/// Writes `<target>.ferry-backup` with `old` unless there is one already.
fn write_backup(
    target: &Path,
    old: &str,
    permissions: &fs::Permissions,
) -> anyhow::Result<Option<PathBuf>> {
    let mut name = target.file_name().unwrap_or_default().to_owned();
    name.push(".ferry-backup");
    let backup = target.with_file_name(name);
    let failed = |err: io::Error| anyhow!("cannot write the backup {}: {err}", backup.display());
    let mut out = match fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&backup)
    {
        Ok(out) => out,
        Err(err) if err.kind() == io::ErrorKind::AlreadyExists => return Ok(None),
        Err(err) => return Err(failed(err)),
    };
    // The file may list other servers' tokens: the copy is no more readable than the file.
    out.set_permissions(permissions.clone()).map_err(failed)?;
    out.write_all(old.as_bytes())
        .and_then(|()| out.sync_all())
        .map_err(failed)?;
    Ok(Some(backup))
}

// ---- the command ----

/// What one run is about.
#[derive(Debug)]
struct Request {
    app: App,
    name: AgentName,
    project: ProjectId,
    /// The file to merge into (absolute).
    path: PathBuf,
    /// Where the app keeps its config on this platform, when it could be found.
    default: Option<PathBuf>,
    /// The level a newly seated agent is granted (`--work-only`: it stays a Worker).
    level: Level,
}

/// The agent's row, or `None` when it is not seated. An unknown project is an error.
fn standing(
    home: &Home,
    project: &ProjectId,
    name: &AgentName,
    now: Timestamp,
) -> anyhow::Result<Option<AgentRow>> {
    match ops::access_show(home, project, Some(name), now) {
        Ok(rows) => Ok(crate::common::kept(rows).into_iter().next()),
        Err(AccessError::Ops(OpsError::NotSeated { .. })) => Ok(None),
        Err(err) => Err(err.into()),
    }
}

/// The agent's level, and what to run next.
fn describe_level(row: &AgentRow, project: &ProjectId) -> String {
    let name = &row.name;
    let mut said = format!("it is a {}", row.level);
    if row.level == Level::Worker {
        let _ = write!(
            said,
            " (it reads and hands work in); raise it with `ferry access set {name} member --project {project}`"
        );
    }
    if row.local_key == KeyHere::Locked {
        let _ = write!(
            said,
            "; its key is sealed: unlock it with `ferry key unlock --as {name} --project {project}`"
        );
    }
    said
}

/// ", keeping its other server" (or its 3 other servers), or nothing when there are none.
fn keeping(others: usize) -> String {
    match others {
        0 => String::new(),
        1 => ", keeping its other server".to_owned(),
        n => format!(", keeping its {n} other servers"),
    }
}

/// The agent an app is when `--as` is not given: `<app>-<machine>`, with what a name may not
/// hold made `-` (an agent name is ASCII letters, digits, `.`, `-` and `_`).
fn default_name(app: App, machine: &str) -> anyhow::Result<AgentName> {
    let app = app
        .to_possible_value()
        .map(|value| value.get_name().to_owned())
        .unwrap_or_default();
    let machine: String = machine
        .to_ascii_lowercase()
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '.' || c == '_' || c == '-' {
                c
            } else {
                '-'
            }
        })
        .collect();
    let name = format!("{app}-{}", machine.trim_matches('-'));
    AgentName::parse(&name).with_context(|| format!("cannot name the agent `{name}`: pass --as"))
}

pub fn run(args: ConnectArgs) -> anyhow::Result<ExitCode> {
    let home = paths::home()?;
    let name = match args.name {
        Some(name) => name,
        None => default_name(args.app, &crate::common::machine_name())?,
    };
    let level = if args.work_only {
        Level::Worker
    } else {
        Level::Member
    };
    // Granting the level opens the master key here: a sealed one asks for its passphrase.
    let master = home
        .clone()
        .unsealing_with(crate::passphrase::unsealer(None));
    let text = connect(
        &home,
        &master,
        clock::now(),
        args.app,
        name,
        args.project,
        args.write,
        args.config.as_deref(),
        level,
    )?;
    let mut out = io::stdout().lock();
    write!(out, "{text}").context("writing to stdout")?;
    Ok(ExitCode::SUCCESS)
}

/// What `ferry mcp connect` does and says: with `write`, seats the agent at `level` (a grant
/// signed with the master key `master` opens) and merges the entry into the app's config
/// (`config`, else where the app keeps it here); without, describes it. The dashboard's
/// "Connect an AI app" calls this too ([`PageConnector`]).
#[allow(clippy::too_many_arguments)]
fn connect(
    home: &Home,
    master: &Home,
    now: Timestamp,
    app: App,
    name: AgentName,
    project: ProjectId,
    write: bool,
    config: Option<&Path>,
    level: Level,
) -> anyhow::Result<String> {
    // An unknown project is the first thing to say.
    let seat = standing(home, &project, &name, now)?;
    let ferry = ferry_to_name(std::env::var_os("PATH").as_deref())?;
    let entry = Entry::new(&ferry.path, &name, &project)?;
    let default = match config {
        Some(_) => default_config(app).ok(),
        None => Some(default_config(app)?),
    };
    let path = match config.or(default.as_deref()) {
        Some(path) => {
            std::path::absolute(path).with_context(|| format!("resolving {}", path.display()))?
        }
        None => bail!("cannot find {}'s config: pass --config PATH", app.title()),
    };
    let request = Request {
        app,
        name,
        project,
        path,
        default,
        level,
    };
    let read = read_config(&request.path).and_then(|file| {
        let merged = merge(request.app, file.text.as_deref(), &entry)?;
        Ok((file, merged))
    });
    if write {
        let (file, merged) =
            read.with_context(|| format!("not changing {}", request.path.display()))?;
        let mut out = apply(home, master, now, &request, &file, &merged)?;
        if let Some(warning) = &ferry.warning {
            let _ = writeln!(out, "{warning}");
        }
        Ok(out)
    } else {
        preview(
            &request,
            &entry,
            ferry.warning.as_deref(),
            read.map(|(_, merged)| merged),
            seat,
        )
    }
}

/// `ferry mcp connect` for the dashboard's "Connect an AI app (beta)": the same function,
/// with the app's own config path.
#[derive(Debug)]
pub struct PageConnector;

impl ferry_mcp_dashboard::Connector for PageConnector {
    fn connect(
        &self,
        home: &Home,
        master: &Home,
        request: &ferry_mcp_dashboard::ConnectRequest,
        now: Timestamp,
    ) -> Result<String, String> {
        let app = match request.app {
            ferry_mcp_dashboard::AiApp::ClaudeDesktop => App::ClaudeDesktop,
            ferry_mcp_dashboard::AiApp::ClaudeCode => App::ClaudeCode,
            ferry_mcp_dashboard::AiApp::Codex => App::Codex,
        };
        connect(
            home,
            // The master key the page opened at start, or for this one action with the
            // passphrase its form carried: never a passphrase read here.
            master,
            now,
            app,
            request.name.clone(),
            request.project.clone(),
            request.write,
            None,
            request.level,
        )
        .map_err(|err| format!("{err:#}"))
    }
}

/// Without `--write`: where the file is, the entry, and what `--write` would do. Nothing is
/// written, not even the seat: only `--write` changes anything.
fn preview(
    request: &Request,
    entry: &Entry,
    warning: Option<&str>,
    merged: anyhow::Result<Merged>,
    seat: Option<AgentRow>,
) -> anyhow::Result<String> {
    let Request {
        app,
        name,
        project,
        path,
        default,
        level,
        ..
    } = request;
    let snippet = merge(*app, None, entry)?.text;
    let mut out = String::new();
    let title = app.title();
    let _ = match default {
        Some(default) if default == path => {
            writeln!(out, "{title} reads its MCP servers from {}", path.display())
        }
        Some(default) => writeln!(
            out,
            "{title} reads its MCP servers from {} on this machine; this run uses {}",
            default.display(),
            path.display()
        ),
        None => writeln!(out, "{title}'s config: {}", path.display()),
    };
    let what = match merged {
        Ok(merged) => match merged.change {
            Change::Created => "it does not exist yet: `--write` creates it with this:".to_owned(),
            Change::Added => format!("`--write` adds this to it{}:", keeping(merged.others)),
            Change::Replaced => format!(
                "it has a different `{SERVER}` entry: `--write` replaces that with this{}:",
                keeping(merged.others)
            ),
            Change::Unchanged => "it has this already: `--write` changes nothing:".to_owned(),
        },
        Err(err) => format!("`--write` would refuse it ({err:#}); merge this by hand:"),
    };
    let _ = writeln!(out, "{what}\n\n{}", snippet.trim_end());
    if *app == App::ClaudeCode {
        let _ = writeln!(
            out,
            "\nor let Claude Code write the same entry:\n  {}",
            entry.claude_mcp_add()
        );
    }
    if let Some(warning) = warning {
        let _ = writeln!(out, "\n{warning}");
    }
    let _ = writeln!(out);
    let _ = match &seat {
        None => writeln!(
            out,
            "{name} is not seated in {project} on this machine yet: `--write` seats it (as a {level})"
        ),
        Some(row) if row.local_key == KeyHere::Missing => writeln!(
            out,
            "{name} is seated in {project} with a key that is not on this machine, so no app here can act as it: pick another name"
        ),
        Some(row) => writeln!(
            out,
            "{name} is seated in {project}: {}",
            describe_level(row, project)
        ),
    };
    let _ = writeln!(out, "nothing was written");
    Ok(out)
}

/// With `--write`: seats the agent (the file is known to merge cleanly by then), then writes
/// the file unless it has the entry already.
fn apply(
    home: &Home,
    master: &Home,
    now: Timestamp,
    request: &Request,
    file: &ConfigFile,
    merged: &Merged,
) -> anyhow::Result<String> {
    let Request {
        app, name, project, ..
    } = request;
    let (joined, _key) = crate::common::kept(ops::join(home, project, name, None, now)?);
    // A new seat is a Worker: granting it the level asked for needs the master key here;
    // without it, the level line says what to run.
    let mut not_granted = None;
    if joined == Joined::Seated && request.level != Level::Worker {
        let grant = ops::GrantRequest {
            level: request.level,
            scopes: Vec::new(),
            expires: None,
            key: None,
        };
        if let Err(err) =
            ops::access_set(master, project, name, &grant, now).map(crate::common::kept)
        {
            not_granted = Some(err.to_string());
        }
    }
    let row = standing(home, project, name, now)?
        .ok_or_else(|| anyhow!("{name} is not seated in {project} after joining"))?;
    let mut out = String::new();
    let level = describe_level(&row, project);
    let _ = match joined {
        Joined::Seated => writeln!(out, "seated {name} in {project} on this machine: {level}"),
        Joined::AlreadySeated => writeln!(out, "{name} is already seated in {project}: {level}"),
    };
    if let Some(why) = not_granted {
        let _ = writeln!(
            out,
            "{name} stays a worker: {}",
            crate::display::escape(&why)
        );
    }
    let shown = request.path.display();
    let done = match merged.change {
        Change::Unchanged => {
            let _ = writeln!(out, "{shown} is already configured; nothing changed");
            return Ok(out);
        }
        Change::Created => format!("wrote {shown} with the {SERVER} server"),
        Change::Added => format!(
            "added the {SERVER} server to {shown}{}",
            keeping(merged.others)
        ),
        Change::Replaced => format!(
            "replaced the {SERVER} server in {shown}, which differed{}",
            keeping(merged.others)
        ),
    };
    let backup = write_config(file, &merged.text)?;
    let _ = write!(out, "{done}");
    if let Some(backup) = backup {
        let _ = write!(out, "; the file as it was is in {}", backup.display());
    }
    let _ = writeln!(out, "\nrestart {} to start it", app.title());
    Ok(out)
}

#[cfg(test)]
mod default_name_tests {
    use super::*;

    #[test]
    fn without_as_the_agent_is_named_after_the_app_and_the_machine() {
        let name = default_name(App::ClaudeCode, "Dev Box.local").unwrap();
        assert_eq!(name.as_str(), "claude-code-dev-box.local");
        assert_eq!(default_name(App::Codex, "vm").unwrap().as_str(), "codex-vm");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(env: &[(&str, &str)]) -> Entry {
        Entry {
            command: r"C:\Program Files\ferry\ferry.exe".to_owned(),
            args: ["mcp", "serve", "--as", "fang", "--project", "demo"]
                .map(str::to_owned)
                .to_vec(),
            env: env
                .iter()
                .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
                .collect(),
        }
    }

    fn merged(app: App, old: &str, entry: &Entry) -> Merged {
        merge(app, Some(old), entry).unwrap()
    }

    #[test]
    fn an_inline_codex_entry_is_replaced_inline_with_its_comment() {
        let old =
            "[mcp_servers]\nother = { command = \"x\" }\nferry = { command = \"ferry\" } # mine\n";
        let new = merged(App::Codex, old, &entry(&[]));
        assert_eq!(new.change, Change::Replaced);
        assert_eq!(new.others, 1);
        assert_eq!(
            new.text,
            "[mcp_servers]\nother = { command = \"x\" }\nferry = { command = 'C:\\Program Files\\ferry\\ferry.exe', args = [\"mcp\", \"serve\", \"--as\", \"fang\", \"--project\", \"demo\"] } # mine\n"
        );
        assert_eq!(
            merged(App::Codex, &new.text, &entry(&[])).change,
            Change::Unchanged
        );
    }

    #[test]
    fn an_inline_mcp_servers_table_gets_an_inline_entry() {
        let old = "mcp_servers = { other = { command = \"x\" } }\n";
        let new = merged(App::Codex, old, &entry(&[("FERRY_HOME", "/h")]));
        assert_eq!(new.change, Change::Added);
        let (other, ours) = new.text.split_once(", ferry = {").unwrap();
        assert_eq!(
            other.trim_end(),
            "mcp_servers = { other = { command = \"x\" }"
        );
        assert!(ours.ends_with("} }\n"), "{}", new.text);
        let again = merged(App::Codex, &new.text, &entry(&[("FERRY_HOME", "/h")]));
        assert_eq!(again.change, Change::Unchanged);
    }

    #[test]
    fn a_codex_entry_with_keys_of_its_own_or_another_env_counts_as_different() {
        let ours = merged(App::Codex, "", &entry(&[])).text;
        let with_timeout = format!("{ours}startup_timeout_sec = 30\n");
        let change = merged(App::Codex, &with_timeout, &entry(&[])).change;
        assert_eq!(change, Change::Replaced);
        let change = merged(App::Codex, &ours, &entry(&[("FERRY_HOME", "/h")])).change;
        assert_eq!(change, Change::Replaced);
    }

    #[test]
    fn a_json_file_keeps_its_byte_order_mark_and_crlf_line_ends() {
        let old = "\u{feff}{\r\n  \"a\": 1\r\n}\r\n";
        let new = merged(App::ClaudeDesktop, old, &entry(&[]));
        assert_eq!(new.change, Change::Added);
        assert!(
            new.text.starts_with("\u{feff}{\r\n  \"a\": 1,\r\n"),
            "{:?}",
            new.text
        );
        assert!(
            !new.text.replace("\r\n", "").contains('\n'),
            "{:?}",
            new.text
        );
        assert!(
            new.text
                .contains(r#""command": "C:\\Program Files\\ferry\\ferry.exe""#)
        );
        let again = merged(App::ClaudeDesktop, &new.text, &entry(&[]));
        assert_eq!(again.change, Change::Unchanged);
        assert_eq!(again.text, new.text);
    }

    #[test]
    fn an_empty_file_is_treated_as_no_file() {
        for app in [App::ClaudeDesktop, App::ClaudeCode, App::Codex] {
            let new = merged(app, " \n", &entry(&[]));
            assert_eq!(new.change, Change::Created);
            assert_eq!(new.text, merge(app, None, &entry(&[])).unwrap().text);
        }
    }

    #[test]
    fn claude_code_and_claude_desktop_entries_differ_as_the_apps_write_them() {
        let code = to_serde(&json_entry(App::ClaudeCode, &entry(&[])));
        assert_eq!(code["type"], "stdio");
        assert_eq!(code["env"], serde_json::json!({}));
        let desktop = to_serde(&json_entry(App::ClaudeDesktop, &entry(&[])));
        assert!(desktop.get("type").is_none() && desktop.get("env").is_none());
        let desktop = to_serde(&json_entry(
            App::ClaudeDesktop,
            &entry(&[("FERRY_HOME", "/h")]),
        ));
        assert_eq!(desktop["env"], serde_json::json!({"FERRY_HOME": "/h"}));
    }

    #[test]
    fn the_claude_mcp_add_line_quotes_what_a_shell_would_split() {
        let line = entry(&[("FERRY_HOME", "/home/me/ferry state")]).claude_mcp_add();
        assert_eq!(
            line,
            r"claude mcp add --scope user ferry -e 'FERRY_HOME=/home/me/ferry state' -- 'C:\Program Files\ferry\ferry.exe' mcp serve --as fang --project demo"
        );
        assert_eq!(shell_word("it's"), r"'it'\''s'");
    }
}

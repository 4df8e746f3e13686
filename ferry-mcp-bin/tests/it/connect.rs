//! `ferry mcp connect`, run as the real binary on a temporary FERRY_HOME, with `--config`
//! pointing into a temporary folder (and HOME there too, so no real config can be touched).

use std::fs;
use std::path::{Path, PathBuf};

use assert_cmd::Command;

/// A project `demo` in a temporary folder: the state folder, a home folder for the apps'
/// configs, and the paths shown in snapshots as placeholders.
struct Setup {
    dir: tempfile::TempDir,
    home: PathBuf,
}

impl Setup {
    fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        let setup = Setup {
            home: dir.path().join("state"),
            dir,
        };
        fs::create_dir_all(setup.user()).unwrap();
        let channel = setup.path("channel");
        setup.ok(&[
            "init",
            "--project",
            "demo",
            "--no-seal",
            "--channel",
            channel.to_str().unwrap(),
        ]);
        setup
    }

    /// `path` inside the temporary folder.
    fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    /// The HOME the binary sees.
    fn user(&self) -> PathBuf {
        self.path("user")
    }

    /// The binary, with a PATH that holds no `ferry` (so the entry names this one).
    fn ferry(&self) -> Command {
        self.ferry_with_path(&self.path("no-ferry-here"))
    }

    fn ferry_with_path(&self, path: &Path) -> Command {
        let mut cmd = Command::cargo_bin("ferry").unwrap();
        cmd.env("FERRY_HOME", &self.home)
            .env("HOME", self.user())
            .env("PATH", path);
        for var in [
            "XDG_STATE_HOME",
            "XDG_RUNTIME_DIR",
            "XDG_CONFIG_HOME",
            "CODEX_HOME",
            "CLAUDE_CONFIG_DIR",
            "APPDATA",
            "USERPROFILE",
        ] {
            cmd.env_remove(var);
        }
        cmd
    }

    /// Runs `ferry args` and returns (success, stdout, stderr).
    fn run(&self, args: &[&str]) -> (bool, String, String) {
        let out = self.ferry().args(args).output().unwrap();
        (
            out.status.success(),
            String::from_utf8(out.stdout).unwrap(),
            String::from_utf8(out.stderr).unwrap(),
        )
    }

    fn ok(&self, args: &[&str]) -> String {
        let (ok, stdout, stderr) = self.run(args);
        assert!(ok, "ferry {args:?} failed: {stderr}");
        stdout
    }

    /// Runs a command that must fail and returns its one-line error.
    fn err(&self, args: &[&str]) -> String {
        let (ok, _, stderr) = self.run(args);
        assert!(!ok, "ferry {args:?} succeeded");
        assert_eq!(stderr.lines().count(), 1, "one line: {stderr}");
        stderr.trim_end().to_owned()
    }

    /// `text` with the temporary folder as `[TMP]` and this binary as `[FERRY]`.
    fn redact(&self, text: &str) -> String {
        let ferry = Path::new(env!("CARGO_BIN_EXE_ferry"));
        let ferry = fs::canonicalize(ferry).unwrap();
        let tmp = fs::canonicalize(self.dir.path()).unwrap();
        text.replace(ferry.to_str().unwrap(), "[FERRY]")
            .replace(env!("CARGO_BIN_EXE_ferry"), "[FERRY]")
            .replace(tmp.to_str().unwrap(), "[TMP]")
            .replace(self.dir.path().to_str().unwrap(), "[TMP]")
    }
}

/// `ferry mcp connect --app APP --as NAME --project demo --config CONFIG [--write]`.
fn connect<'a>(app: &'a str, name: &'a str, config: &'a Path, write: bool) -> Vec<&'a str> {
    let mut args = vec![
        "mcp",
        "connect",
        "--app",
        app,
        "--as",
        name,
        "--project",
        "demo",
    ];
    args.extend(["--config", config.to_str().unwrap()]);
    if write {
        args.push("--write");
    }
    args
}

/// `text`, marked when it does not end in a newline (so that the transcript goes on on a line
/// of its own).
fn with_newline(text: &str) -> String {
    if text.ends_with('\n') {
        text.to_owned()
    } else {
        format!("{text}\n(no newline at the end)\n")
    }
}

/// Runs `connect --write` twice on `config` (holding `original`) and returns both runs'
/// output and the file after each, as one transcript; asserts that the second run changed
/// nothing and that the backup holds the original.
fn write_twice(setup: &Setup, app: &str, config: &Path, original: &str) -> String {
    fs::write(config, original).unwrap();
    let name = config.file_name().unwrap().to_str().unwrap();
    let mut transcript = format!("--- {name} before\n{}", with_newline(original));
    let mut files = Vec::new();
    for run in 1..=2 {
        let said = setup.ok(&connect(app, "fang", config, true));
        let file = fs::read_to_string(config).unwrap();
        transcript.push_str(&format!(
            "--- ferry mcp connect --write, run {run}\n{said}--- {name} after run {run}\n{}",
            with_newline(&file)
        ));
        files.push(file);
    }
    assert_eq!(files[0], files[1], "the second run changed the file");
    let mut backup = config.as_os_str().to_owned();
    backup.push(".ferry-backup");
    assert_eq!(fs::read_to_string(backup).unwrap(), original);
    setup.redact(&transcript)
}

#[test]
fn connect_write_twice_on_a_codex_config_with_another_server_keeps_it_and_changes_nothing_the_second_time()
 {
    let setup = Setup::new();
    let config = setup.path("config.toml");
    let original = r#"# Codex, configured by hand
model = "o3"   # the default model

[mcp_servers.docs]
command = "npx"
args = ["-y", "docs-mcp"]   # keep this one
env = { DOCS_TOKEN = "not-ferry's" }

[profiles.fast]
model = "o4-mini"
"#;
    let transcript = write_twice(&setup, "codex", &config, original);
    insta::assert_snapshot!(transcript);
}

#[test]
fn connect_write_twice_on_a_claude_desktop_config_with_another_server_keeps_it_and_changes_nothing_the_second_time()
 {
    let setup = Setup::new();
    let config = setup.path("claude_desktop_config.json");
    let original = r#"{
    "globalShortcut": "Ctrl+Space",
    "mcpServers": {
        "filesystem": {
            "command": "npx",
            "args": [
                "-y",
                "@modelcontextprotocol/server-filesystem",
                "/home/me/notes"
            ]
        }
    }
}
"#;
    let transcript = write_twice(&setup, "claude-desktop", &config, original);
    insta::assert_snapshot!(transcript);
}

#[test]
fn connect_write_twice_on_a_claude_code_config_with_other_top_level_keys_keeps_them_and_changes_nothing_the_second_time()
 {
    let setup = Setup::new();
    let config = setup.path(".claude.json");
    let original = r#"{
  "numStartups": 12,
  "theme": "dark",
  "projects": {
    "/home/me/acme": {
      "allowedTools": [],
      "mcpServers": {
        "local-only": {"type": "stdio", "command": "acme-mcp", "args": [], "env": {}}
      }
    }
  },
  "hasCompletedOnboarding": true
}
"#;
    let transcript = write_twice(&setup, "claude-code", &config, original);
    insta::assert_snapshot!(transcript);
}

#[test]
fn connect_seats_an_unseated_agent_with_work_only_and_says_it_is_a_worker() {
    let setup = Setup::new();
    let config = setup.path("config.toml");
    let err = setup.err(&["access", "show", "fang", "--project", "demo"]);
    assert_eq!(err, "ferry: fang is not seated in project demo");

    let mut args = connect("codex", "Fang", &config, true);
    args.push("--work-only");
    let said = setup.ok(&args);
    insta::assert_snapshot!(setup.redact(&said), @r"
    seated fang in demo on this machine: it is a worker (it reads and hands work in); raise it with `ferry access set fang member --project demo`
    wrote [TMP]/config.toml with the ferry server
    restart Codex to start it
    warning: [FERRY] is in a cargo build folder: `cargo clean` or moving the checkout breaks this entry; install ferry (`cargo install --path ferry-mcp-bin` in the checkout) and run this again
    ");
    let show = setup.ok(&["access", "show", "fang", "--project", "demo"]);
    let row: Vec<&str> = show.lines().nth(1).unwrap().split_whitespace().collect();
    assert_eq!(row[..3], ["fang", "worker", "seated"], "{show}");
    assert_eq!(row[4], "ready", "the key is on this machine: {show}");

    // Raised, it says so, and no longer tells how to raise it.
    setup.ok(&["access", "set", "fang", "member", "--project", "demo"]);
    let said = setup.ok(&connect("codex", "fang", &config, true));
    insta::assert_snapshot!(setup.redact(&said), @r"
    fang is already seated in demo: it is a member
    [TMP]/config.toml is already configured; nothing changed
    warning: [FERRY] is in a cargo build folder: `cargo clean` or moving the checkout breaks this entry; install ferry (`cargo install --path ferry-mcp-bin` in the checkout) and run this again
    ");
}

#[test]
fn connect_prints_the_config_without_writing_anything() {
    let setup = Setup::new();
    let state_before = listing(&setup.home);
    let existing = setup.path("claude_desktop_config.json");
    let original = "{\n  \"mcpServers\": {\n    \"other\": {\"command\": \"x\"}\n  }\n}\n";
    fs::write(&existing, original).unwrap();

    let mut transcript = String::new();
    for (app, config) in [
        ("codex", setup.path("config.toml")),
        ("claude-desktop", existing.clone()),
        ("claude-code", setup.path(".claude.json")),
    ] {
        let said = setup.ok(&connect(app, "fang", &config, false));
        transcript.push_str(&format!("--- ferry mcp connect --app {app}\n{said}"));
    }
    insta::assert_snapshot!(setup.redact(&transcript));

    assert!(!setup.path("config.toml").exists());
    assert!(!setup.path(".claude.json").exists());
    assert_eq!(fs::read_to_string(&existing).unwrap(), original);
    assert_eq!(
        listing(&setup.home),
        state_before,
        "the state folder changed"
    );
    assert_eq!(
        listing(setup.dir.path())
            .iter()
            .filter(|path| path.ends_with(".ferry-backup"))
            .count(),
        0
    );
    let err = setup.err(&["access", "show", "fang", "--project", "demo"]);
    assert_eq!(err, "ferry: fang is not seated in project demo");
}

/// Every file under `dir`, relative, sorted.
fn listing(dir: &Path) -> Vec<String> {
    let mut found = Vec::new();
    let mut stack = vec![dir.to_owned()];
    while let Some(next) = stack.pop() {
        for item in fs::read_dir(&next).unwrap() {
            let path = item.unwrap().path();
            if path.is_dir() {
                stack.push(path);
            } else {
                found.push(path.strip_prefix(dir).unwrap().display().to_string());
            }
        }
    }
    found.sort();
    found
}

/// Every run of at least 32 hex digits in `text`.
fn hex_runs(text: &str) -> Vec<String> {
    let mut runs = Vec::new();
    let mut run = String::new();
    for c in text.chars().chain([' ']) {
        if c.is_ascii_hexdigit() {
            run.push(c);
        } else {
            if run.len() >= 32 {
                runs.push(run.clone());
            }
            run.clear();
        }
    }
    runs
}

#[test]
fn connect_puts_no_secret_in_the_config() {
    let setup = Setup::new();
    let configs = [
        ("codex", setup.path("config.toml")),
        ("claude-desktop", setup.path("claude_desktop_config.json")),
        ("claude-code", setup.path(".claude.json")),
    ];
    for (app, config) in &configs {
        setup.ok(&connect(app, "fang", config, true));
    }
    // Every key file on this machine (the master's and the agent's), whole and by its hex runs.
    let keys: Vec<String> = listing(&setup.home)
        .iter()
        .filter(|path| path.ends_with(".key"))
        .map(|path| fs::read_to_string(setup.home.join(path)).unwrap())
        .collect();
    assert_eq!(keys.len(), 2, "the master's key and fang's");
    let secrets: Vec<String> = keys.iter().flat_map(|key| hex_runs(key)).collect();
    assert!(!secrets.is_empty());
    for (app, config) in &configs {
        let text = setup.redact(&fs::read_to_string(config).unwrap());
        for key in &keys {
            assert!(!text.contains(key.trim()), "{app}: a key file is in {text}");
        }
        for secret in &secrets {
            assert!(!text.contains(secret), "{app}: {secret} is in {text}");
        }
        assert!(hex_runs(&text).is_empty(), "{app}: {text}");
        let lower = text.to_lowercase();
        for word in ["secret", "token", "passphrase", "key"] {
            assert!(!lower.contains(word), "{app}: {word} in {text}");
        }
    }
}

#[test]
fn connect_to_an_unknown_project_is_a_one_line_error_naming_ferry_init() {
    let setup = Setup::new();
    let config = setup.path("config.toml");
    for write in [false, true] {
        let mut args = connect("codex", "fang", &config, write);
        args[7] = "nope";
        let err = setup.err(&args);
        assert_eq!(
            err,
            "ferry: unknown project nope (run `ferry init --project nope`)"
        );
    }
    assert!(!config.exists());
}

#[test]
fn connect_refuses_a_config_that_is_not_valid_json_or_toml_and_leaves_it_untouched() {
    let setup = Setup::new();
    let cases = [
        (
            "codex",
            "config.toml",
            "[mcp_servers.docs\ncommand = \"npx\"\n",
        ),
        (
            "codex",
            "servers-array.toml",
            "[[mcp_servers]]\ncommand = \"npx\"\n",
        ),
        (
            "claude-desktop",
            "trailing-comma.json",
            "{\n  \"mcpServers\": {},\n}\n",
        ),
        (
            "claude-desktop",
            "comment.json",
            "{\n  // mine\n  \"mcpServers\": {}\n}\n",
        ),
        ("claude-code", "array.json", "[]\n"),
        (
            "claude-code",
            "servers-string.json",
            "{\"mcpServers\": \"none\"}\n",
        ),
    ];
    let mut errors = String::new();
    for (app, name, text) in cases {
        let config = setup.path(name);
        fs::write(&config, text).unwrap();
        let err = setup.err(&connect(app, "fang", &config, true));
        errors.push_str(&format!("{app}: {err}\n"));
        assert_eq!(fs::read_to_string(&config).unwrap(), text, "{name} changed");
    }
    insta::assert_snapshot!(setup.redact(&errors));
    let files = listing(setup.dir.path());
    assert!(
        files.iter().all(|file| !file.contains("ferry-")),
        "a backup or a temporary file is left: {files:?}"
    );
    // Refused before seating: nothing changed on this machine either.
    let err = setup.err(&["access", "show", "fang", "--project", "demo"]);
    assert_eq!(err, "ferry: fang is not seated in project demo");
}

#[test]
fn connect_replaces_a_different_codex_entry_in_its_place_and_says_so() {
    let setup = Setup::new();
    let config = setup.path("config.toml");
    let original = r#"[mcp_servers.other]
command = "x"

# ferry, as it was set up by hand
[mcp_servers.ferry]
command = "ferry"
args = ["mcp", "serve", "--as", "old-name", "--project", "demo"]

[profiles.fast]
model = "o4-mini"
"#;
    let transcript = write_twice(&setup, "codex", &config, original);
    insta::assert_snapshot!(transcript);
}

#[test]
fn connect_replaces_a_different_claude_desktop_entry_in_a_one_line_file_and_says_so() {
    let setup = Setup::new();
    let config = setup.path("claude_desktop_config.json");
    let original = r#"{"mcpServers":{"ferry":{"command":"ferry","args":[]},"b":{"command":"b"}}}"#;
    let transcript = write_twice(&setup, "claude-desktop", &config, original);
    insta::assert_snapshot!(transcript);
}

/// A config that is a symlink (as dotfiles managers make them) stays one: the file it leads
/// to is changed, and it keeps its mode, as does its backup.
#[cfg(unix)]
#[test]
fn connect_writes_through_a_symlink_and_keeps_the_file_mode() {
    use std::os::unix::fs::PermissionsExt;

    let setup = Setup::new();
    let dotfiles = setup.path("dotfiles");
    fs::create_dir_all(&dotfiles).unwrap();
    let real = dotfiles.join("config.toml");
    fs::write(&real, "model = \"o3\"\n").unwrap();
    fs::set_permissions(&real, fs::Permissions::from_mode(0o600)).unwrap();
    let link = setup.path("config.toml");
    std::os::unix::fs::symlink(&real, &link).unwrap();

    setup.ok(&connect("codex", "fang", &link, true));
    assert!(
        fs::symlink_metadata(&link)
            .unwrap()
            .file_type()
            .is_symlink()
    );
    let text = fs::read_to_string(&real).unwrap();
    assert!(text.starts_with("model = \"o3\"\n"), "{text}");
    assert!(text.contains("[mcp_servers.ferry]"), "{text}");
    let mode = |path: &Path| fs::metadata(path).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode(&real), 0o600);
    let backup = dotfiles.join("config.toml.ferry-backup");
    assert_eq!(fs::read_to_string(&backup).unwrap(), "model = \"o3\"\n");
    assert_eq!(mode(&backup), 0o600);
    assert_eq!(listing(&dotfiles).len(), 2, "no temporary file left");
}

#[test]
fn connect_creates_a_missing_config_with_its_folder_as_two_space_json_and_no_backup() {
    let setup = Setup::new();
    let config = setup.path("Claude/claude_desktop_config.json");
    let said = setup.ok(&connect("claude-desktop", "fang", &config, true));
    let file = fs::read_to_string(&config).unwrap();
    insta::assert_snapshot!(setup.redact(&format!("{said}---\n{file}")));
    assert!(
        !setup
            .path("Claude/claude_desktop_config.json.ferry-backup")
            .exists()
    );
    assert_eq!(
        listing(&setup.path("Claude")).len(),
        1,
        "no temporary file left"
    );
}

#[test]
fn connect_finds_the_codex_config_in_codex_home() {
    let setup = Setup::new();
    let codex_home = setup.path("codex-home");
    let out = setup
        .ferry()
        .env("CODEX_HOME", &codex_home)
        .args(["mcp", "connect", "--app", "codex", "--as", "fang"])
        .args(["--project", "demo"])
        .output()
        .unwrap();
    assert!(out.status.success());
    let said = String::from_utf8(out.stdout).unwrap();
    let first = setup.redact(said.lines().next().unwrap());
    insta::assert_snapshot!(first, @"Codex reads its MCP servers from [TMP]/codex-home/config.toml");
    assert!(!codex_home.exists());
}

#[cfg(target_os = "linux")]
#[test]
fn connect_names_each_apps_own_config_file_on_linux() {
    let setup = Setup::new();
    let mut lines = String::new();
    for (app, xdg) in [
        ("claude-desktop", None),
        ("claude-desktop", Some("xdg-config")),
        ("claude-code", None),
        ("codex", None),
    ] {
        let mut cmd = setup.ferry();
        if let Some(xdg) = xdg {
            cmd.env("XDG_CONFIG_HOME", setup.path(xdg));
        }
        let out = cmd
            .args([
                "mcp",
                "connect",
                "--app",
                app,
                "--as",
                "fang",
                "--project",
                "demo",
            ])
            .output()
            .unwrap();
        assert!(out.status.success());
        let said = String::from_utf8(out.stdout).unwrap();
        lines.push_str(said.lines().next().unwrap());
        lines.push('\n');
    }
    insta::assert_snapshot!(setup.redact(&lines), @r"
    Claude Desktop reads its MCP servers from [TMP]/user/.config/Claude/claude_desktop_config.json
    Claude Desktop reads its MCP servers from [TMP]/xdg-config/Claude/claude_desktop_config.json
    Claude Code reads its MCP servers from [TMP]/user/.claude.json
    Codex reads its MCP servers from [TMP]/user/.codex/config.toml
    ");
    assert_eq!(listing(&setup.user()), Vec::<String>::new());
}

#[test]
fn connect_adds_no_env_when_ferry_home_is_not_set() {
    let setup = Setup::new();
    let config = setup.path("config.toml");
    let out = setup
        .ferry()
        .env_remove("FERRY_HOME")
        .env("XDG_STATE_HOME", setup.path("xdg-state"))
        .args(["init", "--project", "demo", "--no-seal"])
        .output()
        .unwrap();
    assert!(out.status.success());
    let out = setup
        .ferry()
        .env_remove("FERRY_HOME")
        .env("XDG_STATE_HOME", setup.path("xdg-state"))
        .args(connect("codex", "fang", &config, true))
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let file = setup.redact(&fs::read_to_string(&config).unwrap());
    insta::assert_snapshot!(file, @r#"
    [mcp_servers.ferry]
    command = "[FERRY]"
    args = ["mcp", "serve", "--as", "fang", "--project", "demo"]
    "#);
}

#[test]
fn connect_write_seats_a_new_agent_as_a_member_by_default() {
    let setup = Setup::new();
    let config = setup.path("config.toml");
    let said = setup.ok(&connect("codex", "fang", &config, true));
    assert!(
        said.starts_with("seated fang in demo on this machine: it is a member"),
        "{said}"
    );
    let show = setup.ok(&["access", "show", "fang", "--project", "demo"]);
    let row: Vec<&str> = show.lines().nth(1).unwrap().split_whitespace().collect();
    assert_eq!(row[..3], ["fang", "member", "seated"], "{show}");
}

#[test]
fn connect_names_the_ferry_installed_on_path_by_its_real_path_and_warns_of_nothing() {
    use std::os::unix::fs::PermissionsExt as _;
    let setup = Setup::new();
    // An installed ferry, reached on PATH through a link (as a version manager's shims are).
    let installed = setup.path("opt/ferry-0.1.0/ferry");
    fs::create_dir_all(installed.parent().unwrap()).unwrap();
    fs::write(&installed, "#!/bin/sh\n").unwrap();
    fs::set_permissions(&installed, fs::Permissions::from_mode(0o755)).unwrap();
    let bin = setup.path("bin");
    fs::create_dir_all(&bin).unwrap();
    std::os::unix::fs::symlink(&installed, bin.join("ferry")).unwrap();
    // A `ferry` that is not executable is passed over.
    let first = setup.path("first");
    fs::create_dir_all(&first).unwrap();
    fs::write(first.join("ferry"), "not a program").unwrap();
    let path = std::env::join_paths([first, setup.path("empty"), bin]).unwrap();
    let real = fs::canonicalize(&installed).unwrap();
    let config = setup.path("config.toml");
    for write in [false, true] {
        let out = setup
            .ferry_with_path(Path::new(&path))
            .args(connect("codex", "fang", &config, write))
            .output()
            .unwrap();
        assert!(out.status.success(), "{out:?}");
        let said = String::from_utf8(out.stdout).unwrap();
        assert!(!said.contains("warning"), "{said}");
        if !write {
            assert!(
                said.contains(&format!("command = \"{}\"", real.display())),
                "{said}"
            );
        }
    }
    let file = fs::read_to_string(&config).unwrap();
    assert!(
        file.contains(&format!("command = \"{}\"", real.display())),
        "{file}"
    );
}

#[test]
fn connect_without_a_ferry_on_path_names_this_binary_and_warns_that_it_lives_in_a_build_folder() {
    let setup = Setup::new();
    let this = fs::canonicalize(env!("CARGO_BIN_EXE_ferry")).unwrap();
    let config = setup.path("config.toml");
    let warning = format!(
        "warning: {} is in a cargo build folder: `cargo clean` or moving the checkout breaks this entry; install ferry (`cargo install --path ferry-mcp-bin` in the checkout) and run this again",
        this.display()
    );
    for write in [false, true] {
        let said = setup.ok(&connect("codex", "fang", &config, write));
        assert!(said.contains(&warning), "{said}");
    }
    let file = fs::read_to_string(&config).unwrap();
    assert!(
        file.contains(&format!("command = \"{}\"", this.display())),
        "{file}"
    );
}

//! `ferry order ...` and `ferry work hand-in`, run as the real binary on a temporary FERRY_HOME:
//! an order from issue to review, every bad input a one-line error, `--json` that parses, and
//! how `ferry order show` says a heavy order would run on this machine (snifrig).

use std::path::{Path, PathBuf};

use serde_json::Value;

use super::admin::{ferry, join_args, project, run, run_err, run_ok, set_args};

/// Project `demo` with a Worker `walt`, Members `alice` and `bob` and an Orchestrator `olga`.
fn fleet(dir: &tempfile::TempDir) -> PathBuf {
    let home = project(dir);
    for name in ["walt", "alice", "bob", "olga"] {
        run_ok(&home, &join_args(name));
    }
    for (name, level) in [
        ("alice", "member"),
        ("bob", "member"),
        ("olga", "orchestrator"),
    ] {
        run_ok(&home, &set_args(name, level));
    }
    home
}

/// `ferry ARGS --project demo [--as AGENT] --json`, parsed.
fn json(home: &Path, agent: Option<&str>, args: &[&str]) -> Value {
    let mut all: Vec<&str> = args.to_vec();
    all.extend(["--project", "demo", "--json"]);
    if let Some(agent) = agent {
        all.extend(["--as", agent]);
    }
    let out = run_ok(home, &all);
    assert_eq!(out.lines().count(), 1, "one line of JSON: {out}");
    serde_json::from_str(&out).unwrap_or_else(|err| panic!("{args:?}: {err}: {out}"))
}

/// `ferry ARGS --project demo [--as AGENT]`, which must fail: its one-line error.
fn error(home: &Path, agent: Option<&str>, args: &[&str]) -> String {
    let mut all: Vec<&str> = args.to_vec();
    all.extend(["--project", "demo"]);
    if let Some(agent) = agent {
        all.extend(["--as", agent]);
    }
    run_err(home, &all)
}

fn issue(home: &Path, args: &[&str]) -> String {
    let mut all = vec!["order", "issue"];
    all.extend(args);
    let issued = json(home, None, &all);
    issued["id"].as_str().unwrap().to_owned()
}

fn ids(list: &Value) -> Vec<&str> {
    list["orders"]
        .as_array()
        .unwrap()
        .iter()
        .map(|row| row["id"].as_str().unwrap())
        .collect()
}

#[test]
fn an_order_goes_from_issue_to_review_through_the_commands() {
    let dir = tempfile::tempdir().unwrap();
    let home = fleet(&dir);
    let text = run_ok(
        &home,
        &[
            "order",
            "issue",
            "Write the parser",
            "--review",
            "--project",
            "demo",
        ],
    );
    let id = text
        .trim_end()
        .strip_prefix("issued order ")
        .unwrap_or_else(|| panic!("{text}"))
        .to_owned();
    let other = issue(&home, &["Update the docs"]);

    let board = json(&home, None, &["order", "list"]);
    assert_eq!(ids(&board), [id.as_str(), other.as_str()]);
    assert_eq!(board["reset"], false);
    let cursor = board["next"].as_str().unwrap().to_owned();
    let listed = run_ok(&home, &["order", "list", "--project", "demo"]);
    assert!(listed.starts_with("ID  "), "{listed}");
    assert!(listed.contains("Write the parser"), "{listed}");

    let shown = json(&home, Some("alice"), &["order", "show", &id]);
    assert_eq!(shown["row"]["state"], "open");
    assert_eq!(shown["review"], true);
    assert_eq!(shown["run_via"], "direct");

    let claimed = json(&home, Some("alice"), &["order", "claim", &id]);
    assert_eq!(claimed["outcome"], "claimed");
    json(
        &home,
        Some("alice"),
        &["order", "progress", &id, "lexer done"],
    );
    let handed = json(
        &home,
        Some("walt"),
        &[
            "work",
            "hand-in",
            "--order",
            &id,
            "--ref",
            "walt/grammar",
            "--summary",
            "the grammar",
        ],
    );
    let handin = handed["handin"].as_str().unwrap().to_owned();
    assert!(handin.starts_with("walt-"), "{handed}");
    let submitted = json(
        &home,
        Some("alice"),
        &[
            "order",
            "submit",
            &id,
            "--handin",
            &handin,
            "--summary",
            "parser and grammar",
        ],
    );
    assert_eq!(submitted["state"], "submitted");
    let reviewed = json(&home, Some("olga"), &["order", "review", &id, "accept"]);
    assert_eq!(reviewed["state"], "accepted");

    let news = json(&home, None, &["order", "list", "--since", &cursor]);
    assert_eq!(ids(&news), [id.as_str()]);
    assert_eq!(news["orders"][0]["state"], "accepted");

    let detail = json(&home, None, &["order", "show", &id]);
    assert_eq!(detail["revision"], 1);
    assert_eq!(detail["submission"]["handin"], handin.as_str());
    assert_eq!(detail["review_verdict"]["by"], "olga");
    assert_eq!(detail["progress_lines"], 1);

    let cancelled = json(
        &home,
        None,
        &["order", "cancel", &other, "--note", "not needed"],
    );
    assert_eq!(cancelled["state"], "cancelled");
    let all = json(&home, None, &["order", "list", "--all"]);
    assert_eq!(ids(&all), [id.as_str(), other.as_str()]);
    assert!(ids(&json(&home, None, &["order", "list"])).is_empty());
}

#[test]
fn every_bad_order_command_is_a_one_line_error() {
    let dir = tempfile::tempdir().unwrap();
    let home = fleet(&dir);
    let id = issue(&home, &["Write the parser", "--review"]);

    assert_eq!(
        error(&home, None, &["order", "show", "m99"]),
        "ferry: unknown order m99"
    );
    assert_eq!(
        error(&home, Some("alice"), &["order", "claim", "nonsense id"]),
        "ferry: \"nonsense id\" is not an id (expected like `m12` or `alice-3`)"
    );
    assert_eq!(
        error(&home, Some("walt"), &["order", "claim", &id]),
        "ferry: claim needs member; walt is worker"
    );
    json(&home, Some("alice"), &["order", "claim", &id]);
    assert_eq!(
        error(&home, Some("bob"), &["order", "claim", &id]),
        format!("ferry: order {id} is claimed; claim needs it open or offered")
    );
    assert_eq!(
        error(
            &home,
            Some("bob"),
            &["order", "submit", &id, "--ref", "main", "--summary", "mine"]
        ),
        format!("ferry: order {id} is held by alice, not bob")
    );
    let long_line = "x".repeat(2_049);
    assert_eq!(
        error(
            &home,
            Some("alice"),
            &["order", "progress", &id, &long_line]
        ),
        "ferry: the progress line is 2049 bytes, the limit is 2048"
    );
    let long_summary = "y".repeat(501);
    assert_eq!(
        error(
            &home,
            Some("alice"),
            &[
                "order",
                "submit",
                &id,
                "--ref",
                "main",
                "--summary",
                &long_summary
            ]
        ),
        "ferry: the summary is 501 characters, the limit is 500"
    );
    json(
        &home,
        Some("alice"),
        &["order", "submit", &id, "--ref", "main", "--summary", "done"],
    );
    assert_eq!(
        error(&home, Some("bob"), &["order", "review", &id, "accept"]),
        "ferry: review needs orchestrator; bob is member"
    );
    assert_eq!(
        error(&home, None, &["order", "review", &id, "changes"]),
        "ferry: the notes (asking for changes needs them) is empty"
    );
    assert_eq!(
        error(&home, Some("walt"), &["order", "issue", "Mine"]),
        "ferry: issue orders needs orchestrator; walt is worker"
    );
    assert_eq!(
        error(&home, Some("ghost"), &["order", "list"]),
        "ferry: ghost is not seated: no key for it on this machine (run `ferry channel join --as ghost --project demo`)"
    );
    // A bad argument is one line too (and exit 2).
    let (ok, _, stderr) = run(&home, &["order", "submit", &id, "--project", "demo"]);
    assert!(!ok);
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(stderr.starts_with("ferry: "), "{stderr}");
}

#[test]
fn cancelling_as_an_agent_says_only_the_human_cancels() {
    let dir = tempfile::tempdir().unwrap();
    let home = fleet(&dir);
    let id = issue(&home, &["Write the parser"]);
    let refused = error(&home, Some("olga"), &["order", "cancel", &id]);
    assert!(refused.contains("cancel"), "{refused}");
}

/// A fake `snifrig` in its own folder: `can-i-start` exits `answer` and records its arguments.
fn fake_snifrig(dir: &Path, answer: u8) -> PathBuf {
    use std::os::unix::fs::PermissionsExt;
    let bin = dir.join(format!("bin-{answer}"));
    std::fs::create_dir_all(&bin).unwrap();
    let script = bin.join("snifrig");
    let args = dir.join("snifrig-args");
    std::fs::write(
        &script,
        format!(
            "#!/bin/sh\nif [ \"$1\" = can-i-start ]; then echo \"$@\" > '{}'; exit {answer}; fi\nexit 2\n",
            args.display()
        ),
    )
    .unwrap();
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    bin
}

/// `ferry order show ID --project demo --json` with `bin` first on the PATH.
fn show_with_path(home: &Path, bin: Option<&Path>, id: &str) -> Value {
    let mut cmd = ferry(home);
    if let Some(bin) = bin {
        let path = std::env::var_os("PATH").unwrap_or_default();
        let mut dirs = vec![bin.to_owned()];
        dirs.extend(std::env::split_paths(&path));
        cmd.env("PATH", std::env::join_paths(dirs).unwrap());
    }
    let out = cmd
        .args(["order", "show", id, "--project", "demo", "--json"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

#[test]
fn show_runs_a_heavy_order_via_snifrig_only_when_configured_present_and_willing() {
    let dir = tempfile::tempdir().unwrap();
    let home = fleet(&dir);
    let heavy = issue(
        &home,
        &[
            "Train the model",
            "--heavy",
            "--cores",
            "4",
            "--ram-gb",
            "16",
        ],
    );
    let light = issue(&home, &["Fix a typo"]);
    let yes = fake_snifrig(dir.path(), 0);
    let no = fake_snifrig(dir.path(), 1);
    let via = |bin: Option<&Path>, id: &str| {
        let detail = show_with_path(&home, bin, id);
        (
            detail["run_via"].as_str().unwrap().to_owned(),
            detail["run_command"].clone(),
        )
    };

    // Not configured: direct, even with a willing snifrig on the PATH.
    assert_eq!(via(Some(&yes), &heavy).0, "direct");
    std::fs::write(home.join("agent.toml"), "snifrig_heavy = false\n").unwrap();
    assert_eq!(via(Some(&yes), &heavy).0, "direct");

    std::fs::write(home.join("agent.toml"), "snifrig_heavy = true\n").unwrap();
    let (run_via, command) = via(Some(&yes), &heavy);
    assert_eq!(run_via, "snifrig");
    assert_eq!(
        command,
        Value::from(format!("snifrig run --name {heavy} -- <command>"))
    );
    // The queue was asked with the order's hints.
    assert_eq!(
        std::fs::read_to_string(dir.path().join("snifrig-args")).unwrap(),
        "can-i-start --cores 4 --ram-gb 16\n"
    );
    // A light order runs directly; so does a heavy one the queue refuses, or without snifrig.
    assert_eq!(via(Some(&yes), &light), ("direct".into(), Value::Null));
    assert_eq!(via(Some(&no), &heavy), ("direct".into(), Value::Null));
    let empty = dir.path().join("empty-bin");
    std::fs::create_dir_all(&empty).unwrap();
    let mut cmd = ferry(&home);
    cmd.env("PATH", &empty);
    let out = cmd
        .args(["order", "show", &heavy, "--project", "demo", "--json"])
        .output()
        .unwrap();
    assert!(out.status.success());
    let detail: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(detail["run_via"], "direct");

    // The text form says it too.
    let text = run_ok(&home, &["order", "show", &light, "--project", "demo"]);
    assert!(
        text.starts_with(&format!("{light} Fix a typo (open)")),
        "{text}"
    );
}

#[test]
fn ferry_search_finds_an_order_by_a_word_of_its_title_and_pages_with_a_cursor() {
    let dir = tempfile::tempdir().unwrap();
    let home = fleet(&dir);
    let parser = issue(&home, &["Write the parser"]);
    issue(&home, &["Ship the lexer"]);
    let found = run_ok(
        &home,
        &["search", "PARSER", "--project", "demo", "--as", "walt"],
    );
    assert_eq!(
        found,
        format!("order    {parser:<12} Write the parser (open)\n1 in all\n")
    );
    let page = json(&home, Some("walt"), &["search", "the"]);
    assert_eq!(page["total"], 2);
    assert!(page.get("next").is_none(), "{page}");
    let bad = error(&home, None, &["search", "x"]);
    assert_eq!(bad, "ferry: a query is 2 to 200 characters, not 1");
}

#[test]
fn an_order_issued_with_a_scope_is_worked_only_by_agents_granted_it_or_granted_without_scopes() {
    let dir = tempfile::tempdir().unwrap();
    let home = fleet(&dir);
    run_ok(
        &home,
        &[
            "access",
            "set",
            "bob",
            "member",
            "--scope",
            "web",
            "--project",
            "demo",
        ],
    );
    let infra = issue(&home, &["Rotate the disks", "--scope", "infra"]);
    let web = issue(&home, &["Fix the login page", "--scope", "web"]);

    assert_eq!(
        error(&home, Some("bob"), &["order", "claim", &infra]),
        "ferry: claim needs member in scope infra; bob's grant covers web"
    );
    json(&home, Some("bob"), &["order", "claim", &web]);
    json(&home, Some("alice"), &["order", "claim", &infra]);
    let shown = json(&home, None, &["order", "show", &infra]);
    assert_eq!(shown["scope"], "infra", "{shown}");
    let listed = run_ok(&home, &["order", "list", "--project", "demo"]);
    assert!(listed.contains("[infra] Rotate the disks"), "{listed}");
    let refused = error(
        &home,
        None,
        &["order", "issue", "Bad", "--scope", "web,infra"],
    );
    assert!(refused.contains("a scope cannot contain ','"), "{refused}");
}

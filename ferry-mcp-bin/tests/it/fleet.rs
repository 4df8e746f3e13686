//! `ferry primary quiet-period`, `ferry brief set|decide`
//! and `ferry order release` of a silent holder's order, run as the real binary on a temporary
//! FERRY_HOME. What the catch-up makes of them is read through the library, on the same state
//! folder, at a time of the test's choosing (the binary reads the wall clock; nothing sleeps).

use std::path::{Path, PathBuf};
use std::time::{SystemTime, UNIX_EPOCH};

use ferry_mcp_core::channel::log::names::ProjectId;
use ferry_mcp_core::channel::machine::home::Home;
use ferry_mcp_core::channel::ops::fleet::{self, Digest, DigestLimits};
use ferry_mcp_core::channel::session::{Actor, Session};
use ferry_mcp_core::time::Timestamp;
use serde_json::Value;

use super::admin::{join_args, project, run_err, run_ok, set_args};

/// Project `demo` with a Worker `walt`, Members `alice` and `bob`, Orchestrators `lead` and
/// `olga`.
fn fleet(dir: &tempfile::TempDir) -> PathBuf {
    let home = project(dir);
    for name in ["walt", "alice", "bob", "lead", "olga"] {
        run_ok(&home, &join_args(name));
    }
    for (name, level) in [
        ("alice", "member"),
        ("bob", "member"),
        ("lead", "orchestrator"),
        ("olga", "orchestrator"),
    ] {
        run_ok(&home, &set_args(name, level));
    }
    home
}

/// `ferry ARGS --project demo`: its stdout.
fn cli(home: &Path, args: &[&str]) -> String {
    let mut all = args.to_vec();
    all.extend(["--project", "demo"]);
    run_ok(home, &all)
}

/// `ferry ARGS --project demo`, which must fail: its one-line error.
fn cli_err(home: &Path, args: &[&str]) -> String {
    let mut all = args.to_vec();
    all.extend(["--project", "demo"]);
    run_err(home, &all)
}

/// `ferry ARGS --project demo --json`, parsed.
fn cli_json(home: &Path, args: &[&str]) -> Value {
    let mut all = args.to_vec();
    all.push("--json");
    let out = cli(home, &all);
    serde_json::from_str(&out).unwrap_or_else(|err| panic!("{args:?}: {err}: {out}"))
}

fn wall_now() -> Timestamp {
    let since = SystemTime::now().duration_since(UNIX_EPOCH).unwrap();
    Timestamp::from_millis(u64::try_from(since.as_millis()).unwrap())
}

/// The catch-up of a read-only view of the project on this state folder, at `at`.
fn catchup(home: &Path, at: Timestamp) -> Digest {
    let project = ProjectId::parse("demo").unwrap();
    let mut view = Session::open(&Home::at(home), &project, Actor::Observer, at).unwrap();
    fleet::catchup(&mut view, None, DigestLimits::DEFAULT, at).unwrap()
}

#[test]
fn ferry_primary_quiet_period_takes_minutes_seconds_or_plain_seconds_and_refuses_a_bad_duration_and_an_agent()
 {
    let dir = tempfile::tempdir().unwrap();
    let home = fleet(&dir);
    let status = cli_json(&home, &["primary", "status"]);
    assert_eq!(status["quiet_period_s"], 300, "the default: {status}");
    for (duration, seconds) in [("2m", 120), ("90s", 90), ("10m", 600), ("45", 45)] {
        assert_eq!(
            cli(&home, &["primary", "quiet-period", duration]),
            format!("the quiet period is {seconds}s\n")
        );
        let status = cli_json(&home, &["primary", "status"]);
        assert_eq!(status["quiet_period_s"], seconds, "{duration}: {status}");
    }
    let text = cli(&home, &["primary", "status"]);
    assert!(
        text.starts_with("primary: none\nquiet period: 45s\n"),
        "{text}"
    );
    let mut refusals = Vec::new();
    for bad in ["soon", "5w", "m", "1.5m"] {
        let refused = cli_err(&home, &["primary", "quiet-period", bad]);
        assert_eq!(
            refused,
            format!("ferry: bad duration {bad:?} (like 90s, 10m, 2h)")
        );
        refusals.push(format!("{bad}: {refused}"));
    }
    for out_of_range in ["0", "7s", "31d"] {
        let refused = cli_err(&home, &["primary", "quiet-period", out_of_range]);
        assert_eq!(
            refused,
            "ferry: a quiet period is between 8 seconds and 30 days (presence is written at most every 2 s, and 4 times within a quiet period)"
        );
        refusals.push(format!("{out_of_range}: {refused}"));
    }
    let agent = cli_err(&home, &["primary", "quiet-period", "2m", "--as", "olga"]);
    refusals.push(format!("2m --as olga: {agent}"));
    eprintln!("{}", refusals.join("\n"));
    assert_eq!(
        agent,
        "ferry: only the human (the master key) may set the quiet period"
    );
    let status = cli_json(&home, &["primary", "status"]);
    assert_eq!(status["quiet_period_s"], 45, "a refusal changed it");
}

#[test]
fn ferry_primary_status_tells_an_agent_acting_through_the_cli_the_command_it_may_run_not_an_mcp_action()
 {
    let dir = tempfile::tempdir().unwrap();
    let home = fleet(&dir);
    let orchestrator = cli(&home, &["primary", "status", "--as", "olga"]);
    assert!(
        orchestrator.ends_with(
            "there is no primary: you may take over: run `ferry primary takeover --as olga --project demo`\n"
        ),
        "{orchestrator}"
    );
    assert!(!orchestrator.contains("action takeover"), "{orchestrator}");
    let json = cli_json(&home, &["primary", "status", "--as", "olga"]);
    assert_eq!(json["advice"]["kind"], "no_primary_take_over", "{json}");
    assert_eq!(
        json["rule"],
        "there is no primary: you may take over: run `ferry primary takeover --as olga --project demo`"
    );
    let member = cli(&home, &["primary", "status", "--as", "alice"]);
    assert!(
        member.ends_with("there is no primary: work your orders; an Orchestrator may take over\n"),
        "{member}"
    );
    let human = cli(&home, &["primary", "status"]);
    assert!(
        human.ends_with(
            "there is no primary: an Orchestrator may take over: run `ferry primary takeover --as AGENT --project demo` on its machine\n"
        ),
        "{human}"
    );
}

fn decisions(digest: &Digest) -> Vec<&str> {
    digest
        .decisions
        .iter()
        .map(|decision| decision.line.as_str())
        .collect()
}

fn objective(digest: &Digest) -> Option<&str> {
    digest.brief.as_ref().map(|brief| brief.objective.as_str())
}

#[test]
fn ferry_brief_writes_what_the_catch_up_shows_and_a_workers_brief_does_not_count() {
    let dir = tempfile::tempdir().unwrap();
    let home = fleet(&dir);
    assert_eq!(
        cli(&home, &["primary", "takeover", "--as", "lead"]),
        "you are primary\n"
    );
    assert_eq!(
        cli(
            &home,
            &[
                "brief",
                "set",
                "--as",
                "lead",
                "--objective",
                "Ship the parser",
                "--constraint",
                "no new dependencies",
                "--constraint",
                "docs in markdown",
            ]
        ),
        "brief written\n"
    );
    let decided = cli_json(
        &home,
        &[
            "brief",
            "decide",
            "the lexer keeps its spans",
            "--as",
            "lead",
        ],
    );
    let id = decided["id"].as_str().unwrap().to_owned();
    assert!(id.starts_with("lead-"), "{decided}");
    let digest = catchup(&home, wall_now());
    let brief = digest.brief.as_ref().unwrap();
    assert_eq!(
        (brief.by.as_str(), brief.objective.as_str()),
        ("lead", "Ship the parser")
    );
    assert_eq!(
        brief.constraints,
        ["no new dependencies", "docs in markdown"]
    );
    assert_eq!(decisions(&digest), ["the lexer keeps its spans"]);
    assert_eq!(digest.decisions[0].id, id);

    // A second brief replaces the first; decisions add up.
    assert_eq!(
        cli(
            &home,
            &[
                "brief",
                "set",
                "--as",
                "lead",
                "--objective",
                "Ship the parser and its docs",
            ]
        ),
        "brief written\n"
    );
    let decided = cli(
        &home,
        &["brief", "decide", "release on friday", "--as", "lead"],
    );
    assert!(
        decided.starts_with("decision lead-") && decided.ends_with(" recorded\n"),
        "{decided}"
    );
    let digest = catchup(&home, wall_now());
    assert_eq!(objective(&digest), Some("Ship the parser and its docs"));
    assert!(digest.brief.as_ref().unwrap().constraints.is_empty());
    assert_eq!(
        decisions(&digest),
        ["release on friday", "the lexer keeps its spans"]
    );

    // The older name `ferry marvin brief` is gone: one command, one name.
    let gone = cli_err(&home, &["marvin", "brief", "decide", "x", "--as", "lead"]);
    assert!(gone.contains("unrecognized subcommand 'marvin'"), "{gone}");
    // A Worker's brief does not count: refused, with or without constraints, and so is its decision.
    let mut refusals = Vec::new();
    for args in [
        &[
            "brief",
            "set",
            "--as",
            "walt",
            "--objective",
            "Rewrite it all",
        ][..],
        &[
            "brief",
            "set",
            "--as",
            "walt",
            "--objective",
            "Rewrite it all",
            "--constraint",
            "tabs",
        ][..],
        &["brief", "decide", "use tabs", "--as", "walt"][..],
    ] {
        let refused = cli_err(&home, args);
        refusals.push(format!("{}: {refused}", args.join(" ")));
        assert_eq!(refused, "ferry: post needs member; walt is worker");
    }
    // The human has no brief of its own.
    let master = cli_err(&home, &["brief", "set", "--objective", "Mine"]);
    refusals.push(format!("brief set (the master): {master}"));
    assert_eq!(master, "ferry: a brief is an agent's: name it with --as");
    eprintln!("{}", refusals.join("\n"));
    // A Member's brief counts, but the catch-up shows the primary's.
    cli(
        &home,
        &["brief", "set", "--as", "alice", "--objective", "Docs first"],
    );
    let digest = catchup(&home, wall_now());
    assert_eq!(objective(&digest), Some("Ship the parser and its docs"));
    assert_eq!(
        decisions(&digest),
        ["release on friday", "the lexer keeps its spans"]
    );
}

fn issue(home: &Path, title: &str) -> String {
    let issued = cli_json(home, &["order", "issue", title]);
    issued["id"].as_str().unwrap().to_owned()
}

/// The open rows of the catch-up at `at`: (id, holder, silent).
fn open_rows(home: &Path, at: Timestamp) -> Vec<(String, Option<String>, bool)> {
    catchup(home, at)
        .open
        .into_iter()
        .map(|row| (row.id, row.holder.map(|h| h.to_string()), row.silent))
        .collect()
}

#[test]
fn the_master_or_an_orchestrator_hands_back_the_order_of_a_holder_gone_silent_with_ferry_order_release()
 {
    let dir = tempfile::tempdir().unwrap();
    let home = fleet(&dir);
    cli(&home, &["primary", "quiet-period", "2m"]);
    let (first, second) = (
        issue(&home, "Write the lexer"),
        issue(&home, "Write the parser"),
    );
    for id in [&first, &second] {
        cli(&home, &["order", "claim", id, "--as", "alice"]);
    }
    let held = |silent: bool| {
        vec![
            (first.clone(), Some("alice".to_owned()), silent),
            (second.clone(), Some("alice".to_owned()), silent),
        ]
    };
    let now = wall_now();
    assert_eq!(open_rows(&home, now), held(false));
    // Two minutes and a second later alice has gone silent.
    let later = Timestamp::from_millis(now.as_millis() + 121_000);
    let rows = open_rows(&home, later);
    eprintln!("the catch-up 121 s later: {rows:?}");
    assert_eq!(rows, held(true));

    let member = cli_err(&home, &["order", "release", &first, "--as", "bob"]);
    assert_eq!(
        member,
        "ferry: hand back an order needs orchestrator; bob is member"
    );
    assert_eq!(
        cli(
            &home,
            &["order", "release", &first, "--note", "alice went silent"]
        ),
        format!("released {first}\n")
    );
    assert_eq!(
        cli(&home, &["order", "release", &second, "--as", "olga"]),
        format!("released {second}\n")
    );
    let board = cli_json(&home, &["order", "list"]);
    let rows: Vec<(&str, &str, Option<&str>)> = board["orders"]
        .as_array()
        .unwrap()
        .iter()
        .map(|row| {
            (
                row["id"].as_str().unwrap(),
                row["state"].as_str().unwrap(),
                row["holder"].as_str(),
            )
        })
        .collect();
    assert_eq!(
        rows,
        [
            (first.as_str(), "open", None),
            (second.as_str(), "open", None)
        ]
    );
    assert_eq!(
        open_rows(&home, later),
        [(first.clone(), None, false), (second.clone(), None, false)]
    );
    // Open again: anyone may claim it.
    cli(&home, &["order", "claim", &first, "--as", "bob"]);
}

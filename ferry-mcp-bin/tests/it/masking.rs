//! No command prints a raw secret that reached the channel: an order the human wrote with a
//! token in it, a file a folder writer named after one. Text and `--json` alike show
//! `[redacted: <kind>]` where the secret was.

use std::path::Path;

use super::admin::{join_args, project, run_ok};

/// A published GitHub token test vector (its checksum is valid).
const TOKEN: &str = "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";
/// An AWS access key id, for a second kind in the same text.
const AWS_ID: &str = "AKIAZ3MHXQ4JW7NPLR2D";

/// Panics if `out` shows any part of the planted secrets long enough to finish them.
fn assert_masked(out: &str, what: &str) {
    assert!(
        !out.contains(&TOKEN[4..20]),
        "{what} shows the token: {out}"
    );
    assert!(
        !out.contains(&AWS_ID[4..]),
        "{what} shows the key id: {out}"
    );
}

fn order_with_secrets(home: &Path, dir: &Path) -> String {
    // `ferry order issue` refuses it now (the human's writes are guarded too), so it is
    // planted as a client without the guard would write it, signed with the master key.
    let body = dir.join("body.md");
    let text = format!("deploy with {TOKEN}\nand the key {AWS_ID}\n");
    let refused = super::admin::run_err(
        home,
        &[
            "order",
            "issue",
            "rotate the keys",
            "--project",
            "demo",
            "--body-file",
            {
                std::fs::write(&body, &text).unwrap();
                body.to_str().unwrap()
            },
        ],
    );
    assert!(refused.contains("ferry channel secret"), "{refused}");
    let now = {
        let since = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap();
        ferry_mcp_core::time::Timestamp::from_millis(u64::try_from(since.as_millis()).unwrap())
    };
    let project = ferry_mcp_core::channel::log::names::ProjectId::parse("demo").unwrap();
    let mut master = ferry_mcp_core::channel::session::Session::open(
        &ferry_mcp_core::channel::machine::home::Home::at(home),
        &project,
        ferry_mcp_core::channel::session::Actor::Master,
        now,
    )
    .unwrap();
    let id = ferry_mcp_testkit::plant::order(
        &mut master,
        &format!("rotate {TOKEN}"),
        Some(&text),
        false,
        now,
    );
    master.save().unwrap();
    id
}

#[test]
fn ferry_order_list_and_show_mask_a_secret_in_an_orders_title_and_body_in_text_and_json() {
    let dir = tempfile::tempdir().unwrap();
    let home = project(&dir);
    run_ok(&home, &join_args("walt"));
    let id = order_with_secrets(&home, dir.path());
    for args in [
        vec!["order", "list", "--project", "demo"],
        vec!["order", "list", "--project", "demo", "--json"],
        vec!["order", "show", &id, "--project", "demo"],
        vec!["order", "show", &id, "--project", "demo", "--json"],
    ] {
        let out = run_ok(&home, &args);
        assert_masked(&out, &args.join(" "));
        assert!(out.contains("[redacted: github_token]"), "{args:?}: {out}");
        if args.contains(&"--json") {
            serde_json::from_str::<serde_json::Value>(&out)
                .unwrap_or_else(|err| panic!("{args:?}: {err}: {out}"));
        }
    }
}

#[test]
fn ferry_channel_status_masks_a_secret_in_a_file_name_a_folder_writer_planted() {
    let dir = tempfile::tempdir().unwrap();
    let home = project(&dir);
    std::fs::write(dir.path().join("channel").join(format!("logs/{TOKEN}")), "").unwrap();
    for json in [false, true] {
        let mut args = vec!["channel", "status", "--project", "demo"];
        if json {
            args.push("--json");
        }
        let out = run_ok(&home, &args);
        assert_masked(&out, &args.join(" "));
        assert!(out.contains("[redacted: github_token]"), "{args:?}: {out}");
    }
}

/// A channel where a client without the guard (seated as `walt`) and the master wrote a
/// secret into every text the CLI reads back: an order's title and body, a post and a long
/// post whose token runs past the inline cut, an ask's three fields, the brief's objective,
/// constraints and decisions, and a secret's name (an AWS key id, folded to lower case).
/// Every text holds `rotate`, so a search finds them all.
struct Planted {
    _dir: tempfile::TempDir,
    home: std::path::PathBuf,
    order: String,
    ask: String,
}

fn channel_with_a_secret_in_every_text() -> Planted {
    use ferry_mcp_core::channel::{
        fold::levels::Operation,
        fold::state::{
            asks::RaiseBody,
            primary::{BriefBody, DecideBody},
            secrets::ShareBody,
        },
        log::names::{AgentName, ProjectId},
        log::secret,
        machine::home::Home,
        session::{Actor, Session},
    };
    let dir = tempfile::tempdir().unwrap();
    let home = project(&dir);
    run_ok(&home, &join_args("walt"));
    run_ok(&home, &super::admin::set_args("walt", "member"));
    let order = order_with_secrets(&home, dir.path());
    let now = ferry_mcp_core::time::Timestamp::from_millis(
        u64::try_from(
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap()
                .as_millis(),
        )
        .unwrap(),
    );
    let walt = AgentName::parse("walt").unwrap();
    let mut agent = Session::open(
        &Home::at(&home),
        &ProjectId::parse("demo").unwrap(),
        Actor::Agent(walt.clone()),
        now,
    )
    .unwrap();
    ferry_mcp_testkit::plant::post(
        &mut agent,
        "master",
        &format!("rotate: the deploy key is {TOKEN} and the id {AWS_ID}"),
        now,
    );
    // The inline part of a long post ends 20 characters into the token.
    let long = format!("rotate {}{TOKEN} and more after it", "x ".repeat(143));
    assert_eq!(long.find(TOKEN), Some(293));
    ferry_mcp_testkit::plant::post(&mut agent, "master", &long, now);
    let raise = RaiseBody {
        title: format!("rotate {TOKEN}?"),
        recommendation: format!("rotate it, then revoke {AWS_ID}"),
        reasoning: format!("rotate because {TOKEN} leaked"),
        seen: None,
    };
    let entry = agent.append(Operation::Ask, None, &raise, now).unwrap();
    let ask = agent.id_of(&entry).to_string();
    let brief = BriefBody {
        objective: format!("rotate {TOKEN}"),
        constraints: vec![format!("rotate with {AWS_ID} only")],
        seen: None,
    };
    agent.append(Operation::Post, None, &brief, now).unwrap();
    let decide = DecideBody {
        line: format!("rotate: use {TOKEN}"),
        seen: None,
    };
    agent.append(Operation::Post, None, &decide, now).unwrap();
    let key = *agent.identity().holder(&walt).unwrap();
    let sealed = secret::seal(&key, b"value").unwrap();
    let blob = agent.channel().put_blob(&sealed).unwrap();
    let share = ShareBody {
        name: AWS_ID.to_ascii_lowercase(),
        to: walt,
        key,
        blob: blob.to_hex(),
        after: None,
        seen: None,
    };
    agent.append(Operation::Post, None, &share, now).unwrap();
    agent.save().unwrap();
    Planted {
        _dir: dir,
        home,
        order,
        ask,
    }
}

#[test]
fn no_command_prints_a_secret_planted_in_any_text_it_reads_back_in_text_or_json() {
    let planted = channel_with_a_secret_in_every_text();
    let (order, ask) = (planted.order.as_str(), planted.ask.as_str());
    let folded_id = AWS_ID.to_ascii_lowercase();
    let commands: Vec<Vec<&str>> = vec![
        vec!["talk", "read", "--peek"],
        vec!["order", "list", "--all"],
        vec!["order", "show", order],
        vec!["ask", "list"],
        vec!["ask", "show", ask],
        vec!["search", "rotate"],
        vec!["primary", "status"],
        vec!["channel", "status"],
        vec!["access", "show"],
        vec!["channel", "secret", "list", "--as", "walt"],
    ];
    for command in &commands {
        // `access show` has no JSON form.
        let forms: &[bool] = if command[0] == "access" {
            &[false]
        } else {
            &[false, true]
        };
        for &json in forms {
            let mut args = command.clone();
            args.extend(["--project", "demo"]);
            if json {
                args.push("--json");
            }
            let out = run_ok(&planted.home, &args);
            let what = args.join(" ");
            assert_masked(&out, &what);
            assert!(
                !out.contains(&folded_id[4..]),
                "{what} shows the folded id: {out}"
            );
            if json {
                serde_json::from_str::<serde_json::Value>(&out)
                    .unwrap_or_else(|err| panic!("{what}: {err}: {out}"));
            }
        }
    }
    // The reads that show the planted texts say where they were masked.
    for command in [
        &commands[0],
        &commands[2],
        &commands[4],
        &commands[5],
        &commands[9],
    ] {
        let mut args = command.clone();
        args.extend(["--project", "demo"]);
        let out = run_ok(&planted.home, &args);
        assert!(out.contains("[redacted: "), "{args:?}: {out}");
    }
}

#[test]
fn a_mixed_case_token_given_as_a_name_is_refused_before_it_is_folded() {
    let dir = tempfile::tempdir().unwrap();
    let home = project(&dir);
    // Folded to lower case, the token's checksum no longer holds: only the name as typed
    // shows what it is.
    assert!(ferry_mcp_core::guard::check_name(&TOKEN.to_ascii_lowercase()).is_ok());
    let refused = super::admin::run_err(&home, &join_args(TOKEN));
    assert!(refused.contains("github token"), "{refused}");
    let status = run_ok(&home, &["channel", "status", "--project", "demo", "--json"]);
    assert!(
        !status
            .to_ascii_lowercase()
            .contains(&TOKEN[4..20].to_ascii_lowercase()),
        "{status}"
    );
}

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
    let project = ferry_mcp_core::channel::names::ProjectId::parse("demo").unwrap();
    let mut master = ferry_mcp_core::channel::session::Session::open(
        &ferry_mcp_core::channel::home::Home::at(home),
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

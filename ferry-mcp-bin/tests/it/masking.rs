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
    let body = dir.join("body.md");
    std::fs::write(
        &body,
        format!("deploy with {TOKEN}\nand the key {AWS_ID}\n"),
    )
    .unwrap();
    let issued = run_ok(
        home,
        &[
            "order",
            "issue",
            &format!("rotate {TOKEN}"),
            "--project",
            "demo",
            "--body-file",
            body.to_str().unwrap(),
            "--json",
        ],
    );
    let issued: serde_json::Value = serde_json::from_str(&issued).unwrap();
    issued["id"].as_str().unwrap().to_owned()
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

//! `ferry talk read` and `ferry order list` page like the tools: a default page, `--limit N`,
//! `--all`, and `--after CURSOR` to go on from the cursor a page prints after `more:`.

use std::path::Path;

use ferry_mcp_testkit::bulk::{self, BulkChannel};
use serde_json::Value;

use super::admin::run_ok;

/// 300 entries on 5 agents, 30% of them messages (about 36 for the human: to it or to all)
/// and 60 orders (24 not done).
fn channel() -> BulkChannel {
    bulk::builder()
        .entries(300)
        .agents(5)
        .orders(60)
        .talk_percent(30)
        .build()
}

fn ferry_json(home: &Path, args: &[&str]) -> Value {
    let mut all = args.to_vec();
    all.extend(["--project", "bulk", "--json"]);
    let out = run_ok(home, &all);
    serde_json::from_str(&out).unwrap_or_else(|err| panic!("{args:?}: {err}: {out}"))
}

fn count(json: &Value, field: &str) -> usize {
    json[field].as_array().unwrap().len()
}

/// The cursor after `more: --after ` in a page's text.
fn more_cursor(text: &str) -> Option<String> {
    text.lines()
        .find_map(|line| line.strip_prefix("more: --after "))
        .map(str::to_owned)
}

#[test]
fn ferry_order_list_gives_a_page_of_twenty_and_goes_on_after_the_cursor_it_prints() {
    let bulk = channel();
    let home = bulk.home_dir();
    let text = run_ok(home, &["order", "list", "--project", "bulk"]);
    // A header line, twenty orders, `next:` and `more:`.
    assert_eq!(text.lines().count(), 23, "{text}");
    let cursor = more_cursor(&text).expect("a cursor to go on");
    let first = ferry_json(home, &["order", "list"]);
    assert_eq!(count(&first, "orders"), 20);
    assert_eq!(first["more"], true);
    assert_eq!(first["next"], cursor.as_str());
    // Going on gives the orders not done yet that the first page left out (and, as a `since`
    // list, the done ones that changed after it: they left the board).
    let second = ferry_json(home, &["order", "list", "--after", &cursor]);
    assert_eq!(second["more"], false);
    let not_done = |list: &Value| -> Vec<String> {
        list["orders"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|row| !["accepted", "cancelled"].contains(&row["state"].as_str().unwrap()))
            .map(|row| row["id"].as_str().unwrap().to_owned())
            .collect()
    };
    let mut seen = not_done(&first);
    seen.extend(not_done(&second));
    let every = not_done(&ferry_json(home, &["order", "list", "--all"]));
    assert_eq!(seen.len(), 24, "{seen:?}");
    seen.sort();
    let mut every = every;
    every.sort();
    assert_eq!(seen, every);
    let rest = run_ok(
        home,
        &["order", "list", "--after", &cursor, "--project", "bulk"],
    );
    assert!(more_cursor(&rest).is_none(), "{rest}");
}

#[test]
fn ferry_order_list_limit_gives_that_many_and_all_gives_every_order_unpaged() {
    let bulk = channel();
    let home = bulk.home_dir();
    let five = ferry_json(home, &["order", "list", "--limit", "5"]);
    assert_eq!(count(&five, "orders"), 5);
    assert_eq!(five["more"], true);
    let all = ferry_json(home, &["order", "list", "--all"]);
    assert_eq!(count(&all, "orders"), 60);
    assert_eq!(all["more"], false);
}

#[test]
fn ferry_talk_read_peek_gives_a_page_and_goes_on_after_the_cursor_it_prints_leaving_all_unread() {
    let bulk = channel();
    let home = bulk.home_dir();
    let every = ferry_json(home, &["talk", "read", "--peek", "--all"]);
    let total = count(&every, "messages");
    assert!(total > 20, "{total} messages for the human");
    let first = run_ok(home, &["talk", "read", "--peek", "--project", "bulk"]);
    let cursor = more_cursor(&first).expect("a cursor to go on");
    let page = ferry_json(home, &["talk", "read", "--peek"]);
    assert_eq!(count(&page, "messages"), 20);
    assert_eq!(page["more"], true);
    let rest = ferry_json(home, &["talk", "read", "--peek", "--after", &cursor]);
    assert_eq!(count(&rest, "messages"), total - 20);
    assert_eq!(rest["more"], false);
    // Peeking marked nothing: every message is still unread.
    let again = ferry_json(home, &["talk", "read", "--peek", "--all"]);
    assert_eq!(count(&again, "messages"), total);
}

#[test]
fn ferry_talk_read_limit_marks_only_the_page_it_gives_and_the_next_read_gives_the_rest() {
    let bulk = channel();
    let home = bulk.home_dir();
    let total = count(
        &ferry_json(home, &["talk", "read", "--peek", "--all"]),
        "messages",
    );
    let three = ferry_json(home, &["talk", "read", "--limit", "3"]);
    assert_eq!(count(&three, "messages"), 3);
    assert_eq!(three["more"], true);
    assert_eq!(three["marked"], true);
    let rest = ferry_json(home, &["talk", "read", "--all"]);
    assert_eq!(count(&rest, "messages"), total - 3);
    assert_eq!(rest["more"], false);
}

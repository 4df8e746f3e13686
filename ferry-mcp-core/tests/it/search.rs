//! `ops::search`: order titles, decisions and the messages the caller may read that hold a
//! phrase, newest first, paged; masked; never another agent's mail.

use ferry_mcp_core::channel::fold::levels::Level;
use ferry_mcp_core::channel::ops::orders::{self, IssueRequest};
use ferry_mcp_core::channel::ops::primary;
use ferry_mcp_core::channel::ops::search::{self, MAX_PAGE, SearchPage, SearchRequest};
use ferry_mcp_core::channel::ops::talk::{self, PostRequest};
use ferry_mcp_core::channel::session::{Actor, Session};
use ferry_mcp_testkit::temp_channel::TempChannel;

fn fleet() -> TempChannel {
    TempChannel::builder()
        .agent("olga", Level::Orchestrator)
        .agent("mia", Level::Member)
        .agent("walt", Level::Worker)
        .build()
        .unwrap()
}

fn find(
    session: &mut Session,
    query: &str,
    cursor: Option<&str>,
    temp: &TempChannel,
) -> SearchPage {
    let request = SearchRequest {
        query: query.to_owned(),
        cursor: cursor.map(str::to_owned),
        limit: MAX_PAGE,
    };
    search::search(session, &request, temp.now()).unwrap()
}

fn issue(temp: &TempChannel, title: &str) -> String {
    let request = IssueRequest {
        title: title.into(),
        ..IssueRequest::default()
    };
    orders::issue(&mut temp.master_session(), &request, temp.now()).unwrap()
}

fn post(temp: &TempChannel, from: &str, to: &str, text: &str) -> String {
    let request = PostRequest {
        to: to.into(),
        text: text.into(),
        reply_to: None,
    };
    talk::post(&mut temp.agent_session(from), &request, temp.now()).unwrap()
}

#[test]
fn a_search_finds_orders_decisions_and_messages_to_the_caller_without_regard_to_case() {
    let temp = fleet();
    let old = issue(&temp, "Write the PARSER");
    let new = issue(&temp, "Test the parser");
    issue(&temp, "Ship the lexer");
    primary::takeover(&mut temp.agent_session("olga"), temp.now()).unwrap();
    let decision = primary::decide(
        &mut temp.agent_session("olga"),
        "the parser keeps its errors",
        temp.now(),
    )
    .unwrap();
    let to_walt = post(&temp, "mia", "walt", "is the parser done?");
    let to_all = post(&temp, "olga", "all", "parser review at noon");
    let to_olga = post(&temp, "mia", "olga", "the parser is late");

    let page = find(&mut temp.agent_session("walt"), "Parser", None, &temp);
    let found: Vec<(&str, &str)> = page
        .hits
        .iter()
        .map(|hit| (hit.kind, hit.id.as_str()))
        .collect();
    // Orders most recently changed first, then decisions, then messages newest first; walt
    // never finds what mia told olga.
    assert_eq!(
        found,
        [
            ("order", new.as_str()),
            ("order", old.as_str()),
            ("decision", decision.as_str()),
            ("msg", to_all.as_str()),
            ("msg", to_walt.as_str()),
        ]
    );
    assert!(!found.iter().any(|(_, id)| *id == to_olga));
    assert_eq!(page.total, 5);
    assert_eq!(page.next, None);
    assert_eq!(page.hits[0].line, "Test the parser (open)");
}

#[test]
fn a_long_search_is_paged_by_its_cursor_and_every_hit_comes_once() {
    let temp = fleet();
    let issued: Vec<String> = (0..45)
        .map(|n| issue(&temp, &format!("task {n}")))
        .collect();
    let mut session = temp.agent_session("mia");
    let mut seen = Vec::new();
    let mut cursor = None;
    loop {
        let page = find(&mut session, "task", cursor.as_deref(), &temp);
        assert!(page.hits.len() <= MAX_PAGE);
        assert_eq!(page.total, 45);
        seen.extend(page.hits.into_iter().map(|hit| hit.id));
        match page.next {
            Some(next) => cursor = Some(next),
            None => break,
        }
    }
    let mut sorted = seen.clone();
    sorted.sort();
    sorted.dedup();
    assert_eq!(sorted.len(), 45, "{seen:?}");
    let mut want = issued;
    want.sort();
    assert_eq!(sorted, want);
}

#[test]
fn a_secret_in_an_order_title_is_masked_in_a_hit() {
    let temp = fleet();
    // A real-shaped GitHub token (its checksum right) from the guard's corpus.
    let token = include_str!("../guard_corpus/secrets.txt")
        .lines()
        .find_map(|line| line.strip_prefix("github_token\t"))
        .filter(|token| token.starts_with("ghp_") && !token.contains(' '))
        .unwrap()
        .to_owned();
    // Planted as a client without the guard would write it (the operations refuse it):
    // what an agent finds is masked.
    ferry_mcp_testkit::plant::order(
        &mut temp.master_session(),
        &format!("rotate {token} today"),
        None,
        false,
        temp.now(),
    );
    let page = find(&mut temp.agent_session("mia"), "rotate", None, &temp);
    assert_eq!(page.total, 1);
    assert!(!page.hits[0].line.contains(&token), "{}", page.hits[0].line);
}

#[test]
fn a_bad_query_or_cursor_is_a_clear_error_and_an_unseated_agent_is_refused() {
    let temp = fleet();
    let mut session = temp.agent_session("mia");
    for (query, cursor) in [
        ("x", None),
        ("ok query", Some("p10")),
        ("ok query", Some("s")),
    ] {
        let request = SearchRequest {
            query: query.into(),
            cursor: cursor.map(str::to_owned),
            limit: 20,
        };
        let err = search::search(&mut session, &request, temp.now()).unwrap_err();
        assert_eq!(err.code(), "invalid", "{query} {cursor:?}: {err}");
    }
    let mut ghost = temp.session(Actor::Agent(TempChannel::agent("ghost")));
    let request = SearchRequest {
        query: "parser".into(),
        cursor: None,
        limit: 20,
    };
    let err = search::search(&mut ghost, &request, temp.now()).unwrap_err();
    assert_eq!(err.code(), "unseated", "{err}");
}

//! Response shaping: the T4 caps (docs/mcp-budgets.md) with `truncated` and `next`, `ferry://` URIs, outcomes.

use ferry_mcp_core::shape::{
    self, CapError, Cursor, CursorError, MAX_ITEMS, MAX_STRUCTURED_CHARS, PageError, ResourceLink,
    ResourceUri, ToolOutcome, UriError,
};
use ferry_mcp_core::tokens;
use ferry_mcp_testkit::fixture;
use ferry_mcp_testkit::session::Session;
use serde_json::{Value, json};

#[test]
fn a_resource_uri_formats_and_parses_back() {
    let uri = ResourceUri::new("demo", "order", "42").unwrap();
    assert_eq!(uri.to_string(), "ferry://demo/order/42");
    assert_eq!(ResourceUri::parse("ferry://demo/order/42").unwrap(), uri);
    assert_eq!(
        (uri.project(), uri.kind(), uri.id()),
        ("demo", "order", "42")
    );
}

#[test]
fn a_resource_uri_refuses_unsafe_components() {
    let cases = [
        ("https://demo/order/1", UriError::NotFerry),
        ("ferry://demo/order", UriError::WrongShape),
        ("ferry://demo/order/1/2", UriError::WrongShape),
        ("ferry://demo/order/", UriError::BadLength),
        ("ferry://demo/order/..", UriError::BadCharacter),
        ("ferry://demo/order/a%2Fb", UriError::BadCharacter),
        ("ferry://demo/order/a b", UriError::BadCharacter),
        ("ferry://demo/order/é", UriError::BadCharacter),
    ];
    for (text, error) in cases {
        assert_eq!(ResourceUri::parse(text), Err(error), "{text}");
    }
    let long = "x".repeat(129);
    assert_eq!(
        ResourceUri::new("demo", "order", &long),
        Err(UriError::BadLength)
    );
}

#[test]
fn a_resource_link_is_a_resource_link_content_block() {
    let uri = ResourceUri::new("demo", "order", "1").unwrap();
    let link = ResourceLink::new(uri, "order 1")
        .mime_type("text/markdown")
        .size(12);
    assert_eq!(
        link.to_content(),
        json!({ "type": "resource_link", "uri": "ferry://demo/order/1", "name": "order 1", "mimeType": "text/markdown", "size": 12 })
    );
}

#[test]
fn an_outcome_summary_is_always_one_line() {
    assert_eq!(
        ToolOutcome::ok(json!({}), "two\nlines\r").summary,
        "two lines "
    );
    assert_eq!(ToolOutcome::error("bad\nthing").summary, "bad thing");
    assert!(ToolOutcome::error("x").is_error);
}

#[test]
fn a_cursor_decodes_only_what_we_issued() {
    assert_eq!(Cursor::decode(&Cursor(300).encode()), Ok(Cursor(300)));
    assert_eq!(Cursor(300).encode(), "p12c");
    for bad in ["", "p", "x12", "p-1", "pZZ", "p1234567890abc", "P1"] {
        assert_eq!(Cursor::decode(bad), Err(CursorError::Invalid), "{bad}");
    }
}

fn small_items(count: usize) -> Vec<Value> {
    (0..count).map(|n| json!({ "n": n })).collect()
}

#[test]
fn a_page_holds_at_most_twenty_items_and_points_at_the_rest() {
    let page = shape::paginate(small_items(45), None, 0).unwrap();
    assert_eq!(page.items.len(), MAX_ITEMS);
    assert!(page.truncated);
    let second = shape::paginate(small_items(45), page.next.as_deref(), 0).unwrap();
    assert_eq!(second.items[0], json!({ "n": 20 }));
    let third = shape::paginate(small_items(45), second.next.as_deref(), 0).unwrap();
    assert_eq!(third.items.len(), 5);
    assert!(!third.truncated && third.next.is_none());
}

#[test]
fn a_page_stops_before_the_character_cap() {
    let rows: Vec<Value> = (1..=fixture::LIST_ROWS).map(fixture::list_row).collect();
    let page = shape::paginate(rows, None, 100).unwrap();
    assert!(
        page.items.len() < MAX_ITEMS,
        "the character cap should cut first"
    );
    let json = serde_json::to_string(&page.items).unwrap();
    assert!(json.chars().count() + 100 <= MAX_STRUCTURED_CHARS);
}

#[test]
fn a_page_of_one_huge_item_still_makes_progress() {
    let items = vec![json!("x".repeat(5000)), json!("y")];
    let page = shape::paginate(items, None, 0).unwrap();
    assert_eq!(page.items.len(), 1);
    assert!(page.truncated);
}

#[test]
fn a_bad_cursor_is_an_error() {
    assert_eq!(
        shape::paginate(small_items(3), Some("nope"), 0),
        Err(PageError::Cursor(CursorError::Invalid))
    );
    assert_eq!(
        shape::paginate(small_items(3), Some(&Cursor(9).encode()), 0),
        Err(PageError::PastEnd)
    );
}

#[test]
fn the_caps_check_finds_long_and_crowded_responses() {
    assert_eq!(
        shape::check_caps(&json!({ "rows": small_items(20) })),
        Ok(())
    );
    assert_eq!(
        shape::check_caps(&json!({ "rows": small_items(21) })),
        Err(CapError::TooManyItems {
            field: "rows".into(),
            len: 21
        })
    );
    assert!(matches!(
        shape::check_caps(&json!({ "text": "x".repeat(4000) })),
        Err(CapError::TooLong(_))
    ));
}

#[test]
fn walking_a_truncated_tool_list_gives_every_row_once_within_the_caps() {
    let mut session = Session::fixture_initialized("demo", "2025-11-25");
    let mut seen = Vec::new();
    let mut args = json!({});
    let mut pages = 0;
    for _ in 0..fixture::LIST_ROWS {
        let result = session.call("fixture_list", args.clone());
        pages += 1;
        let structured = &result["structuredContent"];
        shape::check_caps(structured).unwrap();
        seen.extend(
            structured["rows"]
                .as_array()
                .unwrap()
                .iter()
                .map(|row| row["n"].as_u64().unwrap()),
        );
        match structured.get("next") {
            Some(next) => {
                assert_eq!(structured["truncated"], true);
                args = json!({ "cursor": next });
            }
            None => {
                assert_eq!(structured["truncated"], false, "{structured}");
                break;
            }
        }
    }
    let expected: Vec<u64> = (1..=fixture::LIST_ROWS as u64).collect();
    assert_eq!(seen, expected);
    assert!(pages > 2, "the caps cut the list into pages: {pages}");
}

#[test]
fn tokens_are_characters_divided_by_four_rounded_up() {
    assert_eq!(tokens::estimate(""), 0);
    assert_eq!(tokens::estimate("abcd"), 1);
    assert_eq!(tokens::estimate("abcde"), 2);
    assert_eq!(tokens::estimate("éééé"), 1);
}

#[test]
fn the_fixture_tools_list_fits_a_small_budget() {
    let figure = ferry_mcp_testkit::tokens::assert_within_budget(
        "fixture tools/list",
        fixture::surface().tools_list_json(),
        800,
    );
    assert!(figure > 0);
}

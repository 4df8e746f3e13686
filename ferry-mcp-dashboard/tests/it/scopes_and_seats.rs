//! The page's scopes and seats: the issue form's scope, a grant's scopes, and a contested seat
//! settled with a button (read back through the operations the agents use).

use ferry_mcp_core::channel::fold::identity::{Seat, kinds};
use ferry_mcp_core::channel::log::keys::SecretKey;
use ferry_mcp_core::channel::ops::{access_show, orders};
use ferry_mcp_testkit::temp_channel::TempChannel;
use serde_json::json;

use crate::fixture::Page;

#[test]
fn the_issue_form_s_scope_puts_the_order_in_it_and_a_member_granted_another_scope_cannot_claim_it()
{
    let page = Page::new();
    let (_, html) = page.post("/p/demo/orders", "title=Rotate+the+disks&scope=infra");
    assert!(html.contains("Issued "), "{html}");
    assert!(html.contains("<dt>Scope</dt><dd>infra</dd>"), "{html}");
    let now = page.channel.now();
    let mut view = page.channel.view();
    let listed = orders::list(
        &mut view,
        &orders::ListRequest {
            all: true,
            since: None,
            limit: 10,
        },
        now,
    )
    .unwrap();
    let row = &listed.rows.last().unwrap().row;
    assert_eq!(row.scope.as_deref(), Some("infra"));
    let board = page.get("/p/demo/orders").text();
    assert!(board.contains("<td>infra</td>"), "{board}");

    // The level form's scopes: dev becomes a Member of web only.
    let (_, html) = page.post("/p/demo/agents/level", "name=dev&level=member&scopes=web");
    assert!(html.contains("dev is a member in web."), "{html}");
    let rows = access_show(page.channel.home(), page.channel.project(), None, now).unwrap();
    let dev = rows.iter().find(|row| row.name.as_str() == "dev").unwrap();
    assert_eq!(dev.grant, "member in web");
    let err = orders::claim(&mut page.channel.agent_session("dev"), &row.id, now).unwrap_err();
    assert_eq!(
        err.to_string(),
        "claim needs member in scope infra; dev's grant covers web"
    );
    // A scope the rules refuse is said, and nothing is issued.
    let (_, html) = page.post("/p/demo/orders", "title=Bad&scope=web+infra");
    assert!(html.contains("Not done: a scope cannot contain"), "{html}");
}

#[test]
fn a_contested_seat_shows_each_key_with_a_button_that_gives_the_seat_to_that_key() {
    let page = Page::new();
    let newbie = TempChannel::agent("newbie");
    let first = match page.channel.view().identity().seat(&newbie) {
        Seat::Seated(key) => *key,
        other => panic!("{other:?}"),
    };
    // Another machine joined as newbie before the two synced.
    let interloper = SecretKey::generate().unwrap();
    let view = page.channel.view();
    view.channel()
        .writer(&newbie, &interloper)
        .unwrap()
        .append(kinds::ROSTER_JOIN, json!({}), page.channel.now())
        .unwrap();
    drop(view);

    let html = page.get("/p/demo/agents").text();
    assert_eq!(
        html.matches("Give the seat to this key").count(),
        2,
        "{html}"
    );
    for key in [first, interloper.public_key()] {
        let field = format!("name=\"key\" value=\"{key}\"");
        assert!(html.contains(&field), "{field} in {html}");
    }
    // The key on this machine is marked, once.
    assert_eq!(html.matches("this machine's key").count(), 1, "{html}");

    // What the first key's button posts.
    let (_, html) = page.post(
        "/p/demo/agents/level",
        &format!("name=newbie&key={first}&level=worker"),
    );
    assert!(html.contains("newbie is a worker."), "{html}");
    let view = page.channel.view();
    assert_eq!(view.identity().seat(&newbie), Seat::Seated(&first));
    assert_eq!(
        page.get("/p/demo/agents")
            .text()
            .matches("Give the seat to this key")
            .count(),
        0
    );
}

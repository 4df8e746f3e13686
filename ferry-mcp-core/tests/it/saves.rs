//! Saves of the kept state that must keep working whatever the channel holds (issue 17,
//! finding 9): an entry that does not count is folded as a void, never a state that cannot be
//! written. Before the kept state was a database, one `order.issue` by an agent that may not
//! issue, on a board with no counted order, made every later save fail while grants and posts
//! were still written.

use ferry_mcp_core::channel::home::KeyHolder;
use ferry_mcp_core::channel::levels::Level;
use ferry_mcp_core::channel::ops::{self, GrantRequest};
use ferry_mcp_core::channel::session::Session;
use ferry_mcp_core::channel::store::Channel;
use ferry_mcp_testkit::temp_channel::TempChannel;
use serde_json::json;

/// Opens the channel as an observer and saves it; returns how many bytes the save wrote.
fn save_view(temp: &TempChannel) -> Option<u64> {
    let mut view: Session = temp.view();
    view.save().expect("the save succeeds");
    view.last_save_bytes()
}

#[test]
fn an_order_issue_that_does_not_count_on_an_empty_board_leaves_every_later_save_working() {
    let temp = TempChannel::builder()
        .agent("fang", Level::Member)
        .build()
        .unwrap();
    let fang = TempChannel::agent("fang");
    let key = temp
        .home()
        .load_key(temp.project(), &KeyHolder::Agent(fang.clone()), temp.now())
        .unwrap();
    // Signed by fang's own key, past every check an operation makes: a Member may not issue.
    let channel = Channel::open(temp.channel_dir()).unwrap();
    let mut writer = channel.writer(&fang, &key).unwrap();
    writer
        .append("order.issue", json!({ "title": "forged" }), temp.now())
        .unwrap();
    drop(writer);

    assert!(save_view(&temp).is_some(), "the first save wrote the state");
    assert_eq!(
        titles(&temp),
        Vec::<String>::new(),
        "the forged order does not count"
    );

    // Later writes, each followed by a save that must succeed.
    let request = GrantRequest {
        level: Level::Orchestrator,
        scopes: Vec::new(),
        expires: None,
        key: None,
    };
    ops::access_set(temp.home(), temp.project(), &fang, &request, temp.now()).unwrap();
    assert!(save_view(&temp).is_some(), "a save after a grant");
    let issued = ops::orders::issue(
        &mut temp.master_session(),
        &ops::orders::IssueRequest {
            title: "real".into(),
            ..Default::default()
        },
        temp.now(),
    );
    assert!(issued.is_ok(), "{issued:?}");
    let mut master = temp.master_session();
    master.save().expect("a save after a counted order");
    assert_eq!(
        save_view(&temp),
        None,
        "nothing new: nothing written, and no failure"
    );
    assert_eq!(titles(&temp), vec!["real".to_owned()]);
}

/// The titles on the board, as the master lists it.
fn titles(temp: &TempChannel) -> Vec<String> {
    let request = ops::orders::ListRequest {
        all: true,
        since: None,
        limit: 100,
    };
    let mut master = temp.master_session();
    let list = ops::orders::list(&mut master, &request, temp.now()).unwrap();
    master.save().expect("a save after a list");
    list.rows.into_iter().map(|row| row.row.title).collect()
}

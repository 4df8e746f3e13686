//! Saves of the kept state that must keep working whatever the channel holds (issue 17,
//! finding 9): an entry that does not count is folded as a void, never a state that cannot be
//! written. Before the kept state was a database, one `order.issue` by an agent that may not
//! issue, on a board with no counted order, made every later save fail while grants and posts
//! were still written.

use ferry_mcp_core::channel::fold::levels::Level;
use ferry_mcp_core::channel::log::store::Channel;
use ferry_mcp_core::channel::machine::home::KeyHolder;
use ferry_mcp_core::channel::ops::{self, GrantRequest};
use ferry_mcp_core::channel::session::Session;
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

// ---- an operation that saves its own session succeeds when the save fails ----

/// Makes every save of the kept state fail (a trigger in its own database refuses every
/// write to its meta table, which works whoever runs the tests: root ignores a read-only
/// file), after a first save made the database.
fn refuse_saves(temp: &TempChannel) {
    save_view(temp);
    assert!(temp.home().verified_path(temp.project()).is_file());
    let conn = rusqlite::Connection::open(temp.home().verified_path(temp.project())).unwrap();
    conn.execute_batch(
        "CREATE TRIGGER refuse_insert BEFORE INSERT ON meta
             BEGIN SELECT RAISE(ABORT, 'simulated: the disk refuses every write'); END;
         CREATE TRIGGER refuse_update BEFORE UPDATE ON meta
             BEGIN SELECT RAISE(ABORT, 'simulated: the disk refuses every write'); END;",
    )
    .unwrap();
}

fn says_simulated(unsaved: Option<&ops::OpsError>) {
    let why = unsaved.map(ToString::to_string).unwrap_or_default();
    assert!(why.contains("simulated"), "says what was not kept: {why:?}");
}

fn member() -> GrantRequest {
    GrantRequest {
        level: Level::Member,
        scopes: Vec::new(),
        expires: None,
        key: None,
    }
}

#[test]
fn a_join_whose_save_fails_succeeds_once_and_says_what_was_not_kept() {
    let temp = TempChannel::builder()
        .agent("fang", Level::Worker)
        .build()
        .unwrap();
    refuse_saves(&temp);
    let gus = TempChannel::agent("gus");
    let joined = ops::join(temp.home(), temp.project(), &gus, None, temp.now()).unwrap();
    assert_eq!(joined.0, ops::Joined::Seated);
    says_simulated(joined.unsaved.as_ref());
    let again = ops::join(temp.home(), temp.project(), &gus, None, temp.now()).unwrap();
    assert_eq!(again.0, ops::Joined::AlreadySeated, "seated once");
}

#[test]
fn a_grant_whose_save_fails_succeeds_and_says_what_was_not_kept() {
    let temp = TempChannel::builder()
        .agent("fang", Level::Worker)
        .build()
        .unwrap();
    refuse_saves(&temp);
    let fang = TempChannel::agent("fang");
    let grant = ops::access_set(temp.home(), temp.project(), &fang, &member(), temp.now()).unwrap();
    assert_eq!(grant.level, Level::Member);
    says_simulated(grant.unsaved.as_ref());
    assert_eq!(
        temp.view().identity().standing(&fang, temp.now()).level,
        Level::Member
    );
}

#[test]
fn a_handover_whose_save_fails_succeeds_and_says_what_was_not_kept() {
    let temp = TempChannel::builder()
        .agent("fang", Level::Worker)
        .build()
        .unwrap();
    let next = ferry_mcp_core::channel::machine::home::Home::at(temp.root().join("next"));
    ops::add_existing(&next, temp.project(), temp.channel_dir()).unwrap();
    let new_key = ops::new_master_key(&next, temp.project(), None).unwrap();
    refuse_saves(&temp);
    let former = ops::master_handover(
        temp.home(),
        temp.project(),
        &new_key.key,
        &new_key.proof,
        temp.now(),
    )
    .unwrap();
    says_simulated(former.unsaved.as_ref());
    assert_eq!(temp.view().identity().master(), &new_key.key);
}

#[test]
fn a_level_shown_while_its_save_fails_is_shown_and_says_what_was_not_kept() {
    let temp = TempChannel::builder()
        .agent("fang", Level::Worker)
        .build()
        .unwrap();
    refuse_saves(&temp);
    // Something new to keep since the last save.
    let gus = TempChannel::agent("gus");
    let _ = ops::join(temp.home(), temp.project(), &gus, None, temp.now()).unwrap();
    let rows = ops::access_show(temp.home(), temp.project(), None, temp.now()).unwrap();
    assert_eq!(rows.len(), 2, "{:?}", *rows);
    says_simulated(rows.unsaved.as_ref());
}

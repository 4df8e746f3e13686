//! The order board follows the roster: when who holds a name changes, exactly the orders that
//! name appears in are judged again (`OrderBoard::rejudge_name`), on a fresh fold and on an
//! incremental one alike.

use ferry_mcp_core::channel::fold::identity::kinds;
use ferry_mcp_core::channel::fold::levels::Level;
use ferry_mcp_core::channel::fold::state::EntryId;
use ferry_mcp_core::channel::log::keys::SecretKey;
use ferry_mcp_core::channel::log::store::Channel;
use ferry_mcp_core::channel::ops::{self, GrantRequest, orders};
use ferry_mcp_core::channel::session::Session;
use ferry_mcp_testkit::temp_channel::TempChannel;
use serde_json::json;

fn handins(session: &mut Session, order: &str) -> usize {
    let id: EntryId = order.parse().unwrap();
    session.order(&id).unwrap().unwrap().view().handins.len()
}

#[test]
fn a_hand_in_stops_counting_while_its_name_is_contested_and_counts_again_once_granted() {
    let temp = TempChannel::with_each_level();
    let now = temp.now();
    let mut master = temp.master_session();
    let issue = |master: &mut Session, title: &str| {
        let request = orders::IssueRequest {
            title: title.into(),
            ..Default::default()
        };
        orders::issue(master, &request, now).unwrap()
    };
    let order = issue(&mut master, "the worker's order");
    let other = issue(&mut master, "the member's order");
    let mut worker = temp.agent_session("worker");
    orders::hand_in(&mut worker, &order, "abc123", "the work", now).unwrap();
    let mut member = temp.agent_session("member");
    orders::hand_in(&mut member, &other, "def456", "other work", now).unwrap();
    let mut watching = temp.view();
    assert_eq!(
        (
            handins(&mut watching, &order),
            handins(&mut watching, &other)
        ),
        (1, 1)
    );

    // A second key joins as `worker`: the name is contested, its hand-in does not count.
    let channel = Channel::open(temp.channel_dir()).unwrap();
    let worker_name = TempChannel::agent("worker");
    let mut intruder = channel
        .writer(&worker_name, &SecretKey::from_bytes(&[9; 32]))
        .unwrap();
    intruder.append(kinds::ROSTER_JOIN, json!({}), now).unwrap();
    watching.refresh(now);
    let mut fresh = temp.view();
    for session in [&mut watching, &mut fresh] {
        assert_eq!((handins(session, &order), handins(session, &other)), (0, 1));
    }

    // The master grants the first key: the name is seated again and the hand-in counts.
    let key = worker.local_key(now).unwrap().public().copied().unwrap();
    let grant = GrantRequest {
        level: Level::Worker,
        scopes: Vec::new(),
        expires: None,
        key: Some(key),
    };
    ops::access_set(temp.home(), temp.project(), &worker_name, &grant, now).unwrap();
    watching.refresh(now);
    let mut fresh = temp.view();
    for session in [&mut watching, &mut fresh] {
        assert_eq!((handins(session, &order), handins(session, &other)), (1, 1));
    }
}

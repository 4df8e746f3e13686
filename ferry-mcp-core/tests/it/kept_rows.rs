//! The kept state's folds that grow with the work (the order board, talk) are kept a row per
//! order and per message, so a save writes what changed and nothing else (issue 23, ADR
//! 0011): measured against the first save, which writes everything. And whatever order two
//! processes of one machine save in, what the next open reads is what the channel folds to;
//! a row changed under the kept state is caught by its digest.

use std::path::Path;

use ferry_mcp_core::channel::fold::levels::Level;
use ferry_mcp_core::channel::fold::state::Sections;
use ferry_mcp_core::channel::machine::home::Home;
use ferry_mcp_core::channel::ops;
use ferry_mcp_core::channel::session::{Actor, Session};
use ferry_mcp_testkit::bulk::{self, BulkChannel};
use ferry_mcp_testkit::temp_channel::TempChannel;

/// A bulk channel of 2,000 entries, half of them talk, its kept state saved; with the bytes
/// that first save wrote (everything).
fn busy_channel() -> (BulkChannel, u64) {
    let bulk = bulk::builder().entries(2_000).talk_percent(50).build();
    let warm = bulk.warm();
    let whole = warm.last_save_bytes().expect("the first save wrote");
    (bulk, whole)
}

fn members(bulk: &BulkChannel) -> (String, String) {
    let mut members = bulk
        .agents()
        .iter()
        .filter(|agent| agent.level == Level::Member)
        .map(|agent| agent.name.to_string());
    (members.next().unwrap(), members.next().unwrap())
}

/// A session with every fold loaded, as a server holds it.
fn loaded(temp: &TempChannel, actor: Actor) -> Session {
    let mut session = temp.session(actor);
    session.load(Sections::ALL, temp.now());
    session
}

fn post(session: &mut Session, temp: &TempChannel, to: &str, text: &str) {
    let request = ops::talk::PostRequest {
        to: to.into(),
        text: text.into(),
        reply_to: None,
    };
    ops::talk::post(session, &request, temp.now()).unwrap();
}

/// Every message for `reader` that counts, as `session` folded talk, by id (the order of
/// stamps is this machine's).
fn texts(session: &mut Session, reader: &str) -> Vec<String> {
    let reader = TempChannel::agent(reader);
    session.talk().unwrap();
    let mut texts: Vec<String> = session
        .state()
        .talk()
        .unwrap()
        .for_reader(&reader, session.identity(), 0, false)
        .map(|message| format!("{} {} {}", message.id, message.from, message.text))
        .collect();
    texts.sort();
    texts
}

fn order_states(session: &mut Session) -> Vec<String> {
    session
        .board()
        .unwrap()
        .iter()
        .map(|order| {
            format!(
                "{} {:?} {:?}",
                order.id(),
                order.brief().state,
                order.brief().holder
            )
        })
        .collect()
}

fn fresh_machine(temp: &TempChannel, tag: &str, actor: Actor) -> Session {
    let home = Home::at(temp.root().join(tag));
    ops::add_existing(&home, temp.project(), temp.channel_dir()).unwrap();
    let mut session = Session::open(&home, temp.project(), actor, temp.now()).unwrap();
    session.load(Sections::ALL, temp.now());
    session
}

#[test]
fn a_save_after_one_message_writes_that_message_and_not_every_message_again() {
    let (bulk, whole) = busy_channel();
    let (reader, writer) = members(&bulk);
    let mut server = loaded(&bulk, Actor::Agent(TempChannel::agent(&reader)));
    let mut other = bulk.agent_session(&writer);
    post(&mut other, &bulk, &reader, "the lexer is green");
    server.refresh(bulk.now());
    server.save().unwrap();
    let one = server.last_save_bytes().unwrap();
    // The core holds every log's position: a few KB. Talk's thousand messages are not
    // written again (before, its row was: about half of everything).
    assert!(
        one * 50 < whole,
        "a save after one message wrote {one} of {whole} bytes"
    );
    assert!(
        texts(&mut bulk.view(), &reader)
            .iter()
            .any(|text| text.ends_with("the lexer is green"))
    );
}

#[test]
fn a_save_after_one_claim_writes_that_order_and_not_every_order_again() {
    let (bulk, whole) = busy_channel();
    let (member, _) = members(&bulk);
    let mut master = bulk.master_session();
    let request = ops::orders::IssueRequest {
        title: "one more order".into(),
        ..Default::default()
    };
    let id = ops::orders::issue(&mut master, &request, bulk.now()).unwrap();
    let mut server = loaded(&bulk, Actor::Agent(TempChannel::agent(&member)));
    server.save().unwrap();
    ops::orders::claim(&mut server, &id, bulk.now()).unwrap();
    server.save().unwrap();
    let one = server.last_save_bytes().unwrap();
    // The board's hundred briefs are not written again (before, its row was), only the
    // claimed order's brief and record.
    assert!(
        one * 50 < whole,
        "a save after one claim wrote {one} of {whole} bytes"
    );
    let mut next = loaded(&bulk, Actor::Observer);
    assert_eq!(
        order_states(&mut next),
        order_states(&mut fresh_machine(&bulk, "fresh", Actor::Observer))
    );
}

#[test]
fn two_processes_saving_in_turn_leave_talk_and_the_board_as_the_channel_folds_them() {
    let (bulk, _) = busy_channel();
    let (first, second) = members(&bulk);
    let first_name = TempChannel::agent(&first);
    let second_name = TempChannel::agent(&second);
    // Two servers of this machine, each with every fold loaded from the same kept state.
    let mut one = loaded(&bulk, Actor::Agent(first_name));
    let mut two = loaded(&bulk, Actor::Agent(second_name));
    let mut master = bulk.master_session();
    for round in 0..3 {
        post(&mut one, &bulk, "all", &format!("round {round} from one"));
        one.save().unwrap();
        // Two saves what it folded since its own last save, after one saved: its rows
        // would be laid over one's.
        post(&mut two, &bulk, &first, &format!("round {round} from two"));
        let request = ops::orders::IssueRequest {
            title: format!("order of round {round}"),
            ..Default::default()
        };
        let id = ops::orders::issue(&mut master, &request, bulk.now()).unwrap();
        two.refresh(bulk.now());
        ops::orders::claim(&mut two, &id, bulk.now()).unwrap();
        two.save().unwrap();
        one.refresh(bulk.now());
    }
    one.save().unwrap();
    let mut fresh = fresh_machine(&bulk, "fresh", Actor::Observer);
    let mut next = loaded(&bulk, Actor::Observer);
    assert_eq!(texts(&mut next, &first), texts(&mut fresh, &first));
    assert_eq!(texts(&mut next, &second), texts(&mut fresh, &second));
    assert_eq!(order_states(&mut next), order_states(&mut fresh));
    assert_eq!(next.local_problems(), &[] as &[String]);
    next.refresh(bulk.now());
    assert_eq!(next.local_problems(), &[] as &[String]);
}

/// Flips one bit in the middle of a message's row of the kept state at `path`, its digest
/// left as it was.
fn flip_a_message_row(path: &Path) {
    let conn = rusqlite::Connection::open(path).unwrap();
    let (key, save, mut value): (Vec<u8>, i64, Vec<u8>) = conn
        .query_row(
            "SELECT key, save, value FROM items WHERE fold = 'talk' AND value IS NOT NULL
             ORDER BY key LIMIT 1 OFFSET 10",
            [],
            |row| Ok((row.get(0)?, row.get(1)?, row.get(2)?)),
        )
        .unwrap();
    let at = value.len() / 2;
    value[at] ^= 0x01;
    conn.execute(
        "UPDATE items SET value = ?1 WHERE fold = 'talk' AND key = ?2 AND save = ?3",
        rusqlite::params![value, key, save],
    )
    .unwrap();
}

#[test]
fn a_message_row_changed_in_the_kept_state_is_caught_and_talk_is_read_from_the_channel() {
    let (bulk, _) = busy_channel();
    let (reader, _) = members(&bulk);
    flip_a_message_row(&bulk.verified_path());
    let mut view = bulk.view();
    let read = texts(&mut view, &reader);
    let local = view.local_problems().to_vec();
    assert_eq!(local.len(), 1, "{local:?}");
    assert!(local[0].contains("talk row does not match"), "{local:?}");
    assert!(!read.is_empty());
    assert_eq!(
        read,
        texts(&mut fresh_machine(&bulk, "fresh", Actor::Observer), &reader)
    );
}

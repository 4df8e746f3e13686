//! A session holds only talk's newest messages in memory; the rest stay in the kept state's
//! rows and are read back when asked for (ADR 0011, "Talk paged"; issue 23, item 2). What a
//! reader sees is the same as with every message in memory, and what is kept is the same as a
//! fold of the whole channel.

use ferry_mcp_core::channel::fold::levels::Level;
use ferry_mcp_core::channel::log::names::AgentName;
use ferry_mcp_core::channel::ops::fleet::{self, DigestLimits};
use ferry_mcp_core::channel::ops::search::{self, SearchRequest};
use ferry_mcp_core::channel::ops::talk::{self, ReadRequest};
use ferry_mcp_core::channel::session::{Actor, Session};
use ferry_mcp_core::time::Timestamp;
use ferry_mcp_testkit::bulk::{self, BulkChannel};

/// Messages a paged session holds in memory here: far fewer than the channel's 600.
const WINDOW: usize = 50;

fn channel() -> BulkChannel {
    let bulk = bulk::builder().entries(2_000).talk_percent(30).build();
    drop(bulk.warm());
    bulk
}

fn member(bulk: &BulkChannel) -> AgentName {
    bulk.agent_at(Level::Member).clone()
}

/// The agent's session holding only the newest [`WINDOW`] messages in memory.
fn paged_session(bulk: &BulkChannel, agent: &AgentName) -> Session {
    let mut session = bulk.agent_session(agent.as_str());
    session.set_talk_window(WINDOW);
    session
}

/// A read that marks what it gives: `limit` messages, no receipts.
fn marking_page(limit: usize) -> ReadRequest {
    ReadRequest {
        peek: false,
        since: None,
        limit,
        receipts: 0,
    }
}

fn peek_all() -> ReadRequest {
    ReadRequest {
        peek: true,
        since: None,
        limit: 1_000,
        receipts: 3,
    }
}

#[test]
fn a_session_holding_only_the_newest_messages_reads_every_older_one_back_as_a_whole_fold_shows_it()
{
    let bulk = channel();
    let agent = member(&bulk);
    let mut paged = paged_session(&bulk, &agent);
    let talk = paged.talk().unwrap();
    assert!(talk.paged_through() > 0, "the oldest messages stay kept");
    assert!(
        talk.len() <= WINDOW + 8 * bulk.agents().len(),
        "{}",
        talk.len()
    );
    let mut whole = bulk.agent_session(agent.as_str());
    assert_eq!(whole.talk().unwrap().paged_through(), 0);
    let now = bulk.now();

    let read_paged = talk::read(&mut paged, &peek_all(), &mut |_| true, now).unwrap();
    let read_whole = talk::read(&mut whole, &peek_all(), &mut |_| true, now).unwrap();
    assert!(
        read_whole.messages.len() > WINDOW,
        "{}",
        read_whole.messages.len()
    );
    assert_eq!(read_paged.messages, read_whole.messages);
    assert_eq!(read_paged.more, read_whole.more);
    assert_eq!(read_paged.sent, read_whole.sent);

    let oldest = &read_whole.messages[0].id;
    assert_eq!(
        talk::message_text(&mut paged, oldest, now).unwrap(),
        talk::message_text(&mut whole, oldest, now).unwrap()
    );

    let query = SearchRequest {
        query: "note 1".into(),
        cursor: None,
        limit: 50,
    };
    let found_paged = search::search(&mut paged, &query, now).unwrap();
    let found_whole = search::search(&mut whole, &query, now).unwrap();
    assert!(found_whole.total > 20, "{}", found_whole.total);
    assert_eq!(found_paged, found_whole);

    let digest_paged = fleet::catchup(&mut paged, None, DigestLimits::DEFAULT, now).unwrap();
    let digest_whole = fleet::catchup(&mut whole, None, DigestLimits::DEFAULT, now).unwrap();
    assert_eq!(
        (digest_paged.unread, digest_paged.unread_more),
        (digest_whole.unread, digest_whole.unread_more)
    );

    // New messages, then a save that pages more out: what the session remembered of its last
    // read among the paged-out messages still gives what a whole fold shows.
    let other = bulk
        .agents()
        .iter()
        .find(|a| a.name != agent && a.level >= Level::Member)
        .unwrap()
        .name
        .clone();
    let mut writer = bulk.agent_session(other.as_str());
    for n in 0..WINDOW + 10 {
        let post = talk::PostRequest {
            to: agent.to_string(),
            text: format!("later note {n}: the lexer is green"),
            reply_to: None,
        };
        talk::post(&mut writer, &post, now).unwrap();
    }
    paged.refresh(now);
    let before = paged.talk().unwrap().paged_through();
    paged.save().unwrap();
    assert!(paged.talk().unwrap().paged_through() > before);
    whole.refresh(now);
    for limit in [5, 1_000] {
        let request = ReadRequest {
            limit,
            ..peek_all()
        };
        assert_eq!(
            talk::read(&mut paged, &request, &mut |_| true, now)
                .unwrap()
                .messages,
            talk::read(&mut whole, &request, &mut |_| true, now)
                .unwrap()
                .messages,
            "{limit}"
        );
    }
    let digest_paged = fleet::catchup(&mut paged, None, DigestLimits::DEFAULT, now).unwrap();
    let digest_whole = fleet::catchup(&mut whole, None, DigestLimits::DEFAULT, now).unwrap();
    assert_eq!(
        (digest_paged.unread, digest_paged.unread_more),
        (digest_whole.unread, digest_whole.unread_more)
    );
}

#[test]
fn a_reader_behind_the_messages_paged_out_marks_what_it_read_and_the_kept_talk_is_the_whole_fold_s()
{
    let bulk = channel();
    let agent = member(&bulk);
    let now = bulk.now();
    let mut paged = paged_session(&bulk, &agent);
    // Its first read marks the oldest messages for it, far behind the newest in memory.
    let first = marking_page(20);
    let read = talk::read(&mut paged, &first, &mut |_| true, now).unwrap();
    assert!(read.marked && read.more);
    paged.refresh(now);
    paged.save().unwrap();
    let unread_paged = fleet::catchup(&mut paged, None, DigestLimits::DEFAULT, now).unwrap();
    paged.save().unwrap();
    drop(paged);

    // What the kept state holds of talk (its read-throughs included) is what a machine that
    // folds the whole channel makes of it.
    let mut kept = kept_talk_is_the_whole_fold_s(&bulk, &agent, now);
    let unread_whole = fleet::catchup(&mut kept, None, DigestLimits::DEFAULT, now).unwrap();
    assert_eq!(
        (unread_paged.unread, unread_paged.unread_more),
        (unread_whole.unread, unread_whole.unread_more)
    );
    let next_paged = talk::read(
        &mut paged_session(&bulk, &agent),
        &peek_all(),
        &mut |_| true,
        now,
    )
    .unwrap()
    .messages;
    let next_whole = talk::read(&mut kept, &peek_all(), &mut |_| true, now)
        .unwrap()
        .messages;
    assert_eq!(next_paged, next_whole);
}

#[test]
fn a_grant_folded_by_a_session_holding_few_messages_works_every_read_through_out_as_a_whole_fold_does()
 {
    use ferry_mcp_core::channel::ops::access::{GrantRequest, access_set};
    let bulk = channel();
    let agent = member(&bulk);
    let now = bulk.now();
    let mut reader = paged_session(&bulk, &agent);
    let first = marking_page(20);
    assert!(
        talk::read(&mut reader, &first, &mut |_| true, now)
            .unwrap()
            .marked
    );
    reader.save().unwrap();

    // The master demotes a sender of the reader's messages: whether each message counts, and
    // so every read-through, is worked out again.
    let sender = bulk
        .agents()
        .iter()
        .find(|a| a.name != agent && a.level == Level::Member)
        .unwrap()
        .name
        .clone();
    let request = GrantRequest {
        level: Level::Worker,
        scopes: Vec::new(),
        expires: None,
        key: None,
    };
    access_set(bulk.home(), bulk.project(), &sender, &request, now).unwrap();
    reader.refresh(now);
    reader.save().unwrap();
    drop(reader);

    kept_talk_is_the_whole_fold_s(&bulk, &agent, now);
}

#[test]
fn a_reader_that_reads_and_marks_a_page_at_a_time_through_the_messages_paged_out_is_given_what_a_whole_fold_gives()
 {
    // Two copies of one channel (the bulk builder is deterministic): one read by a session
    // holding few messages, the other by a session holding them all, each the same calls.
    let (bulk, twin) = (channel(), channel());
    let agent = member(&bulk);
    let now = bulk.now();
    let mut paged = paged_session(&bulk, &agent);
    let mut whole = twin.agent_session(agent.as_str());
    assert!(paged.talk().unwrap().paged_through() > 0);
    assert_eq!(whole.talk().unwrap().paged_through(), 0);
    let writer = |channel: &BulkChannel| {
        let name = channel
            .agents()
            .iter()
            .find(|a| a.name != agent && a.level >= Level::Member)
            .unwrap()
            .name
            .clone();
        channel.agent_session(name.as_str())
    };
    let (mut writes, mut twin_writes) = (writer(&bulk), writer(&twin));
    let page = marking_page(7);
    let mut given = 0;
    for round in 0..40 {
        let read_paged = talk::read(&mut paged, &page, &mut |_| true, now).unwrap();
        let read_whole = talk::read(&mut whole, &page, &mut |_| true, now).unwrap();
        assert_eq!(read_paged.messages, read_whole.messages, "round {round}");
        assert_eq!(read_paged.more, read_whole.more, "round {round}");
        given += read_paged.messages.len();
        let digest_paged = fleet::catchup(&mut paged, None, DigestLimits::DEFAULT, now).unwrap();
        let digest_whole = fleet::catchup(&mut whole, None, DigestLimits::DEFAULT, now).unwrap();
        assert_eq!(
            (digest_paged.unread, digest_paged.unread_more),
            (digest_whole.unread, digest_whole.unread_more),
            "round {round}"
        );
        if round % 9 == 4 {
            // New messages, and a save that pages more out under the reader's reads.
            for (session, channel) in [(&mut writes, &bulk), (&mut twin_writes, &twin)] {
                let post = talk::PostRequest {
                    to: "all".into(),
                    text: format!("round {round}: the lexer is green"),
                    reply_to: None,
                };
                talk::post(session, &post, channel.now()).unwrap();
            }
            paged.refresh(now);
            whole.refresh(now);
            paged.save().unwrap();
        }
    }
    assert!(given > 200, "{given}");
}

#[test]
fn a_reader_marking_page_after_page_of_what_its_last_read_brought_back_reads_no_row_again_nor_does_the_fold_of_its_marks()
 {
    let bulk = channel();
    let agent = member(&bulk);
    let now = bulk.now();
    let mut paged = paged_session(&bulk, &agent);
    let page = marking_page(4);
    // The first read brings back the messages paged out it may show next (a few pages' worth).
    let first = talk::read(&mut paged, &page, &mut |_| true, now).unwrap();
    assert!(first.marked && first.more);
    let brought_back = paged.talk_rows_read();
    assert!(brought_back > 0);
    for round in 0..6 {
        let read = talk::read(&mut paged, &page, &mut |_| true, now).unwrap();
        assert!(read.marked && read.more, "round {round}");
        assert_eq!(read.messages.len(), 4, "round {round}");
        // Neither the read nor the fold of its mark (the reader's read-through walked over
        // the messages paged out) read a row: both walked what the first read brought back.
        assert_eq!(paged.talk_rows_read(), brought_back, "round {round}");
    }
    let talk = paged.talk().unwrap();
    assert!(
        talk.reader_behind_paged(&agent),
        "the reads stayed among the messages paged out"
    );
    paged.save().unwrap();
    drop(paged);
    kept_talk_is_the_whole_fold_s(&bulk, &agent, now);
}

/// Asserts that what `agent`'s kept state holds of talk is what a machine folding the whole
/// channel makes of it; the kept session, to go on with.
fn kept_talk_is_the_whole_fold_s(bulk: &BulkChannel, agent: &AgentName, now: Timestamp) -> Session {
    let mut kept = bulk.agent_session(agent.as_str());
    let mut fresh = Session::open_read_only(
        bulk.home(),
        bulk.project(),
        Actor::Agent(agent.clone()),
        now,
    )
    .unwrap();
    assert_eq!(kept.talk().unwrap(), fresh.talk().unwrap());
    kept
}

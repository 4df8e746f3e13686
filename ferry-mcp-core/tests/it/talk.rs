//! Talk through `ops::talk`: a read gives only what is new for its reader, each reader keeps
//! its own marker (in its own log, so it follows the agent to another machine), broadcasts
//! reach every seated agent, receipts tell a sender who has read its message, long texts go to
//! a blob, and what may not post is refused with the reason (and nothing written).

use std::fs;
use std::path::Path;

use ferry_mcp_core::channel::fold::levels::{Level, Refusal};
use ferry_mcp_core::channel::fold::state::EntryId;
use ferry_mcp_core::channel::fold::state::talk::MAX_INLINE_TEXT;
use ferry_mcp_core::channel::machine::home::{Home, KeyHolder};
use ferry_mcp_core::channel::ops::talk::TalkError;
use ferry_mcp_core::channel::ops::talk::{self, PostRequest, ReadRequest, ReadResult};
use ferry_mcp_core::channel::ops::{self, OpsError};
use ferry_mcp_core::channel::session::{Actor, Session};
use ferry_mcp_testkit::temp_channel::TempChannel;

/// Project `demo` with Members alice, bob and carol, and a Worker, wendy.
fn fleet() -> TempChannel {
    TempChannel::builder()
        .agent("alice", Level::Member)
        .agent("bob", Level::Member)
        .agent("carol", Level::Member)
        .agent("wendy", Level::Worker)
        .build()
        .unwrap()
}

fn post_as(session: &mut Session, temp: &TempChannel, to: &str, text: &str) -> String {
    let request = PostRequest {
        to: to.into(),
        text: text.into(),
        reply_to: None,
    };
    talk::post(session, &request, temp.now()).unwrap()
}

/// `from` posts `text` to `to`; returns the message's id.
fn post(temp: &TempChannel, from: &str, to: &str, text: &str) -> String {
    post_as(&mut temp.agent_session(from), temp, to, text)
}

/// The error `from` gets posting `text` to `to`.
fn post_err(session: &mut Session, temp: &TempChannel, to: &str, text: &str) -> TalkError {
    let request = PostRequest {
        to: to.into(),
        text: text.into(),
        reply_to: None,
    };
    talk::post(session, &request, temp.now()).unwrap_err()
}

fn request(peek: bool, limit: usize) -> ReadRequest {
    ReadRequest {
        peek,
        since: None,
        limit,
        receipts: 8,
    }
}

fn read_in(session: &mut Session, temp: &TempChannel, request: &ReadRequest) -> ReadResult {
    talk::read(session, request, &mut |_| true, temp.now()).unwrap()
}

/// `reader` reads what is new (and its marker moves past it).
fn read(temp: &TempChannel, reader: &str) -> ReadResult {
    read_in(
        &mut temp.agent_session(reader),
        temp,
        &request(false, usize::MAX),
    )
}

fn texts(result: &ReadResult) -> Vec<&str> {
    result
        .messages
        .iter()
        .map(|message| message.text.as_str())
        .collect()
}

/// How many bytes the logs of the channel folder hold, all authors together.
fn logs_len(dir: &Path) -> u64 {
    let mut total = 0;
    for author in fs::read_dir(dir.join("logs")).unwrap() {
        for log in fs::read_dir(author.unwrap().path()).unwrap() {
            total += log.unwrap().metadata().unwrap().len();
        }
    }
    total
}

fn copy_dir(from: &Path, to: &Path) {
    fs::create_dir_all(to).unwrap();
    for entry in fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            fs::copy(entry.path(), &target).unwrap();
        }
    }
}

#[test]
fn a_read_gives_only_the_messages_not_read_yet_and_a_second_read_gives_nothing() {
    let temp = fleet();
    post(
        &temp,
        "alice",
        "bob",
        "the build is green, you can start on the docs",
    );
    let first = read(&temp, "bob");
    assert_eq!(
        texts(&first),
        ["the build is green, you can start on the docs"]
    );
    assert_eq!(first.messages[0].from.as_str(), "alice");
    assert_eq!(first.messages[0].to, "bob");
    assert!(first.marked);

    let second = read(&temp, "bob");
    assert!(second.messages.is_empty(), "{second:?}");

    post(&temp, "alice", "bob", "and the release notes too");
    assert_eq!(texts(&read(&temp, "bob")), ["and the release notes too"]);
    assert!(read(&temp, "bob").messages.is_empty());
}

#[test]
fn one_readers_marker_never_hides_a_message_from_another() {
    let temp = fleet();
    post(&temp, "alice", "all", "standup in five minutes");
    assert_eq!(texts(&read(&temp, "bob")), ["standup in five minutes"]);
    assert!(read(&temp, "bob").messages.is_empty());
    // Bob's marker is his own: carol still has the message to read.
    assert_eq!(texts(&read(&temp, "carol")), ["standup in five minutes"]);
    assert!(read(&temp, "carol").messages.is_empty());
}

#[test]
fn a_message_to_one_agent_reaches_only_that_agent() {
    let temp = fleet();
    post(&temp, "alice", "bob", "for bob only");
    assert!(read(&temp, "carol").messages.is_empty());
    assert!(read(&temp, "wendy").messages.is_empty());
    assert_eq!(texts(&read(&temp, "bob")), ["for bob only"]);
}

#[test]
fn a_broadcast_reaches_every_seated_agent_but_its_sender() {
    let temp = fleet();
    post(
        &temp,
        "alice",
        "all",
        "the main branch is frozen until noon",
    );
    for reader in ["bob", "carol", "wendy"] {
        let result = read(&temp, reader);
        assert_eq!(
            texts(&result),
            ["the main branch is frozen until noon"],
            "{reader}"
        );
        assert_eq!(result.messages[0].to, "all");
    }
    assert!(read(&temp, "alice").messages.is_empty());
}

#[test]
fn a_peek_leaves_the_marker_so_the_next_read_gives_the_message_again() {
    let temp = fleet();
    post(&temp, "alice", "bob", "look at order m3 when you can");
    let peeked = read_in(
        &mut temp.agent_session("bob"),
        &temp,
        &request(true, usize::MAX),
    );
    assert_eq!(texts(&peeked), ["look at order m3 when you can"]);
    assert!(!peeked.marked);
    assert_eq!(peeked.unmarked, Some("peek"));
    assert_eq!(
        texts(&read(&temp, "bob")),
        ["look at order m3 when you can"]
    );
    assert!(read(&temp, "bob").messages.is_empty());
}

#[test]
fn a_read_on_a_paused_machine_gives_the_messages_but_leaves_them_unread() {
    let temp = fleet();
    post(&temp, "alice", "bob", "please rebase on main");
    let logs_before = logs_len(temp.channel_dir());
    ops::pause(temp.home(), "maintenance", temp.now()).unwrap();

    let paused = read(&temp, "bob");
    assert_eq!(texts(&paused), ["please rebase on main"]);
    assert!(!paused.marked);
    assert_eq!(paused.unmarked, Some("paused"));
    assert_eq!(
        logs_len(temp.channel_dir()),
        logs_before,
        "a paused machine writes no marker"
    );
    assert_eq!(texts(&read(&temp, "bob")), ["please rebase on main"]);

    ops::resume(temp.home()).unwrap();
    assert_eq!(texts(&read(&temp, "bob")), ["please rebase on main"]);
    assert!(read(&temp, "bob").messages.is_empty());
}

#[test]
fn the_marker_follows_the_agent_to_another_machine() {
    let temp = fleet();
    post(&temp, "alice", "bob", "first: pick up order m2");
    post(&temp, "alice", "bob", "second: then order m4");
    // Bob reads only the first here.
    let here = read_in(&mut temp.agent_session("bob"), &temp, &request(false, 1));
    assert_eq!(texts(&here), ["first: pick up order m2"]);
    assert!(here.more && here.marked);

    // The channel folder synced to a second machine that holds bob's key.
    let other = tempfile::tempdir().unwrap();
    let channel = other.path().join("channel");
    copy_dir(temp.channel_dir(), &channel);
    let home = Home::at(other.path().join("home"));
    ops::add_existing(&home, temp.project(), &channel).unwrap();
    let bob = KeyHolder::Agent(TempChannel::agent("bob"));
    let key = temp
        .home()
        .load_key(temp.project(), &bob, temp.now())
        .unwrap();
    home.store_key(temp.project(), &bob, &key, None).unwrap();

    let mut there = Session::open(
        &home,
        temp.project(),
        Actor::Agent(TempChannel::agent("bob")),
        temp.now(),
    )
    .unwrap();
    let result = read_in(&mut there, &temp, &request(false, usize::MAX));
    assert_eq!(texts(&result), ["second: then order m4"]);
    assert!(
        read_in(&mut there, &temp, &request(false, usize::MAX))
            .messages
            .is_empty()
    );
}

#[test]
fn a_worker_posting_is_refused_for_its_level_and_nothing_is_written() {
    let temp = fleet();
    let before = logs_len(temp.channel_dir());
    let err = post_err(
        &mut temp.agent_session("wendy"),
        &temp,
        "alice",
        "may I take order m2?",
    );
    eprintln!("a worker posting got: {}: {err}", err.code());
    assert_eq!(err.code(), "missing_level");
    assert!(
        matches!(
            &err,
            TalkError::Ops(OpsError::Refused(Refusal::MissingLevel {
                needed: Level::Member,
                has: Level::Worker,
                ..
            }))
        ),
        "{err:?}"
    );
    assert_eq!(logs_len(temp.channel_dir()), before);
}

#[test]
fn an_unseated_agent_posting_is_told_to_join_the_channel() {
    let temp = fleet();
    let before = logs_len(temp.channel_dir());
    let mut ghost = temp.session(Actor::Agent(TempChannel::agent("ghost")));
    let err = post_err(&mut ghost, &temp, "alice", "hello, anyone there?");
    eprintln!("an unseated agent posting got: {}: {err}", err.code());
    assert_eq!(err.code(), "unseated");
    let fix = match &err {
        TalkError::Ops(OpsError::Refused(refusal)) => refusal.fix(),
        _ => None,
    };
    assert_eq!(
        fix.map(|fix| fix.command()).as_deref(),
        Some("ferry channel join --as ghost --project demo"),
        "{err}"
    );
    assert_eq!(logs_len(temp.channel_dir()), before);
}

#[test]
fn a_post_on_a_paused_machine_is_refused_until_resume() {
    let temp = fleet();
    ops::pause(temp.home(), "maintenance", temp.now()).unwrap();
    let before = logs_len(temp.channel_dir());
    let err = post_err(
        &mut temp.agent_session("alice"),
        &temp,
        "bob",
        "the docs are done",
    );
    eprintln!("a paused agent posting got: {}: {err}", err.code());
    assert_eq!(err.code(), "paused");
    assert!(err.to_string().contains("maintenance"), "{err}");
    assert_eq!(logs_len(temp.channel_dir()), before);

    ops::resume(temp.home()).unwrap();
    post(&temp, "alice", "bob", "the docs are done");
}

#[test]
fn an_unknown_recipient_is_refused_with_the_names_it_could_have_meant() {
    let temp = fleet();
    let before = logs_len(temp.channel_dir());
    let err = post_err(
        &mut temp.agent_session("alice"),
        &temp,
        "bobb",
        "are you there?",
    );
    assert_eq!(err.code(), "unknown_recipient");
    match &err {
        TalkError::UnknownRecipient { name, suggestions } => {
            assert_eq!(name, "bobb");
            assert_eq!(suggestions, &["bob".to_owned()]);
        }
        other => panic!("not an unknown recipient: {other:?}"),
    }
    assert!(err.to_string().contains("did you mean bob?"), "{err}");
    assert_eq!(logs_len(temp.channel_dir()), before, "not written anywhere");
    // Nobody received it, under any name.
    for reader in ["bob", "carol", "wendy"] {
        assert!(read(&temp, reader).messages.is_empty(), "{reader}");
    }
}

#[test]
fn a_recipient_nothing_is_close_to_is_refused_with_the_names_one_may_post_to() {
    let temp = fleet();
    let err = post_err(
        &mut temp.agent_session("alice"),
        &temp,
        "zed",
        "are you there?",
    );
    assert_eq!(err.code(), "unknown_recipient");
    assert!(err.to_string().contains("`master`"), "{err}");
}

#[test]
fn a_reply_to_an_unknown_message_is_refused() {
    let temp = fleet();
    let before = logs_len(temp.channel_dir());
    let request = PostRequest {
        to: "bob".into(),
        text: "agreed".into(),
        reply_to: Some("bob-99".into()),
    };
    let err = talk::post(&mut temp.agent_session("alice"), &request, temp.now()).unwrap_err();
    assert_eq!(err.code(), "unknown_message");
    assert!(err.to_string().contains("bob-99"), "{err}");
    assert_eq!(logs_len(temp.channel_dir()), before);
}

#[test]
fn a_reply_names_the_message_it_answers() {
    let temp = fleet();
    let question = post(&temp, "alice", "bob", "can you review m2?");
    read(&temp, "bob");
    let request = PostRequest {
        to: "alice".into(),
        text: "yes, after lunch".into(),
        reply_to: Some(question.clone()),
    };
    talk::post(&mut temp.agent_session("bob"), &request, temp.now()).unwrap();
    let answer = read(&temp, "alice");
    assert_eq!(texts(&answer), ["yes, after lunch"]);
    assert_eq!(answer.messages[0].reply_to, Some(question));
}

#[test]
fn the_senders_read_shows_whether_the_one_recipient_has_read_its_message() {
    let temp = fleet();
    let id = post(&temp, "alice", "bob", "order m2 is yours");
    let before = read(&temp, "alice");
    let receipt = before.sent.iter().find(|r| r.id == id).unwrap();
    assert_eq!(receipt.to, "bob");
    assert!(receipt.read.is_empty());
    assert_eq!(names(&receipt.unread), ["bob"]);

    read(&temp, "bob");
    let after = read(&temp, "alice");
    let receipt = after.sent.iter().find(|r| r.id == id).unwrap();
    assert_eq!(names(&receipt.read), ["bob"]);
    assert!(receipt.unread.is_empty());
}

#[test]
fn the_senders_read_shows_who_of_all_has_read_its_broadcast() {
    let temp = fleet();
    let id = post(&temp, "alice", "all", "lunch break, back at two");
    read(&temp, "bob");
    // A peek is not a read.
    read_in(
        &mut temp.agent_session("carol"),
        &temp,
        &request(true, usize::MAX),
    );
    let result = read(&temp, "alice");
    let receipt = result.sent.iter().find(|r| r.id == id).unwrap();
    assert_eq!(receipt.to, "all");
    assert_eq!(names(&receipt.read), ["bob"]);
    assert_eq!(names(&receipt.unread), ["carol", "wendy"]);

    read(&temp, "carol");
    read(&temp, "wendy");
    let result = read(&temp, "alice");
    let receipt = result.sent.iter().find(|r| r.id == id).unwrap();
    assert_eq!(names(&receipt.read), ["bob", "carol", "wendy"]);
    assert!(receipt.unread.is_empty());
    assert!(!receipt.more_unread);
}

#[test]
fn a_broadcast_s_receipt_on_a_large_roster_names_who_read_it_and_the_first_who_did_not() {
    use ferry_mcp_core::channel::ops::talk::UNREAD_NAMED;
    let bulk = ferry_mcp_testkit::bulk::builder()
        .entries(100)
        .names(UNREAD_NAMED as u64 + 10)
        .build();
    let mut members = bulk
        .agents()
        .iter()
        .filter(|agent| agent.level == Level::Member)
        .map(|agent| agent.name.to_string());
    let (sender, reader) = (members.next().unwrap(), members.next().unwrap());
    let id = post(&bulk, &sender, "all", "the build is green");
    read(&bulk, &reader);
    let result = read(&bulk, &sender);
    let receipt = result.sent.iter().find(|r| r.id == id).unwrap();
    assert_eq!(names(&receipt.read), [reader.as_str()]);
    assert_eq!(receipt.unread.len(), UNREAD_NAMED);
    assert!(
        receipt.more_unread,
        "more than {UNREAD_NAMED} have not read it"
    );
    let session = bulk.view();
    let seated: Vec<&str> = session
        .identity()
        .names()
        .map(|(name, _)| name.as_str())
        .filter(|name| *name != sender && *name != reader)
        .filter(|name| {
            let name = ferry_mcp_core::channel::log::names::AgentName::parse(name).unwrap();
            session.identity().holder(&name).is_some()
        })
        .take(UNREAD_NAMED)
        .collect();
    assert_eq!(names(&receipt.unread), seated, "the first in name order");
}

fn names(list: &[ferry_mcp_core::channel::log::names::AgentName]) -> Vec<&str> {
    list.iter().map(|name| name.as_str()).collect()
}

/// Ordinary prose of `len` characters (no code, no secret).
fn long_text(len: usize) -> String {
    let sentence = "The migration ran on every machine of the fleet and the numbers look right. ";
    sentence.chars().cycle().take(len).collect()
}

#[test]
fn a_long_post_keeps_its_first_300_characters_in_the_entry_and_the_whole_in_a_blob() {
    let temp = fleet();
    let text = long_text(1_200);
    let id = post(&temp, "alice", "bob", &text);

    let mut view = temp.view();
    view.talk().unwrap();
    let message = view
        .state()
        .talk()
        .unwrap()
        .message(&id.parse::<EntryId>().unwrap(), view.identity())
        .unwrap();
    assert_eq!(message.text.chars().count(), MAX_INLINE_TEXT);
    assert_eq!(message.text, text.chars().take(300).collect::<String>());
    let blob = message.blob.as_ref().expect("the whole text is in a blob");
    let bytes = view.channel().get_blob(&blob.parse().unwrap()).unwrap();
    assert_eq!(String::from_utf8(bytes).unwrap(), text);

    let result = read(&temp, "bob");
    assert_eq!(result.messages.len(), 1);
    assert!(result.messages[0].long);
    assert_eq!(result.messages[0].text.chars().count(), MAX_INLINE_TEXT);

    let whole = talk::message_text(&mut temp.agent_session("bob"), &id, temp.now()).unwrap();
    assert!(whole.ends_with(&text), "{whole}");
}

#[test]
fn a_post_of_exactly_300_characters_stays_in_the_entry() {
    let temp = fleet();
    let text = long_text(MAX_INLINE_TEXT);
    let id = post(&temp, "alice", "bob", &text);
    let mut view = temp.view();
    view.talk().unwrap();
    let message = view
        .state()
        .talk()
        .unwrap()
        .message(&id.parse::<EntryId>().unwrap(), view.identity())
        .unwrap();
    assert_eq!(message.text, text);
    assert!(message.blob.is_none());
    assert!(!read(&temp, "bob").messages[0].long);
}

#[test]
fn a_message_the_human_sends_reaches_the_agent_and_a_message_to_master_reaches_the_human() {
    let temp = fleet();
    let mut master = temp.master_session();
    post_as(&mut master, &temp, "bob", "please take m2 today");
    assert_eq!(texts(&read(&temp, "bob")), ["please take m2 today"]);

    post(&temp, "bob", "master", "m2 taken");
    let human = read_in(&mut master, &temp, &request(false, usize::MAX));
    assert_eq!(texts(&human), ["m2 taken"]);
    assert!(
        read_in(&mut master, &temp, &request(false, usize::MAX))
            .messages
            .is_empty()
    );
}

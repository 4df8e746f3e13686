//! The channel's signed per-author logs: format vectors, writing, incremental reading, cursors,
//! blobs and the genesis file.

use std::fs;
use std::path::{Path, PathBuf};

use ferry_mcp_core::channel::log::entry::{Entry, EntryHash, decode_line};
use ferry_mcp_core::channel::log::keys::SecretKey;
use ferry_mcp_core::channel::log::names::{AgentName, ProjectId};
use ferry_mcp_core::channel::log::reader::{ProblemKind, ReadBatch};
use ferry_mcp_core::channel::log::store::{BlobId, Channel, StoreError};
use ferry_mcp_core::time::Timestamp;
use serde_json::json;

/// The RFC 8032 test-1 secret key: fixed, so the vectors below never change.
pub(crate) const VECTOR_SECRET: &str =
    "9d61b19deffd5a60ba844af492ec2cc44449c5697b326919703bac031cae7f60";

pub(crate) const NOW: Timestamp = Timestamp::from_millis(1_767_225_600_000);

pub(crate) fn key(seed: u8) -> SecretKey {
    SecretKey::from_bytes(&[seed; 32])
}

pub(crate) fn name(raw: &str) -> AgentName {
    AgentName::parse(raw).unwrap()
}

pub(crate) fn project(raw: &str) -> ProjectId {
    ProjectId::parse(raw).unwrap()
}

/// A channel for project `demo` with master key seed 100, in `dir`.
pub(crate) fn demo_channel(dir: &Path) -> Channel {
    Channel::create(dir, &project("demo"), &key(100), NOW).unwrap()
}

/// Appends `count` entries of kind `note` with bodies `{"n": i}` (i from 1).
pub(crate) fn append_notes(channel: &Channel, author: &str, key: &SecretKey, count: u64) {
    let mut writer = channel.writer(&name(author), key).unwrap();
    for n in 1..=count {
        writer.append("note", json!({ "n": n }), NOW).unwrap();
    }
}

/// A demo channel in `dir` where alice (key seed 1) has written `count` notes; returns it and
/// alice's log path.
pub(crate) fn alice_notes(dir: &Path, count: u64) -> (Channel, PathBuf) {
    let channel = demo_channel(dir);
    append_notes(&channel, "alice", &key(1), count);
    let path = channel.log_path(&name("alice"), &key(1).public_key());
    (channel, path)
}

/// `(author, seq)` of every entry in a batch, in order.
pub(crate) fn seqs(batch: &ReadBatch) -> Vec<(String, u64)> {
    batch
        .entries
        .iter()
        .map(|e| (e.author().to_string(), e.seq()))
        .collect()
}

pub(crate) fn kinds(batch: &ReadBatch) -> Vec<ProblemKind> {
    batch.problems.iter().map(|p| p.kind).collect()
}

#[test]
fn the_format_vectors_are_fixed() {
    let secret = SecretKey::from_hex(VECTOR_SECRET).unwrap();
    // RFC 8032 test 1: the key derivation is the standard one.
    assert_eq!(
        secret.public_key().to_hex(),
        "d75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a"
    );
    let first = Entry {
        project: project("demo"),
        author: name("alice"),
        key: secret.public_key(),
        seq: 1,
        prev: None,
        kind: "roster.join".to_owned(),
        time: NOW,
        body: json!({"name": "alice", "about": "writes tests"}),
    }
    .sign(&secret)
    .unwrap();
    let second = Entry {
        project: project("demo"),
        author: name("alice"),
        key: secret.public_key(),
        seq: 2,
        prev: Some(*first.entry.hash()),
        kind: "talk.post".to_owned(),
        time: Timestamp::from_millis(NOW.as_millis() + 1_000),
        body: json!({"text": "hello"}),
    }
    .sign(&secret)
    .unwrap();
    let vectors = format!(
        "public key: {}\nline 1: {}\nhash 1: {}\nsig 1: {}\nline 2: {}\nhash 2: {}\nsig 2: {}\n",
        secret.public_key(),
        first.line,
        first.entry.hash(),
        first.entry.signature(),
        second.line,
        second.entry.hash(),
        second.entry.signature(),
    );
    insta::assert_snapshot!(vectors);
    // The docs quote these lines; decoding them gives the same entries back.
    assert_eq!(decode_line(first.line.as_bytes()).unwrap(), first.entry);
    assert_eq!(decode_line(second.line.as_bytes()).unwrap(), second.entry);
}

#[test]
fn the_genesis_file_is_fixed_and_names_the_project_and_master() {
    let dir = tempfile::tempdir().unwrap();
    let secret = SecretKey::from_hex(VECTOR_SECRET).unwrap();
    let channel = Channel::create(dir.path(), &project("demo"), &secret, NOW).unwrap();
    insta::assert_snapshot!(fs::read_to_string(dir.path().join("genesis.json")).unwrap());
    let opened = Channel::open(dir.path()).unwrap();
    assert_eq!(opened.project(), &project("demo"));
    assert_eq!(opened.genesis_master(), &secret.public_key());
    assert_eq!(channel.genesis_master(), opened.genesis_master());
}

#[test]
fn a_channel_is_created_only_once() {
    let dir = tempfile::tempdir().unwrap();
    demo_channel(dir.path());
    let again = Channel::create(dir.path(), &project("other"), &key(1), NOW);
    assert!(matches!(again, Err(StoreError::AlreadyExists(_))));
    assert_eq!(
        Channel::open(dir.path()).unwrap().project(),
        &project("demo")
    );
}

#[test]
fn a_genesis_file_with_a_changed_master_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    demo_channel(dir.path());
    let path = dir.path().join("genesis.json");
    let text = fs::read_to_string(&path).unwrap();
    let forged = text.replace(
        &key(100).public_key().to_hex(),
        &key(1).public_key().to_hex(),
    );
    fs::write(&path, forged).unwrap();
    assert!(matches!(
        Channel::open(dir.path()),
        Err(StoreError::GenesisSignature)
    ));
}

#[test]
fn opening_a_folder_without_genesis_says_it_is_not_a_channel() {
    let dir = tempfile::tempdir().unwrap();
    assert!(matches!(
        Channel::open(dir.path()),
        Err(StoreError::NotAChannel(_))
    ));
}

#[test]
fn appended_entries_chain_and_read_back_in_order() {
    let dir = tempfile::tempdir().unwrap();
    let channel = demo_channel(dir.path());
    let alice = key(1);
    let mut writer = channel.writer(&name("alice"), &alice).unwrap();
    let one = writer.append("note", json!({"n": 1}), NOW).unwrap();
    let two = writer.append("note", json!({"n": 2}), NOW).unwrap();
    assert_eq!((one.seq(), one.prev()), (1, None));
    assert_eq!((two.seq(), two.prev()), (2, Some(one.hash())));
    assert_eq!(
        writer.path(),
        dir.path()
            .join("logs/alice")
            .join(format!("{}.jsonl", alice.public_key()))
    );

    let batch = channel.reader().poll();
    assert_eq!(batch.problems, vec![]);
    assert_eq!(batch.entries, vec![one, two]);
}

#[test]
fn the_master_writes_its_own_log_under_the_reserved_name() {
    let dir = tempfile::tempdir().unwrap();
    let channel = demo_channel(dir.path());
    let mut writer = channel.writer(&AgentName::master(), &key(100)).unwrap();
    writer
        .append("grant", json!({"agent": "alice", "level": "member"}), NOW)
        .unwrap();
    let batch = channel.reader().poll();
    assert_eq!(seqs(&batch), vec![("master".to_owned(), 1)]);
    assert_eq!(batch.entries[0].key(), channel.genesis_master());
}

#[test]
fn a_poll_reads_only_what_is_new() {
    let dir = tempfile::tempdir().unwrap();
    let channel = demo_channel(dir.path());
    append_notes(&channel, "alice", &key(1), 3);
    let mut reader = channel.reader();
    assert_eq!(reader.poll().entries.len(), 3);
    assert_eq!(reader.poll().entries.len(), 0);

    let mut writer = channel.writer(&name("alice"), &key(1)).unwrap();
    writer.append("note", json!({"n": 4}), NOW).unwrap();
    append_notes(&channel, "bob", &key(2), 1);
    let batch = reader.poll();
    assert_eq!(
        seqs(&batch),
        vec![("alice".to_owned(), 4), ("bob".to_owned(), 1)]
    );
}

#[test]
fn logs_are_delivered_master_first_then_in_author_then_key_order() {
    let dir = tempfile::tempdir().unwrap();
    let channel = demo_channel(dir.path());
    append_notes(&channel, "carol", &key(3), 1);
    append_notes(&channel, "alice", &key(1), 2);
    append_notes(&channel, "bob", &key(2), 1);
    let mut master = channel.writer(&AgentName::master(), &key(4)).unwrap();
    master.append("note", json!({ "n": 1 }), NOW).unwrap();
    let batch = channel.reader().poll();
    assert_eq!(
        seqs(&batch),
        vec![
            ("master".to_owned(), 1),
            ("alice".to_owned(), 1),
            ("alice".to_owned(), 2),
            ("bob".to_owned(), 1),
            ("carol".to_owned(), 1)
        ]
    );
}

#[test]
fn a_second_writer_continues_the_chain_of_the_first() {
    let dir = tempfile::tempdir().unwrap();
    let channel = demo_channel(dir.path());
    let mut first = channel.writer(&name("alice"), &key(1)).unwrap();
    let mut second = channel.writer(&name("alice"), &key(1)).unwrap();
    let a = first.append("note", json!({}), NOW).unwrap();
    let b = second.append("note", json!({}), NOW).unwrap();
    let c = first.append("note", json!({}), NOW).unwrap();
    assert_eq!((a.seq(), b.seq(), c.seq()), (1, 2, 3));
    assert_eq!(c.prev(), Some(b.hash()));
    let batch = channel.reader().poll();
    assert_eq!(batch.problems, vec![]);
    assert_eq!(batch.entries.len(), 3);
}

#[test]
fn a_blob_is_stored_by_its_hash_and_checked_when_read() {
    let dir = tempfile::tempdir().unwrap();
    let channel = demo_channel(dir.path());
    let id = channel.put_blob(b"a long body").unwrap();
    assert_eq!(id, BlobId::of(b"a long body"));
    assert_eq!(channel.put_blob(b"a long body").unwrap(), id);
    assert_eq!(channel.get_blob(&id).unwrap(), b"a long body");

    fs::write(dir.path().join("blobs").join(id.to_hex()), b"edited").unwrap();
    assert!(matches!(
        channel.get_blob(&id),
        Err(StoreError::BlobCorrupt(_))
    ));
    let absent = BlobId::of(b"never stored");
    assert!(matches!(
        channel.get_blob(&absent),
        Err(StoreError::BlobMissing(_))
    ));
}

#[cfg(unix)]
#[test]
fn a_symbolic_link_in_place_of_a_blob_is_not_followed() {
    let dir = tempfile::tempdir().unwrap();
    let outside = tempfile::tempdir().unwrap();
    let channel = demo_channel(dir.path());
    // Even a link to a file with exactly the right bytes is refused: nothing outside the
    // channel folder is read (a link to /dev/zero would never end).
    let target = outside.path().join("secret");
    fs::write(&target, b"outside").unwrap();
    let id = BlobId::of(b"outside");
    std::os::unix::fs::symlink(&target, dir.path().join("blobs").join(id.to_hex())).unwrap();
    assert!(matches!(
        channel.get_blob(&id),
        Err(StoreError::BlobCorrupt(_))
    ));
    // Storing the blob replaces the link with the real file.
    assert_eq!(channel.put_blob(b"outside").unwrap(), id);
    assert_eq!(channel.get_blob(&id).unwrap(), b"outside");
    assert_eq!(fs::read(&target).unwrap(), b"outside");
}

#[cfg(unix)]
#[test]
fn a_genesis_file_that_is_a_symbolic_link_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let real = tempfile::tempdir().unwrap();
    demo_channel(real.path());
    fs::create_dir_all(dir.path().join("logs")).unwrap();
    std::os::unix::fs::symlink(
        real.path().join("genesis.json"),
        dir.path().join("genesis.json"),
    )
    .unwrap();
    let err = Channel::open(dir.path()).unwrap_err();
    assert_eq!(
        err.to_string(),
        "genesis.json is malformed: not a regular file"
    );
}

#[test]
fn an_append_after_a_torn_tail_starts_a_fresh_line_and_continues_the_chain() {
    let dir = tempfile::tempdir().unwrap();
    let (channel, path) = alice_notes(dir.path(), 2);
    // A crash in the middle of writing entry 3.
    let mut bytes = fs::read(&path).unwrap();
    bytes.extend_from_slice(b"{\"entry\":{\"v\":1,\"proj");
    fs::write(&path, &bytes).unwrap();

    let mut writer = channel.writer(&name("alice"), &key(1)).unwrap();
    let next = writer.append("note", json!({"n": 3}), NOW).unwrap();
    assert_eq!(next.seq(), 3);

    let batch = channel.reader().poll();
    assert_eq!(seqs(&batch).len(), 3);
    assert_eq!(batch.entries[2].prev(), Some(batch.entries[1].hash()));
    assert_eq!(kinds(&batch), vec![ProblemKind::TornLine]);
    assert_eq!(batch.problems[0].line, Some(3));
}

#[test]
fn a_copy_of_an_older_line_appended_to_a_log_does_not_set_back_the_writer() {
    let dir = tempfile::tempdir().unwrap();
    let (channel, path) = alice_notes(dir.path(), 5);
    // Someone with write access to the synced folder replays alice's second line.
    let text = fs::read_to_string(&path).unwrap();
    let second = text.lines().nth(1).unwrap().to_owned();
    fs::write(&path, format!("{text}{second}\n")).unwrap();

    let mut writer = channel.writer(&name("alice"), &key(1)).unwrap();
    assert_eq!(
        writer.append("note", json!({"n": 6}), NOW).unwrap().seq(),
        6
    );
    let batch = channel.reader().poll();
    let alice: Vec<u64> = batch.entries.iter().map(|e| e.seq()).collect();
    assert_eq!(alice, vec![1, 2, 3, 4, 5, 6]);
    assert_eq!(batch.entries[5].prev(), Some(batch.entries[4].hash()));
    assert_eq!(kinds(&batch), vec![ProblemKind::DuplicateSeq]);
    assert_eq!(batch.problems[0].line, Some(6));
}

#[test]
fn an_entry_that_lost_only_its_newline_is_completed_not_forked() {
    let dir = tempfile::tempdir().unwrap();
    let (channel, path) = alice_notes(dir.path(), 2);
    let mut bytes = fs::read(&path).unwrap();
    assert_eq!(bytes.pop(), Some(b'\n'));
    fs::write(&path, &bytes).unwrap();

    let mut writer = channel.writer(&name("alice"), &key(1)).unwrap();
    assert_eq!(writer.append("note", json!({}), NOW).unwrap().seq(), 3);
    let batch = channel.reader().poll();
    assert_eq!(batch.problems, vec![]);
    assert_eq!(batch.entries.len(), 3);
}

#[test]
fn an_incomplete_last_line_is_read_once_it_is_complete() {
    let dir = tempfile::tempdir().unwrap();
    let (channel, path) = alice_notes(dir.path(), 2);
    let full = fs::read(&path).unwrap();
    let second_line_start = full.iter().position(|&b| b == b'\n').unwrap() + 1;
    fs::write(&path, &full[..second_line_start + 30]).unwrap();

    let mut reader = channel.reader();
    let batch = reader.poll();
    assert_eq!(seqs(&batch), vec![("alice".to_owned(), 1)]);
    assert_eq!(kinds(&batch), vec![ProblemKind::TornLine]);
    // Reported once, not on every poll.
    assert_eq!(reader.poll().problems, vec![]);

    fs::write(&path, &full).unwrap();
    let batch = reader.poll();
    assert_eq!(seqs(&batch), vec![("alice".to_owned(), 2)]);
    assert_eq!(batch.problems, vec![]);
}

#[test]
fn an_oversized_entry_is_refused_before_anything_is_written() {
    let dir = tempfile::tempdir().unwrap();
    let channel = demo_channel(dir.path());
    let mut writer = channel.writer(&name("alice"), &key(1)).unwrap();
    let huge = "x".repeat(300 * 1024);
    let refused = writer.append("note", json!({ "text": huge }), NOW);
    assert!(matches!(refused, Err(StoreError::EntryTooLarge { .. })));
    assert_eq!(writer.append("note", json!({}), NOW).unwrap().seq(), 1);
}

#[test]
fn a_bad_kind_is_refused_when_writing() {
    let dir = tempfile::tempdir().unwrap();
    let channel = demo_channel(dir.path());
    let mut writer = channel.writer(&name("alice"), &key(1)).unwrap();
    assert!(matches!(
        writer.append("Not A Kind", json!({}), NOW),
        Err(StoreError::Entry(_))
    ));
}

/// An error and its sources as one line, the way anyhow's `{:#}` prints them (the binary's
/// error line): every message, joined by ": ".
pub(crate) fn chain_text(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}

#[test]
fn a_store_error_names_its_cause_once() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("file");
    fs::write(&file, "").unwrap();
    let io = Channel::open(&file.join("channel")).unwrap_err();
    assert!(matches!(io, StoreError::Io { .. }), "{io:?}");
    let cause = std::io::Error::from_raw_os_error(20).to_string();
    assert_eq!(
        chain_text(&io).matches(&cause).count(),
        1,
        "{}",
        chain_text(&io)
    );
    assert!(chain_text(&io).contains(&*file.to_string_lossy()));

    let channel = demo_channel(dir.path());
    let mut writer = channel.writer(&name("alice"), &key(1)).unwrap();
    let entry = writer.append("Not A Kind", json!({}), NOW).unwrap_err();
    assert!(matches!(entry, StoreError::Entry(_)), "{entry:?}");
    assert_eq!(
        chain_text(&entry),
        r#"bad entry: entry kind "Not A Kind" is not 1 to 64 of a-z, 0-9, '.', '-', '_'"#
    );
}

#[test]
fn the_entry_hash_is_the_sha256_of_the_raw_entry_bytes() {
    let secret = key(1);
    let signed = Entry {
        project: project("demo"),
        author: name("alice"),
        key: secret.public_key(),
        seq: 1,
        prev: None,
        kind: "note".to_owned(),
        time: NOW,
        body: json!({}),
    }
    .sign(&secret)
    .unwrap();
    let raw = signed.entry.entry().to_bytes();
    assert!(signed.line.contains(std::str::from_utf8(&raw).unwrap()));
    assert_eq!(signed.entry.hash(), &EntryHash::of(&raw));
}

#[cfg(unix)]
#[test]
fn a_writer_refuses_to_append_through_a_planted_symbolic_link() {
    let dir = tempfile::tempdir().unwrap();
    let outside = tempfile::tempdir().unwrap();
    let channel = demo_channel(dir.path());
    let target = outside.path().join("victim");
    fs::write(&target, b"").unwrap();
    let path = channel.log_path(&name("alice"), &key(1).public_key());
    fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::os::unix::fs::symlink(&target, &path).unwrap();

    let refused = channel.writer(&name("alice"), &key(1));
    assert!(matches!(refused, Err(StoreError::NotRegular(_))));
    assert_eq!(fs::read(&target).unwrap(), b"");
}

#[test]
fn a_crash_at_any_byte_of_an_append_never_corrupts_the_chain() {
    let dir = tempfile::tempdir().unwrap();
    let (channel, path) = alice_notes(dir.path(), 2);
    let base = fs::read(&path).unwrap();
    let tip = channel.reader().poll().entries[1].clone();
    // The line a crashed append of entry 3 was writing.
    let interrupted = Entry {
        project: project("demo"),
        author: name("alice"),
        key: key(1).public_key(),
        seq: 3,
        prev: Some(*tip.hash()),
        kind: "note".to_owned(),
        time: NOW,
        body: json!({"n": "interrupted"}),
    }
    .sign(&key(1))
    .unwrap()
    .line;
    for cut in (0..=interrupted.len())
        .step_by(5)
        .chain([interrupted.len()])
    {
        let mut bytes = base.clone();
        bytes.extend_from_slice(&interrupted.as_bytes()[..cut]);
        fs::write(&path, &bytes).unwrap();

        let mut writer = channel.writer(&name("alice"), &key(1)).unwrap();
        let appended = writer.append("note", json!({"n": "after"}), NOW).unwrap();
        let batch = channel.reader().poll();
        let whole = cut == interrupted.len();
        // The whole line only lacked its newline: it is entry 3 and the append is entry 4.
        assert_eq!(appended.seq(), if whole { 4 } else { 3 }, "cut at {cut}");
        assert_eq!(batch.entries.last(), Some(&appended), "cut at {cut}");
        for pair in batch.entries.windows(2) {
            assert_eq!(pair[1].prev(), Some(pair[0].hash()), "cut at {cut}");
        }
        let expected = if cut == 0 || whole {
            vec![]
        } else {
            vec![ProblemKind::TornLine]
        };
        assert_eq!(kinds(&batch), expected, "cut at {cut}");
    }
}

//! Tampered channels: each bad record is excluded, everything else still reads, and the
//! problem is reported with its kind.

use std::fs;
use std::path::{Path, PathBuf};

use ferry_mcp_core::channel::entry::Entry;
use ferry_mcp_core::channel::names::AgentName;
use ferry_mcp_core::channel::reader::{IntegrityProblem, ProblemKind};
use ferry_mcp_core::channel::store::Channel;
use serde_json::json;

use crate::channel_log::{NOW, append_notes, demo_channel, key, kinds, name, project, seqs};

fn lines(path: &Path) -> Vec<String> {
    fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(str::to_owned)
        .collect()
}

fn write_lines(path: &Path, lines: &[String]) {
    let mut text = lines.join("\n");
    text.push('\n');
    fs::write(path, text).unwrap();
}

/// A channel where alice has written five notes; returns it and alice's log path.
fn alice_with_five_notes(dir: &Path) -> (Channel, PathBuf) {
    let channel = demo_channel(dir);
    append_notes(&channel, "alice", &key(1), 5);
    append_notes(&channel, "bob", &key(2), 2);
    let path = channel.log_path(&name("alice"), &key(1).public_key());
    (channel, path)
}

fn alice_seqs(channel: &Channel) -> (Vec<u64>, Vec<IntegrityProblem>) {
    let batch = channel.reader().poll();
    let alice: Vec<u64> = batch
        .entries
        .iter()
        .filter(|e| e.author().as_str() == "alice")
        .map(|e| e.seq())
        .collect();
    let bob = seqs(&batch)
        .into_iter()
        .filter(|(author, _)| author == "bob")
        .count();
    assert_eq!(bob, 2, "the untouched log still reads in full");
    (alice, batch.problems)
}

fn problem_at(problems: &[IntegrityProblem], line: u64) -> ProblemKind {
    problems
        .iter()
        .find(|p| p.line == Some(line))
        .unwrap_or_else(|| panic!("no problem at line {line}: {problems:?}"))
        .kind
}

#[test]
fn an_edited_entry_is_excluded_and_reported_as_a_bad_signature() {
    let dir = tempfile::tempdir().unwrap();
    let (channel, path) = alice_with_five_notes(dir.path());
    let mut log = lines(&path);
    log[2] = log[2].replace("{\"n\":3}", "{\"n\":300}");
    write_lines(&path, &log);

    let (alice, problems) = alice_seqs(&channel);
    assert_eq!(alice, vec![1, 2, 4, 5]);
    assert_eq!(problem_at(&problems, 3), ProblemKind::BadSignature);
    // The gap the excluded entry leaves is reported too.
    assert_eq!(problem_at(&problems, 4), ProblemKind::MissingEntries);
}

#[test]
fn a_removed_entry_is_reported_as_missing_and_later_entries_still_read() {
    let dir = tempfile::tempdir().unwrap();
    let (channel, path) = alice_with_five_notes(dir.path());
    let mut log = lines(&path);
    log.remove(2);
    write_lines(&path, &log);

    let (alice, problems) = alice_seqs(&channel);
    assert_eq!(alice, vec![1, 2, 4, 5]);
    assert_eq!(
        kinds(&channel.reader().poll()),
        vec![ProblemKind::MissingEntries]
    );
    assert_eq!(problems[0].detail, "entry 3 is missing");
}

#[test]
fn swapped_lines_exclude_the_late_entry_as_out_of_order() {
    let dir = tempfile::tempdir().unwrap();
    let (channel, path) = alice_with_five_notes(dir.path());
    let mut log = lines(&path);
    log.swap(2, 3);
    write_lines(&path, &log);

    let (alice, problems) = alice_seqs(&channel);
    assert_eq!(alice, vec![1, 2, 4, 5]);
    assert_eq!(problem_at(&problems, 3), ProblemKind::MissingEntries);
    assert_eq!(problem_at(&problems, 4), ProblemKind::OutOfOrder);
}

#[test]
fn a_forged_signature_is_excluded_and_reported() {
    let dir = tempfile::tempdir().unwrap();
    let (channel, path) = alice_with_five_notes(dir.path());
    let mut log = lines(&path);
    // Mallory re-signs alice's entry 3 with her own key; the entry still names alice's key.
    let (raw, _) = log[2]
        .strip_prefix("{\"entry\":")
        .unwrap()
        .rsplit_once(",\"sig\":")
        .unwrap();
    let mut message = b"ferry-channel-entry-v1\n".to_vec();
    message.extend_from_slice(raw.as_bytes());
    let forged = key(9).sign(&message);
    log[2] = format!("{{\"entry\":{raw},\"sig\":\"{forged}\"}}");
    write_lines(&path, &log);

    let (alice, problems) = alice_seqs(&channel);
    assert_eq!(alice, vec![1, 2, 4, 5]);
    assert_eq!(problem_at(&problems, 3), ProblemKind::BadSignature);
}

#[test]
fn an_entry_naming_another_actor_than_its_signer_is_excluded() {
    let dir = tempfile::tempdir().unwrap();
    let (channel, _) = alice_with_five_notes(dir.path());
    let mallory = key(9);
    append_notes(&channel, "mallory", &mallory, 1);
    let mallory_first = channel
        .reader()
        .poll()
        .entries
        .into_iter()
        .find(|e| e.author().as_str() == "mallory")
        .unwrap();
    // Mallory signs an entry "by alice" and puts it in her own log.
    let as_alice = Entry {
        project: project("demo"),
        author: name("alice"),
        key: mallory.public_key(),
        seq: 2,
        prev: Some(*mallory_first.hash()),
        kind: "note".to_owned(),
        time: NOW,
        body: json!({"n": 2}),
    }
    .sign(&mallory)
    .unwrap();
    let path = channel.log_path(&name("mallory"), &mallory.public_key());
    let mut log = lines(&path);
    log.push(as_alice.line);
    write_lines(&path, &log);

    let batch = channel.reader().poll();
    assert!(
        batch
            .entries
            .iter()
            .all(|e| e.key() != &mallory.public_key() || e.author().as_str() == "mallory")
    );
    assert_eq!(
        batch
            .entries
            .iter()
            .filter(|e| e.author().as_str() == "alice")
            .count(),
        5
    );
    assert_eq!(kinds(&batch), vec![ProblemKind::ForgedAuthor]);
    assert_eq!(batch.problems[0].line, Some(2));
}

#[test]
fn an_entry_signed_by_another_key_than_its_log_is_excluded() {
    let dir = tempfile::tempdir().unwrap();
    let (channel, path) = alice_with_five_notes(dir.path());
    let mallory = key(9);
    let alice_fifth = *channel.reader().poll().entries[4].hash();
    // Validly signed by mallory, naming alice and mallory's key, inside alice's log.
    let sneaked = Entry {
        project: project("demo"),
        author: name("alice"),
        key: mallory.public_key(),
        seq: 6,
        prev: Some(alice_fifth),
        kind: "note".to_owned(),
        time: NOW,
        body: json!({}),
    }
    .sign(&mallory)
    .unwrap();
    let mut log = lines(&path);
    log.push(sneaked.line);
    write_lines(&path, &log);

    let (alice, problems) = alice_seqs(&channel);
    assert_eq!(alice, vec![1, 2, 3, 4, 5]);
    assert_eq!(problem_at(&problems, 6), ProblemKind::WrongKey);
}

#[test]
fn a_grant_replayed_from_another_project_is_excluded() {
    let dir = tempfile::tempdir().unwrap();
    let other_dir = tempfile::tempdir().unwrap();
    let channel = demo_channel(dir.path());
    // The human uses the same master key for a second project and grants there.
    let other = Channel::create(other_dir.path(), &project("other"), &key(100), NOW).unwrap();
    let mut master_here = channel.writer(&AgentName::master(), &key(100)).unwrap();
    master_here
        .append("grant", json!({"agent": "bob", "level": "member"}), NOW)
        .unwrap();
    let mut master_there = other.writer(&AgentName::master(), &key(100)).unwrap();
    master_there
        .append("grant", json!({"agent": "bob", "level": "member"}), NOW)
        .unwrap();
    master_there
        .append(
            "grant",
            json!({"agent": "alice", "level": "orchestrator"}),
            NOW,
        )
        .unwrap();

    // Replay the second grant of `other` (seq 2, chained) into this project's master log.
    let there = lines(&other.log_path(&AgentName::master(), &key(100).public_key()));
    let here_path = channel.log_path(&AgentName::master(), &key(100).public_key());
    let mut here = lines(&here_path);
    here.push(there[1].clone());
    write_lines(&here_path, &here);

    let batch = channel.reader().poll();
    assert_eq!(batch.entries.len(), 1);
    assert_eq!(batch.entries[0].body()["agent"], "bob");
    assert_eq!(kinds(&batch), vec![ProblemKind::WrongProject]);
    assert_eq!(batch.problems[0].line, Some(2));
}

#[test]
fn a_torn_last_line_is_excluded_and_reported() {
    let dir = tempfile::tempdir().unwrap();
    let (channel, path) = alice_with_five_notes(dir.path());
    let bytes = fs::read(&path).unwrap();
    fs::write(&path, &bytes[..bytes.len() - 40]).unwrap();

    let (alice, problems) = alice_seqs(&channel);
    assert_eq!(alice, vec![1, 2, 3, 4]);
    assert_eq!(problem_at(&problems, 5), ProblemKind::TornLine);
}

#[test]
fn a_forked_log_keeps_the_first_entry_of_a_seq() {
    let dir = tempfile::tempdir().unwrap();
    let (channel, path) = alice_with_five_notes(dir.path());
    let alice = key(1);
    let fork = Entry {
        project: project("demo"),
        author: name("alice"),
        key: alice.public_key(),
        seq: 5,
        prev: Some(*channel.reader().poll().entries[3].hash()),
        kind: "note".to_owned(),
        time: NOW,
        body: json!({"fork": true}),
    }
    .sign(&alice)
    .unwrap();
    let mut log = lines(&path);
    log.push(fork.line);
    write_lines(&path, &log);

    let batch = channel.reader().poll();
    let fifth: Vec<_> = batch
        .entries
        .iter()
        .filter(|e| e.author().as_str() == "alice" && e.seq() == 5)
        .collect();
    assert_eq!(fifth.len(), 1);
    assert_eq!(fifth[0].body(), &json!({"n": 5}));
    assert_eq!(kinds(&batch), vec![ProblemKind::DuplicateSeq]);
}

#[test]
fn conflict_copies_temporary_and_unknown_files_are_skipped_and_reported_once() {
    let dir = tempfile::tempdir().unwrap();
    let (channel, path) = alice_with_five_notes(dir.path());
    let alice_dir = path.parent().unwrap();
    let conflict = alice_dir.join(format!(
        "{}.sync-conflict-20260101-120000-ABCDEFG.jsonl",
        key(1).public_key()
    ));
    fs::copy(&path, &conflict).unwrap();
    fs::write(alice_dir.join(".ferry-tmp-abc123"), b"half").unwrap();
    fs::write(alice_dir.join("notes.txt"), b"hi").unwrap();
    fs::write(dir.path().join("README"), b"hi").unwrap();
    fs::create_dir(dir.path().join("logs/Alice")).unwrap();

    let mut reader = channel.reader();
    let batch = reader.poll();
    assert_eq!(batch.entries.len(), 7);
    let mut found: Vec<(String, ProblemKind)> = batch
        .problems
        .iter()
        .map(|p| (p.path.display().to_string(), p.kind))
        .collect();
    found.sort();
    let conflict_rel = format!(
        "logs/alice/{}",
        conflict.file_name().unwrap().to_string_lossy()
    );
    let mut expected = vec![
        ("README".to_owned(), ProblemKind::UnknownFile),
        ("logs/Alice".to_owned(), ProblemKind::UnknownFile),
        (
            "logs/alice/.ferry-tmp-abc123".to_owned(),
            ProblemKind::TempFile,
        ),
        (conflict_rel, ProblemKind::ConflictCopy),
        ("logs/alice/notes.txt".to_owned(), ProblemKind::UnknownFile),
    ];
    expected.sort();
    assert_eq!(found, expected);
    assert_eq!(reader.poll().problems, vec![]);
}

#[test]
fn a_truncated_log_is_reported_and_not_delivered_twice() {
    let dir = tempfile::tempdir().unwrap();
    let (channel, path) = alice_with_five_notes(dir.path());
    let mut reader = channel.reader();
    assert_eq!(reader.poll().entries.len(), 7);
    let mut log = lines(&path);
    log.truncate(3);
    write_lines(&path, &log);

    let batch = reader.poll();
    assert_eq!(batch.entries, vec![]);
    assert_eq!(kinds(&batch), vec![ProblemKind::Truncated]);
}

#[test]
fn problems_display_as_one_status_line() {
    let dir = tempfile::tempdir().unwrap();
    let (channel, path) = alice_with_five_notes(dir.path());
    let mut log = lines(&path);
    log.remove(1);
    write_lines(&path, &log);
    let batch = channel.reader().poll();
    assert_eq!(
        batch.problems[0].to_string(),
        format!(
            "logs/alice/{}.jsonl:2: missing_entries: entry 2 is missing",
            key(1).public_key()
        )
    );
}

#[test]
fn a_log_that_disappears_is_reported_once() {
    let dir = tempfile::tempdir().unwrap();
    let (channel, path) = alice_with_five_notes(dir.path());
    let mut reader = channel.reader();
    assert_eq!(reader.poll().entries.len(), 7);
    fs::remove_file(&path).unwrap();

    let batch = reader.poll();
    assert_eq!(kinds(&batch), vec![ProblemKind::Unreadable]);
    assert_eq!(reader.poll().problems, vec![]);
}

#[test]
fn an_overlong_line_is_skipped_without_losing_the_entries_after_it() {
    let dir = tempfile::tempdir().unwrap();
    let (channel, path) = alice_with_five_notes(dir.path());
    let mut log = lines(&path);
    log.insert(2, "x".repeat(600 * 1024));
    write_lines(&path, &log);

    let (alice, problems) = alice_seqs(&channel);
    assert_eq!(alice, vec![1, 2, 3, 4, 5]);
    assert_eq!(problem_at(&problems, 3), ProblemKind::Malformed);
    assert_eq!(problems.len(), 1);
}

#[test]
fn no_single_changed_byte_is_ever_delivered_as_an_entry() {
    let dir = tempfile::tempdir().unwrap();
    let (channel, path) = alice_with_five_notes(dir.path());
    let original = fs::read(&path).unwrap();
    let genuine: Vec<_> = channel
        .reader()
        .poll()
        .entries
        .iter()
        .map(|e| *e.hash())
        .collect();
    // A fixed linear congruential sequence: reproducible positions and values.
    let mut state: u64 = 0x5eed;
    let mut next = move || {
        state = state
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        state >> 33
    };
    for _ in 0..300 {
        let mut bytes = original.clone();
        let at = next() as usize % bytes.len();
        let value = (next() % 256) as u8;
        if bytes[at] == value {
            continue;
        }
        bytes[at] = value;
        fs::write(&path, &bytes).unwrap();
        let batch = channel.reader().poll();
        for entry in &batch.entries {
            assert!(
                genuine.contains(entry.hash()),
                "changing byte {at} to {value:#04x} produced an entry that was never written"
            );
        }
        let alice = batch
            .entries
            .iter()
            .filter(|e| e.author().as_str() == "alice")
            .count();
        // Only a changed newline (two lines merged into one) costs two entries.
        let lost_at_most = if original[at] == b'\n' { 2 } else { 1 };
        assert!(
            alice >= 5 - lost_at_most,
            "one changed byte cost more entries than its lines (byte {at})"
        );
        if alice < 5 {
            assert!(
                !batch.problems.is_empty(),
                "an entry vanished silently (byte {at})"
            );
        }
    }
}

#[cfg(unix)]
#[test]
fn a_symbolic_link_in_place_of_a_log_is_not_followed() {
    let dir = tempfile::tempdir().unwrap();
    let outside = tempfile::tempdir().unwrap();
    let channel = demo_channel(dir.path());
    // A log written elsewhere, linked into the channel under bob's name.
    let elsewhere = demo_channel(outside.path());
    append_notes(&elsewhere, "bob", &key(2), 2);
    let target = elsewhere.log_path(&name("bob"), &key(2).public_key());
    let link = channel.log_path(&name("bob"), &key(2).public_key());
    fs::create_dir_all(link.parent().unwrap()).unwrap();
    std::os::unix::fs::symlink(&target, &link).unwrap();

    let batch = channel.reader().poll();
    assert_eq!(batch.entries, vec![]);
    assert_eq!(kinds(&batch), vec![ProblemKind::UnknownFile]);
}

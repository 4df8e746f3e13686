//! Tampered channels: each bad record is excluded, everything else still reads, and the
//! problem is reported with its kind.

use std::fs;
use std::path::{Path, PathBuf};

use ferry_mcp_core::channel::fold::identity::{FoldProblem, Identity, kinds};
use ferry_mcp_core::channel::fold::levels::Level;
use ferry_mcp_core::channel::log::entry::{Entry, EntryHash, VerifiedEntry};
use ferry_mcp_core::channel::log::keys::SecretKey;
use ferry_mcp_core::channel::log::names::AgentName;
use ferry_mcp_core::channel::log::reader::{IntegrityProblem, ProblemKind};
use ferry_mcp_core::channel::log::store::Channel;
use ferry_mcp_testkit::plant;
use serde_json::{Value, json};

use crate::channel_log::kinds as problem_kinds;
use crate::channel_log::{NOW, alice_notes, append_notes, demo_channel, key, name, project, seqs};

fn lines(path: &Path) -> Vec<String> {
    fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(str::to_owned)
        .collect()
}

/// Rewrites the log at `path` after `edit` changed its lines.
fn edit_lines(path: &Path, edit: impl FnOnce(&mut Vec<String>)) {
    let mut log = lines(path);
    edit(&mut log);
    let mut text = log.join("\n");
    text.push('\n');
    fs::write(path, text).unwrap();
}

/// The line of a `note` entry of project demo naming author alice, signed by `signer` and
/// naming its key.
fn note_by_alice(signer: &SecretKey, seq: u64, prev: EntryHash, body: Value) -> String {
    Entry {
        project: project("demo"),
        author: name("alice"),
        key: signer.public_key(),
        seq,
        prev: Some(prev),
        kind: "note".to_owned(),
        time: NOW,
        body,
    }
    .sign(signer)
    .unwrap()
    .line
}

/// A channel where alice has written five notes; returns it and alice's log path.
fn alice_with_five_notes(dir: &Path) -> (Channel, PathBuf) {
    let (channel, path) = alice_notes(dir, 5);
    append_notes(&channel, "bob", &key(2), 2);
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
    edit_lines(&path, |log| {
        log[2] = log[2].replace("{\"n\":3}", "{\"n\":300}")
    });

    let (alice, problems) = alice_seqs(&channel);
    assert_eq!(alice, vec![1, 2, 4, 5]);
    assert_eq!(problem_at(&problems, 3), ProblemKind::BadSignature);
    // The gap the excluded entry leaves is reported too.
    assert_eq!(problem_at(&problems, 4), ProblemKind::MissingEntries);
    assert_eq!(problems.len(), 2, "{problems:?}");
}

#[test]
fn a_removed_entry_is_reported_as_missing_and_later_entries_still_read() {
    let dir = tempfile::tempdir().unwrap();
    let (channel, path) = alice_with_five_notes(dir.path());
    edit_lines(&path, |log| {
        log.remove(2);
    });

    let (alice, problems) = alice_seqs(&channel);
    assert_eq!(alice, vec![1, 2, 4, 5]);
    assert_eq!(
        problem_kinds(&channel.reader().poll()),
        vec![ProblemKind::MissingEntries]
    );
    assert_eq!(problems[0].detail, "entry 3 is missing");
}

#[test]
fn swapped_lines_exclude_the_late_entry_as_out_of_order() {
    let dir = tempfile::tempdir().unwrap();
    let (channel, path) = alice_with_five_notes(dir.path());
    edit_lines(&path, |log| log.swap(2, 3));

    let (alice, problems) = alice_seqs(&channel);
    assert_eq!(alice, vec![1, 2, 4, 5]);
    assert_eq!(problem_at(&problems, 3), ProblemKind::MissingEntries);
    assert_eq!(problem_at(&problems, 4), ProblemKind::OutOfOrder);
    assert_eq!(problems.len(), 2, "{problems:?}");
}

#[test]
fn a_forged_signature_is_excluded_and_reported() {
    let dir = tempfile::tempdir().unwrap();
    let (channel, path) = alice_with_five_notes(dir.path());
    edit_lines(&path, |log| {
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
    });

    let (alice, problems) = alice_seqs(&channel);
    assert_eq!(alice, vec![1, 2, 4, 5]);
    assert_eq!(problem_at(&problems, 3), ProblemKind::BadSignature);
    assert_eq!(problem_at(&problems, 4), ProblemKind::MissingEntries);
    assert_eq!(problems.len(), 2, "{problems:?}");
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
    let as_alice = note_by_alice(&mallory, 2, *mallory_first.hash(), json!({"n": 2}));
    let path = channel.log_path(&name("mallory"), &mallory.public_key());
    edit_lines(&path, |log| log.push(as_alice));

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
    assert_eq!(problem_kinds(&batch), vec![ProblemKind::ForgedAuthor]);
    assert_eq!(batch.problems[0].line, Some(2));
}

#[test]
fn an_entry_signed_by_another_key_than_its_log_is_excluded() {
    let dir = tempfile::tempdir().unwrap();
    let (channel, path) = alice_with_five_notes(dir.path());
    let mallory = key(9);
    let alice_fifth = *channel.reader().poll().entries[4].hash();
    // Validly signed by mallory, naming alice and mallory's key, inside alice's log.
    let sneaked = note_by_alice(&mallory, 6, alice_fifth, json!({}));
    edit_lines(&path, |log| log.push(sneaked));

    let (alice, problems) = alice_seqs(&channel);
    assert_eq!(alice, vec![1, 2, 3, 4, 5]);
    assert_eq!(problem_at(&problems, 6), ProblemKind::WrongKey);
}

/// Seats bob (key seed 2) in `channel` and has its master (`master`) grant him `levels` in order.
fn seat_and_grant(channel: &Channel, master: &SecretKey, levels: &[Level]) {
    let mut bob = channel.writer(&name("bob"), &key(2)).unwrap();
    bob.append(kinds::ROSTER_JOIN, json!({}), NOW).unwrap();
    let mut writer = channel.writer(&AgentName::master(), master).unwrap();
    for level in levels {
        let body = plant::grant(name("bob"), key(2).public_key(), *level);
        writer.append(kinds::GRANT, body, NOW).unwrap();
    }
}

/// Bob's level in `channel` after folding `entries`, and the fold's problems.
fn bob_level(channel: &Channel, entries: &[VerifiedEntry]) -> (Level, Vec<FoldProblem>) {
    let mut identity = Identity::new(channel.project().clone(), *channel.genesis_master());
    identity.feed(entries);
    (
        identity.standing(&name("bob"), NOW).level,
        identity.problems(),
    )
}

#[test]
fn a_grant_replayed_from_another_project_is_excluded_and_leaves_the_level_unchanged() {
    let dir = tempfile::tempdir().unwrap();
    let other_dir = tempfile::tempdir().unwrap();
    // One human, one master key, two projects; bob uses one key in both.
    let master = key(100);
    let channel = demo_channel(dir.path());
    let other = Channel::create(other_dir.path(), &project("other"), &master, NOW).unwrap();
    append_notes(&channel, "alice", &key(1), 3);
    seat_and_grant(&channel, &master, &[Level::Member]);
    seat_and_grant(&other, &master, &[Level::Member, Level::Orchestrator]);
    // In its own project the grant counts: only the project field keeps it out of demo.
    let there = other.reader().poll();
    assert_eq!(bob_level(&other, &there.entries).0, Level::Orchestrator);

    // Copy the master-signed orchestrator grant of `other` (its seq 2, exactly the seq the
    // next entry of demo's master log would have) into demo's master log.
    let master_log =
        |channel: &Channel| channel.log_path(&AgentName::master(), &master.public_key());
    let replayed = lines(&master_log(&other))[1].clone();
    assert!(replayed.contains("\"orchestrator\""), "{replayed}");
    edit_lines(&master_log(&channel), |log| log.push(replayed));

    let mut reader = channel.reader();
    let batch = reader.poll();
    assert!(
        batch.entries.iter().all(|e| e.project().as_str() == "demo"),
        "the replayed entry was delivered"
    );
    assert_eq!(
        seqs(&batch),
        vec![
            ("master".to_owned(), 1),
            ("alice".to_owned(), 1),
            ("alice".to_owned(), 2),
            ("alice".to_owned(), 3),
            ("bob".to_owned(), 1),
        ]
    );
    assert_eq!(problem_kinds(&batch), vec![ProblemKind::WrongProject]);
    let problem = &batch.problems[0];
    assert_eq!(problem.line, Some(2));
    assert_eq!(
        problem.path,
        Path::new("logs/master").join(format!("{}.jsonl", master.public_key()))
    );
    let (level, fold_problems) = bob_level(&channel, &batch.entries);
    assert_eq!(
        level,
        Level::Member,
        "the replayed grant changed bob's level"
    );
    // (alice's notes are by a key that never joined: the only fold problem.)
    assert!(
        fold_problems.iter().all(|p| p.author.as_str() == "alice"),
        "{fold_problems:?}"
    );

    // The master's next entry still chains onto its own last entry, past the foreign line.
    seat_and_grant(&channel, &master, &[Level::Worker]);
    let next = reader.poll();
    assert_eq!(next.problems, vec![]);
    let grant = next
        .entries
        .iter()
        .find(|e| e.author().is_master())
        .unwrap();
    assert_eq!(grant.seq(), 2);
}

#[test]
fn a_master_log_copied_from_a_project_with_another_master_is_excluded() {
    let dir = tempfile::tempdir().unwrap();
    let other_dir = tempfile::tempdir().unwrap();
    let channel = demo_channel(dir.path());
    let other_master = key(101);
    let other = Channel::create(other_dir.path(), &project("other"), &other_master, NOW).unwrap();
    seat_and_grant(&channel, &key(100), &[]);
    seat_and_grant(&other, &other_master, &[Level::Orchestrator]);
    let from = other.log_path(&AgentName::master(), &other_master.public_key());
    let to = channel.log_path(&AgentName::master(), &other_master.public_key());
    fs::create_dir_all(to.parent().unwrap()).unwrap();
    fs::copy(&from, &to).unwrap();

    let batch = channel.reader().poll();
    assert_eq!(seqs(&batch), vec![("bob".to_owned(), 1)]);
    assert_eq!(problem_kinds(&batch), vec![ProblemKind::WrongProject]);
    assert_eq!(batch.problems[0].line, Some(1));
    assert_eq!(bob_level(&channel, &batch.entries).0, Level::Worker);
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
    assert_eq!(problems.len(), 1, "{problems:?}");
}

#[test]
fn a_forked_log_keeps_the_first_entry_of_a_seq() {
    let dir = tempfile::tempdir().unwrap();
    let (channel, path) = alice_with_five_notes(dir.path());
    let alice = key(1);
    let fork = note_by_alice(
        &alice,
        5,
        *channel.reader().poll().entries[3].hash(),
        json!({"fork": true}),
    );
    edit_lines(&path, |log| log.push(fork));

    let batch = channel.reader().poll();
    let fifth: Vec<_> = batch
        .entries
        .iter()
        .filter(|e| e.author().as_str() == "alice" && e.seq() == 5)
        .collect();
    assert_eq!(fifth.len(), 1);
    assert_eq!(fifth[0].body(), &json!({"n": 5}));
    assert_eq!(problem_kinds(&batch), vec![ProblemKind::DuplicateSeq]);
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
fn a_truncated_log_is_reported_as_rolled_back_and_not_delivered_twice() {
    let dir = tempfile::tempdir().unwrap();
    let (channel, path) = alice_with_five_notes(dir.path());
    let mut reader = channel.reader();
    assert_eq!(reader.poll().entries.len(), 7);
    edit_lines(&path, |log| log.truncate(3));

    let batch = reader.poll();
    assert_eq!(batch.entries, vec![]);
    assert_eq!(problem_kinds(&batch), vec![ProblemKind::RolledBack]);
}

#[test]
fn problems_display_as_one_status_line() {
    let dir = tempfile::tempdir().unwrap();
    let (channel, path) = alice_with_five_notes(dir.path());
    edit_lines(&path, |log| {
        log.remove(1);
    });
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
fn a_log_that_disappears_is_reported_once_as_vanished() {
    let dir = tempfile::tempdir().unwrap();
    let (channel, path) = alice_with_five_notes(dir.path());
    let mut reader = channel.reader();
    assert_eq!(reader.poll().entries.len(), 7);
    fs::remove_file(&path).unwrap();

    let batch = reader.poll();
    assert_eq!(problem_kinds(&batch), vec![ProblemKind::Vanished]);
    assert!(
        batch.problems[0].detail.contains("verified 5 entries"),
        "{}",
        batch.problems[0]
    );
    assert_eq!(reader.poll().problems, vec![]);
}

#[test]
fn an_overlong_line_is_skipped_without_losing_the_entries_after_it() {
    let dir = tempfile::tempdir().unwrap();
    let (channel, path) = alice_with_five_notes(dir.path());
    edit_lines(&path, |log| log.insert(2, "x".repeat(600 * 1024)));

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
    assert_eq!(problem_kinds(&batch), vec![ProblemKind::Link]);
}

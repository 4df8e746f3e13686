//! Attacks on the machine's promises (ADR 0004, ADR 0005): an attacker who can write anything
//! into the channel folder (it is synced from machines it does not control) but holds no key.
//! Each test deletes, truncates, replaces, links or bloats something in the channel and checks
//! what this machine verified is kept, what it finds is reported, and nothing else changes.

use std::fs;
use std::path::{Path, PathBuf};

use ferry_mcp_core::channel::fold::identity::{FoldProblemKind, kinds};
use ferry_mcp_core::channel::fold::levels::{Level, Operation};
use ferry_mcp_core::channel::log::entry::VerifiedEntry;
use ferry_mcp_core::channel::log::keys::SecretKey;
use ferry_mcp_core::channel::log::names::AgentName;
use ferry_mcp_core::channel::log::reader::{IntegrityProblem, ProblemKind};
use ferry_mcp_core::channel::log::store::Channel;
use ferry_mcp_core::channel::machine::home::{Home, KeyHolder};
use ferry_mcp_core::channel::ops::access::AccessError;
use ferry_mcp_core::channel::ops::project::ProjectError;
use ferry_mcp_core::channel::ops::{self, GrantRequest, OpsError};
use ferry_mcp_core::channel::session::{Actor, Session};
use ferry_mcp_testkit::plant::{self, Note};
use ferry_mcp_testkit::temp_channel::TempChannel;
use serde_json::{Value, json};

fn name(raw: &str) -> AgentName {
    TempChannel::agent(raw)
}

fn master_key(home: &Home, temp: &TempChannel) -> SecretKey {
    home.load_key(temp.project(), &KeyHolder::Master, temp.now())
        .unwrap()
}

fn agent_key(temp: &TempChannel, agent: &str) -> SecretKey {
    temp.home()
        .load_key(temp.project(), &KeyHolder::Agent(name(agent)), temp.now())
        .unwrap()
}

/// The log of `author` signed by `key`.
fn log_of(temp: &TempChannel, author: &AgentName, key: &SecretKey) -> PathBuf {
    Channel::open(temp.channel_dir())
        .unwrap()
        .log_path(author, &key.public_key())
}

/// The genesis master's log.
fn master_log(temp: &TempChannel) -> PathBuf {
    log_of(temp, &AgentName::master(), &master_key(temp.home(), temp))
}

fn agent_log(temp: &TempChannel, agent: &str) -> PathBuf {
    log_of(temp, &name(agent), &agent_key(temp, agent))
}

/// `path` relative to the channel folder, as problems name it.
fn rel(temp: &TempChannel, path: &Path) -> PathBuf {
    path.strip_prefix(temp.channel_dir()).unwrap().to_owned()
}

fn lines(path: &Path) -> Vec<String> {
    fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(str::to_owned)
        .collect()
}

/// Removes the last `n` lines of the log at `path`, as an attacker (or a sync of an older copy)
/// would.
fn drop_last_lines(path: &Path, n: usize) {
    let mut log = lines(path);
    log.truncate(log.len() - n);
    let text: String = log.iter().map(|line| format!("{line}\n")).collect();
    fs::write(path, text).unwrap();
}

/// Appends raw bytes to the file at `path`.
fn append_bytes(path: &Path, bytes: &[u8]) {
    use std::io::Write as _;
    let mut file = fs::OpenOptions::new().append(true).open(path).unwrap();
    file.write_all(bytes).unwrap();
}

/// A second machine: its own state folder, with the same channel folder registered.
fn other_machine(temp: &TempChannel, tag: &str) -> Home {
    let home = Home::at(temp.root().join(tag));
    ops::add_existing(&home, temp.project(), temp.channel_dir()).unwrap();
    home
}

fn open(home: &Home, temp: &TempChannel, actor: Actor) -> Session {
    Session::open(home, temp.project(), actor, temp.now()).unwrap()
}

fn level_of(session: &Session, temp: &TempChannel, agent: &str) -> Level {
    session.identity().standing(&name(agent), temp.now()).level
}

fn grant(temp: &TempChannel, home: &Home, agent: &str, level: Level) {
    let request = GrantRequest {
        level,
        scopes: Vec::new(),
        expires: None,
        key: None,
    };
    ops::access_set(home, temp.project(), &name(agent), &request, temp.now()).unwrap();
}

/// The integrity problems a session keeps, of `kind`.
fn problems_of(session: &Session, kind: ProblemKind) -> Vec<IntegrityProblem> {
    let (problems, _) = session.integrity_problems();
    problems
        .iter()
        .filter(|problem| problem.kind == kind)
        .cloned()
        .collect()
}

/// The lines of `ferry channel status` (as the library gives them) that name `what`.
fn status_lines(temp: &TempChannel, home: &Home, what: &str) -> Vec<String> {
    ops::status(home, temp.project(), temp.now())
        .unwrap()
        .problems
        .into_iter()
        .filter(|line| line.contains(what))
        .collect()
}

/// Appends a `note` entry as `agent` through its session (the one path every write takes).
fn note(session: &mut Session, temp: &TempChannel, n: u64) -> VerifiedEntry {
    session
        .append(Operation::HandIn, None, &Note { n: Some(n) }, temp.now())
        .unwrap()
}

/// Writes an entry as `author` with `key`, bypassing every check `ops` makes.
fn write_raw(temp: &TempChannel, author: &AgentName, key: &SecretKey, kind: &str, body: Value) {
    plant::raw(temp.channel_dir(), author, key, kind, body, temp.now());
}

// ---- 1. rollbacks on a machine that verified ----

#[test]
fn deleting_a_demotion_from_the_master_log_does_not_bring_back_the_grant_it_replaced() {
    let temp = TempChannel::builder()
        .agent("fang", Level::Member)
        .build()
        .unwrap();
    grant(&temp, temp.home(), "fang", Level::Worker);
    assert_eq!(level_of(&temp.view(), &temp, "fang"), Level::Worker);

    // The demotion is the master log's last line: the attacker deletes it.
    let log = master_log(&temp);
    assert!(lines(&log).last().unwrap().contains("\"worker\""));
    let verified_len = fs::metadata(&log).unwrap().len();
    drop_last_lines(&log, 1);
    let left_len = fs::metadata(&log).unwrap().len();

    // A machine that never verified the demotion sees a member: that is all it can know.
    let fresh = other_machine(&temp, "fresh");
    assert_eq!(
        level_of(&open(&fresh, &temp, Actor::Observer), &temp, "fang"),
        Level::Member
    );
    // This machine verified it: fang stays a worker, in a new process too.
    let session = temp.view();
    assert_eq!(level_of(&session, &temp, "fang"), Level::Worker);
    let rolled = problems_of(&session, ProblemKind::RolledBack);
    assert_eq!(rolled.len(), 1, "{rolled:?}");
    assert_eq!(rolled[0].path, rel(&temp, &log));
    let reported = status_lines(&temp, temp.home(), ": rolled_back: ");
    assert_eq!(reported.len(), 1, "{reported:?}");
    assert!(
        reported[0].starts_with(&rel(&temp, &log).display().to_string()),
        "{reported:?}"
    );
    // How much went missing: the bytes this machine verified, and those left.
    assert!(
        reported[0].contains(&format!("from {verified_len} to {left_len} bytes")),
        "{reported:?}"
    );
    assert_eq!(
        temp.view()
            .identity()
            .standing(&name("fang"), temp.now())
            .level,
        Level::Worker
    );
}

/// Rewrites `genesis.json` so that it still verifies but its bytes differ: `edit` gets the
/// file as it is.
fn rewrite_genesis(temp: &TempChannel, edit: impl FnOnce(&str) -> String) {
    let path = temp.channel_dir().join("genesis.json");
    let was = fs::read_to_string(&path).unwrap();
    let now = edit(&was);
    assert_ne!(now, was);
    fs::write(&path, now).unwrap();
    Channel::open(temp.channel_dir()).expect("the rewritten genesis still verifies");
}

/// Whether `session` reports the rewritten genesis.
fn reports_rewritten_genesis(session: &Session) -> bool {
    session
        .local_problems()
        .iter()
        .any(|problem| problem.contains("genesis.json was rewritten"))
}

#[test]
fn a_genesis_rewritten_with_a_leading_space_keeps_the_witness_so_a_deleted_demotion_is_still_caught()
 {
    let temp = TempChannel::builder()
        .agent("fang", Level::Orchestrator)
        .build()
        .unwrap();
    // The demotion, verified here.
    grant(&temp, temp.home(), "fang", Level::Worker);
    assert_eq!(level_of(&temp.view(), &temp, "fang"), Level::Worker);
    // The attacker deletes it and re-saves the genesis with a leading space: a witness keyed
    // by the file's bytes would be dropped and everything folded from what is left.
    let log = master_log(&temp);
    assert!(lines(&log).last().unwrap().contains("\"worker\""));
    drop_last_lines(&log, 1);
    rewrite_genesis(&temp, |genesis| format!(" {genesis}"));

    // A machine that never verified the demotion sees an orchestrator: all it can know.
    let fresh = other_machine(&temp, "fresh");
    assert_eq!(
        level_of(&open(&fresh, &temp, Actor::Observer), &temp, "fang"),
        Level::Orchestrator
    );
    // This machine keeps its witness: fang stays demoted, the rollback and the rewritten
    // genesis are both reported, in this process and the next.
    for _ in 0..2 {
        let session = temp.view();
        assert_eq!(level_of(&session, &temp, "fang"), Level::Worker);
        assert!(
            reports_rewritten_genesis(&session),
            "{:?}",
            session.local_problems()
        );
        assert_eq!(problems_of(&session, ProblemKind::RolledBack).len(), 1);
    }
    let status = ops::status(temp.home(), temp.project(), temp.now()).unwrap();
    assert!(
        status
            .problems
            .iter()
            .any(|line| line.contains("genesis.json was rewritten")),
        "{:?}",
        status.problems
    );
    // The genesis restored: nothing more to report, the witness still stands.
    rewrite_genesis(&temp, |genesis| genesis.trim_start().to_owned());
    let session = temp.view();
    assert!(!reports_rewritten_genesis(&session));
    assert_eq!(level_of(&session, &temp, "fang"), Level::Worker);
}

#[test]
fn a_genesis_rewritten_with_crlf_keeps_the_witness_so_a_former_master_s_new_grant_does_not_count() {
    let temp = TempChannel::builder()
        .agent("fang", Level::Worker)
        .build()
        .unwrap();
    let old_master = master_key(temp.home(), &temp);
    let next = other_machine(&temp, "next");
    let new_key = ops::new_master_key(&next, temp.project(), None).unwrap();
    ops::master_handover(
        temp.home(),
        temp.project(),
        &new_key.key,
        &new_key.proof,
        temp.now(),
    )
    .unwrap();
    assert_eq!(temp.view().identity().master(), &new_key.key);
    // The new master has written nothing yet (no accept embeds the handover). The attacker
    // deletes the handover line, re-saves the genesis with CRLF, and the former master signs
    // a grant.
    let old_log = master_log(&temp);
    assert!(
        lines(&old_log)
            .last()
            .unwrap()
            .contains(kinds::MASTER_HANDOVER)
    );
    drop_last_lines(&old_log, 1);
    rewrite_genesis(&temp, |genesis| genesis.replace('\n', "\r\n"));
    write_raw(
        &temp,
        &AgentName::master(),
        &old_master,
        kinds::GRANT,
        plant::grant(
            name("fang"),
            agent_key(&temp, "fang").public_key(),
            Level::Orchestrator,
        ),
    );

    // A machine that never saw the handover takes the former master for the master.
    let fresh = other_machine(&temp, "fresh");
    let there = open(&fresh, &temp, Actor::Observer);
    assert_eq!(there.identity().master(), &old_master.public_key());
    assert_eq!(level_of(&there, &temp, "fang"), Level::Orchestrator);
    // This machine verified the handover: the former master's grant does not count, and the
    // rewritten genesis is reported.
    let here = temp.view();
    assert_eq!(here.identity().master(), &new_key.key);
    assert_eq!(level_of(&here, &temp, "fang"), Level::Worker);
    assert!(
        reports_rewritten_genesis(&here),
        "{:?}",
        here.local_problems()
    );
    assert_eq!(problems_of(&here, ProblemKind::RolledBack).len(), 1);
}

#[test]
fn a_genesis_of_another_channel_is_still_refused_as_foreign() {
    let temp = member_fang();
    temp.view().save().unwrap();
    // Another genesis by the same master for the same project, a moment later: another channel.
    let other = temp.root().join("other-channel");
    let later = ferry_mcp_core::time::Timestamp::from_millis(temp.now().as_millis() + 1);
    Channel::create(
        &other,
        temp.project(),
        &master_key(temp.home(), &temp),
        later,
    )
    .unwrap();
    fs::copy(
        other.join("genesis.json"),
        temp.channel_dir().join("genesis.json"),
    )
    .unwrap();
    let session = temp.view();
    assert!(!reports_rewritten_genesis(&session));
    assert!(
        session
            .local_problems()
            .iter()
            .any(|problem| problem.contains("another channel")),
        "{:?}",
        session.local_problems()
    );
}

#[test]
fn a_rollback_report_names_how_many_verified_entries_went_missing() {
    let temp = TempChannel::builder()
        .agent("fang", Level::Member)
        .build()
        .unwrap();
    grant(&temp, temp.home(), "fang", Level::Orchestrator);
    grant(&temp, temp.home(), "fang", Level::Worker);
    // Three grants verified; the last one is deleted: one entry went missing.
    drop_last_lines(&master_log(&temp), 1);
    let reported = status_lines(&temp, temp.home(), ": rolled_back: ");
    assert_eq!(reported.len(), 1, "{reported:?}");
    assert!(
        reported[0].contains(" 1 entry ") && !reported[0].contains("3 entries"),
        "the report should say one verified entry is gone: {reported:?}"
    );
}

#[test]
fn deleting_the_whole_master_log_keeps_every_grant_and_is_reported_vanished() {
    let temp = TempChannel::builder()
        .agent("fang", Level::Member)
        .agent("bolt", Level::Orchestrator)
        .build()
        .unwrap();
    let log = master_log(&temp);
    fs::remove_file(&log).unwrap();

    let session = temp.view();
    assert_eq!(level_of(&session, &temp, "fang"), Level::Member);
    assert_eq!(level_of(&session, &temp, "bolt"), Level::Orchestrator);
    let vanished = problems_of(&session, ProblemKind::Vanished);
    assert_eq!(vanished.len(), 1, "{vanished:?}");
    assert_eq!(vanished[0].path, rel(&temp, &log));
    assert!(
        vanished[0].detail.contains("verified 2 entries"),
        "{}",
        vanished[0]
    );
    assert_eq!(status_lines(&temp, temp.home(), ": vanished: ").len(), 1);
    // A machine that never saw the log has no grants: that is all it can know.
    let fresh = other_machine(&temp, "fresh");
    assert_eq!(
        level_of(&open(&fresh, &temp, Actor::Observer), &temp, "bolt"),
        Level::Worker
    );
}

#[test]
fn deleting_an_agent_s_folder_keeps_it_on_the_roster_and_is_reported() {
    let temp = TempChannel::builder()
        .agent("fang", Level::Member)
        .build()
        .unwrap();
    let log = agent_log(&temp, "fang");
    fs::remove_dir_all(log.parent().unwrap()).unwrap();

    let session = temp.view();
    assert_eq!(
        session.identity().holder(&name("fang")),
        Some(&agent_key(&temp, "fang").public_key())
    );
    assert_eq!(level_of(&session, &temp, "fang"), Level::Member);
    let vanished = problems_of(&session, ProblemKind::Vanished);
    assert_eq!(vanished.len(), 1, "{vanished:?}");
    assert_eq!(vanished[0].path, rel(&temp, &log));
    let rows = ops::access_show(temp.home(), temp.project(), None, temp.now()).unwrap();
    assert_eq!(rows.len(), 1);
    assert_eq!(rows[0].name, name("fang"));
}

#[test]
fn deleting_a_handover_line_moves_mastership_back_on_no_machine_that_saw_the_new_master() {
    let temp = TempChannel::builder()
        .agent("fang", Level::Worker)
        .build()
        .unwrap();
    let old_master = master_key(temp.home(), &temp);
    // The next master's machine makes its key and proof; this machine hands over to it.
    let next = other_machine(&temp, "next");
    let new_key = ops::new_master_key(&next, temp.project(), None).unwrap();
    ops::master_handover(
        temp.home(),
        temp.project(),
        &new_key.key,
        &new_key.proof,
        temp.now(),
    )
    .unwrap();
    // The new master writes: its first entry accepts the handover, embedding it.
    grant(&temp, &next, "fang", Level::Member);
    let new_log = log_of(&temp, &AgentName::master(), &master_key(&next, &temp));
    let accept = lines(&new_log);
    assert_eq!(accept.len(), 2, "{accept:?}");
    assert!(accept[0].contains(kinds::MASTER_ACCEPT), "{}", accept[0]);

    // The attacker deletes the handover, the former master's last line.
    let old_log = master_log(&temp);
    assert!(
        lines(&old_log)
            .last()
            .unwrap()
            .contains(kinds::MASTER_HANDOVER)
    );
    drop_last_lines(&old_log, 1);

    // This machine verified the handover: its key stays a former master's.
    let here = temp.view();
    assert_eq!(here.identity().master(), &new_key.key);
    assert_eq!(level_of(&here, &temp, "fang"), Level::Member);
    assert_eq!(problems_of(&here, ProblemKind::RolledBack).len(), 1);
    let err = ops::access_set(
        temp.home(),
        temp.project(),
        &name("fang"),
        &GrantRequest {
            level: Level::Orchestrator,
            scopes: Vec::new(),
            expires: None,
            key: None,
        },
        temp.now(),
    )
    .unwrap_err();
    assert!(
        matches!(err, AccessError::Ops(OpsError::NotTheMaster(_))),
        "{err}"
    );
    let status = ops::status(temp.home(), temp.project(), temp.now()).unwrap();
    assert_eq!(status.master_key_here, "former");
    assert_ne!(old_master.public_key(), new_key.key);

    // A machine that never saw the handover line takes it from the new master's accept.
    let fresh = other_machine(&temp, "fresh");
    let there = open(&fresh, &temp, Actor::Observer);
    assert_eq!(there.identity().master(), &new_key.key);
    assert_eq!(there.identity().era(), 1);
    assert_eq!(level_of(&there, &temp, "fang"), Level::Member);
    // And the former master's entries after the deleted line would not count there either.
    write_raw(
        &temp,
        &AgentName::master(),
        &old_master,
        kinds::GRANT,
        plant::grant(
            name("fang"),
            agent_key(&temp, "fang").public_key(),
            Level::Orchestrator,
        ),
    );
    let third = other_machine(&temp, "third");
    let there = open(&third, &temp, Actor::Observer);
    assert_eq!(there.identity().master(), &new_key.key);
    assert_eq!(level_of(&there, &temp, "fang"), Level::Member);
}

#[test]
fn the_writer_never_reuses_a_seq_after_its_own_log_is_rolled_back() {
    let temp = TempChannel::builder()
        .agent("fang", Level::Member)
        .build()
        .unwrap();
    let mut session = temp.agent_session("fang");
    let written: Vec<VerifiedEntry> = (1..=3).map(|n| note(&mut session, &temp, n)).collect();
    let seqs: Vec<u64> = written.iter().map(VerifiedEntry::seq).collect();
    assert_eq!(seqs, vec![2, 3, 4]);
    session.save().unwrap();
    drop(session);

    let log = agent_log(&temp, "fang");
    drop_last_lines(&log, 1);
    let mut session = temp.agent_session("fang");
    let next = note(&mut session, &temp, 4);
    assert_eq!(next.seq(), 5, "a seq this machine verified was used again");
    // It chains onto the entry this machine verified, not onto what the file still holds.
    assert_eq!(next.prev(), Some(written[2].hash()));

    // A machine that never saw entry 4 sees it missing, and reads entry 5.
    let fresh = other_machine(&temp, "fresh");
    let there = open(&fresh, &temp, Actor::Observer);
    let missing = problems_of(&there, ProblemKind::MissingEntries);
    assert_eq!(missing.len(), 1, "{missing:?}");
    assert_eq!(missing[0].path, rel(&temp, &log));
    assert_eq!(missing[0].detail, "entry 4 is missing");
    let entries = Channel::open(temp.channel_dir()).unwrap().reader().poll();
    assert!(entries.entries.iter().any(|e| e.hash() == next.hash()));
}

// ---- 2. folding the kept state plus new entries equals folding everything ----

fn issue_request(title: &str) -> ops::orders::IssueRequest {
    ops::orders::IssueRequest {
        title: title.to_owned(),
        ..Default::default()
    }
}

/// Every order of the board as its view (the board's public face), by id.
fn order_views(
    session: &mut Session,
) -> Vec<(
    String,
    ferry_mcp_core::channel::fold::state::orders::OrderView,
)> {
    session
        .board_whole()
        .unwrap()
        .iter()
        .map(|order| {
            (
                order.id().to_string(),
                order.whole().unwrap().view().clone(),
            )
        })
        .collect()
}

#[test]
fn folding_the_kept_state_plus_new_entries_equals_folding_everything() {
    use ferry_mcp_core::channel::fold::state::orders::Verdict;
    use ferry_mcp_core::channel::ops::orders::{self as order_ops, SubmitRequest};

    let temp = TempChannel::builder()
        .agent("orch", Level::Orchestrator)
        .agent("mem", Level::Member)
        .agent("mem2", Level::Member)
        .agent("wk", Level::Worker)
        .build()
        .unwrap();
    let now = || temp.now();
    let save = |mut session: Session| session.save().unwrap();
    // The watcher is a machine that folds the channel in three sittings.
    let watcher = other_machine(&temp, "watcher");

    // Phase 1: orders issued, claimed, handed in, submitted, reviewed; a blob body.
    let mut master = temp.master_session();
    let mut review_me = issue_request("review me");
    review_me.review = true;
    review_me.body = Some("short body".into());
    let o1 = order_ops::issue(&mut master, &review_me, now()).unwrap();
    save(master);
    let mut mem = temp.agent_session("mem");
    order_ops::claim(&mut mem, &o1, now()).unwrap();
    order_ops::progress(&mut mem, &o1, "halfway", now()).unwrap();
    let handin = order_ops::hand_in(&mut mem, &o1, "feature/one", "first try", now()).unwrap();
    let submit = SubmitRequest {
        handin: Some(handin),
        git_ref: None,
        summary: "done once".into(),
    };
    order_ops::submit(&mut mem, &o1, &submit, now()).unwrap();
    save(mem);
    let mut orch = temp.agent_session("orch");
    order_ops::review(&mut orch, &o1, Verdict::Changes, Some("again"), now()).unwrap();
    let mut offered = issue_request("for mem2");
    offered.to = Some(name("mem2"));
    offered.body = Some("x".repeat(2_000));
    let o2 = order_ops::issue(&mut orch, &offered, now()).unwrap();
    save(orch);
    let mut mem2 = temp.agent_session("mem2");
    order_ops::claim(&mut mem2, &o2, now()).unwrap();
    save(mem2);
    let mut wk = temp.agent_session("wk");
    order_ops::hand_in(&mut wk, &o2, "wk/help", "a worker helps", now()).unwrap();
    save(wk);
    temp.clock().advance_secs(60);
    save(open(&watcher, &temp, Actor::Observer));

    // Phase 2: a demotion, and a revision accepted.
    grant(&temp, temp.home(), "mem2", Level::Worker);
    let mut mem = temp.agent_session("mem");
    let again = SubmitRequest {
        handin: None,
        git_ref: Some("feature/two".into()),
        summary: "done twice".into(),
    };
    order_ops::submit(&mut mem, &o1, &again, now()).unwrap();
    save(mem);
    let mut orch = temp.agent_session("orch");
    order_ops::review(&mut orch, &o1, Verdict::Accept, None, now()).unwrap();
    save(orch);
    temp.clock().advance_secs(60);
    save(open(&watcher, &temp, Actor::Observer));

    // Phase 3: a handover, the new master's grant and orders (its first entry accepts the
    // handover), a claim by the promoted worker, a release and a cancel.
    let next = other_machine(&temp, "next");
    let new_key = ops::new_master_key(&next, temp.project(), None).unwrap();
    ops::master_handover(
        temp.home(),
        temp.project(),
        &new_key.key,
        &new_key.proof,
        now(),
    )
    .unwrap();
    grant(&temp, &next, "wk", Level::Member);
    let mut new_master = open(&next, &temp, Actor::Master);
    let o3 =
        order_ops::issue(&mut new_master, &issue_request("after the handover"), now()).unwrap();
    order_ops::cancel(&mut new_master, &o2, Some("not needed"), now()).unwrap();
    save(new_master);
    let mut wk = temp.agent_session("wk");
    order_ops::claim(&mut wk, &o3, now()).unwrap();
    order_ops::release(&mut wk, &o3, Some("someone else"), now()).unwrap();
    save(wk);
    let mut mem = temp.agent_session("mem");
    order_ops::claim(&mut mem, &o3, now()).unwrap();
    save(mem);

    let mut kept = open(&watcher, &temp, Actor::Observer);
    let mut everything = open(&other_machine(&temp, "fresh"), &temp, Actor::Observer);
    // What every machine must agree on: who is who, every order's view, every problem.
    assert_eq!(kept.identity(), everything.identity());
    assert_eq!(order_views(&mut kept), order_views(&mut everything));
    assert_eq!(
        kept.whole_state().problems().unwrap(),
        everything.whole_state().problems().unwrap()
    );
    assert_eq!(kept.integrity_problems(), everything.integrity_problems());
    // The scenario reached what it compares.
    assert_eq!(kept.identity().era(), 1);
    assert_eq!(level_of(&kept, &temp, "wk"), Level::Member);
    assert_eq!(level_of(&kept, &temp, "mem2"), Level::Worker);
    let mut states: Vec<&str> = order_views(&mut kept)
        .iter()
        .map(|(_, view)| view.state.as_str())
        .collect();
    states.sort_unstable();
    assert_eq!(
        states,
        vec!["accepted", "cancelled", "claimed"],
        "{:?}",
        order_views(&mut kept)
    );
    // The rest is this machine's own: how many entries it folded and the stamps of its
    // changes (`since` cursors), which count the sittings it folded them in.
    assert_eq!(kept.state().counter(), everything.state().counter());
}

#[test]
fn a_new_master_s_entries_read_with_the_handover_are_folded_once() {
    let temp = TempChannel::builder()
        .agent("mem", Level::Member)
        .build()
        .unwrap();
    let old_master = master_key(temp.home(), &temp);
    // The next master's key sorts after the former one's, so its log is read after the
    // handover within one poll (logs are read by author, then key bytes).
    let next = other_machine(&temp, "next");
    let new_master = std::iter::repeat_with(|| SecretKey::generate().unwrap())
        .find(|key| key.public_key() > old_master.public_key())
        .unwrap();
    next.store_key(temp.project(), &KeyHolder::Master, &new_master, None)
        .unwrap();
    let proof =
        ferry_mcp_core::channel::fold::identity::handover_proof(temp.project(), &new_master);
    // It signs something before the handover reaches a watching machine: it waits there.
    write_raw(&temp, &AgentName::master(), &new_master, "note", json!({}));
    let watcher = other_machine(&temp, "watcher");
    open(&watcher, &temp, Actor::Observer).save().unwrap();

    ops::master_handover(
        temp.home(),
        temp.project(),
        &new_master.public_key(),
        &proof,
        temp.now(),
    )
    .unwrap();
    let mut session = open(&next, &temp, Actor::Master);
    let order = ops::orders::issue(&mut session, &issue_request("once"), temp.now()).unwrap();
    let mut mem = temp.agent_session("mem");
    ops::orders::claim(&mut mem, &order, temp.now()).unwrap();

    let mut kept = open(&watcher, &temp, Actor::Observer);
    let mut everything = open(&other_machine(&temp, "fresh"), &temp, Actor::Observer);
    assert_eq!(everything.board().unwrap().len(), 1);
    assert_eq!(
        order_views(&mut kept),
        order_views(&mut everything),
        "the claim was lost"
    );
    assert_eq!(kept.identity(), everything.identity());
    assert_eq!(kept.state().counter(), everything.state().counter());
}

// ---- 3. the kept state (a SQLite database, ADR 0011) ----

/// A channel of project demo in another folder (another genesis), with the same master and
/// agent keys as `temp`, where fang is an orchestrator; returns the bytes of the kept state
/// a machine keeps for it (its database, whole once its session is gone).
fn foreign_verified_state(temp: &TempChannel) -> Vec<u8> {
    let dir = temp.root().join("foreign-channel");
    let master = master_key(temp.home(), temp);
    let later = ferry_mcp_core::time::Timestamp::from_millis(temp.now().as_millis() + 1);
    let channel = Channel::create(&dir, temp.project(), &master, later).unwrap();
    let fang = agent_key(temp, "fang");
    let mut writer = channel.writer(&name("fang"), &fang).unwrap();
    writer.append(kinds::ROSTER_JOIN, json!({}), later).unwrap();
    let mut writer = channel.writer(&AgentName::master(), &master).unwrap();
    let body = plant::grant(name("fang"), fang.public_key(), Level::Orchestrator);
    for _ in 0..3 {
        // More master entries than `temp` has: nothing of `temp`'s would be read again.
        writer.append(kinds::GRANT, body.clone(), later).unwrap();
    }
    let home = Home::at(temp.root().join("foreign-home"));
    ops::add_existing(&home, temp.project(), &dir).unwrap();
    let mut session = open(&home, temp, Actor::Observer);
    assert_eq!(level_of(&session, temp, "fang"), Level::Orchestrator);
    session.save().unwrap();
    drop(session);
    fs::read(home.verified_path(temp.project())).unwrap()
}

/// Runs `sql` on the kept state at `path`, as another program of this machine could.
fn tamper(path: &Path, sql: &str) {
    let conn = rusqlite::Connection::open(path).unwrap();
    conn.execute_batch(sql).unwrap();
}

/// Changes one row of the kept state at `path` through `change` (the row `select` picks:
/// its key and the blob it holds), written back by `update` (`?1` the blob, `?2` the key).
fn change_row(path: &Path, select: &str, update: &str, change: impl FnOnce(&mut Vec<u8>)) {
    let conn = rusqlite::Connection::open(path).unwrap();
    let (key, mut bytes): (rusqlite::types::Value, Vec<u8>) = conn
        .query_row(select, [], |row| Ok((row.get(0)?, row.get(1)?)))
        .unwrap();
    change(&mut bytes);
    conn.execute(update, rusqlite::params![bytes, key]).unwrap();
}

/// Flips `bit` of one byte of the section row `name` (`core`, `board`, `talk`,
/// `master_times`) of the kept state at `path`, the byte `at` picks in its length; its digest
/// is left as it was.
fn flip_section_bit(path: &Path, name: &str, bit: u8, at: impl FnOnce(usize) -> usize) {
    change_row(
        path,
        &format!("SELECT name, value FROM sections WHERE name = '{name}'"),
        "UPDATE sections SET value = ?1 WHERE name = ?2",
        |bytes| {
            let at = at(bytes.len());
            bytes[at] ^= bit;
        },
    );
}

/// The foreign state with this channel's identity and genesis digest written in: a forgery
/// whose rows all match their digests.
fn forged_verified_state(temp: &TempChannel) -> Vec<u8> {
    let bytes = foreign_verified_state(temp);
    let path = temp.root().join("forged.db");
    fs::write(&path, &bytes).unwrap();
    let channel = Channel::open(temp.channel_dir()).unwrap();
    tamper(
        &path,
        &format!(
            "UPDATE meta SET value = X'{}' WHERE name = 'genesis';
             UPDATE meta SET value = X'{}' WHERE name = 'channel'",
            hex::encode(channel.genesis_digest()),
            hex::encode(channel.identity())
        ),
    );
    fs::read(&path).unwrap()
}

/// `temp` with fang a member, its kept state replaced by `bytes`: fang's level and the
/// local problems a new session reports.
fn open_with_verified_state(temp: &TempChannel, bytes: &[u8]) -> (Level, Vec<String>) {
    fs::write(temp.home().verified_path(temp.project()), bytes).unwrap();
    let session = temp.view();
    (
        level_of(&session, temp, "fang"),
        session.local_problems().to_vec(),
    )
}

fn member_fang() -> TempChannel {
    TempChannel::builder()
        .agent("fang", Level::Member)
        .build()
        .unwrap()
}

#[test]
fn a_forged_verified_state_with_a_valid_frame_is_trusted_which_is_why_the_frame_is_checked() {
    // The state folder is this machine's own: what it holds is trusted, so every test below
    // shows that only the frame (digests, genesis, format) keeps these bytes out.
    let temp = member_fang();
    let forged = forged_verified_state(&temp);
    let (level, local) = open_with_verified_state(&temp, &forged);
    assert_eq!((level, local), (Level::Orchestrator, vec![]));
}

#[test]
fn a_corrupt_verified_state_is_reported_and_rebuilt_never_trusted() {
    let temp = member_fang();
    let forged = forged_verified_state(&temp);
    let path = temp.root().join("corrupt.db");
    fs::write(&path, &forged).unwrap();
    // One bit of the core row (its last byte: the rest still decodes), its digest left as it
    // was: only the digest tells the change.
    flip_section_bit(&path, "core", 0x01, |len| len - 1);
    let (level, local) = open_with_verified_state(&temp, &fs::read(&path).unwrap());
    assert_eq!(level, Level::Member);
    assert_eq!(local.len(), 1, "{local:?}");
    assert!(local[0].contains("digest"), "{local:?}");
    // Rebuilt: the next session loads what this one saved, without a problem.
    ops::status(temp.home(), temp.project(), temp.now()).unwrap();
    assert_eq!(temp.view().local_problems(), &[] as &[String]);
    assert_eq!(level_of(&temp.view(), &temp, "fang"), Level::Member);
}

#[test]
fn a_foreign_verified_state_is_reported_and_rebuilt_never_trusted() {
    let temp = member_fang();
    let foreign = foreign_verified_state(&temp);
    let (level, local) = open_with_verified_state(&temp, &foreign);
    assert_eq!(level, Level::Member);
    assert_eq!(local.len(), 1, "{local:?}");
    assert!(local[0].contains("another channel"), "{local:?}");
}

#[test]
fn a_stale_verified_state_is_reported_and_rebuilt_never_trusted() {
    let temp = member_fang();
    let forged = forged_verified_state(&temp);
    let path = temp.root().join("stale.db");
    fs::write(&path, &forged).unwrap();
    let format = ferry_mcp_core::channel::session::kept::FORMAT;
    tamper(
        &path,
        &format!(
            "UPDATE meta SET value = X'{}' WHERE name = 'format'",
            hex::encode((format + 1).to_le_bytes())
        ),
    );
    let (level, local) = open_with_verified_state(&temp, &fs::read(&path).unwrap());
    assert_eq!(level, Level::Member);
    assert_eq!(local.len(), 1, "{local:?}");
    assert!(
        local[0].contains(&format!("format {}", format + 1)),
        "{local:?}"
    );
}

#[test]
fn a_verified_state_cut_short_or_emptied_is_reported_and_rebuilt() {
    let temp = member_fang();
    let forged = forged_verified_state(&temp);
    // Every page past the first gone, the header alone, nothing.
    for bytes in [&forged[..4096], &forged[..10], &[][..]] {
        let (level, local) = open_with_verified_state(&temp, bytes);
        assert_eq!(level, Level::Member);
        assert_eq!(local.len(), 1, "{local:?}");
        assert!(local[0].contains("corrupt"), "{local:?}");
    }
}

#[test]
fn deleting_the_verified_state_costs_only_time() {
    let temp = TempChannel::with_each_level();
    let mut member = temp.agent_session("member");
    note(&mut member, &temp, 1);
    member.save().unwrap();
    let mut master = temp.master_session();
    let order = ops::orders::issue(&mut master, &issue_request("kept"), temp.now()).unwrap();
    master.save().unwrap();
    let mut before = temp.view();
    fs::remove_file(temp.home().verified_path(temp.project())).unwrap();

    let mut after = temp.view();
    assert_eq!(after.local_problems(), &[] as &[String]);
    assert_eq!(
        after.whole_state().identity(),
        before.whole_state().identity()
    );
    assert_eq!(order_views(&mut after), order_views(&mut before));
    assert_eq!(
        after.whole_state().problems().unwrap(),
        before.whole_state().problems().unwrap()
    );
    assert!(
        after
            .board()
            .unwrap()
            .get(&order.parse().unwrap())
            .is_some()
    );
}

#[test]
fn a_rich_verified_state_reads_back_as_it_was_written() {
    use ferry_mcp_core::channel::fold::state::Sections;
    use ferry_mcp_core::channel::session::kept::{self, Kept, Loaded, Store};
    // Everything the state can hold: grants with scopes and expiry, a handover, a void
    // grant, orders at every step, hand-ins, blobs, fold and integrity problems.
    let temp = TempChannel::with_each_level();
    let in_an_hour =
        ferry_mcp_core::time::Timestamp::from_millis(temp.now().as_millis() + 3_600_000);
    ops::access_set(
        temp.home(),
        temp.project(),
        &name("worker"),
        &GrantRequest {
            level: Level::Orchestrator,
            scopes: vec!["docs".into()],
            expires: Some(in_an_hour),
            key: None,
        },
        temp.now(),
    )
    .unwrap();
    let mut master = temp.master_session();
    let mut request = issue_request("rich");
    request.review = true;
    request.heavy = true;
    request.hints.cores = Some(4);
    request.body = Some("y".repeat(1_500));
    let order = ops::orders::issue(&mut master, &request, temp.now()).unwrap();
    let mut member = temp.agent_session("member");
    ops::orders::claim(&mut member, &order, temp.now()).unwrap();
    ops::orders::progress(&mut member, &order, "going", temp.now()).unwrap();
    let handin = ops::orders::hand_in(&mut member, &order, "main", "work", temp.now()).unwrap();
    ops::orders::submit(
        &mut member,
        &order,
        &ops::orders::SubmitRequest {
            handin: Some(handin),
            git_ref: Some("abc123".into()),
            summary: "done".into(),
        },
        temp.now(),
    )
    .unwrap();
    let mut orch = temp.agent_session("orchestrator");
    ops::orders::review(
        &mut orch,
        &order,
        ferry_mcp_core::channel::fold::state::orders::Verdict::Changes,
        Some("notes"),
        temp.now(),
    )
    .unwrap();
    let member_key = agent_key(&temp, "member");
    write_raw(&temp, &name("member"), &member_key, kinds::GRANT, json!({}));
    append_bytes(&agent_log(&temp, "member"), b"junk\n");
    let next = other_machine(&temp, "next");
    let new_key = ops::new_master_key(&next, temp.project(), None).unwrap();
    ops::master_handover(
        temp.home(),
        temp.project(),
        &new_key.key,
        &new_key.proof,
        temp.now(),
    )
    .unwrap();

    let mut reader = Channel::open(temp.channel_dir()).unwrap().reader();
    let problems = reader.poll_with(&mut |_| {});
    // Folded from the channel here and now, never loaded: a state that lost a field on its way
    // through the file must not be what is compared.
    let session = open(&other_machine(&temp, "fresh"), &temp, Actor::Observer);
    assert!(!problems.is_empty() && !session.state().problems().unwrap().is_empty());
    let mut kept = Kept {
        genesis: [7; 32],
        channel: [7; 32],
        generation: 42,
        reader: reader.state(),
        state: session.state().clone(),
        problems,
        dropped_problems: 3,
        pinned: Some(kept::Pinned {
            seat_epoch: 9,
            pins_file: None,
            changed: vec![name("member")],
        }),
    };
    assert!(
        !kept.state.orders().unwrap().is_empty(),
        "the rich state has orders"
    );
    let path = temp.root().join("roundtrip.db");
    Store::open(&path).unwrap().0.write(&mut kept).unwrap();
    let bytes = kept::encode(&kept).unwrap();
    let mut store = Store::open(&path).unwrap().0;
    let Loaded::Kept(mut back) = store.load(&[7; 32], &[7; 32]) else {
        panic!("the state written does not read back");
    };
    store.load_sections(&mut back.state, Sections::ALL).unwrap();
    assert_eq!(back.state, kept.state);
    assert_eq!(back.problems, kept.problems);
    assert_eq!(
        (back.genesis, back.generation, back.dropped_problems),
        (kept.genesis, kept.generation, kept.dropped_problems)
    );
    assert_eq!(back.pinned, kept.pinned);
    assert_eq!(back.reader.len(), kept.reader.len());
    // What the reader keeps reads back whole (only what it rebuilds after loading is left out).
    assert_eq!(kept::encode(&back).unwrap(), bytes);
}

/// The kept state keeps of a log neither its path (its id gives it) nor its highest
/// verified entry when that is the last one read (format 8): a log read to its end and one
/// rolled back under this machine both read back as they were, and a warm open after a
/// rollback still reports nothing vanished and keeps what was verified.
#[test]
fn a_kept_log_read_to_its_end_or_rolled_back_reads_back_as_it_was() {
    use ferry_mcp_core::channel::fold::state::Sections;
    use ferry_mcp_core::channel::session::kept::{self, Kept, Loaded, Store};
    let temp = TempChannel::builder()
        .agent("fang", Level::Member)
        .agent("scout", Level::Member)
        .build()
        .unwrap();
    let mut session = temp.agent_session("fang");
    for n in 1..=3 {
        note(&mut session, &temp, n);
    }
    drop(session);

    let mut reader = Channel::open(temp.channel_dir()).unwrap().reader();
    let mut problems = reader.poll_with(&mut |_| {});
    drop_last_lines(&agent_log(&temp, "fang"), 2);
    problems.extend(reader.poll_with(&mut |_| {}));
    assert!(
        problems.iter().any(|p| p.kind == ProblemKind::RolledBack),
        "{problems:?}"
    );
    let session = open(&other_machine(&temp, "fresh"), &temp, Actor::Observer);
    let mut kept = Kept {
        genesis: [7; 32],
        channel: [7; 32],
        generation: 1,
        reader: reader.state(),
        state: session.state().clone(),
        problems,
        dropped_problems: 0,
        pinned: None,
    };
    let path = temp.root().join("roundtrip.db");
    Store::open(&path).unwrap().0.write(&mut kept).unwrap();
    let bytes = kept::encode(&kept).unwrap();
    let mut store = Store::open(&path).unwrap().0;
    let Loaded::Kept(mut back) = store.load(&[7; 32], &[7; 32]) else {
        panic!("the state written does not read back");
    };
    store.load_sections(&mut back.state, Sections::ALL).unwrap();
    assert_eq!(kept::encode(&back).unwrap(), bytes);
    assert_eq!(back.reader.look_paths(), kept.reader.look_paths());
    let logs = |reader: &ferry_mcp_core::channel::log::reader::ReaderState| -> Vec<_> {
        reader
            .logs()
            .map(|(id, log)| {
                let path = log.rel_path().to_owned();
                (
                    id.clone(),
                    path,
                    log.offset(),
                    log.last_seq(),
                    log.verified_seq(),
                )
            })
            .collect()
    };
    assert_eq!(logs(&back.reader), logs(&kept.reader));
    let fang = logs(&back.reader)
        .into_iter()
        .find(|(id, ..)| id.author == name("fang"))
        .unwrap();
    assert_eq!((fang.3, fang.4), (2, 4), "last read, highest verified");
    assert_eq!(fang.1, rel(&temp, &agent_log(&temp, "fang")));
}

// ---- 4. links ----

/// Every file under `dir` with its size, sorted: to show nothing was written there.
fn tree(dir: &Path) -> Vec<(PathBuf, u64)> {
    let mut found = Vec::new();
    let mut stack = vec![dir.to_owned()];
    while let Some(at) = stack.pop() {
        for item in fs::read_dir(&at).unwrap() {
            let item = item.unwrap();
            let meta = fs::symlink_metadata(item.path()).unwrap();
            if meta.is_dir() {
                stack.push(item.path());
            } else {
                found.push((item.path(), meta.len()));
            }
        }
    }
    found.sort();
    found
}

/// Moves `path` (in the channel) to `outside` and puts a symbolic link to it in its place.
#[cfg(unix)]
fn replace_with_link(path: &Path, outside: &Path) {
    fs::create_dir_all(outside.parent().unwrap()).unwrap();
    fs::rename(path, outside).unwrap();
    std::os::unix::fs::symlink(outside, path).unwrap();
}

#[cfg(unix)]
#[test]
fn a_linked_logs_folder_is_refused_for_reading_and_for_writing() {
    let temp = TempChannel::builder()
        .agent("fang", Level::Member)
        .build()
        .unwrap();
    let outside = temp.root().join("outside/logs");
    replace_with_link(&temp.channel_dir().join("logs"), &outside);
    let before = tree(&outside);

    let fresh = other_machine(&temp, "fresh");
    let there = open(&fresh, &temp, Actor::Observer);
    assert_eq!(there.identity().names().count(), 0, "read through the link");
    let links = problems_of(&there, ProblemKind::Link);
    assert_eq!(links.len(), 1, "{links:?}");
    assert_eq!(links[0].path, Path::new("logs"));
    // This machine keeps what it verified, and reports the link.
    let here = temp.view();
    assert_eq!(level_of(&here, &temp, "fang"), Level::Member);
    assert_eq!(problems_of(&here, ProblemKind::Link).len(), 1);

    let channel = Channel::open(temp.channel_dir()).unwrap();
    let err = channel
        .writer(&name("fang"), &agent_key(&temp, "fang"))
        .unwrap_err();
    assert!(err.to_string().contains("symbolic link"), "{err}");
    let mut session = temp.agent_session("fang");
    let err = session
        .append(Operation::HandIn, None, &Note { n: None }, temp.now())
        .unwrap_err();
    assert!(err.to_string().contains("symbolic link"), "{err}");
    assert!(ops::join(temp.home(), temp.project(), &name("bolt"), None, temp.now()).is_err());
    assert_eq!(
        tree(&outside),
        before,
        "something was written outside the channel"
    );
}

#[cfg(unix)]
#[test]
fn a_linked_blobs_folder_is_refused_for_reading_and_for_writing() {
    let temp = TempChannel::builder().build().unwrap();
    let channel = Channel::open(temp.channel_dir()).unwrap();
    let blob = channel.put_blob(b"a body kept in a blob").unwrap();
    let outside = temp.root().join("outside/blobs");
    replace_with_link(&temp.channel_dir().join("blobs"), &outside);
    let before = tree(&outside);

    assert!(channel.get_blob(&blob).is_err(), "read through the link");
    let err = channel.put_blob(b"another body").unwrap_err();
    assert!(err.to_string().contains("symbolic link"), "{err}");
    let mut master = temp.master_session();
    let mut request = issue_request("long");
    request.body = Some("z".repeat(5_000));
    assert!(ops::orders::issue(&mut master, &request, temp.now()).is_err());
    assert_eq!(
        tree(&outside),
        before,
        "something was written outside the channel"
    );
    let links = problems_of(&temp.view(), ProblemKind::Link);
    assert_eq!(links.len(), 1, "{links:?}");
    assert_eq!(links[0].path, Path::new("blobs"));
}

#[cfg(unix)]
#[test]
fn a_linked_author_folder_is_reported_and_not_read() {
    let temp = TempChannel::builder()
        .agent("fang", Level::Member)
        .build()
        .unwrap();
    let log = agent_log(&temp, "fang");
    replace_with_link(log.parent().unwrap(), &temp.root().join("outside/fang"));

    let fresh = other_machine(&temp, "fresh");
    let there = open(&fresh, &temp, Actor::Observer);
    assert_eq!(
        there.identity().holder(&name("fang")),
        None,
        "read through the link"
    );
    let links = problems_of(&there, ProblemKind::Link);
    assert_eq!(links.len(), 1, "{links:?}");
    assert_eq!(links[0].path, Path::new("logs/fang"));
    let here = temp.view();
    assert_eq!(level_of(&here, &temp, "fang"), Level::Member);
    assert_eq!(problems_of(&here, ProblemKind::Link).len(), 1);
    assert!(
        Channel::open(temp.channel_dir())
            .unwrap()
            .writer(&name("fang"), &agent_key(&temp, "fang"))
            .is_err()
    );
}

#[cfg(unix)]
#[test]
fn a_linked_log_file_is_reported_and_not_read() {
    let temp = TempChannel::builder()
        .agent("fang", Level::Member)
        .build()
        .unwrap();
    let log = agent_log(&temp, "fang");
    let outside = temp.root().join("outside/fang.jsonl");
    replace_with_link(&log, &outside);
    let before = tree(outside.parent().unwrap());

    let fresh = other_machine(&temp, "fresh");
    let there = open(&fresh, &temp, Actor::Observer);
    assert_eq!(
        there.identity().holder(&name("fang")),
        None,
        "read through the link"
    );
    let links = problems_of(&there, ProblemKind::Link);
    assert_eq!(links.len(), 1, "{links:?}");
    assert_eq!(links[0].path, rel(&temp, &log));
    let mut session = temp.agent_session("fang");
    assert!(
        session
            .append(Operation::HandIn, None, &Note { n: None }, temp.now())
            .is_err()
    );
    assert_eq!(tree(outside.parent().unwrap()), before);
}

/// The kept state derives a log's path from its author and key (format 8), which holds only
/// because nothing but `<key in lower-case hex>.jsonl` is a log: a log renamed to its key in
/// upper case is an unknown file, never read as that key's log, on a machine that never saw it
/// and on one that verified it (where it vanished, and what was verified keeps counting).
#[test]
fn a_log_renamed_to_its_key_in_upper_case_is_reported_and_never_read_as_that_log() {
    let temp = TempChannel::builder()
        .agent("fang", Level::Member)
        .build()
        .unwrap();
    let log = agent_log(&temp, "fang");
    let file = log.file_name().unwrap().to_str().unwrap();
    let upper = log.with_file_name(format!(
        "{}.jsonl",
        file.trim_end_matches(".jsonl").to_uppercase()
    ));
    fs::rename(&log, &upper).unwrap();

    let there = open(&other_machine(&temp, "fresh"), &temp, Actor::Observer);
    assert_eq!(
        there.identity().holder(&name("fang")),
        None,
        "read by another name"
    );
    let unknown = problems_of(&there, ProblemKind::UnknownFile);
    assert_eq!(unknown.len(), 1, "{unknown:?}");
    assert_eq!(unknown[0].path, rel(&temp, &upper));

    // The builder's machine verified the log.
    let here = temp.view();
    assert_eq!(level_of(&here, &temp, "fang"), Level::Member);
    let vanished = problems_of(&here, ProblemKind::Vanished);
    assert_eq!(vanished.len(), 1, "{vanished:?}");
    assert_eq!(vanished[0].path, rel(&temp, &log));
    assert_eq!(problems_of(&here, ProblemKind::UnknownFile).len(), 1);
}

#[cfg(unix)]
#[test]
fn a_linked_genesis_file_is_refused_unread() {
    use ferry_mcp_core::channel::log::store::StoreError;
    let temp = TempChannel::builder().build().unwrap();
    // Even a link to the channel's own, valid genesis: links are never followed.
    let genesis = temp.channel_dir().join("genesis.json");
    replace_with_link(&genesis, &temp.root().join("outside/genesis.json"));
    let err = Channel::open(temp.channel_dir()).unwrap_err();
    assert!(matches!(err, StoreError::BadGenesis(_)), "{err}");
    assert!(ops::status(temp.home(), temp.project(), temp.now()).is_err());
}

// ---- 5. handovers ----

fn handover_problems(session: &Session) -> usize {
    session
        .identity()
        .problems()
        .iter()
        .filter(|problem| problem.kind == FoldProblemKind::BadHandover)
        .count()
}

#[test]
fn a_handover_without_a_valid_proof_or_to_a_weak_key_does_not_move_mastership() {
    let temp = TempChannel::builder()
        .agent("fang", Level::Worker)
        .build()
        .unwrap();
    let master = master_key(temp.home(), &temp);
    let next = SecretKey::generate().unwrap();
    let stranger = SecretKey::generate().unwrap();
    let zeros = "0".repeat(64);
    // The identity point: with a lax check, (R = identity, s = 0) verifies for any message.
    let identity_point = format!("01{}", "0".repeat(62));
    let bodies = [
        // The proof is missing, signed by another key, or over another project.
        json!({ "key": next.public_key() }),
        json!({
            "key": next.public_key(),
            "proof": ferry_mcp_core::channel::fold::identity::handover_proof(temp.project(), &stranger),
        }),
        json!({
            "key": next.public_key(),
            "proof": ferry_mcp_core::channel::fold::identity::handover_proof(
                &ferry_mcp_core::channel::log::names::ProjectId::parse("other").unwrap(),
                &next,
            ),
        }),
        // Small-order keys nobody can sign with.
        json!({ "key": zeros, "proof": "0".repeat(128) }),
        json!({ "key": identity_point, "proof": format!("{identity_point}{zeros}") }),
    ];
    for body in &bodies {
        write_raw(
            &temp,
            &AgentName::master(),
            &master,
            kinds::MASTER_HANDOVER,
            body.clone(),
        );
    }
    let view = temp.view();
    assert_eq!(view.identity().master(), &master.public_key());
    assert_eq!(view.identity().era(), 0);
    // The first is malformed (no proof), the others bad handovers.
    assert_eq!(
        handover_problems(&view),
        bodies.len() - 1,
        "{:?}",
        view.identity().problems()
    );
    // The master is still the master here.
    grant(&temp, temp.home(), "fang", Level::Member);
    assert_eq!(level_of(&temp.view(), &temp, "fang"), Level::Member);
    let fresh = other_machine(&temp, "fresh");
    let there = open(&fresh, &temp, Actor::Observer);
    assert_eq!(there.identity().master(), &master.public_key());
    assert_eq!(handover_problems(&there), bodies.len() - 1);
}

#[test]
fn the_handover_operation_refuses_a_key_without_a_proof_and_writes_nothing() {
    let temp = TempChannel::builder().build().unwrap();
    let next = SecretKey::generate().unwrap();
    let stranger = SecretKey::generate().unwrap();
    let log = master_log(&temp);
    assert!(!log.exists());
    let proof = ferry_mcp_core::channel::fold::identity::handover_proof(temp.project(), &stranger);
    let err = ops::master_handover(
        temp.home(),
        temp.project(),
        &next.public_key(),
        &proof,
        temp.now(),
    )
    .unwrap_err();
    assert!(matches!(err, AccessError::BadHandover(_)), "{err}");
    assert!(!log.exists(), "the refused handover was written");
}

#[test]
fn a_former_master_s_entry_in_place_of_its_handover_line_does_not_count() {
    // Beyond the keyless attacker: the former master's key (an old laptop) rewrites its own log.
    let temp = TempChannel::builder()
        .agent("bolt", Level::Worker)
        .agent("cid", Level::Worker)
        .build()
        .unwrap();
    let old_master = master_key(temp.home(), &temp);
    let next = other_machine(&temp, "next");
    let new_key = ops::new_master_key(&next, temp.project(), None).unwrap();
    ops::master_handover(
        temp.home(),
        temp.project(),
        &new_key.key,
        &new_key.proof,
        temp.now(),
    )
    .unwrap();
    grant(&temp, &next, "cid", Level::Member);
    // The handover (seq 1) is replaced by a grant signed afterwards at the same seq.
    let old_log = master_log(&temp);
    assert_eq!(lines(&old_log).len(), 1);
    fs::write(&old_log, b"").unwrap();
    write_raw(
        &temp,
        &AgentName::master(),
        &old_master,
        kinds::GRANT,
        plant::grant(
            name("bolt"),
            agent_key(&temp, "bolt").public_key(),
            Level::Orchestrator,
        ),
    );

    let fresh = other_machine(&temp, "fresh");
    let there = open(&fresh, &temp, Actor::Observer);
    assert_eq!(there.identity().master(), &new_key.key);
    assert_eq!(level_of(&there, &temp, "cid"), Level::Member);
    assert_eq!(
        level_of(&there, &temp, "bolt"),
        Level::Worker,
        "the former master's later grant counts as signed before its handover"
    );
}

// ---- 6. an interrupted `ferry init` ----

/// What an interrupted init left: a state folder and a channel folder, with the master key
/// stored (the first step of init).
fn interrupted_init(root: &Path) -> (Home, PathBuf, SecretKey) {
    let home = Home::at(root.join("home"));
    let project = ferry_mcp_core::channel::log::names::ProjectId::parse("demo").unwrap();
    let key = SecretKey::generate().unwrap();
    home.store_key(&project, &KeyHolder::Master, &key, None)
        .unwrap();
    (home, root.join("channel"), key)
}

/// Runs init again and checks the project is whole: it opens, with a genesis by `key`.
fn rerun_init(home: &Home, channel: &Path, key: &SecretKey) -> Channel {
    let project = ferry_mcp_core::channel::log::names::ProjectId::parse("demo").unwrap();
    let now = ferry_mcp_testkit::clock::START;
    let created = ops::init(home, &project, channel, None, now).unwrap();
    assert_eq!(created.master, key.public_key());
    let opened = Channel::open(&home.channel_dir(&project).unwrap()).unwrap();
    assert_eq!(opened.genesis_master(), &key.public_key());
    let session = Session::open(home, &project, Actor::Master, now).unwrap();
    assert_eq!(
        session.master_key(now).unwrap().public_key(),
        key.public_key()
    );
    assert_eq!(session.integrity_problems().0, &[] as &[IntegrityProblem]);
    let (joined, _) = ops::join(home, &project, &name("fang"), None, now)
        .unwrap()
        .value;
    assert_eq!(joined, ops::Joined::Seated);
    opened
}

#[test]
fn init_interrupted_after_storing_the_master_key_is_finished_by_a_rerun() {
    let root = tempfile::tempdir().unwrap();
    let (home, channel, key) = interrupted_init(root.path());
    assert!(
        home.channel_dir(&"demo".parse().unwrap()).is_err(),
        "no project yet"
    );
    rerun_init(&home, &channel, &key);
}

#[test]
fn init_interrupted_while_creating_the_channel_folder_is_finished_by_a_rerun() {
    let root = tempfile::tempdir().unwrap();
    let (home, channel, key) = interrupted_init(root.path());
    fs::create_dir_all(channel.join("logs")).unwrap();
    fs::create_dir_all(channel.join("blobs")).unwrap();
    rerun_init(&home, &channel, &key);
}

#[test]
fn init_interrupted_after_writing_the_genesis_keeps_that_genesis_on_a_rerun() {
    let root = tempfile::tempdir().unwrap();
    let (home, channel, key) = interrupted_init(root.path());
    let project = "demo".parse().unwrap();
    // Written a moment before the rerun: a genesis written again would differ in its time.
    let earlier = ferry_mcp_core::time::Timestamp::from_millis(
        ferry_mcp_testkit::clock::START.as_millis() - 5,
    );
    let written = Channel::create(&channel, &project, &key, earlier)
        .unwrap()
        .genesis_digest();
    assert!(home.channel_dir(&project).is_err(), "no project yet");
    let opened = rerun_init(&home, &channel, &key);
    assert_eq!(opened.genesis_digest(), written);
}

#[test]
fn init_refuses_a_genesis_by_another_key_left_in_its_folder_and_registers_nothing() {
    let root = tempfile::tempdir().unwrap();
    let (home, channel, _key) = interrupted_init(root.path());
    let project = "demo".parse().unwrap();
    let planted = SecretKey::generate().unwrap();
    Channel::create(
        &channel,
        &project,
        &planted,
        ferry_mcp_testkit::clock::START,
    )
    .unwrap();
    let err = ops::init(
        &home,
        &project,
        &channel,
        None,
        ferry_mcp_testkit::clock::START,
    )
    .unwrap_err();
    assert!(matches!(err, ProjectError::ChannelExists(_)), "{err}");
    assert!(
        home.channel_dir(&project).is_err(),
        "a project was registered"
    );
}

// ---- 7. the writer's tip ----

/// fang (five entries) finds `tail` appended to its log by someone else, then appends one
/// entry through a session (after `forget` ran on the state folder): every reader accepts it.
fn fang_appends_after(tail: &[u8], forget: impl FnOnce(&TempChannel)) {
    let temp = TempChannel::builder()
        .agent("fang", Level::Member)
        .build()
        .unwrap();
    let mut session = temp.agent_session("fang");
    for n in 1..=4 {
        note(&mut session, &temp, n);
    }
    session.save().unwrap();
    drop(session);
    let log = agent_log(&temp, "fang");
    let old_line = lines(&log)[1].clone();
    let mut bytes = tail.to_vec();
    bytes.extend_from_slice(old_line.as_bytes());
    bytes.push(b'\n');
    append_bytes(&log, &bytes);
    forget(&temp);

    let mut session = temp.agent_session("fang");
    let new = note(&mut session, &temp, 5);
    assert_eq!(new.seq(), 6);
    // A fresh reader accepts it, and so does this machine.
    let batch = Channel::open(temp.channel_dir()).unwrap().reader().poll();
    assert!(
        batch.entries.iter().any(|e| e.hash() == new.hash()),
        "a fresh reader refused the new entry: {:?}",
        batch.problems
    );
    let new_line = lines(&log).len() as u64;
    assert!(
        batch.problems.iter().all(|p| p.line != Some(new_line)),
        "{:?}",
        batch.problems
    );
    let fresh = other_machine(&temp, "fresh");
    let there = open(&fresh, &temp, Actor::Observer);
    assert_eq!(
        there.state().counter(),
        batch.entries.len() as u64,
        "a fresh machine did not fold every entry"
    );
    let here = temp.view();
    assert!(
        here.integrity_problems()
            .0
            .iter()
            .all(|p| p.line != Some(new_line)),
        "{:?}",
        here.integrity_problems()
    );
}

#[test]
fn an_old_line_copied_after_70_kib_of_junk_does_not_set_the_writer_back() {
    let mut junk = vec![b'j'; 70 * 1024];
    junk.push(b'\n');
    fang_appends_after(&junk, |_| {});
}

#[test]
fn an_old_line_copied_after_a_300_kib_junk_line_does_not_set_the_writer_back() {
    let mut junk = vec![b'j'; 300 * 1024];
    junk.push(b'\n');
    fang_appends_after(&junk, |_| {});
}

#[test]
fn an_old_line_copied_after_junk_does_not_set_back_a_writer_that_lost_its_verified_state() {
    let mut junk = vec![b'j'; 300 * 1024];
    junk.push(b'\n');
    fang_appends_after(&junk, |temp| {
        fs::remove_file(temp.home().verified_path(temp.project())).unwrap();
    });
}

// ---- 8. huge files ----

const HUGE: usize = 4 << 20;

#[test]
fn a_huge_torn_tail_on_a_log_is_reported_and_the_rest_reads() {
    let temp = TempChannel::builder()
        .agent("fang", Level::Member)
        .build()
        .unwrap();
    let log = agent_log(&temp, "fang");
    append_bytes(&log, &vec![b't'; HUGE]);

    let fresh = other_machine(&temp, "fresh");
    let there = open(&fresh, &temp, Actor::Observer);
    assert_eq!(level_of(&there, &temp, "fang"), Level::Member);
    let torn = problems_of(&there, ProblemKind::TornLine);
    assert_eq!(torn.len(), 1, "{:?}", there.integrity_problems());
    assert_eq!(torn[0].line, Some(2));
    // fang writes on: its line starts after the fragment, and every reader reads it.
    let mut session = temp.agent_session("fang");
    let new = note(&mut session, &temp, 1);
    assert_eq!(new.seq(), 2);
    let batch = Channel::open(temp.channel_dir()).unwrap().reader().poll();
    assert!(batch.entries.iter().any(|e| e.hash() == new.hash()));
    assert!(
        batch
            .problems
            .iter()
            .any(|p| p.kind == ProblemKind::Malformed && p.line == Some(2)),
        "{:?}",
        batch.problems
    );
}

#[test]
fn a_huge_junk_line_is_skipped_and_reported_and_the_entries_after_it_read() {
    let temp = TempChannel::builder()
        .agent("fang", Level::Member)
        .build()
        .unwrap();
    let mut junk = vec![b'{'; HUGE];
    junk.push(b'\n');
    append_bytes(&master_log(&temp), &junk);
    grant(&temp, temp.home(), "fang", Level::Orchestrator);

    let fresh = other_machine(&temp, "fresh");
    let there = open(&fresh, &temp, Actor::Observer);
    assert_eq!(level_of(&there, &temp, "fang"), Level::Orchestrator);
    let malformed = problems_of(&there, ProblemKind::Malformed);
    assert_eq!(malformed.len(), 1, "{:?}", there.integrity_problems());
    assert!(
        malformed[0].detail.contains("longer than"),
        "{}",
        malformed[0]
    );
    assert_eq!(level_of(&temp.view(), &temp, "fang"), Level::Orchestrator);
}

#[test]
fn a_huge_genesis_file_is_refused_unread() {
    use ferry_mcp_core::channel::log::store::StoreError;
    let temp = TempChannel::builder().build().unwrap();
    let genesis = temp.channel_dir().join("genesis.json");
    let mut bytes = fs::read(&genesis).unwrap();
    bytes.resize(HUGE, b' ');
    fs::write(&genesis, &bytes).unwrap();

    let err = Channel::open(temp.channel_dir()).unwrap_err();
    assert!(matches!(err, StoreError::BadGenesis(_)), "{err}");
    let err = ops::status(temp.home(), temp.project(), temp.now()).unwrap_err();
    assert!(err.to_string().contains("longer than"), "{err}");
}

/// An order issued by the master whose body is the blob of `bytes` (stored whatever its size).
fn order_with_blob(temp: &TempChannel, bytes: &[u8]) -> (String, String) {
    let channel = Channel::open(temp.channel_dir()).unwrap();
    let blob = channel.put_blob(bytes).unwrap().to_hex();
    let mut writer = channel
        .writer(&AgentName::master(), &master_key(temp.home(), temp))
        .unwrap();
    let entry = writer
        .append(
            ferry_mcp_core::channel::fold::state::orders::kinds::ISSUE,
            json!({ "title": "huge body", "blob": blob }),
            temp.now(),
        )
        .unwrap();
    (format!("m{}", entry.seq()), blob)
}

fn list_len(session: &mut Session, temp: &TempChannel) -> usize {
    let request = ops::orders::ListRequest {
        limit: 10,
        ..Default::default()
    };
    ops::orders::list(session, &request, temp.now())
        .unwrap()
        .rows
        .len()
}

#[test]
fn a_blob_longer_than_a_reader_takes_is_refused_and_the_rest_of_the_order_reads() {
    use ferry_mcp_core::channel::log::store::MAX_BLOB_LEN;
    let temp = TempChannel::builder().build().unwrap();
    // A genuine blob (its bytes hash to its name), one byte over the limit.
    let (order, blob) = order_with_blob(
        &temp,
        &vec![b'b'; usize::try_from(MAX_BLOB_LEN).unwrap() + 1],
    );

    let mut fresh = open(&other_machine(&temp, "fresh"), &temp, Actor::Observer);
    let err = ops::orders::body_text(&mut fresh, &order, temp.now()).unwrap_err();
    assert!(err.to_string().contains(&blob), "{err}");
    let shown = ops::orders::show(&mut fresh, &order, None, temp.now()).unwrap();
    assert_eq!(shown.row.title, "huge body");
    assert_eq!(list_len(&mut fresh, &temp), 1);
}

#[test]
fn a_huge_file_planted_in_place_of_a_blob_is_refused_and_the_rest_reads() {
    let temp = TempChannel::builder().build().unwrap();
    let (order, blob) = order_with_blob(&temp, b"a short body");
    let path = temp.channel_dir().join("blobs").join(&blob);
    fs::write(&path, vec![b'b'; HUGE]).unwrap();

    let mut fresh = open(&other_machine(&temp, "fresh"), &temp, Actor::Observer);
    let err = ops::orders::body_text(&mut fresh, &order, temp.now()).unwrap_err();
    assert!(err.to_string().contains(&blob), "{err}");
    assert_eq!(list_len(&mut fresh, &temp), 1);
}

#[test]
fn an_order_body_longer_than_a_reader_takes_is_refused_when_issued() {
    use ferry_mcp_core::channel::log::store::MAX_BLOB_LEN;
    let temp = TempChannel::builder().build().unwrap();
    let mut master = temp.master_session();
    let mut request = issue_request("too long to read");
    request.body = Some("b".repeat(usize::try_from(MAX_BLOB_LEN).unwrap() + 1));
    let issued = ops::orders::issue(&mut master, &request, temp.now());
    assert!(issued.is_err(), "issued an order no reader can read");
}

// ---- 9. machine-state files ----

/// `temp` with fang a member and its `pins.json` replaced by garbage.
fn corrupt_pins() -> TempChannel {
    let temp = member_fang();
    let pins = temp
        .home_dir()
        .join("projects")
        .join(temp.project().as_str())
        .join("pins.json");
    assert!(pins.is_file());
    fs::write(&pins, b"\x00\xffnot json{{{").unwrap();
    temp
}

#[test]
fn a_corrupt_pins_file_is_reported_and_status_still_works() {
    let temp = corrupt_pins();
    let status = ops::status(temp.home(), temp.project(), temp.now()).unwrap();
    let pins: Vec<&String> = status
        .problems
        .iter()
        .filter(|line| line.contains("pins.json"))
        .collect();
    assert_eq!(pins.len(), 1, "{:?}", status.problems);
    assert!(pins[0].contains("not pinned"), "{pins:?}");
    assert_eq!(status.agents.len(), 1);
    assert_eq!(status.agents[0].name, name("fang"));
    let mut session = temp.agent_session("fang");
    note(&mut session, &temp, 1);
}

#[test]
fn a_corrupt_pins_file_does_not_make_join_fail() {
    let temp = corrupt_pins();
    let joined = ops::join(temp.home(), temp.project(), &name("bolt"), None, temp.now());
    // Whatever join answers, it wrote the roster entry: bolt is seated.
    assert!(temp.view().identity().holder(&name("bolt")).is_some());
    assert_eq!(joined.unwrap().0, ops::Joined::Seated);
    let again = ops::join(temp.home(), temp.project(), &name("fang"), None, temp.now());
    assert_eq!(again.unwrap().0, ops::Joined::AlreadySeated);
}

#[test]
fn a_line_problem_is_kept_once_when_its_log_is_read_again_after_a_rollback() {
    let temp = TempChannel::builder()
        .agent("fang", Level::Member)
        .build()
        .unwrap();
    let log = agent_log(&temp, "fang");
    append_bytes(&log, b"junk\n");
    let mut session = temp.agent_session("fang");
    note(&mut session, &temp, 1);
    note(&mut session, &temp, 2);
    session.save().unwrap();
    drop(session);
    assert_eq!(problems_of(&temp.view(), ProblemKind::Malformed).len(), 1);
    drop_last_lines(&log, 1);

    let session = temp.view();
    assert_eq!(problems_of(&session, ProblemKind::RolledBack).len(), 1);
    let malformed = problems_of(&session, ProblemKind::Malformed);
    assert_eq!(malformed.len(), 1, "{malformed:?}");
    assert_eq!(
        status_lines(&temp, temp.home(), ": malformed: ").len(),
        1,
        "status repeats the problem"
    );
}

// ---- 8. the kept state read in parts, and files told unchanged by their stamps ----

/// This machine's kept state of `temp`'s project.
fn kept_path(temp: &TempChannel) -> PathBuf {
    temp.home().verified_path(temp.project())
}

/// Flips `bit` of one byte of the record of the order written last to this machine's kept
/// state (the one the board names), the byte `at` picks in its length; its digest is left as
/// it was.
fn flip_record_bit(temp: &TempChannel, bit: u8, at: impl FnOnce(usize) -> usize) {
    change_row(
        &kept_path(temp),
        "SELECT rowid, record FROM orders WHERE superseded IS NULL ORDER BY rowid DESC LIMIT 1",
        "UPDATE orders SET record = ?1 WHERE rowid = ?2",
        |bytes| {
            let at = at(bytes.len());
            bytes[at] ^= bit;
        },
    );
}

/// Posts `text` to everyone as `session`'s agent.
fn post_to_all(session: &mut Session, temp: &TempChannel, text: &str) {
    let request = ops::talk::PostRequest {
        to: "all".into(),
        text: text.into(),
        reply_to: None,
    };
    ops::talk::post(session, &request, temp.now()).unwrap();
}

/// This machine's next open reads the orders `fresh` folded from the channel, and finds
/// nothing wrong with any section (a refresh reports one that did not read).
fn assert_reads_back_whole(temp: &TempChannel, fresh: &mut Session) {
    let mut again = temp.view();
    assert_eq!(order_views(&mut again), order_views(fresh));
    again.refresh(temp.now());
    assert_eq!(again.local_problems(), &[] as &[String]);
}

/// A channel with two orders and a message, its verified state saved.
fn board_with_talk() -> (TempChannel, String) {
    let temp = TempChannel::with_each_level();
    let mut master = temp.master_session();
    let order = ops::orders::issue(&mut master, &issue_request("first"), temp.now()).unwrap();
    ops::orders::issue(&mut master, &issue_request("second"), temp.now()).unwrap();
    master.save().unwrap();
    let mut member = temp.agent_session("member");
    ops::orders::claim(&mut member, &order, temp.now()).unwrap();
    post_to_all(&mut member, &temp, "claimed the first");
    member.save().unwrap();
    (temp, order)
}

#[test]
fn a_fold_read_after_another_process_saved_is_the_one_its_core_was_kept_with() {
    let (temp, order) = board_with_talk();
    // Opened before another process saves: its core is of this moment, its board not read.
    let mut early = temp.view();
    assert!(!early.state().orders_loaded());
    // Another process claims the second order's sibling, releases the first, and saves a
    // newer board.
    let mut member = temp.agent_session("member");
    ops::orders::release(&mut member, &order, None, temp.now()).unwrap();
    member.save().unwrap();
    // The early session reads its board now: the one its core went with, then folds the
    // release itself (a newer board under its older core would fold the release twice).
    let mut fresh = open(&other_machine(&temp, "fresh"), &temp, Actor::Observer);
    early.refresh(temp.now());
    assert_eq!(order_views(&mut early), order_views(&mut fresh));
    assert_eq!(early.local_problems(), &[] as &[String]);
    // And a save of a session that never read the board, after another process saved a
    // newer one, leaves a state that reads back as the channel folds.
    let mut quiet = temp.agent_session("orchestrator");
    post_to_all(&mut quiet, &temp, "a change to save");
    assert!(!quiet.state().orders_loaded());
    let mut other = temp.agent_session("member");
    ops::orders::claim(&mut other, &order, temp.now()).unwrap();
    other.save().unwrap();
    quiet.save().unwrap();
    let mut fresh = open(&other_machine(&temp, "fresh-2"), &temp, Actor::Observer);
    let mut next = temp.view();
    assert_eq!(order_views(&mut next), order_views(&mut fresh));
    assert_eq!(next.local_problems(), &[] as &[String]);
}

#[test]
fn a_warm_open_that_needs_no_order_reads_no_order_board() {
    let (temp, order) = board_with_talk();
    let mut view = temp.view();
    assert!(
        !view.state().orders_loaded(),
        "an open read the order board"
    );
    let mut orchestrator = temp.agent_session("orchestrator");
    assert!(!orchestrator.state().orders_loaded());
    // A message that arrives after the open is folded into talk alone.
    let mut member = temp.agent_session("member");
    post_to_all(&mut member, &temp, "and the second soon");
    let read = ops::talk::read(
        &mut orchestrator,
        &ops::talk::ReadRequest {
            limit: 10,
            ..Default::default()
        },
        &mut |_| true,
        temp.now(),
    )
    .unwrap();
    assert_eq!(read.messages.len(), 2, "{read:?}");
    ops::primary::status(&mut orchestrator, temp.now()).unwrap();
    assert!(
        !orchestrator.state().orders_loaded(),
        "talk or primary read the order board"
    );
    assert!(
        !view.state().orders_loaded(),
        "talk or primary read the order board"
    );
    // Asked for, it is there whole.
    let mut fresh = open(&other_machine(&temp, "fresh"), &temp, Actor::Observer);
    assert_eq!(order_views(&mut view), order_views(&mut fresh));
    assert!(view.state().orders_loaded());
    assert!(view.board().unwrap().get(&order.parse().unwrap()).is_some());
    assert_eq!(view.local_problems(), &[] as &[String]);
}

#[test]
fn a_corrupt_order_board_row_is_reported_and_rebuilt_from_the_channel() {
    let (temp, _) = board_with_talk();
    // One bit in the middle of the board, its digest left as it was: it still decodes, so
    // only the digest tells.
    // The board is kept a row per order (ADR 0011): one order's row is flipped.
    change_row(
        &kept_path(&temp),
        "SELECT key, value FROM items WHERE fold = 'board' ORDER BY key LIMIT 1",
        "UPDATE items SET value = ?1 WHERE fold = 'board' AND key = ?2",
        |bytes| {
            assert!(bytes.len() > 40, "the order's row holds its brief");
            let at = bytes.len() / 2;
            bytes[at] ^= 0x01;
        },
    );

    let mut fresh = open(&other_machine(&temp, "fresh"), &temp, Actor::Observer);
    let mut view = temp.view();
    // The row's digest is checked when the row is read: when the board is first needed.
    assert_eq!(view.local_problems(), &[] as &[String]);
    view.board().unwrap();
    let local = view.local_problems().to_vec();
    assert_eq!(local.len(), 1, "{local:?}");
    assert!(local[0].contains("board row does not match"), "{local:?}");
    // The board read is the channel's, never the damaged bytes nor an empty board.
    assert_eq!(order_views(&mut view), order_views(&mut fresh));
    assert_eq!(order_views(&mut fresh).len(), 2);
    // Written whole again: the next open reads it without a problem.
    view.refresh(temp.now());
    view.save().unwrap();
    assert_reads_back_whole(&temp, &mut fresh);
}

#[test]
fn a_kept_row_missing_refuses_the_whole_state() {
    let (temp, _) = board_with_talk();
    tamper(
        &kept_path(&temp),
        "DELETE FROM sections WHERE name = 'master_times'",
    );
    let mut view = temp.view();
    // Found when the rows are read: then the whole state is folded again from the channel.
    view.whole_state();
    assert_eq!(
        view.local_problems().len(),
        1,
        "{:?}",
        view.local_problems()
    );
    assert!(view.local_problems()[0].contains("missing"));
    let mut fresh = open(&other_machine(&temp, "fresh"), &temp, Actor::Observer);
    assert_eq!(view.talk().unwrap(), fresh.talk().unwrap());
    assert_eq!(
        view.whole_state().identity(),
        fresh.whole_state().identity()
    );
}

#[test]
fn master_times_that_do_not_decode_are_rebuilt_from_the_channel_and_reported() {
    let (temp, _) = board_with_talk();
    // Bytes that match their digest but are no master times: only decoding finds them.
    change_row(
        &kept_path(&temp),
        "SELECT name, value FROM sections WHERE name = 'master_times'",
        "UPDATE sections SET value = ?1 WHERE name = ?2",
        |bytes| *bytes = vec![0xff; 9],
    );
    {
        use sha2::Digest as _;
        let digest = sha2::Sha256::digest([0xff; 9]);
        tamper(
            &kept_path(&temp),
            &format!(
                "UPDATE sections SET digest = X'{}' WHERE name = 'master_times'",
                hex::encode(digest)
            ),
        );
    }
    let mut view = temp.view();
    // Judging a new entry reads the master's times: the bad row is found then.
    let mut member = temp.agent_session("member");
    note(&mut member, &temp, 7);
    view.refresh(temp.now());
    assert!(
        view.local_problems()
            .iter()
            .any(|problem| problem.contains("master times does not decode")),
        "{:?}",
        view.local_problems()
    );
    let mut fresh = open(&other_machine(&temp, "fresh"), &temp, Actor::Observer);
    assert_eq!(
        view.whole_state().identity(),
        fresh.whole_state().identity()
    );
}

/// Rewrites the last line of the log at `path` in place, to the same length: `"n":1` becomes
/// `"n":2` in a note, so the entry is no longer the one signed (and verified) there.
fn rewrite_last_note_in_place(path: &Path) {
    let mut log = lines(path);
    let last = log.last_mut().unwrap();
    assert!(last.contains(r#""n":1"#), "{last}");
    *last = last.replace(r#""n":1"#, r#""n":2"#);
    let before = fs::metadata(path).unwrap().len();
    let text: String = log.iter().map(|line| format!("{line}\n")).collect();
    fs::write(path, text).unwrap();
    assert_eq!(fs::metadata(path).unwrap().len(), before);
}

#[test]
fn a_verified_line_rewritten_to_the_same_length_is_caught_by_a_running_reader() {
    let temp = member_fang();
    let mut fang = temp.agent_session("fang");
    let mut server = temp.view();
    note(&mut fang, &temp, 1);
    server.refresh(temp.now());
    assert!(problems_of(&server, ProblemKind::Diverged).is_empty());

    rewrite_last_note_in_place(&agent_log(&temp, "fang"));
    server.refresh(temp.now());
    let diverged = problems_of(&server, ProblemKind::Diverged);
    assert_eq!(diverged.len(), 1, "{:?}", server.integrity_problems());
    assert_eq!(diverged[0].path, rel(&temp, &agent_log(&temp, "fang")));
    // What was verified keeps counting: fang's writer continues after its note.
    assert_eq!(note(&mut fang, &temp, 3).seq(), 3);
}

#[test]
fn a_verified_line_rewritten_to_the_same_length_is_caught_by_the_next_warm_open() {
    let temp = member_fang();
    let mut fang = temp.agent_session("fang");
    note(&mut fang, &temp, 1);
    fang.save().unwrap();
    // Unchanged: the warm open finds nothing (and reads no line to know it).
    assert!(problems_of(&temp.view(), ProblemKind::Diverged).is_empty());

    rewrite_last_note_in_place(&agent_log(&temp, "fang"));
    let view = temp.view();
    let diverged = problems_of(&view, ProblemKind::Diverged);
    assert_eq!(diverged.len(), 1, "{:?}", view.integrity_problems());
}

#[test]
fn a_file_put_in_a_known_author_folder_after_a_warm_open_is_found_and_reported() {
    let temp = member_fang();
    let mut fang = temp.agent_session("fang");
    note(&mut fang, &temp, 1);
    fang.save().unwrap();
    drop(temp.view());
    let folder = agent_log(&temp, "fang").parent().unwrap().to_owned();
    let copy = folder.join("copy.sync-conflict-20261201-101010-ABCDEFG.jsonl");
    fs::write(&copy, b"{}\n").unwrap();
    let view = temp.view();
    let found = problems_of(&view, ProblemKind::ConflictCopy);
    assert_eq!(found.len(), 1, "{:?}", view.integrity_problems());
    assert_eq!(found[0].path, rel(&temp, &copy));
}

#[test]
fn a_board_row_changed_under_an_open_session_is_caught_by_the_next_open_and_rebuilt() {
    let (temp, _) = board_with_talk();
    let mut fresh = open(&other_machine(&temp, "fresh"), &temp, Actor::Observer);
    // A session that never reads the board, so its save does not write it.
    let mut member = temp.agent_session("member");
    assert!(!member.state().orders_loaded());
    flip_section_bit(&kept_path(&temp), "board", 0x01, |len| len / 2);
    post_to_all(&mut member, &temp, "a change to save");
    member.save().unwrap();
    // The changed bytes are never trusted: the next open reports them and reads the
    // channel's board; once it saved, the state reads back whole.
    let mut next = temp.view();
    next.board().unwrap();
    assert!(
        next.local_problems()
            .iter()
            .any(|problem| problem.contains("board row does not match")),
        "{:?}",
        next.local_problems()
    );
    assert_eq!(order_views(&mut next), order_views(&mut fresh));
    next.save().unwrap();
    assert_reads_back_whole(&temp, &mut fresh);
}

#[test]
fn a_warm_open_of_enough_logs_to_stat_them_ahead_still_reads_what_was_appended_and_reports_what_vanished()
 {
    use ferry_mcp_core::channel::session::kept::Store;
    use ferry_mcp_testkit::bulk;

    // Enough agents for the open to stat their logs and folders on a thread of its own (at
    // least 4 KiB of looks; that the poll answers from those stats is the folder unit tests').
    let bulk = bulk::builder().entries(400).agents(60).build();
    drop(bulk.warm());
    let text = Store::open(&bulk.verified_path()).unwrap().0.looks();
    assert!(text.len() >= 4096, "{} bytes of looks", text.len());
    let looks: Vec<String> = text.lines().map(str::to_owned).collect();
    let mut logs = Vec::new();
    for author in fs::read_dir(bulk.channel_dir().join("logs")).unwrap() {
        let author = author.unwrap().path();
        assert!(looks.contains(&rel(&bulk, &author).to_string_lossy().into_owned()));
        for log in fs::read_dir(&author).unwrap() {
            let log = rel(&bulk, &log.unwrap().path())
                .to_string_lossy()
                .into_owned();
            assert!(looks.contains(&log), "{log} is not among the looks");
            logs.push(log);
        }
    }
    assert_eq!(looks[..2], [".", "logs"]);
    assert_eq!(
        looks.len(),
        2 + 2 * logs.len(),
        "the channel folder, logs/, each folder, each log"
    );

    // After the save: one agent writes, another agent's log is deleted.
    let writer = bulk.agents()[3].name.clone();
    let mut session = bulk.agent_session(writer.as_str());
    // Not saved: only the log tells of it.
    let written = note(&mut session, &bulk, 1);
    drop(session);
    let gone = bulk.agents()[7].name.clone();
    let gone_log = bulk.channel_dir().join(
        logs.iter()
            .find(|log| log.contains(&format!("/{gone}/")))
            .unwrap(),
    );
    fs::remove_file(&gone_log).unwrap();

    let view = bulk.view();
    let vanished = problems_of(&view, ProblemKind::Vanished);
    assert_eq!(vanished.len(), 1, "{vanished:?}");
    assert_eq!(vanished[0].path, rel(&bulk, &gone_log));
    assert_eq!(
        view.log_seq(&writer, written.key()),
        written.seq(),
        "the warm open did not read the entry appended after the save"
    );
    assert_eq!(view.state().heard(&writer), Some(written.time()));
}

#[test]
fn the_genesis_digest_is_of_the_bytes_whose_signature_was_checked_even_if_the_file_is_replaced_after()
 {
    use sha2::Digest as _;
    let temp = member_fang();
    let genesis_path = temp.channel_dir().join("genesis.json");
    let verified = fs::read(&genesis_path).unwrap();
    let channel = Channel::open(temp.channel_dir()).unwrap();
    // Replaced after the open: another channel's genesis, validly signed by the same master.
    let other = temp.root().join("other-channel");
    let later = ferry_mcp_core::time::Timestamp::from_millis(temp.now().as_millis() + 1);
    Channel::create(
        &other,
        temp.project(),
        &master_key(temp.home(), &temp),
        later,
    )
    .unwrap();
    fs::copy(other.join("genesis.json"), &genesis_path).unwrap();
    let expected: [u8; 32] = sha2::Sha256::digest(&verified).into();
    assert_eq!(channel.genesis_digest(), expected);
    assert_ne!(
        Channel::open(temp.channel_dir()).unwrap().genesis_digest(),
        expected
    );
}

/// Lists every order through `session` (briefs only: no record is read).
fn list_all(session: &mut Session, now: ferry_mcp_core::time::Timestamp) -> usize {
    ops::orders::list(
        session,
        &ops::orders::ListRequest {
            all: true,
            since: None,
            limit: 10_000,
        },
        now,
    )
    .unwrap()
    .rows
    .len()
}

#[test]
fn a_warm_open_lists_every_order_from_the_briefs_without_reading_a_record() {
    let (temp, order) = board_with_talk();
    let mut view = temp.view();
    assert_eq!(list_all(&mut view, temp.now()), 2);
    assert_eq!(view.board().unwrap().resident(), 0);
    // Asked for whole, one is read, and only that one.
    let shown = ops::orders::show(&mut view, &order, None, temp.now()).unwrap();
    assert_eq!(shown.row.id, order);
    assert_eq!(view.board().unwrap().resident(), 1);
    let mut fresh = open(&other_machine(&temp, "fresh"), &temp, Actor::Observer);
    assert_eq!(order_views(&mut view), order_views(&mut fresh));
}

#[test]
fn an_order_record_that_does_not_read_is_rebuilt_from_the_channel_and_reported() {
    let (temp, _) = board_with_talk();
    // In the record appended last, which the board names.
    flip_record_bit(&temp, 0x01, |len| len - 2);

    let mut fresh = open(&other_machine(&temp, "fresh"), &temp, Actor::Observer);
    let mut view = temp.view();
    // The briefs are whole: listing finds nothing wrong.
    assert_eq!(list_all(&mut view, temp.now()), 2);
    assert_eq!(view.local_problems(), &[] as &[String]);
    // Every order whole: the damaged record is the channel's order, never the changed bytes.
    assert_eq!(order_views(&mut view), order_views(&mut fresh));
    let local = one_local_problem(&mut view, &temp);
    assert!(local.contains("record of order"), "{local}");
    assert!(local.contains("does not read"), "{local}");
    // Written again: the next open reads every record without a problem.
    view.save().unwrap();
    assert_reads_back_whole(&temp, &mut fresh);
}

#[test]
fn an_order_record_changed_in_its_file_under_an_open_session_is_never_trusted_and_is_rebuilt_where_it_is_read()
 {
    let (temp, _) = board_with_talk();
    let mut fresh = open(&other_machine(&temp, "fresh"), &temp, Actor::Observer);
    // A session that reads the board's briefs and no record: its save appends no record.
    let mut member = temp.agent_session("member");
    assert_eq!(list_all(&mut member, temp.now()), 2);
    assert_eq!(member.board().unwrap().resident(), 0);
    // In place, so the session's handle reads the changed bytes.
    flip_record_bit(&temp, 0x01, |len| len - 2);
    post_to_all(&mut member, &temp, "a change to save");
    member.save().unwrap();

    // The next open that reads it finds it changed: the channel's order instead, reported.
    let mut next = temp.view();
    assert_eq!(order_views(&mut next), order_views(&mut fresh));
    let local = one_local_problem(&mut next, &temp);
    assert!(local.contains("record of order"), "{local}");
    // Written again: the next open reads every record without a problem.
    next.save().unwrap();
    assert_reads_back_whole(&temp, &mut fresh);
}

#[test]
fn a_seat_change_keeps_no_record_in_memory_whose_order_it_does_not_change() {
    use ferry_mcp_testkit::bulk;

    let bulk = bulk::builder().entries(2_000).build();
    drop(bulk.warm());
    let mut server = bulk.view();
    let orders = list_all(&mut server, bulk.now());
    assert!(orders > 100, "{orders}");
    assert_eq!(server.board().unwrap().resident(), 0);
    // A new agent, seated and granted: no order names it, so no record is read.
    let newcomer = TempChannel::agent("newcomer-1");
    ops::seats::join(bulk.home(), bulk.project(), &newcomer, None, bulk.now()).unwrap();
    grant(&bulk, bulk.home(), newcomer.as_str(), Level::Member);
    server.refresh(bulk.now());
    assert_eq!(server.board().unwrap().resident(), 0);
    // A member demoted to Worker: the orders it took part in are judged again (read from
    // their records); the demotion binds only what it writes from now on (ADR 0005 rule 2a),
    // so none changes, and none stays in memory.
    let member = bulk.agent_at(Level::Member).clone();
    grant(&bulk, bulk.home(), member.as_str(), Level::Worker);
    server.refresh(bulk.now());
    assert_eq!(server.board().unwrap().resident(), 0);
    let mut fresh = open(&other_machine(&bulk, "fresh"), &bulk, Actor::Observer);
    assert_eq!(order_views(&mut server), order_views(&mut fresh));
}

#[cfg(target_os = "linux")]
#[test]
fn sessions_that_read_the_board_and_its_records_leave_no_file_open_when_dropped() {
    let (temp, order) = board_with_talk();
    let open_files = || fs::read_dir("/proc/self/fd").unwrap().count();
    drop(temp.view());
    let before = open_files();
    for _ in 0..20 {
        let mut view = temp.view();
        // Reading the board points it at its records; showing an order reads one.
        assert_eq!(list_all(&mut view, temp.now()), 2);
        ops::orders::show(&mut view, &order, None, temp.now()).unwrap();
    }
    assert_eq!(
        open_files(),
        before,
        "each session left its verified state open"
    );
}

#[test]
fn a_save_moves_the_board_to_the_records_it_wrote_and_keeps_no_order_whole() {
    let (temp, order) = board_with_talk();
    let mut member = temp.agent_session("member");
    // Every order read whole, and one changed.
    order_views(&mut member);
    assert_eq!(member.board().unwrap().resident(), 2);
    ops::orders::progress(&mut member, &order, "halfway there", temp.now()).unwrap();
    member.save().unwrap();
    assert_eq!(member.board().unwrap().resident(), 0);
    // Read again, from the file just written: as a machine that read everything has them.
    let mut fresh = open(&other_machine(&temp, "fresh"), &temp, Actor::Observer);
    assert_eq!(order_views(&mut member), order_views(&mut fresh));
    // A second save copies them from there.
    post_to_all(&mut member, &temp, "saved again");
    member.save().unwrap();
    assert_eq!(member.board().unwrap().resident(), 0);
    assert_reads_back_whole(&temp, &mut fresh);
}

#[test]
fn a_session_that_folded_the_channel_from_nothing_keeps_no_order_whole_after_its_save() {
    let (temp, _) = board_with_talk();
    fs::remove_file(temp.home().verified_path(temp.project())).unwrap();
    let mut cold = temp.view();
    assert_eq!(cold.board().unwrap().resident(), 2);
    cold.refresh(temp.now());
    cold.save().unwrap();
    assert_eq!(cold.board().unwrap().resident(), 0);
    let mut fresh = open(&other_machine(&temp, "fresh"), &temp, Actor::Observer);
    assert_eq!(order_views(&mut cold), order_views(&mut fresh));
}

#[cfg(unix)]
#[test]
fn an_author_folder_swapped_for_a_link_is_not_read_even_when_its_stats_are_taken_ahead() {
    use ferry_mcp_testkit::bulk;

    // Enough agents for the open to stat every log ahead, the linked one included.
    let bulk = bulk::builder().entries(400).agents(60).build();
    drop(bulk.warm());
    let agent = bulk.agents()[5].name.clone();
    let mut session = bulk.agent_session(agent.as_str());
    let kept_seq = {
        let key = agent_key(&bulk, agent.as_str()).public_key();
        session.log_seq(&agent, &key)
    };
    // A valid entry the kept state does not know, then the folder moved out of the channel
    // and linked back in its place.
    let written = note(&mut session, &bulk, 1);
    assert!(
        kept_seq > 0 && written.seq() == kept_seq + 1,
        "{kept_seq} {}",
        written.seq()
    );
    drop(session);
    let folder = bulk.channel_dir().join("logs").join(agent.as_str());
    let outside = bulk.root().join("outside-folder");
    fs::rename(&folder, &outside).unwrap();
    std::os::unix::fs::symlink(&outside, &folder).unwrap();

    let view = bulk.view();
    assert_eq!(
        view.log_seq(&agent, written.key()),
        kept_seq,
        "an entry was read through the link"
    );
    let links = problems_of(&view, ProblemKind::Link);
    assert_eq!(links.len(), 1, "{links:?}");
    assert_eq!(links[0].path, rel(&bulk, &folder));
}

/// How many saves the kept state has seen: every save counts one.
fn kept_file_now(temp: &TempChannel) -> u64 {
    let conn = rusqlite::Connection::open(kept_path(temp)).unwrap();
    let saves: Vec<u8> = conn
        .query_row("SELECT value FROM meta WHERE name = 'saves'", [], |row| {
            row.get(0)
        })
        .unwrap();
    u64::from_le_bytes(saves.try_into().unwrap())
}

/// Opens the channel three times, checking and saving each open, and asserts that none of
/// them wrote the verified state again.
fn assert_opens_write_nothing(temp: &TempChannel, check: impl Fn(&Session)) {
    let written = kept_file_now(temp);
    for _ in 0..3 {
        let mut again = temp.view();
        check(&again);
        again.save().unwrap();
    }
    assert_eq!(
        kept_file_now(temp),
        written,
        "an open that found nothing new wrote the verified state again"
    );
}

/// What a session's kept problems say, path and kind.
fn problem_paths(session: &Session) -> Vec<(PathBuf, ProblemKind)> {
    let mut found: Vec<_> = session
        .integrity_problems()
        .0
        .iter()
        .map(|problem| (problem.path.clone(), problem.kind))
        .collect();
    found.sort();
    found
}

#[test]
fn files_the_format_does_not_name_are_reported_once_and_the_opens_after_write_nothing() {
    let temp = member_fang();
    let fang_log = agent_log(&temp, "fang");
    let fang_dir = fang_log.parent().unwrap().to_owned();
    // What anyone who can write the channel folder can leave there, at every level of it.
    fs::write(temp.channel_dir().join("README"), b"hi").unwrap();
    fs::write(temp.channel_dir().join("logs/stray.txt"), b"hi").unwrap();
    fs::write(fang_dir.join("notes.txt"), b"hi").unwrap();
    let conflict = fang_dir.join(format!(
        "{}.sync-conflict-20260101-120000-ABCDEFG.jsonl",
        agent_key(&temp, "fang").public_key()
    ));
    fs::copy(&fang_log, &conflict).unwrap();
    let mut first = temp.view();
    first.save().unwrap();
    drop(first);
    fs::remove_file(&fang_log).unwrap();
    let mut first = temp.view();
    first.save().unwrap();
    let reported = problem_paths(&first);
    let mut expected = vec![
        (PathBuf::from("README"), ProblemKind::UnknownFile),
        (PathBuf::from("logs/stray.txt"), ProblemKind::UnknownFile),
        (
            rel(&temp, &fang_dir.join("notes.txt")),
            ProblemKind::UnknownFile,
        ),
        (rel(&temp, &conflict), ProblemKind::ConflictCopy),
        (rel(&temp, &fang_log), ProblemKind::Vanished),
    ];
    expected.sort();
    assert_eq!(reported, expected);
    drop(first);

    // Found again by every open, they changed nothing: the state is not written again.
    assert_opens_write_nothing(&temp, |again| {
        assert_eq!(problem_paths(again), expected);
        assert_eq!(again.integrity_problems().1, 0);
    });

    // A file added later, where the earlier ones are no longer listed, is reported.
    fs::write(temp.channel_dir().join("README.2"), b"hi").unwrap();
    fs::write(fang_dir.join("notes.2.txt"), b"hi").unwrap();
    let later = temp.view();
    let mut more = expected.clone();
    more.push((PathBuf::from("README.2"), ProblemKind::UnknownFile));
    more.push((
        rel(&temp, &fang_dir.join("notes.2.txt")),
        ProblemKind::UnknownFile,
    ));
    more.sort();
    assert_eq!(problem_paths(&later), more);
}

#[test]
fn problems_past_the_thousand_kept_are_counted_once_and_not_again_at_every_open() {
    let temp = member_fang();
    let fang_dir = agent_log(&temp, "fang").parent().unwrap().to_owned();
    for i in 0..1_005 {
        fs::write(fang_dir.join(format!("junk-{i:04}.txt")), b"x").unwrap();
    }
    // The folder settles first (its stamp is kept only 2 s after its last change): otherwise a
    // slow first open on a busy machine leaves the stamp to a later open, which then writes it,
    // and "the opens after write nothing" would fail for a reason this test is not about.
    std::thread::sleep(std::time::Duration::from_millis(2_100));
    let mut first = temp.view();
    first.save().unwrap();
    let (kept, dropped) = first.integrity_problems();
    assert_eq!((kept.len(), dropped), (1_000, 5));
    drop(first);

    assert_opens_write_nothing(&temp, |again| {
        assert_eq!(again.integrity_problems().1, 5);
    });
}

#[test]
fn an_open_two_seconds_after_the_folders_last_changed_keeps_their_stamps_once_and_the_opens_after_write_nothing()
 {
    let temp = member_fang();
    fs::write(temp.channel_dir().join("README"), b"hi").unwrap();
    let mut first = temp.view();
    first.save().unwrap();
    drop(first);
    // The folders changed just before that look: their stamps were not kept, so each open
    // lists them again until one can trust them (a coarse clock could hide a change made in
    // the same tick). Nothing else is new, so none of those opens writes.
    assert_opens_write_nothing(&temp, |again| {
        assert_eq!(
            problem_paths(again),
            vec![(PathBuf::from("README"), ProblemKind::UnknownFile)]
        );
    });
    std::thread::sleep(std::time::Duration::from_millis(2_100));
    let before = kept_file_now(&temp);
    let mut settled = temp.view();
    settled.save().unwrap();
    drop(settled);
    assert_ne!(
        kept_file_now(&temp),
        before,
        "the settled stamps were not kept"
    );
    assert_opens_write_nothing(&temp, |again| {
        assert_eq!(
            problem_paths(again),
            vec![(PathBuf::from("README"), ProblemKind::UnknownFile)]
        );
    });
}

// ---- 9. order records, one row each in the kept state (ADR 0009, 0011) ----

/// The rows of the kept state's records: every one, and those no newer record superseded.
fn record_rows(temp: &TempChannel) -> (u64, u64) {
    let conn = rusqlite::Connection::open(kept_path(temp)).unwrap();
    let count = |sql: &str| conn.query_row(sql, [], |row| row.get::<_, i64>(0)).unwrap() as u64;
    (
        count("SELECT count(*) FROM orders"),
        count("SELECT count(*) FROM orders WHERE superseded IS NULL"),
    )
}

/// The bytes of the record written last.
fn last_record_len(temp: &TempChannel) -> u64 {
    let conn = rusqlite::Connection::open(kept_path(temp)).unwrap();
    conn.query_row(
        "SELECT length(record) FROM orders ORDER BY rowid DESC LIMIT 1",
        [],
        |row| row.get::<_, i64>(0),
    )
    .unwrap() as u64
}

/// Refreshes `session` and returns the one local problem it then reports.
fn one_local_problem(session: &mut Session, temp: &TempChannel) -> String {
    session.refresh(temp.now());
    let local = session.local_problems().to_vec();
    assert_eq!(local.len(), 1, "{local:?}");
    local.into_iter().next().unwrap()
}

#[test]
fn a_save_after_a_progress_line_writes_that_order_s_record_and_no_other() {
    use ferry_mcp_testkit::bulk;

    let bulk = bulk::builder().entries(2_000).build();
    drop(bulk.warm());
    let (rows, live) = record_rows(&bulk);
    let mut view = bulk.view();
    let orders = list_all(&mut view, bulk.now());
    assert!(orders > 100, "{orders}");
    assert_eq!(live as usize, view.board().unwrap().iter().count());
    let (order, holder) = view
        .board()
        .unwrap()
        .iter()
        .find_map(|order| {
            use ferry_mcp_core::channel::fold::state::orders::OrderState;
            let brief = order.brief();
            let working = matches!(
                brief.state,
                OrderState::Claimed | OrderState::InProgress | OrderState::ChangesRequested
            );
            Some((
                order.id().to_string(),
                brief.holder.clone().filter(|_| working)?,
            ))
        })
        .expect("some order is being worked on");
    drop(view);

    let mut session = bulk.agent_session(holder.as_str());
    ops::orders::progress(&mut session, &order, "halfway", bulk.now()).unwrap();
    session.save().unwrap();
    drop(session);
    assert_eq!(
        record_rows(&bulk),
        (rows + 1, live),
        "the save wrote more than the changed order's record"
    );
    let one = {
        let mut view = bulk.view();
        let order = view
            .board_whole()
            .unwrap()
            .iter()
            .find(|o| o.id().to_string() == order)
            .unwrap();
        postcard::to_stdvec(order.whole().unwrap()).unwrap().len() as u64
    };
    assert_eq!(last_record_len(&bulk), one);
    let mut fresh = open(&other_machine(&bulk, "fresh"), &bulk, Actor::Observer);
    assert_reads_back_whole(&bulk, &mut fresh);
}

#[test]
fn a_session_whose_kept_state_was_removed_under_it_writes_every_record_it_names_into_a_new_one() {
    let (temp, order) = board_with_talk();
    let mut fresh_before = open(&other_machine(&temp, "before"), &temp, Actor::Observer);
    // Loaded, its board read and its database open: then the database is removed.
    let mut member = temp.agent_session("member");
    assert_eq!(list_all(&mut member, temp.now()), 2);
    for suffix in ["", "-wal", "-shm"] {
        let mut path = kept_path(&temp).into_os_string();
        path.push(suffix);
        let _ = fs::remove_file(path);
    }
    ops::orders::progress(&mut member, &order, "halfway", temp.now()).unwrap();
    member.save().unwrap();
    assert_eq!(
        record_rows(&temp).1,
        2,
        "every record it names, in the new one"
    );
    // It reads its records from the new database from then on.
    ops::orders::show(&mut member, &order, None, temp.now()).unwrap();
    member.refresh(temp.now());
    assert_eq!(member.local_problems(), &[] as &[String]);

    let mut fresh = open(&other_machine(&temp, "fresh"), &temp, Actor::Observer);
    assert_ne!(order_views(&mut fresh), order_views(&mut fresh_before));
    assert_reads_back_whole(&temp, &mut fresh);
}

#[test]
fn order_records_missing_or_of_another_state_are_reported_and_the_state_rebuilt() {
    for replace in [false, true] {
        let (temp, _) = board_with_talk();
        let mut fresh = open(&other_machine(&temp, "fresh"), &temp, Actor::Observer);
        if replace {
            // Records of another state: the same ids under other digests.
            tamper(
                &kept_path(&temp),
                "UPDATE orders SET digest = randomblob(32)",
            );
        } else {
            tamper(&kept_path(&temp), "DELETE FROM orders");
        }
        let mut view = temp.view();
        assert_eq!(view.local_problems(), &[] as &[String]);
        // Every order whole: the channel's, never nothing.
        assert_eq!(order_views(&mut view), order_views(&mut fresh));
        let local = one_local_problem(&mut view, &temp);
        assert!(local.contains("record of order"), "{local}");
        view.save().unwrap();
        assert_reads_back_whole(&temp, &mut fresh);
    }
}

#[test]
fn a_record_superseded_by_a_newer_one_is_removed_a_thousand_saves_later() {
    let (temp, order) = board_with_talk();
    let (rows, live) = record_rows(&temp);
    assert_eq!(
        (rows, live),
        (3, 2),
        "the claim superseded the first order's record"
    );
    // A thousand saves later (the count is in the database), the superseded record goes.
    tamper(
        &kept_path(&temp),
        &format!(
            "UPDATE meta SET value = X'{}' WHERE name = 'saves'",
            hex::encode((kept_file_now(&temp) + 1_000).to_le_bytes())
        ),
    );
    let mut fresh = open(&other_machine(&temp, "fresh"), &temp, Actor::Observer);
    let mut member = temp.agent_session("member");
    ops::orders::progress(&mut member, &order, "halfway", temp.now()).unwrap();
    member.save().unwrap();
    assert_eq!(
        record_rows(&temp),
        (3, 2),
        "one more superseded, one removed"
    );
    drop(member);
    assert_ne!(order_views(&mut temp.view()), order_views(&mut fresh));
    let mut fresh = open(&other_machine(&temp, "fresh-again"), &temp, Actor::Observer);
    assert_reads_back_whole(&temp, &mut fresh);
}

#[test]
fn two_sessions_saving_at_once_on_one_machine_leave_every_record_readable() {
    let (temp, order) = board_with_talk();
    std::thread::scope(|scope| {
        scope.spawn(|| {
            for n in 0..12 {
                let mut member = temp.agent_session("member");
                let text = format!("step {n}");
                ops::orders::progress(&mut member, &order, &text, temp.now()).unwrap();
                member.save().unwrap();
            }
        });
        scope.spawn(|| {
            for n in 0..12 {
                let mut orchestrator = temp.agent_session("orchestrator");
                let title = format!("more {n}");
                ops::orders::issue(&mut orchestrator, &issue_request(&title), temp.now()).unwrap();
                // Every record read and written again by this save's board.
                assert!(list_all(&mut orchestrator, temp.now()) >= 2);
                orchestrator.save().unwrap();
            }
        });
    });
    let mut fresh = open(&other_machine(&temp, "fresh"), &temp, Actor::Observer);
    assert_eq!(list_all(&mut temp.view(), temp.now()), 2 + 12);
    assert_reads_back_whole(&temp, &mut fresh);
}

#[test]
fn a_folder_of_five_thousand_junk_files_listed_again_after_one_more_reports_only_that_one() {
    let temp = member_fang();
    let fang_dir = agent_log(&temp, "fang").parent().unwrap().to_owned();
    for i in 0..5_000 {
        fs::write(fang_dir.join(format!("junk-{i:05}.txt")), b"x").unwrap();
    }
    let mut first = temp.view();
    first.save().unwrap();
    let (kept, dropped) = first.integrity_problems();
    assert_eq!((kept.len(), dropped), (1_000, 4_000));
    drop(first);

    fs::write(fang_dir.join("one-more.txt"), b"x").unwrap();
    let mut again = temp.view();
    assert_eq!(again.integrity_problems().1, 4_001);
    again.save().unwrap();
    assert_eq!(temp.view().integrity_problems().1, 4_001);
}

// ---- 10. the kept state's path (ADR 0011) ----

/// Each file of the kept state's database: itself, its WAL, its shared memory.
fn kept_files(temp: &TempChannel) -> [PathBuf; 3] {
    let with = |suffix: &str| {
        let mut path = kept_path(temp).into_os_string();
        path.push(suffix);
        PathBuf::from(path)
    };
    [with(""), with("-wal"), with("-shm")]
}

#[cfg(unix)]
#[test]
fn a_fifo_planted_as_the_kept_state_or_its_journal_is_refused_unopened_and_reported() {
    use std::os::unix::fs::FileTypeExt as _;
    for file in 0..3 {
        let (temp, order) = board_with_talk();
        let mut fresh = open(&other_machine(&temp, "fresh"), &temp, Actor::Observer);
        let planted = kept_files(&temp)[file].clone();
        let _ = fs::remove_file(&planted);
        rustix::fs::mknodat(
            rustix::fs::CWD,
            &planted,
            rustix::fs::FileType::Fifo,
            rustix::fs::Mode::from_raw_mode(0o600),
            0,
        )
        .unwrap();
        // It would hang an open that read or wrote it: this one returns.
        let mut view = temp.view();
        let local = view.local_problems().to_vec();
        assert_eq!(local.len(), 1, "{local:?}");
        assert!(local[0].contains("not a regular file"), "{local:?}");
        // The channel is all there, and a save writes nowhere.
        assert_eq!(order_views(&mut view), order_views(&mut fresh));
        ops::orders::show(&mut view, &order, None, temp.now()).unwrap();
        view.save().unwrap();
        assert!(
            fs::symlink_metadata(&planted)
                .unwrap()
                .file_type()
                .is_fifo(),
            "the FIFO was replaced"
        );
    }
}

#[cfg(unix)]
#[test]
fn a_link_planted_as_the_kept_state_is_refused_and_nothing_is_written_where_it_points() {
    let (temp, _) = board_with_talk();
    let mut fresh = open(&other_machine(&temp, "fresh"), &temp, Actor::Observer);
    let outside = temp.root().join("outside.db");
    fs::rename(kept_path(&temp), &outside).unwrap();
    let before = fs::read(&outside).unwrap();
    std::os::unix::fs::symlink(&outside, kept_path(&temp)).unwrap();
    let mut member = temp.agent_session("member");
    let local = member.local_problems().to_vec();
    assert_eq!(local.len(), 1, "{local:?}");
    assert!(local[0].contains("not a regular file"), "{local:?}");
    assert_eq!(order_views(&mut member), order_views(&mut fresh));
    post_to_all(&mut member, &temp, "a change to save");
    member.save().unwrap();
    drop(member);
    assert_eq!(
        fs::read(&outside).unwrap(),
        before,
        "written through the link"
    );
}

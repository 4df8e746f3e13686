//! Identity: seating, the contested-name rule, mastership and grant authority, all decided
//! when folding.

use ferry_mcp_core::channel::fold::identity::{
    FoldProblemKind, GrantStanding, Identity, Seat, kinds,
};
use ferry_mcp_core::channel::fold::levels::Level;
use ferry_mcp_core::channel::log::entry::VerifiedEntry;
use ferry_mcp_core::channel::log::keys::{PublicKey, SecretKey};
use ferry_mcp_core::channel::log::names::AgentName;
use ferry_mcp_core::channel::log::store::Channel;
use ferry_mcp_core::channel::machine::home::{Home, KeyHolder};
use ferry_mcp_core::channel::ops::access::AccessError;
use ferry_mcp_core::channel::ops::{self, GrantRequest, Joined, OpsError};
use ferry_mcp_testkit::plant;
use ferry_mcp_testkit::temp_channel::TempChannel;
use serde_json::json;

fn name(raw: &str) -> AgentName {
    TempChannel::agent(raw)
}

/// Writes an entry as `author` with `key`, bypassing every check `ops` makes.
fn write_raw(
    temp: &TempChannel,
    author: &AgentName,
    key: &SecretKey,
    kind: &str,
    body: serde_json::Value,
) {
    plant::raw(temp.channel_dir(), author, key, kind, body, temp.now());
}

/// A handover body to `key`, with the proof that `key` is held.
fn handover_to(temp: &TempChannel, key: &SecretKey) -> serde_json::Value {
    json!({
        "key": key.public_key(),
        "proof": ferry_mcp_core::channel::fold::identity::handover_proof(temp.project(), key),
    })
}

fn problem_kinds(temp: &TempChannel) -> Vec<FoldProblemKind> {
    temp.view()
        .identity()
        .problems()
        .iter()
        .map(|p| p.kind)
        .collect()
}

/// The level `agent` stands at now, from a freshly opened view of the channel.
fn level_of(temp: &TempChannel, agent: &str) -> Level {
    temp.view()
        .identity()
        .standing(&name(agent), temp.now())
        .level
}

/// The secret key of agent `agent` on the temporary channel's machine.
fn agent_key(temp: &TempChannel, agent: &AgentName) -> SecretKey {
    temp.home()
        .load_key(temp.project(), &KeyHolder::Agent(agent.clone()), temp.now())
        .unwrap()
}

/// Every entry of the channel, read from scratch.
fn all_entries(temp: &TempChannel) -> Vec<VerifiedEntry> {
    Channel::open(temp.channel_dir())
        .unwrap()
        .reader()
        .poll()
        .entries
}

fn master_key(temp: &TempChannel) -> SecretKey {
    temp.home()
        .load_key(temp.project(), &KeyHolder::Master, temp.now())
        .unwrap()
}

/// A grant of `level` without scopes or expiry, picking `key` when given.
fn grant_request(level: Level, key: Option<PublicKey>) -> GrantRequest {
    GrantRequest {
        level,
        scopes: Vec::new(),
        expires: None,
        key,
    }
}

fn grant_body(agent: &str, key: &SecretKey, level: Level) -> serde_json::Value {
    plant::grant(name(agent), key.public_key(), level)
}

#[test]
fn joining_twice_with_the_same_key_is_idempotent() {
    let temp = TempChannel::builder().build().unwrap();
    let fang = name("fang");
    let (first, key) = ops::join(temp.home(), temp.project(), &fang, None, temp.now())
        .unwrap()
        .value;
    let (second, again) = ops::join(temp.home(), temp.project(), &fang, None, temp.now())
        .unwrap()
        .value;
    assert_eq!((first, second), (Joined::Seated, Joined::AlreadySeated));
    assert_eq!(key, again);
    assert_eq!(temp.view().identity().seat(&fang), Seat::Seated(&key));
}

#[test]
fn a_name_held_by_another_key_cannot_be_joined_from_another_machine() {
    let temp = TempChannel::builder()
        .agent("fang", Level::Worker)
        .build()
        .unwrap();
    let other_home = Home::at(temp.root().join("other-home"));
    other_home
        .register_project(temp.project(), temp.channel_dir())
        .unwrap();
    let err = ops::join(&other_home, temp.project(), &name("Fang"), None, temp.now()).unwrap_err();
    assert!(matches!(err, AccessError::NameTaken { .. }), "{err}");
    assert_eq!(err.to_string(), "the name fang is taken by another key");
}

#[test]
fn two_keys_joining_one_name_contest_it_until_the_master_grants_one() {
    let temp = TempChannel::builder()
        .agent("fang", Level::Worker)
        .build()
        .unwrap();
    let fang = name("fang");
    let first = match temp.view().identity().seat(&fang) {
        Seat::Seated(key) => *key,
        other => panic!("{other:?}"),
    };
    // Another machine joined as fang before the two synced.
    let interloper = SecretKey::generate().unwrap();
    write_raw(&temp, &fang, &interloper, kinds::ROSTER_JOIN, json!({}));

    let view = temp.view();
    assert!(matches!(view.identity().seat(&fang), Seat::Contested(keys) if keys.len() == 2));
    assert!(problem_kinds(&temp).contains(&FoldProblemKind::NameContested));

    let pick_first = grant_request(Level::Member, None);
    let err =
        ops::access_set(temp.home(), temp.project(), &fang, &pick_first, temp.now()).unwrap_err();
    assert!(matches!(err, AccessError::Contested { .. }));
    let pick_first = GrantRequest {
        key: Some(first),
        ..pick_first
    };
    ops::access_set(temp.home(), temp.project(), &fang, &pick_first, temp.now()).unwrap();
    assert_eq!(temp.view().identity().seat(&fang), Seat::Seated(&first));
    assert_eq!(
        temp.view().identity().standing(&fang, temp.now()).level,
        Level::Member
    );
}

#[test]
fn an_entry_by_a_key_that_does_not_hold_the_name_is_reported() {
    let temp = TempChannel::builder()
        .agent("fang", Level::Member)
        .build()
        .unwrap();
    let stranger = SecretKey::generate().unwrap();
    write_raw(
        &temp,
        &name("ghost"),
        &stranger,
        "talk.post",
        json!({"text": "hi"}),
    );
    let problems = temp.view().identity().problems();
    assert_eq!(problems.len(), 1, "{problems:?}");
    assert_eq!(problems[0].kind, FoldProblemKind::NotOnRoster);
    assert_eq!(problems[0].author, name("ghost"));
}

#[test]
fn a_grant_signed_by_an_agent_is_reported_and_does_not_count() {
    let temp = TempChannel::with_each_level();
    let worker = name("worker");
    let key = agent_key(&temp, &worker);
    write_raw(
        &temp,
        &worker,
        &key,
        kinds::GRANT,
        grant_body("worker", &key, Level::Orchestrator),
    );
    let view = temp.view();
    assert_eq!(
        view.identity().standing(&worker, temp.now()).level,
        Level::Worker
    );
    assert_eq!(
        problem_kinds(&temp),
        vec![FoldProblemKind::NotSignedByMaster]
    );
}

#[test]
fn a_grant_signed_as_master_by_another_key_is_held_and_reported() {
    let temp = TempChannel::with_each_level();
    let impostor = SecretKey::generate().unwrap();
    let worker_key = agent_key(&temp, &name("worker"));
    write_raw(
        &temp,
        &AgentName::master(),
        &impostor,
        kinds::GRANT,
        grant_body("worker", &worker_key, Level::Orchestrator),
    );
    assert_eq!(level_of(&temp, "worker"), Level::Worker);
    assert_eq!(problem_kinds(&temp), vec![FoldProblemKind::NotTheMaster]);
}

#[test]
fn a_grant_naming_a_key_other_than_the_roster_key_is_void() {
    let temp = TempChannel::with_each_level();
    let other = SecretKey::generate().unwrap();
    write_raw(
        &temp,
        &AgentName::master(),
        &master_key(&temp),
        kinds::GRANT,
        grant_body("worker", &other, Level::Orchestrator),
    );
    let standing = temp.view().identity().standing(&name("worker"), temp.now());
    assert_eq!(standing.level, Level::Worker);
    assert!(matches!(
        standing.grant,
        GrantStanding::Void {
            level: Level::Orchestrator,
            ..
        }
    ));
}

#[test]
fn only_the_current_master_hands_mastership_on_and_held_entries_apply_after_it() {
    let temp = TempChannel::with_each_level();
    let old_master = master_key(&temp);
    let next_master = SecretKey::generate().unwrap();
    let worker_key = agent_key(&temp, &name("worker"));
    // The next master signs a grant before its handover has reached this machine.
    write_raw(
        &temp,
        &AgentName::master(),
        &next_master,
        kinds::GRANT,
        grant_body("worker", &worker_key, Level::Member),
    );
    assert_eq!(level_of(&temp, "worker"), Level::Worker);

    // An agent cannot hand mastership on.
    let member = name("member");
    let member_key = agent_key(&temp, &member);
    write_raw(
        &temp,
        &member,
        &member_key,
        kinds::MASTER_HANDOVER,
        handover_to(&temp, &member_key),
    );
    assert_eq!(*temp.view().identity().master(), old_master.public_key());

    // The current master can; the held grant then counts.
    write_raw(
        &temp,
        &AgentName::master(),
        &old_master,
        kinds::MASTER_HANDOVER,
        handover_to(&temp, &next_master),
    );
    let view = temp.view();
    assert_eq!(*view.identity().master(), next_master.public_key());
    assert_eq!(
        view.identity().standing(&name("worker"), temp.now()).level,
        Level::Member
    );

    // The former master's later grants are void.
    write_raw(
        &temp,
        &AgentName::master(),
        &old_master,
        kinds::GRANT,
        grant_body("worker", &worker_key, Level::Orchestrator),
    );
    let view = temp.view();
    assert_eq!(
        view.identity().standing(&name("worker"), temp.now()).level,
        Level::Member
    );
    // Batches come in log order (by author), not in the order they were written.
    let mut kinds: Vec<_> = view.identity().problems().iter().map(|p| p.kind).collect();
    kinds.sort();
    assert_eq!(
        kinds,
        vec![
            FoldProblemKind::NotSignedByMaster,
            FoldProblemKind::FormerMaster
        ]
    );

    // And this machine, holding the former master key, can no longer grant.
    let err = ops::access_set(
        temp.home(),
        temp.project(),
        &name("worker"),
        &grant_request(Level::Orchestrator, None),
        temp.now(),
    )
    .unwrap_err();
    assert!(matches!(err, AccessError::Ops(OpsError::NotTheMaster(_))));
    let status = ops::status(temp.home(), temp.project(), temp.now()).unwrap();
    assert_eq!(status.master_key_here, "former");
    assert_eq!(status.master, next_master.public_key().to_string());
}

/// Everything a folded identity tells, as text: the project, the masters, every name's seat,
/// grant and standing at each of `times`, the problems, and which of `entries` it admits.
fn public_views(
    identity: &Identity,
    entries: &[VerifiedEntry],
    times: &[ferry_mcp_core::time::Timestamp],
) -> Vec<String> {
    let mut views = vec![
        format!("project {:?}", identity.project()),
        format!("master {:?}", identity.master()),
        format!("masters {:?}", identity.masters()),
    ];
    for (agent, seat) in identity.names() {
        views.push(format!("{agent}: seat {seat:?}"));
        assert_eq!(identity.seat(agent), seat, "{agent}");
        views.push(format!("{agent}: grant {:?}", identity.grant(agent)));
        for now in times {
            views.push(format!(
                "{agent}: standing at {now:?} {:?}",
                identity.standing(agent, *now)
            ));
        }
    }
    views.extend(identity.problems().iter().map(|p| format!("problem {p:?}")));
    views.extend(entries.iter().map(|entry| {
        format!(
            "admits {} {} {}: {}",
            entry.author(),
            entry.seq(),
            entry.kind(),
            identity.admits(entry)
        )
    }));
    views
}

#[test]
fn the_fold_is_incremental_and_agrees_with_a_fold_from_scratch() {
    let temp = TempChannel::builder().build().unwrap();
    let mut view = temp.view();
    // Only the new entry is read; a handover also reads again the new master's log, whose
    // entries could not count before it.
    let step_n = |view: &mut ferry_mcp_core::channel::session::Session, what: &str, n: u64| {
        let new = view.refresh(temp.now());
        assert_eq!(new, n, "entries folded: {what}");
    };
    let step = |view: &mut ferry_mcp_core::channel::session::Session, what: &str| {
        step_n(view, what, 1);
    };
    for agent in ["a1", "a2", "a3"] {
        ops::join(temp.home(), temp.project(), &name(agent), None, temp.now()).unwrap();
        step(&mut view, agent);
    }
    // A scoped grant that expires, and a plain one.
    let in_an_hour =
        ferry_mcp_core::time::Timestamp::from_millis(temp.now().as_millis() + 3_600_000);
    let request = GrantRequest {
        level: Level::Orchestrator,
        scopes: vec!["docs".into()],
        expires: Some(in_an_hour),
        key: None,
    };
    ops::access_set(
        temp.home(),
        temp.project(),
        &name("a1"),
        &request,
        temp.now(),
    )
    .unwrap();
    step(&mut view, "scoped grant");
    let member = grant_request(Level::Member, None);
    ops::access_set(
        temp.home(),
        temp.project(),
        &name("a2"),
        &member,
        temp.now(),
    )
    .unwrap();
    step(&mut view, "grant");
    // An agent's own entry, and an agent's attempt at a handover (a problem).
    let a2_key = agent_key(&temp, &name("a2"));
    write_raw(&temp, &name("a2"), &a2_key, "note", json!({"n": 1}));
    step(&mut view, "note");
    write_raw(
        &temp,
        &name("a2"),
        &a2_key,
        kinds::MASTER_HANDOVER,
        handover_to(&temp, &a2_key),
    );
    step(&mut view, "agent handover");
    // A grant by the next master, held until the handover arrives; then a void one by the
    // former master.
    let old_master = master_key(&temp);
    let next_master = SecretKey::generate().unwrap();
    let a3_key = agent_key(&temp, &name("a3"));
    write_raw(
        &temp,
        &AgentName::master(),
        &next_master,
        kinds::GRANT,
        grant_body("a3", &a3_key, Level::Member),
    );
    // Not the master's yet: counted, not folded (it is folded with the handover).
    step_n(&mut view, "held grant", 0);
    write_raw(
        &temp,
        &AgentName::master(),
        &old_master,
        kinds::MASTER_HANDOVER,
        handover_to(&temp, &next_master),
    );
    step_n(&mut view, "handover", 2);
    write_raw(
        &temp,
        &AgentName::master(),
        &old_master,
        kinds::GRANT,
        grant_body("a3", &a3_key, Level::Orchestrator),
    );
    // Void: a former master's, after its handover.
    step_n(&mut view, "former master's grant", 0);

    let fresh = temp.view();
    let entries = all_entries(&temp);
    let times = [temp.now(), in_an_hour];
    let incremental = public_views(view.identity(), &entries, &times);
    assert_eq!(
        incremental,
        public_views(fresh.identity(), &entries, &times)
    );
    // The scenario reached every kind of view it compares.
    assert_eq!(view.identity().names().count(), 3);
    assert_eq!(view.identity().masters().len(), 2);
    assert!(!view.identity().problems().is_empty());
    assert!(entries.iter().any(|entry| !view.identity().admits(entry)));
    assert_ne!(
        view.identity().standing(&name("a1"), temp.now()),
        view.identity().standing(&name("a1"), in_an_hour)
    );
}

#[test]
fn a_grant_replayed_from_another_project_of_the_same_master_does_not_count() {
    use ferry_mcp_core::channel::log::names::ProjectId;

    let dir = tempfile::tempdir().unwrap();
    let clock = ferry_mcp_testkit::clock::Clock::new();
    let master = SecretKey::generate().unwrap();
    let agent_key = SecretKey::generate().unwrap();
    let fang = name("fang");
    let here = Channel::create(
        &dir.path().join("here"),
        &ProjectId::parse("here").unwrap(),
        &master,
        clock.now(),
    )
    .unwrap();
    let there = Channel::create(
        &dir.path().join("there"),
        &ProjectId::parse("there").unwrap(),
        &master,
        clock.now(),
    )
    .unwrap();
    for channel in [&here, &there] {
        let mut writer = channel.writer(&fang, &agent_key).unwrap();
        writer
            .append(kinds::ROSTER_JOIN, json!({}), clock.now())
            .unwrap();
    }
    let mut grant = there.writer(&AgentName::master(), &master).unwrap();
    grant
        .append(
            kinds::GRANT,
            grant_body("fang", &agent_key, Level::Orchestrator),
            clock.now(),
        )
        .unwrap();
    // Someone copies the master's log of `there` into `here`.
    let master_log = there.log_path(&AgentName::master(), &master.public_key());
    let target = here.log_path(&AgentName::master(), &master.public_key());
    std::fs::create_dir_all(target.parent().unwrap()).unwrap();
    std::fs::copy(&master_log, &target).unwrap();

    let mut identity = Identity::new(here.project().clone(), *here.genesis_master());
    let batch = here.reader().poll();
    identity.feed(&batch.entries);
    assert_eq!(identity.standing(&fang, clock.now()).level, Level::Worker);
    assert!(
        batch
            .problems
            .iter()
            .any(|p| p.kind == ferry_mcp_core::channel::log::reader::ProblemKind::WrongProject),
        "{:?}",
        batch.problems
    );
}

#[test]
fn a_name_that_changes_key_is_reported_against_the_first_key_this_machine_pinned() {
    let temp = TempChannel::builder()
        .agent("fang", Level::Worker)
        .build()
        .unwrap();
    let fang = name("fang");
    let interloper = SecretKey::generate().unwrap();
    write_raw(&temp, &fang, &interloper, kinds::ROSTER_JOIN, json!({}));
    // The master (perhaps deceived) grants the interloper's key.
    let request = grant_request(Level::Member, Some(interloper.public_key()));
    ops::access_set(temp.home(), temp.project(), &fang, &request, temp.now()).unwrap();

    let status = ops::status(temp.home(), temp.project(), temp.now()).unwrap();
    let row = status.agents.iter().find(|row| row.name == fang).unwrap();
    assert!(row.pin_changed);
    assert!(
        status
            .problems
            .iter()
            .any(|p| p.starts_with("fang: the key holding the name differs")),
        "{:?}",
        status.problems
    );
    // The pin is kept, not replaced by the new key.
    let pins = temp.home().pins(temp.project()).unwrap();
    assert_ne!(pins.agents["fang"], interloper.public_key().to_string());
    // Warm opens that do not read the pins again (the roster and the pins file unchanged)
    // still report it.
    temp.view().save().unwrap();
    for _ in 0..2 {
        let status = ops::status(temp.home(), temp.project(), temp.now()).unwrap();
        let row = status.agents.iter().find(|row| row.name == fang).unwrap();
        assert!(row.pin_changed);
    }
}

#[test]
fn a_pins_file_broken_after_a_warm_open_is_reported_on_the_next_one() {
    let temp = TempChannel::builder()
        .agent("fang", Level::Member)
        .build()
        .unwrap();
    // Pinned, and the state that remembers it written.
    let mut view = temp.view();
    view.refresh(temp.now());
    view.save().unwrap();
    assert_eq!(temp.view().local_problems(), &[] as &[String]);
    let pins = temp.home().pins_path(temp.project());
    std::fs::write(&pins, b"not json").unwrap();
    let local = temp.view().local_problems().to_vec();
    assert!(
        local.iter().any(|line| line.contains("pins.json")),
        "{local:?}"
    );
    // Deleted: pinned again from the roster, as on a new machine.
    std::fs::remove_file(&pins).unwrap();
    assert_eq!(temp.view().local_problems(), &[] as &[String]);
    assert!(
        temp.home()
            .pins(temp.project())
            .unwrap()
            .agents
            .contains_key("fang")
    );
}

#[test]
fn other_folds_admit_only_entries_whose_key_holds_the_name() {
    let temp = TempChannel::with_each_level();
    let member = name("member");
    let member_key = agent_key(&temp, &member);
    let stranger = SecretKey::generate().unwrap();
    write_raw(
        &temp,
        &member,
        &member_key,
        "talk.post",
        json!({"text": "real"}),
    );
    write_raw(
        &temp,
        &member,
        &stranger,
        "talk.post",
        json!({"text": "forged"}),
    );
    let view = temp.view();
    let posts: Vec<_> = all_entries(&temp)
        .into_iter()
        .filter(|e| e.kind() == "talk.post")
        .collect();
    assert_eq!(posts.len(), 2);
    let admitted: Vec<_> = posts
        .iter()
        .filter(|e| view.identity().admits(e))
        .map(|e| e.body()["text"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(admitted, vec!["real".to_owned()]);
}

#[test]
fn reading_the_logs_in_another_order_folds_the_same_roster_levels_and_problems() {
    let temp = TempChannel::with_each_level();
    let member = name("member");
    let interloper = SecretKey::generate().unwrap();
    write_raw(&temp, &member, &interloper, kinds::ROSTER_JOIN, json!({}));
    write_raw(
        &temp,
        &member,
        &interloper,
        "talk.post",
        json!({"text": "x"}),
    );
    let worker_key = agent_key(&temp, &name("worker"));
    write_raw(&temp, &name("worker"), &worker_key, kinds::GRANT, json!({}));

    let view = temp.view();
    let channel = view.channel();
    let entries = channel.reader().poll().entries;
    // Another machine receives the logs in the opposite order (each log still in seq order).
    let mut logs: Vec<Vec<VerifiedEntry>> = Vec::new();
    for entry in &entries {
        match logs.last_mut() {
            Some(log) if log[0].author() == entry.author() && log[0].key() == entry.key() => {
                log.push(entry.clone());
            }
            _ => logs.push(vec![entry.clone()]),
        }
    }
    assert!(logs.len() >= 5);
    let reversed: Vec<_> = logs.into_iter().rev().flatten().collect();

    let fold = |entries: &[VerifiedEntry]| {
        let mut identity = Identity::new(temp.project().clone(), *channel.genesis_master());
        identity.feed(entries);
        let roster: Vec<_> = identity
            .names()
            .map(|(n, seat)| (n.clone(), format!("{seat:?}")))
            .collect();
        let levels: Vec<_> = ["worker", "member", "orchestrator"]
            .iter()
            .map(|n| identity.standing(&name(n), temp.now()))
            .collect();
        (roster, levels, identity.problems())
    };
    let here = fold(&entries);
    let there = fold(&reversed);
    assert_eq!(here, there);
    let kinds: Vec<_> = here.2.iter().map(|p| p.kind).collect();
    assert!(kinds.contains(&FoldProblemKind::NameContested), "{kinds:?}");
    assert!(kinds.contains(&FoldProblemKind::NotOnRoster), "{kinds:?}");
    assert!(
        kinds.contains(&FoldProblemKind::NotSignedByMaster),
        "{kinds:?}"
    );
}

#[test]
fn a_former_master_s_entries_count_up_to_its_handover_and_not_after() {
    let temp = TempChannel::with_each_level();
    let old_master = master_key(&temp);
    let next_master = SecretKey::generate().unwrap();
    let master = AgentName::master();
    write_raw(
        &temp,
        &master,
        &old_master,
        "answer",
        json!({"n": "before"}),
    );
    write_raw(
        &temp,
        &master,
        &old_master,
        kinds::MASTER_HANDOVER,
        handover_to(&temp, &next_master),
    );
    write_raw(&temp, &master, &old_master, "answer", json!({"n": "after"}));
    write_raw(&temp, &master, &next_master, "answer", json!({"n": "new"}));
    write_raw(
        &temp,
        &master,
        &SecretKey::generate().unwrap(),
        "answer",
        json!({"n": "stranger"}),
    );

    let view = temp.view();
    assert_eq!(view.identity().master(), &next_master.public_key());
    let entries = all_entries(&temp);
    let mut admitted: Vec<String> = entries
        .iter()
        .filter(|e| e.kind() == "answer" && view.identity().admits(e))
        .map(|e| e.body()["n"].as_str().unwrap().to_owned())
        .collect();
    admitted.sort();
    assert_eq!(admitted, vec!["before".to_owned(), "new".to_owned()]);
    // The orchestrator's grant by the former master still counts.
    assert_eq!(
        view.identity()
            .standing(&name("orchestrator"), temp.now())
            .level,
        Level::Orchestrator
    );
}

#[test]
fn an_interloper_joining_a_name_unseats_only_an_agent_without_a_grant() {
    let temp = TempChannel::with_each_level();
    let interloper = SecretKey::generate().unwrap();
    for agent in ["worker", "member"] {
        write_raw(
            &temp,
            &name(agent),
            &interloper,
            kinds::ROSTER_JOIN,
            json!({}),
        );
    }
    let view = temp.view();
    let member_key = agent_key(&temp, &name("member"));
    // The member's grant names its key: it keeps the seat and its level.
    assert_eq!(
        view.identity().seat(&name("member")),
        Seat::Seated(&member_key.public_key())
    );
    assert_eq!(
        view.identity().standing(&name("member"), temp.now()).level,
        Level::Member
    );
    // The worker has no grant: the name is contested and held by no one.
    assert!(matches!(
        view.identity().seat(&name("worker")),
        Seat::Contested(keys) if keys.len() == 2
    ));
    assert_eq!(
        problem_kinds(&temp),
        vec![
            FoldProblemKind::NameContested,
            FoldProblemKind::NameContested,
            FoldProblemKind::NameContested
        ]
    );
    // A worker grant picking the worker's key settles it without raising the level.
    let request = grant_request(
        Level::Worker,
        Some(agent_key(&temp, &name("worker")).public_key()),
    );
    ops::access_set(
        temp.home(),
        temp.project(),
        &name("worker"),
        &request,
        temp.now(),
    )
    .unwrap();
    let view = temp.view();
    assert!(matches!(
        view.identity().seat(&name("worker")),
        Seat::Seated(_)
    ));
    assert_eq!(
        view.identity().standing(&name("worker"), temp.now()).level,
        Level::Worker
    );
}

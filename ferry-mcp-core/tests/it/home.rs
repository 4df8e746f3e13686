//! Machine-local state: key files, sealing, the registry, the pause switch and pins.

use ferry_mcp_core::channel::fold::levels::{Fix, LocalKey};
use ferry_mcp_core::channel::log::keys::SecretKey;
use ferry_mcp_core::channel::log::names::{AgentName, ProjectId};
use ferry_mcp_core::channel::machine::home::{
    Home, HomeError, KeyHolder, PinOutcome, SealError, Unsealer,
};
use ferry_mcp_core::channel::ops::access::KeyHere;
use ferry_mcp_core::time::Timestamp;
use ferry_mcp_testkit::clock::Clock;
use ferry_mcp_testkit::temp_channel::TEST_SEAL_COST;

fn setup() -> (tempfile::TempDir, Home, ProjectId) {
    let dir = tempfile::tempdir().unwrap();
    let home = Home::at(dir.path().join("home"));
    (dir, home, ProjectId::parse("demo").unwrap())
}

fn agent(name: &str) -> KeyHolder {
    KeyHolder::Agent(AgentName::parse(name).unwrap())
}

#[cfg(unix)]
#[test]
fn key_files_and_their_folders_are_private_to_the_user() {
    use std::os::unix::fs::PermissionsExt;
    let (_dir, home, project) = setup();
    let key = SecretKey::generate().unwrap();
    home.store_key(&project, &agent("fang"), &key, None)
        .unwrap();
    let path = home.root().join("projects/demo/keys/fang.key");
    let mode = std::fs::metadata(&path).unwrap().permissions().mode();
    assert_eq!(mode & 0o777, 0o600);
    let folder = std::fs::metadata(path.parent().unwrap()).unwrap();
    assert_eq!(folder.permissions().mode() & 0o777, 0o700);
}

#[test]
fn a_stored_key_loads_back_and_is_never_overwritten() {
    let (_dir, home, project) = setup();
    let clock = Clock::new();
    let key = SecretKey::generate().unwrap();
    home.store_key(&project, &KeyHolder::Master, &key, None)
        .unwrap();
    let loaded = home
        .load_key(&project, &KeyHolder::Master, clock.now())
        .unwrap();
    assert_eq!(loaded.public_key(), key.public_key());
    let other = SecretKey::generate().unwrap();
    let again = home.store_key(&project, &KeyHolder::Master, &other, None);
    assert!(matches!(again, Err(HomeError::KeyExists { .. })));
}

#[test]
fn atomic_writes_leave_no_temporary_files_behind() {
    let (_dir, home, project) = setup();
    let key = SecretKey::generate().unwrap();
    home.store_key(&project, &agent("fang"), &key, None)
        .unwrap();
    home.pause("lunch", Clock::new().now()).unwrap();
    // Only the files written are there: no temporary file (`.tmp-*`) is left beside them.
    for (folder, written) in [
        (home.root().to_owned(), &["pause.json", "projects"][..]),
        (home.root().join("projects/demo/keys"), &["fang.key"][..]),
    ] {
        let mut names: Vec<String> = std::fs::read_dir(folder)
            .unwrap()
            .map(|item| item.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        assert_eq!(names, written);
    }
}

#[test]
fn a_sealed_key_is_locked_until_the_human_unlocks_it() {
    let (_dir, home, project) = setup();
    let clock = Clock::new();
    let key = SecretKey::generate().unwrap();
    let fang = agent("fang");
    home.store_key(&project, &fang, &key, Some((b"hunter2", TEST_SEAL_COST)))
        .unwrap();
    assert_eq!(
        home.key_state(&project, &fang, clock.now()).unwrap(),
        LocalKey::Locked(key.public_key())
    );
    let locked = home.load_key(&project, &fang, clock.now()).unwrap_err();
    assert!(matches!(locked, HomeError::Locked { .. }), "{locked:?}");
    // The text names no command; the fix is typed, for each facade to word.
    assert_eq!(locked.to_string(), "the key for fang is locked");
    assert_eq!(
        locked.fix(),
        Some(Fix::Unlock {
            agent: AgentName::parse("fang").unwrap(),
            project: project.clone()
        })
    );

    home.unlock_key(&project, &fang, b"hunter2", None).unwrap();
    assert_eq!(
        home.key_state(&project, &fang, clock.now()).unwrap(),
        LocalKey::Ready(key.public_key())
    );
    let loaded = home.load_key(&project, &fang, clock.now()).unwrap();
    assert_eq!(loaded.public_key(), key.public_key());

    assert!(home.lock_key(&project, &fang).unwrap());
    assert_eq!(
        home.key_state(&project, &fang, clock.now()).unwrap(),
        LocalKey::Locked(key.public_key())
    );
}

#[test]
fn an_unlock_lapses_at_its_expiry() {
    let (_dir, home, project) = setup();
    let clock = Clock::new();
    let key = SecretKey::generate().unwrap();
    let fang = agent("fang");
    home.store_key(&project, &fang, &key, Some((b"pw", TEST_SEAL_COST)))
        .unwrap();
    let until = clock.now().as_millis() + 60_000;
    home.unlock_key(
        &project,
        &fang,
        b"pw",
        Some(ferry_mcp_core::time::Timestamp::from_millis(until)),
    )
    .unwrap();
    assert!(matches!(
        home.key_state(&project, &fang, clock.now()).unwrap(),
        LocalKey::Ready(_)
    ));
    clock.advance_secs(60);
    assert!(matches!(
        home.key_state(&project, &fang, clock.now()).unwrap(),
        LocalKey::Locked(_)
    ));
}

#[test]
fn a_wrong_passphrase_does_not_unlock() {
    let (_dir, home, project) = setup();
    let key = SecretKey::generate().unwrap();
    let fang = KeyHolder::Agent(AgentName::parse("fang").unwrap());
    home.store_key(&project, &fang, &key, None).unwrap();
    home.seal_key(&project, &fang, b"right", TEST_SEAL_COST)
        .unwrap();
    let wrong = home.unlock_key(&project, &fang, b"wrong", None);
    assert!(matches!(
        wrong,
        Err(HomeError::Seal(SealError::WrongPassphrase))
    ));
    let right = home.unlock_key(&project, &fang, b"right", None);
    assert_eq!(right.unwrap(), key.public_key());
}

#[test]
fn a_sealed_master_key_is_never_unlocked_to_disk_and_opens_only_in_memory_with_its_passphrase() {
    let (dir, home, project) = setup();
    let key = SecretKey::generate().unwrap();
    home.store_key(&project, &KeyHolder::Master, &key, None)
        .unwrap();
    home.seal_key(&project, &KeyHolder::Master, b"right", TEST_SEAL_COST)
        .unwrap();
    let now = Timestamp::from_millis(0);
    assert!(matches!(
        home.unlock_key(&project, &KeyHolder::Master, b"right", None),
        Err(HomeError::MasterNeverUnlocked)
    ));
    assert!(matches!(
        home.load_key(&project, &KeyHolder::Master, now),
        Err(HomeError::MasterSealed { .. })
    ));
    // A plain copy left in the runtime folder (by an earlier version) is never read.
    let copy = dir.path().join("home/run").join(project.as_str());
    std::fs::create_dir_all(&copy).unwrap();
    let plain = format!(
        "{{\"format\":\"ferry-key/1\",\"public\":\"{}\",\"secret\":\"{}\"}}",
        key.public_key(),
        key.to_hex().as_str()
    );
    std::fs::write(copy.join("master.key"), plain).unwrap();
    assert!(home.load_key(&project, &KeyHolder::Master, now).is_err());
    // Opened with the passphrase an unsealer gives, asked once for many loads.
    let asked = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let counter = asked.clone();
    let home = home.unsealing_with(Unsealer::new(move |_| {
        counter.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        Ok(zeroize::Zeroizing::new(b"right".to_vec()))
    }));
    for _ in 0..3 {
        let opened = home.load_key(&project, &KeyHolder::Master, now).unwrap();
        assert_eq!(opened.public_key(), key.public_key());
    }
    assert_eq!(asked.load(std::sync::atomic::Ordering::SeqCst), 1);
}

#[test]
fn a_project_is_registered_to_one_channel_folder_only() {
    let (dir, home, project) = setup();
    let first = dir.path().join("one");
    home.register_project(&project, &first).unwrap();
    home.register_project(&project, &first).unwrap();
    let other = home.register_project(&project, &dir.path().join("two"));
    assert!(matches!(other, Err(HomeError::ProjectElsewhere { .. })));
    assert_eq!(home.channel_dir(&project).unwrap(), first);
    let (projects, bad) = home.projects().unwrap();
    assert_eq!(projects, vec![(project, first)]);
    assert!(bad.is_empty());
}

#[test]
fn an_unknown_project_is_reported_by_name_and_its_fix_is_typed_not_worded() {
    let (_dir, home, _) = setup();
    let nope = ProjectId::parse("nope").unwrap();
    let err = home.channel_dir(&nope).unwrap_err();
    assert_eq!(err.to_string(), "unknown project nope");
    assert_eq!(err.fix(), Some(Fix::Init { project: nope }));
}

#[test]
fn the_pause_switch_keeps_its_reason_until_resumed() {
    let (_dir, home, _) = setup();
    let clock = Clock::new();
    assert_eq!(home.pause_state().unwrap(), None);
    home.pause("deploy freeze", clock.now()).unwrap();
    let pause = home.pause_state().unwrap().unwrap();
    assert_eq!(pause.reason.0, "deploy freeze");
    assert_eq!(pause.since, clock.now());
    assert!(home.resume().unwrap());
    assert_eq!(home.pause_state().unwrap(), None);
    assert!(!home.resume().unwrap());
}

#[test]
fn a_changed_key_for_a_pinned_name_is_reported_and_not_accepted() {
    let (_dir, home, project) = setup();
    let name = AgentName::parse("fang").unwrap();
    let first = SecretKey::generate().unwrap().public_key();
    let second = SecretKey::generate().unwrap().public_key();
    assert_eq!(
        home.pin_agent(&project, &name, &first).unwrap(),
        PinOutcome::New
    );
    assert_eq!(
        home.pin_agent(&project, &name, &first).unwrap(),
        PinOutcome::Same
    );
    assert_eq!(
        home.pin_agent(&project, &name, &second).unwrap(),
        PinOutcome::Changed {
            pinned: first.to_string()
        }
    );
    assert_eq!(
        home.pins(&project).unwrap().agents["fang"],
        first.to_string()
    );
}

#[test]
fn a_damaged_key_file_is_reported_in_status_and_the_rest_still_reads() {
    use ferry_mcp_core::channel::ops;
    use ferry_mcp_testkit::temp_channel::TempChannel;
    let temp = TempChannel::with_each_level();
    std::fs::write(
        temp.home_dir().join("projects/demo/keys/member.key"),
        "not json",
    )
    .unwrap();
    let status = ops::status(temp.home(), temp.project(), temp.now()).unwrap();
    let local: Vec<_> = status
        .agents
        .iter()
        .map(|row| (row.name.as_str(), row.local_key))
        .collect();
    assert_eq!(
        local,
        vec![
            ("member", KeyHere::Unreadable),
            ("orchestrator", KeyHere::Ready),
            ("worker", KeyHere::Ready)
        ]
    );
    assert_eq!(status.problems.len(), 1, "{:?}", status.problems);
    assert!(
        status.problems[0].contains("member.key"),
        "{:?}",
        status.problems
    );
}

#[test]
fn names_pinned_at_once_by_several_processes_are_all_kept() {
    let (_dir, home, project) = setup();
    std::thread::scope(|scope| {
        for i in 0..16 {
            let home = home.clone();
            let project = project.clone();
            scope.spawn(move || {
                let name = AgentName::parse(&format!("agent{i}")).unwrap();
                let key = SecretKey::generate().unwrap().public_key();
                assert_eq!(
                    home.pin_agent(&project, &name, &key).unwrap(),
                    PinOutcome::New
                );
            });
        }
    });
    assert_eq!(home.pins(&project).unwrap().agents.len(), 16);
}

#[test]
fn of_keys_stored_at_once_for_one_holder_exactly_one_is_kept_and_it_is_the_one_reported_stored() {
    let (_dir, home, project) = setup();
    let clock = Clock::new();
    for round in 0..20 {
        let holder = agent(&format!("racer{round}"));
        let keys: Vec<SecretKey> = (0..4).map(|_| SecretKey::generate().unwrap()).collect();
        let stored: Vec<bool> = std::thread::scope(|scope| {
            let handles: Vec<_> = keys
                .iter()
                .map(|key| scope.spawn(|| home.store_key(&project, &holder, key, None)))
                .collect();
            handles
                .into_iter()
                .map(|handle| match handle.join().unwrap() {
                    Ok(()) => true,
                    Err(HomeError::KeyExists { .. }) => false,
                    Err(other) => panic!("{other}"),
                })
                .collect()
        });
        assert_eq!(stored.iter().filter(|ok| **ok).count(), 1, "{stored:?}");
        let winner = stored.iter().position(|ok| *ok).unwrap();
        let kept = home.load_key(&project, &holder, clock.now()).unwrap();
        assert_eq!(kept.public_key(), keys[winner].public_key());
    }
}

#[test]
fn a_home_error_names_its_cause_once() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("file");
    std::fs::write(&file, "").unwrap();
    let home = Home::at(&file);
    let project = ProjectId::parse("demo").unwrap();
    let err = home
        .register_project(&project, &dir.path().join("channel"))
        .unwrap_err();
    assert!(matches!(err, HomeError::Io { .. }), "{err:?}");
    let text = crate::channel_log::chain_text(&err);
    let cause = std::io::Error::from_raw_os_error(20).to_string();
    assert_eq!(text.matches(&cause).count(), 1, "{text}");
    assert!(text.starts_with(&*file.to_string_lossy()), "{text}");
}

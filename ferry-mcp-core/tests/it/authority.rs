//! Attacks on who leads and whose secret stands (issue 17, findings 2, 3 and 6): a seated agent
//! signing whatever it likes with its own key, and a key chosen offline. Each test writes the
//! attacker's entries by hand, past every check an operation makes, and checks what the fold
//! makes of them here and on a machine that folds the channel from nothing.

use ferry_mcp_core::channel::fold::identity::GrantBody;
use ferry_mcp_core::channel::fold::levels::Level;
use ferry_mcp_core::channel::fold::state::primary::{
    PrimaryReleaseBody, PrimaryVoid, TakeBody, kinds,
};
use ferry_mcp_core::channel::fold::state::race::tiebreak;
use ferry_mcp_core::channel::log::entry::EntryHash;
use ferry_mcp_core::channel::log::keys::{PublicKey, SecretKey};
use ferry_mcp_core::channel::log::names::AgentName;
use ferry_mcp_core::channel::log::store::Channel;
use ferry_mcp_core::channel::machine::home::{Home, KeyHolder};
use ferry_mcp_core::channel::ops::fleet::DigestLimits;
use ferry_mcp_core::channel::ops::primary::{self, Takeover};
use ferry_mcp_core::channel::ops::{self, GrantRequest, fleet, secrets};
use ferry_mcp_core::channel::session::{Actor, Session};
use ferry_mcp_core::time::Timestamp;
use ferry_mcp_testkit::plant;
use ferry_mcp_testkit::temp_channel::TempChannel;
use serde_json::Value;
use sha2::{Digest, Sha256};

fn name(raw: &str) -> AgentName {
    TempChannel::agent(raw)
}

/// Writes an entry as `agent` with its own key, dated `at`, bypassing every check `ops` makes.
/// Returns its hash.
fn write_raw(temp: &TempChannel, agent: &str, kind: &str, body: Value, at: Timestamp) -> EntryHash {
    *plant::raw(
        temp.channel_dir(),
        &name(agent),
        &temp.agent_key(agent),
        kind,
        body,
        at,
    )
    .hash()
}

/// A take of the primary's role, signed by `agent`, following the chain's tip as this machine
/// folds it, admitting every master entry (so its grant is in force): what an honest taker
/// writes, without the taker's checks.
fn hand_signed_take(temp: &TempChannel, agent: &str, at: Timestamp) -> EntryHash {
    let view = temp.view();
    let body = TakeBody {
        after: view.state().leadership.view().tip,
        seen: Some(view.identity().master_position()),
        primary_seq: view.state().leadership.primary_last_seq(),
    };
    write_raw(
        temp,
        agent,
        kinds::TAKE,
        serde_json::to_value(body).unwrap(),
        at,
    )
}

fn hand_signed_release(temp: &TempChannel, agent: &str, at: Timestamp) -> EntryHash {
    let view = temp.view();
    let body = PrimaryReleaseBody {
        after: view.state().leadership.view().tip,
        seen: Some(view.identity().master_position()),
    };
    write_raw(
        temp,
        agent,
        kinds::RELEASE,
        serde_json::to_value(body).unwrap(),
        at,
    )
}

/// A second machine: its own state folder, with the same channel folder registered: it folds
/// the channel from nothing.
fn fresh_machine(temp: &TempChannel, tag: &str) -> Home {
    let home = Home::at(temp.root().join(tag));
    ops::add_existing(&home, temp.project(), temp.channel_dir()).unwrap();
    home
}

fn primary_on(home: &Home, temp: &TempChannel, at: Timestamp) -> Option<AgentName> {
    let session = Session::open(home, temp.project(), Actor::Observer, at).unwrap();
    session.state().leadership.view().primary.clone()
}

/// Why the fold voided the take whose author is `agent` (the latest such), on `home`.
fn void_of(home: &Home, temp: &TempChannel, agent: &str, at: Timestamp) -> Option<PrimaryVoid> {
    let session = Session::open(home, temp.project(), Actor::Observer, at).unwrap();
    session
        .state()
        .leadership
        .view()
        .voided
        .iter()
        .rev()
        .find(|(_, author, _)| *author == name(agent))
        .map(|(_, _, reason)| reason.clone())
}

fn orchestrators(names: &[&str]) -> TempChannel {
    let mut builder = TempChannel::builder();
    for agent in names {
        builder = builder.agent(agent, Level::Orchestrator);
    }
    builder.build().unwrap()
}

// ---- finding 2: the tie-break cannot be ground ----

/// The first version's tie-break of the primary: the constant thing id "primary" and the key.
fn constant_tiebreak(key: &PublicKey) -> [u8; 32] {
    let mut hasher = Sha256::new();
    hasher.update(b"ferry-race-v1\nprimary\n");
    hasher.update(key.as_bytes());
    hasher.finalize().into()
}

/// The best of `tries` keys by the constant tie-break, ground offline as an attacker would.
fn ground_key(tries: u32) -> SecretKey {
    (0..tries)
        .map(|n| {
            let mut seed = [7u8; 32];
            seed[..4].copy_from_slice(&n.to_le_bytes());
            SecretKey::from_bytes(&seed)
        })
        .min_by_key(|key| constant_tiebreak(&key.public_key()))
        .unwrap()
}

/// Seats `agent` with `key` as an Orchestrator (the key file written first, as `ferry channel
/// join` would keep a key it finds).
fn seat_with_key(temp: &TempChannel, agent: &str, key: &SecretKey) {
    temp.home()
        .store_key(temp.project(), &KeyHolder::Agent(name(agent)), key, None)
        .unwrap();
    ops::seats::join(temp.home(), temp.project(), &name(agent), None, temp.now()).unwrap();
    let request = GrantRequest {
        level: Level::Orchestrator,
        scopes: Vec::new(),
        expires: None,
        key: None,
    };
    ops::access_set(
        temp.home(),
        temp.project(),
        &name(agent),
        &request,
        temp.now(),
    )
    .unwrap();
}

#[test]
fn a_key_ground_to_win_the_constant_tie_break_wins_about_half_of_the_takeover_races_on_distinct_events()
 {
    let temp = orchestrators(&["honest"]);
    let grinder = ground_key(4096);
    seat_with_key(&temp, "grinder", &grinder);
    let honest = temp.agent_key("honest").public_key();
    // Under the first version's rule the ground key beat the honest one in every race.
    assert!(constant_tiebreak(&grinder.public_key()) < constant_tiebreak(&honest));

    // The keys are random, so the count of wins is too (binomial, one half): 40 races and a
    // band of 8 to 32 fail a fair rule once in about 24,000 runs (24 races and 6 to 18 failed
    // once in 150), while the first version's rule won all 40.
    const RACES: usize = 40;
    let mut wins = 0;
    let mut contested = Vec::new();
    for _ in 0..RACES {
        // Both take over at once, each following the same event (no one is primary).
        let at = temp.clock().advance_secs(1);
        contested.push(temp.view().state().leadership.view().tip);
        hand_signed_take(&temp, "grinder", at);
        write_take_following(&temp, "honest", *contested.last().unwrap(), at);
        let winner = primary_on(temp.home(), &temp, at).expect("one of them is primary");
        if winner == name("grinder") {
            wins += 1;
        }
        // The winner hands the role back: the next race follows a new event.
        hand_signed_release(&temp, winner.as_str(), temp.clock().advance_secs(1));
    }
    eprintln!("the ground key won {wins} of {RACES} races on {RACES} distinct events");
    contested.sort();
    contested.dedup();
    assert_eq!(contested.len(), RACES, "every race followed its own event");
    assert!(
        (RACES / 5..=RACES * 4 / 5).contains(&wins),
        "the ground key won {wins} of {RACES}"
    );
    // A machine folding from nothing agrees on the last race.
    let fresh = fresh_machine(&temp, "fresh");
    assert_eq!(
        primary_on(&fresh, &temp, temp.now()),
        primary_on(temp.home(), &temp, temp.now())
    );
}

fn write_take_following(temp: &TempChannel, agent: &str, after: EntryHash, at: Timestamp) {
    let body = TakeBody {
        after,
        seen: Some(temp.view().identity().master_position()),
        primary_seq: None,
    };
    write_raw(
        temp,
        agent,
        kinds::TAKE,
        serde_json::to_value(body).unwrap(),
        at,
    );
}

#[test]
fn the_race_input_is_the_event_both_sides_follow_so_one_key_is_not_first_on_every_event() {
    let a = SecretKey::from_bytes(&[1; 32]).public_key();
    let b = SecretKey::from_bytes(&[2; 32]).public_key();
    let firsts = (0u8..64)
        .filter(|n| tiebreak(&[*n; 32], &a) < tiebreak(&[*n; 32], &b))
        .count();
    assert!((16..=48).contains(&firsts), "a was first on {firsts} of 64");
}

// ---- finding 3: the quiet period is the fold's rule ----

#[test]
fn a_hand_signed_take_one_second_after_the_primary_s_post_does_not_count_on_any_machine() {
    let temp = orchestrators(&["olga", "oscar"]);
    assert_eq!(
        primary::takeover(&mut temp.agent_session("olga"), temp.now()).unwrap(),
        Takeover::TookOver { from: None }
    );
    // Long after: olga posts; a second later oscar signs its own take, following olga's.
    temp.clock().advance_secs(3600);
    let request = ops::talk::PostRequest {
        to: "all".into(),
        text: "still here".into(),
        reply_to: None,
    };
    ops::talk::post(&mut temp.agent_session("olga"), &request, temp.now()).unwrap();
    let posted = temp.now();
    hand_signed_take(&temp, "oscar", temp.clock().advance_secs(1));

    let fresh = fresh_machine(&temp, "fresh");
    for (machine, home) in [("this", temp.home()), ("fresh", &fresh)] {
        for fold in ["first", "second"] {
            assert_eq!(
                primary_on(home, &temp, temp.now()),
                Some(name("olga")),
                "{machine} machine, {fold} fold"
            );
        }
        let reason = void_of(home, &temp, "oscar", temp.now());
        eprintln!("{machine} machine: oscar's take: {reason:?}");
        assert_eq!(
            reason,
            Some(PrimaryVoid::PrimaryActive {
                primary: name("olga"),
                active_ms: posted.as_millis(),
                from_ms: posted.as_millis() + 300_000,
            }),
            "{machine} machine"
        );
    }
}

#[test]
fn primary_status_never_says_take_over_while_the_fold_would_refuse_the_take() {
    let temp = orchestrators(&["olga", "oscar"]);
    primary::takeover(&mut temp.agent_session("olga"), temp.now()).unwrap();
    // Olga posts an entry dated 100 s ahead; oscar's machine folds it now, so it heard olga
    // now, while the logs prove olga active 100 s later.
    let start = temp.now();
    let ahead = Timestamp::from_millis(start.as_millis() + 100_000);
    let request = ops::talk::PostRequest {
        to: "all".into(),
        text: "still here".into(),
        reply_to: None,
    };
    ops::talk::post(&mut temp.agent_session("olga"), &request, ahead).unwrap();
    let mut oscar = temp.agent_session("oscar");
    let at = |secs: u64| Timestamp::from_millis(start.as_millis() + secs * 1000);

    // Past the quiet period since oscar heard olga, not since her last entry: silent here, yet
    // a take would not count.
    let status = primary::status(&mut oscar, at(301)).unwrap();
    eprintln!("at +301 s: {:?}", status.advice);
    assert!(
        matches!(
            status.advice,
            primary::Advice::SilentNotYet {
                reason: PrimaryVoid::PrimaryActive { .. },
                ..
            }
        ),
        "{:?}",
        status.advice
    );
    assert!(matches!(
        primary::takeover(&mut oscar, at(301)),
        Err(primary::PrimaryError::DoesNotCount {
            reason: PrimaryVoid::PrimaryActive { .. }
        })
    ));
    // Once the quiet period has passed since her last entry, both agree.
    let status = primary::status(&mut oscar, at(401)).unwrap();
    assert!(status.advice.may_take_over(), "{:?}", status.advice);
    assert_eq!(
        primary::takeover(&mut oscar, at(401)).unwrap(),
        Takeover::TookOver {
            from: Some(name("olga"))
        }
    );
}

// ---- finding 8: junk from a key that holds its name ----

#[test]
fn a_seated_worker_s_takes_and_a_seated_member_s_repeated_claims_change_nothing_and_fold_as_a_full_walk_does()
 {
    let temp = TempChannel::builder()
        .agent("olga", Level::Orchestrator)
        .agent("mia", Level::Member)
        .agent("wes", Level::Worker)
        .build()
        .unwrap();
    primary::takeover(&mut temp.agent_session("olga"), temp.now()).unwrap();
    let mut master = temp.master_session();
    let order = ops::orders::issue(
        &mut master,
        &ops::orders::IssueRequest {
            title: "the one order".into(),
            ..Default::default()
        },
        temp.now(),
    )
    .unwrap();
    let id = order.parse().unwrap();
    let issue = master.order(&id).unwrap().unwrap().issue.hash;
    drop(master);
    ops::orders::claim(&mut temp.agent_session("mia"), &order, temp.now()).unwrap();
    let tip = temp.view().state().leadership.view().tip;
    // The Worker takes after the root and after the tip; the Member claims again and again
    // after the issue, each a little later, each by its own key.
    let seen = temp.view().identity().master_position();
    let channel = Channel::open(temp.channel_dir()).unwrap();
    let mut wes = channel
        .writer(&name("wes"), &temp.agent_key("wes"))
        .unwrap();
    let mut mia = channel
        .writer(&name("mia"), &temp.agent_key("mia"))
        .unwrap();
    for n in 0..150 {
        let at = temp.clock().advance_secs(1);
        let after = if n % 2 == 0 { tip } else { EntryHash::ZERO };
        let take = TakeBody {
            after,
            seen: Some(seen),
            primary_seq: None,
        };
        wes.append(kinds::TAKE, serde_json::to_value(take).unwrap(), at)
            .unwrap();
        let claim = serde_json::json!({"order": order, "after": issue, "seen": [seen.0, seen.1]});
        mia.append("order.claim", claim, at).unwrap();
    }
    let fresh = fresh_machine(&temp, "fresh");
    let mut views = Vec::new();
    for (machine, home) in [("this", temp.home()), ("fresh", &fresh)] {
        let mut session = Session::open(home, temp.project(), Actor::Observer, temp.now()).unwrap();
        let leadership = session.state().leadership.view().clone();
        assert_eq!(leadership.primary, Some(name("olga")), "{machine}");
        // The Worker's takes can never count: they are reported, and kept nowhere.
        assert!(
            leadership.voided.is_empty(),
            "{machine}: {:?}",
            leadership.voided
        );
        assert!(
            session
                .state()
                .leadership
                .problems()
                .iter()
                .any(|problem| problem.detail.contains("never counts")),
            "{machine}"
        );
        let view = session.order(&id).unwrap().unwrap().view().clone();
        assert_eq!(view.holder, Some(name("mia")), "{machine}");
        // Her repeats of her own standing claim can never count either: not kept.
        assert!(view.voided.is_empty(), "{machine}: {:?}", view.voided);
        views.push((leadership, view));
    }
    assert_eq!(views[0], views[1], "both machines fold the same");
    // A seat that changes walks every chain again: the views folded one event at a time are
    // the ones a full walk gives.
    ops::join(
        temp.home(),
        temp.project(),
        &name("newcomer"),
        None,
        temp.now(),
    )
    .unwrap();
    let mut session = temp.view();
    let walked = (
        session.state().leadership.view().clone(),
        session.order(&id).unwrap().unwrap().view().clone(),
    );
    assert_eq!(walked, views[0]);
}

// ---- finding 3: what a take proves it had seen of the primary's log ----

/// A take of the role `olga` holds, signed by `agent` at `at` following the chain's tip, that
/// names olga's entry `primary_seq` as the last of hers it had folded.
fn take_naming(temp: &TempChannel, agent: &str, primary_seq: u64, at: Timestamp) {
    let view = temp.view();
    let body = TakeBody {
        after: view.state().leadership.view().tip,
        seen: Some(view.identity().master_position()),
        primary_seq: Some(primary_seq),
    };
    write_raw(
        temp,
        agent,
        kinds::TAKE,
        serde_json::to_value(body).unwrap(),
        at,
    );
}

#[test]
fn a_take_is_dated_no_earlier_than_the_primary_s_entry_it_names_as_seen() {
    let temp = orchestrators(&["olga", "oscar"]);
    primary::takeover(&mut temp.agent_session("olga"), temp.now()).unwrap();
    let took = temp.now();
    // An hour later olga posts; oscar, having folded that post, signs a take dated back to
    // when olga had been silent past the quiet period.
    temp.clock().advance_secs(3600);
    let request = ops::talk::PostRequest {
        to: "all".into(),
        text: "back at it".into(),
        reply_to: None,
    };
    ops::talk::post(&mut temp.agent_session("olga"), &request, temp.now()).unwrap();
    let posted = temp.now();
    let seen = temp.view().state().leadership.primary_last_seq().unwrap();
    take_naming(
        &temp,
        "oscar",
        seen,
        Timestamp::from_millis(took.as_millis() + 600_000),
    );
    let fresh = fresh_machine(&temp, "fresh");
    for (machine, home) in [("this", temp.home()), ("fresh", &fresh)] {
        assert_eq!(
            primary_on(home, &temp, temp.now()),
            Some(name("olga")),
            "{machine}"
        );
        assert_eq!(
            void_of(home, &temp, "oscar", temp.now()),
            Some(PrimaryVoid::PrimaryActive {
                primary: name("olga"),
                active_ms: posted.as_millis(),
                from_ms: posted.as_millis() + 300_000,
            }),
            "{machine}"
        );
    }
}

#[test]
fn a_take_naming_a_primary_entry_not_folded_here_counts_only_once_that_entry_arrives() {
    let temp = orchestrators(&["olga", "oscar"]);
    primary::takeover(&mut temp.agent_session("olga"), temp.now()).unwrap();
    let took = temp.now();
    let last = temp.view().state().leadership.primary_last_seq().unwrap();
    // Oscar's take, an hour on, names olga's next two entries: they have not reached here.
    let now = temp.clock().advance_secs(3600);
    take_naming(&temp, "oscar", last + 2, now);
    let fresh = fresh_machine(&temp, "fresh");
    for (machine, home) in [("this", temp.home()), ("fresh", &fresh)] {
        assert_eq!(
            primary_on(home, &temp, now),
            Some(name("olga")),
            "{machine}"
        );
        assert_eq!(
            void_of(home, &temp, "oscar", now),
            Some(PrimaryVoid::Unseen {
                primary: name("olga"),
                seq: last + 2
            }),
            "{machine}"
        );
    }
    // Olga's two entries arrive, dated when she took the role: the take counts now.
    for _ in 0..2 {
        write_raw(
            &temp,
            "olga",
            ops::primary::PRESENCE,
            serde_json::json!({}),
            took,
        );
    }
    let late = fresh_machine(&temp, "late");
    for (machine, home) in [("this", temp.home()), ("fresh", &fresh), ("late", &late)] {
        assert_eq!(
            primary_on(home, &temp, now),
            Some(name("oscar")),
            "{machine}"
        );
    }
}

#[test]
fn a_primary_s_entry_folded_after_a_take_it_voids_voids_it_here_as_on_a_fresh_machine() {
    let temp = orchestrators(&["olga", "oscar"]);
    primary::takeover(&mut temp.agent_session("olga"), temp.now()).unwrap();
    // Olga is silent for an hour; oscar takes over, and this machine folds that.
    let now = temp.clock().advance_secs(3600);
    hand_signed_take(&temp, "oscar", now);
    let mut session = Session::open(temp.home(), temp.project(), Actor::Observer, now).unwrap();
    assert_eq!(
        session.state().leadership.view().primary,
        Some(name("oscar"))
    );
    session.save().unwrap();
    drop(session);
    // Then olga's entry dated a second before the take arrives: by the quiet rule she was
    // active, so the take never counted, on this machine too.
    let before = Timestamp::from_millis(now.as_millis() - 1_000);
    write_raw(
        &temp,
        "olga",
        ops::primary::PRESENCE,
        serde_json::json!({}),
        before,
    );
    let fresh = fresh_machine(&temp, "fresh");
    for (machine, home) in [("this", temp.home()), ("fresh", &fresh)] {
        assert_eq!(
            primary_on(home, &temp, now),
            Some(name("olga")),
            "{machine}"
        );
    }
}

// ---- finding 8: what can never count is not kept ----

/// What the primary's fold keeps, as bytes (its kept form is the same fields).
fn leadership_bytes(temp: &TempChannel, home: &Home) -> usize {
    let session = Session::open(home, temp.project(), Actor::Observer, temp.now()).unwrap();
    serde_json::to_vec(&session.state().leadership)
        .unwrap()
        .len()
}

#[test]
fn a_later_grant_never_makes_a_worker_s_earlier_takes_count_so_they_are_not_kept() {
    let temp = TempChannel::builder()
        .agent("wes", Level::Worker)
        .build()
        .unwrap();
    let seen = temp.view().identity().master_position();
    let takes = |count: usize| {
        let channel = Channel::open(temp.channel_dir()).unwrap();
        let mut wes = channel
            .writer(&name("wes"), &temp.agent_key("wes"))
            .unwrap();
        for _ in 0..count {
            let take = TakeBody {
                after: EntryHash::ZERO,
                seen: Some(seen),
                primary_seq: None,
            };
            let at = temp.clock().advance_secs(1);
            wes.append(kinds::TAKE, serde_json::to_value(take).unwrap(), at)
                .unwrap();
        }
    };
    takes(150);
    let after_150 = leadership_bytes(&temp, temp.home());
    takes(150);
    let after_300 = leadership_bytes(&temp, temp.home());
    eprintln!("the primary's fold: {after_150} bytes after 150 takes, {after_300} after 300");
    assert_eq!(after_150, after_300, "a Worker's takes are not kept");
    // The master then grants wes Orchestrator, binding every entry of its log (`after_seq`):
    // a grant that raises binds nothing, so none of the takes counts, here or anywhere.
    let master = temp
        .home()
        .load_key(temp.project(), &KeyHolder::Master, temp.now())
        .unwrap();
    let channel = Channel::open(temp.channel_dir()).unwrap();
    let grant = GrantBody {
        agent: name("wes"),
        key: temp.agent_key("wes").public_key(),
        level: Level::Orchestrator,
        scopes: Vec::new(),
        expires: None,
        after_seq: Some(0),
    };
    channel
        .writer(&AgentName::master(), &master)
        .unwrap()
        .append(
            "grant",
            serde_json::to_value(grant).unwrap(),
            temp.clock().advance_secs(1),
        )
        .unwrap();
    let fresh = fresh_machine(&temp, "fresh");
    for (machine, home) in [("this", temp.home()), ("fresh", &fresh)] {
        assert_eq!(primary_on(home, &temp, temp.now()), None, "{machine}");
    }
}

#[test]
fn a_claim_retried_after_a_grant_counts_though_its_void_claim_followed_the_same_event() {
    let temp = TempChannel::builder()
        .agent("wes", Level::Worker)
        .build()
        .unwrap();
    let mut master = temp.master_session();
    let order = ops::orders::issue(
        &mut master,
        &ops::orders::IssueRequest {
            title: "the one order".into(),
            ..Default::default()
        },
        temp.now(),
    )
    .unwrap();
    let id = order.parse().unwrap();
    let issue = master.order(&id).unwrap().unwrap().issue.hash;
    drop(master);
    // As a Worker, wes signs a claim by hand: void, it is below the level.
    let seen = temp.view().identity().master_position();
    let claim = serde_json::json!({"order": order, "after": issue, "seen": [seen.0, seen.1]});
    write_raw(
        &temp,
        "wes",
        "order.claim",
        claim,
        temp.clock().advance_secs(1),
    );
    // Granted Member, it claims again: its new claim follows the same issue, and counts.
    let request = GrantRequest {
        level: Level::Member,
        scopes: Vec::new(),
        expires: None,
        key: None,
    };
    ops::access_set(
        temp.home(),
        temp.project(),
        &name("wes"),
        &request,
        temp.now(),
    )
    .unwrap();
    temp.clock().advance_secs(1);
    ops::orders::claim(&mut temp.agent_session("wes"), &order, temp.now()).unwrap();
    let fresh = fresh_machine(&temp, "fresh");
    for (machine, home) in [("this", temp.home()), ("fresh", &fresh)] {
        let mut session = Session::open(home, temp.project(), Actor::Observer, temp.now()).unwrap();
        let view = session.order(&id).unwrap().unwrap().view().clone();
        assert_eq!(view.holder, Some(name("wes")), "{machine}: {view:?}");
    }
}

// ---- finding 3: the reading time and presence ----

#[test]
fn a_take_dated_in_the_future_does_not_count_until_its_time() {
    let temp = orchestrators(&["olga", "oscar"]);
    primary::takeover(&mut temp.agent_session("olga"), temp.now()).unwrap();
    // Olga is silent past the quiet period; oscar dates its take a day ahead.
    let now = temp.clock().advance_secs(3600);
    let ahead = Timestamp::from_millis(now.as_millis() + 24 * 3600 * 1000);
    hand_signed_take(&temp, "oscar", ahead);

    let fresh = fresh_machine(&temp, "fresh");
    for (machine, home) in [("this", temp.home()), ("fresh", &fresh)] {
        assert_eq!(
            primary_on(home, &temp, now),
            Some(name("olga")),
            "{machine}"
        );
        assert_eq!(
            void_of(home, &temp, "oscar", now),
            Some(PrimaryVoid::NotYet {
                at_ms: ahead.as_millis()
            }),
            "{machine}"
        );
    }
    // A machine that kept its state, and one folding from nothing, once the day has passed.
    let later = temp.clock().advance_secs(24 * 3600);
    let late = fresh_machine(&temp, "late");
    for (machine, home) in [("this", temp.home()), ("fresh", &fresh), ("late", &late)] {
        assert_eq!(
            primary_on(home, &temp, later),
            Some(name("oscar")),
            "{machine}"
        );
    }
}

#[test]
fn a_primary_calling_a_tool_every_2_s_with_an_8_s_quiet_period_is_never_taken_over() {
    let temp = orchestrators(&["olga", "oscar"]);
    primary::set_quiet_period(&mut temp.master_session(), 8, temp.now()).unwrap();
    primary::takeover(&mut temp.agent_session("olga"), temp.now()).unwrap();
    let mut refusals = Vec::new();
    for _ in 0..20 {
        let now = temp.clock().advance_secs(2);
        fleet::catchup(
            &mut temp.agent_session("olga"),
            None,
            DigestLimits::DEFAULT,
            now,
        )
        .unwrap();
        // Oscar tries through the operation, and by signing its own take.
        let tried = primary::takeover(&mut temp.agent_session("oscar"), now);
        assert!(tried.is_err(), "{tried:?}");
        refusals.push(tried.unwrap_err().code());
        hand_signed_take(&temp, "oscar", now);
        assert_eq!(primary_on(temp.home(), &temp, now), Some(name("olga")));
    }
    refusals.dedup();
    eprintln!("oscar's takeovers were refused: {refusals:?}");
    let fresh = fresh_machine(&temp, "fresh");
    assert_eq!(primary_on(&fresh, &temp, temp.now()), Some(name("olga")));
    let voids = Session::open(&fresh, temp.project(), Actor::Observer, temp.now()).unwrap();
    let voided = &voids.state().leadership.view().voided;
    assert!(
        voided
            .iter()
            .all(|(_, _, reason)| matches!(reason, PrimaryVoid::PrimaryActive { .. })),
        "{voided:?}"
    );
}

#[test]
fn the_quiet_period_refuses_a_value_the_presence_interval_cannot_serve() {
    let temp = orchestrators(&["olga"]);
    let refused = primary::set_quiet_period(&mut temp.master_session(), 7, temp.now());
    assert_eq!(
        refused.unwrap_err().to_string(),
        "a quiet period is between 8 seconds and 30 days (presence is written at most every 2 s, and 4 times within a quiet period)"
    );
    primary::set_quiet_period(&mut temp.master_session(), 8, temp.now()).unwrap();
}

// ---- finding 6: whose secret stands ----

#[test]
fn a_forward_dated_member_share_loses_to_the_master_s_and_get_names_the_sender() {
    let temp = TempChannel::builder()
        .agent("bob", Level::Member)
        .agent("mallory", Level::Member)
        .build()
        .unwrap();
    let bob = name("bob");
    secrets::send(
        &mut temp.master_session(),
        "deploy-token",
        &bob,
        b"the human's",
        temp.now(),
    )
    .unwrap();
    // Mallory sends its own value under the same name, dated a year ahead.
    let ahead = Timestamp::from_millis(temp.now().as_millis() + 365 * 24 * 3600 * 1000);
    secrets::send(
        &mut temp.agent_session("mallory"),
        "deploy-token",
        &bob,
        b"mallory's",
        ahead,
    )
    .unwrap();

    for at in [temp.now(), Timestamp::from_millis(ahead.as_millis() + 1000)] {
        let opened = secrets::get(&mut temp.agent_session("bob"), "deploy-token", at).unwrap();
        assert_eq!(
            (opened.value.as_slice(), opened.from.as_str()),
            (&b"the human's"[..], "master")
        );
    }
}

#[test]
fn among_agents_the_share_that_stands_follows_the_chain_and_the_tie_break_never_the_date() {
    let temp = TempChannel::builder()
        .agent("bob", Level::Member)
        .agent("alice", Level::Member)
        .agent("mallory", Level::Member)
        .build()
        .unwrap();
    let bob = name("bob");
    secrets::send(
        &mut temp.agent_session("alice"),
        "db",
        &bob,
        b"first",
        temp.now(),
    )
    .unwrap();
    // Alice sends again, having seen her first: hers replaces it.
    let now = temp.clock().advance_secs(1);
    secrets::send(&mut temp.agent_session("alice"), "db", &bob, b"second", now).unwrap();
    let opened = secrets::get(&mut temp.agent_session("bob"), "db", now).unwrap();
    assert_eq!(
        (opened.value.as_slice(), opened.from.as_str()),
        (&b"second"[..], "alice")
    );
    // Mallory signs a share that follows nothing (as if it had seen none), dated a year
    // ahead: it races alice's first at the chain's root, by the tie-break alone.
    let body = serde_json::json!({
        "name": "db",
        "to": "bob",
        "key": temp.agent_key("bob").public_key().to_hex(),
        "blob": "00".repeat(32),
        "seen": temp.view().identity().master_position(),
    });
    let ahead = Timestamp::from_millis(now.as_millis() + 365 * 24 * 3600 * 1000);
    write_raw(&temp, "mallory", "secret.share", body, ahead);
    let root = EntryHash::ZERO;
    let mallory_first = tiebreak(root.as_bytes(), &temp.agent_key("mallory").public_key())
        < tiebreak(root.as_bytes(), &temp.agent_key("alice").public_key());
    let want = if mallory_first { "mallory" } else { "alice" };
    let fresh = fresh_machine(&temp, "fresh");
    for (machine, home) in [("this", temp.home()), ("fresh", &fresh)] {
        let session = Session::open(home, temp.project(), Actor::Observer, ahead).unwrap();
        let standing = session
            .state()
            .secrets
            .standing(&bob, "db", session.identity())
            .unwrap();
        eprintln!(
            "{machine} machine: the share that stands is {}'s",
            standing.from
        );
        assert_eq!(standing.from.as_str(), want, "{machine} machine");
    }
}

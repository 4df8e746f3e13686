//! The fleet through `channel::ops::{primary, asks, fleet}`: taking over as primary (refused
//! while the primary is heard from, allowed once it is silent past the quiet period, decided by
//! the tie-break of ADR 0006 when two machines take over unseen), handing the role back,
//! standing by; asks and whose verdict counts; briefs; and the catch-up digest with its `since`
//! cursors (ADR 0007).

use std::fs;
use std::path::Path;

use ferry_mcp_core::channel::fold::identity::FoldProblemKind;
use ferry_mcp_core::channel::fold::levels::{Fix, Level};
use ferry_mcp_core::channel::fold::state::SEEN_FIELD;
use ferry_mcp_core::channel::fold::state::asks::{AskState, Verdict, kinds as ask_kinds};
use ferry_mcp_core::channel::fold::state::orders::OrderState;
use ferry_mcp_core::channel::fold::state::primary::kinds as primary_kinds;
use ferry_mcp_core::channel::fold::state::race::tiebreak;
use ferry_mcp_core::channel::log::keys::SecretKey;
use ferry_mcp_core::channel::log::names::AgentName;
use ferry_mcp_core::channel::log::reader::ProblemKind;
use ferry_mcp_core::channel::log::store::Channel;
use ferry_mcp_core::channel::machine::home::{Home, KeyHolder};
use ferry_mcp_core::channel::ops::asks::AsksError;
use ferry_mcp_core::channel::ops::asks::{self, RaiseRequest};
use ferry_mcp_core::channel::ops::fleet::{self, Digest, DigestLimits};
use ferry_mcp_core::channel::ops::orders::{self, IssueRequest};
use ferry_mcp_core::channel::ops::primary::PrimaryError;
use ferry_mcp_core::channel::ops::primary::{self, Takeover};
use ferry_mcp_core::channel::ops::talk::{self, ReadRequest};
use ferry_mcp_core::channel::ops::{self, OperationError, OpsError};
use ferry_mcp_core::channel::session::{Actor, Session};
use ferry_mcp_core::time::Timestamp;
use ferry_mcp_testkit::plant;
use ferry_mcp_testkit::temp_channel::TempChannel;
use serde_json::{Value, json};

/// The quiet period the master sets in these tests (the default is 300 s).
const QUIET_S: u64 = 120;

/// A GitHub token of the guard's tests (a valid checksum, no real account).
const GITHUB_TOKEN: &str = "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";

fn agent(name: &str) -> AgentName {
    TempChannel::agent(name)
}

fn actor(name: &str) -> Actor {
    Actor::Agent(agent(name))
}

/// The stable code of a result's error, or `ok`.
fn code<T, E: OperationError>(result: &Result<T, E>) -> &'static str {
    match result {
        Ok(_) => "ok",
        Err(err) => err.code(),
    }
}

/// What an operation answered, in one line: `ok: ...` or `code: message`.
fn answered<T: std::fmt::Debug, E: OperationError>(result: &Result<T, E>) -> String {
    match result {
        Ok(value) => format!("ok: {value:?}"),
        Err(err) => format!("{}: {err}", err.code()),
    }
}

/// Project `demo` with Orchestrators olga and oscar, a Member mia and a Worker walt; the master
/// sets the quiet period to [`QUIET_S`].
fn fleet() -> TempChannel {
    let temp = TempChannel::builder()
        .agent("olga", Level::Orchestrator)
        .agent("oscar", Level::Orchestrator)
        .agent("mia", Level::Member)
        .agent("walt", Level::Worker)
        .build()
        .unwrap();
    primary::set_quiet_period(&mut temp.master_session(), QUIET_S, temp.now()).unwrap();
    temp
}

fn take(temp: &TempChannel, name: &str) -> Result<Takeover, PrimaryError> {
    primary::takeover(&mut temp.agent_session(name), temp.now())
}

fn primary_now(temp: &TempChannel) -> Option<AgentName> {
    temp.view().state().leadership.view().primary.clone()
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

fn agent_key(temp: &TempChannel, name: &str) -> SecretKey {
    temp.home()
        .load_key(temp.project(), &KeyHolder::Agent(agent(name)), temp.now())
        .unwrap()
}

/// A second machine: its own state folder, with the same channel folder registered.
fn other_machine(temp: &TempChannel, tag: &str) -> Home {
    let home = Home::at(temp.root().join(tag));
    ops::add_existing(&home, temp.project(), temp.channel_dir()).unwrap();
    home
}

/// Copies every file of `from` that `to` lacks, or holds only a beginning of (a log that grew
/// there): a sync of a folder whose files each have one writer. Panics on a real conflict.
fn sync_into(from: &Path, to: &Path) {
    for entry in fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            fs::create_dir_all(&target).unwrap();
            sync_into(&entry.path(), &target);
            continue;
        }
        let bytes = fs::read(entry.path()).unwrap();
        match fs::read(&target) {
            Ok(existing) if bytes.starts_with(&existing) => {
                if existing.len() < bytes.len() {
                    fs::write(&target, &bytes).unwrap();
                }
            }
            Ok(existing) if existing.starts_with(&bytes) => {}
            Ok(_) => panic!("{} differs on the two machines", target.display()),
            Err(_) => fs::write(&target, &bytes).unwrap(),
        }
    }
}

/// Moves `name`'s key file from machine `from` to machine `to`.
fn move_key(from: &Home, to: &Home, project: &str, name: &str) {
    let keys = |home: &Home| home.root().join("projects").join(project).join("keys");
    let file = format!("{name}.key");
    fs::create_dir_all(keys(to)).unwrap();
    fs::copy(keys(from).join(&file), keys(to).join(&file)).unwrap();
    fs::remove_file(keys(from).join(&file)).unwrap();
}

// ---- taking over, releasing, standing by ----

#[test]
fn a_takeover_is_refused_while_the_primary_is_heard_from_and_allowed_once_it_is_silent_past_the_quiet_period()
 {
    let temp = fleet();
    assert_eq!(
        take(&temp, "olga").unwrap(),
        Takeover::TookOver { from: None }
    );
    let taken_at = temp.now();
    let mut lines = Vec::new();
    // Alive for half the quiet period, quiet until it ends, silent after it.
    for (after_s, want) in [
        (0, "alive"),
        (QUIET_S / 2, "alive"),
        (QUIET_S / 2 + 1, "quiet"),
        (QUIET_S, "quiet"),
        (QUIET_S + 1, "took over"),
    ] {
        let elapsed = temp.now().seconds_since(taken_at);
        temp.clock().advance_secs(after_s - elapsed);
        let result = take(&temp, "oscar");
        lines.push(format!(
            "oscar takes over {after_s:>3}s after olga: {}",
            answered(&result)
        ));
        if want == "took over" {
            assert_eq!(
                result.unwrap(),
                Takeover::TookOver {
                    from: Some(agent("olga"))
                }
            );
        } else {
            assert_eq!(code(&result), "primary_alive", "{after_s}s: {result:?}");
            assert_eq!(
                result.unwrap_err().to_string(),
                format!(
                    "olga is {want} ({after_s}s since it was heard from; silent after {QUIET_S}s): standby instead"
                )
            );
            assert_eq!(primary_now(&temp), Some(agent("olga")));
        }
    }
    eprintln!("{}", lines.join("\n"));
    assert_eq!(primary_now(&temp), Some(agent("oscar")));
    // The new primary is heard from: olga, back, cannot take it straight back.
    let back = take(&temp, "olga");
    assert_eq!(code(&back), "primary_alive", "{back:?}");
    // Taking over as the primary is no event at all.
    assert_eq!(take(&temp, "oscar").unwrap(), Takeover::AlreadyPrimary);
}

#[test]
fn a_takeover_is_refused_below_orchestrator_and_on_a_paused_machine_and_writes_nothing() {
    let temp = fleet();
    let before = logs_len(temp.channel_dir());
    let mut lines = Vec::new();
    for name in ["mia", "walt"] {
        let result = take(&temp, name);
        lines.push(format!("{name}: {}", answered(&result)));
        assert_eq!(code(&result), "missing_level", "{result:?}");
        let level = if name == "mia" { "member" } else { "worker" };
        assert_eq!(
            result.unwrap_err().to_string(),
            format!("take over needs orchestrator; {name} is {level}")
        );
    }
    ops::pause(temp.home(), "the disk is being replaced", temp.now()).unwrap();
    let paused = take(&temp, "olga");
    lines.push(format!("olga on a paused machine: {}", answered(&paused)));
    assert_eq!(code(&paused), "paused", "{paused:?}");
    let refused = paused.unwrap_err();
    assert_eq!(
        refused.to_string(),
        "the machine is paused (the disk is being replaced): take over is refused"
    );
    let fix = match refused.common() {
        Some(OpsError::Refused(refusal)) => refusal.fix(),
        _ => None,
    };
    assert_eq!(fix, Some(Fix::Resume), "{refused:?}");
    eprintln!("{}", lines.join("\n"));
    assert_eq!(primary_now(&temp), None);
    assert_eq!(logs_len(temp.channel_dir()), before, "a refusal wrote");
    // Resumed, the Orchestrator takes over.
    assert!(ops::resume(temp.home()).unwrap());
    assert_eq!(
        take(&temp, "olga").unwrap(),
        Takeover::TookOver { from: None }
    );
}

fn read_all(temp: &TempChannel, reader: &str) -> Vec<(String, String, String)> {
    let request = ReadRequest {
        peek: false,
        since: None,
        limit: usize::MAX,
        receipts: 0,
    };
    talk::read(
        &mut temp.agent_session(reader),
        &request,
        &mut |_| true,
        temp.now(),
    )
    .unwrap()
    .messages
    .into_iter()
    .map(|message| (message.from.to_string(), message.to, message.text))
    .collect()
}

#[test]
fn after_a_takeover_one_message_taking_over_from_the_former_primary_goes_to_all() {
    let temp = fleet();
    take(&temp, "olga").unwrap();
    // Taking over from nobody tells nobody.
    assert!(read_all(&temp, "mia").is_empty());
    temp.clock().advance_secs(QUIET_S + 1);
    take(&temp, "oscar").unwrap();
    let told = (
        "oscar".to_owned(),
        "all".to_owned(),
        "taking over from olga".to_owned(),
    );
    for reader in ["mia", "walt", "olga"] {
        let got = read_all(&temp, reader);
        eprintln!("{reader} reads {got:?}");
        assert_eq!(got, std::slice::from_ref(&told), "{reader}");
        assert!(read_all(&temp, reader).is_empty(), "{reader} read it twice");
    }
}

#[test]
fn only_the_primary_releases_its_role_and_then_an_orchestrator_takes_over_at_once() {
    let temp = fleet();
    take(&temp, "olga").unwrap();
    for name in ["oscar", "mia"] {
        let refused = primary::release(&mut temp.agent_session(name), temp.now());
        eprintln!("{name} releases: {}", answered(&refused));
        assert_eq!(code(&refused), "not_primary");
        assert_eq!(
            refused.unwrap_err().to_string(),
            format!("{name} is not primary (the primary is olga)")
        );
    }
    assert_eq!(primary_now(&temp), Some(agent("olga")));
    primary::release(&mut temp.agent_session("olga"), temp.now()).unwrap();
    assert_eq!(primary_now(&temp), None);
    let status = primary::status(&mut temp.agent_session("oscar"), temp.now()).unwrap();
    assert_eq!(status.advice, primary::Advice::NoPrimaryTakeOver);
    // No primary to wait for: no quiet period to sit out.
    assert_eq!(
        take(&temp, "oscar").unwrap(),
        Takeover::TookOver { from: None }
    );
    // A former primary releases nothing.
    let again = primary::release(&mut temp.agent_session("olga"), temp.now());
    assert_eq!(code(&again), "not_primary");
}

#[test]
fn standby_is_recorded_for_any_seated_agent_and_status_lists_who_stands_by() {
    let temp = fleet();
    take(&temp, "olga").unwrap();
    let status = primary::standby(&mut temp.agent_session("mia"), temp.now()).unwrap();
    assert_eq!(status.standing_by, [agent("mia")]);
    assert_eq!(
        status.advice,
        primary::Advice::Heard {
            primary: agent("olga"),
            state: primary::Liveness::Alive
        }
    );
    assert_eq!((status.age_s, status.quiet_period_s), (Some(0), QUIET_S));
    // A Worker may stand by too (it is about itself).
    let status = primary::standby(&mut temp.agent_session("walt"), temp.now()).unwrap();
    assert_eq!(status.standing_by, [agent("mia"), agent("walt")]);
    // Recorded in the channel: another machine's reader sees it.
    let elsewhere = other_machine(&temp, "home-b");
    let mut there = Session::open(&elsewhere, temp.project(), Actor::Observer, temp.now()).unwrap();
    let seen: Vec<AgentName> = there
        .state()
        .leadership
        .standing_by()
        .map(|(name, _)| name.clone())
        .collect();
    assert_eq!(seen, [agent("mia"), agent("walt")]);
    assert_eq!(
        primary::status(&mut there, temp.now()).unwrap().standing_by,
        seen
    );
}

#[test]
fn only_the_master_sets_the_quiet_period_and_the_latest_setting_stands() {
    let temp = fleet();
    let refused = primary::set_quiet_period(&mut temp.agent_session("olga"), 60, temp.now());
    assert_eq!(code(&refused), "master_only");
    assert_eq!(
        refused.unwrap_err().to_string(),
        "only the human (the master key) may set the quiet period"
    );
    let mut master = temp.master_session();
    for bad in [0, 30 * 24 * 3600 + 1] {
        let refused = primary::set_quiet_period(&mut master, bad, temp.now());
        assert_eq!(code(&refused), "invalid", "{bad}");
    }
    assert_eq!(
        primary::status(&mut temp.view(), temp.now())
            .unwrap()
            .quiet_period_s,
        QUIET_S
    );
    primary::set_quiet_period(&mut master, 90, temp.now()).unwrap();
    primary::set_quiet_period(&mut master, 600, temp.now()).unwrap();
    assert_eq!(
        primary::status(&mut temp.view(), temp.now())
            .unwrap()
            .quiet_period_s,
        600
    );
}

// ---- two takeovers on two machines ----

#[test]
fn two_concurrent_takeovers_on_two_copies_of_the_channel_merged_both_ways_give_one_primary() {
    let temp = TempChannel::builder()
        .agent("olga", Level::Orchestrator)
        .agent("oscar", Level::Orchestrator)
        .agent("otto", Level::Orchestrator)
        .agent("mia", Level::Member)
        .build()
        .unwrap();
    primary::set_quiet_period(&mut temp.master_session(), QUIET_S, temp.now()).unwrap();
    take(&temp, "olga").unwrap();
    // The event both takes will follow: olga's.
    let contested = temp.view().state().leadership.view().tip;
    // Machine B: a synced copy of the channel, its own state folder, and otto's key (only
    // there). Oscar's key stays on machine A.
    let project = temp.project().clone();
    let home_a = temp.home().clone();
    let channel_a = temp.channel_dir().to_owned();
    let home_b = Home::at(temp.root().join("home-b"));
    let channel_b = temp.root().join("channel-b");
    fs::create_dir_all(&channel_b).unwrap();
    sync_into(&channel_a, &channel_b);
    ops::add_existing(&home_b, &project, &channel_b).unwrap();
    move_key(&home_a, &home_b, project.as_str(), "otto");

    // Olga goes silent; each takes over on its own machine, seeing only its own takeover.
    let now = temp.clock().advance_secs(QUIET_S + 1);
    let open = |home: &Home, name: &str| Session::open(home, &project, actor(name), now).unwrap();
    let on_a = primary::takeover(&mut open(&home_a, "oscar"), now).unwrap();
    let on_b = primary::takeover(&mut open(&home_b, "otto"), now).unwrap();
    let from_olga = Takeover::TookOver {
        from: Some(agent("olga")),
    };
    assert_eq!((&on_a, &on_b), (&from_olga, &from_olga));

    sync_into(&channel_a, &channel_b);
    sync_into(&channel_b, &channel_a);

    // Both takes name olga's take as `after`: neither saw the other, so they race, and ADR
    // 0017 orders them by SHA-256("ferry-race-v2\n" || olga's take's hash || roster key), lower
    // first. The keys existed before olga's take: no taker could grind a winning key.
    let mut session_a = open(&home_a, "oscar");
    let mut session_b = open(&home_b, "otto");
    let key_of = |name: &str| *session_a.identity().holder(&agent(name)).unwrap();
    let (oscar_rank, otto_rank) = (
        tiebreak(contested.as_bytes(), &key_of("oscar")),
        tiebreak(contested.as_bytes(), &key_of("otto")),
    );
    let (winner, loser) = if oscar_rank < otto_rank {
        ("oscar", "otto")
    } else {
        ("otto", "oscar")
    };
    eprintln!(
        "tie-break of the primary: oscar {}, otto {}: {winner}'s takeover won (the lower), {loser}'s lost",
        hex::encode(&oscar_rank[..6]),
        hex::encode(&otto_rank[..6]),
    );
    for (machine, session) in [("A", &mut session_a), ("B", &mut session_b)] {
        let status = primary::status(session, now).unwrap();
        eprintln!(
            "machine {machine}: primary {:?}; void: {:?}",
            status.primary,
            session.state().leadership.view().voided
        );
        assert_eq!(status.primary, Some(agent(winner)), "machine {machine}");
    }
    assert_eq!(
        session_a.state().leadership.view(),
        session_b.state().leadership.view(),
        "both machines fold the same primary"
    );

    // The loser learns it on its next catch-up, and status names the winner.
    let loser_session = if loser == "oscar" {
        &mut session_a
    } else {
        &mut session_b
    };
    let digest = fleet::catchup(loser_session, None, DigestLimits::DEFAULT, now).unwrap();
    eprintln!(
        "{loser}'s catch-up: waiting_on_you {:?}",
        digest.waiting_on_you
    );
    let lost: Vec<&String> = digest
        .waiting_on_you
        .iter()
        .filter(|line| line.starts_with("your takeover "))
        .collect();
    assert_eq!(lost.len(), 1, "{:?}", digest.waiting_on_you);
    assert!(
        lost[0].starts_with(&format!("your takeover {loser}-"))
            && lost[0].ends_with(&format!(" lost the race to {winner}")),
        "{}",
        lost[0]
    );
    assert_eq!(
        digest.primary.map(|primary| primary.name),
        Some(agent(winner))
    );
    let status = primary::status(loser_session, now).unwrap();
    assert_eq!(status.primary, Some(agent(winner)));
    eprintln!("{loser}'s ferry_primary status: {:?}", status.advice);
    // The winner is heard from: the loser may not take over again now.
    let again = primary::takeover(loser_session, now);
    assert_eq!(code(&again), "primary_alive", "{again:?}");
    // Each taker told the fleet when it wrote (it was primary on its machine then): a reader
    // gets both messages, and the loser's is marked void with why.
    let request = ReadRequest {
        peek: true,
        since: None,
        limit: usize::MAX,
        receipts: 0,
    };
    let read = talk::read(&mut temp.agent_session("mia"), &request, &mut |_| true, now).unwrap();
    let announced: Vec<(String, Option<String>)> = read
        .messages
        .iter()
        .filter(|message| message.text == "taking over from olga")
        .map(|message| (message.from.to_string(), message.void.clone()))
        .collect();
    eprintln!("mia (machine A) reads after the merge: {announced:?}");
    assert_eq!(announced.len(), 2, "{announced:?}");
    for (from, void) in &announced {
        if from == winner {
            assert_eq!(void, &None);
        } else {
            assert_eq!(
                void.as_deref(),
                Some(format!("lost the race to {winner}").as_str())
            );
        }
    }
}

// ---- asks ----

fn request(title: &str, recommendation: &str, reasoning: &str) -> RaiseRequest {
    RaiseRequest {
        title: title.into(),
        recommendation: recommendation.into(),
        reasoning: reasoning.into(),
    }
}

fn raise(temp: &TempChannel, name: &str, request: &RaiseRequest) -> Result<String, AsksError> {
    asks::raise(&mut temp.agent_session(name), request, temp.now())
}

fn ask_state(session: &mut Session, id: &str, now: Timestamp) -> (AskState, Option<String>) {
    let ask = asks::show(session, id, now).unwrap();
    (ask.state, ask.note)
}

#[test]
fn an_ask_with_reasoning_over_1200_characters_is_refused_and_one_of_1200_is_raised() {
    let temp = fleet();
    let before = logs_len(temp.channel_dir());
    let long = "é".repeat(1_201);
    let refused = raise(
        &temp,
        "mia",
        &request("Buy a bigger runner?", "yes", long.as_str()),
    );
    assert_eq!(code(&refused), "too_long");
    assert_eq!(
        refused.unwrap_err().to_string(),
        "the reasoning is 1201 characters, the limit is 1200"
    );
    assert_eq!(logs_len(temp.channel_dir()), before, "a refused ask wrote");
    let fits = "é".repeat(1_200);
    let id = raise(
        &temp,
        "mia",
        &request("Buy a bigger runner?", "yes", fits.as_str()),
    )
    .unwrap();
    let ask = asks::show(&mut temp.view(), &id, temp.now()).unwrap();
    assert_eq!(
        (ask.state, ask.reasoning.chars().count()),
        (AskState::Pending, 1_200)
    );
    assert_eq!(ask.by, agent("mia"));
    // A Worker may ask too.
    raise(&temp, "walt", &request("May I?", "yes", "")).unwrap();
}

#[test]
fn a_secret_in_the_title_the_recommendation_or_the_reasoning_refuses_the_ask_and_writes_nothing() {
    let temp = fleet();
    let before = logs_len(temp.channel_dir());
    let secret = format!("use {GITHUB_TOKEN} for the deploy");
    for (field, ask) in [
        ("title", request(&secret, "rotate it", "")),
        ("recommendation", request("Deploy key?", &secret, "")),
        (
            "reasoning",
            request("Deploy key?", "rotate it", secret.as_str()),
        ),
    ] {
        let refused = raise(&temp, "mia", &ask);
        eprintln!("a token in the {field}: {}", answered(&refused));
        assert_eq!(code(&refused), "secret", "{field}");
        assert!(
            !refused.unwrap_err().to_string().contains("ghp_"),
            "the refusal echoes the token"
        );
    }
    assert_eq!(logs_len(temp.channel_dir()), before, "a refused ask wrote");
    assert_eq!(
        asks::list(&mut temp.view(), None, false, temp.now())
            .unwrap()
            .len(),
        0
    );
}

#[test]
fn the_master_approves_rejects_or_sends_back_and_status_reads_the_verdict_and_its_note() {
    let temp = fleet();
    let ids: Vec<String> = ["Merge now?", "Buy a runner?", "Rename the crate?"]
        .into_iter()
        .map(|title| raise(&temp, "mia", &request(title, "yes", "it is ready")).unwrap())
        .collect();
    let mut master = temp.master_session();
    let now = temp.now();
    for (id, verdict, note) in [
        (&ids[0], Verdict::Approve, Some("go ahead")),
        (&ids[1], Verdict::Reject, None),
        (&ids[2], Verdict::SendBack, Some("say what it costs")),
    ] {
        asks::answer(&mut master, id, verdict, note, now).unwrap();
    }
    let mut mia = temp.agent_session("mia");
    assert_eq!(
        ask_state(&mut mia, &ids[0], now),
        (AskState::Approved, Some("go ahead".into()))
    );
    assert_eq!(
        ask_state(&mut mia, &ids[1], now),
        (AskState::Rejected, None)
    );
    assert_eq!(
        ask_state(&mut mia, &ids[2], now),
        (AskState::SentBack, Some("say what it costs".into()))
    );
    // Mia's catch-up lists her asks and what waits on her.
    let digest = fleet::catchup(&mut mia, None, DigestLimits::DEFAULT, now).unwrap();
    assert_eq!(
        digest.asks,
        [
            (ids[2].clone(), AskState::SentBack),
            (ids[1].clone(), AskState::Rejected),
            (ids[0].clone(), AskState::Approved),
        ]
    );
    assert!(
        digest
            .waiting_on_you
            .contains(&format!("ask {} was sent back: see its note", ids[2])),
        "{:?}",
        digest.waiting_on_you
    );
    // The human changes its mind: the latest answer in master order stands.
    asks::answer(&mut master, &ids[0], Verdict::Reject, Some("not yet"), now).unwrap();
    assert_eq!(
        ask_state(&mut mia, &ids[0], now),
        (AskState::Rejected, Some("not yet".into()))
    );
    // An ask that does not exist cannot be answered.
    let unknown = asks::answer(&mut master, "mia-99", Verdict::Approve, None, now);
    assert_eq!(code(&unknown), "unknown_ask");
}

#[test]
fn an_ask_answer_signed_by_an_agent_is_ignored_and_reported_not_signed_by_master() {
    let temp = fleet();
    let id = raise(&temp, "mia", &request("Merge now?", "yes", "")).unwrap();
    // An Orchestrator writes a verdict into its own log, bypassing every check `ops` makes.
    let channel = Channel::open(temp.channel_dir()).unwrap();
    let mut writer = channel
        .writer(&agent("olga"), &agent_key(&temp, "olga"))
        .unwrap();
    let seen = temp.view().identity().master_position();
    let mut body = json!({ "ask": id, "verdict": "approve", "note": "approved by olga" });
    body[SEEN_FIELD] = json!([seen.0, seen.1]);
    let forged = writer.append(ask_kinds::ANSWER, body, temp.now()).unwrap();

    let mut view = temp.view();
    let problems = view.whole_state().problems().unwrap();
    let reported: Vec<_> = problems
        .iter()
        .filter(|problem| problem.author == agent("olga") && problem.seq == forged.seq())
        .collect();
    eprintln!("reported: {reported:?}");
    assert_eq!(reported.len(), 1, "{problems:?}");
    assert_eq!(reported[0].kind, FoldProblemKind::NotSignedByMaster);
    assert_eq!(reported[0].kind.as_str(), "not_signed_by_master");
    assert_eq!(
        ask_state(&mut temp.agent_session("mia"), &id, temp.now()),
        (AskState::Pending, None)
    );
}

#[test]
fn an_edited_master_verdict_fails_its_signature_and_counts_only_where_it_was_verified_before() {
    let temp = fleet();
    let id = raise(&temp, "mia", &request("Merge now?", "yes", "")).unwrap();
    asks::answer(
        &mut temp.master_session(),
        &id,
        Verdict::Approve,
        None,
        temp.now(),
    )
    .unwrap();
    // Machine A verifies the verdict and keeps what it verified.
    let mut a = temp.view();
    assert_eq!(ask_state(&mut a, &id, temp.now()).0, AskState::Approved);
    a.save().unwrap();
    drop(a);

    // Someone edits the verdict in the master log's line.
    let master_key = temp
        .home()
        .load_key(temp.project(), &KeyHolder::Master, temp.now())
        .unwrap();
    let log = Channel::open(temp.channel_dir())
        .unwrap()
        .log_path(&AgentName::master(), &master_key.public_key());
    let text = fs::read_to_string(&log).unwrap();
    assert_eq!(text.matches(r#""verdict":"approve""#).count(), 1);
    fs::write(
        &log,
        text.replace(r#""verdict":"approve""#, r#""verdict":"reject""#),
    )
    .unwrap();
    let edited_line = text
        .lines()
        .position(|line| line.contains(r#""verdict":"approve""#))
        .unwrap() as u64
        + 1;
    let rel = log.strip_prefix(temp.channel_dir()).unwrap().to_owned();
    let problems_of = |session: &Session| {
        session
            .integrity_problems()
            .0
            .iter()
            .filter(|problem| problem.path == rel)
            .map(ToString::to_string)
            .collect::<Vec<_>>()
    };
    let has_bad_signature = |session: &Session| {
        session.integrity_problems().0.iter().any(|problem| {
            problem.path == rel
                && problem.kind == ProblemKind::BadSignature
                && problem.line == Some(edited_line)
        })
    };

    // Machine B never verified it: the edited line does not verify, no verdict counts.
    let home_b = other_machine(&temp, "home-b");
    let mut b = Session::open(&home_b, temp.project(), Actor::Observer, temp.now()).unwrap();
    eprintln!("machine B: {:?}", problems_of(&b));
    assert!(has_bad_signature(&b), "{:?}", problems_of(&b));
    assert_eq!(
        ask_state(&mut b, &id, temp.now()),
        (AskState::Pending, None)
    );

    // Machine A: the verdict it verified stands, and the edit is reported.
    let mut a = temp.view();
    eprintln!("machine A: {:?}", problems_of(&a));
    assert!(has_bad_signature(&a), "{:?}", problems_of(&a));
    assert_eq!(
        ask_state(&mut a, &id, temp.now()),
        (AskState::Approved, None)
    );
}

#[test]
fn the_answer_operation_refuses_every_agent_with_master_only_and_writes_nothing() {
    let temp = fleet();
    let id = raise(&temp, "mia", &request("Merge now?", "yes", "")).unwrap();
    let before = logs_len(temp.channel_dir());
    for name in ["olga", "mia", "walt"] {
        for verdict in [Verdict::Approve, Verdict::Reject, Verdict::SendBack] {
            let refused = asks::answer(
                &mut temp.agent_session(name),
                &id,
                verdict,
                None,
                temp.now(),
            );
            assert_eq!(code(&refused), "master_only", "{name} {verdict:?}");
            assert_eq!(
                refused.unwrap_err().to_string(),
                "only the human (the master key) may answer an ask"
            );
        }
    }
    assert_eq!(
        logs_len(temp.channel_dir()),
        before,
        "a refused answer wrote"
    );
    assert_eq!(
        ask_state(&mut temp.view(), &id, temp.now()),
        (AskState::Pending, None)
    );
}

#[test]
fn a_demoted_orchestrator_that_never_reads_the_master_log_cannot_take_over() {
    let temp = fleet();
    take(&temp, "oscar").unwrap();
    let seen_before = temp.view().identity().master_position();
    let tip = temp.view().state().leadership.view().tip;
    // Olga loses her level; she writes a takeover as if she had never seen that.
    ops::access_set(
        temp.home(),
        temp.project(),
        &agent("olga"),
        &ops::GrantRequest {
            level: Level::Member,
            scopes: Vec::new(),
            expires: None,
            key: None,
        },
        temp.now(),
    )
    .unwrap();
    temp.clock().advance_secs(QUIET_S + 1);
    let channel = Channel::open(temp.channel_dir()).unwrap();
    let mut writer = channel
        .writer(&agent("olga"), &agent_key(&temp, "olga"))
        .unwrap();
    let mut body = json!({ "after": tip.to_hex() });
    body[SEEN_FIELD] = json!([seen_before.0, seen_before.1]);
    writer
        .append(primary_kinds::TAKE, body, temp.now())
        .unwrap();

    // Oscar stays primary here and on a machine folding everything from nothing.
    assert_eq!(primary_now(&temp), Some(agent("oscar")));
    let elsewhere = other_machine(&temp, "fresh");
    let there = Session::open(&elsewhere, temp.project(), Actor::Observer, temp.now()).unwrap();
    assert_eq!(
        there.state().leadership.view().primary,
        Some(agent("oscar"))
    );
}

// ---- briefs ----

/// Writes an entry into `name`'s own log, bypassing every check `ops` makes.
fn write_raw(temp: &TempChannel, name: &str, kind: &str, mut body: Value) -> u64 {
    let seen = temp.view().identity().master_position();
    body[SEEN_FIELD] = json!([seen.0, seen.1]);
    plant::raw(
        temp.channel_dir(),
        &agent(name),
        &agent_key(temp, name),
        kind,
        body,
        temp.now(),
    )
    .seq()
}

#[test]
fn a_brief_or_a_decision_by_a_worker_does_not_count_and_is_reported() {
    let temp = fleet();
    take(&temp, "olga").unwrap();
    primary::set_brief(
        &mut temp.agent_session("olga"),
        "Ship the parser",
        &["no new dependencies".to_owned()],
        temp.now(),
    )
    .unwrap();
    // The command refuses a Worker ...
    let refused = primary::set_brief(
        &mut temp.agent_session("walt"),
        "Rewrite it all",
        &[],
        temp.now(),
    );
    assert_eq!(code(&refused), "missing_level", "{refused:?}");
    let refused = primary::decide(&mut temp.agent_session("walt"), "use tabs", temp.now());
    assert_eq!(code(&refused), "missing_level", "{refused:?}");
    // ... and what a Worker writes raw does not count.
    temp.clock().advance_secs(1);
    let brief_seq = write_raw(
        &temp,
        "walt",
        primary_kinds::BRIEF_SET,
        json!({ "objective": "Rewrite it all", "constraints": [] }),
    );
    let decide_seq = write_raw(
        &temp,
        "walt",
        primary_kinds::BRIEF_DECIDE,
        json!({ "line": "use tabs" }),
    );
    let mut view = temp.view();
    let leadership = &view.state().leadership;
    assert_eq!(leadership.brief(&agent("walt")), None);
    let brief = leadership.current_brief().unwrap();
    assert_eq!(
        (brief.by.as_str(), brief.objective.as_str()),
        ("olga", "Ship the parser")
    );
    assert_eq!(leadership.decisions().count(), 0);
    let reported: Vec<u64> = view
        .whole_state()
        .problems()
        .unwrap()
        .iter()
        .filter(|problem| problem.author == agent("walt"))
        .map(|problem| problem.seq)
        .collect();
    assert_eq!(reported, [brief_seq, decide_seq]);
    // A Member's brief and decision count.
    primary::set_brief(
        &mut temp.agent_session("mia"),
        "Docs first",
        &[],
        temp.now(),
    )
    .unwrap();
    primary::decide(
        &mut temp.agent_session("mia"),
        "docs in markdown",
        temp.now(),
    )
    .unwrap();
    let view = temp.view();
    assert!(view.state().leadership.brief(&agent("mia")).is_some());
    assert_eq!(view.state().leadership.decisions().count(), 1);
    // The catch-up shows the primary's brief, not the latest one.
    let digest = catchup(&mut temp.agent_session("oscar"), None, &temp);
    assert_eq!(digest.brief.unwrap().objective, "Ship the parser");
}

// ---- the catch-up ----

fn catchup(session: &mut Session, since: Option<&str>, temp: &TempChannel) -> Digest {
    fleet::catchup(session, since, DigestLimits::DEFAULT, temp.now()).unwrap()
}

fn issue(temp: &TempChannel, title: &str) -> String {
    let request = IssueRequest {
        title: title.into(),
        ..IssueRequest::default()
    };
    orders::issue(&mut temp.master_session(), &request, temp.now()).unwrap()
}

/// Olga is primary with a brief and `decisions` decisions (a second apart, oldest first),
/// and the master issued `open` orders. Returns the orders' ids.
fn led_fleet(decisions: usize, open: usize) -> (TempChannel, Vec<String>) {
    let temp = fleet();
    take(&temp, "olga").unwrap();
    let mut olga = temp.agent_session("olga");
    primary::set_brief(
        &mut olga,
        "Ship the parser",
        &["no new dependencies".to_owned()],
        temp.now(),
    )
    .unwrap();
    for n in 1..=decisions {
        temp.clock().advance_secs(1);
        primary::decide(&mut olga, &format!("decision {n}"), temp.now()).unwrap();
    }
    let ids = (1..=open)
        .map(|n| issue(&temp, &format!("order {n}")))
        .collect();
    (temp, ids)
}

fn decision_lines(digest: &Digest) -> Vec<&str> {
    digest
        .decisions
        .iter()
        .map(|decision| decision.line.as_str())
        .collect()
}

fn open_ids(digest: &Digest) -> Vec<&str> {
    digest.open.iter().map(|order| order.id.as_str()).collect()
}

#[test]
fn a_catchup_holds_at_most_5_decisions_and_5_open_orders_and_8_and_10_with_detail() {
    let (temp, ids) = led_fleet(12, 15);
    let mut mia = temp.agent_session("mia");
    let typical = fleet::catchup(&mut mia, None, DigestLimits::DEFAULT, temp.now()).unwrap();
    let detail = fleet::catchup(&mut mia, None, DigestLimits::DETAIL, temp.now()).unwrap();
    eprintln!(
        "12 decisions and 15 open orders: the catch-up shows {} and {}, with detail {} and {}",
        typical.decisions.len(),
        typical.open.len(),
        detail.decisions.len(),
        detail.open.len()
    );
    // The newest decisions first; the open orders oldest change first.
    assert_eq!(
        decision_lines(&typical),
        [
            "decision 12",
            "decision 11",
            "decision 10",
            "decision 9",
            "decision 8"
        ]
    );
    assert_eq!(open_ids(&typical), ids[..5]);
    assert_eq!(decision_lines(&detail).len(), 8);
    assert_eq!(decision_lines(&detail)[7], "decision 5");
    assert_eq!(open_ids(&detail), ids[..10]);
    // Built from the folded state: the primary and its brief.
    for digest in [&typical, &detail] {
        assert_eq!(
            digest.primary.as_ref().map(|primary| primary.name.as_str()),
            Some("olga")
        );
        let brief = digest.brief.as_ref().unwrap();
        assert_eq!(
            (brief.objective.as_str(), brief.constraints.as_slice()),
            (
                "Ship the parser",
                ["no new dependencies".to_owned()].as_slice()
            )
        );
        assert!(!digest.reset);
    }
}

/// Whether a digest holds nothing but its cursor (and perhaps what waits on the caller).
fn only_next(digest: &Digest) -> bool {
    digest.primary.is_none()
        && digest.brief.is_none()
        && digest.decisions.is_empty()
        && digest.open.is_empty()
        && digest.mine.is_empty()
        && digest.asks.is_empty()
        && !digest.reset
}

#[test]
fn a_catchup_since_its_next_gives_only_what_changed_and_nothing_on_an_unchanged_channel() {
    let (temp, ids) = led_fleet(2, 3);
    let mut mia = temp.agent_session("mia");
    let full = catchup(&mut mia, None, &temp);
    assert_eq!((full.decisions.len(), full.open.len()), (2, 3), "{full:?}");
    let cursor = full.next.to_string();
    let unchanged = catchup(&mut mia, Some(&cursor), &temp);
    eprintln!("an unchanged channel: {unchanged:?}");
    assert!(only_next(&unchanged), "{unchanged:?}");
    assert_eq!(unchanged.next, full.next);

    // A new order, a decision, and a claim of an old order: only those.
    let new = issue(&temp, "order 4");
    primary::decide(&mut temp.agent_session("olga"), "use postcard", temp.now()).unwrap();
    let claimed = orders::claim(&mut temp.agent_session("oscar"), &ids[1], temp.now());
    assert!(claimed.is_ok(), "{claimed:?}");
    let news = catchup(&mut mia, Some(&cursor), &temp);
    eprintln!("after three changes: {news:?}");
    assert_eq!(decision_lines(&news), ["use postcard"]);
    let mut changed = open_ids(&news);
    changed.sort_unstable();
    let mut want = vec![ids[1].as_str(), new.as_str()];
    want.sort_unstable();
    assert_eq!(changed, want);
    let row = news.open.iter().find(|order| order.id == ids[1]).unwrap();
    assert_eq!(
        (row.state, row.holder.as_ref().map(AgentName::as_str)),
        (OrderState::Claimed, Some("oscar"))
    );
    assert!(news.primary.is_none() && news.brief.is_none(), "{news:?}");
    // And from its own next: nothing again.
    let next = news.next.to_string();
    assert!(only_next(&catchup(&mut mia, Some(&next), &temp)));

    // A new primary is news.
    temp.clock().advance_secs(QUIET_S + 1);
    take(&temp, "oscar").unwrap();
    let news = catchup(&mut mia, Some(&next), &temp);
    assert_eq!(news.primary.unwrap().name, agent("oscar"));
}

/// The parts of a digest that a full answer and a reset answer share.
fn whole(digest: &Digest) -> String {
    format!(
        "{:?} {:?} {:?} {:?} {:?} {:?}",
        digest.primary.as_ref().map(|primary| &primary.name),
        digest.brief,
        digest.decisions,
        digest.open,
        digest.mine,
        digest.asks
    )
}

#[test]
fn a_cursor_from_another_machine_or_a_rebuilt_state_gives_the_whole_digest_and_says_reset() {
    let (temp, _) = led_fleet(2, 3);
    let elsewhere = other_machine(&temp, "home-b");
    let mut there = Session::open(&elsewhere, temp.project(), Actor::Observer, temp.now()).unwrap();
    let foreign = catchup(&mut there, None, &temp).next.to_string();

    let mut mia = temp.agent_session("mia");
    let full = catchup(&mut mia, None, &temp);
    assert!(!full.reset);
    let answer = catchup(&mut mia, Some(&foreign), &temp);
    assert!(answer.reset, "{answer:?}");
    assert_eq!(whole(&answer), whole(&full));
    // Its own cursor is news-only again.
    let own = answer.next.to_string();
    assert!(only_next(&catchup(&mut mia, Some(&own), &temp)));

    // The state is rebuilt (its file deleted): the old cursor names a state that is gone.
    mia.save().unwrap();
    drop(mia);
    fs::remove_file(temp.home().verified_path(temp.project())).unwrap();
    let mut rebuilt = temp.agent_session("mia");
    let answer = catchup(&mut rebuilt, Some(&own), &temp);
    assert!(answer.reset, "{answer:?}");
    assert_eq!(whole(&answer), whole(&full));

    // A cursor that is none, or a page cursor in its place, is a clear error.
    for bad in ["yesterday", "p10"] {
        let refused = fleet::catchup(&mut rebuilt, Some(bad), DigestLimits::DEFAULT, temp.now());
        assert_eq!(code(&refused), "invalid", "{bad}");
    }
}

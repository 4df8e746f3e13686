//! What an entry may claim not to have seen (ADR 0016), tried as a seated agent would: it signs
//! whatever it likes with its own key, naming any past event as `after` and any `seen`.

use ferry_mcp_core::channel::fold::levels::Level;
use ferry_mcp_core::channel::fold::state::orders::{OrderState, Verdict, kinds};
use ferry_mcp_core::channel::fold::state::primary::{ROOT, kinds as primary_kinds};
use ferry_mcp_core::channel::fold::state::race::tiebreak;
use ferry_mcp_core::channel::fold::state::{EntryId, SEEN_FIELD};
use ferry_mcp_core::channel::log::entry::EntryHash;
use ferry_mcp_core::channel::log::keys::{PublicKey, SecretKey};
use ferry_mcp_core::channel::log::names::AgentName;
use ferry_mcp_core::channel::machine::home::KeyHolder;
use ferry_mcp_core::channel::ops::orders::{self, IssueRequest, SubmitRequest};
use ferry_mcp_core::channel::ops::primary;
use ferry_mcp_testkit::plant;
use ferry_mcp_testkit::temp_channel::TempChannel;
use serde_json::{Value, json};

fn name(raw: &str) -> AgentName {
    TempChannel::agent(raw)
}

/// Signs an entry as `agent` with its own key, bypassing every check the operations make; it
/// admits having seen the whole master log (so its level is in force).
fn sign(temp: &TempChannel, agent: &str, kind: &str, mut body: Value) {
    let key = temp.agent_key(agent);
    let session = temp.view();
    let seen = session.identity().master_position();
    body[SEEN_FIELD] = json!([seen.0, seen.1]);
    let mut writer = session.channel().writer(&name(agent), &key).unwrap();
    writer.append(kind, body, temp.now()).unwrap();
}

fn issue_hash(temp: &TempChannel, id: &str) -> EntryHash {
    let mut view = temp.view();
    let id: EntryId = id.parse().unwrap();
    view.order(&id).unwrap().unwrap().issue.hash
}

#[test]
fn a_member_does_not_take_an_accepted_order_with_a_claim_that_names_its_issue_long_after() {
    let temp = TempChannel::builder()
        .agent("alice", Level::Member)
        .agent("bob", Level::Member)
        .build()
        .unwrap();
    let public = |agent: &str| -> PublicKey { temp.agent_key(agent).public_key() };
    let mut stolen = Vec::new();
    for n in 0..4 {
        let id = orders::issue(
            &mut temp.master_session(),
            &IssueRequest {
                title: format!("order {n}"),
                review: true,
                ..IssueRequest::default()
            },
            temp.now(),
        )
        .unwrap();
        // The holder is whichever of the two the tie-break (ADR 0017: over the issue both
        // claims follow) ranks last: under that rule alone, the thief's claim would always win.
        let issue = issue_hash(&temp, &id);
        let rank = |agent: &str| tiebreak(issue.as_bytes(), &public(agent));
        let (holder, thief) = if rank("alice") > rank("bob") {
            ("alice", "bob")
        } else {
            ("bob", "alice")
        };
        orders::claim(&mut temp.agent_session(holder), &id, temp.now()).unwrap();
        let request = SubmitRequest {
            handin: None,
            git_ref: Some("feature/work".into()),
            summary: "done".into(),
        };
        orders::submit(&mut temp.agent_session(holder), &id, &request, temp.now()).unwrap();
        orders::review(
            &mut temp.master_session(),
            &id,
            Verdict::Accept,
            None,
            temp.now(),
        )
        .unwrap();
        temp.clock().advance_secs(3_600);
        sign(
            &temp,
            thief,
            kinds::CLAIM,
            json!({"order": id, "after": issue}),
        );
        stolen.push((id, holder));
    }
    for (id, holder) in stolen {
        let detail = orders::show(&mut temp.view(), &id, None, temp.now()).unwrap();
        eprintln!(
            "{id}: {} held by {:?}; voided: {:?}",
            detail.row.state,
            detail.row.holder,
            detail
                .voided
                .iter()
                .map(|void| format!("{} {} {}", void.by, void.what, void.reason))
                .collect::<Vec<_>>()
        );
        assert_eq!(detail.row.state, OrderState::Accepted, "{id}");
        let thief_claims: Vec<_> = detail
            .voided
            .iter()
            .filter(|void| void.by.as_str() != holder)
            .collect();
        assert_eq!(thief_claims.len(), 1, "{id}: {:?}", detail.voided);
        assert_eq!(
            detail.submission.as_ref().map(|s| s.by.as_str()),
            Some(holder),
            "{id}: the holder's submission stands"
        );
    }
}

#[test]
fn an_orchestrator_does_not_void_the_live_primary_with_a_take_that_names_the_root_long_after() {
    let temp = TempChannel::builder()
        .agent("olga", Level::Orchestrator)
        .agent("oscar", Level::Orchestrator)
        .agent("otto", Level::Orchestrator)
        .build()
        .unwrap();
    let mut fleet = ["olga", "oscar", "otto"];
    // The primary is whoever the tie-break ranks last at the root (ADR 0017: its input there is
    // the genesis master key): under it alone, either rival's take naming the root would win.
    let genesis = temp.view().identity().masters()[0];
    fleet.sort_by_key(|agent| tiebreak(genesis.as_bytes(), &temp.agent_key(agent).public_key()));
    let [first, second, lead] = fleet;
    primary::takeover(&mut temp.agent_session(lead), temp.now()).unwrap();
    temp.clock().advance_secs(3_600);
    for rival in [first, second] {
        sign(&temp, rival, primary_kinds::TAKE, json!({"after": ROOT}));
    }
    let view = temp.view();
    let chain = view.state().leadership.view();
    eprintln!(
        "primary {:?}; voided: {:?}",
        chain.primary,
        chain
            .voided
            .iter()
            .map(|(id, by, why)| format!("{id} {by}: {why}"))
            .collect::<Vec<_>>()
    );
    assert_eq!(chain.primary.as_ref().map(AgentName::as_str), Some(lead));
    assert_eq!(chain.voided.len(), 2, "{:?}", chain.voided);
}

// ---- ids that cannot collide (issue 17, finding 5) ----

/// Signs `kinds` in order as `agent` with a fresh key (a folder writer who holds none of the
/// channel's keys), each with body `body(seq)`; returns the key.
fn forge(temp: &TempChannel, agent: &str, entries: &[(&str, Value)]) -> SecretKey {
    let key = SecretKey::generate().unwrap();
    let session = temp.view();
    let mut writer = session.channel().writer(&name(agent), &key).unwrap();
    for (kind, body) in entries {
        writer.append(kind, body.clone(), temp.now()).unwrap();
    }
    key
}

fn order_titles(session: &mut ferry_mcp_core::channel::session::Session) -> Vec<(String, String)> {
    session
        .board_whole()
        .unwrap()
        .iter()
        .map(|order| {
            let whole = order.whole().unwrap();
            (order.id().to_string(), whole.issue.title.clone())
        })
        .collect()
}

#[test]
fn a_fresh_key_signing_under_an_orchestrator_s_name_does_not_make_its_order_vanish() {
    let temp = TempChannel::builder()
        .agent("lead", Level::Orchestrator)
        .build()
        .unwrap();
    let id = orders::issue(
        &mut temp.agent_session("lead"),
        &IssueRequest {
            title: "the real order".into(),
            ..IssueRequest::default()
        },
        temp.now(),
    )
    .unwrap();
    let seq: u64 = id.rsplit_once('-').unwrap().1.parse().unwrap();
    let seen = temp.view().identity().master_position();
    let forged = |title: &str| {
        let seen = json!([seen.0, seen.1]);
        (kinds::ISSUE, json!({"title": title, "seen": seen}))
    };
    // One fresh key without a roster entry, one that joins the held name first.
    let mut bare: Vec<(&str, Value)> = Vec::new();
    let mut joined: Vec<(&str, Value)> = vec![("roster.join", json!({}))];
    while (bare.len() as u64) < seq {
        bare.push(forged("forged without a join"));
    }
    while (joined.len() as u64) < seq {
        joined.push(forged("forged after a join"));
    }
    // This machine keeps what it folded, so the forged logs are folded after the real one.
    temp.view().save().unwrap();
    forge(&temp, "lead", &bare);
    forge(&temp, "lead", &joined);
    let mut here = temp.view();
    let fresh_home = ferry_mcp_core::channel::machine::home::Home::at(temp.root().join("fresh"));
    ferry_mcp_core::channel::ops::add_existing(&fresh_home, temp.project(), temp.channel_dir())
        .unwrap();
    let mut fresh = ferry_mcp_core::channel::session::Session::open(
        &fresh_home,
        temp.project(),
        ferry_mcp_core::channel::session::Actor::Observer,
        temp.now(),
    )
    .unwrap();
    for (machine, session) in [("this machine", &mut here), ("a fresh machine", &mut fresh)] {
        for problem in session.whole_state().problems().unwrap() {
            eprintln!("{machine}: problem: {problem}");
        }
        let titles = order_titles(session);
        eprintln!("{machine}: {titles:?}");
        assert_eq!(
            titles,
            vec![(id.clone(), "the real order".to_owned())],
            "{machine}"
        );
    }
}

fn raise(temp: &TempChannel, agent: &str, title: &str) -> String {
    ferry_mcp_core::channel::ops::asks::raise(
        &mut temp.agent_session(agent),
        &ferry_mcp_core::channel::ops::asks::RaiseRequest {
            title: title.into(),
            recommendation: "do it".into(),
            reasoning: String::new(),
        },
        temp.now(),
    )
    .unwrap()
}

fn ask_of(
    session: &ferry_mcp_core::channel::session::Session,
    id: &str,
) -> Option<(String, String)> {
    let id: EntryId = id.parse().unwrap();
    session
        .state()
        .asks
        .get(&id, session.identity())
        .map(|ask| (ask.title.clone(), ask.state.as_str().to_owned()))
}

#[test]
fn a_fresh_key_signing_under_an_agent_s_name_does_not_replace_its_ask() {
    let temp = TempChannel::builder()
        .agent("ada", Level::Member)
        .build()
        .unwrap();
    let id = raise(&temp, "ada", "the real ask");
    let seq: u64 = id.rsplit_once('-').unwrap().1.parse().unwrap();
    let mut entries: Vec<(&str, Value)> = vec![("roster.join", json!({}))];
    while (entries.len() as u64) < seq {
        entries.push((
            "ask.raise",
            json!({"title": "forged", "recommendation": "approve"}),
        ));
    }
    // This machine keeps what it folded, so the forged log is folded after the real one.
    temp.view().save().unwrap();
    forge(&temp, "ada", &entries);
    let asked = ask_of(&temp.view(), &id);
    eprintln!("{id}: {asked:?}");
    assert_eq!(
        asked,
        Some(("the real ask".to_owned(), "pending".to_owned()))
    );
}

#[test]
fn a_re_keyed_name_s_new_ask_with_an_answered_ask_s_id_is_not_answered_by_it() {
    use ferry_mcp_core::channel::fold::identity::kinds as identity_kinds;
    use ferry_mcp_core::channel::fold::state::asks::Verdict as AskVerdict;
    use ferry_mcp_core::channel::ops;
    let temp = TempChannel::builder()
        .agent("bob", Level::Member)
        .build()
        .unwrap();
    let old = raise(&temp, "bob", "ship the demo");
    ops::asks::answer(
        &mut temp.master_session(),
        &old,
        AskVerdict::Approve,
        None,
        temp.now(),
    )
    .unwrap();
    let old_log = temp
        .view()
        .channel()
        .log_path(&name("bob"), &temp.agent_key("bob").public_key());
    // Bob's key is replaced: a new key joins as bob, the master grants it, and its log reaches
    // the seq of the answered ask with a new one.
    let seq: u64 = old.rsplit_once('-').unwrap().1.parse().unwrap();
    let new_key = SecretKey::generate().unwrap();
    {
        let session = temp.view();
        let mut writer = session.channel().writer(&name("bob"), &new_key).unwrap();
        writer.append("roster.join", json!({}), temp.now()).unwrap();
    }
    // The operations refuse to re-key a held name; the master signs the grant itself.
    {
        let master = temp
            .home()
            .load_key(temp.project(), &KeyHolder::Master, temp.now())
            .unwrap();
        let body = plant::grant(name("bob"), new_key.public_key(), Level::Member);
        let session = temp.view();
        let mut writer = session
            .channel()
            .writer(&AgentName::master(), &master)
            .unwrap();
        writer
            .append(identity_kinds::GRANT, body, temp.now())
            .unwrap();
    }
    {
        let session = temp.view();
        let seen = session.identity().master_position();
        let mut writer = session.channel().writer(&name("bob"), &new_key).unwrap();
        for n in 2..=seq {
            let title = if n == seq {
                "rotate the prod keys"
            } else {
                "filler"
            };
            writer
                .append(
                    "ask.raise",
                    json!({"title": title, "recommendation": "do it", "seen": [seen.0, seen.1]}),
                    temp.now(),
                )
                .unwrap();
        }
    }
    let here = ask_of(&temp.view(), &old);
    eprintln!("this machine: {old}: {here:?}");
    assert_eq!(
        here,
        Some(("rotate the prod keys".to_owned(), "pending".to_owned()))
    );
    // A machine where the old key's log is absent.
    std::fs::remove_file(&old_log).unwrap();
    let fresh_home = ferry_mcp_core::channel::machine::home::Home::at(temp.root().join("fresh"));
    ops::add_existing(&fresh_home, temp.project(), temp.channel_dir()).unwrap();
    let fresh = ferry_mcp_core::channel::session::Session::open(
        &fresh_home,
        temp.project(),
        ferry_mcp_core::channel::session::Actor::Observer,
        temp.now(),
    )
    .unwrap();
    let there = ask_of(&fresh, &old);
    eprintln!("a machine without the old log: {old}: {there:?}");
    assert_eq!(there, here);
}

// ---- junk that can never count is not kept (issue 17, finding 8) ----

#[test]
fn nothing_a_key_that_holds_no_name_signs_is_kept_by_the_folds() {
    let temp = TempChannel::builder()
        .agent("lead", Level::Orchestrator)
        .build()
        .unwrap();
    let mut master = temp.master_session();
    let id = orders::issue(
        &mut master,
        &IssueRequest {
            title: "the one order".into(),
            ..IssueRequest::default()
        },
        temp.now(),
    )
    .unwrap();
    drop(master);
    let issue = issue_hash(&temp, &id);
    let seen = temp.view().identity().master_position();
    let seen = json!([seen.0, seen.1]);
    let mut junk: Vec<(&str, Value)> = Vec::new();
    for n in 0..50 {
        junk.push((primary_kinds::TAKE, json!({"after": ROOT, "seen": seen})));
        junk.push((
            kinds::CLAIM,
            json!({"order": id, "after": issue, "seen": seen}),
        ));
        junk.push((
            "ask.raise",
            json!({"title": format!("ask {n}"), "recommendation": "approve", "seen": seen}),
        ));
    }
    // One key never joined; one joined the held name (a candidate the master did not pick).
    forge(&temp, "lead", &junk);
    let mut joined = vec![("roster.join", json!({}))];
    joined.extend(junk.iter().cloned());
    forge(&temp, "lead", &joined);

    let mut session = temp.view();
    let order: EntryId = id.parse().unwrap();
    session.page_order(&order);
    let state = session.state();
    let order = state
        .orders()
        .unwrap()
        .get(&order)
        .unwrap()
        .whole()
        .unwrap();
    let events = serde_json::to_value(order).unwrap()["events"]
        .as_array()
        .unwrap()
        .len();
    let takes = serde_json::to_value(&state.leadership).unwrap()["events"]
        .as_array()
        .unwrap()
        .len();
    let asks = serde_json::to_value(&state.asks).unwrap()["asks"]
        .as_object()
        .unwrap()
        .len();
    let not_on_roster = state
        .problems()
        .unwrap()
        .into_iter()
        .filter(|problem| {
            problem.kind == ferry_mcp_core::channel::fold::identity::FoldProblemKind::NotOnRoster
        })
        .count();
    eprintln!(
        "kept of 300 junk entries: {events} order events, {takes} takes, {asks} asks; not_on_roster problems: {not_on_roster}"
    );
    assert_eq!((events, takes, asks), (0, 0, 0));
    assert_eq!(
        not_on_roster, 2,
        "each key's entries are counted, once per key"
    );
}

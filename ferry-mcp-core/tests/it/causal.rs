//! What an entry may claim not to have seen (ADR 0016), tried as a seated agent would: it signs
//! whatever it likes with its own key, naming any past event as `after` and any `seen`.

use ferry_mcp_core::channel::entry::EntryHash;
use ferry_mcp_core::channel::home::KeyHolder;
use ferry_mcp_core::channel::keys::{PublicKey, SecretKey};
use ferry_mcp_core::channel::levels::Level;
use ferry_mcp_core::channel::names::AgentName;
use ferry_mcp_core::channel::ops::orders::{self, IssueRequest, SubmitRequest};
use ferry_mcp_core::channel::ops::primary;
use ferry_mcp_core::channel::state::orders::{OrderState, Verdict, kinds, tiebreak};
use ferry_mcp_core::channel::state::primary::{ROOT, kinds as primary_kinds};
use ferry_mcp_core::channel::state::{EntryId, SEEN_FIELD};
use ferry_mcp_testkit::temp_channel::TempChannel;
use serde_json::{Value, json};

fn name(raw: &str) -> AgentName {
    TempChannel::agent(raw)
}

fn key_of(temp: &TempChannel, agent: &str) -> SecretKey {
    temp.home()
        .load_key(temp.project(), &KeyHolder::Agent(name(agent)), temp.now())
        .unwrap()
}

/// Signs an entry as `agent` with its own key, bypassing every check the operations make; it
/// admits having seen the whole master log (so its level is in force).
fn sign(temp: &TempChannel, agent: &str, kind: &str, mut body: Value) {
    let key = key_of(temp, agent);
    let session = temp.view();
    let seen = session.identity().master_position();
    body[SEEN_FIELD] = json!([seen.0, seen.1]);
    let mut writer = session.channel().writer(&name(agent), &key).unwrap();
    writer.append(kind, body, temp.now()).unwrap();
}

fn issue_hash(temp: &TempChannel, id: &str) -> EntryHash {
    let view = temp.view();
    let id: EntryId = id.parse().unwrap();
    view.state().orders().get(&id).unwrap().issue.hash
}

#[test]
fn a_member_does_not_take_an_accepted_order_with_a_claim_that_names_its_issue_long_after() {
    let temp = TempChannel::builder()
        .agent("alice", Level::Member)
        .agent("bob", Level::Member)
        .build()
        .unwrap();
    let public = |agent: &str| -> PublicKey { key_of(&temp, agent).public_key() };
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
        // The holder is whichever of the two the tie-break of ADR 0006 ranks last: under that
        // rule alone, the thief's claim would always win.
        let (holder, thief) = if tiebreak(&id, &public("alice")) > tiebreak(&id, &public("bob")) {
            ("alice", "bob")
        } else {
            ("bob", "alice")
        };
        let issue = issue_hash(&temp, &id);
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
    // The primary is whoever the tie-break of ADR 0006 ranks last: under it alone, either
    // rival's take naming the root would win.
    fleet.sort_by_key(|agent| tiebreak("primary", &key_of(&temp, agent).public_key()));
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

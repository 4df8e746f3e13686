//! Scopes (issue 19, item 8): an order may name a project scope; a grant scoped to S lets its
//! agent act above a Worker on exactly the orders of scope S, an unscoped grant on all of
//! them. Tested as an attacker would: a seated Member granted `web` signing a claim of an
//! `infra` order with its own key, past every check an operation makes, and a folder writer
//! with no key editing an order's scope in the folder.

use std::path::PathBuf;

use ferry_mcp_core::channel::fold::levels::{Level, Refusal};
use ferry_mcp_core::channel::fold::state::EntryId;
use ferry_mcp_core::channel::fold::state::orders::{OrderState, VoidReason, kinds};
use ferry_mcp_core::channel::log::names::AgentName;
use ferry_mcp_core::channel::log::reader::ProblemKind;
use ferry_mcp_core::channel::log::store::Channel;
use ferry_mcp_core::channel::machine::home::Home;
use ferry_mcp_core::channel::ops::orders::{self, ClaimOutcome, IssueRequest, ListRequest};
use ferry_mcp_core::channel::ops::{self, GrantRequest, OpsError};
use ferry_mcp_core::channel::session::{Actor, Session};
use ferry_mcp_testkit::temp_channel::TempChannel;
use serde_json::json;

fn name(raw: &str) -> AgentName {
    TempChannel::agent(raw)
}

/// `web` (a Member granted scope web), `ops` (an Orchestrator granted scope web) and `all` (a
/// Member without scopes).
fn fleet() -> TempChannel {
    let temp = TempChannel::builder()
        .agent("web", Level::Member)
        .agent("ops", Level::Orchestrator)
        .agent("all", Level::Member)
        .build()
        .unwrap();
    grant(&temp, "web", Level::Member, &["web"]);
    grant(&temp, "ops", Level::Orchestrator, &["web"]);
    temp
}

fn grant(temp: &TempChannel, agent: &str, level: Level, scopes: &[&str]) -> Option<u64> {
    let request = GrantRequest {
        level,
        scopes: scopes.iter().map(|scope| (*scope).to_owned()).collect(),
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
    .unwrap()
    .value
    .after_seq
}

/// An order issued by the human, in `scope`.
fn issue(temp: &TempChannel, title: &str, scope: Option<&str>) -> String {
    let request = IssueRequest {
        title: title.to_owned(),
        scope: scope.map(str::to_owned),
        ..IssueRequest::default()
    };
    orders::issue(&mut temp.master_session(), &request, temp.now()).unwrap()
}

fn claim(temp: &TempChannel, agent: &str, id: &str) -> Result<ClaimOutcome, orders::OrdersError> {
    orders::claim(&mut temp.agent_session(agent), id, temp.now())
}

/// The refusal inside an order operation's error.
fn refusal(err: orders::OrdersError) -> Refusal {
    match err {
        orders::OrdersError::Ops(OpsError::Refused(refusal)) => refusal,
        other => panic!("not a refusal: {other}"),
    }
}

/// A second machine: its own state folder, the same channel folder: it folds from nothing.
fn fresh_machine(temp: &TempChannel, tag: &str) -> Home {
    let home = Home::at(temp.root().join(tag));
    ops::add_existing(&home, temp.project(), temp.channel_dir()).unwrap();
    home
}

/// A claim of order `id` signed by `agent` with its own key, following the order's tip and
/// admitting every master entry (so its grant is in force): what an honest claimant writes,
/// without the claimant's checks.
fn hand_signed_claim(temp: &TempChannel, agent: &str, id: &str) {
    let mut view = temp.view();
    let parsed: EntryId = id.parse().unwrap();
    let tip = view.order(&parsed).unwrap().unwrap().view().tip;
    let seen = view.identity().master_position();
    let body = json!({ "order": id, "after": tip, "seen": seen });
    let channel = Channel::open(temp.channel_dir()).unwrap();
    let mut writer = channel
        .writer(&name(agent), &temp.agent_key(agent))
        .unwrap();
    writer.append(kinds::CLAIM, body, temp.now()).unwrap();
}

/// Where order `id` stands on `home`, its holder, and why its voided events did not count.
fn standing(
    home: &Home,
    temp: &TempChannel,
    id: &str,
) -> (OrderState, Option<AgentName>, Vec<VoidReason>) {
    let mut session = Session::open(home, temp.project(), Actor::Observer, temp.now()).unwrap();
    let detail = orders::show(&mut session, id, None, temp.now()).unwrap();
    let reasons = detail.voided.into_iter().map(|void| void.reason).collect();
    (detail.row.state, detail.row.holder, reasons)
}

#[test]
fn a_member_granted_scope_web_claims_web_orders_and_is_refused_others_with_the_scope_named() {
    let temp = fleet();
    let web = issue(&temp, "Fix the login page", Some("web"));
    let infra = issue(&temp, "Rotate the disks", Some("infra"));
    let plain = issue(&temp, "Write the changelog", None);

    assert!(matches!(
        claim(&temp, "web", &web),
        Ok(ClaimOutcome::Claimed { .. })
    ));
    let err = claim(&temp, "web", &infra).unwrap_err();
    assert_eq!(
        err.to_string(),
        "claim needs member in scope infra; web's grant covers web"
    );
    assert!(matches!(
        refusal(err),
        Refusal::OutOfScope { scope: Some(scope), .. } if scope == "infra"
    ));
    let err = claim(&temp, "web", &plain).unwrap_err();
    assert_eq!(
        err.to_string(),
        "claim needs member on an order without a scope; web's grant covers web"
    );
    // An unscoped grant covers every order, scoped or not.
    assert!(matches!(
        claim(&temp, "all", &infra),
        Ok(ClaimOutcome::Claimed { .. })
    ));
    assert!(matches!(
        claim(&temp, "all", &plain),
        Ok(ClaimOutcome::Claimed { .. })
    ));
    let (state, holder, _) = standing(temp.home(), &temp, &infra);
    assert_eq!((state, holder), (OrderState::Claimed, Some(name("all"))));
}

#[test]
fn a_web_member_s_own_signed_claim_of_an_infra_order_counts_for_nothing_here_or_on_a_fresh_machine()
{
    let temp = fleet();
    let infra = issue(&temp, "Rotate the disks", Some("infra"));
    let web = issue(&temp, "Fix the login page", Some("web"));
    hand_signed_claim(&temp, "web", &infra);
    // The same hand-written claim, of an order in its scope, counts: what is refused is the
    // scope, not the way the entry was written.
    hand_signed_claim(&temp, "web", &web);

    let fresh = fresh_machine(&temp, "fresh");
    for home in [temp.home(), &fresh] {
        let (state, holder, reasons) = standing(home, &temp, &infra);
        assert_eq!((state, holder), (OrderState::Open, None));
        assert_eq!(
            reasons,
            [VoidReason::LevelTooLow {
                event: ferry_mcp_core::channel::fold::state::orders::EventName::Claim,
                needed: Level::Member,
                author: name("web"),
                level: Level::Worker,
            }]
        );
        let (state, holder, _) = standing(home, &temp, &web);
        assert_eq!((state, holder), (OrderState::Claimed, Some(name("web"))));
    }
    // The order is still free for an agent its scope admits.
    assert!(matches!(
        claim(&temp, "all", &infra),
        Ok(ClaimOutcome::Claimed { .. })
    ));
}

#[test]
fn an_orchestrator_granted_scope_web_issues_web_orders_only_and_its_own_signed_infra_issue_does_not_count()
 {
    let temp = fleet();
    let request = |scope: Option<&str>| IssueRequest {
        title: "Review the deploy".into(),
        scope: scope.map(str::to_owned),
        ..IssueRequest::default()
    };
    let mut ops_session = temp.agent_session("ops");
    let web = orders::issue(&mut ops_session, &request(Some("web")), temp.now()).unwrap();
    let err = orders::issue(&mut ops_session, &request(Some("infra")), temp.now()).unwrap_err();
    assert_eq!(
        err.to_string(),
        "issue orders needs orchestrator in scope infra; ops's grant covers web"
    );
    // Written by hand with its own key, past the check: the fold does not count it.
    let channel = Channel::open(temp.channel_dir()).unwrap();
    let seen = temp.view().identity().master_position();
    let entry = channel
        .writer(&name("ops"), &temp.agent_key("ops"))
        .unwrap()
        .append(
            kinds::ISSUE,
            json!({ "title": "Wipe the disks", "scope": "infra", "seen": seen }),
            temp.now(),
        )
        .unwrap();
    let forged = EntryId::Agent {
        name: name("ops"),
        seq: entry.seq(),
    };
    let fresh = fresh_machine(&temp, "fresh");
    for home in [temp.home(), &fresh] {
        let session = Session::open(home, temp.project(), Actor::Observer, temp.now()).unwrap();
        let board = session.state().orders().unwrap();
        assert!(board.get(&forged).is_none(), "the forged issue counts");
        assert!(board.get(&web.parse().unwrap()).is_some());
    }
}

#[test]
fn an_order_s_scope_edited_in_the_folder_fails_its_signature_and_the_order_never_reaches_the_board()
{
    let temp = fleet();
    let infra = issue(&temp, "Rotate the disks", Some("infra"));
    // A folder writer with no key moves the order into the web member's scope.
    let master_logs = temp.channel_dir().join("logs/master");
    let log: PathBuf = std::fs::read_dir(&master_logs)
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .find(|path| path.extension().is_some_and(|ext| ext == "jsonl"))
        .unwrap();
    let text = std::fs::read_to_string(&log).unwrap();
    assert_eq!(text.matches(r#""scope":"infra""#).count(), 1, "{text}");
    std::fs::write(&log, text.replace(r#""scope":"infra""#, r#""scope":"web""#)).unwrap();

    let fresh = fresh_machine(&temp, "fresh");
    let mut session = Session::open(&fresh, temp.project(), Actor::Observer, temp.now()).unwrap();
    let (problems, _) = session.integrity_problems();
    assert!(
        problems
            .iter()
            .any(|problem| problem.kind == ProblemKind::BadSignature),
        "{problems:?}"
    );
    let err = orders::show(&mut session, &infra, None, temp.now()).unwrap_err();
    assert_eq!(err.to_string(), format!("unknown order {infra}"));
}

#[test]
fn a_grant_with_fewer_scopes_takes_something_away_and_binds_what_the_master_had_not_read() {
    let temp = fleet();
    assert!(grant(&temp, "all", Level::Member, &["web", "infra"]).is_some());
    // Wider again: nothing is taken away.
    assert_eq!(
        grant(&temp, "all", Level::Member, &["web", "infra", "docs"]),
        None
    );
    // Fewer scopes: infra and docs are taken away.
    assert!(grant(&temp, "all", Level::Member, &["web"]).is_some());
    // A higher level in the same scope takes nothing away.
    assert_eq!(grant(&temp, "all", Level::Orchestrator, &["web"]), None);
}

#[test]
fn a_scope_with_a_comma_a_space_or_no_character_is_refused_for_an_order_and_a_grant() {
    let temp = fleet();
    for bad in ["", "web,infra", "web infra", "a\u{1b}b"] {
        let request = IssueRequest {
            title: "Anything".into(),
            scope: Some(bad.to_owned()),
            ..IssueRequest::default()
        };
        let err = orders::issue(&mut temp.master_session(), &request, temp.now()).unwrap_err();
        assert!(
            matches!(err, orders::OrdersError::Ops(OpsError::BadScope(_))),
            "{err}"
        );
        let grant = GrantRequest {
            level: Level::Member,
            scopes: vec![bad.to_owned()],
            expires: None,
            key: None,
        };
        let err = ops::access_set(
            temp.home(),
            temp.project(),
            &name("all"),
            &grant,
            temp.now(),
        )
        .unwrap_err();
        assert!(err.to_string().starts_with("a scope "), "{err}");
    }
}

#[test]
fn the_board_s_count_by_state_is_the_count_of_its_orders_here_warm_and_on_a_fresh_machine() {
    let temp = fleet();
    let ids: Vec<String> = (0..6)
        .map(|n| issue(&temp, &format!("Order {n}"), Some("web")))
        .collect();
    claim(&temp, "web", &ids[0]).unwrap();
    claim(&temp, "all", &ids[1]).unwrap();
    orders::cancel(&mut temp.master_session(), &ids[2], None, temp.now()).unwrap();
    // Claimed, then handed back: counted once, as open.
    claim(&temp, "all", &ids[3]).unwrap();
    orders::release(&mut temp.agent_session("all"), &ids[3], None, temp.now()).unwrap();

    let fresh = fresh_machine(&temp, "fresh");
    for home in [temp.home(), &fresh, temp.home()] {
        let mut session = Session::open(home, temp.project(), Actor::Observer, temp.now()).unwrap();
        let counted = orders::count_by_state(&mut session, temp.now()).unwrap();
        let listed = orders::list(
            &mut session,
            &ListRequest {
                all: true,
                since: None,
                limit: usize::MAX,
            },
            temp.now(),
        )
        .unwrap();
        let mut by_listing = std::collections::BTreeMap::new();
        for listed in &listed.rows {
            *by_listing.entry(listed.row.state).or_insert(0usize) += 1;
        }
        assert_eq!(counted, by_listing);
        assert_eq!(
            counted.into_iter().collect::<Vec<_>>(),
            [
                (OrderState::Open, 3),
                (OrderState::Claimed, 2),
                (OrderState::Cancelled, 1)
            ]
        );
        session.save().unwrap();
    }
}

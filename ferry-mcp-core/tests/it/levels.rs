//! Levels and `authorize`: the table of `seeds/MCP.md` ("What an agent may do") and the
//! conditions that refuse an operation (paused, unseated, locked, expired, out of scope).

use ferry_mcp_core::channel::home::KeyHolder;
use ferry_mcp_core::channel::levels::{Level, Operation, Refusal};
use ferry_mcp_core::channel::ops::{self, GrantRequest, OpsError};
use ferry_mcp_core::time::Timestamp;
use ferry_mcp_testkit::temp_channel::{TEST_SEAL_COST, TempChannel};

fn may(temp: &TempChannel, name: &str, op: Operation) -> Result<Level, Refusal> {
    may_in(temp, name, op, None)
}

fn may_in(
    temp: &TempChannel,
    name: &str,
    op: Operation,
    scope: Option<&str>,
) -> Result<Level, Refusal> {
    let view = temp.view();
    match ops::authorize(
        temp.home(),
        &view,
        &TempChannel::agent(name),
        op,
        scope,
        temp.now(),
    ) {
        Ok(level) => Ok(level),
        Err(OpsError::Refused(refusal)) => Err(refusal),
        Err(other) => panic!("not a refusal: {other}"),
    }
}

fn grant(
    temp: &TempChannel,
    name: &str,
    level: Level,
    scopes: &[&str],
    expires: Option<Timestamp>,
) {
    let request = GrantRequest {
        level,
        scopes: scopes.iter().map(|s| (*s).to_owned()).collect(),
        expires,
        key: None,
    };
    ops::access_set(
        temp.home(),
        temp.project(),
        &TempChannel::agent(name),
        &request,
        temp.now(),
    )
    .unwrap();
}

/// `seeds/MCP.md`, "What an agent may do": (operation, worker, member, orchestrator).
/// The level an operation needs is the lowest whose column says yes.
const TABLE: [(Operation, bool, bool, bool); 11] = [
    (Operation::Read, true, true, true),
    (Operation::HandIn, true, true, true),
    (Operation::Ask, true, true, true),
    (Operation::Claim, false, true, true),
    (Operation::Progress, false, true, true),
    (Operation::Submit, false, true, true),
    (Operation::Post, false, true, true),
    (Operation::Review, false, false, true),
    (Operation::TakeOver, false, false, true),
    (Operation::ApplyUpdate, false, false, true),
    (Operation::Approve, false, false, false),
];

#[test]
fn the_level_table_of_the_mcp_page_holds_for_every_operation_and_level() {
    let temp = TempChannel::with_each_level();
    assert_eq!(
        TABLE.len(),
        Operation::ALL.len(),
        "every operation is in the table"
    );
    for (op, worker, member, orchestrator) in TABLE {
        for (name, level, allowed) in [
            ("worker", Level::Worker, worker),
            ("member", Level::Member, member),
            ("orchestrator", Level::Orchestrator, orchestrator),
        ] {
            let answer = may(&temp, name, op);
            let lowest = [worker, member, orchestrator]
                .iter()
                .position(|yes| *yes)
                .map(|at| Level::ALL[at]);
            if allowed {
                assert_eq!(answer, Ok(level), "{name} may {op}");
            } else if op == Operation::Approve {
                assert_eq!(answer, Err(Refusal::MasterOnly { operation: op }));
            } else {
                match answer {
                    Err(Refusal::MissingLevel {
                        needed,
                        has,
                        operation,
                        agent,
                    }) => {
                        assert_eq!(Some(needed), lowest, "{name} {op}");
                        assert_eq!((has, operation), (level, op));
                        assert_eq!(agent.as_str(), name);
                    }
                    other => panic!("{name} {op}: {other:?}"),
                }
            }
        }
    }
}

#[test]
fn a_worker_cannot_post_and_the_refusal_names_the_missing_level() {
    let temp = TempChannel::with_each_level();
    let refusal = may(&temp, "worker", Operation::Post).unwrap_err();
    assert_eq!(refusal.to_string(), "post needs member; worker is worker");
}

#[test]
fn writes_are_refused_while_the_machine_is_paused_and_reads_are_not() {
    let temp = TempChannel::with_each_level();
    ops::pause(temp.home(), "release freeze", temp.now()).unwrap();
    assert_eq!(may(&temp, "member", Operation::Read), Ok(Level::Member));
    for op in [
        Operation::HandIn,
        Operation::Claim,
        Operation::Post,
        Operation::Ask,
    ] {
        assert!(
            matches!(may(&temp, "member", op), Err(Refusal::Paused { reason, .. }) if reason == "release freeze"),
            "{op}"
        );
    }
    ops::resume(temp.home()).unwrap();
    assert_eq!(may(&temp, "member", Operation::Post), Ok(Level::Member));
}

#[test]
fn an_orchestrator_cannot_take_over_on_a_paused_machine() {
    let temp = TempChannel::with_each_level();
    assert_eq!(
        may(&temp, "orchestrator", Operation::TakeOver),
        Ok(Level::Orchestrator)
    );
    ops::pause(temp.home(), "", temp.now()).unwrap();
    assert_eq!(
        may(&temp, "orchestrator", Operation::TakeOver),
        Err(Refusal::Paused {
            operation: Operation::TakeOver,
            reason: "no reason given".into()
        })
    );
}

#[test]
fn an_agent_never_seated_is_refused_as_unseated() {
    let temp = TempChannel::with_each_level();
    assert!(matches!(
        may(&temp, "stranger", Operation::Read),
        Err(Refusal::Unseated { .. })
    ));
}

#[test]
fn an_agent_whose_key_is_not_on_this_machine_is_unseated() {
    let temp = TempChannel::with_each_level();
    std::fs::remove_file(temp.home_dir().join("projects/demo/keys/member.key")).unwrap();
    let refusal = may(&temp, "member", Operation::Read).unwrap_err();
    assert!(matches!(refusal, Refusal::Unseated { .. }), "{refusal:?}");
}

#[test]
fn a_sealed_key_without_an_unlock_is_refused_as_locked() {
    let temp = TempChannel::with_each_level();
    let holder = KeyHolder::Agent(TempChannel::agent("member"));
    temp.home()
        .seal_key(temp.project(), &holder, b"pw", TEST_SEAL_COST)
        .unwrap();
    assert_eq!(
        may(&temp, "member", Operation::Read),
        Err(Refusal::Locked {
            agent: TempChannel::agent("member"),
            project: temp.project().clone(),
        })
    );
    temp.home()
        .unlock_key(temp.project(), &holder, b"pw", None)
        .unwrap();
    assert_eq!(may(&temp, "member", Operation::Claim), Ok(Level::Member));
}

#[test]
fn an_expired_grant_leaves_a_worker_and_the_refusal_says_it_expired() {
    let temp = TempChannel::with_each_level();
    let expires = Timestamp::from_millis(temp.now().as_millis() + 60_000);
    grant(&temp, "worker", Level::Member, &[], Some(expires));
    assert_eq!(may(&temp, "worker", Operation::Claim), Ok(Level::Member));
    temp.clock().advance_secs(61);
    assert!(matches!(
        may(&temp, "worker", Operation::Claim),
        Err(Refusal::Expired {
            granted: Level::Member,
            ..
        })
    ));
    assert_eq!(may(&temp, "worker", Operation::HandIn), Ok(Level::Worker));
}

#[test]
fn a_scoped_grant_counts_only_inside_its_scopes() {
    let temp = TempChannel::with_each_level();
    grant(&temp, "worker", Level::Member, &["docs"], None);
    assert_eq!(
        may_in(&temp, "worker", Operation::Claim, Some("docs")),
        Ok(Level::Member)
    );
    assert!(matches!(
        may_in(&temp, "worker", Operation::Claim, Some("backend")),
        Err(Refusal::OutOfScope { scope, .. }) if scope == "backend"
    ));
    assert!(matches!(
        may(&temp, "worker", Operation::Claim),
        Err(Refusal::OutOfScope { .. })
    ));
}

#[test]
fn a_later_grant_supersedes_an_earlier_one() {
    let temp = TempChannel::with_each_level();
    grant(&temp, "orchestrator", Level::Worker, &[], None);
    assert!(matches!(
        may(&temp, "orchestrator", Operation::Review),
        Err(Refusal::MissingLevel {
            has: Level::Worker,
            ..
        })
    ));
    grant(&temp, "orchestrator", Level::Orchestrator, &[], None);
    assert_eq!(
        may(&temp, "orchestrator", Operation::Review),
        Ok(Level::Orchestrator)
    );
}

#[test]
fn every_refusal_names_the_missing_level_scope_or_condition() {
    let temp = TempChannel::with_each_level();
    let mut said = Vec::new();
    let mut refuse = |name: &str, op: Operation, scope: Option<&str>| {
        said.push(may_in(&temp, name, op, scope).unwrap_err().to_string());
    };
    refuse("stranger", Operation::Read, None);
    refuse("worker", Operation::Post, None);
    refuse("member", Operation::TakeOver, None);
    refuse("orchestrator", Operation::Approve, None);
    grant(&temp, "worker", Level::Member, &["docs"], None);
    refuse("worker", Operation::Claim, Some("backend"));
    let soon = Timestamp::from_millis(temp.now().as_millis() + 1_000);
    grant(&temp, "member", Level::Orchestrator, &[], Some(soon));
    temp.clock().advance_secs(2);
    refuse("member", Operation::Review, None);
    ops::pause(temp.home(), "release freeze", temp.now()).unwrap();
    refuse("orchestrator", Operation::TakeOver, None);
    ops::resume(temp.home()).unwrap();
    let holder = KeyHolder::Agent(TempChannel::agent("orchestrator"));
    temp.home()
        .seal_key(temp.project(), &holder, b"pw", TEST_SEAL_COST)
        .unwrap();
    refuse("orchestrator", Operation::Read, None);
    std::fs::remove_file(temp.home_dir().join("projects/demo/keys/orchestrator.key")).unwrap();
    refuse("orchestrator", Operation::Read, None);
    insta::assert_snapshot!(said.join("\n"), @r"
    stranger is not seated: no key for it on this machine (run `ferry channel join --as stranger --project demo`)
    post needs member; worker is worker
    take over needs orchestrator; member is member
    only the human (master key) may approve
    claim needs member in scope backend; worker's grant covers docs
    review needs orchestrator; member's orchestrator grant expired
    the machine is paused (release freeze): take over is refused until `ferry resume`
    orchestrator's key is locked: run `ferry key unlock --as orchestrator --project demo`
    orchestrator is not seated: no key for it on this machine (run `ferry channel join --as orchestrator --project demo`)
    ");
}

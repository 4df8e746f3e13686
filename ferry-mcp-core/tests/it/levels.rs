//! Levels and `authorize`: the level table of `docs/identity.md` (read from the page itself)
//! and the conditions that refuse an operation (paused, unseated, locked, expired, out of scope).

use ferry_mcp_core::channel::fold::levels::{Level, Operation, Refusal, Requirement};
use ferry_mcp_core::channel::machine::home::KeyHolder;
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
    let session = temp.agent_session(name);
    match session.authorize(op, scope, temp.now()) {
        Ok(level) => Ok(level.expect("an agent acts at a level")),
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

/// The page whose level table the code must keep.
const IDENTITY_PAGE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../docs/identity.md");

/// The header of the level table under "## Levels".
const TABLE_HEADER: &str = "| operation | worker | member | orchestrator |";

/// One cell of a level column: `yes`, empty, or `(master only)`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Cell {
    Yes,
    No,
    MasterOnly,
}

/// The level table of `docs/identity.md`, "## Levels": each operation it names (an operation's
/// `as_str`, optionally followed by a gloss in parentheses) with the requirement its row states.
/// Panics on a row, cell or name it cannot read, and on an operation named twice.
fn documented_table(page: &str) -> Vec<(Operation, Requirement)> {
    let levels = page
        .split("\n## ")
        .find(|section| section.starts_with("Levels\n"))
        .expect("docs/identity.md has a \"## Levels\" section");
    let mut lines = levels
        .lines()
        .skip_while(|line| line.trim() != TABLE_HEADER);
    assert!(
        lines.next().is_some(),
        "no `{TABLE_HEADER}` table under ## Levels"
    );
    let rule = lines.next().unwrap_or_default();
    assert!(rule.starts_with("|---"), "no rule under the header: {rule}");
    let mut table: Vec<(Operation, Requirement)> = Vec::new();
    for row in lines.take_while(|line| line.starts_with('|')) {
        let cells: Vec<&str> = row
            .trim()
            .trim_matches('|')
            .split('|')
            .map(str::trim)
            .collect();
        let [names, columns @ ..] = cells.as_slice() else {
            panic!("empty row: {row}");
        };
        assert_eq!(columns.len(), 3, "a row needs 3 level columns: {row}");
        let columns: Vec<Cell> = columns
            .iter()
            .map(|cell| match *cell {
                "yes" => Cell::Yes,
                "" => Cell::No,
                "(master only)" => Cell::MasterOnly,
                other => panic!("unreadable cell {other:?} in: {row}"),
            })
            .collect();
        let requirement = requirement_of(&columns, row);
        for name in names.split(',').map(str::trim) {
            let bare = name.split(" (").next().unwrap_or(name);
            let op = Operation::ALL
                .into_iter()
                .find(|op| op.as_str() == bare)
                .unwrap_or_else(|| panic!("the table names an unknown operation {name:?}"));
            assert!(
                table.iter().all(|(seen, _)| *seen != op),
                "the table names {op} twice"
            );
            table.push((op, requirement));
        }
    }
    table
}

/// The requirement a row's three columns state: the lowest level whose column says yes (every
/// higher one must too), or the master alone.
fn requirement_of(columns: &[Cell], row: &str) -> Requirement {
    if columns.contains(&Cell::MasterOnly) {
        assert_eq!(columns, [Cell::No, Cell::No, Cell::MasterOnly], "{row}");
        return Requirement::Master;
    }
    let lowest = columns
        .iter()
        .position(|cell| *cell == Cell::Yes)
        .unwrap_or_else(|| panic!("no level may: {row}"));
    assert!(
        columns[lowest..].iter().all(|cell| *cell == Cell::Yes),
        "a higher level may not what a lower may: {row}"
    );
    Requirement::AtLeast(Level::ALL[lowest])
}

fn identity_page() -> String {
    std::fs::read_to_string(IDENTITY_PAGE).unwrap()
}

#[test]
fn the_level_table_of_docs_identity_md_is_what_every_operation_requires() {
    let table = documented_table(&identity_page());
    for op in Operation::ALL {
        let row = table.iter().find(|(named, _)| *named == op);
        let Some((_, documented)) = row else {
            panic!("docs/identity.md has no row for {op}");
        };
        assert_eq!(*documented, op.requirement(), "{op}");
    }
    assert_eq!(table.len(), Operation::ALL.len(), "{table:?}");
}

#[test]
fn the_level_table_reader_refuses_a_missing_extra_or_unreadable_row() {
    let page = identity_page();
    let reads = |page: String| std::panic::catch_unwind(|| documented_table(&page));
    assert!(reads(page.clone()).is_ok());
    let missing = page.replace(
        "| review, issue orders, hand back an order, take over, apply updates |",
        "| review, issue orders, hand back an order, take over |",
    );
    assert!(
        reads(missing)
            .unwrap()
            .iter()
            .all(|(op, _)| *op != Operation::ApplyUpdate)
    );
    let extra = page.replace("| claim, progress,", "| claim, fly, progress,");
    assert!(reads(extra).is_err());
    let twice = page.replace("| claim, progress,", "| claim, read, progress,");
    assert!(reads(twice).is_err());
    let unreadable = page.replace(
        "| read, hand in, ask (the human), stand by, release the primary role | yes |",
        "| read, hand in, ask (the human), stand by, release the primary role | maybe |",
    );
    assert!(reads(unreadable).is_err());
    let different = page.replace(
        "| claim, progress, submit, post | | yes | yes |",
        "| claim, progress, submit, post | yes | yes | yes |",
    );
    let table = reads(different).unwrap();
    assert!(table.contains(&(Operation::Post, Requirement::AtLeast(Level::Worker))));
}

#[test]
fn the_level_table_of_docs_identity_md_holds_for_every_operation_and_level() {
    let temp = TempChannel::with_each_level();
    for (op, requirement) in documented_table(&identity_page()) {
        let lowest = match requirement {
            Requirement::AtLeast(level) => Some(level),
            Requirement::Master => None,
        };
        for (at, (name, level)) in [
            ("worker", Level::Worker),
            ("member", Level::Member),
            ("orchestrator", Level::Orchestrator),
        ]
        .into_iter()
        .enumerate()
        {
            let answer = may(&temp, name, op);
            let allowed = lowest
                .is_some_and(|lowest| Level::ALL.iter().position(|l| *l == lowest).unwrap() <= at);
            if allowed {
                assert_eq!(answer, Ok(level), "{name} may {op}");
            } else if lowest.is_none() {
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
        Err(Refusal::OutOfScope { scope: Some(scope), .. }) if scope == "backend"
    ));
    assert!(matches!(
        may(&temp, "worker", Operation::Claim),
        Err(Refusal::OutOfScope { scope: None, .. })
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
    // As a person or an agent reads it: the refusal, and the command that fixes it.
    let mut refuse = |name: &str, op: Operation, scope: Option<&str>| {
        let refusal = may_in(&temp, name, op, scope).unwrap_err();
        let text = refusal.to_string();
        said.push(refusal.fix().map_or(text.clone(), |fix| fix.with(&text)));
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
    orchestrator is not seated: no key for it on this machine (its seat's key is on another machine, where it writes; reading needs none)
    ");
}

//! Orders through `channel::ops::orders`: the permission matrix (who may do what, in which
//! condition), a claim race between two machines (ADR 0006), the lifecycle of an order, `since`
//! cursors (ADR 0007) and authority over time (ADR 0005).

use std::fmt::Write as _;
use std::fs;
use std::path::{Path, PathBuf};

use ferry_mcp_core::channel::fold::levels::Level;
use ferry_mcp_core::channel::fold::state::orders::{OrderState, Verdict, kinds};
use ferry_mcp_core::channel::fold::state::race::tiebreak;
use ferry_mcp_core::channel::fold::state::{EntryId, SEEN_FIELD};
use ferry_mcp_core::channel::log::names::AgentName;
use ferry_mcp_core::channel::machine::home::{Home, KeyHolder};
use ferry_mcp_core::channel::ops::orders::{
    self, ClaimOutcome, IssueRequest, ListRequest, OrderDetail, SubmitRequest,
};
use ferry_mcp_core::channel::ops::{self, GrantRequest, OperationError};
use ferry_mcp_core::channel::session::{Actor, Session};
use ferry_mcp_testkit::temp_channel::{TEST_SEAL_COST, TempChannel};
use serde_json::json;

const PASSPHRASE: &[u8] = b"correct horse";

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

fn grant(temp: &TempChannel, name: &str, level: Level) {
    let request = GrantRequest {
        level,
        scopes: Vec::new(),
        expires: None,
        key: None,
    };
    ops::access_set(
        temp.home(),
        temp.project(),
        &agent(name),
        &request,
        temp.now(),
    )
    .unwrap();
}

fn issue_with(temp: &TempChannel, request: &IssueRequest) -> String {
    let mut master = temp.master_session();
    orders::issue(&mut master, request, temp.now()).unwrap()
}

/// An open order issued by the master.
fn issue(temp: &TempChannel, title: &str) -> String {
    issue_with(
        temp,
        &IssueRequest {
            title: title.into(),
            ..IssueRequest::default()
        },
    )
}

/// An open order whose submissions need a review.
fn issue_reviewed(temp: &TempChannel, title: &str) -> String {
    issue_with(
        temp,
        &IssueRequest {
            title: title.into(),
            review: true,
            ..IssueRequest::default()
        },
    )
}

fn claim(temp: &TempChannel, name: &str, id: &str) {
    let outcome = orders::claim(&mut temp.agent_session(name), id, temp.now()).unwrap();
    assert_eq!(
        outcome,
        ClaimOutcome::Claimed {
            id: id.into(),
            state: OrderState::Claimed,
        }
    );
}

fn submit_request(summary: &str) -> SubmitRequest {
    SubmitRequest {
        handin: None,
        git_ref: Some("feature/work".into()),
        summary: summary.into(),
    }
}

fn submit(temp: &TempChannel, name: &str, id: &str) -> OrderState {
    orders::submit(
        &mut temp.agent_session(name),
        id,
        &submit_request("done"),
        temp.now(),
    )
    .unwrap()
}

fn show(temp: &TempChannel, id: &str) -> OrderDetail {
    orders::show(&mut temp.view(), id, None, temp.now()).unwrap()
}

fn list(
    session: &mut Session,
    since: Option<&str>,
    now: ferry_mcp_core::time::Timestamp,
) -> orders::OrderList {
    let request = ListRequest {
        all: false,
        since: since.map(str::to_owned),
        limit: usize::MAX,
    };
    orders::list(session, &request, now).unwrap()
}

fn ids(list: &orders::OrderList) -> Vec<String> {
    list.rows
        .iter()
        .map(|listed| listed.row.id.clone())
        .collect()
}

/// How many entries the log of `author` (signed by `key`) holds.
fn log_lines(temp: &TempChannel, author: &AgentName, holder: &KeyHolder) -> usize {
    let key = temp
        .home()
        .load_key(temp.project(), holder, temp.now())
        .unwrap()
        .public_key();
    let path = temp.view().channel().log_path(author, &key);
    fs::read_to_string(path).map_or(0, |text| text.lines().count())
}

// ---- the permission matrix ----

/// Who acts in a row of the matrix.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Who {
    Worker,
    Member,
    Orchestrator,
    Master,
    /// An agent name that never joined.
    Ghost,
}

impl Who {
    fn name(self) -> &'static str {
        match self {
            Who::Worker => "worker",
            Who::Member => "member",
            Who::Orchestrator => "orchestrator",
            Who::Master => "master",
            Who::Ghost => "ghost",
        }
    }

    fn actor(self) -> Actor {
        match self {
            Who::Master => Actor::Master,
            other => actor(other.name()),
        }
    }

    fn key_holder(self) -> KeyHolder {
        match self {
            Who::Master => KeyHolder::Master,
            other => KeyHolder::Agent(agent(other.name())),
        }
    }

    /// Whether it can be made to hold an order (the "own" columns).
    fn can_hold(self) -> bool {
        matches!(self, Who::Worker | Who::Member | Who::Orchestrator)
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Condition {
    Normal,
    /// `ops::pause` on this machine.
    Paused,
    /// A sealed key without an unlocked copy.
    Locked,
    /// The agent never joined; for the master: no master key on this machine.
    Unseated,
}

impl Condition {
    fn name(self) -> &'static str {
        match self {
            Condition::Normal => "normal",
            Condition::Paused => "paused",
            Condition::Locked => "locked",
            Condition::Unseated => "unseated",
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Op {
    Issue,
    List,
    Show,
    Claim,
    ReleaseOwn,
    HandBack,
    Progress,
    HandIn,
    Submit,
    Review,
    ReviewOwn,
    Cancel,
}

impl Op {
    const ALL: [Op; 12] = [
        Op::Issue,
        Op::List,
        Op::Show,
        Op::Claim,
        Op::ReleaseOwn,
        Op::HandBack,
        Op::Progress,
        Op::HandIn,
        Op::Submit,
        Op::Review,
        Op::ReviewOwn,
        Op::Cancel,
    ];

    fn header(self) -> &'static str {
        match self {
            Op::Issue => "issue",
            Op::List => "list",
            Op::Show => "show",
            Op::Claim => "claim",
            Op::ReleaseOwn => "release-own",
            Op::HandBack => "hand-back",
            Op::Progress => "progress",
            Op::HandIn => "hand-in",
            Op::Submit => "submit",
            Op::Review => "review",
            Op::ReviewOwn => "review-own",
            Op::Cancel => "cancel",
        }
    }
}

/// What a cell expects: an outcome (`ok`, `void`: it returned but nothing counts on the board,
/// or an error code), `n/a` (the master and an unseated name hold nothing of their own), or a
/// known bug: what happens now, checked so that a fix shows up here.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Expect {
    Is(&'static str),
    Na,
}

use Expect::{Is, Na};

const OK: Expect = Is("ok");
const AGENTS: Expect = Is("agents_only");
const LEVEL: Expect = Is("missing_level");
const PAUSED: Expect = Is("paused");
const LOCKED: Expect = Is("locked");
const UNSEATED: Expect = Is("unseated");
const NO_MASTER: Expect = Is("not_the_master");
const MASTER_ONLY: Expect = Is("master_only");
const OWN: Expect = Is("own_submission");
const NOT_HOLDER: Expect = Is("not_holder");

/// The matrix: (who, condition) -> the expected outcome of each column of [`Op::ALL`].
///
/// Order of checks it shows (ADR 0005, `levels::authorize`): the operation's own checks on the
/// board come first (cancel is the master's; a submission's author does not review it; only the
/// holder reports progress or submits), then the seat, the key, the pause (reading goes on while
/// paused), then the level. The master is no agent: the pause does not stop it, and it needs its
/// key on this machine even to read.
#[rustfmt::skip]
const MATRIX: &[(Who, Condition, [Expect; 12])] = &[
    //                                  issue      list      show      claim     release-own hand-back progress    hand-in   submit      review    review-own cancel
    // A demoted holder gives its own order back at any level (the fold accepts it).
    (Who::Worker, Condition::Normal,   [LEVEL,     OK,       OK,       LEVEL,    OK,         LEVEL,    LEVEL,      OK,       LEVEL,      LEVEL,    OWN,       MASTER_ONLY]),
    (Who::Worker, Condition::Paused,   [PAUSED,    OK,       OK,       PAUSED,   PAUSED,     PAUSED,   PAUSED,     PAUSED,   PAUSED,     PAUSED,   OWN,       MASTER_ONLY]),
    (Who::Worker, Condition::Locked,   [LOCKED,    LOCKED,   LOCKED,   LOCKED,   LOCKED,     LOCKED,   LOCKED,     LOCKED,   LOCKED,     LOCKED,   OWN,       MASTER_ONLY]),
    (Who::Member, Condition::Normal,   [LEVEL,     OK,       OK,       OK,       OK,         LEVEL,    OK,         OK,       OK,         LEVEL,    OWN,       MASTER_ONLY]),
    (Who::Member, Condition::Paused,   [PAUSED,    OK,       OK,       PAUSED,   PAUSED,     PAUSED,   PAUSED,     PAUSED,   PAUSED,     PAUSED,   OWN,       MASTER_ONLY]),
    (Who::Member, Condition::Locked,   [LOCKED,    LOCKED,   LOCKED,   LOCKED,   LOCKED,     LOCKED,   LOCKED,     LOCKED,   LOCKED,     LOCKED,   OWN,       MASTER_ONLY]),
    (Who::Orchestrator, Condition::Normal, [OK,    OK,       OK,       OK,       OK,         OK,       OK,         OK,       OK,         OK,       OWN,       MASTER_ONLY]),
    (Who::Orchestrator, Condition::Paused, [PAUSED, OK,      OK,       PAUSED,   PAUSED,     PAUSED,   PAUSED,     PAUSED,   PAUSED,     PAUSED,   OWN,       MASTER_ONLY]),
    (Who::Orchestrator, Condition::Locked, [LOCKED, LOCKED,  LOCKED,   LOCKED,   LOCKED,     LOCKED,   LOCKED,     LOCKED,   LOCKED,     LOCKED,   OWN,       MASTER_ONLY]),
    (Who::Ghost,  Condition::Unseated, [UNSEATED,  UNSEATED, UNSEATED, UNSEATED, Na,         UNSEATED, NOT_HOLDER, UNSEATED, NOT_HOLDER, UNSEATED, Na,        MASTER_ONLY]),
    // The master's claim and hand-in are refused before anything is written (tests below).
    (Who::Master, Condition::Normal,   [OK,        OK,       OK,       AGENTS, Na,   OK,       NOT_HOLDER, AGENTS, NOT_HOLDER, OK,    Na,        OK]),
    (Who::Master, Condition::Paused,   [OK,        OK,       OK,       AGENTS, Na,   OK,       NOT_HOLDER, AGENTS, NOT_HOLDER, OK,    Na,        OK]),
    // Reading as the human needs only that the master key is here, sealed or not (ADR 0017).
    (Who::Master, Condition::Locked,   [LOCKED,    OK,       OK,       AGENTS,   Na,         LOCKED,   NOT_HOLDER, AGENTS,   NOT_HOLDER, LOCKED,   Na,        LOCKED]),
    (Who::Master, Condition::Unseated, [NO_MASTER, NO_MASTER, NO_MASTER, AGENTS, Na,         NO_MASTER, NOT_HOLDER, AGENTS, NOT_HOLDER, NO_MASTER, Na,     NO_MASTER]),
];

/// One row's channel: the row's actor, and `holder`, a Member who holds other agents' orders.
struct Row {
    temp: TempChannel,
    who: Who,
    condition: Condition,
}

impl Row {
    fn new(who: Who, condition: Condition) -> Self {
        let temp = TempChannel::builder()
            .agent("worker", Level::Worker)
            .agent("member", Level::Member)
            .agent("orchestrator", Level::Orchestrator)
            .agent("holder", Level::Member)
            .build()
            .unwrap();
        if condition == Condition::Locked && who != Who::Master {
            temp.home()
                .seal_key(
                    temp.project(),
                    &who.key_holder(),
                    PASSPHRASE,
                    TEST_SEAL_COST,
                )
                .unwrap();
            self_unlock(&temp, who);
        }
        Self {
            temp,
            who,
            condition,
        }
    }

    /// Makes the row's actor hold a fresh order (submitted, when `submitted`): a Worker is
    /// made a Member for it and a Worker again after.
    fn held_by_actor(&self, submitted: bool) -> String {
        let temp = &self.temp;
        let name = self.who.name();
        let id = if submitted {
            issue_reviewed(temp, "own work")
        } else {
            issue(temp, "own work")
        };
        if self.who == Who::Worker {
            grant(temp, name, Level::Member);
        }
        claim(temp, name, &id);
        if submitted {
            assert_eq!(submit(temp, name, &id), OrderState::Submitted);
        }
        if self.who == Who::Worker {
            grant(temp, name, Level::Worker);
        }
        id
    }

    /// A fresh order held by `holder` (submitted, when `submitted`).
    fn held_by_holder(&self, submitted: bool) -> String {
        let temp = &self.temp;
        let id = if submitted {
            issue_reviewed(temp, "their work")
        } else {
            issue(temp, "their work")
        };
        claim(temp, "holder", &id);
        if submitted {
            assert_eq!(submit(temp, "holder", &id), OrderState::Submitted);
        }
        id
    }

    /// The order a cell acts on, built before the condition holds.
    fn prepare(&self, op: Op) -> Option<String> {
        let own = self.who.can_hold();
        Some(match op {
            Op::Issue => String::new(),
            Op::List | Op::Show | Op::Claim | Op::HandIn | Op::Cancel => issue(&self.temp, "open"),
            Op::ReleaseOwn | Op::ReviewOwn if !own => return None,
            Op::ReleaseOwn | Op::Progress | Op::Submit if own => self.held_by_actor(false),
            Op::ReleaseOwn | Op::Progress | Op::Submit | Op::HandBack => self.held_by_holder(false),
            Op::ReviewOwn => self.held_by_actor(true),
            Op::Review => self.held_by_holder(true),
        })
    }

    fn begin_condition(&self) {
        let temp = &self.temp;
        match self.condition {
            Condition::Normal => {}
            Condition::Paused => ops::pause(temp.home(), "matrix", temp.now()).unwrap(),
            Condition::Locked => self_lock(temp, self.who),
            Condition::Unseated if self.who == Who::Master => {
                fs::rename(
                    master_key_path(temp),
                    master_key_path(temp).with_extension("away"),
                )
                .unwrap();
            }
            Condition::Unseated => {}
        }
    }

    fn end_condition(&self) {
        let temp = &self.temp;
        match self.condition {
            Condition::Normal => {}
            Condition::Paused => assert!(ops::resume(temp.home()).unwrap()),
            Condition::Locked => self_unlock(temp, self.who),
            Condition::Unseated if self.who == Who::Master => {
                fs::rename(
                    master_key_path(temp).with_extension("away"),
                    master_key_path(temp),
                )
                .unwrap();
            }
            Condition::Unseated => {}
        }
    }

    /// Runs one cell on fresh state: its outcome, `void` when the operation returned but the
    /// board does not show its effect.
    fn run(&self, op: Op) -> &'static str {
        let Some(id) = self.prepare(op) else {
            return "n/a";
        };
        self.begin_condition();
        let temp = &self.temp;
        let now = temp.now();
        let mut session = temp.session(self.who.actor());
        let me = self.who.name();
        let done = |state: OrderState| show(temp, &id).row.state == state;
        let outcome = match op {
            Op::Issue => {
                let issued = orders::issue(
                    &mut session,
                    &IssueRequest {
                        title: "new".into(),
                        ..IssueRequest::default()
                    },
                    now,
                );
                effect(issued, |id| {
                    temp.view()
                        .board()
                        .unwrap()
                        .get(&id.parse().unwrap())
                        .is_some()
                })
            }
            Op::List => effect(
                orders::list(
                    &mut session,
                    &ListRequest {
                        limit: 100,
                        ..ListRequest::default()
                    },
                    now,
                ),
                |listed| ids(listed).contains(&id),
            ),
            Op::Show => effect(orders::show(&mut session, &id, None, now), |detail| {
                detail.row.id == id
            }),
            Op::Claim => effect(orders::claim(&mut session, &id, now), |_| {
                show(temp, &id).row.holder.as_ref().map(AgentName::as_str) == Some(me)
            }),
            Op::ReleaseOwn | Op::HandBack => {
                effect(orders::release(&mut session, &id, None, now), |_| {
                    done(OrderState::Open)
                })
            }
            Op::Progress => effect(orders::progress(&mut session, &id, "halfway", now), |_| {
                show(temp, &id).progress_lines == 1
            }),
            Op::HandIn => effect(
                orders::hand_in(&mut session, &id, "feature/x", "a start", now),
                |handin| show(temp, &id).handins.contains(handin),
            ),
            Op::Submit => effect(
                orders::submit(&mut session, &id, &submit_request("done"), now),
                |_| show(temp, &id).revision == 1,
            ),
            Op::Review | Op::ReviewOwn => effect(
                orders::review(&mut session, &id, Verdict::Accept, None, now),
                |_| done(OrderState::Accepted),
            ),
            Op::Cancel => effect(orders::cancel(&mut session, &id, None, now), |_| {
                done(OrderState::Cancelled)
            }),
        };
        drop(session);
        self.end_condition();
        outcome
    }
}

/// `ok` when the operation succeeded and `counts` sees its effect, `void` when it succeeded
/// without one, else the error's code.
fn effect<T, E: OperationError>(
    result: Result<T, E>,
    counts: impl FnOnce(&T) -> bool,
) -> &'static str {
    match &result {
        Ok(value) if counts(value) => "ok",
        Ok(_) => "void",
        Err(_) => code(&result),
    }
}

/// Opens the actor's sealed key for the row's setup: an agent's through its unlocked copy; the
/// master's, which is never unlocked to disk (ADR 0017), by putting its plain file back.
fn self_unlock(temp: &TempChannel, who: Who) {
    if who == Who::Master {
        fs::rename(plain_master_path(temp), master_key_path(temp)).unwrap();
        return;
    }
    temp.home()
        .unlock_key(temp.project(), &who.key_holder(), PASSPHRASE, None)
        .unwrap();
}

/// Locks the actor's key: an agent's unlocked copy removed; the master's plain file set aside
/// and the key sealed (no passphrase is given to the session: it stays shut).
fn self_lock(temp: &TempChannel, who: Who) {
    if who == Who::Master {
        fs::copy(master_key_path(temp), plain_master_path(temp)).unwrap();
        temp.home()
            .seal_key(
                temp.project(),
                &who.key_holder(),
                PASSPHRASE,
                TEST_SEAL_COST,
            )
            .unwrap();
        return;
    }
    assert!(
        temp.home()
            .lock_key(temp.project(), &who.key_holder())
            .unwrap()
    );
}

fn plain_master_path(temp: &TempChannel) -> PathBuf {
    master_key_path(temp).with_extension("plain")
}

fn master_key_path(temp: &TempChannel) -> PathBuf {
    temp.home_dir()
        .join("projects")
        .join(temp.project().as_str())
        .join("keys")
        .join("master.key")
}

#[test]
fn the_permission_matrix_of_every_order_operation() {
    const FIRST: usize = 24;
    const CELL: usize = 15;
    let mut table = format!("{:<FIRST$}", "actor / condition");
    for op in Op::ALL {
        let _ = write!(table, "{:<CELL$}", op.header());
    }
    eprintln!("{}", table.trim_end());
    let mut wrong = Vec::new();
    for (who, condition, expected) in MATRIX {
        let row = Row::new(*who, *condition);
        let mut line = format!(
            "{:<FIRST$}",
            format!("{} / {}", who.name(), condition.name())
        );
        for (op, expect) in Op::ALL.into_iter().zip(expected) {
            let got = row.run(op);
            let (want, mark) = match expect {
                Is(want) => (*want, ""),
                Na => ("n/a", ""),
            };
            let _ = write!(line, "{:<CELL$}", format!("{got}{mark}"));
            if got != want {
                wrong.push(format!(
                    "{} / {} {}: expected {want}, got {got}",
                    who.name(),
                    condition.name(),
                    op.header()
                ));
            }
        }
        eprintln!("{}", line.trim_end());
    }
    eprintln!(
        "ok: done and on the board; void: returned, but nothing counts; n/a: the master and an \
         unseated name hold nothing of their own"
    );
    assert!(wrong.is_empty(), "cells that differ:\n{}", wrong.join("\n"));
}

#[test]
fn the_masters_claim_is_refused_before_anything_is_written() {
    let temp = TempChannel::with_each_level();
    let id = issue(&temp, "open");
    let before = log_lines(&temp, &AgentName::master(), &KeyHolder::Master);
    let claimed = orders::claim(&mut temp.master_session(), &id, temp.now());
    assert!(claimed.is_err(), "{claimed:?}");
    assert_eq!(
        log_lines(&temp, &AgentName::master(), &KeyHolder::Master),
        before,
        "the refused claim was written to the master's log"
    );
}

#[test]
fn the_masters_hand_in_is_refused_before_anything_is_written() {
    let temp = TempChannel::with_each_level();
    let id = issue(&temp, "open");
    let before = log_lines(&temp, &AgentName::master(), &KeyHolder::Master);
    let handed = orders::hand_in(&mut temp.master_session(), &id, "main", "x", temp.now());
    assert!(handed.is_err(), "{handed:?}");
    assert_eq!(
        log_lines(&temp, &AgentName::master(), &KeyHolder::Master),
        before,
        "the refused hand-in was written to the master's log"
    );
}

// ---- a claim race between two machines ----

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

/// Moves `name`'s key file from machine `from` to machine `to` (keeping its 0600 mode).
fn move_key(from: &Home, to: &Home, project: &str, name: &str) {
    let keys = |home: &Home| home.root().join("projects").join(project).join("keys");
    let file = format!("{name}.key");
    fs::create_dir_all(keys(to)).unwrap();
    fs::copy(keys(from).join(&file), keys(to).join(&file)).unwrap();
    fs::remove_file(keys(from).join(&file)).unwrap();
}

#[test]
fn two_machines_claiming_one_order_unseen_agree_on_the_tie_break_winner() {
    let temp = TempChannel::builder()
        .agent("alice", Level::Member)
        .agent("bob", Level::Member)
        .build()
        .unwrap();
    let id = issue(&temp, "one order, two claimants");
    // The event both claims will follow: the order's issue.
    let contested = temp
        .view()
        .order(&id.parse().unwrap())
        .unwrap()
        .unwrap()
        .view()
        .tip;
    let now = temp.now();
    // Machine B: a synced copy of the channel, its own state folder, and bob's key (only there).
    let home_a = temp.home().clone();
    let channel_a = temp.channel_dir().to_owned();
    let home_b = Home::at(temp.root().join("home-b"));
    let channel_b = temp.root().join("channel-b");
    fs::create_dir_all(&channel_b).unwrap();
    sync_into(&channel_a, &channel_b);
    ops::add_existing(&home_b, temp.project(), &channel_b).unwrap();
    move_key(&home_a, &home_b, temp.project().as_str(), "bob");

    // Each claims on its own machine, seeing only its own claim: both win there.
    let alice_claim = orders::claim(
        &mut Session::open(&home_a, temp.project(), actor("alice"), now).unwrap(),
        &id,
        now,
    )
    .unwrap();
    let bob_claim = orders::claim(
        &mut Session::open(&home_b, temp.project(), actor("bob"), now).unwrap(),
        &id,
        now,
    )
    .unwrap();
    assert_eq!(
        alice_claim,
        ClaimOutcome::Claimed {
            id: id.clone(),
            state: OrderState::Claimed,
        }
    );
    assert_eq!(
        bob_claim,
        ClaimOutcome::Claimed {
            id: id.clone(),
            state: OrderState::Claimed,
        }
    );

    sync_into(&channel_a, &channel_b);
    sync_into(&channel_b, &channel_a);

    // Both claims name the issue as `after`: neither saw the other, so neither ranks first by
    // what was seen, and ADR 0017 orders them by SHA-256("ferry-race-v2\n" || the issue's hash
    // || roster key), lower first. The keys existed before the issue: no claimant could grind
    // a winning key.
    let mut session_a = Session::open(&home_a, temp.project(), actor("alice"), now).unwrap();
    let mut session_b = Session::open(&home_b, temp.project(), actor("bob"), now).unwrap();
    let key_of = |name: &str| *session_a.identity().holder(&agent(name)).unwrap();
    let (alice_key, bob_key) = (key_of("alice"), key_of("bob"));
    let (alice_rank, bob_rank) = (
        tiebreak(contested.as_bytes(), &alice_key),
        tiebreak(contested.as_bytes(), &bob_key),
    );
    let (winner, loser) = if alice_rank < bob_rank {
        ("alice", "bob")
    } else {
        ("bob", "alice")
    };
    let on_a = orders::show(&mut session_a, &id, None, now).unwrap();
    let on_b = orders::show(&mut session_b, &id, None, now).unwrap();
    for (machine, detail) in [("A", &on_a), ("B", &on_b)] {
        assert_eq!(
            detail.row.holder.as_ref().map(AgentName::as_str),
            Some(winner),
            "machine {machine}"
        );
        let lost: Vec<_> = detail
            .voided
            .iter()
            .filter(|void| void.lost_race())
            .collect();
        assert_eq!(lost.len(), 1, "machine {machine}: {:?}", detail.voided);
        assert_eq!(
            (lost[0].by.as_str(), lost[0].what.as_str()),
            (loser, "claim")
        );
        eprintln!(
            "machine {machine}: {id} is held by {winner}; {loser}'s claim {} does not count: {}",
            lost[0].id, lost[0].reason
        );
    }
    eprintln!(
        "tie-break of {id}: alice {}, bob {}: {winner}'s claim won (the lower)",
        hex::encode(&alice_rank[..6]),
        hex::encode(&bob_rank[..6]),
    );
    assert_eq!(on_a, on_b, "both machines fold the same order");

    // The loser, having now seen the winner's claim, cannot claim again: refused when writing.
    let mut loser_session = if loser == "alice" {
        session_a
    } else {
        session_b
    };
    let again = orders::claim(&mut loser_session, &id, now);
    assert_eq!(code(&again), "wrong_state", "{again:?}");
}

// ---- the lifecycle of an order ----

#[test]
fn an_offered_order_is_claimable_only_by_the_agent_it_is_offered_to() {
    let temp = TempChannel::builder()
        .agent("alice", Level::Member)
        .agent("bob", Level::Member)
        .build()
        .unwrap();
    let id = issue_with(
        &temp,
        &IssueRequest {
            title: "for bob".into(),
            to: Some(agent("bob")),
            ..IssueRequest::default()
        },
    );
    assert_eq!(show(&temp, &id).row.state, OrderState::Offered);
    let taken = orders::claim(&mut temp.agent_session("alice"), &id, temp.now());
    assert_eq!(code(&taken), "offered_to_another");
    assert_eq!(
        taken.unwrap_err().to_string(),
        format!("order {id} is offered to bob")
    );
    claim(&temp, "bob", &id);
    assert_eq!(show(&temp, &id).row.holder, Some(agent("bob")));
    // An order is offered only to a seated agent.
    let mut master = temp.master_session();
    let nobody = IssueRequest {
        title: "for nobody".into(),
        to: Some(agent("carol")),
        ..IssueRequest::default()
    };
    assert_eq!(
        code(&orders::issue(&mut master, &nobody, temp.now())),
        "not_seated"
    );
}

#[test]
fn a_progress_line_over_2_kb_is_refused_and_one_of_2_kb_counts() {
    let temp = TempChannel::with_each_level();
    let id = issue(&temp, "long story");
    claim(&temp, "member", &id);
    let mut member = temp.agent_session("member");
    // The limit is in bytes: 1,025 two-byte characters are over it.
    for long in ["x".repeat(2_049), "é".repeat(1_025)] {
        let refused = orders::progress(&mut member, &id, &long, temp.now());
        assert_eq!(code(&refused), "too_long");
        assert_eq!(
            refused.unwrap_err().to_string(),
            format!(
                "the progress line is {} bytes, the limit is 2048",
                long.len()
            )
        );
    }
    assert_eq!(show(&temp, &id).progress_lines, 0);
    orders::progress(&mut member, &id, &"x".repeat(2_048), temp.now()).unwrap();
    let detail = show(&temp, &id);
    assert_eq!(
        (detail.progress_lines, detail.row.state),
        (1, OrderState::InProgress)
    );
}

#[test]
fn a_summary_over_500_characters_is_refused_for_a_submission_and_a_hand_in() {
    let temp = TempChannel::with_each_level();
    let id = issue(&temp, "short summaries");
    claim(&temp, "member", &id);
    let mut member = temp.agent_session("member");
    let long = "é".repeat(501);
    let submitted = orders::submit(&mut member, &id, &submit_request(&long), temp.now());
    assert_eq!(code(&submitted), "too_long");
    assert_eq!(
        submitted.unwrap_err().to_string(),
        "the summary is 501 characters, the limit is 500"
    );
    let handed = orders::hand_in(&mut member, &id, "main", &long, temp.now());
    assert_eq!(code(&handed), "too_long");
    // Exactly 500 (multi-byte) characters is fine.
    let fits = "é".repeat(500);
    orders::submit(&mut member, &id, &submit_request(&fits), temp.now()).unwrap();
    assert_eq!(show(&temp, &id).submission.unwrap().summary, fits);
}

#[test]
fn changes_need_notes_and_the_holder_then_submits_revision_2() {
    let temp = TempChannel::with_each_level();
    let id = issue_reviewed(&temp, "twice");
    claim(&temp, "member", &id);
    assert_eq!(submit(&temp, "member", &id), OrderState::Submitted);
    assert_eq!(show(&temp, &id).revision, 1);
    let mut orchestrator = temp.agent_session("orchestrator");
    for notes in [None, Some(""), Some("  \n")] {
        let refused = orders::review(&mut orchestrator, &id, Verdict::Changes, notes, temp.now());
        assert_eq!(code(&refused), "empty", "{notes:?}");
    }
    let state = orders::review(
        &mut orchestrator,
        &id,
        Verdict::Changes,
        Some("tests are missing"),
        temp.now(),
    )
    .unwrap();
    assert_eq!(state, OrderState::ChangesRequested);
    let detail = show(&temp, &id);
    assert_eq!(
        detail.row.holder,
        Some(agent("member")),
        "the holder keeps it"
    );
    assert_eq!(
        detail.review_verdict.unwrap().notes.as_deref(),
        Some("tests are missing")
    );
    // The holder reports and submits again: revision 2, reviewed again.
    let mut member = temp.agent_session("member");
    orders::progress(&mut member, &id, "adding tests", temp.now()).unwrap();
    let again = SubmitRequest {
        git_ref: Some("feature/work-2".into()),
        ..submit_request("with tests")
    };
    assert_eq!(
        orders::submit(&mut member, &id, &again, temp.now()).unwrap(),
        OrderState::Submitted
    );
    let detail = show(&temp, &id);
    assert_eq!(detail.revision, 2);
    assert_eq!(
        detail.submission.unwrap().git_ref.as_deref(),
        Some("feature/work-2")
    );
    let state = orders::review(&mut orchestrator, &id, Verdict::Accept, None, temp.now()).unwrap();
    assert_eq!(state, OrderState::Accepted);
}

#[test]
fn an_orchestrator_does_not_review_its_own_submission_but_another_or_the_master_may() {
    let temp = TempChannel::builder()
        .agent("olga", Level::Orchestrator)
        .agent("oscar", Level::Orchestrator)
        .build()
        .unwrap();
    let first = issue_reviewed(&temp, "olga's");
    let second = issue_reviewed(&temp, "olga's too");
    for id in [&first, &second] {
        claim(&temp, "olga", id);
        assert_eq!(submit(&temp, "olga", id), OrderState::Submitted);
    }
    let own = orders::review(
        &mut temp.agent_session("olga"),
        &first,
        Verdict::Accept,
        None,
        temp.now(),
    );
    assert_eq!(code(&own), "own_submission");
    assert_eq!(
        own.unwrap_err().to_string(),
        "olga submitted this revision and cannot review it"
    );
    assert_eq!(show(&temp, &first).row.state, OrderState::Submitted);
    let by_oscar = orders::review(
        &mut temp.agent_session("oscar"),
        &first,
        Verdict::Accept,
        None,
        temp.now(),
    );
    assert_eq!(by_oscar.unwrap(), OrderState::Accepted);
    let by_master = orders::review(
        &mut temp.master_session(),
        &second,
        Verdict::Changes,
        Some("one more thing"),
        temp.now(),
    );
    assert_eq!(by_master.unwrap(), OrderState::ChangesRequested);
    assert_eq!(
        show(&temp, &second).review_verdict.unwrap().by,
        AgentName::master()
    );
}

#[test]
fn only_the_master_cancels_an_order_and_a_done_order_stays_done() {
    let temp = TempChannel::with_each_level();
    let id = issue(&temp, "maybe not");
    claim(&temp, "member", &id);
    let refused = orders::cancel(
        &mut temp.agent_session("orchestrator"),
        &id,
        None,
        temp.now(),
    );
    assert_eq!(code(&refused), "master_only");
    orders::cancel(
        &mut temp.master_session(),
        &id,
        Some("not needed"),
        temp.now(),
    )
    .unwrap();
    let detail = show(&temp, &id);
    assert_eq!(
        (detail.row.state, detail.row.holder),
        (OrderState::Cancelled, None)
    );
    let again = orders::cancel(&mut temp.master_session(), &id, None, temp.now());
    assert_eq!(code(&again), "wrong_state");
    let claimed = orders::claim(&mut temp.agent_session("member"), &id, temp.now());
    assert_eq!(code(&claimed), "wrong_state");
}

#[test]
fn a_workers_hand_in_counts_and_the_holder_submits_it_by_its_id() {
    let temp = TempChannel::with_each_level();
    let id = issue_reviewed(&temp, "team work");
    claim(&temp, "member", &id);
    let handin = orders::hand_in(
        &mut temp.agent_session("worker"),
        &id,
        "worker/part",
        "the parser",
        temp.now(),
    )
    .unwrap();
    assert!(handin.starts_with("worker-"), "{handin}");
    assert_eq!(show(&temp, &id).handins, vec![handin.clone()]);
    // A hand-in is no work content: one word of a ref.
    let content = orders::hand_in(
        &mut temp.agent_session("worker"),
        &id,
        "fn main() {}",
        "code",
        temp.now(),
    );
    assert_eq!(code(&content), "invalid");
    let mut member = temp.agent_session("member");
    let unknown = SubmitRequest {
        handin: Some("worker-99".into()),
        git_ref: None,
        summary: "theirs".into(),
    };
    assert_eq!(
        code(&orders::submit(&mut member, &id, &unknown, temp.now())),
        "unknown_handin"
    );
    let theirs = SubmitRequest {
        handin: Some(handin.clone()),
        git_ref: None,
        summary: "the worker's parser".into(),
    };
    assert_eq!(
        orders::submit(&mut member, &id, &theirs, temp.now()).unwrap(),
        OrderState::Submitted
    );
    let submission = show(&temp, &id).submission.unwrap();
    assert_eq!(submission.handin, Some(handin));
    assert_eq!(submission.by, agent("member"));
    // The worker cannot submit it itself.
    let id2 = issue(&temp, "alone");
    let worker_submit = orders::submit(
        &mut temp.agent_session("worker"),
        &id2,
        &submit_request("mine"),
        temp.now(),
    );
    assert_eq!(code(&worker_submit), "wrong_state");
}

#[test]
fn a_submission_of_an_order_without_review_is_accepted_at_once() {
    let temp = TempChannel::with_each_level();
    let id = issue(&temp, "just do it");
    claim(&temp, "member", &id);
    assert_eq!(submit(&temp, "member", &id), OrderState::Accepted);
    let detail = show(&temp, &id);
    assert_eq!(
        (detail.row.state, detail.revision, detail.review_verdict),
        (OrderState::Accepted, 1, None)
    );
    // A done order leaves the board (a plain list), and no one reviews it.
    let listed = list(&mut temp.view(), None, temp.now());
    assert!(!ids(&listed).contains(&id));
    let review = orders::review(
        &mut temp.agent_session("orchestrator"),
        &id,
        Verdict::Accept,
        None,
        temp.now(),
    );
    assert_eq!(code(&review), "wrong_state");
}

#[test]
fn a_list_since_a_cursor_gives_only_the_orders_that_changed() {
    let temp = TempChannel::with_each_level();
    let (a, b, c) = (issue(&temp, "a"), issue(&temp, "b"), issue(&temp, "c"));
    let mut member = temp.agent_session("member");
    let first = list(&mut member, None, temp.now());
    assert_eq!(ids(&first), [a.clone(), b.clone(), c.clone()]);
    assert!(!first.reset);
    let cursor = first.next(first.rows.len()).to_string();
    let nothing = list(&mut member, Some(&cursor), temp.now());
    assert!(nothing.rows.is_empty(), "{:?}", ids(&nothing));

    claim(&temp, "member", &b);
    let d = issue(&temp, "d");
    let changed = list(&mut member, Some(&cursor), temp.now());
    // In the order this machine folded them (the master's log, then the member's, here).
    let mut news = ids(&changed);
    news.sort();
    assert_eq!(news, [b.clone(), d.clone()]);
    let claimed = changed
        .rows
        .iter()
        .find(|listed| listed.row.id == b)
        .unwrap();
    assert_eq!(claimed.row.holder, Some(agent("member")));

    // An order that is done is news too: the reader learns it left the board.
    let cursor = changed.next(changed.rows.len()).to_string();
    orders::cancel(&mut temp.master_session(), &a, None, temp.now()).unwrap();
    let left = list(&mut member, Some(&cursor), temp.now());
    assert_eq!(ids(&left), [a.as_str()]);
    assert_eq!(left.rows[0].row.state, OrderState::Cancelled);
    assert!(!ids(&list(&mut member, None, temp.now())).contains(&a));
}

#[test]
fn a_cursor_from_another_machine_gives_the_whole_board_and_says_so() {
    let temp = TempChannel::with_each_level();
    let (a, b) = (issue(&temp, "a"), issue(&temp, "b"));
    // Another machine's state folder over the same (synced) channel folder.
    let elsewhere = Home::at(temp.root().join("home-b"));
    ops::add_existing(&elsewhere, temp.project(), temp.channel_dir()).unwrap();
    let mut there = Session::open(&elsewhere, temp.project(), Actor::Observer, temp.now()).unwrap();
    let listed = list(&mut there, None, temp.now());
    let foreign = listed.next(listed.rows.len()).to_string();

    let mut here = temp.view();
    assert_ne!(here.generation(), there.generation());
    let answer = list(&mut here, Some(&foreign), temp.now());
    assert!(answer.reset);
    assert_eq!(ids(&answer), [a.clone(), b.clone()]);
    // Its own cursor is news-only again.
    let own = answer.next(answer.rows.len()).to_string();
    let again = list(&mut here, Some(&own), temp.now());
    assert!(!again.reset && again.rows.is_empty());

    // A cursor that is none, or a page cursor in its place, is a clear error.
    for bad in ["yesterday", "p10"] {
        let request = ListRequest {
            since: Some(bad.into()),
            limit: 10,
            ..ListRequest::default()
        };
        let refused = orders::list(&mut here, &request, temp.now());
        assert_eq!(code(&refused), "invalid", "{bad}");
    }
}

#[test]
fn an_order_issued_before_a_demotion_counts_and_one_that_saw_the_demotion_does_not() {
    let temp = TempChannel::builder()
        .agent("olga", Level::Orchestrator)
        .agent("member", Level::Member)
        .build()
        .unwrap();
    let mut olga = temp.agent_session("olga");
    let before = orders::issue(
        &mut olga,
        &IssueRequest {
            title: "issued while orchestrator".into(),
            ..IssueRequest::default()
        },
        temp.now(),
    )
    .unwrap();
    assert!(before.starts_with("olga-"), "{before}");
    grant(&temp, "olga", Level::Worker);
    let demotion = temp.view().identity().master_position();

    // What she did before the demotion stands: the order is on the board and can be claimed.
    assert_eq!(show(&temp, &before).issued_by, agent("olga"));
    claim(&temp, "member", &before);

    // After it, the write-time check refuses her ...
    let refused = orders::issue(
        &mut olga,
        &IssueRequest {
            title: "after".into(),
            ..IssueRequest::default()
        },
        temp.now(),
    );
    assert_eq!(code(&refused), "missing_level");
    // ... and an issue written around it, admitting it saw the demotion, does not count.
    let raw_id = write_with_seen(
        &temp,
        "olga",
        kinds::ISSUE,
        json!({"title": "written raw after the demotion"}),
        demotion,
    );
    let mut view = temp.view();
    assert!(
        view.board().unwrap().get(&raw_id).is_none(),
        "{raw_id} counts"
    );
    assert!(
        view.board()
            .unwrap()
            .get(&before.parse().unwrap())
            .is_some()
    );
    let shown = orders::show(&mut temp.view(), &raw_id.to_string(), None, temp.now());
    assert_eq!(code(&shown), "unknown_order");
}

/// Appends `kind` with `body` to `name`'s log, signed with its key on this machine, showing
/// `seen` as the master position it had folded (what a client that ignores the master log
/// writes).
fn write_with_seen(
    temp: &TempChannel,
    name: &str,
    kind: &str,
    mut body: serde_json::Value,
    seen: ferry_mcp_core::channel::fold::identity::MasterPos,
) -> EntryId {
    let key = temp
        .home()
        .load_key(temp.project(), &KeyHolder::Agent(agent(name)), temp.now())
        .unwrap();
    let session = temp.view();
    let mut writer = session.channel().writer(&agent(name), &key).unwrap();
    body[SEEN_FIELD] = json!([seen.0, seen.1]);
    let written = writer.append(kind, body, temp.now()).unwrap();
    EntryId::Agent {
        name: agent(name),
        seq: written.seq(),
    }
}

/// Appends the master's grant of `level` to `name`, binding its log after `after_seq`, as a
/// master machine that had read only that far writes it.
fn grant_raw(temp: &TempChannel, name: &str, level: Level, after_seq: Option<u64>) {
    use ferry_mcp_core::channel::fold::identity::{GrantBody, Identity, kinds as identity_kinds};
    let key = temp
        .home()
        .load_key(temp.project(), &KeyHolder::Master, temp.now())
        .unwrap();
    let agent_key = temp
        .home()
        .load_key(temp.project(), &KeyHolder::Agent(agent(name)), temp.now())
        .unwrap();
    let body = Identity::grant_body(&GrantBody {
        agent: agent(name),
        key: agent_key.public_key(),
        level,
        scopes: Vec::new(),
        expires: None,
        after_seq,
    });
    let session = temp.view();
    let mut writer = session
        .channel()
        .writer(&AgentName::master(), &key)
        .unwrap();
    writer
        .append(identity_kinds::GRANT, body, temp.now())
        .unwrap();
}

#[test]
fn a_demoted_orchestrator_that_never_reads_the_master_log_issues_nothing_that_counts() {
    let temp = TempChannel::builder()
        .agent("olga", Level::Orchestrator)
        .build()
        .unwrap();
    let mut olga = temp.agent_session("olga");
    let before = orders::issue(
        &mut olga,
        &IssueRequest {
            title: "issued while orchestrator".into(),
            ..IssueRequest::default()
        },
        temp.now(),
    )
    .unwrap();
    // The last master position olga admits to: the one she issued at.
    let seen_before = temp.view().identity().master_position();
    grant(&temp, "olga", Level::Worker);

    // The demotion names where her log stood on the master's machine.
    let view = temp.view();
    let demotion = view.identity().grant(&agent("olga")).unwrap();
    let before_id: EntryId = before.parse().unwrap();
    assert_eq!(demotion.body.after_seq, Some(before_id.seq()));

    // She goes on as if she had never seen it: every entry shows the old position.
    let raw: Vec<EntryId> = (0..3)
        .map(|n| {
            write_with_seen(
                &temp,
                "olga",
                kinds::ISSUE,
                json!({"title": format!("issued after the demotion {n}")}),
                seen_before,
            )
        })
        .collect();
    // None counts, here or on a machine that folds the channel from nothing; the order from
    // before still does.
    let elsewhere = Home::at(temp.root().join("home-b"));
    ops::add_existing(&elsewhere, temp.project(), temp.channel_dir()).unwrap();
    let mut there = Session::open(&elsewhere, temp.project(), Actor::Observer, temp.now()).unwrap();
    for session in [&mut temp.view(), &mut there] {
        let board = session.board().unwrap();
        assert!(board.get(&before_id).is_some());
        for id in &raw {
            assert!(board.get(id).is_none(), "{id} counts");
        }
    }
}

#[test]
fn an_entry_a_demotion_binds_is_voided_on_a_machine_that_had_counted_it_before_the_demotion_arrived()
 {
    let temp = TempChannel::builder()
        .agent("olga", Level::Orchestrator)
        .agent("member", Level::Member)
        .build()
        .unwrap();
    let seen = temp.view().identity().master_position();
    let first = write_with_seen(
        &temp,
        "olga",
        kinds::ISSUE,
        json!({"title": "read by the master"}),
        seen,
    );
    let concurrent = write_with_seen(
        &temp,
        "olga",
        kinds::ISSUE,
        json!({"title": "not read by the master when it demoted her"}),
        seen,
    );
    // A machine that folds both before the demotion arrives counts both.
    let elsewhere = Home::at(temp.root().join("home-b"));
    ops::add_existing(&elsewhere, temp.project(), temp.channel_dir()).unwrap();
    let mut there = Session::open(&elsewhere, temp.project(), Actor::Observer, temp.now()).unwrap();
    assert!(there.board().unwrap().get(&concurrent).is_some());
    there.save().unwrap();

    // The master's machine had read only her first entry when it demoted her.
    grant_raw(&temp, "olga", Level::Member, Some(first.seq()));

    // Then the same board everywhere: on that machine (refreshed, and opened warm from its
    // kept state), and on one folding everything from nothing.
    there.refresh(temp.now());
    let mut warm = Session::open(&elsewhere, temp.project(), Actor::Observer, temp.now()).unwrap();
    let cold = Home::at(temp.root().join("home-c"));
    ops::add_existing(&cold, temp.project(), temp.channel_dir()).unwrap();
    let mut cold = Session::open(&cold, temp.project(), Actor::Observer, temp.now()).unwrap();
    for (label, session) in [
        ("refreshed", &mut there),
        ("warm", &mut warm),
        ("cold", &mut cold),
    ] {
        let board = session.board().unwrap();
        assert!(
            board.get(&first).is_some(),
            "{label}: the first one is voided"
        );
        assert!(
            board.get(&concurrent).is_none(),
            "{label}: the bound one still counts"
        );
    }
}

#[test]
fn a_grant_that_raises_a_level_binds_nothing_and_one_that_lowers_it_binds_what_was_read() {
    let temp = TempChannel::builder()
        .agent("olga", Level::Member)
        .build()
        .unwrap();
    let after = |temp: &TempChannel| {
        temp.view()
            .identity()
            .grant(&agent("olga"))
            .unwrap()
            .body
            .after_seq
    };
    grant(&temp, "olga", Level::Orchestrator);
    assert_eq!(after(&temp), None, "a raise binds");
    let mut olga = temp.agent_session("olga");
    let issued: EntryId = orders::issue(
        &mut olga,
        &IssueRequest {
            title: "x".into(),
            ..IssueRequest::default()
        },
        temp.now(),
    )
    .unwrap()
    .parse()
    .unwrap();
    grant(&temp, "olga", Level::Member);
    assert_eq!(after(&temp), Some(issued.seq()));
    // An expiry where there was none takes something away too.
    let request = GrantRequest {
        level: Level::Member,
        scopes: Vec::new(),
        expires: Some(temp.now()),
        key: None,
    };
    ops::access_set(
        temp.home(),
        temp.project(),
        &agent("olga"),
        &request,
        temp.now(),
    )
    .unwrap();
    assert_eq!(after(&temp), Some(issued.seq()));
}

// ---- the board's indexes ----

/// What a walk of the whole board finds for the two indexes: orders waiting on an action, and
/// per agent the orders it holds or that are offered to it, not done.
fn board_walk(
    board: &ferry_mcp_core::channel::fold::state::OrderBoard,
) -> (Vec<String>, std::collections::BTreeMap<String, Vec<String>>) {
    use ferry_mcp_core::channel::fold::state::orders::OrderState;
    let awaiting = board
        .iter()
        .filter(|order| {
            matches!(
                order.whole().unwrap().view().state,
                OrderState::Submitted | OrderState::ChangesRequested
            )
        })
        .map(|order| order.id().to_string())
        .collect();
    let mut by_agent = std::collections::BTreeMap::<String, Vec<String>>::new();
    for order in board
        .iter()
        .map(|order| order.whole().unwrap())
        .filter(|order| !order.view().state.is_done())
    {
        let view = order.view();
        let offered = (view.state == OrderState::Offered)
            .then_some(order.issue.to.as_ref())
            .flatten();
        for agent in [view.holder.as_ref(), offered].into_iter().flatten() {
            by_agent
                .entry(agent.to_string())
                .or_default()
                .push(order.id.to_string());
        }
    }
    (awaiting, by_agent)
}

/// What the indexes answer, in the same shape.
fn board_index(
    board: &ferry_mcp_core::channel::fold::state::OrderBoard,
    agents: &[AgentName],
) -> (Vec<String>, std::collections::BTreeMap<String, Vec<String>>) {
    let awaiting = board
        .awaiting_action()
        .map(|order| order.id().to_string())
        .collect();
    let by_agent = agents
        .iter()
        .map(|agent| {
            let ids: Vec<String> = board
                .of_agent(agent)
                .map(|order| order.id().to_string())
                .collect();
            (agent.to_string(), ids)
        })
        .filter(|(_, ids)| !ids.is_empty())
        .collect();
    (awaiting, by_agent)
}

#[test]
fn the_board_s_indexes_answer_what_a_walk_of_the_whole_board_finds() {
    let busy = ferry_mcp_testkit::bulk::busy();
    let mut agents: Vec<AgentName> = busy.agents().iter().map(|a| a.name.clone()).collect();
    agents.push(AgentName::master());
    let check = |session: &mut Session, when: &str| {
        let board = session.board_whole().unwrap();
        let walked = board_walk(board);
        assert!(
            !walked.0.is_empty() && !walked.1.is_empty(),
            "{when}: {walked:?}"
        );
        assert_eq!(board_index(board, &agents), walked, "{when}");
    };
    // Folded from the channel, then loaded from the kept state.
    let _ = fs::remove_file(busy.verified_path());
    let mut master = busy.session(Actor::Master);
    check(&mut master, "folded");
    master.save().unwrap();
    check(&mut busy.session(Actor::Observer), "loaded");
    // The master cancels a held order and sends a submitted one back: both indexes move.
    use ferry_mcp_core::channel::fold::state::orders::OrderState;
    let find = |session: &mut Session, state: OrderState| {
        session
            .board_whole()
            .unwrap()
            .iter()
            .map(|order| order.whole().unwrap())
            .find(|order| order.view().state == state)
            .map(|order| (order.id.to_string(), order.view().holder.clone()))
            .unwrap()
    };
    let (held, holder) = find(&mut master, OrderState::Claimed);
    let holder = holder.unwrap();
    let before = master.board().unwrap().of_agent(&holder).count();
    ops::orders::cancel(&mut master, &held, Some("not needed"), busy.now()).unwrap();
    assert_eq!(
        master.board().unwrap().of_agent(&holder).count(),
        before - 1
    );
    let (submitted, _) = find(&mut master, OrderState::Submitted);
    let awaiting = master.board().unwrap().awaiting_action().count();
    ops::orders::review(&mut master, &submitted, Verdict::Accept, None, busy.now()).unwrap();
    assert_eq!(
        master.board().unwrap().awaiting_action().count(),
        awaiting - 1
    );
    check(&mut master, "after a cancel and an acceptance");
}

#[test]
fn a_hand_in_or_submission_whose_ref_is_no_git_ref_is_refused_with_the_reason() {
    let temp = TempChannel::with_each_level();
    let id = issue_reviewed(&temp, "refs");
    claim(&temp, "member", &id);
    let mut member = temp.agent_session("member");
    for bad in ["HEAD~1", "a..b", "-rf", "x.lock"] {
        let handed = orders::hand_in(&mut member, &id, bad, "a start", temp.now());
        assert_eq!(code(&handed), "not_a_git_ref", "{bad}");
        let submitted = orders::submit(
            &mut member,
            &id,
            &SubmitRequest {
                handin: None,
                git_ref: Some(bad.into()),
                summary: "done".into(),
            },
            temp.now(),
        );
        let err = submitted.unwrap_err();
        assert_eq!(err.code(), "not_a_git_ref", "{bad}");
        assert!(err.to_string().contains("is not a git ref: "), "{err}");
    }
    for good in ["a1b2c3d", "dev/parser"] {
        orders::hand_in(&mut member, &id, good, "a start", temp.now()).unwrap();
    }
}

/// A channel with a Worker, two Members and an Orchestrator, and a reviewed order claimed by
/// `member`.
fn claimed_with_two_members() -> (TempChannel, String) {
    let temp = TempChannel::builder()
        .agent("worker", Level::Worker)
        .agent("member", Level::Member)
        .agent("other", Level::Member)
        .agent("orchestrator", Level::Orchestrator)
        .build()
        .unwrap();
    let id = issue_reviewed(&temp, "team work");
    claim(&temp, "member", &id);
    (temp, id)
}

fn hand_in_as(temp: &TempChannel, name: &str, id: &str) -> String {
    orders::hand_in(
        &mut temp.agent_session(name),
        id,
        "work/part",
        "the parser",
        temp.now(),
    )
    .unwrap()
}

fn submitting(handin: &str) -> SubmitRequest {
    SubmitRequest {
        handin: Some(handin.to_owned()),
        git_ref: None,
        summary: "the parser".into(),
    }
}

#[test]
fn a_member_cannot_submit_another_member_s_hand_in() {
    let (temp, id) = claimed_with_two_members();
    let theirs = hand_in_as(&temp, "other", &id);
    let by_orchestrator = hand_in_as(&temp, "orchestrator", &id);
    let mut member = temp.agent_session("member");
    let refused = orders::submit(&mut member, &id, &submitting(&theirs), temp.now()).unwrap_err();
    assert_eq!(refused.code(), "handin_of_another", "{refused}");
    assert_eq!(
        refused.to_string(),
        format!(
            "hand-in {theirs} of order {id} is other's, who was member when it handed in: a submission names a hand-in of its own or a worker's"
        )
    );
    let refused =
        orders::submit(&mut member, &id, &submitting(&by_orchestrator), temp.now()).unwrap_err();
    assert_eq!(refused.code(), "handin_of_another", "{refused}");
    assert!(refused.to_string().contains("orchestrator's"), "{refused}");
    // A hand-in of another order is none of this one's.
    let other_order = issue(&temp, "elsewhere");
    let elsewhere = hand_in_as(&temp, "member", &other_order);
    let refused =
        orders::submit(&mut member, &id, &submitting(&elsewhere), temp.now()).unwrap_err();
    assert_eq!(refused.code(), "unknown_handin", "{refused}");
    assert_eq!(show(&temp, &id).row.state, OrderState::Claimed);
    // Its own hand-in it submits.
    let own = hand_in_as(&temp, "member", &id);
    assert_eq!(
        orders::submit(&mut member, &id, &submitting(&own), temp.now()).unwrap(),
        OrderState::Submitted
    );
}

#[test]
fn a_holder_submits_a_worker_s_hand_in_of_its_order() {
    let (temp, id) = claimed_with_two_members();
    let theirs = hand_in_as(&temp, "worker", &id);
    let mut member = temp.agent_session("member");
    assert_eq!(
        orders::submit(&mut member, &id, &submitting(&theirs), temp.now()).unwrap(),
        OrderState::Submitted
    );
    let submission = show(&temp, &id).submission.unwrap();
    assert_eq!(submission.handin, Some(theirs));
    assert_eq!(submission.by, agent("member"));
}

#[test]
fn a_worker_s_hand_in_stays_submittable_after_it_is_promoted() {
    let (temp, id) = claimed_with_two_members();
    let theirs = hand_in_as(&temp, "worker", &id);
    // Its level is judged where it handed in: a Worker then, whatever it is now.
    grant(&temp, "worker", Level::Member);
    let mut member = temp.agent_session("member");
    assert_eq!(
        orders::submit(&mut member, &id, &submitting(&theirs), temp.now()).unwrap(),
        OrderState::Submitted
    );
}

#[test]
fn a_submission_naming_another_member_s_hand_in_written_anyway_does_not_count() {
    let (temp, id) = claimed_with_two_members();
    let theirs = hand_in_as(&temp, "other", &id);
    let order: EntryId = id.parse().unwrap();
    let mut view = temp.view();
    let tip = view.order(&order).unwrap().unwrap().view().tip;
    let seen = view.identity().master_position();
    // The holder skips the operation and signs the submission with its own key.
    let raw = write_with_seen(
        &temp,
        "member",
        kinds::SUBMIT,
        json!({"order": id, "after": tip, "summary": "mine now", "handin": theirs}),
        seen,
    );
    // It counts for nothing, here or on a machine that folds the channel from nothing.
    let elsewhere = Home::at(temp.root().join("home-b"));
    ops::add_existing(&elsewhere, temp.project(), temp.channel_dir()).unwrap();
    let there = Session::open(&elsewhere, temp.project(), Actor::Observer, temp.now()).unwrap();
    for mut session in [temp.view(), there] {
        let detail = orders::show(&mut session, &id, None, temp.now()).unwrap();
        assert_eq!(detail.row.state, OrderState::Claimed, "{raw} counted");
        assert_eq!(detail.submission, None);
    }
    // The same submission naming a Worker's hand-in counts.
    let workers = hand_in_as(&temp, "worker", &id);
    write_with_seen(
        &temp,
        "member",
        kinds::SUBMIT,
        json!({"order": id, "after": tip, "summary": "the worker's", "handin": workers}),
        seen,
    );
    assert_eq!(show(&temp, &id).row.state, OrderState::Submitted);
}

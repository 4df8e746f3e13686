//! The guard in the operations: every field and name an agent or the human writes is judged
//! in the one library operation both the CLI and the tools call, so neither can skip it, and
//! a token split across an author's consecutive texts is refused as a whole. Each refusal
//! writes nothing.

use ferry_mcp_core::channel::fold::levels::Level;
use ferry_mcp_core::channel::log::names::{AgentName, ProjectId};
use ferry_mcp_core::channel::ops::asks::{self, RaiseRequest};
use ferry_mcp_core::channel::ops::orders::{self, IssueRequest};
use ferry_mcp_core::channel::ops::talk::{self, PostRequest};
use ferry_mcp_core::channel::ops::{self, OpsError, primary, seats, secrets};
use ferry_mcp_core::channel::session::Session;
use ferry_mcp_core::guard::{GuardRefusal, SecretKind};
use ferry_mcp_testkit::temp_channel::TempChannel;

/// A published GitHub token test vector (its checksum is valid).
const TOKEN: &str = "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";
/// An AWS access key id's shape: upper-case letters and digits only, so a name folded to
/// lower case still spells it.
const AWS_KEY_ID: &str = "AKIAQ3EGRHDLWZ5X7KTM";
/// The token in two parts, each harmless alone.
const FIRST_HALF: &str = "ghp_M7H4jxUDDWHP4kZ6A4dx";
const SECOND_HALF: &str = "lQYsQIWJuq11T4V4";

fn fleet() -> TempChannel {
    TempChannel::builder()
        .agent("alice", Level::Member)
        .agent("bob", Level::Member)
        .build()
        .unwrap()
}

fn is_secret_refusal(code: &str, message: &str) -> bool {
    code == "secret" && message.contains("ferry channel secret")
}

fn entries(temp: &TempChannel) -> usize {
    let mut session: Session = temp.view();
    session.talk().unwrap().len() + session.board().unwrap().len()
}

fn post(session: &mut Session, temp: &TempChannel, text: &str) -> Result<String, talk::TalkError> {
    talk::post(
        session,
        &PostRequest {
            to: "all".into(),
            text: text.into(),
            reply_to: None,
        },
        temp.now(),
    )
}

#[test]
fn the_humans_order_title_and_body_holding_a_secret_are_refused_and_nothing_is_written() {
    let temp = fleet();
    let before = entries(&temp);
    let mut master = temp.master_session();
    for request in [
        IssueRequest {
            title: format!("use {TOKEN} for the deploy"),
            ..IssueRequest::default()
        },
        IssueRequest {
            title: "deploy".into(),
            body: Some(format!("the token is {TOKEN}\nthen run the job")),
            ..IssueRequest::default()
        },
    ] {
        let err = orders::issue(&mut master, &request, temp.now()).unwrap_err();
        assert!(
            is_secret_refusal(err.code(), &err.to_string()),
            "{}: {err}",
            err.code()
        );
    }
    assert_eq!(entries(&temp), before);
}

#[test]
fn the_humans_post_holding_a_secret_is_refused_but_code_may_be_pasted() {
    let temp = fleet();
    let mut master = temp.master_session();
    let err = post(&mut master, &temp, &format!("here: {TOKEN}")).unwrap_err();
    assert!(is_secret_refusal(err.code(), &err.to_string()), "{err}");
    post(
        &mut master,
        &temp,
        "try this:\nfn main() {\n    let x = parse(input)?;\n    run(x);\n}",
    )
    .unwrap();
}

#[test]
fn the_humans_brief_objective_constraints_and_decisions_holding_a_secret_are_refused() {
    let temp = fleet();
    let mut master = temp.master_session();
    let err = primary::set_brief(&mut master, &format!("ship with {TOKEN}"), &[], temp.now())
        .unwrap_err();
    assert!(is_secret_refusal(err.code(), &err.to_string()), "{err}");
    let err = primary::set_brief(
        &mut master,
        "ship the release",
        &[format!("deploy key {TOKEN}")],
        temp.now(),
    )
    .unwrap_err();
    assert!(is_secret_refusal(err.code(), &err.to_string()), "{err}");
    let mut alice = temp.agent_session("alice");
    let err = primary::decide(&mut alice, &format!("we use {TOKEN}"), temp.now()).unwrap_err();
    assert!(is_secret_refusal(err.code(), &err.to_string()), "{err}");
}

#[test]
fn an_agent_name_that_is_an_aws_key_id_is_refused_though_names_are_folded_to_lower_case() {
    let temp = fleet();
    let name = AgentName::parse(AWS_KEY_ID).unwrap();
    assert_eq!(name.as_str(), AWS_KEY_ID.to_ascii_lowercase());
    let err = seats::join(temp.home(), temp.project(), &name, None, temp.now()).unwrap_err();
    assert!(is_secret_refusal(err.code(), &err.to_string()), "{err}");
    assert!(
        temp.view().identity().seat(&name) == ferry_mcp_core::channel::fold::identity::Seat::Vacant
    );
}

#[test]
fn a_project_id_that_is_an_aws_key_id_is_refused() {
    let temp = fleet();
    let project = ProjectId::parse(AWS_KEY_ID).unwrap();
    let dir = temp.root().join("leaky");
    let err = ops::project::init(temp.home(), &project, &dir, None, temp.now()).unwrap_err();
    assert!(is_secret_refusal(err.code(), &err.to_string()), "{err}");
    assert!(!dir.exists());
}

#[test]
fn a_secret_name_shaped_like_a_secret_is_refused() {
    let temp = fleet();
    let mut master = temp.master_session();
    let err = secrets::send(
        &mut master,
        AWS_KEY_ID,
        &AgentName::parse("bob").unwrap(),
        b"the value is sealed",
        temp.now(),
    )
    .unwrap_err();
    assert!(is_secret_refusal(err.code(), &err.to_string()), "{err}");
}

#[test]
fn a_token_split_across_two_posts_of_one_author_is_refused() {
    let temp = fleet();
    let mut alice = temp.agent_session("alice");
    post(&mut alice, &temp, &format!("first part {FIRST_HALF}")).unwrap();
    let err = post(&mut alice, &temp, SECOND_HALF).unwrap_err();
    assert!(is_secret_refusal(err.code(), &err.to_string()), "{err}");
    // Another author's text is not this author's previous one.
    post(&mut temp.agent_session("bob"), &temp, SECOND_HALF).unwrap();
}

#[test]
fn a_token_split_across_a_post_and_a_progress_line_is_refused() {
    let temp = fleet();
    let id = orders::issue(
        &mut temp.master_session(),
        &IssueRequest {
            title: "rotate the keys".into(),
            ..IssueRequest::default()
        },
        temp.now(),
    )
    .unwrap();
    let mut alice = temp.agent_session("alice");
    orders::claim(&mut alice, &id, temp.now()).unwrap();
    post(&mut alice, &temp, &format!("working on it {FIRST_HALF}")).unwrap();
    let err = orders::progress(&mut alice, &id, SECOND_HALF, temp.now()).unwrap_err();
    assert!(is_secret_refusal(err.code(), &err.to_string()), "{err}");
    // And two progress lines on the order.
    orders::progress(
        &mut alice,
        &id,
        &format!("halfway {FIRST_HALF}"),
        temp.now(),
    )
    .unwrap();
    let err = orders::progress(&mut alice, &id, SECOND_HALF, temp.now()).unwrap_err();
    assert!(is_secret_refusal(err.code(), &err.to_string()), "{err}");
}

#[test]
fn a_token_split_across_a_progress_line_and_then_a_summary_is_refused() {
    let temp = fleet();
    let id = orders::issue(
        &mut temp.master_session(),
        &IssueRequest {
            title: "rotate the keys".into(),
            ..IssueRequest::default()
        },
        temp.now(),
    )
    .unwrap();
    let mut alice = temp.agent_session("alice");
    orders::claim(&mut alice, &id, temp.now()).unwrap();
    post(&mut alice, &temp, "picked up the rotation").unwrap();
    orders::progress(
        &mut alice,
        &id,
        &format!("halfway {FIRST_HALF}"),
        temp.now(),
    )
    .unwrap();
    // In a new session too: the line is read from the order, not remembered by the session.
    let mut alice = temp.agent_session("alice");
    let err = orders::hand_in(
        &mut alice,
        &id,
        "refs/heads/rotate",
        SECOND_HALF,
        temp.now(),
    )
    .unwrap_err();
    assert!(is_secret_refusal(err.code(), &err.to_string()), "{err}");
    orders::hand_in(
        &mut alice,
        &id,
        "refs/heads/rotate",
        "the keys are rotated",
        temp.now(),
    )
    .unwrap();
}

/// An order `alice` holds, issued by the human.
fn held_order(temp: &TempChannel) -> String {
    let id = orders::issue(
        &mut temp.master_session(),
        &IssueRequest {
            title: "rotate the keys".into(),
            ..IssueRequest::default()
        },
        temp.now(),
    )
    .unwrap();
    orders::claim(&mut temp.agent_session("alice"), &id, temp.now()).unwrap();
    id
}

#[test]
fn a_token_split_across_a_progress_line_and_then_a_post_is_refused_and_the_post_reads_no_board() {
    let temp = fleet();
    let id = held_order(&temp);
    let mut alice = temp.agent_session("alice");
    orders::progress(
        &mut alice,
        &id,
        &format!("halfway {FIRST_HALF}"),
        temp.now(),
    )
    .unwrap();
    alice.save().unwrap();
    // A new process, as a `ferry talk post` is: the line is not remembered by a session.
    let mut alice = temp.agent_session("alice");
    assert!(!alice.state().orders_loaded());
    let err = post(&mut alice, &temp, SECOND_HALF).unwrap_err();
    assert!(is_secret_refusal(err.code(), &err.to_string()), "{err}");
    assert!(
        !alice.state().orders_loaded(),
        "a post read the order board to find the author's last line"
    );
    post(&mut alice, &temp, "the rotation is halfway").unwrap();
    assert!(!alice.state().orders_loaded());
}

#[test]
fn a_token_split_across_a_post_and_then_a_progress_line_on_another_order_is_refused() {
    let temp = fleet();
    let id = held_order(&temp);
    let mut alice = temp.agent_session("alice");
    post(&mut alice, &temp, &format!("working on it {FIRST_HALF}")).unwrap();
    alice.save().unwrap();
    let err = orders::progress(
        &mut temp.agent_session("alice"),
        &id,
        SECOND_HALF,
        temp.now(),
    )
    .unwrap_err();
    assert!(is_secret_refusal(err.code(), &err.to_string()), "{err}");
}

#[test]
fn a_token_split_across_an_asks_reasoning_and_then_a_post_is_refused() {
    let temp = fleet();
    let mut alice = temp.agent_session("alice");
    asks::raise(
        &mut alice,
        &RaiseRequest {
            title: "which key store".into(),
            recommendation: "the vault".into(),
            reasoning: format!("the old one is {FIRST_HALF}"),
        },
        temp.now(),
    )
    .unwrap();
    let err = post(&mut temp.agent_session("alice"), &temp, SECOND_HALF).unwrap_err();
    assert!(is_secret_refusal(err.code(), &err.to_string()), "{err}");
    // The text after it is joined with the ask's last field, not its first.
    let mut bob = temp.agent_session("bob");
    asks::raise(
        &mut bob,
        &RaiseRequest {
            title: format!("which key store {FIRST_HALF}"),
            recommendation: "the vault".into(),
            reasoning: "it is the one we run".into(),
        },
        temp.now(),
    )
    .unwrap();
    post(&mut bob, &temp, SECOND_HALF).unwrap();
}

#[test]
fn a_token_split_across_the_humans_order_body_and_then_a_post_or_a_title_is_refused() {
    let temp = fleet();
    let mut master = temp.master_session();
    orders::issue(
        &mut master,
        &IssueRequest {
            title: "rotate the keys".into(),
            body: Some(format!("the old key is {FIRST_HALF}")),
            ..IssueRequest::default()
        },
        temp.now(),
    )
    .unwrap();
    let err = post(&mut temp.master_session(), &temp, SECOND_HALF).unwrap_err();
    assert!(is_secret_refusal(err.code(), &err.to_string()), "{err}");
    // A post, then an order's title.
    post(&mut master, &temp, &format!("the key: {FIRST_HALF}")).unwrap();
    let err = orders::issue(
        &mut temp.master_session(),
        &IssueRequest {
            title: SECOND_HALF.into(),
            ..IssueRequest::default()
        },
        temp.now(),
    )
    .unwrap_err();
    assert!(is_secret_refusal(err.code(), &err.to_string()), "{err}");
    // An agent's text is not the human's previous one.
    post(&mut temp.agent_session("alice"), &temp, SECOND_HALF).unwrap();
}

#[test]
fn a_text_signed_under_an_authors_name_with_another_key_is_not_that_authors_last_text() {
    use ferry_mcp_core::channel::log::keys::SecretKey;
    use ferry_mcp_core::channel::log::store::Channel;
    let temp = fleet();
    // A folder writer with no key of alice's signs a post as alice with a key of its own.
    let intruder = SecretKey::generate().unwrap();
    let channel = Channel::open(temp.channel_dir()).unwrap();
    let mut writer = channel
        .writer(&TempChannel::agent("alice"), &intruder)
        .unwrap();
    writer
        .append(
            "talk.post",
            serde_json::json!({ "to": "all", "text": format!("look {FIRST_HALF}") }),
            temp.now(),
        )
        .unwrap();
    // Alice's own text is judged alone: the intruder cannot make her posts refused.
    post(&mut temp.agent_session("alice"), &temp, SECOND_HALF).unwrap();
}

#[test]
fn the_guards_refusal_is_an_ops_error_with_the_secret_kind() {
    let temp = fleet();
    let err = post(&mut temp.agent_session("alice"), &temp, TOKEN).unwrap_err();
    assert!(matches!(
        err,
        talk::TalkError::Ops(OpsError::Guarded(GuardRefusal::Secret {
            kind: SecretKind::GithubToken
        }))
    ));
}

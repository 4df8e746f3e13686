//! `ferry mcp serve --demo`: a working channel with a fleet in it, with nothing to set up.
//!
//! The first run creates the project `demo` in the state folder and seats the newcomer's agent
//! `demo-agent` as a Member, beside a small fleet: `lead`, an Orchestrator who is primary with
//! a brief and a decision, and `builder`, a Member at work. A few orders stand in different
//! states (open, offered to `demo-agent`, in progress, submitted for review), a message waits
//! for `demo-agent`, and an ask waits for the human. So a newcomer's first `ferry_join` and
//! `ferry_catchup` show a fleet. Later runs find it and change nothing. It uses the same
//! library functions as the commands (`ferry init`, `channel join`, `access set`, `order
//! issue`, ...), so the demo is the real thing.

use anyhow::Context as _;
use ferry_mcp_core::channel::fold::levels::Level;
use ferry_mcp_core::channel::log::names::{AgentName, ProjectId};
use ferry_mcp_core::channel::machine::home::Home;
use ferry_mcp_core::channel::ops::asks::{self, RaiseRequest};
use ferry_mcp_core::channel::ops::orders::{self, IssueRequest, SubmitRequest};
use ferry_mcp_core::channel::ops::talk::{self, PostRequest};
use ferry_mcp_core::channel::ops::{self, GrantRequest, Joined, primary};
use ferry_mcp_core::channel::session::{Actor, Session};
use ferry_mcp_core::time::Timestamp;

const PROJECT: &str = "demo";
const AGENT: &str = "demo-agent";

fn name(raw: &str) -> anyhow::Result<AgentName> {
    AgentName::parse(raw).with_context(|| format!("the demo name {raw}"))
}

/// Makes sure the demo project exists with its agent seated; returns both names.
pub fn ensure(home: &Home, now: Timestamp) -> anyhow::Result<(ProjectId, AgentName)> {
    let project = ProjectId::parse(PROJECT).context("the demo project id")?;
    let agent = name(AGENT)?;
    let fresh = home.channel_dir(&project).is_err();
    if fresh {
        let channel = home.default_channel_dir(&project);
        let created = ops::init(home, &project, &channel, None, now)
            .context("cannot create the demo project")?;
        eprintln!(
            "ferry: created project {} with its channel at {}",
            created.project,
            created.channel.display()
        );
    }
    let (joined, _) = crate::common::kept(
        ops::join(home, &project, &agent, None, now).context("cannot seat the demo agent")?,
    );
    if joined == Joined::Seated {
        grant(home, &project, &agent, Level::Member, now)?;
        eprintln!("ferry: seated {agent} in {project} as a member");
    }
    if fresh {
        fleet(home, &project, &agent, now).context("cannot set up the demo fleet")?;
        eprintln!("ferry: the demo fleet is lead (primary), builder and {agent}");
    }
    Ok((project, agent))
}

fn grant(
    home: &Home,
    project: &ProjectId,
    agent: &AgentName,
    level: Level,
    now: Timestamp,
) -> anyhow::Result<()> {
    let request = GrantRequest {
        level,
        scopes: Vec::new(),
        expires: None,
        key: None,
    };
    crate::common::kept(
        ops::access_set(home, project, agent, &request, now)
            .with_context(|| format!("cannot grant {agent} the {level} level"))?,
    );
    Ok(())
}

/// A session of `actor`; what it does is saved when it is done.
fn with(
    home: &Home,
    project: &ProjectId,
    actor: Actor,
    now: Timestamp,
    work: impl FnOnce(&mut Session) -> anyhow::Result<()>,
) -> anyhow::Result<()> {
    let mut session = Session::open(home, project, actor, now)?;
    work(&mut session)?;
    session.save()?;
    Ok(())
}

/// The demo's fleet: a primary with a brief, orders in several states, a message for the
/// newcomer, an ask for the human.
fn fleet(home: &Home, project: &ProjectId, me: &AgentName, now: Timestamp) -> anyhow::Result<()> {
    let lead = name("lead")?;
    let builder = name("builder")?;
    for (agent, level) in [(&lead, Level::Orchestrator), (&builder, Level::Member)] {
        crate::common::kept(ops::join(home, project, agent, None, now)?);
        grant(home, project, agent, level, now)?;
    }
    with(home, project, Actor::Agent(lead.clone()), now, |session| {
        primary::takeover(session, now)?;
        primary::set_brief(
            session,
            "Ship the parser this week",
            &[
                "Work in the repo; hand in a git ref, never code".to_owned(),
                "Every order with a review needs an Orchestrator's accept".to_owned(),
            ],
            now,
        )?;
        primary::decide(session, "The lexer keeps its own error type", now)?;
        Ok(())
    })?;
    let mut ids = Vec::new();
    with(home, project, Actor::Master, now, |session| {
        for (title, to, review) in [
            ("Write the lexer", None, true),
            ("Fix the CI cache", None, false),
            ("Document the channel format", Some(me.clone()), false),
            ("Tidy the README", None, true),
        ] {
            let request = IssueRequest {
                title: title.to_owned(),
                body: Some(format!(
                    "{title}. Ask on ferry_talk if anything is unclear."
                )),
                to,
                review,
                ..IssueRequest::default()
            };
            ids.push(orders::issue(session, &request, now)?);
        }
        Ok(())
    })?;
    with(
        home,
        project,
        Actor::Agent(builder.clone()),
        now,
        |session| {
            orders::claim(session, &ids[0], now)?;
            orders::progress(session, &ids[0], "tokens and spans done; errors next", now)?;
            orders::claim(session, &ids[3], now)?;
            let submit = SubmitRequest {
                handin: None,
                git_ref: Some("a1b2c3d".to_owned()),
                summary: "README sections reordered, links checked".to_owned(),
            };
            orders::submit(session, &ids[3], &submit, now)?;
            let post = PostRequest {
                to: me.to_string(),
                text: format!(
                    "Welcome! {} is offered to you; claim it with ferry_orders.",
                    ids[2]
                ),
                reply_to: None,
            };
            talk::post(session, &post, now)?;
            let ask = RaiseRequest {
                title: "Merge the lexer before its review?".to_owned(),
                recommendation: "No: wait for the review, it is close".to_owned(),
                reasoning:
                    "The parser work waits on it, but the review catches API mistakes early."
                        .to_owned(),
            };
            asks::raise(session, &ask, now)?;
            Ok(())
        },
    )?;
    with(home, project, Actor::Agent(lead), now, |session| {
        let post = PostRequest {
            to: "all".to_owned(),
            text: "Standup at 10: say what you hold and what blocks you.".to_owned(),
            reply_to: None,
        };
        talk::post(session, &post, now)?;
        Ok(())
    })
}

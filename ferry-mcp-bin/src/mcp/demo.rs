//! `ferry mcp serve --demo`: a working channel with nothing to set up.
//!
//! The first run creates the project `demo` in the state folder (its channel folder and
//! master key), seats the agent `demo-agent` on this machine and grants it the Member level;
//! later runs find them and change nothing. It uses the same operations as `ferry init`,
//! `ferry channel join` and `ferry access set`, so the demo is the real thing.

use anyhow::Context as _;
use ferry_mcp_core::channel::home::Home;
use ferry_mcp_core::channel::levels::Level;
use ferry_mcp_core::channel::names::{AgentName, ProjectId};
use ferry_mcp_core::channel::ops::{self, GrantRequest, Joined};
use ferry_mcp_core::time::Timestamp;

const PROJECT: &str = "demo";
const AGENT: &str = "demo-agent";

/// Makes sure the demo project exists with its agent seated; returns both names.
pub fn ensure(home: &Home, now: Timestamp) -> anyhow::Result<(ProjectId, AgentName)> {
    let project = ProjectId::parse(PROJECT).context("the demo project id")?;
    let agent = AgentName::parse(AGENT).context("the demo agent name")?;
    if home.channel_dir(&project).is_err() {
        let channel = home.default_channel_dir(&project);
        let created = ops::init(home, &project, &channel, None, now)
            .context("cannot create the demo project")?;
        eprintln!(
            "ferry: created project {} with its channel at {}",
            created.project,
            created.channel.display()
        );
    }
    let (joined, _) =
        ops::join(home, &project, &agent, None, now).context("cannot seat the demo agent")?;
    if joined == Joined::Seated {
        let member = GrantRequest {
            level: Level::Member,
            scopes: Vec::new(),
            expires: None,
            key: None,
        };
        ops::access_set(home, &project, &agent, &member, now)
            .context("cannot grant the demo agent the member level")?;
        eprintln!("ferry: seated {agent} in {project} as a member");
    }
    Ok((project, agent))
}

//! `TempChannel`: a project on a temporary channel folder and a temporary state folder
//! (`FERRY_HOME`), with a master key and agents seated at chosen levels, built through
//! the same `ops` functions the `ferry` commands use. Dropping it deletes both folders.

use std::path::{Path, PathBuf};

use ferry_mcp_core::channel::fold::levels::Level;
use ferry_mcp_core::channel::log::keys::SecretKey;
use ferry_mcp_core::channel::log::names::{AgentName, ProjectId};
use ferry_mcp_core::channel::machine::home::{Home, KeyHolder, SealCost};
use ferry_mcp_core::channel::ops::{self, GrantRequest};
use ferry_mcp_core::channel::session::{Actor, Session};
use ferry_mcp_core::time::Timestamp;

use crate::clock::Clock;

/// The cheapest argon2 costs, so sealed keys in tests take microseconds.
pub const TEST_SEAL_COST: SealCost = SealCost {
    m_kib: 64,
    t: 1,
    p: 1,
};

/// Builds a [`TempChannel`].
#[derive(Debug, Clone)]
pub struct TempChannelBuilder {
    project: String,
    agents: Vec<(String, Level)>,
    clock: Clock,
}

impl TempChannelBuilder {
    /// Seats `name` at `level` (a Worker gets no grant at all, as in real use).
    pub fn agent(mut self, name: &str, level: Level) -> Self {
        self.agents.push((name.to_owned(), level));
        self
    }

    /// The project id (default `demo`).
    pub fn project(mut self, id: &str) -> Self {
        id.clone_into(&mut self.project);
        self
    }

    /// Starts from this clock instead of [`Clock::new`].
    pub fn clock(mut self, clock: Clock) -> Self {
        self.clock = clock;
        self
    }

    /// Creates the folders, the project and the agents; the error is the operation's that
    /// failed (a project's, a seat's or a grant's).
    pub fn build(self) -> Result<TempChannel, Box<dyn std::error::Error>> {
        let root = tempfile::tempdir().expect("a temporary folder");
        let home = Home::at(root.path().join("home"));
        let channel_dir = root.path().join("channel");
        let project = ProjectId::parse(&self.project).expect("a valid test project id");
        let now = self.clock.now();
        ops::init(&home, &project, &channel_dir, None, now)?;
        for (name, level) in &self.agents {
            let name = AgentName::parse(name).expect("a valid test agent name");
            ops::join(&home, &project, &name, None, now)?;
            if *level > Level::Worker {
                let grant = GrantRequest {
                    level: *level,
                    scopes: Vec::new(),
                    expires: None,
                    key: None,
                };
                ops::access_set(&home, &project, &name, &grant, now)?;
            }
        }
        Ok(TempChannel {
            root,
            home,
            channel_dir,
            project,
            clock: self.clock,
        })
    }
}

/// A project on temporary folders. See the module docs.
#[derive(Debug)]
pub struct TempChannel {
    root: tempfile::TempDir,
    home: Home,
    channel_dir: PathBuf,
    project: ProjectId,
    clock: Clock,
}

impl TempChannel {
    /// An empty builder: project `demo`, no agents.
    pub fn builder() -> TempChannelBuilder {
        TempChannelBuilder {
            project: "demo".into(),
            agents: Vec::new(),
            clock: Clock::new(),
        }
    }

    /// Project `demo` with one agent at each level: `worker`, `member`, `orchestrator`.
    pub fn with_each_level() -> Self {
        Self::builder()
            .agent("worker", Level::Worker)
            .agent("member", Level::Member)
            .agent("orchestrator", Level::Orchestrator)
            .build()
            .expect("a temporary channel with an agent at each level")
    }

    /// A channel made elsewhere in this crate (the bulk builder) on folders it owns.
    pub(crate) fn from_parts(
        root: tempfile::TempDir,
        home: Home,
        channel_dir: PathBuf,
        project: ProjectId,
        clock: Clock,
    ) -> Self {
        Self {
            root,
            home,
            channel_dir,
            project,
            clock,
        }
    }

    pub fn home(&self) -> &Home {
        &self.home
    }

    /// The state folder: pass it as `FERRY_HOME` to the `ferry` binary.
    pub fn home_dir(&self) -> &Path {
        self.home.root()
    }

    pub fn channel_dir(&self) -> &Path {
        &self.channel_dir
    }

    /// The temporary folder holding both.
    pub fn root(&self) -> &Path {
        self.root.path()
    }

    pub fn project(&self) -> &ProjectId {
        &self.project
    }

    pub fn clock(&self) -> &Clock {
        &self.clock
    }

    pub fn now(&self) -> Timestamp {
        self.clock.now()
    }

    /// The channel opened and folded now, read-only.
    pub fn view(&self) -> Session {
        self.session(Actor::Observer)
    }

    /// A session of `actor` on the channel, opened now.
    pub fn session(&self, actor: Actor) -> Session {
        Session::open(&self.home, &self.project, actor, self.now())
            .expect("the temporary channel opens")
    }

    /// A session of the agent `name`.
    pub fn agent_session(&self, name: &str) -> Session {
        self.session(Actor::Agent(Self::agent(name)))
    }

    /// A session of the human (the master key on this machine).
    pub fn master_session(&self) -> Session {
        self.session(Actor::Master)
    }

    /// The key of the agent `name` on this machine: what a seated agent signs whatever it likes
    /// with, bypassing the operations' checks.
    pub fn agent_key(&self, name: &str) -> SecretKey {
        self.home()
            .load_key(
                self.project(),
                &KeyHolder::Agent(Self::agent(name)),
                self.now(),
            )
            .expect("the agent is seated on this machine")
    }

    /// `name` as an agent name (panics on an invalid one: tests only).
    pub fn agent(name: &str) -> AgentName {
        AgentName::parse(name).expect("a valid test agent name")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ferry_mcp_core::channel::fold::identity::Seat;

    #[test]
    fn a_temp_channel_seats_one_agent_at_each_level_inside_its_own_folder() {
        let temp = TempChannel::with_each_level();
        let view = temp.view();
        for (name, level) in [
            ("worker", Level::Worker),
            ("member", Level::Member),
            ("orchestrator", Level::Orchestrator),
        ] {
            let agent = TempChannel::agent(name);
            assert!(matches!(view.identity().seat(&agent), Seat::Seated(_)));
            assert_eq!(view.identity().standing(&agent, temp.now()).level, level);
        }
        assert!(temp.home_dir().starts_with(temp.root()));
        assert!(temp.channel_dir().starts_with(temp.root()));
    }
}

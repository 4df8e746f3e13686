//! "Connect an AI app (beta)": what the page asks of the binary's `ferry mcp connect`.
//!
//! Why a trait: the apps' config formats (JSON through a CST, TOML kept byte for byte) and
//! their per-platform paths live in the binary's `mcp/connect.rs`, where `ferry mcp connect
//! --write` uses them; the page calls the same functions through this seam instead of a copy.

use ferry_mcp_core::channel::fold::levels::Level;
use ferry_mcp_core::channel::log::names::{AgentName, ProjectId};
use ferry_mcp_core::channel::machine::home::Home;
use ferry_mcp_core::time::Timestamp;

/// The apps the page connects.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AiApp {
    ClaudeDesktop,
    ClaudeCode,
    Codex,
}

impl AiApp {
    pub const ALL: [AiApp; 3] = [AiApp::ClaudeDesktop, AiApp::ClaudeCode, AiApp::Codex];

    /// The form's value and the default agent name's first part.
    pub const fn slug(self) -> &'static str {
        match self {
            AiApp::ClaudeDesktop => "claude-desktop",
            AiApp::ClaudeCode => "claude-code",
            AiApp::Codex => "codex",
        }
    }

    pub const fn title(self) -> &'static str {
        match self {
            AiApp::ClaudeDesktop => "Claude Desktop",
            AiApp::ClaudeCode => "Claude Code",
            AiApp::Codex => "Codex",
        }
    }

    pub fn from_slug(slug: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|app| app.slug() == slug)
    }
}

/// One connection to make: the app, the agent it will be, where.
#[derive(Debug, Clone)]
pub struct ConnectRequest {
    pub app: AiApp,
    pub name: AgentName,
    pub project: ProjectId,
    /// Seat the agent and merge the entry into the app's file; else only show the entry.
    pub write: bool,
    /// The level a newly seated agent is granted (Member; Worker for "work only").
    pub level: Level,
}

/// What `ferry mcp connect --write` does, for the page: seats the agent, grants a new seat
/// `request.level` with the master key `master` opens (the page's: opened at start, or for
/// this one action with the passphrase the form carried) and writes the app's config
/// (`write`), or describes the entry to copy. The text is the command's own.
pub trait Connector: Send + Sync + std::fmt::Debug {
    fn connect(
        &self,
        home: &Home,
        master: &Home,
        request: &ConnectRequest,
        now: Timestamp,
    ) -> Result<String, String>;
}

//! `ferry_join`: the first call. Who the agent is in this fleet, its level, who is primary and
//! who is alive, its open orders, whether heavy work goes through this machine's queue; an
//! unseated agent is told the exact command that seats it, and nothing is created.

use ferry_mcp_core::channel::ops::fleet::Standing;
use ferry_mcp_core::channel::ops::primary::Liveness;
use ferry_mcp_core::shape::ToolOutcome;
use ferry_mcp_core::tool::{Annotations, CallContext, Tool, ToolDefinition};
use serde::Serialize;
use serde_json::{Map, Value};

use crate::facade;

/// The arguments of `ferry_join`: none.
#[derive(Debug, Clone, PartialEq, Eq, serde::Deserialize)]
#[cfg_attr(feature = "schemas", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct JoinArgs {}

/// The primary, briefly.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "schemas", derive(schemars::JsonSchema))]
pub struct PrimaryOut {
    pub name: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub age_s: Option<u64>,
    pub alive: bool,
}

/// An agent heard from recently.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "schemas", derive(schemars::JsonSchema))]
pub struct AliveOut {
    pub name: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub doing: Option<String>,
    pub age_s: u64,
}

/// This machine's queue for heavy work.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "schemas", derive(schemars::JsonSchema))]
pub struct QueueOut {
    pub snifrig: bool,
}

/// What `ferry_join` answers.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "schemas", derive(schemars::JsonSchema))]
pub struct JoinOut {
    pub agent: String,
    pub project: String,
    pub machine: String,
    /// `worker`, `member`, `orchestrator`, or `none` when not seated.
    pub level: String,
    /// Whether the agent's key holds its name here (it is seated).
    pub granted: bool,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub locked: bool,
    /// The command that fixes what keeps the agent from acting.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fix: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub primary: Option<PrimaryOut>,
    pub alive: Vec<AliveOut>,
    pub mine_open: usize,
    pub queue: QueueOut,
    /// A newer release the master approved for this platform: tell the human.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub update: Option<String>,
    pub next: String,
}

pub(crate) static DEFINITION: ToolDefinition = ToolDefinition {
    name: "ferry_join",
    title: "Join",
    description: "Call first: who you are in this fleet, your level, who is primary and alive, your open orders.",
    input_schema: r#"{"type":"object","additionalProperties":false}"#,
    output_schema: Some(
        r#"{"type":"object","properties":{"agent":{"type":"string"},"project":{"type":"string"},"machine":{"type":"string"},"level":{"type":"string"},"granted":{"type":"boolean"},"locked":{"type":"boolean"},"fix":{"type":"string"},"primary":{"type":"object"},"alive":{"type":"array"},"mine_open":{"type":"integer"},"queue":{"type":"object"},"update":{"type":"string"},"next":{"type":"string"}},"required":["agent","project","machine","level","granted","alive","mine_open","queue","next"],"additionalProperties":false}"#,
    ),
    // It records the agent's presence (an append), so it is not read-only; a second call
    // adds nothing the first did not.
    annotations: Annotations {
        read_only: false,
        destructive: false,
        idempotent: true,
        open_world: false,
    },
};

/// `ferry_join`.
#[derive(Debug)]
pub struct FerryJoin;

impl Tool for FerryJoin {
    fn definition(&self) -> &'static ToolDefinition {
        &DEFINITION
    }

    fn call(&self, args: &Map<String, Value>, cx: &mut CallContext<'_>) -> ToolOutcome {
        if let Err(refusal) = facade::parse::<JoinArgs>(DEFINITION.name, args) {
            return refusal;
        }
        let now = cx.now;
        let (channel, queue) = match cx.channel.channel_and_queue(now) {
            Ok(reached) => reached,
            Err(err) => return facade::unavailable(&err),
        };
        let snifrig = queue.is_some_and(|queue| queue.enabled());
        let joined = match channel.join(now) {
            Ok(joined) => joined,
            Err(err) => return facade::failed(&err),
        };
        let agent = joined
            .agent
            .as_ref()
            .map_or_else(|| "(none)".to_owned(), ToString::to_string);
        let (level, granted, locked, fix) = match &joined.standing {
            Standing::Seated { level } => (level.to_string(), true, false, None),
            Standing::Unseated { fix, .. } => ("none".to_owned(), false, false, Some(fix.clone())),
            Standing::Locked { fix } => ("none".to_owned(), true, true, Some(fix.clone())),
            Standing::Observer => ("none".to_owned(), false, false, None),
        };
        let summary = match &joined.standing {
            Standing::Seated { level } => format!(
                "Ferry MCP (beta): {agent} in {}, {level}; {} open order(s) of yours; next: ferry_catchup",
                joined.project, joined.mine_open
            ),
            Standing::Unseated { why, fix } => format!(
                "Ferry MCP (beta): {agent} is not seated in {}: {}; nothing was created: run `{fix}` on this machine",
                joined.project,
                why.split(" (run ").next().unwrap_or(why)
            ),
            Standing::Locked { fix } => format!(
                "Ferry MCP (beta): {agent}'s key is locked on this machine; nothing was done: run `{fix}`"
            ),
            Standing::Observer => format!(
                "Ferry MCP (beta): read-only view of {} (no --as)",
                joined.project
            ),
        };
        let update = joined.update.as_ref().map(crate::update::note);
        let summary = match &update {
            Some(update) => format!("{summary}; update {update}: tell the human"),
            None => summary,
        };
        let out = JoinOut {
            agent,
            project: joined.project.to_string(),
            machine: channel.machine(),
            level,
            granted,
            locked,
            fix,
            primary: joined.primary.map(|primary| PrimaryOut {
                name: primary.name.to_string(),
                age_s: primary.age_s,
                alive: primary.state == Some(Liveness::Alive),
            }),
            alive: joined
                .alive
                .into_iter()
                .map(|alive| AliveOut {
                    name: alive.name.to_string(),
                    doing: alive.doing,
                    age_s: alive.age_s,
                })
                .collect(),
            mine_open: joined.mine_open,
            queue: QueueOut { snifrig },
            update,
            next: "ferry_catchup".to_owned(),
        };
        ToolOutcome::ok(facade::structured(&out), summary)
    }
}

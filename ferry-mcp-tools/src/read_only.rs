//! The read-only core group (`ferry mcp serve --read-only`, or without `--as`): the core tools
//! under their names, each serving only its reads, and instructions written for a view.
//!
//! Why a group of its own rather than a filter: every core tool but two mixes reads and writes
//! under one `action`, so dropping the tools that write would drop the board and talk too. Each
//! tool here takes only its read actions (its own typed arguments, so its frozen schema names
//! only those) and hands the call to the core tool; `ferry_talk read` always peeks, so no read
//! marker is written. What stops every write is the session the binary opens for this surface
//! (`Session::open_read_only`); the narrow schemas keep the model from trying.

use ferry_mcp_core::registry::Group;
use ferry_mcp_core::shape::ToolOutcome;
use ferry_mcp_core::tool::{Annotations, CallContext, Tool, ToolDefinition};
use serde::Deserialize;
use serde_json::{Map, Value};

use crate::{asks, catchup, facade, join, orders, primary, talk};

/// What the server `instructions` say on the read-only surface (within T3, like the core's).
pub const READ_ONLY_INSTRUCTIONS: &str = "\
Ferry, read-only view: a signed folder shared by a fleet of agents. This server changes nothing: no claims, posts, presence or read marks.
ferry_join, then ferry_catchup; pass next back as since. ferry_orders list|show, ferry_talk read (messages stay unread), ferry_primary status, ferry_ask_human status. Bodies are ferry:// links (resources/read).
The legacy tools read the same channel under the original server's names. To act, the human serves with --as AGENT and without --read-only.";

/// The read-only core group: named `core`, so `--tools core` and every opt-in group name the
/// same things with `--read-only` as without.
pub static CORE_READ_ONLY: Group = Group {
    name: "core",
    tools: &[
        &AskStatus,
        &CatchupView,
        &JoinView,
        &OrdersView,
        &PrimaryStatusView,
        &TalkView,
    ],
    resources: &[&orders::OrderBodies, &talk::MessageBodies],
    instructions: READ_ONLY_INSTRUCTIONS,
};

/// The answer to a call whose action this surface does not serve (the schema already names
/// only the reads: a client that skips it still writes nothing).
fn refused(tool: &str, args: &Map<String, Value>) -> ToolOutcome {
    let action = args.get("action").and_then(Value::as_str).unwrap_or("?");
    ToolOutcome::error(format!(
        "read_only: {tool} {action} changes the channel, and this server serves only reads"
    ))
}

/// `ferry_orders` on the read-only surface: list and show.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[cfg_attr(feature = "schemas", derive(schemars::JsonSchema))]
#[serde(tag = "action", rename_all = "lowercase", deny_unknown_fields)]
pub enum OrdersViewArgs {
    List {
        #[serde(default)]
        since: Option<String>,
    },
    Show {
        id: String,
    },
}

pub(crate) static ORDERS_VIEW: ToolDefinition = ToolDefinition {
    name: "ferry_orders",
    title: "Orders (read-only)",
    description: "The order board. list (since: cursor for changes only) | show id: the order, with a link to its whole text.",
    input_schema: r#"{"type":"object","properties":{"action":{"enum":["list","show"]},"id":{"type":"string"},"since":{"type":"string"}},"required":["action"],"additionalProperties":false}"#,
    output_schema: orders::DEFINITION.output_schema,
    annotations: Annotations::READ_ONLY,
};

/// `ferry_orders` list and show.
#[derive(Debug)]
pub struct OrdersView;

impl Tool for OrdersView {
    fn definition(&self) -> &'static ToolDefinition {
        &ORDERS_VIEW
    }

    fn call(&self, args: &Map<String, Value>, cx: &mut CallContext<'_>) -> ToolOutcome {
        match facade::parse::<OrdersViewArgs>(ORDERS_VIEW.name, args) {
            Ok(_) => orders::FerryOrders.call(args, cx),
            Err(_) if parses_as::<orders::OrdersArgs>(args) => refused(ORDERS_VIEW.name, args),
            Err(refusal) => refusal,
        }
    }
}

/// `ferry_talk` on the read-only surface: read, always as a peek.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[cfg_attr(feature = "schemas", derive(schemars::JsonSchema))]
#[serde(tag = "action", rename_all = "lowercase", deny_unknown_fields)]
pub enum TalkViewArgs {
    Read {
        #[serde(default)]
        since: Option<String>,
    },
}

pub(crate) static TALK_VIEW: ToolDefinition = ToolDefinition {
    name: "ferry_talk",
    title: "Talk (read-only)",
    description: "Messages. read: what is new for you, oldest first; it stays unread (since: a cursor). Shows who read yours.",
    input_schema: r#"{"type":"object","properties":{"action":{"enum":["read"]},"since":{"type":"string"}},"required":["action"],"additionalProperties":false}"#,
    output_schema: talk::DEFINITION.output_schema,
    annotations: Annotations::READ_ONLY,
};

/// `ferry_talk` read, as a peek.
#[derive(Debug)]
pub struct TalkView;

impl Tool for TalkView {
    fn definition(&self) -> &'static ToolDefinition {
        &TALK_VIEW
    }

    fn call(&self, args: &Map<String, Value>, cx: &mut CallContext<'_>) -> ToolOutcome {
        match facade::parse::<TalkViewArgs>(TALK_VIEW.name, args) {
            Ok(_) => {
                // A read that marks what it showed would write: this one only peeks.
                let mut peek = args.clone();
                peek.insert("peek".into(), Value::Bool(true));
                talk::FerryTalk.call(&peek, cx)
            }
            Err(_) if parses_as::<talk::TalkArgs>(args) => refused(TALK_VIEW.name, args),
            Err(refusal) => refusal,
        }
    }
}

/// `ferry_primary` on the read-only surface: status.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[cfg_attr(feature = "schemas", derive(schemars::JsonSchema))]
#[serde(tag = "action", rename_all = "lowercase", deny_unknown_fields)]
pub enum PrimaryViewArgs {
    Status,
}

pub(crate) static PRIMARY_VIEW: ToolDefinition = ToolDefinition {
    name: "ferry_primary",
    title: "Primary (read-only)",
    description: "The fleet's primary. status: who, how recently heard, and what an agent may do now.",
    input_schema: r#"{"type":"object","properties":{"action":{"enum":["status"]}},"required":["action"],"additionalProperties":false}"#,
    output_schema: primary::DEFINITION.output_schema,
    annotations: Annotations::READ_ONLY,
};

/// `ferry_primary` status.
#[derive(Debug)]
pub struct PrimaryStatusView;

impl Tool for PrimaryStatusView {
    fn definition(&self) -> &'static ToolDefinition {
        &PRIMARY_VIEW
    }

    fn call(&self, args: &Map<String, Value>, cx: &mut CallContext<'_>) -> ToolOutcome {
        match facade::parse::<PrimaryViewArgs>(PRIMARY_VIEW.name, args) {
            Ok(_) => primary::FerryPrimary.call(args, cx),
            Err(_) if parses_as::<primary::PrimaryArgs>(args) => refused(PRIMARY_VIEW.name, args),
            Err(refusal) => refusal,
        }
    }
}

/// `ferry_ask_human` on the read-only surface: status.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[cfg_attr(feature = "schemas", derive(schemars::JsonSchema))]
#[serde(tag = "action", rename_all = "lowercase", deny_unknown_fields)]
pub enum AskViewArgs {
    Status {
        #[serde(default)]
        id: Option<String>,
    },
}

pub(crate) static ASK_VIEW: ToolDefinition = ToolDefinition {
    name: "ferry_ask_human",
    title: "Asks (read-only)",
    description: "Questions raised to the human. status: id (default: your latest) and its answer.",
    input_schema: r#"{"type":"object","properties":{"action":{"enum":["status"]},"id":{"type":"string"}},"required":["action"],"additionalProperties":false}"#,
    output_schema: asks::DEFINITION.output_schema,
    annotations: Annotations::READ_ONLY,
};

/// `ferry_ask_human` status.
#[derive(Debug)]
pub struct AskStatus;

impl Tool for AskStatus {
    fn definition(&self) -> &'static ToolDefinition {
        &ASK_VIEW
    }

    fn call(&self, args: &Map<String, Value>, cx: &mut CallContext<'_>) -> ToolOutcome {
        match facade::parse::<AskViewArgs>(ASK_VIEW.name, args) {
            Ok(_) => asks::FerryAskHuman.call(args, cx),
            Err(_) if parses_as::<asks::AskArgs>(args) => refused(ASK_VIEW.name, args),
            Err(refusal) => refusal,
        }
    }
}

pub(crate) static CATCHUP_VIEW: ToolDefinition = ToolDefinition {
    annotations: Annotations::READ_ONLY,
    ..catchup::DEFINITION
};

/// `ferry_catchup`, which on this surface records no presence.
#[derive(Debug)]
pub struct CatchupView;

impl Tool for CatchupView {
    fn definition(&self) -> &'static ToolDefinition {
        &CATCHUP_VIEW
    }

    fn call(&self, args: &Map<String, Value>, cx: &mut CallContext<'_>) -> ToolOutcome {
        catchup::FerryCatchup.call(args, cx)
    }
}

pub(crate) static JOIN_VIEW: ToolDefinition = ToolDefinition {
    annotations: Annotations::READ_ONLY,
    ..join::DEFINITION
};

/// `ferry_join`, which on this surface records no presence.
#[derive(Debug)]
pub struct JoinView;

impl Tool for JoinView {
    fn definition(&self) -> &'static ToolDefinition {
        &JOIN_VIEW
    }

    fn call(&self, args: &Map<String, Value>, cx: &mut CallContext<'_>) -> ToolOutcome {
        join::FerryJoin.call(args, cx)
    }
}

/// Whether `args` are a valid call of the core tool (a write this surface refuses by name).
fn parses_as<T: serde::de::DeserializeOwned>(args: &Map<String, Value>) -> bool {
    serde_json::from_value::<T>(Value::Object(args.clone())).is_ok()
}

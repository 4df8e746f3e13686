//! `ferry_catchup`: a bounded digest (budget T6 of `docs/mcp-budgets.md`: at most 800 estimated tokens) of what the
//! agent needs to go on: the primary, its brief, the newest decisions, the open orders, its
//! own orders and asks, what waits on it. Built from the folded state, never from history;
//! with `since`, only what changed after that cursor.

use ferry_mcp_core::channel::fold::state::asks::AskState;
use ferry_mcp_core::channel::fold::state::orders::OrderState;
use ferry_mcp_core::channel::ops::fleet::{Digest, DigestLimits, DigestOrder};
use ferry_mcp_core::channel::ops::primary::Liveness;
use ferry_mcp_core::guard;
use ferry_mcp_core::shape::{ResourceLink, ResourceUri, ToolOutcome};
use ferry_mcp_core::tool::{Annotations, CallContext, Tool, ToolDefinition};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::facade;

/// The arguments of `ferry_catchup`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[cfg_attr(feature = "schemas", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct CatchupArgs {
    #[serde(default)]
    pub since: Option<String>,
    #[serde(default)]
    pub detail: bool,
}

/// An order in the digest.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "schemas", derive(schemars::JsonSchema))]
pub struct OrderOut {
    pub id: String,
    pub title: String,
    #[cfg_attr(feature = "schemas", schemars(with = "String"))]
    pub state: OrderState,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub holder: Option<String>,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub silent: bool,
    /// The order's full text (`resources/read`), on the caller's first orders: here as well
    /// as a `resource_link` item, which Codex never shows its model.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub link: Option<String>,
}

/// The brief in the digest.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "schemas", derive(schemars::JsonSchema))]
pub struct BriefOut {
    pub objective: String,
    pub constraints: Vec<String>,
}

/// A decision in the digest.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "schemas", derive(schemars::JsonSchema))]
pub struct DecisionOut {
    pub id: String,
    pub line: String,
    /// When it was decided, in milliseconds since the Unix epoch (a `Timestamp`).
    pub at: u64,
}

/// An ask in the digest.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "schemas", derive(schemars::JsonSchema))]
pub struct AskOut {
    pub id: String,
    #[cfg_attr(feature = "schemas", schemars(with = "String"))]
    pub state: AskState,
}

/// The primary in the digest.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "schemas", derive(schemars::JsonSchema))]
pub struct PrimaryOut {
    pub name: String,
    #[cfg_attr(feature = "schemas", schemars(with = "String"))]
    pub state: Liveness,
}

/// What `ferry_catchup` answers.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "schemas", derive(schemars::JsonSchema))]
pub struct CatchupOut {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub primary: Option<PrimaryOut>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub brief: Option<BriefOut>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub decisions: Vec<DecisionOut>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub open: Vec<OrderOut>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub mine: Vec<OrderOut>,
    /// How many orders `open` would list in all, when it shows fewer.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub open_total: Option<usize>,
    /// How many of the caller's orders there are, when `mine` shows fewer.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mine_total: Option<usize>,
    /// `open` or `mine` leaves orders out (`ferry_orders list` has them all).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub truncated: bool,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub asks: Vec<AskOut>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub waiting_on_you: Vec<String>,
    /// Pass as `since` next time to get only what changed.
    pub next: String,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub reset: bool,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub redacted: bool,
    /// A newer release the master approved for this platform: tell the human.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub update: Option<String>,
}

pub(crate) static DEFINITION: ToolDefinition = ToolDefinition {
    name: "ferry_catchup",
    title: "Catch up",
    description: "A short digest: primary, brief, decisions, open orders, yours, your asks, what waits on you. Pass next back as since for only what changed.",
    input_schema: r#"{"type":"object","properties":{"since":{"type":"string"},"detail":{"type":"boolean"}},"additionalProperties":false}"#,
    output_schema: Some(
        r#"{"type":"object","properties":{"primary":{"type":"object"},"brief":{"type":"object"},"decisions":{"type":"array"},"open":{"type":"array"},"mine":{"type":"array"},"open_total":{"type":"integer"},"mine_total":{"type":"integer"},"truncated":{"type":"boolean"},"asks":{"type":"array"},"waiting_on_you":{"type":"array"},"next":{"type":"string"},"reset":{"type":"boolean"},"redacted":{"type":"boolean"},"update":{"type":"string"}},"required":["next"],"additionalProperties":false}"#,
    ),
    // It records the agent's presence (an append), as `ferry_join` does.
    annotations: Annotations {
        read_only: false,
        destructive: false,
        idempotent: true,
        open_world: false,
    },
};

/// Characters an order title keeps in the digest (the full title is in `ferry_orders show`).
const TITLE_CHARS: usize = 32;
/// With `detail`, titles keep this many.
const DETAIL_TITLE_CHARS: usize = 100;
/// Resource links to the caller's orders' bodies (content blocks, beside the digest).
const LINKS: usize = 3;

/// `ferry_catchup`.
#[derive(Debug)]
pub struct FerryCatchup;

impl Tool for FerryCatchup {
    fn definition(&self) -> &'static ToolDefinition {
        &DEFINITION
    }

    fn call(&self, args: &Map<String, Value>, cx: &mut CallContext<'_>) -> ToolOutcome {
        let args = match facade::parse::<CatchupArgs>(DEFINITION.name, args) {
            Ok(args) => args,
            Err(refusal) => return refusal,
        };
        let now = cx.now;
        let project = cx.project.to_owned();
        let channel = match facade::channel(cx) {
            Ok(channel) => channel,
            Err(refusal) => return refusal,
        };
        let limits = if args.detail {
            DigestLimits::DETAIL
        } else {
            DigestLimits::DEFAULT
        };
        match channel.catchup(args.since.as_deref(), limits, now) {
            Ok(digest) => shape(&digest, &project, args.detail),
            Err(err) => facade::failed(&err),
        }
    }
}

fn shape(digest: &Digest, project: &str, detail: bool) -> ToolOutcome {
    let title_chars = if detail {
        DETAIL_TITLE_CHARS
    } else {
        TITLE_CHARS
    };
    let mut redacted = false;
    let mut clean = |text: &str| {
        let clean = guard::redact(text);
        redacted |= clean.redacted;
        clean.text.into_owned()
    };
    let mut order = |order: &DigestOrder, with_holder: bool| OrderOut {
        id: order.id.clone(),
        title: crate::orders::clip(&clean(&order.title), title_chars),
        state: order.state,
        holder: with_holder
            .then(|| order.holder.as_ref().map(ToString::to_string))
            .flatten(),
        silent: order.silent,
        link: None,
    };
    let open: Vec<OrderOut> = digest.open.iter().map(|o| order(o, true)).collect();
    let links: Vec<ResourceLink> = digest
        .mine
        .iter()
        .take(LINKS)
        .filter_map(|order| {
            ResourceUri::new(project, crate::orders::ORDER_KIND, &order.id)
                .ok()
                .map(|uri| ResourceLink::new(uri, format!("order {}", order.id)))
        })
        .collect();
    // The caller holds its own orders: no holder to repeat.
    let mut mine: Vec<OrderOut> = digest.mine.iter().map(|o| order(o, false)).collect();
    for (order, link) in mine.iter_mut().zip(&links) {
        order.link = Some(link.uri.to_string());
    }
    let out = CatchupOut {
        primary: digest.primary.as_ref().map(|primary| PrimaryOut {
            name: primary.name.to_string(),
            // Never heard from: silent, as `ops::primary::status` judges it.
            state: primary.state.unwrap_or(Liveness::Silent),
        }),
        brief: digest.brief.as_ref().map(|brief| BriefOut {
            objective: clean(&brief.objective),
            constraints: brief.constraints.iter().map(|line| clean(line)).collect(),
        }),
        decisions: digest
            .decisions
            .iter()
            .map(|decision| DecisionOut {
                id: decision.id.clone(),
                line: clean(&decision.line),
                at: decision.at.0,
            })
            .collect(),
        open_total: (digest.open_total > open.len()).then_some(digest.open_total),
        mine_total: (digest.mine_total > mine.len()).then_some(digest.mine_total),
        truncated: digest.open_total > open.len() || digest.mine_total > mine.len(),
        open,
        mine,
        asks: digest
            .asks
            .iter()
            .map(|(id, state)| AskOut {
                id: id.clone(),
                state: *state,
            })
            .collect(),
        waiting_on_you: digest.waiting_on_you.clone(),
        next: digest.next.to_string(),
        reset: digest.reset,
        redacted,
        update: digest.update.as_ref().map(crate::update::note),
    };
    let changed = out.primary.is_some()
        || out.brief.is_some()
        || !out.decisions.is_empty()
        || !out.open.is_empty()
        || !out.mine.is_empty()
        || !out.asks.is_empty();
    let summary = if !changed && out.waiting_on_you.is_empty() {
        "nothing new".to_owned()
    } else {
        let counted = |shown: usize, total: Option<usize>, what: &str| match total {
            Some(total) => format!("{total} {what} ({shown} shown)"),
            None => format!("{shown} {what}"),
        };
        format!(
            "{}, {}, {} waiting on you{}",
            counted(out.open.len(), out.open_total, "open"),
            counted(out.mine.len(), out.mine_total, "yours"),
            out.waiting_on_you.len(),
            out.primary
                .as_ref()
                .map(|primary| format!("; primary {} ({})", primary.name, primary.state))
                .unwrap_or_default()
        )
    };
    let summary = match &out.update {
        Some(update) => format!("{summary}; update {update}: tell the human"),
        None => summary,
    };
    let mut outcome = ToolOutcome::ok(facade::structured(&out), summary);
    for link in links {
        outcome = outcome.with_link(link);
    }
    outcome
}

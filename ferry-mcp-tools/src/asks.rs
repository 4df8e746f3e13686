//! `ferry_ask_human`: raise a question that only the human can decide, with a recommendation,
//! and read the answer. The MCP can ask, never approve: answers are the master's alone.

use ferry_mcp_core::channel::fold::state::asks::AskState;
use ferry_mcp_core::channel::ops::asks::{AskView, AsksError, RaiseRequest};
use ferry_mcp_core::guard;
use ferry_mcp_core::shape::ToolOutcome;
use ferry_mcp_core::tool::{Annotations, CallContext, Tool, ToolDefinition};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::facade;

/// The arguments of `ferry_ask_human`, one variant per action.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[cfg_attr(feature = "schemas", derive(schemars::JsonSchema))]
#[serde(tag = "action", rename_all = "lowercase", deny_unknown_fields)]
pub enum AskArgs {
    Raise {
        title: String,
        recommendation: String,
        #[serde(default)]
        reasoning: String,
    },
    Status {
        #[serde(default)]
        id: Option<String>,
    },
}

/// What `ferry_ask_human` answers.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "schemas", derive(schemars::JsonSchema))]
pub struct AskOut {
    pub id: String,
    /// `pending`, `approved`, `rejected` or `sent_back`.
    #[cfg_attr(feature = "schemas", schemars(with = "String"))]
    pub state: AskState,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
    /// What to do next, for clients that show the model structuredContent and not the text.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub hint: Option<String>,
}

pub(crate) static DEFINITION: ToolDefinition = ToolDefinition {
    name: "ferry_ask_human",
    title: "Ask the human",
    description: "Ask the human for a decision only they can make. raise: title, recommendation, reasoning (max 1200 chars). status: id (default: your latest). You cannot approve.",
    input_schema: r#"{"type":"object","properties":{"action":{"enum":["raise","status"]},"title":{"type":"string"},"recommendation":{"type":"string"},"reasoning":{"type":"string"},"id":{"type":"string"}},"required":["action"],"additionalProperties":false}"#,
    output_schema: Some(
        r#"{"type":"object","properties":{"id":{"type":"string"},"state":{"type":"string"},"note":{"type":"string"},"hint":{"type":"string"}},"required":["id","state"],"additionalProperties":false}"#,
    ),
    annotations: Annotations::APPEND,
};

/// `ferry_ask_human`.
#[derive(Debug)]
pub struct FerryAskHuman;

fn out(ask: &AskView) -> AskOut {
    AskOut {
        id: ask.id.clone(),
        state: ask.state,
        note: ask
            .note
            .as_deref()
            .map(|note| guard::redact(note).text.into_owned()),
        hint: None,
    }
}

impl Tool for FerryAskHuman {
    fn definition(&self) -> &'static ToolDefinition {
        &DEFINITION
    }

    fn call(&self, args: &Map<String, Value>, cx: &mut CallContext<'_>) -> ToolOutcome {
        let (args, now, channel) = match facade::start::<AskArgs>(DEFINITION.name, args, cx) {
            Ok(started) => started,
            Err(refusal) => return refusal,
        };
        let result = match args {
            AskArgs::Raise {
                title,
                recommendation,
                reasoning,
            } => {
                let request = RaiseRequest {
                    title,
                    recommendation,
                    reasoning,
                };
                channel
                    .raise(&request, now)
                    .and_then(|id| channel.ask(&id, now))
                    .map(|ask| {
                        let hint = format!("check back with status id {}", ask.id);
                        let summary = format!("asked the human ({}); {hint}", ask.id);
                        let answered = AskOut {
                            hint: Some(hint),
                            ..out(&ask)
                        };
                        (answered, summary)
                    })
            }
            AskArgs::Status { id: Some(id) } => channel.ask(&id, now).map(|ask| {
                let summary = format!("ask {} is {}", ask.id, ask.state);
                (out(&ask), summary)
            }),
            AskArgs::Status { id: None } => {
                let me = channel.me();
                channel.asks(me.as_ref(), false, now).and_then(|asks| {
                    let ask = asks.into_iter().next().ok_or(AsksError::NoAskYet)?;
                    let summary = format!("your latest ask {} is {}", ask.id, ask.state);
                    Ok((out(&ask), summary))
                })
            }
        };
        match result {
            // Presence only for a call that did what it asked: a refused call writes nothing.
            Ok((out, summary)) => {
                channel.note_alive(now);
                ToolOutcome::ok(facade::structured(&out), summary)
            }
            Err(err) => facade::failed(&err),
        }
    }
}

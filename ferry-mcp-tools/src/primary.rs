//! `ferry_primary`: who leads the fleet, whether it has gone quiet, and what the caller may do
//! about it: stand by, take over (an Orchestrator, only when the primary is silent), or hand
//! the role back.

use ferry_mcp_core::channel::ops::primary::{
    Advice, Liveness, PrimaryStatus, Takeover, TakeoverResult,
};
use ferry_mcp_core::shape::ToolOutcome;
use ferry_mcp_core::tool::{Annotations, CallContext, Tool, ToolDefinition};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::facade;

/// The arguments of `ferry_primary`, one variant per action.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[cfg_attr(feature = "schemas", derive(schemars::JsonSchema))]
#[serde(tag = "action", rename_all = "lowercase", deny_unknown_fields)]
pub enum PrimaryArgs {
    Status,
    Standby,
    Takeover,
    Release,
}

/// What `ferry_primary` answers.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "schemas", derive(schemars::JsonSchema))]
pub struct PrimaryOut {
    /// The primary, or none.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub primary: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub age_s: Option<u64>,
    /// `alive`, `quiet` or `silent`.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "schemas", schemars(with = "Option<String>"))]
    pub state: Option<Liveness>,
    /// What the caller may do now.
    pub rule: String,
    /// For a takeover: `took_over`, `already_primary` or `lost_race`.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "schemas", schemars(with = "Option<String>"))]
    pub outcome: Option<TakeoverResult>,
}

pub(crate) static DEFINITION: ToolDefinition = ToolDefinition {
    name: "ferry_primary",
    title: "Primary",
    description: "The fleet's primary. status: who, how recently heard, and what you may do now. standby. takeover: Orchestrator, only when the primary is silent. release.",
    input_schema: r#"{"type":"object","properties":{"action":{"enum":["status","standby","takeover","release"]}},"required":["action"],"additionalProperties":false}"#,
    output_schema: Some(
        r#"{"type":"object","properties":{"primary":{"type":"string"},"age_s":{"type":"integer"},"state":{"type":"string"},"rule":{"type":"string"},"outcome":{"type":"string"}},"required":["rule"],"additionalProperties":false}"#,
    ),
    annotations: Annotations::APPEND,
};

/// `ferry_primary`.
#[derive(Debug)]
pub struct FerryPrimary;

fn out(status: &PrimaryStatus, outcome: Option<TakeoverResult>) -> PrimaryOut {
    PrimaryOut {
        primary: status.primary.as_ref().map(ToString::to_string),
        age_s: status.age_s,
        state: status.state,
        rule: rule(status),
        outcome,
    }
}

/// What the agent may do now, in its MCP actions.
pub(crate) fn rule(status: &PrimaryStatus) -> String {
    match &status.advice {
        Advice::YouArePrimary => {
            "you are primary: keep your brief current (`ferry brief set|decide`), release when you stop".to_owned()
        }
        Advice::NoPrimaryTakeOver => "there is no primary: you may take over (action takeover)".to_owned(),
        Advice::NoPrimary => {
            "there is no primary: work your orders; an Orchestrator may take over".to_owned()
        }
        Advice::SilentTakeOver { primary } => {
            format!("{primary} is silent: you may take over (action takeover)")
        }
        Advice::SilentNotYet { primary, reason } => format!(
            "{primary} is silent here, but a take would not count yet ({reason}): standby, work your orders, poll ferry_catchup"
        ),
        Advice::SilentTellSomeone { primary } => format!(
            "{primary} is silent: tell the human (ferry_ask_human) or an Orchestrator; keep working your orders"
        ),
        Advice::Heard { primary, state } => format!(
            "{primary} is {} ({}s ago; silent after {}s): standby, work your orders, poll ferry_catchup",
            state.as_str(),
            status.age_s.unwrap_or(0),
            status.quiet_period_s
        ),
    }
}

impl Tool for FerryPrimary {
    fn definition(&self) -> &'static ToolDefinition {
        &DEFINITION
    }

    fn call(&self, args: &Map<String, Value>, cx: &mut CallContext<'_>) -> ToolOutcome {
        let (args, now, channel) = match facade::start::<PrimaryArgs>(DEFINITION.name, args, cx) {
            Ok(started) => started,
            Err(refusal) => return refusal,
        };
        let result = match args {
            PrimaryArgs::Status => channel.primary_status(now).map(|status| {
                let summary = rule(&status);
                (out(&status, None), summary)
            }),
            PrimaryArgs::Standby => channel.standby(now).map(|status| {
                (out(&status, None), format!("standing by; {}", rule(&status)))
            }),
            PrimaryArgs::Release => channel
                .release_primary(now)
                .and_then(|()| channel.primary_status(now))
                .map(|status| (out(&status, None), "released the primary's role".to_owned())),
            PrimaryArgs::Takeover => channel.takeover(now).and_then(|outcome| {
                let status = channel.primary_status(now)?;
                let answer = out(&status, Some(outcome.result()));
                Ok(match outcome {
                    Takeover::TookOver { from } => (
                        answer,
                        match from {
                            Some(from) => format!(
                                "you are primary, taking over from {from} (the fleet was told); call ferry_catchup"
                            ),
                            None => "you are primary; call ferry_catchup".to_owned(),
                        },
                    ),
                    Takeover::AlreadyPrimary => (
                        answer,
                        "you are primary already".to_owned(),
                    ),
                    Takeover::LostRace { primary } => (
                        answer,
                        format!("{primary} took over first (its takeover won the race): standby"),
                    ),
                })
            }),
        };
        match result {
            // Presence only for a call that did what it asked (a refused call writes nothing),
            // and never after a takeover, whose entry says the new primary is alive.
            Ok((out, summary)) => {
                if args != PrimaryArgs::Takeover {
                    channel.note_alive(now);
                }
                ToolOutcome::ok(facade::structured(&out), summary)
            }
            Err(err) => facade::failed(&err),
        }
    }
}

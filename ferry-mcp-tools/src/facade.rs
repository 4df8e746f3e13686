//! What every tool does the same way: parse its arguments into its typed value, reach the
//! channel (through the port), and turn an operation's error into a tool error the model can act on.
//!
//! A tool stays a thin facade: parse, call one operation, shape the answer. The text of an
//! error starts with the operation error's stable code, so a model (and a test) can tell a
//! refusal from a mistake: `denied: level worker: claim needs member`,
//! `unknown_order: unknown order m99`.

use ferry_mcp_core::channel::fold::levels::Refusal;
use ferry_mcp_core::channel::ops::{OperationError, OpsError};
use ferry_mcp_core::port::{Channel, Unavailable};
use ferry_mcp_core::shape::ResourceUri;
use ferry_mcp_core::shape::{MAX_STRUCTURED_CHARS, TRUNCATION_FIELDS_CHARS, ToolOutcome};
use ferry_mcp_core::time::Timestamp;
use ferry_mcp_core::tool::{CallContext, ReadContext, ResourceError, ResourceText};
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::{Map, Value};

/// The typed arguments of `tool`, or a tool error naming what is wrong (the schema already
/// let them through; this is where per-action fields are checked).
pub(crate) fn parse<T: DeserializeOwned>(
    tool: &str,
    args: &Map<String, Value>,
) -> Result<T, ToolOutcome> {
    serde_json::from_value(Value::Object(args.clone()))
        .map_err(|err| ToolOutcome::error(format!("invalid arguments for {tool}: {err}")))
}

/// The channel of this server's agent, or the tool error that says why there is none.
pub(crate) fn channel<'a>(cx: &'a mut CallContext<'_>) -> Result<&'a mut dyn Channel, ToolOutcome> {
    let now = cx.now;
    cx.channel.channel(now).map_err(|err| unavailable(&err))
}

/// What a tool starts with: its typed arguments, the time of the call, and the channel (the
/// arguments are checked first, so a bad call is refused without touching the channel).
pub(crate) fn start<'a, T: DeserializeOwned>(
    tool: &str,
    args: &Map<String, Value>,
    cx: &'a mut CallContext<'_>,
) -> Result<(T, Timestamp, &'a mut dyn Channel), ToolOutcome> {
    let parsed = parse(tool, args)?;
    let now = cx.now;
    Ok((parsed, now, channel(cx)?))
}

/// The tool error of a channel that cannot be reached.
/// Reads the text a resource URI names through the channel, the one way every resource kind
/// reads: an id that names nothing (`not_found`) is not found, any other failure unreadable.
pub(crate) fn read_resource<E: std::error::Error>(
    uri: &ResourceUri,
    cx: &mut ReadContext<'_>,
    mime_type: &'static str,
    read: impl FnOnce(&mut dyn Channel, &str, Timestamp) -> Result<String, E>,
    not_found: impl Fn(&E) -> bool,
) -> Result<ResourceText, ResourceError> {
    let now = cx.now;
    let channel = cx
        .channel
        .channel(now)
        .map_err(|err| ResourceError::Unreadable(err.to_string()))?;
    match read(channel, uri.id(), now) {
        Ok(text) => Ok(ResourceText { mime_type, text }),
        Err(err) if not_found(&err) => Err(ResourceError::NotFound),
        Err(err) => Err(ResourceError::Unreadable(err.to_string())),
    }
}

pub(crate) fn unavailable(err: &Unavailable) -> ToolOutcome {
    match err.fix() {
        Some(fix) => ToolOutcome::error(format!("{}: {}", err.code(), fix.with(&err.to_string()))),
        None => ToolOutcome::error(format!("{}: {err}", err.code())),
    }
}

/// The tool error of an operation error (any domain's): its code, then its message.
pub(crate) fn failed(err: &dyn OperationError) -> ToolOutcome {
    match err.common() {
        Some(OpsError::Refused(Refusal::MissingLevel {
            operation,
            needed,
            has,
            ..
        })) => ToolOutcome::error(format!(
            "denied: level {has}: {operation} needs {needed} (ask the human with ferry_ask_human)"
        )),
        Some(common) if common.fix().is_some() => {
            let fix = common.fix().expect("matched above");
            ToolOutcome::error(format!("{}: {}", err.code(), fix.with(&err.to_string())))
        }
        _ => ToolOutcome::error(format!("{}: {err}", err.code())),
    }
}

/// The structuredContent of a result value.
pub(crate) fn structured<T: Serialize>(value: &T) -> Value {
    serde_json::to_value(value).expect("tool results always serialize")
}

/// How many of the first `rows` fit in what is left of the structuredContent cap once `reserve`
/// characters are kept for the other fields: at least one, so a reader always moves on.
pub(crate) fn rows_that_fit<T: Serialize>(rows: &[T], reserve: usize) -> usize {
    let budget = MAX_STRUCTURED_CHARS.saturating_sub(TRUNCATION_FIELDS_CHARS + reserve);
    let mut used = 0;
    let mut given = 0;
    for row in rows {
        let chars = serde_json::to_string(row).map_or(0, |text| text.chars().count()) + 1;
        if given > 0 && used + chars > budget {
            break;
        }
        used += chars;
        given += 1;
    }
    given
}

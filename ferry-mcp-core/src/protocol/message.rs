//! Input bytes: one line classified as a request, a notification, a batch, or the precise
//! reason it is none of these. Nothing here can fail: every input gets a classification.

use serde_json::{Map, Value};

/// What one input line (or one element of a batch array) is.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Incoming {
    /// Nothing but whitespace: skipped without an answer.
    Blank,
    Request {
        id: Value,
        method: String,
        params: Option<Value>,
    },
    Notification {
        method: String,
        params: Option<Value>,
    },
    /// A client's response to a server request; we send none, so it is dropped.
    Response,
    Batch(Vec<Value>),
    /// `-32700` (answered with id null).
    ParseError(&'static str),
    /// `-32600`, with the id when one could be read.
    Invalid {
        id: Value,
        reason: &'static str,
    },
}

pub(crate) fn parse_line(line: &[u8]) -> Incoming {
    let line = line.strip_suffix(b"\r").unwrap_or(line);
    let Ok(text) = std::str::from_utf8(line) else {
        return Incoming::ParseError("parse error: invalid utf-8");
    };
    if text.trim().is_empty() {
        return Incoming::Blank;
    }
    match serde_json::from_str::<Value>(text) {
        Ok(Value::Array(items)) => Incoming::Batch(items),
        Ok(value) => classify(value),
        Err(_) => Incoming::ParseError("parse error: invalid json"),
    }
}

/// Classifies one JSON value as a JSON-RPC 2.0 message.
pub(crate) fn classify(value: Value) -> Incoming {
    let Value::Object(mut object) = value else {
        return Incoming::Invalid {
            id: Value::Null,
            reason: "invalid request: not a json-rpc object",
        };
    };
    let id = object.remove("id");
    let readable_id = match &id {
        Some(id @ (Value::Number(_) | Value::String(_))) => id.clone(),
        _ => Value::Null,
    };
    if object.get("jsonrpc").and_then(Value::as_str) != Some("2.0") {
        return Incoming::Invalid {
            id: readable_id,
            reason: "invalid request: jsonrpc must be \"2.0\"",
        };
    }
    let method = match object.remove("method") {
        Some(Value::String(method)) => method,
        Some(_) => {
            return Incoming::Invalid {
                id: readable_id,
                reason: "invalid request: method must be a string",
            };
        }
        None if id.is_some() && (object.contains_key("result") || object.contains_key("error")) => {
            return Incoming::Response;
        }
        None => {
            return Incoming::Invalid {
                id: readable_id,
                reason: "invalid request: no method",
            };
        }
    };
    let params = match object.remove("params") {
        None | Some(Value::Null) => None,
        Some(params @ Value::Object(_)) => Some(params),
        // A notification is never answered, whatever it holds: one whose params we cannot use
        // is a notification without params.
        Some(_) if id.is_none() => None,
        Some(_) => {
            return Incoming::Invalid {
                id: readable_id,
                reason: "invalid request: params must be an object",
            };
        }
    };
    match id {
        None => Incoming::Notification { method, params },
        Some(Value::Number(_) | Value::String(_)) => Incoming::Request {
            id: readable_id,
            method,
            params,
        },
        Some(_) => Incoming::Invalid {
            id: Value::Null,
            reason: "invalid request: id must be a string or a number",
        },
    }
}

/// `params._meta`, when present.
pub(crate) fn meta(params: Option<&Value>) -> Option<&Map<String, Value>> {
    params?.get("_meta")?.as_object()
}

/// Reads the top-level `"id"` from the first bytes of a line too long to parse, so the client
/// learns which request failed. Only a string or number id directly inside the outer object
/// counts; anything ambiguous gives `None`.
pub(crate) fn sniff_id(prefix: &[u8]) -> Option<Value> {
    let mut depth = 0usize;
    let mut expecting_key = false;
    let mut i = 0;
    while i < prefix.len() {
        match prefix[i] {
            b'"' => {
                let end = string_end(prefix, i)?;
                if depth == 1 && expecting_key {
                    expecting_key = false;
                    let key: String = serde_json::from_slice(&prefix[i..=end]).ok()?;
                    if key == "id" {
                        return id_value(after_colon(prefix, end + 1)?);
                    }
                }
                i = end;
            }
            b'{' | b'[' => {
                depth += 1;
                expecting_key = depth == 1 && prefix[i] == b'{';
            }
            b'}' | b']' => depth = depth.checked_sub(1)?,
            b',' if depth == 1 => expecting_key = true,
            _ => {}
        }
        i += 1;
    }
    None
}

/// Index of the closing quote of the string opening at `start`.
fn string_end(bytes: &[u8], start: usize) -> Option<usize> {
    let mut i = start + 1;
    while i < bytes.len() {
        match bytes[i] {
            b'\\' => i += 2,
            b'"' => return Some(i),
            _ => i += 1,
        }
    }
    None
}

fn after_colon(bytes: &[u8], from: usize) -> Option<&[u8]> {
    let rest = bytes.get(from..)?;
    let colon = rest.iter().position(|b| !b.is_ascii_whitespace())?;
    if rest[colon] != b':' {
        return None;
    }
    let rest = &rest[colon + 1..];
    let start = rest.iter().position(|b| !b.is_ascii_whitespace())?;
    Some(&rest[start..])
}

fn id_value(bytes: &[u8]) -> Option<Value> {
    match bytes.first()? {
        b'"' => {
            let end = string_end(bytes, 0)?;
            serde_json::from_slice::<String>(&bytes[..=end])
                .ok()
                .map(Value::String)
        }
        b'-' | b'0'..=b'9' => {
            let len = bytes
                .iter()
                .position(|b| !matches!(b, b'-' | b'+' | b'.' | b'e' | b'E' | b'0'..=b'9'))?;
            serde_json::from_slice::<serde_json::Number>(&bytes[..len])
                .ok()
                .map(Value::Number)
        }
        _ => None,
    }
}

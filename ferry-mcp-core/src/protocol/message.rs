//! Input bytes: one line classified as a request, a notification, a batch, or the precise
//! reason it is none of these. Nothing here can fail: every input gets a classification.
//!
//! A line is parsed twice: once into a `Value` (what every check reads), and once more for the
//! raw texts an answer echoes byte for byte (the id, a progress token, a cancelled request's
//! id), which a `Value` would round (serde_json's `arbitrary_precision` stays off).

use serde::de::{DeserializeSeed, IgnoredAny, MapAccess, Visitor};
use serde_json::value::RawValue;
use serde_json::{Map, Value};

use super::wire::Id;

/// What one input line (or one element of a batch array) is.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Incoming {
    /// Nothing but whitespace: skipped without an answer.
    Blank,
    Request {
        id: Id,
        method: String,
        params: Option<Value>,
        /// `params._meta.progressToken`, when it is a string or a number.
        progress_token: Option<Id>,
    },
    Notification {
        method: String,
        params: Option<Value>,
        /// The `requestId` of a `notifications/cancelled`, when it is a string or a number.
        cancels: Option<Id>,
    },
    /// A client's response to a server request; we send none, so it is dropped.
    Response,
    /// The elements of a batch array, each classified (none of them is a batch).
    Batch(Vec<Incoming>),
    /// `-32700` (answered with id null).
    ParseError(&'static str),
    /// `-32600`, with the id when one could be read.
    Invalid { id: Id, reason: &'static str },
}

pub(crate) fn parse_line(line: &[u8]) -> Incoming {
    let line = line.strip_suffix(b"\r").unwrap_or(line);
    let Ok(text) = std::str::from_utf8(line) else {
        return Incoming::ParseError("parse error: invalid utf-8");
    };
    if text.trim().is_empty() {
        return Incoming::Blank;
    }
    let invalid_json = Incoming::ParseError("parse error: invalid json");
    match serde_json::from_str::<Value>(text) {
        Ok(Value::Array(items)) => {
            // The same text read again for the raw elements, in the same order.
            let Ok(raw_items) = serde_json::from_str::<Vec<&RawValue>>(text) else {
                return invalid_json;
            };
            Incoming::Batch(
                items
                    .into_iter()
                    .zip(raw_items)
                    .map(|(item, raw)| classify(item, raw.get()))
                    .collect(),
            )
        }
        Ok(value) => classify(value, text),
        Err(_) => invalid_json,
    }
}

/// Classifies one JSON value as a JSON-RPC 2.0 message; `text` is its JSON text, where the raw
/// id and progress token are read.
fn classify(value: Value, text: &str) -> Incoming {
    let Value::Object(mut object) = value else {
        return Incoming::Invalid {
            id: Id::null(),
            reason: "invalid request: not a json-rpc object",
        };
    };
    let [raw_id, raw_params] = members(text, ["id", "params"]);
    let id = object.remove("id");
    let readable_id = raw_id.and_then(Id::from_raw).unwrap_or_else(Id::null);
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
    let in_params = |path: &[&str]| {
        let mut raw = raw_params?;
        for key in path {
            let [inner] = members(raw.get(), [*key]);
            raw = inner?;
        }
        Id::from_raw(raw)
    };
    match id {
        None => Incoming::Notification {
            cancels: if method == "notifications/cancelled" {
                in_params(&["requestId"])
            } else {
                None
            },
            method,
            params,
        },
        Some(Value::Number(_) | Value::String(_)) => Incoming::Request {
            id: readable_id,
            progress_token: in_params(&["_meta", "progressToken"]),
            method,
            params,
        },
        Some(_) => Incoming::Invalid {
            id: Id::null(),
            reason: "invalid request: id must be a string or a number",
        },
    }
}

/// The raw values of the members `keys` of the JSON object `object` (each `None` when absent,
/// or all when `object` is not an object). Of duplicate keys the last counts, as in a `Value`.
fn members<'a, const N: usize>(object: &'a str, keys: [&str; N]) -> [Option<&'a RawValue>; N] {
    struct Members<'k, const N: usize>([&'k str; N]);
    impl<'de, const N: usize> Visitor<'de> for Members<'_, N> {
        type Value = [Option<&'de RawValue>; N];
        fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str("a json object")
        }
        fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
            let mut found = [None; N];
            while let Some(key) = map.next_key::<String>()? {
                match self.0.iter().position(|wanted| *wanted == key) {
                    Some(at) => found[at] = Some(map.next_value::<&RawValue>()?),
                    None => {
                        map.next_value::<IgnoredAny>()?;
                    }
                }
            }
            Ok(found)
        }
    }
    impl<'de, const N: usize> DeserializeSeed<'de> for Members<'_, N> {
        type Value = [Option<&'de RawValue>; N];
        fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
            d.deserialize_map(self)
        }
    }
    Members(keys)
        .deserialize(&mut serde_json::Deserializer::from_str(object))
        .unwrap_or([None; N])
}

/// `params._meta`, when present.
pub(crate) fn meta(params: Option<&Value>) -> Option<&Map<String, Value>> {
    params?.get("_meta")?.as_object()
}

/// Reads the top-level `"id"` from the first bytes of a line too long to parse, so the client
/// learns which request failed. Only a string or number id directly inside the outer object
/// counts; anything ambiguous gives `None`.
pub(crate) fn sniff_id(prefix: &[u8]) -> Option<Id> {
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

/// The id at the start of `bytes`, kept as written.
fn id_value(bytes: &[u8]) -> Option<Id> {
    let len = match bytes.first()? {
        b'"' => string_end(bytes, 0)? + 1,
        b'-' | b'0'..=b'9' => bytes
            .iter()
            .position(|b| !matches!(b, b'-' | b'+' | b'.' | b'e' | b'E' | b'0'..=b'9'))?,
        _ => return None,
    };
    Id::parse(std::str::from_utf8(&bytes[..len]).ok()?)
}

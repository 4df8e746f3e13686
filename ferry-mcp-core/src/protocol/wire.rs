//! Output bytes: JSON-RPC envelopes as compact single lines, and the error codes we send.
//!
//! Envelopes are written by hand so their field order is fixed; every value inside comes from
//! serde_json, whose compact output escapes control characters, so no line ever holds a raw
//! newline. Ids and progress tokens are echoed as the client wrote them ([`Id`]).

use serde_json::Value;
use serde_json::value::RawValue;

pub const PARSE_ERROR: i64 = -32700;
pub const INVALID_REQUEST: i64 = -32600;
pub const METHOD_NOT_FOUND: i64 = -32601;
pub const INVALID_PARAMS: i64 = -32602;
pub const INTERNAL_ERROR: i64 = -32603;
/// Resource not found in the initialize era.
pub const RESOURCE_NOT_FOUND: i64 = -32002;
/// Unsupported protocol version (2026-07-28), with `data: {supported, requested}`.
pub const UNSUPPORTED_PROTOCOL_VERSION: i64 = -32022;

/// A JSON-RPC error answer.
#[derive(Debug, Clone, PartialEq)]
pub struct RpcError {
    pub code: i64,
    pub message: String,
    pub data: Option<Value>,
}

impl RpcError {
    pub fn new(code: i64, message: impl Into<String>) -> Self {
        Self {
            code,
            message: message.into(),
            data: None,
        }
    }
    pub fn with_data(mut self, data: Value) -> Self {
        self.data = Some(data);
        self
    }
}

/// A JSON-RPC id (or a progress token) exactly as the client wrote it: the JSON text of one
/// string or number, echoed byte for byte (`123456789012345678901234567890`, `-0`, `1e2` and
/// `"a\u00e9"` come back unchanged, where a parsed number would be rounded or reformatted), or
/// `null` when no id could be read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Id(Box<str>);

impl Id {
    /// The id of an answer to a message whose id could not be read.
    pub fn null() -> Self {
        Self("null".into())
    }

    /// The id written as `text`: one JSON string or number that serde_json reads, without
    /// surrounding whitespace.
    pub fn parse(text: &str) -> Option<Self> {
        Self::from_raw(serde_json::from_str::<&RawValue>(text).ok()?)
    }

    /// The id of a raw JSON value, when it is a string or a number.
    pub(crate) fn from_raw(raw: &RawValue) -> Option<Self> {
        let text = raw.get();
        let readable = match text.as_bytes().first()? {
            b'"' => serde_json::from_str::<String>(text).is_ok(),
            b'-' | b'0'..=b'9' => serde_json::from_str::<serde_json::Number>(text).is_ok(),
            _ => false,
        };
        readable.then(|| Self(text.into()))
    }

    /// The JSON text, as the client wrote it.
    pub fn as_json(&self) -> &str {
        &self.0
    }

    /// Whether two ids name the same request: strings by the text they decode to, numbers by
    /// their exact decimal value (so `1`, `1.0` and `10e-1` are one id, and two huge numbers
    /// that round to the same `f64` are not).
    pub fn same_as(&self, other: &Id) -> bool {
        if self.0 == other.0 {
            return true;
        }
        if self.0.starts_with('"') {
            let text = |id: &Id| serde_json::from_str::<String>(&id.0).ok();
            return other.0.starts_with('"') && text(self).is_some_and(|a| text(other) == Some(a));
        }
        match (decimal(&self.0), decimal(&other.0)) {
            (Some(a), Some(b)) => a == b,
            _ => false,
        }
    }
}

/// A JSON number as (negative, significant digits, exponent): its value is the digits times ten
/// to the exponent, with no leading or trailing zero digit, so equal values give equal triples
/// (zero is `(false, "", 0)`, whatever its sign). `None` when the exponent does not fit an `i64`.
fn decimal(number: &str) -> Option<(bool, String, i64)> {
    let (negative, unsigned) = match number.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, number),
    };
    let (mantissa, exponent) = match unsigned.split_once(['e', 'E']) {
        Some((mantissa, exponent)) => (mantissa, exponent.parse::<i64>().ok()?),
        None => (unsigned, 0),
    };
    if !mantissa.bytes().all(|b| b.is_ascii_digit() || b == b'.') {
        return None;
    }
    let (whole, fraction) = mantissa.split_once('.').unwrap_or((mantissa, ""));
    let digits = format!("{whole}{fraction}");
    let significant = digits.trim_end_matches('0');
    let trailing_zeros = i64::try_from(digits.len() - significant.len()).ok()?;
    let significant = significant.trim_start_matches('0');
    if significant.is_empty() {
        return Some((false, String::new(), 0));
    }
    let exponent = exponent
        .checked_sub(i64::try_from(fraction.len()).ok()?)?
        .checked_add(trailing_zeros)?;
    Some((negative, significant.to_owned(), exponent))
}

fn json(value: &Value) -> String {
    serde_json::to_string(value).unwrap_or_else(|_| "null".into())
}

/// `{"jsonrpc":"2.0","id":<id>,"result":<result>}`; `result` is compact JSON already.
pub fn result_line(id: &Id, result: &str) -> String {
    let id = id.as_json();
    let mut line = String::with_capacity(32 + id.len() + result.len());
    line.push_str("{\"jsonrpc\":\"2.0\",\"id\":");
    line.push_str(id);
    line.push_str(",\"result\":");
    line.push_str(result);
    line.push('}');
    line
}

/// `{"jsonrpc":"2.0","id":<id>,"error":{"code","message","data"?}}`.
pub fn error_line(id: &Id, error: &RpcError) -> String {
    let mut line = format!(
        "{{\"jsonrpc\":\"2.0\",\"id\":{},\"error\":{{\"code\":{},\"message\":{}",
        id.as_json(),
        error.code,
        json(&Value::String(error.message.clone()))
    );
    if let Some(data) = &error.data {
        line.push_str(",\"data\":");
        line.push_str(&json(data));
    }
    line.push_str("}}");
    line
}

/// `{"jsonrpc":"2.0","method":<method>,"params":<params>}`; `params` is compact JSON already.
pub fn notification_line(method: &str, params: &str) -> String {
    format!(
        "{{\"jsonrpc\":\"2.0\",\"method\":{},\"params\":{params}}}",
        json(&Value::String(method.into())),
    )
}

/// Inserts `fields` (compact `"key":value` pairs, comma-separated) at the start of the JSON
/// object text `object`.
pub fn prepend_fields(object: &str, fields: &str) -> String {
    debug_assert!(object.starts_with('{') && object.ends_with('}'));
    let body = &object[1..];
    let mut out = String::with_capacity(object.len() + fields.len() + 2);
    out.push('{');
    out.push_str(fields);
    if body != "}" {
        out.push(',');
    }
    out.push_str(body);
    out
}

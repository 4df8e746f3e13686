//! Output bytes: JSON-RPC envelopes as compact single lines, and the error codes we send.
//!
//! Envelopes are written by hand so their field order is fixed; every value inside comes from
//! serde_json, whose compact output escapes control characters, so no line ever holds a raw
//! newline.

use serde_json::Value;

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

fn json(value: &Value) -> String {
    serde_json::to_string(value).unwrap_or_else(|_| "null".into())
}

/// `{"jsonrpc":"2.0","id":<id>,"result":<result>}`; `result` is compact JSON already.
pub fn result_line(id: &Value, result: &str) -> String {
    let id = json(id);
    let mut line = String::with_capacity(32 + id.len() + result.len());
    line.push_str("{\"jsonrpc\":\"2.0\",\"id\":");
    line.push_str(&id);
    line.push_str(",\"result\":");
    line.push_str(result);
    line.push('}');
    line
}

/// `{"jsonrpc":"2.0","id":<id>,"error":{"code","message","data"?}}`.
pub fn error_line(id: &Value, error: &RpcError) -> String {
    let mut line = format!(
        "{{\"jsonrpc\":\"2.0\",\"id\":{},\"error\":{{\"code\":{},\"message\":{}",
        json(id),
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

/// `{"jsonrpc":"2.0","method":<method>,"params":<params>}`.
pub fn notification_line(method: &str, params: &Value) -> String {
    format!(
        "{{\"jsonrpc\":\"2.0\",\"method\":{},\"params\":{}}}",
        json(&Value::String(method.into())),
        json(params)
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

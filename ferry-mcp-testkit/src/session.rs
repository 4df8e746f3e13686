//! A scripted JSON-RPC session over a protocol [`Server`]: send a request, get its parsed answer.
//!
//! The clock is a value the test controls ([`Session::now`], [`Session::advance`]), so every
//! answer is reproducible. A session also guards the rules every tool must keep, so that any test
//! that drives one checks them for every tool it calls:
//! - every output line is one compact JSON message;
//! - every schema of the surface compiles (checked when the session starts);
//! - every `tools/call` result has a one-line text summary first, and a successful result of a
//!   tool with an outputSchema carries structuredContent that validates against it and keeps the
//!   T4 caps of docs/mcp-budgets.md ([`check_call_result`]).

use ferry_mcp_core::protocol::Server;
use ferry_mcp_core::registry::Surface;
use ferry_mcp_core::shape;
use ferry_mcp_core::time::Timestamp;
use serde_json::{Value, json};

/// The clock value every session starts at: 2026-11-30T12:00:00Z.
pub const START: Timestamp = Timestamp::from_millis(1_796_040_000_000);

/// The `_meta` a 2026-07-28 (stateless) request carries.
pub fn stateless_meta() -> Value {
    json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {},
    })
}

/// A scripted client of one [`Server`].
#[derive(Debug)]
pub struct Session {
    server: Server,
    now: Timestamp,
    next_id: u64,
    /// Messages that arrived but were not the answer asked for (progress notifications).
    notifications: Vec<Value>,
}

impl Session {
    /// A session over `server`. Panics when a schema of its surface does not compile.
    pub fn new(server: Server) -> Self {
        if let Err(error) = crate::schema::check_compiles(server.surface()) {
            panic!("the surface under test is broken: {error}");
        }
        Self {
            server,
            now: START,
            next_id: 1,
            notifications: Vec::new(),
        }
    }

    /// A session over the fixture server of `project`, not yet initialized.
    pub fn fixture(project: &str) -> Self {
        Self::new(crate::fixture::server(project))
    }

    /// A fixture session that has done `initialize` (with `version`) and `notifications/initialized`.
    pub fn fixture_initialized(project: &str, version: &str) -> Self {
        let mut session = Self::fixture(project);
        session.initialize(version);
        session
    }

    pub fn server(&self) -> &Server {
        &self.server
    }

    pub fn now(&self) -> Timestamp {
        self.now
    }

    pub fn set_now(&mut self, now: Timestamp) {
        self.now = now;
    }

    pub fn advance(&mut self, millis: u64) {
        self.now = Timestamp::from_millis(self.now.as_millis() + millis);
    }

    /// Sends raw bytes as one line; returns the raw output lines, each checked to be a single
    /// line of compact JSON.
    pub fn send_raw(&mut self, line: &[u8]) -> Vec<String> {
        let out = self.server.handle_line(line, self.now);
        out.iter().for_each(|line| check_wire_line(line));
        out
    }

    /// Sends lines that arrived together (one batch for `handle_lines`).
    pub fn send_together(&mut self, lines: &[&str]) -> Vec<String> {
        let bytes: Vec<&[u8]> = lines.iter().map(|line| line.as_bytes()).collect();
        let out = self.server.handle_lines(&bytes, self.now);
        out.iter().for_each(|line| check_wire_line(line));
        out
    }

    /// Sends one line and parses every output line.
    pub fn send(&mut self, line: &str) -> Vec<Value> {
        self.send_raw(line.as_bytes())
            .iter()
            .map(|line| serde_json::from_str(line).expect("checked"))
            .collect()
    }

    /// The next request id this session will use.
    pub fn next_id(&mut self) -> u64 {
        let id = self.next_id;
        self.next_id += 1;
        id
    }

    /// Sends a request and returns the whole answer message (with `result` or `error`).
    /// Notifications that came before it are kept for [`Session::take_notifications`].
    pub fn request(&mut self, method: &str, params: Value) -> Value {
        let id = self.next_id();
        let line =
            json!({ "jsonrpc": "2.0", "id": id, "method": method, "params": params }).to_string();
        let mut answer = None;
        for message in self.send(&line) {
            if message.get("id") == Some(&json!(id)) {
                assert!(answer.is_none(), "two answers to request {id}");
                answer = Some(message);
            } else {
                self.notifications.push(message);
            }
        }
        let answer = answer.unwrap_or_else(|| panic!("no answer to {method} (id {id})"));
        if method == "tools/call"
            && let (Some(result), Some(name)) = (answer.get("result"), params_name(&line))
        {
            check_call_result(self.server.surface(), &name, result);
        }
        answer
    }

    /// Sends a request and returns its `result`, panicking on an error answer.
    pub fn result(&mut self, method: &str, params: Value) -> Value {
        let answer = self.request(method, params);
        match answer.get("result") {
            Some(result) => result.clone(),
            None => panic!("{method} failed: {answer}"),
        }
    }

    /// Sends a request and returns its `error` object, panicking on a result.
    pub fn error(&mut self, method: &str, params: Value) -> Value {
        let answer = self.request(method, params);
        match answer.get("error") {
            Some(error) => error.clone(),
            None => panic!("{method} did not fail: {answer}"),
        }
    }

    /// Sends a notification; returns whatever the server wrote (nothing, normally).
    pub fn notify(&mut self, method: &str, params: Value) -> Vec<Value> {
        self.send(&json!({ "jsonrpc": "2.0", "method": method, "params": params }).to_string())
    }

    /// `initialize` with `version`, then `notifications/initialized`; returns the result.
    pub fn initialize(&mut self, version: &str) -> Value {
        let result = self.result(
            "initialize",
            json!({
                "protocolVersion": version,
                "capabilities": {},
                "clientInfo": { "name": "ferry-testkit", "version": "0" },
            }),
        );
        let written = self.notify("notifications/initialized", json!({}));
        assert!(
            written.is_empty(),
            "notifications/initialized was answered: {written:?}"
        );
        result
    }

    /// `tools/call` of `name` with `arguments`; returns the result.
    pub fn call(&mut self, name: &str, arguments: Value) -> Value {
        self.result(
            "tools/call",
            json!({ "name": name, "arguments": arguments }),
        )
    }

    /// A 2026-07-28 stateless request: `params` gains the `_meta` version and capabilities.
    pub fn stateless(&mut self, method: &str, mut params: Value) -> Value {
        let meta = stateless_meta();
        match params.get_mut("_meta").and_then(Value::as_object_mut) {
            Some(existing) => existing.extend(meta.as_object().cloned().unwrap_or_default()),
            None => params["_meta"] = meta,
        }
        self.request(method, params)
    }

    /// Notifications received since the last call, oldest first.
    pub fn take_notifications(&mut self) -> Vec<Value> {
        std::mem::take(&mut self.notifications)
    }
}

/// Panics unless `line` is one JSON-RPC message on one line: no raw line break, no padding,
/// and it parses as an object (or a batch array).
pub fn check_wire_line(line: &str) {
    assert!(
        !line.contains(['\n', '\r']),
        "raw line break in output: {line:?}"
    );
    let value: Value =
        serde_json::from_str(line).unwrap_or_else(|e| panic!("output is not json ({e}): {line}"));
    assert!(
        value.is_object() || value.is_array(),
        "output is not a message: {line}"
    );
    assert!(
        !line.starts_with(' ') && !line.ends_with(' '),
        "padded output: {line:?}"
    );
}

fn params_name(line: &str) -> Option<String> {
    let request: Value = serde_json::from_str(line).ok()?;
    Some(request["params"]["name"].as_str()?.to_owned())
}

/// Panics unless `result`, a `tools/call` result of the tool `name`, keeps the rules of response
/// shaping: `content` starts with a non-empty one-line text summary; a successful result of a
/// tool with an outputSchema carries `structuredContent` that validates against it (the check
/// real clients make) and keeps the T4 caps.
pub fn check_call_result(surface: &Surface, name: &str, result: &Value) {
    let summary = result["content"][0]["text"].as_str().unwrap_or_default();
    assert!(
        result["content"][0]["type"] == "text"
            && !summary.is_empty()
            && !summary.contains(['\n', '\r']),
        "{name}: the result does not start with a one-line text summary: {result}"
    );
    if result["isError"] == true {
        return;
    }
    let Some(tool) = surface.find(name) else {
        return;
    };
    let Some(output) = tool.tool().definition().output_schema else {
        return;
    };
    let structured = result.get("structuredContent").unwrap_or_else(|| {
        panic!("{name} has an outputSchema but gave no structuredContent: {result}")
    });
    let schema: Value = serde_json::from_str(output).expect("checked by check_compiles");
    let validator = jsonschema::validator_for(&schema).expect("checked by check_compiles");
    let errors: Vec<String> = validator
        .iter_errors(structured)
        .map(|e| e.to_string())
        .collect();
    assert!(
        errors.is_empty(),
        "{name}: structuredContent does not match the outputSchema: {errors:?} in {structured}"
    );
    if let Err(error) = shape::check_caps(structured) {
        panic!("{name}: {error}");
    }
}

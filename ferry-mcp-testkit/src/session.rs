//! A scripted JSON-RPC session over a protocol [`Server`]: send a request, get its parsed answer.
//!
//! The clock is a value the test controls ([`Session::now`], [`Session::advance`]), so every
//! answer is reproducible. Every output line is checked to be one compact JSON message before it
//! is parsed, so a test that drives a session also guards the wire rules.

use ferry_mcp_core::protocol::Server;
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
    pub fn new(server: Server) -> Self {
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
        answer.unwrap_or_else(|| panic!("no answer to {method} (id {id})"))
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

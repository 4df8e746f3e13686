//! An MCP client as a sans-IO state machine: the gateway's side of a connection to an external
//! server (ADR 0021).
//!
//! Like the server's core it does no IO and reads no clock: the transport hands it each line
//! the server wrote and writes the lines it returns; deadlines are the transport's. It does the
//! handshake and checks the version the server chose, numbers its requests and matches replies
//! by id (a reply to an id it is not waiting for is dropped, whatever order replies come in),
//! follows `nextCursor` through `tools/list` pages, answers the server's own requests (`ping`;
//! sampling, elicitation, roots and everything else are refused with an error naming the method)
//! and ignores notifications. Lines longer than the transport's cap are never parsed: the
//! transport reports them with [`Client::handle_oversized_line`] and the call they answer fails.

use serde_json::{Map, Value, json};

use super::version::ProtocolVersion;

/// `tools/list` pages followed at most: a server whose cursor never ends cannot hold us.
pub const MAX_TOOL_PAGES: usize = 100;

/// The id of a request this client sent.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct RequestId(u64);

impl RequestId {
    pub fn get(self) -> u64 {
        self.0
    }
}

/// One tool an external server listed, as it described it.
#[derive(Debug, Clone, PartialEq)]
pub struct RemoteTool {
    pub name: String,
    pub title: Option<String>,
    pub description: String,
    /// The tool's `inputSchema` (an object).
    pub input_schema: Value,
    /// The tool's `annotations`, when it gave an object.
    pub annotations: Option<Map<String, Value>>,
}

/// What a request came to.
#[derive(Debug, Clone, PartialEq)]
pub enum Reply {
    /// The handshake is done: the version the server chose and the name it gave.
    Initialized {
        version: ProtocolVersion,
        server: String,
    },
    /// Every page of `tools/list`.
    Tools(Vec<RemoteTool>),
    /// A `tools/call` result object, as the server wrote it (`isError` included).
    Called(Map<String, Value>),
}

/// Why a request failed on the server's side of the wire.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ClientError {
    #[error("the server answered error {code}: {message}")]
    Rpc { code: i64, message: String },
    #[error("the server chose protocol version `{0}`, which this client does not speak")]
    UnsupportedVersion(String),
    #[error("the server's answer is malformed: {0}")]
    Malformed(&'static str),
    #[error("the server sent a line longer than {0} bytes")]
    Oversized(usize),
    #[error("the handshake is not done")]
    NotReady,
    #[error("the server listed more than {MAX_TOOL_PAGES} pages of tools")]
    TooManyPages,
}

/// What one line from the server asks of the transport.
#[derive(Debug, Clone, PartialEq)]
pub enum Event {
    /// A request of ours is over.
    Reply {
        id: RequestId,
        outcome: Result<Reply, ClientError>,
    },
    /// A line to write to the server.
    Send(String),
    /// A notification the server sent, by method: nothing to do.
    Notification(String),
    /// Something that was read and ignored, and why (for a log).
    Ignored(String),
}

/// What a pending request is for.
#[derive(Debug, Clone, PartialEq)]
enum Purpose {
    Initialize,
    /// One page of a listing that `origin` started; `tools` holds the pages before it.
    ListTools {
        origin: RequestId,
        tools: Vec<RemoteTool>,
        pages: usize,
    },
    CallTool,
}

/// One connection's client state.
#[derive(Debug)]
pub struct Client {
    name: &'static str,
    version: &'static str,
    next_id: u64,
    pending: Vec<(RequestId, Purpose)>,
    negotiated: Option<ProtocolVersion>,
}

impl Client {
    /// A client that introduces itself as `name` `version`.
    pub fn new(name: &'static str, version: &'static str) -> Self {
        Self {
            name,
            version,
            next_id: 1,
            pending: Vec::new(),
            negotiated: None,
        }
    }

    /// The version the handshake settled on.
    pub fn negotiated(&self) -> Option<ProtocolVersion> {
        self.negotiated
    }

    /// How many requests wait for a reply.
    pub fn pending(&self) -> usize {
        self.pending.len()
    }

    /// The `initialize` request, offering the latest initialize-era version.
    pub fn initialize(&mut self) -> (RequestId, String) {
        let params = json!({
            "protocolVersion": ProtocolVersion::LATEST_INITIALIZE.as_str(),
            "capabilities": {},
            "clientInfo": { "name": self.name, "version": self.version },
        });
        self.request("initialize", params, Purpose::Initialize)
    }

    /// `tools/list`, every page: one [`Reply::Tools`] answers the id returned.
    pub fn list_tools(&mut self) -> Result<(RequestId, String), ClientError> {
        self.ready()?;
        let origin = RequestId(self.next_id);
        Ok(self.request(
            "tools/list",
            json!({}),
            Purpose::ListTools {
                origin,
                tools: Vec::new(),
                pages: 1,
            },
        ))
    }

    /// `tools/call` of `name` with `arguments`.
    pub fn call_tool(
        &mut self,
        name: &str,
        arguments: &Map<String, Value>,
    ) -> Result<(RequestId, String), ClientError> {
        self.ready()?;
        let params = json!({ "name": name, "arguments": arguments });
        Ok(self.request("tools/call", params, Purpose::CallTool))
    }

    /// Stops waiting for `id`: the `notifications/cancelled` line to send, if it was pending
    /// (a late reply to it is then dropped). `initialize` is never cancelled on the wire (the
    /// spec forbids it): the transport gives up on such a server and stops it instead.
    pub fn cancel(&mut self, id: RequestId, reason: &str) -> Option<String> {
        let at = self
            .pending
            .iter()
            .position(|(pending, _)| *pending == id)?;
        let (_, purpose) = self.pending.remove(at);
        if purpose == Purpose::Initialize {
            return None;
        }
        let params = json!({ "requestId": id.0, "reason": reason });
        Some(
            json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": params})
                .to_string(),
        )
    }

    /// Handles one line the server wrote (without its newline).
    pub fn handle_line(&mut self, line: &[u8]) -> Vec<Event> {
        let text = line.strip_suffix(b"\r").unwrap_or(line);
        if text.iter().all(u8::is_ascii_whitespace) {
            return Vec::new();
        }
        let Ok(value) = serde_json::from_slice::<Value>(text) else {
            return vec![Event::Ignored("a line that is not JSON".into())];
        };
        let mut events = Vec::new();
        match value {
            Value::Array(items) => {
                for item in items {
                    self.handle_message(item, &mut events);
                }
            }
            other => self.handle_message(other, &mut events),
        }
        events
    }

    /// Handles a line longer than the transport's cap, of which `prefix` was kept: the request
    /// it answers fails. Its id is read from the prefix when it is there; otherwise, when one
    /// request is pending, the line is taken to answer it.
    pub fn handle_oversized_line(&mut self, prefix: &[u8], cap: usize) -> Vec<Event> {
        let sniffed = sniff_id(prefix).filter(|id| self.is_pending(*id));
        let id = match sniffed {
            Some(id) => id,
            None if self.pending.len() == 1 => self.pending[0].0.0,
            None => {
                return vec![Event::Ignored(
                    "a line over the cap, for no known request".into(),
                )];
            }
        };
        let mut events = Vec::new();
        if let Some(purpose) = self.take(id) {
            events.push(Event::Reply {
                id: origin_of(RequestId(id), &purpose),
                outcome: Err(ClientError::Oversized(cap)),
            });
        }
        events
    }

    fn ready(&self) -> Result<(), ClientError> {
        self.negotiated.map(|_| ()).ok_or(ClientError::NotReady)
    }

    fn is_pending(&self, id: u64) -> bool {
        self.pending.iter().any(|(pending, _)| pending.0 == id)
    }

    fn take(&mut self, id: u64) -> Option<Purpose> {
        let at = self
            .pending
            .iter()
            .position(|(pending, _)| pending.0 == id)?;
        Some(self.pending.remove(at).1)
    }

    fn request(&mut self, method: &str, params: Value, purpose: Purpose) -> (RequestId, String) {
        let id = RequestId(self.next_id);
        self.next_id += 1;
        self.pending.push((id, purpose));
        let line =
            json!({"jsonrpc": "2.0", "id": id.0, "method": method, "params": params}).to_string();
        (id, line)
    }

    fn handle_message(&mut self, message: Value, events: &mut Vec<Event>) {
        let Value::Object(mut message) = message else {
            events.push(Event::Ignored("a JSON value that is not a message".into()));
            return;
        };
        if let Some(method) = message.get("method").and_then(Value::as_str) {
            let method = method.to_owned();
            match message.remove("id") {
                Some(id) if id.is_string() || id.is_number() => {
                    events.push(Event::Send(answer_request(&id, &method)));
                }
                Some(_) => events.push(Event::Ignored(format!("`{method}` with a bad id"))),
                None => events.push(Event::Notification(method)),
            }
            return;
        }
        let Some(id) = message.get("id").and_then(reply_id) else {
            events.push(Event::Ignored("a reply without a number id".into()));
            return;
        };
        let Some(purpose) = self.take(id) else {
            events.push(Event::Ignored(format!(
                "a reply to {id}, which is not pending"
            )));
            return;
        };
        let id = RequestId(id);
        let outcome = match (message.remove("result"), message.remove("error")) {
            (Some(result), None) => Ok(result),
            (None, Some(error)) => Err(rpc_error(&error)),
            _ => Err(ClientError::Malformed(
                "a reply needs one of result and error",
            )),
        };
        match outcome {
            Err(err) => events.push(Event::Reply {
                id: origin_of(id, &purpose),
                outcome: Err(err),
            }),
            Ok(result) => self.resolve(id, purpose, result, events),
        }
    }

    fn resolve(&mut self, id: RequestId, purpose: Purpose, result: Value, events: &mut Vec<Event>) {
        match purpose {
            Purpose::Initialize => {
                let outcome = self.initialized(&result);
                if outcome.is_ok() {
                    events.push(Event::Send(
                        json!({"jsonrpc": "2.0", "method": "notifications/initialized"})
                            .to_string(),
                    ));
                }
                events.push(Event::Reply { id, outcome });
            }
            Purpose::CallTool => {
                let outcome = match result {
                    Value::Object(result) => Ok(Reply::Called(result)),
                    _ => Err(ClientError::Malformed(
                        "a tools/call result is not an object",
                    )),
                };
                events.push(Event::Reply { id, outcome });
            }
            Purpose::ListTools {
                origin,
                mut tools,
                pages,
            } => {
                let page = match read_tools_page(&result) {
                    Ok(page) => page,
                    Err(err) => {
                        events.push(Event::Reply {
                            id: origin,
                            outcome: Err(err),
                        });
                        return;
                    }
                };
                tools.extend(page.0);
                match page.1 {
                    None => events.push(Event::Reply {
                        id: origin,
                        outcome: Ok(Reply::Tools(tools)),
                    }),
                    Some(_) if pages >= MAX_TOOL_PAGES => events.push(Event::Reply {
                        id: origin,
                        outcome: Err(ClientError::TooManyPages),
                    }),
                    Some(cursor) => {
                        let (_, line) = self.request(
                            "tools/list",
                            json!({ "cursor": cursor }),
                            Purpose::ListTools {
                                origin,
                                tools,
                                pages: pages + 1,
                            },
                        );
                        events.push(Event::Send(line));
                    }
                }
            }
        }
    }

    fn initialized(&mut self, result: &Value) -> Result<Reply, ClientError> {
        let chosen = result
            .get("protocolVersion")
            .and_then(Value::as_str)
            .ok_or(ClientError::Malformed(
                "initialize names no protocolVersion",
            ))?;
        let version = ProtocolVersion::parse(chosen)
            .filter(|version| version.uses_initialize())
            .ok_or_else(|| ClientError::UnsupportedVersion(chosen.chars().take(64).collect()))?;
        self.negotiated = Some(version);
        let server = result
            .pointer("/serverInfo/name")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .chars()
            .take(128)
            .collect();
        Ok(Reply::Initialized { version, server })
    }
}

/// The request a listing page belongs to: the listing's first request.
fn origin_of(id: RequestId, purpose: &Purpose) -> RequestId {
    match purpose {
        Purpose::ListTools { origin, .. } => *origin,
        _ => id,
    }
}

/// Our ids are integers; a server that echoes `3` as `3.0` still means it.
fn reply_id(id: &Value) -> Option<u64> {
    id.as_u64().or_else(|| {
        id.as_f64()
            .filter(|number| number.fract() == 0.0 && *number >= 0.0 && *number < 9.0e15)
            .map(|number| number as u64)
    })
}

/// The answer to a request the server sent us: `ping` is answered; everything else (sampling,
/// elicitation, roots: this client declares no capability) is refused by name.
fn answer_request(id: &Value, method: &str) -> String {
    if method == "ping" {
        return json!({"jsonrpc": "2.0", "id": id, "result": {}}).to_string();
    }
    let shown: String = method.chars().take(64).collect();
    let error = json!({
        "code": super::wire::METHOD_NOT_FOUND,
        "message": format!("ferry's gateway does not serve `{shown}` to external servers"),
    });
    json!({"jsonrpc": "2.0", "id": id, "error": error}).to_string()
}

fn rpc_error(error: &Value) -> ClientError {
    ClientError::Rpc {
        code: error.get("code").and_then(Value::as_i64).unwrap_or(0),
        message: error
            .get("message")
            .and_then(Value::as_str)
            .unwrap_or("no message")
            .chars()
            .take(500)
            .collect(),
    }
}

/// One page of `tools/list`: the tools and the cursor of the next page.
fn read_tools_page(result: &Value) -> Result<(Vec<RemoteTool>, Option<String>), ClientError> {
    let listed = result
        .get("tools")
        .and_then(Value::as_array)
        .ok_or(ClientError::Malformed("tools/list has no tools array"))?;
    let mut tools = Vec::with_capacity(listed.len());
    for tool in listed {
        let name = tool
            .get("name")
            .and_then(Value::as_str)
            .ok_or(ClientError::Malformed("a listed tool has no name"))?;
        let input_schema = tool
            .get("inputSchema")
            .filter(|schema| schema.is_object())
            .cloned()
            .ok_or(ClientError::Malformed(
                "a listed tool has no inputSchema object",
            ))?;
        tools.push(RemoteTool {
            name: name.to_owned(),
            title: tool.get("title").and_then(Value::as_str).map(str::to_owned),
            description: tool
                .get("description")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_owned(),
            input_schema,
            annotations: tool.get("annotations").and_then(Value::as_object).cloned(),
        });
    }
    let next = result
        .get("nextCursor")
        .and_then(Value::as_str)
        .filter(|cursor| !cursor.is_empty())
        .map(str::to_owned);
    Ok((tools, next))
}

/// The first `"id":<digits>` of a cut line, if any.
fn sniff_id(prefix: &[u8]) -> Option<u64> {
    let text = String::from_utf8_lossy(prefix);
    let at = text.find("\"id\"")? + 4;
    let rest = text[at..].trim_start().strip_prefix(':')?.trim_start();
    let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
    digits.parse().ok()
}

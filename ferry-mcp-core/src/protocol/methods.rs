//! The methods the server answers, each turning params into the compact JSON of a result.
//!
//! Results are built from fixed-order strings or serde_json values (whose maps are sorted, as
//! `preserve_order` is kept out of the graph); `tools/list` is spliced from the surface's frozen
//! bytes so it never varies.

use std::fmt::Write as _;
use std::panic::AssertUnwindSafe;

use serde_json::{Map, Value, json};

use super::wire::{self, Id, RpcError};
use super::{Era, Pending, ProtocolVersion, Served, Server};
use crate::shape::{Cursor, ResourceUri, ToolOutcome};
use crate::time::Timestamp;
use crate::tool::{CallContext, Progress, ReadContext, ResourceError, Started, Ticket};

/// Every method we answer; anything else is `-32601`, before or after `initialize`.
const METHODS: [&str; 8] = [
    "initialize",
    "ping",
    "resources/list",
    "resources/read",
    "resources/templates/list",
    "server/discover",
    "tools/call",
    "tools/list",
];

/// What we offer: tools and resources, without change notifications or subscriptions.
const CAPABILITIES: &str = r#"{"resources":{},"tools":{}}"#;

/// How long a client may reuse a list that only changes with the server's configuration.
const STATIC_TTL_MS: u64 = 300_000;

/// At most this many argument problems are named in one error text.
const MAX_ARGUMENT_PROBLEMS: usize = 5;

#[derive(Clone, Copy)]
enum Cache {
    Public(u64),
    Private(u64),
}

impl Server {
    /// Serves one request: its result, or the ticket of a call that answers later (only when
    /// the host takes answers later). `out` receives notifications (progress, under `progress_token`) that
    /// precede the answer.
    pub(super) fn serve(
        &mut self,
        id: &Id,
        method: &str,
        params: Option<&Value>,
        progress_token: Option<&Id>,
        now: Timestamp,
        out: &mut Vec<String>,
    ) -> Result<Served, RpcError> {
        if !METHODS.contains(&method) {
            return Err(RpcError::new(
                wire::METHOD_NOT_FOUND,
                format!("method not found: {method}"),
            ));
        }
        if method == "initialize" {
            return Ok(Served::Now(self.initialize(params)));
        }
        if method == "server/discover" {
            return Ok(Served::Now(self.discover()));
        }
        let era = self.era(params)?;
        let (result, cache) = match method {
            "ping" => ("{}".to_owned(), None),
            _ if era == Era::Fresh => {
                return Err(RpcError::new(
                    wire::INVALID_REQUEST,
                    "invalid request: server not initialized (send initialize first, or name protocol version 2026-07-28 in _meta)",
                ));
            }
            "tools/list" => (self.tools_list(params)?, Some(Cache::Public(STATIC_TTL_MS))),
            "tools/call" => match self.tools_call(id, params, progress_token, era, now, out)? {
                Served::Now(result) => (result, None),
                later @ Served::Later(_) => return Ok(later),
            },
            "resources/list" => (resources_list(params)?, Some(Cache::Private(STATIC_TTL_MS))),
            "resources/templates/list" => {
                (self.templates_list(), Some(Cache::Private(STATIC_TTL_MS)))
            }
            "resources/read" => (
                self.resources_read(params, era, now)?,
                Some(Cache::Private(0)),
            ),
            _ => unreachable!("every method in METHODS is matched"),
        };
        Ok(Served::Now(if era == Era::Stateless {
            stateless_result(&result, cache)
        } else {
            result
        }))
    }

    /// The answer of a call that answered later: its line; or, for a call inside a JSON-RPC
    /// batch, the batch's array once this was the last answer it waited for (nothing while it
    /// waits for others); or none when the request was cancelled meanwhile (or the ticket is
    /// not one this connection is waiting on).
    pub fn complete(&mut self, ticket: Ticket, outcome: &ToolOutcome) -> Vec<String> {
        let Some(at) = self
            .pending
            .iter()
            .position(|pending| pending.ticket == ticket)
        else {
            return Vec::new();
        };
        let pending = self.pending.remove(at);
        let result = call_result(outcome, pending.version);
        let result = if pending.stateless {
            stateless_result(&result, None)
        } else {
            result
        };
        self.settle(ticket, Some(wire::result_line(&pending.id, &result)))
            .into_iter()
            .collect()
    }

    fn initialize(&mut self, params: Option<&Value>) -> String {
        let requested = params
            .and_then(|p| p.get("protocolVersion"))
            .and_then(Value::as_str);
        let version = ProtocolVersion::negotiate(requested);
        self.negotiated = Some(version);
        let mut result = format!(
            "{{\"protocolVersion\":\"{}\",\"capabilities\":{CAPABILITIES},\"serverInfo\":{}",
            version.as_str(),
            self.server_info()
        );
        self.push_instructions(&mut result);
        result.push('}');
        result
    }

    /// Appends `,"instructions":...` to a result being written, unless there are none.
    fn push_instructions(&self, result: &mut String) {
        if !self.config.instructions.is_empty() {
            let _ = write!(
                result,
                ",\"instructions\":{}",
                quote(&self.config.instructions)
            );
        }
    }

    /// `server/discover` (2026-07-28): answered in any state, so probing clients never wait.
    fn discover(&self) -> String {
        let versions: Vec<&str> = ProtocolVersion::PER_REQUEST
            .iter()
            .map(|v| v.as_str())
            .collect();
        let mut result = format!(
            "{{\"resultType\":\"complete\",\"supportedVersions\":{},\"capabilities\":{CAPABILITIES}",
            serde_json::to_string(&versions).unwrap_or_default()
        );
        self.push_instructions(&mut result);
        let _ = write!(
            result,
            ",\"ttlMs\":{STATIC_TTL_MS},\"cacheScope\":\"public\",\"_meta\":{{\"io.modelcontextprotocol/serverInfo\":{}}}}}",
            self.server_info()
        );
        result
    }

    fn server_info(&self) -> String {
        format!(
            "{{\"name\":{},\"version\":{}}}",
            quote(self.config.name),
            quote(self.config.version)
        )
    }

    fn tools_list(&self, params: Option<&Value>) -> Result<String, RpcError> {
        let count = self.surface.tools().len();
        let start = match params.and_then(|p| p.get("cursor")) {
            None | Some(Value::Null) => 0,
            Some(Value::String(text)) => match Cursor::decode(text) {
                Ok(Cursor(start)) if start < count => start,
                _ => return Err(invalid_cursor()),
            },
            Some(_) => return Err(invalid_cursor()),
        };
        let end = count.min(start + self.tools_page_size);
        if start == 0 && end == count {
            return Ok(format!("{{\"tools\":{}}}", self.surface.tools_list_json()));
        }
        let page: Vec<&str> = (start..end)
            .map(|index| self.surface.tool_json(index))
            .collect();
        let mut result = format!("{{\"tools\":[{}]", page.join(","));
        if end < count {
            let _ = write!(result, ",\"nextCursor\":\"{}\"", Cursor(end).encode());
        }
        result.push('}');
        Ok(result)
    }

    /// A `tools/call` result, or the ticket of a tool that answers later.
    fn tools_call(
        &mut self,
        id: &Id,
        params: Option<&Value>,
        progress_token: Option<&Id>,
        era: Era,
        now: Timestamp,
        out: &mut Vec<String>,
    ) -> Result<Served, RpcError> {
        let version = era.version().unwrap_or(ProtocolVersion::LATEST_INITIALIZE);
        let params = params.ok_or_else(|| invalid_params("missing params"))?;
        let name = params
            .get("name")
            .and_then(Value::as_str)
            .ok_or_else(|| invalid_params("missing tool name"))?;
        let served = self
            .surface
            .find(name)
            .ok_or_else(|| invalid_params(format!("unknown tool: {name}")))?;
        let tool = served.tool();
        let empty = Value::Object(Map::new());
        let args = match params.get("arguments") {
            None | Some(Value::Null) => &empty,
            Some(args) => args,
        };
        let Some(args_map) = args.as_object() else {
            return Ok(Served::Now(call_result(
                &ToolOutcome::error(format!(
                    "invalid arguments for {name}: arguments must be an object"
                )),
                version,
            )));
        };
        // What the schema says, checked here for every tool alike; what depends on the action
        // (the fields `claim` needs) is the tool's typed parser's to name.
        let problems = served.arguments().problems(args_map, MAX_ARGUMENT_PROBLEMS);
        if !problems.is_empty() {
            let text = format!("invalid arguments for {name}: {}", problems.join("; "));
            return Ok(Served::Now(call_result(&ToolOutcome::error(text), version)));
        }
        let offered = self.defers.then(|| {
            let ticket = Ticket::new(self.next_ticket);
            self.next_ticket += 1;
            ticket
        });
        let mut report = |progress: Progress| {
            if let Some(token) = progress_token {
                out.push(progress_line(token, progress));
            }
        };
        let mut cx = CallContext {
            now,
            request: id,
            later: offered,
            project: &self.config.project,
            progress: &mut report,
            channel: self.channel.as_mut(),
        };
        let started = std::panic::catch_unwind(AssertUnwindSafe(|| tool.start(args_map, &mut cx)))
            .unwrap_or_else(|_| {
                Started::Now(ToolOutcome::error(format!("internal error: {name} failed")))
            });
        let taken = offered.filter(|_| cx.later.is_none());
        let outcome = match (started, taken) {
            (Started::Now(outcome), _) => outcome,
            (Started::Later(call), Some(ticket)) => {
                self.pending.push(Pending {
                    ticket,
                    id: id.clone(),
                    version,
                    stateless: era == Era::Stateless,
                    call,
                });
                return Ok(Served::Later(ticket));
            }
            // A tool that answers later without the leave to: nobody would ever answer it.
            (Started::Later(call), None) => {
                call.cancel();
                ToolOutcome::error(format!(
                    "internal error: {name} answered later where it may not"
                ))
            }
        };
        Ok(Served::Now(call_result(&outcome, version)))
    }

    fn templates_list(&self) -> String {
        let templates: Vec<Value> = self
            .surface
            .resources()
            .iter()
            .map(|kind| {
                let template = kind.template();
                json!({
                    "uriTemplate": format!("{}{}/{}/{{id}}", ResourceUri::SCHEME, self.config.project, template.kind),
                    "name": template.name,
                    "title": template.title,
                    "description": template.description,
                    "mimeType": template.mime_type,
                })
            })
            .collect();
        json!({ "resourceTemplates": templates }).to_string()
    }

    fn resources_read(
        &mut self,
        params: Option<&Value>,
        era: Era,
        now: Timestamp,
    ) -> Result<String, RpcError> {
        let version = era.version().unwrap_or(ProtocolVersion::LATEST_INITIALIZE);
        let uri = params
            .and_then(|p| p.get("uri"))
            .and_then(Value::as_str)
            .ok_or_else(|| invalid_params("missing uri"))?;
        let not_found = || {
            RpcError::new(
                version.resource_not_found_code(),
                format!("resource not found: {uri}"),
            )
            .with_data(json!({ "uri": uri }))
        };
        let parsed = ResourceUri::parse(uri).map_err(|_| not_found())?;
        if parsed.project() != self.config.project {
            return Err(not_found());
        }
        let kind = self
            .surface
            .resource_kind(parsed.kind())
            .ok_or_else(not_found)?;
        let mut cx = ReadContext {
            now,
            project: &self.config.project,
            channel: self.channel.as_mut(),
        };
        let read = std::panic::catch_unwind(AssertUnwindSafe(|| kind.read(&parsed, &mut cx)))
            .unwrap_or_else(|_| Err(ResourceError::Unreadable("the reader failed".into())));
        match read {
            Ok(body) => Ok(json!({ "contents": [{ "uri": uri, "mimeType": body.mime_type, "text": body.text }] }).to_string()),
            Err(ResourceError::NotFound) => Err(not_found()),
            Err(error @ ResourceError::Unreadable(_)) => Err(RpcError::new(wire::INTERNAL_ERROR, error.to_string())),
        }
    }
}

fn resources_list(params: Option<&Value>) -> Result<String, RpcError> {
    // Links are served by resources/read without being listed; there is nothing to page through.
    match params.and_then(|p| p.get("cursor")) {
        None | Some(Value::Null) => Ok(r#"{"resources":[]}"#.to_owned()),
        Some(_) => Err(invalid_cursor()),
    }
}

/// A 2026-07-28 result: `resultType`, plus the cache hints on list and read results.
fn stateless_result(result: &str, cache: Option<Cache>) -> String {
    let fields = match cache {
        None => r#""resultType":"complete""#.to_owned(),
        Some(Cache::Public(ttl)) => {
            format!(r#""resultType":"complete","ttlMs":{ttl},"cacheScope":"public""#)
        }
        Some(Cache::Private(ttl)) => {
            format!(r#""resultType":"complete","ttlMs":{ttl},"cacheScope":"private""#)
        }
    };
    wire::prepend_fields(result, &fields)
}

/// The `tools/call` result of an outcome: the summary line, the links, structuredContent.
fn call_result(outcome: &ToolOutcome, version: ProtocolVersion) -> String {
    let mut content = vec![json!({ "type": "text", "text": outcome.summary })];
    for text in &outcome.texts {
        content.push(json!({ "type": "text", "text": text }));
    }
    for link in &outcome.links {
        if version.has_resource_links() {
            content.push(link.to_content());
        } else {
            content.push(json!({ "type": "text", "text": format!("[Resource link: {}] {}", link.name, link.uri) }));
        }
    }
    let mut result = Map::new();
    result.insert("content".into(), Value::Array(content));
    if let Some(structured) = &outcome.structured {
        result.insert("structuredContent".into(), structured.clone());
    }
    if outcome.is_error {
        result.insert("isError".into(), Value::Bool(true));
    }
    if let Some(meta) = &outcome.meta {
        result.insert("_meta".into(), Value::clone(meta));
    }
    Value::Object(result).to_string()
}

/// `notifications/progress`, its token echoed as the client wrote it; the fields in sorted
/// order, as a serde_json map writes them.
fn progress_line(token: &Id, progress: Progress) -> String {
    let mut params = String::from("{");
    if let Some(message) = &progress.message {
        let _ = write!(params, "\"message\":{},", quote(message));
    }
    let _ = write!(
        params,
        "\"progress\":{},\"progressToken\":{}",
        number(progress.progress),
        token.as_json()
    );
    if let Some(total) = progress.total {
        let _ = write!(params, ",\"total\":{}", number(total));
    }
    params.push('}');
    wire::notification_line("notifications/progress", &params)
}

/// A number as serde_json writes it (`null` when it is not finite).
fn number(value: f64) -> String {
    serde_json::to_string(&value).unwrap_or_else(|_| "null".into())
}

fn invalid_params(message: impl Into<String>) -> RpcError {
    RpcError::new(wire::INVALID_PARAMS, message)
}

fn invalid_cursor() -> RpcError {
    invalid_params("invalid cursor")
}

fn quote(text: &str) -> String {
    serde_json::to_string(text).unwrap_or_default()
}

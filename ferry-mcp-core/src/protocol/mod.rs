//! MCP as a sans-IO state machine.
//!
//! CONTRACT (the binary and the tests code against exactly this face): lines of bytes in, zero
//! or more complete output lines out. No IO and no clock read happen in here; the caller passes
//! the time with every call.
//!
//! Two eras share one connection: the initialize era (2024-11-05 to 2025-11-25), where
//! `initialize` negotiates a version for the connection, and the stateless 2026-07-28 era, where
//! each request names its version in `_meta` and `server/discover` replaces the handshake.
//! Decisions (versions, batches, the size cap, the answer to each bad input) are in
//! `docs/protocol.md`.
//!
//! A call may answer later (ADR 0027): when the host says it serves deferred answers
//! ([`Server::with_deferred_answers`]), a tool that waits on a third party takes a [`Ticket`],
//! the core keeps the request in a table of pending calls keyed by its JSON-RPC id, and the
//! host hands the answer back with [`Server::complete`] once it is there. Everything else is
//! answered in order, within the call that read it. A JSON-RPC batch holding such a call waits
//! whole: its array goes out with the last answer it waited for (`batch.rs`).

mod batch;
pub mod client;
mod message;
mod methods;
pub mod version;
pub mod wire;

use serde_json::Value;

use crate::port::{ChannelAccess, NoChannel};
use crate::registry::Surface;
use crate::time::Timestamp;
use crate::tool::{PendingCall, Ticket};
use batch::PendingBatch;
use message::Incoming;
pub use version::ProtocolVersion;
use wire::{Id, RpcError};

/// The largest input line the server accepts, in bytes (without the newline).
/// A longer line is answered with an error and its bytes are never held in memory whole:
/// the IO layer stops buffering at this size and calls [`Server::handle_oversized_line`].
pub const MAX_LINE_BYTES: usize = 1 << 20;

/// How many tools one `tools/list` page holds unless [`Server::with_tools_page_size`] says otherwise.
pub const DEFAULT_TOOLS_PAGE_SIZE: usize = 100;

/// Static facts about the server, fixed for the life of the process.
#[derive(Debug, Clone)]
pub struct ServerConfig {
    /// `serverInfo.name`.
    pub name: &'static str,
    /// `serverInfo.version`; never placed inside tool definitions.
    pub version: &'static str,
    /// The `instructions` text of initialize / server/discover (a surface's, see
    /// [`Surface::instructions`]).
    pub instructions: String,
    /// The project the server is scoped to (used for `ferry://<project>/...` links).
    pub project: String,
}

/// One connection's protocol state.
pub struct Server {
    config: ServerConfig,
    surface: Surface,
    /// How tools reach the channel (nothing, until [`Server::with_channel`]).
    channel: Box<dyn ChannelAccess>,
    /// The version `initialize` negotiated; `None` until then.
    negotiated: Option<ProtocolVersion>,
    tools_page_size: usize,
    /// Whether the host takes answers later ([`Server::complete`]); off, every call answers
    /// within the line that asked for it.
    defers: bool,
    /// The calls that will answer later, oldest first (those inside a batch too).
    pending: Vec<Pending>,
    /// The JSON-RPC batches waiting for some of their calls' answers, oldest first.
    batches: Vec<PendingBatch>,
    /// The next [`Ticket`]'s number: tickets are never reused on a connection.
    next_ticket: u64,
}

/// A request whose answer comes later, and what its answer needs.
#[derive(Debug)]
struct Pending {
    ticket: Ticket,
    id: Id,
    version: ProtocolVersion,
    stateless: bool,
    call: Box<dyn PendingCall>,
}

/// How a request is served: at once (a result, or from [`Server::request`] the answer line),
/// or later, by the call holding this ticket.
#[derive(Debug)]
enum Served {
    Now(String),
    Later(Ticket),
}

/// The rules one request is served under.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Era {
    /// No `initialize` yet and no `_meta` version: only `initialize`, `ping`, `server/discover`.
    Fresh,
    Initialized(ProtocolVersion),
    /// A 2026-07-28 request, served from its own `_meta`.
    Stateless,
}

impl Era {
    fn version(self) -> Option<ProtocolVersion> {
        match self {
            Era::Fresh => None,
            Era::Initialized(version) => Some(version),
            Era::Stateless => Some(ProtocolVersion::STATELESS),
        }
    }
}

/// `_meta` key of a stateless request's protocol version.
pub const META_PROTOCOL_VERSION: &str = "io.modelcontextprotocol/protocolVersion";
/// `_meta` key of a stateless request's client capabilities.
pub const META_CLIENT_CAPABILITIES: &str = "io.modelcontextprotocol/clientCapabilities";

impl std::fmt::Debug for Server {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Server")
            .field("config", &self.config)
            .field("surface", &self.surface)
            .finish_non_exhaustive()
    }
}

impl Server {
    pub fn new(config: ServerConfig, surface: Surface) -> Self {
        Self {
            config,
            surface,
            channel: Box::new(NoChannel),
            negotiated: None,
            tools_page_size: DEFAULT_TOOLS_PAGE_SIZE,
            defers: false,
            pending: Vec::new(),
            batches: Vec::new(),
            next_ticket: 1,
        }
    }

    /// Lets a call answer later: the host runs such calls off its reading thread and hands
    /// each answer back with [`Server::complete`]. Without it, every call answers at once
    /// (a tool that would answer later waits instead), alone or in a batch.
    pub fn with_deferred_answers(mut self) -> Self {
        self.defers = true;
        self
    }

    /// How many calls will answer later (not yet completed nor cancelled), in batches or not.
    pub fn pending_calls(&self) -> usize {
        self.pending.len()
    }

    /// How many JSON-RPC batches wait for some of their calls' answers.
    pub fn pending_batches(&self) -> usize {
        self.batches.len()
    }

    /// Serves the tools through `channel` (the agent's session).
    pub fn with_channel(mut self, channel: Box<dyn ChannelAccess>) -> Self {
        self.channel = channel;
        self
    }

    /// How tools reach the channel (the stdio loop flushes it after each batch).
    pub fn channel_mut(&mut self) -> &mut dyn ChannelAccess {
        self.channel.as_mut()
    }

    /// Sets how many tools one `tools/list` page holds (at least one).
    pub fn with_tools_page_size(mut self, size: usize) -> Self {
        self.tools_page_size = size.max(1);
        self
    }

    pub fn config(&self) -> &ServerConfig {
        &self.config
    }

    pub fn surface(&self) -> &Surface {
        &self.surface
    }

    /// The version `initialize` negotiated, if it happened.
    pub fn negotiated_version(&self) -> Option<ProtocolVersion> {
        self.negotiated
    }

    /// Handles one input line (without its trailing newline; a trailing `\r` is tolerated).
    /// Returns the lines to write, in order, each a complete JSON-RPC message without a newline.
    pub fn handle_line(&mut self, line: &[u8], now: Timestamp) -> Vec<String> {
        self.handle_lines(&[line], now)
    }

    /// Handles lines that arrived together, in order. A `notifications/cancelled` among them
    /// suppresses a request with that id earlier in the same batch: it is not run and gets no
    /// answer.
    pub fn handle_lines(&mut self, lines: &[&[u8]], now: Timestamp) -> Vec<String> {
        let parsed: Vec<Incoming> = lines.iter().map(|line| message::parse_line(line)).collect();
        let cancels: Vec<(usize, &Id)> = parsed
            .iter()
            .enumerate()
            .filter_map(|(index, incoming)| match incoming {
                Incoming::Notification {
                    cancels: Some(id), ..
                } => Some((index, id)),
                _ => None,
            })
            .collect();
        let mut out = Vec::new();
        for (index, incoming) in parsed.iter().enumerate() {
            if let Incoming::Request { id, method, .. } = incoming
                && method != "initialize"
                && cancels
                    .iter()
                    .any(|(at, cancelled)| *at > index && cancelled.same_as(id))
            {
                continue;
            }
            self.handle_incoming(incoming.clone(), now, &mut out);
        }
        out
    }

    /// Called instead of [`Server::handle_line`] when a line exceeded [`MAX_LINE_BYTES`].
    /// `prefix` is the first bytes of the line (at most `MAX_LINE_BYTES`).
    pub fn handle_oversized_line(&mut self, prefix: &[u8], now: Timestamp) -> Vec<String> {
        let _ = now;
        let id = message::sniff_id(prefix).unwrap_or_else(Id::null);
        let error = RpcError::new(
            wire::INVALID_REQUEST,
            format!("invalid request: line longer than {MAX_LINE_BYTES} bytes"),
        );
        vec![wire::error_line(&id, &error)]
    }

    /// Handles one message (a batch array included), pushing the lines it is answered with.
    fn handle_incoming(&mut self, incoming: Incoming, now: Timestamp, out: &mut Vec<String>) {
        match incoming {
            Incoming::Blank | Incoming::Response => {}
            Incoming::ParseError(reason) => {
                out.push(wire::error_line(
                    &Id::null(),
                    &RpcError::new(wire::PARSE_ERROR, reason),
                ));
            }
            Incoming::Invalid { id, reason } => {
                out.push(wire::error_line(
                    &id,
                    &RpcError::new(wire::INVALID_REQUEST, reason),
                ));
            }
            // Never answered. `notifications/initialized` changes nothing we do; a cancellation
            // arriving with its request is handled by `handle_lines`; a later one reaches a call
            // that answers later, or finds the request answered already and is ignored.
            Incoming::Notification {
                cancels: Some(id), ..
            } => self.cancel_pending(&id, out),
            Incoming::Notification { .. } => {}
            Incoming::Request {
                id,
                method,
                params,
                progress_token,
            } => {
                let served = self.request(
                    &id,
                    &method,
                    params.as_ref(),
                    progress_token.as_ref(),
                    now,
                    out,
                );
                if let Served::Now(line) = served {
                    out.push(line);
                }
            }
            Incoming::Batch(items) => self.batch(items, now, out),
        }
    }

    /// The era a request is served under: the `_meta` version when present, else the session's.
    /// A 2026-07-28 request must carry its client capabilities too (the spec's required pair).
    fn era(&self, params: Option<&Value>) -> Result<Era, RpcError> {
        let meta = message::meta(params);
        let Some(requested) = meta.and_then(|meta| meta.get(META_PROTOCOL_VERSION)) else {
            return Ok(self.negotiated.map_or(Era::Fresh, Era::Initialized));
        };
        let Some(requested) = requested.as_str() else {
            // A shape defect, not a negotiation outcome: -32022 would tell the client to retry.
            return Err(RpcError::new(
                wire::INVALID_PARAMS,
                format!("invalid params: _meta {META_PROTOCOL_VERSION} must be a string"),
            ));
        };
        if requested == ProtocolVersion::STATELESS.as_str() {
            if !meta
                .and_then(|meta| meta.get(META_CLIENT_CAPABILITIES))
                .is_some_and(Value::is_object)
            {
                return Err(RpcError::new(
                    wire::INVALID_PARAMS,
                    format!("invalid params: _meta lacks {META_CLIENT_CAPABILITIES}"),
                ));
            }
            return Ok(Era::Stateless);
        }
        if let Some(negotiated) = self.negotiated
            && requested == negotiated.as_str()
        {
            return Ok(Era::Initialized(negotiated));
        }
        Err(unsupported_version(requested))
    }

    /// The answer line of one request, or the ticket of a call that answers later (only when
    /// the host takes answers later).
    fn request(
        &mut self,
        id: &Id,
        method: &str,
        params: Option<&Value>,
        progress_token: Option<&Id>,
        now: Timestamp,
        out: &mut Vec<String>,
    ) -> Served {
        // JSON-RPC ids name one request among those in flight: a second request under the id
        // of a call still running could never be told apart from it by its answer.
        if self.pending.iter().any(|pending| pending.id.same_as(id)) {
            let error = RpcError::new(
                wire::INVALID_REQUEST,
                "invalid request: this id names a call still running",
            );
            return Served::Now(wire::error_line(id, &error));
        }
        match self.serve(id, method, params, progress_token, now, out) {
            Ok(Served::Now(result)) => Served::Now(wire::result_line(id, &result)),
            Ok(later @ Served::Later(_)) => later,
            Err(error) => Served::Now(wire::error_line(id, &error)),
        }
    }

    /// A `notifications/cancelled` for a call that answers later: it leaves the table and is
    /// told to stop; its answer, if it still comes, is dropped. A batch it was the last wait
    /// of goes out without it (into `out`).
    fn cancel_pending(&mut self, id: &Id, out: &mut Vec<String>) {
        if let Some(at) = self
            .pending
            .iter()
            .position(|pending| pending.id.same_as(id))
        {
            let pending = self.pending.remove(at);
            pending.call.cancel();
            out.extend(self.settle(pending.ticket, None));
        }
    }
}

/// `-32022` for a `_meta` version we cannot serve, naming the versions a request can name.
fn unsupported_version(requested: &str) -> RpcError {
    let supported: Vec<&str> = ProtocolVersion::PER_REQUEST
        .iter()
        .map(|version| version.as_str())
        .collect();
    RpcError::new(
        wire::UNSUPPORTED_PROTOCOL_VERSION,
        "unsupported protocol version",
    )
    .with_data(serde_json::json!({ "supported": supported, "requested": requested }))
}

//! The `Tool` trait: what every tool of every group implements; and `ResourceKind`: how a
//! group serves the `ferry://<project>/<kind>/<id>` links its tools hand out.
//!
//! A tool is a static definition plus a call. Definitions are `&'static` data so that the
//! `tools/list` bytes are identical on every run (ADR T8): nothing in a definition may depend
//! on the version, the time, the agent or the project. Dynamic facts belong in results.

use serde_json::{Map, Value};

use crate::port::ChannelAccess;
use crate::protocol::wire::Id;
use crate::shape::{ResourceUri, ToolOutcome};
use crate::time::Timestamp;

/// Behaviour hints of MCP tool annotations. Defaults follow the spec's defaults.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Annotations {
    pub read_only: bool,
    pub destructive: bool,
    pub idempotent: bool,
    pub open_world: bool,
}

impl Annotations {
    /// A tool that only reads: read-only, not destructive, idempotent, closed world.
    pub const READ_ONLY: Annotations = Annotations {
        read_only: true,
        destructive: false,
        idempotent: true,
        open_world: false,
    };
    /// A tool that appends to the channel but never deletes: not read-only, not destructive.
    pub const APPEND: Annotations = Annotations {
        read_only: false,
        destructive: false,
        idempotent: false,
        open_world: false,
    };
}

/// The static definition of a tool, as `tools/list` serves it.
///
/// `input_schema` and `output_schema` are frozen compact JSON texts (spliced into the wire
/// bytes unchanged); tests check that they parse, are valid JSON Schema in the
/// draft-07 / 2020-12 common subset, and that every result validates against its output schema.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ToolDefinition {
    /// 1-128 characters of `[A-Za-z0-9_.-]`, unique across a surface.
    pub name: &'static str,
    pub title: &'static str,
    pub description: &'static str,
    pub input_schema: &'static str,
    pub output_schema: Option<&'static str>,
    pub annotations: Annotations,
}

/// What a call may use besides its arguments. Time is passed in; the core reads no clock.
pub struct CallContext<'a> {
    pub now: Timestamp,
    /// The JSON-RPC id of the request being served.
    pub request: &'a Id,
    /// The leave to answer later ([`Tool::start`], ADR 0027): given only when the host serves
    /// deferred answers and the request is not part of a batch. A tool that answers later
    /// takes it and hands it back with its answer ([`crate::protocol::Server::complete`]).
    pub later: Option<Ticket>,
    /// The project this server is scoped to; used to build `ferry://<project>/...` links.
    pub project: &'a str,
    /// Reports progress; a no-op unless the request carried a progress token.
    pub progress: &'a mut dyn FnMut(Progress),
    /// The channel, through the port.
    pub channel: &'a mut dyn ChannelAccess,
}

impl std::fmt::Debug for CallContext<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CallContext")
            .field("now", &self.now)
            .field("project", &self.project)
            .finish()
    }
}

/// One progress report of a running call (`notifications/progress`).
#[derive(Debug, Clone, PartialEq)]
pub struct Progress {
    pub progress: f64,
    pub total: Option<f64>,
    pub message: Option<String>,
}

/// A tool of some group.
pub trait Tool: Send + Sync {
    fn definition(&self) -> &'static ToolDefinition;
    /// Whether the tool checks its own arguments, so the registry's compact-schema check is
    /// skipped and its input schema may use any keyword: a gateway's tool, whose arguments the
    /// external server that defines them checks (ADR 0021). First-party tools never do.
    fn checks_own_arguments(&self) -> bool {
        false
    }
    /// Runs the tool. `args` has already been validated against the input schema.
    fn call(&self, args: &Map<String, Value>, cx: &mut CallContext<'_>) -> ToolOutcome;
    /// Starts the tool: what the core runs. A tool whose answer may take long (a gateway's,
    /// waiting on a third party) takes `cx.later`, hands the work to a thread of the host's and
    /// answers [`Started::Later`]; every other tool answers now, through [`Tool::call`].
    fn start(&self, args: &Map<String, Value>, cx: &mut CallContext<'_>) -> Started {
        Started::Now(self.call(args, cx))
    }
}

/// Which call a later answer belongs to: given by the core in [`CallContext::later`], handed
/// back with the answer. Never reused within a connection, so an answer that comes after its
/// request was cancelled can never answer another request that took the same JSON-RPC id.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Ticket(u64);

impl Ticket {
    pub(crate) fn new(serial: u64) -> Self {
        Self(serial)
    }

    /// The ticket's number (for logs).
    pub fn get(self) -> u64 {
        self.0
    }
}

/// How a call started.
#[derive(Debug)]
pub enum Started {
    /// Answered.
    Now(ToolOutcome),
    /// To be answered later with the ticket the tool took; what the core holds meanwhile.
    Later(Box<dyn PendingCall>),
}

/// A call that answers later, as the core holds it until its answer comes (ADR 0027).
pub trait PendingCall: Send + std::fmt::Debug {
    /// The client cancelled the request (`notifications/cancelled`): stop the work and free
    /// what it holds. The core sends no answer for it, whatever comes later (the MCP spec:
    /// receivers of a cancellation should not send a response for the cancelled request).
    fn cancel(&self);
}

/// The static description of one kind of resource, advertised by `resources/templates/list`
/// as the template `ferry://{project}/<kind>/{id}`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ResourceTemplate {
    /// The `<kind>` path segment, e.g. `order`: `[a-z0-9_-]`, unique across a surface.
    pub kind: &'static str,
    /// The template's `name` (programmatic), e.g. `order`.
    pub name: &'static str,
    pub title: &'static str,
    pub description: &'static str,
    pub mime_type: &'static str,
}

/// What `resources/read` of one resource gives: one text body.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResourceText {
    pub mime_type: &'static str,
    pub text: String,
}

/// What a resource read may use besides the URI.
pub struct ReadContext<'a> {
    pub now: Timestamp,
    /// The project this server is scoped to; a URI naming another project never reaches a kind.
    pub project: &'a str,
    /// The channel, through the port.
    pub channel: &'a mut dyn ChannelAccess,
}

impl std::fmt::Debug for ReadContext<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ReadContext")
            .field("now", &self.now)
            .field("project", &self.project)
            .finish_non_exhaustive()
    }
}

/// Why a resource could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ResourceError {
    /// No such resource: `-32002` in the initialize era, `-32602` from 2026-07-28.
    #[error("resource not found")]
    NotFound,
    /// The resource exists but could not be read (a bad file, say); `-32603`.
    #[error("resource unreadable: {0}")]
    Unreadable(String),
}

/// One kind of `ferry://<project>/<kind>/<id>` resource that a group serves.
pub trait ResourceKind: Send + Sync {
    fn template(&self) -> &'static ResourceTemplate;
    /// Reads the resource `uri`, whose kind is this one's and whose project is the server's.
    fn read(
        &self,
        uri: &ResourceUri,
        cx: &mut ReadContext<'_>,
    ) -> Result<ResourceText, ResourceError>;
}

//! MCP as a sans-IO state machine.
//!
//! CONTRACT (the binary and the tests code against exactly this face; the body is filled in
//! by the protocol work): one line of bytes in, zero or more complete output lines out.
//! No IO and no clock read happen in here.

use crate::registry::Surface;
use crate::time::Timestamp;

/// The largest input line the server accepts, in bytes (without the newline).
/// A longer line is answered with an error and its bytes are never held in memory whole:
/// the IO layer stops buffering at this size and calls [`Server::handle_oversized_line`].
pub const MAX_LINE_BYTES: usize = 1 << 20;

/// Static facts about the server, fixed for the life of the process.
#[derive(Debug, Clone)]
pub struct ServerConfig {
    /// `serverInfo.name`.
    pub name: &'static str,
    /// `serverInfo.version`; never placed inside tool definitions.
    pub version: &'static str,
    /// The `instructions` text of initialize / server/discover.
    pub instructions: &'static str,
    /// The project the server is scoped to (used for `ferry://<project>/...` links).
    pub project: String,
}

/// One connection's protocol state.
#[derive(Debug)]
pub struct Server {
    config: ServerConfig,
    surface: Surface,
}

impl Server {
    pub fn new(config: ServerConfig, surface: Surface) -> Self {
        Self { config, surface }
    }

    /// Handles one input line (without its trailing newline; a trailing `\r` is tolerated).
    /// Returns the lines to write, in order, each a complete JSON-RPC message without a newline.
    pub fn handle_line(&mut self, line: &[u8], now: Timestamp) -> Vec<String> {
        let _ = (line, now, &self.config, &self.surface);
        Vec::new()
    }

    /// Called instead of [`Server::handle_line`] when a line exceeded [`MAX_LINE_BYTES`].
    /// `prefix` is the first bytes of the line (at most `MAX_LINE_BYTES`).
    pub fn handle_oversized_line(&mut self, prefix: &[u8], now: Timestamp) -> Vec<String> {
        let _ = (prefix, now);
        Vec::new()
    }
}

//! The ferry MCP tool groups: `core` (the six agent tools), `admin` and `legacy`.
//!
//! Each tool is a small facade: it parses its arguments, calls one channel operation and
//! shapes the answer. The groups are plain static lists; a binary or a test assembles the
//! surface it needs from them with the core's registry.

//! Response shaping shared by every tool. (Filled in by the protocol work.)

use serde_json::Value;

/// What a tool call produced, before the protocol turns it into a `tools/call` result.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolOutcome {
    pub structured: Option<Value>,
    pub summary: String,
    pub is_error: bool,
}

//! Integration tests of ferry-mcp-core.

mod protocol;
mod protocol_bad_input;
mod registry;
mod registry_schemas;

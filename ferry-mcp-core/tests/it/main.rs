//! Integration tests of ferry-mcp-core.

//! Integration tests of ferry-mcp-core.

mod home;
mod identity;
mod levels;

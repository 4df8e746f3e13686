//! Integration tests of ferry-mcp-core.

mod channel_log;
mod concurrency;
mod tamper;

//! Integration tests of ferry-mcp-core.

mod channel_log;
mod concurrency;
mod home;
mod identity;
mod levels;
mod tamper;

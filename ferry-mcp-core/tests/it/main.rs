//! Integration tests of ferry-mcp-core.

mod channel_log;
mod concurrency;
mod guard;
mod home;
mod identity;
mod levels;
mod oracle;
mod order_seats;
mod protocol;
mod protocol_bad_input;
mod protocol_fuzz;
mod registry;
mod registry_schemas;
mod shape;
mod tamper;

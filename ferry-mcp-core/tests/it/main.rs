//! Integration tests of ferry-mcp-core.

mod attacks;
mod channel_log;
mod concurrency;
mod fleet;
mod guard;
mod guard_fields;
mod home;
mod identity;
mod levels;
mod oracle;
mod order_seats;
mod orders;
mod protocol;
mod protocol_bad_input;
mod protocol_fuzz;
mod registry;
mod registry_schemas;
mod search;
mod shape;
mod talk;
mod tamper;
mod tidy;
mod watch;

//! Integration tests of ferry-mcp-core.

mod attacks;
mod channel_log;
mod concurrency;
mod fleet;
mod guard;
mod home;
mod identity;
mod levels;
mod local_files;
mod oracle;
mod order_seats;
mod orders;
mod port;
mod protocol;
mod protocol_bad_input;
mod protocol_fuzz;
mod registry;
mod registry_schemas;
mod saves;
mod search;
mod shape;
mod sync_tools;
mod talk;
mod tamper;
mod tidy;
mod watch;

//! Integration tests of the ferry MCP tool groups, driven through a protocol `Server` per agent
//! over a temporary channel (the testkit's scripted session checks every answer's shape).

mod admin;
mod fleet;
mod frozen_schemas;
mod guard;
mod legacy;
mod mcp_budget;
mod orders;
mod port;
mod secrets;
mod support;
mod surface;
mod talk;
mod talk_session;
mod update;

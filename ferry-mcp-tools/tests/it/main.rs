//! Integration tests of the ferry MCP tools, served by a real protocol `Server` over a
//! temporary channel.

mod orders;
mod surface;

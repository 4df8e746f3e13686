//! Token estimators and budget assertions for tests (ADR T1: characters / 4).

pub use ferry_mcp_core::tokens::estimate;

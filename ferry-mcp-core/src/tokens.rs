//! The token estimate that the budgets (T1, T3, T6, T10 in `docs/mcp-budgets.md`) are written
//! in: characters / 4.

/// Estimated tokens of a text: its characters divided by four, rounded up.
pub fn estimate(text: &str) -> usize {
    text.chars().count().div_ceil(4)
}

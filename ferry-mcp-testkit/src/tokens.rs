//! Token estimators and budget assertions for tests (T1 in `docs/mcp-budgets.md`: characters / 4).

use serde_json::Value;

pub use ferry_mcp_core::tokens::estimate;

/// Estimated tokens of a value's compact JSON (what clients hand the model).
pub fn estimate_json(value: &Value) -> usize {
    estimate(&value.to_string())
}

/// Panics with the measured figure when `text` costs more than `max_tokens`; returns the figure.
pub fn assert_within_budget(label: &str, text: &str, max_tokens: usize) -> usize {
    let tokens = estimate(text);
    assert!(
        tokens <= max_tokens,
        "{label}: {tokens} tokens ({} characters) is over the budget of {max_tokens}",
        text.chars().count()
    );
    tokens
}

/// [`assert_within_budget`] of a value's compact JSON.
pub fn assert_json_within_budget(label: &str, value: &Value, max_tokens: usize) -> usize {
    assert_within_budget(label, &value.to_string(), max_tokens)
}

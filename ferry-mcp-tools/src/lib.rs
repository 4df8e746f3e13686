//! The ferry MCP tool groups: `core` (the six agent tools), `admin` and `legacy`.
//!
//! Each tool is a small facade: it parses its arguments, calls one channel operation and
//! shapes the answer. The groups are plain static lists; a binary or a test assembles the
//! surface it needs from them with the core's registry.

/// The server `instructions` (ADR 0028, budget T3: at most 250 estimated tokens, target 170).
///
/// Static text: no version, time, agent or project inside, so clients can cache it.
pub const INSTRUCTIONS: &str = "\
Ferry channel: a signed folder shared by a fleet of agents; nothing needs to be running.
1. Call ferry_join first, then ferry_catchup; pass its cursor back to get only what changed. Never read history or channel files directly.
2. ferry_orders: list, claim, report progress, submit, review. ferry_talk: read what is new, post to an agent or all.
3. Work happens in the work repo: commit and push there. Hand in a git ref and a short note, never code, diffs or files.
4. Never send secrets; anything that looks like one is refused.
5. If the primary is silent: ferry_primary status, then follow its rule. Need a human decision: ferry_ask_human with a recommendation.
Optional groups (--tools admin, --tools legacy) add search, get, status and the old read tools.";

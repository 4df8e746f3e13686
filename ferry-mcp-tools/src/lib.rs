//! The ferry MCP tool groups: `core` (the agent tools) and the opt-in `admin` (`ferry_get`,
//! `ferry_search`, `ferry_status`, `ferry_update`) and `legacy` (the original server's eight read tools, over
//! this channel: ADR 0019).
//!
//! Each tool is a small facade: it parses its arguments, calls one channel operation and
//! shapes the answer. The groups are plain static lists; a binary or a test assembles the
//! surface it needs from them with the core's registry.

/// What the server `instructions` say about the core group (budget T3 of `docs/mcp-budgets.md`: at most 250
/// estimated tokens; the design's target is 170). A surface's instructions are the texts of
/// the groups it serves, so this is sent only when the core tools are.
///
/// Static text: no version, time, agent or project inside, so clients can cache it.
pub const CORE_INSTRUCTIONS: &str = "\
Ferry: a signed folder shared by a fleet of agents; nothing needs to run.
1. ferry_join, then ferry_catchup; pass next back as since. Never read channel files.
2. ferry_orders: list, claim, progress, submit, review. ferry_talk: read, post to an agent, master or all.
3. Work and push in the work repo; submit a git ref and a short note, never code. Heavy order: start it as show's run says (this machine's queue).
4. Never send secrets (the human uses ferry channel secret).
5. Primary silent? ferry_primary status, follow its rule. As primary, keep the brief with ferry brief set|decide. Need a human? ferry_ask_human with a recommendation.
Opt-in: --tools admin, --tools legacy.";

pub mod admin;
pub mod asks;
pub mod catchup;
mod facade;
#[cfg(feature = "fixture")]
pub mod fixture;
pub mod join;
pub mod legacy;
pub mod orders;
pub mod primary;
pub mod read_only;
pub mod talk;
pub mod update;

use ferry_mcp_core::registry::Group;

/// The agent tools of `docs/mcp-server.md` (`ferry_join`, `ferry_catchup`, `ferry_orders`, `ferry_talk`,
/// `ferry_primary`, `ferry_ask_human`), each served once the channel operations it wraps exist.
pub static CORE: Group = Group {
    name: "core",
    tools: &[
        &asks::FerryAskHuman,
        &catchup::FerryCatchup,
        &join::FerryJoin,
        &orders::FerryOrders,
        &primary::FerryPrimary,
        &talk::FerryTalk,
    ],
    resources: &[&orders::OrderBodies, &talk::MessageBodies],
    instructions: CORE_INSTRUCTIONS,
};

/// What the instructions say when the admin group is served.
pub const ADMIN_INSTRUCTIONS: &str = "\
Admin tools: ferry_get reads a ferry:// link when you cannot read resources; ferry_search finds orders, decisions and messages; ferry_status shows agents and problems.
An update in join or catch-up: tell the human; never ferry_update apply mid-order.";

/// Opt-in (`--tools admin`): never in the default list (T2).
pub static ADMIN: Group = Group {
    name: "admin",
    tools: &[
        &admin::FerryGet,
        &admin::FerrySearch,
        &admin::FerryStatus,
        &update::FerryUpdate,
    ],
    resources: &[],
    instructions: ADMIN_INSTRUCTIONS,
};

/// Opt-in (`--tools legacy`): the original server's read tools under their names, as a
/// drop-in for configurations written for it. No instructions of its own: the core's line
/// naming the opt-in groups is enough, and each description says what it reads here.
pub static LEGACY: Group = Group {
    name: "legacy",
    tools: &[
        &legacy::ChannelStatus,
        &legacy::Discover,
        &legacy::GetTask,
        &legacy::ListEngines,
        &legacy::ListLearnings,
        &legacy::ListLedger,
        &legacy::ListTasks,
        &legacy::ReadMemory,
    ],
    resources: &[],
    instructions: "",
};

/// Every group `--read-only` (or a server without `--as`) can name, sorted by name: the core
/// group's reads ([`read_only::CORE_READ_ONLY`], named `core`) in place of the core group.
pub static READ_ONLY_GROUPS: &[&Group] = &[&ADMIN, &read_only::CORE_READ_ONLY, &LEGACY];

/// What a read-only server serves when `--tools` is not given: the core group's reads and
/// the legacy group (the original server's read tools).
pub static READ_ONLY_DEFAULT: &[&Group] = &[&read_only::CORE_READ_ONLY, &LEGACY];

/// What `ferry mcp serve` serves when `--tools` is not given: the core group alone (T2 of
/// `docs/mcp-budgets.md`). The binary's `--tools` default names the same groups (a test there holds it to this).
pub static DEFAULT: &[&Group] = &[&CORE];

/// Every group this crate provides, sorted by name. A binary adds its own or a downstream
/// crate's groups beside these and hands the whole list to `Registry::new`.
pub static GROUPS: &[&Group] = &[&ADMIN, &CORE, &LEGACY];

/// The groups that serve tests only, sorted by name: `fixture` when the feature of that name
/// is on (tests turn it on), else none. A binary lets `--tools` name them but never lists them.
#[cfg(feature = "fixture")]
pub static TEST_GROUPS: &[&Group] = &[&fixture::GROUP];
/// The groups that serve tests only: none in a build without the `fixture` feature.
#[cfg(not(feature = "fixture"))]
pub static TEST_GROUPS: &[&Group] = &[];

#[cfg(test)]
mod tests {
    use super::*;
    use ferry_mcp_core::tokens;

    #[test]
    fn the_groups_are_sorted_by_name_without_duplicates() {
        let names: Vec<&str> = GROUPS.iter().map(|group| group.name).collect();
        assert!(names.windows(2).all(|pair| pair[0] < pair[1]), "{names:?}");
    }

    #[test]
    fn the_groups_form_a_valid_registry() {
        ferry_mcp_core::registry::Registry::new(GROUPS).unwrap();
    }

    #[test]
    fn the_instructions_name_every_opt_in_group_heavy_orders_and_the_brief_s_cli() {
        for group in GROUPS {
            if !DEFAULT.iter().any(|default| default.name == group.name) {
                let named = format!("--tools {}", group.name);
                assert!(CORE_INSTRUCTIONS.contains(&named), "{named}");
            }
        }
        assert!(CORE_INSTRUCTIONS.contains("Heavy order"));
        assert!(CORE_INSTRUCTIONS.contains("machine's queue"));
        assert!(CORE_INSTRUCTIONS.contains("ferry brief set"));
        assert!(CORE_INSTRUCTIONS.contains("ferry channel secret"));
    }

    #[test]
    fn the_instructions_stay_within_the_t3_budget_and_the_170_token_target() {
        let estimate = tokens::estimate(CORE_INSTRUCTIONS);
        assert!(estimate <= 170, "instructions estimate {estimate} tokens");
    }
}

//! One test for every tool of every group: its frozen `inputSchema` and `outputSchema` texts
//! are the ones derived from the types it parses and answers (`ferry_mcp_testkit::schema`), so
//! a definition and its parser never drift. A tool added to a group without its types here
//! fails the test that every served tool is checked.

use ferry_mcp_core::tool::ToolDefinition;
use ferry_mcp_testkit::schema::{assert_input_frozen, assert_output_frozen};
use ferry_mcp_tools::{admin, asks, catchup, join, legacy, orders, primary, talk, update};

/// Holds one tool's two frozen schemas to the ones derived from its types.
type Check = fn(&ToolDefinition);

/// Each tool's name and the check of its schemas.
const CHECKS: &[(&str, Check)] = &[
    ("channel_status", |d| {
        assert_input_frozen::<legacy::NoArgs>(d);
        assert_output_frozen::<legacy::ChannelStatusOut>(d);
    }),
    ("discover", |d| {
        assert_input_frozen::<legacy::CursorArgs>(d);
        assert_output_frozen::<legacy::DiscoverOut>(d);
    }),
    ("ferry_ask_human", |d| {
        assert_input_frozen::<asks::AskArgs>(d);
        assert_output_frozen::<asks::AskOut>(d);
    }),
    ("ferry_catchup", |d| {
        assert_input_frozen::<catchup::CatchupArgs>(d);
        assert_output_frozen::<catchup::CatchupOut>(d);
    }),
    ("ferry_get", |d| {
        assert_input_frozen::<admin::GetArgs>(d);
        assert_output_frozen::<admin::GetOut>(d);
    }),
    ("ferry_join", |d| {
        assert_input_frozen::<join::JoinArgs>(d);
        assert_output_frozen::<join::JoinOut>(d);
    }),
    ("ferry_orders", |d| {
        assert_input_frozen::<orders::OrdersArgs>(d);
        assert_output_frozen::<orders::OrdersOut>(d);
    }),
    ("ferry_primary", |d| {
        assert_input_frozen::<primary::PrimaryArgs>(d);
        assert_output_frozen::<primary::PrimaryOut>(d);
    }),
    ("ferry_search", |d| {
        assert_input_frozen::<admin::SearchArgs>(d);
        assert_output_frozen::<admin::SearchOut>(d);
    }),
    ("ferry_status", |d| {
        assert_input_frozen::<admin::StatusArgs>(d);
        assert_output_frozen::<admin::StatusOut>(d);
    }),
    ("ferry_talk", |d| {
        assert_input_frozen::<talk::TalkArgs>(d);
        assert_output_frozen::<talk::TalkOut>(d);
    }),
    ("ferry_update", |d| {
        assert_input_frozen::<update::UpdateArgs>(d);
        assert_output_frozen::<update::UpdateOut>(d);
    }),
    ("get_task", |d| {
        assert_input_frozen::<legacy::GetTaskArgs>(d);
        assert_output_frozen::<legacy::GetTaskOut>(d);
    }),
    ("list_engines", |d| {
        assert_input_frozen::<legacy::CursorArgs>(d);
        assert_output_frozen::<legacy::EnginesOut>(d);
    }),
    ("list_learnings", |d| {
        assert_input_frozen::<legacy::WalkArgs>(d);
        assert_output_frozen::<legacy::LearningsOut>(d);
    }),
    ("list_ledger", |d| {
        assert_input_frozen::<legacy::WalkArgs>(d);
        assert_output_frozen::<legacy::TasksOut>(d);
    }),
    ("list_tasks", |d| {
        assert_input_frozen::<legacy::ListTasksArgs>(d);
        assert_output_frozen::<legacy::TasksOut>(d);
    }),
    ("read_memory", |d| {
        assert_input_frozen::<legacy::ReadMemoryArgs>(d);
        assert_output_frozen::<legacy::ReadMemoryOut>(d);
    }),
];

fn served_definitions() -> Vec<&'static ToolDefinition> {
    ferry_mcp_tools::GROUPS
        .iter()
        .flat_map(|group| group.tools.iter().map(|tool| tool.definition()))
        .collect()
}

#[test]
fn every_frozen_schema_of_every_group_is_the_one_derived_from_the_tool_s_types() {
    let definitions = served_definitions();
    for (name, check) in CHECKS {
        let definition = definitions
            .iter()
            .find(|definition| definition.name == *name)
            .unwrap_or_else(|| panic!("{name} is checked but no group serves it"));
        check(definition);
    }
}

#[test]
fn every_tool_of_every_group_has_its_schemas_checked() {
    let mut served: Vec<&str> = served_definitions().iter().map(|d| d.name).collect();
    served.sort_unstable();
    let checked: Vec<&str> = CHECKS.iter().map(|(name, _)| *name).collect();
    assert_eq!(checked, served, "add the new tool's types to CHECKS");
}

#[test]
fn every_frozen_schema_of_the_read_only_core_group_is_the_one_derived_from_its_types() {
    use ferry_mcp_tools::read_only;
    let checks: &[(&str, Check)] = &[
        ("ferry_ask_human", |d| {
            assert_input_frozen::<read_only::AskViewArgs>(d);
            assert_output_frozen::<asks::AskOut>(d);
        }),
        ("ferry_catchup", |d| {
            assert_input_frozen::<catchup::CatchupArgs>(d);
            assert_output_frozen::<catchup::CatchupOut>(d);
        }),
        ("ferry_join", |d| {
            assert_input_frozen::<join::JoinArgs>(d);
            assert_output_frozen::<join::JoinOut>(d);
        }),
        ("ferry_orders", |d| {
            assert_input_frozen::<read_only::OrdersViewArgs>(d);
            assert_output_frozen::<orders::OrdersOut>(d);
        }),
        ("ferry_primary", |d| {
            assert_input_frozen::<read_only::PrimaryViewArgs>(d);
            assert_output_frozen::<primary::PrimaryOut>(d);
        }),
        ("ferry_talk", |d| {
            assert_input_frozen::<read_only::TalkViewArgs>(d);
            assert_output_frozen::<talk::TalkOut>(d);
        }),
    ];
    let served: Vec<&ToolDefinition> = read_only::CORE_READ_ONLY
        .tools
        .iter()
        .map(|tool| tool.definition())
        .collect();
    let names: Vec<&str> = served.iter().map(|d| d.name).collect();
    let checked: Vec<&str> = checks.iter().map(|(name, _)| *name).collect();
    assert_eq!(checked, names, "add the new tool's types here");
    for ((_, check), definition) in checks.iter().zip(&served) {
        check(definition);
    }
}

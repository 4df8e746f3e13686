//! The tool registry: named groups of static tools and resource kinds, assembled into the
//! [`Surface`] one server serves.
//!
//! No registration magic: a group is a plain static list, a registry is a plain list of groups,
//! and every structural rule (unique group names, sorted unique tool names, schemas that are JSON
//! objects without line breaks) is checked when the registry or the surface is built, with a typed
//! error naming the culprit. The surface also freezes the `tools/list` bytes once, spliced from the
//! static definitions, so that they are identical on every run and for every agent, project and
//! clock (T8 in docs/mcp-budgets.md).
//!
//! Each tool's frozen `inputSchema` is also read once, when the surface is built, into the
//! [`ArgumentSchema`] that every call's arguments are checked against before the tool runs
//! ([`arguments`]): a schema outside the compact subset that check reads is refused then, naming
//! the tool. Reading them costs microseconds; no JSON Schema validator is compiled at run time
//! (ADR 0014). That each frozen schema is valid JSON Schema, and equal to the one derived from the
//! tool's types, is for tests (`ferry_mcp_testkit::schema`).

pub mod arguments;

use std::fmt::Write as _;

use serde_json::Value;

use crate::tool::{ResourceKind, Tool, ToolDefinition};

pub use arguments::ArgumentSchema;

/// A named group of tools (`core`, `admin`, `legacy`, or one a downstream crate adds).
#[derive(Clone, Copy)]
pub struct Group {
    pub name: &'static str,
    /// Sorted by tool name, no duplicates (checked by [`Registry::new`] and by tests).
    pub tools: &'static [&'static dyn Tool],
    /// The `ferry://<project>/<kind>/<id>` resource kinds this group's tools link to.
    pub resources: &'static [&'static dyn ResourceKind],
    /// What the server's `instructions` say about this group (static text, possibly empty):
    /// a surface's instructions are its groups' texts, so they never name a tool it does not
    /// serve.
    pub instructions: &'static str,
}

impl std::fmt::Debug for Group {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Group")
            .field("name", &self.name)
            .field("tools", &self.tools.len())
            .field("resources", &self.resources.len())
            .finish()
    }
}

impl std::fmt::Debug for dyn Tool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.definition().name)
    }
}

impl std::fmt::Debug for dyn ResourceKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.template().kind)
    }
}

/// Why a registry or a surface was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RegistryError {
    #[error("group `{0}` is listed twice")]
    DuplicateGroup(&'static str),
    #[error("group name `{0}` is empty or has a character outside [a-z0-9_-]")]
    BadGroupName(&'static str),
    #[error("group `{group}` lists tool `{tool}` twice")]
    DuplicateTool {
        group: &'static str,
        tool: &'static str,
    },
    #[error("group `{group}` lists tool `{tool}` out of name order")]
    UnsortedTools {
        group: &'static str,
        tool: &'static str,
    },
    #[error("tool name `{0}` is not 1-128 characters of [A-Za-z0-9_.-]")]
    BadToolName(&'static str),
    #[error("tool `{tool}` is in both group `{first}` and group `{second}`")]
    ToolInTwoGroups {
        tool: &'static str,
        first: &'static str,
        second: &'static str,
    },
    #[error("resource kind `{kind}` is served by both group `{first}` and group `{second}`")]
    DuplicateResourceKind {
        kind: &'static str,
        first: &'static str,
        second: &'static str,
    },
    #[error("unknown tool group `{0}`")]
    UnknownGroup(String),
    #[error("tool `{tool}` has an invalid {which}: {reason}")]
    BadSchema {
        tool: &'static str,
        which: &'static str,
        reason: String,
    },
}

/// Every group a binary knows, checked once.
#[derive(Debug, Clone)]
pub struct Registry {
    groups: Vec<&'static Group>,
}

/// Which groups a server serves, and whether only read-only tools are kept.
#[derive(Debug, Clone, Copy, Default)]
pub struct Selection<'a> {
    pub groups: &'a [&'a str],
    /// Keep only tools whose annotations say read-only (`--read-only`).
    pub read_only: bool,
}

impl Registry {
    /// Checks the groups: unique valid names, each group's tools sorted by name without duplicates,
    /// valid tool names, and no tool or resource kind in two groups.
    pub fn new(groups: &[&'static Group]) -> Result<Self, RegistryError> {
        for (index, group) in groups.iter().enumerate() {
            if !valid_group_name(group.name) {
                return Err(RegistryError::BadGroupName(group.name));
            }
            if groups[..index]
                .iter()
                .any(|earlier| earlier.name == group.name)
            {
                return Err(RegistryError::DuplicateGroup(group.name));
            }
            check_group_tools(group)?;
        }
        for (index, group) in groups.iter().enumerate() {
            for later in &groups[index + 1..] {
                check_disjoint(group, later)?;
            }
        }
        Ok(Self {
            groups: groups.to_vec(),
        })
    }

    pub fn groups(&self) -> &[&'static Group] {
        &self.groups
    }

    pub fn group(&self, name: &str) -> Option<&'static Group> {
        self.groups.iter().copied().find(|group| group.name == name)
    }

    /// Assembles the surface of the selected groups (in any order; duplicates are ignored).
    pub fn surface(&self, selection: &Selection<'_>) -> Result<Surface, RegistryError> {
        let mut chosen: Vec<&'static Group> = Vec::new();
        for name in selection.groups {
            let group = self
                .group(name)
                .ok_or_else(|| RegistryError::UnknownGroup((*name).to_owned()))?;
            if !chosen.iter().any(|g| g.name == group.name) {
                chosen.push(group);
            }
        }
        Surface::build(&chosen, selection.read_only)
    }
}

fn valid_group_name(name: &str) -> bool {
    !name.is_empty()
        && name
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_' || b == b'-')
}

/// 1-128 characters of `[A-Za-z0-9_.-]` (the MCP tool-name rule).
pub fn valid_tool_name(name: &str) -> bool {
    (1..=128).contains(&name.len())
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'.' | b'-'))
}

fn check_group_tools(group: &Group) -> Result<(), RegistryError> {
    let mut previous: Option<&'static str> = None;
    for tool in group.tools {
        let name = tool.definition().name;
        if !valid_tool_name(name) {
            return Err(RegistryError::BadToolName(name));
        }
        if let Some(previous) = previous {
            if previous == name {
                return Err(RegistryError::DuplicateTool {
                    group: group.name,
                    tool: name,
                });
            }
            if previous > name {
                return Err(RegistryError::UnsortedTools {
                    group: group.name,
                    tool: name,
                });
            }
        }
        previous = Some(name);
    }
    Ok(())
}

fn check_disjoint(first: &Group, second: &Group) -> Result<(), RegistryError> {
    for tool in first.tools {
        let name = tool.definition().name;
        if second
            .tools
            .iter()
            .any(|other| other.definition().name == name)
        {
            return Err(RegistryError::ToolInTwoGroups {
                tool: name,
                first: first.name,
                second: second.name,
            });
        }
    }
    for kind in first.resources {
        let kind = kind.template().kind;
        if second
            .resources
            .iter()
            .any(|other| other.template().kind == kind)
        {
            return Err(RegistryError::DuplicateResourceKind {
                kind,
                first: first.name,
                second: second.name,
            });
        }
    }
    Ok(())
}

/// The tools and resource kinds one server serves: tools sorted by name, the `tools/list` bytes
/// frozen, and each tool's input schema read for the calls to come.
pub struct Surface {
    tools: Vec<&'static dyn Tool>,
    /// One per tool, in the order of `tools`: what its arguments are checked against.
    arguments: Vec<ArgumentSchema>,
    /// The compact JSON of each tool definition, in the order of `tools`.
    tool_json: Vec<String>,
    /// `[` + the tool JSONs joined by `,` + `]`.
    tools_json: String,
    resources: Vec<&'static dyn ResourceKind>,
    /// The groups' instructions, in group-name order, one per line group.
    instructions: String,
}

impl std::fmt::Debug for Surface {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Surface")
            .field("tools", &self.tools)
            .field("resources", &self.resources)
            .finish()
    }
}

impl Default for Surface {
    fn default() -> Self {
        Self {
            tools: Vec::new(),
            arguments: Vec::new(),
            tool_json: Vec::new(),
            tools_json: "[]".into(),
            resources: Vec::new(),
            instructions: String::new(),
        }
    }
}

/// One tool of a surface, as [`Surface::find`] gives it.
#[derive(Debug, Clone, Copy)]
pub struct ServedTool<'a> {
    surface: &'a Surface,
    index: usize,
}

impl<'a> ServedTool<'a> {
    pub fn tool(&self) -> &'static dyn Tool {
        self.surface.tools[self.index]
    }

    /// What the tool's arguments are checked against: its inputSchema, read when the surface
    /// was built.
    pub fn arguments(&self) -> &'a ArgumentSchema {
        &self.surface.arguments[self.index]
    }
}

impl Surface {
    /// Builds a surface from groups directly (a [`Registry`] checks the groups first).
    /// Checks the structure of every schema (a JSON object on one line) and reads each input
    /// schema into the [`ArgumentSchema`] its calls are checked against.
    pub fn build(groups: &[&'static Group], read_only: bool) -> Result<Self, RegistryError> {
        for group in groups {
            check_group_tools(group)?;
        }
        for (index, group) in groups.iter().enumerate() {
            for later in &groups[index + 1..] {
                check_disjoint(group, later)?;
            }
        }
        let mut tools: Vec<&'static dyn Tool> = groups
            .iter()
            .flat_map(|group| group.tools.iter().copied())
            .filter(|tool| !read_only || tool.definition().annotations.read_only)
            .collect();
        tools.sort_by_key(|tool| tool.definition().name);
        let mut tool_json = Vec::with_capacity(tools.len());
        let mut arguments = Vec::with_capacity(tools.len());
        for tool in &tools {
            let definition = tool.definition();
            let input = parse_schema(definition, "inputSchema", definition.input_schema)?;
            arguments.push(if tool.checks_own_arguments() {
                ArgumentSchema::any_object()
            } else {
                ArgumentSchema::read(&input)
                    .map_err(|reason| bad_schema(definition, "inputSchema", reason))?
            });
            if let Some(output) = definition.output_schema {
                parse_schema(definition, "outputSchema", output)?;
            }
            tool_json.push(definition_json(definition));
        }
        let mut tools_json = String::from("[");
        tools_json.push_str(&tool_json.join(","));
        tools_json.push(']');
        let resources = groups
            .iter()
            .flat_map(|group| group.resources.iter().copied())
            .collect();
        // In group-name order whatever the order they were named in: the text is byte-stable
        // for a given selection. A read-only surface keeps only the texts of groups whose tools
        // are all read-only: the others would name tools it does not serve.
        let mut texts: Vec<(&str, &str)> = groups
            .iter()
            .filter(|group| !group.instructions.trim().is_empty())
            .filter(|group| {
                !read_only
                    || group
                        .tools
                        .iter()
                        .all(|tool| tool.definition().annotations.read_only)
            })
            .map(|group| (group.name, group.instructions.trim_end()))
            .collect();
        texts.sort_unstable();
        texts.dedup();
        let instructions = texts
            .iter()
            .map(|(_, text)| *text)
            .collect::<Vec<_>>()
            .join("\n");
        Ok(Self {
            instructions,
            arguments,
            tools,
            tool_json,
            tools_json,
            resources,
        })
    }

    /// The server instructions of this surface: the texts of the groups it serves.
    pub fn instructions(&self) -> &str {
        &self.instructions
    }

    /// The served tools, sorted by name.
    pub fn tools(&self) -> &[&'static dyn Tool] {
        &self.tools
    }

    /// The resource kinds served, in group order.
    pub fn resources(&self) -> &[&'static dyn ResourceKind] {
        &self.resources
    }

    /// The exact JSON of the `tools` array of `tools/list` (every tool, one page).
    pub fn tools_list_json(&self) -> &str {
        &self.tools_json
    }

    /// The compact JSON of one tool's definition as `tools/list` gives it, by index in [`Surface::tools`].
    pub fn tool_json(&self, index: usize) -> &str {
        &self.tool_json[index]
    }

    /// The tool called `name`.
    pub fn find(&self, name: &str) -> Option<ServedTool<'_>> {
        let index = self
            .tools
            .binary_search_by(|tool| tool.definition().name.cmp(name))
            .ok()?;
        Some(ServedTool {
            surface: self,
            index,
        })
    }

    /// The resource kind serving `<kind>` URIs.
    pub fn resource_kind(&self, kind: &str) -> Option<&'static dyn ResourceKind> {
        self.resources
            .iter()
            .copied()
            .find(|resource| resource.template().kind == kind)
    }
}
fn bad_schema(definition: &ToolDefinition, which: &'static str, reason: String) -> RegistryError {
    RegistryError::BadSchema {
        tool: definition.name,
        which,
        reason,
    }
}

fn parse_schema(
    definition: &ToolDefinition,
    which: &'static str,
    text: &str,
) -> Result<Value, RegistryError> {
    if text.contains(['\n', '\r']) {
        return Err(bad_schema(
            definition,
            which,
            "contains a line break".into(),
        ));
    }
    let value: Value =
        serde_json::from_str(text).map_err(|e| bad_schema(definition, which, e.to_string()))?;
    if !value.is_object() {
        return Err(bad_schema(definition, which, "not a JSON object".into()));
    }
    Ok(value)
}

/// Splices one definition into compact JSON: the field order is fixed here and the frozen
/// schema texts go in unchanged, so the bytes never depend on a map's ordering.
fn definition_json(definition: &ToolDefinition) -> String {
    let quote = |text: &str| serde_json::to_string(text).unwrap_or_default();
    let mut json = String::with_capacity(
        64 + definition.description.len()
            + definition.input_schema.len()
            + definition.output_schema.map_or(0, str::len),
    );
    let _ = write!(json, "{{\"name\":{}", quote(definition.name));
    if !definition.title.is_empty() {
        let _ = write!(json, ",\"title\":{}", quote(definition.title));
    }
    let _ = write!(json, ",\"description\":{}", quote(definition.description));
    let _ = write!(json, ",\"inputSchema\":{}", definition.input_schema);
    if let Some(output) = definition.output_schema {
        let _ = write!(json, ",\"outputSchema\":{output}");
    }
    let a = definition.annotations;
    let _ = write!(
        json,
        ",\"annotations\":{{\"readOnlyHint\":{},\"destructiveHint\":{},\"idempotentHint\":{},\"openWorldHint\":{}}}}}",
        a.read_only, a.destructive, a.idempotent, a.open_world
    );
    json
}

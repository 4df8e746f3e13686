//! The `legacy` group (opt-in, `--tools legacy`): the original server's eight read tools under
//! their names and arguments, served over this channel so a configuration written for the
//! original keeps working (ADR 0019 decides what each reads here; each description says it).
//!
//! Every tool only reads, masks every text it answers with the guard, and holds its answer to
//! T4 (20 items, 4,000 characters of structuredContent) with `total`, `truncated` and a `next`
//! cursor (an offset: these lists are read, not followed; `since` cursors are the core's).

use std::collections::BTreeMap;

use ferry_mcp_core::channel::fold::levels::{Level, Operation};
use ferry_mcp_core::channel::fold::state::orders::OrderState;
use ferry_mcp_core::channel::ops::legacy::{PageRequest, TaskFilter, TaskRow};
use ferry_mcp_core::guard;
use ferry_mcp_core::shape::{Cursor, MAX_ITEMS, ResourceLink, ResourceUri, ToolOutcome};
use ferry_mcp_core::tool::{Annotations, CallContext, Tool, ToolDefinition};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::facade;
use crate::orders::{Detail, ORDER_KIND, clip};

/// Characters a title keeps in a legacy list.
const TITLE_CHARS: usize = 80;
/// Characters a note, decision or brief line keeps.
const LINE_CHARS: usize = 300;
/// The most brief constraints `read_memory` shows.
const CONSTRAINTS: usize = 10;
/// `list_ledger` and `list_learnings`: the walk's default and bounds (the original's).
const WALK_DEFAULT: usize = 50;
const WALK_MAX: usize = 500;

/// The original's name of each of our states (ADR 0019): `in_progress` is `claimed` there,
/// `submitted` is `awaiting_review`; `cancelled` has no name there and keeps ours.
pub fn legacy_state(state: OrderState) -> &'static str {
    match state {
        OrderState::Open => "open",
        OrderState::Offered => "offered",
        OrderState::Claimed | OrderState::InProgress => "claimed",
        OrderState::Submitted => "awaiting_review",
        OrderState::ChangesRequested => "changes_requested",
        OrderState::Accepted => "accepted",
        OrderState::Cancelled => "cancelled",
    }
}

/// The names `list_tasks {state}` takes: the original's and ours.
const STATE_NAMES: &str = "open, offered, claimed, in_progress, stale, awaiting_review, submitted, changes_requested, accepted, done, cancelled";

/// The filter of a `state` name, or none for a name that is neither the original's nor ours.
fn task_filter(name: &str) -> Option<TaskFilter> {
    let states: &'static [OrderState] = match name {
        "open" => &[OrderState::Open],
        "offered" => &[OrderState::Offered],
        "claimed" => &[OrderState::Claimed, OrderState::InProgress],
        "in_progress" => &[OrderState::InProgress],
        "awaiting_review" | "submitted" => &[OrderState::Submitted],
        "changes_requested" => &[OrderState::ChangesRequested],
        "accepted" | "done" => &[OrderState::Accepted],
        "cancelled" => &[OrderState::Cancelled],
        "stale" => return Some(TaskFilter::Stale),
        _ => return None,
    };
    Some(TaskFilter::In(states))
}

/// Masks texts and remembers whether anything was masked.
#[derive(Debug, Default)]
struct Masked {
    redacted: bool,
}

impl Masked {
    /// `text` masked, then cut to `max` characters (masking first: a cut never shows part of
    /// a secret).
    fn clean(&mut self, text: &str, max: usize) -> String {
        let clean = guard::redact(text);
        self.redacted |= clean.redacted;
        clip(&clean.text, max)
    }
}

/// Where a page starts: the `cursor` a previous page gave, else the start.
fn start(cursor: Option<&str>) -> Result<usize, ToolOutcome> {
    cursor.map_or(Ok(0), |text| {
        Cursor::decode(text)
            .map(|cursor| cursor.0)
            .map_err(|err| ToolOutcome::error(format!("invalid: {err}: pass next back as cursor")))
    })
}

/// The page asked for: at most 20 rows from `skip`.
fn page_at(skip: usize) -> PageRequest {
    PageRequest {
        skip,
        limit: MAX_ITEMS,
    }
}

/// The first rows of `rows` whose JSON fits what is left of the 4,000 characters once
/// `reserve` are kept for the other fields (at least one row, so a reader always moves on).
fn fit<T: Serialize>(mut rows: Vec<T>, reserve: usize) -> Vec<T> {
    rows.truncate(facade::rows_that_fit(&rows, reserve));
    rows
}

/// What every legacy list says of its page: how many there are in all, whether this page
/// leaves some out, and where the next one starts.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "schemas", derive(schemars::JsonSchema))]
pub struct Paged {
    pub total: usize,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub truncated: bool,
    /// Pass back as `cursor` for the next page.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub next: Option<String>,
}

impl Paged {
    fn of(skip: usize, given: usize, total: usize) -> Self {
        let end = skip + given;
        Self {
            total,
            truncated: end < total,
            next: (end < total).then(|| Cursor(end).encode()),
        }
    }

    /// `", 20 of 45; more with next"` or `""`.
    fn note(&self, given: usize) -> String {
        if self.truncated {
            format!(" ({given} shown; more with next)")
        } else {
            String::new()
        }
    }
}

/// An order as the legacy lists show it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "schemas", derive(schemars::JsonSchema))]
pub struct TaskOut {
    pub id: String,
    pub title: String,
    /// The original's name of the state.
    pub state: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub holder: Option<String>,
    /// Held by an agent that has gone silent.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub stale: bool,
}

fn task_out(task: &TaskRow, masked: &mut Masked) -> TaskOut {
    TaskOut {
        id: task.row.id.clone(),
        title: masked.clean(&task.row.title, TITLE_CHARS),
        state: legacy_state(task.row.state).to_owned(),
        holder: task.row.holder.as_ref().map(ToString::to_string),
        stale: task.stale,
    }
}

/// The arguments of a legacy tool that takes none but a cursor.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[cfg_attr(feature = "schemas", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct CursorArgs {
    /// The `next` of the previous page.
    #[serde(default)]
    pub cursor: Option<String>,
}

/// The arguments of `channel_status`: none.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[cfg_attr(feature = "schemas", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct NoArgs {}

/// What `channel_status` answers.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "schemas", derive(schemars::JsonSchema))]
pub struct ChannelStatusOut {
    pub project: String,
    /// Seated and contested names.
    pub agents: usize,
    /// Orders per state, by the original's names.
    pub tasks: BTreeMap<String, usize>,
    /// Held orders whose holder has gone silent.
    pub stale: usize,
    pub total: usize,
}

pub(crate) static CHANNEL_STATUS: ToolDefinition = ToolDefinition {
    name: "channel_status",
    title: "Channel status (legacy)",
    description: "The project, how many agents are seated, and its orders (tasks) counted by state.",
    input_schema: r#"{"type":"object","additionalProperties":false}"#,
    output_schema: Some(
        r#"{"type":"object","properties":{"project":{"type":"string"},"agents":{"type":"integer"},"tasks":{"type":"object"},"stale":{"type":"integer"},"total":{"type":"integer"}},"required":["project","agents","tasks","stale","total"],"additionalProperties":false}"#,
    ),
    annotations: Annotations::READ_ONLY,
};

/// `channel_status`.
#[derive(Debug)]
pub struct ChannelStatus;

impl Tool for ChannelStatus {
    fn definition(&self) -> &'static ToolDefinition {
        &CHANNEL_STATUS
    }

    fn call(&self, args: &Map<String, Value>, cx: &mut CallContext<'_>) -> ToolOutcome {
        let (NoArgs {}, now, channel) = match facade::start(CHANNEL_STATUS.name, args, cx) {
            Ok(started) => started,
            Err(refusal) => return refusal,
        };
        let counts = match channel.board_counts(now) {
            Ok(counts) => counts,
            Err(err) => return facade::failed(&err),
        };
        let status = match channel.status(now) {
            Ok(status) => status,
            Err(err) => return facade::failed(&err),
        };
        let mut tasks = BTreeMap::<String, usize>::new();
        for (state, count) in &counts.by_state {
            *tasks.entry(legacy_state(*state).to_owned()).or_default() += count;
        }
        let out = ChannelStatusOut {
            project: status.project.to_string(),
            agents: status.agents.len(),
            tasks,
            stale: counts.stale,
            total: counts.total,
        };
        let summary = format!(
            "{}: {} agents, {} orders ({} stale)",
            out.project, out.agents, out.total, out.stale
        );
        ToolOutcome::ok(facade::structured(&out), summary)
    }
}

/// One agent as `discover` shows it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "schemas", derive(schemars::JsonSchema))]
pub struct AgentOut {
    pub name: String,
    /// The level: `worker`, `member` or `orchestrator`.
    pub role: String,
    /// The first 16 hex characters of the key holding the name.
    pub key: String,
    /// What the level allows.
    pub capabilities: Vec<String>,
    pub summary: String,
}

/// What `discover` answers.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "schemas", derive(schemars::JsonSchema))]
pub struct DiscoverOut {
    pub agents: Vec<AgentOut>,
    #[serde(flatten)]
    pub page: Paged,
}

pub(crate) static DISCOVER: ToolDefinition = ToolDefinition {
    name: "discover",
    title: "Discover agents (legacy)",
    description: "The seated agents: level as role, key, what the level allows, and when each was last heard from.",
    input_schema: r#"{"type":"object","properties":{"cursor":{"type":"string"}},"additionalProperties":false}"#,
    output_schema: Some(
        r#"{"type":"object","properties":{"agents":{"type":"array"},"total":{"type":"integer"},"truncated":{"type":"boolean"},"next":{"type":"string"}},"required":["agents","total"],"additionalProperties":false}"#,
    ),
    annotations: Annotations::READ_ONLY,
};

/// What an agent at `level` may do, in the original's words.
fn capabilities(level: Level) -> Vec<String> {
    let worker = ["read", "hand_in", "ask"];
    let member = ["claim", "progress", "submit", "post"];
    let orchestrator = ["review", "issue", "takeover"];
    let allowed: &[&[&str]] = match level {
        Level::Worker => &[&worker],
        Level::Member => &[&worker, &member],
        Level::Orchestrator => &[&worker, &member, &orchestrator],
    };
    allowed
        .iter()
        .flat_map(|names| names.iter().map(|name| (*name).to_owned()))
        .collect()
}

/// `discover`.
#[derive(Debug)]
pub struct Discover;

impl Tool for Discover {
    fn definition(&self) -> &'static ToolDefinition {
        &DISCOVER
    }

    fn call(&self, args: &Map<String, Value>, cx: &mut CallContext<'_>) -> ToolOutcome {
        let (args, now, channel) = match facade::start::<CursorArgs>(DISCOVER.name, args, cx) {
            Ok(started) => started,
            Err(refusal) => return refusal,
        };
        let skip = match start(args.cursor.as_deref()) {
            Ok(skip) => skip,
            Err(refusal) => return refusal,
        };
        if let Err(err) = channel.authorize(Operation::Read, now) {
            return facade::failed(&err);
        }
        channel.refresh(now);
        let status = match channel.status(now) {
            Ok(status) => status,
            Err(err) => return facade::failed(&err),
        };
        let total = status.agents.len();
        let rows: Vec<AgentOut> = status
            .agents
            .iter()
            .skip(skip)
            .take(MAX_ITEMS)
            .map(|row| {
                let heard = match channel.liveness(&row.name, now) {
                    Some((age, state)) => format!("{state}, heard {age}s ago"),
                    None => "never heard from here".to_owned(),
                };
                AgentOut {
                    name: row.name.to_string(),
                    role: row.level.to_string(),
                    key: row
                        .keys
                        .first()
                        .map(|key| key.chars().take(16).collect())
                        .unwrap_or_default(),
                    capabilities: capabilities(row.level),
                    summary: format!("{} {}; {heard}", row.level, row.seat.as_str()),
                }
            })
            .collect();
        let agents = fit(rows, 64);
        let page = Paged::of(skip, agents.len(), total);
        let summary = format!("{total} agents{}", page.note(agents.len()));
        let out = DiscoverOut { agents, page };
        ToolOutcome::ok(facade::structured(&out), summary)
    }
}

/// The arguments of `list_tasks`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[cfg_attr(feature = "schemas", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct ListTasksArgs {
    /// A state, by the original's names or ours.
    #[serde(default)]
    pub state: Option<String>,
    #[serde(default)]
    pub cursor: Option<String>,
}

/// What `list_tasks` and `list_ledger` answer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "schemas", derive(schemars::JsonSchema))]
pub struct TasksOut {
    pub tasks: Vec<TaskOut>,
    #[serde(flatten)]
    pub page: Paged,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub redacted: bool,
}

const TASKS_OUTPUT: &str = r#"{"type":"object","properties":{"tasks":{"type":"array"},"total":{"type":"integer"},"truncated":{"type":"boolean"},"next":{"type":"string"},"redacted":{"type":"boolean"}},"required":["tasks","total"],"additionalProperties":false}"#;

pub(crate) static LIST_TASKS: ToolDefinition = ToolDefinition {
    name: "list_tasks",
    title: "List tasks (legacy)",
    description: "The orders, oldest change first; state filters (the original's names: awaiting_review is submitted, done is accepted, stale is held by a silent agent).",
    input_schema: r#"{"type":"object","properties":{"state":{"type":"string"},"cursor":{"type":"string"}},"additionalProperties":false}"#,
    output_schema: Some(TASKS_OUTPUT),
    annotations: Annotations::READ_ONLY,
};

/// `list_tasks`.
#[derive(Debug)]
pub struct ListTasks;

/// The answer of a list of orders.
fn tasks_answer(rows: &[TaskRow], skip: usize, total: usize, what: &str) -> ToolOutcome {
    let mut masked = Masked::default();
    let tasks = fit(
        rows.iter()
            .map(|task| task_out(task, &mut masked))
            .collect(),
        64,
    );
    let page = Paged::of(skip, tasks.len(), total);
    let summary = format!("{total} {what}{}", page.note(tasks.len()));
    let out = TasksOut {
        tasks,
        page,
        redacted: masked.redacted,
    };
    ToolOutcome::ok(facade::structured(&out), summary)
}

impl Tool for ListTasks {
    fn definition(&self) -> &'static ToolDefinition {
        &LIST_TASKS
    }

    fn call(&self, args: &Map<String, Value>, cx: &mut CallContext<'_>) -> ToolOutcome {
        let (args, now, channel) = match facade::start::<ListTasksArgs>(LIST_TASKS.name, args, cx) {
            Ok(started) => started,
            Err(refusal) => return refusal,
        };
        let filter = match args.state.as_deref().map(|name| (name, task_filter(name))) {
            None => None,
            Some((_, Some(filter))) => Some(filter),
            Some((name, None)) => {
                return ToolOutcome::error(format!(
                    "invalid: state {:?} is not one of {STATE_NAMES}",
                    clip(name, 40)
                ));
            }
        };
        let skip = match start(args.cursor.as_deref()) {
            Ok(skip) => skip,
            Err(refusal) => return refusal,
        };
        match channel.tasks(filter, page_at(skip), now) {
            Ok(page) => tasks_answer(&page.rows, skip, page.total, "orders"),
            Err(err) => facade::failed(&err),
        }
    }
}

/// The arguments of `get_task`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[cfg_attr(feature = "schemas", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct GetTaskArgs {
    pub id: String,
}

/// What `get_task` answers.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "schemas", derive(schemars::JsonSchema))]
pub struct GetTaskOut {
    pub task: Detail,
    /// The original's name of the state.
    pub state: String,
    /// The order's whole text, for `resources/read` (or `ferry_get`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub link: Option<String>,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub redacted: bool,
}

pub(crate) static GET_TASK: ToolDefinition = ToolDefinition {
    name: "get_task",
    title: "Get a task (legacy)",
    description: "One order as ferry_orders show reads it, with a link to its whole text.",
    input_schema: r#"{"type":"object","properties":{"id":{"type":"string"}},"required":["id"],"additionalProperties":false}"#,
    output_schema: Some(
        r#"{"type":"object","properties":{"task":{"type":"object"},"state":{"type":"string"},"link":{"type":"string"},"redacted":{"type":"boolean"}},"required":["task","state"],"additionalProperties":false}"#,
    ),
    annotations: Annotations::READ_ONLY,
};

/// `get_task`.
#[derive(Debug)]
pub struct GetTask;

impl Tool for GetTask {
    fn definition(&self) -> &'static ToolDefinition {
        &GET_TASK
    }

    fn call(&self, args: &Map<String, Value>, cx: &mut CallContext<'_>) -> ToolOutcome {
        let project = cx.project.to_owned();
        let (args, now, channel) = match facade::start::<GetTaskArgs>(GET_TASK.name, args, cx) {
            Ok(started) => started,
            Err(refusal) => return refusal,
        };
        let detail = match channel.show_order(&args.id, None, now) {
            Ok(detail) => detail,
            Err(err) => return facade::failed(&err),
        };
        let mut redacted = false;
        let task = crate::orders::detail_out(&detail, &mut redacted);
        let link = ResourceUri::new(&project, ORDER_KIND, &detail.row.id).ok();
        let summary = format!(
            "{} {} ({})",
            task.id,
            legacy_state(detail.row.state),
            clip(&task.title, 60)
        );
        let out = GetTaskOut {
            state: legacy_state(detail.row.state).to_owned(),
            link: link.as_ref().map(ToString::to_string),
            task,
            redacted,
        };
        let mut outcome = ToolOutcome::ok(facade::structured(&out), summary);
        if let Some(uri) = link {
            outcome = outcome.with_link(
                ResourceLink::new(uri, format!("order {}", detail.row.id))
                    .mime_type("text/markdown")
                    .description("the order's full text"),
            );
        }
        outcome
    }
}

/// The arguments of `read_memory`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[cfg_attr(feature = "schemas", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct ReadMemoryArgs {
    /// `brief` or `decisions`; without it, the list of the two.
    #[serde(default)]
    pub file: Option<String>,
    #[serde(default)]
    pub cursor: Option<String>,
}

/// One "file" of the memory.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "schemas", derive(schemars::JsonSchema))]
pub struct MemoryFile {
    pub name: String,
    /// Lines (the brief's objective and constraints) or decisions.
    pub items: usize,
}

/// The brief as `read_memory` shows it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "schemas", derive(schemars::JsonSchema))]
pub struct BriefOut {
    pub by: String,
    pub objective: String,
    pub constraints: Vec<String>,
    /// Milliseconds since the Unix epoch (a `Timestamp`).
    pub at: u64,
}

/// A decision as `read_memory` shows it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "schemas", derive(schemars::JsonSchema))]
pub struct DecisionOut {
    pub id: String,
    pub by: String,
    pub line: String,
    /// Milliseconds since the Unix epoch (a `Timestamp`).
    pub at: u64,
}

/// What `read_memory` answers.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "schemas", derive(schemars::JsonSchema))]
pub struct ReadMemoryOut {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub files: Option<Vec<MemoryFile>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub brief: Option<BriefOut>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub decisions: Option<Vec<DecisionOut>>,
    #[serde(skip_serializing_if = "Option::is_none", flatten)]
    pub page: Option<Paged>,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub redacted: bool,
}

pub(crate) static READ_MEMORY: ToolDefinition = ToolDefinition {
    name: "read_memory",
    title: "Read memory (legacy)",
    description: "The primary's brief (file brief) or decisions, newest first (file decisions); without file, the list of the two.",
    input_schema: r#"{"type":"object","properties":{"file":{"type":"string"},"cursor":{"type":"string"}},"additionalProperties":false}"#,
    output_schema: Some(
        r#"{"type":"object","properties":{"files":{"type":"array"},"brief":{"type":"object"},"decisions":{"type":"array"},"total":{"type":"integer"},"truncated":{"type":"boolean"},"next":{"type":"string"},"redacted":{"type":"boolean"}},"additionalProperties":false}"#,
    ),
    annotations: Annotations::READ_ONLY,
};

/// `read_memory`.
#[derive(Debug)]
pub struct ReadMemory;

impl Tool for ReadMemory {
    fn definition(&self) -> &'static ToolDefinition {
        &READ_MEMORY
    }

    fn call(&self, args: &Map<String, Value>, cx: &mut CallContext<'_>) -> ToolOutcome {
        let (args, now, channel) = match facade::start::<ReadMemoryArgs>(READ_MEMORY.name, args, cx)
        {
            Ok(started) => started,
            Err(refusal) => return refusal,
        };
        let skip = match start(args.cursor.as_deref()) {
            Ok(skip) => skip,
            Err(refusal) => return refusal,
        };
        let file = args.file.as_deref();
        if !matches!(file, None | Some("brief" | "decisions")) {
            return ToolOutcome::error("invalid: file is brief or decisions");
        }
        let memory = match channel.memory(page_at(skip), now) {
            Ok(memory) => memory,
            Err(err) => return facade::failed(&err),
        };
        let mut masked = Masked::default();
        let mut out = ReadMemoryOut {
            files: None,
            brief: None,
            decisions: None,
            page: None,
            redacted: false,
        };
        let summary = match file {
            None => {
                let brief_lines = memory
                    .brief
                    .as_ref()
                    .map_or(0, |brief| 1 + brief.constraints.len());
                out.files = Some(vec![
                    MemoryFile {
                        name: "brief".to_owned(),
                        items: brief_lines,
                    },
                    MemoryFile {
                        name: "decisions".to_owned(),
                        items: memory.decisions.total,
                    },
                ]);
                format!(
                    "brief ({brief_lines} lines), decisions ({})",
                    memory.decisions.total
                )
            }
            Some("brief") => match &memory.brief {
                Some(brief) => {
                    out.brief = Some(BriefOut {
                        by: brief.by.to_string(),
                        objective: masked.clean(&brief.objective, LINE_CHARS),
                        constraints: brief
                            .constraints
                            .iter()
                            .take(CONSTRAINTS)
                            .map(|line| masked.clean(line, LINE_CHARS))
                            .collect(),
                        at: brief.at.0,
                    });
                    format!("the brief by {}", brief.by)
                }
                None => "no brief yet".to_owned(),
            },
            Some(_) => {
                let decisions = fit(
                    memory
                        .decisions
                        .rows
                        .iter()
                        .map(|decision| DecisionOut {
                            id: decision.id.clone(),
                            by: decision.by.to_string(),
                            line: masked.clean(&decision.line, LINE_CHARS),
                            at: decision.at.0,
                        })
                        .collect(),
                    64,
                );
                let page = Paged::of(skip, decisions.len(), memory.decisions.total);
                let summary = format!(
                    "{} decisions{}",
                    memory.decisions.total,
                    page.note(decisions.len())
                );
                out.decisions = Some(decisions);
                out.page = Some(page);
                summary
            }
        };
        out.redacted = masked.redacted;
        ToolOutcome::ok(facade::structured(&out), summary)
    }
}

/// The arguments of `list_ledger` and `list_learnings`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[cfg_attr(feature = "schemas", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct WalkArgs {
    /// How far back to look: 1 to 500, 50 when not given.
    #[serde(default)]
    pub limit: Option<usize>,
    #[serde(default)]
    pub cursor: Option<String>,
}

/// The walk of `limit`, and where the page starts, or the refusal of a bad one.
fn walk(tool: &str, args: &WalkArgs) -> Result<(usize, usize), ToolOutcome> {
    let walk = args.limit.unwrap_or(WALK_DEFAULT);
    if !(1..=WALK_MAX).contains(&walk) {
        return Err(ToolOutcome::error(format!(
            "invalid arguments for {tool}: limit is 1 to {WALK_MAX}, not {walk}"
        )));
    }
    Ok((walk, start(args.cursor.as_deref())?))
}

const WALK_INPUT: &str = r#"{"type":"object","properties":{"limit":{"type":"integer"},"cursor":{"type":"string"}},"additionalProperties":false}"#;

pub(crate) static LIST_LEDGER: ToolDefinition = ToolDefinition {
    name: "list_ledger",
    title: "List the ledger (legacy)",
    description: "The board's recent changes, newest first: each changed order as it stands now. limit: how many changes back (1-500, default 50).",
    input_schema: WALK_INPUT,
    output_schema: Some(TASKS_OUTPUT),
    annotations: Annotations::READ_ONLY,
};

/// `list_ledger`.
#[derive(Debug)]
pub struct ListLedger;

impl Tool for ListLedger {
    fn definition(&self) -> &'static ToolDefinition {
        &LIST_LEDGER
    }

    fn call(&self, args: &Map<String, Value>, cx: &mut CallContext<'_>) -> ToolOutcome {
        let (args, now, channel) = match facade::start::<WalkArgs>(LIST_LEDGER.name, args, cx) {
            Ok(started) => started,
            Err(refusal) => return refusal,
        };
        let (back, skip) = match walk(LIST_LEDGER.name, &args) {
            Ok(walked) => walked,
            Err(refusal) => return refusal,
        };
        match channel.board_changes(back, page_at(skip), now) {
            Ok(page) => tasks_answer(&page.rows, skip, page.total, "changes"),
            Err(err) => facade::failed(&err),
        }
    }
}

/// One verdict as `list_learnings` shows it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "schemas", derive(schemars::JsonSchema))]
pub struct LearningOut {
    pub id: String,
    pub title: String,
    /// The original's name of the order's state.
    pub state: String,
    /// `accept` or `changes`; none for an order accepted without review.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub verdict: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub by: Option<String>,
    /// The reviewer's notes.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub notes: Option<String>,
    /// The submission's note.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub summary: Option<String>,
    /// Milliseconds since the Unix epoch (a `Timestamp`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub at: Option<u64>,
}

/// What `list_learnings` answers.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "schemas", derive(schemars::JsonSchema))]
pub struct LearningsOut {
    pub learnings: Vec<LearningOut>,
    #[serde(flatten)]
    pub page: Paged,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub redacted: bool,
}

pub(crate) static LIST_LEARNINGS: ToolDefinition = ToolDefinition {
    name: "list_learnings",
    title: "List learnings (legacy)",
    description: "Review verdicts with the reviewer's notes and the submission's note, newest first. limit: how many orders back (1-500, default 50).",
    input_schema: WALK_INPUT,
    output_schema: Some(
        r#"{"type":"object","properties":{"learnings":{"type":"array"},"total":{"type":"integer"},"truncated":{"type":"boolean"},"next":{"type":"string"},"redacted":{"type":"boolean"}},"required":["learnings","total"],"additionalProperties":false}"#,
    ),
    annotations: Annotations::READ_ONLY,
};

/// `list_learnings`.
#[derive(Debug)]
pub struct ListLearnings;

impl Tool for ListLearnings {
    fn definition(&self) -> &'static ToolDefinition {
        &LIST_LEARNINGS
    }

    fn call(&self, args: &Map<String, Value>, cx: &mut CallContext<'_>) -> ToolOutcome {
        let (args, now, channel) = match facade::start::<WalkArgs>(LIST_LEARNINGS.name, args, cx) {
            Ok(started) => started,
            Err(refusal) => return refusal,
        };
        let (back, skip) = match walk(LIST_LEARNINGS.name, &args) {
            Ok(walked) => walked,
            Err(refusal) => return refusal,
        };
        let page = match channel.verdicts(back, page_at(skip), now) {
            Ok(page) => page,
            Err(err) => return facade::failed(&err),
        };
        let mut masked = Masked::default();
        let learnings = fit(
            page.rows
                .iter()
                .map(|row| LearningOut {
                    id: row.row.id.clone(),
                    title: masked.clean(&row.row.title, TITLE_CHARS),
                    state: legacy_state(row.row.state).to_owned(),
                    verdict: row.verdict.map(|verdict| {
                        serde_json::to_value(verdict)
                            .ok()
                            .and_then(|value| value.as_str().map(str::to_owned))
                            .unwrap_or_default()
                    }),
                    by: row.by.as_ref().map(ToString::to_string),
                    notes: row
                        .notes
                        .as_deref()
                        .map(|text| masked.clean(text, LINE_CHARS)),
                    summary: row
                        .summary
                        .as_deref()
                        .map(|text| masked.clean(text, LINE_CHARS)),
                    at: row.at.map(|at| at.0),
                })
                .collect(),
            64,
        );
        let paged = Paged::of(skip, learnings.len(), page.total);
        let summary = format!("{} verdicts{}", page.total, paged.note(learnings.len()));
        let out = LearningsOut {
            learnings,
            page: paged,
            redacted: masked.redacted,
        };
        ToolOutcome::ok(facade::structured(&out), summary)
    }
}

/// One agent's acceptance.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "schemas", derive(schemars::JsonSchema))]
pub struct EngineOut {
    pub agent: String,
    pub submitted: usize,
    pub accepted: usize,
    /// `(accepted + 1) / (submitted + 2)`, rounded to two places.
    pub confidence: f64,
}

/// What `list_engines` answers.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "schemas", derive(schemars::JsonSchema))]
pub struct EnginesOut {
    pub engines: Vec<EngineOut>,
    #[serde(flatten)]
    pub page: Paged,
}

pub(crate) static LIST_ENGINES: ToolDefinition = ToolDefinition {
    name: "list_engines",
    title: "List engines (legacy)",
    description: "Acceptance per agent (this channel's engines): orders submitted, accepted, and confidence (accepted+1)/(submitted+2).",
    input_schema: r#"{"type":"object","properties":{"cursor":{"type":"string"}},"additionalProperties":false}"#,
    output_schema: Some(
        r#"{"type":"object","properties":{"engines":{"type":"array"},"total":{"type":"integer"},"truncated":{"type":"boolean"},"next":{"type":"string"}},"required":["engines","total"],"additionalProperties":false}"#,
    ),
    annotations: Annotations::READ_ONLY,
};

/// `list_engines`.
#[derive(Debug)]
pub struct ListEngines;

impl Tool for ListEngines {
    fn definition(&self) -> &'static ToolDefinition {
        &LIST_ENGINES
    }

    fn call(&self, args: &Map<String, Value>, cx: &mut CallContext<'_>) -> ToolOutcome {
        let (args, now, channel) = match facade::start::<CursorArgs>(LIST_ENGINES.name, args, cx) {
            Ok(started) => started,
            Err(refusal) => return refusal,
        };
        let skip = match start(args.cursor.as_deref()) {
            Ok(skip) => skip,
            Err(refusal) => return refusal,
        };
        let page = match channel.acceptance(page_at(skip), now) {
            Ok(page) => page,
            Err(err) => return facade::failed(&err),
        };
        let engines = fit(
            page.rows
                .iter()
                .map(|row| EngineOut {
                    agent: row.agent.to_string(),
                    submitted: row.submitted,
                    accepted: row.accepted,
                    confidence: (row.confidence() * 100.0).round() / 100.0,
                })
                .collect(),
            64,
        );
        let paged = Paged::of(skip, engines.len(), page.total);
        let summary = format!(
            "{} agents submitted{}",
            page.total,
            paged.note(engines.len())
        );
        let out = EnginesOut {
            engines,
            page: paged,
        };
        ToolOutcome::ok(facade::structured(&out), summary)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_state_has_the_original_s_name_where_one_exists_and_every_name_filters() {
        for state in [
            OrderState::Open,
            OrderState::Offered,
            OrderState::Claimed,
            OrderState::InProgress,
            OrderState::Submitted,
            OrderState::ChangesRequested,
            OrderState::Accepted,
            OrderState::Cancelled,
        ] {
            let name = legacy_state(state);
            match task_filter(name) {
                Some(TaskFilter::In(states)) => assert!(states.contains(&state), "{name}"),
                other => panic!("{name} filters {other:?}"),
            }
        }
        assert_eq!(legacy_state(OrderState::Submitted), "awaiting_review");
        for name in STATE_NAMES.split(", ") {
            assert!(task_filter(name).is_some(), "{name}");
        }
        assert!(task_filter("nonsense").is_none());
    }

    #[test]
    fn a_page_says_it_is_truncated_and_where_the_next_one_starts() {
        let page = Paged::of(20, 20, 45);
        assert!(page.truncated);
        assert_eq!(page.next.as_deref(), Some(Cursor(40).encode().as_str()));
        assert!(!Paged::of(40, 5, 45).truncated);
    }
}

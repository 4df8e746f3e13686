//! The `admin` group (opt-in, `--tools admin`; T2 of `docs/mcp-budgets.md`: nothing of it is in the default
//! list): `ferry_get`, which reads a `ferry://` link for clients that do not read resources
//! themselves, `ferry_search`, which pages through order titles, decisions and messages that
//! hold a phrase, and `ferry_status`, the project as `ferry channel status` shows it.
//!
//! Neither changes anything, and neither reaches a key: `ferry_status` says who is seated at
//! which level and what is wrong with the channel, never what keys this machine holds.

use ferry_mcp_core::channel::fold::levels::Operation;
use ferry_mcp_core::channel::ops::search::{self, SearchRequest};
use ferry_mcp_core::guard;
use ferry_mcp_core::shape::{ResourceUri, ToolOutcome};
use ferry_mcp_core::tool::{
    Annotations, CallContext, ReadContext, ResourceError, Tool, ToolDefinition,
};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::facade;

/// The most characters of a body or of the problems `ferry_get` and `ferry_status` answer
/// with (T4: 4,000 characters a response).
pub const MAX_TEXT: usize = 3_000;

/// The most agents and problems `ferry_status` lists (T4: 20 items).
pub const MAX_ITEMS: usize = 20;

/// The arguments of `ferry_get`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[cfg_attr(feature = "schemas", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct GetArgs {
    /// A `ferry://<project>/<kind>/<id>` link from another answer.
    pub uri: String,
}

/// What `ferry_get` answers.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "schemas", derive(schemars::JsonSchema))]
pub struct GetOut {
    pub uri: String,
    pub mime_type: String,
    /// The body, at most 3,000 characters, secrets masked.
    pub text: String,
    /// Whether the body was longer than what `text` holds.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub truncated: bool,
}

pub(crate) static GET: ToolDefinition = ToolDefinition {
    name: "ferry_get",
    title: "Get a link",
    description: "Read a ferry:// link from another answer (an order's or a message's whole text), for clients that do not read resources.",
    input_schema: r#"{"type":"object","properties":{"uri":{"type":"string"}},"required":["uri"],"additionalProperties":false}"#,
    output_schema: Some(
        r#"{"type":"object","properties":{"uri":{"type":"string"},"mime_type":{"type":"string"},"text":{"type":"string"},"truncated":{"type":"boolean"}},"required":["uri","mime_type","text"],"additionalProperties":false}"#,
    ),
    annotations: Annotations::READ_ONLY,
};

/// `ferry_get`.
#[derive(Debug)]
pub struct FerryGet;

/// The first `max` characters of `text`, and whether that is all of it.
fn capped(text: &str, max: usize) -> (String, bool) {
    match text.char_indices().nth(max) {
        Some((at, _)) => (text[..at].to_owned(), true),
        None => (text.to_owned(), false),
    }
}

impl Tool for FerryGet {
    fn definition(&self) -> &'static ToolDefinition {
        &GET
    }

    fn call(&self, args: &Map<String, Value>, cx: &mut CallContext<'_>) -> ToolOutcome {
        let args = match facade::parse::<GetArgs>(GET.name, args) {
            Ok(args) => args,
            Err(refusal) => return refusal,
        };
        let uri = match ResourceUri::parse(&args.uri) {
            Ok(uri) => uri,
            Err(err) => return ToolOutcome::error(format!("invalid: {err}")),
        };
        if uri.project() != cx.project {
            return ToolOutcome::error(format!(
                "not_found: {} names project {}, not this server's {}",
                args.uri,
                uri.project(),
                cx.project
            ));
        }
        // Only the kinds this crate's groups serve: a downstream kind is read by resources/read.
        let Some(kind) = crate::CORE
            .resources
            .iter()
            .find(|kind| kind.template().kind == uri.kind())
        else {
            return ToolOutcome::error(format!(
                "not_found: no resource kind {:?} (links name order or msg)",
                uri.kind()
            ));
        };
        // The same refusal as every other tool (unseated, locked), not a resource error.
        let now = cx.now;
        match facade::channel(cx) {
            Ok(channel) => {
                if let Err(err) = channel.authorize(Operation::Read, now) {
                    return facade::failed(&err);
                }
            }
            Err(refusal) => return refusal,
        }
        let mut read = ReadContext {
            now: cx.now,
            project: cx.project,
            channel: &mut *cx.channel,
        };
        match kind.read(&uri, &mut read) {
            Ok(body) => {
                // Resources mask secrets already; masked again in case a kind does not.
                let masked = guard::redact(&body.text);
                let (text, truncated) = capped(&masked.text, MAX_TEXT);
                let summary = format!(
                    "{}: {} characters{}",
                    args.uri,
                    masked.text.chars().count(),
                    if truncated {
                        ", the first 3,000 shown"
                    } else {
                        ""
                    }
                );
                let out = GetOut {
                    uri: args.uri,
                    mime_type: body.mime_type.to_owned(),
                    text,
                    truncated,
                };
                ToolOutcome::ok(facade::structured(&out), summary)
            }
            Err(ResourceError::NotFound) => {
                ToolOutcome::error(format!("not_found: nothing at {}", args.uri))
            }
            Err(ResourceError::Unreadable(why)) => ToolOutcome::error(format!("unreadable: {why}")),
        }
    }
}

/// The arguments of `ferry_search`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[cfg_attr(feature = "schemas", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct SearchArgs {
    /// 2 to 200 characters, matched without regard to case.
    pub query: String,
    /// The `next` of the previous page.
    #[serde(default)]
    pub cursor: Option<String>,
}

/// One hit of `ferry_search`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "schemas", derive(schemars::JsonSchema))]
pub struct SearchHit {
    /// `order`, `decision` or `msg`.
    pub kind: String,
    pub id: String,
    pub line: String,
}

/// What `ferry_search` answers.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "schemas", derive(schemars::JsonSchema))]
pub struct SearchOut {
    pub hits: Vec<SearchHit>,
    pub total: usize,
    /// Whether hits were left out of this page (`next` then goes on).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub truncated: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub next: Option<String>,
}

pub(crate) static SEARCH: ToolDefinition = ToolDefinition {
    name: "ferry_search",
    title: "Search",
    description: "Find order titles, decisions and messages to you that hold a phrase, newest first, 20 a page; pass next back as cursor.",
    input_schema: r#"{"type":"object","properties":{"query":{"type":"string"},"cursor":{"type":"string"}},"required":["query"],"additionalProperties":false}"#,
    output_schema: Some(
        r#"{"type":"object","properties":{"hits":{"type":"array"},"total":{"type":"integer"},"truncated":{"type":"boolean"},"next":{"type":"string"}},"required":["hits","total"],"additionalProperties":false}"#,
    ),
    annotations: Annotations::READ_ONLY,
};

/// `ferry_search`.
#[derive(Debug)]
pub struct FerrySearch;

impl Tool for FerrySearch {
    fn definition(&self) -> &'static ToolDefinition {
        &SEARCH
    }

    fn call(&self, args: &Map<String, Value>, cx: &mut CallContext<'_>) -> ToolOutcome {
        let (args, now, channel) = match facade::start::<SearchArgs>(SEARCH.name, args, cx) {
            Ok(started) => started,
            Err(refusal) => return refusal,
        };
        let request = SearchRequest {
            query: args.query,
            cursor: args.cursor,
            limit: search::MAX_PAGE,
        };
        match channel.search(&request, now) {
            Ok(page) => {
                let summary = format!(
                    "{} hit{} for {:?}{}",
                    page.total,
                    if page.total == 1 { "" } else { "s" },
                    request.query,
                    if page.next.is_some() {
                        "; more with next"
                    } else {
                        ""
                    }
                );
                let out = SearchOut {
                    hits: page
                        .hits
                        .into_iter()
                        .map(|hit| SearchHit {
                            kind: hit.kind.to_owned(),
                            id: hit.id,
                            line: hit.line,
                        })
                        .collect(),
                    total: page.total,
                    truncated: page.next.is_some(),
                    next: page.next,
                };
                ToolOutcome::ok(facade::structured(&out), summary)
            }
            Err(err) => facade::failed(&err),
        }
    }
}

/// The arguments of `ferry_status`: none.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[cfg_attr(feature = "schemas", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct StatusArgs {}

/// One seated (or contested) name.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "schemas", derive(schemars::JsonSchema))]
pub struct StatusAgent {
    pub name: String,
    pub level: String,
    /// `seated` or `contested`.
    pub seat: String,
}

/// What `ferry_status` answers.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "schemas", derive(schemars::JsonSchema))]
pub struct StatusOut {
    pub project: String,
    /// The master key's first 16 hex characters.
    pub master: String,
    /// Why this machine is paused, when it is.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub paused: Option<String>,
    /// At most 20, by name.
    pub agents: Vec<StatusAgent>,
    pub agents_total: usize,
    /// What is wrong with the channel or this machine's state of it, one line each; at most 20.
    pub problems: Vec<String>,
    pub problems_total: usize,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub truncated: bool,
}

pub(crate) static STATUS: ToolDefinition = ToolDefinition {
    name: "ferry_status",
    title: "Channel status",
    description: "The project as ferry channel status shows it: who is seated at which level, whether this machine is paused, and every integrity problem found.",
    input_schema: r#"{"type":"object","additionalProperties":false}"#,
    output_schema: Some(
        r#"{"type":"object","properties":{"project":{"type":"string"},"master":{"type":"string"},"paused":{"type":"string"},"agents":{"type":"array"},"agents_total":{"type":"integer"},"problems":{"type":"array"},"problems_total":{"type":"integer"},"truncated":{"type":"boolean"}},"required":["project","master","agents","agents_total","problems","problems_total"],"additionalProperties":false}"#,
    ),
    annotations: Annotations::READ_ONLY,
};

/// `ferry_status`.
#[derive(Debug)]
pub struct FerryStatus;

impl Tool for FerryStatus {
    fn definition(&self) -> &'static ToolDefinition {
        &STATUS
    }

    fn call(&self, args: &Map<String, Value>, cx: &mut CallContext<'_>) -> ToolOutcome {
        let (StatusArgs {}, now, channel) = match facade::start(STATUS.name, args, cx) {
            Ok(started) => started,
            Err(refusal) => return refusal,
        };
        if let Err(err) =
            channel.authorize(ferry_mcp_core::channel::fold::levels::Operation::Read, now)
        {
            return facade::failed(&err);
        }
        channel.refresh(now);
        let status = match channel.status(now) {
            Ok(status) => status,
            Err(err) => return facade::failed(&err),
        };
        let agents_total = status.agents.len();
        let agents = status
            .agents
            .iter()
            .take(MAX_ITEMS)
            .map(|row| StatusAgent {
                name: row.name.to_string(),
                level: row.level.to_string(),
                seat: row.seat.as_str().to_owned(),
            })
            .collect();
        // Problems name files and lines of the channel, which anyone may have written: masked,
        // and held to the response's size.
        let problems_total = status.problems.len();
        let mut problems = Vec::new();
        let mut room = MAX_TEXT;
        for problem in status.problems.iter().take(MAX_ITEMS) {
            let masked = guard::redact(problem).text.into_owned();
            let (line, _) = capped(&masked, 300);
            if line.len() > room {
                break;
            }
            room -= line.len();
            problems.push(line);
        }
        let truncated = agents_total > MAX_ITEMS || problems.len() < problems_total;
        let out = StatusOut {
            project: status.project.to_string(),
            master: status.master.chars().take(16).collect(),
            paused: status
                .paused
                .map(|pause| guard::redact(&pause.reason.0).text.into_owned()),
            agents,
            agents_total,
            problems,
            problems_total,
            truncated,
        };
        let summary = format!(
            "{}: {} agent{}, {} problem{}{}",
            out.project,
            agents_total,
            if agents_total == 1 { "" } else { "s" },
            problems_total,
            if problems_total == 1 { "" } else { "s" },
            if out.paused.is_some() {
                "; this machine is paused"
            } else {
                ""
            }
        );
        ToolOutcome::ok(facade::structured(&out), summary)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_capped_text_keeps_whole_characters_and_says_when_it_cut() {
        assert_eq!(capped("héllo", 2), ("hé".to_owned(), true));
        assert_eq!(capped("héllo", 5), ("héllo".to_owned(), false));
    }
}

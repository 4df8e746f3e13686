//! `ferry_talk`: read what is new (only that), post to an agent, to the human or to all, over
//! `ferry_mcp_core::channel::ops::talk`; and `ferry://<project>/msg/<id>`, a message's whole
//! text.

use ferry_mcp_core::channel::ops::OpsError;
use ferry_mcp_core::channel::ops::talk::{MessageView, PostRequest, ReadRequest, TalkError};
use ferry_mcp_core::guard;
use ferry_mcp_core::port::Channel;
use ferry_mcp_core::shape::{ResourceLink, ResourceUri, ToolOutcome};
use ferry_mcp_core::tool::{
    Annotations, CallContext, ReadContext, ResourceError, ResourceKind, ResourceTemplate,
    ResourceText, Tool, ToolDefinition,
};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::facade;

/// The arguments of `ferry_talk`, one variant per action.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[cfg_attr(feature = "schemas", derive(schemars::JsonSchema))]
#[serde(tag = "action", rename_all = "lowercase", deny_unknown_fields)]
pub enum TalkArgs {
    Read {
        #[serde(default)]
        since: Option<String>,
        #[serde(default)]
        peek: bool,
    },
    Post {
        to: String,
        text: String,
        #[serde(default)]
        reply_to: Option<String>,
    },
}

/// One message as the model reads it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "schemas", derive(schemars::JsonSchema))]
pub struct Msg {
    pub id: String,
    pub from: String,
    pub to: String,
    pub text: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reply_to: Option<String>,
    /// The whole text, when `text` is only its start.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub link: Option<String>,
    /// Set on a takeover's announcement whose takeover does not count, and why.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub void: Option<String>,
}

/// Who has read one of the caller's messages.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "schemas", derive(schemars::JsonSchema))]
pub struct Seen {
    pub id: String,
    pub read: Vec<String>,
    /// Of a broadcast, the first names that have not read it.
    pub unread: Vec<String>,
    /// More have not read it than `unread` names.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub more_unread: bool,
}

/// What `ferry_talk` answers.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "schemas", derive(schemars::JsonSchema))]
pub struct TalkOut {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub messages: Option<Vec<Msg>>,
    /// The id of the message posted.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    /// More messages wait: read again.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub truncated: bool,
    /// Pass as `since` to read again from here, read or not.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub next: Option<String>,
    /// The caller's latest messages and who has read them.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sent: Option<Vec<Seen>>,
    /// Something shaped like a secret was masked in what was read back.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub redacted: bool,
}

pub(crate) static DEFINITION: ToolDefinition = ToolDefinition {
    name: "ferry_talk",
    title: "Talk",
    description: "Messages. read: only what is new for you, oldest first (peek keeps it unread; since: a cursor); shows who read yours. post to (agent, master or all) text [reply_to]. No secrets, no code.",
    input_schema: r#"{"type":"object","properties":{"action":{"enum":["read","post"]},"since":{"type":"string"},"peek":{"type":"boolean"},"to":{"type":"string"},"text":{"type":"string"},"reply_to":{"type":"string"}},"required":["action"],"additionalProperties":false}"#,
    output_schema: Some(
        r#"{"type":"object","properties":{"messages":{"type":"array"},"id":{"type":"string"},"truncated":{"type":"boolean"},"next":{"type":"string"},"sent":{"type":"array"},"redacted":{"type":"boolean"}},"additionalProperties":false}"#,
    ),
    annotations: Annotations::APPEND,
};

/// `ferry_talk`.
#[derive(Debug)]
pub struct FerryTalk;

/// Characters of messages one read answers at most, so a typical read stays within the
/// ADR's 600-token cap whatever the texts.
const READ_BUDGET_CHARS: usize = 2_200;
/// Sent messages whose receipts a read shows.
const RECEIPTS: usize = 3;

impl Tool for FerryTalk {
    fn definition(&self) -> &'static ToolDefinition {
        &DEFINITION
    }

    fn call(&self, args: &Map<String, Value>, cx: &mut CallContext<'_>) -> ToolOutcome {
        let args = match facade::parse::<TalkArgs>(DEFINITION.name, args) {
            Ok(args) => args,
            Err(refusal) => return refusal,
        };
        let now = cx.now;
        let project = cx.project.to_owned();
        let channel = match facade::channel(cx) {
            Ok(channel) => channel,
            Err(refusal) => return refusal,
        };
        let result = match args {
            TalkArgs::Post { to, text, reply_to } => {
                let request = PostRequest { to, text, reply_to };
                channel.post(&request, now).map(|id| {
                    let out = TalkOut {
                        id: Some(id.clone()),
                        ..TalkOut::default()
                    };
                    ToolOutcome::ok(facade::structured(&out), format!("posted {id}"))
                })
            }
            TalkArgs::Read { since, peek } => read(channel, since, peek, &project, now),
        };
        match result {
            // Presence only for a call that did what it asked: a refused call writes nothing.
            Ok(outcome) => {
                channel.note_alive(now);
                outcome
            }
            Err(err) => facade::failed(&err),
        }
    }
}

fn read(
    channel: &mut dyn Channel,
    since: Option<String>,
    peek: bool,
    project: &str,
    now: ferry_mcp_core::time::Timestamp,
) -> Result<ToolOutcome, TalkError> {
    let request = ReadRequest {
        peek,
        since,
        limit: ferry_mcp_core::shape::MAX_ITEMS,
        receipts: RECEIPTS,
    };
    let mut used = 0;
    let mut redacted = false;
    let mut shown = Vec::new();
    let mut fits = |message: &MessageView| {
        let cost = message.text.chars().count() + message.id.len() * 2 + 64;
        if used + cost > READ_BUDGET_CHARS {
            return false;
        }
        used += cost;
        true
    };
    let result = channel.read(&request, &mut fits, now)?;
    // A long message's whole text is a `resource_link` content item (as an order's body is)
    // and, for clients that hand the model only structuredContent, its `link`.
    let mut links = Vec::new();
    for message in &result.messages {
        let clean = guard::redact(&message.text);
        redacted |= clean.redacted;
        let uri = message
            .long
            .then(|| ResourceUri::new(project, MSG_KIND, &message.id).ok())
            .flatten();
        if let Some(uri) = &uri {
            links.push(
                ResourceLink::new(uri.clone(), format!("message {}", message.id))
                    .mime_type(MSG_TEMPLATE.mime_type)
                    .description("the message's whole text"),
            );
        }
        shown.push(Msg {
            id: message.id.clone(),
            from: message.from.to_string(),
            to: message.to.clone(),
            text: clean.text.into_owned(),
            reply_to: message.reply_to.clone(),
            link: uri.map(|uri| uri.to_string()),
            void: message.void.clone(),
        });
    }
    let sent: Vec<Seen> = result
        .sent
        .iter()
        .filter(|receipt| !receipt.read.is_empty() || !receipt.unread.is_empty())
        .map(|receipt| Seen {
            id: receipt.id.clone(),
            read: receipt.read.iter().map(ToString::to_string).collect(),
            unread: receipt.unread.iter().map(ToString::to_string).collect(),
            more_unread: receipt.more_unread,
        })
        .collect();
    let summary = match (shown.len(), result.more, result.unmarked) {
        (0, _, _) => "no new messages".to_owned(),
        (n, more, unmarked) => {
            let mut text = format!("{n} new message{}", if n == 1 { "" } else { "s" });
            if more {
                text.push_str("; more wait: read again");
            }
            match unmarked {
                Some("peek") => text.push_str(" (peek: still unread)"),
                Some("paused") => text.push_str(" (the machine is paused: still unread)"),
                _ => {}
            }
            text
        }
    };
    let out = TalkOut {
        messages: Some(shown),
        truncated: result.more,
        next: Some(result.next.to_string()),
        sent: (!sent.is_empty()).then_some(sent),
        redacted,
        ..TalkOut::default()
    };
    let mut outcome = ToolOutcome::ok(facade::structured(&out), summary);
    for link in links {
        outcome = outcome.with_link(link);
    }
    Ok(outcome)
}

/// The `msg` resource kind: `ferry://<project>/msg/<id>` is a message's whole text.
pub(crate) const MSG_KIND: &str = "msg";

static MSG_TEMPLATE: ResourceTemplate = ResourceTemplate {
    kind: MSG_KIND,
    name: "msg",
    title: "Message",
    description: "A message's whole text.",
    mime_type: "text/plain",
};

/// Serves `ferry://<project>/msg/<id>`.
#[derive(Debug)]
pub struct MessageBodies;

impl ResourceKind for MessageBodies {
    fn template(&self) -> &'static ResourceTemplate {
        &MSG_TEMPLATE
    }

    fn read(
        &self,
        uri: &ResourceUri,
        cx: &mut ReadContext<'_>,
    ) -> Result<ResourceText, ResourceError> {
        facade::read_resource(
            uri,
            cx,
            MSG_TEMPLATE.mime_type,
            |channel, id, now| channel.message_text(id, now),
            |err| {
                matches!(
                    err,
                    TalkError::UnknownMessage(_) | TalkError::Ops(OpsError::BadId(_))
                )
            },
        )
    }
}

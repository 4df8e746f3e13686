//! `ferry_orders`: the board, and an agent's part in an order (claim, progress, hand in,
//! submit, review), over `ferry_mcp_core::channel::ops::orders`; and the
//! `ferry://<project>/order/<id>` resource that serves an order's body.

use ferry_mcp_core::channel::fold::state::orders::{OrderState, Verdict};
use ferry_mcp_core::channel::ops::OpsError;
use ferry_mcp_core::channel::ops::orders::{
    ClaimOutcome, ClaimResult, ListRequest, OrderDetail, OrdersError, RunVia, SubmitRequest,
};
use ferry_mcp_core::guard;
use ferry_mcp_core::port::{Channel, HeavyQueue};
use ferry_mcp_core::shape::{MAX_ITEMS, ResourceLink, ResourceUri, ToolOutcome};
use ferry_mcp_core::tool::{
    Annotations, CallContext, ReadContext, ResourceError, ResourceKind, ResourceTemplate,
    ResourceText, Tool, ToolDefinition,
};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::facade;

/// The arguments of `ferry_orders`, one variant per action.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[cfg_attr(feature = "schemas", derive(schemars::JsonSchema))]
#[serde(tag = "action", rename_all = "lowercase", deny_unknown_fields)]
pub enum OrdersArgs {
    List {
        #[serde(default)]
        since: Option<String>,
    },
    Show {
        id: String,
    },
    Claim {
        id: String,
    },
    Release {
        id: String,
        #[serde(default)]
        note: Option<String>,
    },
    Progress {
        id: String,
        note: String,
    },
    Handin {
        id: String,
        #[serde(rename = "ref")]
        git_ref: String,
        note: String,
    },
    Submit {
        id: String,
        /// A git ref or sha, or the id of a hand-in of this order.
        #[serde(rename = "ref")]
        git_ref: String,
        note: String,
    },
    Review {
        id: String,
        verdict: VerdictArg,
        #[serde(default)]
        notes: Option<String>,
    },
}

/// `accept` or `changes`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[cfg_attr(feature = "schemas", derive(schemars::JsonSchema))]
#[serde(rename_all = "lowercase")]
pub enum VerdictArg {
    Accept,
    Changes,
}

/// One row of the board.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "schemas", derive(schemars::JsonSchema))]
pub struct Row {
    pub id: String,
    pub title: String,
    #[cfg_attr(feature = "schemas", schemars(with = "String"))]
    pub state: OrderState,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub holder: Option<String>,
    /// The holder has gone silent past the quiet period: an Orchestrator may hand it back.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub silent: bool,
}

/// One order in full (`show`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "schemas", derive(schemars::JsonSchema))]
pub struct Detail {
    pub id: String,
    pub title: String,
    #[cfg_attr(feature = "schemas", schemars(with = "String"))]
    pub state: OrderState,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub holder: Option<String>,
    pub by: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub to: Option<String>,
    pub review: bool,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub heavy: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub hints: Option<Value>,
    pub run_via: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub run: Option<String>,
    pub revision: u32,
    /// The order's full text, a `ferry://` resource (`resources/read`): clients that hand the
    /// model only structuredContent drop the `resource_link` item, so the link is here too.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub link: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub submitted: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub verdict: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub progress: Option<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub handins: Vec<String>,
    /// Events that do not count (lost races, refusals), latest last.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub void: Vec<String>,
}

/// What `ferry_orders` answers (the fields of the action that ran).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "schemas", derive(schemars::JsonSchema))]
pub struct OrdersOut {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub orders: Option<Vec<Row>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub order: Option<Detail>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "schemas", schemars(with = "Option<String>"))]
    pub state: Option<OrderState>,
    #[serde(skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "schemas", schemars(with = "Option<String>"))]
    pub outcome: Option<ClaimResult>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub holder: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub handin: Option<String>,
    /// What to do next, for clients that show the model structuredContent and not the text.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub hint: Option<String>,
    /// More orders than this answer holds: pass `next` as `since` for the rest.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub truncated: bool,
    /// How many orders the board holds, when a list without `since` shows fewer.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub total: Option<usize>,
    /// Pass as `since` to get only what changed after this answer.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub next: Option<String>,
    /// The `since` given was from another machine or an older state: this is the whole board.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub reset: bool,
    /// Something shaped like a secret was masked in what was read back.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub redacted: bool,
}

pub(crate) static DEFINITION: ToolDefinition = ToolDefinition {
    name: "ferry_orders",
    title: "Orders",
    description: "The order board. list (since: cursor for changes only) | show id | claim id | release id | progress id note | handin id ref note | submit id ref note | review id verdict notes. ref: a git ref or hand-in id, never code.",
    input_schema: r#"{"type":"object","properties":{"action":{"enum":["list","show","claim","release","progress","handin","submit","review"]},"id":{"type":"string"},"since":{"type":"string"},"note":{"type":"string"},"ref":{"type":"string"},"verdict":{"enum":["accept","changes"]},"notes":{"type":"string"}},"required":["action"],"additionalProperties":false}"#,
    output_schema: Some(
        r#"{"type":"object","properties":{"orders":{"type":"array"},"order":{"type":"object"},"id":{"type":"string"},"state":{"type":"string"},"outcome":{"type":"string"},"holder":{"type":"string"},"handin":{"type":"string"},"hint":{"type":"string"},"truncated":{"type":"boolean"},"total":{"type":"integer"},"next":{"type":"string"},"reset":{"type":"boolean"},"redacted":{"type":"boolean"}},"additionalProperties":false}"#,
    ),
    annotations: Annotations::APPEND,
};

/// `ferry_orders`.
#[derive(Debug)]
pub struct FerryOrders;

impl Tool for FerryOrders {
    fn definition(&self) -> &'static ToolDefinition {
        &DEFINITION
    }

    fn call(&self, args: &Map<String, Value>, cx: &mut CallContext<'_>) -> ToolOutcome {
        let args = match facade::parse::<OrdersArgs>(DEFINITION.name, args) {
            Ok(args) => args,
            Err(refusal) => return refusal,
        };
        let now = cx.now;
        let project = cx.project.to_owned();
        let (channel, queue) = match cx.channel.channel_and_queue(now) {
            Ok(reached) => reached,
            Err(err) => return facade::unavailable(&err),
        };
        match run(channel, queue, args, &project, now) {
            // Presence only for a call that did what it asked: a refused call writes nothing.
            Ok(outcome) => {
                channel.note_alive(now);
                outcome
            }
            Err(err) => facade::failed(&err),
        }
    }
}

fn run(
    channel: &mut dyn Channel,
    queue: Option<&dyn HeavyQueue>,
    args: OrdersArgs,
    project: &str,
    now: ferry_mcp_core::time::Timestamp,
) -> Result<ToolOutcome, OrdersError> {
    Ok(match args {
        OrdersArgs::List { since } => list(channel, since, now)?,
        OrdersArgs::Show { id } => show(channel, queue, &id, project, now)?,
        OrdersArgs::Claim { id } => match channel.claim(&id, now)? {
            ClaimOutcome::Claimed { id, state } => hinted(
                OrdersOut {
                    id: Some(id.clone()),
                    outcome: Some(ClaimResult::Claimed),
                    state: Some(state),
                    ..OrdersOut::default()
                },
                format!("claimed {id}: {CLAIMED_HINT}"),
                CLAIMED_HINT,
            ),
            ClaimOutcome::LostRace { id, holder } => hinted(
                OrdersOut {
                    id: Some(id.clone()),
                    outcome: Some(ClaimResult::LostRace),
                    holder: Some(holder.to_string()),
                    ..OrdersOut::default()
                },
                format!("{id} went to {holder}, whose claim won the race; {LOST_RACE_HINT}"),
                LOST_RACE_HINT,
            ),
        },
        OrdersArgs::Release { id, note } => {
            let state = channel.release_order(&id, note.as_deref(), now)?;
            state_answer(
                &id,
                state,
                format!("released {id}: it is back on the board"),
            )
        }
        OrdersArgs::Progress { id, note } => {
            let state = channel.progress(&id, &note, now)?;
            state_answer(&id, state, format!("progress on {id} recorded"))
        }
        OrdersArgs::Handin { id, git_ref, note } => {
            let handin = channel.hand_in(&id, &git_ref, &note, now)?;
            let hint = format!("submit with ref {handin} when the order is done");
            hinted(
                OrdersOut {
                    id: Some(id.clone()),
                    handin: Some(handin.clone()),
                    ..OrdersOut::default()
                },
                format!("hand-in {handin} for {id} recorded"),
                &hint,
            )
        }
        OrdersArgs::Submit { id, git_ref, note } => {
            // Whether `ref` is a hand-in's id is looked up in what is folded: fold what is new.
            channel.refresh(now);
            let request = submit_request(channel, &id, git_ref, note);
            let state = channel.submit(&id, &request, now)?;
            state_answer(&id, state, format!("submitted {id}: it is {state}"))
        }
        OrdersArgs::Review { id, verdict, notes } => {
            let verdict = match verdict {
                VerdictArg::Accept => Verdict::Accept,
                VerdictArg::Changes => Verdict::Changes,
            };
            let state = channel.review(&id, verdict, notes.as_deref(), now)?;
            state_answer(&id, state, format!("reviewed {id}: it is {state}"))
        }
    })
}

/// `ref` names a hand-in of this order when it is one's id, else a git ref.
fn submit_request(
    channel: &mut dyn Channel,
    order: &str,
    git_ref: String,
    summary: String,
) -> SubmitRequest {
    if channel.names_handin(order, &git_ref) {
        SubmitRequest {
            handin: Some(git_ref),
            git_ref: None,
            summary,
        }
    } else {
        SubmitRequest {
            handin: None,
            git_ref: Some(git_ref),
            summary,
        }
    }
}

fn answer(out: OrdersOut, summary: String) -> ToolOutcome {
    ToolOutcome::ok(facade::structured(&out), summary)
}

/// What a claim's answer tells the agent to do next.
pub(crate) const CLAIMED_HINT: &str = "work in the repo, report with progress, then submit a ref";
/// What a lost race's answer tells the agent to do next.
const LOST_RACE_HINT: &str = "pick another order";

/// An answer with a next step: in structuredContent (the only part Claude Code and Codex show
/// the model) as well as in the one-line text (the only part a content-only client shows).
fn hinted(out: OrdersOut, text: String, hint: &str) -> ToolOutcome {
    answer(
        OrdersOut {
            hint: Some(hint.to_owned()),
            ..out
        },
        text,
    )
}

fn state_answer(id: &str, state: OrderState, summary: String) -> ToolOutcome {
    answer(
        OrdersOut {
            id: Some(id.to_owned()),
            state: Some(state),
            ..OrdersOut::default()
        },
        summary,
    )
}

/// Characters a row's title keeps in a list (the full title is in `show`).
const LIST_TITLE_CHARS: usize = 80;

fn list(
    channel: &mut dyn Channel,
    since: Option<String>,
    now: ferry_mcp_core::time::Timestamp,
) -> Result<ToolOutcome, OrdersError> {
    let whole_board = since.is_none();
    let listed = channel.list_orders(
        &ListRequest {
            all: false,
            since,
            limit: MAX_ITEMS,
        },
        now,
    )?;
    let mut redacted = false;
    let rows: Vec<Row> = listed
        .rows
        .iter()
        .map(|listed| Row {
            id: listed.row.id.clone(),
            title: clip(&clean(&listed.row.title, &mut redacted), LIST_TITLE_CHARS),
            state: listed.row.state,
            silent: listed
                .row
                .holder
                .as_ref()
                .is_some_and(|holder| channel.is_silent(holder, now)),
            holder: listed.row.holder.as_ref().map(ToString::to_string),
        })
        .collect();
    // Cut to the character cap, keeping room for the other fields.
    let given = facade::rows_that_fit(&rows, 64);
    let truncated = given < rows.len() || listed.more;
    let next = listed.next(given).to_string();
    let count = given;
    let mut rows = rows;
    rows.truncate(given);
    // A capped list of the board says how many there are (those not done, as it lists them);
    // a channel that cannot count them just does not say.
    let total = (truncated && whole_board)
        .then(|| channel.board_counts(now).ok())
        .flatten()
        .map(|counts| {
            counts
                .by_state
                .iter()
                .filter(|(state, _)| !state.is_done())
                .map(|(_, n)| n)
                .sum::<usize>()
        });
    let summary = match (count, truncated, listed.reset) {
        (0, _, _) => "no orders changed".to_owned(),
        (n, true, _) => match total {
            Some(total) => format!("{n} of {total} orders (more: pass next as since)"),
            None => format!("{} (more: pass next as since)", orders_count(n)),
        },
        (n, false, true) => format!(
            "{} (the whole board: the cursor was from elsewhere)",
            orders_count(n)
        ),
        (n, false, false) => orders_count(n),
    };
    Ok(answer(
        OrdersOut {
            orders: Some(rows),
            truncated,
            total,
            next: Some(next),
            reset: listed.reset,
            redacted,
            ..OrdersOut::default()
        },
        summary,
    ))
}

/// `text` with anything shaped like a secret masked (the guard), noting that it was.
fn clean(text: &str, redacted: &mut bool) -> String {
    let clean = guard::redact(text);
    *redacted |= clean.redacted;
    clean.text.into_owned()
}

fn orders_count(n: usize) -> String {
    if n == 1 {
        "1 order".to_owned()
    } else {
        format!("{n} orders")
    }
}

pub(crate) fn clip(text: &str, max: usize) -> String {
    if text.chars().count() <= max {
        return text.to_owned();
    }
    let mut clipped: String = text.chars().take(max.saturating_sub(1)).collect();
    clipped.push('…');
    clipped
}

fn show(
    channel: &mut dyn Channel,
    queue: Option<&dyn HeavyQueue>,
    id: &str,
    project: &str,
    now: ferry_mcp_core::time::Timestamp,
) -> Result<ToolOutcome, OrdersError> {
    let detail = channel.show_order(id, queue, now)?;
    let link = ResourceUri::new(project, ORDER_KIND, &detail.row.id)
        .ok()
        .map(|uri| {
            ResourceLink::new(uri, format!("order {}", detail.row.id))
                .mime_type("text/markdown")
                .description("the order's full text")
        });
    let summary = format!(
        "{} {} ({})",
        detail.row.id,
        detail.row.state,
        clip(&guard::redact(&detail.row.title).text, 60)
    );
    let mut redacted = false;
    let mut order = detail_out(&detail, &mut redacted);
    order.link = link.as_ref().map(|link| link.uri.to_string());
    let out = OrdersOut {
        order: Some(order),
        redacted,
        ..OrdersOut::default()
    };
    let mut outcome = answer(out, summary);
    if let Some(link) = link {
        outcome = outcome.with_link(link);
    }
    Ok(outcome)
}

pub(crate) fn detail_out(detail: &OrderDetail, redacted: &mut bool) -> Detail {
    let mut clean = |text: &str| clean(text, redacted);
    Detail {
        id: detail.row.id.clone(),
        title: clean(&detail.row.title),
        state: detail.row.state,
        holder: detail.row.holder.as_ref().map(ToString::to_string),
        by: detail.issued_by.to_string(),
        to: detail.to.as_ref().map(ToString::to_string),
        review: detail.review,
        heavy: detail.heavy,
        hints: (!detail.hints.is_empty()).then(|| detail.hints.to_json()),
        run_via: match detail.run_via {
            RunVia::Snifrig => "snifrig".into(),
            RunVia::Direct => "direct".into(),
        },
        run: detail.run_command.clone(),
        revision: detail.revision,
        link: None,
        submitted: detail.submission.as_ref().map(|submission| {
            let what = submission
                .handin
                .as_deref()
                .or(submission.git_ref.as_deref())
                .unwrap_or_default();
            clip(
                &clean(&format!(
                    "{} by {}: {}",
                    what, submission.by, submission.summary
                )),
                300,
            )
        }),
        verdict: detail.review_verdict.as_ref().map(|review| {
            let verdict = match review.verdict {
                Verdict::Accept => "accepted",
                Verdict::Changes => "changes requested",
            };
            clip(
                &clean(&format!(
                    "{verdict} by {}{}",
                    review.by,
                    review
                        .notes
                        .as_deref()
                        .map(|notes| format!(": {notes}"))
                        .unwrap_or_default()
                )),
                300,
            )
        }),
        progress: detail
            .progress
            .as_ref()
            .map(|progress| clip(&clean(&format!("{}: {}", progress.by, progress.text)), 300)),
        handins: detail.handins.clone(),
        void: detail
            .voided
            .iter()
            .map(|void| {
                clip(
                    &format!("{} {} by {}: {}", void.what, void.id, void.by, void.reason),
                    160,
                )
            })
            .collect(),
    }
}

/// The `order` resource kind: `ferry://<project>/order/<id>` is the order's full text.
pub(crate) const ORDER_KIND: &str = "order";

static ORDER_TEMPLATE: ResourceTemplate = ResourceTemplate {
    kind: ORDER_KIND,
    name: "order",
    title: "Order",
    description: "An order's title and full body.",
    mime_type: "text/markdown",
};

/// Serves `ferry://<project>/order/<id>`.
#[derive(Debug)]
pub struct OrderBodies;

impl ResourceKind for OrderBodies {
    fn template(&self) -> &'static ResourceTemplate {
        &ORDER_TEMPLATE
    }

    fn read(
        &self,
        uri: &ResourceUri,
        cx: &mut ReadContext<'_>,
    ) -> Result<ResourceText, ResourceError> {
        facade::read_resource(
            uri,
            cx,
            ORDER_TEMPLATE.mime_type,
            |channel, id, now| {
                let text = channel.order_body(id, now)?;
                Ok(guard::redact(&text).text.into_owned())
            },
            |err| {
                matches!(
                    err,
                    OrdersError::UnknownOrder(_) | OrdersError::Ops(OpsError::BadId(_))
                )
            },
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn parse(args: Value) -> Result<OrdersArgs, String> {
        let Value::Object(map) = args else {
            panic!("arguments are an object");
        };
        facade::parse::<OrdersArgs>(DEFINITION.name, &map).map_err(|refusal| {
            assert!(refusal.is_error);
            refusal.summary
        })
    }

    /// Every action with all its fields: each field that has no default must be enforced.
    fn full_calls() -> Vec<(Value, &'static [&'static str])> {
        vec![
            (json!({"action": "list", "since": "s1.2"}), &[]),
            (json!({"action": "show", "id": "m3"}), &["id"]),
            (json!({"action": "claim", "id": "m3"}), &["id"]),
            (
                json!({"action": "release", "id": "m3", "note": "n"}),
                &["id"],
            ),
            (
                json!({"action": "progress", "id": "m3", "note": "n"}),
                &["id", "note"],
            ),
            (
                json!({"action": "handin", "id": "m3", "ref": "abc", "note": "n"}),
                &["id", "ref", "note"],
            ),
            (
                json!({"action": "submit", "id": "m3", "ref": "abc", "note": "n"}),
                &["id", "ref", "note"],
            ),
            (
                json!({"action": "review", "id": "m3", "verdict": "accept", "notes": "n"}),
                &["id", "verdict"],
            ),
        ]
    }

    #[test]
    fn every_action_parses_with_its_fields_and_names_each_missing_required_one() {
        for (call, required) in full_calls() {
            parse(call.clone()).unwrap_or_else(|err| panic!("{call}: {err}"));
            for field in required {
                let mut without = call.clone();
                without.as_object_mut().unwrap().remove(*field);
                assert_eq!(
                    parse(without.clone()).unwrap_err(),
                    format!("invalid arguments for ferry_orders: missing field `{field}`"),
                    "{without}"
                );
            }
            // Optional fields may be left out.
            let mut minimal = call.clone();
            minimal
                .as_object_mut()
                .unwrap()
                .retain(|name, _| name == "action" || required.contains(&name.as_str()));
            parse(minimal.clone()).unwrap_or_else(|err| panic!("{minimal}: {err}"));
        }
    }

    #[test]
    fn a_field_of_another_action_or_an_unknown_action_is_refused_by_name() {
        assert_eq!(
            parse(json!({"action": "claim"})).unwrap_err(),
            "invalid arguments for ferry_orders: missing field `id`"
        );
        let unknown = parse(json!({"action": "claim", "id": "m3", "note": "x"})).unwrap_err();
        assert!(
            unknown.starts_with("invalid arguments for ferry_orders: unknown field `note`"),
            "{unknown}"
        );
        let action = parse(json!({"action": "grab", "id": "m3"})).unwrap_err();
        assert!(
            action.starts_with("invalid arguments for ferry_orders: unknown variant `grab`"),
            "{action}"
        );
        let verdict =
            parse(json!({"action": "review", "id": "m3", "verdict": "maybe"})).unwrap_err();
        assert!(
            verdict.starts_with("invalid arguments for ferry_orders: unknown variant `maybe`"),
            "{verdict}"
        );
        assert_eq!(
            parse(json!({"id": "m3"})).unwrap_err(),
            "invalid arguments for ferry_orders: missing field `action`"
        );
    }
}

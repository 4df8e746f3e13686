//! Orders: the board with filters, an order with its body, progress and history, and the
//! human's changes: issue, review (accept, or changes with notes), cancel, hand back.

use ferry_mcp_core::channel::fold::state::orders::OrderState;
use ferry_mcp_core::channel::ops::orders::{self, ListRequest};
use ferry_mcp_core::channel::ops::primary;
use maud::{Markup, html};

use super::{ago, base, csrf, failed, passphrase, shown};
use crate::app::Visit;
use crate::form::{Fields, encode};

/// At most this many rows of the board on one page (the filters narrow it).
pub(crate) const MAX_ROWS: usize = 200;

const STATES: [OrderState; 8] = [
    OrderState::Open,
    OrderState::Offered,
    OrderState::Claimed,
    OrderState::InProgress,
    OrderState::Submitted,
    OrderState::ChangesRequested,
    OrderState::Accepted,
    OrderState::Cancelled,
];

fn label(state: OrderState) -> String {
    state.as_str().replace('_', " ")
}

pub(super) fn board(visit: &Visit<'_>, fields: &Fields) -> Markup {
    let base = base(visit);
    let state = fields
        .text("state")
        .and_then(|wanted| STATES.into_iter().find(|state| state.as_str() == wanted));
    let holder = fields.text("holder");
    let all = fields.checked("all") || state.is_some_and(OrderState::is_done);
    let listed = visit.read_session().and_then(|mut session| {
        let request = ListRequest {
            all,
            since: None,
            limit: usize::MAX,
        };
        let list = orders::list(&mut session, &request, visit.now).map_err(|err| err.to_string());
        let _ = session.save();
        list
    });
    html! {
        form.filters method="get" action=(format!("{base}orders")) aria-label="Filter the board" {
            label for="f-state" { "State" }
            select id="f-state" name="state" {
                option value="" { "any" }
                @for option in STATES {
                    option value=(option.as_str()) selected[state == Some(option)] { (label(option)) }
                }
            }
            label for="f-holder" { "Holder" }
            input id="f-holder" name="holder" value=(holder.unwrap_or("")) maxlength="64";
            label.check { input type="checkbox" name="all" checked[all]; " with done orders" }
            button type="submit" { "Filter" }
        }
        section data-live id="board" aria-labelledby="h-board" {
            h2 id="h-board" { "The board" }
            @match &listed {
                Ok(list) => {
                    @let rows: Vec<_> = list.rows.iter().rev()
                        .filter(|listed| state.is_none_or(|state| listed.row.state == state))
                        .filter(|listed| holder.is_none_or(|holder| listed.row.holder.as_ref().is_some_and(|h| h.as_str() == holder)))
                        .collect();
                    p { (rows.len()) " orders" @if rows.len() > MAX_ROWS { ", the latest " (MAX_ROWS) " changed shown" } "." }
                    table {
                        thead { tr { th scope="col" { "Order" } th scope="col" { "Title" } th scope="col" { "Scope" } th scope="col" { "State" } th scope="col" { "Holder" } } }
                        tbody {
                            @for listed in rows.iter().take(MAX_ROWS) {
                                tr {
                                    td { a href=(format!("{base}orders/{}", encode(&listed.row.id))) { (shown(&listed.row.id)) } }
                                    td { (shown(&listed.row.title)) }
                                    td { @if let Some(scope) = &listed.row.scope { (shown(scope)) } }
                                    td { (label(listed.row.state)) }
                                    td { @if let Some(holder) = &listed.row.holder { (shown(holder.as_str())) } }
                                }
                            }
                        }
                    }
                }
                Err(err) => { (failed("the board", err)) }
            }
        }
        section aria-labelledby="h-issue" {
            h2 id="h-issue" { "Issue an order" }
            form #issue method="post" action=(format!("{base}orders")) {
                (csrf(visit))
                label for="o-title" { "Title" }
                input id="o-title" name="title" required maxlength="200";
                label for="o-body" { "Body (optional)" }
                textarea id="o-body" name="body" rows="5" {}
                label for="o-to" { "Offer it to (an agent, optional)" }
                input id="o-to" name="to" maxlength="64" autocomplete="off";
                label for="o-scope" { "Scope (optional: only agents granted it, or granted without scopes, work on it)" }
                input id="o-scope" name="scope" maxlength="64" autocomplete="off" placeholder="for example web";
                fieldset {
                    legend { "Options" }
                    label.check { input type="checkbox" name="review"; " needs a review" }
                    label.check { input type="checkbox" name="heavy"; " heavy (runs through the machine's queue)" }
                }
                fieldset {
                    legend { "Hints (optional)" }
                    label for="o-cores" { "Cores" } input id="o-cores" name="cores" type="number" min="1" max="4096";
                    label for="o-ram" { "RAM (GB)" } input id="o-ram" name="ram_gb" type="number" min="1" max="65536";
                    label for="o-gpu" { "GPU memory (GB)" } input id="o-gpu" name="gpu_mem_gb" type="number" min="1" max="65536";
                    label for="o-minutes" { "Expected minutes" } input id="o-minutes" name="expected_minutes" type="number" min="1" max="100000";
                }
                (passphrase(visit, "o-passphrase"))
                button type="submit" { "Issue" }
            }
        }
    }
}

pub(super) fn one(visit: &Visit<'_>, id: &str) -> Markup {
    let base = base(visit);
    let mut session = match visit.read_session() {
        Ok(session) => session,
        Err(err) => return failed("the channel does not open", &err),
    };
    let now = visit.now;
    let detail = orders::show(&mut session, id, None, now);
    let body = orders::body_text(&mut session, id, now).ok();
    let silent = detail
        .as_ref()
        .ok()
        .and_then(|detail| detail.row.holder.as_ref())
        .is_some_and(|holder| primary::is_silent(&session, holder, now));
    let _ = session.save();
    let detail = match detail {
        Ok(detail) => detail,
        Err(err) => return failed("the order", &err.to_string()),
    };
    let action = |what: &str| format!("{base}orders/{}/{what}", encode(&detail.row.id));
    html! {
        section data-live id="order" aria-labelledby="h-order" {
            h2 id="h-order" { (shown(&detail.row.title)) }
            dl {
                dt { "Id" } dd { (shown(&detail.row.id)) }
                dt { "State" } dd { (label(detail.row.state)) }
                dt { "Holder" } dd { @match &detail.row.holder { Some(holder) => { (shown(holder.as_str())) @if silent { " " span.badge { "silent" } } } None => { "—" } } }
                dt { "Issued by" } dd { (shown(detail.issued_by.as_str())) }
                @if let Some(to) = &detail.to { dt { "Offered to" } dd { (shown(to.as_str())) } }
                dt { "Scope" } dd { @match &detail.scope { Some(scope) => { (shown(scope)) } None => { "none (agents granted a scope do not work on it)" } } }
                dt { "Review" } dd { @if detail.review { "needed" } @else { "not needed" } }
                @if detail.heavy { dt { "Heavy" } dd { "yes" } }
                dt { "Revision" } dd { (detail.revision) }
            }
            h3 { "Body" }
            @match &body {
                Some(body) if !body.is_empty() => { pre.body { (shown(body)) } }
                _ => { p { "No body." } }
            }
            h3 { "Progress" }
            @match &detail.progress {
                Some(progress) => { p { (shown(&progress.text)) " — " (shown(progress.by.as_str())) ", " (ago(now, progress.time)) " (" (detail.progress_lines) " lines)" } }
                None => { p { "No progress yet." } }
            }
            h3 { "History" }
            ul.history {
                @for handin in &detail.handins { li { "hand-in " (shown(handin)) } }
                @if let Some(submission) = &detail.submission {
                    li { "submitted by " (shown(submission.by.as_str())) ", " (ago(now, submission.time)) ": " (shown(&submission.summary)) }
                }
                @if let Some(review) = &detail.review_verdict {
                    li { "reviewed by " (shown(review.by.as_str())) ": " (format!("{:?}", review.verdict).to_lowercase()) @if let Some(notes) = &review.notes { " — " (shown(notes)) } }
                }
                @for void in &detail.voided {
                    li { "did not count: " (shown(void.by.as_str())) "'s " (format!("{:?}", void.what).to_lowercase()) " (" (format!("{:?}", void.reason).to_lowercase()) ")" }
                }
            }
        }
        @if detail.row.state == OrderState::Submitted {
            section aria-labelledby="h-review" {
                h2 id="h-review" { "Review" }
                form method="post" action=(action("review")) {
                    (csrf(visit))
                    label for="r-notes" { "Notes (needed for changes)" }
                    textarea id="r-notes" name="notes" rows="3" {}
                    (passphrase(visit, "r-passphrase"))
                    button type="submit" name="verdict" value="accept" { "Accept" }
                    button type="submit" name="verdict" value="changes" { "Ask for changes" }
                }
            }
        }
        @if !detail.row.state.is_done() {
            section aria-labelledby="h-change" {
                h2 id="h-change" { "Change" }
                @if detail.row.holder.is_some() {
                    form method="post" action=(action("release")) {
                        (csrf(visit))
                        label for="h-note" { "Hand it back to the board" @if silent { " (its holder is silent)" } }
                        input id="h-note" name="note" maxlength="500" placeholder="note (optional)";
                        (passphrase(visit, "h-passphrase"))
                        button type="submit" { "Hand back" }
                    }
                }
                form method="post" action=(action("cancel")) {
                    (csrf(visit))
                    label for="c-note" { "Cancel the order" }
                    input id="c-note" name="note" maxlength="500" placeholder="note (optional)";
                    (passphrase(visit, "c-passphrase"))
                    button.danger type="submit" { "Cancel it" }
                }
            }
        }
    }
}

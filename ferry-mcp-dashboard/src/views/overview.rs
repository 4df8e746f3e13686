//! The overview: who is alive and doing what, the primary and its brief, open orders by state,
//! what waits for the human, and the integrity problems, at a glance.

use ferry_mcp_core::channel::fold::state::asks::AskState;
use ferry_mcp_core::channel::ops::orders;
use ferry_mcp_core::channel::ops::{asks, fleet, primary, releases, status};
use maud::{Markup, html};

use super::{age, base, failed, shown};
use crate::app::Visit;

pub(super) fn view(visit: &Visit<'_>) -> Markup {
    let mut session = match visit.read_session() {
        Ok(session) => session,
        Err(err) => return failed("the channel does not open", &err),
    };
    let now = visit.now;
    let base = base(visit);
    let status = status::status_of(&mut session, now);
    let joined = fleet::join(&mut session, now);
    let leader = primary::status(&mut session, now);
    let digest = fleet::catchup(&mut session, None, fleet::DigestLimits::DETAIL, now);
    // Counted by the fold: the board itself is never listed here.
    let counts = orders::count_by_state(&mut session, now);
    let pending = asks::list(&mut session, None, true, now);
    // The same note `ferry_join` and the catch-up carry: a newer release the master approved
    // and pinned for this machine's platform (ADR 0020).
    let update = releases::update_note(&session);
    let _ = session.save();
    html! {
        div data-live id="overview" {
            @if let Some(update) = &update {
                p.flash role="status" {
                    "ferry " (shown(&update.version)) " is approved for this machine (running "
                    (shown(&update.running)) "): install it with " code { "ferry update apply" }
                    ", between orders."
                }
            }
            section aria-labelledby="h-agents" {
                h2 id="h-agents" { "Agents" }
                @match (&status, &joined) {
                    (Ok(status), Ok(joined)) => {
                        table {
                            caption.visually-hidden { "Agents with their level, presence and order" }
                            thead { tr { th scope="col" { "Agent" } th scope="col" { "Level" } th scope="col" { "Heard" } th scope="col" { "Doing" } } }
                            tbody {
                                @for row in &status.agents {
                                    @let alive = joined.alive.iter().find(|alive| alive.name == row.name);
                                    @let live = primary::liveness(&session, &row.name, now);
                                    tr {
                                        th scope="row" { (shown(row.name.as_str())) @if row.seat.as_str() == "contested" { " " span.badge { "contested" } } }
                                        td { (row.level.as_str()) }
                                        td { @match live { Some((seconds, state)) => { (state.as_str()) ", " (age(seconds)) } None => { "never" } } }
                                        td {
                                            @match alive.and_then(|alive| alive.doing.as_ref()) {
                                                Some(id) => { a href=(format!("{base}orders/{id}")) { (shown(id)) } }
                                                None => { "—" }
                                            }
                                        }
                                    }
                                }
                            }
                        }
                    }
                    (Err(err), _) => { (failed("status", &err.to_string())) }
                    (_, Err(err)) => { (failed("the fleet", &err.to_string())) }
                }
            }
            section aria-labelledby="h-primary" {
                h2 id="h-primary" { "Primary and brief" }
                @match &leader {
                    Ok(leader) => {
                        p {
                            @match &leader.primary {
                                Some(name) => { strong { (shown(name.as_str())) } " is primary" @if let Some(state) = leader.state { " (" (state.as_str()) ")" } }
                                None => { "No primary." }
                            }
                        }
                    }
                    Err(err) => { (failed("the primary", &err.to_string())) }
                }
                @if let Ok(digest) = &digest {
                    @if let Some(brief) = &digest.brief {
                        p { "Objective: " (shown(&brief.objective)) }
                        @if !brief.constraints.is_empty() {
                            ul { @for constraint in &brief.constraints { li { (shown(constraint)) } } }
                        }
                    }
                    @if !digest.decisions.is_empty() {
                        h3 { "Latest decisions" }
                        ul { @for decision in &digest.decisions { li { (shown(&decision.line)) } } }
                    }
                }
            }
            section aria-labelledby="h-orders" {
                h2 id="h-orders" { "Open orders" }
                @match &counts {
                    Ok(counts) => {
                        @let counts: Vec<_> = counts.iter().filter(|(state, _)| !state.is_done()).collect();
                        @if counts.is_empty() { p { "No open order." } }
                        ul.counts {
                            @for (state, count) in &counts {
                                li { a href=(format!("{base}orders?state={}", state.as_str())) { (count) " " (state.as_str().replace('_', " ")) } }
                            }
                        }
                    }
                    Err(err) => { (failed("the board", &err.to_string())) }
                }
            }
            section aria-labelledby="h-waiting" {
                h2 id="h-waiting" { "Waiting for you" }
                @match &pending {
                    Ok(pending) if pending.is_empty() => { p { "No ask waits for you." } }
                    Ok(pending) => {
                        ul {
                            @for ask in pending.iter().filter(|ask| ask.state == AskState::Pending) {
                                li { a href=(format!("{base}asks#ask-{}", ask.id)) { (shown(&ask.title)) } " — from " (shown(ask.by.as_str())) }
                            }
                        }
                    }
                    Err(err) => { (failed("the asks", &err.to_string())) }
                }
                @if let Ok(digest) = &digest {
                    @if !digest.waiting_on_you.is_empty() {
                        ul { @for line in &digest.waiting_on_you { li { (shown(line)) } } }
                    }
                }
            }
            section aria-labelledby="h-problems" {
                h2 id="h-problems" { "Integrity" }
                @match &status {
                    Ok(status) if status.problems.is_empty() => { p { "No problem found." } }
                    Ok(status) => { ul.problems { @for problem in &status.problems { li { (shown(problem)) } } } }
                    Err(_) => {}
                }
            }
        }
    }
}

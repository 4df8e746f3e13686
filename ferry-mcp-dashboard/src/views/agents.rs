//! Agents: who holds which name at which level, seats contested (each key with the button that
//! gives it the seat), and the human's changes: seat a name on this machine, and set or lower
//! a level (in scopes, with an expiry).

use ferry_mcp_core::channel::log::names::AgentName;
use ferry_mcp_core::channel::machine::home::KeyHolder;
use ferry_mcp_core::channel::ops::access::SeatState;
use ferry_mcp_core::channel::ops::access_show;
use maud::{Markup, html};

use super::{base, csrf, failed, passphrase, shown};
use crate::app::Visit;

/// A contested name's keys, each with the button that gives it the seat: a grant naming that
/// key at the level picked (Worker unless raised), signed as the human. The key this machine
/// holds for the name is marked.
fn contest(visit: &Visit<'_>, base: &str, name: &AgentName, keys: &[String]) -> Markup {
    let here = visit
        .app
        .config
        .home
        .key_state(visit.project, &KeyHolder::Agent(name.clone()), visit.now)
        .ok()
        .and_then(|local| local.public().map(ToString::to_string));
    html! {
        ul.keys {
            @for (at, key) in keys.iter().enumerate() {
                @let id = format!("pick-{}-{at}", name.as_str());
                li {
                    form.pick method="post" action=(format!("{base}agents/level")) {
                        (csrf(visit))
                        input type="hidden" name="name" value=(name.as_str());
                        input type="hidden" name="key" value=(key);
                        code { (key) }
                        @if here.as_deref() == Some(key.as_str()) { " " span.badge { "this machine's key" } }
                        label for=(format!("{id}-level")) { "Level" }
                        select id=(format!("{id}-level")) name="level" {
                            option value="worker" selected { "Worker" }
                            option value="member" { "Member" }
                            option value="orchestrator" { "Orchestrator" }
                        }
                        (passphrase(visit, &format!("{id}-passphrase")))
                        button type="submit" aria-label=(format!("Give {} to the key {}", name.as_str(), key)) { "Give the seat to this key" }
                    }
                }
            }
        }
    }
}

pub(super) fn view(visit: &Visit<'_>) -> Markup {
    let base = base(visit);
    let rows = access_show(&visit.app.config.home, visit.project, None, visit.now)
        .map(|saved| saved.value);
    html! {
        section data-live id="agents" aria-labelledby="h-roster" {
            h2 id="h-roster" { "Roster" }
            @match &rows {
                Ok(rows) if rows.is_empty() => { p { "No agent is seated yet." } }
                Ok(rows) => {
                    table {
                        thead { tr { th scope="col" { "Agent" } th scope="col" { "Seat" } th scope="col" { "Level" } th scope="col" { "Grant" } th scope="col" { "Key here" } } }
                        tbody {
                            @for row in rows {
                                tr {
                                    th scope="row" { (shown(row.name.as_str())) }
                                    td {
                                        (row.seat.as_str())
                                        @if row.seat == SeatState::Contested {
                                            (contest(visit, &base, &row.name, &row.keys))
                                        }
                                    }
                                    td { (row.level.as_str()) }
                                    td { (shown(&row.grant)) }
                                    td { (row.local_key.as_str()) @if row.pin_changed { " " span.badge { "key changed" } } }
                                }
                            }
                        }
                    }
                }
                Err(err) => { (failed("the roster", &err.to_string())) }
            }
        }
        section aria-labelledby="h-seat" {
            h2 id="h-seat" { "Seat a name on this machine" }
            p { "Makes a key for the name here, so an app on this machine can act as it (a Worker until you raise it)." }
            form method="post" action=(format!("{base}agents/seat")) {
                (csrf(visit))
                label for="seat-name" { "Agent name" }
                input id="seat-name" name="name" required maxlength="64" autocomplete="off";
                button type="submit" { "Seat" }
            }
        }
        section aria-labelledby="h-level" {
            h2 id="h-level" { "Set or lower a level" }
            form method="post" action=(format!("{base}agents/level")) {
                (csrf(visit))
                label for="level-name" { "Agent name" }
                input id="level-name" name="name" required maxlength="64" autocomplete="off";
                label for="level-level" { "Level" }
                select id="level-level" name="level" {
                    option value="worker" { "Worker (reads and hands work in)" }
                    option value="member" selected { "Member" }
                    option value="orchestrator" { "Orchestrator" }
                }
                label for="level-scopes" { "Only in these scopes (optional, comma-separated; none: every order)" }
                input id="level-scopes" name="scopes" maxlength="400" autocomplete="off" placeholder="for example web, docs";
                label for="level-hours" { "Expires after (hours, optional)" }
                input id="level-hours" name="hours" type="number" min="1" max="8760";
                (passphrase(visit, "level-passphrase"))
                button type="submit" { "Set the level" }
            }
        }
    }
}

//! Agents: who holds which name at which level, seats contested, and the human's two changes:
//! seat a name on this machine, and set or lower a level (with an expiry).

use ferry_mcp_core::channel::ops::access::SeatState;
use ferry_mcp_core::channel::ops::access_show;
use maud::{Markup, html};

use super::{base, csrf, failed, passphrase, shown};
use crate::app::Visit;

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
                                            ul.keys { @for key in &row.keys { li { code { (key) } } } }
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
                label for="level-hours" { "Expires after (hours, optional)" }
                input id="level-hours" name="hours" type="number" min="1" max="8760";
                label for="level-key" { "Key (only for a contested name)" }
                input id="level-key" name="key" maxlength="64" autocomplete="off";
                (passphrase(visit, "level-passphrase"))
                button type="submit" { "Set the level" }
            }
        }
    }
}

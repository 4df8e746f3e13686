//! Connect an AI app (beta): pick the app, the agent's name, the level; one button seats the
//! agent and writes the app's configuration (as `ferry mcp connect --write`), another shows
//! the entry to copy. No token or passphrase goes into the file.

use maud::{Markup, html};

use super::{base, csrf, passphrase};
use crate::app::Visit;
use crate::connect::AiApp;

pub(super) fn view(visit: &Visit<'_>) -> Markup {
    let base = base(visit);
    let machine = &visit.app.config.machine;
    html! {
        @if visit.app.config.connector.is_none() {
            p.error { "This build cannot write apps' configurations." }
        }
        p { "Each app starts " code { "ferry mcp serve" } " as the agent you name here. The agent's key stays in this machine's state folder; the app's file holds only the command." }
        form method="post" action=(format!("{base}connect")) {
            (csrf(visit))
            fieldset {
                legend { "The app" }
                @for (at, app) in AiApp::ALL.into_iter().enumerate() {
                    label.check {
                        input type="radio" name="app" value=(app.slug()) checked[at == 0] required;
                        " " (app.title())
                    }
                }
            }
            label for="c-name" { "Agent name (default: the app's name and this machine's: " code { "<app>-" (machine) } ")" }
            input id="c-name" name="name" maxlength="64" autocomplete="off" placeholder=(format!("claude-desktop-{machine}"));
            label for="c-level" { "Level" }
            select id="c-level" name="level" {
                option value="member" selected { "Member" }
                option value="worker" { "Work only (Worker)" }
            }
            (passphrase(visit, "c-passphrase"))
            button type="submit" name="do" value="write" { "Connect: seat the agent and write the app's configuration" }
            button type="submit" name="do" value="show" { "Only show the configuration to copy" }
        }
    }
}

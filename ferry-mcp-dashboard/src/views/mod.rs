//! The page's views: one module per view, sharing the frame (navigation, the machine's pause
//! switch, the line left by the last change) and the helpers every view uses.
//!
//! Why this shape: every view reads through `channel::ops` and renders with `maud`, which
//! escapes every value it is given; text from the channel also passes [`shown`] (the guard's
//! redaction, and control characters made visible) before it reaches a template. Parts that
//! change with the channel are marked `data-live`: the page's script swaps only those.

mod agents;
mod asks;
mod connect;
mod orders;
mod overview;
mod talk;

use std::fmt::Write as _;

use ferry_mcp_core::guard;
use ferry_mcp_core::time::Timestamp;
use maud::{DOCTYPE, Markup, html};

use crate::app::{App, Visit};
use crate::form::Fields;

/// The page's assets, in the binary.
#[derive(Debug)]
pub struct Assets;

impl Assets {
    pub const STYLE: &'static [u8] = include_bytes!("../../assets/style.css");
    pub const SCRIPT: &'static [u8] = include_bytes!("../../assets/live.js");
}

/// The sections of the navigation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Section {
    Overview,
    Agents,
    Orders,
    Asks,
    Talk,
    Connect,
}

impl Section {
    const ALL: [Section; 6] = [
        Section::Overview,
        Section::Agents,
        Section::Orders,
        Section::Asks,
        Section::Talk,
        Section::Connect,
    ];

    const fn title(self) -> &'static str {
        match self {
            Section::Overview => "Overview",
            Section::Agents => "Agents",
            Section::Orders => "Orders",
            Section::Asks => "Asks",
            Section::Talk => "Talk",
            Section::Connect => "Connect an AI app (beta)",
        }
    }

    const fn path(self) -> &'static str {
        match self {
            Section::Overview => "",
            Section::Agents => "agents",
            Section::Orders => "orders",
            Section::Asks => "asks",
            Section::Talk => "talk",
            Section::Connect => "connect",
        }
    }
}

/// The view for a GET of `/p/<project>/<parts>`, or `None` (not found).
pub(crate) fn view(visit: &Visit<'_>, parts: &[&str], fields: &Fields) -> Option<String> {
    let (section, body) = match parts {
        [] => (Section::Overview, overview::view(visit)),
        ["agents"] => (Section::Agents, agents::view(visit)),
        ["orders"] => (Section::Orders, orders::board(visit, fields)),
        ["orders", id] => (Section::Orders, orders::one(visit, id)),
        ["asks"] => (Section::Asks, asks::view(visit)),
        ["talk"] => (Section::Talk, talk::view(visit, fields)),
        ["connect"] => (Section::Connect, connect::view(visit)),
        _ => return None,
    };
    Some(frame(visit, section, &body))
}

/// Text from the channel as the page shows it: secrets masked by the guard, control
/// characters (terminal escapes) shown as `\u{..}` rather than passed on. The template escapes
/// what is left.
pub(crate) fn shown(text: &str) -> String {
    let redacted = guard::redact(text);
    let mut out = String::with_capacity(redacted.text.len());
    for c in redacted.text.chars() {
        if c.is_control() && c != '\n' && c != '\t' {
            let _ = write!(out, "\\u{{{:x}}}", u32::from(c));
        } else {
            out.push(c);
        }
    }
    out
}

/// "12 s ago", "5 min ago", "3 h ago", "2 d ago".
pub(crate) fn ago(now: Timestamp, then: Timestamp) -> String {
    age(now.seconds_since(then))
}

pub(crate) fn age(seconds: u64) -> String {
    match seconds {
        0..60 => format!("{seconds} s ago"),
        60..3600 => format!("{} min ago", seconds / 60),
        3600..86_400 => format!("{} h ago", seconds / 3600),
        _ => format!("{} d ago", seconds / 86_400),
    }
}

/// The hidden field every form carries.
pub(crate) fn csrf(visit: &Visit<'_>) -> Markup {
    html! { input type="hidden" name="csrf" value=(visit.csrf.as_str()); }
}

/// The passphrase field of a form that signs as the human, when the key is not open.
pub(crate) fn passphrase(visit: &Visit<'_>, id: &str) -> Markup {
    html! {
        @if visit.needs_passphrase() {
            label for=(id) { "Master key passphrase (for this action only)" }
            input type="password" id=(id) name="passphrase" autocomplete="off" required;
        }
    }
}

/// The base path of the visit's project.
pub(crate) fn base(visit: &Visit<'_>) -> String {
    format!("/p/{}/", visit.project)
}

/// An error read from an operation, as a paragraph.
pub(crate) fn failed(what: &str, err: &str) -> Markup {
    html! { p.error role="alert" { (what) ": " (shown(err)) } }
}

fn head(title: &str) -> Markup {
    html! {
        head {
            meta charset="utf-8";
            meta name="viewport" content="width=device-width, initial-scale=1";
            title { (title) }
            link rel="stylesheet" href="/assets/style.css";
            script src="/assets/live.js" defer {}
        }
    }
}

fn frame(visit: &Visit<'_>, section: Section, body: &Markup) -> String {
    let base = base(visit);
    let app = visit.app;
    let paused = app.config.home.pause_state().ok().flatten();
    let title = format!("{} · {} · ferry", section.title(), visit.project);
    html! {
        (DOCTYPE)
        html lang="en" {
            (head(&title))
            body data-events=(format!("{base}events")) {
                a.skip href="#main" { "Skip to the content" }
                header {
                    p.brand { "ferry · " strong { (visit.project.as_str()) } }
                    nav aria-label="Views" {
                        ul {
                            @for item in Section::ALL {
                                li {
                                    @if item == section {
                                        a href=(format!("{base}{}", item.path())) aria-current="page" { (item.title()) }
                                    } @else {
                                        a href=(format!("{base}{}", item.path())) { (item.title()) }
                                    }
                                }
                            }
                            @if app.config.projects.len() > 1 {
                                li { a href="/" { "Projects" } }
                            }
                        }
                    }
                    section.machine data-live id="machine" aria-label="This machine" {
                        @match &paused {
                            Some(pause) => {
                                p.paused { "This machine is paused: " (shown(&pause.reason.0)) }
                                form method="post" action=(format!("{base}resume")) {
                                    (csrf(visit))
                                    button type="submit" { "Resume this machine" }
                                }
                            }
                            None => {
                                form.inline method="post" action=(format!("{base}pause")) {
                                    (csrf(visit))
                                    label for="pause-reason" { "Pause this machine's agents" }
                                    input id="pause-reason" name="reason" placeholder="why (optional)" maxlength="200";
                                    button type="submit" { "Pause" }
                                }
                            }
                        }
                    }
                }
                @if let Some(flash) = &visit.flash {
                    p.flash role="status" { (shown(flash)) }
                }
                main id="main" {
                    h1 { (section.title()) }
                    (body)
                }
            }
        }
    }
    .into_string()
}

/// The project picker (`/` when several projects are registered).
pub(crate) fn picker(app: &App) -> String {
    html! {
        (DOCTYPE)
        html lang="en" {
            (head("Projects · ferry"))
            body {
                main id="main" {
                    h1 { "Projects on this machine" }
                    @if app.config.projects.is_empty() {
                        p { "No project is registered on this machine." }
                    }
                    ul {
                        @for project in &app.config.projects {
                            li { a href=(format!("/p/{project}/")) { (project.as_str()) } }
                        }
                    }
                }
            }
        }
    }
    .into_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn control_characters_show_as_escapes() {
        assert_eq!(shown("a\u{1b}[2Jb\nc"), "a\\u{1b}[2Jb\nc");
    }
}

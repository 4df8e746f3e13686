//! The page's changes: one plain form each (POST), answered by a redirect to the view with one
//! line saying what happened (POST, redirect, GET: a reload never repeats a change).
//!
//! Why its own module: every change is one call of `channel::ops`, the functions the
//! commands call, so the page has no rule of its own; what the human signs is signed with the
//! master key opened at start, or for this one action with the passphrase the form carries.

use ferry_mcp_core::channel::fold::levels::Level;
use ferry_mcp_core::channel::fold::state::asks::Verdict as AskVerdict;
use ferry_mcp_core::channel::fold::state::orders::{Hints, Verdict as ReviewVerdict};
use ferry_mcp_core::channel::log::keys::PublicKey;
use ferry_mcp_core::channel::log::names::AgentName;
use ferry_mcp_core::channel::ops::asks;
use ferry_mcp_core::channel::ops::orders::{self, IssueRequest};
use ferry_mcp_core::channel::ops::talk::{self, PostRequest};
use ferry_mcp_core::channel::ops::{self, GrantRequest, Joined};
use ferry_mcp_core::channel::session::{Actor, Session};
use ferry_mcp_core::time::Timestamp;

use crate::app::Visit;
use crate::connect::{AiApp, ConnectRequest};
use crate::form::{Fields, encode};

/// Runs the change at `parts`; `None` when there is none there. Gives where to go back to and
/// the line to show.
pub(crate) fn act(visit: &Visit<'_>, parts: &[&str], fields: &Fields) -> Option<(String, String)> {
    let base = format!("/p/{}/", visit.project);
    let (back, result) = match parts {
        ["pause"] => (base.clone(), pause(visit, fields)),
        ["resume"] => (base.clone(), resume(visit)),
        ["agents", "seat"] => (format!("{base}agents"), seat(visit, fields)),
        ["agents", "level"] => (format!("{base}agents"), level(visit, fields)),
        ["orders"] => {
            let issued = issue(visit, fields);
            let back = match &issued {
                Ok((id, _)) => format!("{base}orders/{}", encode(id)),
                Err(_) => format!("{base}orders"),
            };
            (back, issued.map(|(_, line)| line))
        }
        ["orders", id, what] => (
            format!("{base}orders/{}", encode(id)),
            order_change(visit, id, what, fields)?,
        ),
        ["asks", id, "answer"] => (format!("{base}asks"), answer(visit, id, fields)?),
        ["talk"] => (format!("{base}talk"), post(visit, fields)),
        ["connect"] => (format!("{base}connect"), connect(visit, fields)),
        _ => return None,
    };
    Some((
        back,
        result.unwrap_or_else(|err| format!("Not done: {err}")),
    ))
}

/// A session of the human, signing with the key opened at start or with the form's passphrase.
fn master_session(visit: &Visit<'_>, fields: &Fields) -> Result<Session, String> {
    let home = visit.app.master_home(fields);
    Session::open(&home, visit.project, Actor::Master, visit.now)
        .map(Session::for_one_operation)
        .map_err(|err| err.to_string())
}

/// Runs `work` on a session of the human and keeps what it verified.
fn as_master<T, E: std::fmt::Display>(
    visit: &Visit<'_>,
    fields: &Fields,
    work: impl FnOnce(&mut Session, Timestamp) -> Result<T, E>,
) -> Result<T, String> {
    let mut session = master_session(visit, fields)?;
    let result = work(&mut session, visit.now).map_err(|err| err.to_string());
    let _ = session.save();
    result
}

fn agent(fields: &Fields, field: &str) -> Result<AgentName, String> {
    let raw = fields
        .text(field)
        .ok_or_else(|| format!("the {field} is missing"))?;
    AgentName::parse(raw).map_err(|err| err.to_string())
}

fn number(fields: &Fields, field: &str) -> Result<Option<u32>, String> {
    fields
        .text(field)
        .map(|raw| {
            raw.parse::<u32>()
                .map_err(|_| format!("the {field} is not a whole number"))
        })
        .transpose()
}

fn pause(visit: &Visit<'_>, fields: &Fields) -> Result<String, String> {
    let reason = fields.text("reason").unwrap_or("paused from the dashboard");
    ops::pause(&visit.app.config.home, reason, visit.now).map_err(|err| err.to_string())?;
    Ok("This machine is paused: its agents stop writing until you resume it.".to_owned())
}

fn resume(visit: &Visit<'_>) -> Result<String, String> {
    let was = ops::resume(&visit.app.config.home).map_err(|err| err.to_string())?;
    Ok(if was {
        "This machine resumed.".to_owned()
    } else {
        "This machine was not paused.".to_owned()
    })
}

fn seat(visit: &Visit<'_>, fields: &Fields) -> Result<String, String> {
    let name = agent(fields, "name")?;
    let (joined, _) = ops::join(
        &visit.app.config.home,
        visit.project,
        &name,
        None,
        visit.now,
    )
    .map(|saved| saved.value)
    .map_err(|err| err.to_string())?;
    Ok(match joined {
        Joined::Seated => format!("Seated {name} on this machine (a Worker until you raise it)."),
        Joined::AlreadySeated => format!("{name} is already seated on this machine."),
    })
}

fn level(visit: &Visit<'_>, fields: &Fields) -> Result<String, String> {
    let name = agent(fields, "name")?;
    let level: Level = fields
        .text("level")
        .unwrap_or("")
        .parse()
        .map_err(|err: ferry_mcp_core::channel::fold::levels::UnknownLevel| err.to_string())?;
    let expires = number(fields, "hours")?
        .map(|hours| Timestamp::from_millis(visit.now.as_millis() + u64::from(hours) * 3_600_000));
    let key = fields
        .text("key")
        .map(|raw| PublicKey::from_hex(raw).map_err(|err| err.to_string()))
        .transpose()?;
    let request = GrantRequest {
        level,
        scopes: scopes(fields),
        expires,
        key,
    };
    let home = visit.app.master_home(fields);
    ops::access_set(&home, visit.project, &name, &request, visit.now)
        .map_err(|err| err.to_string())?;
    let within = match request.scopes.as_slice() {
        [] => String::new(),
        scopes => format!(" in {}", scopes.join(", ")),
    };
    let picked = match key {
        Some(key) => format!(
            " Its seat is the key {}.",
            key.to_string().get(..12).unwrap_or("")
        ),
        None => String::new(),
    };
    Ok(match expires {
        Some(_) => format!("{name} is a {level}{within} for the hours given.{picked}"),
        None => format!("{name} is a {level}{within}.{picked}"),
    })
}

/// The scopes of a grant, as typed: comma-separated (none: the whole project).
fn scopes(fields: &Fields) -> Vec<String> {
    fields
        .text("scopes")
        .unwrap_or("")
        .split(',')
        .map(str::trim)
        .filter(|scope| !scope.is_empty())
        .map(str::to_owned)
        .collect()
}

fn issue(visit: &Visit<'_>, fields: &Fields) -> Result<(String, String), String> {
    let to = fields.text("to").map(|_| agent(fields, "to")).transpose()?;
    let request = IssueRequest {
        title: fields.text("title").unwrap_or("").to_owned(),
        body: fields.text("body").map(str::to_owned),
        to,
        review: fields.checked("review"),
        heavy: fields.checked("heavy"),
        hints: Hints {
            cores: number(fields, "cores")?,
            ram_gb: number(fields, "ram_gb")?,
            gpu_mem_gb: number(fields, "gpu_mem_gb")?,
            expected_minutes: number(fields, "expected_minutes")?,
        },
        scope: fields.text("scope").map(str::to_owned),
    };
    let id = as_master(visit, fields, |session, now| {
        orders::issue(session, &request, now)
    })?;
    Ok((id.clone(), format!("Issued {id}.")))
}

fn order_change(
    visit: &Visit<'_>,
    id: &str,
    what: &str,
    fields: &Fields,
) -> Option<Result<String, String>> {
    let note = fields.text("note");
    Some(match what {
        "review" => {
            let verdict = match fields.get("verdict") {
                Some("accept") => ReviewVerdict::Accept,
                Some("changes") => ReviewVerdict::Changes,
                _ => return Some(Err("say accept or changes".to_owned())),
            };
            let notes = fields.text("notes");
            as_master(visit, fields, |session, now| {
                orders::review(session, id, verdict, notes, now)
            })
            .map(|state| format!("{id} is {}.", state.as_str().replace('_', " ")))
        }
        "cancel" => as_master(visit, fields, |session, now| {
            orders::cancel(session, id, note, now)
        })
        .map(|_| format!("{id} is cancelled.")),
        "release" => as_master(visit, fields, |session, now| {
            orders::release(session, id, note, now)
        })
        .map(|state| format!("{id} is back on the board ({}).", state.as_str())),
        _ => return None,
    })
}

fn answer(visit: &Visit<'_>, id: &str, fields: &Fields) -> Option<Result<String, String>> {
    let verdict = match fields.get("verdict")? {
        "approve" => AskVerdict::Approve,
        "reject" => AskVerdict::Reject,
        "send_back" => AskVerdict::SendBack,
        _ => return None,
    };
    let note = fields.text("note");
    Some(
        as_master(visit, fields, |session, now| {
            asks::answer(session, id, verdict, note, now)
        })
        .map(|ask| format!("{} is {}.", ask.id, ask.state.as_str().replace('_', " "))),
    )
}

fn post(visit: &Visit<'_>, fields: &Fields) -> Result<String, String> {
    let request = PostRequest {
        to: fields.text("to").unwrap_or("all").to_owned(),
        text: fields.get("text").unwrap_or("").to_owned(),
        reply_to: fields.text("reply_to").map(str::to_owned),
    };
    let id = as_master(visit, fields, |session, now| {
        talk::post(session, &request, now)
    })?;
    Ok(format!("Posted {id}."))
}

fn connect(visit: &Visit<'_>, fields: &Fields) -> Result<String, String> {
    let connector = visit
        .app
        .config
        .connector
        .as_ref()
        .ok_or("this build cannot write apps' configurations")?;
    let app = fields
        .get("app")
        .and_then(AiApp::from_slug)
        .ok_or("pick an app")?;
    let name = match fields.text("name") {
        Some(_) => agent(fields, "name")?,
        None => AgentName::parse(&format!("{}-{}", app.slug(), visit.app.config.machine))
            .map_err(|err| err.to_string())?,
    };
    let request = ConnectRequest {
        app,
        name,
        project: visit.project.clone(),
        write: fields.get("do") != Some("show"),
        level: match fields.get("level") {
            Some("worker") => Level::Worker,
            _ => Level::Member,
        },
    };
    connector.connect(
        &visit.app.config.home,
        &visit.app.master_home(fields),
        &request,
        visit.now,
    )
}

//! `ferry primary ...`, `ferry brief ...` and `ferry ask ...`:
//! the human's side of the primary and of asks, and an agent's brief, on the same library
//! functions as the `ferry_primary` and `ferry_ask_human` tools.

use std::process::ExitCode;

use clap::Subcommand;
use ferry_mcp_core::channel::fold::state::asks::Verdict;
use ferry_mcp_core::channel::log::names::{AgentName, ProjectId};
use ferry_mcp_core::channel::ops::asks::{self, AskView, RaiseRequest};
use ferry_mcp_core::channel::ops::fleet::{self as digest, DigestLimits};
use ferry_mcp_core::channel::ops::primary::{self, Takeover};
use serde_json::json;

use crate::clock;
use crate::common::{Acting, with_joining_session, with_reading_session, with_session};
use crate::display;

#[derive(Debug, Subcommand)]
pub enum PrimaryCommand {
    /// Who is primary, how recently heard from, and what an agent may do now.
    Status {
        #[command(flatten)]
        acting: Acting,
    },
    /// Set the quiet period after which an agent counts as silent (the master): `90s`, `10m`,
    /// `2h`, or seconds.
    QuietPeriod {
        duration: String,
        #[command(flatten)]
        acting: Acting,
    },
    /// Take over as primary (an Orchestrator, --as) when the primary is silent.
    Takeover {
        #[command(flatten)]
        acting: Acting,
    },
    /// Hand the primary's role back (the primary, --as).
    Release {
        #[command(flatten)]
        acting: Acting,
    },
    /// Record that the agent (--as) waits for the primary (what `ferry_primary standby` does).
    Standby {
        #[command(flatten)]
        acting: Acting,
    },
}

#[derive(Debug, Subcommand)]
pub enum BriefCommand {
    /// Write the agent's brief: its objective and at most five constraint lines.
    Set {
        #[command(flatten)]
        acting: Acting,
        #[arg(long)]
        objective: String,
        /// A constraint line (repeat for more, at most five).
        #[arg(long = "constraint")]
        constraints: Vec<String>,
    },
    /// Record a decision in the agent's brief.
    Decide {
        line: String,
        #[command(flatten)]
        acting: Acting,
    },
}

#[derive(Debug, Subcommand)]
pub enum AskCommand {
    /// Ask the human for a decision (an agent, --as; what `ferry_ask_human raise` does).
    Raise {
        #[command(flatten)]
        acting: Acting,
        #[arg(long)]
        title: String,
        #[arg(long)]
        recommendation: String,
        #[arg(long, default_value = "")]
        reasoning: String,
    },
    /// One ask and its answer (default: the agent's latest; what `ferry_ask_human status` does).
    Status {
        id: Option<String>,
        #[command(flatten)]
        acting: Acting,
    },
    /// The agents' asks, newest first (`--pending`: only those waiting for you).
    List {
        #[command(flatten)]
        acting: Acting,
        #[arg(long)]
        pending: bool,
    },
    /// One ask in full.
    Show {
        id: String,
        #[command(flatten)]
        acting: Acting,
    },
    /// Approve an ask (signed with the master key).
    Approve {
        id: String,
        #[command(flatten)]
        acting: Acting,
        #[arg(long)]
        note: Option<String>,
    },
    /// Reject an ask.
    Reject {
        id: String,
        #[command(flatten)]
        acting: Acting,
        #[arg(long)]
        note: Option<String>,
    },
    /// Send an ask back to its agent for more work.
    SendBack {
        id: String,
        #[command(flatten)]
        acting: Acting,
        #[arg(long)]
        note: Option<String>,
    },
}

/// `90s`, `10m`, `2h`, `1d` or plain seconds.
fn seconds(text: &str) -> anyhow::Result<u64> {
    let text = text.trim();
    let (digits, unit) = match text.find(|c: char| !c.is_ascii_digit()) {
        Some(at) => text.split_at(at),
        None => (text, "s"),
    };
    let value: u64 = digits
        .parse()
        .map_err(|_| anyhow::anyhow!("bad duration {text:?} (like 90s, 10m, 2h)"))?;
    let scale = match unit {
        "s" => 1,
        "m" => 60,
        "h" => 3600,
        "d" => 86_400,
        _ => anyhow::bail!("bad duration {text:?} (like 90s, 10m, 2h)"),
    };
    Ok(value.saturating_mul(scale))
}

pub fn run_primary(cmd: PrimaryCommand) -> anyhow::Result<ExitCode> {
    let now = clock::now();
    match cmd {
        PrimaryCommand::Status { acting } => with_reading_session(&acting, |session| {
            let status = primary::status(session, now)?;
            let rule = cli_rule(&status, session.project(), session.actor().agent());
            let text = format!(
                "primary: {}{}\nquiet period: {}s\n{}",
                status
                    .primary
                    .as_ref()
                    .map_or_else(|| "none".to_owned(), ToString::to_string),
                match (status.state, status.age_s) {
                    (Some(state), Some(age)) => format!(" ({}, {age}s ago)", state.as_str()),
                    _ => String::new(),
                },
                status.quiet_period_s,
                rule
            );
            Ok((text, with_rule(&status, &rule)?))
        }),
        PrimaryCommand::QuietPeriod { duration, acting } => {
            let seconds = seconds(&duration)?;
            with_session(&acting, |session| {
                primary::set_quiet_period(session, seconds, now)?;
                Ok((
                    format!("the quiet period is {seconds}s"),
                    json!({ "quiet_period_s": seconds }),
                ))
            })
        }
        PrimaryCommand::Takeover { acting } => with_session(&acting, |session| {
            let outcome = primary::takeover(session, now)?;
            let result = outcome.result();
            Ok(match outcome {
                Takeover::TookOver { from: Some(from) } => (
                    format!("you are primary, taking over from {from} (the fleet was told)"),
                    json!({"outcome": result, "from": from}),
                ),
                Takeover::TookOver { from: None } => (
                    "you are primary".to_owned(),
                    json!({"outcome": result, "from": null}),
                ),
                Takeover::AlreadyPrimary => (
                    "you are primary already".to_owned(),
                    json!({"outcome": result}),
                ),
                Takeover::LostRace { primary } => (
                    format!("{primary} took over first: its takeover won the race"),
                    json!({"outcome": result, "primary": primary}),
                ),
            })
        }),
        PrimaryCommand::Release { acting } => with_session(&acting, |session| {
            primary::release(session, now)?;
            Ok(("released the primary's role".to_owned(), json!({})))
        }),
        PrimaryCommand::Standby { acting } => with_session(&acting, |session| {
            let status = primary::standby(session, now)?;
            let rule = cli_rule(&status, session.project(), session.actor().agent());
            Ok((format!("standing by; {rule}"), with_rule(&status, &rule)?))
        }),
    }
}

/// What the human may do about the primary, as commands to run.
/// A status as `--json` prints it: its fields and the rule the text says.
fn with_rule(status: &primary::PrimaryStatus, rule: &str) -> anyhow::Result<serde_json::Value> {
    let mut value = serde_json::to_value(status)?;
    value["rule"] = serde_json::Value::String(rule.to_owned());
    Ok(value)
}

/// What the person at the keyboard, or an agent acting through the CLI, may run now.
fn cli_rule(
    status: &primary::PrimaryStatus,
    project: &ProjectId,
    me: Option<&AgentName>,
) -> String {
    use primary::Advice;
    let takeover = match me {
        Some(me) => format!("run `ferry primary takeover --as {me} --project {project}`"),
        None => format!(
            "an Orchestrator may take over: run `ferry primary takeover --as AGENT --project {project}` on its machine"
        ),
    };
    match &status.advice {
        Advice::YouArePrimary => format!(
            "you are primary: keep your brief current (`ferry brief set|decide --as {} --project {project}`), release when you stop",
            me.map_or("AGENT", |me| me.as_str())
        ),
        Advice::NoPrimaryTakeOver => format!("there is no primary: you may take over: {takeover}"),
        Advice::NoPrimary if me.is_some() => {
            "there is no primary: work your orders; an Orchestrator may take over".to_owned()
        }
        Advice::NoPrimary => format!("there is no primary: {takeover}"),
        Advice::SilentTakeOver { primary } => {
            format!("{primary} is silent: you may take over: {takeover}")
        }
        Advice::SilentNotYet { primary, reason } => {
            format!("{primary} is silent here, but a take would not count yet ({reason}): wait")
        }
        Advice::SilentTellSomeone { primary } if me.is_some() => format!(
            "{primary} is silent: tell the human or an Orchestrator; keep working your orders"
        ),
        Advice::SilentTellSomeone { primary } => format!("{primary} is silent: {takeover}"),
        Advice::Heard { primary, state } => format!(
            "{primary} is {}: nothing to do (it counts as silent after {}s)",
            state.as_str(),
            status.quiet_period_s
        ),
    }
}

pub fn run_brief(cmd: BriefCommand) -> anyhow::Result<ExitCode> {
    let now = clock::now();
    match cmd {
        BriefCommand::Set {
            acting,
            objective,
            constraints,
        } => with_session(&acting, |session| {
            primary::set_brief(session, &objective, &constraints, now)?;
            Ok(("brief written".to_owned(), json!({})))
        }),
        BriefCommand::Decide { line, acting } => with_session(&acting, |session| {
            let id = primary::decide(session, &line, now)?;
            Ok((format!("decision {id} recorded"), json!({ "id": id })))
        }),
    }
}

fn ask_text(ask: &AskView) -> String {
    let mut text = format!(
        "{} by {} ({}): {}\nrecommends: {}",
        ask.id,
        ask.by,
        ask.state,
        display::escape(&ask.title),
        display::escape(&ask.recommendation)
    );
    if !ask.reasoning.is_empty() {
        text.push_str(&format!("\nbecause: {}", display::escape(&ask.reasoning)));
    }
    if let Some(note) = &ask.note {
        text.push_str(&format!("\nnote: {}", display::escape(note)));
    }
    text
}

pub fn run_ask(cmd: AskCommand) -> anyhow::Result<ExitCode> {
    let now = clock::now();
    let answer = |id: String, acting: Acting, note: Option<String>, verdict: Verdict| {
        with_session(&acting, |session| {
            let ask = asks::answer(session, &id, verdict, note.as_deref(), now)?;
            Ok((
                format!("ask {} is {}", ask.id, ask.state),
                serde_json::to_value(&ask)?,
            ))
        })
    };
    match cmd {
        AskCommand::List { acting, pending } => with_reading_session(&acting, |session| {
            let list = asks::list(session, None, pending, now)?;
            let text = if list.is_empty() {
                "no asks".to_owned()
            } else {
                list.iter()
                    .map(|ask| {
                        format!(
                            "{}  {:<9}  {}  {}",
                            ask.id,
                            ask.state,
                            ask.by,
                            display::escape(&ask.title)
                        )
                    })
                    .collect::<Vec<_>>()
                    .join("\n")
            };
            Ok((text, json!({ "asks": list })))
        }),
        AskCommand::Show { id, acting } => with_reading_session(&acting, |session| {
            let ask = asks::show(session, &id, now)?;
            Ok((ask_text(&ask), serde_json::to_value(&ask)?))
        }),
        AskCommand::Raise {
            acting,
            title,
            recommendation,
            reasoning,
        } => with_session(&acting, |session| {
            let request = RaiseRequest {
                title,
                recommendation,
                reasoning,
            };
            let id = asks::raise(session, &request, now)?;
            let ask = asks::show(session, &id, now)?;
            Ok((
                format!("asked the human ({id}); check back with ferry ask status {id}"),
                serde_json::to_value(&ask)?,
            ))
        }),
        AskCommand::Status { id, acting } => with_reading_session(&acting, |session| {
            let ask = match id {
                Some(id) => asks::show(session, &id, now)?,
                None => {
                    let me = session.actor().agent().cloned();
                    asks::list(session, me.as_ref(), false, now)?
                        .into_iter()
                        .next()
                        .ok_or(asks::AsksError::NoAskYet)?
                }
            };
            Ok((ask_text(&ask), serde_json::to_value(&ask)?))
        }),
        AskCommand::Approve { id, acting, note } => answer(id, acting, note, Verdict::Approve),
        AskCommand::Reject { id, acting, note } => answer(id, acting, note, Verdict::Reject),
        AskCommand::SendBack { id, acting, note } => answer(id, acting, note, Verdict::SendBack),
    }
}

/// `ferry catchup`: the digest `ferry_catchup` answers, from the same library function.
#[derive(Debug, clap::Args)]
pub struct CatchupArgs {
    #[command(flatten)]
    acting: Acting,
    /// Only what changed after this cursor (the `next` of an earlier catch-up).
    #[arg(long)]
    since: Option<String>,
    /// The larger digest (more decisions and orders).
    #[arg(long)]
    detail: bool,
}

pub fn run_catchup(args: CatchupArgs) -> anyhow::Result<ExitCode> {
    let now = clock::now();
    let limits = if args.detail {
        DigestLimits::DETAIL
    } else {
        DigestLimits::DEFAULT
    };
    with_reading_session(&args.acting, |session| {
        let found = digest::catchup(session, args.since.as_deref(), limits, now)?;
        let mut lines = Vec::new();
        if let Some(primary) = &found.primary {
            lines.push(format!("primary: {}", primary.name));
        }
        if let Some(brief) = &found.brief {
            lines.push(format!("objective: {}", display::escape(&brief.objective)));
        }
        for decision in &found.decisions {
            lines.push(format!(
                "decided {}: {}",
                decision.id,
                display::escape(&decision.line)
            ));
        }
        for (what, orders, total) in [
            ("open", &found.open, found.open_total),
            ("yours", &found.mine, found.mine_total),
        ] {
            lines.push(format!("{what}: {} of {total}", orders.len()));
            for order in orders {
                lines.push(format!(
                    "  {}  {}  {}",
                    order.id,
                    order.state,
                    display::escape(&order.title)
                ));
            }
        }
        for waiting in &found.waiting_on_you {
            lines.push(format!("waiting on you: {}", display::escape(waiting)));
        }
        lines.push(format!("next: {}", found.next));
        Ok((lines.join("\n"), serde_json::to_value(&found)?))
    })
}

/// `ferry join`: what `ferry_join` tells an agent (its seat, the primary, who is alive).
#[derive(Debug, clap::Args)]
pub struct JoinArgs {
    #[command(flatten)]
    acting: Acting,
}

pub fn run_join(args: JoinArgs) -> anyhow::Result<ExitCode> {
    let now = clock::now();
    with_joining_session(&args.acting, |session| {
        let joined = digest::join(session, now)?;
        let text = format!(
            "{} in {}: {}; primary {}; {} alive; {} open order(s) of yours",
            joined
                .agent
                .as_ref()
                .map_or_else(|| "the human".to_owned(), ToString::to_string),
            joined.project,
            serde_json::to_value(&joined.standing)?["seat"]
                .as_str()
                .unwrap_or("?"),
            joined
                .primary
                .as_ref()
                .map_or_else(|| "none".to_owned(), |primary| primary.name.to_string()),
            joined.alive.len(),
            joined.mine_open
        );
        Ok((text, serde_json::to_value(&joined)?))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_read_as_seconds() {
        assert_eq!(seconds("90").unwrap(), 90);
        assert_eq!(seconds("90s").unwrap(), 90);
        assert_eq!(seconds("10m").unwrap(), 600);
        assert_eq!(seconds("2h").unwrap(), 7200);
        assert!(seconds("ten").is_err());
        assert!(seconds("5w").is_err());
    }
}

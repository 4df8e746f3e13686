//! `ferry order ...` and `ferry work hand-in`: the human's side of orders (and an agent's, with
//! `--as`), on the same library functions as the `ferry_orders` tool.
//!
//! Glue only: parse arguments, open a session as the master (or the agent named by `--as`),
//! call one function of `ferry_mcp_core::channel::ops::orders`, print its result (`--json`
//! for scripts), save what was verified.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context as _;
use clap::{Subcommand, ValueEnum};
use ferry_mcp_core::channel::fold::state::orders::{Hints, Verdict};
use ferry_mcp_core::channel::log::names::AgentName;
use ferry_mcp_core::channel::ops::orders::{
    self as ops, ClaimOutcome, IssueRequest, ListRequest, OrderDetail, RunVia, SubmitRequest,
};
use serde_json::json;

use crate::common::{Acting, agent_name, with_reading_session, with_session};
use crate::display;
use crate::snifrig::Snifrig;
use crate::{clock, paths};

#[derive(Debug, Subcommand)]
pub enum OrderCommand {
    /// The board: open and held orders (`--all`: done ones too).
    List {
        #[command(flatten)]
        acting: Acting,
        /// Every order, done ones too, in one list (no page).
        #[arg(long)]
        all: bool,
        /// Only orders that changed after this cursor (the `next` of an earlier list).
        #[arg(long)]
        since: Option<String>,
        /// At most this many orders (default: a page of 20, as the tools give).
        #[arg(long, value_parser = clap::value_parser!(u32).range(1..), conflicts_with = "all")]
        limit: Option<u32>,
        /// Go on after an earlier page (the cursor it printed after `more:`).
        #[arg(long, conflicts_with = "since")]
        after: Option<String>,
    },
    /// One order in full, and how it would run on this machine.
    Show {
        id: String,
        #[command(flatten)]
        acting: Acting,
    },
    /// Issue an order (the master, or an Orchestrator with `--as`).
    Issue {
        title: String,
        #[command(flatten)]
        acting: Acting,
        /// Offer it to one agent: only it may claim.
        #[arg(long, value_parser = agent_name)]
        to: Option<AgentName>,
        /// A submission needs a review by an Orchestrator (or you).
        #[arg(long)]
        review: bool,
        /// The body, read from a file (long bodies are stored as a blob).
        #[arg(long)]
        body_file: Option<PathBuf>,
        /// Heavy work: run through this machine's queue where an agent's config says so.
        #[arg(long)]
        heavy: bool,
        #[arg(long, requires = "heavy")]
        cores: Option<u32>,
        #[arg(long, requires = "heavy")]
        ram_gb: Option<u32>,
        #[arg(long, requires = "heavy")]
        gpu_mem_gb: Option<u32>,
        #[arg(long, requires = "heavy")]
        expected_minutes: Option<u32>,
        /// The project scope it belongs to: only agents granted without scopes, or granted
        /// this scope (`ferry access set NAME LEVEL --scope S`), work on it above a Worker.
        #[arg(long, value_parser = crate::admin::scope)]
        scope: Option<String>,
    },
    /// Claim an order (an agent, `--as`).
    Claim {
        id: String,
        #[command(flatten)]
        acting: Acting,
    },
    /// Give an order back to the board: its holder, or the master or an Orchestrator handing
    /// back the order of a holder gone silent.
    Release {
        id: String,
        #[command(flatten)]
        acting: Acting,
        #[arg(long)]
        note: Option<String>,
    },
    /// Add a progress line (the holder, `--as`).
    Progress {
        id: String,
        text: String,
        #[command(flatten)]
        acting: Acting,
    },
    /// Submit a hand-in or a git ref with a summary (the holder, `--as`).
    Submit {
        id: String,
        #[command(flatten)]
        acting: Acting,
        #[arg(long = "ref", required_unless_present = "handin")]
        git_ref: Option<String>,
        #[arg(long)]
        handin: Option<String>,
        #[arg(long)]
        summary: String,
    },
    /// Review a submission (the master, or an Orchestrator with `--as`).
    Review {
        id: String,
        verdict: VerdictArg,
        #[command(flatten)]
        acting: Acting,
        /// Required for `changes`.
        #[arg(long)]
        notes: Option<String>,
    },
    /// Cancel an order (the master).
    Cancel {
        id: String,
        #[command(flatten)]
        acting: Acting,
        #[arg(long)]
        note: Option<String>,
    },
}

#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum VerdictArg {
    Accept,
    Changes,
}

#[derive(Debug, Subcommand)]
pub enum WorkCommand {
    /// Hand work in for an order: a git ref and a short summary (any seated agent, a Worker
    /// too). The work stays in the work repository.
    HandIn {
        #[command(flatten)]
        acting: Acting,
        #[arg(long)]
        order: String,
        #[arg(long = "ref")]
        git_ref: String,
        #[arg(long)]
        summary: String,
    },
}

fn board_text(rows: &[ops::ListedOrder]) -> String {
    if rows.is_empty() {
        return "no orders".into();
    }
    let width = rows
        .iter()
        .map(|listed| listed.row.id.len())
        .max()
        .unwrap_or(2)
        .max(2);
    let mut lines = vec![format!(
        "{:<width$}  {:<17}  {:<16}  TITLE",
        "ID", "STATE", "HOLDER"
    )];
    for listed in rows {
        let row = &listed.row;
        lines.push(format!(
            "{:<width$}  {:<17}  {:<16}  {}",
            row.id,
            row.state,
            row.holder.as_ref().map_or("-", AgentName::as_str),
            match &row.scope {
                Some(scope) => format!(
                    "[{}] {}",
                    display::escape(scope),
                    display::escape(&row.title)
                ),
                None => display::escape(&row.title).into_owned(),
            },
        ));
    }
    lines.join("\n")
}

fn detail_text(detail: &OrderDetail) -> String {
    let row = &detail.row;
    let mut lines = vec![
        format!("{} {} ({})", row.id, display::escape(&row.title), row.state),
        format!("issued by {}", detail.issued_by),
    ];
    if let Some(holder) = &row.holder {
        lines.push(format!("held by {holder}"));
    }
    if let Some(to) = &detail.to {
        lines.push(format!("offered to {to}"));
    }
    if let Some(scope) = &detail.scope {
        lines.push(format!("in scope {}", display::escape(scope)));
    }
    if detail.review {
        lines.push("a submission needs a review".into());
    }
    if detail.heavy {
        lines.push(format!(
            "heavy ({}); runs {}",
            serde_json::to_string(&detail.hints.to_json()).unwrap_or_default(),
            match (&detail.run_via, &detail.run_command) {
                (RunVia::Snifrig, Some(command)) => format!("via snifrig: {command}"),
                _ => "directly".into(),
            }
        ));
    }
    if let Some(body) = &detail.body {
        lines.push(String::new());
        lines.push(display::escape_lines(body).into_owned());
    }
    if let Some(blob) = &detail.body_blob {
        lines.push(format!("body: blob {blob}"));
    }
    if let Some(progress) = &detail.progress {
        lines.push(format!(
            "progress ({} lines), last by {}: {}",
            detail.progress_lines,
            progress.by,
            display::escape(&progress.text)
        ));
    }
    if let Some(submission) = &detail.submission {
        lines.push(format!(
            "revision {} by {}: {} {}",
            detail.revision,
            submission.by,
            submission
                .handin
                .as_deref()
                .or(submission.git_ref.as_deref())
                .unwrap_or_default(),
            display::escape(&submission.summary)
        ));
    }
    if let Some(review) = &detail.review_verdict {
        lines.push(format!(
            "review by {}: {:?}{}",
            review.by,
            review.verdict,
            review
                .notes
                .as_deref()
                .map(|notes| format!(": {}", display::escape(notes)))
                .unwrap_or_default()
        ));
    }
    for handin in &detail.handins {
        lines.push(format!("hand-in {handin}"));
    }
    for void in &detail.voided {
        lines.push(format!(
            "does not count: {} {} by {}: {}",
            void.what, void.id, void.by, void.reason
        ));
    }
    lines.join("\n")
}

fn detail_json(detail: &OrderDetail) -> serde_json::Value {
    serde_json::to_value(detail).expect("an order detail serializes")
}

pub fn run_order(cmd: OrderCommand) -> anyhow::Result<ExitCode> {
    let now = clock::now();
    match cmd {
        OrderCommand::List {
            acting,
            all,
            since,
            limit,
            after,
        } => with_reading_session(&acting, |session| {
            let request = ListRequest {
                all,
                since: after.or(since),
                limit: crate::common::page_limit(all, limit),
            };
            let list = ops::list(session, &request, now)?;
            let next = list.next(list.rows.len()).to_string();
            let rows: Vec<_> = list.rows.iter().map(|listed| &listed.row).collect();
            let json =
                json!({"orders": rows, "next": next, "more": list.more, "reset": list.reset});
            let mut text = format!("{}\nnext: {next}", board_text(&list.rows));
            if list.more {
                text.push_str(&format!("\nmore: --after {next}"));
            }
            Ok((text, json))
        }),
        OrderCommand::Show { id, acting } => with_reading_session(&acting, |session| {
            let home = paths::home()?;
            let queue = Snifrig::find(home.root(), std::env::var_os("PATH").as_deref());
            let detail = ops::show(session, &id, Some(&queue), now)?;
            Ok((detail_text(&detail), detail_json(&detail)))
        }),
        OrderCommand::Issue {
            title,
            acting,
            to,
            review,
            body_file,
            heavy,
            cores,
            ram_gb,
            gpu_mem_gb,
            expected_minutes,
            scope,
        } => {
            let body = body_file
                .map(|path| {
                    std::fs::read_to_string(&path)
                        .with_context(|| format!("reading {}", path.display()))
                })
                .transpose()?;
            with_session(&acting, |session| {
                let request = IssueRequest {
                    title,
                    body,
                    to,
                    review,
                    heavy,
                    hints: Hints {
                        cores,
                        ram_gb,
                        gpu_mem_gb,
                        expected_minutes,
                    },
                    scope,
                };
                let id = ops::issue(session, &request, now)?;
                Ok((format!("issued order {id}"), json!({"id": id})))
            })
        }
        OrderCommand::Claim { id, acting } => with_session(&acting, |session| {
            let outcome = ops::claim(session, &id, now)?;
            let result = outcome.result();
            Ok(match outcome {
                ClaimOutcome::Claimed { id, .. } => (
                    format!("claimed {id}"),
                    json!({"id": id, "outcome": result}),
                ),
                ClaimOutcome::LostRace { id, holder } => (
                    format!("{id} went to {holder}, whose claim won the race"),
                    json!({"id": id, "outcome": result, "holder": holder}),
                ),
            })
        }),
        OrderCommand::Release { id, acting, note } => with_session(&acting, |session| {
            let state = ops::release(session, &id, note.as_deref(), now)?;
            Ok((format!("released {id}"), json!({"id": id, "state": state})))
        }),
        OrderCommand::Progress { id, text, acting } => with_session(&acting, |session| {
            ops::progress(session, &id, &text, now)?;
            Ok((format!("progress on {id} recorded"), json!({"id": id})))
        }),
        OrderCommand::Submit {
            id,
            acting,
            git_ref,
            handin,
            summary,
        } => with_session(&acting, |session| {
            let request = SubmitRequest {
                handin,
                git_ref,
                summary,
            };
            let state = ops::submit(session, &id, &request, now)?;
            Ok((
                format!("submitted {id}: it is {state}"),
                json!({"id": id, "state": state}),
            ))
        }),
        OrderCommand::Review {
            id,
            verdict,
            acting,
            notes,
        } => with_session(&acting, |session| {
            let verdict = match verdict {
                VerdictArg::Accept => Verdict::Accept,
                VerdictArg::Changes => Verdict::Changes,
            };
            let state = ops::review(session, &id, verdict, notes.as_deref(), now)?;
            Ok((
                format!("reviewed {id}: it is {state}"),
                json!({"id": id, "state": state}),
            ))
        }),
        OrderCommand::Cancel { id, acting, note } => with_session(&acting, |session| {
            let state = ops::cancel(session, &id, note.as_deref(), now)?;
            Ok((format!("cancelled {id}"), json!({"id": id, "state": state})))
        }),
    }
}

pub fn run_work(cmd: WorkCommand) -> anyhow::Result<ExitCode> {
    let now = clock::now();
    match cmd {
        WorkCommand::HandIn {
            acting,
            order,
            git_ref,
            summary,
        } => with_session(&acting, |session| {
            let handin = ops::hand_in(session, &order, &git_ref, &summary, now)?;
            Ok((
                format!("hand-in {handin} for {order} recorded"),
                json!({"order": order, "handin": handin}),
            ))
        }),
    }
}

//! `ferry talk post|read`: the human talks to the fleet (and an agent, with `--as`), on the
//! same library functions as the `ferry_talk` tool.

use std::process::ExitCode;

use clap::Subcommand;
use ferry_mcp_core::channel::ops::talk::{self as ops, PostRequest, ReadRequest};
use serde_json::json;

use crate::clock;
use crate::common::{Acting, with_session};
use crate::display;

#[derive(Debug, Subcommand)]
pub enum TalkCommand {
    /// Post a message to an agent, to `all`, or (as an agent) to `master`.
    Post {
        /// The text (quote it).
        text: String,
        #[command(flatten)]
        acting: Acting,
        #[arg(long)]
        to: String,
        /// The id of the message this answers.
        #[arg(long)]
        reply_to: Option<String>,
    },
    /// Read the messages you have not read yet, oldest first; they are marked read.
    Read {
        #[command(flatten)]
        acting: Acting,
        /// Leave them unread.
        #[arg(long)]
        peek: bool,
        /// Every message after this cursor, read or not.
        #[arg(long)]
        since: Option<String>,
        /// At most this many messages (default: a page of 20, as the tools give).
        #[arg(long, value_parser = clap::value_parser!(u32).range(1..), conflicts_with = "all")]
        limit: Option<u32>,
        /// Every message in one read (no page).
        #[arg(long)]
        all: bool,
        /// Go on after an earlier page (the cursor it printed after `more:`).
        #[arg(long, conflicts_with = "since")]
        after: Option<String>,
    },
}

pub fn run(cmd: TalkCommand) -> anyhow::Result<ExitCode> {
    let now = clock::now();
    match cmd {
        TalkCommand::Post {
            text,
            acting,
            to,
            reply_to,
        } => with_session(&acting, |session| {
            let request = PostRequest { to, text, reply_to };
            let id = ops::post(session, &request, now)?;
            Ok((format!("posted {id}"), json!({ "id": id })))
        }),
        TalkCommand::Read {
            acting,
            peek,
            since,
            limit,
            all,
            after,
        } => {
            let work = |session: &mut ferry_mcp_core::channel::session::Session| {
                let request = ReadRequest {
                    peek,
                    since: after.or(since),
                    limit: crate::common::page_limit(all, limit),
                    receipts: 5,
                };
                let result = ops::read(session, &request, &mut |_| true, now)?;
                let mut lines = Vec::new();
                if result.messages.is_empty() {
                    lines.push("no new messages".to_owned());
                }
                for message in &result.messages {
                    lines.push(format!(
                        "{} {} -> {}: {}{}{}",
                        message.id,
                        message.from,
                        message.to,
                        display::escape(&message.text),
                        if message.long { " [...]" } else { "" },
                        message
                            .void
                            .as_ref()
                            .map(|why| format!(" (void: that takeover {why})"))
                            .unwrap_or_default()
                    ));
                }
                for receipt in &result.sent {
                    lines.push(format!(
                        "your {} to {}: read by {}; unread by {}{}",
                        receipt.id,
                        receipt.to,
                        names(&receipt.read),
                        names(&receipt.unread),
                        if receipt.more_unread { " and more" } else { "" }
                    ));
                }
                if let Some(why) = result.unmarked {
                    lines.push(format!("(left unread: {why})"));
                }
                lines.push(format!("next: {}", result.next));
                if result.more {
                    lines.push(format!("more: --after {}", result.next));
                }
                let json = serde_json::to_value(&result).expect("a read serializes");
                Ok((lines.join("\n"), json))
            };
            // A peek writes nothing, so it needs no key: the person at the keyboard reads as
            // an observer where this machine holds neither the agent's key nor the master's.
            if peek {
                crate::common::with_reading_session(&acting, work)
            } else {
                with_session(&acting, work)
            }
        }
    }
}

fn names(list: &[ferry_mcp_core::channel::log::names::AgentName]) -> String {
    if list.is_empty() {
        return "nobody".into();
    }
    list.iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join(", ")
}

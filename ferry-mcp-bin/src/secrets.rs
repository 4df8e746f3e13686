//! `ferry channel secret send|get|list`: a named secret for one agent, sealed to its key. The
//! value is read from stdin, never from an argument (arguments show in process lists and shell
//! history), and printed only by `get`, on the recipient's machine, which names its sender on
//! stderr.

use std::io::{Read as _, Write as _};
use std::process::ExitCode;

use anyhow::Context as _;
use clap::Subcommand;
use ferry_mcp_core::channel::log::names::AgentName;
use ferry_mcp_core::channel::ops::secrets as ops;
use serde_json::json;

use crate::common::{Acting, agent_name, open_session, save_or_warn, with_session};
use crate::{clock, display};

#[derive(Debug, Subcommand)]
pub enum SecretCommand {
    /// Send a named secret to one agent; the value is read from stdin.
    Send {
        name: String,
        #[arg(long, value_parser = agent_name)]
        to: AgentName,
        #[command(flatten)]
        acting: Acting,
    },
    /// Print a secret sent to the agent named by --as (on that agent's machine).
    Get {
        name: String,
        #[command(flatten)]
        acting: Acting,
    },
    /// The names of the secrets sent to the agent named by --as.
    List {
        #[command(flatten)]
        acting: Acting,
    },
}

pub fn run(cmd: SecretCommand) -> anyhow::Result<ExitCode> {
    let now = clock::now();
    match cmd {
        SecretCommand::Send { name, to, acting } => {
            let mut value = Vec::new();
            std::io::stdin()
                .lock()
                .read_to_end(&mut value)
                .context("reading the secret from stdin")?;
            if value.ends_with(b"\n") {
                value.pop();
                if value.ends_with(b"\r") {
                    value.pop();
                }
            }
            with_session(&acting, |session| {
                let id = ops::send(session, &name, &to, &value, now)?;
                Ok((
                    format!("sent secret {name} to {to} (sealed to its key; {id})"),
                    json!({ "id": id, "name": name, "to": to }),
                ))
            })
        }
        SecretCommand::Get { name, acting } => {
            let mut session = open_session(&acting)?;
            let value = ops::get(&mut session, &name, now);
            save_or_warn(&mut session);
            let opened = value?;
            // Who sent it goes to stderr: stdout is the value as it is, for a script to read.
            eprintln!(
                "secret {} from {} ({})",
                display::escape(&name),
                display::escape(opened.from.as_str()),
                display::escape(&opened.id)
            );
            let mut out = std::io::stdout().lock();
            out.write_all(&opened.value).context("writing to stdout")?;
            out.write_all(b"\n").context("writing to stdout")?;
            Ok(ExitCode::SUCCESS)
        }
        SecretCommand::List { acting } => with_session(&acting, |session| {
            let names = ops::list(session, now)?;
            let text = if names.is_empty() {
                "no secrets".to_owned()
            } else {
                names.join("\n")
            };
            Ok((text, json!({ "names": names })))
        }),
    }
}

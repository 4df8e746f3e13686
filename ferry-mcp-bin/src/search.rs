//! `ferry search`: order titles, decisions and messages that hold a phrase, on the same library
//! function as the admin group's `ferry_search`.

use std::process::ExitCode;

use clap::Args;
use ferry_mcp_core::channel::ops::search::{self as ops, SearchRequest};

use crate::clock;
use crate::common::{Acting, with_session};

#[derive(Debug, Args)]
pub struct SearchArgs {
    /// The phrase (2 to 200 characters; case does not matter).
    query: String,
    #[command(flatten)]
    acting: Acting,
    /// The `next` of the previous page.
    #[arg(long)]
    cursor: Option<String>,
}

pub fn run(args: SearchArgs) -> anyhow::Result<ExitCode> {
    let now = clock::now();
    with_session(&args.acting, |session| {
        let request = SearchRequest {
            query: args.query.clone(),
            cursor: args.cursor.clone(),
            limit: ops::MAX_PAGE,
        };
        let page = ops::search(session, &request, now)?;
        let mut lines: Vec<String> = page
            .hits
            .iter()
            .map(|hit| format!("{:<8} {:<12} {}", hit.kind, hit.id, hit.line))
            .collect();
        if lines.is_empty() {
            lines.push(format!("nothing holds {:?}", args.query));
        }
        lines.push(match &page.next {
            Some(next) => format!(
                "{} of {}; more with --cursor {next}",
                page.hits.len(),
                page.total
            ),
            None => format!("{} in all", page.total),
        });
        let json = serde_json::to_value(&page).expect("a page serializes");
        Ok((lines.join("\n"), json))
    })
}

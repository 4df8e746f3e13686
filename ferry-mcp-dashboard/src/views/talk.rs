//! Talk: the fleet's messages (with who read the human's own), and posting as the human.

use ferry_mcp_core::channel::fold::state::since::Since;
use ferry_mcp_core::channel::ops::talk::{self, ReadRequest};
use maud::{Markup, html};

use super::{ago, base, csrf, failed, passphrase, shown};
use crate::app::Visit;
use crate::form::{Fields, encode};

/// Messages on one page.
const PAGE: usize = 50;

pub(super) fn view(visit: &Visit<'_>, fields: &Fields) -> Markup {
    let base = base(visit);
    let read = visit.read_session().and_then(|mut session| {
        // From the first message (or the cursor of the page before), read or not; the
        // human's marker stays where it is.
        let since = fields.text("since").map_or_else(
            || {
                Since {
                    generation: session.generation(),
                    counter: 0,
                }
                .to_string()
            },
            str::to_owned,
        );
        let request = ReadRequest {
            peek: true,
            since: Some(since),
            limit: PAGE,
            receipts: 10,
        };
        let result = talk::read(&mut session, &request, &mut |_| true, visit.now)
            .map_err(|err| err.to_string());
        let _ = session.save();
        result
    });
    html! {
        section data-live id="talk" aria-labelledby="h-messages" {
            h2 id="h-messages" { "Messages" }
            @match &read {
                Ok(read) => {
                    @if read.messages.is_empty() { p { "No message." } }
                    ol.messages {
                        @for message in &read.messages {
                            li id=(format!("m-{}", message.id)) {
                                p.meta { strong { (shown(message.from.as_str())) } " to " (shown(&message.to)) ", " (ago(visit.now, message.time)) }
                                p.text { (shown(&message.text)) @if message.long { " …" } }
                                @if let Some(void) = &message.void { p.void { "did not happen: " (shown(void)) } }
                            }
                        }
                    }
                    @if read.more {
                        p { a href=(format!("{base}talk?since={}", encode(&read.next.to_string()))) { "Later messages" } }
                    }
                    @if !read.sent.is_empty() {
                        h3 { "Who read your messages" }
                        ul.receipts {
                            @for receipt in &read.sent {
                                li { (shown(&receipt.id)) " to " (shown(&receipt.to)) ": read by "
                                    @if receipt.read.is_empty() { "nobody yet" } @else { (receipt.read.iter().map(|name| shown(name.as_str())).collect::<Vec<_>>().join(", ")) }
                                    @if !receipt.unread.is_empty() { "; not yet by " (receipt.unread.iter().map(|name| shown(name.as_str())).collect::<Vec<_>>().join(", ")) }
                                }
                            }
                        }
                    }
                }
                Err(err) => { (failed("talk", err)) }
            }
        }
        section aria-labelledby="h-post" {
            h2 id="h-post" { "Post as the human" }
            form method="post" action=(format!("{base}talk")) {
                (csrf(visit))
                label for="t-to" { "To (an agent, or all)" }
                input id="t-to" name="to" value="all" required maxlength="64" autocomplete="off";
                label for="t-text" { "Message" }
                textarea id="t-text" name="text" rows="3" required {}
                (passphrase(visit, "t-passphrase"))
                button type="submit" { "Post" }
            }
        }
    }
}

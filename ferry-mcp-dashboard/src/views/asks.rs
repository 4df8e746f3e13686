//! Asks: what the agents ask the human, pending first, with the agent's recommendation and
//! reasoning; approve, reject, or send back with a note.

use ferry_mcp_core::channel::fold::state::asks::AskState;
use ferry_mcp_core::channel::ops::asks;
use maud::{Markup, html};

use super::{ago, base, csrf, failed, passphrase, shown};
use crate::app::Visit;
use crate::form::encode;

pub(super) fn view(visit: &Visit<'_>) -> Markup {
    let base = base(visit);
    let listed = visit.read_session().and_then(|mut session| {
        let list = asks::list(&mut session, None, false, visit.now).map_err(|err| err.to_string());
        let _ = session.save();
        list
    });
    let mut listed = match listed {
        Ok(listed) => listed,
        Err(err) => return failed("the asks", &err),
    };
    // Pending first, newest first within each (the list is newest first already).
    listed.sort_by_key(|ask| ask.state != AskState::Pending);
    html! {
        section data-live id="asks" aria-label="Asks" {
            @if listed.is_empty() { p { "No agent asked anything yet." } }
            @for ask in &listed {
                article.ask id=(format!("ask-{}", ask.id)) aria-labelledby=(format!("t-{}", ask.id)) {
                    h2 id=(format!("t-{}", ask.id)) { (shown(&ask.title)) }
                    p.meta { (shown(ask.by.as_str())) ", " (ago(visit.now, ask.time)) " · " strong { (ask.state.as_str().replace('_', " ")) } }
                    p { "Recommends: " (shown(&ask.recommendation)) }
                    @if !ask.reasoning.is_empty() { p.reasoning { (shown(&ask.reasoning)) } }
                    @if let Some(note) = &ask.note { p { "Note: " (shown(note)) } }
                    @if ask.state == AskState::Pending {
                        form method="post" action=(format!("{base}asks/{}/answer", encode(&ask.id))) {
                            (csrf(visit))
                            label for=(format!("n-{}", ask.id)) { "Note (needed to send it back)" }
                            input id=(format!("n-{}", ask.id)) name="note" maxlength="500";
                            (passphrase(visit, &format!("p-{}", ask.id)))
                            button type="submit" name="verdict" value="approve" { "Approve" }
                            button type="submit" name="verdict" value="reject" { "Reject" }
                            button type="submit" name="verdict" value="send_back" { "Send back" }
                        }
                    }
                }
            }
        }
    }
}

//! JSON-RPC batch arrays (served only under 2025-03-26), and the batches that wait for a call
//! that answers later (ADR 0027).
//!
//! A batch is answered with one array, its answers in the order of its requests. When the host
//! takes answers later, a call inside a batch takes a ticket like any other: the batch is then
//! held, a slot for each answer, until the last call it waits for answers ([`Server::complete`])
//! or is cancelled, and only then does its array go out. A cancelled call is left out of the
//! array (the spec: no response for a cancelled request); a batch whose every answer was left
//! out sends nothing. Progress notifications of its calls go out as they come, before the
//! array. So a call that hangs holds its own batch, never the connection.

use super::message::Incoming;
use super::wire::{self, Id, RpcError};
use super::{ProtocolVersion, Served, Server};
use crate::time::Timestamp;
use crate::tool::Ticket;

/// A batch waiting for some of its calls' answers.
#[derive(Debug)]
pub(super) struct PendingBatch {
    /// Its answers in the order of its requests (a cancelled call has no slot).
    slots: Vec<Slot>,
}

#[derive(Debug)]
enum Slot {
    /// An answer line.
    Answered(String),
    /// The call holding this ticket has not answered yet.
    Waiting(Ticket),
}

impl PendingBatch {
    fn position(&self, ticket: Ticket) -> Option<usize> {
        self.slots
            .iter()
            .position(|slot| matches!(slot, Slot::Waiting(waiting) if *waiting == ticket))
    }

    fn is_whole(&self) -> bool {
        !self
            .slots
            .iter()
            .any(|slot| matches!(slot, Slot::Waiting(_)))
    }

    /// The array line of a whole batch; `None` when it holds no answer.
    fn into_line(self) -> Option<String> {
        let answers: Vec<String> = self
            .slots
            .into_iter()
            .filter_map(|slot| match slot {
                Slot::Answered(line) => Some(line),
                Slot::Waiting(_) => None,
            })
            .collect();
        (!answers.is_empty()).then(|| format!("[{}]", answers.join(",")))
    }
}

impl Server {
    /// A JSON-RPC batch array: served only when 2025-03-26 was negotiated (the one revision
    /// that requires batches); otherwise one `-32600`.
    pub(super) fn batch(&mut self, items: Vec<Incoming>, now: Timestamp, out: &mut Vec<String>) {
        if !self
            .negotiated
            .is_some_and(ProtocolVersion::accepts_batches)
        {
            let error = RpcError::new(
                wire::INVALID_REQUEST,
                "invalid request: batches are not supported in this protocol version",
            );
            out.push(wire::error_line(&Id::null(), &error));
            return;
        }
        if items.is_empty() {
            out.push(wire::error_line(
                &Id::null(),
                &RpcError::new(wire::INVALID_REQUEST, "invalid request: empty batch"),
            ));
            return;
        }
        let mut slots = Vec::new();
        for item in items {
            match item {
                Incoming::Batch(_) => unreachable!("a batch element is never a batch"),
                // 2025-03-26: "the initialize request MUST NOT be part of a JSON-RPC batch".
                Incoming::Request { id, method, .. } if method == "initialize" => {
                    slots.push(Slot::Answered(wire::error_line(
                        &id,
                        &RpcError::new(
                            wire::INVALID_REQUEST,
                            "invalid request: initialize cannot be part of a batch",
                        ),
                    )));
                }
                Incoming::Request {
                    id,
                    method,
                    params,
                    progress_token,
                } => {
                    let served = self.request(
                        &id,
                        &method,
                        params.as_ref(),
                        progress_token.as_ref(),
                        now,
                        out,
                    );
                    slots.push(match served {
                        Served::Now(line) => Slot::Answered(line),
                        Served::Later(ticket) => Slot::Waiting(ticket),
                    });
                }
                Incoming::Invalid { id, reason } => {
                    slots.push(Slot::Answered(wire::error_line(
                        &id,
                        &RpcError::new(wire::INVALID_REQUEST, reason),
                    )));
                }
                incoming => self.handle_incoming(incoming, now, out),
            }
        }
        // A call that a `notifications/cancelled` later in this batch cancelled has left the
        // table of pending calls: it gets no answer.
        slots.retain(|slot| match slot {
            Slot::Answered(_) => true,
            Slot::Waiting(ticket) => self.pending.iter().any(|call| call.ticket == *ticket),
        });
        let batch = PendingBatch { slots };
        if batch.is_whole() {
            out.extend(batch.into_line());
        } else {
            self.batches.push(batch);
        }
    }

    /// Where the answer of the call `ticket` goes now that it is there (`Some`), or that the
    /// call was cancelled (`None`): out alone when the call was not in a batch; into its slot
    /// otherwise, and out is the batch's array when that was the last answer it waited for.
    pub(super) fn settle(&mut self, ticket: Ticket, answer: Option<String>) -> Option<String> {
        let Some((index, at)) = self
            .batches
            .iter()
            .enumerate()
            .find_map(|(index, batch)| Some((index, batch.position(ticket)?)))
        else {
            return answer;
        };
        let batch = &mut self.batches[index];
        match answer {
            Some(line) => batch.slots[at] = Slot::Answered(line),
            None => {
                batch.slots.remove(at);
            }
        }
        if !batch.is_whole() {
            return None;
        }
        self.batches.remove(index).into_line()
    }
}

//! The cancellations our client sent, as the stdin reader sees them (ADR 0021).
//!
//! The stdio loop is sequential: while a gateway call waits on its external server, the core
//! reads nothing, so a `notifications/cancelled` for that call would reach it only after the
//! call. The reader thread notes each cancellation here as it reads it (the core's
//! `protocol::cancelled_request` reads the line), and a waiting call looks for its own id, to
//! cancel it downstream and stop waiting.

use std::collections::VecDeque;
use std::sync::{Mutex, PoisonError};

use ferry_mcp_core::protocol::{self, wire::Id};

/// Cancellations kept at most: a client that cancels what is not running cannot grow this.
const KEPT: usize = 64;

/// The requests our client cancelled that no call has taken yet.
#[derive(Debug, Default)]
pub struct Cancels {
    seen: Mutex<VecDeque<Id>>,
}

impl Cancels {
    /// Notes the request `line` cancels, if it is a cancellation.
    pub fn note(&self, line: &[u8]) {
        // Most lines are not: only those that name the method are parsed.
        let method = b"notifications/cancelled";
        if !line.windows(method.len()).any(|window| window == method) {
            return;
        }
        if let Some(id) = protocol::cancelled_request(line) {
            let mut seen = self.seen.lock().unwrap_or_else(PoisonError::into_inner);
            if seen.len() == KEPT {
                seen.pop_front();
            }
            seen.push_back(id);
        }
    }

    /// Whether `request` was cancelled (and forgets it).
    pub fn take(&self, request: &Id) -> bool {
        let mut seen = self.seen.lock().unwrap_or_else(PoisonError::into_inner);
        let Some(at) = seen.iter().position(|id| id.same_as(request)) else {
            return false;
        };
        seen.remove(at);
        true
    }
}

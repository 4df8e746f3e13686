//! The channel store implements the tools' port ([`crate::port`]): each method is one operation
//! of this module's domains, called with the session, so a tool and a `ferry` command still run
//! the same function.

use super::super::session::Session;
use super::asks::{AskView, AsksError, RaiseRequest};
use super::fleet::{Digest, DigestLimits, Joined};
use super::legacy::{
    Acceptance, BoardCounts, Memory, Page, PageRequest, TaskFilter, TaskRow, VerdictRow,
};
use super::orders::{
    ClaimOutcome, ListRequest, OrderDetail, OrderList, OrdersError, SubmitRequest,
};
use super::primary::{Liveness, PrimaryError, PrimaryStatus, Takeover};
use super::releases::{self, Applied, ReleasesError, UpdateCheck};
use super::search::{SearchError, SearchPage, SearchRequest};
use super::status::Status;
use super::talk::{MessageView, PostRequest, ReadRequest, ReadResult, TalkError};
use super::{OpsError, asks, fleet, legacy, orders, primary, search, status, talk};
use crate::channel::fold::levels::Operation;
use crate::channel::fold::state::orders::{OrderState, Verdict};
use crate::channel::log::names::AgentName;
use crate::port::{self, HeavyQueue};
use crate::time::Timestamp;

impl port::Seat for Session {
    fn me(&self) -> Option<AgentName> {
        self.actor().agent().cloned()
    }
    fn machine(&self) -> String {
        Session::machine(self).to_owned()
    }
    fn authorize(&self, operation: Operation, now: Timestamp) -> Result<(), OpsError> {
        Session::authorize(self, operation, None, now).map(|_| ())
    }
    fn refresh(&mut self, now: Timestamp) -> u64 {
        Session::refresh(self, now)
    }
    fn note_alive(&mut self, now: Timestamp) {
        primary::note_alive(self, now);
    }
}

impl port::Orders for Session {
    fn claim(&mut self, id: &str, now: Timestamp) -> Result<ClaimOutcome, OrdersError> {
        orders::claim(self, id, now)
    }
    fn release_order(
        &mut self,
        id: &str,
        note: Option<&str>,
        now: Timestamp,
    ) -> Result<OrderState, OrdersError> {
        orders::release(self, id, note, now)
    }
    fn progress(
        &mut self,
        id: &str,
        text: &str,
        now: Timestamp,
    ) -> Result<OrderState, OrdersError> {
        orders::progress(self, id, text, now)
    }
    fn hand_in(
        &mut self,
        id: &str,
        git_ref: &str,
        summary: &str,
        now: Timestamp,
    ) -> Result<String, OrdersError> {
        orders::hand_in(self, id, git_ref, summary, now)
    }
    fn names_handin(&mut self, order: &str, reference: &str) -> bool {
        orders::names_handin(self, order, reference)
    }
    fn submit(
        &mut self,
        id: &str,
        request: &SubmitRequest,
        now: Timestamp,
    ) -> Result<OrderState, OrdersError> {
        orders::submit(self, id, request, now)
    }
    fn review(
        &mut self,
        id: &str,
        verdict: Verdict,
        notes: Option<&str>,
        now: Timestamp,
    ) -> Result<OrderState, OrdersError> {
        orders::review(self, id, verdict, notes, now)
    }
    fn list_orders(
        &mut self,
        request: &ListRequest,
        now: Timestamp,
    ) -> Result<OrderList, OrdersError> {
        orders::list(self, request, now)
    }
    fn show_order(
        &mut self,
        id: &str,
        queue: Option<&dyn HeavyQueue>,
        now: Timestamp,
    ) -> Result<OrderDetail, OrdersError> {
        orders::show(self, id, queue, now)
    }
    fn order_body(&mut self, id: &str, now: Timestamp) -> Result<String, OrdersError> {
        orders::body_text(self, id, now)
    }
    fn board_counts(&mut self, now: Timestamp) -> Result<BoardCounts, OrdersError> {
        legacy::board_counts(self, now)
    }
    fn tasks(
        &mut self,
        filter: Option<TaskFilter>,
        page: PageRequest,
        now: Timestamp,
    ) -> Result<Page<TaskRow>, OrdersError> {
        legacy::tasks(self, filter, page, now)
    }
    fn board_changes(
        &mut self,
        walk: usize,
        page: PageRequest,
        now: Timestamp,
    ) -> Result<Page<TaskRow>, OrdersError> {
        legacy::board_changes(self, walk, page, now)
    }
    fn verdicts(
        &mut self,
        walk: usize,
        page: PageRequest,
        now: Timestamp,
    ) -> Result<Page<VerdictRow>, OrdersError> {
        legacy::verdicts(self, walk, page, now)
    }
    fn acceptance(
        &mut self,
        page: PageRequest,
        now: Timestamp,
    ) -> Result<Page<Acceptance>, OrdersError> {
        legacy::acceptance(self, page, now)
    }
}

impl port::Talk for Session {
    fn post(&mut self, request: &PostRequest, now: Timestamp) -> Result<String, TalkError> {
        talk::post(self, request, now)
    }
    fn read(
        &mut self,
        request: &ReadRequest,
        fits: &mut dyn FnMut(&MessageView) -> bool,
        now: Timestamp,
    ) -> Result<ReadResult, TalkError> {
        talk::read(self, request, fits, now)
    }
    fn message_text(&mut self, id: &str, now: Timestamp) -> Result<String, TalkError> {
        talk::message_text(self, id, now)
    }
}

impl port::Primary for Session {
    fn primary_status(&mut self, now: Timestamp) -> Result<PrimaryStatus, PrimaryError> {
        primary::status(self, now)
    }
    fn standby(&mut self, now: Timestamp) -> Result<PrimaryStatus, PrimaryError> {
        primary::standby(self, now)
    }
    fn takeover(&mut self, now: Timestamp) -> Result<Takeover, PrimaryError> {
        primary::takeover(self, now)
    }
    fn release_primary(&mut self, now: Timestamp) -> Result<(), PrimaryError> {
        primary::release(self, now)
    }
    fn liveness(&self, agent: &AgentName, now: Timestamp) -> Option<(u64, Liveness)> {
        primary::liveness(self, agent, now)
    }
    fn is_silent(&self, agent: &AgentName, now: Timestamp) -> bool {
        primary::is_silent(self, agent, now)
    }
    fn memory(&mut self, page: PageRequest, now: Timestamp) -> Result<Memory, PrimaryError> {
        legacy::memory(self, page, now)
    }
}

impl port::Asks for Session {
    fn raise(&mut self, request: &RaiseRequest, now: Timestamp) -> Result<String, AsksError> {
        asks::raise(self, request, now)
    }
    fn ask(&mut self, id: &str, now: Timestamp) -> Result<AskView, AsksError> {
        asks::show(self, id, now)
    }
    fn asks(
        &mut self,
        by: Option<&AgentName>,
        pending_only: bool,
        now: Timestamp,
    ) -> Result<Vec<AskView>, AsksError> {
        asks::list(self, by, pending_only, now)
    }
}

impl port::Fleet for Session {
    fn join(&mut self, now: Timestamp) -> Result<Joined, OpsError> {
        fleet::join(self, now)
    }
    fn catchup(
        &mut self,
        since: Option<&str>,
        limits: DigestLimits,
        now: Timestamp,
    ) -> Result<Digest, OpsError> {
        fleet::catchup(self, since, limits, now)
    }
    fn search(
        &mut self,
        request: &SearchRequest,
        now: Timestamp,
    ) -> Result<SearchPage, SearchError> {
        search::search(self, request, now)
    }
    fn status(&mut self, now: Timestamp) -> Result<Status, OpsError> {
        status::status_of(self, now)
    }
}

impl port::Updates for Session {
    fn update_check(&mut self, now: Timestamp) -> Result<UpdateCheck, ReleasesError> {
        releases::check(self, now)
    }
    fn update_apply(
        &mut self,
        version: Option<&str>,
        now: Timestamp,
    ) -> Result<Applied, ReleasesError> {
        releases::apply(self, version, now)
    }
}

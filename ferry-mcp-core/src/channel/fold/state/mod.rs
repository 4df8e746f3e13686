//! The folded state of a channel: identity plus one pure fold per domain (orders, and the
//! others as they come), built from verified entries alone.
//!
//! Why one value: every operation and every machine must agree on what the entries mean, and
//! the machine keeps this value between processes (ADR 0004), so opening a channel costs only
//! what is new. Folds are pure functions of the set of entries: where a fold stops and resumes
//! does not change the result (a test holds folding the kept state plus the new entries equal
//! to folding everything).
//!
//! Authority over time (ADR 0005) lives here: for every agent entry the fold knows its
//! effective master position (the highest `seen` of its log so far) and its effective time,
//! and holds an entry whose position this machine has not folded yet, reading its log again
//! from there once the master's entries arrive ([`ChannelState::take_replays`]).

pub mod asks;
pub mod ids;
pub mod lazy;
pub mod orders;
pub mod primary;
pub mod race;
pub mod releases;
pub mod secrets;
pub mod since;
pub mod tails;
pub mod talk;

use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::collections::BTreeMap;

use crate::channel::fold::identity::{
    self, FoldProblem, FoldProblemKind, Identity, MasterEntry, MasterPos, Seat,
};
use crate::channel::log::entry::VerifiedEntry;
use crate::channel::log::keys::PublicKey;
use crate::channel::log::names::{AgentName, ProjectId};
use crate::channel::log::reader::LogId;
use crate::time::Timestamp;
pub use ids::EntryId;
use lazy::Lazy;
pub use orders::OrderBoard;
pub use orders::RecordSink;
pub use talk::Talk;

/// The field of an agent entry's body naming the master position its author had folded.
pub const SEEN_FIELD: &str = "seen";

/// Where an agent's log stands in master order and time (ADR 0005).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
struct Track {
    pos: MasterPos,
    time: Timestamp,
}

/// A log whose entries wait for master entries this machine has not folded.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
struct Held {
    /// The first entry held; this and every later entry of the log are read again.
    from_seq: u64,
    /// The master position it waits for.
    needs: MasterPos,
}

/// A log whose key does not hold its author's name, as the domain folds see it (ADR 0016).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
struct Unseated {
    /// The first entry the domain folds did not receive.
    from_seq: u64,
    /// The key holds the name now: the log is read again from `from_seq`, and until then
    /// its entries from there are not fed one by one.
    replay: bool,
}

/// A log to read again from `from_seq` and feed (see [`ChannelState::take_replays`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Replay {
    pub log: LogId,
    pub from_seq: u64,
}

impl ChannelState {
    /// Whether everything must be folded again (taken): start from [`ChannelState::refolded`]
    /// and feed every log from its start.
    pub fn take_refold(&mut self) -> bool {
        self.identity.take_refold()
    }

    /// An empty state that knows the handovers this one folded, to fold everything again.
    pub fn refolded(&self) -> ChannelState {
        let genesis = self.identity.masters()[0];
        let mut fresh = ChannelState::new(self.project().clone(), genesis);
        fresh.identity =
            Identity::with_handovers(self.project().clone(), genesis, &self.identity.handovers());
        fresh
    }
}

/// One entry as the domain folds see it: who made it, what it is called, and where it stands
/// in master order and time.
#[derive(Debug, Clone, Copy)]
pub struct Acted<'a> {
    pub entry: &'a VerifiedEntry,
    /// The author's name, or `master`.
    pub author: &'a AgentName,
    pub key: &'a PublicKey,
    /// Whether the master wrote it (and it counts as the master's).
    pub by_master: bool,
    /// The effective master position (for the master's own entries: their position).
    pub pos: MasterPos,
    /// The effective time.
    pub time: Timestamp,
    /// When this machine first folded it (for liveness only).
    pub arrived: Timestamp,
    /// This machine's fold counter at this entry.
    pub counter: u64,
    pub id: &'a EntryId,
}

impl Acted<'_> {
    pub fn body(&self) -> &Value {
        self.entry.body()
    }
    pub fn kind(&self) -> &str {
        self.entry.kind()
    }
}

/// A lazy fold was read before the session paged it in: the session's bug, answered as an
/// error instead of a crash (the session loads what it hands out: `Session::load`, `board`,
/// `talk`, `whole_state`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum NotPaged {
    #[error("the order board is not paged in")]
    Board,
    #[error("talk is not paged in")]
    Talk,
}

/// The folded state of one channel. See the module docs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ChannelState {
    identity: Identity,
    tracks: BTreeMap<LogId, Track>,
    held: BTreeMap<LogId, Held>,
    /// Logs whose key does not hold their author's name: from this seq on, their entries have
    /// not reached the domain folds (ADR 0016). Read again once the key holds the name.
    unseated: BTreeMap<LogId, Unseated>,
    /// Held logs whose master position has now been folded.
    #[serde(skip)]
    replays: Vec<Replay>,
    /// How many entries this machine has folded.
    counter: u64,
    /// Stamps every change of a domain fold, each with its own number: the positions `since`
    /// cursors name (ADR 0007).
    changes: Changes,
    /// Kept in a section of its own, loaded by the session when first needed ([`lazy::Lazy`]).
    #[serde(skip)]
    orders: Lazy<OrderBoard>,
    #[serde(skip)]
    talk: Lazy<Talk>,
    /// A fold step found a lazy fold it needed not loaded (the session's paging missed it):
    /// the entry was not folded, so the session folds everything again.
    #[serde(skip)]
    unpaged: bool,
    pub secrets: secrets::Secrets,
    pub leadership: primary::Leadership,
    pub asks: asks::Asks,
    /// The master's release approvals and revocations (ADR 0020).
    pub releases: releases::Releases,
    /// When each agent was last heard from here (ADR 0005: the earlier of its entry's own time
    /// and when this machine first folded it). Liveness only: nothing else reads it.
    heard: BTreeMap<AgentName, Timestamp>,
    /// The end of each author's last text, for the guard's seam check (ADR 0015).
    tails: tails::Tails,
    problems: Vec<FoldProblem>,
    dropped_problems: u64,
}

impl ChannelState {
    /// An empty state for `project`, whose root of trust is `genesis_master`.
    pub fn new(project: ProjectId, genesis_master: PublicKey) -> Self {
        Self {
            identity: Identity::new(project, genesis_master),
            tracks: BTreeMap::new(),
            held: BTreeMap::new(),
            unseated: BTreeMap::new(),
            replays: Vec::new(),
            counter: 0,
            changes: Changes::default(),
            orders: Lazy::default(),
            talk: Lazy::default(),
            unpaged: false,
            secrets: secrets::Secrets::default(),
            leadership: primary::Leadership::default(),
            asks: asks::Asks::default(),
            releases: releases::Releases::default(),
            heard: BTreeMap::new(),
            tails: tails::Tails::default(),
            problems: Vec::new(),
            dropped_problems: 0,
        }
    }

    pub fn identity(&self) -> &Identity {
        &self.identity
    }

    /// The order board, or [`NotPaged`] while it is still in the kept state: the session
    /// loads it before it hands the state out for it (`Session::board`, `Session::load`); a
    /// fold never reads the store.
    pub fn orders(&self) -> Result<&OrderBoard, NotPaged> {
        self.orders.get().ok_or(NotPaged::Board)
    }

    /// Talk, or [`NotPaged`] while it is still in the kept state (see
    /// [`ChannelState::orders`]).
    pub fn talk(&self) -> Result<&Talk, NotPaged> {
        self.talk.get().ok_or(NotPaged::Talk)
    }

    /// Which lazy folds are loaded (or made here).
    pub fn loaded(&self) -> Sections {
        Sections {
            board: self.orders.is_loaded(),
            talk: self.talk.is_loaded(),
            times: self.identity.master_times_lazy().is_loaded(),
        }
    }

    /// The lazy folds not loaded among `wanted`.
    pub fn missing(&self, wanted: Sections) -> Sections {
        let loaded = self.loaded();
        Sections {
            board: wanted.board && !loaded.board,
            talk: wanted.talk && !loaded.talk,
            times: wanted.times && !loaded.times,
        }
    }

    /// Whether the order board is loaded (or made here): an open that needs no order reads
    /// none.
    pub fn orders_loaded(&self) -> bool {
        self.orders.is_loaded()
    }

    /// Whether a fold step found a lazy fold it needed not loaded since the last call (it
    /// folded nothing then): everything must be folded again.
    pub fn take_unpaged(&mut self) -> bool {
        // The board's mark is not taken: a state that found it is replaced, folded anew.
        let board = self.orders.get().is_some_and(OrderBoard::is_unpaged);
        std::mem::take(&mut self.unpaged) || board
    }

    /// Takes the order board the session read from the kept state.
    pub(crate) fn load_board(&mut self, board: OrderBoard) {
        self.orders.load(board);
    }

    /// Takes talk as the session read it from the kept state.
    pub(crate) fn load_talk(&mut self, talk: Talk) {
        self.talk.load(talk);
    }

    /// Talk, to page its messages out to the kept state or back in (what it is stays: see
    /// [`Talk::page_out`]); `None` while it is not loaded.
    pub(crate) fn talk_paging(&mut self) -> Option<&mut Talk> {
        self.talk.get_mut_paging()
    }

    /// Moves `reader`'s read-through over messages paged out (see [`Talk::advance_over`]):
    /// a change of talk, kept by the next save.
    pub(crate) fn talk_advance_over(
        &mut self,
        reader: &AgentName,
        older: &[talk::Message],
        upto: u64,
    ) -> bool {
        let identity = &self.identity;
        let Some(talk) = self.talk.get_mut_paging() else {
            return false;
        };
        let before = talk.read_through_of(reader);
        let go_on = talk.advance_over(reader, identity, older, upto);
        if talk.read_through_of(reader) != before {
            // Marked changed: the save keeps the new read-through.
            self.talk.get_mut();
        }
        go_on
    }

    /// Takes the master's times as the session read them from the kept state.
    /// The bytes of the master's times as the kept state holds them, if they are loaded.
    pub(crate) fn master_times_encoded(&mut self) -> Option<Result<Vec<u8>, String>> {
        self.identity.master_times_encoded()
    }

    pub(crate) fn load_master_times(&mut self, times: identity::MasterTimes) {
        self.identity.load_master_times(times);
    }

    /// Writes to `out` the board's records it does not hold yet.
    pub(crate) fn put_order_records(&mut self, out: &mut dyn RecordSink) -> Result<(), String> {
        match self.orders.get_mut() {
            Some(board) => board.put_records(out),
            None => Ok(()),
        }
    }

    /// The orders whole that folding `entry` reads and that are not in memory (their records
    /// are kept): the order it acts on, and those a seat it may change judges again. With
    /// whether they are paged in only to be judged again (then dropped after, if their view
    /// stands: [`ChannelState::drop_unchanged`]). A pure function of the entry and the briefs.
    pub fn orders_to_page(&self, entry: &VerifiedEntry) -> (Vec<EntryId>, bool) {
        use crate::channel::fold::identity::kinds;
        let Some(board) = self.orders.get() else {
            return (Vec::new(), false);
        };
        if let Some(id) = orders::touches(entry) {
            let ids = board.record_to_page(&id).map(|_| id).into_iter().collect();
            return (ids, false);
        }
        // Only what can change a seat: an entry that cannot (a repeated join, a grant or a
        // handover an agent wrote) pages nothing in, so junk costs no reads.
        let master = entry.author().is_master();
        let ids = match entry.kind() {
            kinds::ROSTER_JOIN if !self.identity.joins_anew(entry.author(), entry.key()) => {
                Vec::new()
            }
            kinds::ROSTER_JOIN | kinds::GRANT => match seat_change_of(entry) {
                Some(name) => board.to_page_for_seat(Some(&name)),
                None => Vec::new(),
            },
            kinds::MASTER_HANDOVER | kinds::MASTER_ACCEPT if master => board.to_page_for_seat(None),
            _ => Vec::new(),
        };
        (ids, true)
    }

    /// The digest of order `id`'s kept record, when it is to be paged in.
    pub fn record_to_page(&self, id: &EntryId) -> Option<[u8; 32]> {
        self.orders.get()?.record_to_page(id)
    }

    /// Takes order `id` whole from its record's bytes (checked against
    /// [`ChannelState::record_to_page`] by the session). Paging in changes no fold.
    pub(crate) fn page_in_order(&mut self, id: &EntryId, bytes: &[u8]) -> Result<(), String> {
        let changed = self.orders.changed();
        let result = match self.orders.get_mut() {
            Some(board) => board.page_in(id, bytes),
            None => Ok(()),
        };
        if !changed {
            self.orders.mark_kept();
        }
        result
    }

    /// Takes order `id` as gone (its record did not read), until everything is folded again.
    pub(crate) fn page_in_gone(&mut self, id: &EntryId) {
        if let Some(board) = self.orders.get_mut() {
            board.page_in_gone(id);
        }
    }

    /// Drops from memory the orders of `ids` that did not change after stamp `since` (paged in
    /// only to be judged again).
    pub(crate) fn drop_unchanged(&mut self, ids: &[EntryId], since: u64) {
        let changed = self.orders.changed();
        if let Some(board) = self.orders.get_mut() {
            board.drop_unchanged(ids, since);
        }
        if !changed {
            self.orders.mark_kept();
        }
    }

    /// The orders whose records are kept and not in memory.
    pub(crate) fn orders_not_resident(&self) -> Vec<EntryId> {
        self.orders
            .get()
            .map(OrderBoard::not_resident)
            .unwrap_or_default()
    }

    /// Every record is written anew by the next save (a new kept state).
    pub(crate) fn forget_order_records(&mut self) {
        if let Some(board) = self.orders.get_mut() {
            board.forget_records();
        }
    }

    /// After a save: the board keeps no order whole whose record is kept, and every section
    /// counts as kept.
    pub(crate) fn saved(&mut self) {
        if let Some(board) = self.orders.get_mut() {
            board.move_to_kept();
            board.rows_kept();
        }
        self.orders.mark_kept();
        self.talk.mark_kept();
        self.identity.master_times_kept();
    }

    pub(crate) fn orders_lazy(&self) -> &Lazy<OrderBoard> {
        &self.orders
    }

    pub(crate) fn talk_lazy(&self) -> &Lazy<Talk> {
        &self.talk
    }

    /// The lazy folds are in the kept state, to be loaded by the session when first needed.
    pub(crate) fn left_kept(&mut self) {
        self.orders = Lazy::kept();
        self.talk = Lazy::kept();
        self.identity.times_left_kept();
    }

    pub fn project(&self) -> &ProjectId {
        self.identity.project()
    }

    /// How many entries have been folded here.
    pub fn counter(&self) -> u64 {
        self.counter
    }

    /// When `agent` was last heard from on this machine (liveness only, ADR 0005).
    pub fn heard(&self, agent: &AgentName) -> Option<Timestamp> {
        self.heard.get(agent).copied()
    }

    /// The end of what each author (an agent, or the master) wrote last, whatever kind of
    /// entry it was: what the guard reads across the seam with its next text.
    pub fn tails(&self) -> &tails::Tails {
        &self.tails
    }

    /// Every agent heard from, with when.
    pub fn heard_all(&self) -> impl Iterator<Item = (&AgentName, Timestamp)> {
        self.heard.iter().map(|(name, at)| (name, *at))
    }

    /// The stamp of the latest change: a `since` cursor at it returns only later changes.
    pub fn last_change(&self) -> u64 {
        self.changes.0
    }

    /// Logs to read again and feed: a new master's log once the handover to it was folded,
    /// and logs held for master entries that have now arrived. Feed what they deliver, then ask
    /// again until none is left.
    pub fn take_replays(&mut self) -> Vec<Replay> {
        let mut replays = std::mem::take(&mut self.replays);
        self.unseated.retain(|log, unseated| {
            if unseated.replay {
                replays.push(Replay {
                    log: log.clone(),
                    from_seq: unseated.from_seq,
                });
            }
            !unseated.replay
        });
        for key in self.identity.take_replays() {
            replays.push(Replay {
                log: LogId {
                    author: AgentName::master(),
                    key,
                },
                from_seq: 1,
            });
        }
        replays
    }

    /// Every problem the folds found: identity's, then the domain folds', sorted (the board
    /// and talk paged in: `Session::whole_state`).
    pub fn problems(&self) -> Result<Vec<FoldProblem>, NotPaged> {
        let mut all = self.identity.problems();
        all.extend(self.problems.iter().cloned());
        all.extend(self.orders()?.problems());
        all.extend(self.talk()?.problems());
        all.extend(self.secrets.problems());
        all.extend(self.leadership.problems());
        all.extend(self.asks.problems());
        all.extend(self.releases.problems());
        for (log, held) in &self.held {
            all.push(FoldProblem {
                author: log.author.clone(),
                key: log.key,
                seq: held.from_seq,
                kind: FoldProblemKind::AheadOfMaster,
                detail: format!(
                    "names master entries up to {}.{} that this machine has not folded (the master's log is behind here: not synced yet, or rolled back); its entries from here wait",
                    held.needs.0, held.needs.1
                ),
            });
        }
        all.sort_by(|a, b| {
            (&a.author, &a.key, a.seq, a.kind).cmp(&(&b.author, &b.key, b.seq, b.kind))
        });
        Ok(all)
    }

    /// How many problems were counted but not kept.
    pub fn dropped_problems(&self) -> u64 {
        self.dropped_problems + self.identity.dropped_problems()
    }

    /// Judges again what depends on the reading time `now` (an event dated in the future
    /// counts from its time): the folds stay pure, the time is passed in.
    pub fn advance(&mut self, now: Timestamp) {
        self.leadership
            .advance(now, &self.identity, &mut self.changes);
    }

    /// Folds one verified entry, first folded on this machine at `arrived`. The lazy folds
    /// [`needs`] names must be loaded: one that is not is marked ([`ChannelState::take_unpaged`])
    /// and the entry is not folded.
    pub fn feed(&mut self, entry: &VerifiedEntry, arrived: Timestamp) {
        if self.missing(needs(entry)).any() {
            self.unpaged = true;
            return;
        }
        let log = LogId {
            author: entry.author().clone(),
            key: *entry.key(),
        };
        if entry.author().is_master() && self.identity.replay_pending(entry.key()) {
            // Its log is read again from the start once this poll is folded: in order, once.
            return;
        }
        if let Some(unseated) = self.unseated.get(&log)
            && unseated.replay
            && entry.seq() >= unseated.from_seq
        {
            // Its log is read again from there now that its key holds the name.
            return;
        }
        if let Some(held) = self.held.get(&log) {
            if entry.seq() >= held.from_seq {
                // Its log is read again from the held entry once the master catches up.
                return;
            }
            self.held.remove(&log);
        }
        let before = self.identity.master_position();
        let epoch = self.identity.seat_epoch();
        // An agent entry is placed in master order first: one that names master entries not
        // folded here waits, with the rest of its log, until they arrive.
        let placed = if entry.author().is_master() {
            None
        } else {
            let track = self.tracks.get(&log).copied().unwrap_or_default();
            let declared = declared_seen(entry.body());
            let pos = self.identity.clamp(declared.max(track.pos));
            if !self.identity.has_folded(pos) {
                self.held.insert(
                    log,
                    Held {
                        from_seq: entry.seq(),
                        needs: pos,
                    },
                );
                return;
            }
            let floor = self
                .identity
                .master_time_at(pos)
                .unwrap_or(Timestamp::from_millis(0));
            let time = entry.time().max(track.time).max(floor);
            Some((pos, time))
        };
        let master = self.identity.feed_one(entry);
        if let Some((pos, time)) = placed {
            if !self.identity.admits(entry) {
                // A key that does not hold the name never acts under it: its entry is counted
                // by identity (`not_on_roster`) and kept nowhere, and its log is read again
                // from here if the key comes to hold the name (ADR 0016).
                self.unseated.entry(log).or_insert(Unseated {
                    from_seq: entry.seq(),
                    replay: false,
                });
                // Its join may still have contested a name: the others' seats are judged again.
                self.after_identity_change(before, epoch, entry);
                return;
            }
            self.tracks.insert(log, Track { pos, time });
        }
        let (pos, time) = match (master, placed) {
            (Some(MasterEntry::Counts(pos)), _) => (pos, entry.time()),
            (Some(MasterEntry::DoesNotCount), _) => {
                // Not folded (a key not master yet, or a former master's void entry): it is
                // not counted, so a machine that sees it later counts it once too.
                self.after_identity_change(before, epoch, entry);
                return;
            }
            (None, Some(placed)) => placed,
            (None, None) => unreachable!("an agent entry is placed before it is folded"),
        };
        self.counter += 1;
        let id = match master {
            Some(_) => EntryId::Master {
                era: pos.0,
                seq: entry.seq(),
            },
            None => EntryId::Agent {
                name: entry.author().clone(),
                seq: entry.seq(),
            },
        };
        let acted = Acted {
            entry,
            author: entry.author(),
            key: entry.key(),
            by_master: master.is_some(),
            pos,
            time,
            arrived,
            counter: self.counter,
            id: &id,
        };
        // Every entry reaches the domain folds: whether an agent's counts is judged against the
        // roster as it is now, and judged again whenever a seat changes. The lazy folds are
        // read only for their own kinds.
        if orders::is_kind(entry.kind())
            && let Some(board) = self.orders.get_mut()
        {
            board.feed(&acted, &self.identity, &mut self.changes);
        }
        if talk::is_kind(entry.kind())
            && let Some(talk) = self.talk.get_mut()
        {
            talk.feed(&acted, &self.identity, &mut self.changes);
        }
        self.secrets.feed(&acted);
        self.leadership
            .feed(&acted, &self.identity, &mut self.changes);
        self.asks.feed(&acted, &self.identity, &mut self.changes);
        self.releases.feed(&acted);
        if !acted.by_master && self.identity.admits(entry) {
            let at = entry.time().min(arrived);
            let heard = self.heard.entry(entry.author().clone()).or_default();
            *heard = (*heard).max(at);
        }
        if acted.by_master || self.identity.admits(entry) {
            self.tails.feed(&acted);
        }
        self.after_identity_change(before, epoch, entry);
    }

    /// Releases held logs the master has caught up with, and lets the domain folds re-judge
    /// their events when who holds a name may have changed.
    fn after_identity_change(&mut self, before: MasterPos, epoch: u64, entry: &VerifiedEntry) {
        if self.identity.master_position() != before && !self.held.is_empty() {
            let ready: Vec<LogId> = self
                .held
                .iter()
                .filter(|(_, held)| self.identity.has_folded(self.identity.clamp(held.needs)))
                .map(|(log, _)| log.clone())
                .collect();
            for log in ready {
                if let Some(held) = self.held.remove(&log) {
                    self.replays.push(Replay {
                        log,
                        from_seq: held.from_seq,
                    });
                }
            }
        }
        if self.identity.seat_epoch() != epoch {
            for (log, unseated) in &mut self.unseated {
                if !unseated.replay && self.identity.seat(&log.author) == Seat::Seated(&log.key) {
                    unseated.replay = true;
                }
            }
            // A roster entry or a grant changes one name's seat and levels: only the orders
            // that name appears in can change. Anything else (a handover) judges them all.
            if let Some(orders) = self.orders.get_mut() {
                match seat_change_of(entry) {
                    Some(name) => orders.rejudge_name(&name, &self.identity, &mut self.changes),
                    None => orders.rejudge(&self.identity, &mut self.changes),
                }
            }
            if let Some(talk) = self.talk.get_mut() {
                talk.rejudge(&self.identity);
            }
            self.leadership.rejudge(&self.identity, &mut self.changes);
        }
    }

    /// Folds every entry of `batch` and every replay they cause, reading replays through
    /// `replay` (which gives the entries of a log from a seq on). For tests and tools that fold
    /// collected entries.
    pub fn feed_all(
        &mut self,
        batch: &[VerifiedEntry],
        arrived: Timestamp,
        mut replay: impl FnMut(&Replay) -> Vec<VerifiedEntry>,
    ) {
        for entry in batch {
            self.feed(entry, arrived);
        }
        loop {
            let replays = self.take_replays();
            if replays.is_empty() {
                break;
            }
            for job in replays {
                for entry in replay(&job) {
                    self.feed(&entry, arrived);
                }
            }
        }
    }
}

impl lazy::Section for OrderBoard {
    const NAME: &'static str = "order board";
}

impl lazy::Section for Talk {
    const NAME: &'static str = "talk";
}

/// Which lazy folds something needs loaded.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Sections {
    pub board: bool,
    pub talk: bool,
    pub times: bool,
}

impl Sections {
    pub const ALL: Sections = Sections {
        board: true,
        talk: true,
        times: true,
    };
    pub const BOARD: Sections = Sections {
        board: true,
        talk: false,
        times: false,
    };
    pub const TALK: Sections = Sections {
        board: false,
        talk: true,
        times: false,
    };
    pub const BOARD_AND_TALK: Sections = Sections {
        board: true,
        talk: true,
        times: false,
    };

    pub fn any(self) -> bool {
        self.board || self.talk || self.times
    }
}

/// The lazy folds that folding `entry` may read or change, from its kind alone: a pure
/// function, so the session loads them before it feeds the entry and a fold never reads the
/// store. Every entry is placed against the master's times; an order entry reaches the board
/// and a talk entry talk; an entry that may change who holds a name (a join, a grant, a
/// handover or its acceptance) has both judged again.
pub fn needs(entry: &VerifiedEntry) -> Sections {
    use crate::channel::fold::identity::kinds;
    let seats = matches!(
        entry.kind(),
        kinds::ROSTER_JOIN | kinds::GRANT | kinds::MASTER_HANDOVER | kinds::MASTER_ACCEPT
    );
    Sections {
        board: seats || orders::is_kind(entry.kind()),
        talk: seats || talk::is_kind(entry.kind()),
        times: true,
    }
}

/// Whether folding `entry` may work talk's read-throughs out again from the first message
/// (a change of who holds a name: `Talk::rejudge`), which needs every message in memory.
pub fn judges_talk_again(entry: &VerifiedEntry) -> bool {
    use crate::channel::fold::identity::kinds;
    matches!(
        entry.kind(),
        kinds::ROSTER_JOIN | kinds::GRANT | kinds::MASTER_HANDOVER | kinds::MASTER_ACCEPT
    )
}

/// Stamps the changes of the domain folds: every change gets its own, increasing number.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Changes(u64);

impl Changes {
    /// The stamp of a new change.
    pub fn stamp(&mut self) -> u64 {
        self.0 += 1;
        self.0
    }
}

/// The one name whose seat or levels `entry` can change: its author for a roster entry, the
/// granted agent for the master's grant; `None` for anything else.
fn seat_change_of(entry: &VerifiedEntry) -> Option<AgentName> {
    use crate::channel::fold::identity::kinds;
    match entry.kind() {
        kinds::ROSTER_JOIN if !entry.author().is_master() => Some(entry.author().clone()),
        kinds::GRANT if entry.author().is_master() => entry
            .body()
            .get("agent")
            .and_then(Value::as_str)
            .and_then(|name| AgentName::parse(name).ok()),
        _ => None,
    }
}

/// The `seen` an agent entry declares (`[era, seq]`), or the start.
fn declared_seen(body: &Value) -> MasterPos {
    body.get(SEEN_FIELD)
        .and_then(|seen| serde_json::from_value::<MasterPos>(seen.clone()).ok())
        .unwrap_or(MasterPos::START)
}

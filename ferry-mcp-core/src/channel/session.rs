//! The session: how a command of the human and a tool of an agent reach the channel.
//!
//! One value holds the machine state ([`Home`]), the actor (an agent, the master, or an
//! observer), the folded channel state and the actor's writer. Every operation starts with
//! [`Session::refresh`], which reads only what is new, and every write goes through
//! [`Session::append`]: authorize, then append, so an unauthorized record cannot be written at
//! all (and would not count if it were: the fold decides, ADR 0005).
//!
//! Opening costs the new bytes since this machine last looked plus one small read per changed
//! log: the verified state of ADR 0004 is loaded from the state folder, and written back by
//! [`Session::save`] when something changed.

use std::collections::HashSet;
use std::path::PathBuf;

use serde_json::Value;

use super::ops::OpsError;
use crate::channel::fold::body::EntryBody;
use crate::channel::fold::checkpoint;
use crate::channel::fold::identity::{AcceptBody, Identity, MasterEntry, MasterPos};
use crate::channel::fold::levels::{self, Level, LocalKey, Operation, Request};
use crate::channel::fold::state::{self, ChannelState, EntryId, NotPaged, SEEN_FIELD, Sections};
use crate::channel::log::entry::VerifiedEntry;
use crate::channel::log::keys::{PublicKey, SecretKey};
use crate::channel::log::names::{AgentName, ProjectId};
use crate::channel::log::reader::{Cleared, IntegrityProblem, LogId, Prelook, Reader, ReaderState};
use crate::channel::log::stamp::FileStamp;
use crate::channel::log::store::{Channel, LogWriter};
use crate::channel::machine::home::{Home, HomeError, KeyHolder, PinOutcome};
use crate::guard::{self, TextUse};
use crate::port::{self, ChannelAccess, HeavyQueue, Unavailable};
use crate::time::Timestamp;
use kept::{Kept, KeptRef, Loaded, Pinned, Rejected, Store};

// The kept state lives in the machine layer's folder (`machine/kept/`) but is a module of the
// session's: the session owns the store and pages, so nothing else (the folds least of all) can
// name it, by visibility. Tests that attack the store reach it through the `internals` feature.
#[cfg(not(feature = "internals"))]
#[path = "machine/kept/mod.rs"]
mod kept;
#[cfg(feature = "internals")]
#[path = "machine/kept/mod.rs"]
pub mod kept;

/// At most this many integrity problems are kept; more are counted.
const MAX_KEPT_PROBLEMS: usize = 1_000;

/// Who acts through a session.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Actor {
    /// The human, with the master key on this machine.
    Master,
    /// An agent, with its key on this machine.
    Agent(AgentName),
    /// Reads only (a server started without `--as`, `ferry channel status`).
    Observer,
}

impl Actor {
    /// The agent's name, for an agent.
    pub fn agent(&self) -> Option<&AgentName> {
        match self {
            Actor::Agent(name) => Some(name),
            _ => None,
        }
    }
}

/// An open project: see the module docs.
#[derive(Debug)]
pub struct Session {
    home: Home,
    project: ProjectId,
    channel: Channel,
    /// The digest of the genesis file this machine's kept state was first kept for (the
    /// witness keeps it while the channel's identity stands, so a rewrite stays reported).
    genesis: [u8; 32],
    generation: u64,
    reader: Reader,
    state: ChannelState,
    problems: Vec<IntegrityProblem>,
    /// The same problems, looked up by hash: a channel may hold as many junk files as anyone
    /// cares to write, each reported once (issue 17, finding 8).
    problem_set: HashSet<IntegrityProblem>,
    dropped_problems: u64,
    /// Problems of this process with machine-state files (they are found again every time).
    local_problems: Vec<String>,
    actor: Actor,
    writer: Option<LogWriter>,
    /// Whether the state changed since it was last written to the state folder.
    dirty: bool,
    /// Names whose key differs from the key this machine pinned first.
    pin_changed: Vec<AgentName>,
    /// The roster as last pinned (kept in the verified state).
    pinned: Option<Pinned>,
    /// This machine's name, as the binary found it (for `ferry_join`).
    machine: String,
    /// What runs here, for release approvals: the version, the platform, the binary an update
    /// replaces (ADR 0020).
    installed: super::ops::releases::Installed,
    /// The machine's kept state of this project (none when its path was refused).
    store: Option<Store>,
    /// When a watched session last looked at every log (see [`Session::watch_channel`]).
    looked_everywhere: Option<Timestamp>,
    /// How many bytes this session's last save wrote (the rows that changed).
    written_len: Option<u64>,
    /// Opened for one operation: its first refresh is the open's own look.
    looked_for_operation: bool,
    /// The last read among talk's messages paged out (see [`PagedRead`]).
    paged_read: Option<PagedRead>,
    /// Moves on whenever the state is folded again from the channel (stamps may then differ).
    refolds: u64,
    /// When this session last read the channel (what a fold folded again after a failed load
    /// is dated).
    looked_at: Timestamp,
    /// The master's checkpoint this session's first read started from (ADR 0023), if any.
    checkpoint: Option<(VerifiedEntry, MasterPos)>,
    /// Opened by [`Session::open_read_only`]: it writes nothing, anywhere.
    read_only: bool,
    /// An agent's reads need no key of it here ([`Session::reading_without_key`]).
    reads_without_key: bool,
}

/// Reported when `genesis.json` names the channel the kept state was kept for, in other
/// bytes than it was kept with: a rewritten file (a leading space, CRLF line ends) still
/// verifies, and is taken for tampering, never for a new channel (the witness stands).
pub const REWRITTEN_GENESIS: &str = "genesis.json was rewritten since this machine kept its state (other bytes, signed for the same channel): possible tampering; the kept state stays this machine's witness (restore the file to clear this)";

/// Reported (with the reason) when a new machine's checkpoint did not hold and the channel
/// was read again with every signature checked (ADR 0023).
pub const CHECKPOINT_DID_NOT_HOLD: &str = "the master's checkpoint did not hold";

/// What a fold of the new entries found.
struct Folded {
    problems: Vec<IntegrityProblem>,
    /// Everything was folded again (a handover learned late).
    refolded: bool,
}

/// Loads from the kept state the lazy folds a fold step needs, before the step: the folds
/// never read the store. What does not load is kept as a failure (the caller reports it and
/// folds everything again); the step that needed it folds nothing meanwhile.
struct Pager<'a> {
    store: Option<&'a mut Store>,
    failures: &'a mut Vec<String>,
    /// The session's last read among talk's messages paged out, as of this fold (none after
    /// a refold): a reader's mark folded after it walks the messages that read brought back
    /// instead of reading their rows again.
    paged_read: Option<&'a PagedRead>,
}

impl Pager<'_> {
    /// Loads the lazy folds of `wanted` and the orders whole of `ids` that are not in memory.
    /// After a failure nothing more is read: everything is folded again anyway.
    fn page(&mut self, state: &mut ChannelState, wanted: Sections, ids: &[EntryId]) {
        if !self.failures.is_empty() {
            return;
        }
        if state.missing(wanted).any() {
            let loaded = match self.store.as_deref_mut() {
                Some(store) => store.load_sections(state, wanted),
                None => Err(NOTHING_KEPT.into()),
            };
            if let Err(why) = loaded {
                self.failures.push(why);
                return;
            }
        }
        if ids.is_empty() {
            return;
        }
        let paged = match self.store.as_deref_mut() {
            Some(store) => store.page_orders(state, ids),
            None => Err(NOTHING_KEPT.into()),
        };
        if let Err(why) = paged {
            self.failures.push(why);
        }
    }

    /// Feeds `entry` to `state`, paging in first what it reads. Orders paged in only to be
    /// judged again go back out if their view stands (the board holds briefs: ADR 0009).
    fn feed(&mut self, state: &mut ChannelState, entry: &VerifiedEntry, now: Timestamp) {
        self.page(state, state::needs(entry), &[]);
        let (ids, rejudged_only) = state.orders_to_page(entry);
        self.page(state, Sections::default(), &ids);
        if state::judges_talk_again(entry) {
            // Every reader's read-through is worked out again from the first message.
            self.page_in_talk(state);
        }
        let since = state.last_change();
        state.feed(entry, now);
        if rejudged_only && !ids.is_empty() {
            state.drop_unchanged(&ids, since);
        }
        if entry.kind() == state::talk::kinds::MARK {
            self.walk_paged_talk(state, entry.author());
        }
    }

    /// Takes talk's messages paged out back into memory (ADR 0011, "Talk paged").
    fn page_in_talk(&mut self, state: &mut ChannelState) {
        if !self.failures.is_empty() || state.talk().map_or(0, |t| t.paged_through()) == 0 {
            return;
        }
        let paged = match self.store.as_deref_mut() {
            Some(store) => store.page_in_talk(state),
            None => Err(NOTHING_KEPT.into()),
        };
        if let Err(why) = paged {
            self.failures.push(why);
        }
    }

    /// Moves `reader`'s read-through over talk's messages paged out, read from the kept state
    /// a chunk at a time, as far as a walk in memory would have: a reader that marked what it
    /// read goes on from there (see `Talk::advance_over`).
    fn walk_paged_talk(&mut self, state: &mut ChannelState, reader: &AgentName) {
        if !self.failures.is_empty() {
            return;
        }
        let Ok(talk) = state.talk() else {
            return;
        };
        if !talk.reader_behind_paged(reader) {
            return;
        }
        let (mut from, upto) = (talk.read_through_of(reader), talk.paged_through());
        // The reader's last read brought back every message of its stream from its
        // read-through on, up to where it scanned: walked over first, as the rows would be.
        if let Some(read) = self
            .paged_read
            .filter(|read| read.key.reader == *reader && read.from <= from)
            && read.scanned_to > from
        {
            let upto = read.scanned_to.min(upto);
            if !state.talk_advance_over(reader, &read.stream, upto) {
                return;
            }
            from = state
                .talk()
                .map_or(upto, |talk| talk.read_through_of(reader));
        }
        let walked = match self.store.as_deref_mut() {
            Some(store) => store.walk_talk(from, upto, &mut |older, reached| {
                state.talk_advance_over(reader, older, reached)
            }),
            None => Err(NOTHING_KEPT.into()),
        };
        if let Err(why) = walked {
            self.failures.push(why);
        }
    }
}

/// What a read among talk's messages paged out depends on, besides where it starts, the
/// reader's marker and the paged-out end (see [`PagedRead`]).
#[derive(Debug, Clone, PartialEq, Eq)]
struct PagedReadKey {
    reader: AgentName,
    unread_only: bool,
    seats: u64,
    refolds: u64,
}

/// The last read among talk's messages paged out ([`Session::paged_unread_for`]): every
/// message it shows brought after `from` and up to `scanned_to`, oldest first, for the marker
/// `marker`. A later read of the same reader that starts at or after `from`, with a marker
/// that only moved on (a reader marks what it read), shows these less those it has read
/// since: it reads rows only past `scanned_to`.
#[derive(Debug, Clone)]
struct PagedRead {
    key: PagedReadKey,
    from: u64,
    marker: std::collections::BTreeMap<AgentName, u64>,
    scanned_to: u64,
    found: Vec<crate::channel::fold::state::talk::Message>,
    /// Every message of the reader's stream (to everyone, or to it) brought after `from` and
    /// up to `scanned_to`, oldest first, whatever it shows: what the fold of the reader's mark
    /// walks its read-through over (`Pager::walk_paged_talk`). A stamp is given once, so the
    /// messages between two stamps are the same until everything is folded again.
    stream: Vec<crate::channel::fold::state::talk::Message>,
}

/// How many messages a read among those paged out gathers at least when it reads rows: a
/// reader that reads a page at a time then reads rows once every few pages.
const PAGED_READ_AHEAD: usize = 256;

/// Whether `marker` says read at least all that `before` did.
fn marker_covers(
    marker: &std::collections::BTreeMap<AgentName, u64>,
    before: &std::collections::BTreeMap<AgentName, u64>,
) -> bool {
    before
        .iter()
        .all(|(from, seq)| marker.get(from).is_some_and(|now| now >= seq))
}

/// Whether `message`, read back from the kept state, counts now.
fn talk_counts(state: &ChannelState, message: &crate::channel::fold::state::talk::Message) -> bool {
    state
        .talk()
        .is_ok_and(|talk| talk.counts_now(message, state.identity()))
}

/// Why a fold could not be paged in: the session keeps nothing (its path was refused).
const NOTHING_KEPT: &str = "the kept state's folds are not there; rebuilt from the channel";

/// Which logs a look reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Look {
    /// Every log (what the watch says changed, for a watched reader).
    Everything,
    /// The master's logs only, from a full listing: a new machine's first look, to find the
    /// checkpoint it may start from (ADR 0023).
    Masters,
}

/// Reads what is new through `reader` and folds it into `state`, with the replays and the
/// refold it causes, loading through `pager` what each step needs; `seen` is shown every
/// entry read (a replayed one too) before it is folded.
fn fold_new(
    reader: &mut Reader,
    state: &mut ChannelState,
    pager: &mut Pager<'_>,
    (now, look): (Timestamp, Look),
    seen: &mut dyn FnMut(&VerifiedEntry),
) -> Folded {
    let mut feed = |entry: VerifiedEntry| {
        seen(&entry);
        pager.feed(state, &entry, now);
    };
    let problems = match look {
        Look::Everything => reader.poll_with(&mut feed),
        Look::Masters => reader.poll_masters(&mut feed),
    };
    let refolded = state.take_refold();
    if refolded {
        refold_all(reader, state, now);
    }
    loop {
        let replays = state.take_replays();
        if replays.is_empty() {
            break;
        }
        for replay in replays {
            let from = replay.from_seq;
            reader.replay_log(&replay.log, &mut |entry| {
                if entry.seq() >= from {
                    seen(&entry);
                    pager.feed(state, &entry, now);
                }
            });
        }
    }
    state.advance(now);
    Folded { problems, refolded }
}

/// Folds every log again from its start into a state that knows the handovers from the
/// beginning (a handover learned late, from a `master.accept`, voids entries already folded).
/// The state folded from nothing holds every fold in memory: nothing is paged.
fn refold_all(reader: &mut Reader, state: &mut ChannelState, now: Timestamp) {
    let mut fresh = state.refolded();
    let logs: Vec<LogId> = reader.logs().map(|(id, _)| id.clone()).collect();
    for log in logs {
        reader.replay_log(&log, &mut |entry| fresh.feed(&entry, now));
    }
    // Entries held until a master position their log follows was folded (a log read before
    // the master's: `ada` sorts before `master`) are fed now, as a poll feeds them; a rebuild
    // after a kept row that did not read used to leave them out.
    loop {
        let replays = fresh.take_replays();
        if replays.is_empty() {
            break;
        }
        for replay in replays {
            let from = replay.from_seq;
            reader.replay_log(&replay.log, &mut |entry| {
                if entry.seq() >= from {
                    fresh.feed(&entry, now);
                }
            });
        }
    }
    *state = fresh;
}

impl Session {
    /// Opens the registered channel of `project` for `actor`: loads this machine's verified
    /// state and reads what is new.
    pub fn open(
        home: &Home,
        project: &ProjectId,
        actor: Actor,
        now: Timestamp,
    ) -> Result<Self, OpsError> {
        Self::open_kept(home, project, actor, now, true, OpenMechanisms::default())
    }

    /// [`Session::open`] with some of its speed mechanisms off: for the benches' A/B of each
    /// (ADR 0011); what is read and folded is the same.
    pub fn open_with(
        home: &Home,
        project: &ProjectId,
        actor: Actor,
        now: Timestamp,
        mechanisms: OpenMechanisms,
    ) -> Result<Self, OpsError> {
        Self::open_kept(home, project, actor, now, true, mechanisms)
    }

    /// Opens the channel of `project` for `actor` to read only (`ferry mcp serve --read-only`,
    /// or without `--as`): nothing is written, in the channel or the state folder. The kept
    /// state is not opened (a SQLite open may create its journal files): the whole channel is
    /// verified and folded in memory, the pins are compared and never written, and every
    /// append is refused.
    pub fn open_read_only(
        home: &Home,
        project: &ProjectId,
        actor: Actor,
        now: Timestamp,
    ) -> Result<Self, OpsError> {
        Self::open_kept(home, project, actor, now, false, OpenMechanisms::default())
    }

    fn open_kept(
        home: &Home,
        project: &ProjectId,
        actor: Actor,
        now: Timestamp,
        keep: bool,
        mechanisms: OpenMechanisms,
    ) -> Result<Self, OpsError> {
        let channel_dir = home.channel_dir(project)?;
        let mut local_problems = Vec::new();
        let opened = keep.then(|| Store::open(&home.verified_path(project)));
        // A kept state the disk is too full to read is neither read nor written this time.
        let mut full_disk = false;
        let mut store = match opened {
            Some(Ok((store, rebuilt))) => {
                local_problems.extend(rebuilt.map(|why| why.to_string()));
                Some(store)
            }
            Some(Err(why)) => {
                full_disk = matches!(why, Rejected::DiskFull);
                local_problems.push(why.to_string());
                None
            }
            None => None,
        };
        // What the first poll will stat, stat'ed on another core while the kept state is read.
        let looks = store
            .as_ref()
            .filter(|_| mechanisms.prelook)
            .map(Store::looks)
            .unwrap_or_default();
        let ahead = Prelook::start(&channel_dir, looks.len() as u64, move || looks);
        let channel = Channel::open(&channel_dir)?;
        if channel.project() != project {
            return Err(OpsError::WrongProject {
                expected: project.clone(),
                found: channel.project().clone(),
            });
        }
        let genesis = channel.genesis_digest();
        let identity = channel.identity();
        let fresh = |local_problems: &mut Vec<String>| Kept {
            genesis,
            channel: identity,
            generation: new_generation(local_problems),
            reader: Default::default(),
            state: ChannelState::new(project.clone(), *channel.genesis_master()),
            problems: Vec::new(),
            dropped_problems: 0,
            pinned: None,
        };
        let loaded = store
            .as_mut()
            .map_or(Loaded::Missing, |store| store.load(&identity, &genesis));
        if matches!(loaded, Loaded::Rejected(Rejected::DiskFull)) {
            // Not read, so never written over: a save of this open's state would replace what
            // the kept state witnessed with what this open alone verified.
            store = None;
            full_disk = true;
        }
        // Only a machine that kept nothing starts from a checkpoint: one that verified more
        // never trusts less (ADR 0023), nor does one whose kept state the disk was too full to
        // read (it checks every signature instead).
        let new_machine = !full_disk && !matches!(loaded, Loaded::Kept(_));
        let kept = match loaded {
            Loaded::Kept(kept) => {
                if kept.genesis != genesis {
                    local_problems.push(REWRITTEN_GENESIS.to_owned());
                }
                *kept
            }
            Loaded::Missing => fresh(&mut local_problems),
            Loaded::Rejected(why) => {
                local_problems.push(why.to_string());
                fresh(&mut local_problems)
            }
        };
        let mut reader = Reader::restore(&channel, kept.reader);
        reader.use_prelooked(ahead.finish());
        reader.use_stamps(mechanisms.stamps);
        let mut session = Self {
            home: home.clone(),
            project: project.clone(),
            reader,
            channel,
            genesis: kept.genesis,
            generation: kept.generation,
            state: kept.state,
            problem_set: kept.problems.iter().cloned().collect(),
            problems: kept.problems,
            dropped_problems: kept.dropped_problems,
            local_problems,
            actor,
            writer: None,
            dirty: false,
            pin_changed: Vec::new(),
            pinned: kept.pinned,
            machine: "this-machine".to_owned(),
            installed: super::ops::releases::Installed::this_build(),
            store,
            looked_everywhere: None,
            written_len: None,
            looked_for_operation: false,
            paged_read: None,
            refolds: 0,
            looked_at: now,
            checkpoint: None,
            read_only: !keep,
            reads_without_key: false,
        };
        if new_machine {
            session.start_from_checkpoint(now);
        }
        session.refresh(now);
        if new_machine {
            session.hold_checkpoint_to_its_chains(now);
        }
        if keep {
            session.pin(home)?;
        } else {
            session.compare_pins(home)?;
        }
        Ok(session)
    }

    /// A new machine's first look (ADR 0023): the master's logs, every signature checked and
    /// folded, then the latest checkpoint among them that counts by the fold's master rules;
    /// its tips are handed to the reader, which reads the agents' logs up to them without
    /// checking signatures, holding each to its hash chain.
    fn start_from_checkpoint(&mut self, now: Timestamp) {
        let mut candidates = Vec::new();
        self.refresh_with((now, Look::Masters), &mut |entry| {
            if checkpoint::is_candidate(entry) {
                candidates.push(entry.clone());
            }
        });
        let Some((entry, pos)) = checkpoint::latest_counted(self.state.identity(), &candidates)
        else {
            return;
        };
        match checkpoint::body_of(entry).and_then(|body| body.vouches()) {
            Ok(vouches) => {
                self.reader.vouch(&vouches);
                self.checkpoint = Some((entry.clone(), pos));
            }
            Err(why) => self.local_problems.push(format!(
                "checkpoint {}.{} vouches for nothing: {why}; every signature was checked",
                pos.0, pos.1
            )),
        }
    }

    /// After the first read of a new machine that started from a checkpoint: where a chain
    /// did not reach its tip intact, or the checkpoint no longer counts once everything is
    /// folded, nothing read unchecked may stand. The state is dropped and the channel read
    /// again with every signature checked, and the reason reported.
    fn hold_checkpoint_to_its_chains(&mut self, now: Timestamp) {
        let broken = self.reader.take_vouch_outcome();
        let Some((entry, pos)) = &self.checkpoint else {
            return;
        };
        let counts = matches!(
            self.state.identity().master_entry(entry),
            MasterEntry::Counts(_)
        );
        if broken.is_empty() && counts {
            return;
        }
        let why = if counts {
            broken.join("; ")
        } else {
            "it does not count once everything is folded".to_owned()
        };
        self.local_problems.push(format!(
            "{CHECKPOINT_DID_NOT_HOLD} (checkpoint {}.{}: {why}); every signature was checked instead",
            pos.0, pos.1
        ));
        self.checkpoint = None;
        self.reader = Reader::restore(&self.channel, ReaderState::default());
        self.state = ChannelState::new(self.project.clone(), *self.channel.genesis_master());
        self.problems.clear();
        self.problem_set.clear();
        self.dropped_problems = 0;
        self.refresh(now);
    }

    /// The tip of every agent's log this session read (for a checkpoint, ADR 0023).
    pub fn verified_tips(&self) -> Vec<checkpoint::Tip> {
        self.reader.tips()
    }

    /// The master position of the checkpoint this session's first read started from, if it
    /// started from one that held (ADR 0023).
    pub fn started_from_checkpoint(&self) -> Option<MasterPos> {
        self.checkpoint.as_ref().map(|(_, pos)| *pos)
    }

    /// What [`Session::pin`] checks, without writing the pins: a different genesis master
    /// refuses to open, a seated name under another key than the one pinned is reported.
    fn compare_pins(&mut self, home: &Home) -> Result<(), OpsError> {
        let pins = match home.pins(&self.project) {
            Ok(pins) => pins,
            Err(err) => {
                self.local_problems.push(format!(
                    "{err} (keys are not pinned until it is fixed or removed)"
                ));
                return Ok(());
            }
        };
        let master = self.channel.genesis_master().to_string();
        if pins.master.as_ref().is_some_and(|pinned| *pinned != master) {
            return Err(OpsError::MasterPinChanged {
                project: self.project.clone(),
            });
        }
        let identity = self.state.identity();
        self.pin_changed = identity
            .names()
            .filter_map(|(name, _)| identity.holder(name).map(|key| (name, key)))
            .filter(|(name, key)| {
                pins.agents
                    .get(name.as_str())
                    .is_some_and(|pinned| *pinned != key.to_string())
            })
            .map(|(name, _)| name.clone())
            .collect();
        Ok(())
    }

    /// Whether this session was opened to read only ([`Session::open_read_only`]).
    pub fn is_read_only(&self) -> bool {
        self.read_only
    }

    /// Lets the acting agent read where this machine holds no key of it (issue 19, item 15):
    /// the logs are plain signed text, so a read needs no key, and it reads from the agent's
    /// side (its inbox, its orders) as that agent's seat stands in the fold. Every write still
    /// goes through [`Session::authorize`] as before and is refused for the missing key. For
    /// the person at a keyboard running a read command with `--as`; a server never sets it.
    pub fn reading_without_key(mut self) -> Self {
        self.reads_without_key = true;
        self
    }

    /// Pins the genesis master and every seated name, reading and writing the pins once. A
    /// different genesis master refuses to open; a pins file that does not read is reported.
    /// Skipped while the roster is as this machine last pinned it (the verified state is of
    /// this genesis, so its master is the one pinned then).
    fn pin(&mut self, home: &Home) -> Result<(), OpsError> {
        let epoch = self.state.identity().seat_epoch();
        let pins_path = home.pins_path(&self.project);
        if let Some(pinned) = &self.pinned
            && pinned.seat_epoch == epoch
            && pinned.pins_file.is_some()
            && pinned.pins_file == FileStamp::of_path(&pins_path)
        {
            self.pin_changed.clone_from(&pinned.changed);
            return Ok(());
        }
        let identity = self.state.identity();
        let seated: Vec<(&AgentName, &PublicKey)> = identity
            .names()
            .filter_map(|(name, _)| identity.holder(name).map(|key| (name, key)))
            .collect();
        match home.pin_all(&self.project, self.channel.genesis_master(), &seated) {
            Ok((PinOutcome::Changed { .. }, _)) => Err(OpsError::MasterPinChanged {
                project: self.project.clone(),
            }),
            Ok((_, changed)) => {
                // A kept record that no longer holds is written anew (once); a state that
                // kept none is written when it changes for another reason (a preview of a
                // fresh channel writes nothing).
                let stale = self.pinned.is_some();
                self.pinned = Some(Pinned {
                    seat_epoch: epoch,
                    pins_file: FileStamp::of_path(&pins_path),
                    changed: changed.clone(),
                });
                self.dirty |= stale;
                self.pin_changed = changed;
                Ok(())
            }
            Err(err) => {
                self.pinned = None;
                self.local_problems.push(format!(
                    "{err} (keys are not pinned until it is fixed or removed)"
                ));
                Ok(())
            }
        }
    }

    pub fn project(&self) -> &ProjectId {
        &self.project
    }

    /// This machine's name.
    pub fn machine(&self) -> &str {
        &self.machine
    }

    /// Sets how many of talk's newest messages this session holds in memory (the rest stay
    /// in the kept state, read when asked for: ADR 0011, "Talk paged"); by default
    /// [`kept::TALK_WINDOW`].
    pub fn set_talk_window(&mut self, messages: usize) {
        if let Some(store) = &mut self.store {
            store.set_talk_window(messages);
        }
    }

    /// The messages of a read of `reader`'s (`Talk::for_reader`) that lie among those talk
    /// paged out, read from the kept state, oldest first: at most `limit` of those it shows and
    /// `keep` accepts. The rest of the read is `Talk::for_reader`'s, in memory. A kept state
    /// that does not read is reported and everything folded again (talk is then whole in
    /// memory, and this is empty).
    pub fn paged_messages_for(
        &mut self,
        reading: (&AgentName, u64, bool),
        limit: usize,
        keep: &mut dyn FnMut(&crate::channel::fold::state::talk::Message) -> bool,
    ) -> Result<Vec<crate::channel::fold::state::talk::Message>, NotPaged> {
        self.walk_paged_for(reading, limit, keep, &mut |_| {})
    }

    /// [`Session::paged_messages_for`], handing `walked` every message brought back before the
    /// walk stopped (the last one it gives, at the latest).
    fn walk_paged_for(
        &mut self,
        (reader, after, unread_only): (&AgentName, u64, bool),
        limit: usize,
        keep: &mut dyn FnMut(&crate::channel::fold::state::talk::Message) -> bool,
        walked: &mut dyn FnMut(&crate::channel::fold::state::talk::Message),
    ) -> Result<Vec<crate::channel::fold::state::talk::Message>, NotPaged> {
        let now = self.loaded_at();
        self.load(Sections::TALK, now);
        let identity = self.state.identity();
        let talk = self.state.talk()?;
        let Some((from, upto, shows)) = talk.paged_reading(reader, identity, after, unread_only)
        else {
            return Ok(Vec::new());
        };
        let Some(store) = self.store.as_mut() else {
            return Ok(Vec::new());
        };
        let mut found = Vec::new();
        let walked = store.walk_talk(from, upto, &mut |older, _| {
            for message in older {
                if found.len() >= limit {
                    return false;
                }
                walked(message);
                if shows(message) && keep(message) {
                    found.push(message.clone());
                }
            }
            found.len() < limit
        });
        drop(shows);
        if let Err(why) = walked {
            self.rebuild_after(vec![why], now);
            return Ok(Vec::new());
        }
        Ok(found)
    }

    /// [`Session::paged_messages_for`] of every message the read shows, remembered (see
    /// [`PagedRead`]): a reader's unread messages among those paged out change only when its
    /// marker, a seat or the paged-out end does; a marker that moves on only takes messages
    /// out, and a later end only adds messages after them. So a catch-up or a read that asks
    /// again reads no row, and a reader that reads on a page at a time reads rows once every
    /// [`PAGED_READ_AHEAD`] messages, or for those paged out since.
    pub fn paged_unread_for(
        &mut self,
        (reader, after, unread_only): (&AgentName, u64, bool),
        limit: usize,
    ) -> Result<Vec<crate::channel::fold::state::talk::Message>, NotPaged> {
        let now = self.loaded_at();
        self.load(Sections::TALK, now);
        let identity = self.state.identity();
        let talk = self.state.talk()?;
        let Some((from, upto, _)) = talk.paged_reading(reader, identity, after, unread_only) else {
            return Ok(Vec::new());
        };
        let key = PagedReadKey {
            reader: reader.clone(),
            unread_only,
            seats: identity.seat_epoch(),
            refolds: self.refolds,
        };
        let marker = if unread_only {
            talk.marker(reader, identity)
        } else {
            std::collections::BTreeMap::new()
        };
        let mut read = match self.paged_read.take() {
            Some(mut read)
                if read.key == key
                    && read.from <= from
                    && (unread_only || read.from == from)
                    && read.scanned_to <= upto
                    && marker_covers(&marker, &read.marker) =>
            {
                // Those read since, or before where this read starts, drop out.
                read.found.retain(|message| {
                    message.stamp > from
                        && marker
                            .get(&message.from)
                            .is_none_or(|seq| message.seq > *seq)
                });
                read.stream.retain(|message| message.stamp > from);
                PagedRead {
                    from,
                    marker,
                    scanned_to: read.scanned_to.max(from),
                    ..read
                }
            }
            _ => PagedRead {
                key,
                from,
                marker,
                scanned_to: from,
                found: Vec::new(),
                stream: Vec::new(),
            },
        };
        if read.found.len() < limit && read.scanned_to < upto {
            let wanted = limit.max(PAGED_READ_AHEAD) - read.found.len();
            let refolds = self.refolds;
            let mut stream = Vec::new();
            let more = self.walk_paged_for(
                (reader, read.scanned_to, unread_only),
                wanted,
                &mut |_| true,
                &mut |message| {
                    if message.in_stream_of(reader) {
                        stream.push(message.clone());
                    }
                },
            )?;
            if self.refolds != refolds {
                // The kept state did not read: everything was folded again, talk is whole in
                // memory, and nothing is paged out.
                return Ok(Vec::new());
            }
            read.scanned_to = match more.last() {
                Some(last) if more.len() >= wanted => last.stamp,
                _ => upto,
            };
            read.found.extend(more);
            read.stream.extend(stream);
        }
        let given = read.found.iter().take(limit).cloned().collect();
        self.paged_read = Some(read);
        Ok(given)
    }

    /// The message `id` if it counts, from memory or, when talk paged it out, from the kept
    /// state (every row paged out is looked at: a read of an old message costs a walk).
    pub fn talk_message(
        &mut self,
        id: &EntryId,
    ) -> Result<Option<crate::channel::fold::state::talk::Message>, NotPaged> {
        let now = self.loaded_at();
        self.load(Sections::TALK, now);
        let identity = self.state.identity();
        let talk = self.state.talk()?;
        if let Some(message) = talk.message(id, identity) {
            return Ok(Some(message.clone()));
        }
        let upto = talk.paged_through();
        let Some(store) = self.store.as_mut().filter(|_| upto > 0) else {
            return Ok(None);
        };
        let mut found = None;
        let walked = store.walk_talk(0, upto, &mut |older, _| {
            found = older.iter().find(|message| message.id == *id).cloned();
            found.is_none()
        });
        if let Err(why) = walked {
            self.rebuild_after(vec![why], now);
            let identity = self.state.identity();
            return Ok(self.state.talk()?.message(id, identity).cloned());
        }
        Ok(found.filter(|message| talk_counts(&self.state, message)))
    }

    /// How many of talk's rows this session has read back from the kept state (for the tests
    /// of reads that need none).
    #[cfg(feature = "internals")]
    pub fn talk_rows_read(&self) -> u64 {
        self.store.as_ref().map_or(0, Store::talk_rows_read)
    }

    /// Names this machine (the binary reads its host name).
    pub fn set_machine(&mut self, name: impl Into<String>) {
        self.machine = name.into();
    }

    /// What runs here (the binary names the file it runs from).
    pub fn installed(&self) -> &super::ops::releases::Installed {
        &self.installed
    }

    /// Says what runs here: the binary passes the file it runs from, a test a copy.
    pub fn set_installed(&mut self, installed: super::ops::releases::Installed) {
        self.installed = installed;
    }

    pub fn home(&self) -> &Home {
        &self.home
    }

    pub fn channel(&self) -> &Channel {
        &self.channel
    }

    pub fn actor(&self) -> &Actor {
        &self.actor
    }

    pub fn state(&self) -> &ChannelState {
        &self.state
    }

    pub fn identity(&self) -> &Identity {
        self.state.identity()
    }

    /// Loads the lazy folds of `wanted` that are still in the kept state (each row read and
    /// checked once, when first needed); one that does not read is reported and everything
    /// is folded again from the channel. Then [`Session::state`] may hand them out.
    pub fn load(&mut self, wanted: Sections, now: Timestamp) -> &ChannelState {
        if self.state.missing(wanted).any() {
            let loaded = match &mut self.store {
                Some(store) => store.load_sections(&mut self.state, wanted),
                None => Err(NOTHING_KEPT.into()),
            };
            if let Err(why) = loaded {
                self.rebuild_after(vec![why], now);
            }
        }
        &self.state
    }

    /// The order board, loaded first if it is still in the kept state (a row that does not
    /// read is reported and everything folded again, so [`NotPaged`] would be a bug of the
    /// paging, answered as an error).
    pub fn board(&mut self) -> Result<&crate::channel::fold::state::OrderBoard, NotPaged> {
        let now = self.loaded_at();
        self.load(Sections::BOARD, now).orders()
    }

    /// Talk, loaded first if it is still in the kept state (see [`Session::board`]).
    pub fn talk(&mut self) -> Result<&crate::channel::fold::state::Talk, NotPaged> {
        let now = self.loaded_at();
        self.load(Sections::TALK, now).talk()
    }

    /// The order `id` if it counts, its whole paged in from its record if it is not in
    /// memory (with the board, if that is not loaded yet). A record that does not read is
    /// reported and everything folded again from the channel.
    pub fn order(
        &mut self,
        id: &EntryId,
    ) -> Result<Option<&crate::channel::fold::state::orders::Order>, NotPaged> {
        self.page_order(id);
        Ok(self.state.orders()?.get(id).and_then(|order| order.whole()))
    }

    /// Pages in the order `id` whole (and the board) if they are not in memory, so that
    /// [`Session::state`] hands it out whole.
    pub fn page_order(&mut self, id: &EntryId) {
        let now = self.loaded_at();
        self.load(Sections::BOARD, now);
        if self.state.record_to_page(id).is_none() {
            return;
        }
        let paged = match &mut self.store {
            Some(store) => store.page_orders(&mut self.state, std::slice::from_ref(id)),
            None => Err(NOTHING_KEPT.into()),
        };
        if let Err(why) = paged {
            self.rebuild_after(vec![why], now);
        }
    }

    /// The order board with every order whole paged in (a walk of the whole board: tests,
    /// tools that show every order). A record that does not read is reported and everything
    /// folded again from the channel.
    pub fn board_whole(&mut self) -> Result<&crate::channel::fold::state::OrderBoard, NotPaged> {
        let now = self.loaded_at();
        self.load(Sections::BOARD, now);
        let ids = self.state.orders_not_resident();
        if !ids.is_empty() {
            let paged = match &mut self.store {
                Some(store) => store.page_orders(&mut self.state, &ids),
                None => Err(NOTHING_KEPT.into()),
            };
            if let Err(why) = paged {
                self.rebuild_after(vec![why], now);
            }
        }
        self.state.orders()
    }

    /// Every fold loaded: the whole state.
    pub fn whole_state(&mut self) -> &ChannelState {
        let now = self.loaded_at();
        self.load(Sections::ALL, now)
    }

    /// When entries folded again after a failed load first arrived here: the session's own
    /// last look (a fold stamps arrivals, and a rebuild must not date them later than they
    /// were first seen; a rebuild is rare and its arrivals only feed liveness).
    fn loaded_at(&self) -> Timestamp {
        self.looked_at
    }

    /// Lets the kernel tell this session which logs change (Linux inotify), so that each
    /// refresh reads only those instead of looking at every log: for a session that lives long
    /// and refreshes often, as a server's does. Every [`LOOK_EVERYWHERE_EVERY_S`] seconds a
    /// refresh still looks at every log, for changes no event tells. False where the platform
    /// or the folder does not allow it (refreshes then look at every log, as without it).
    pub fn watch_channel(&mut self) -> bool {
        self.reader.watch()
    }

    /// The last seq read here of `author`'s log by `key` (0 when none was read).
    pub fn log_seq(&self, author: &AgentName, key: &PublicKey) -> u64 {
        let id = LogId {
            author: author.clone(),
            key: *key,
        };
        self.reader.log(&id).map_or(0, |log| log.last_seq())
    }

    /// The random tag of this machine's verified state (`since` cursors name it).
    pub fn generation(&self) -> u64 {
        self.generation
    }

    /// Names whose key differs from the key this machine pinned first.
    pub fn pin_changed(&self) -> &[AgentName] {
        &self.pin_changed
    }

    /// Integrity problems found in the channel so far, and how many more were not kept.
    pub fn integrity_problems(&self) -> (&[IntegrityProblem], u64) {
        (&self.problems, self.dropped_problems)
    }

    /// How many bytes this session's last save wrote (none before its first).
    pub fn last_save_bytes(&self) -> Option<u64> {
        self.written_len
    }

    /// Problems of this process with machine-state files.
    pub fn local_problems(&self) -> &[String] {
        &self.local_problems
    }

    /// The same session, for one operation that starts now (a command; a server's first call
    /// when it opens the session for it): the look the open took is that operation's look, so
    /// its first [`Session::refresh`] does not look again. The open and the operation are
    /// microseconds apart, and a write that lands between them is one that landed just after
    /// the look. A session that waits between its open and its first operation (a server's
    /// opened ahead of its first call) never takes this.
    pub fn for_one_operation(mut self) -> Self {
        self.looked_for_operation = true;
        self
    }

    /// Reads and folds what is new in the channel. It cannot fail: what does not read is
    /// kept in the problems. Returns how many entries were folded.
    pub fn refresh(&mut self, now: Timestamp) -> u64 {
        if std::mem::take(&mut self.looked_for_operation) {
            return 0;
        }
        self.refresh_with((now, Look::Everything), &mut |_| {})
    }

    /// [`Session::refresh`] of the logs `look` names, showing `seen` every entry read.
    fn refresh_with(
        &mut self,
        (now, look): (Timestamp, Look),
        seen: &mut dyn FnMut(&VerifiedEntry),
    ) -> u64 {
        self.looked_at = now;
        if self.reader.is_watching() {
            let due = self
                .looked_everywhere
                .is_none_or(|at| now.seconds_since(at) >= LOOK_EVERYWHERE_EVERY_S);
            if due {
                self.reader.look_everywhere_next();
                self.looked_everywhere = Some(now);
            }
        }
        let before = self.state.counter();
        let mut failures = Vec::new();
        let refolds = self.refolds;
        let mut pager = Pager {
            store: self.store.as_mut(),
            failures: &mut failures,
            paged_read: self
                .paged_read
                .as_ref()
                .filter(|read| read.key.refolds == refolds),
        };
        let folded = fold_new(
            &mut self.reader,
            &mut self.state,
            &mut pager,
            (now, look),
            seen,
        );
        if self.state.take_unpaged() && failures.is_empty() {
            failures.push("a fold step found a fold not loaded; rebuilt from the channel".into());
        }
        self.rebuild_after(failures, now);
        if folded.refolded {
            // A new identity counts its seat changes afresh: pin again. Every stamp was given
            // again: a remembered read among talk's rows names the old ones.
            self.pinned = None;
            self.dirty = true;
            self.refolds += 1;
            self.paged_read = None;
        }
        // Cleared first: a file replaced by something else at its path is reported anew.
        let cleared = self.reader.take_cleared();
        self.clear_problems(&cleared);
        self.keep_problems(folded.problems);
        self.dirty |= self.reader.take_settled();
        let folded = self.state.counter().saturating_sub(before);
        if folded > 0 {
            self.dirty = true;
        }
        folded
    }

    /// Reports what of the kept state did not read, and folds everything again from the
    /// channel (the state is then one whole, trusted in no part).
    fn rebuild_after(&mut self, failures: Vec<String>, now: Timestamp) {
        if failures.is_empty() {
            return;
        }
        self.local_problems.extend(failures);
        refold_all(&mut self.reader, &mut self.state, now);
        self.refolds += 1;
        self.paged_read = None;
        self.pinned = None;
        self.dirty = true;
    }

    /// Keeps the problems not kept yet (past [`MAX_KEPT_PROBLEMS`], counts them). Only a
    /// problem kept or counted makes the state need writing: one found again changes nothing.
    fn keep_problems(&mut self, problems: Vec<IntegrityProblem>) {
        for problem in problems {
            // A log read again after a rollback reports its bad lines again: kept once.
            if self.problem_set.contains(&problem) {
                continue;
            }
            if self.problems.len() < MAX_KEPT_PROBLEMS {
                self.problem_set.insert(problem.clone());
                self.problems.push(problem);
            } else {
                self.dropped_problems += 1;
            }
            self.dirty = true;
        }
    }

    /// Drops the kept problems that no longer hold. A cleared file problem that was not kept
    /// was counted among those not kept: the count goes down with it.
    fn clear_problems(&mut self, cleared: &[Cleared]) {
        if cleared.is_empty() {
            return;
        }
        let by_path: std::collections::HashMap<&std::path::Path, Vec<&Cleared>> = cleared
            .iter()
            .fold(Default::default(), |mut by_path, clear| {
                by_path.entry(clear.path()).or_default().push(clear);
                by_path
            });
        let mut matched: HashSet<&Cleared> = HashSet::new();
        let before = self.problems.len();
        let set = &mut self.problem_set;
        self.problems.retain(|problem| {
            let clear = by_path
                .get(problem.path.as_path())
                .and_then(|clears| clears.iter().find(|clear| clear.clears(problem)));
            match clear {
                Some(clear) => {
                    matched.insert(clear);
                    set.remove(problem);
                    false
                }
                None => true,
            }
        });
        let uncounted = cleared
            .iter()
            .filter(|clear| matches!(clear, Cleared::Listed(_)) && !matched.contains(clear))
            .count() as u64;
        let counted = self.dropped_problems.min(uncounted);
        self.dropped_problems -= counted;
        if self.problems.len() != before || counted > 0 {
            self.dirty = true;
        }
    }

    /// Writes the kept state to the state folder if it changed: one transaction of the rows
    /// that changed (ADR 0011), after which the board keeps no order whole. Failing costs only
    /// time on the next open, so the caller may report it and go on. A kept state whose path
    /// was refused at open (reported then) is not written.
    pub fn save(&mut self) -> Result<(), OpsError> {
        self.save_with(false)
    }

    /// As [`Session::save`], but the rows are written on a thread of their own (ADR 0024): a
    /// server's next call does not wait for them. This session's own reads of the kept state
    /// wait for that write first, and one that failed is reported and rebuilt from the
    /// channel. Dropping the session waits for it too.
    pub fn save_in_background(&mut self) -> Result<(), OpsError> {
        self.save_with(true)
    }

    /// Waits for a save being written in the background (tests and benches that read the
    /// database from elsewhere). One that failed is reported and rebuilt from the channel.
    pub fn wait_for_save(&mut self) {
        self.settle_store();
    }

    /// Takes the outcome of a background save: a failed one left rows unwritten whose folds
    /// this state no longer holds whole, so everything is folded again (reported).
    fn settle_store(&mut self) {
        let Some(store) = &mut self.store else {
            return;
        };
        let settled = store.settle();
        // A save that met another process's kept only records: this state is saved again.
        if store.take_unkept() {
            self.dirty = true;
        }
        if let Err(why) = settled {
            let now = self.loaded_at();
            self.rebuild_after(vec![why], now);
        }
    }

    fn save_with(&mut self, background: bool) -> Result<(), OpsError> {
        self.settle_store();
        if !self.dirty || self.read_only {
            return Ok(());
        }
        let Some(store) = &mut self.store else {
            return Ok(());
        };
        let reader = self.reader.state();
        let identity = self.channel.identity();
        let kept = KeptRef {
            genesis: &self.genesis,
            channel: &identity,
            generation: self.generation,
            reader: &reader,
            problems: &self.problems,
            dropped_problems: self.dropped_problems,
            pinned: &self.pinned,
        };
        let saved = if background {
            store.save_in_background(&kept, &mut self.state)
        } else {
            store.save(&kept, &mut self.state)
        };
        let written = saved.map_err(|why| HomeError::Io {
            path: self.home.verified_path(&self.project),
            cause: std::io::Error::other(why),
        })?;
        self.dirty = store.take_unkept();
        self.written_len = Some(written);
        Ok(())
    }

    /// The key of the acting agent on this machine.
    pub fn local_key(&self, now: Timestamp) -> Result<LocalKey, OpsError> {
        match &self.actor {
            Actor::Agent(name) => {
                Ok(self
                    .home
                    .key_state(&self.project, &KeyHolder::Agent(name.clone()), now)?)
            }
            Actor::Master => Ok(self
                .home
                .key_state(&self.project, &KeyHolder::Master, now)?),
            Actor::Observer => Ok(LocalKey::Missing),
        }
    }

    /// May the acting agent do `operation` (in `scope`) now? The human (master) may do
    /// everything its key here allows; an observer may only read.
    pub fn authorize(
        &self,
        operation: Operation,
        scope: Option<&str>,
        now: Timestamp,
    ) -> Result<Option<Level>, OpsError> {
        match &self.actor {
            Actor::Agent(name) if operation == Operation::Read && self.reads_without_key => {
                Ok(Some(self.identity().standing(name, now).level))
            }
            Actor::Agent(name) => {
                let local_key = self.local_key(now)?;
                let pause = self.home.pause_state()?;
                let request = Request {
                    agent: name,
                    local_key: &local_key,
                    operation,
                    scope,
                    paused: pause.as_ref().map(|pause| &pause.reason),
                    now,
                };
                Ok(Some(levels::authorize(self.identity(), &request)?))
            }
            // Reading needs only that the master key is here; writing opens it (a sealed
            // master key asks for its passphrase then, once).
            Actor::Master if operation == Operation::Read => {
                self.master_here(now)?;
                Ok(None)
            }
            Actor::Master => {
                self.master_key(now)?;
                Ok(None)
            }
            Actor::Observer if operation == Operation::Read => Ok(None),
            Actor::Observer => Err(OpsError::ReadOnly),
        }
    }

    /// Whether the current master's key is on this machine (sealed or not), without opening
    /// it; else [`OpsError::NotTheMaster`].
    fn master_here(&self, now: Timestamp) -> Result<(), OpsError> {
        match self
            .home
            .key_state(&self.project, &KeyHolder::Master, now)?
        {
            LocalKey::Ready(public) | LocalKey::Locked(public)
                if public == *self.identity().master() =>
            {
                Ok(())
            }
            _ => Err(OpsError::NotTheMaster(self.project.clone())),
        }
    }

    /// The current master key on this machine, or [`OpsError::NotTheMaster`].
    pub fn master_key(&self, now: Timestamp) -> Result<SecretKey, OpsError> {
        let master = match self.home.load_key(&self.project, &KeyHolder::Master, now) {
            Ok(master) => master,
            Err(HomeError::KeyMissing { .. }) => {
                return Err(OpsError::NotTheMaster(self.project.clone()));
            }
            Err(other) => return Err(other.into()),
        };
        if master.public_key() != *self.identity().master() {
            return Err(OpsError::NotTheMaster(self.project.clone()));
        }
        Ok(master)
    }

    /// Authorizes `operation` for the actor, then appends one entry of `kind` signed by its
    /// key, and folds it. An agent's entry says what its author had seen (`seen`, ADR 0005).
    /// The one path every write takes.
    pub fn append<B: EntryBody>(
        &mut self,
        operation: Operation,
        scope: Option<&str>,
        body: &B,
        now: Timestamp,
    ) -> Result<VerifiedEntry, OpsError> {
        if self.read_only {
            return Err(OpsError::ReadOnly);
        }
        let mut body = body.to_entry();
        self.refresh(now);
        self.authorize(operation, scope, now)?;
        let (author, key) = match &self.actor {
            Actor::Agent(name) => {
                let key =
                    self.home
                        .load_key(&self.project, &KeyHolder::Agent(name.clone()), now)?;
                let seen = self.identity().master_position();
                body.insert(SEEN_FIELD.into(), seen_json(seen));
                (name.clone(), key)
            }
            Actor::Master => {
                let key = self.master_key(now)?;
                self.accept_mastership(&key, now)?;
                (AgentName::master(), key)
            }
            Actor::Observer => return Err(OpsError::ReadOnly),
        };
        let entry = self.write(&author, &key, B::KIND, Value::Object(body), now)?;
        self.refresh(now);
        Ok(entry)
    }

    /// Appends without the level check: for entries every seated agent writes about itself
    /// (its roster entry) and that the fold judges alone.
    pub(crate) fn append_unchecked<B: EntryBody>(
        &mut self,
        author: &AgentName,
        key: &SecretKey,
        body: &B,
        now: Timestamp,
    ) -> Result<VerifiedEntry, OpsError> {
        let body = Value::Object(body.to_entry());
        let entry = self.write(author, key, B::KIND, body, now)?;
        self.refresh(now);
        Ok(entry)
    }

    fn write(
        &mut self,
        author: &AgentName,
        key: &SecretKey,
        kind: &str,
        body: Value,
        now: Timestamp,
    ) -> Result<VerifiedEntry, OpsError> {
        if self.read_only {
            return Err(OpsError::ReadOnly);
        }
        let public = key.public_key();
        let reuse = self
            .writer
            .as_ref()
            .is_some_and(|writer| writer.author() == author && writer.key() == public);
        if !reuse {
            let id = LogId {
                author: author.clone(),
                key: public,
            };
            let verified = self.reader.log(&id).cloned();
            self.writer = Some(self.channel.writer_from(author, key, verified)?);
        }
        let writer = self.writer.as_mut().expect("made above");
        let entry = writer.append(kind, body, now)?;
        let problems = writer.take_problems();
        self.keep_problems(problems);
        Ok(entry)
    }

    /// A new master's first entry is its `master.accept`, embedding the handover it accepts
    /// (so deleting the handover's line elsewhere cannot undo it, ADR 0004).
    fn accept_mastership(&mut self, key: &SecretKey, now: Timestamp) -> Result<(), OpsError> {
        let era = self.identity().era();
        if era == 0 {
            return Ok(());
        }
        let own = LogId {
            author: AgentName::master(),
            key: key.public_key(),
        };
        if self
            .reader
            .log(&own)
            .is_some_and(|log| log.verified_seq() > 0)
        {
            return Ok(());
        }
        let Some((seq, hash)) = self.identity().handover_of(era - 1) else {
            return Ok(());
        };
        let former = LogId {
            author: AgentName::master(),
            key: self.identity().masters()[era as usize - 1],
        };
        let Some(line) = self.reader.line_of(&former, seq, &hash) else {
            return Err(OpsError::HandoverLineMissing);
        };
        let accept = AcceptBody { handover: line };
        self.write(
            &AgentName::master(),
            key,
            AcceptBody::KIND,
            Value::Object(accept.to_entry()),
            now,
        )?;
        Ok(())
    }

    /// Refuses a text shaped like a secret, or (an agent's post or summary) like code (the
    /// guard). The human's texts are judged for secrets alike: the channel keeps what anyone
    /// writes, and the human may paste code where an agent may not.
    ///
    /// The text is also read joined with the end of what the same author wrote last,
    /// whatever kind of entry it was (a post, a progress line, a summary, an ask's fields),
    /// as the folds keep it (`ChannelState::tails`, in the core: no board or talk is read): a
    /// token cut in two, one half in each, is refused as a whole (ADR 0015).
    pub fn guard(&self, text: &str, used_as: TextUse) -> Result<(), OpsError> {
        let author = match &self.actor {
            Actor::Agent(name) => {
                guard::check(text, used_as)?;
                name.clone()
            }
            Actor::Master => {
                guard::check_secrets(text)?;
                AgentName::master()
            }
            Actor::Observer => return Ok(guard::check_secrets(text)?),
        };
        match self.state.tails().of(&author) {
            Some(before) => Ok(guard::check_seam(text, &[before])?),
            None => Ok(()),
        }
    }

    /// The short id of an entry this session folded (ADR 0007).
    pub fn id_of(&self, entry: &VerifiedEntry) -> EntryId {
        if entry.author().is_master() {
            let era = match self.identity().master_entry(entry) {
                MasterEntry::Counts(pos) => pos.0,
                MasterEntry::DoesNotCount => self.identity().era(),
            };
            EntryId::Master {
                era,
                seq: entry.seq(),
            }
        } else {
            EntryId::Agent {
                name: entry.author().clone(),
                seq: entry.seq(),
            }
        }
    }

    /// The channel folder.
    pub fn channel_dir(&self) -> PathBuf {
        self.channel.dir().to_owned()
    }
}

/// `[era, seq]`.
fn seen_json(pos: MasterPos) -> Value {
    Value::Array(vec![pos.0.into(), pos.1.into()])
}

/// A random tag for a new verified state; a fixed one if the system has no randomness
/// (cursors then only lose the ability to tell two states apart).
fn new_generation(problems: &mut Vec<String>) -> u64 {
    let mut bytes = [0u8; 8];
    if getrandom::fill(&mut bytes).is_err() {
        problems.push("no random bytes for the verified state's tag".into());
        return GENERATION_FLOOR;
    }
    generation_from(u64::from_le_bytes(bytes))
}

/// The smallest tag: 36^12, the first of thirteen base-36 digits. Every tag has thirteen, so a
/// cursor naming it is always as long (and costs a client the same tokens).
const GENERATION_FLOOR: u64 = 36u64.pow(12);

fn generation_from(random: u64) -> u64 {
    GENERATION_FLOOR + random % (u64::MAX - GENERATION_FLOOR)
}

/// Lowers the priority of the calling thread (Linux: niceness is per thread), so that a channel
/// opened in the background never delays the thread answering `initialize` and `tools/list` on
/// a machine with few cores. Elsewhere, or if refused, nothing changes.
fn give_way_to_the_client() {
    #[cfg(target_os = "linux")]
    {
        let _ = rustix::process::setpriority_process(Some(rustix::thread::gettid()), 10);
    }
}

/// How often a watched session looks at every log whatever the kernel said.
pub const LOOK_EVERYWHERE_EVERY_S: u64 = 60;

/// The open's speed mechanisms, each on by default: a value, so that a bench measures the open
/// with and without each (ADR 0011: each mechanism earns its place on a path a user waits on).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OpenMechanisms {
    /// The paths the last full look stat'ed are stat'ed again on another core while the kept
    /// state is read ([`Prelook`]).
    pub prelook: bool,
    /// An unchanged stamp spares reading a log's last verified line and listing a folder
    /// ([`Reader::use_stamps`]).
    pub stamps: bool,
}

impl Default for OpenMechanisms {
    fn default() -> Self {
        Self {
            prelook: true,
            stamps: true,
        }
    }
}

/// When a long-running server writes its kept state: a value, so a test reaches its
/// thresholds with a small channel.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SavePolicy {
    /// At most this often (ms).
    pub every_ms: u64,
    /// At most this many bytes a millisecond on average: a save writes the rows that changed
    /// (the core, which holds every log's position, and the folds and records that changed);
    /// what a later save leaves unwritten costs only time (another process on this machine
    /// verifies the entries since again), never an entry.
    pub bytes_per_ms: u64,
    /// Holding more orders whole than this, the server writes as soon as [`Self::every_ms`]
    /// allows whatever its size: the save lets the board drop them from memory (a handover,
    /// which reads every record, would otherwise hold them all until the next save).
    pub resident_orders: usize,
    /// Whether the rows are written on a thread of their own, so the next call does not wait
    /// for them (ADR 0024); else on the answering thread, as before that ADR (for A/B benches).
    pub in_background: bool,
}

impl Default for SavePolicy {
    /// Every 2 s at most, 100 KB/s on average, 1,000 orders whole; written in the background.
    fn default() -> Self {
        Self {
            every_ms: 2_000,
            bytes_per_ms: 100,
            resident_orders: 1_000,
            in_background: true,
        }
    }
}

impl SavePolicy {
    /// How long after writing `written` bytes a server writes again, at the earliest.
    pub fn interval_ms(&self, written: u64) -> u64 {
        self.every_ms.max(written / self.bytes_per_ms.max(1))
    }
}

/// What of the identity a server writes within [`SavePolicy::every_ms`] of its changing, whatever the
/// size of the state: who holds which name, and how far the master's entries were folded. The
/// kept state is also this machine's witness of what it verified (ADR 0004): a grant, a
/// demotion or a handover deleted from the channel after it was folded here keeps counting
/// here only once it is kept.
fn identity_marks(session: &Session) -> (u64, MasterPos) {
    let identity = session.identity();
    (identity.seat_epoch(), identity.master_position())
}

/// The session of a server (one process, one agent, one project: `docs/mcp-server.md`), opened on the
/// first call that needs it, or in the background after [`LazySession::prefetch`], so that
/// `initialize` and `tools/list` never wait for the channel. An open that failed (an unknown
/// project, say) is tried again on the next call; the kept state is written as its
/// [`SavePolicy`] allows (by default at most every two seconds, and at most 100 KB a second on
/// average) and when the server stops.
pub struct LazySession {
    home: Home,
    project: ProjectId,
    actor: Actor,
    slot: Slot,
    queue: Option<Box<dyn HeavyQueue + Send>>,
    saved_at: Option<Timestamp>,
    /// The length of the verified state last written (what the next save waits for).
    saved_len: u64,
    /// The identity's marks at the last save ([`identity_marks`]).
    saved_identity: Option<(u64, MasterPos)>,
    machine: Option<String>,
    installed: Option<super::ops::releases::Installed>,
    policy: SavePolicy,
    /// Opens with [`Session::open_read_only`]: the server writes nothing.
    read_only: bool,
}

enum Slot {
    Closed,
    Opening(std::thread::JoinHandle<Result<Session, OpsError>>),
    Open(Box<Session>),
}

impl std::fmt::Debug for LazySession {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let slot = match &self.slot {
            Slot::Closed => "closed",
            Slot::Opening(_) => "opening",
            Slot::Open(_) => "open",
        };
        f.debug_struct("LazySession")
            .field("project", &self.project)
            .field("actor", &self.actor)
            .field("slot", &slot)
            .finish_non_exhaustive()
    }
}

impl LazySession {
    pub fn new(home: Home, project: ProjectId, actor: Actor) -> Self {
        Self {
            home,
            project,
            actor,
            slot: Slot::Closed,
            queue: None,
            saved_at: None,
            saved_len: 0,
            saved_identity: None,
            machine: None,
            installed: None,
            policy: SavePolicy::default(),
            read_only: false,
        }
    }

    /// Opens the session to read only ([`Session::open_read_only`]): no presence, no read
    /// marker, no kept state, no lock: nothing written anywhere.
    pub fn read_only(mut self) -> Self {
        self.read_only = true;
        self
    }

    fn open_session(
        home: &Home,
        project: &ProjectId,
        actor: Actor,
        now: Timestamp,
        read_only: bool,
    ) -> Result<Session, OpsError> {
        if read_only {
            Session::open_read_only(home, project, actor, now)
        } else {
            Session::open(home, project, actor, now)
        }
    }

    /// When it writes the kept state (else [`SavePolicy::default`]).
    pub fn with_save_policy(mut self, policy: SavePolicy) -> Self {
        self.policy = policy;
        self
    }

    /// What runs here, for the session once it is open (else [`Installed::this_build`]
    /// with no binary to replace).
    ///
    /// [`Installed::this_build`]: super::ops::releases::Installed::this_build
    pub fn with_installed(mut self, installed: super::ops::releases::Installed) -> Self {
        self.installed = Some(installed);
        self
    }

    /// This machine's name, for the session once it is open.
    pub fn with_machine(mut self, name: impl Into<String>) -> Self {
        self.machine = Some(name.into());
        self
    }

    /// The machine's queue for heavy work, as the binary found it.
    pub fn with_queue(mut self, queue: Box<dyn HeavyQueue + Send>) -> Self {
        self.queue = Some(queue);
        self
    }

    /// Starts opening the session on another thread; the first call waits for it only if it
    /// is not done yet.
    pub fn prefetch(&mut self, now: Timestamp) {
        if !matches!(self.slot, Slot::Closed) {
            return;
        }
        let (home, project, actor) = (self.home.clone(), self.project.clone(), self.actor.clone());
        let read_only = self.read_only;
        let spawned = std::thread::Builder::new()
            .name("channel".into())
            .spawn(move || {
                give_way_to_the_client();
                // A server lives for hours while other processes save: it loads every fold
                // now, from the snapshot it opened, rather than hours later (ADR 0011).
                let mut session = Self::open_session(&home, &project, actor, now, read_only)?;
                session.load(Sections::ALL, now);
                Ok(session)
            });
        if let Ok(handle) = spawned {
            self.slot = Slot::Opening(handle);
        }
    }

    /// The open session, if it is open.
    pub fn opened(&mut self) -> Option<&mut Session> {
        match &mut self.slot {
            Slot::Open(session) => Some(session),
            _ => None,
        }
    }

    /// Whether the open session's identity moved since the last save ([`identity_marks`]).
    fn identity_moved(&self) -> bool {
        match &self.slot {
            Slot::Open(session) => Some(identity_marks(session)) != self.saved_identity,
            _ => false,
        }
    }

    /// Whether the open session's board holds more orders whole than the policy allows.
    fn holds_many_orders_whole(&self) -> bool {
        match &self.slot {
            Slot::Open(session) => session
                .state()
                .orders()
                .is_ok_and(|board| board.resident() > self.policy.resident_orders),
            _ => false,
        }
    }

    fn save(&mut self, now: Timestamp) {
        if let Slot::Open(session) = &mut self.slot {
            let saved = if self.policy.in_background {
                session.save_in_background()
            } else {
                session.save()
            };
            match saved {
                Ok(()) => {
                    self.saved_len = session.written_len.unwrap_or(self.saved_len);
                    self.saved_identity = Some(identity_marks(session));
                }
                Err(err) => session
                    .local_problems
                    .push(format!("the kept state was not written: {err}")),
            }
            self.saved_at = Some(now);
        }
    }
}

impl LazySession {
    /// The session, opened now if it is not yet, or why it cannot be.
    pub fn session(&mut self, now: Timestamp) -> Result<&mut Session, Unavailable> {
        if let Slot::Opening(_) = self.slot {
            let Slot::Opening(handle) = std::mem::replace(&mut self.slot, Slot::Closed) else {
                unreachable!("matched above");
            };
            match handle.join() {
                Ok(Ok(mut session)) => {
                    if let Some(machine) = &self.machine {
                        session.set_machine(machine.clone());
                    }
                    if let Some(installed) = &self.installed {
                        session.set_installed(installed.clone());
                    }
                    session.watch_channel();
                    self.slot = Slot::Open(Box::new(session));
                }
                Ok(Err(err)) => return Err(unavailable(&err)),
                Err(_) => {}
            }
        }
        if let Slot::Closed = self.slot {
            let mut session = Self::open_session(
                &self.home,
                &self.project,
                self.actor.clone(),
                now,
                self.read_only,
            )
            .map_err(|err| unavailable(&err))?
            .for_one_operation();
            session.load(Sections::ALL, now);
            if let Some(machine) = &self.machine {
                session.set_machine(machine.clone());
            }
            if let Some(installed) = &self.installed {
                session.set_installed(installed.clone());
            }
            session.watch_channel();
            self.slot = Slot::Open(Box::new(session));
        }
        match &mut self.slot {
            Slot::Open(session) => Ok(session),
            _ => unreachable!("opened above"),
        }
    }

    /// The session and this machine's queue for heavy work.
    pub fn session_and_queue(
        &mut self,
        now: Timestamp,
    ) -> Result<(&mut Session, Option<&dyn HeavyQueue>), Unavailable> {
        self.session(now)?;
        let queue = self.queue.as_deref().map(|queue| queue as &dyn HeavyQueue);
        match &mut self.slot {
            Slot::Open(session) => Ok((session, queue)),
            _ => unreachable!("opened above"),
        }
    }

    /// Waits for a save being written in the background (tests that read the kept state
    /// from another connection right after a flush).
    pub fn wait_for_save(&mut self) {
        if let Slot::Open(session) = &mut self.slot {
            session.wait_for_save();
        }
    }

    /// Keeps what was verified when the save policy says it is due. The rows are written on
    /// a thread of their own: the next call does not wait for them (ADR 0024).
    pub fn flush(&mut self, now: Timestamp) {
        let due = match self.saved_at {
            None => true,
            Some(at) => {
                let elapsed = now.as_millis().saturating_sub(at.as_millis());
                elapsed >= self.policy.interval_ms(self.saved_len)
                    || (elapsed >= self.policy.every_ms
                        && (self.identity_moved() || self.holds_many_orders_whole()))
            }
        };
        if due {
            self.save(now);
        }
    }
}

impl ChannelAccess for LazySession {
    fn channel(&mut self, now: Timestamp) -> Result<&mut dyn port::Channel, Unavailable> {
        Ok(self.session(now)?)
    }

    fn channel_and_queue(
        &mut self,
        now: Timestamp,
    ) -> Result<(&mut dyn port::Channel, Option<&dyn HeavyQueue>), Unavailable> {
        let (session, queue) = self.session_and_queue(now)?;
        Ok((session, queue))
    }

    fn flush(&mut self, now: Timestamp) {
        LazySession::flush(self, now);
    }
}

impl Drop for LazySession {
    fn drop(&mut self) {
        let at = self.saved_at.unwrap_or_default();
        self.save(at);
    }
}

fn unavailable(err: &OpsError) -> Unavailable {
    Unavailable::Failed {
        code: err.code(),
        message: err.to_string(),
        fix: err.fix(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_server_writes_a_small_state_every_two_seconds_and_a_large_one_at_100_kb_a_second() {
        let policy = SavePolicy::default();
        assert_eq!(policy.interval_ms(0), 2_000);
        assert_eq!(policy.interval_ms(150_000), 2_000);
        // 100,000 entries of work on 10,000 orders, written whole.
        assert_eq!(policy.interval_ms(17_000_000), 170_000);
    }

    #[test]
    fn every_generation_is_thirteen_base36_digits() {
        for random in [
            0,
            1,
            7,
            GENERATION_FLOOR - 1,
            u64::MAX / 2,
            u64::MAX - 1,
            u64::MAX,
        ] {
            let generation = generation_from(random);
            assert!(generation >= GENERATION_FLOOR, "{random}");
            let mut digits = 0;
            let mut n = generation;
            while n > 0 {
                n /= 36;
                digits += 1;
            }
            assert_eq!(digits, 13, "{random} -> {generation}");
        }
    }
}

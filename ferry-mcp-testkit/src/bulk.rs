//! Channels built in bulk: a busy board, a large history, or any number of entries and seated
//! names, for the benches and for tests that need more than a handful of entries.
//!
//! Why a module of its own: every real operation fsyncs its entry (about 2 ms on a common
//! disk) and reads what is new first, so writing 100,000 entries one `ops` call at a time
//! takes many minutes. This module writes exactly what the operations would have written
//! (the same kinds and bodies, `seen` in every agent entry, the order chains' `after`
//! hashes, signed by the same keys and chained by `prev`), but in bulk: the lines of a batch
//! are signed on every core, each log gets one write per batch, and nothing is fsynced.
//! 100,000 entries take seconds.
//!
//! Everything around the lines is real: the project and its master key come from `ops::init`
//! in a temporary state folder (so `Session::open` works), the acting agents' keys are stored
//! by `Home::store_key` (so `Actor::Agent` sessions can write), agents are seated by their own
//! `roster.join` lines and granted by the master's `grant` lines. Every body is the typed body
//! the operations write (`channel::fold::body::EntryBody`), so the two never spell one differently.
//! The tests below fold the result and find no integrity or fold problem.
//!
//! Names are spread over the alphabet on purpose (`ada-1` sorts before `master`, `tom-1`
//! after it): readers take logs by author name, and both cases occur in real fleets.

use std::collections::BTreeMap;
use std::fs::{self, OpenOptions};
use std::io::Write as _;
use std::ops::Deref;
use std::path::{Path, PathBuf};

use ferry_mcp_core::channel::fold::body::{EntryBody, JoinBody};
use ferry_mcp_core::channel::fold::checkpoint::{CheckpointBody, Tip};
use ferry_mcp_core::channel::fold::identity::GrantBody;
use ferry_mcp_core::channel::fold::levels::Level;
use ferry_mcp_core::channel::fold::state::orders::{
    CancelBody, ClaimBody, HandInBody, Hints, IssueBody, ProgressBody, ReleaseBody, ReviewBody,
    SubmitBody, Verdict, kinds,
};
use ferry_mcp_core::channel::fold::state::talk::PostBody;
use ferry_mcp_core::channel::log::entry::{Entry, EntryHash};
use ferry_mcp_core::channel::log::keys::{PublicKey, SecretKey};
use ferry_mcp_core::channel::log::names::{AgentName, ProjectId};
use ferry_mcp_core::channel::log::store::Channel;
use ferry_mcp_core::channel::machine::home::{Home, KeyHolder};
use ferry_mcp_core::channel::ops;
use ferry_mcp_core::channel::session::{Actor, Session};
use ferry_mcp_core::time::Timestamp;
use serde_json::{Value, json};

use crate::clock::{Clock, START};
use crate::temp_channel::TempChannel;

/// Entries signed and written per batch: bounds memory whatever the size of the channel.
const BATCH: usize = 16_384;
/// The declared time advances this much per entry.
const STEP_MS: u64 = 100;
/// First names the agents' names are made from, spread over the alphabet around `master`.
const FIRST_NAMES: &[&str] = &[
    "ada", "tom", "bea", "ulf", "cai", "vic", "dov", "wes", "eli", "xia", "fay", "yan", "gus",
    "zoe", "ida", "nia",
];

/// An acting agent of a bulk channel: seated, granted its level, its key on this machine.
#[derive(Debug, Clone)]
pub struct BulkAgent {
    pub name: AgentName,
    pub level: Level,
}

/// A channel built in bulk on temporary folders; derefs to its [`TempChannel`] for sessions.
#[derive(Debug)]
pub struct BulkChannel {
    temp: TempChannel,
    agents: Vec<BulkAgent>,
    entries: u64,
    orders: u64,
}

impl Deref for BulkChannel {
    type Target = TempChannel;
    fn deref(&self) -> &TempChannel {
        &self.temp
    }
}

impl BulkChannel {
    /// The acting agents (seated, granted, with their keys here), in seating order.
    pub fn agents(&self) -> &[BulkAgent] {
        &self.agents
    }

    /// The first acting agent at `level`.
    pub fn agent_at(&self, level: Level) -> &AgentName {
        &self
            .agents
            .iter()
            .find(|agent| agent.level == level)
            .expect("the bulk channel has an agent at this level")
            .name
    }

    /// How many entries the channel holds, in all logs.
    pub fn entries(&self) -> u64 {
        self.entries
    }

    /// How many orders were issued.
    pub fn orders(&self) -> u64 {
        self.orders
    }

    /// This machine's verified state file of the project (ADR 0004): delete it for a cold open.
    pub fn verified_path(&self) -> PathBuf {
        self.home().verified_path(self.project())
    }

    /// Opens the channel once and keeps the verified state, so later opens are warm. Returns
    /// the session it opened.
    pub fn warm(&self) -> Session {
        let mut session = self.session(Actor::Observer);
        session.save().expect("the verified state is written");
        session
    }
}

/// The file beside a cached channel's folders that says what it is ([`BulkBuilder::build_cached`]).
const CACHE_MANIFEST: &str = "bulk.json";

impl BulkChannel {
    /// A copy of the channel cached in `kept` by [`BulkBuilder::build_cached`].
    fn copied_from(kept: &Path) -> BulkChannel {
        let text = fs::read_to_string(kept.join(CACHE_MANIFEST)).expect("a cached bulk channel");
        let manifest: Value = serde_json::from_str(&text).expect("the cache's manifest reads");
        let number = |field: &str| {
            manifest[field]
                .as_u64()
                .unwrap_or_else(|| panic!("the cache's manifest has no {field}"))
        };
        let agents = manifest["agents"]
            .as_array()
            .expect("the cache's manifest lists the agents")
            .iter()
            .map(|agent| BulkAgent {
                name: AgentName::parse(agent[0].as_str().expect("a name")).expect("a valid name"),
                level: agent[1]
                    .as_str()
                    .expect("a level")
                    .parse()
                    .expect("a valid level"),
            })
            .collect();
        let project = ProjectId::parse(manifest["project"].as_str().expect("a project id"))
            .expect("a valid project id");
        let root = tempfile::tempdir().expect("a temporary folder");
        copy_tree(&kept.join("home"), &root.path().join("home"));
        copy_tree(&kept.join("channel"), &root.path().join("channel"));
        let home = Home::at(root.path().join("home"));
        let channel_dir = root.path().join("channel");
        // The state folder names the channel by its path: register it where it is now.
        fs::remove_file(
            root.path()
                .join("home/projects")
                .join(project.as_str())
                .join("project.json"),
        )
        .expect("the copied registration");
        home.register_project(&project, &channel_dir)
            .expect("the copied channel is registered");
        BulkChannel {
            temp: TempChannel::from_parts(
                root,
                home,
                channel_dir,
                project,
                Clock::at(Timestamp::from_millis(number("now"))),
            ),
            agents,
            entries: number("entries"),
            orders: number("orders"),
        }
    }
}

/// Copies the folder `from` to `to`, files and folders (a bulk channel holds nothing else).
fn copy_tree(from: &Path, to: &Path) {
    fs::create_dir_all(to).expect("a folder");
    for entry in fs::read_dir(from).expect("a folder to copy") {
        let entry = entry.expect("an entry");
        let target = to.join(entry.file_name());
        if entry.file_type().expect("a type").is_dir() {
            copy_tree(&entry.path(), &target);
        } else {
            fs::copy(entry.path(), target).expect("a copy");
        }
    }
}

/// A bulk channel of `entries` entries of fleet work (see [`BulkBuilder`]).
pub fn builder() -> BulkBuilder {
    BulkBuilder {
        project: "bulk".into(),
        entries: 0,
        names: 0,
        agents: None,
        orders: None,
        talk_percent: 0,
        checkpoint: false,
    }
}

/// The busy board of the budget test's (`docs/mcp-budgets.md`): 200 entries, 40 open (not accepted, not
/// cancelled) orders, two Workers, three Members and two Orchestrators; orders in every state
/// (open, offered, claimed, in progress, submitted, changes requested, accepted, cancelled),
/// with progress lines, hand-ins, a release and an order issued by an Orchestrator.
pub fn busy() -> BulkChannel {
    use Life::*;
    let mut lives = Vec::new();
    for (life, count) in [
        (OpenByOrchestrator, 1),
        (Open, 9),
        (Released, 2),
        (Offered, 5),
        (Claimed, 6),
        (InProgress, 7),
        (Submitted, 5),
        (ChangesRequested, 5),
        (Accepted, 3),
        (AcceptedReviewed, 3),
        (CancelledOpen, 2),
        (CancelledHeld, 1),
    ] {
        lives.extend(std::iter::repeat_n(life, count));
    }
    Plan {
        project: "busy".into(),
        fleet: Fleet {
            workers: 2,
            members: 3,
            orchestrators: 2,
        },
        lives,
        entries: 200,
        names: 0,
        talk: 0,
        checkpoint: false,
    }
    .build()
}

/// The large channel: 100,000 entries, 10,000 orders, 100 agents; mostly progress lines and
/// order events, 40% of the orders still open (15% claimable).
pub fn large() -> BulkChannel {
    builder()
        .project("large")
        .entries(100_000)
        .agents(100)
        .orders(10_000)
        .build()
}

/// Builds a bulk channel: `entries` entries of fleet work (the acting agents' roster entries
/// and grants, orders and their events, progress lines, hand-ins) plus `names` more seated
/// names (one `roster.join` each, in its own log; no key stored here, as for agents seated on
/// other machines). Zero entries is an empty channel (genesis only).
#[derive(Debug, Clone)]
pub struct BulkBuilder {
    project: String,
    entries: u64,
    names: u64,
    agents: Option<u32>,
    orders: Option<u64>,
    talk_percent: u8,
    checkpoint: bool,
}

impl BulkBuilder {
    /// This share of the entries (in percent) are posts between the agents, spread over the
    /// history; the rest is order work (default 0: order work only).
    pub fn talk_percent(mut self, percent: u8) -> Self {
        assert!(percent < 100, "a bulk channel keeps some order work");
        self.talk_percent = percent;
        self
    }

    /// Ends the history with the master's checkpoint of every agent's log (ADR 0023), one
    /// entry more than asked for.
    pub fn checkpoint(mut self) -> Self {
        self.checkpoint = true;
        self
    }

    /// Entries of fleet work (default 0).
    pub fn entries(mut self, entries: u64) -> Self {
        self.entries = entries;
        self
    }

    /// Seated names on top of the entries (default 0).
    pub fn names(mut self, names: u64) -> Self {
        self.names = names;
        self
    }

    /// Acting agents (default: one per 1,000 entries, 5 to 100): a tenth Orchestrators, a
    /// tenth Workers, the rest Members.
    pub fn agents(mut self, agents: u32) -> Self {
        self.agents = Some(agents);
        self
    }

    /// Orders (default: one per 10 entries).
    pub fn orders(mut self, orders: u64) -> Self {
        self.orders = Some(orders);
        self
    }

    /// The project id (default `bulk`).
    pub fn project(mut self, id: &str) -> Self {
        id.clone_into(&mut self.project);
        self
    }

    /// Builds the channel once into `cache` and copies it from there afterwards: what the
    /// benches use for channels that take minutes to build and fold (1,000,000 entries). The
    /// first call builds the channel, opens it once (so its kept state is written, as
    /// [`BulkChannel::warm`] does) and copies its folders to `cache/<plan>`; every call then
    /// returns a copy of that folder on temporary folders of its own, so what a caller writes
    /// never reaches the cache. The plan's name holds every setting of the builder and the kept
    /// state's format; a change to what the builder writes needs the cache folder deleted.
    pub fn build_cached(self, cache: &Path) -> BulkChannel {
        let plan = format!(
            "{}-e{}-n{}-a{}-o{}-t{}{}-kept{}",
            self.project,
            self.entries,
            self.names,
            self.agents.map_or("auto".to_owned(), |a| a.to_string()),
            self.orders.map_or("auto".to_owned(), |o| o.to_string()),
            self.talk_percent,
            if self.checkpoint { "-checkpoint" } else { "" },
            ferry_mcp_core::channel::session::kept::FORMAT,
        );
        let kept = cache.join(&plan);
        if !kept.join(CACHE_MANIFEST).exists() {
            let built = self.build();
            drop(built.warm());
            let making = cache.join(format!("{plan}.making"));
            let _ = fs::remove_dir_all(&making);
            copy_tree(built.root(), &making);
            let manifest = json!({
                "project": built.project().as_str(),
                "entries": built.entries,
                "orders": built.orders,
                "now": built.now().as_millis(),
                "agents": built
                    .agents
                    .iter()
                    .map(|agent| json!([agent.name.as_str(), agent.level.to_string()]))
                    .collect::<Vec<_>>(),
            });
            fs::write(making.join(CACHE_MANIFEST), manifest.to_string())
                .expect("the cache's manifest is written");
            let _ = fs::remove_dir_all(&kept);
            fs::rename(&making, &kept).expect("the cached channel is put in place");
        }
        BulkChannel::copied_from(&kept)
    }

    pub fn build(self) -> BulkChannel {
        if self.entries == 0 {
            return Plan {
                project: self.project,
                fleet: Fleet::default(),
                lives: Vec::new(),
                entries: 0,
                names: self.names,
                talk: 0,
                checkpoint: self.checkpoint,
            }
            .build();
        }
        let agents = self.agents.unwrap_or_else(|| {
            u32::try_from(self.entries / 1_000)
                .unwrap_or(u32::MAX)
                .clamp(5, 100)
        });
        assert!(agents >= 3, "a bulk fleet has at least three agents");
        let orchestrators = (agents / 10).max(1);
        let workers = (agents / 10).max(1);
        let fleet = Fleet {
            workers,
            members: agents - orchestrators - workers,
            orchestrators,
        };
        let talk = self.entries * u64::from(self.talk_percent) / 100;
        let work = self.entries - talk;
        let budget = work
            .checked_sub(fleet.header())
            .expect("more entries than the fleet's roster entries and grants");
        let mut orders = self.orders.unwrap_or(work / 10);
        let lives = loop {
            let lives: Vec<Life> = (0..orders)
                .map(|i| CYCLE[(i % CYCLE.len() as u64) as usize])
                .collect();
            if lives.iter().map(|life| life.min_entries()).sum::<u64>() <= budget {
                break lives;
            }
            orders -= 1;
        };
        Plan {
            project: self.project,
            fleet,
            lives,
            entries: self.entries,
            names: self.names,
            talk,
            checkpoint: self.checkpoint,
        }
        .build()
    }
}

/// What an order goes through in a bulk channel, named by where it ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Life {
    Open,
    OpenByOrchestrator,
    Offered,
    Claimed,
    InProgress,
    Submitted,
    ChangesRequested,
    /// Submitted with a ref, no review needed.
    Accepted,
    /// A Worker hands in, the holder submits the hand-in, an Orchestrator accepts.
    AcceptedReviewed,
    CancelledOpen,
    CancelledHeld,
    /// Claimed, then given back: open again.
    Released,
}

/// The mix of the generated channels: 40% of orders not done, 15% claimable.
const CYCLE: [Life; 20] = {
    use Life::*;
    [
        AcceptedReviewed,
        Accepted,
        InProgress,
        Open,
        AcceptedReviewed,
        Submitted,
        Accepted,
        Offered,
        AcceptedReviewed,
        ChangesRequested,
        Accepted,
        Claimed,
        AcceptedReviewed,
        CancelledOpen,
        Accepted,
        InProgress,
        AcceptedReviewed,
        Open,
        AcceptedReviewed,
        CancelledHeld,
    ]
};

impl Life {
    /// Entries it takes with no progress line beyond the required ones.
    fn min_entries(self) -> u64 {
        match self {
            Life::Open | Life::OpenByOrchestrator | Life::Offered => 1,
            Life::Claimed | Life::CancelledOpen => 2,
            Life::InProgress | Life::Accepted | Life::CancelledHeld | Life::Released => 3,
            Life::Submitted | Life::ChangesRequested => 4,
            Life::AcceptedReviewed => 5,
        }
    }

    /// Whether it can take more progress lines (an order held for a while).
    fn takes_progress(self) -> bool {
        matches!(
            self,
            Life::InProgress
                | Life::Submitted
                | Life::ChangesRequested
                | Life::Accepted
                | Life::AcceptedReviewed
                | Life::CancelledHeld
        )
    }
}

/// How many acting agents at each level.
#[derive(Debug, Clone, Copy, Default)]
struct Fleet {
    workers: u32,
    members: u32,
    orchestrators: u32,
}

impl Fleet {
    /// Roster entries and grants.
    fn header(self) -> u64 {
        u64::from(self.workers) + 2 * u64::from(self.members + self.orchestrators)
    }
}

struct Plan {
    project: String,
    fleet: Fleet,
    lives: Vec<Life>,
    /// Entries in all (order work and talk), exactly.
    entries: u64,
    names: u64,
    /// Of `entries`, how many are posts.
    talk: u64,
    /// Whether the master's checkpoint ends the history.
    checkpoint: bool,
}

impl Plan {
    fn build(self) -> BulkChannel {
        let root = tempfile::tempdir().expect("a temporary folder");
        let home = Home::at(root.path().join("home"));
        let channel_dir = root.path().join("channel");
        let project = ProjectId::parse(&self.project).expect("a valid bulk project id");
        ops::init(&home, &project, &channel_dir, None, START).expect("the project is created");
        let master = home
            .load_key(&project, &KeyHolder::Master, START)
            .expect("the master key init stored");
        let channel = Channel::open(&channel_dir).expect("the channel init created");
        let mut board = Board {
            writer: Writer {
                channel,
                project: project.clone(),
                logs: vec![Log::new(AgentName::master(), master)],
                pending: Vec::new(),
                time: START.as_millis(),
                written: 0,
            },
            agents: Vec::new(),
            orders: Vec::new(),
            next_member: 0,
            next_orchestrator: 0,
            next_worker: 0,
        };
        let mut agents = Vec::new();
        let levels = std::iter::repeat_n(Level::Orchestrator, self.fleet.orchestrators as usize)
            .chain(std::iter::repeat_n(
                Level::Member,
                self.fleet.members as usize,
            ))
            .chain(std::iter::repeat_n(
                Level::Worker,
                self.fleet.workers as usize,
            ));
        for (i, level) in levels.enumerate() {
            let name = agent_name(i, "");
            home.store_key(
                &project,
                &KeyHolder::Agent(name.clone()),
                &agent_key(i as u64),
                None,
            )
            .expect("the agent's key is stored");
            board.seat(name.clone(), agent_key(i as u64), level);
            agents.push(BulkAgent { name, level });
        }
        for i in 0..board.agents.len() {
            if board.agents[i].level > Level::Worker {
                board.grant(i);
            }
        }
        // Progress lines fill the plan up to exactly `entries`.
        let fixed = self.fleet.header() + self.lives.iter().map(|l| l.min_entries()).sum::<u64>();
        let extra = (self.entries - self.talk)
            .checked_sub(fixed)
            .expect("the plan fits its entries");
        let capable = self.lives.iter().filter(|l| l.takes_progress()).count() as u64;
        assert!(
            extra == 0 || capable > 0,
            "no order to put {extra} progress lines on"
        );
        let mut given = 0u64;
        let mut posted = 0u64;
        let lives = self.lives.len() as u64;
        for (done, life) in self.lives.iter().enumerate() {
            let progress = if life.takes_progress() {
                let share = extra / capable + u64::from(given < extra % capable);
                given += 1;
                share
            } else {
                0
            };
            board.live(*life, progress);
            // Posts spread over the history: after each order, its share of them.
            let due = self.talk * (done as u64 + 1) / lives.max(1);
            while posted < due {
                board.post(posted);
                posted += 1;
            }
        }
        while posted < self.talk {
            board.post(posted);
            posted += 1;
        }
        for i in 0..self.names {
            let index = agents.len() as u64 + i;
            let name = agent_name(index as usize, "n");
            board.seat(name, agent_key(index), Level::Worker);
        }
        if self.checkpoint {
            board.checkpoint();
        }
        board.writer.flush();
        let written = board.writer.written;
        assert_eq!(
            written,
            self.entries + self.names + u64::from(self.checkpoint),
            "the plan wrote what it said"
        );
        let end = Timestamp::from_millis(board.writer.time + 60_000);
        BulkChannel {
            temp: TempChannel::from_parts(root, home, channel_dir, project, Clock::at(end)),
            agents,
            entries: written,
            orders: self.lives.len() as u64,
        }
    }
}

/// `<first name>-<tag><n>`: `ada-1`, `tom-2`, ..., `ada-n17`.
fn agent_name(index: usize, tag: &str) -> AgentName {
    let first = FIRST_NAMES[index % FIRST_NAMES.len()];
    AgentName::parse(&format!("{first}-{tag}{}", index + 1)).expect("a valid bulk agent name")
}

/// A fixed key per agent, so two builds of one plan sign with the same keys.
fn agent_key(index: u64) -> SecretKey {
    let mut seed = [0xb7u8; 32];
    seed[..8].copy_from_slice(&(index + 1).to_le_bytes());
    SecretKey::from_bytes(&seed)
}

/// One log being written: its author, key and chain tip.
struct Log {
    author: AgentName,
    key: SecretKey,
    public: PublicKey,
    seq: u64,
    prev: Option<EntryHash>,
}

impl Log {
    fn new(author: AgentName, key: SecretKey) -> Self {
        Self {
            author,
            public: key.public_key(),
            key,
            seq: 0,
            prev: None,
        }
    }
}

/// Entries made but not signed yet.
struct Pending {
    log: usize,
    entry: Entry,
}

/// Writes pre-signed lines in bulk. `logs[0]` is the master's.
struct Writer {
    channel: Channel,
    project: ProjectId,
    logs: Vec<Log>,
    pending: Vec<Pending>,
    /// The declared time of the last entry, ms.
    time: u64,
    written: u64,
}

const MASTER: usize = 0;

impl Writer {
    /// Makes the next entry of `log`; returns its hash (what chains name).
    fn push(&mut self, log: usize, kind: &str, body: Value) -> EntryHash {
        self.time += STEP_MS;
        let state = &mut self.logs[log];
        state.seq += 1;
        let entry = Entry {
            project: self.project.clone(),
            author: state.author.clone(),
            key: state.public,
            seq: state.seq,
            prev: state.prev,
            kind: kind.to_owned(),
            time: Timestamp::from_millis(self.time),
            body,
        };
        // The hash covers the raw entry only, so it is known before the (parallel) signing.
        let hash = EntryHash::of(&entry.to_bytes());
        state.prev = Some(hash);
        self.pending.push(Pending { log, entry });
        self.written += 1;
        if self.pending.len() >= BATCH {
            self.flush();
        }
        hash
    }

    /// The master position an agent writing now has seen: `[0, master's last seq]`.
    fn seen(&self) -> Value {
        json!([0, self.logs[MASTER].seq])
    }

    /// Signs what is pending on every core and appends each log's lines in one write.
    fn flush(&mut self) {
        if self.pending.is_empty() {
            return;
        }
        let pending = std::mem::take(&mut self.pending);
        let threads = std::thread::available_parallelism().map_or(1, std::num::NonZero::get);
        let per = pending.len().div_ceil(threads);
        let mut parts: Vec<Vec<Pending>> = Vec::new();
        let mut rest = pending.into_iter();
        loop {
            let part: Vec<Pending> = rest.by_ref().take(per).collect();
            if part.is_empty() {
                break;
            }
            parts.push(part);
        }
        let logs = &self.logs;
        let signed: Vec<(usize, String)> = std::thread::scope(|scope| {
            let handles: Vec<_> = parts
                .into_iter()
                .map(|part| {
                    scope.spawn(move || {
                        part.into_iter()
                            .map(|Pending { log, entry }| {
                                let line = entry
                                    .sign(&logs[log].key)
                                    .expect("bulk entries are well formed")
                                    .line;
                                (log, line)
                            })
                            .collect::<Vec<_>>()
                    })
                })
                .collect();
            handles
                .into_iter()
                .flat_map(|handle| handle.join().expect("signing never panics"))
                .collect()
        });
        let mut per_log: BTreeMap<usize, String> = BTreeMap::new();
        for (log, line) in signed {
            let text = per_log.entry(log).or_default();
            text.push_str(&line);
            text.push('\n');
        }
        for (log, text) in per_log {
            let state = &self.logs[log];
            let path = self.channel.log_path(&state.author, &state.public);
            fs::create_dir_all(path.parent().expect("a log has a folder")).expect("log folder");
            OpenOptions::new()
                .create(true)
                .append(true)
                .open(&path)
                .and_then(|mut file| file.write_all(text.as_bytes()))
                .expect("the log is written");
        }
    }
}

/// Who writes an order event.
#[derive(Debug, Clone, Copy)]
enum By {
    Master,
    Agent(usize),
}

/// An order as the writer tracks it: its id and the tip of its chain.
struct Track {
    id: String,
    tip: EntryHash,
}

struct SeatedAgent {
    level: Level,
    log: usize,
}

/// The fleet's work, entry by entry, as `ops::orders` would write it.
struct Board {
    writer: Writer,
    agents: Vec<SeatedAgent>,
    orders: Vec<Track>,
    next_member: usize,
    next_orchestrator: usize,
    next_worker: usize,
}

impl Board {
    /// `roster.join` in the agent's own log (as `ops::join` writes it: `{}`).
    fn seat(&mut self, name: AgentName, key: SecretKey, level: Level) -> usize {
        let log = self.writer.logs.len();
        self.writer.logs.push(Log::new(name, key));
        self.writer
            .push(log, JoinBody::KIND, Value::Object(JoinBody {}.to_entry()));
        self.agents.push(SeatedAgent { level, log });
        self.agents.len() - 1
    }

    /// The master's `grant` of the agent's level (as `ops::access_set` writes it).
    fn grant(&mut self, agent: usize) {
        let seated = &self.agents[agent];
        let log = &self.writer.logs[seated.log];
        let body = GrantBody {
            agent: log.author.clone(),
            key: log.public,
            level: seated.level,
            scopes: Vec::new(),
            expires: None,
            after_seq: None,
        };
        self.writer
            .push(MASTER, GrantBody::KIND, Value::Object(body.to_entry()));
    }

    /// Appends an entry as the session would: an agent's says what it has seen.
    fn append<B: EntryBody>(&mut self, by: By, body: &B) -> (EntryHash, String) {
        let mut body = body.to_entry();
        let kind = B::KIND;
        match by {
            By::Master => {
                let hash = self.writer.push(MASTER, kind, Value::Object(body));
                (hash, format!("m{}", self.writer.logs[MASTER].seq))
            }
            By::Agent(agent) => {
                let log = self.agents[agent].log;
                body.insert("seen".into(), self.writer.seen());
                let hash = self.writer.push(log, kind, Value::Object(body));
                let state = &self.writer.logs[log];
                (hash, format!("{}-{}", state.author, state.seq))
            }
        }
    }

    /// `talk.post` (as `ops::talk::post` writes it): the `n`th post, from an acting agent to
    /// the fleet or to another agent.
    fn post(&mut self, n: u64) {
        let from = (n as usize) % self.agents.len();
        let to = if n.is_multiple_of(3) {
            "all".to_owned()
        } else {
            let other = self.agents[(from + 1) % self.agents.len()].log;
            self.writer.logs[other].author.to_string()
        };
        let body = PostBody {
            to,
            text: format!(
                "note {n}: the header form is settled; the parser follows the spec's grammar"
            ),
            blob: None,
            reply_to: None,
            takeover: None,
            seen: None,
        };
        self.append(By::Agent(from), &body);
    }

    /// The master's `channel.checkpoint` of every agent's log as written so far (as `ferry
    /// channel checkpoint` writes it on a machine that verified them).
    fn checkpoint(&mut self) {
        let tips = self.writer.logs.iter().filter_map(|log| {
            Some(Tip {
                author: log.author.clone(),
                key: log.public,
                seq: log.seq,
                hash: log.prev?,
            })
        });
        let body = CheckpointBody::of_tips(tips);
        self.append(By::Master, &body);
    }

    fn next(&mut self, level: Level) -> usize {
        let of_level: Vec<usize> = (0..self.agents.len())
            .filter(|&i| self.agents[i].level == level)
            .collect();
        let counter = match level {
            Level::Member => &mut self.next_member,
            Level::Orchestrator => &mut self.next_orchestrator,
            Level::Worker => &mut self.next_worker,
        };
        let pick = of_level[*counter % of_level.len()];
        *counter += 1;
        pick
    }

    /// `order.issue` (as `ops::orders::issue` writes it).
    fn issue(&mut self, by: By, to: Option<usize>, review: bool) -> usize {
        let n = self.orders.len() + 1;
        let body = IssueBody {
            title: format!("Order {n}: make the parser accept the new header form"),
            body: (!n.is_multiple_of(3)).then(|| {
                "Read the spec section on headers, add the form, and cover it with a test per case."
                    .to_owned()
            }),
            blob: None,
            to: to.map(|to| self.writer.logs[self.agents[to].log].author.clone()),
            review,
            heavy: false,
            hints: Hints::default(),
            scope: None,
            seen: None,
        };
        let (tip, id) = self.append(by, &body);
        self.orders.push(Track { id, tip });
        self.orders.len() - 1
    }

    /// The order's id and the tip of its chain: what an event names (`order`, `after`).
    fn at(&self, order: usize) -> (String, EntryHash) {
        (self.orders[order].id.clone(), self.orders[order].tip)
    }

    /// A chain event or a progress line (as `ops::orders` writes them); a chain event is
    /// the order's new tip.
    fn event<B: EntryBody>(&mut self, order: usize, by: By, body: &B) {
        let (hash, _) = self.append(by, body);
        if B::KIND != kinds::PROGRESS {
            self.orders[order].tip = hash;
        }
    }

    fn claim(&mut self, order: usize, by: By) {
        let (order_id, after) = self.at(order);
        let body = ClaimBody {
            order: order_id,
            after,
        };
        self.event(order, by, &body);
    }

    fn release(&mut self, order: usize, by: By, note: &str) {
        let (order_id, after) = self.at(order);
        let body = ReleaseBody {
            order: order_id,
            after,
            text: Some(note.to_owned()),
        };
        self.event(order, by, &body);
    }

    fn cancel(&mut self, order: usize, note: Option<&str>) {
        let (order_id, after) = self.at(order);
        let body = CancelBody {
            order: order_id,
            after,
            text: note.map(str::to_owned),
        };
        self.event(order, By::Master, &body);
    }

    fn progress(&mut self, order: usize, holder: usize, count: u64) {
        for step in 1..=count {
            let (order_id, after) = self.at(order);
            let body = ProgressBody {
                order: order_id,
                after,
                text: format!(
                    "step {step}: the parser takes the header form; {} of the cases pass",
                    step * 3
                ),
            };
            self.event(order, By::Agent(holder), &body);
        }
    }

    /// `work.handin` (as `ops::orders::hand_in` writes it): returns its id.
    fn hand_in(&mut self, order: usize, by: usize) -> String {
        let body = HandInBody {
            order: self.orders[order].id.clone(),
            git_ref: git_sha(order),
            summary: "the header form parses; tests for each case".to_owned(),
            seen: None,
        };
        self.append(By::Agent(by), &body).1
    }

    fn submit(&mut self, order: usize, holder: usize, handin: Option<String>) {
        let (order_id, after) = self.at(order);
        let git_ref = handin.is_none().then(|| git_sha(order));
        let body = SubmitBody {
            order: order_id,
            after,
            summary: "done: the header form and its tests".to_owned(),
            handin,
            git_ref,
        };
        self.event(order, By::Agent(holder), &body);
    }

    fn review(&mut self, order: usize, accept: bool) {
        let reviewer = self.next(Level::Orchestrator);
        let (order_id, after) = self.at(order);
        let body = if accept {
            ReviewBody {
                order: order_id,
                after,
                verdict: Verdict::Accept,
                notes: None,
            }
        } else {
            ReviewBody {
                order: order_id,
                after,
                verdict: Verdict::Changes,
                notes: Some("cover the empty header too".to_owned()),
            }
        };
        self.event(order, By::Agent(reviewer), &body);
    }

    /// One order's whole life, with `progress` more progress lines where it takes them.
    fn live(&mut self, life: Life, progress: u64) {
        let holder = self.next(Level::Member);
        let needs_review = matches!(
            life,
            Life::Submitted | Life::ChangesRequested | Life::AcceptedReviewed
        );
        let (by, to) = match life {
            Life::OpenByOrchestrator => (By::Agent(self.next(Level::Orchestrator)), None),
            Life::Offered => (By::Master, Some(holder)),
            _ => (By::Master, None),
        };
        // Some orders that end before a submission ask for a review too; one that a
        // submission completes (`Accepted`) never does.
        let review = needs_review || (life != Life::Accepted && self.orders.len() % 4 == 1);
        let order = self.issue(by, to, review);
        if matches!(life, Life::Open | Life::OpenByOrchestrator | Life::Offered) {
            return;
        }
        if life == Life::CancelledOpen {
            return self.cancel(order, None);
        }
        let claim = By::Agent(holder);
        self.claim(order, claim);
        let required = u64::from(matches!(life, Life::InProgress));
        self.progress(order, holder, required + progress);
        match life {
            Life::Claimed | Life::InProgress => {}
            Life::Released => self.release(order, claim, "blocked on the spec; back to the board"),
            Life::CancelledHeld => self.cancel(order, Some("no longer needed")),
            Life::Accepted => self.submit(order, holder, None),
            Life::Submitted => {
                let handin = self.hand_in(order, holder);
                self.submit(order, holder, Some(handin));
            }
            Life::ChangesRequested => {
                self.submit(order, holder, None);
                self.review(order, false);
            }
            Life::AcceptedReviewed => {
                let worker = self.next(Level::Worker);
                let handin = self.hand_in(order, worker);
                self.submit(order, holder, Some(handin));
                self.review(order, true);
            }
            Life::Open | Life::OpenByOrchestrator | Life::Offered | Life::CancelledOpen => {
                unreachable!("returned above")
            }
        }
    }
}

/// A 40-digit hex ref, as a commit sha would be.
fn git_sha(order: usize) -> String {
    format!("{:040x}", (order as u128 + 1) * 0x9e37_79b9_7f4a_7c15)
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    use ferry_mcp_core::channel::fold::identity::Seat;
    use ferry_mcp_core::channel::fold::state::orders::OrderState;
    use ferry_mcp_core::channel::ops::orders::{self, ClaimOutcome};

    use super::*;

    /// Lines in every log of the channel.
    fn lines_on_disk(bulk: &BulkChannel) -> u64 {
        let mut lines = 0;
        for author in fs::read_dir(bulk.channel_dir().join("logs")).unwrap() {
            for log in fs::read_dir(author.unwrap().path()).unwrap() {
                let text = fs::read_to_string(log.unwrap().path()).unwrap();
                lines += text.lines().count() as u64;
            }
        }
        lines
    }

    fn assert_clean(session: &mut Session) {
        assert_eq!(session.whole_state().problems().unwrap(), Vec::new());
        assert_eq!(session.integrity_problems(), (&[][..], 0));
        assert!(session.local_problems().is_empty());
    }

    #[test]
    fn the_busy_channel_has_200_entries_40_open_orders_and_every_state_without_a_problem() {
        let busy = busy();
        assert_eq!(busy.entries(), 200);
        assert_eq!(lines_on_disk(&busy), 200);
        let mut session = busy.view();
        assert_clean(&mut session);
        assert_eq!(session.state().counter(), 200);
        let board = session.board_whole().unwrap();
        let wholes: Vec<_> = board.iter().map(|o| o.whole().unwrap()).collect();
        assert_eq!(board.len(), 49);
        let open = wholes.iter().filter(|o| !o.view().state.is_done()).count();
        assert_eq!(open, 40);
        let states: BTreeSet<OrderState> = wholes.iter().map(|o| o.view().state).collect();
        for state in [
            OrderState::Open,
            OrderState::Offered,
            OrderState::Claimed,
            OrderState::InProgress,
            OrderState::Submitted,
            OrderState::ChangesRequested,
            OrderState::Accepted,
            OrderState::Cancelled,
        ] {
            assert!(states.contains(&state), "no order is {}", state.as_str());
        }
        assert!(wholes.iter().any(|o| !o.view().handins.is_empty()));
        assert!(wholes.iter().any(|o| o.view().progress_lines > 0));
        assert!(wholes.iter().any(|o| !o.issue.by_master));
        for level in Level::ALL {
            let at_level = busy.agents().iter().filter(|a| a.level == level).count();
            assert!(at_level >= 2, "{at_level} agents at {level}");
            let name = busy.agent_at(level);
            assert_eq!(
                session.identity().standing(name, busy.now()).level,
                level,
                "{name}"
            );
        }
    }

    /// For every (kind, written by the master) the union of the body's field names.
    fn body_fields(channel: &Channel) -> BTreeMap<(String, bool), BTreeSet<String>> {
        let mut fields: BTreeMap<(String, bool), BTreeSet<String>> = BTreeMap::new();
        for entry in channel.reader().poll().entries {
            let names = entry.body().as_object().unwrap().keys().cloned();
            fields
                .entry((entry.kind().to_owned(), entry.author().is_master()))
                .or_default()
                .extend(names);
        }
        fields
    }

    #[test]
    fn a_bulk_channel_writes_the_kinds_and_body_fields_the_operations_write() {
        use ferry_mcp_core::channel::fold::state::orders::Verdict;
        use ferry_mcp_core::channel::ops::orders::{IssueRequest, SubmitRequest};
        let real = TempChannel::with_each_level();
        let now = real.now();
        let mut master = real.master_session();
        let issue = |master: &mut Session, to: Option<&str>, review: bool| {
            let request = IssueRequest {
                title: "an order".into(),
                body: Some("its body".into()),
                to: to.map(TempChannel::agent),
                review,
                ..IssueRequest::default()
            };
            orders::issue(master, &request, now).unwrap()
        };
        let reviewed = issue(&mut master, None, true);
        let offered = issue(&mut master, Some("member"), false);
        let released = issue(&mut master, None, false);
        let mut member = real.agent_session("member");
        let mut worker = real.agent_session("worker");
        let mut orchestrator = real.agent_session("orchestrator");
        orders::issue(
            &mut orchestrator,
            &IssueRequest {
                title: "by an orchestrator".into(),
                body: Some("its body".into()),
                ..IssueRequest::default()
            },
            now,
        )
        .unwrap();
        orders::claim(&mut member, &reviewed, now).unwrap();
        orders::progress(&mut member, &reviewed, "halfway", now).unwrap();
        let handin = orders::hand_in(&mut worker, &reviewed, "abc123", "the work", now).unwrap();
        let submit = |session: &mut Session, id: &str, handin: Option<String>| {
            let request = SubmitRequest {
                git_ref: handin.is_none().then(|| "abc123".to_owned()),
                handin,
                summary: "done".into(),
            };
            orders::submit(session, id, &request, now).unwrap();
        };
        submit(&mut member, &reviewed, Some(handin));
        orders::review(
            &mut orchestrator,
            &reviewed,
            Verdict::Changes,
            Some("more"),
            now,
        )
        .unwrap();
        submit(&mut member, &reviewed, None);
        orders::review(&mut orchestrator, &reviewed, Verdict::Accept, None, now).unwrap();
        orders::claim(&mut member, &released, now).unwrap();
        orders::release(&mut member, &released, Some("blocked"), now).unwrap();
        orders::claim(&mut member, &offered, now).unwrap();
        orders::cancel(&mut master, &offered, Some("not needed"), now).unwrap();
        let real_fields = body_fields(&Channel::open(real.channel_dir()).unwrap());
        let bulk = busy();
        let bulk_fields = body_fields(&Channel::open(bulk.channel_dir()).unwrap());
        assert_eq!(bulk_fields, real_fields);
    }

    /// Folds the channel's entries with every agent's log before the master's (each agent's
    /// entries then wait for the master's and are fed again), and compares every order's view
    /// with the session's fold, which reads the master's log first (so the agents' roster
    /// entries arrive after the orders and re-judge them).
    fn assert_fold_order_does_not_matter(bulk: &BulkChannel) {
        use ferry_mcp_core::channel::fold::state::ChannelState;
        let session = bulk.view();
        let channel = Channel::open(bulk.channel_dir()).unwrap();
        let entries = channel.reader().poll().entries;
        assert!(
            entries[0].author().is_master(),
            "the master's log is read first"
        );
        let mut reordered: Vec<_> = entries
            .iter()
            .filter(|e| !e.author().is_master())
            .rev()
            .cloned()
            .collect();
        reordered.sort_by_key(|e| e.seq());
        reordered.extend(entries.iter().filter(|e| e.author().is_master()).cloned());
        let mut state = ChannelState::new(bulk.project().clone(), *channel.genesis_master());
        state.feed_all(&reordered, bulk.now(), |replay| {
            entries
                .iter()
                .filter(|e| e.author() == &replay.log.author && e.key() == &replay.log.key)
                .filter(|e| e.seq() >= replay.from_seq)
                .cloned()
                .collect()
        });
        let views = |state: &ChannelState| {
            state
                .orders()
                .unwrap()
                .iter()
                .map(|order| (order.id().clone(), order.whole().unwrap().view().clone()))
                .collect::<Vec<_>>()
        };
        assert_eq!(views(&state), views(session.state()));
        assert_eq!(state.problems().unwrap(), Vec::new());
    }

    #[test]
    fn a_bulk_board_is_the_same_whether_the_roster_is_folded_before_or_after_the_orders() {
        assert_fold_order_does_not_matter(&busy());
        assert_fold_order_does_not_matter(&builder().entries(2_000).names(20).build());
    }

    #[test]
    fn an_agent_of_a_bulk_channel_writes_through_its_session() {
        let busy = busy();
        let member = busy.agent_at(Level::Member).clone();
        let mut session = busy.agent_session(member.as_str());
        let open = session
            .board_whole()
            .unwrap()
            .iter()
            .map(|o| o.whole().unwrap())
            .find(|o| o.view().state == OrderState::Open && o.issue.to.is_none())
            .map(|o| o.id.to_string())
            .unwrap();
        let outcome = orders::claim(&mut session, &open, busy.now()).unwrap();
        assert_eq!(
            outcome,
            ClaimOutcome::Claimed {
                id: open,
                state: ferry_mcp_core::channel::fold::state::orders::OrderState::Claimed,
            }
        );
        assert_clean(&mut session);
    }

    #[test]
    fn the_builder_writes_exactly_the_entries_and_names_asked_for_and_they_fold_cleanly() {
        let bulk = builder().entries(1_000).names(30).build();
        assert_eq!(bulk.entries(), 1_030);
        assert_eq!(lines_on_disk(&bulk), 1_030);
        let mut session = bulk.warm();
        assert_clean(&mut session);
        assert_eq!(session.state().counter(), 1_030);
        assert_eq!(session.board().unwrap().len() as u64, bulk.orders());
        let seated = session
            .identity()
            .names()
            .filter(|(_, seat)| matches!(seat, Seat::Seated(_)))
            .count();
        assert_eq!(seated, bulk.agents().len() + 30);
        // Kept and reopened: the same board, nothing read again.
        let mut again = bulk.view();
        assert_eq!(again.whole_state(), session.whole_state());
        assert!(bulk.verified_path().exists());
    }

    #[test]
    fn an_empty_bulk_channel_is_genesis_only_and_names_alone_seat_names() {
        let empty = builder().build();
        assert_eq!(empty.entries(), 0);
        assert_eq!(empty.view().state().counter(), 0);
        let names = builder().names(5).build();
        let mut session = names.view();
        assert_clean(&mut session);
        assert_eq!(session.identity().names().count(), 5);
    }
}

//! Reading what is new: a warm `ops::talk::read` that finds 10 new messages should cost the
//! same on a channel of 1,000 messages as on one of 100,000 (target: ratio below 1.5).
//!
//! Each channel is a real project (`ops::init`): four senders, seated (`roster.join` in their
//! own logs) and granted Member by the master (`grant` entries in the master's log), and a
//! reader whose key is on this machine. The history is written in bulk as pre-signed lines:
//! messages to the reader, to all, to the human and to other senders. The reader's session
//! folds it, reads all of it once (its marker now covers the history) and is saved: the warm
//! state.
//!
//! Every iteration starts from exactly that history: the logs are cut back to their warm
//! length and the session is opened from the saved state as a server's is after its first call
//! (watched, its talk fold read; untimed), the same 10 pre-signed
//! messages are appended (5 to the reader, 5 to all), and the timed read finds them, folds
//! them and writes the reader's marker. The channels live in memory (`/dev/shm`) where there
//! is one: the marker's flush costs the same whatever the history and is by far the noisiest
//! part on a shared disk. After the criterion runs, the medians (with p10 and p90) and their
//! ratio are printed to stderr.
//!
//! A second figure, printed only: the same read where the reader's marker over the history was
//! synced from another machine, so this machine folded it before the messages it covers (the
//! reader's log came first). Reads then look through the whole history for the reader until
//! its next marker is folded.
//!
//! Under `cargo test --benches` (no `--bench` flag) the channels hold 100 and 1,000 messages
//! so the single run stays quick.

use std::fs::{self, OpenOptions};
use std::hint::black_box;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use criterion::{BatchSize, Criterion};
use ferry_mcp_core::channel::fold::identity::{GrantBody, Identity, kinds as identity_kinds};
use ferry_mcp_core::channel::fold::levels::Level;
use ferry_mcp_core::channel::fold::state::talk::kinds;
use ferry_mcp_core::channel::log::entry::{Entry, EntryHash};
use ferry_mcp_core::channel::log::keys::SecretKey;
use ferry_mcp_core::channel::log::names::{AgentName, ProjectId};
use ferry_mcp_core::channel::log::store::Channel;
use ferry_mcp_core::channel::machine::home::{Home, KeyHolder};
use ferry_mcp_core::channel::ops;
use ferry_mcp_core::channel::ops::talk::{self, ReadRequest, ReadResult};
use ferry_mcp_core::channel::session::{Actor, Session};
use ferry_mcp_core::time::Timestamp;
use serde_json::{Value, json};

const SENDERS: u8 = 4;
const NEW_MESSAGES: usize = 10;
const START: u64 = 1_767_225_600_000;

/// One log being built: its author, key, chain tip and clock.
struct Chain {
    author: AgentName,
    key: SecretKey,
    seq: u64,
    prev: Option<EntryHash>,
}

impl Chain {
    fn new(author: AgentName, key: SecretKey) -> Self {
        Self {
            author,
            key,
            seq: 0,
            prev: None,
        }
    }

    /// Signs the next entry of this log and returns its line (with its newline).
    fn sign(&mut self, project: &ProjectId, kind: &str, body: Value) -> String {
        self.seq += 1;
        let signed = Entry {
            project: project.clone(),
            author: self.author.clone(),
            key: self.key.public_key(),
            seq: self.seq,
            prev: self.prev,
            kind: kind.to_owned(),
            time: Timestamp::from_millis(START + self.seq),
            body,
        }
        .sign(&self.key)
        .expect("bench entries are well formed");
        self.prev = Some(*signed.entry.hash());
        let mut line = signed.line;
        line.push('\n');
        line
    }

    fn path(&self, channel: &Channel) -> PathBuf {
        channel.log_path(&self.author, &self.key.public_key())
    }
}

fn append(path: &Path, text: &str) {
    fs::create_dir_all(path.parent().expect("log folder")).expect("log folder");
    OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .and_then(|mut file| file.write_all(text.as_bytes()))
        .expect("log written");
}

/// A channel with `history` messages read by its reader, ready to be put back in that state.
struct Prepared {
    _dir: tempfile::TempDir,
    home: Home,
    project: ProjectId,
    reader: AgentName,
    /// Every log and its length in the warm state.
    logs: Vec<(PathBuf, u64)>,
    /// The 10 new messages: (log, lines).
    news: Vec<(PathBuf, String)>,
    now: Timestamp,
}

fn name(text: &str) -> AgentName {
    AgentName::parse(text).expect("name")
}

/// How the reader's marker over the history came to this machine.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Marker {
    /// The reader read the history here (its marker was folded after the messages).
    ReadHere,
    /// The marker was already in the reader's log when this machine first folded the channel
    /// (synced from the machine where it read), folded before the messages it covers.
    Synced,
}

fn prepared(history: usize, marker: Marker) -> Prepared {
    let dir = bench_dir();
    let home = Home::at(dir.path().join("home"));
    let project = ProjectId::parse("bench").expect("project id");
    let now = Timestamp::from_millis(START);
    ops::init(&home, &project, &dir.path().join("channel"), None, now).expect("init");
    let channel = Channel::open(&dir.path().join("channel")).expect("channel");
    let master_key = home
        .load_key(&project, &KeyHolder::Master, now)
        .expect("the master key");
    let mut master = Chain::new(AgentName::master(), master_key);

    let reader = name("reader");
    let reader_key = SecretKey::from_bytes(&[100; 32]);
    home.store_key(
        &project,
        &KeyHolder::Agent(reader.clone()),
        &reader_key,
        None,
    )
    .expect("the reader's key");
    let mut reader_chain = Chain::new(reader.clone(), reader_key);
    let mut reader_log = reader_chain.sign(&project, identity_kinds::ROSTER_JOIN, json!({}));

    let mut senders: Vec<Chain> = (0..SENDERS)
        .map(|i| {
            Chain::new(
                name(&format!("sender-{i}")),
                SecretKey::from_bytes(&[i + 1; 32]),
            )
        })
        .collect();
    let mut logs: Vec<String> = Vec::new();
    let mut master_log = String::new();
    for sender in &mut senders {
        logs.push(sender.sign(&project, identity_kinds::ROSTER_JOIN, json!({})));
        let grant = GrantBody {
            agent: sender.author.clone(),
            key: sender.key.public_key(),
            level: Level::Member,
            scopes: Vec::new(),
            expires: None,
            after_seq: None,
        };
        master_log.push_str(&master.sign(
            &project,
            identity_kinds::GRANT,
            Identity::grant_body(&grant),
        ));
    }
    let seen = json!([0, master.seq]);

    let names: Vec<String> = senders.iter().map(|s| s.author.to_string()).collect();
    for i in 0..history {
        let from = i % usize::from(SENDERS);
        let to = match i % 5 {
            0 => reader.to_string(),
            1 => "all".to_owned(),
            2 => "master".to_owned(),
            _ => names[(from + 1) % names.len()].clone(),
        };
        let body = json!({
            "to": to,
            "text": format!("message {i}: the build of order m{} is green on every machine", i % 97),
            "seen": seen,
        });
        logs[from].push_str(&senders[from].sign(&project, kinds::POST, body));
    }
    if marker == Marker::Synced {
        let upto: serde_json::Map<String, Value> = senders
            .iter()
            .map(|s| (s.author.to_string(), s.seq.into()))
            .collect();
        reader_log.push_str(&reader_chain.sign(
            &project,
            kinds::MARK,
            json!({ "upto": upto, "seen": seen }),
        ));
    }

    append(&master.path(&channel), &master_log);
    append(&reader_chain.path(&channel), &reader_log);
    for (sender, text) in senders.iter().zip(&logs) {
        append(&sender.path(&channel), text);
    }
    // On disk before anything is measured: a flush of the history still under way would be
    // charged to the reads' own flushes (their markers).
    for path in [master.path(&channel), reader_chain.path(&channel)]
        .into_iter()
        .chain(senders.iter().map(|s| s.path(&channel)))
    {
        fs::File::open(&path)
            .and_then(|file| file.sync_all())
            .expect("log synced");
    }

    // The warm state: folded once, the history read, saved.
    let mut session = open(&home, &project, &reader, now);
    if marker == Marker::ReadHere {
        let request = ReadRequest {
            peek: false,
            since: None,
            limit: usize::MAX,
            receipts: 0,
        };
        let all = talk::read(&mut session, &request, &mut |_| true, now).expect("the first read");
        assert!(all.marked && !all.more);
        // A fifth of the history is to the reader and a fifth to all.
        assert_eq!(all.messages.len(), history.div_ceil(5) + (history + 3) / 5);
    }
    let warm = read(&mut session, now);
    assert!(warm.messages.is_empty(), "the history is all read");
    assert_eq!(session.talk().unwrap().len(), history);
    session.save().expect("the warm state saved");
    drop(session);

    let mut all_logs = vec![master.path(&channel), reader_chain.path(&channel)];
    all_logs.extend(senders.iter().map(|s| s.path(&channel)));
    let logs = all_logs
        .into_iter()
        .map(|path| {
            let len = fs::metadata(&path).expect("log").len();
            (path, len)
        })
        .collect();

    let mut news: Vec<(PathBuf, String)> = Vec::new();
    for i in 0..NEW_MESSAGES {
        let from = i % usize::from(SENDERS);
        let to = if i % 2 == 0 { reader.as_str() } else { "all" };
        let body = json!({ "to": to, "text": format!("news {i}: order m{i} needs a reviewer"), "seen": seen });
        let line = senders[from].sign(&project, kinds::POST, body);
        let path = senders[from].path(&channel);
        match news.iter_mut().find(|(p, _)| *p == path) {
            Some((_, text)) => text.push_str(&line),
            None => news.push((path, line)),
        }
    }
    Prepared {
        _dir: dir,
        home,
        project,
        reader,
        logs,
        news,
        now,
    }
}

fn open(home: &Home, project: &ProjectId, reader: &AgentName, now: Timestamp) -> Session {
    Session::open(home, project, Actor::Agent(reader.clone()), now).expect("the session opens")
}

fn read(session: &mut Session, now: Timestamp) -> ReadResult {
    let request = ReadRequest {
        peek: false,
        since: None,
        limit: 100,
        receipts: 3,
    };
    talk::read(session, &request, &mut |_| true, now).expect("the read")
}

impl Prepared {
    /// The warm session on the warm history, with the 10 new messages appended (not read yet).
    fn fresh(&self) -> Session {
        for (path, len) in &self.logs {
            OpenOptions::new()
                .write(true)
                .open(path)
                .and_then(|file| file.set_len(*len))
                .expect("log cut back");
        }
        let mut session = open(&self.home, &self.project, &self.reader, self.now);
        // As a server's session after its first call: watched, talk read from the kept state,
        // every log looked at once (a first call pays the talk section's decoding once; the
        // start-up bench's first call measures that).
        if watched() {
            session.watch_channel();
        }
        session.refresh(self.now);
        black_box(session.talk().unwrap());
        for (path, lines) in &self.news {
            append(path, lines);
        }
        session
    }

    fn read_news(&self, session: &mut Session) -> ReadResult {
        let result = read(session, self.now);
        assert_eq!(result.messages.len(), NEW_MESSAGES);
        assert!(result.marked);
        result
    }

    fn timed(&self) -> Duration {
        let mut session = self.fresh();
        let start = Instant::now();
        let result = black_box(self.read_news(&mut session));
        let spent = start.elapsed();
        drop((result, session));
        spent
    }

    /// The 10th, 50th and 90th percentiles of `rounds` timed reads.
    fn spread(&self, rounds: usize) -> [Duration; 3] {
        let mut times: Vec<Duration> = (0..rounds).map(|_| self.timed()).collect();
        times.sort();
        [
            times[rounds / 10],
            times[rounds / 2],
            times[rounds * 9 / 10],
        ]
    }
}

/// A folder for a channel: in memory where the machine has one, so that the flush of the
/// marker each read writes (the same few bytes whatever the history, and on a shared disk the
/// noisiest part by far) does not drown what the read itself costs.
fn bench_dir() -> tempfile::TempDir {
    let memory = Path::new("/dev/shm");
    if memory.is_dir()
        && let Ok(dir) = tempfile::tempdir_in(memory)
    {
        return dir;
    }
    tempfile::tempdir().expect("temp dir")
}

fn main() {
    let bench_mode = std::env::args().any(|a| a == "--bench");
    let histories: [usize; 2] = if bench_mode {
        [1_000, 100_000]
    } else {
        [100, 1_000]
    };
    let channels: Vec<Prepared> = histories
        .iter()
        .map(|&h| prepared(h, Marker::ReadHere))
        .collect();

    let mut criterion = Criterion::default()
        .sample_size(20)
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(2))
        .configure_from_args();
    let mut group = criterion.benchmark_group("talk_read_10_new_messages");
    for (history, channel) in histories.iter().zip(&channels) {
        group.bench_function(format!("history_{history}"), |b| {
            // By reference: opening the session and dropping it stay outside the timing.
            b.iter_batched_ref(
                || channel.fresh(),
                |session| channel.read_news(session),
                BatchSize::PerIteration,
            )
        });
    }
    group.finish();
    criterion.final_summary();

    let rounds = if bench_mode { 101 } else { 3 };
    report("history read here", &histories, &channels, rounds);
    drop(channels);

    // The same read where the reader's marker over the history was synced from another machine
    // (folded before the messages it covers): the read-through index is not moved by it.
    let synced: Vec<Prepared> = histories
        .iter()
        .map(|&h| prepared(h, Marker::Synced))
        .collect();
    let rounds = if bench_mode { 21 } else { 3 };
    report("marker synced first", &histories, &synced, rounds);
}

fn report(what: &str, histories: &[usize; 2], channels: &[Prepared], rounds: usize) {
    let [small, large] = [&channels[0], &channels[1]].map(|channel| channel.spread(rounds));
    eprintln!(
        "talk read of {NEW_MESSAGES} new messages ({what}): history {} -> {:?} (p10 {:?}, p90 {:?}), history {} -> {:?} (p10 {:?}, p90 {:?}), ratio of medians {:.2} (target < 1.5)",
        histories[0],
        small[1],
        small[0],
        small[2],
        histories[1],
        large[1],
        large[0],
        large[2],
        large[1].as_secs_f64() / small[1].as_secs_f64()
    );
}

/// Whether the reader's session is watched, as a server's is: `FERRY_BENCH_UNWATCHED=1` runs
/// the same bench without the watch, every poll looking at every log (the A/B of ADR 0011).
fn watched() -> bool {
    std::env::var_os("FERRY_BENCH_UNWATCHED").is_none()
}

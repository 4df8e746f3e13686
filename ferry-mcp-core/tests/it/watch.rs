//! A watched reader (a server's: the kernel tells it what changed) against one that looks at
//! every log on every poll: whatever is done to the channel folder, both read the same entries
//! and report the same problems. And what the watch cannot see, the session's periodic full
//! look finds. And how often a server writes what it verified back to the state folder.
#![cfg(target_os = "linux")]

use std::fs::{self, OpenOptions};
use std::io::Write as _;
use std::path::{Path, PathBuf};

use ferry_mcp_core::channel::fold::levels::Level;
use ferry_mcp_core::channel::log::keys::SecretKey;
use ferry_mcp_core::channel::log::names::AgentName;
use ferry_mcp_core::channel::log::reader::{IntegrityProblem, Reader};
use ferry_mcp_core::channel::log::store::Channel;
use ferry_mcp_core::channel::machine::home::KeyHolder;
use ferry_mcp_core::channel::session::{Actor, LOOK_EVERYWHERE_EVERY_S, Session};
use ferry_mcp_testkit::plant;
use ferry_mcp_testkit::temp_channel::TempChannel;
use serde_json::json;

fn agent(name: &str) -> AgentName {
    TempChannel::agent(name)
}

fn key(temp: &TempChannel, name: &str) -> SecretKey {
    temp.home()
        .load_key(temp.project(), &KeyHolder::Agent(agent(name)), temp.now())
        .unwrap()
}

fn append(temp: &TempChannel, name: &str, n: u64) {
    plant::raw(
        temp.channel_dir(),
        &agent(name),
        &key(temp, name),
        "note",
        json!({ "n": n }),
        temp.now(),
    );
}

fn log_of(temp: &TempChannel, name: &str) -> PathBuf {
    let channel = Channel::open(temp.channel_dir()).unwrap();
    channel.log_path(&agent(name), &key(temp, name).public_key())
}

/// What a reader has read so far: every entry (author, seq, hash) and every problem (kind and
/// path), in the order of the polls.
#[derive(Default, Debug, PartialEq, Eq)]
struct Seen {
    entries: Vec<(String, u64, String)>,
    problems: Vec<(String, PathBuf)>,
}

fn poll(reader: &mut Reader, seen: &mut Seen) {
    let mut entries = Vec::new();
    let problems: Vec<IntegrityProblem> = reader.poll_with(&mut |entry| {
        entries.push((
            entry.author().as_str().to_owned(),
            entry.seq(),
            entry.hash().to_string(),
        ));
    });
    entries.sort();
    seen.entries.extend(entries);
    let mut problems: Vec<(String, PathBuf)> = problems
        .into_iter()
        .map(|problem| (format!("{:?}", problem.kind), problem.path))
        .collect();
    problems.sort();
    seen.problems.extend(problems);
}

/// Two readers of one channel folder, one watched; each step is done, both poll, and what
/// they read so far must be the same.
struct Pair {
    watched: Reader,
    plain: Reader,
    seen_watched: Seen,
    seen_plain: Seen,
}

impl Pair {
    fn new(dir: &Path) -> Self {
        let channel = Channel::open(dir).unwrap();
        let mut watched = channel.reader();
        assert!(watched.watch(), "inotify works here");
        let mut pair = Self {
            watched,
            plain: channel.reader(),
            seen_watched: Seen::default(),
            seen_plain: Seen::default(),
        };
        // The first poll of each looks at everything.
        pair.step("first poll");
        pair
    }

    fn step(&mut self, what: &str) {
        poll(&mut self.watched, &mut self.seen_watched);
        poll(&mut self.plain, &mut self.seen_plain);
        assert_eq!(self.seen_watched, self.seen_plain, "after {what}");
        // A second poll with nothing done finds nothing more.
        poll(&mut self.watched, &mut self.seen_watched);
        assert_eq!(
            self.seen_watched, self.seen_plain,
            "polled again after {what}"
        );
    }
}

fn flip_last_signature_char(path: &Path) {
    let mut bytes = fs::read(path).unwrap();
    // The last line ends `..."}\n`: the character before `"}` is the signature's last hex.
    let at = bytes.len() - 4;
    bytes[at] = if bytes[at] == b'0' { b'1' } else { b'0' };
    OpenOptions::new()
        .write(true)
        .open(path)
        .unwrap()
        .write_all(&bytes)
        .unwrap();
}

#[test]
fn a_watched_reader_reads_and_reports_what_one_that_looks_everywhere_does_whatever_is_done_to_the_folder()
 {
    let temp = TempChannel::builder()
        .agent("ada", Level::Member)
        .agent("bob", Level::Member)
        .build()
        .unwrap();
    let dir = temp.channel_dir().to_owned();
    let mut pair = Pair::new(&dir);

    append(&temp, "ada", 1);
    pair.step("an append to one log");

    append(&temp, "ada", 2);
    append(&temp, "bob", 3);
    pair.step("appends to two logs");

    let ada = log_of(&temp, "ada");
    flip_last_signature_char(&ada);
    pair.step("a same-length rewrite of a verified line");

    let bob = log_of(&temp, "bob");
    let bytes = fs::read(&bob).unwrap();
    let cut = bytes[..bytes.len() - 1]
        .iter()
        .rposition(|&b| b == b'\n')
        .unwrap()
        + 1;
    OpenOptions::new()
        .write(true)
        .open(&bob)
        .unwrap()
        .set_len(cut as u64)
        .unwrap();
    pair.step("a log cut back by one line");

    // A new agent: a new folder under logs/.
    let carl = SecretKey::generate().unwrap();
    let channel = Channel::open(&dir).unwrap();
    channel
        .writer(&agent("carl"), &carl)
        .unwrap()
        .append("roster.join", json!({}), temp.now())
        .unwrap();
    pair.step("a new author folder");

    // A second key for a known name: a new file in a known folder.
    let other = SecretKey::generate().unwrap();
    channel
        .writer(&agent("ada"), &other)
        .unwrap()
        .append("roster.join", json!({}), temp.now())
        .unwrap();
    pair.step("a new log in a known folder");

    let ada_folder = ada.parent().unwrap().to_owned();
    fs::write(
        ada_folder.join("x.sync-conflict-20261201-120000-ABCDEFG.jsonl"),
        b"{}\n",
    )
    .unwrap();
    fs::write(dir.join("notes.txt"), b"hello").unwrap();
    pair.step("a conflict copy and an unknown file");

    // As Syncthing replaces a file: a temporary file renamed onto the log.
    append(&temp, "bob", 4);
    let replaced = fs::read(&bob).unwrap();
    let bob_folder = bob.parent().unwrap();
    let temporary = bob_folder.join(".syncthing.bob.tmp");
    fs::write(&temporary, &replaced).unwrap();
    fs::rename(&temporary, &bob).unwrap();
    pair.step("a log replaced by a rename");

    fs::remove_file(channel.log_path(&agent("ada"), &other.public_key())).unwrap();
    pair.step("a log deleted");

    fs::remove_dir_all(dir.join("logs").join("carl")).unwrap();
    pair.step("an author folder deleted");

    append(&temp, "ada", 5);
    pair.step("an append after all that");
    assert!(
        pair.seen_plain.problems.len() >= 6,
        "{:?}",
        pair.seen_plain.problems
    );
}

fn copy_dir(from: &Path, to: &Path) {
    fs::create_dir_all(to).unwrap();
    for item in fs::read_dir(from).unwrap() {
        let item = item.unwrap();
        let target = to.join(item.file_name());
        if item.file_type().unwrap().is_dir() {
            copy_dir(&item.path(), &target);
        } else {
            fs::copy(item.path(), &target).unwrap();
        }
    }
}

#[test]
fn a_change_no_event_tells_is_found_by_the_session_s_periodic_full_look() {
    let temp = TempChannel::builder()
        .agent("ada", Level::Member)
        .build()
        .unwrap();
    let ada = agent("ada");
    let ada_key = key(&temp, "ada");
    let mut session = Session::open(
        temp.home(),
        temp.project(),
        Actor::Agent(ada.clone()),
        temp.now(),
    )
    .unwrap();
    assert!(session.watch_channel());
    session.refresh(temp.now());
    let seen = session.log_seq(&ada, &ada_key.public_key());

    // Ada's next line, made in a scratch copy of the channel.
    let log = log_of(&temp, "ada");
    let scratch = temp.root().join("scratch");
    copy_dir(temp.channel_dir(), &scratch);
    let scratch_channel = Channel::open(&scratch).unwrap();
    let scratch_log = scratch_channel.log_path(&ada, &ada_key.public_key());
    let before = fs::metadata(&scratch_log).unwrap().len() as usize;
    scratch_channel
        .writer(&ada, &ada_key)
        .unwrap()
        .append("note", json!({ "n": 1 }), temp.now())
        .unwrap();
    let line = fs::read(&scratch_log).unwrap()[before..].to_vec();

    // Written through a hard link outside the watched folders: the kernel tells the folder of
    // the path written through, not logs/ada (as with a write through a memory map, or a
    // network file system, no event reaches the watch).
    let link = temp.root().join("link-to-ada.jsonl");
    fs::hard_link(&log, &link).unwrap();
    session.refresh(temp.now());
    OpenOptions::new()
        .append(true)
        .open(&link)
        .unwrap()
        .write_all(&line)
        .unwrap();
    session.refresh(temp.now());
    assert_eq!(
        session.log_seq(&ada, &ada_key.public_key()),
        seen,
        "the watch decides which logs a refresh reads"
    );

    // The periodic full look finds it.
    let later = temp.clock().advance_secs(LOOK_EVERYWHERE_EVERY_S);
    session.refresh(later);
    assert_eq!(session.log_seq(&ada, &ada_key.public_key()), seen + 1);
}

/// A server's session over a bulk channel, on a clock counted in ms from the start, and what
/// it has written of the kept state.
struct Served {
    bulk: ferry_mcp_testkit::bulk::BulkChannel,
    server: ferry_mcp_core::channel::session::LazySession,
    start: u64,
    policy: ferry_mcp_core::channel::session::SavePolicy,
}

/// The save policy of the tests below: a state of a few KB counts as large (its next save
/// waits more than 3 s), and more than 10 orders whole as many.
fn small_policy() -> ferry_mcp_core::channel::session::SavePolicy {
    ferry_mcp_core::channel::session::SavePolicy {
        every_ms: 2_000,
        bytes_per_ms: 1,
        resident_orders: 10,
        in_background: true,
    }
}

impl Served {
    /// A server on a small bulk channel kept here, under [`small_policy`]; it has folded one
    /// new entry and written the state once.
    fn on() -> Self {
        use ferry_mcp_core::channel::session::LazySession;
        let bulk = ferry_mcp_testkit::bulk::builder()
            .entries(400)
            .agents(20)
            .build();
        drop(bulk.warm());
        let policy = small_policy();
        let server = LazySession::new(bulk.home().clone(), bulk.project().clone(), Actor::Observer)
            .with_save_policy(policy);
        let start = bulk.now().as_millis();
        let mut served = Self {
            bulk,
            server,
            start,
            policy,
        };
        let before = served.written();
        served.agent_writes_then_flush(0);
        assert_ne!(
            served.written(),
            before,
            "the first flush with something new writes"
        );
        served
    }

    fn at(&self, ms: u64) -> ferry_mcp_core::time::Timestamp {
        ferry_mcp_core::time::Timestamp::from_millis(self.start + ms)
    }

    /// How many saves the kept state has seen: every save counts one.
    fn written(&self) -> u64 {
        let conn = rusqlite::Connection::open(self.bulk.verified_path()).unwrap();
        let saves: Vec<u8> = conn
            .query_row("SELECT value FROM meta WHERE name = 'saves'", [], |row| {
                row.get(0)
            })
            .unwrap();
        u64::from_le_bytes(saves.try_into().unwrap())
    }

    /// How long after its last save the server writes again by the size of what that save
    /// wrote.
    fn wait_by_size_ms(&mut self) -> u64 {
        let written = self.session(0).last_save_bytes().expect("it saved");
        self.policy.interval_ms(written)
    }

    fn session(&mut self, ms: u64) -> &mut Session {
        let at = self.at(ms);
        self.server.session(at).unwrap()
    }

    /// The server folds what is new at `ms` and flushes, as after a batch of calls.
    fn refresh_then_flush(&mut self, ms: u64) {
        let at = self.at(ms);
        self.session(ms).refresh(at);
        self.server.flush(at);
        // The rows are written on a thread of their own: what was written is read once
        // they are.
        self.server.wait_for_save();
    }

    /// An agent writes an entry; the server folds it at `ms` and flushes.
    fn agent_writes_then_flush(&mut self, ms: u64) {
        let writer = self.bulk.agents()[3].name.clone();
        append(&self.bulk, writer.as_str(), ms);
        self.refresh_then_flush(ms);
    }
}

#[test]
fn a_server_writes_a_large_kept_state_again_only_as_often_as_its_byte_rate_allows() {
    let mut served = Served::on();
    let first = served.written();
    let wait = served.wait_by_size_ms();
    assert!(wait > 3_000, "{wait} ms");
    served.agent_writes_then_flush(3_000);
    assert_eq!(served.written(), first, "written again 3 s later");
    served.agent_writes_then_flush(wait);
    assert_ne!(served.written(), first, "not written again {wait} ms later");
}

#[test]
fn a_server_holding_more_orders_whole_than_its_policy_allows_writes_them_back_after_two_seconds_whatever_its_size()
 {
    let mut served = Served::on();
    let first = served.written();
    assert!(served.wait_by_size_ms() > 3_000);

    // Something reads every order whole (as a handover's judging again does).
    let resident = served.policy.resident_orders;
    let orders = served.session(1_000).board_whole().unwrap();
    assert!(orders.len() > resident, "{} orders", orders.len());
    for order in orders.iter() {
        order.whole();
    }
    assert_eq!(orders.resident(), orders.len());
    served.agent_writes_then_flush(3_000);
    assert_ne!(served.written(), first, "not written back 3 s later");
    assert_eq!(served.session(3_000).board().unwrap().resident(), 0);
}

#[test]
fn a_server_writes_within_two_seconds_a_master_entry_it_folded_whatever_the_size_of_its_state() {
    let mut served = Served::on();
    let first = served.written();
    assert!(served.wait_by_size_ms() > 3_000);

    // The kept state is this machine's witness: a master entry folded here is kept within
    // 2 s, so deleting its line later cannot take it back here.
    let bulk = &served.bulk;
    let master_key = bulk
        .home()
        .load_key(bulk.project(), &KeyHolder::Master, bulk.now())
        .unwrap();
    Channel::open(bulk.channel_dir())
        .unwrap()
        .writer(&AgentName::master(), &master_key)
        .unwrap()
        .append("note", json!({ "n": 1 }), bulk.now())
        .unwrap();
    served.refresh_then_flush(3_000);
    assert_ne!(
        served.written(),
        first,
        "the master's entry was not kept 3 s later"
    );
}

#[test]
fn an_operation_on_a_session_opened_for_it_takes_the_open_s_look_and_the_refresh_after_looks_again()
{
    let temp = TempChannel::builder()
        .agent("fang", Level::Member)
        .build()
        .unwrap();
    let open = || Session::open(temp.home(), temp.project(), Actor::Observer, temp.now()).unwrap();
    let mut for_one = open().for_one_operation();
    let mut kept_open = open();
    // Lands after both opens looked.
    append(&temp, "fang", 1);
    assert_eq!(
        for_one.refresh(temp.now()),
        0,
        "the operation's first refresh is the open's own look"
    );
    assert_eq!(for_one.refresh(temp.now()), 1);
    assert_eq!(kept_open.refresh(temp.now()), 1);
}

#[test]
fn a_save_a_server_writes_beside_its_calls_is_kept_for_the_next_open_once_the_server_stops() {
    use ferry_mcp_core::channel::session::LazySession;
    let temp = TempChannel::with_each_level();
    let now = temp.now();
    let mut server = LazySession::new(
        temp.home().clone(),
        temp.project().clone(),
        Actor::Agent(agent("member")),
    );
    // Its first call takes the open's look; the next one folds what landed since.
    server.session(now).unwrap().refresh(now);
    append(&temp, "worker", 1);
    assert_eq!(server.session(now).unwrap().refresh(now), 1);
    server.flush(now);
    // Stopping waits for the save under way.
    drop(server);
    let mut reopened = Session::open(temp.home(), temp.project(), Actor::Observer, now).unwrap();
    assert_eq!(
        reopened.refresh(now),
        0,
        "the entry was kept: nothing to fold again"
    );
    assert!(
        reopened.local_problems().is_empty(),
        "{:?}",
        reopened.local_problems()
    );
}

#[test]
fn a_call_right_after_a_server_s_save_reads_the_orders_that_save_took_out_of_memory() {
    use ferry_mcp_core::channel::ops::orders::{self, ClaimOutcome, IssueRequest};
    use ferry_mcp_core::channel::session::LazySession;
    let temp = TempChannel::with_each_level();
    let now = temp.now();
    let request = IssueRequest {
        title: "an order".into(),
        ..IssueRequest::default()
    };
    let id = orders::issue(&mut temp.master_session(), &request, now).unwrap();
    let mut server = LazySession::new(
        temp.home().clone(),
        temp.project().clone(),
        Actor::Agent(agent("member")),
    );
    let session = server.session(now).unwrap();
    assert!(session.order(&id.parse().unwrap()).unwrap().is_some());
    server.flush(now);
    // The save dropped the order whole from memory; its record may still be being written.
    let session = server.session(now).unwrap();
    assert_eq!(session.board().unwrap().resident(), 0);
    let claimed = orders::claim(session, &id, now).unwrap();
    assert!(
        matches!(claimed, ClaimOutcome::Claimed { .. }),
        "{claimed:?}"
    );
    assert!(
        session.local_problems().is_empty(),
        "{:?}",
        session.local_problems()
    );
}

#[test]
fn a_server_s_save_that_fails_beside_its_calls_is_reported_and_the_next_one_keeps_everything() {
    use ferry_mcp_core::channel::session::{LazySession, SavePolicy};
    let temp = TempChannel::with_each_level();
    let now = temp.now();
    let every_time = SavePolicy {
        every_ms: 0,
        bytes_per_ms: u64::MAX,
        ..SavePolicy::default()
    };
    let mut server = LazySession::new(
        temp.home().clone(),
        temp.project().clone(),
        Actor::Agent(agent("member")),
    )
    .with_save_policy(every_time);
    server.session(now).unwrap().refresh(now);
    server.flush(now);
    server.wait_for_save();
    let db = temp.home().verified_path(temp.project());
    let conn = rusqlite::Connection::open(&db).unwrap();
    // Every write to the kept state fails (root ignores a read-only file).
    conn.execute_batch(
        "CREATE TRIGGER refuse BEFORE INSERT ON meta
             BEGIN SELECT RAISE(ABORT, 'simulated: the disk refuses every write'); END;",
    )
    .unwrap();
    append(&temp, "worker", 1);
    assert_eq!(server.session(now).unwrap().refresh(now), 1);
    server.flush(now);
    server.wait_for_save();
    let problems = server.session(now).unwrap().local_problems().to_vec();
    assert!(
        problems
            .iter()
            .any(|problem| problem.contains("the kept state was not written")),
        "{problems:?}"
    );
    conn.execute_batch("DROP TRIGGER refuse;").unwrap();
    append(&temp, "worker", 2);
    server.session(now).unwrap().refresh(now);
    server.flush(now);
    drop(server);
    let mut reopened = Session::open(temp.home(), temp.project(), Actor::Observer, now).unwrap();
    assert_eq!(reopened.refresh(now), 0, "both entries were kept");
    assert!(
        reopened.local_problems().is_empty(),
        "{:?}",
        reopened.local_problems()
    );
    let kept = reopened.state().counter();
    drop(reopened);
    // What a fold of the whole channel counts.
    drop(conn);
    for suffix in ["", "-wal", "-shm"] {
        let mut path = db.clone().into_os_string();
        path.push(suffix);
        let _ = fs::remove_file(path);
    }
    let cold = Session::open(temp.home(), temp.project(), Actor::Observer, now).unwrap();
    assert_eq!(kept, cold.state().counter());
}

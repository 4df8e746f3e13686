//! Talk: messages between agents and the human, and each reader's own marker.
//!
//! A message (`talk.post`) is an entry in its sender's log, to one agent, to the human
//! (`master`) or to `all`. A reader's marker (`talk.mark`) is an entry in the **reader's own**
//! log naming, per sender, the last message it has read; markers only grow (the fold keeps the
//! highest of every sender's), so the marker follows the agent to any machine, and one reader's
//! marker never hides a message from another. Whether a recipient has read a message (a read
//! receipt) is its marker compared with the message's seq.
//!
//! A post counts when its sender was at Member or above for it (ADR 0005) or is the master; a
//! marker counts when its author holds its name.

use std::collections::{BTreeMap, BTreeSet, VecDeque};

use serde::{Deserialize, Serialize};

use super::{Acted, Changes, EntryId};
use crate::channel::fold::identity::{FoldProblem, FoldProblemKind, Identity, MasterPos, Seat};
use crate::channel::fold::levels::Level;
use crate::channel::log::keys::PublicKey;
use crate::channel::log::names::AgentName;
use crate::time::Timestamp;

/// The entry kinds of talk.
pub mod kinds {
    pub const POST: &str = "talk.post";
    pub const MARK: &str = "talk.mark";

    /// Every kind talk folds.
    pub const ALL: &[&str] = &[POST, MARK];
}

/// Whether talk folds entries of `kind`.
pub fn is_kind(kind: &str) -> bool {
    kinds::ALL.contains(&kind)
}

/// A message's text kept in the entry, at most; a longer one is in a blob, the entry keeping
/// this much of it.
pub const MAX_INLINE_TEXT: usize = 300;
/// The longest message, in characters.
pub const MAX_TEXT: usize = 8_000;
/// The recipient that means every seated agent.
pub const ALL: &str = "all";

/// The body of `talk.post`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PostBody {
    /// An agent's name, `master` (the human) or `all`.
    pub to: String,
    /// The text, or its first [`MAX_INLINE_TEXT`] characters when it is in a blob.
    pub text: String,
    /// The whole text's blob id (hex), when it is longer than the entry keeps.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub blob: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reply_to: Option<String>,
    /// The takeover this message announces (`taking over from X`): the id of its
    /// `primary.take`, so that a takeover that lost the race is shown as such.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub takeover: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seen: Option<MasterPos>,
}

/// The body of `talk.mark`: per sender, the seq of the last message read.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MarkBody {
    pub upto: BTreeMap<AgentName, u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seen: Option<MasterPos>,
}

/// Who a message is for.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum Recipient {
    /// Every seated agent (and the human).
    All,
    /// One agent, or the human (`master`).
    One(AgentName),
}

impl Recipient {
    pub fn parse(text: &str) -> Option<Self> {
        if text == ALL {
            return Some(Self::All);
        }
        AgentName::parse_any(text).ok().map(Self::One)
    }

    pub fn as_str(&self) -> &str {
        match self {
            Self::All => ALL,
            Self::One(name) => name.as_str(),
        }
    }
}

/// One message, as folded.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Message {
    pub id: EntryId,
    pub from: AgentName,
    key: PublicKey,
    by_master: bool,
    pub seq: u64,
    pub to: Recipient,
    pub text: String,
    /// The whole text's blob, when the entry holds only its start.
    pub blob: Option<String>,
    pub reply_to: Option<String>,
    /// The takeover it announces, when it does.
    pub takeover: Option<EntryId>,
    pub time: Timestamp,
    pos: MasterPos,
    /// The stamp of the change that brought it (for `since`).
    pub stamp: u64,
}

impl Message {
    /// Whether `reader` is among its recipients (never its own sender).
    pub fn is_for(&self, reader: &AgentName) -> bool {
        self.from != *reader && self.in_stream_of(reader)
    }

    /// Whether it is in `reader`'s stream: to everyone, or to it (its own included).
    pub fn in_stream_of(&self, reader: &AgentName) -> bool {
        match &self.to {
            Recipient::All => true,
            Recipient::One(name) => name == reader,
        }
    }

    /// Whether it counts: the master's, or a seated sender's at Member or above for it.
    fn counts(&self, identity: &Identity) -> bool {
        self.by_master
            || (identity.seat(&self.from) == Seat::Seated(&self.key)
                && identity.level_at(&self.from, &self.key, self.seq, self.pos, self.time)
                    >= Level::Member)
    }
}

/// A reader's marker as folded, with the key that wrote it.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
struct Marker {
    /// Per (writing key), per sender, the highest seq read.
    by_key: Vec<(PublicKey, BTreeMap<AgentName, u64>)>,
}

/// Every message and marker. See the module docs.
///
/// Indexes keep a read cheap whatever the history: messages by stamp, each recipient's direct
/// messages and the broadcasts by stamp, and per reader the stamp up to which it has read
/// everything for it (advanced when its marker is folded), so a read looks only past that.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Talk {
    messages: BTreeMap<u64, Message>,
    ids: BTreeMap<EntryId, u64>,
    inbox: BTreeMap<AgentName, BTreeSet<u64>>,
    broadcast: BTreeSet<u64>,
    /// Per reader: every message for it up to this stamp is read (or does not count).
    read_through: BTreeMap<AgentName, u64>,
    /// Per sender, the stamps of its latest messages.
    sent: BTreeMap<AgentName, VecDeque<u64>>,
    markers: BTreeMap<AgentName, Marker>,
    /// Markers by the master (the human), whatever its key: the master's log is one reader.
    master_marker: BTreeMap<AgentName, u64>,
    problems: Vec<FoldProblem>,
    /// Every message brought at or before this stamp is in the kept state's rows only, but
    /// the latest ones of each sender (`sent`, for read receipts): 0 when every message is in
    /// memory. A session keeps only the newest messages in memory and reads the rest when
    /// asked (ADR 0011, "Talk paged"); what is kept is the same either way.
    #[serde(skip)]
    paged: u64,
}

const MAX_PROBLEMS: usize = 500;
/// Sent messages remembered per sender, for read receipts.
const KEPT_SENT: usize = 8;

/// What the kept state holds of talk beside one row per message (ADR 0011): the readers'
/// markers and read-through stamps, the senders' latest stamps and the problems. The indexes
/// by id, recipient and broadcast are made again from the messages.
#[derive(Serialize)]
struct KeptRestRef<'a> {
    read_through: &'a BTreeMap<AgentName, u64>,
    sent: &'a BTreeMap<AgentName, VecDeque<u64>>,
    markers: &'a BTreeMap<AgentName, Marker>,
    master_marker: &'a BTreeMap<AgentName, u64>,
    problems: &'a [FoldProblem],
}

#[derive(Deserialize)]
struct KeptRest {
    read_through: BTreeMap<AgentName, u64>,
    sent: BTreeMap<AgentName, VecDeque<u64>>,
    markers: BTreeMap<AgentName, Marker>,
    master_marker: BTreeMap<AgentName, u64>,
    problems: Vec<FoldProblem>,
}

impl Talk {
    /// The bytes of what the kept state holds of talk beside its messages' rows.
    pub(crate) fn encode_rest(&self) -> Result<Vec<u8>, String> {
        postcard::to_stdvec(&KeptRestRef {
            read_through: &self.read_through,
            sent: &self.sent,
            markers: &self.markers,
            master_marker: &self.master_marker,
            problems: &self.problems,
        })
        .map_err(|e| e.to_string())
    }

    /// The rows of the messages brought after stamp `after`, each as its key (the stamp,
    /// big-endian, so the rows sort as the stamps do) and bytes. A message never changes once
    /// folded, and stamps only grow, so the messages a save has not kept are those after the
    /// last one it kept.
    pub(crate) fn message_rows_after(&self, after: u64) -> Result<super::lazy::Rows, String> {
        self.messages
            .range(after.saturating_add(1)..)
            .map(|(stamp, message)| {
                let bytes = postcard::to_stdvec(message).map_err(|e| e.to_string())?;
                Ok((stamp.to_be_bytes().to_vec(), bytes))
            })
            .collect()
    }

    /// The stamp of the latest message (0 when there is none).
    pub(crate) fn last_stamp(&self) -> u64 {
        self.messages.keys().next_back().copied().unwrap_or(0)
    }

    /// Talk as the kept state holds it: `rest` ([`Talk::encode_rest`]) and one row per message
    /// ([`Talk::message_rows_after`]), the indexes made from the messages. This is its small
    /// row, no message in memory yet: every message at or before
    /// `paged` is to stay in the kept state, those after it are to be inserted
    /// ([`Talk::insert_kept`]). Must be called within [`super::lazy::with_memos`].
    pub(crate) fn rest_from_kept(rest: &[u8], paged: u64) -> Result<Self, String> {
        let rest: KeptRest = super::lazy::decode_in_memos(rest)?;
        Ok(Self {
            read_through: rest.read_through,
            sent: rest.sent,
            markers: rest.markers,
            master_marker: rest.master_marker,
            problems: rest.problems,
            paged,
            ..Self::default()
        })
    }

    /// Takes kept messages' rows into memory. Must be called within
    /// [`super::lazy::with_memos`].
    pub(crate) fn insert_kept<'a>(
        &mut self,
        rows: impl IntoIterator<Item = &'a [u8]>,
    ) -> Result<(), String> {
        for bytes in rows {
            let message: Message = super::lazy::decode_in_memos(bytes)?;
            self.insert(message);
        }
        Ok(())
    }

    /// One kept message's row, decoded (within [`super::lazy::with_memos`]).
    pub(crate) fn decode_message(bytes: &[u8]) -> Result<Message, String> {
        super::lazy::decode_in_memos(bytes)
    }

    fn insert(&mut self, message: Message) {
        let stamp = message.stamp;
        match &message.to {
            Recipient::All => {
                self.broadcast.insert(stamp);
            }
            Recipient::One(name) => {
                self.inbox.entry(name.clone()).or_default().insert(stamp);
            }
        }
        self.ids.insert(message.id.clone(), stamp);
        self.messages.insert(stamp, message);
    }

    /// Every message brought at or before this stamp is in the kept state only, but those of
    /// [`Talk::pinned_paged`] (0: every message is in memory).
    pub fn paged_through(&self) -> u64 {
        self.paged
    }

    /// The stamps at or before [`Talk::paged_through`] kept in memory all the same: each
    /// sender's latest messages, which read receipts show.
    pub(crate) fn pinned_paged(&self) -> Vec<u64> {
        let mut stamps: Vec<u64> = self
            .sent
            .values()
            .flatten()
            .copied()
            .filter(|stamp| *stamp <= self.paged)
            .collect();
        stamps.sort_unstable();
        stamps.dedup();
        stamps
    }

    /// Drops from memory the messages kept in the kept state's rows (those brought at or
    /// before `kept_through`) but the newest `keep` and the pinned ones: they are read back
    /// when asked for. Changes what is in memory, never what talk is. Returns how many went.
    pub(crate) fn page_out(&mut self, keep: usize, kept_through: u64) -> usize {
        let Some(&newest_dropped) = self.messages.keys().rev().nth(keep) else {
            return 0;
        };
        let through = newest_dropped.min(kept_through);
        if through <= self.paged {
            return 0;
        }
        let pinned: BTreeSet<u64> = self.sent.values().flatten().copied().collect();
        let gone: Vec<u64> = self
            .messages
            .range(self.paged.saturating_add(1)..=through)
            .map(|(stamp, _)| *stamp)
            .filter(|stamp| !pinned.contains(stamp))
            .collect();
        for stamp in &gone {
            if let Some(message) = self.messages.remove(stamp) {
                self.ids.remove(&message.id);
                match &message.to {
                    Recipient::All => {
                        self.broadcast.remove(stamp);
                    }
                    Recipient::One(name) => {
                        if let Some(stamps) = self.inbox.get_mut(name) {
                            stamps.remove(stamp);
                            if stamps.is_empty() {
                                self.inbox.remove(name);
                            }
                        }
                    }
                }
            }
        }
        self.paged = through;
        gone.len()
    }

    /// Takes back into memory every message paged out (`rows`: every kept message at or
    /// before [`Talk::paged_through`]): talk is whole in memory again. Must be called within
    /// [`super::lazy::with_memos`].
    pub(crate) fn page_in<'a>(
        &mut self,
        rows: impl IntoIterator<Item = &'a [u8]>,
    ) -> Result<(), String> {
        for bytes in rows {
            let message: Message = super::lazy::decode_in_memos(bytes)?;
            if message.stamp <= self.paged && !self.messages.contains_key(&message.stamp) {
                self.insert(message);
            }
        }
        self.paged = 0;
        Ok(())
    }

    fn report(&mut self, acted: &Acted<'_>, detail: String) {
        if self.problems.len() < MAX_PROBLEMS {
            self.problems.push(FoldProblem::about(
                acted.entry,
                FoldProblemKind::MalformedBody,
                detail,
            ));
        }
    }

    /// Problems with talk entries that could not be folded (bad bodies).
    pub fn problems(&self) -> Vec<FoldProblem> {
        self.problems.clone()
    }

    /// Folds one entry (other kinds are ignored).
    pub fn feed(&mut self, acted: &Acted<'_>, identity: &Identity, changes: &mut Changes) {
        match acted.kind() {
            kinds::POST => self.feed_post(acted, identity, changes),
            kinds::MARK => self.feed_mark(acted, identity),
            _ => {}
        }
    }

    fn feed_post(&mut self, acted: &Acted<'_>, identity: &Identity, changes: &mut Changes) {
        let body = match PostBody::deserialize(acted.body()) {
            Ok(body) => body,
            Err(err) => return self.report(acted, format!("bad talk.post: {err}")),
        };
        let Some(to) = Recipient::parse(&body.to) else {
            return self.report(acted, format!("talk.post to {:?}", body.to));
        };
        if body.text.chars().count() > MAX_TEXT {
            return self.report(acted, "talk.post text too long".into());
        }
        let stamp = changes.stamp();
        let message = Message {
            id: acted.id.clone(),
            from: acted.author.clone(),
            key: *acted.key,
            by_master: acted.by_master,
            seq: acted.entry.seq(),
            to,
            text: body.text,
            blob: body.blob,
            reply_to: body.reply_to,
            takeover: body.takeover.and_then(|id| id.parse().ok()),
            time: acted.time,
            pos: acted.pos,
            stamp,
        };
        match &message.to {
            Recipient::All => {
                self.broadcast.insert(stamp);
            }
            Recipient::One(name) => {
                self.inbox.entry(name.clone()).or_default().insert(stamp);
            }
        }
        let sent = self.sent.entry(message.from.clone()).or_default();
        if sent.len() >= KEPT_SENT {
            sent.pop_front();
        }
        sent.push_back(stamp);
        self.ids.insert(message.id.clone(), stamp);
        let readers: Vec<AgentName> = match &message.to {
            Recipient::One(name) => vec![name.clone()],
            Recipient::All => self.markers.keys().cloned().collect(),
        };
        self.messages.insert(stamp, message);
        // A marker folded before the messages it covers (logs are read in any order) moves its
        // reader's read-through here; for a reader caught up this looks at one message.
        for reader in readers {
            if self.markers.contains_key(&reader) {
                self.advance(&reader, identity);
            }
        }
    }

    fn feed_mark(&mut self, acted: &Acted<'_>, identity: &Identity) {
        let body = match MarkBody::deserialize(acted.body()) {
            Ok(body) => body,
            Err(err) => return self.report(acted, format!("bad talk.mark: {err}")),
        };
        let merge = |into: &mut BTreeMap<AgentName, u64>| {
            for (sender, seq) in &body.upto {
                let at = into.entry(sender.clone()).or_default();
                *at = (*at).max(*seq);
            }
        };
        if acted.by_master {
            merge(&mut self.master_marker);
        } else {
            let marker = self.markers.entry(acted.author.clone()).or_default();
            match marker.by_key.iter_mut().find(|(key, _)| key == acted.key) {
                Some((_, upto)) => merge(upto),
                None => {
                    let mut upto = BTreeMap::new();
                    merge(&mut upto);
                    marker.by_key.push((*acted.key, upto));
                }
            }
        }
        self.advance(acted.author, identity);
    }

    /// Moves `reader`'s read-through stamp past every message for it that it has read (or that
    /// does not count), stopping at the first it has not.
    ///
    /// A reader whose read-through lies among the messages paged out is not moved here: the
    /// messages past it are not in memory, and a read-through is only ever a bound a read may
    /// start from (a lower one costs a read time, never a message). The session walks them
    /// from the kept state ([`Talk::advance_over`]).
    fn advance(&mut self, reader: &AgentName, identity: &Identity) {
        let from = self.read_through.get(reader).copied().unwrap_or(0);
        if from < self.paged {
            return;
        }
        self.walk(reader, identity, from);
    }

    /// The stamp up to which every message for `reader` is read or does not count.
    pub(crate) fn read_through_of(&self, reader: &AgentName) -> u64 {
        self.read_through.get(reader).copied().unwrap_or(0)
    }

    /// Whether `reader`'s read-through lies among the messages paged out (see
    /// [`Talk::advance_over`]).
    pub fn reader_behind_paged(&self, reader: &AgentName) -> bool {
        self.markers.contains_key(reader)
            && self.read_through.get(reader).copied().unwrap_or(0) < self.paged
    }

    /// [`Talk::advance`] for a reader whose read-through lies among the messages paged out:
    /// `older` are every message brought after its read-through up to `upto` (at most
    /// [`Talk::paged_through`]), as the session read them from the kept state, in stamp order.
    /// Moves it as [`Talk::advance`] would have with them in memory, and on through memory
    /// once `upto` reaches the paged-out end. Returns whether the walk may go on past `upto`
    /// (it stopped at no unread message and the messages paged out go on).
    pub(crate) fn advance_over(
        &mut self,
        reader: &AgentName,
        identity: &Identity,
        older: &[Message],
        upto: u64,
    ) -> bool {
        let from = self.read_through.get(reader).copied().unwrap_or(0);
        if from >= self.paged || !self.markers.contains_key(reader) {
            return false;
        }
        let marker = self.marker(reader, identity);
        let mut through = from;
        let mut stopped = false;
        for message in older.iter().filter(|m| m.stamp > from && m.stamp <= upto) {
            if !message.in_stream_of(reader) {
                continue;
            }
            if message.is_for(reader) {
                let read = marker
                    .get(&message.from)
                    .is_some_and(|seq| *seq >= message.seq);
                if !read && message.counts(identity) {
                    stopped = true;
                    break;
                }
            }
            through = message.stamp;
        }
        if through > from {
            self.read_through.insert(reader.clone(), through);
        }
        if stopped {
            return false;
        }
        if upto >= self.paged {
            // Past the messages paged out: on through memory, as a walk there would.
            self.walk_from(reader, identity, self.paged, through);
            return false;
        }
        true
    }

    fn walk(&mut self, reader: &AgentName, identity: &Identity, from: u64) {
        self.walk_from(reader, identity, from, from);
    }

    /// Walks `reader`'s messages brought after `after`, its read-through being `from`.
    fn walk_from(&mut self, reader: &AgentName, identity: &Identity, after: u64, from: u64) {
        let marker = self.marker(reader, identity);
        let mut through = from;
        for stamp in self.stream(reader, after) {
            let message = &self.messages[&stamp];
            if !message.is_for(reader) {
                through = stamp;
                continue;
            }
            let read = marker
                .get(&message.from)
                .is_some_and(|seq| *seq >= message.seq);
            if !read && message.counts(identity) {
                break;
            }
            through = stamp;
        }
        if through > from {
            self.read_through.insert(reader.clone(), through);
        }
    }

    /// Who holds a name changed: read-through stamps are worked out again.
    pub fn rejudge(&mut self, identity: &Identity) {
        let readers: Vec<AgentName> = self.read_through.keys().cloned().collect();
        self.read_through.clear();
        for reader in readers {
            self.advance(&reader, identity);
        }
    }

    /// The stamps of messages for `reader` after `after`, oldest first: its direct messages and
    /// the broadcasts, merged (its own broadcasts left out later, by [`Message::is_for`]).
    fn stream<'a>(&'a self, reader: &AgentName, after: u64) -> impl Iterator<Item = u64> + 'a {
        let range = after.saturating_add(1)..;
        let mut direct = self
            .inbox
            .get(reader)
            .into_iter()
            .flat_map(move |stamps| stamps.range(range.clone()))
            .copied()
            .peekable();
        let mut broadcast = self
            .broadcast
            .range(after.saturating_add(1)..)
            .copied()
            .peekable();
        std::iter::from_fn(move || match (direct.peek(), broadcast.peek()) {
            (Some(a), Some(b)) if a < b => direct.next(),
            (Some(_), Some(_)) => broadcast.next(),
            (Some(_), None) => direct.next(),
            (None, _) => broadcast.next(),
        })
    }

    /// The message `id`, if it counts.
    pub fn message(&self, id: &EntryId, identity: &Identity) -> Option<&Message> {
        self.ids
            .get(id)
            .and_then(|stamp| self.messages.get(stamp))
            .filter(|message| message.counts(identity))
    }

    /// What `reader` has read: per sender, the seq of the last message (its marker by the key
    /// that holds its name now, or the master's).
    pub fn marker(&self, reader: &AgentName, identity: &Identity) -> BTreeMap<AgentName, u64> {
        self.marker_of(reader, identity)
            .cloned()
            .unwrap_or_default()
    }

    /// The marker [`Talk::marker`] gives, borrowed (none where it would be empty).
    fn marker_of(
        &self,
        reader: &AgentName,
        identity: &Identity,
    ) -> Option<&BTreeMap<AgentName, u64>> {
        if reader.is_master() {
            return Some(&self.master_marker);
        }
        let key = identity.holder(reader)?;
        self.markers
            .get(reader)
            .and_then(|marker| marker.by_key.iter().find(|(k, _)| k == key))
            .map(|(_, upto)| upto)
    }

    /// Whether `reader` has read `message`.
    pub fn has_read(&self, reader: &AgentName, message: &Message, identity: &Identity) -> bool {
        self.marker_of(reader, identity)
            .and_then(|marker| marker.get(&message.from))
            .is_some_and(|seq| *seq >= message.seq)
    }

    /// The agents that have read `message`, by name: only those that ever marked a read are
    /// looked at (a roster of thousands who never read costs nothing here).
    pub fn readers_of<'a>(
        &'a self,
        message: &'a Message,
        identity: &'a Identity,
    ) -> impl Iterator<Item = &'a AgentName> + 'a {
        self.markers
            .keys()
            .filter(move |reader| self.has_read(reader, message, identity))
    }

    /// Messages for `reader` that count, oldest first, brought after stamp `after`; only those
    /// it has not read when `unread_only`.
    pub fn for_reader<'a>(
        &'a self,
        reader: &'a AgentName,
        identity: &'a Identity,
        after: u64,
        unread_only: bool,
    ) -> impl Iterator<Item = &'a Message> + 'a {
        let (marker, from) = self.reading(reader, identity, after, unread_only);
        self.stream(reader, from.max(self.paged))
            .filter_map(|stamp| self.messages.get(&stamp))
            .filter(move |message| {
                message.is_for(reader)
                    && message.counts(identity)
                    && marker
                        .get(&message.from)
                        .is_none_or(|seq| message.seq > *seq)
            })
    }

    /// Where a read of [`Talk::for_reader`] starts, and the marker it holds messages to.
    fn reading(
        &self,
        reader: &AgentName,
        identity: &Identity,
        after: u64,
        unread_only: bool,
    ) -> (BTreeMap<AgentName, u64>, u64) {
        if unread_only {
            let through = self.read_through.get(reader).copied().unwrap_or(0);
            (self.marker(reader, identity), after.max(through))
        } else {
            (BTreeMap::new(), after)
        }
    }

    /// The part of a read of [`Talk::for_reader`] among the messages paged out: the stamps
    /// it covers there (none when it starts past them) and which of the messages it shows.
    /// [`Talk::for_reader`] itself gives the messages in memory past them.
    pub fn paged_reading<'a>(
        &'a self,
        reader: &'a AgentName,
        identity: &'a Identity,
        after: u64,
        unread_only: bool,
    ) -> Option<(u64, u64, impl Fn(&Message) -> bool + 'a)> {
        let (marker, from) = self.reading(reader, identity, after, unread_only);
        (from < self.paged).then(|| {
            let shows = move |message: &Message| {
                message.is_for(reader)
                    && message.counts(identity)
                    && marker
                        .get(&message.from)
                        .is_none_or(|seq| message.seq > *seq)
            };
            (from, self.paged, shows)
        })
    }

    /// Whether `message` (read back from the kept state) counts now.
    pub fn counts_now(&self, message: &Message, identity: &Identity) -> bool {
        message.counts(identity)
    }

    /// The latest messages `sender` sent that count, newest first (at most eight).
    pub fn sent_by<'a>(
        &'a self,
        sender: &'a AgentName,
        identity: &'a Identity,
    ) -> impl Iterator<Item = &'a Message> + 'a {
        self.sent
            .get(sender)
            .into_iter()
            .flat_map(|stamps| stamps.iter().rev())
            .filter_map(|stamp| self.messages.get(stamp))
            .filter(move |message| message.counts(identity))
    }

    /// How many messages are in memory (all that are folded, unless some are paged out:
    /// [`Talk::paged_through`]).
    pub fn len(&self) -> usize {
        self.messages.len()
    }

    pub fn is_empty(&self) -> bool {
        self.messages.is_empty()
    }
}

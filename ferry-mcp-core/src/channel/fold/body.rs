//! One typed body per entry kind, and the kind each one is written under.
//!
//! An entry's `kind` and its body are one thing: [`EntryBody`] ties each body type to its kind,
//! so [`Session::append`](super::session::Session::append) cannot write a claim's body under an
//! issue's kind. The types are the ones the folds read (they live beside their fold, in
//! `identity` and `state::*`, where the reading rules are), and the testkit's bulk fixtures write
//! them too: the operations, the folds and the fixtures spell each body once. The few kinds no
//! fold reads a body of (a roster entry, presence, stand-by) are here.
//!
//! `seen` (ADR 0005) is not part of what an operation writes: the session adds it to every agent
//! entry, from the identity it folded.

use serde::Serialize;
use serde_json::{Map, Value};

use crate::channel::fold::checkpoint::{self, CheckpointBody};
use crate::channel::fold::identity::{
    AcceptBody, GrantBody, HandoverBody, kinds as identity_kinds,
};
use crate::channel::fold::state::asks::{AnswerBody, RaiseBody, kinds as ask_kinds};
use crate::channel::fold::state::orders::{
    CancelBody, ClaimBody, HandInBody, IssueBody, ProgressBody, ReleaseBody, ReviewBody,
    SubmitBody, kinds as order_kinds,
};
use crate::channel::fold::state::primary::{
    BriefBody, DecideBody, PrimaryReleaseBody, SettingsBody, StandbyBody, TakeBody,
    kinds as primary_kinds,
};
use crate::channel::fold::state::releases::{ApproveBody, RevokeBody, kinds as release_kinds};
use crate::channel::fold::state::secrets::{SHARE, ShareBody};
use crate::channel::fold::state::talk::{MarkBody, PostBody, kinds as talk_kinds};

/// A body that an entry of [`EntryBody::KIND`] carries.
pub trait EntryBody: Serialize {
    /// The entry kind this body is written under.
    const KIND: &'static str;

    /// The body as the entry carries it: a JSON object. A body whose kept form (in the
    /// machine's verified state) needs every field writes the compact entry form here.
    fn to_entry(&self) -> Map<String, Value> {
        match serde_json::to_value(self) {
            Ok(Value::Object(map)) => map,
            // Every body type is a struct with named fields.
            other => panic!("the body of {} is not a JSON object: {other:?}", Self::KIND),
        }
    }
}

/// The kind of an agent's presence record: it says only that its author is alive.
pub const PRESENCE: &str = "presence";

/// The body of `roster.join`: the entry itself is the join (its author and key).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct JoinBody {}

/// The body of `presence`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct PresenceBody {}

macro_rules! kinds {
    ($($body:ty => $kind:expr),* $(,)?) => {
        $(impl EntryBody for $body {
            const KIND: &'static str = $kind;
        })*
    };
}

kinds! {
    JoinBody => identity_kinds::ROSTER_JOIN,
    HandoverBody => identity_kinds::MASTER_HANDOVER,
    AcceptBody => identity_kinds::MASTER_ACCEPT,
    PresenceBody => PRESENCE,
    IssueBody => order_kinds::ISSUE,
    ClaimBody => order_kinds::CLAIM,
    ReleaseBody => order_kinds::RELEASE,
    ProgressBody => order_kinds::PROGRESS,
    SubmitBody => order_kinds::SUBMIT,
    ReviewBody => order_kinds::REVIEW,
    CancelBody => order_kinds::CANCEL,
    HandInBody => order_kinds::HANDIN,
    PostBody => talk_kinds::POST,
    MarkBody => talk_kinds::MARK,
    RaiseBody => ask_kinds::RAISE,
    AnswerBody => ask_kinds::ANSWER,
    TakeBody => primary_kinds::TAKE,
    PrimaryReleaseBody => primary_kinds::RELEASE,
    StandbyBody => primary_kinds::STANDBY,
    SettingsBody => primary_kinds::SETTINGS,
    BriefBody => primary_kinds::BRIEF_SET,
    DecideBody => primary_kinds::BRIEF_DECIDE,
    ShareBody => SHARE,
    CheckpointBody => checkpoint::KIND,
    ApproveBody => release_kinds::APPROVE,
    RevokeBody => release_kinds::REVOKE,
}

impl EntryBody for GrantBody {
    const KIND: &'static str = identity_kinds::GRANT;

    /// Empty scopes and no expiry are left out. (The struct itself has no
    /// `skip_serializing_if`: the verified state keeps it in a format that needs every field.)
    fn to_entry(&self) -> Map<String, Value> {
        let mut map = Map::new();
        map.insert("agent".into(), self.agent.as_str().into());
        map.insert("key".into(), self.key.to_hex().into());
        map.insert("level".into(), self.level.as_str().into());
        if !self.scopes.is_empty() {
            map.insert("scopes".into(), self.scopes.clone().into());
        }
        if let Some(expires) = self.expires {
            map.insert("expires".into(), expires.as_millis().into());
        }
        if let Some(after_seq) = self.after_seq {
            map.insert("after_seq".into(), after_seq.into());
        }
        map
    }
}

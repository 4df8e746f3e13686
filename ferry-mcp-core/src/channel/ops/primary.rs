//! The primary and liveness: who leads, whether it has gone quiet, standing by, taking over,
//! handing the role back, the quiet period, and the primary's brief.
//!
//! Liveness depends on the reading time and is never folded (ADR 0005): an agent's age is
//! `now` minus when it was last heard from on this machine. It is `alive` within two minutes
//! (or half the quiet period when that is shorter), `quiet` until the quiet period, `silent`
//! after it. Taking over needs an Orchestrator on a machine that is not paused, and a primary
//! that is silent (or none); the race between two takeovers is the fold's (ADR 0006).

use super::talk::TalkError;
use serde::Serialize;

use super::{OpsError, check_chars, check_not_empty};
use crate::channel::fold::body::PresenceBody;
use crate::channel::fold::levels::Operation;
use crate::channel::fold::state::primary::{
    BriefBody, DecideBody, MAX_BRIEF_LINE, MAX_CONSTRAINTS, MIN_QUIET_PERIOD_S, PRESENCE_FLOOR_MS,
    PRESENCE_PER_QUIET_PERIOD, PrimaryReleaseBody, PrimaryVoid, SettingsBody, StandbyBody,
    TakeBody, presence_every_ms,
};
use crate::channel::log::names::AgentName;
use crate::channel::session::{Actor, Session};
use crate::guard::TextUse;
use crate::time::Timestamp;

/// Why an operation on the primary or a brief failed. One variant per cause;
/// [`PrimaryError::code`] is stable.
#[derive(Debug, thiserror::Error)]
pub enum PrimaryError {
    /// What any operation can fail with (the session, the arguments' shape).
    #[error(transparent)]
    Ops(#[from] OpsError),
    /// The takeover was written; telling the fleet failed.
    #[error(transparent)]
    Talk(#[from] TalkError),
    #[error(
        "{primary} is {} ({age_s}s since it was heard from; silent after {quiet_period_s}s): standby instead",
        .state.as_str()
    )]
    PrimaryAlive {
        primary: AgentName,
        state: Liveness,
        age_s: u64,
        quiet_period_s: u64,
    },
    #[error("{agent} is not primary (the primary is {})", .primary.as_ref().map_or("nobody".to_owned(), ToString::to_string))]
    NotPrimary {
        agent: AgentName,
        primary: Option<AgentName>,
    },
    #[error("this would not count: {reason}")]
    DoesNotCount { reason: PrimaryVoid },
    #[error("only the human (the master key) may {action}")]
    HumanOnly { action: &'static str },
    /// Below the minimum, presence could not be written often enough for an agent calling
    /// tools to be heard within the period.
    #[error(
        "a quiet period is between {MIN_QUIET_PERIOD_S} seconds and 30 days (presence is written at most every {} s, and {PRESENCE_PER_QUIET_PERIOD} times within a quiet period)",
        PRESENCE_FLOOR_MS / 1000
    )]
    QuietPeriodOutOfRange,
    #[error("a brief is an agent's")]
    BriefIsAnAgents,
}

impl PrimaryError {
    /// A stable machine-readable code (tool results carry it).
    pub fn code(&self) -> &'static str {
        match self {
            Self::Ops(err) => err.code(),
            Self::Talk(err) => err.code(),
            Self::PrimaryAlive { .. } => "primary_alive",
            Self::NotPrimary { .. } => "not_primary",
            Self::DoesNotCount { .. } => "does_not_count",
            Self::HumanOnly { .. } => "master_only",
            Self::QuietPeriodOutOfRange | Self::BriefIsAnAgents => "invalid",
        }
    }
}

/// How recently an agent was heard from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Liveness {
    Alive,
    Quiet,
    Silent,
}

impl std::fmt::Display for Liveness {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl Liveness {
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Alive => "alive",
            Self::Quiet => "quiet",
            Self::Silent => "silent",
        }
    }
}

/// An agent counts as alive at most this long after it was last heard from.
pub const ALIVE_FOR_S: u64 = 120;
pub use crate::channel::fold::body::PRESENCE;

/// How long ago `agent` was heard from here, and what that makes it, at `now`.
pub fn liveness(session: &Session, agent: &AgentName, now: Timestamp) -> Option<(u64, Liveness)> {
    let heard = session.state().heard(agent)?;
    let age = now.seconds_since(heard);
    let quiet = session.state().leadership.quiet_period_s();
    let alive_for = ALIVE_FOR_S.min(quiet / 2).max(1);
    let state = if age <= alive_for {
        Liveness::Alive
    } else if age <= quiet {
        Liveness::Quiet
    } else {
        Liveness::Silent
    };
    Some((age, state))
}

/// Whether `agent` has been quiet longer than the quiet period, or was never heard from here.
pub fn is_silent(session: &Session, agent: &AgentName, now: Timestamp) -> bool {
    let quiet = session.state().leadership.quiet_period_s();
    liveness(session, agent, now).is_none_or(|(age, _)| age > quiet)
}

/// What the caller may do about the primary now, as the fold and this machine's liveness judge
/// it. Serialized once (snake_case `kind`), worded by each facade.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Advice {
    /// The caller is primary: keep the brief current, release when it stops.
    YouArePrimary,
    /// No primary, and a take by the caller written now would count.
    NoPrimaryTakeOver,
    /// No primary; the caller may not take over (not an Orchestrator, or a take would not count).
    NoPrimary,
    /// The primary is silent and a take by the caller written now would count.
    SilentTakeOver { primary: AgentName },
    /// The primary is silent here, but the logs prove it active within the quiet period: a
    /// take written now would not count yet.
    SilentNotYet {
        primary: AgentName,
        #[serde(skip)]
        reason: PrimaryVoid,
    },
    /// The primary is silent and the caller may not take over: someone who may should.
    SilentTellSomeone { primary: AgentName },
    /// The primary was heard from within the quiet period: stand by.
    Heard { primary: AgentName, state: Liveness },
}

impl Advice {
    /// Whether the caller may take over now.
    pub fn may_take_over(&self) -> bool {
        matches!(
            self,
            Advice::NoPrimaryTakeOver | Advice::SilentTakeOver { .. }
        )
    }
}

/// What `ferry_primary status` answers.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PrimaryStatus {
    pub primary: Option<AgentName>,
    /// Seconds since the primary was last heard from.
    pub age_s: Option<u64>,
    pub state: Option<Liveness>,
    /// The quiet period, after which the primary counts as silent.
    pub quiet_period_s: u64,
    /// What the caller may do now: each facade words it (an agent's MCP actions, the CLI's
    /// commands), so no text here names either.
    pub advice: Advice,
    /// Agents that recorded that they wait.
    pub standing_by: Vec<AgentName>,
}

fn me(session: &Session) -> Option<AgentName> {
    session.actor().agent().cloned()
}

/// Who is primary, how it stands, and what the caller may do.
pub fn status(session: &mut Session, now: Timestamp) -> Result<PrimaryStatus, PrimaryError> {
    session.authorize(Operation::Read, None, now)?;
    session.refresh(now);
    let view = session.state().leadership.view().clone();
    let quiet_period_s = session.state().leadership.quiet_period_s();
    let live = view
        .primary
        .as_ref()
        .and_then(|primary| liveness(session, primary, now));
    let me = me(session);
    // "You may take over" only when a take written now would count: the fold's own judgement
    // (the quiet period after the primary's proven activity), never this machine's liveness.
    let refused = match &me {
        Some(me) if session.authorize(Operation::TakeOver, None, now).is_ok() => {
            session.state().leadership.judge(true, me, now).err()
        }
        _ => Some(PrimaryVoid::FollowsVoid),
    };
    let may_take = refused.is_none();
    let advice = match (&view.primary, live) {
        (Some(primary), _) if Some(primary) == me.as_ref() => Advice::YouArePrimary,
        (None, _) if may_take => Advice::NoPrimaryTakeOver,
        (None, _) => Advice::NoPrimary,
        (Some(primary), Some((_, Liveness::Silent))) | (Some(primary), None) if may_take => {
            Advice::SilentTakeOver {
                primary: primary.clone(),
            }
        }
        (Some(primary), Some((_, Liveness::Silent))) | (Some(primary), None) => match refused {
            Some(reason @ PrimaryVoid::PrimaryActive { .. }) => Advice::SilentNotYet {
                primary: primary.clone(),
                reason,
            },
            _ => Advice::SilentTellSomeone {
                primary: primary.clone(),
            },
        },
        (Some(primary), Some((_, state))) => Advice::Heard {
            primary: primary.clone(),
            state,
        },
    };
    Ok(PrimaryStatus {
        primary: view.primary,
        age_s: live.map(|(age, _)| age),
        state: live.map(|(_, state)| state),
        quiet_period_s,
        advice,
        standing_by: session
            .state()
            .leadership
            .standing_by()
            .map(|(name, _)| name.clone())
            .collect(),
    })
}

/// Records that the caller waits for the primary.
pub fn standby(session: &mut Session, now: Timestamp) -> Result<PrimaryStatus, PrimaryError> {
    session.append(Operation::StandBy, None, &StandbyBody {}, now)?;
    status(session, now)
}

/// What a takeover came to (its [`TakeoverResult`] names it in an answer).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Takeover {
    /// The caller is primary now; `from` was primary before (a message told the fleet).
    TookOver { from: Option<AgentName> },
    /// The caller was primary already.
    AlreadyPrimary,
    /// Another Orchestrator's takeover, made without seeing this one, won the race.
    LostRace { primary: AgentName },
}

/// The name of what a takeover came to, serialized once (snake_case) for every answer that
/// says it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum TakeoverResult {
    TookOver,
    AlreadyPrimary,
    LostRace,
}

impl Takeover {
    pub fn result(&self) -> TakeoverResult {
        match self {
            Self::TookOver { .. } => TakeoverResult::TookOver,
            Self::AlreadyPrimary => TakeoverResult::AlreadyPrimary,
            Self::LostRace { .. } => TakeoverResult::LostRace,
        }
    }
}

/// Takes over as primary: an Orchestrator, on a machine that is not paused, when the primary
/// is silent past the quiet period (or there is none). Tells the fleet.
pub fn takeover(session: &mut Session, now: Timestamp) -> Result<Takeover, PrimaryError> {
    session.refresh(now);
    session.authorize(Operation::TakeOver, None, now)?;
    let me = me(session).ok_or(OpsError::ReadOnly)?;
    let view = session.state().leadership.view().clone();
    // The fold's judgement; a primary still active by its rule is first worded by liveness,
    // as this machine heard it.
    let judged = match session.state().leadership.judge(true, &me, now) {
        Err(PrimaryVoid::AlreadyPrimary) => return Ok(Takeover::AlreadyPrimary),
        Err(reason @ PrimaryVoid::PrimaryActive { .. }) => Err(reason),
        Err(reason) => return Err(PrimaryError::DoesNotCount { reason }),
        Ok(()) => Ok(()),
    };
    if let Some(primary) = &view.primary
        && let Some((age, state)) = liveness(session, primary, now)
        && state != Liveness::Silent
    {
        return Err(PrimaryError::PrimaryAlive {
            primary: primary.clone(),
            state,
            age_s: age,
            quiet_period_s: session.state().leadership.quiet_period_s(),
        });
    }
    judged.map_err(|reason| PrimaryError::DoesNotCount { reason })?;
    let body = TakeBody {
        after: view.tip,
        seen: None,
        primary_seq: session.state().leadership.primary_last_seq(),
    };
    let take = session.append(Operation::TakeOver, None, &body, now)?;
    let take = session.id_of(&take);
    let after = session.state().leadership.view().clone();
    // What the fold made of it: a take that lost a race is void, and says to whom.
    if let Some((_, _, reason)) = after.voided.iter().find(|(id, _, _)| *id == take) {
        return match reason {
            PrimaryVoid::LostRace { winner } => Ok(Takeover::LostRace {
                primary: after.primary.unwrap_or_else(|| winner.clone()),
            }),
            reason => Err(PrimaryError::DoesNotCount {
                reason: reason.clone(),
            }),
        };
    }
    match after.primary {
        Some(primary) if primary == me => {
            if let Some(from) = &view.primary {
                let request = super::talk::PostRequest {
                    to: crate::channel::fold::state::talk::ALL.to_owned(),
                    text: format!("taking over from {from}"),
                    reply_to: None,
                };
                super::talk::post_announcing(session, &request, Some(&take), now)?;
            }
            Ok(Takeover::TookOver { from: view.primary })
        }
        Some(primary) => Ok(Takeover::LostRace { primary }),
        None => Err(PrimaryError::DoesNotCount {
            reason: PrimaryVoid::FollowsVoid,
        }),
    }
}

/// Hands the primary's role back (the primary only).
pub fn release(session: &mut Session, now: Timestamp) -> Result<(), PrimaryError> {
    session.refresh(now);
    let me = me(session).ok_or(OpsError::ReadOnly)?;
    let view = session.state().leadership.view().clone();
    match session.state().leadership.judge(false, &me, now) {
        Ok(()) => {}
        Err(PrimaryVoid::NotPrimary { .. }) => {
            return Err(PrimaryError::NotPrimary {
                agent: me,
                primary: view.primary,
            });
        }
        Err(reason) => return Err(PrimaryError::DoesNotCount { reason }),
    }
    let body = PrimaryReleaseBody {
        after: view.tip,
        seen: None,
    };
    session.append(Operation::ReleasePrimary, None, &body, now)?;
    Ok(())
}

/// Sets the quiet period (the master only).
pub fn set_quiet_period(
    session: &mut Session,
    seconds: u64,
    now: Timestamp,
) -> Result<(), PrimaryError> {
    if session.actor() != &Actor::Master {
        return Err(PrimaryError::HumanOnly {
            action: "set the quiet period",
        });
    }
    if !(MIN_QUIET_PERIOD_S..=30 * 24 * 3600).contains(&seconds) {
        return Err(PrimaryError::QuietPeriodOutOfRange);
    }
    session.append(
        Operation::Approve,
        None,
        &SettingsBody {
            quiet_period_s: seconds,
        },
        now,
    )?;
    Ok(())
}

/// Writes the acting agent's brief: an objective and at most five constraint lines (Member
/// and up; written on the command line, not by a tool, to save tokens).
pub fn set_brief(
    session: &mut Session,
    objective: &str,
    constraints: &[String],
    now: Timestamp,
) -> Result<(), PrimaryError> {
    check_not_empty("the objective", objective)?;
    check_chars("the objective", objective, MAX_BRIEF_LINE)?;
    session.guard(objective, TextUse::Post)?;
    if constraints.len() > MAX_CONSTRAINTS {
        return Err(OpsError::TooLong {
            what: "the constraints",
            len: constraints.len(),
            max: MAX_CONSTRAINTS,
            unit: "lines",
        }
        .into());
    }
    for line in constraints {
        check_chars("a constraint", line, MAX_BRIEF_LINE)?;
        session.guard(line, TextUse::Post)?;
    }
    brief_writer(session)?;
    session.append(
        Operation::Post,
        None,
        &BriefBody {
            objective: objective.to_owned(),
            constraints: constraints.to_vec(),
            seen: None,
        },
        now,
    )?;
    Ok(())
}

/// Records a decision in the acting agent's brief (Member and up).
pub fn decide(session: &mut Session, line: &str, now: Timestamp) -> Result<String, PrimaryError> {
    check_not_empty("the decision", line)?;
    check_chars("the decision", line, MAX_BRIEF_LINE)?;
    session.guard(line, TextUse::Post)?;
    brief_writer(session)?;
    let entry = session.append(
        Operation::Post,
        None,
        &DecideBody {
            line: line.to_owned(),
            seen: None,
        },
        now,
    )?;
    Ok(session.id_of(&entry).to_string())
}

fn brief_writer(session: &Session) -> Result<(), PrimaryError> {
    match session.actor() {
        Actor::Agent(_) => Ok(()),
        _ => Err(PrimaryError::BriefIsAnAgents),
    }
}

/// Records that the acting agent is alive, when its last entry here is older than the
/// presence interval ([`presence_every_ms`]: a few times per quiet period, at most once a
/// minute), so that an agent calling tools always has a record dated within the quiet period
/// and the fold never counts it silent (ADR 0017). Quietly does nothing when the agent may not
/// write (unseated, locked, paused): liveness never refuses a call.
pub fn note_alive(session: &mut Session, now: Timestamp) {
    let Actor::Agent(me) = session.actor().clone() else {
        return;
    };
    let every = presence_every_ms(session.state().leadership.quiet_period_s());
    let recent = session
        .state()
        .heard(&me)
        .is_some_and(|at| now.as_millis().saturating_sub(at.as_millis()) < every);
    if recent || session.authorize(Operation::HandIn, None, now).is_err() {
        return;
    }
    // A failure to write presence costs only liveness; the call goes on.
    let _ = session.append(Operation::HandIn, None, &PresenceBody {}, now);
}

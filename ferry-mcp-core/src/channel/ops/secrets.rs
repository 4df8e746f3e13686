//! `ferry channel secret`: send a named secret to one agent, and open it on that agent's
//! machine. The value is sealed to the recipient's roster key (`channel::log::secret`) and stored as
//! a blob; the entry names only the secret, the recipient and the blob. No MCP tool calls
//! these functions: a secret's value never reaches a model through ferry.

use super::OpsError;
use crate::channel::fold::levels::Operation;
use crate::channel::fold::state::secrets::ShareBody;
use crate::channel::log::names::AgentName;
use crate::channel::log::secret;
use crate::channel::machine::home::KeyHolder;
use crate::channel::session::{Actor, Session};
use crate::time::Timestamp;

/// Why a secret operation failed. One variant per cause; [`SecretsError::code`] is stable.
#[derive(Debug, thiserror::Error)]
pub enum SecretsError {
    /// What any operation can fail with (the session, the arguments' shape).
    #[error(transparent)]
    Ops(#[from] OpsError),
    #[error("a secret name is 1 to {MAX_NAME} of A-Z a-z 0-9 . - _")]
    BadName,
    /// Secrets are sent to agents and opened by them: the human names one.
    #[error("a secret is an agent's: name the agent")]
    AgentsOnly,
    #[error("no secret {name} was sent to {agent}")]
    NotSent { name: String, agent: AgentName },
    #[error("secret {name} was sealed to another key of {agent}: ask for it again")]
    OtherKey { name: String, agent: AgentName },
    #[error("secret {0} names a bad blob")]
    BadBlob(String),
    #[error(transparent)]
    Sealed(#[from] secret::SecretError),
}

impl SecretsError {
    /// A stable machine-readable code (tool results carry it).
    pub fn code(&self) -> &'static str {
        match self {
            Self::Ops(err) => err.code(),
            Self::BadName
            | Self::AgentsOnly
            | Self::NotSent { .. }
            | Self::OtherKey { .. }
            | Self::BadBlob(_)
            | Self::Sealed(_) => "invalid",
        }
    }
}

/// The longest secret name.
pub const MAX_NAME: usize = 64;
/// The largest secret value, in bytes.
pub const MAX_VALUE: usize = 64 * 1024;

fn check_name(name: &str) -> Result<(), SecretsError> {
    let ok = !name.is_empty()
        && name.len() <= MAX_NAME
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'-' | b'_'));
    if ok {
        Ok(())
    } else {
        Err(SecretsError::BadName)
    }
}

/// Sends secret `name` with `value` to agent `to`: sealed to its roster key, stored as a blob,
/// announced by a `secret.share` entry. The human, or an agent at Member and up. Returns the
/// share's id.
pub fn send(
    session: &mut Session,
    name: &str,
    to: &AgentName,
    value: &[u8],
    now: Timestamp,
) -> Result<String, SecretsError> {
    check_name(name)?;
    // The value is sealed; the name is written in the clear.
    crate::guard::check_name(name)?;
    if value.is_empty() {
        return Err(OpsError::Empty("the secret").into());
    }
    if value.len() > MAX_VALUE {
        return Err(OpsError::TooLong {
            what: "the secret",
            len: value.len(),
            max: MAX_VALUE,
            unit: "bytes",
        }
        .into());
    }
    session.refresh(now);
    session.authorize(Operation::Post, None, now)?;
    let key = *session
        .identity()
        .holder(to)
        .ok_or_else(|| OpsError::NotSeated {
            name: to.clone(),
            project: session.project().clone(),
        })?;
    let sealed = secret::seal(&key, value)?;
    let blob = session.channel().put_blob(&sealed)?;
    // It replaces the share that stands now (the chain an agent's share is judged by).
    let after = session
        .state()
        .secrets
        .standing(to, name, session.identity())
        .map(|share| share.hash);
    let body = ShareBody {
        name: name.to_owned(),
        to: to.clone(),
        key,
        blob: blob.to_hex(),
        after,
        seen: None,
    };
    let entry = session.append(Operation::Post, None, &body, now)?;
    Ok(session.id_of(&entry).to_string())
}

/// A secret opened: its value and who sent it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Opened {
    pub value: Vec<u8>,
    /// The sender's name (`master` for the human).
    pub from: AgentName,
    /// The share's id.
    pub id: String,
}

/// Opens secret `name` sent to the acting agent, with its key on this machine: the share that
/// stands by the fold's causal rules, with who sent it.
pub fn get(session: &mut Session, name: &str, now: Timestamp) -> Result<Opened, SecretsError> {
    check_name(name)?;
    let Actor::Agent(me) = session.actor().clone() else {
        return Err(SecretsError::AgentsOnly);
    };
    session.authorize(Operation::Read, None, now)?;
    session.refresh(now);
    let share = session
        .state()
        .secrets
        .standing(&me, name, session.identity())
        .cloned()
        .ok_or_else(|| SecretsError::NotSent {
            name: name.to_owned(),
            agent: me.clone(),
        })?;
    let key = session
        .home()
        .load_key(session.project(), &KeyHolder::Agent(me.clone()), now)?;
    if key.public_key() != share.to_key {
        return Err(SecretsError::OtherKey {
            name: name.to_owned(),
            agent: me,
        });
    }
    let blob = share
        .blob
        .parse()
        .map_err(|_| SecretsError::BadBlob(name.to_owned()))?;
    let sealed = session.channel().get_blob(&blob)?;
    Ok(Opened {
        value: secret::open(&key, &sealed)?,
        from: share.from.clone(),
        id: share.id.to_string(),
    })
}

/// The names of the secrets sent to the acting agent (never their values).
pub fn list(session: &mut Session, now: Timestamp) -> Result<Vec<String>, SecretsError> {
    let Actor::Agent(me) = session.actor().clone() else {
        return Err(SecretsError::AgentsOnly);
    };
    session.authorize(Operation::Read, None, now)?;
    session.refresh(now);
    Ok(session
        .state()
        .secrets
        .names(&me, session.identity())
        .into_iter()
        .map(str::to_owned)
        .collect())
}

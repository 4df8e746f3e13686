//! The command line's own words for an operation's error: the core's texts name no command or
//! flag (an agent reads them too, through the tool facade, which adds the pointer an agent
//! needs), so the line a person reads on stderr gets the `ferry` command or flag that fixes
//! what went wrong here.

use ferry_mcp_core::channel::fold::levels::Refusal;
use ferry_mcp_core::channel::machine::home::HomeError;
use ferry_mcp_core::channel::ops::access::AccessError;
use ferry_mcp_core::channel::ops::asks::AsksError;
use ferry_mcp_core::channel::ops::orders::OrdersError;
use ferry_mcp_core::channel::ops::primary::PrimaryError;
use ferry_mcp_core::channel::ops::project::ProjectError;
use ferry_mcp_core::channel::ops::releases::ReleasesError;
use ferry_mcp_core::channel::ops::search::SearchError;
use ferry_mcp_core::channel::ops::secrets::SecretsError;
use ferry_mcp_core::channel::ops::talk::TalkError;
use ferry_mcp_core::channel::ops::{OperationError, OpsError};

/// The line `ferry` prints for `err` (before escaping): its text, with the command that fixes
/// it where there is one.
pub fn line(err: &anyhow::Error) -> String {
    let text = format!("{err:#}");
    let Some(pointer) = pointer(err) else {
        return text;
    };
    match pointer {
        Pointer::Suffix(suffix) => format!("{text}{suffix}"),
        Pointer::Whole(whole) => whole,
    }
}

enum Pointer {
    /// Said after the error's own text.
    Suffix(String),
    /// Said instead of it (the flags belong inside the sentence).
    Whole(String),
}

fn pointer(err: &anyhow::Error) -> Option<Pointer> {
    use Pointer::{Suffix, Whole};
    let common = err
        .downcast_ref::<OpsError>()
        .or_else(|| {
            err.downcast_ref::<OrdersError>()
                .and_then(OperationError::common)
        })
        .or_else(|| {
            err.downcast_ref::<TalkError>()
                .and_then(OperationError::common)
        })
        .or_else(|| {
            err.downcast_ref::<PrimaryError>()
                .and_then(OperationError::common)
        })
        .or_else(|| {
            err.downcast_ref::<AsksError>()
                .and_then(OperationError::common)
        })
        .or_else(|| {
            err.downcast_ref::<AccessError>()
                .and_then(OperationError::common)
        })
        .or_else(|| {
            err.downcast_ref::<SecretsError>()
                .and_then(OperationError::common)
        })
        .or_else(|| {
            err.downcast_ref::<SearchError>()
                .and_then(OperationError::common)
        })
        .or_else(|| {
            err.downcast_ref::<ProjectError>()
                .and_then(OperationError::common)
        })
        .or_else(|| {
            err.downcast_ref::<ReleasesError>()
                .and_then(OperationError::common)
        });
    let refusal = err.downcast_ref::<Refusal>().or(match common {
        Some(OpsError::Refused(refusal)) => Some(refusal),
        _ => None,
    });
    let home = err.downcast_ref::<HomeError>().or(match common {
        Some(OpsError::Home(home)) => Some(home),
        _ => None,
    });
    if let Some(fix) = refusal
        .and_then(Refusal::fix)
        .or_else(|| home.and_then(HomeError::fix))
    {
        return Some(Whole(fix.with(&format!("{err:#}"))));
    }
    if let Some(err) = err.downcast_ref::<ProjectError>() {
        return match err {
            ProjectError::ChannelExists(_) => {
                Some(Suffix(" (register it with `ferry channel add`)".into()))
            }
            ProjectError::InterruptedInit(project) => Some(Whole(format!(
                "an interrupted `ferry init` left a sealed master key for {project}: run it again and give the same passphrase"
            ))),
            _ => None,
        };
    }
    if let Some(err) = err.downcast_ref::<AccessError>() {
        return match err {
            AccessError::Contested { .. } => Some(Suffix("; pick one with --key".into())),
            AccessError::JoinContested { name, project, .. } => Some(Suffix(format!(
                " (`ferry access set {name} LEVEL --key HEX --project {project}`)"
            ))),
            _ => None,
        };
    }
    if let Some(err) = err.downcast_ref::<OrdersError>() {
        return match err {
            OrdersError::AgentsOnly { .. } => Some(Suffix(" (name one with --as)".into())),
            OrdersError::NoWork => Some(Whole(
                "a submission names a hand-in (--handin ID) or a git ref (--ref REF)".into(),
            )),
            _ => None,
        };
    }
    if let Some(err) = err.downcast_ref::<AsksError>() {
        return match err {
            AsksError::HumanAsks => Some(Suffix(" with `ferry ask approve`".into())),
            _ => None,
        };
    }
    if let Some(err) = err.downcast_ref::<PrimaryError>() {
        return match err {
            PrimaryError::BriefIsAnAgents => Some(Suffix(": name it with --as".into())),
            _ => None,
        };
    }
    if let Some(err) = err.downcast_ref::<SecretsError>() {
        return match err {
            SecretsError::AgentsOnly => Some(Suffix(" with --as".into())),
            _ => None,
        };
    }
    None
}

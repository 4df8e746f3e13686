//! `ferry_update` (admin group; ADR 0020): `check` says what release the master approved for this
//! platform and whether it is newer than what runs; `apply` installs it (Orchestrator only,
//! never on a paused machine) after checking the download against the SHA-256 the master pinned.
//!
//! The one tool that changes the machine, deliberately: it installs only what the master's
//! signed approval names, through the same operation as `ferry update apply`, and nothing of
//! the running server changes, so its answer says the app must restart it.

use ferry_mcp_core::channel::ops::releases::UpdateNote;
use ferry_mcp_core::guard;
use ferry_mcp_core::shape::ToolOutcome;
use ferry_mcp_core::tool::{Annotations, CallContext, Tool, ToolDefinition};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::facade;

/// How `ferry_join` and `ferry_catchup` say that an update waits: one short string.
pub(crate) fn note(update: &UpdateNote) -> String {
    format!("{} approved (running {})", update.version, update.running)
}

/// The arguments of `ferry_update`, one variant per action.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[cfg_attr(feature = "schemas", derive(schemars::JsonSchema))]
#[serde(tag = "action", rename_all = "lowercase", deny_unknown_fields)]
pub enum UpdateArgs {
    Check,
    Apply {
        /// The version to install (else the newest approved).
        #[serde(default)]
        version: Option<String>,
    },
}

/// What `ferry_update` answers.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "schemas", derive(schemars::JsonSchema))]
pub struct UpdateOut {
    /// The version this server runs (an apply does not change it).
    pub running: String,
    /// This platform's Rust target triple.
    pub platform: String,
    /// The newest version the master approved and pinned for this platform.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub newest: Option<String>,
    pub newer: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub notes: Option<String>,
    /// apply: the version installed, its SHA-256 (the pin), and what the app must do.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub installed: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sha256: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub restart: Option<String>,
}

pub(crate) static DEFINITION: ToolDefinition = ToolDefinition {
    name: "ferry_update",
    title: "Update",
    description: "Releases the master approved. check: the newest here, and whether it is newer. apply: Orchestrator; installs it if it matches the pinned SHA-256; the app then restarts the server.",
    input_schema: r#"{"type":"object","properties":{"action":{"enum":["check","apply"]},"version":{"type":"string"}},"required":["action"],"additionalProperties":false}"#,
    output_schema: Some(
        r#"{"type":"object","properties":{"running":{"type":"string"},"platform":{"type":"string"},"newest":{"type":"string"},"newer":{"type":"boolean"},"notes":{"type":"string"},"installed":{"type":"string"},"sha256":{"type":"string"},"restart":{"type":"string"}},"required":["running","platform","newer"],"additionalProperties":false}"#,
    ),
    // apply replaces the binary on disk (destructive), and a second call is another install
    // (not idempotent); it may fetch from a URL the approval names (open world).
    annotations: Annotations {
        read_only: false,
        destructive: true,
        idempotent: false,
        open_world: true,
    },
};

/// `ferry_update`.
#[derive(Debug)]
pub struct FerryUpdate;

impl Tool for FerryUpdate {
    fn definition(&self) -> &'static ToolDefinition {
        &DEFINITION
    }

    fn call(&self, args: &Map<String, Value>, cx: &mut CallContext<'_>) -> ToolOutcome {
        let (args, now, channel) = match facade::start::<UpdateArgs>(DEFINITION.name, args, cx) {
            Ok(started) => started,
            Err(refusal) => return refusal,
        };
        let applied = match &args {
            UpdateArgs::Check => None,
            UpdateArgs::Apply { version } => match channel.update_apply(version.as_deref(), now) {
                Ok(applied) => Some(applied),
                Err(err) => return facade::failed(&err),
            },
        };
        let check = match channel.update_check(now) {
            Ok(check) => check,
            Err(err) => return facade::failed(&err),
        };
        let summary = match (&applied, &check.newest) {
            (Some(applied), _) => format!(
                "installed {} (sha256 {}, the pin); {}",
                applied.version, applied.sha256, applied.restart
            ),
            (None, Some(newest)) if check.newer => format!(
                "{newest} is approved for {}, newer than the running {}: tell the human; never apply it in the middle of an order",
                check.platform, check.running
            ),
            (None, _) => format!(
                "nothing newer than the running {} is approved for {}",
                check.running, check.platform
            ),
        };
        let out = UpdateOut {
            running: check.running,
            platform: check.platform,
            newest: check.newest,
            newer: check.newer,
            // The human's text, read back: masked like every other.
            notes: check
                .notes
                .map(|notes| guard::redact(&notes).text.into_owned()),
            installed: applied.as_ref().map(|applied| applied.version.clone()),
            sha256: applied.as_ref().map(|applied| applied.sha256.clone()),
            restart: applied.map(|applied| applied.restart.to_owned()),
        };
        ToolOutcome::ok(facade::structured(&out), summary)
    }
}

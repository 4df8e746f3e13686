//! Releases (ADR 0020): the human approves and revokes them (`ferry release`), and the human or
//! an Orchestrator checks for and installs one (`ferry update`, `ferry_update`).
//!
//! What may be installed is the fold's answer (`state::releases`), never the entry read: an
//! approval counts only if the master signed it, for a platform only if it pins a SHA-256
//! there. Installing checks the download against that pin (`ops::install`); nothing here
//! changes the running process, so every answer of `apply` says the server must be restarted.

use std::collections::BTreeMap;
use std::fs;
use std::io::Read;
use std::path::{Path, PathBuf};

use serde::Serialize;

use super::install::{self, InstallError};
use super::{OpsError, check_chars};
use crate::channel::fold::levels::{Operation, Refusal};
use crate::channel::fold::state::releases::{
    Approval, ApproveBody, Artifact, NotInstallable, ReleaseState, RevokeBody, Sha256, Source,
    parse_version,
};
use crate::channel::log::store::BlobId;
use crate::channel::session::{Actor, Session};
use crate::time::Timestamp;

/// The target triple this build runs on (compiled in by `build.rs`).
pub const THIS_PLATFORM: &str = env!("FERRY_TARGET");

/// The most characters of an approval's notes.
pub const MAX_NOTES: usize = 500;

/// What runs here: the version and platform an approval is judged for, the binary an update
/// replaces (the binary passes the file it runs from; tests a copy), and how an `https://`
/// artifact is fetched (the system's roots; tests trust their own loopback server's).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Installed {
    pub version: semver::Version,
    pub triple: String,
    pub binary: Option<PathBuf>,
    pub https: install::Https,
}

impl Installed {
    /// This build, with no binary to replace.
    pub fn this_build() -> Self {
        Self {
            version: parse_version(env!("CARGO_PKG_VERSION")).expect("the crate version is semver"),
            triple: THIS_PLATFORM.to_owned(),
            binary: None,
            https: install::Https::default(),
        }
    }

    /// This build, replacing `binary` when it updates.
    pub fn at(binary: impl Into<PathBuf>) -> Self {
        Self {
            binary: Some(binary.into()),
            ..Self::this_build()
        }
    }
}

/// Why a release operation failed. One variant per cause; [`ReleasesError::code`] is stable.
#[derive(Debug, thiserror::Error)]
pub enum ReleasesError {
    /// What any operation can fail with (the session, the arguments' shape).
    #[error(transparent)]
    Ops(#[from] OpsError),
    #[error("{0:?} is not a semver version")]
    BadVersion(String),
    #[error("an approval names at least one artifact")]
    NoArtifacts,
    #[error("the artifact for {0} is given twice")]
    TwiceForPlatform(String),
    #[error("a SHA-256 is given for {0}, which has no artifact")]
    PinWithoutArtifact(String),
    #[error("the SHA-256 given for {triple} differs from its file's ({found})")]
    PinDiffers { triple: String, found: Sha256 },
    #[error("{path}: {why}")]
    Artifact { path: PathBuf, why: String },
    #[error("the master has not approved {0}")]
    NotApproved(semver::Version),
    #[error("the master revoked {0}")]
    Revoked(semver::Version),
    #[error("the approval of {version} names no artifact for {triple}")]
    NoArtifact {
        version: semver::Version,
        triple: String,
    },
    #[error(
        "the approval of {version} pins no SHA-256 for {triple}: it approves nothing there, refused"
    )]
    NoPin {
        version: semver::Version,
        triple: String,
    },
    #[error("no approved version for {triple} is newer than the running {running}")]
    NothingNewer {
        running: semver::Version,
        triple: String,
    },
    #[error("{0} is the version running here")]
    AlreadyRunning(semver::Version),
    #[error(
        "{version} is older than the running {running} and its approval does not allow a downgrade"
    )]
    Downgrade {
        version: semver::Version,
        running: semver::Version,
    },
    #[error("the approval of {0} names a bad blob")]
    BadBlob(semver::Version),
    #[error(transparent)]
    Install(#[from] InstallError),
}

impl ReleasesError {
    /// A stable machine-readable code (tool results carry it).
    pub fn code(&self) -> &'static str {
        match self {
            Self::Ops(err) => err.code(),
            Self::BadVersion(_)
            | Self::NoArtifacts
            | Self::TwiceForPlatform(_)
            | Self::PinWithoutArtifact(_)
            | Self::PinDiffers { .. }
            | Self::Artifact { .. } => "invalid",
            Self::NotApproved(_) | Self::Revoked(_) | Self::NoArtifact { .. } => "not_approved",
            Self::NoPin { .. } => "no_pin",
            Self::NothingNewer { .. } => "no_update",
            Self::AlreadyRunning(_) => "already_running",
            Self::Downgrade { .. } => "downgrade_refused",
            Self::BadBlob(_) => "bad_blob",
            Self::Install(InstallError::Mismatch { .. }) => "checksum_mismatch",
            Self::Install(InstallError::NoCurl) => "https_unavailable",
            Self::Install(InstallError::RedirectOffHttps { .. }) => "redirect_refused",
            Self::Install(InstallError::Untrusted { .. }) => "untrusted_server",
            Self::Install(InstallError::NoBinary) => "no_binary",
            Self::Install(InstallError::NoPrevious(_)) => "no_previous",
            Self::Install(_) => "install_failed",
        }
    }
}

impl From<crate::channel::log::store::StoreError> for ReleasesError {
    fn from(err: crate::channel::log::store::StoreError) -> Self {
        Self::Ops(err.into())
    }
}

impl From<crate::channel::machine::home::HomeError> for ReleasesError {
    fn from(err: crate::channel::machine::home::HomeError) -> Self {
        Self::Ops(err.into())
    }
}

impl From<Refusal> for ReleasesError {
    fn from(err: Refusal) -> Self {
        Self::Ops(err.into())
    }
}

impl super::OperationError for ReleasesError {
    fn code(&self) -> &'static str {
        ReleasesError::code(self)
    }
    fn common(&self) -> Option<&OpsError> {
        match self {
            Self::Ops(err) => Some(err),
            _ => None,
        }
    }
}

/// Where an artifact the human approves comes from, as given on the command line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ArtifactInput {
    /// A file copied into the channel as a blob (carried by the sync).
    Store(PathBuf),
    /// A file named by its path, read where the update is applied.
    Path(PathBuf),
    /// An `http(s)://` URL.
    Url(String),
}

/// What `ferry release approve` asks for.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ApproveRequest {
    pub version: String,
    /// Per triple, in the order given.
    pub artifacts: Vec<(String, ArtifactInput)>,
    /// SHA-256 pins given by hand (for a URL this machine cannot read).
    pub sha256: Vec<(String, Sha256)>,
    pub downgrade: bool,
    pub notes: Option<String>,
}

/// One platform's artifact, as shown.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ArtifactView {
    pub triple: String,
    /// None: the approval approves nothing on this platform.
    pub sha256: Option<String>,
    pub source: String,
}

/// A release as the fold holds it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ReleaseView {
    pub version: String,
    pub state: ReleaseState,
    /// The approval's entry id.
    pub id: String,
    pub downgrade: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub notes: Option<String>,
    pub artifacts: Vec<ArtifactView>,
}

fn view(state: ReleaseState, approval: &Approval) -> ReleaseView {
    ReleaseView {
        version: approval.version.clone(),
        state,
        id: approval.id.to_string(),
        downgrade: approval.downgrade,
        notes: approval.notes.clone(),
        artifacts: approval
            .artifacts
            .iter()
            .map(|(triple, artifact)| ArtifactView {
                triple: triple.clone(),
                sha256: artifact.sha256.map(|pin| pin.to_hex()),
                source: artifact.source.to_string(),
            })
            .collect(),
    }
}

fn version_of(text: &str) -> Result<semver::Version, ReleasesError> {
    parse_version(text).ok_or_else(|| ReleasesError::BadVersion(text.to_owned()))
}

fn artifact_error(path: &Path) -> impl FnOnce(std::io::Error) -> ReleasesError + '_ {
    move |err| ReleasesError::Artifact {
        path: path.to_owned(),
        why: err.to_string(),
    }
}

/// Signs an approval of a release with the master key: every artifact pinned by the SHA-256
/// of its file (a URL's fetched, unless a pin is given for it). The human's alone.
pub fn approve(
    session: &mut Session,
    request: &ApproveRequest,
    now: Timestamp,
) -> Result<ReleaseView, ReleasesError> {
    let version = version_of(&request.version)?;
    if let Some(notes) = &request.notes {
        check_chars("the notes", notes, MAX_NOTES)?;
        session.guard(notes, crate::guard::TextUse::Post)?;
    }
    if request.artifacts.is_empty() {
        return Err(ReleasesError::NoArtifacts);
    }
    session.refresh(now);
    // Refused before any file is read or blob written: an agent never approves.
    session.authorize(Operation::Approve, None, now)?;
    let mut given: BTreeMap<&str, Sha256> = BTreeMap::new();
    for (triple, pin) in &request.sha256 {
        if !request.artifacts.iter().any(|(named, _)| named == triple) {
            return Err(ReleasesError::PinWithoutArtifact(triple.clone()));
        }
        given.insert(triple, *pin);
    }
    let mut artifacts = BTreeMap::new();
    for (triple, input) in &request.artifacts {
        let pin_given = given.get(triple.as_str()).copied();
        let (sha256, source) = match input {
            ArtifactInput::Store(path) => {
                let len = fs::metadata(path).map_err(artifact_error(path))?.len();
                if len > install::MAX_ARTIFACT {
                    return Err(InstallError::TooLarge.into());
                }
                let bytes = fs::read(path).map_err(artifact_error(path))?;
                let blob = session.channel().put_blob(&bytes)?;
                (
                    Sha256::from_hex(&blob.to_hex()),
                    Source::Blob(blob.to_hex()),
                )
            }
            ArtifactInput::Path(path) => {
                let path = fs::canonicalize(path).map_err(artifact_error(path))?;
                let mut file = fs::File::open(&path).map_err(artifact_error(&path))?;
                let found = install::hash(&mut file)?;
                (
                    Some(found),
                    Source::Path(path.to_string_lossy().into_owned()),
                )
            }
            ArtifactInput::Url(url) => {
                let found = match pin_given {
                    Some(pin) => pin,
                    None => install::hash(&mut *install::fetch(url, &session.installed().https)?)?,
                };
                (Some(found), Source::Url(url.clone()))
            }
        };
        if let (Some(given), Some(found)) = (pin_given, sha256)
            && given != found
        {
            return Err(ReleasesError::PinDiffers {
                triple: triple.clone(),
                found,
            });
        }
        let artifact = Artifact { sha256, source };
        if artifacts.insert(triple.clone(), artifact).is_some() {
            return Err(ReleasesError::TwiceForPlatform(triple.clone()));
        }
    }
    let body = ApproveBody {
        version: version.to_string(),
        artifacts,
        downgrade: request.downgrade,
        notes: request.notes.clone(),
        seen: None,
    };
    session.append(Operation::Approve, None, &body, now)?;
    show(session, &version.to_string(), now)
}

/// Withdraws the approval of `version` (the master's alone); a later approval approves it again.
pub fn revoke(
    session: &mut Session,
    version: &str,
    now: Timestamp,
) -> Result<ReleaseView, ReleasesError> {
    let version = version_of(version)?;
    session.refresh(now);
    session.authorize(Operation::Approve, None, now)?;
    match session.state().releases.state_of(&version) {
        None => return Err(ReleasesError::NotApproved(version)),
        Some((ReleaseState::Revoked, _)) => return Err(ReleasesError::Revoked(version)),
        Some((ReleaseState::Approved, _)) => {}
    }
    let body = RevokeBody {
        version: version.to_string(),
        seen: None,
    };
    session.append(Operation::Approve, None, &body, now)?;
    show(session, &version.to_string(), now)
}

/// Every release the master approved, newest first.
pub fn list(session: &mut Session, now: Timestamp) -> Result<Vec<ReleaseView>, ReleasesError> {
    session.authorize(Operation::Read, None, now)?;
    session.refresh(now);
    Ok(session
        .state()
        .releases
        .versions()
        .into_iter()
        .map(|(state, approval)| view(state, approval))
        .collect())
}

/// One release the master approved.
pub fn show(
    session: &mut Session,
    version: &str,
    now: Timestamp,
) -> Result<ReleaseView, ReleasesError> {
    let version = version_of(version)?;
    session.authorize(Operation::Read, None, now)?;
    session.refresh(now);
    let (state, approval) = session
        .state()
        .releases
        .state_of(&version)
        .ok_or(ReleasesError::NotApproved(version))?;
    Ok(view(state, approval))
}

/// A newer release approved for this platform, as `ferry_join` and the catch-up header say it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct UpdateNote {
    pub version: String,
    pub running: String,
}

/// The newest release approved and pinned for this platform, if it is newer than what runs.
/// Reads only the folded state.
pub fn update_note(session: &Session) -> Option<UpdateNote> {
    let installed = session.installed();
    session
        .state()
        .releases
        .update_for(&installed.triple, &installed.version)
        .map(|approval| UpdateNote {
            version: approval.version.clone(),
            running: installed.version.to_string(),
        })
}

/// What `ferry update check` and `ferry_update check` answer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct UpdateCheck {
    pub running: String,
    pub platform: String,
    /// The newest version approved and pinned for this platform.
    pub newest: Option<String>,
    /// Whether `newest` is newer than what runs.
    pub newer: bool,
    /// Its approval's notes.
    pub notes: Option<String>,
    /// An interrupted apply left a temporary file beside the binary (the next apply removes it).
    pub leftover: bool,
}

/// What is approved for this platform, what runs, and whether it is newer.
pub fn check(session: &mut Session, now: Timestamp) -> Result<UpdateCheck, ReleasesError> {
    session.authorize(Operation::Read, None, now)?;
    session.refresh(now);
    let installed = session.installed();
    let newest = session.state().releases.newest_for(&installed.triple);
    Ok(UpdateCheck {
        running: installed.version.to_string(),
        platform: installed.triple.clone(),
        newer: newest.is_some_and(|approval| approval.semver() > installed.version),
        notes: newest.and_then(|approval| approval.notes.clone()),
        newest: newest.map(|approval| approval.version.clone()),
        leftover: installed.binary.as_deref().is_some_and(install::leftover),
    })
}

/// What an apply installed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Applied {
    pub version: String,
    /// The installed file's SHA-256: the pin.
    pub sha256: String,
    pub binary: PathBuf,
    /// Where the replaced binary is kept (`ferry update rollback` puts it back).
    pub previous: Option<PathBuf>,
    /// What the answer must say: nothing changed for the running process.
    pub restart: &'static str,
}

/// What every apply's answer says.
pub const RESTART: &str =
    "the running server is unchanged: the app must restart it to run the new version";

/// Refuses while the machine is paused (for the human too: a paused machine changes nothing).
fn refuse_if_paused(session: &Session, operation: Operation) -> Result<(), ReleasesError> {
    if let Some(pause) = session.home().pause_state()? {
        let reason = if pause.reason.0.is_empty() {
            "no reason given".to_owned()
        } else {
            pause.reason.0.clone()
        };
        return Err(Refusal::Paused { operation, reason }.into());
    }
    Ok(())
}

/// Installs `version` (else the newest approved for this platform) over this process's binary,
/// if the master approved it for this platform with a pin and the download matches the pin.
/// An agent needs Orchestrator; the human no level; nobody while the machine is paused.
pub fn apply(
    session: &mut Session,
    version: Option<&str>,
    now: Timestamp,
) -> Result<Applied, ReleasesError> {
    session.refresh(now);
    match session.actor() {
        Actor::Agent(_) => {
            session.authorize(Operation::ApplyUpdate, None, now)?;
        }
        Actor::Master => {}
        Actor::Observer => return Err(OpsError::ReadOnly.into()),
    }
    refuse_if_paused(session, Operation::ApplyUpdate)?;
    let installed = session.installed().clone();
    let releases = &session.state().releases;
    let version = match version {
        Some(version) => version_of(version)?,
        None => releases
            .update_for(&installed.triple, &installed.version)
            .map(Approval::semver)
            .ok_or_else(|| ReleasesError::NothingNewer {
                running: installed.version.clone(),
                triple: installed.triple.clone(),
            })?,
    };
    let (approval, artifact, pin) =
        releases
            .installable(&version, &installed.triple)
            .map_err(|why| match why {
                NotInstallable::NotApproved => ReleasesError::NotApproved(version.clone()),
                NotInstallable::Revoked => ReleasesError::Revoked(version.clone()),
                NotInstallable::NoArtifact => ReleasesError::NoArtifact {
                    version: version.clone(),
                    triple: installed.triple.clone(),
                },
                NotInstallable::NoPin => ReleasesError::NoPin {
                    version: version.clone(),
                    triple: installed.triple.clone(),
                },
            })?;
    if version == installed.version {
        return Err(ReleasesError::AlreadyRunning(version));
    }
    if version < installed.version && !approval.downgrade {
        return Err(ReleasesError::Downgrade {
            version,
            running: installed.version,
        });
    }
    let binary = installed.binary.clone().ok_or(InstallError::NoBinary)?;
    let mut source: Box<dyn Read> = match &artifact.source {
        Source::Blob(hex) => {
            let blob: BlobId = hex
                .parse()
                .map_err(|_| ReleasesError::BadBlob(version.clone()))?;
            Box::new(session.channel().open_blob(&blob)?)
        }
        Source::Path(path) => {
            let path = PathBuf::from(path);
            Box::new(fs::File::open(&path).map_err(artifact_error(&path))?)
        }
        Source::Url(url) => install::fetch(url, &installed.https)?,
    };
    let done = install::install(&binary, &mut *source, pin)?;
    Ok(Applied {
        version: version.to_string(),
        sha256: done.sha256.to_hex(),
        binary,
        previous: done.previous,
        restart: RESTART,
    })
}

/// Puts back the binary the last apply replaced (the human's; an agent needs Orchestrator and
/// an unpaused machine). Returns the binary's path.
pub fn rollback(session: &mut Session, now: Timestamp) -> Result<PathBuf, ReleasesError> {
    match session.actor() {
        Actor::Agent(_) => {
            session.authorize(Operation::ApplyUpdate, None, now)?;
        }
        // Not refused while paused: it puts back what ran before, which is what a human who
        // paused the fleet over a bad update wants.
        Actor::Master => {}
        Actor::Observer => return Err(OpsError::ReadOnly.into()),
    }
    let binary = session
        .installed()
        .binary
        .clone()
        .ok_or(InstallError::NoBinary)?;
    install::rollback(&binary)?;
    Ok(binary)
}

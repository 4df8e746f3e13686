//! Releases the master approved (`release.approve`) and withdrew (`release.revoke`), ADR 0020.
//!
//! Why a fold: an agent must never be able to make a release installable, so whether an
//! approval counts is decided here, on every machine alike, as grants are: only the master's
//! entries count, in master order. The latest approval of a version stands unless a revocation
//! of that version follows it; an artifact with no pinned SHA-256 approves nothing for its
//! platform. `apply` asks this fold (never the entry it read) what it may install.

use std::collections::BTreeMap;
use std::fmt;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use super::{Acted, EntryId};
use crate::channel::fold::identity::{FoldProblem, FoldProblemKind, MasterPos};
use crate::time::Timestamp;

/// The entry kinds of this fold.
pub mod kinds {
    pub const APPROVE: &str = "release.approve";
    pub const REVOKE: &str = "release.revoke";
}

/// A SHA-256 digest, lower-case hex in text: the pin an artifact is checked against.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Sha256(pub [u8; 32]);

impl Sha256 {
    pub fn to_hex(&self) -> String {
        hex::encode(self.0)
    }

    /// Parses 64 hex digits (either case).
    pub fn from_hex(text: &str) -> Option<Self> {
        let mut bytes = [0u8; 32];
        hex::decode_to_slice(text.trim(), &mut bytes).ok()?;
        Some(Self(bytes))
    }
}

impl fmt::Display for Sha256 {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.to_hex())
    }
}

impl fmt::Debug for Sha256 {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Sha256({})", self.to_hex())
    }
}

impl Serialize for Sha256 {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(&self.to_hex())
    }
}

impl<'de> Deserialize<'de> for Sha256 {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = String::deserialize(deserializer)?;
        Sha256::from_hex(&text).ok_or_else(|| serde::de::Error::custom("not a SHA-256 in hex"))
    }
}

/// Where an artifact is fetched from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub enum Source {
    /// A content-addressed blob of the channel (its name is the artifact's SHA-256, hex).
    Blob(String),
    /// A file on the machine that applies it.
    Path(String),
    /// An `http://` or `https://` URL.
    Url(String),
}

impl fmt::Display for Source {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Source::Blob(hex) => write!(f, "blob {hex}"),
            Source::Path(path) => write!(f, "file {path}"),
            Source::Url(url) => f.write_str(url),
        }
    }
}

/// One platform's artifact of a release.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Artifact {
    /// The pin: without it, the approval approves nothing for this platform. Never skipped when
    /// empty: the fold keeps this type in the kept state, whose format needs every field.
    #[serde(default)]
    pub sha256: Option<Sha256>,
    pub source: Source,
}

/// The body of `release.approve`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ApproveBody {
    /// Semver, in its canonical form.
    pub version: String,
    /// Per Rust target triple.
    pub artifacts: BTreeMap<String, Artifact>,
    /// Whether a machine running a newer version may install this one.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub downgrade: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub notes: Option<String>,
    /// What an agent's entry declares it saw (ADR 0005); an agent's approval never counts.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seen: Option<MasterPos>,
}

/// The body of `release.revoke`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RevokeBody {
    pub version: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seen: Option<MasterPos>,
}

/// Parses a release version (a leading `v` is allowed), for the fold and the operations alike.
pub fn parse_version(text: &str) -> Option<semver::Version> {
    let text = text.trim();
    semver::Version::parse(text.strip_prefix('v').unwrap_or(text)).ok()
}

/// One approval that counts (the master's), as folded.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Approval {
    pub id: EntryId,
    /// Canonical semver.
    pub version: String,
    pub artifacts: BTreeMap<String, Artifact>,
    pub downgrade: bool,
    pub notes: Option<String>,
    pub time: Timestamp,
    pos: MasterPos,
}

impl Approval {
    pub fn semver(&self) -> semver::Version {
        parse_version(&self.version).expect("the fold keeps parsed versions only")
    }

    /// The pinned artifact for `triple`, if this approval approves anything there.
    pub fn pinned(&self, triple: &str) -> Option<(&Artifact, Sha256)> {
        let artifact = self.artifacts.get(triple)?;
        Some((artifact, artifact.sha256?))
    }
}

/// A revocation that counts, as folded.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
struct Revocation {
    version: String,
    pos: MasterPos,
}

/// Where a version stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ReleaseState {
    Approved,
    Revoked,
}

/// Why a version cannot be installed on a platform, as the fold judges it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NotInstallable {
    /// The master never approved it (or only an agent "did").
    NotApproved,
    /// The master revoked it after its latest approval.
    Revoked,
    /// Its approval names no artifact for the platform.
    NoArtifact,
    /// Its approval names an artifact for the platform without a SHA-256.
    NoPin,
}

/// Every release approval and revocation that counts. See the module docs.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Releases {
    approvals: Vec<Approval>,
    revocations: Vec<Revocation>,
    problems: Vec<FoldProblem>,
}

/// Problems kept at most (the rest are not worth memory: each is the same story).
const MAX_PROBLEMS: usize = 100;

pub fn is_kind(kind: &str) -> bool {
    kind == kinds::APPROVE || kind == kinds::REVOKE
}

impl Releases {
    pub fn problems(&self) -> Vec<FoldProblem> {
        self.problems.clone()
    }

    fn problem(&mut self, acted: &Acted<'_>, kind: FoldProblemKind, detail: String) {
        if self.problems.len() < MAX_PROBLEMS {
            self.problems
                .push(FoldProblem::about(acted.entry, kind, detail));
        }
    }

    pub fn feed(&mut self, acted: &Acted<'_>) {
        if !is_kind(acted.kind()) {
            return;
        }
        if !acted.by_master {
            // However it is signed, an agent's release entry approves or withdraws nothing.
            self.problem(
                acted,
                FoldProblemKind::NotSignedByMaster,
                format!("{} by an agent counts for nothing", acted.kind()),
            );
            return;
        }
        if acted.kind() == kinds::APPROVE {
            let body = match ApproveBody::deserialize(acted.body()) {
                Ok(body) => body,
                Err(err) => {
                    let detail = format!("bad {}: {err}", kinds::APPROVE);
                    return self.problem(acted, FoldProblemKind::MalformedBody, detail);
                }
            };
            let Some(version) = parse_version(&body.version) else {
                let detail = format!("{} names no semver version", kinds::APPROVE);
                return self.problem(acted, FoldProblemKind::MalformedBody, detail);
            };
            self.approvals.push(Approval {
                id: acted.id.clone(),
                version: version.to_string(),
                artifacts: body.artifacts,
                downgrade: body.downgrade,
                notes: body.notes,
                time: acted.time,
                pos: acted.pos,
            });
        } else {
            let version = RevokeBody::deserialize(acted.body())
                .ok()
                .and_then(|body| parse_version(&body.version));
            let Some(version) = version else {
                let detail = format!("bad {}", kinds::REVOKE);
                return self.problem(acted, FoldProblemKind::MalformedBody, detail);
            };
            self.revocations.push(Revocation {
                version: version.to_string(),
                pos: acted.pos,
            });
        }
    }

    fn latest_approval(&self, version: &str) -> Option<&Approval> {
        self.approvals
            .iter()
            .filter(|approval| approval.version == version)
            .max_by_key(|approval| (approval.pos, approval.id.seq()))
    }

    fn latest_revocation(&self, version: &str) -> Option<MasterPos> {
        self.revocations
            .iter()
            .filter(|revocation| revocation.version == version)
            .map(|revocation| revocation.pos)
            .max()
    }

    /// Where `version` stands, with its latest approval: `None` if the master never approved it.
    pub fn state_of(&self, version: &semver::Version) -> Option<(ReleaseState, &Approval)> {
        let version = version.to_string();
        let approval = self.latest_approval(&version)?;
        let state = match self.latest_revocation(&version) {
            Some(revoked) if revoked > approval.pos => ReleaseState::Revoked,
            _ => ReleaseState::Approved,
        };
        Some((state, approval))
    }

    /// The standing approval of `version` and its pinned artifact for `triple`, or why there
    /// is none.
    pub fn installable(
        &self,
        version: &semver::Version,
        triple: &str,
    ) -> Result<(&Approval, &Artifact, Sha256), NotInstallable> {
        let (state, approval) = self.state_of(version).ok_or(NotInstallable::NotApproved)?;
        if state == ReleaseState::Revoked {
            return Err(NotInstallable::Revoked);
        }
        let artifact = approval
            .artifacts
            .get(triple)
            .ok_or(NotInstallable::NoArtifact)?;
        let pin = artifact.sha256.ok_or(NotInstallable::NoPin)?;
        Ok((approval, artifact, pin))
    }

    /// Every version the master approved, newest first, with where it stands.
    pub fn versions(&self) -> Vec<(ReleaseState, &Approval)> {
        let mut versions: Vec<semver::Version> = self
            .approvals
            .iter()
            .map(Approval::semver)
            .collect::<std::collections::BTreeSet<_>>()
            .into_iter()
            .collect();
        versions.reverse();
        versions
            .iter()
            .filter_map(|version| self.state_of(version))
            .collect()
    }

    /// The newest version installable on `triple` (standing and pinned there).
    pub fn newest_for(&self, triple: &str) -> Option<&Approval> {
        self.versions()
            .into_iter()
            .filter(|(state, approval)| {
                *state == ReleaseState::Approved && approval.pinned(triple).is_some()
            })
            .map(|(_, approval)| approval)
            .next()
    }

    /// The newest version installable on `triple` when it is newer than `running`.
    pub fn update_for(&self, triple: &str, running: &semver::Version) -> Option<&Approval> {
        self.newest_for(triple)
            .filter(|approval| approval.semver() > *running)
    }
}

//! The protocol revisions this server speaks, and what differs between them.
//!
//! Two eras: the initialize era (2024-11-05 to 2025-11-25), where a connection negotiates one
//! version with `initialize`, and the stateless era (2026-07-28), where every request names its
//! version in `_meta`. The differences that change our bytes are all answered here.

/// A protocol revision this server speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum ProtocolVersion {
    V2024_11_05,
    V2025_03_26,
    V2025_06_18,
    V2025_11_25,
    V2026_07_28,
}

impl ProtocolVersion {
    /// Every revision served, newest first.
    pub const ALL: [ProtocolVersion; 5] = [
        Self::V2026_07_28,
        Self::V2025_11_25,
        Self::V2025_06_18,
        Self::V2025_03_26,
        Self::V2024_11_05,
    ];
    /// The revisions a request can name in its `_meta`, newest first: what `server/discover`
    /// lists as `supportedVersions` and `-32022` as `supported`. The initialize-era revisions are
    /// not among them: a client picks one of these for its next requests, and a request naming
    /// 2025-11-25 in `_meta` without an `initialize` has no meaning.
    pub const PER_REQUEST: [ProtocolVersion; 1] = [Self::V2026_07_28];
    /// The newest revision that `initialize` can negotiate.
    pub const LATEST_INITIALIZE: ProtocolVersion = Self::V2025_11_25;
    /// The stateless revision.
    pub const STATELESS: ProtocolVersion = Self::V2026_07_28;

    pub const fn as_str(self) -> &'static str {
        match self {
            Self::V2024_11_05 => "2024-11-05",
            Self::V2025_03_26 => "2025-03-26",
            Self::V2025_06_18 => "2025-06-18",
            Self::V2025_11_25 => "2025-11-25",
            Self::V2026_07_28 => "2026-07-28",
        }
    }

    pub fn parse(text: &str) -> Option<Self> {
        Self::ALL
            .into_iter()
            .find(|version| version.as_str() == text)
    }

    /// The version `initialize` answers: the client's when it is an initialize-era revision we
    /// speak, otherwise our latest initialize-era revision (never an error).
    pub fn negotiate(requested: Option<&str>) -> Self {
        match requested.and_then(Self::parse) {
            Some(version) if version.uses_initialize() => version,
            _ => Self::LATEST_INITIALIZE,
        }
    }

    /// Whether connections of this revision start with `initialize`.
    pub const fn uses_initialize(self) -> bool {
        !matches!(self, Self::V2026_07_28)
    }

    /// JSON-RPC batch arrays: required by 2025-03-26 only (added then, removed in 2025-06-18).
    pub const fn accepts_batches(self) -> bool {
        matches!(self, Self::V2025_03_26)
    }

    /// `resource_link` content blocks exist from 2025-06-18; older clients get a text line.
    pub const fn has_resource_links(self) -> bool {
        matches!(
            self,
            Self::V2025_06_18 | Self::V2025_11_25 | Self::V2026_07_28
        )
    }

    /// Resource-not-found code: `-32002` in the initialize era, `-32602` from 2026-07-28.
    pub const fn resource_not_found_code(self) -> i64 {
        if self.uses_initialize() {
            super::wire::RESOURCE_NOT_FOUND
        } else {
            super::wire::INVALID_PARAMS
        }
    }
}

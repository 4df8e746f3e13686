//! Machine-local state: the per-user folder that holds what must never enter the synced
//! channel. The folder is passed in; the binary resolves it (`FERRY_HOME`, else
//! `$XDG_STATE_HOME/ferry`, else `~/.local/state/ferry`), the core never reads the
//! environment.
//!
//! Layout (all files written atomically: temp file + fsync + rename + folder fsync, but the
//! kept state, a SQLite database that commits its own way; key files 0600):
//!
//! ```text
//! <home>/pause.json                        the machine-wide pause switch, with its reason
//! <home>/projects/<project>/project.json   the project registry entry: its channel folder
//! <home>/projects/<project>/keys/master.key       the human's master key
//! <home>/projects/<project>/keys/<agent>.key      an agent's key (`master` is reserved)
//! <home>/projects/<project>/pins.json      first-seen roster keys, and the genesis master
//! <home>/projects/<project>/pins.lock      held while pins are updated
//! <home>/projects/<project>/kept.db        what this machine verified and folded, and the
//!                                          orders' records (ADR 0004, 0011; SQLite, with
//!                                          its `kept.db-wal` and `kept.db-shm` beside it)
//! <home>/channels/<project>/              the channel `ferry init` makes when none is named
//! <runtime>/<project>/<agent>.key          an unlocked copy of a sealed key (see below)
//! ```
//!
//! **Sealing.** A key file may hold its secret sealed with a passphrase. An *agent's* sealed
//! key is opened for its MCP process, which never sees a passphrase, by `ferry key unlock`:
//! it writes an unlocked copy (0600, with an expiry) into the *runtime* folder, which the
//! binary puts on `$XDG_RUNTIME_DIR` (a per-user tmpfs, cleared at logout) when there is one,
//! and which `ferry key lock` removes. A sealed key without a current unlocked copy is
//! `locked`.
//!
//! **The master key is never unlocked to disk** (ADR 0017): agents run as the same OS user
//! and can read any file the human's commands can, so a plain copy of the master key would
//! let an agent with a shell approve its own asks. A sealed master key is opened in memory,
//! for one command, with the passphrase an [`Unsealer`] the binary installs asks for (from
//! the terminal); an unlocked copy of it is never written and never read.

pub mod atomic;
pub mod seal;

use std::fs;
use std::io;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::channel::fold::levels::{Fix, LocalKey, PauseReason};
use crate::channel::log::keys::{PublicKey, SecretKey};
use crate::channel::log::names::{AgentName, ProjectId};
use crate::channel::log::store::durable;
use crate::time::Timestamp;
pub use seal::{SealCost, SealError, SealedSecret};

/// Why a machine-state operation failed. Each message names its cause itself, so no variant
/// also gives it as its `source()` (an error chain printed whole would name it twice).
#[derive(Debug, thiserror::Error)]
pub enum HomeError {
    #[error("{path}: {cause}")]
    Io { path: PathBuf, cause: io::Error },
    #[error("unknown project {0}")]
    UnknownProject(ProjectId),
    #[error("project {project} is already registered with channel {existing}")]
    ProjectElsewhere {
        project: ProjectId,
        existing: PathBuf,
    },
    #[error("a key for {holder} in project {project} already exists")]
    KeyExists { project: ProjectId, holder: String },
    #[error("no key for {holder} in project {project} on this machine")]
    KeyMissing { project: ProjectId, holder: String },
    #[error("the key for {holder} is locked")]
    Locked {
        project: ProjectId,
        holder: KeyHolder,
    },
    #[error("the key for {holder} is already sealed")]
    AlreadySealed { holder: String },
    #[error("the master key of {project} is sealed and no passphrase was given")]
    MasterSealed { project: ProjectId },
    #[error(
        "the master key is never unlocked to disk: a command that needs it asks for its passphrase"
    )]
    MasterNeverUnlocked,
    #[error("{0}")]
    Passphrase(String),
    #[error("the key for {holder} is not sealed")]
    NotSealed { holder: String },
    #[error("bad file {path}: {detail}")]
    BadFile { path: PathBuf, detail: String },
    #[error(transparent)]
    Seal(#[from] SealError),
}

impl HomeError {
    /// What fixes it on this machine, when a command does: the CLI and the tool facade each
    /// point to it in their own words (the text above names no command).
    pub fn fix(&self) -> Option<Fix> {
        match self {
            HomeError::UnknownProject(project) => Some(Fix::Init {
                project: project.clone(),
            }),
            HomeError::Locked {
                project,
                holder: KeyHolder::Agent(agent),
            } => Some(Fix::Unlock {
                agent: agent.clone(),
                project: project.clone(),
            }),
            _ => None,
        }
    }
}

/// The kept state's database, in a project's folder.
pub const KEPT_FILE: &str = "kept.db";

fn io_err(path: &Path) -> impl FnOnce(io::Error) -> HomeError + '_ {
    move |cause| HomeError::Io {
        path: path.to_owned(),
        cause,
    }
}

/// Whose key a key file holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum KeyHolder {
    /// The human's master key of the project.
    Master,
    Agent(AgentName),
}

impl KeyHolder {
    fn file_name(&self) -> String {
        match self {
            KeyHolder::Master => "master.key".to_owned(),
            KeyHolder::Agent(name) => format!("{}.key", name.as_str()),
        }
    }
}

impl std::fmt::Display for KeyHolder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            KeyHolder::Master => f.write_str("the master"),
            KeyHolder::Agent(name) => write!(f, "{name}"),
        }
    }
}

/// The content of a key file (`ferry-key/1`).
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct KeyFile {
    format: String,
    public: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    secret: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    sealed: Option<SealedSecret>,
    /// For unlocked copies: when the copy stops counting.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    until: Option<Timestamp>,
}

const KEY_FORMAT: &str = "ferry-key/1";

/// The pause switch as stored.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Pause {
    pub reason: PauseReason,
    pub since: Timestamp,
}

#[derive(Debug, Serialize, Deserialize)]
struct ProjectEntry {
    channel: PathBuf,
}

/// First-seen keys of a project, kept so that a changed key is noticed.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Pins {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub master: Option<String>,
    #[serde(default)]
    pub agents: std::collections::BTreeMap<String, String>,
}

/// What pinning a key found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PinOutcome {
    /// The name was not pinned; it is now.
    New,
    /// The same key was pinned before.
    Same,
    /// Another key was pinned for this name; the pin is kept and this is to be reported.
    Changed { pinned: String },
}

/// Registered projects with their channel folders, and the registry entries that did not read.
pub type ProjectListing = (Vec<(ProjectId, PathBuf)>, Vec<HomeError>);

/// What asks for the passphrase of a project's master key (the binary: the terminal).
type AskPassphrase =
    dyn Fn(&ProjectId) -> Result<zeroize::Zeroizing<Vec<u8>>, String> + Send + Sync;

/// How a sealed master key is opened for one command: a passphrase asked for when the key is
/// first needed (the binary asks the terminal), and the key kept in memory after.
pub struct Unsealer {
    ask: Box<AskPassphrase>,
    opened: std::sync::Mutex<Vec<(ProjectId, SecretKey)>>,
}

impl Unsealer {
    /// An unsealer that asks `ask` for the passphrase of a project's master key.
    pub fn new(
        ask: impl Fn(&ProjectId) -> Result<zeroize::Zeroizing<Vec<u8>>, String> + Send + Sync + 'static,
    ) -> Self {
        Self {
            ask: Box::new(ask),
            opened: std::sync::Mutex::new(Vec::new()),
        }
    }
}

impl std::fmt::Debug for Unsealer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Unsealer").finish_non_exhaustive()
    }
}

/// The machine-local state folder (and the runtime folder for unlocked keys).
#[derive(Debug, Clone)]
pub struct Home {
    root: PathBuf,
    runtime: PathBuf,
    unsealer: Option<std::sync::Arc<Unsealer>>,
}

impl Home {
    /// State under `root`; unlocked keys under `root/run`.
    pub fn at(root: impl Into<PathBuf>) -> Self {
        let root = root.into();
        let runtime = root.join("run");
        Self {
            root,
            runtime,
            unsealer: None,
        }
    }

    /// State under `root`; unlocked keys under `runtime`.
    pub fn with_runtime(root: impl Into<PathBuf>, runtime: impl Into<PathBuf>) -> Self {
        Self {
            root: root.into(),
            runtime: runtime.into(),
            unsealer: None,
        }
    }

    /// The same folder, opening a sealed master key with `unsealer` when a command needs it.
    pub fn unsealing_with(mut self, unsealer: Unsealer) -> Self {
        self.unsealer = Some(std::sync::Arc::new(unsealer));
        self
    }

    /// Where `ferry init` puts a project's channel folder when none is named.
    pub fn default_channel_dir(&self, project: &ProjectId) -> PathBuf {
        self.root.join("channels").join(project.as_str())
    }

    pub fn root(&self) -> &Path {
        &self.root
    }

    fn project_dir(&self, project: &ProjectId) -> PathBuf {
        self.root.join("projects").join(project.as_str())
    }

    fn key_path(&self, project: &ProjectId, holder: &KeyHolder) -> PathBuf {
        self.project_dir(project)
            .join("keys")
            .join(holder.file_name())
    }

    fn unlocked_path(&self, project: &ProjectId, holder: &KeyHolder) -> PathBuf {
        self.runtime.join(project.as_str()).join(holder.file_name())
    }

    // ---- the project registry ----

    /// Records that `project`'s channel is `channel`. Registering the same folder again is
    /// fine; another folder for a known project is an error.
    pub fn register_project(&self, project: &ProjectId, channel: &Path) -> Result<(), HomeError> {
        match self.channel_dir(project) {
            Ok(existing) if existing == channel => return Ok(()),
            Ok(existing) => {
                return Err(HomeError::ProjectElsewhere {
                    project: project.clone(),
                    existing,
                });
            }
            Err(HomeError::UnknownProject(_)) => {}
            Err(other) => return Err(other),
        }
        let entry = ProjectEntry {
            channel: channel.to_owned(),
        };
        let bytes = serde_json::to_vec_pretty(&entry).expect("a project entry serializes");
        atomic::write(&self.project_dir(project).join("project.json"), &bytes)
    }

    /// The channel folder of `project`.
    pub fn channel_dir(&self, project: &ProjectId) -> Result<PathBuf, HomeError> {
        let path = self.project_dir(project).join("project.json");
        let Some(bytes) = read_optional(&path)? else {
            return Err(HomeError::UnknownProject(project.clone()));
        };
        let entry: ProjectEntry = parse(&path, &bytes)?;
        Ok(entry.channel)
    }

    /// Every registered project, sorted; unreadable entries are returned as errors beside them.
    pub fn projects(&self) -> Result<ProjectListing, HomeError> {
        let dir = self.root.join("projects");
        let mut found = Vec::new();
        let mut bad = Vec::new();
        let listing = match fs::read_dir(&dir) {
            Ok(listing) => listing,
            Err(err) if err.kind() == io::ErrorKind::NotFound => return Ok((found, bad)),
            Err(err) => return Err(io_err(&dir)(err)),
        };
        for item in listing {
            let item = item.map_err(io_err(&dir))?;
            let name = item.file_name();
            let Some(project) = name
                .to_str()
                .and_then(|name| name.parse::<ProjectId>().ok())
            else {
                bad.push(HomeError::BadFile {
                    path: item.path(),
                    detail: "not a project id".into(),
                });
                continue;
            };
            match self.channel_dir(&project) {
                Ok(channel) => found.push((project, channel)),
                Err(err) => bad.push(err),
            }
        }
        found.sort_by(|a, b| a.0.as_str().cmp(b.0.as_str()));
        Ok((found, bad))
    }

    // ---- keys ----

    /// Stores a new key, sealed under `passphrase` when one is given. Never overwrites.
    pub fn store_key(
        &self,
        project: &ProjectId,
        holder: &KeyHolder,
        key: &SecretKey,
        passphrase: Option<(&[u8], SealCost)>,
    ) -> Result<(), HomeError> {
        let path = self.key_path(project, holder);
        let exists = || HomeError::KeyExists {
            project: project.clone(),
            holder: holder.to_string(),
        };
        if path.exists() {
            return Err(exists());
        }
        let public = key.public_key().to_string();
        let (secret, sealed) = match passphrase {
            None => (Some(hex::encode(key.to_bytes())), None),
            Some((passphrase, cost)) => (
                None,
                Some(seal::seal(&key.to_bytes(), &public, passphrase, cost)?),
            ),
        };
        let file = KeyFile {
            format: KEY_FORMAT.into(),
            public,
            secret,
            sealed,
            until: None,
        };
        // Not clobbering: two processes creating one key at once must not both believe
        // their key is stored (one of them would sign a roster entry with a lost key).
        let bytes = serde_json::to_vec_pretty(&file).expect("a key file serializes");
        if !atomic::write_new(&path, &bytes)? {
            return Err(exists());
        }
        Ok(())
    }

    fn read_key_file(&self, path: &Path) -> Result<Option<KeyFile>, HomeError> {
        let Some(bytes) = read_optional(path)? else {
            return Ok(None);
        };
        let file: KeyFile = parse(path, &bytes)?;
        if file.format != KEY_FORMAT || file.secret.is_some() == file.sealed.is_some() {
            return Err(HomeError::BadFile {
                path: path.to_owned(),
                detail: "not a ferry-key/1 file".into(),
            });
        }
        Ok(Some(file))
    }

    /// `holder`'s key file and its path, or [`HomeError::KeyMissing`] when there is none.
    fn existing_key_file(
        &self,
        project: &ProjectId,
        holder: &KeyHolder,
    ) -> Result<(PathBuf, KeyFile), HomeError> {
        let path = self.key_path(project, holder);
        match self.read_key_file(&path)? {
            Some(file) => Ok((path, file)),
            None => Err(HomeError::KeyMissing {
                project: project.clone(),
                holder: holder.to_string(),
            }),
        }
    }

    fn public_of(path: &Path, file: &KeyFile) -> Result<PublicKey, HomeError> {
        file.public.parse().map_err(|_| HomeError::BadFile {
            path: path.to_owned(),
            detail: "bad public key".into(),
        })
    }

    fn secret_of(path: &Path, file: &KeyFile, hex_secret: &str) -> Result<SecretKey, HomeError> {
        let bad = |detail: &str| HomeError::BadFile {
            path: path.to_owned(),
            detail: detail.into(),
        };
        let bytes: [u8; 32] = hex::decode(hex_secret)
            .ok()
            .and_then(|bytes| bytes.try_into().ok())
            .ok_or_else(|| bad("bad secret key"))?;
        let key = SecretKey::from_bytes(&bytes);
        if key.public_key().to_string() != file.public {
            return Err(bad("the secret does not match the public key"));
        }
        Ok(key)
    }

    /// The state of `holder`'s key on this machine at `now`: missing, locked or ready.
    pub fn key_state(
        &self,
        project: &ProjectId,
        holder: &KeyHolder,
        now: Timestamp,
    ) -> Result<LocalKey, HomeError> {
        let path = self.key_path(project, holder);
        let Some(file) = self.read_key_file(&path)? else {
            return Ok(LocalKey::Missing);
        };
        let public = Self::public_of(&path, &file)?;
        let locked = match holder {
            KeyHolder::Master => file.sealed.is_some(),
            KeyHolder::Agent(_) => {
                file.sealed.is_some() && self.unlocked_copy(project, holder, &file, now)?.is_none()
            }
        };
        if locked {
            return Ok(LocalKey::Locked(public));
        }
        Ok(LocalKey::Ready(public))
    }

    fn unlocked_copy(
        &self,
        project: &ProjectId,
        holder: &KeyHolder,
        sealed_file: &KeyFile,
        now: Timestamp,
    ) -> Result<Option<SecretKey>, HomeError> {
        let path = self.unlocked_path(project, holder);
        let Some(copy) = self.read_key_file(&path)? else {
            return Ok(None);
        };
        if copy.public != sealed_file.public || copy.until.is_some_and(|until| until <= now) {
            return Ok(None);
        }
        let secret = copy.secret.as_deref().unwrap_or_default();
        Self::secret_of(&path, &copy, secret).map(Some)
    }

    /// `holder`'s secret key: the plain key, or the unlocked copy of a sealed one.
    pub fn load_key(
        &self,
        project: &ProjectId,
        holder: &KeyHolder,
        now: Timestamp,
    ) -> Result<SecretKey, HomeError> {
        let (path, file) = self.existing_key_file(project, holder)?;
        match (&file.secret, &file.sealed, holder) {
            (Some(secret), _, _) => Self::secret_of(&path, &file, secret),
            (None, Some(sealed), KeyHolder::Master) => {
                self.unseal_master(project, &path, &file, sealed)
            }
            (None, _, _) => self
                .unlocked_copy(project, holder, &file, now)?
                .ok_or_else(|| HomeError::Locked {
                    project: project.clone(),
                    holder: holder.clone(),
                }),
        }
    }

    /// The sealed master key, opened in memory with the unsealer's passphrase (asked once).
    fn unseal_master(
        &self,
        project: &ProjectId,
        path: &Path,
        file: &KeyFile,
        sealed: &SealedSecret,
    ) -> Result<SecretKey, HomeError> {
        let Some(unsealer) = &self.unsealer else {
            return Err(HomeError::MasterSealed {
                project: project.clone(),
            });
        };
        let mut opened = unsealer
            .opened
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some((_, key)) = opened
            .iter()
            .find(|(at, key)| at == project && key.public_key().to_string() == file.public)
        {
            return Ok(SecretKey::from_bytes(&key.to_bytes()));
        }
        let passphrase = (unsealer.ask)(project).map_err(HomeError::Passphrase)?;
        let secret = zeroize::Zeroizing::new(seal::unseal(sealed, &file.public, &passphrase)?);
        let key = Self::secret_of(path, file, &hex::encode(*secret))?;
        opened.push((project.clone(), SecretKey::from_bytes(&key.to_bytes())));
        Ok(key)
    }

    /// `holder`'s secret key, opening a sealed one with `passphrase` when it is given (no
    /// unlocked copy is written). For a command that holds the passphrase itself.
    pub fn open_key(
        &self,
        project: &ProjectId,
        holder: &KeyHolder,
        passphrase: Option<&[u8]>,
        now: Timestamp,
    ) -> Result<SecretKey, HomeError> {
        let (path, file) = self.existing_key_file(project, holder)?;
        match (&file.sealed, passphrase) {
            (Some(sealed), Some(passphrase)) => {
                let secret = seal::unseal(sealed, &file.public, passphrase)?;
                Self::secret_of(&path, &file, &hex::encode(secret))
            }
            _ => self.load_key(project, holder, now),
        }
    }

    /// Opens `holder`'s sealed key with the human's passphrase and writes the unlocked copy
    /// (valid until `until`, if given) into the runtime folder.
    pub fn unlock_key(
        &self,
        project: &ProjectId,
        holder: &KeyHolder,
        passphrase: &[u8],
        until: Option<Timestamp>,
    ) -> Result<PublicKey, HomeError> {
        if *holder == KeyHolder::Master {
            return Err(HomeError::MasterNeverUnlocked);
        }
        let (path, file) = self.existing_key_file(project, holder)?;
        let Some(sealed) = &file.sealed else {
            return Err(HomeError::NotSealed {
                holder: holder.to_string(),
            });
        };
        let secret = seal::unseal(sealed, &file.public, passphrase)?;
        let copy = KeyFile {
            format: KEY_FORMAT.into(),
            public: file.public.clone(),
            secret: Some(hex::encode(secret)),
            sealed: None,
            until,
        };
        write_key_file(&self.unlocked_path(project, holder), &copy)?;
        Self::public_of(&path, &file)
    }

    /// Removes the unlocked copy of `holder`'s key; returns whether there was one.
    pub fn lock_key(&self, project: &ProjectId, holder: &KeyHolder) -> Result<bool, HomeError> {
        atomic::remove(&self.unlocked_path(project, holder))
    }

    /// Seals `holder`'s plain key under `passphrase` (replacing the plain file atomically).
    pub fn seal_key(
        &self,
        project: &ProjectId,
        holder: &KeyHolder,
        passphrase: &[u8],
        cost: SealCost,
    ) -> Result<(), HomeError> {
        let (path, file) = self.existing_key_file(project, holder)?;
        let Some(secret) = &file.secret else {
            return Err(HomeError::AlreadySealed {
                holder: holder.to_string(),
            });
        };
        let key = Self::secret_of(&path, &file, secret)?;
        let sealed = seal::seal(&key.to_bytes(), &file.public, passphrase, cost)?;
        let file = KeyFile {
            secret: None,
            sealed: Some(sealed),
            ..file
        };
        write_key_file(&path, &file)
    }

    // ---- the pause switch ----

    /// Pauses every agent on this machine (writes are refused until [`Home::resume`]).
    pub fn pause(&self, reason: &str, now: Timestamp) -> Result<(), HomeError> {
        let pause = Pause {
            reason: PauseReason(reason.to_owned()),
            since: now,
        };
        let bytes = serde_json::to_vec_pretty(&pause).expect("a pause serializes");
        atomic::write(&self.root.join("pause.json"), &bytes)
    }

    /// Lifts the pause; returns whether the machine was paused.
    pub fn resume(&self) -> Result<bool, HomeError> {
        atomic::remove(&self.root.join("pause.json"))
    }

    /// The pause switch, if set. An unreadable switch counts as paused: refusing writes is
    /// the safe reading of a damaged file.
    pub fn pause_state(&self) -> Result<Option<Pause>, HomeError> {
        let path = self.root.join("pause.json");
        let Some(bytes) = read_optional(&path)? else {
            return Ok(None);
        };
        Ok(Some(serde_json::from_slice(&bytes).unwrap_or(Pause {
            reason: PauseReason("unreadable pause file".into()),
            since: Timestamp::from_millis(0),
        })))
    }

    /// Where the machine's kept state of `project` is (ADR 0004, 0011): a SQLite database.
    pub fn verified_path(&self, project: &ProjectId) -> PathBuf {
        self.project_dir(project).join(KEPT_FILE)
    }

    // ---- pins ----

    /// Pins the genesis master and every `(name, key)` of `agents` not pinned yet, reading and
    /// writing `pins.json` once whatever the number of names. Returns the master's outcome and
    /// the names whose key differs from the pinned one (never re-pinned).
    pub fn pin_all(
        &self,
        project: &ProjectId,
        master: &PublicKey,
        agents: &[(&AgentName, &PublicKey)],
    ) -> Result<(PinOutcome, Vec<AgentName>), HomeError> {
        let mut changed = Vec::new();
        let master = master.to_string();
        let outcome = self.update_pins(project, |pins| {
            let mut wrote = false;
            let master_outcome = match &pins.master {
                Some(pinned) if *pinned == master => PinOutcome::Same,
                Some(pinned) => PinOutcome::Changed {
                    pinned: pinned.clone(),
                },
                None => {
                    pins.master = Some(master.clone());
                    wrote = true;
                    PinOutcome::New
                }
            };
            for (name, key) in agents {
                let key = key.to_string();
                match pins.agents.get(name.as_str()) {
                    Some(pinned) if *pinned == key => {}
                    Some(_) => changed.push((*name).clone()),
                    None => {
                        pins.agents.insert(name.as_str().to_owned(), key);
                        wrote = true;
                    }
                }
            }
            (master_outcome, wrote)
        })?;
        Ok((outcome, changed))
    }

    /// Where the pinned keys of `project` are.
    pub fn pins_path(&self, project: &ProjectId) -> PathBuf {
        self.project_dir(project).join("pins.json")
    }

    /// The pinned keys of `project`.
    pub fn pins(&self, project: &ProjectId) -> Result<Pins, HomeError> {
        let path = self.project_dir(project).join("pins.json");
        match read_optional(&path)? {
            None => Ok(Pins::default()),
            Some(bytes) => parse(&path, &bytes),
        }
    }

    fn write_pins(&self, project: &ProjectId, pins: &Pins) -> Result<(), HomeError> {
        let bytes = serde_json::to_vec_pretty(pins).expect("pins serialize");
        atomic::write(&self.project_dir(project).join("pins.json"), &bytes)
    }

    /// Runs `pin` on the pins of `project` while holding `pins.lock`, and writes them back
    /// if it returns [`PinOutcome::New`]. The lock keeps two processes on this machine that
    /// pin different names at once from losing one of them.
    fn update_pins(
        &self,
        project: &ProjectId,
        pin: impl FnOnce(&mut Pins) -> (PinOutcome, bool),
    ) -> Result<PinOutcome, HomeError> {
        let dir = self.project_dir(project);
        atomic::create_private_dir(&dir)?;
        let lock_path = dir.join("pins.lock");
        let lock = durable::open_regular(
            &lock_path,
            fs::OpenOptions::new()
                .create(true)
                .truncate(false)
                .write(true),
        )
        .map_err(io_err(&lock_path))?;
        lock.lock().map_err(io_err(&lock_path))?;
        let mut pins = self.pins(project)?;
        let (outcome, changed) = pin(&mut pins);
        if changed {
            self.write_pins(project, &pins)?;
        }
        // Dropping the file releases the lock.
        Ok(outcome)
    }

    /// Pins `key` for agent `name` if it is the first key seen for it; a different key for
    /// a pinned name is reported and not accepted.
    pub fn pin_agent(
        &self,
        project: &ProjectId,
        name: &AgentName,
        key: &PublicKey,
    ) -> Result<PinOutcome, HomeError> {
        let key = key.to_string();
        self.update_pins(project, |pins| {
            let outcome = match pins.agents.get(name.as_str()) {
                Some(pinned) if *pinned == key => PinOutcome::Same,
                Some(pinned) => PinOutcome::Changed {
                    pinned: pinned.clone(),
                },
                None => {
                    pins.agents.insert(name.as_str().to_owned(), key);
                    PinOutcome::New
                }
            };
            let wrote = outcome == PinOutcome::New;
            (outcome, wrote)
        })
    }

    /// Pins the genesis master key of `project` (same rules as [`Home::pin_agent`]).
    pub fn pin_master(
        &self,
        project: &ProjectId,
        key: &PublicKey,
    ) -> Result<PinOutcome, HomeError> {
        let key = key.to_string();
        self.update_pins(project, |pins| {
            let outcome = match &pins.master {
                Some(pinned) if *pinned == key => PinOutcome::Same,
                Some(pinned) => PinOutcome::Changed {
                    pinned: pinned.clone(),
                },
                None => {
                    pins.master = Some(key);
                    PinOutcome::New
                }
            };
            let wrote = outcome == PinOutcome::New;
            (outcome, wrote)
        })
    }
}

/// The bytes of a state file, if it is there; anything but a regular file is refused unread.
fn read_optional(path: &Path) -> Result<Option<Vec<u8>>, HomeError> {
    use std::io::Read as _;
    let read =
        durable::open_regular(path, fs::OpenOptions::new().read(true)).and_then(|mut file| {
            let mut bytes = Vec::new();
            file.read_to_end(&mut bytes).map(|_| bytes)
        });
    match read {
        Ok(bytes) => Ok(Some(bytes)),
        Err(err) if err.kind() == io::ErrorKind::NotFound => Ok(None),
        Err(err) => Err(io_err(path)(err)),
    }
}

fn parse<T: serde::de::DeserializeOwned>(path: &Path, bytes: &[u8]) -> Result<T, HomeError> {
    serde_json::from_slice(bytes).map_err(|err| HomeError::BadFile {
        path: path.to_owned(),
        detail: err.to_string(),
    })
}

fn write_key_file(path: &Path, file: &KeyFile) -> Result<(), HomeError> {
    let bytes = serde_json::to_vec_pretty(file).expect("a key file serializes");
    atomic::write(path, &bytes)
}

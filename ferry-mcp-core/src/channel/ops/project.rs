//! Projects on this machine: create one, register a channel synced from elsewhere, and the
//! machine-wide pause switch.

use std::path::{Path, PathBuf};

use serde::Serialize;

use super::{OpsError, generate_key};
use crate::channel::log::keys::PublicKey;
use crate::channel::log::names::ProjectId;
use crate::channel::log::store::{Channel, StoreError};
use crate::channel::machine::home::{Home, HomeError, KeyHolder, PinOutcome, SealCost};
use crate::time::Timestamp;

/// Why creating or registering a project failed. One variant per cause;
/// [`ProjectError::code`] is stable.
#[derive(Debug, thiserror::Error)]
pub enum ProjectError {
    /// What any operation can fail with (the session, the machine's state).
    #[error(transparent)]
    Ops(#[from] OpsError),
    #[error("project {0} already exists on this machine")]
    ProjectExists(ProjectId),
    /// Register it instead of creating it.
    #[error("a channel already exists in {}", .0.display())]
    ChannelExists(PathBuf),
    /// An interrupted init: run it again, sealed with the same passphrase.
    #[error(
        "an interrupted init left a sealed master key for {0}: run it again sealed with the same passphrase"
    )]
    InterruptedInit(ProjectId),
}

impl ProjectError {
    /// A stable machine-readable code (tool results carry it).
    pub fn code(&self) -> &'static str {
        match self {
            Self::Ops(err) => err.code(),
            Self::ProjectExists(_) => "project_exists",
            Self::ChannelExists(_) => "channel_exists",
            Self::InterruptedInit(_) => "invalid",
        }
    }
}

/// What [`init`] created.
#[derive(Debug, Clone, Serialize)]
pub struct Created {
    pub project: ProjectId,
    pub channel: PathBuf,
    pub master: PublicKey,
}

/// Creates `project`: its channel folder (genesis signed by a new master key), the master
/// key on this machine (sealed when a passphrase is given), and the registry entry.
///
/// Crash-safe: the registry entry is written last, so until it exists there is no project;
/// a run interrupted at any step leaves the key and perhaps the channel, and a rerun picks
/// them up (it reuses the key an interrupted run stored, and a genesis that key signed).
pub fn init(
    home: &Home,
    project: &ProjectId,
    channel_dir: &Path,
    passphrase: Option<(&[u8], SealCost)>,
    now: Timestamp,
) -> Result<Created, ProjectError> {
    // The project id names the channel's genesis and every machine's folders.
    crate::guard::check_name(project.as_str())?;
    match home.channel_dir(project) {
        Ok(_) => return Err(ProjectError::ProjectExists(project.clone())),
        Err(HomeError::UnknownProject(_)) => {}
        Err(other) => return Err(other.into()),
    }
    // An unregistered project with a master key here: an init was interrupted after storing
    // it. The key was never used for anything but this channel's genesis.
    let master = match home.open_key(
        project,
        &KeyHolder::Master,
        passphrase.map(|(phrase, _)| phrase),
        now,
    ) {
        Ok(key) => key,
        Err(HomeError::KeyMissing { .. }) => {
            let key = generate_key()?;
            home.store_key(project, &KeyHolder::Master, &key, passphrase)?;
            key
        }
        Err(HomeError::Locked { .. } | HomeError::MasterSealed { .. }) => {
            return Err(ProjectError::InterruptedInit(project.clone()));
        }
        Err(other) => return Err(other.into()),
    };
    remove_stale_temp_files(channel_dir);
    match Channel::create(channel_dir, project, &master, now) {
        Ok(_) => {}
        Err(StoreError::AlreadyExists(dir)) => {
            // The interrupted run may have written the genesis already: keep it if it is ours.
            match Channel::open(&dir) {
                Ok(channel)
                    if channel.project() == project
                        && *channel.genesis_master() == master.public_key() => {}
                _ => return Err(ProjectError::ChannelExists(dir)),
            }
        }
        Err(other) => return Err(other.into()),
    }
    home.register_project(project, channel_dir)?;
    home.pin_master(project, &master.public_key())?;
    Ok(Created {
        project: project.clone(),
        channel: channel_dir.to_owned(),
        master: master.public_key(),
    })
}

/// Removes the temporary files an interrupted `init` left in the channel folder (only ours,
/// `.ferry-tmp-*`, and only there: nothing else writes them at the top of a new channel).
fn remove_stale_temp_files(channel_dir: &Path) {
    let Ok(entries) = std::fs::read_dir(channel_dir) else {
        return;
    };
    for entry in entries.flatten() {
        let stale = entry
            .file_name()
            .to_str()
            .is_some_and(|name| name.starts_with(crate::channel::log::store::TEMP_PREFIX));
        if stale && entry.file_type().is_ok_and(|kind| kind.is_file()) {
            let _ = std::fs::remove_file(entry.path());
        }
    }
}

/// Registers an existing channel folder (synced from another machine) as `project` on this
/// machine, after checking that it is that project's channel; pins its master key.
pub fn add_existing(
    home: &Home,
    project: &ProjectId,
    channel_dir: &Path,
) -> Result<PublicKey, ProjectError> {
    let channel = Channel::open(channel_dir)?;
    if channel.project() != project {
        return Err(OpsError::WrongProject {
            expected: project.clone(),
            found: channel.project().clone(),
        }
        .into());
    }
    let master = *channel.genesis_master();
    if let PinOutcome::Changed { .. } = home.pin_master(project, &master)? {
        return Err(OpsError::MasterPinChanged {
            project: project.clone(),
        }
        .into());
    }
    home.register_project(project, channel_dir)?;
    Ok(master)
}

/// Pauses every agent on this machine.
pub fn pause(home: &Home, reason: &str, now: Timestamp) -> Result<(), ProjectError> {
    Ok(home.pause(reason, now)?)
}

/// Lifts the pause; returns whether the machine was paused.
pub fn resume(home: &Home) -> Result<bool, ProjectError> {
    Ok(home.resume()?)
}

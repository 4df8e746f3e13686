//! Releases the master approves and `apply` (ADR 0020), tried as an attacker would: a folder
//! writer who swaps an artifact, a seated agent that signs an approval with its own key, a
//! Member that applies, and a machine that crashes between the download and the rename. Each
//! refusal leaves the binary (a copy, never the test's own) whole and nothing half-installed.

use std::fs;
use std::path::{Path, PathBuf};

use ferry_mcp_core::channel::fold::identity::FoldProblemKind;
use ferry_mcp_core::channel::fold::levels::Operation;
use ferry_mcp_core::channel::fold::state::Sections;
use ferry_mcp_core::channel::fold::state::releases::{
    ApproveBody, Artifact, ReleaseState, Sha256, Source, kinds,
};
use ferry_mcp_core::channel::log::store::Channel;
use ferry_mcp_core::channel::ops::install::{self, InstallError};
use ferry_mcp_core::channel::ops::releases::{
    self, ApproveRequest, ArtifactInput, Installed, ReleasesError, THIS_PLATFORM,
};
use ferry_mcp_core::channel::ops::{self, OpsError, fleet};
use ferry_mcp_core::channel::session::{Actor, Session};
use ferry_mcp_testkit::http;
use ferry_mcp_testkit::https::{self, Reply};
use ferry_mcp_testkit::temp_channel::TempChannel;
use serde_json::json;
use sha2::Digest as _;

const NEW: &[u8] = b"#!/bin/sh\necho 'ferry 9.9.9'\n";
const OLD: &[u8] = b"#!/bin/sh\necho 'ferry 0.1.0'\n";

fn sha(bytes: &[u8]) -> Sha256 {
    Sha256(sha2::Sha256::digest(bytes).into())
}

/// A copy standing for the running binary, in a folder of its own under the channel's root.
fn binary(temp: &TempChannel) -> PathBuf {
    let dir = temp.root().join("bin");
    fs::create_dir_all(&dir).unwrap();
    let path = dir.join("ferry");
    fs::write(&path, OLD).unwrap();
    path
}

/// A release artifact file.
fn artifact(temp: &TempChannel, bytes: &[u8]) -> PathBuf {
    let path = temp.root().join("ferry-9.9.9");
    fs::write(&path, bytes).unwrap();
    path
}

/// A session of `actor` replacing `binary`, running `version` on this platform.
fn session(temp: &TempChannel, actor: Actor, binary: &Path, version: &str) -> Session {
    let mut session = temp.session(actor);
    session.set_installed(Installed {
        version: version.parse().unwrap(),
        triple: THIS_PLATFORM.to_owned(),
        binary: Some(binary.to_owned()),
        https: install::Https::default(),
    });
    session
}

/// `session` fetching `https://` trusting only `server`'s certificate (the test-only setting).
fn trusting(mut session: Session, server: &https::Served) -> Session {
    let installed = Installed {
        https: install::Https {
            test_roots: Some(server.roots.clone()),
            ..install::Https::default()
        },
        ..session.installed().clone()
    };
    session.set_installed(installed);
    session
}

fn orchestrator(temp: &TempChannel, binary: &Path) -> Session {
    session(
        temp,
        Actor::Agent(TempChannel::agent("orchestrator")),
        binary,
        "0.1.0",
    )
}

fn approve(temp: &TempChannel, version: &str, input: ArtifactInput) -> releases::ReleaseView {
    let request = ApproveRequest {
        version: version.to_owned(),
        artifacts: vec![(THIS_PLATFORM.to_owned(), input)],
        ..ApproveRequest::default()
    };
    releases::approve(&mut temp.master_session(), &request, temp.now()).unwrap()
}

/// Nothing but the old binary is beside it: no temporary file, no previous copy.
fn untouched(binary: &Path) {
    assert_eq!(fs::read(binary).unwrap(), OLD);
    assert!(!install::temp_path(binary).exists(), "a download was left");
    assert!(
        !install::previous_path(binary).exists(),
        "a previous was kept"
    );
}

#[test]
fn a_release_approved_from_a_file_is_shown_in_join_and_installed_with_its_pinned_sha256() {
    let temp = TempChannel::with_each_level();
    let binary = binary(&temp);
    let view = approve(&temp, "9.9.9", ArtifactInput::Store(artifact(&temp, NEW)));
    assert_eq!(view.state, ReleaseState::Approved);
    assert_eq!(view.artifacts[0].sha256, Some(sha(NEW).to_hex()));
    assert!(view.artifacts[0].source.starts_with("blob "));

    let mut lead = orchestrator(&temp, &binary);
    let joined = fleet::join(&mut lead, temp.now()).unwrap();
    let note = joined.update.expect("join names the update");
    assert_eq!(
        (note.version.as_str(), note.running.as_str()),
        ("9.9.9", "0.1.0")
    );
    let digest = fleet::catchup(&mut lead, None, fleet::DigestLimits::DEFAULT, temp.now()).unwrap();
    assert_eq!(digest.update.unwrap().version, "9.9.9");
    let check = releases::check(&mut lead, temp.now()).unwrap();
    assert_eq!(check.newest.as_deref(), Some("9.9.9"));
    assert!(check.newer);

    let applied = releases::apply(&mut lead, None, temp.now()).unwrap();
    assert_eq!(applied.version, "9.9.9");
    assert_eq!(fs::read(&binary).unwrap(), NEW);
    assert_eq!(sha(&fs::read(&binary).unwrap()).to_hex(), applied.sha256);
    assert_eq!(
        applied.sha256,
        sha(NEW).to_hex(),
        "installed what was pinned"
    );
    assert_eq!(fs::read(applied.previous.unwrap()).unwrap(), OLD);
    assert!(
        applied.restart.contains("must restart"),
        "{}",
        applied.restart
    );
    assert!(!install::temp_path(&binary).exists());
}

#[test]
fn a_release_served_over_loopback_http_is_hashed_when_approved_and_checked_when_applied() {
    let temp = TempChannel::with_each_level();
    let binary = binary(&temp);
    // One GET when the human approves (to compute the pin), one when the agent applies.
    let served = http::serve(NEW.to_vec(), 2);
    let view = approve(&temp, "9.9.9", ArtifactInput::Url(served.url("ferry")));
    assert_eq!(view.artifacts[0].sha256, Some(sha(NEW).to_hex()));

    let applied =
        releases::apply(&mut orchestrator(&temp, &binary), Some("9.9.9"), temp.now()).unwrap();
    assert_eq!(fs::read(&binary).unwrap(), NEW);
    assert_eq!(applied.sha256, sha(NEW).to_hex());
    assert_eq!(served.finish(), 2);
}

#[test]
fn a_tampered_download_is_refused_removed_and_the_binary_left_whole() {
    let temp = TempChannel::with_each_level();
    let binary = binary(&temp);
    let served = http::serve(b"#!/bin/sh\necho pwned\n".to_vec(), 1);
    let request = ApproveRequest {
        version: "9.9.9".into(),
        artifacts: vec![(
            THIS_PLATFORM.to_owned(),
            ArtifactInput::Url(served.url("ferry")),
        )],
        sha256: vec![(THIS_PLATFORM.to_owned(), sha(NEW))],
        ..ApproveRequest::default()
    };
    releases::approve(&mut temp.master_session(), &request, temp.now()).unwrap();

    let err = releases::apply(&mut orchestrator(&temp, &binary), None, temp.now()).unwrap_err();
    assert_eq!(err.code(), "checksum_mismatch", "{err}");
    assert!(matches!(
        err,
        ReleasesError::Install(InstallError::Mismatch { pinned, .. }) if pinned == sha(NEW)
    ));
    untouched(&binary);
    served.finish();
}

#[test]
fn a_blob_swapped_in_the_synced_folder_is_refused_and_the_binary_left_whole() {
    let temp = TempChannel::with_each_level();
    let binary = binary(&temp);
    let view = approve(&temp, "9.9.9", ArtifactInput::Store(artifact(&temp, NEW)));
    let blob = view.artifacts[0]
        .source
        .trim_start_matches("blob ")
        .to_owned();
    // A folder writer replaces the blob's bytes under its name.
    fs::write(
        temp.channel_dir().join("blobs").join(&blob),
        b"#!/bin/sh\necho pwned\n",
    )
    .unwrap();

    let err = releases::apply(&mut orchestrator(&temp, &binary), None, temp.now()).unwrap_err();
    assert_eq!(err.code(), "checksum_mismatch", "{err}");
    untouched(&binary);
}

#[test]
fn an_approval_without_a_pin_approves_nothing_for_its_platform() {
    let temp = TempChannel::with_each_level();
    let binary = binary(&temp);
    let path = artifact(&temp, NEW);
    let body = ApproveBody {
        version: "9.9.9".into(),
        artifacts: [(
            THIS_PLATFORM.to_owned(),
            Artifact {
                sha256: None,
                source: Source::Path(path.to_string_lossy().into_owned()),
            },
        )]
        .into(),
        downgrade: false,
        notes: None,
        seen: None,
    };
    // Signed by the master itself, by other means than `ferry release approve` (which pins).
    temp.master_session()
        .append(Operation::Approve, None, &body, temp.now())
        .unwrap();

    let mut lead = orchestrator(&temp, &binary);
    assert_eq!(fleet::join(&mut lead, temp.now()).unwrap().update, None);
    assert_eq!(releases::check(&mut lead, temp.now()).unwrap().newest, None);
    let err = releases::apply(&mut lead, Some("9.9.9"), temp.now()).unwrap_err();
    assert_eq!(err.code(), "no_pin", "{err}");
    assert!(err.to_string().contains("pins no SHA-256"), "{err}");
    // With no version named, nothing is newer.
    let err = releases::apply(&mut lead, None, temp.now()).unwrap_err();
    assert_eq!(err.code(), "no_update", "{err}");
    untouched(&binary);
}

#[test]
fn approvals_pinned_or_not_and_a_revocation_survive_a_save_of_the_kept_state() {
    let temp = TempChannel::with_each_level();
    let path = artifact(&temp, NEW);
    approve(&temp, "1.0.0", ArtifactInput::Path(path.clone()));
    let unpinned = ApproveBody {
        version: "2.0.0".into(),
        artifacts: [(
            THIS_PLATFORM.to_owned(),
            Artifact {
                sha256: None,
                source: Source::Path(path.to_string_lossy().into_owned()),
            },
        )]
        .into(),
        downgrade: true,
        notes: Some("no pin".into()),
        seen: None,
    };
    let mut human = temp.master_session();
    human
        .append(Operation::Approve, None, &unpinned, temp.now())
        .unwrap();
    releases::revoke(&mut human, "1.0.0", temp.now()).unwrap();
    let before = releases::list(&mut human, temp.now()).unwrap();
    human.save().unwrap();

    let mut again = temp.master_session();
    assert_eq!(
        again.local_problems(),
        &[] as &[String],
        "the kept state decodes"
    );
    assert_eq!(releases::list(&mut again, temp.now()).unwrap(), before);
    assert_eq!(before[0].artifacts[0].sha256, None);
    assert_eq!(before[1].state, ReleaseState::Revoked);
}

#[test]
fn an_approval_an_agent_signs_with_its_own_key_counts_for_nothing() {
    let temp = TempChannel::with_each_level();
    let binary = binary(&temp);
    let path = artifact(&temp, NEW);
    // The operation refuses an agent before anything is written.
    let request = ApproveRequest {
        version: "9.9.9".into(),
        artifacts: vec![(THIS_PLATFORM.to_owned(), ArtifactInput::Path(path.clone()))],
        ..ApproveRequest::default()
    };
    let mut lead = orchestrator(&temp, &binary);
    let err = releases::approve(&mut lead, &request, temp.now()).unwrap_err();
    assert_eq!(err.code(), "master_only", "{err}");

    // The agent signs a well-formed, pinned approval itself, straight into its log.
    let seen = lead.identity().master_position();
    let channel = Channel::open(temp.channel_dir()).unwrap();
    let key = temp.agent_key("orchestrator");
    let mut writer = channel
        .writer(&TempChannel::agent("orchestrator"), &key)
        .unwrap();
    let body = json!({
        "version": "9.9.9",
        "artifacts": {THIS_PLATFORM: {"sha256": sha(NEW).to_hex(), "source": {"path": path}}},
        "seen": [seen.0, seen.1],
    });
    writer.append(kinds::APPROVE, body, temp.now()).unwrap();

    let mut lead = orchestrator(&temp, &binary);
    assert_eq!(fleet::join(&mut lead, temp.now()).unwrap().update, None);
    let err = releases::apply(&mut lead, Some("9.9.9"), temp.now()).unwrap_err();
    assert_eq!(err.code(), "not_approved", "{err}");
    untouched(&binary);
    let problems = lead.load(Sections::ALL, temp.now()).problems().unwrap();
    assert!(
        problems
            .iter()
            .any(|problem| problem.kind == FoldProblemKind::NotSignedByMaster),
        "{problems:?}"
    );
}

#[test]
fn a_revoked_release_is_not_installed_until_the_master_approves_it_again() {
    let temp = TempChannel::with_each_level();
    let binary = binary(&temp);
    let path = artifact(&temp, NEW);
    approve(&temp, "9.9.9", ArtifactInput::Store(path.clone()));
    let revoked = releases::revoke(&mut temp.master_session(), "9.9.9", temp.now()).unwrap();
    assert_eq!(revoked.state, ReleaseState::Revoked);

    let mut lead = orchestrator(&temp, &binary);
    assert_eq!(fleet::join(&mut lead, temp.now()).unwrap().update, None);
    let err = releases::apply(&mut lead, Some("9.9.9"), temp.now()).unwrap_err();
    assert!(matches!(err, ReleasesError::Revoked(_)), "{err}");
    assert_eq!(err.code(), "not_approved");
    untouched(&binary);

    approve(&temp, "9.9.9", ArtifactInput::Store(path));
    let mut lead = orchestrator(&temp, &binary);
    releases::apply(&mut lead, Some("9.9.9"), temp.now()).unwrap();
    assert_eq!(fs::read(&binary).unwrap(), NEW);
}

#[test]
fn a_member_s_apply_is_refused_and_nothing_is_downloaded() {
    let temp = TempChannel::with_each_level();
    let binary = binary(&temp);
    approve(&temp, "9.9.9", ArtifactInput::Store(artifact(&temp, NEW)));
    for agent in ["member", "worker"] {
        let mut session = session(
            &temp,
            Actor::Agent(TempChannel::agent(agent)),
            &binary,
            "0.1.0",
        );
        let err = releases::apply(&mut session, None, temp.now()).unwrap_err();
        assert_eq!(err.code(), "missing_level", "{agent}: {err}");
        assert!(
            err.to_string().contains("apply updates needs orchestrator"),
            "{err}"
        );
        // It is told of the update all the same: it mentions it to the human.
        assert!(
            fleet::join(&mut session, temp.now())
                .unwrap()
                .update
                .is_some()
        );
    }
    untouched(&binary);
}

#[test]
fn nobody_applies_an_update_on_a_paused_machine() {
    let temp = TempChannel::with_each_level();
    let binary = binary(&temp);
    approve(&temp, "9.9.9", ArtifactInput::Store(artifact(&temp, NEW)));
    ops::pause(temp.home(), "release freeze", temp.now()).unwrap();
    for actor in [
        Actor::Agent(TempChannel::agent("orchestrator")),
        Actor::Master,
    ] {
        let mut session = session(&temp, actor.clone(), &binary, "0.1.0");
        let err = releases::apply(&mut session, None, temp.now()).unwrap_err();
        assert_eq!(err.code(), "paused", "{actor:?}: {err}");
        assert!(err.to_string().contains("release freeze"), "{err}");
    }
    untouched(&binary);
    ops::resume(temp.home()).unwrap();
    releases::apply(&mut orchestrator(&temp, &binary), None, temp.now()).unwrap();
    assert_eq!(fs::read(&binary).unwrap(), NEW);
}

#[test]
fn an_older_version_is_refused_unless_its_approval_allows_a_downgrade() {
    let temp = TempChannel::with_each_level();
    let binary = binary(&temp);
    let path = artifact(&temp, NEW);
    approve(&temp, "9.9.9", ArtifactInput::Store(path.clone()));
    let lead = || {
        session(
            &temp,
            Actor::Agent(TempChannel::agent("orchestrator")),
            &binary,
            "10.0.0",
        )
    };
    // Older than what runs: no update is announced, and naming it is refused.
    assert_eq!(fleet::join(&mut lead(), temp.now()).unwrap().update, None);
    let err = releases::apply(&mut lead(), Some("9.9.9"), temp.now()).unwrap_err();
    assert_eq!(err.code(), "downgrade_refused", "{err}");
    untouched(&binary);

    let request = ApproveRequest {
        version: "9.9.8".into(),
        artifacts: vec![(THIS_PLATFORM.to_owned(), ArtifactInput::Store(path))],
        downgrade: true,
        notes: Some("9.9.9 breaks the parser".into()),
        ..ApproveRequest::default()
    };
    releases::approve(&mut temp.master_session(), &request, temp.now()).unwrap();
    releases::apply(&mut lead(), Some("9.9.8"), temp.now()).unwrap();
    assert_eq!(fs::read(&binary).unwrap(), NEW);
}

#[test]
fn a_crash_between_download_and_rename_leaves_the_old_binary_and_the_next_apply_recovers() {
    let temp = TempChannel::with_each_level();
    let binary = binary(&temp);
    approve(&temp, "9.9.9", ArtifactInput::Store(artifact(&temp, NEW)));
    // What a crash after the download and before the rename leaves: the old binary, and half a
    // download beside it.
    fs::write(install::temp_path(&binary), &NEW[..10]).unwrap();
    let mut lead = orchestrator(&temp, &binary);
    assert!(releases::check(&mut lead, temp.now()).unwrap().leftover);
    assert_eq!(fs::read(&binary).unwrap(), OLD);

    let applied = releases::apply(&mut lead, None, temp.now()).unwrap();
    assert_eq!(fs::read(&binary).unwrap(), NEW);
    assert_eq!(applied.sha256, sha(NEW).to_hex());
    assert!(!install::temp_path(&binary).exists());
    assert!(!releases::check(&mut lead, temp.now()).unwrap().leftover);
}

#[test]
fn a_rollback_puts_the_replaced_binary_back() {
    let temp = TempChannel::with_each_level();
    let binary = binary(&temp);
    approve(&temp, "9.9.9", ArtifactInput::Store(artifact(&temp, NEW)));
    releases::apply(&mut orchestrator(&temp, &binary), None, temp.now()).unwrap();
    let mut human = session(&temp, Actor::Master, &binary, "9.9.9");
    releases::rollback(&mut human, temp.now()).unwrap();
    untouched(&binary);
    let err = releases::rollback(&mut human, temp.now()).unwrap_err();
    assert_eq!(err.code(), "no_previous", "{err}");
}

#[test]
fn the_newest_release_is_chosen_in_semver_order_and_a_pre_release_ranks_below_its_release() {
    let temp = TempChannel::with_each_level();
    let binary = binary(&temp);
    let path = artifact(&temp, NEW);
    for version in ["1.2.0", "1.10.0", "v1.11.0-rc.1", "1.9.5"] {
        approve(&temp, version, ArtifactInput::Path(path.clone()));
    }
    let mut lead = orchestrator(&temp, &binary);
    let listed: Vec<String> = releases::list(&mut lead, temp.now())
        .unwrap()
        .into_iter()
        .map(|release| release.version)
        .collect();
    assert_eq!(listed, ["1.11.0-rc.1", "1.10.0", "1.9.5", "1.2.0"]);
    let on = |version: &str| {
        fleet::join(
            &mut session(
                &temp,
                Actor::Agent(TempChannel::agent("orchestrator")),
                &binary,
                version,
            ),
            temp.now(),
        )
        .unwrap()
        .update
        .map(|note| note.version)
    };
    assert_eq!(on("1.10.0").as_deref(), Some("1.11.0-rc.1"));
    assert_eq!(on("1.11.0-rc.1"), None);
    assert_eq!(on("1.11.0"), None);
}

#[test]
fn an_observer_and_a_server_with_no_binary_named_cannot_apply() {
    let temp = TempChannel::with_each_level();
    approve(&temp, "9.9.9", ArtifactInput::Store(artifact(&temp, NEW)));
    let err = releases::apply(&mut temp.view(), None, temp.now()).unwrap_err();
    assert!(
        matches!(err, ReleasesError::Ops(OpsError::ReadOnly)),
        "{err}"
    );
    let mut lead = temp.agent_session("orchestrator");
    let err = releases::apply(&mut lead, None, temp.now()).unwrap_err();
    assert_eq!(err.code(), "no_binary", "{err}");
}

#[test]
fn a_release_served_over_loopback_https_is_hashed_when_approved_and_installed_through_an_https_redirect()
 {
    let temp = TempChannel::with_each_level();
    let binary = binary(&temp);
    let served = https::serve(&[("ferry", Reply::Body(NEW.to_vec()))]);
    let moved = https::serve(&[("latest", Reply::Redirect(served.url("ferry")))]);
    // The human's approval fetches the URL to pin what it serves.
    let request = ApproveRequest {
        version: "9.9.9".into(),
        artifacts: vec![(
            THIS_PLATFORM.to_owned(),
            ArtifactInput::Url(served.url("ferry")),
        )],
        ..ApproveRequest::default()
    };
    let mut human = trusting(temp.master_session(), &served);
    let view = releases::approve(&mut human, &request, temp.now()).unwrap();
    assert_eq!(view.artifacts[0].sha256, Some(sha(NEW).to_hex()));

    let applied = releases::apply(
        &mut trusting(orchestrator(&temp, &binary), &served),
        Some("9.9.9"),
        temp.now(),
    )
    .unwrap();
    assert_eq!(fs::read(&binary).unwrap(), NEW);
    assert_eq!(applied.sha256, sha(NEW).to_hex());
    assert!(!install::temp_path(&binary).exists());

    // A redirect to https is followed (as a release page's download link is): here from one
    // loopback server to the other, trusting both.
    let both = temp.root().join("both.pem");
    let mut pem = fs::read(&served.roots).unwrap();
    pem.extend(fs::read(&moved.roots).unwrap());
    fs::write(&both, pem).unwrap();
    let redirected = install::fetch(
        &moved.url("latest"),
        &install::Https {
            test_roots: Some(both),
            ..install::Https::default()
        },
    )
    .unwrap();
    assert_eq!(install::hash(&mut { redirected }).unwrap(), sha(NEW));
}

#[test]
fn a_tampered_artifact_over_https_is_refused_and_the_download_removed() {
    let temp = TempChannel::with_each_level();
    let binary = binary(&temp);
    let served = https::serve(&[("ferry", Reply::Body(b"#!/bin/sh\necho pwned\n".to_vec()))]);
    let request = ApproveRequest {
        version: "9.9.9".into(),
        artifacts: vec![(
            THIS_PLATFORM.to_owned(),
            ArtifactInput::Url(served.url("ferry")),
        )],
        sha256: vec![(THIS_PLATFORM.to_owned(), sha(NEW))],
        ..ApproveRequest::default()
    };
    releases::approve(&mut temp.master_session(), &request, temp.now()).unwrap();

    let mut lead = trusting(orchestrator(&temp, &binary), &served);
    let err = releases::apply(&mut lead, None, temp.now()).unwrap_err();
    assert_eq!(err.code(), "checksum_mismatch", "{err}");
    assert!(matches!(
        err,
        ReleasesError::Install(InstallError::Mismatch { pinned, found })
            if pinned == sha(NEW) && found == sha(b"#!/bin/sh\necho pwned\n")
    ));
    untouched(&binary);
}

#[test]
fn a_redirect_from_https_to_plain_http_is_refused_and_nothing_is_installed() {
    let temp = TempChannel::with_each_level();
    let binary = binary(&temp);
    // The plain server serves the very bytes pinned: the redirect is refused for what it is,
    // not for what it would bring.
    let plain = http::serve(NEW.to_vec(), 1);
    let served = https::serve(&[("ferry", Reply::Redirect(plain.url("ferry")))]);
    let request = ApproveRequest {
        version: "9.9.9".into(),
        artifacts: vec![(
            THIS_PLATFORM.to_owned(),
            ArtifactInput::Url(served.url("ferry")),
        )],
        sha256: vec![(THIS_PLATFORM.to_owned(), sha(NEW))],
        ..ApproveRequest::default()
    };
    releases::approve(&mut temp.master_session(), &request, temp.now()).unwrap();

    let mut lead = trusting(orchestrator(&temp, &binary), &served);
    let err = releases::apply(&mut lead, None, temp.now()).unwrap_err();
    assert_eq!(err.code(), "redirect_refused", "{err}");
    let text = err.to_string();
    assert!(
        text.contains("a redirect led to a URL that is not https: refused"),
        "{text}"
    );
    untouched(&binary);
    // Stop the plain server with a request of our own: the redirect never reached it.
    let mut probe = install::http_get(&plain.url("probe"), install::HTTP_TIMEOUT).unwrap();
    assert_eq!(install::hash(&mut probe).unwrap(), sha(NEW));
    assert_eq!(plain.finish(), 1);
}

#[test]
fn an_https_server_this_machine_does_not_trust_is_refused_and_nothing_is_installed() {
    let temp = TempChannel::with_each_level();
    let binary = binary(&temp);
    let served = https::serve(&[("ferry", Reply::Body(NEW.to_vec()))]);
    let request = ApproveRequest {
        version: "9.9.9".into(),
        artifacts: vec![(
            THIS_PLATFORM.to_owned(),
            ArtifactInput::Url(served.url("ferry")),
        )],
        sha256: vec![(THIS_PLATFORM.to_owned(), sha(NEW))],
        ..ApproveRequest::default()
    };
    releases::approve(&mut temp.master_session(), &request, temp.now()).unwrap();
    // The session as every command and server has it: the system's roots, which do not hold
    // the certificate the server made a moment ago.
    let err = releases::apply(&mut orchestrator(&temp, &binary), None, temp.now()).unwrap_err();
    assert_eq!(err.code(), "untrusted_server", "{err}");
    assert!(
        err.to_string()
            .contains("the server's certificate is not trusted: refused"),
        "{err}"
    );
    untouched(&binary);
}

#[test]
fn without_curl_https_is_refused_with_a_clear_error_and_an_approval_can_still_pin_it_by_hand() {
    let temp = TempChannel::with_each_level();
    let binary = binary(&temp);
    let no_curl = install::Https {
        curl: Some(temp.root().join("no-such-curl")),
        ..install::Https::default()
    };
    let without_curl = |mut session: Session| {
        let installed = Installed {
            https: no_curl.clone(),
            ..session.installed().clone()
        };
        session.set_installed(installed);
        session
    };
    let url = "https://example.invalid/ferry".to_owned();
    let request = ApproveRequest {
        version: "9.9.9".into(),
        artifacts: vec![(THIS_PLATFORM.to_owned(), ArtifactInput::Url(url.clone()))],
        ..ApproveRequest::default()
    };
    let err = releases::approve(
        &mut without_curl(temp.master_session()),
        &request,
        temp.now(),
    )
    .unwrap_err();
    assert_eq!(err.code(), "https_unavailable", "{err}");
    assert!(err.to_string().contains("no curl on PATH"), "{err}");
    let request = ApproveRequest {
        sha256: vec![(THIS_PLATFORM.to_owned(), sha(NEW))],
        ..request
    };
    releases::approve(&mut temp.master_session(), &request, temp.now()).unwrap();
    let err = releases::apply(
        &mut without_curl(orchestrator(&temp, &binary)),
        None,
        temp.now(),
    )
    .unwrap_err();
    assert_eq!(err.code(), "https_unavailable", "{err}");
    untouched(&binary);
}

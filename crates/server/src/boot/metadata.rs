//! Metadata recovery at boot: replay `metadata/journal.wal` (after the
//! snapshot, when there is one) into a fresh state machine, and create the
//! root user when the user table is empty.
//!
//! Runs on the main thread in a short-lived runtime before any shard starts;
//! shard 0 then reopens the journal to append. Every journaled operation
//! applied cleanly when it was committed, so a replay rejection means the
//! journal and this build disagree: boot stops rather than serve a state
//! that differs from what clients were told.

use std::path::Path;

use anyhow::Context;
use engine::metadata::permissions::Permissions;
use engine::metadata::user::UserStatus;
use engine::metadata::{MetadataOp, MetadataState, OpKind, UserId, password};
use storage::RealStorage;
use storage::journal::Journal;
use tracing::{info, warn};

use super::root_credentials::RootCredentials;
use crate::node::process_stats::now_us;

pub const METADATA_DIR: &str = "metadata";

pub struct Recovered {
    pub state: MetadataState,
    /// Operations applied (the starting commit number).
    pub commit: u64,
}

pub fn recover(data: &Path, root: &RootCredentials) -> anyhow::Result<Recovered> {
    let dir = data.join(METADATA_DIR);
    let runtime = compio::runtime::Runtime::new().context("cannot start the recovery runtime")?;
    runtime.block_on(recover_async(&dir, root))
}

async fn recover_async(dir: &Path, root: &RootCredentials) -> anyhow::Result<Recovered> {
    let (journal, recovery) = Journal::open(RealStorage, dir).await.map_err(|e| {
        anyhow::anyhow!(
            "cannot recover the metadata journal in {}: {e}",
            dir.display()
        )
    })?;
    if let Some((position, len, reason)) = &recovery.truncated_tail {
        warn!(
            position,
            len, reason, "cut a torn tail off the metadata journal"
        );
    }
    let mut state = match &recovery.snapshot {
        Some(snapshot) => MetadataState::decode_snapshot(&snapshot.payload).map_err(|e| {
            anyhow::anyhow!("metadata snapshot {} is unreadable: {e}", snapshot.sequence)
        })?,
        None => MetadataState::new(),
    };
    let mut commit = 0u64;
    for record in &recovery.records {
        let op = MetadataOp::decode(&record.payload).map_err(|e| {
            anyhow::anyhow!(
                "metadata journal entry {} cannot be decoded: {e}",
                record.sequence
            )
        })?;
        state.apply(&op).map_err(|e| {
            anyhow::anyhow!(
                "metadata journal entry {} does not apply: {e}",
                record.sequence
            )
        })?;
        commit += 1;
    }
    info!(
        operations = commit,
        snapshot = recovery.snapshot.is_some(),
        "metadata recovered"
    );
    if state.users().next().is_none() {
        create_root(&mut state, &journal, root).await?;
        commit += 1;
    }
    Ok(Recovered { state, commit })
}

async fn create_root(
    state: &mut MetadataState,
    journal: &Journal<RealStorage>,
    root: &RootCredentials,
) -> anyhow::Result<()> {
    let password_hash = password::hash_password(&root.password)
        .map_err(|e| anyhow::anyhow!("cannot hash the root password: {e}"))?;
    let op = MetadataOp {
        timestamp_us: now_us(),
        actor: UserId(0),
        kind: OpKind::CreateUser {
            username: root.username.clone(),
            password_hash,
            status: UserStatus::Active,
            permissions: Some(Permissions::root()),
        },
    };
    state
        .apply(&op)
        .map_err(|e| anyhow::anyhow!("cannot create the root user: {e}"))?;
    let mut bytes = Vec::new();
    op.encode(&mut bytes);
    journal
        .append(&bytes)
        .map_err(|e| anyhow::anyhow!("cannot journal the root user: {e}"))?;
    journal
        .sync()
        .await
        .map_err(|e| anyhow::anyhow!("cannot sync the metadata journal: {e}"))?;
    if root.generated {
        warn!(
            "created the root user '{}' with the generated password '{}'; it is shown only this once",
            root.username, root.password
        );
    } else {
        info!(username = %root.username, "created the root user");
    }
    Ok(())
}

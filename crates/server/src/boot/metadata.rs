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
    /// The journal's last op: every op is numbered by its journal sequence,
    /// so numbering continues across restarts and snapshots.
    pub commit: u64,
    /// The newest timestamp an op carried (timestamps never go back).
    pub last_timestamp_us: u64,
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
    let mut last_timestamp_us = 0u64;
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
        last_timestamp_us = last_timestamp_us.max(op.timestamp_us);
    }
    info!(
        operations = recovery.records.len(),
        head = journal.last_sequence(),
        snapshot = recovery.snapshot.is_some(),
        "metadata recovered"
    );
    let mut boot = BootOps {
        state: &mut state,
        journal: &journal,
        last_timestamp_us,
    };
    boot.end_sessions().await?;
    if boot.state.users().next().is_none() {
        create_root(&mut boot, root).await?;
    }
    let last_timestamp_us = boot.last_timestamp_us;
    Ok(Recovered {
        state,
        commit: journal.last_sequence(),
        last_timestamp_us,
    })
}

/// Operations boot itself commits before any shard runs: journaled and
/// fsynced (`sync`) like any other, so a later replay reaches the same
/// state.
struct BootOps<'a> {
    state: &'a mut MetadataState,
    journal: &'a Journal<RealStorage>,
    last_timestamp_us: u64,
}

impl BootOps<'_> {
    fn commit(&mut self, kind: OpKind, what: &str) -> anyhow::Result<()> {
        let timestamp_us = now_us().max(self.last_timestamp_us + 1);
        let op = MetadataOp {
            timestamp_us,
            actor: UserId(0),
            kind,
        };
        self.state
            .apply(&op)
            .map_err(|e| anyhow::anyhow!("cannot {what}: {e}"))?;
        let mut bytes = Vec::new();
        op.encode(&mut bytes);
        self.journal
            .append(&bytes)
            .map_err(|e| anyhow::anyhow!("cannot journal ({what}): {e}"))?;
        self.last_timestamp_us = timestamp_us;
        Ok(())
    }

    /// Makes every op committed so far durable (one fsync for them all).
    async fn sync(&self) -> anyhow::Result<()> {
        self.journal
            .sync()
            .await
            .map_err(|e| anyhow::anyhow!("cannot sync the metadata journal: {e}"))
    }

    /// A restart ends every session: the connections that held them are
    /// gone. Each ends with a journaled Logout, as a lease expiry would.
    async fn end_sessions(&mut self) -> anyhow::Result<()> {
        let clients: Vec<_> = self.state.clients().map(|c| c.id).collect();
        if clients.is_empty() {
            return Ok(());
        }
        for client in &clients {
            let kind = OpKind::UnregisterClient { client: *client };
            self.commit(kind, "end a session left by the last run")?;
        }
        self.sync().await?;
        info!(
            sessions = clients.len(),
            "ended the sessions of the previous run"
        );
        Ok(())
    }
}

async fn create_root(boot: &mut BootOps<'_>, root: &RootCredentials) -> anyhow::Result<()> {
    let password_hash = password::hash_password(&root.password)
        .map_err(|e| anyhow::anyhow!("cannot hash the root password: {e}"))?;
    let kind = OpKind::CreateUser {
        username: root.username.clone(),
        password_hash,
        status: UserStatus::Active,
        permissions: Some(Permissions::root()),
    };
    boot.commit(kind, "create the root user")?;
    boot.sync().await?;
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

//! Metadata recovery at boot: replay `metadata/journal.wal` (after the
//! snapshot, when there is one) into a fresh state machine, end the
//! sessions the last run left open, and create the root user when the user
//! table is empty (both as ops committed through the metadata group).
//!
//! Runs on the main thread in a short-lived runtime before any shard starts;
//! shard 0 then reopens the journal to append. Every journaled operation
//! applied cleanly when it was committed, so a replay rejection means the
//! journal and this build disagree: boot stops rather than serve a state
//! that differs from what clients were told.

use std::path::Path;

use anyhow::Context;
use consensus::replica::PIPELINE_DEPTH_DEFAULT;
use engine::metadata::permissions::Permissions;
use engine::metadata::user::UserStatus;
use engine::metadata::{MetadataOp, MetadataState, OpKind, UserId, password};
use engine::metadata_group::{MetadataGroup, Prepared, replay};
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

impl Recovered {
    /// No metadata yet (a cluster node: its replica applies the group's
    /// ops as they commit).
    pub fn empty() -> Recovered {
        Recovered {
            state: MetadataState::new(),
            commit: 0,
            last_timestamp_us: 0,
        }
    }
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
    let replayed = replay(&recovery).map_err(anyhow::Error::new)?;
    info!(
        operations = recovery.records.len(),
        head = replayed.head.0,
        snapshot = recovery.snapshot.is_some(),
        "metadata recovered"
    );
    let group = MetadataGroup::new(
        journal,
        &replayed.state,
        replayed.head,
        replayed.last_timestamp_us,
    );
    let mut boot = BootOps {
        group: &group,
        state: replayed.state,
        pending: Vec::new(),
    };
    boot.end_sessions().await?;
    if boot.state.users().next().is_none() {
        create_root(&mut boot, root).await?;
    }
    Ok(Recovered {
        state: boot.state,
        commit: group.commit_max().0,
        last_timestamp_us: group.last_timestamp_us(),
    })
}

/// Operations boot itself commits before any shard runs, through the same
/// metadata group as every other (journaled and fsynced before they are
/// applied), so a later replay reaches the same state.
struct BootOps<'a> {
    group: &'a MetadataGroup<RealStorage>,
    state: MetadataState,
    pending: Vec<Prepared>,
}

impl BootOps<'_> {
    async fn prepare(&mut self, kind: OpKind, what: &str) -> anyhow::Result<()> {
        if self.group.pipeline_len() >= PIPELINE_DEPTH_DEFAULT as u64 {
            self.commit().await?;
        }
        let op = MetadataOp {
            timestamp_us: now_us(),
            actor: UserId(0),
            kind,
        };
        let prepared = self
            .group
            .prepare(op)
            .map_err(|e| anyhow::anyhow!("cannot journal ({what}): {e}"))?
            .map_err(|e| anyhow::anyhow!("cannot {what}: {e}"))?;
        self.pending.push(prepared);
        Ok(())
    }

    /// Makes every prepared op durable (one fsync), then applies them.
    async fn commit(&mut self) -> anyhow::Result<()> {
        self.group
            .commit()
            .await
            .map_err(|e| anyhow::anyhow!("cannot sync the metadata journal: {e}"))?;
        for prepared in self.pending.drain(..) {
            let outcome = self
                .state
                .apply(&prepared.op)
                .expect("a committed op applies as it was validated");
            assert_eq!(outcome, prepared.outcome, "apply is deterministic");
            self.group.applied(prepared.number);
        }
        Ok(())
    }

    /// A restart ends every session: the connections that held them are
    /// gone. Each ends with a journaled Logout, as a lease expiry would.
    async fn end_sessions(&mut self) -> anyhow::Result<()> {
        let clients: Vec<_> = self.state.clients().map(|c| c.id).collect();
        for client in &clients {
            let kind = OpKind::UnregisterClient { client: *client };
            self.prepare(kind, "end a session left by the last run")
                .await?;
        }
        self.commit().await?;
        if !clients.is_empty() {
            info!(
                sessions = clients.len(),
                "ended the sessions of the previous run"
            );
        }
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
    boot.prepare(kind, "create the root user").await?;
    boot.commit().await?;
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

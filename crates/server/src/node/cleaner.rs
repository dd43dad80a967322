//! The segment cleaner (`data_maintenance.messages`): every interval each
//! shard looks at the partitions it owns whose topic has a finite
//! `message_expiry` or `max_topic_size`, and deletes the oldest sealed
//! segments that are expired or over the partition's share of the size cap,
//! at most [`SEGMENTS_PER_PASS`] per partition per pass and never past the
//! lowest stored consumer offset (storage spec §6.1-6.3).

use std::rc::Rc;
use std::time::Duration;

use engine::metadata::topic::options::{MaxTopicSize, MessageExpiry};
use engine::metadata::{StreamId, TopicId};
use tracing::{error, info};

use super::Node;
use super::effects::addr_of;
use super::process_stats::now_us;

/// Most segments one partition loses in one pass.
pub const SEGMENTS_PER_PASS: usize = 16;

impl Node {
    /// Runs the cleaner until the shard stops.
    pub(super) async fn run_cleaner(self: Rc<Self>, interval: Duration) {
        loop {
            compio::time::sleep(interval).await;
            if self.ctx.is_stopping() {
                return;
            }
            self.clean_once().await;
        }
    }

    /// Shard 0: removes expired personal access tokens every interval
    /// (`personal_access_token.cleaner`), as a committed operation so every
    /// replica removes the same tokens.
    pub(super) async fn run_token_cleaner(self: Rc<Self>, interval: Duration) {
        loop {
            compio::time::sleep(interval).await;
            if self.ctx.is_stopping() {
                return;
            }
            let now = now_us();
            let any_expired = self
                .metadata()
                .users()
                .any(|u| u.tokens().any(|t| t.is_expired(now)));
            if any_expired {
                let kind = engine::metadata::OpKind::DeleteExpiredPersonalAccessTokens;
                let result = self
                    .submit(engine::metadata::MetadataOp {
                        timestamp_us: now,
                        actor: engine::metadata::UserId(0),
                        kind,
                    })
                    .await;
                if let Ok(outcome) = result.outcome {
                    info!(?outcome, "expired personal access tokens deleted");
                }
            }
        }
    }

    /// One pass over the owned partitions.
    pub async fn clean_once(&self) {
        let owned: Vec<u64> = self.partitions.borrow().keys().copied().collect();
        for ns in owned {
            let Some((expiry_us, budget)) = self.retention_of(ns) else {
                continue;
            };
            let Some(partition) = self.partitions.borrow().get(&ns).cloned() else {
                continue;
            };
            let expired =
                expiry_us.map_or(0, |e| partition.log().expired_sealed_segments(now_us(), e));
            let over = budget.map_or(0, |b| partition.log().sealed_segments_over_budget(b));
            let wanted = expired.max(over).min(SEGMENTS_PER_PASS);
            if wanted == 0 {
                continue;
            }
            match partition.delete_segments(wanted as u32).await {
                Ok(deleted) if deleted < wanted => {
                    info!(
                        ns,
                        wanted, deleted, "retention blocked by a committed consumer offset"
                    )
                }
                Ok(deleted) => info!(ns, deleted, "retention deleted sealed segments"),
                Err(e) => error!(ns, "retention failed: {e}"),
            }
        }
    }

    /// The expiry (µs) and per-partition byte budget of a partition's topic,
    /// or `None` when neither is finite.
    fn retention_of(&self, ns: u64) -> Option<(Option<u64>, Option<u64>)> {
        let addr = addr_of(ns);
        let metadata = self.metadata();
        let topic = metadata
            .stream(StreamId(addr.stream))?
            .topic(TopicId(addr.topic))?;
        let expiry = match topic.options.message_expiry {
            MessageExpiry::Never => None,
            MessageExpiry::AfterMicros(us) => Some(us),
        };
        let budget = match topic.options.max_topic_size {
            MaxTopicSize::Unlimited => None,
            MaxTopicSize::Bytes(bytes) => {
                // Each partition keeps at least one sealed segment's worth.
                let share = bytes / u64::from(topic.partitions_count().max(1));
                Some(share.max(topic.options.segment_size_bytes + self.ctx.frame_max_bytes as u64))
            }
        };
        (expiry.is_some() || budget.is_some()).then_some((expiry, budget))
    }
}

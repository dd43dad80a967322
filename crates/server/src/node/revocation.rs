//! Cooperative consumer-group rebalancing, the server's half (storage spec
//! §9 step 3). The state machine marks a partition "pending revocation" when
//! a join moves it away from a member that was served messages it has not
//! committed yet. The server supplies those in-flight partitions at join
//! time, completes a revocation once the group's stored offset reaches what
//! was served, and forces it after `consumer_group.rebalancing_timeout`.

use std::rc::Rc;
use std::time::Duration;

use engine::metadata::{
    ConsumerGroupId, Ident, MetadataOp, OpKind, PartitionId, StreamId, TopicId, UserId,
};
use storage::offsets::ConsumerKind;
use tracing::info;

use super::Node;
use super::partitions::{PartitionAddr, PartitionOp, PartitionReply};
use super::process_stats::now_us;

/// How often shard 0 looks for revocations past the timeout, at most.
const TIMEOUT_CHECK_MAX: Duration = Duration::from_secs(1);

impl Node {
    /// The partitions of a group's topic that were served to the group
    /// beyond its stored offset (asked of each partition's owner).
    pub async fn in_flight_partitions(
        &self,
        stream: &Ident,
        topic: &Ident,
        group: &Ident,
    ) -> Vec<PartitionId> {
        let resolved = {
            let metadata = self.metadata();
            metadata
                .find_group(stream, topic, group)
                .ok()
                .map(|g| g.id)
                .and_then(|gid| {
                    let (s, t) = metadata.resolve_topic(stream, topic).ok()?;
                    let count = metadata.stream(s)?.topic(t)?.partitions_count();
                    Some((s, t, gid, count))
                })
        };
        let Some((s, t, gid, count)) = resolved else {
            return Vec::new();
        };
        let mut in_flight = Vec::new();
        for partition in 0..count {
            let addr = PartitionAddr {
                stream: s.0,
                topic: t.0,
                partition,
            };
            let op = PartitionOp::InFlight {
                consumer: (ConsumerKind::ConsumerGroup, gid.0),
            };
            if let PartitionReply::InFlight(true) = self.partition(addr.ns(), op).await {
                in_flight.push(PartitionId(partition));
            }
        }
        in_flight
    }

    /// Completes the pending revocation of this partition in `group`, if any.
    pub async fn complete_revocation(&self, addr: PartitionAddr, group: u32) {
        let pending = self
            .metadata()
            .stream(StreamId(addr.stream))
            .and_then(|s| s.topic(TopicId(addr.topic)))
            .and_then(|t| t.group(ConsumerGroupId(group)))
            .is_some_and(|g| g.pending_revocation(PartitionId(addr.partition)).is_some());
        if pending {
            self.submit(revocation_op(addr, group)).await;
        }
    }

    /// Shard 0: forces revocations pending longer than the timeout.
    pub(super) async fn run_revocation_timeouts(self: Rc<Self>, timeout: Duration) {
        let period = (timeout / 4).clamp(Duration::from_millis(50), TIMEOUT_CHECK_MAX);
        loop {
            compio::time::sleep(period).await;
            if self.ctx.is_stopping() {
                return;
            }
            let cutoff = now_us().saturating_sub(timeout.as_micros() as u64);
            for (addr, group) in self.revocations_older_than(cutoff) {
                info!(
                    ?addr,
                    group, "forcing a partition handover after the rebalancing timeout"
                );
                self.submit(revocation_op(addr, group)).await;
            }
        }
    }

    fn revocations_older_than(&self, cutoff_us: u64) -> Vec<(PartitionAddr, u32)> {
        let metadata = self.metadata();
        let mut due = Vec::new();
        for stream in metadata.streams() {
            for topic in stream.topics() {
                for group in topic.groups() {
                    for pending in group
                        .pending_revocations()
                        .filter(|p| p.since_us <= cutoff_us)
                    {
                        let addr = PartitionAddr {
                            stream: stream.id.0,
                            topic: topic.id.0,
                            partition: pending.partition.0,
                        };
                        due.push((addr, group.id.0));
                    }
                }
            }
        }
        due
    }
}

fn revocation_op(addr: PartitionAddr, group: u32) -> MetadataOp {
    MetadataOp {
        timestamp_us: now_us(),
        actor: UserId(0),
        kind: OpKind::CompleteRevocation {
            stream: Ident::Id(addr.stream),
            topic: Ident::Id(addr.topic),
            group: Ident::Id(group),
            partition: PartitionId(addr.partition),
        },
    }
}

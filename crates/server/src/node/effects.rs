//! What an applied metadata operation means for the partitions this shard
//! owns: logs to create, delete, purge or trim. Every shard runs this for
//! every committed operation, in commit order, and touches only its own
//! partitions.

use engine::metadata::ApplyOutcome;
use engine::metadata::ops::TopicPurged;
use engine::metadata::topic::options::TopicOptions;
use tracing::error;

use super::Node;
use super::partitions::PartitionAddr;

impl Node {
    pub(crate) async fn on_applied(&self, outcome: &ApplyOutcome) {
        use ApplyOutcome as A;
        match outcome {
            A::TopicCreated {
                stream,
                topic,
                partitions_count,
            } => {
                self.create_partitions(stream.0, topic.0, 0, *partitions_count)
                    .await;
            }
            A::PartitionsCreated {
                stream,
                topic,
                first,
                count,
            } => {
                self.create_partitions(stream.0, topic.0, first.0, *count)
                    .await;
            }
            A::PartitionsDeleted {
                stream,
                topic,
                first,
                count,
            } => {
                let (s, t, first) = (stream.0, topic.0, first.0);
                self.delete_partitions_where(|a| {
                    a.stream == s
                        && a.topic == t
                        && a.partition >= first
                        && a.partition < first + count
                })
                .await;
            }
            A::TopicDeleted { stream, topic } => {
                let (s, t) = (stream.0, topic.0);
                self.delete_partitions_where(|a| a.stream == s && a.topic == t)
                    .await;
                self.remove_empty_dir(
                    self.ctx
                        .data_path
                        .join("streams")
                        .join(s.to_string())
                        .join("topics")
                        .join(t.to_string()),
                );
            }
            A::StreamDeleted { stream } => {
                let s = stream.0;
                self.delete_partitions_where(|a| a.stream == s).await;
                self.remove_empty_dir(self.ctx.data_path.join("streams").join(s.to_string()));
            }
            A::TopicPurged(p) => self.purge_topic(p).await,
            A::StreamPurged { topics, .. } => {
                for p in topics {
                    self.purge_topic(p).await;
                }
            }
            A::SegmentsDeleted {
                stream,
                topic,
                partition,
                count,
            } => {
                let addr = PartitionAddr {
                    stream: stream.0,
                    topic: topic.0,
                    partition: partition.0,
                };
                let owned = self.partitions.borrow().get(&addr.ns()).cloned();
                if let Some(p) = owned
                    && let Err(e) = p.delete_segments(*count).await
                {
                    error!(?addr, "deleting segments failed: {e}");
                }
            }
            // A logout or disconnect unbinds its connection before the
            // op applies, so only a session ended for a lost node (this
            // one, back) still has connections here.
            A::ClientUnregistered { client, .. } => {
                self.close_connections_of(client.0);
            }
            _ => {}
        }
    }

    /// A topic's options and how many purges it has had.
    fn topic_options(&self, stream: u32, topic: u32) -> Option<(TopicOptions, u64)> {
        let metadata = self.metadata();
        let topic = metadata
            .stream(engine::metadata::StreamId(stream))?
            .topic(engine::metadata::TopicId(topic))?;
        Some((topic.options, topic.purge_generation))
    }

    async fn create_partitions(&self, stream: u32, topic: u32, first: u32, count: u32) {
        let Some((options, purge_generation)) = self.topic_options(stream, topic) else {
            return;
        };
        for partition in first..first + count {
            let addr = PartitionAddr {
                stream,
                topic,
                partition,
            };
            if !self.owns(addr.ns()) {
                continue;
            }
            // A cluster node replaying the create after a restart holds
            // this incarnation already: it opens it. So does a roster of
            // one that initialized it and lost its directory: opening
            // fences it (no peer can refill it).
            let lone = self.ctx.cluster.replicas == 1;
            if self.holds_incarnation(addr).await
                || (lone && (self.lost_history(addr).await || self.retired(addr).await))
            {
                if let Err(e) = self.open_partition(addr, &options, purge_generation).await {
                    error!(?addr, "cannot open the partition log: {e}");
                }
                continue;
            }
            // A new partition starts empty: a directory left by a deletion
            // that a crash interrupted must not be adopted.
            let dir = self.partition_dir(addr);
            if dir.exists()
                && let Err(e) = std::fs::remove_dir_all(&dir)
            {
                error!(?addr, "cannot remove a stale partition directory: {e}");
                continue;
            }
            if let Err(e) = self
                .create_partition(addr, &options, purge_generation)
                .await
            {
                error!(?addr, "cannot create the partition log: {e}");
            }
        }
    }

    /// The owned partitions matching `filter`, with their addresses.
    fn owned_where(&self, filter: impl Fn(&PartitionAddr) -> bool) -> Vec<u64> {
        self.partitions
            .borrow()
            .keys()
            .copied()
            .filter(|&ns| filter(&addr_of(ns)))
            .collect()
    }

    async fn delete_partitions_where(&self, filter: impl Fn(&PartitionAddr) -> bool) {
        let fenced: Vec<u64> = self
            .fenced
            .borrow()
            .keys()
            .copied()
            .filter(|&ns| filter(&addr_of(ns)))
            .collect();
        for ns in fenced {
            let removed = self.fenced.borrow_mut().remove(&ns);
            if let Some((Some(partition), _)) = removed
                && let Err(e) = partition.log().delete().await
            {
                error!(ns, "cannot delete a refused partition's directory: {e}");
            }
            self.forget_initialization(addr_of(ns));
        }
        for ns in self.owned_where(filter) {
            self.forget_initialization(addr_of(ns));
            let removed = self.partitions.borrow_mut().remove(&ns);
            self.ctx.partition_stats.remove(ns);
            if let Some(partition) = removed
                && let Err(e) = partition.log().delete().await
            {
                error!(ns, "cannot delete the partition directory: {e}");
            }
        }
    }

    /// Purges the owned partitions of a topic and records the generation.
    async fn purge_topic(&self, purged: &TopicPurged) {
        let (s, t) = (purged.stream.0, purged.topic.0);
        for ns in self.owned_where(|a| a.stream == s && a.topic == t) {
            self.purge_partition(ns, purged.purge_generation).await;
        }
    }

    async fn purge_partition(&self, ns: u64, generation: u64) {
        let partition = self.partitions.borrow().get(&ns).cloned();
        let Some(partition) = partition else { return };
        if let Err(e) = partition.purge(generation).await {
            // The generation stays unrecorded: the next start purges again.
            error!(ns, "cannot purge the partition: {e}");
        }
    }

    /// Removes a directory tree left empty by partition deletions (shard 0;
    /// other shards' partitions may still be going, so only empty dirs go).
    fn remove_empty_dir(&self, dir: std::path::PathBuf) {
        if self.shard_id != 0 {
            return;
        }
        fn prune(dir: &std::path::Path) -> bool {
            let Ok(entries) = std::fs::read_dir(dir) else {
                return false;
            };
            let mut empty = true;
            for entry in entries.flatten() {
                let path = entry.path();
                if !(path.is_dir() && prune(&path)) {
                    empty = false;
                }
            }
            empty && std::fs::remove_dir(dir).is_ok()
        }
        prune(&dir);
    }
}

pub fn addr_of(ns: u64) -> PartitionAddr {
    PartitionAddr {
        stream: (ns >> 32) as u32 & 0xF_FFFF,
        topic: (ns >> 20) as u32 & 0xFFF,
        partition: ns as u32 & 0xF_FFFF,
    }
}

//! Topic, partition and segment operations.
//!
//! Topics get the lowest unused ID in their stream. Partitions are always
//! `0..N`: creating appends the next IDs, deleting removes the highest, and
//! either change rebalances every consumer group of the topic. Purges and
//! segment deletions are recorded here and carried out by the storage layer.

use super::{Ctx, MetadataState};
use crate::metadata::errors::MetadataError;
use crate::metadata::ids::{
    Ident, PARTITION_ID_LIMIT, PartitionId, StreamId, TOPIC_ID_LIMIT, TopicId, lowest_unused,
};
use crate::metadata::names::validate_topic_name;
use crate::metadata::ops::{ApplyOutcome, OpKind, TopicPurged};
use crate::metadata::permissions::Action;
use crate::metadata::topic::option_value::OptionEntry;
use crate::metadata::topic::options::TopicOptions;
use crate::metadata::topic::{Partition, Topic, TopicHeader};

/// Most partitions one create/delete-partitions request may name.
pub const PARTITIONS_PER_REQUEST_MAX: u32 = 1000;
/// Fewest partitions a create/delete-partitions request may name (a topic
/// may be created with zero).
pub const PARTITIONS_PER_REQUEST_MIN: u32 = 1;

const _: () = assert!(PARTITIONS_PER_REQUEST_MAX < PARTITION_ID_LIMIT);

type TopicRef<'a> = (&'a Ident, &'a Ident);

impl MetadataState {
    pub(super) fn create_topic(
        &mut self,
        ctx: Ctx,
        op: &OpKind,
    ) -> Result<ApplyOutcome, MetadataError> {
        let OpKind::CreateTopic {
            stream,
            name,
            partitions_count,
            options,
        } = op
        else {
            unreachable!("dispatched by kind");
        };
        let stream_id = self.resolve_stream(stream)?;
        self.check(ctx, Action::CreateTopic { stream: stream_id })?;
        validate_topic_name(name)?;
        let record = self
            .streams
            .get(&stream_id)
            .expect("resolved stream exists");
        if record.topics.contains_name(name) {
            return Err(MetadataError::TopicNameExists {
                stream: stream_id,
                name: name.clone(),
            });
        }
        check_partitions_count(*partitions_count, 0)?;
        let topic_id = lowest_unused(record.topics.ids().map(|id| id.0), TOPIC_ID_LIMIT)
            .map(TopicId)
            .ok_or(MetadataError::TooManyTopics {
                stream: stream_id,
                limit: TOPIC_ID_LIMIT,
            })?;
        let resolved = TopicOptions::resolve_create(options, *partitions_count)?;

        let header = TopicHeader {
            id: topic_id,
            name: name.clone(),
            created_at_us: ctx.now_us,
            options: resolved,
            client_options: options.clone(),
            next_group_id: 0,
            purge_generation: 0,
        };
        let partitions = new_partitions(0, *partitions_count, ctx.now_us);
        let record = self
            .streams
            .get_mut(&stream_id)
            .expect("resolved stream exists");
        record
            .topics
            .insert(topic_id, Topic::new(header, partitions));
        Ok(ApplyOutcome::TopicCreated {
            stream: stream_id,
            topic: topic_id,
            partitions_count: *partitions_count,
        })
    }

    pub(super) fn update_topic(
        &mut self,
        ctx: Ctx,
        (stream, topic): TopicRef<'_>,
        name: &str,
        options: &[OptionEntry],
    ) -> Result<ApplyOutcome, MetadataError> {
        let (stream_id, topic_id) = self.managed_topic(ctx, (stream, topic))?;
        validate_topic_name(name)?;
        let record = self
            .streams
            .get(&stream_id)
            .expect("resolved stream exists");
        if record
            .topics
            .id_of(name)
            .is_some_and(|owner| owner != topic_id)
        {
            return Err(MetadataError::TopicNameExists {
                stream: stream_id,
                name: name.to_owned(),
            });
        }
        let current = self.topic_ref(stream_id, topic_id);
        let resolved = current
            .options
            .resolve_update(options, current.partitions_count())?;

        let record = self
            .streams
            .get_mut(&stream_id)
            .expect("resolved stream exists");
        record.topics.rename(&topic_id, name.to_owned());
        let topic = self.topic_mut(stream_id, topic_id);
        topic.options = resolved;
        topic.merge_client_options(options);
        Ok(ApplyOutcome::TopicUpdated {
            stream: stream_id,
            topic: topic_id,
        })
    }

    /// Resolves a topic the actor must be allowed to manage (update,
    /// delete, purge, partitions, segments).
    fn managed_topic(
        &self,
        ctx: Ctx,
        (stream, topic): TopicRef<'_>,
    ) -> Result<(StreamId, TopicId), MetadataError> {
        let (stream_id, topic_id) = self.resolve_topic(stream, topic)?;
        self.check(
            ctx,
            Action::ManageTopic {
                stream: stream_id,
                topic: topic_id,
            },
        )?;
        Ok((stream_id, topic_id))
    }

    pub(super) fn delete_topic(
        &mut self,
        ctx: Ctx,
        (stream, topic): TopicRef<'_>,
    ) -> Result<ApplyOutcome, MetadataError> {
        let (stream_id, topic_id) = self.managed_topic(ctx, (stream, topic))?;
        let record = self
            .streams
            .get_mut(&stream_id)
            .expect("resolved stream exists");
        let removed = record.topics.remove(&topic_id);
        assert!(removed.is_some(), "resolved topic is removed");
        Ok(ApplyOutcome::TopicDeleted {
            stream: stream_id,
            topic: topic_id,
        })
    }

    pub(super) fn purge_topic(
        &mut self,
        ctx: Ctx,
        (stream, topic): TopicRef<'_>,
    ) -> Result<ApplyOutcome, MetadataError> {
        let (stream_id, topic_id) = self.managed_topic(ctx, (stream, topic))?;
        let record = self.topic_mut(stream_id, topic_id);
        record.purge_generation += 1;
        Ok(ApplyOutcome::TopicPurged(TopicPurged {
            stream: stream_id,
            topic: topic_id,
            purge_generation: record.purge_generation,
        }))
    }

    pub(super) fn create_partitions(
        &mut self,
        ctx: Ctx,
        (stream, topic): TopicRef<'_>,
        count: u32,
    ) -> Result<ApplyOutcome, MetadataError> {
        let (stream_id, topic_id) = self.managed_topic(ctx, (stream, topic))?;
        check_partitions_count(count, PARTITIONS_PER_REQUEST_MIN)?;
        let existing = self.topic_ref(stream_id, topic_id).partitions_count();
        let new_count = existing
            .checked_add(count)
            .filter(|total| *total <= PARTITION_ID_LIMIT)
            .ok_or(MetadataError::PartitionIdSpaceExhausted {
                existing,
                requested: count,
                limit: PARTITION_ID_LIMIT,
            })?;

        let record = self.topic_mut(stream_id, topic_id);
        record
            .partitions
            .extend(new_partitions(existing, count, ctx.now_us));
        rebalance_groups(record, new_count);
        Ok(ApplyOutcome::PartitionsCreated {
            stream: stream_id,
            topic: topic_id,
            first: PartitionId(existing),
            count,
        })
    }

    pub(super) fn delete_partitions(
        &mut self,
        ctx: Ctx,
        (stream, topic): TopicRef<'_>,
        count: u32,
    ) -> Result<ApplyOutcome, MetadataError> {
        let (stream_id, topic_id) = self.managed_topic(ctx, (stream, topic))?;
        check_partitions_count(count, PARTITIONS_PER_REQUEST_MIN)?;
        let existing = self.topic_ref(stream_id, topic_id).partitions_count();
        let remaining =
            existing
                .checked_sub(count)
                .ok_or(MetadataError::InvalidPartitionsCount {
                    requested: count,
                    existing,
                })?;

        let record = self.topic_mut(stream_id, topic_id);
        record.partitions.truncate(remaining as usize);
        rebalance_groups(record, remaining);
        Ok(ApplyOutcome::PartitionsDeleted {
            stream: stream_id,
            topic: topic_id,
            first: PartitionId(remaining),
            count,
        })
    }

    pub(super) fn delete_segments(
        &mut self,
        ctx: Ctx,
        (stream, topic): TopicRef<'_>,
        partition: PartitionId,
        count: u32,
    ) -> Result<ApplyOutcome, MetadataError> {
        let (stream_id, topic_id) = self.managed_topic(ctx, (stream, topic))?;
        if self
            .topic_ref(stream_id, topic_id)
            .partition(partition)
            .is_none()
        {
            return Err(MetadataError::PartitionNotFound {
                stream: stream_id,
                topic: topic_id,
                partition,
            });
        }
        Ok(ApplyOutcome::SegmentsDeleted {
            stream: stream_id,
            topic: topic_id,
            partition,
            count,
        })
    }
}

fn check_partitions_count(count: u32, min: u32) -> Result<(), MetadataError> {
    if (min..=PARTITIONS_PER_REQUEST_MAX).contains(&count) {
        Ok(())
    } else {
        Err(MetadataError::TooManyPartitions {
            count,
            min,
            max: PARTITIONS_PER_REQUEST_MAX,
        })
    }
}

fn new_partitions(first: u32, count: u32, now_us: u64) -> Vec<Partition> {
    (first..first + count)
        .map(|id| Partition {
            id: PartitionId(id),
            created_at_us: now_us,
        })
        .collect()
}

fn rebalance_groups(topic: &mut Topic, partitions_count: u32) {
    assert_eq!(topic.partitions_count(), partitions_count);
    for group in topic.groups.values_mut() {
        group.partitions_changed(partitions_count);
    }
}

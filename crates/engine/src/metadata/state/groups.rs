//! Consumer-group operations. Group IDs come from a per-topic counter and
//! are never reused, so a new group can never inherit a deleted group's
//! offsets. Members are registered client sessions.

use super::{Ctx, MetadataState};
use crate::metadata::errors::MetadataError;
use crate::metadata::groups::ConsumerGroup;
use crate::metadata::ids::{ClientId, ConsumerGroupId, Ident, PartitionId, StreamId, TopicId};
use crate::metadata::names::validate_group_name;
use crate::metadata::ops::{ApplyOutcome, OpKind};
use crate::metadata::permissions::Action;

type TopicRef<'a> = (&'a Ident, &'a Ident);

impl MetadataState {
    pub(super) fn create_group(
        &mut self,
        ctx: Ctx,
        (stream, topic): TopicRef<'_>,
        name: &str,
    ) -> Result<ApplyOutcome, MetadataError> {
        let (stream_id, topic_id) = self.resolve_topic(stream, topic)?;
        self.check(
            ctx,
            Action::ReadTopic {
                stream: stream_id,
                topic: topic_id,
            },
        )?;
        validate_group_name(name)?;
        let record = self.topic_ref(stream_id, topic_id);
        if record.groups.contains_name(name) {
            return Err(MetadataError::ConsumerGroupNameExists {
                name: name.to_owned(),
            });
        }
        let id = ConsumerGroupId(record.next_group_id);
        let next = record
            .next_group_id
            .checked_add(1)
            .ok_or(MetadataError::ConsumerGroupIdsExhausted { topic: topic_id })?;

        let record = self.topic_mut(stream_id, topic_id);
        record
            .groups
            .insert(id, ConsumerGroup::new(id, name.to_owned(), ctx.now_us));
        record.next_group_id = next;
        Ok(ApplyOutcome::GroupCreated {
            stream: stream_id,
            topic: topic_id,
            group: id,
        })
    }

    pub(super) fn delete_group(
        &mut self,
        ctx: Ctx,
        (stream, topic): TopicRef<'_>,
        group: &Ident,
    ) -> Result<ApplyOutcome, MetadataError> {
        let (stream_id, topic_id, group_id) = self.readable_group(ctx, (stream, topic), group)?;
        let removed = self.topic_mut(stream_id, topic_id).groups.remove(&group_id);
        assert!(removed.is_some(), "resolved group is removed");
        Ok(ApplyOutcome::GroupDeleted {
            stream: stream_id,
            topic: topic_id,
            group: group_id,
        })
    }

    pub(super) fn join_group(
        &mut self,
        ctx: Ctx,
        op: &OpKind,
    ) -> Result<ApplyOutcome, MetadataError> {
        let OpKind::JoinConsumerGroup {
            stream,
            topic,
            group,
            client,
            in_flight,
        } = op
        else {
            unreachable!("dispatched by kind");
        };
        let (stream_id, topic_id, group_id) = self.readable_group(ctx, (stream, topic), group)?;
        if !self.clients.contains_key(client) {
            return Err(MetadataError::ClientNotFound { client: *client });
        }
        let (group_record, partitions_count) = self.group_mut(stream_id, topic_id, group_id);
        let changed = group_record.join(*client, ctx.now_us, partitions_count, in_flight);
        Ok(ApplyOutcome::GroupJoined {
            stream: stream_id,
            topic: topic_id,
            group: group_id,
            changed,
        })
    }

    /// Resolves a group of a topic the actor may read (every group
    /// operation needs that permission).
    fn readable_group(
        &self,
        ctx: Ctx,
        (stream, topic): TopicRef<'_>,
        group: &Ident,
    ) -> Result<(StreamId, TopicId, ConsumerGroupId), MetadataError> {
        let (stream_id, topic_id) = self.resolve_topic(stream, topic)?;
        let group_id = self.resolve_group((stream_id, topic_id), group)?;
        self.check(
            ctx,
            Action::ReadTopic {
                stream: stream_id,
                topic: topic_id,
            },
        )?;
        Ok((stream_id, topic_id, group_id))
    }

    /// A resolved group, with its topic's partition count (rebalances need it).
    fn group_mut(
        &mut self,
        stream: StreamId,
        topic: TopicId,
        group: ConsumerGroupId,
    ) -> (&mut ConsumerGroup, u32) {
        let record = self.topic_mut(stream, topic);
        let partitions_count = record.partitions_count();
        let group = record
            .groups
            .get_mut(&group)
            .expect("resolved group exists");
        (group, partitions_count)
    }

    pub(super) fn complete_revocation(
        &mut self,
        ctx: Ctx,
        (stream, topic): TopicRef<'_>,
        group: &Ident,
        partition: PartitionId,
    ) -> Result<ApplyOutcome, MetadataError> {
        let (stream_id, topic_id, group_id) = self.readable_group(ctx, (stream, topic), group)?;
        let (group_record, partitions_count) = self.group_mut(stream_id, topic_id, group_id);
        let changed = group_record.complete_revocation(partition, partitions_count);
        Ok(ApplyOutcome::RevocationCompleted {
            stream: stream_id,
            topic: topic_id,
            group: group_id,
            partition,
            changed,
        })
    }

    pub(super) fn leave_group(
        &mut self,
        ctx: Ctx,
        (stream, topic): TopicRef<'_>,
        group: &Ident,
        client: ClientId,
    ) -> Result<ApplyOutcome, MetadataError> {
        let (stream_id, topic_id, group_id) = self.readable_group(ctx, (stream, topic), group)?;
        let (group_record, partitions_count) = self.group_mut(stream_id, topic_id, group_id);
        if !group_record.leave(client, partitions_count) {
            return Err(MetadataError::ConsumerGroupMemberNotFound {
                group: group_id,
                client,
            });
        }
        Ok(ApplyOutcome::GroupLeft {
            stream: stream_id,
            topic: topic_id,
            group: group_id,
        })
    }

    /// Removes `client` from every group it belongs to; returns how many.
    pub(super) fn leave_all_groups(&mut self, client: ClientId) -> u32 {
        let mut left = 0;
        for stream in self.streams.values_mut() {
            for topic in stream.topics.values_mut() {
                let partitions_count = topic.partitions_count();
                for group in topic.groups.values_mut() {
                    if group.leave(client, partitions_count) {
                        left += 1;
                    }
                }
            }
        }
        left
    }
}

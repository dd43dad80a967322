//! Stream operations: create (lowest unused ID), rename, delete (cascades to
//! topics, partitions and groups), purge (recorded per topic; the storage
//! layer resets the partitions).

use super::{Ctx, MetadataState};
use crate::metadata::errors::MetadataError;
use crate::metadata::ids::{Ident, STREAM_ID_LIMIT, StreamId, lowest_unused};
use crate::metadata::names::validate_stream_name;
use crate::metadata::ops::{ApplyOutcome, TopicPurged};
use crate::metadata::permissions::Action;
use crate::metadata::stream::Stream;

impl MetadataState {
    pub(super) fn create_stream(
        &mut self,
        ctx: Ctx,
        name: &str,
    ) -> Result<ApplyOutcome, MetadataError> {
        self.check(ctx, Action::CreateStream)?;
        validate_stream_name(name)?;
        if self.streams.contains_name(name) {
            return Err(MetadataError::StreamNameExists {
                name: name.to_owned(),
            });
        }
        let id = lowest_unused(self.streams.ids().map(|id| id.0), STREAM_ID_LIMIT)
            .map(StreamId)
            .ok_or(MetadataError::TooManyStreams {
                limit: STREAM_ID_LIMIT,
            })?;
        self.streams
            .insert(id, Stream::new(id, name.to_owned(), ctx.now_us));
        Ok(ApplyOutcome::StreamCreated { stream: id })
    }

    pub(super) fn update_stream(
        &mut self,
        ctx: Ctx,
        stream: &Ident,
        name: &str,
    ) -> Result<ApplyOutcome, MetadataError> {
        let id = self.resolve_stream(stream)?;
        self.check(ctx, Action::ManageStream { stream: id })?;
        validate_stream_name(name)?;
        if self.streams.id_of(name).is_some_and(|owner| owner != id) {
            return Err(MetadataError::StreamNameExists {
                name: name.to_owned(),
            });
        }
        self.streams.rename(&id, name.to_owned());
        Ok(ApplyOutcome::StreamUpdated { stream: id })
    }

    pub(super) fn delete_stream(
        &mut self,
        ctx: Ctx,
        stream: &Ident,
    ) -> Result<ApplyOutcome, MetadataError> {
        let id = self.resolve_stream(stream)?;
        self.check(ctx, Action::ManageStream { stream: id })?;
        let removed = self.streams.remove(&id);
        assert!(removed.is_some(), "resolved stream is removed");
        Ok(ApplyOutcome::StreamDeleted { stream: id })
    }

    pub(super) fn purge_stream(
        &mut self,
        ctx: Ctx,
        stream: &Ident,
    ) -> Result<ApplyOutcome, MetadataError> {
        let id = self.resolve_stream(stream)?;
        self.check(ctx, Action::ManageStream { stream: id })?;
        let record = self.streams.get_mut(&id).expect("resolved stream exists");
        let topics = record
            .topics
            .values_mut()
            .map(|topic| {
                topic.purge_generation += 1;
                TopicPurged {
                    stream: id,
                    topic: topic.id,
                    purge_generation: topic.purge_generation,
                }
            })
            .collect();
        Ok(ApplyOutcome::StreamPurged { stream: id, topics })
    }
}

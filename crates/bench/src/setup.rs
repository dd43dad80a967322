//! Creating the streams, topics and consumer groups a plan needs, and
//! removing them afterwards.
//!
//! [`prepare`] records each stream in the [`Topology`] the moment it exists,
//! so that a failure half-way through setup (or a Ctrl-C) still leaves an
//! exact list for [`cleanup`]. Only streams this run created are deleted,
//! and none when `--reuse-streams` is given; a stream that already exists
//! without `--reuse-streams` is an error, never silently taken over.

use anyhow::{Context, bail};
use iggy::prelude::{
    ConsumerGroupClient, Durability, Identifier, IggyClient, IggyError, StreamClient, TopicClient,
    TopicCreateOptions,
};

use crate::plan::{CONSUMER_GROUP_NAME, Plan, StreamPlan, TOPIC_NAME};

/// A stream the benchmark uses, addressed by numeric ids once known.
#[derive(Debug, Clone, PartialEq)]
pub struct StreamHandle {
    pub name: String,
    pub stream_id: Identifier,
    pub topic_id: Identifier,
    pub group_id: Option<Identifier>,
    pub created_by_us: bool,
}

#[derive(Debug, Default)]
pub struct Topology {
    pub streams: Vec<StreamHandle>,
}

/// Creates (or, with `--reuse-streams`, finds) every stream of the plan.
pub async fn prepare(
    client: &IggyClient,
    plan: &Plan,
    topology: &mut Topology,
) -> anyhow::Result<()> {
    for stream in &plan.streams {
        let index = claim_stream(client, plan, stream, topology).await?;
        let handle = &mut topology.streams[index];
        handle.topic_id = ensure_topic(client, plan, stream, handle).await?;
        if plan.consumer_group {
            handle.group_id = Some(ensure_group(client, handle).await?);
        }
    }
    Ok(())
}

/// Finds or creates the stream and records it; returns its topology index.
async fn claim_stream(
    client: &IggyClient,
    plan: &Plan,
    stream: &StreamPlan,
    topology: &mut Topology,
) -> anyhow::Result<usize> {
    let by_name = Identifier::named(&stream.name)?;
    let existing = absent_as_none(client.get_stream(&by_name).await)
        .with_context(|| format!("cannot look up stream `{}`", stream.name))?;
    let (id, created_by_us) = match existing {
        Some(_) if !plan.reuse_streams => bail!(
            "stream `{}` already exists (left by an earlier run?): delete it, pick another \
             --stream-prefix, or pass --reuse-streams",
            stream.name
        ),
        Some(details) => (details.id, false),
        None => {
            let details = client
                .create_stream(&stream.name)
                .await
                .with_context(|| format!("cannot create stream `{}`", stream.name))?;
            (details.id, true)
        }
    };
    topology.streams.push(StreamHandle {
        name: stream.name.clone(),
        stream_id: Identifier::numeric(id)?,
        topic_id: Identifier::named(TOPIC_NAME)?,
        group_id: None,
        created_by_us,
    });
    Ok(topology.streams.len() - 1)
}

async fn ensure_topic(
    client: &IggyClient,
    plan: &Plan,
    stream: &StreamPlan,
    handle: &StreamHandle,
) -> anyhow::Result<Identifier> {
    let by_name = Identifier::named(TOPIC_NAME)?;
    if !handle.created_by_us
        && let Some(topic) = absent_as_none(client.get_topic(&handle.stream_id, &by_name).await)?
    {
        if topic.partitions_count < stream.partitions {
            bail!(
                "reused topic `{}/{TOPIC_NAME}` has {} partitions, the plan needs {}",
                stream.name,
                topic.partitions_count,
                stream.partitions
            );
        }
        if plan.persisted {
            eprintln!(
                "iggy-bench: note: reused topic `{}/{TOPIC_NAME}` keeps the durability it was \
                 created with; --fsync applies to new topics only",
                stream.name
            );
        }
        return Ok(Identifier::numeric(topic.id)?);
    }
    let options = TopicCreateOptions {
        partitions_count: Some(stream.partitions),
        durability: if plan.persisted {
            Durability::Persisted
        } else {
            Durability::Replicated
        },
        ..TopicCreateOptions::default()
    };
    let topic = client
        .create_topic(&handle.stream_id, TOPIC_NAME, &options)
        .await
        .with_context(|| format!("cannot create topic `{}/{TOPIC_NAME}`", stream.name))?;
    Ok(Identifier::numeric(topic.id)?)
}

async fn ensure_group(client: &IggyClient, handle: &StreamHandle) -> anyhow::Result<Identifier> {
    let by_name = Identifier::named(CONSUMER_GROUP_NAME)?;
    let existing = absent_as_none(
        client
            .get_consumer_group(&handle.stream_id, &handle.topic_id, &by_name)
            .await,
    )?;
    let id = match existing {
        Some(group) => group.id,
        None => {
            client
                .create_consumer_group(&handle.stream_id, &handle.topic_id, CONSUMER_GROUP_NAME)
                .await
                .with_context(|| format!("cannot create a consumer group on `{}`", handle.name))?
                .id
        }
    };
    Ok(Identifier::numeric(id)?)
}

/// A lookup answers "absent" either with `Ok(None)` or with a not-found
/// error, depending on the server and transport; both mean the same here.
fn absent_as_none<T>(lookup: Result<Option<T>, IggyError>) -> Result<Option<T>, IggyError> {
    match lookup {
        Err(
            IggyError::ResourceNotFound(_)
            | IggyError::StreamIdNotFound(_)
            | IggyError::StreamNameNotFound(_)
            | IggyError::TopicIdNotFound(..)
            | IggyError::TopicNameNotFound(..)
            | IggyError::ConsumerGroupIdNotFound(..)
            | IggyError::ConsumerGroupNameNotFound(..),
        ) => Ok(None),
        other => other,
    }
}

/// The streams cleanup must delete: the ones this run created, unless the
/// user asked to keep them with `--reuse-streams`.
pub fn streams_to_delete(topology: &Topology, reuse_streams: bool) -> Vec<&StreamHandle> {
    if reuse_streams {
        return Vec::new();
    }
    topology
        .streams
        .iter()
        .filter(|stream| stream.created_by_us)
        .collect()
}

/// Deletes what [`streams_to_delete`] selects. Tries every stream even when
/// one fails, and reports the failures together.
pub async fn cleanup(
    client: &IggyClient,
    topology: &Topology,
    reuse_streams: bool,
) -> anyhow::Result<()> {
    let mut failures = Vec::new();
    for stream in streams_to_delete(topology, reuse_streams) {
        if let Err(error) = client.delete_stream(&stream.stream_id).await {
            failures.push(format!("{}: {error}", stream.name));
        }
    }
    if !failures.is_empty() {
        bail!("could not delete streams: {}", failures.join("; "));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn handle(name: &str, id: u32, created_by_us: bool) -> StreamHandle {
        StreamHandle {
            name: name.to_string(),
            stream_id: Identifier::numeric(id).expect("numeric ids are valid"),
            topic_id: Identifier::named(TOPIC_NAME).expect("valid name"),
            group_id: None,
            created_by_us,
        }
    }

    fn names(streams: Vec<&StreamHandle>) -> Vec<&str> {
        streams.into_iter().map(|s| s.name.as_str()).collect()
    }

    #[test]
    fn given_not_found_error_when_looking_up_should_read_as_absent() {
        let missing = IggyError::StreamNameNotFound("bench-1".to_string());
        assert_eq!(absent_as_none::<u32>(Err(missing)), Ok(None));
        assert_eq!(absent_as_none(Ok(Some(7))), Ok(Some(7)));
        assert_eq!(
            absent_as_none::<u32>(Err(IggyError::Unauthenticated)),
            Err(IggyError::Unauthenticated)
        );
    }

    #[test]
    fn given_streams_we_created_when_planning_cleanup_should_delete_all_of_them() {
        let topology = Topology {
            streams: vec![handle("bench-1", 1, true), handle("bench-2", 2, true)],
        };
        assert_eq!(
            names(streams_to_delete(&topology, false)),
            vec!["bench-1", "bench-2"]
        );
    }

    #[test]
    fn given_preexisting_stream_when_planning_cleanup_should_leave_it() {
        let topology = Topology {
            streams: vec![handle("bench-1", 1, false), handle("bench-2", 2, true)],
        };
        assert_eq!(names(streams_to_delete(&topology, false)), vec!["bench-2"]);
    }

    #[test]
    fn given_reuse_streams_when_planning_cleanup_should_delete_nothing() {
        let topology = Topology {
            streams: vec![handle("bench-1", 1, true), handle("bench-2", 2, false)],
        };
        assert!(streams_to_delete(&topology, true).is_empty());
    }

    #[test]
    fn given_setup_failed_before_any_stream_when_planning_cleanup_should_delete_nothing() {
        assert!(streams_to_delete(&Topology::default(), false).is_empty());
    }
}

//! `topic`, `partition` and `segment` commands (spec §6.2-6.4).

use super::streams::print_rows;
use crate::args::resources::{DurabilityArg, TopicCreateArgs, TopicUpdateArgs};
use crate::args::{PartitionAction, SegmentAction, TopicAction};
use crate::cmd::Run;
use crate::error::{CliError, Context};
use crate::output::property_table;
use crate::parse::sum_expiry;
use crate::render::{expiry_cell, max_size_cell, max_size_echo, plural, utc};
use iggy::prelude::{
    CompressionAlgorithm, Durability, IggyExpiry, MaxTopicSize, PartitionClient, SegmentClient,
    TopicClient, TopicCreateOptions, TopicUpdateOptions,
};
use serde_json::json;

pub async fn run(action: TopicAction, run: &Run<'_>) -> Result<(), CliError> {
    let (client, out) = (run.client, run.out);
    match action {
        TopicAction::Create(a) => create(a, run).await?,
        TopicAction::Update(a) => update(a, run).await?,
        TopicAction::Delete {
            stream_id: s,
            topic_id: t,
        } => {
            out.executing(&format!("delete topic with ID: {t} in stream with ID: {s}"));
            client
                .delete_topic(&s, &t)
                .await
                .context(|| format!("Problem deleting topic with ID: {t} in stream {s}"))?;
            out.line(format!("Topic with ID: {t} in stream with ID: {s} deleted"));
            out.ok(json!({"stream_id": s.to_string(), "topic_id": t.to_string()}));
        }
        TopicAction::Purge {
            stream_id: s,
            topic_id: t,
        } => {
            out.executing(&format!("purge topic with ID: {t} in stream with ID: {s}"));
            client
                .purge_topic(&s, &t)
                .await
                .context(|| format!("Problem purging topic with ID: {t} in stream {s}"))?;
            out.line(format!("Topic with ID: {t} in stream with ID: {s} purged"));
            out.ok(json!({"stream_id": s.to_string(), "topic_id": t.to_string()}));
        }
        TopicAction::Get {
            stream_id: s,
            topic_id: t,
            options,
        } => {
            out.executing(&format!("get topic with ID: {t} from stream with ID: {s}"));
            let topic = client
                .get_topic(&s, &t)
                .await
                .context(|| format!("Problem getting topic with ID: {t} in stream {s}"))?;
            let Some(tp) = topic else {
                return out.not_found(format!("Topic with ID: {t} in stream {s} was not found"));
            };
            let mut rows = vec![
                ("Topic id", tp.id.to_string()),
                ("Created", utc(tp.created_at)),
                ("Topic name", tp.name.clone()),
                ("Topic size", tp.size.as_human_string()),
                ("Compression", tp.compression_algorithm.to_string()),
                ("Message expiry", expiry_cell(&tp.message_expiry)),
                ("Max topic size", max_size_cell(&tp.max_topic_size)),
                ("Topic message count", tp.messages_count.to_string()),
                ("Partitions count", tp.partitions_count.to_string()),
            ];
            let option_rows: Vec<(String, String)> = if options {
                tp.options
                    .iter()
                    .map(|(key, v)| {
                        let source = if v.explicit { "explicit" } else { "derived" };
                        (
                            format!("Option: {}", key.to_string_value()),
                            format!("{} ({source})", v.value.to_string_value()),
                        )
                    })
                    .collect()
            } else {
                Vec::new()
            };
            rows.extend(option_rows.iter().map(|(k, v)| (k.as_str(), v.clone())));
            out.table(&property_table(rows));
            out.json(&tp);
        }
        TopicAction::List { stream_id: s, mode } => {
            let mode = mode.list_mode;
            out.executing(&format!(
                "list topics from stream with ID: {s} in {mode} mode"
            ));
            let topics = client
                .get_topics(&s)
                .await
                .context(|| format!("Problem getting topics from stream {s}"))?;
            out.json(&topics);
            let header = [
                "ID",
                "Created",
                "Name",
                "Size (B)",
                "Max Topic Size (B)",
                "Compression",
                "Message Expiry (s)",
                "Messages Count",
                "Partitions Count",
            ];
            let rows = topics.iter().map(|t| {
                vec![
                    t.id.to_string(),
                    utc(t.created_at),
                    t.name.clone(),
                    t.size.as_human_string(),
                    max_size_cell(&t.max_topic_size),
                    t.compression_algorithm.to_string(),
                    expiry_cell(&t.message_expiry),
                    t.messages_count.to_string(),
                    t.partitions_count.to_string(),
                ]
            });
            print_rows(out, mode, &header, rows);
        }
    }
    Ok(())
}

fn durability(d: DurabilityArg) -> Durability {
    match d {
        DurabilityArg::Replicated => Durability::Replicated,
        DurabilityArg::Persisted => Durability::Persisted,
    }
}

fn expiry_of(tokens: &[IggyExpiry]) -> IggyExpiry {
    if tokens.is_empty() {
        IggyExpiry::ServerDefault
    } else {
        sum_expiry(tokens)
    }
}

async fn create(a: TopicCreateArgs, run: &Run<'_>) -> Result<(), CliError> {
    let out = run.out;
    let (s, n, c) = (&a.stream_id, &a.name, a.compression_algorithm);
    let expiry = expiry_of(&a.message_expiry);
    let m = max_size_echo(&a.max_topic_size);
    out.executing(&format!(
        "create topic with name: {n}, message expiry: {expiry}, compression algorithm: {c}, max topic size: {m} in stream with ID: {s}"
    ));
    let options = TopicCreateOptions {
        partitions_count: Some(a.partitions_count),
        compression_algorithm: (c == CompressionAlgorithm::Gzip).then_some(c),
        message_expiry: (expiry != IggyExpiry::ServerDefault).then_some(expiry),
        max_topic_size: (a.max_topic_size != MaxTopicSize::ServerDefault)
            .then_some(a.max_topic_size),
        durability: durability(a.durability),
        consumer_offset_durability: durability(a.consumer_offset_durability),
        raw: a.set.iter().cloned().collect(),
        ..TopicCreateOptions::default()
    };
    let topic = run.client.create_topic(s, n, &options).await.context(|| {
        format!(
            "Problem creating topic (name: {n}, partitions count: {}) in stream with ID: {s}",
            a.partitions_count
        )
    })?;
    out.line(format!(
        "Topic with name: {n}, partitions count: {}, compression algorithm: {c}, message expiry: {expiry}, max topic size: {m} created in stream with ID: {s}",
        a.partitions_count
    ));
    out.json(&topic);
    Ok(())
}

async fn update(a: TopicUpdateArgs, run: &Run<'_>) -> Result<(), CliError> {
    let out = run.out;
    let (s, t, n, c) = (&a.stream_id, &a.topic_id, &a.name, a.compression_algorithm);
    let e = expiry_of(&a.message_expiry);
    let m = max_size_echo(&a.max_topic_size);
    out.executing(&format!(
        "update topic with ID: {t}, name: {n}, message expiry: {e}, compression algorithm: {c}, max topic size: {m}, in stream with ID: {s}"
    ));
    let options = TopicUpdateOptions {
        compression_algorithm: Some(c),
        message_expiry: Some(e),
        max_topic_size: Some(a.max_topic_size),
        ..TopicUpdateOptions::default()
    };
    run.client.update_topic(s, t, n, &options).await.context(|| {
        format!("Problem updating topic (ID: {t}, name: {n}, message expiry: {e}) in stream with ID: {s}")
    })?;
    out.line(format!(
        "Topic with ID: {t} updated name: {n}, updated message expiry: {e}, updated compression algorithm: {c}, updated max topic size: {m} in stream with ID: {s}"
    ));
    out.ok(json!({"stream_id": s.to_string(), "topic_id": t.to_string(), "name": n}));
    Ok(())
}

pub async fn partitions(action: PartitionAction, run: &Run<'_>) -> Result<(), CliError> {
    let out = run.out;
    let (verb, done, a) = match &action {
        PartitionAction::Create(a) => ("create", "Created", a),
        PartitionAction::Delete(a) => ("delete", "Deleted", a),
    };
    let (s, t, n) = (&a.stream_id, &a.topic_id, a.partitions_count);
    let what = format!(
        "{n} partition{} for topic with ID: {t} and stream with ID: {s}",
        plural(n)
    );
    out.executing(&format!("{verb} {what}"));
    let context = || {
        let gerund = if verb == "create" {
            "creating"
        } else {
            "deleting"
        };
        format!("Problem {gerund} {what}")
    };
    match action {
        PartitionAction::Create(_) => run
            .client
            .create_partitions(s, t, n)
            .await
            .context(context)?,
        PartitionAction::Delete(_) => run
            .client
            .delete_partitions(s, t, n)
            .await
            .context(context)?,
    }
    out.line(format!("{done} {what}"));
    out.ok(json!({"stream_id": s.to_string(), "topic_id": t.to_string(), "partitions_count": n}));
    Ok(())
}

pub async fn segments(action: SegmentAction, run: &Run<'_>) -> Result<(), CliError> {
    let SegmentAction::Delete {
        stream_id: s,
        topic_id: t,
        partition_id: p,
        segments_count: n,
    } = action;
    let what = format!(
        "{n} segment{} for topic with ID: {t}, stream with ID: {s} and partition with ID: {p}",
        plural(n)
    );
    run.out.executing(&format!("delete {what}"));
    run.client
        .delete_segments(&s, &t, p, n)
        .await
        .context(|| format!("Problem deleting {what}"))?;
    run.out.line(format!("Deleted {what}"));
    run.out.ok(json!({"stream_id": s.to_string(), "topic_id": t.to_string(), "partition_id": p, "segments_count": n}));
    Ok(())
}

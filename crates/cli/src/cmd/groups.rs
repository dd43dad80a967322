//! `consumer-offset` and `consumer-group` commands (spec §6.6, §6.7) and
//! the consumer-group lag addition (§9.11).

use super::streams::print_rows;
use crate::args::resources::{ConsumerKindArg, GroupTarget, OffsetTarget};
use crate::args::{ConsumerGroupAction, ConsumerOffsetAction};
use crate::cmd::Run;
use crate::error::{CliError, Context};
use crate::output::{nested_table, property_table, table};
use iggy::prelude::{
    Consumer, ConsumerGroupClient, ConsumerGroupDetails, ConsumerOffsetClient, TopicClient,
};
use serde_json::json;

fn consumer_of(target: &OffsetTarget) -> (Consumer, String) {
    let c = &target.consumer_id;
    match target.kind {
        ConsumerKindArg::Consumer => (Consumer::new(c.clone()), format!("consumer with ID: {c}")),
        ConsumerKindArg::ConsumerGroup => (
            Consumer::group(c.clone()),
            format!("consumer group with ID: {c}"),
        ),
    }
}

pub async fn offsets(action: ConsumerOffsetAction, run: &Run<'_>) -> Result<(), CliError> {
    let out = run.out;
    match action {
        ConsumerOffsetAction::Get(target) => {
            let (consumer, k) = consumer_of(&target);
            let (s, t, p) = (&target.stream_id, &target.topic_id, target.partition_id);
            let what = format!(
                "consumer offset for {k} for stream with ID: {s} and topic with ID: {t} and partition with ID: {p}"
            );
            out.executing(&format!("get {what}"));
            let info = run
                .client
                .get_consumer_offset(&consumer, s, t, Some(p))
                .await
                .context(|| format!("Problem getting {what}"))?;
            let Some(info) = info else {
                return out.not_found(format!("Consumer offset for {k} for stream with ID: {s} and topic with ID: {t} and partition with ID: {p} was not found"));
            };
            out.table(&property_table(vec![
                ("Consumer ID", target.consumer_id.to_string()),
                ("Stream ID", s.to_string()),
                ("Topic ID", t.to_string()),
                ("Partition ID", info.partition_id.to_string()),
                ("Current offset", info.current_offset.to_string()),
                ("Stored offset", info.stored_offset.to_string()),
            ]));
            out.json(
                &json!({"consumer_id": target.consumer_id.to_string(), "stream_id": s.to_string(),
                "topic_id": t.to_string(), "partition_id": info.partition_id,
                "current_offset": info.current_offset, "stored_offset": info.stored_offset}),
            );
        }
        ConsumerOffsetAction::Set { target, offset: o } => {
            let (consumer, _) = consumer_of(&target);
            let (c, s, t, p) = (
                &target.consumer_id,
                &target.stream_id,
                &target.topic_id,
                target.partition_id,
            );
            let what = format!(
                "consumer offset for consumer with ID: {c} for stream with ID: {s} and topic with ID: {t} and partition with ID: {p}"
            );
            out.executing(&format!("set {what} to {o}"));
            run.client
                .store_consumer_offset(&consumer, s, t, Some(p), o)
                .await
                .context(|| format!("Problem setting {what}"))?;
            out.line(format!("Consumer offset for consumer with ID: {c} for stream with ID: {s} and topic with ID: {t} and partition with ID: {p} set to {o}"));
            out.ok(json!({"consumer_id": c.to_string(), "stream_id": s.to_string(), "topic_id": t.to_string(), "partition_id": p, "offset": o}));
        }
    }
    Ok(())
}

pub async fn run(action: ConsumerGroupAction, run: &Run<'_>) -> Result<(), CliError> {
    let (client, out) = (run.client, run.out);
    match action {
        ConsumerGroupAction::Create {
            stream_id: s,
            topic_id: t,
            name: n,
            ..
        } => {
            let tail = format!("for topic with ID: {t} and stream with ID: {s}");
            out.executing(&format!(
                "create consumer group: ID auto incremented, name: {n} {tail}"
            ));
            let group = client.create_consumer_group(&s, &t, &n).await.context(|| {
                format!("Problem creating consumer group (ID auto incremented, name: {n}) {tail}")
            })?;
            out.line(format!(
                "Consumer group: ID auto incremented, name: {n} created {tail}"
            ));
            out.json(&group);
        }
        ConsumerGroupAction::Delete(GroupTarget {
            stream_id: s,
            topic_id: t,
            group_id: g,
        }) => {
            let tail = format!("for topic with ID: {t} and stream with ID: {s}");
            out.executing(&format!("delete consumer group with ID: {g} {tail}"));
            client
                .delete_consumer_group(&s, &t, &g)
                .await
                .context(|| format!("Problem deleting consumer group with ID: {g} {tail}"))?;
            out.line(format!("Consumer group with ID: {g} deleted {tail}"));
            out.ok(json!({"stream_id": s.to_string(), "topic_id": t.to_string(), "group_id": g.to_string()}));
        }
        ConsumerGroupAction::Get { target, lag } => get(target, lag, run).await?,
        ConsumerGroupAction::List {
            stream_id: s,
            topic_id: t,
            mode,
        } => {
            let mode = mode.list_mode;
            let tail = format!("for stream with ID: {s} and topic with ID: {t}");
            out.executing(&format!("list consumer groups {tail} in {mode} mode"));
            let groups = client
                .get_consumer_groups(&s, &t)
                .await
                .context(|| format!("Problem getting consumer groups {tail}"))?;
            out.json(&groups);
            let rows = groups.iter().map(|g| {
                vec![
                    g.id.to_string(),
                    g.name.clone(),
                    g.partitions_count.to_string(),
                    g.members_count.to_string(),
                ]
            });
            print_rows(
                out,
                mode,
                &["ID", "Name", "Partitions Count", "Members Count"],
                rows,
            );
        }
    }
    Ok(())
}

async fn get(target: GroupTarget, lag: bool, run: &Run<'_>) -> Result<(), CliError> {
    let GroupTarget {
        stream_id: s,
        topic_id: t,
        group_id: g,
    } = &target;
    let tail = format!("for topic with ID: {t} and stream with ID: {s}");
    run.out
        .executing(&format!("get consumer group with ID: {g} {tail}"));
    let group = run
        .client
        .get_consumer_group(s, t, g)
        .await
        .context(|| format!("Problem getting consumer group with ID: {g} {tail}"))?;
    let Some(group) = group else {
        return run
            .out
            .not_found(format!("Consumer group with ID: {g} was not found"));
    };
    run.out.table(&group_table(&group));
    let lag_rows = if lag {
        Some(lag_rows(&target, run).await?)
    } else {
        None
    };
    if let Some(rows) = &lag_rows {
        let mut t = table(&["Partition", "Stored offset", "Current offset", "Lag"]);
        for r in rows {
            t.add_row(vec![
                r.0.to_string(),
                r.1.map_or("-".to_owned(), |o| o.to_string()),
                r.2.to_string(),
                r.3.to_string(),
            ]);
        }
        run.out.table(&t);
    }
    let mut value = serde_json::to_value(&group).unwrap_or_default();
    if let (Some(rows), Some(map)) = (lag_rows, value.as_object_mut()) {
        let lag: Vec<_> = rows
            .iter()
            .map(|r| json!({"partition_id": r.0, "stored_offset": r.1, "current_offset": r.2, "lag": r.3}))
            .collect();
        map.insert("lag".into(), lag.into());
    }
    run.out.json(&value);
    Ok(())
}

fn group_table(group: &ConsumerGroupDetails) -> comfy_table::Table {
    let mut rows = vec![
        ("Consumer group id", group.id.to_string()),
        ("Consumer group name", group.name.clone()),
        ("Partitions count", group.partitions_count.to_string()),
        ("Members count", group.members_count.to_string()),
    ];
    if !group.members.is_empty() {
        let mut members = nested_table(&["Member id", "Partitions count", "Partitions"]);
        for m in &group.members {
            let ids: Vec<String> = m.partitions.iter().map(u32::to_string).collect();
            members.add_row(vec![
                m.id.to_string(),
                m.partitions_count.to_string(),
                ids.join(", "),
            ]);
        }
        rows.push(("Members", members.to_string()));
    }
    property_table(rows)
}

/// (partition, group's stored offset, partition's current offset, lag) per partition.
async fn lag_rows(
    target: &GroupTarget,
    run: &Run<'_>,
) -> Result<Vec<(u32, Option<u64>, u64, u64)>, CliError> {
    let GroupTarget {
        stream_id: s,
        topic_id: t,
        group_id: g,
    } = target;
    let topic = run
        .client
        .get_topic(s, t)
        .await
        .context(|| format!("Problem getting topic with ID: {t} in stream {s}"))?
        .ok_or_else(|| {
            CliError::message(format!("Topic with ID: {t} in stream {s} was not found"))
        })?;
    let consumer = Consumer::group(g.clone());
    let mut rows = Vec::new();
    for partition in &topic.partitions {
        let stored = run
            .client
            .get_consumer_offset(&consumer, s, t, Some(partition.id))
            .await
            .context(|| format!("Problem getting consumer offset for consumer group with ID: {g}"))?
            .map(|o| o.stored_offset);
        let current = partition.current_offset;
        let consumed = stored.map_or(0, |o| o + 1);
        let lag = if partition.messages_count == 0 {
            0
        } else {
            (current + 1).saturating_sub(consumed)
        };
        rows.push((partition.id, stored, current, lag));
    }
    Ok(rows)
}

//! `message poll` (spec §6.5.2): one poll printed as a table or appended to
//! a binary message file; the additions `--timestamp` (§9.5), `--follow`
//! (tail until Ctrl-C) and JSON/NDJSON messages (§9.1).

use crate::args::OutputFormat;
use crate::args::message::{PayloadEncoding, PollArgs};
use crate::cmd::Run;
use crate::cmd::format::{MessagePrinter, payload_text};
use crate::error::{CliError, Context};
use crate::output::{centered, table};
use crate::render::TIME_FORMAT_MICROS;
use base64::Engine;
use comfy_table::Cell;
use iggy::prelude::{
    Consumer, ConsumerGroupClient, HeaderKind, Identifier, IggyByteSize, IggyDuration, IggyMessage,
    IggyTimestamp, MessageClient, PolledMessages, PollingStrategy,
};
use std::collections::BTreeSet;
use std::io::Write;
use std::time::{Duration, Instant};

/// Fixed bytes of each message in the totals the reference prints.
const MESSAGE_HEADER_BYTES: u64 = 64;

pub async fn poll(a: PollArgs, run: &Run<'_>) -> Result<(), CliError> {
    let (s, t) = (&a.stream_id, &a.topic_id);
    let printer = MessagePrinter::new(&a.format);
    run.out.lines_to_stderr.set(a.format.is_formatted());
    run.out.executing(&format!(
        "poll messages from topic ID: {t} and stream with ID: {s}"
    ));
    let strategy = strategy(&a)?;
    if let Some(group) = &a.consumer_group {
        join_group(run, s, t, group).await?;
        let result = poll_body(&a, run, strategy, &printer).await;
        leave_group(run, s, t, group).await;
        return result;
    }
    poll_body(&a, run, strategy, &printer).await
}

async fn poll_body(
    a: &PollArgs,
    run: &Run<'_>,
    strategy: PollingStrategy,
    printer: &MessagePrinter,
) -> Result<(), CliError> {
    let (s, t) = (&a.stream_id, &a.topic_id);
    if a.follow {
        return follow(a, run, strategy, printer).await;
    }
    let started = Instant::now();
    let polled = poll_once(a, run, &strategy, a.message_count).await?;
    let took = IggyDuration::from(started.elapsed());
    run.out.line(format!(
        "Polled messages from topic with ID: {t} and stream with ID: {s} (from partition with ID: {})",
        polled.partition_id
    ));
    let k = polled.messages.len();
    run.out.line(format!(
        "Polled {k} message{} of total size {}, it took {took}",
        if k == 1 { "" } else { "s" },
        IggyByteSize::from(total_size(&polled.messages)).as_human_string()
    ));
    if let Some(path) = &a.output_file {
        return store_messages(path, &polled.messages, run);
    }
    print_json(run, &polled);
    if a.format.is_formatted() {
        if run.out.is_text() {
            for m in &polled.messages {
                printer.print(run.out, polled.partition_id, m);
            }
        }
    } else if run.out.is_text() {
        run.out.table(&messages_table(
            &polled.messages,
            a.show_headers,
            printer.encoding(),
        ));
    }
    Ok(())
}

/// Joins a consumer group for this connection (§9.2).
pub async fn join_group(
    run: &Run<'_>,
    s: &Identifier,
    t: &Identifier,
    group: &Identifier,
) -> Result<(), CliError> {
    run.client
        .join_consumer_group(s, t, group)
        .await
        .context(|| {
            format!(
                "Problem joining consumer group with ID: {group} for topic with ID: {t} and stream with ID: {s}"
            )
        })
}

/// Leaves the group again; a failure only warns (the server drops the
/// membership when the connection closes anyway).
pub async fn leave_group(run: &Run<'_>, s: &Identifier, t: &Identifier, group: &Identifier) {
    if let Err(e) = run.client.leave_consumer_group(s, t, group).await {
        crate::output::warn(&format!("could not leave consumer group {group}: {e}"));
    }
}

async fn poll_once(
    a: &PollArgs,
    run: &Run<'_>,
    strategy: &PollingStrategy,
    count: u32,
) -> Result<PolledMessages, CliError> {
    let consumer = match &a.consumer_group {
        Some(group) => Consumer::group(group.clone()),
        None => Consumer::new(a.consumer.clone()),
    };
    run.client
        .poll_messages(
            &a.stream_id,
            &a.topic_id,
            Some(a.partition_id),
            &consumer,
            strategy,
            count,
            a.auto_commit,
        )
        .await
        .context(|| {
            format!(
                "Problem polling messages to topic with ID: {} and stream with ID: {}",
                a.topic_id, a.stream_id
            )
        })
}

fn strategy(a: &PollArgs) -> Result<PollingStrategy, CliError> {
    Ok(if let Some(offset) = a.offset {
        PollingStrategy::offset(offset)
    } else if a.first {
        PollingStrategy::first()
    } else if a.last {
        PollingStrategy::last()
    } else if let Some(text) = &a.timestamp {
        PollingStrategy::timestamp(parse_timestamp(text)?)
    } else {
        PollingStrategy::next()
    })
}

/// Microseconds since the epoch, RFC 3339, or a duration before now (`-5m`).
pub fn parse_timestamp(text: &str) -> Result<IggyTimestamp, CliError> {
    if let Ok(micros) = text.parse::<u64>() {
        return Ok(IggyTimestamp::from(micros));
    }
    if let Ok(time) = chrono::DateTime::parse_from_rfc3339(text) {
        let micros = u64::try_from(time.timestamp_micros()).unwrap_or(0);
        return Ok(IggyTimestamp::from(micros));
    }
    if let Some(ago) = text.strip_prefix('-')
        && let Ok(d) = humantime::parse_duration(ago)
    {
        let now = IggyTimestamp::now().as_micros();
        let ago_micros = u64::try_from(d.as_micros()).unwrap_or(u64::MAX);
        return Ok(IggyTimestamp::from(now.saturating_sub(ago_micros)));
    }
    Err(CliError::tool(format!("Invalid timestamp: {text}")))
}

fn total_size(messages: &[IggyMessage]) -> u64 {
    messages
        .iter()
        .map(|m| {
            MESSAGE_HEADER_BYTES
                + m.payload.len() as u64
                + m.user_headers.as_ref().map_or(0, |h| h.len() as u64)
        })
        .sum()
}

fn store_messages(
    path: &std::path::Path,
    messages: &[IggyMessage],
    run: &Run<'_>,
) -> Result<(), CliError> {
    let name = path.display();
    run.out
        .line(format!("Storing messages to {name} binary file"));
    let mut file = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .map_err(|e| CliError::caused(format!("Problem opening file for writing: {name}"), e))?;
    let mut written = 0u64;
    for message in messages {
        let bytes = message.to_bytes();
        file.write_all(&bytes)
            .map_err(|e| CliError::caused(format!("Problem writing message to file: {name}"), e))?;
        written += bytes.len() as u64;
    }
    let k = messages.len();
    run.out.line(format!(
        "Stored {k} message{} of total size {} to {name} binary file",
        if k == 1 { "" } else { "s" },
        IggyByteSize::from(written).as_human_string()
    ));
    Ok(())
}

fn messages_table(
    messages: &[IggyMessage],
    show_headers: bool,
    encoding: PayloadEncoding,
) -> comfy_table::Table {
    let mut columns: BTreeSet<(String, String)> = BTreeSet::new();
    let parsed: Vec<Vec<(String, HeaderKind, String)>> =
        messages.iter().map(header_cells).collect();
    if show_headers {
        for headers in &parsed {
            columns.extend(
                headers
                    .iter()
                    .map(|(k, kind, _)| (k.clone(), kind.to_string())),
            );
        }
    }
    let mut t = table(&["Offset", "Timestamp", "ID", "Length", "Payload"]);
    if !columns.is_empty() {
        let mut header: Vec<Cell> = ["Offset", "Timestamp", "ID", "Length", "Payload"]
            .iter()
            .map(Cell::new)
            .collect();
        header.extend(
            columns
                .iter()
                .map(|(k, kind)| centered(format!("Header: {k}\n{kind}"))),
        );
        t.set_header(header);
    }
    for (message, headers) in messages.iter().zip(&parsed) {
        let mut row = vec![
            message.header.offset.to_string(),
            IggyTimestamp::from(message.header.timestamp).to_local_string(TIME_FORMAT_MICROS),
            message.header.id.to_string(),
            message.payload.len().to_string(),
            payload_text(&message.payload, encoding),
        ];
        for (key, kind) in &columns {
            let value = headers
                .iter()
                .find(|(k, hk, _)| k == key && &hk.to_string() == kind)
                .map(|(_, _, v)| v.clone())
                .unwrap_or_default();
            row.push(value);
        }
        t.add_row(row);
    }
    t
}

/// (key, kind, value text) of each user header of a message.
fn header_cells(message: &IggyMessage) -> Vec<(String, HeaderKind, String)> {
    let Ok(Some(map)) = message.user_headers_map() else {
        return Vec::new();
    };
    map.iter()
        .map(|(k, v)| (k.to_string_value(), v.kind(), v.to_string_value()))
        .collect()
}

pub fn message_json(partition_id: u32, m: &IggyMessage) -> serde_json::Value {
    let (payload, encoding) = match std::str::from_utf8(&m.payload) {
        Ok(text) => (text.to_owned(), "utf8"),
        Err(_) => (
            base64::engine::general_purpose::STANDARD.encode(&m.payload),
            "base64",
        ),
    };
    let mut headers = serde_json::Map::new();
    if let Ok(Some(map)) = m.user_headers_map() {
        for (k, v) in &map {
            let value = if v.kind() == HeaderKind::Raw {
                serde_json::Value::String(
                    base64::engine::general_purpose::STANDARD.encode(v.value()),
                )
            } else {
                serde_json::Value::String(v.to_string_value())
            };
            headers.insert(
                k.to_string_value(),
                serde_json::json!({"kind": v.kind().to_string(), "value": value}),
            );
        }
    }
    serde_json::json!({
        "partition_id": partition_id,
        "offset": m.header.offset,
        "timestamp": m.header.timestamp,
        "origin_timestamp": m.header.origin_timestamp,
        // u128 does not fit a JSON number; the id travels as decimal text.
        "id": m.header.id.to_string(),
        "checksum": m.header.checksum,
        "payload": payload,
        "payload_encoding": encoding,
        "headers": headers,
    })
}

fn print_json(run: &Run<'_>, polled: &PolledMessages) {
    let items = polled
        .messages
        .iter()
        .map(|m| message_json(polled.partition_id, m));
    match run.out.format {
        OutputFormat::Text => {}
        OutputFormat::Json => run.out.json(&serde_json::json!({
            "partition_id": polled.partition_id,
            "current_offset": polled.current_offset,
            "messages": items.collect::<Vec<_>>(),
        })),
        OutputFormat::Ndjson => items.for_each(|item| run.out.json(&item)),
    }
}

/// Polls until Ctrl-C, printing each message as it arrives
/// (`offset|timestamp|payload` in text mode, one JSON object in the JSON modes).
async fn follow(
    a: &PollArgs,
    run: &Run<'_>,
    first: PollingStrategy,
    printer: &MessagePrinter,
) -> Result<(), CliError> {
    let mut strategy = first;
    let interrupted = tokio::signal::ctrl_c();
    tokio::pin!(interrupted);
    loop {
        let polled = tokio::select! {
            _ = &mut interrupted => return Ok(()),
            polled = poll_once(a, run, &strategy, a.message_count) => polled?,
        };
        for m in &polled.messages {
            if run.out.is_text() {
                printer.print(run.out, polled.partition_id, m);
            } else {
                run.out.json(&message_json(polled.partition_id, m));
            }
        }
        match polled.messages.last() {
            Some(last) => strategy = PollingStrategy::offset(last.header.offset + 1),
            None => {
                if strategy == PollingStrategy::last() || strategy == PollingStrategy::first() {
                    strategy = PollingStrategy::offset(0);
                }
                tokio::select! {
                    _ = &mut interrupted => return Ok(()),
                    () = tokio::time::sleep(a.poll_interval.max(Duration::from_millis(10))) => {}
                }
            }
        }
    }
}

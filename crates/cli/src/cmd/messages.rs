//! `message send` and `message flush` (spec §6.5.1, §6.5.3) with the
//! producing additions of §9.4: NUL or raw stdin, key-delimited lines,
//! batches with a progress line on stderr (§9.6), `--input-file -`.

use crate::args::MessageAction;
use crate::args::message::{InputFormat, SendArgs};
use crate::cmd::Run;
use crate::error::{CliError, Context};
use crate::progress::{self, Progress};
use bytes::Bytes;
use iggy::prelude::{
    HeaderKey, HeaderValue, IGGY_MESSAGE_HEADER_SIZE, IggyByteSize, IggyError, IggyMessage,
    IggyMessageHeader, MessageClient, Partitioning, Sizeable,
};
use std::collections::BTreeMap;
use std::io::{IsTerminal, Read};

pub async fn run(action: MessageAction, run: &Run<'_>) -> Result<(), CliError> {
    match action {
        MessageAction::Send(a) => send(a, run).await,
        MessageAction::Poll(a) => super::poll::poll(a, run).await,
        MessageAction::Consume(a) => super::consume::consume(a, run).await,
        MessageAction::Flush {
            stream_id: s,
            topic_id: t,
            partition_id: p,
            fsync,
        } => {
            let f = if fsync { "with fsync" } else { "without fsync" };
            let what = format!(
                "messages from topic with ID: {t} and stream with ID: {s} (partition with ID: {p}) {f}"
            );
            run.out.executing(&format!("flush {what}"));
            run.client
                .flush_unsaved_buffer(&s, &t, p, fsync)
                .await
                .context(|| format!("Problem flushing {what}"))?;
            run.out.line(format!("Flushed {what}"));
            run.out.ok(serde_json::json!({"stream_id": s.to_string(), "topic_id": t.to_string(), "partition_id": p}));
            Ok(())
        }
    }
}

/// Messages grouped by the partitioning they are sent with.
type Batches = Vec<(Partitioning, Vec<IggyMessage>)>;

async fn send(a: SendArgs, run: &Run<'_>) -> Result<(), CliError> {
    let (s, t) = (&a.stream_id, &a.topic_id);
    let target = format!("topic with ID: {t} and stream with ID: {s}");
    run.out.executing(&format!("send messages to {target}"));
    let batches = build_batches(&a, run)?;
    let problem = || format!("Problem sending messages to {target}");
    let total: usize = batches.iter().map(|(_, m)| m.len()).sum();
    if total == 0 {
        return Err(CliError::iggy(problem(), &IggyError::InvalidMessagesCount));
    }
    let progress = send_progress(&a, run, total);
    let chunk = a.batch_size.map_or(usize::MAX, |n| n as usize);
    let mut confirmations = Vec::new();
    let mut sent_bytes = 0u64;
    for (partitioning, mut messages) in batches {
        for part in messages.chunks_mut(chunk) {
            let response = run
                .client
                .send_messages(s, t, &partitioning, part)
                .await
                .context(problem)?;
            confirmations.extend(response.confirmations.iter().map(|c| {
                serde_json::json!({"partition_id": c.partition_id, "base_offset": c.base_offset})
            }));
            if let Some(p) = &progress {
                sent_bytes += part
                    .iter()
                    .map(|m| m.get_size_bytes().as_bytes_u64())
                    .sum::<u64>();
                p.set_message(IggyByteSize::from(sent_bytes).as_human_string());
                p.inc(part.len() as u64);
            }
        }
    }
    drop(progress);
    run.out.line(format!("Sent messages to {target}"));
    run.out
        .json(&serde_json::json!({"ok": true, "messages": total, "confirmations": confirmations}));
    Ok(())
}

/// §9.6: a line for batched sends (any send with `--progress`).
fn send_progress(a: &SendArgs, run: &Run<'_>, total: usize) -> Option<Progress> {
    if a.batch_size.is_none() && !a.progress.progress {
        return None;
    }
    let p = Progress::start(
        a.progress,
        run.out.quiet,
        progress::SEND_TEMPLATE,
        Some(total as u64),
    )?;
    p.set_message(IggyByteSize::from(0).as_human_string());
    Some(p)
}

fn headers_of(a: &SendArgs) -> Option<BTreeMap<HeaderKey, HeaderValue>> {
    let map: BTreeMap<_, _> = a.headers.iter().flat_map(|l| l.0.iter().cloned()).collect();
    (!map.is_empty()).then_some(map)
}

fn partitioning(a: &SendArgs) -> Result<Partitioning, CliError> {
    if let Some(p) = a.partition_id {
        return Ok(Partitioning::partition_id(p));
    }
    if let Some(key) = &a.message_key {
        return Partitioning::messages_key_str(key).map_err(CliError::tool);
    }
    Ok(Partitioning::balanced())
}

fn build_batches(a: &SendArgs, run: &Run<'_>) -> Result<Batches, CliError> {
    if let Some(file) = &a.input_file {
        let messages = read_message_file(file, run)?;
        return Ok(vec![(partitioning(a)?, messages)]);
    }
    if !a.messages.is_empty() {
        let payloads: Vec<Vec<u8>> = a.messages.iter().map(|m| m.as_bytes().to_vec()).collect();
        let messages = to_messages(a, payloads, "provided strings")?;
        return Ok(vec![(partitioning(a)?, messages)]);
    }
    if std::io::stdin().is_terminal() && run.out.is_text() && !run.out.quiet {
        eprintln!("Reading messages from stdin, one per line; end with Ctrl-D.");
    }
    let mut input = Vec::new();
    std::io::stdin()
        .read_to_end(&mut input)
        .map_err(|e| CliError::message(e.to_string()))?;
    stdin_batches(a, input)
}

fn stdin_batches(a: &SendArgs, input: Vec<u8>) -> Result<Batches, CliError> {
    let records: Vec<Vec<u8>> = match a.input_format.unwrap_or(InputFormat::Lines) {
        InputFormat::Raw => vec![input],
        InputFormat::Null => split_records(&input, b'\0'),
        InputFormat::Lines => {
            let text = String::from_utf8(input)
                .map_err(|_| CliError::message("stream did not contain valid UTF-8"))?;
            text.lines().map(|l| l.as_bytes().to_vec()).collect()
        }
    };
    let Some(delimiter) = &a.key_delimiter else {
        return Ok(vec![(partitioning(a)?, to_messages(a, records, "stdin")?)]);
    };
    let mut by_key: BTreeMap<Vec<u8>, Vec<Vec<u8>>> = BTreeMap::new();
    for record in records {
        let (key, payload) = split_key(&record, delimiter.as_bytes());
        by_key.entry(key).or_default().push(payload);
    }
    by_key
        .into_iter()
        .map(|(key, payloads)| {
            let partitioning = Partitioning::messages_key(&key).map_err(CliError::tool)?;
            Ok((partitioning, to_messages(a, payloads, "stdin")?))
        })
        .collect()
}

fn split_records(input: &[u8], separator: u8) -> Vec<Vec<u8>> {
    let mut records: Vec<Vec<u8>> = input
        .split(|b| *b == separator)
        .map(<[u8]>::to_vec)
        .collect();
    if records.last().is_some_and(Vec::is_empty) {
        records.pop();
    }
    records
}

fn split_key(record: &[u8], delimiter: &[u8]) -> (Vec<u8>, Vec<u8>) {
    match record.windows(delimiter.len()).position(|w| w == delimiter) {
        Some(at) => (
            record[..at].to_vec(),
            record[at + delimiter.len()..].to_vec(),
        ),
        None => (Vec::new(), record.to_vec()),
    }
}

fn to_messages(
    a: &SendArgs,
    payloads: Vec<Vec<u8>>,
    source: &str,
) -> Result<Vec<IggyMessage>, CliError> {
    let headers = headers_of(a);
    let single = payloads.len() == 1;
    payloads
        .into_iter()
        .map(|payload| {
            IggyMessage::builder()
                .maybe_id(a.message_id.filter(|_| single))
                .payload(Bytes::from(payload))
                .maybe_user_headers(headers.clone())
                .build()
                .map_err(|e| CliError::iggy(format!("Failed to create messages from {source}"), &e))
        })
        .collect()
}

/// Reads the binary message file of §6.5.4: records back to back, no header.
fn read_message_file(file: &str, run: &Run<'_>) -> Result<Vec<IggyMessage>, CliError> {
    let data = if file == "-" {
        let mut data = Vec::new();
        std::io::stdin().read_to_end(&mut data).map(|_| data)
    } else {
        std::fs::read(file)
    }
    .map_err(|e| CliError::caused(format!("Problem opening file for reading: {file}"), e))?;
    run.out
        .line(format!("Read {} bytes from {file} file", data.len()));
    let data = Bytes::from(data);
    let (mut messages, mut at) = (Vec::new(), 0usize);
    while at < data.len() {
        match decode_record(&data, at) {
            Ok((message, size)) => {
                messages.push(message);
                at += size;
            }
            Err(e) => {
                run.out.line(format!(
                    "Failed to parse message from bytes: {e} at offset {at}"
                ));
                break;
            }
        }
    }
    run.out.line(format!(
        "Created {} messages using {at} bytes",
        messages.len()
    ));
    Ok(messages)
}

fn decode_record(data: &Bytes, at: usize) -> Result<(IggyMessage, usize), IggyError> {
    let rest = data.slice(at..);
    if rest.len() < IGGY_MESSAGE_HEADER_SIZE {
        return Err(IggyError::InvalidCommand);
    }
    let header = IggyMessageHeader::from_bytes(rest.slice(..IGGY_MESSAGE_HEADER_SIZE))?;
    let size = IGGY_MESSAGE_HEADER_SIZE
        + header.payload_length as usize
        + header.user_headers_length as usize;
    if size > rest.len() {
        return Err(IggyError::InvalidCommand);
    }
    Ok((IggyMessage::from_bytes(rest.slice(..size))?, size))
}

//! System commands: `ping`, `me`, `options`, `stats`, `snapshot`, `client`
//! and `cluster` (spec §6.10-6.12).

use super::streams::print_rows;
use crate::args::system::{OptionsArgs, StatsOutput};
use crate::args::{ClientAction, ClusterAction, PingArgs, SnapshotArgs, StatsArgs};
use crate::cmd::Run;
use crate::error::{CliError, Context};
use crate::output::{nested_table, property_table, table};
use crate::progress::{self, Progress};
use crate::render::utc;
use iggy::prelude::{ClusterClient, HeaderValue, OptionsScope, Stats, SystemClient};
use std::io::Write;
use std::str::FromStr;
use std::time::{Duration, Instant};

/// `ping` waits this long after each ping, as the reference does.
const PING_PAUSE: Duration = Duration::from_secs(1);
/// `snapshot` writes the archive in pieces of this size, counting each.
const SNAPSHOT_WRITE_CHUNK_BYTES: usize = 64 * 1024;

pub async fn ping(a: PingArgs, run: &Run<'_>) -> Result<(), CliError> {
    let out = run.out;
    out.executing("ping command");
    let width = a.count.to_string().len();
    let mut times_ms = Vec::new();
    for i in 1..=a.count {
        let started = Instant::now();
        run.client
            .ping()
            .await
            .context(|| "Problem sending ping command".to_owned())?;
        let ms = started.elapsed().as_secs_f64() * 1000.0;
        times_ms.push(ms);
        out.line(format!("Ping sequence id: {i:>width$} time: {ms:.2} ms"));
        tokio::time::sleep(PING_PAUSE).await;
    }
    let n = times_ms.len() as f64;
    let min = times_ms.iter().copied().fold(f64::INFINITY, f64::min);
    let max = times_ms.iter().copied().fold(0.0, f64::max);
    let avg = times_ms.iter().sum::<f64>() / n;
    let mdev = (times_ms.iter().map(|t| (t - avg).powi(2)).sum::<f64>() / n).sqrt();
    out.line("");
    out.line(format!("Ping statistics for {} ping commands", a.count));
    out.line(format!(
        "min/avg/max/mdev = {min:.3}/{avg:.3}/{max:.3}/{mdev:.3} ms"
    ));
    out.json(&serde_json::json!({"count": a.count, "min_ms": min, "avg_ms": avg, "max_ms": max, "mdev_ms": mdev}));
    Ok(())
}

/// The transport names tables show.
fn transport_name(raw: &str) -> String {
    match raw.to_ascii_lowercase().as_str() {
        "tcp" => "TCP".into(),
        "quic" => "QUIC".into(),
        "http" => "HTTP".into(),
        "websocket" | "ws" => "WebSocket".into(),
        _ => "Unknown".into(),
    }
}

pub async fn me(run: &Run<'_>) -> Result<(), CliError> {
    run.out.executing("me command");
    let me = run
        .client
        .get_me()
        .await
        .context(|| "Problem sending get_me command".to_owned())?;
    let mut rows = vec![("Client ID", me.client_id.to_string())];
    if let Some(user) = me.user_id {
        rows.push(("User ID", user.to_string()));
    }
    rows.push(("Address", me.address.clone()));
    rows.push(("Transport", transport_name(&me.transport)));
    run.out.table(&property_table(rows));
    run.out.json(&me);
    Ok(())
}

pub async fn options(a: OptionsArgs, run: &Run<'_>) -> Result<(), CliError> {
    let out = run.out;
    out.executing(&format!("describe {} options", a.scope));
    let scope = OptionsScope::from_str(&a.scope).map_err(CliError::tool)?;
    let specs = run
        .client
        .describe_options(scope)
        .await
        .context(|| "Problem sending describe_options command".to_owned())?;
    out.json(&specs);
    if specs.is_empty() {
        out.line(format!("{} resources accept no options yet", a.scope));
        return Ok(());
    }
    let mut t = table(&["Key", "Kind", "Default", "Description"]);
    for spec in &specs {
        let default = if spec.default_value.is_empty() {
            String::new()
        } else {
            HeaderValue::from_raw(spec.kind, &spec.default_value)
                .map(|v| v.to_string_value())
                .unwrap_or_else(|_| format!("<{} bytes>", spec.default_value.len()))
        };
        t.add_row(vec![
            spec.key.clone(),
            spec.kind.to_string(),
            default,
            spec.description.clone(),
        ]);
    }
    out.table(&t);
    Ok(())
}

pub async fn stats(a: StatsArgs, run: &Run<'_>) -> Result<(), CliError> {
    let out = run.out;
    out.executing("stats command");
    let stats = run
        .client
        .get_stats()
        .await
        .context(|| "Problem sending get_stats command".to_owned())?;
    if !out.is_text() {
        out.json(&stats);
        return Ok(());
    }
    let rendered = match a.output {
        StatsOutput::Table => {
            let mut t = table(&["Server property", "Value"]);
            for (label, value) in stats_rows(&stats) {
                t.add_row(vec![label.to_owned(), value]);
            }
            t.to_string()
        }
        StatsOutput::List => stats_rows(&stats)
            .into_iter()
            .map(|(label, value)| format!("{label}|{value}"))
            .collect::<Vec<_>>()
            .join("\n"),
        StatsOutput::Json => serde_json::to_string_pretty(&stats).map_err(CliError::tool)?,
        StatsOutput::Toml => toml::to_string(&stats).map_err(CliError::tool)?,
    };
    out.always(rendered);
    Ok(())
}

fn stats_rows(s: &Stats) -> Vec<(&'static str, String)> {
    vec![
        ("Iggy Server PID", s.process_id.to_string()),
        ("Iggy Server CPU Usage", format!("{:.4} %", s.cpu_usage)),
        ("Total CPU Usage", format!("{:.4} %", s.total_cpu_usage)),
        (
            "Iggy Server Memory Usage",
            s.memory_usage.as_bytes_u64().to_string(),
        ),
        (
            "Total Memory (RAM)",
            s.total_memory.as_bytes_u64().to_string(),
        ),
        (
            "Available Memory (RAM)",
            s.available_memory.as_bytes_u64().to_string(),
        ),
        ("Iggy Server Run Time", s.run_time.as_secs().to_string()),
        ("Start Time (UTC)", utc(s.start_time)),
        ("Read Bytes", s.read_bytes.as_bytes_u64().to_string()),
        ("Written Bytes", s.written_bytes.as_bytes_u64().to_string()),
        (
            "Messages Size Bytes",
            s.messages_size_bytes.as_bytes_u64().to_string(),
        ),
        ("Streams Count", s.streams_count.to_string()),
        ("Topics Count", s.topics_count.to_string()),
        ("Partitions Count", s.partitions_count.to_string()),
        ("Segments Count", s.segments_count.to_string()),
        ("Message Count", s.messages_count.to_string()),
        ("Clients Count", s.clients_count.to_string()),
        ("Consumer Groups Count", s.consumer_groups_count.to_string()),
        ("Threads Count", s.threads_count.to_string()),
        (
            "Free Disk Space",
            s.free_disk_space.as_bytes_u64().to_string(),
        ),
        (
            "Total Disk Space",
            s.total_disk_space.as_bytes_u64().to_string(),
        ),
        ("OS Name", s.os_name.clone()),
        ("OS Version", s.os_version.clone()),
        ("Kernel Version", s.kernel_version.clone()),
    ]
}

pub async fn snapshot(a: SnapshotArgs, run: &Run<'_>) -> Result<(), CliError> {
    let out = run.out;
    out.executing("snapshot command");
    let types = a.snapshot_types.into_iter().flatten().collect();
    let progress = Progress::start(a.progress, out.quiet, progress::SNAPSHOT_TEMPLATE, None);
    if let Some(p) = &progress {
        p.set_message("waiting for the server to create it".to_owned());
    }
    let snapshot = run
        .client
        .snapshot(a.compression, types)
        .await
        .context(|| "Problem sending snapshot command".to_owned())?;
    let name = chrono::Local::now()
        .format("snapshot_%Y%m%d_%H%M%S.zip")
        .to_string();
    let path = a.out_dir.join(name);
    let file = std::fs::File::create(&path)
        .map_err(|e| CliError::caused(format!("Failed to create file at {:?}", path), e))?;
    write_snapshot(file, &snapshot.0, progress.as_ref())
        .map_err(|e| CliError::caused("Failed to write snapshot data to file", e))?;
    drop(progress);
    let size = snapshot.0.len();
    out.table(&property_table(vec![
        ("File Path", path.display().to_string()),
        ("File Size (bytes)", size.to_string()),
    ]));
    out.json(&serde_json::json!({"file_path": path.display().to_string(), "file_size": size}));
    Ok(())
}

/// Writes the archive in chunks so the progress line can count the bytes.
fn write_snapshot(
    mut file: std::fs::File,
    data: &[u8],
    progress: Option<&Progress>,
) -> std::io::Result<()> {
    let mut written = 0usize;
    for chunk in data.chunks(SNAPSHOT_WRITE_CHUNK_BYTES) {
        file.write_all(chunk)?;
        written += chunk.len();
        if let Some(p) = progress {
            p.set_message(format!("{written} of {} bytes written", data.len()));
        }
    }
    file.flush()
}

pub async fn clients(action: ClientAction, run: &Run<'_>) -> Result<(), CliError> {
    let out = run.out;
    match action {
        ClientAction::Get { client_id: id } => {
            out.executing(&format!("get client with ID: {id}"));
            let client = run
                .client
                .get_client(id)
                .await
                .context(|| format!("Problem getting client with ID: {id}"))?;
            let Some(c) = client else {
                return out.not_found(format!("Client with ID: {id} was not found"));
            };
            let mut rows = vec![
                ("Client ID", c.client_id.to_string()),
                (
                    "User ID",
                    c.user_id.map_or("None".to_owned(), |u| u.to_string()),
                ),
                ("Address", c.address.clone()),
                ("Transport", transport_name(&c.transport)),
                ("Consumer Groups Count", c.consumer_groups_count.to_string()),
            ];
            if c.consumer_groups_count > 0 {
                let mut groups = nested_table(&["Stream ID", "Topic ID", "Consumer Group ID"]);
                for g in &c.consumer_groups {
                    groups.add_row(vec![
                        g.stream_id.to_string(),
                        g.topic_id.to_string(),
                        g.group_id.to_string(),
                    ]);
                }
                rows.push(("Consumer Groups Details", groups.to_string()));
            }
            out.table(&property_table(rows));
            out.json(&c);
        }
        ClientAction::List(mode) => {
            let mode = mode.list_mode;
            out.executing(&format!("list clients in {mode} mode"));
            let clients = run
                .client
                .get_clients()
                .await
                .context(|| "Problem getting list of clients".to_owned())?;
            out.json(&clients);
            if clients.is_empty() {
                out.line("No clients found!");
                return Ok(());
            }
            let rows = clients.iter().map(|c| {
                vec![
                    c.client_id.to_string(),
                    c.user_id.map(|u| u.to_string()).unwrap_or_default(),
                    c.address.clone(),
                    transport_name(&c.transport),
                    c.consumer_groups_count.to_string(),
                ]
            });
            print_rows(
                out,
                mode,
                &[
                    "Client ID",
                    "User ID",
                    "Address",
                    "Transport",
                    "Consumer Groups",
                ],
                rows,
            );
        }
    }
    Ok(())
}

pub async fn cluster(action: ClusterAction, run: &Run<'_>) -> Result<(), CliError> {
    let ClusterAction::Metadata(mode) = action;
    let (out, mode) = (run.out, mode.list_mode);
    out.executing(&format!("get cluster metadata in {mode} mode"));
    let meta = run
        .client
        .get_cluster_metadata()
        .await
        .context(|| "Problem getting cluster metadata".to_owned())?;
    out.json(&meta);
    if meta.nodes.is_empty() {
        out.line("No cluster nodes found!");
        return Ok(());
    }
    out.line(format!("Cluster name: {}", meta.name));
    let rows = meta.nodes.iter().map(|n| {
        let e = &n.endpoints;
        vec![
            n.name.clone(),
            n.ip.clone(),
            e.tcp.to_string(),
            e.quic.to_string(),
            e.http.to_string(),
            e.websocket.to_string(),
            n.role.to_string(),
            n.status.to_string(),
        ]
    });
    print_rows(
        out,
        mode,
        &[
            "Name",
            "IP",
            "TCP",
            "QUIC",
            "HTTP",
            "WebSocket",
            "Role",
            "Status",
        ],
        rows,
    );
    Ok(())
}

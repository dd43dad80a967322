//! `stream` commands (spec §6.1).

use crate::args::{ListMode, StreamAction};
use crate::cmd::Run;
use crate::error::{CliError, Context};
use crate::output::{property_table, table};
use crate::render::utc;
use iggy::prelude::{StreamClient, StreamUpdateOptions};
use serde_json::json;

pub async fn run(action: StreamAction, run: &Run<'_>) -> Result<(), CliError> {
    let (client, out) = (run.client, run.out);
    match action {
        StreamAction::Create { name, .. } => {
            out.executing(&format!(
                "create stream with name: {name} and ID auto incremented"
            ));
            let stream = client.create_stream(&name).await.context(|| {
                format!("Problem creating stream (name: {name} and ID auto incremented)")
            })?;
            out.line(format!(
                "Stream with name: {name} and ID auto incremented created"
            ));
            out.json(&stream);
        }
        StreamAction::Delete { stream_id: s } => {
            out.executing(&format!("delete stream with ID: {s}"));
            client
                .delete_stream(&s)
                .await
                .context(|| format!("Problem deleting stream with ID: {s}"))?;
            out.line(format!("Stream with ID: {s} deleted"));
            out.ok(json!({"stream_id": s.to_string()}));
        }
        StreamAction::Update { stream_id: s, name } => {
            out.executing(&format!("update stream with ID: {s} and name: {name}"));
            client
                .update_stream(&s, &name, &StreamUpdateOptions::default())
                .await
                .context(|| format!("Problem updating stream with ID: {s} and name: {name}"))?;
            out.line(format!("Stream with ID: {s} updated name: {name}"));
            out.ok(json!({"stream_id": s.to_string(), "name": name}));
        }
        StreamAction::Get { stream_id: s } => {
            out.executing(&format!("get stream with ID: {s}"));
            let stream = client
                .get_stream(&s)
                .await
                .context(|| format!("Problem getting stream with ID: {s}"))?;
            let Some(st) = stream else {
                return out.not_found(format!("Stream with ID: {s} was not found"));
            };
            out.table(&property_table(vec![
                ("Stream ID", st.id.to_string()),
                ("Created", utc(st.created_at)),
                ("Stream name", st.name.clone()),
                ("Stream size", st.size.as_human_string()),
                ("Stream message count", st.messages_count.to_string()),
                ("Stream topics count", st.topics_count.to_string()),
            ]));
            out.json(&st);
        }
        StreamAction::List(mode) => list(run, mode.list_mode).await?,
        StreamAction::Purge { stream_id: s } => {
            out.executing(&format!("purge stream with ID: {s}"));
            client
                .purge_stream(&s)
                .await
                .context(|| format!("Problem purging stream with ID: {s}"))?;
            out.line(format!("Stream with ID: {s} purged"));
            out.ok(json!({"stream_id": s.to_string()}));
        }
    }
    Ok(())
}

async fn list(run: &Run<'_>, mode: ListMode) -> Result<(), CliError> {
    let out = run.out;
    out.executing(&format!("list streams in {mode} mode"));
    let streams = run
        .client
        .get_streams()
        .await
        .context(|| "Problem getting list of streams".to_owned())?;
    out.json(&streams);
    if streams.is_empty() {
        out.line("No streams found!");
        return Ok(());
    }
    let rows = streams.iter().map(|s| {
        vec![
            s.id.to_string(),
            utc(s.created_at),
            s.name.clone(),
            s.size.as_human_string(),
            s.messages_count.to_string(),
            s.topics_count.to_string(),
        ]
    });
    print_rows(
        out,
        mode,
        &["ID", "Created", "Name", "Size (B)", "Messages", "Topics"],
        rows,
    );
    Ok(())
}

/// A list command's rows as a table or as `|`-joined lines.
pub fn print_rows(
    out: &crate::output::Out,
    mode: ListMode,
    header: &[&str],
    rows: impl Iterator<Item = Vec<String>>,
) {
    match mode {
        ListMode::Table => {
            let mut t = table(header);
            for row in rows {
                t.add_row(row);
            }
            out.table(&t);
        }
        ListMode::List => {
            for row in rows {
                out.line(row.join("|"));
            }
        }
    }
}

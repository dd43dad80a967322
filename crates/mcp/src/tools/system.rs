//! Server-wide tools: ping, cluster metadata, statistics, the connected
//! clients, and the diagnostic snapshot. All are reads.

use base64::Engine as _;
use iggy::prelude::{ClusterClient, SnapshotCompression, SystemClient, SystemSnapshotType};
use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::CallToolResult;
use rmcp::{schemars, tool, tool_router};
use serde::Deserialize;

use super::IggyTools;
use super::reply::{ToolError, done, found, json, parse_optional};
use crate::permissions::ToolClass::Read;

#[derive(Debug, Deserialize, schemars::JsonSchema)]
pub struct GetClient {
    #[schemars(description = "client id (number), as listed by get_clients")]
    pub client_id: u32,
}

#[derive(Debug, Deserialize, schemars::JsonSchema)]
pub struct Snapshot {
    #[schemars(
        description = "zip compression (optional): stored, deflated, bzip2, zstd, lzma or xz; default deflated"
    )]
    pub compression: Option<String>,
    #[schemars(
        description = "what to include (optional): filesystem_overview, process_list, resource_usage, server_logs, server_config, test or all; default all"
    )]
    pub types: Option<Vec<String>>,
}

#[tool_router(router = system_router, vis = "pub(super)")]
impl IggyTools {
    #[tool(
        description = "Check that the iggy server answers",
        annotations(read_only_hint = true)
    )]
    async fn ping(&self) -> CallToolResult {
        self.run("ping", Read, async {
            self.client.ping().await?;
            done()
        })
        .await
    }

    #[tool(
        description = "Get the cluster metadata: name and nodes with their roles and endpoints",
        annotations(read_only_hint = true)
    )]
    async fn get_cluster_metadata(&self) -> CallToolResult {
        self.run("get_cluster_metadata", Read, async {
            json(self.client.get_cluster_metadata().await?)
        })
        .await
    }

    #[tool(
        description = "Get server statistics: counts of streams, topics, partitions, segments, messages, clients, and resource usage",
        annotations(read_only_hint = true)
    )]
    async fn get_stats(&self) -> CallToolResult {
        self.run("get_stats", Read, async {
            json(self.client.get_stats().await?)
        })
        .await
    }

    #[tool(
        description = "Get this MCP server's own client session on the iggy server",
        annotations(read_only_hint = true)
    )]
    async fn get_me(&self) -> CallToolResult {
        self.run("get_me", Read, async { json(self.client.get_me().await?) })
            .await
    }

    #[tool(
        description = "List the clients connected to the iggy server",
        annotations(read_only_hint = true)
    )]
    async fn get_clients(&self) -> CallToolResult {
        self.run("get_clients", Read, async {
            json(self.client.get_clients().await?)
        })
        .await
    }

    #[tool(
        description = "Get one connected client and its consumer groups",
        annotations(read_only_hint = true)
    )]
    async fn get_client(&self, Parameters(args): Parameters<GetClient>) -> CallToolResult {
        self.run("get_client", Read, async {
            let client = self.client.get_client(args.client_id).await?;
            found(client, "client", &args.client_id.to_string())
        })
        .await
    }

    #[tool(
        description = "Take a diagnostic snapshot of the server; returns the zip archive base64-encoded",
        annotations(read_only_hint = true)
    )]
    async fn snapshot(&self, Parameters(args): Parameters<Snapshot>) -> CallToolResult {
        self.run("snapshot", Read, async {
            let compression =
                parse_optional::<SnapshotCompression>(args.compression.as_deref(), "compression")?
                    .unwrap_or_default();
            let types = snapshot_types(args.types.unwrap_or_default())?;
            let archive = self.client.snapshot(compression, types).await?;
            json(serde_json::json!({
                "format": "zip",
                "compression": compression.to_string(),
                "size_bytes": archive.0.len(),
                "zip_base64": base64::engine::general_purpose::STANDARD.encode(&archive.0),
            }))
        })
        .await
    }
}

/// An empty list means every type, as in the reference.
fn snapshot_types(names: Vec<String>) -> Result<Vec<SystemSnapshotType>, ToolError> {
    if names.is_empty() {
        return Ok(SystemSnapshotType::all_snapshot_types());
    }
    names
        .iter()
        .map(|name| name.parse::<SystemSnapshotType>().map_err(ToolError))
        .collect()
}

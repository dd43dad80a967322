//! Stream tools: list and get (read), create, rename (update), delete and
//! purge (delete).

use iggy::prelude::{StreamClient, StreamUpdateOptions};
use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::CallToolResult;
use rmcp::{schemars, tool, tool_router};
use serde::Deserialize;

use super::IggyTools;
use super::reply::{done, found, identifier, json};
use crate::permissions::ToolClass::{Create, Delete, Read, Update};

#[derive(Debug, Deserialize, schemars::JsonSchema)]
pub struct StreamRef {
    #[schemars(description = "stream id (number) or name")]
    pub stream_id: String,
}

#[derive(Debug, Deserialize, schemars::JsonSchema)]
pub struct CreateStream {
    #[schemars(description = "name of the new stream (unique)")]
    pub name: String,
}

#[derive(Debug, Deserialize, schemars::JsonSchema)]
pub struct UpdateStream {
    #[schemars(description = "stream id (number) or name")]
    pub stream_id: String,
    #[schemars(description = "new name of the stream (unique)")]
    pub name: String,
}

#[tool_router(router = streams_router, vis = "pub(super)")]
impl IggyTools {
    #[tool(description = "List all streams", annotations(read_only_hint = true))]
    async fn get_streams(&self) -> CallToolResult {
        self.run("get_streams", Read, async {
            json(self.client.get_streams().await?)
        })
        .await
    }

    #[tool(
        description = "Get one stream with its topics",
        annotations(read_only_hint = true)
    )]
    async fn get_stream(&self, Parameters(args): Parameters<StreamRef>) -> CallToolResult {
        self.run("get_stream", Read, async {
            let stream = self
                .client
                .get_stream(&identifier(&args.stream_id)?)
                .await?;
            found(stream, "stream", &args.stream_id)
        })
        .await
    }

    #[tool(
        description = "Create a stream (requires the create permission)",
        annotations(read_only_hint = false, destructive_hint = false)
    )]
    async fn create_stream(&self, Parameters(args): Parameters<CreateStream>) -> CallToolResult {
        self.run("create_stream", Create, async {
            json(self.client.create_stream(&args.name).await?)
        })
        .await
    }

    #[tool(
        description = "Rename a stream (requires the update permission)",
        annotations(
            read_only_hint = false,
            destructive_hint = false,
            idempotent_hint = true
        )
    )]
    async fn update_stream(&self, Parameters(args): Parameters<UpdateStream>) -> CallToolResult {
        self.run("update_stream", Update, async {
            let stream = identifier(&args.stream_id)?;
            let options = StreamUpdateOptions::default();
            self.client
                .update_stream(&stream, &args.name, &options)
                .await?;
            done()
        })
        .await
    }

    #[tool(
        description = "Delete a stream with all its topics and messages (requires the delete permission)",
        annotations(read_only_hint = false, destructive_hint = true)
    )]
    async fn delete_stream(&self, Parameters(args): Parameters<StreamRef>) -> CallToolResult {
        self.run("delete_stream", Delete, async {
            self.client
                .delete_stream(&identifier(&args.stream_id)?)
                .await?;
            done()
        })
        .await
    }

    #[tool(
        description = "Delete every message of every topic in a stream, keeping the topics (requires the delete permission)",
        annotations(read_only_hint = false, destructive_hint = true)
    )]
    async fn purge_stream(&self, Parameters(args): Parameters<StreamRef>) -> CallToolResult {
        self.run("purge_stream", Delete, async {
            self.client
                .purge_stream(&identifier(&args.stream_id)?)
                .await?;
            done()
        })
        .await
    }
}

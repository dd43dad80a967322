//! Consumer group and consumer offset tools. Offsets belong to the consumer
//! named in the configuration (`iggy.consumer`), the same one polls use;
//! storing an offset is an update, deleting one a delete.

use iggy::prelude::{ConsumerGroupClient, ConsumerOffsetClient};
use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::CallToolResult;
use rmcp::{schemars, tool, tool_router};
use serde::Deserialize;

use super::IggyTools;
use super::reply::{done, found, identifier, json};
use crate::permissions::ToolClass::{Create, Delete, Read, Update};

#[derive(Debug, Deserialize, schemars::JsonSchema)]
pub struct TopicGroups {
    #[schemars(description = "stream id (number) or name")]
    pub stream_id: String,
    #[schemars(description = "topic id (number) or name")]
    pub topic_id: String,
}

#[derive(Debug, Deserialize, schemars::JsonSchema)]
pub struct GroupRef {
    #[schemars(description = "stream id (number) or name")]
    pub stream_id: String,
    #[schemars(description = "topic id (number) or name")]
    pub topic_id: String,
    #[schemars(description = "consumer group id (number) or name")]
    pub group_id: String,
}

#[derive(Debug, Deserialize, schemars::JsonSchema)]
pub struct CreateConsumerGroup {
    #[schemars(description = "stream id (number) or name")]
    pub stream_id: String,
    #[schemars(description = "topic id (number) or name")]
    pub topic_id: String,
    #[schemars(description = "name of the new consumer group (unique in the topic)")]
    pub name: String,
}

#[derive(Debug, Deserialize, schemars::JsonSchema)]
pub struct OffsetRef {
    #[schemars(description = "stream id (number) or name")]
    pub stream_id: String,
    #[schemars(description = "topic id (number) or name")]
    pub topic_id: String,
    #[schemars(description = "partition id (optional, number)")]
    pub partition_id: Option<u32>,
}

#[derive(Debug, Deserialize, schemars::JsonSchema)]
pub struct StoreConsumerOffset {
    #[schemars(description = "stream id (number) or name")]
    pub stream_id: String,
    #[schemars(description = "topic id (number) or name")]
    pub topic_id: String,
    #[schemars(description = "partition id (optional, number)")]
    pub partition_id: Option<u32>,
    #[schemars(description = "the offset to store (number)")]
    pub offset: u64,
}

#[tool_router(router = consumers_router, vis = "pub(super)")]
impl IggyTools {
    #[tool(
        description = "List the consumer groups of a topic",
        annotations(read_only_hint = true)
    )]
    async fn get_consumer_groups(
        &self,
        Parameters(args): Parameters<TopicGroups>,
    ) -> CallToolResult {
        self.run("get_consumer_groups", Read, async {
            let stream = identifier(&args.stream_id)?;
            let topic = identifier(&args.topic_id)?;
            json(self.client.get_consumer_groups(&stream, &topic).await?)
        })
        .await
    }

    #[tool(
        description = "Get one consumer group with its members and their partitions",
        annotations(read_only_hint = true)
    )]
    async fn get_consumer_group(&self, Parameters(args): Parameters<GroupRef>) -> CallToolResult {
        self.run("get_consumer_group", Read, async {
            let stream = identifier(&args.stream_id)?;
            let topic = identifier(&args.topic_id)?;
            let group = identifier(&args.group_id)?;
            let details = self
                .client
                .get_consumer_group(&stream, &topic, &group)
                .await?;
            found(details, "consumer group", &args.group_id)
        })
        .await
    }

    #[tool(
        description = "Create a consumer group on a topic (requires the create permission)",
        annotations(read_only_hint = false, destructive_hint = false)
    )]
    async fn create_consumer_group(
        &self,
        Parameters(args): Parameters<CreateConsumerGroup>,
    ) -> CallToolResult {
        self.run("create_consumer_group", Create, async {
            let stream = identifier(&args.stream_id)?;
            let topic = identifier(&args.topic_id)?;
            json(
                self.client
                    .create_consumer_group(&stream, &topic, &args.name)
                    .await?,
            )
        })
        .await
    }

    #[tool(
        description = "Delete a consumer group and its stored offsets (requires the delete permission)",
        annotations(read_only_hint = false, destructive_hint = true)
    )]
    async fn delete_consumer_group(
        &self,
        Parameters(args): Parameters<GroupRef>,
    ) -> CallToolResult {
        self.run("delete_consumer_group", Delete, async {
            let stream = identifier(&args.stream_id)?;
            let topic = identifier(&args.topic_id)?;
            let group = identifier(&args.group_id)?;
            self.client
                .delete_consumer_group(&stream, &topic, &group)
                .await?;
            done()
        })
        .await
    }

    #[tool(
        description = "Get the stored offset of this MCP server's consumer on a partition",
        annotations(read_only_hint = true)
    )]
    async fn get_consumer_offset(&self, Parameters(args): Parameters<OffsetRef>) -> CallToolResult {
        self.run("get_consumer_offset", Read, async {
            let stream = identifier(&args.stream_id)?;
            let topic = identifier(&args.topic_id)?;
            let offset = self
                .client
                .get_consumer_offset(&self.consumer, &stream, &topic, args.partition_id)
                .await?;
            found(offset, "consumer offset for topic", &args.topic_id)
        })
        .await
    }

    #[tool(
        description = "Store the offset of this MCP server's consumer on a partition (requires the update permission)",
        annotations(
            read_only_hint = false,
            destructive_hint = false,
            idempotent_hint = true
        )
    )]
    async fn store_consumer_offset(
        &self,
        Parameters(args): Parameters<StoreConsumerOffset>,
    ) -> CallToolResult {
        self.run("store_consumer_offset", Update, async {
            let stream = identifier(&args.stream_id)?;
            let topic = identifier(&args.topic_id)?;
            self.client
                .store_consumer_offset(
                    &self.consumer,
                    &stream,
                    &topic,
                    args.partition_id,
                    args.offset,
                )
                .await?;
            done()
        })
        .await
    }

    #[tool(
        description = "Delete the stored offset of this MCP server's consumer on a partition (requires the delete permission)",
        annotations(read_only_hint = false, destructive_hint = true)
    )]
    async fn delete_consumer_offset(
        &self,
        Parameters(args): Parameters<OffsetRef>,
    ) -> CallToolResult {
        self.run("delete_consumer_offset", Delete, async {
            let stream = identifier(&args.stream_id)?;
            let topic = identifier(&args.topic_id)?;
            self.client
                .delete_consumer_offset(&self.consumer, &stream, &topic, args.partition_id)
                .await?;
            done()
        })
        .await
    }
}

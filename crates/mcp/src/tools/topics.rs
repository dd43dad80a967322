//! Topic, partition and segment tools. Adding partitions is a create;
//! removing partitions or segments deletes messages, so it is a delete.

use std::collections::BTreeMap;

use iggy::prelude::{
    CompressionAlgorithm, IggyExpiry, MaxTopicSize, PartitionClient, SegmentClient, TopicClient,
    TopicCreateOptions, TopicUpdateOptions,
};
use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::CallToolResult;
use rmcp::{schemars, tool, tool_router};
use serde::Deserialize;

use super::IggyTools;
use super::reply::{ToolError, done, found, identifier, json, parse_optional};
use crate::permissions::ToolClass::{Create, Delete, Read, Update};

#[derive(Debug, Deserialize, schemars::JsonSchema)]
pub struct StreamOnly {
    #[schemars(description = "stream id (number) or name")]
    pub stream_id: String,
}

#[derive(Debug, Deserialize, schemars::JsonSchema)]
pub struct TopicRef {
    #[schemars(description = "stream id (number) or name")]
    pub stream_id: String,
    #[schemars(description = "topic id (number) or name")]
    pub topic_id: String,
}

/// The topic settings shared by create_topic and update_topic, as text the
/// SDK parses ("gzip", "7d", "10 GB", "unlimited", "server_default").
#[derive(Debug, Default, Deserialize, schemars::JsonSchema)]
pub struct TopicSettings {
    #[schemars(description = "compression algorithm (optional): none or gzip")]
    pub compression_algorithm: Option<String>,
    #[schemars(
        description = "how long messages live (optional), e.g. \"1h\", \"7d\", \"unlimited\" or \"server_default\""
    )]
    pub message_expiry: Option<String>,
    #[schemars(
        description = "size cap of the topic (optional), e.g. \"10 GB\", \"unlimited\" or \"server_default\""
    )]
    pub max_size: Option<String>,
    #[schemars(
        description = "further topic options as string key-values (optional), e.g. {\"segment_size\": \"128 MiB\"}"
    )]
    #[serde(default)]
    pub options: BTreeMap<String, String>,
}

#[derive(Debug, Deserialize, schemars::JsonSchema)]
pub struct CreateTopic {
    #[schemars(description = "stream id (number) or name")]
    pub stream_id: String,
    #[schemars(description = "name of the new topic (unique in the stream)")]
    pub name: String,
    #[schemars(description = "number of partitions (at least 1)")]
    pub partitions_count: u32,
    #[serde(flatten)]
    pub settings: TopicSettings,
}

#[derive(Debug, Deserialize, schemars::JsonSchema)]
pub struct UpdateTopic {
    #[schemars(description = "stream id (number) or name")]
    pub stream_id: String,
    #[schemars(description = "topic id (number) or name")]
    pub topic_id: String,
    #[schemars(description = "name of the topic (its current name to keep it)")]
    pub name: String,
    #[serde(flatten)]
    pub settings: TopicSettings,
}

#[derive(Debug, Deserialize, schemars::JsonSchema)]
pub struct PartitionsChange {
    #[schemars(description = "stream id (number) or name")]
    pub stream_id: String,
    #[schemars(description = "topic id (number) or name")]
    pub topic_id: String,
    #[schemars(description = "how many partitions to add or remove (at least 1)")]
    pub partitions_count: u32,
}

#[derive(Debug, Deserialize, schemars::JsonSchema)]
pub struct DeleteSegments {
    #[schemars(description = "stream id (number) or name")]
    pub stream_id: String,
    #[schemars(description = "topic id (number) or name")]
    pub topic_id: String,
    #[schemars(description = "partition id (number)")]
    pub partition_id: u32,
    #[schemars(description = "how many of the oldest segments to delete (at least 1)")]
    pub segments_count: u32,
}

/// The parsed typed settings; `None` means "not given".
struct ParsedSettings {
    compression: Option<CompressionAlgorithm>,
    expiry: Option<IggyExpiry>,
    max_size: Option<MaxTopicSize>,
    raw: BTreeMap<String, String>,
}

impl TopicSettings {
    fn parse(self) -> Result<ParsedSettings, ToolError> {
        Ok(ParsedSettings {
            compression: parse_optional(
                self.compression_algorithm.as_deref(),
                "compression_algorithm",
            )?,
            expiry: parse_optional(self.message_expiry.as_deref(), "message_expiry")?,
            max_size: parse_optional(self.max_size.as_deref(), "max_size")?,
            raw: self.options,
        })
    }
}

#[tool_router(router = topics_router, vis = "pub(super)")]
impl IggyTools {
    #[tool(
        description = "List the topics of a stream",
        annotations(read_only_hint = true)
    )]
    async fn get_topics(&self, Parameters(args): Parameters<StreamOnly>) -> CallToolResult {
        self.run("get_topics", Read, async {
            json(
                self.client
                    .get_topics(&identifier(&args.stream_id)?)
                    .await?,
            )
        })
        .await
    }

    #[tool(
        description = "Get one topic with its partitions",
        annotations(read_only_hint = true)
    )]
    async fn get_topic(&self, Parameters(args): Parameters<TopicRef>) -> CallToolResult {
        self.run("get_topic", Read, async {
            let stream = identifier(&args.stream_id)?;
            let topic = self
                .client
                .get_topic(&stream, &identifier(&args.topic_id)?)
                .await?;
            found(topic, "topic", &args.topic_id)
        })
        .await
    }

    #[tool(
        description = "Create a topic in a stream (requires the create permission)",
        annotations(read_only_hint = false, destructive_hint = false)
    )]
    async fn create_topic(&self, Parameters(args): Parameters<CreateTopic>) -> CallToolResult {
        self.run("create_topic", Create, async {
            let stream = identifier(&args.stream_id)?;
            let settings = args.settings.parse()?;
            let options = TopicCreateOptions {
                partitions_count: Some(args.partitions_count),
                compression_algorithm: settings.compression,
                message_expiry: settings.expiry,
                max_topic_size: settings.max_size,
                raw: settings.raw,
                ..TopicCreateOptions::default()
            };
            json(
                self.client
                    .create_topic(&stream, &args.name, &options)
                    .await?,
            )
        })
        .await
    }

    #[tool(
        description = "Rename a topic or change its compression, expiry or size cap; settings left out keep their value (requires the update permission)",
        annotations(
            read_only_hint = false,
            destructive_hint = false,
            idempotent_hint = true
        )
    )]
    async fn update_topic(&self, Parameters(args): Parameters<UpdateTopic>) -> CallToolResult {
        self.run("update_topic", Update, async {
            let stream = identifier(&args.stream_id)?;
            let topic = identifier(&args.topic_id)?;
            let settings = args.settings.parse()?;
            let options = TopicUpdateOptions {
                compression_algorithm: settings.compression,
                message_expiry: settings.expiry,
                max_topic_size: settings.max_size,
                raw: settings.raw,
            };
            self.client
                .update_topic(&stream, &topic, &args.name, &options)
                .await?;
            done()
        })
        .await
    }

    #[tool(
        description = "Delete a topic with all its messages (requires the delete permission)",
        annotations(read_only_hint = false, destructive_hint = true)
    )]
    async fn delete_topic(&self, Parameters(args): Parameters<TopicRef>) -> CallToolResult {
        self.run("delete_topic", Delete, async {
            let stream = identifier(&args.stream_id)?;
            self.client
                .delete_topic(&stream, &identifier(&args.topic_id)?)
                .await?;
            done()
        })
        .await
    }

    #[tool(
        description = "Delete every message of a topic, keeping the topic (requires the delete permission)",
        annotations(read_only_hint = false, destructive_hint = true)
    )]
    async fn purge_topic(&self, Parameters(args): Parameters<TopicRef>) -> CallToolResult {
        self.run("purge_topic", Delete, async {
            let stream = identifier(&args.stream_id)?;
            self.client
                .purge_topic(&stream, &identifier(&args.topic_id)?)
                .await?;
            done()
        })
        .await
    }

    #[tool(
        description = "Add partitions to a topic (requires the create permission)",
        annotations(read_only_hint = false, destructive_hint = false)
    )]
    async fn create_partitions(
        &self,
        Parameters(args): Parameters<PartitionsChange>,
    ) -> CallToolResult {
        self.run("create_partitions", Create, async {
            let stream = identifier(&args.stream_id)?;
            let topic = identifier(&args.topic_id)?;
            self.client
                .create_partitions(&stream, &topic, args.partitions_count)
                .await?;
            done()
        })
        .await
    }

    #[tool(
        description = "Remove the last partitions of a topic with their messages (requires the delete permission)",
        annotations(read_only_hint = false, destructive_hint = true)
    )]
    async fn delete_partitions(
        &self,
        Parameters(args): Parameters<PartitionsChange>,
    ) -> CallToolResult {
        self.run("delete_partitions", Delete, async {
            let stream = identifier(&args.stream_id)?;
            let topic = identifier(&args.topic_id)?;
            self.client
                .delete_partitions(&stream, &topic, args.partitions_count)
                .await?;
            done()
        })
        .await
    }

    #[tool(
        description = "Delete the oldest segments of a partition with their messages (requires the delete permission)",
        annotations(read_only_hint = false, destructive_hint = true)
    )]
    async fn delete_segments(
        &self,
        Parameters(args): Parameters<DeleteSegments>,
    ) -> CallToolResult {
        self.run("delete_segments", Delete, async {
            let stream = identifier(&args.stream_id)?;
            let topic = identifier(&args.topic_id)?;
            self.client
                .delete_segments(&stream, &topic, args.partition_id, args.segments_count)
                .await?;
            done()
        })
        .await
    }
}

//! The MCP tools. Each submodule holds one family (system, streams, topics,
//! messages, consumers, users) as an rmcp tool router over [`IggyTools`];
//! [`IggyTools::new`] joins them. Tool names and argument names follow the
//! reference MCP server, so agent configurations written for it keep working.
//!
//! Every call goes through [`IggyTools::run`]: the permission check for the
//! tool's class first, then the SDK call, then `reply` turns the outcome into
//! a JSON text result or a tool error carrying the server's message.

mod consumers;
mod messages;
mod reply;
mod streams;
mod system;
mod topics;
mod user_permissions;
mod users;

use std::future::Future;
use std::sync::Arc;

use iggy::prelude::{Consumer, IggyClient};
use rmcp::handler::server::router::tool::ToolRouter;
use rmcp::model::{CallToolResult, Implementation, ServerCapabilities, ServerConfig};
use rmcp::{ServerHandler, tool_handler};

use crate::permissions::{Permissions, ToolClass};
use reply::Outcome;

const INSTRUCTIONS: &str = "Tools for an Apache Iggy message-streaming server: inspect streams, \
topics, partitions, consumer groups, users and messages, and (when the operator enabled them) \
create, update or delete them. Identifiers of streams, topics, groups and users accept a number \
(the id) or a name. Results are JSON; failures carry the server's message.";

/// The shared state of every tool call: one authenticated client, the
/// consumer used for polls and offsets, and the permission switches.
#[derive(Clone)]
pub struct IggyTools {
    client: Arc<IggyClient>,
    consumer: Arc<Consumer>,
    permissions: Permissions,
    tool_router: ToolRouter<IggyTools>,
}

impl IggyTools {
    pub fn new(client: Arc<IggyClient>, consumer: Consumer, permissions: Permissions) -> Self {
        let tool_router = Self::system_router()
            + Self::streams_router()
            + Self::topics_router()
            + Self::messages_router()
            + Self::consumers_router()
            + Self::users_router();
        Self {
            client,
            consumer: Arc::new(consumer),
            permissions,
            tool_router,
        }
    }

    /// Runs `call` when `class` is enabled; a refusal never reaches the
    /// server.
    async fn run(
        &self,
        tool: &str,
        class: ToolClass,
        call: impl Future<Output = Outcome>,
    ) -> CallToolResult {
        let outcome = match self.permissions.check(tool, class) {
            Ok(()) => call.await,
            Err(refusal) => Err(reply::ToolError(refusal)),
        };
        if let Err(reply::ToolError(message)) = &outcome {
            tracing::info!(tool, %message, "tool call failed");
        }
        reply::into_result(outcome)
    }

    /// The names of every tool, for tests and the start-up log.
    pub fn tool_names(&self) -> Vec<String> {
        let mut names: Vec<String> = self
            .tool_router
            .list_all()
            .into_iter()
            .map(|tool| tool.name.to_string())
            .collect();
        names.sort();
        names
    }
}

#[tool_handler(router = self.tool_router)]
impl ServerHandler for IggyTools {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new("iggy-mcp", env!("CARGO_PKG_VERSION")))
            .with_instructions(INSTRUCTIONS)
    }
}

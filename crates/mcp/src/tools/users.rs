//! User and personal access token tools. Creating a user or a token is a
//! create; renaming, (de)activating, changing permissions or a password is
//! an update; deleting a user or a token is a delete.

use iggy::prelude::{
    PersonalAccessTokenClient, PersonalAccessTokenExpiry, UserClient, UserStatus, UserUpdateOptions,
};
use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::CallToolResult;
use rmcp::{schemars, tool, tool_router};
use serde::Deserialize;

use super::IggyTools;
use super::reply::{done, found, identifier, json, parse_optional};
use super::user_permissions::Permissions;
use crate::permissions::ToolClass::{Create, Delete, Read, Update};

#[derive(Debug, Deserialize, schemars::JsonSchema)]
pub struct UserRef {
    #[schemars(description = "user id (number) or username")]
    pub user_id: String,
}

#[derive(Debug, Deserialize, schemars::JsonSchema)]
pub struct CreateUser {
    #[schemars(description = "username (unique)")]
    pub username: String,
    #[schemars(description = "password")]
    pub password: String,
    #[schemars(description = "whether the user may log in (optional, default true)")]
    pub active: Option<bool>,
    #[schemars(description = "permissions (optional; none when left out)")]
    pub permissions: Option<Permissions>,
}

#[derive(Debug, Deserialize, schemars::JsonSchema)]
pub struct UpdateUser {
    #[schemars(description = "user id (number) or username")]
    pub user_id: String,
    #[schemars(description = "new username (optional)")]
    pub username: Option<String>,
    #[schemars(description = "whether the user may log in (optional)")]
    pub active: Option<bool>,
}

#[derive(Debug, Deserialize, schemars::JsonSchema)]
pub struct UpdatePermissions {
    #[schemars(description = "user id (number) or username")]
    pub user_id: String,
    #[schemars(description = "the new permissions (optional; none when left out)")]
    pub permissions: Option<Permissions>,
}

#[derive(Debug, Deserialize, schemars::JsonSchema)]
pub struct ChangePassword {
    #[schemars(description = "user id (number) or username")]
    pub user_id: String,
    #[schemars(description = "the current password")]
    pub current_password: String,
    #[schemars(description = "the new password")]
    pub new_password: String,
}

#[derive(Debug, Deserialize, schemars::JsonSchema)]
pub struct CreatePersonalAccessToken {
    #[schemars(description = "token name (unique for the user)")]
    pub name: String,
    #[schemars(
        description = "lifetime (optional), e.g. \"1h\", \"30d\" or \"unlimited\"; server default when left out"
    )]
    pub expiry: Option<String>,
}

#[derive(Debug, Deserialize, schemars::JsonSchema)]
pub struct DeletePersonalAccessToken {
    #[schemars(description = "token name")]
    pub name: String,
}

fn status(active: bool) -> UserStatus {
    if active {
        UserStatus::Active
    } else {
        UserStatus::Inactive
    }
}

#[tool_router(router = users_router, vis = "pub(super)")]
impl IggyTools {
    #[tool(description = "List all users", annotations(read_only_hint = true))]
    async fn get_users(&self) -> CallToolResult {
        self.run("get_users", Read, async {
            json(self.client.get_users().await?)
        })
        .await
    }

    #[tool(
        description = "Get one user with their permissions",
        annotations(read_only_hint = true)
    )]
    async fn get_user(&self, Parameters(args): Parameters<UserRef>) -> CallToolResult {
        self.run("get_user", Read, async {
            let user = self.client.get_user(&identifier(&args.user_id)?).await?;
            found(user, "user", &args.user_id)
        })
        .await
    }

    #[tool(
        description = "Create a user (requires the create permission)",
        annotations(read_only_hint = false, destructive_hint = false)
    )]
    async fn create_user(&self, Parameters(args): Parameters<CreateUser>) -> CallToolResult {
        self.run("create_user", Create, async {
            let user = self
                .client
                .create_user(
                    &args.username,
                    &args.password,
                    status(args.active.unwrap_or(true)),
                    args.permissions.map(Into::into),
                )
                .await?;
            json(user)
        })
        .await
    }

    #[tool(
        description = "Rename a user or (de)activate them (requires the update permission)",
        annotations(
            read_only_hint = false,
            destructive_hint = false,
            idempotent_hint = true
        )
    )]
    async fn update_user(&self, Parameters(args): Parameters<UpdateUser>) -> CallToolResult {
        self.run("update_user", Update, async {
            let user = identifier(&args.user_id)?;
            self.client
                .update_user(
                    &user,
                    args.username.as_deref(),
                    args.active.map(status),
                    &UserUpdateOptions::default(),
                )
                .await?;
            done()
        })
        .await
    }

    #[tool(
        description = "Replace a user's permissions (requires the update permission)",
        annotations(
            read_only_hint = false,
            destructive_hint = false,
            idempotent_hint = true
        )
    )]
    async fn update_permissions(
        &self,
        Parameters(args): Parameters<UpdatePermissions>,
    ) -> CallToolResult {
        self.run("update_permissions", Update, async {
            let user = identifier(&args.user_id)?;
            self.client
                .update_permissions(&user, args.permissions.map(Into::into))
                .await?;
            done()
        })
        .await
    }

    #[tool(
        description = "Change a user's password (requires the update permission)",
        annotations(read_only_hint = false, destructive_hint = false)
    )]
    async fn change_password(
        &self,
        Parameters(args): Parameters<ChangePassword>,
    ) -> CallToolResult {
        self.run("change_password", Update, async {
            let user = identifier(&args.user_id)?;
            self.client
                .change_password(&user, &args.current_password, &args.new_password)
                .await?;
            done()
        })
        .await
    }

    #[tool(
        description = "Delete a user (requires the delete permission)",
        annotations(read_only_hint = false, destructive_hint = true)
    )]
    async fn delete_user(&self, Parameters(args): Parameters<UserRef>) -> CallToolResult {
        self.run("delete_user", Delete, async {
            self.client.delete_user(&identifier(&args.user_id)?).await?;
            done()
        })
        .await
    }

    #[tool(
        description = "List the personal access tokens of the user this MCP server logged in as",
        annotations(read_only_hint = true)
    )]
    async fn get_personal_access_tokens(&self) -> CallToolResult {
        self.run("get_personal_access_tokens", Read, async {
            json(self.client.get_personal_access_tokens().await?)
        })
        .await
    }

    #[tool(
        description = "Create a personal access token for the user this MCP server logged in as; the reply holds the token, shown only once (requires the create permission)",
        annotations(read_only_hint = false, destructive_hint = false)
    )]
    async fn create_personal_access_token(
        &self,
        Parameters(args): Parameters<CreatePersonalAccessToken>,
    ) -> CallToolResult {
        self.run("create_personal_access_token", Create, async {
            let expiry =
                parse_optional::<PersonalAccessTokenExpiry>(args.expiry.as_deref(), "expiry")?
                    .unwrap_or_default();
            json(
                self.client
                    .create_personal_access_token(&args.name, expiry)
                    .await?,
            )
        })
        .await
    }

    #[tool(
        description = "Delete a personal access token of the user this MCP server logged in as (requires the delete permission)",
        annotations(read_only_hint = false, destructive_hint = true)
    )]
    async fn delete_personal_access_token(
        &self,
        Parameters(args): Parameters<DeletePersonalAccessToken>,
    ) -> CallToolResult {
        self.run("delete_personal_access_token", Delete, async {
            self.client.delete_personal_access_token(&args.name).await?;
            done()
        })
        .await
    }
}

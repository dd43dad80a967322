//! Users, logins and personal access tokens (HTTP API spec §5, §8, §9).

use std::collections::BTreeMap;

use engine::metadata::permissions::Action;
use engine::metadata::user::{User, UserStatus};
use engine::metadata::{Ident, OpKind, token};
use protocol::ErrorCode;
use protocol::http_json::PermissionsJson;
use serde::Deserialize;
use serde_json::{Value, json};

use super::{HttpCall, Reply, ident};
use crate::handlers::convert::{permissions_in, permissions_out, user_info};
use crate::handlers::users::{change_password_op, create_token_op, create_user_op, created_user};
use crate::http::error::ApiError;
use crate::http::json;
use crate::node::LoginFailure;
use crate::node::process_stats::now_us;

fn now_secs() -> u64 {
    now_us() / 1_000_000
}

#[derive(Deserialize)]
struct Credentials {
    username: String,
    password: String,
}

#[derive(Deserialize)]
struct RawToken {
    token: String,
}

fn login_failure(failure: LoginFailure) -> ApiError {
    ApiError::iggy(match failure {
        LoginFailure::InvalidCredentials => ErrorCode::InvalidCredentials,
        LoginFailure::InvalidToken => ErrorCode::InvalidPersonalAccessToken,
        LoginFailure::UserInactive => ErrorCode::UserInactive,
    })
}

pub async fn login(call: &HttpCall<'_>) -> Result<Reply, ApiError> {
    let credentials: Credentials = call.json()?;
    let user = call
        .node()
        .verify_password(&credentials.username, &credentials.password)
        .await
        .map_err(login_failure)?;
    Ok(Reply::json(&call.app.settings.auth.issue(user, now_secs())))
}

pub async fn token_login(call: &HttpCall<'_>) -> Result<Reply, ApiError> {
    let raw: RawToken = call.json()?;
    let user = call
        .node()
        .verify_token(&raw.token)
        .await
        .map_err(login_failure)?;
    Ok(Reply::json(&call.app.settings.auth.issue(user, now_secs())))
}

/// A new token for the holder of a still-valid one (the old one stays
/// valid until its own expiry).
pub fn refresh(call: &HttpCall<'_>) -> Result<Reply, ApiError> {
    let raw: RawToken = call.json()?;
    let auth = &call.app.settings.auth;
    let user = auth
        .user_of_token(&raw.token, now_secs())
        .ok_or(ApiError::iggy(ErrorCode::InvalidAccessToken))?;
    Ok(Reply::json(&auth.issue(user, now_secs())))
}

fn details(user: &User) -> Value {
    let permissions = user.permissions.as_ref().map(permissions_out);
    json::user(&user_info(user), Some(permissions.as_ref()))
}

/// `me` names the caller.
fn target(call: &HttpCall<'_>, user: &str) -> Ident {
    if user == "me" {
        Ident::Id(call.user().0)
    } else {
        ident(user)
    }
}

pub fn list(call: &HttpCall<'_>) -> Result<Reply, ApiError> {
    let metadata = call.node().metadata();
    if !metadata.is_allowed(call.user(), Action::ReadUsers { target: None }) {
        return Err(ErrorCode::Unauthorized.into());
    }
    let list: Vec<Value> = metadata
        .users()
        .map(|u| json::user(&user_info(u), None))
        .collect();
    Ok(Reply::json(&list))
}

pub fn get(call: &HttpCall<'_>, user: &str) -> Result<Reply, ApiError> {
    let metadata = call.node().metadata();
    let user = metadata
        .find_user(&target(call, user))
        .ok_or_else(ApiError::not_found)?;
    if !metadata.is_allowed(
        call.user(),
        Action::ReadUsers {
            target: Some(user.id),
        },
    ) {
        return Err(ErrorCode::Unauthorized.into());
    }
    Ok(Reply::json(&details(user)))
}

fn status_of(text: &str) -> Result<UserStatus, ApiError> {
    match text.to_ascii_lowercase().as_str() {
        "active" => Ok(UserStatus::Active),
        "inactive" => Ok(UserStatus::Inactive),
        _ => Err(ApiError::bad_request("status must be active or inactive")),
    }
}

#[derive(Deserialize)]
struct CreateUser {
    username: String,
    password: String,
    status: String,
    #[serde(default)]
    permissions: Option<PermissionsJson>,
}

pub async fn create(call: &HttpCall<'_>) -> Result<Reply, ApiError> {
    let request: CreateUser = call.json()?;
    let status = status_of(&request.status)?;
    let permissions = request
        .permissions
        .map(|p| p.into_permissions().map(|p| permissions_in(&p)))
        .transpose()?;
    let kind = create_user_op(
        call.node(),
        call.user(),
        request.username,
        &request.password,
        status,
        permissions,
    )?;
    let outcome = call.commit(kind).await?;
    let metadata = call.node().metadata();
    let user = created_user(&metadata, &outcome).ok_or(ApiError::iggy(ErrorCode::Error))?;
    Ok(Reply::json(&details(user)))
}

#[derive(Deserialize)]
struct UpdateUser {
    #[serde(default)]
    username: Option<String>,
    #[serde(default)]
    status: Option<String>,
    #[serde(default)]
    options: Option<BTreeMap<String, Value>>,
}

/// No option key is updatable on streams or users today.
pub fn refuse_option_keys(options: Option<&BTreeMap<String, Value>>) -> Result<(), ApiError> {
    match options {
        Some(map) if !map.is_empty() => Err(ErrorCode::UnsupportedOptionKey.into()),
        _ => Ok(()),
    }
}

pub async fn update(call: &HttpCall<'_>, user: &str) -> Result<Reply, ApiError> {
    let request: UpdateUser = call.json()?;
    refuse_option_keys(request.options.as_ref())?;
    let status = request.status.as_deref().map(status_of).transpose()?;
    call.apply(OpKind::UpdateUser {
        user: target(call, user),
        username: request.username,
        status,
    })
    .await
}

pub async fn delete(call: &HttpCall<'_>, user: &str) -> Result<Reply, ApiError> {
    call.apply(OpKind::DeleteUser {
        user: target(call, user),
    })
    .await
}

#[derive(Deserialize)]
struct ChangePassword {
    current_password: String,
    new_password: String,
}

pub async fn change_password(call: &HttpCall<'_>, user: &str) -> Result<Reply, ApiError> {
    let request: ChangePassword = call.json()?;
    let kind = change_password_op(
        call.node(),
        call.user(),
        &target(call, user),
        &request.current_password,
        &request.new_password,
    )?;
    call.apply(kind).await
}

#[derive(Deserialize)]
struct UpdatePermissions {
    #[serde(default)]
    permissions: Option<PermissionsJson>,
}

pub async fn update_permissions(call: &HttpCall<'_>, user: &str) -> Result<Reply, ApiError> {
    let request: UpdatePermissions = call.json()?;
    let permissions = request
        .permissions
        .map(|p| p.into_permissions().map(|p| permissions_in(&p)))
        .transpose()?;
    call.apply(OpKind::UpdatePermissions {
        user: target(call, user),
        permissions,
    })
    .await
}

pub fn tokens(call: &HttpCall<'_>) -> Result<Reply, ApiError> {
    let metadata = call.node().metadata();
    let list: Vec<Value> = metadata
        .tokens_of(call.user())
        .map(|t| json!({"name": t.name, "expiry_at": t.expires_at_us}))
        .collect();
    Ok(Reply::json(&list))
}

#[derive(Deserialize)]
struct CreateToken {
    name: String,
    #[serde(default)]
    expiry: u64,
}

pub async fn create_token(call: &HttpCall<'_>) -> Result<Reply, ApiError> {
    let request: CreateToken = call.json()?;
    let minted = token::mint_token();
    let kind = create_token_op(call.node(), request.name, minted.hash, request.expiry)?;
    call.commit(kind).await?;
    Ok(Reply::json(&json!({"token": minted.raw})))
}

pub async fn delete_token(call: &HttpCall<'_>, name: String) -> Result<Reply, ApiError> {
    call.commit(OpKind::DeletePersonalAccessToken { name })
        .await?;
    Ok(Reply::no_content())
}

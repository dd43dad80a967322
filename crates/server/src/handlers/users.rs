//! Users and personal access tokens (binary protocol §10.2, §10.3).

use engine::metadata::permissions::Action;
use engine::metadata::{ApplyOutcome, Ident, MetadataState, OpKind, names, password, token};
use protocol::ErrorCode;
use protocol::primitives::Identifier;
use protocol::requests::{
    ChangePassword, CreatePersonalAccessToken, CreateUser, DeletePersonalAccessToken,
    UpdatePermissions, UpdateUser,
};
use protocol::responses::{self, PersonalAccessTokenInfo};

use super::Call;
use super::convert::{ident, permissions_in, refuse_options, user_details, user_info, user_status};
use super::write::{self, CacheReply, error_code, no_payload};
use crate::node::process_stats::now_us;
use crate::session::Reply;

/// A missing user is an empty body.
pub fn get(call: &Call<'_>, user_id: Identifier<'_>) -> Reply {
    let metadata = call.node().metadata();
    let Some(user) = metadata.find_user(&ident(&user_id)) else {
        return call.ok(&[]);
    };
    if !metadata.is_allowed(
        call.user(),
        Action::ReadUsers {
            target: Some(user.id),
        },
    ) {
        return call.deny(ErrorCode::Unauthorized);
    }
    call.ok(&user_details(user))
}

pub fn list(call: &Call<'_>) -> Reply {
    let metadata = call.node().metadata();
    if !metadata.is_allowed(call.user(), Action::ReadUsers { target: None }) {
        return call.deny(ErrorCode::Unauthorized);
    }
    let users: Vec<_> = metadata.users().map(user_info).collect();
    let mut out = Vec::new();
    responses::encode_users(&mut out, &users);
    call.ok(&out)
}

fn hash(plaintext: &str) -> Result<String, ErrorCode> {
    password::hash_password(plaintext).map_err(|_| ErrorCode::Error)
}

fn code_of(e: &engine::metadata::MetadataError) -> ErrorCode {
    error_code(e.code())
}

pub async fn create(call: Call<'_>, request: CreateUser<'_>) -> Reply {
    let username = request.username.as_str().to_owned();
    let plaintext = request.password.to_owned();
    let status = user_status(request.status);
    let permissions = request.permissions.as_ref().map(permissions_in);
    let checked = refuse_options(&request.options);
    let prepare = move |call: &Call<'_>| {
        checked?;
        names::validate_username(&username).map_err(|e| code_of(&e))?;
        names::validate_password(&plaintext).map_err(|e| code_of(&e))?;
        if !call
            .node()
            .metadata()
            .is_allowed(call.user(), Action::ManageUsers)
        {
            return Err(ErrorCode::Unauthorized);
        }
        Ok(OpKind::CreateUser {
            username,
            password_hash: hash(&plaintext)?,
            status,
            permissions,
        })
    };
    let respond = |state: &MetadataState, outcome: &ApplyOutcome| {
        let ApplyOutcome::UserCreated { user } = outcome else {
            return Vec::new();
        };
        user_details(
            state
                .user(*user)
                .expect("a created user exists on the replica that applied it"),
        )
    };
    write::execute_with(call, prepare, respond, CacheReply::Yes).await
}

pub async fn update(call: Call<'_>, request: UpdateUser<'_>) -> Reply {
    let kind = OpKind::UpdateUser {
        user: ident(&request.user_id),
        username: request.username.map(|n| n.as_str().to_owned()),
        status: request.status.map(user_status),
    };
    let checked = refuse_options(&request.options);
    write::execute_checked(call, checked.map(|()| kind)).await
}

pub async fn delete(call: Call<'_>, user_id: Identifier<'_>) -> Reply {
    write::execute(
        call,
        OpKind::DeleteUser {
            user: ident(&user_id),
        },
        no_payload,
    )
    .await
}

pub async fn update_permissions(call: Call<'_>, request: UpdatePermissions<'_>) -> Reply {
    let kind = OpKind::UpdatePermissions {
        user: ident(&request.user_id),
        permissions: request.permissions.as_ref().map(permissions_in),
    };
    write::execute(call, kind, no_payload).await
}

pub async fn change_password(call: Call<'_>, request: ChangePassword<'_>) -> Reply {
    let target = ident(&request.user_id);
    let current = request.current_password.to_owned();
    let new = request.new_password.to_owned();
    let prepare = move |call: &Call<'_>| {
        names::validate_password(&new).map_err(|e| code_of(&e))?;
        let metadata = call.node().metadata();
        let user = metadata
            .find_user(&target)
            .ok_or(ErrorCode::ResourceNotFound)?;
        if !metadata.is_allowed(call.user(), Action::ChangePassword { target: user.id }) {
            return Err(ErrorCode::Unauthorized);
        }
        if !password::verify_password(&current, &user.password_hash) {
            return Err(ErrorCode::InvalidCredentials);
        }
        Ok(OpKind::ChangePassword {
            user: Ident::Id(user.id.0),
            new_password_hash: hash(&new)?,
        })
    };
    write::execute_with(call, prepare, no_payload, CacheReply::Yes).await
}

pub fn list_tokens(call: &Call<'_>) -> Reply {
    let metadata = call.node().metadata();
    let tokens: Vec<_> = metadata
        .tokens_of(call.user())
        .map(|t| PersonalAccessTokenInfo {
            name: &t.name,
            expiry_at: t.expires_at_us.unwrap_or(0),
        })
        .collect();
    let mut out = Vec::new();
    responses::encode_personal_access_tokens(&mut out, &tokens);
    call.ok(&out)
}

pub async fn create_token(call: Call<'_>, request: CreatePersonalAccessToken<'_>) -> Reply {
    let name = request.name.as_str().to_owned();
    let minted = token::mint_token();
    let raw = minted.raw.clone();
    let max_tokens = call.node().ctx.limits.max_tokens_per_user;
    let expires_at = token::resolve_expiry(request.expiry_us, now_us(), None);
    let prepare = move |_: &Call<'_>| {
        names::validate_token_name(&name).map_err(|e| code_of(&e))?;
        let expires_at_us = expires_at.map_err(|e| code_of(&e))?;
        Ok(OpKind::CreatePersonalAccessToken {
            name,
            token_hash: minted.hash,
            expires_at_us,
            max_tokens_per_user: max_tokens,
        })
    };
    let respond = move |_: &MetadataState, _: &ApplyOutcome| {
        let mut out = Vec::new();
        responses::encode_raw_token(&mut out, &raw);
        out
    };
    write::execute_with(call, prepare, respond, CacheReply::No).await
}

pub async fn delete_token(call: Call<'_>, request: DeletePersonalAccessToken<'_>) -> Reply {
    write::execute(
        call,
        OpKind::DeletePersonalAccessToken {
            name: request.name.as_str().to_owned(),
        },
        no_payload,
    )
    .await
}

//! Users and personal access tokens (binary protocol §10.2, §10.3).

use engine::metadata::permissions::Action;
use engine::metadata::permissions::Permissions;
use engine::metadata::user::{User, UserStatus};
use engine::metadata::{
    ApplyOutcome, Ident, MetadataState, OpKind, UserId, names, password, token,
};
use protocol::ErrorCode;
use protocol::primitives::Identifier;
use protocol::requests::{
    ChangePassword, CreatePersonalAccessToken, CreateUser, DeletePersonalAccessToken,
    UpdatePermissions, UpdateUser,
};
use protocol::responses::{self, PersonalAccessTokenInfo};

use super::Call;
use super::Reply;
use super::convert::{ident, permissions_in, refuse_options, user_details, user_info, user_status};
use super::write::{self, CacheReply, error_code, no_payload};
use crate::node::Node;
use crate::node::process_stats::now_us;

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
        create_user_op(
            call.node(),
            call.user(),
            username,
            &plaintext,
            status,
            permissions,
        )
    };
    let respond = |state: &MetadataState, outcome: &ApplyOutcome| {
        created_user(state, outcome).map_or_else(Vec::new, user_details)
    };
    write::execute_with(call, prepare, respond, CacheReply::Yes).await
}

/// The user an operation created.
pub fn created_user<'s>(state: &'s MetadataState, outcome: &ApplyOutcome) -> Option<&'s User> {
    let ApplyOutcome::UserCreated { user } = outcome else {
        return None;
    };
    state.user(*user)
}

/// Validates a new user and hashes its password (once, before the commit,
/// so the plaintext never enters the journal).
pub fn create_user_op(
    node: &Node,
    actor: UserId,
    username: String,
    plaintext: &str,
    status: UserStatus,
    permissions: Option<Permissions>,
) -> Result<OpKind, ErrorCode> {
    names::validate_username(&username).map_err(|e| code_of(&e))?;
    names::validate_password(plaintext).map_err(|e| code_of(&e))?;
    if !node.metadata().is_allowed(actor, Action::ManageUsers) {
        return Err(ErrorCode::Unauthorized);
    }
    Ok(OpKind::CreateUser {
        username,
        password_hash: hash(plaintext)?,
        status,
        permissions,
    })
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
        change_password_op(call.node(), call.user(), &target, &current, &new)
    };
    write::execute_with(call, prepare, no_payload, CacheReply::Yes).await
}

/// Checks the current password (a wrong one is refused before the commit)
/// and hashes the new one.
pub fn change_password_op(
    node: &Node,
    actor: UserId,
    target: &Ident,
    current: &str,
    new: &str,
) -> Result<OpKind, ErrorCode> {
    names::validate_password(new).map_err(|e| code_of(&e))?;
    let metadata = node.metadata();
    let user = metadata
        .find_user(target)
        .ok_or(ErrorCode::ResourceNotFound)?;
    if !metadata.is_allowed(actor, Action::ChangePassword { target: user.id }) {
        return Err(ErrorCode::Unauthorized);
    }
    if !password::verify_password(current, &user.password_hash) {
        return Err(ErrorCode::InvalidCredentials);
    }
    Ok(OpKind::ChangePassword {
        user: Ident::Id(user.id.0),
        new_password_hash: hash(new)?,
    })
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
    let minted = token::mint_token();
    let raw = minted.raw.clone();
    let kind = create_token_op(
        call.node(),
        request.name.as_str().to_owned(),
        minted.hash,
        request.expiry_us,
    );
    let respond = move |_: &MetadataState, _: &ApplyOutcome| {
        let mut out = Vec::new();
        responses::encode_raw_token(&mut out, &raw);
        out
    };
    write::execute_with(call, move |_| kind, respond, CacheReply::No).await
}

/// Validates a new personal access token; only the hash of the raw token
/// enters the operation.
pub fn create_token_op(
    node: &Node,
    name: String,
    token_hash: String,
    expiry_us: u64,
) -> Result<OpKind, ErrorCode> {
    names::validate_token_name(&name).map_err(|e| code_of(&e))?;
    let expires_at_us =
        token::resolve_expiry(expiry_us, now_us(), None).map_err(|e| code_of(&e))?;
    Ok(OpKind::CreatePersonalAccessToken {
        name,
        token_hash,
        expires_at_us,
        max_tokens_per_user: node.ctx.limits.max_tokens_per_user,
    })
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

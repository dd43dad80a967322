//! User and personal-access-token operations.
//!
//! Users get the lowest unused ID (root, created first, is 0). Root cannot be
//! deleted or have its permissions changed. Tokens belong to the acting user;
//! their names are unique per user and their number is capped by the limit
//! the operation carries (so a configuration change cannot make replicas
//! disagree).

use super::{Ctx, MetadataState};
use crate::metadata::errors::MetadataError;
use crate::metadata::ids::{Ident, USER_ID_LIMIT, UserId, lowest_unused};
use crate::metadata::names::{validate_token_name, validate_username};
use crate::metadata::ops::{ApplyOutcome, OpKind};
use crate::metadata::permissions::{Action, Permissions};
use crate::metadata::user::{PersonalAccessToken, User, UserHeader, UserStatus};

impl MetadataState {
    pub(super) fn create_user(
        &mut self,
        ctx: Ctx,
        op: &OpKind,
    ) -> Result<ApplyOutcome, MetadataError> {
        let OpKind::CreateUser {
            username,
            password_hash,
            status,
            permissions,
        } = op
        else {
            unreachable!("dispatched by kind");
        };
        self.check(ctx, Action::ManageUsers)?;
        validate_username(username)?;
        if self.users.contains_name(username) {
            return Err(MetadataError::UserExists {
                username: username.clone(),
            });
        }
        let id = lowest_unused(self.users.ids().map(|id| id.0), USER_ID_LIMIT)
            .map(UserId)
            .ok_or(MetadataError::UsersLimitReached)?;
        let header = UserHeader {
            id,
            username: username.clone(),
            password_hash: password_hash.clone(),
            status: *status,
            permissions: permissions.clone(),
            created_at_us: ctx.now_us,
        };
        self.users.insert(id, User::new(header));
        Ok(ApplyOutcome::UserCreated { user: id })
    }

    pub(super) fn update_user(
        &mut self,
        ctx: Ctx,
        user: &Ident,
        username: Option<&str>,
        status: Option<UserStatus>,
    ) -> Result<ApplyOutcome, MetadataError> {
        let id = self.resolve_user(user)?;
        self.check(ctx, Action::ManageUsers)?;
        if let Some(name) = username {
            validate_username(name)?;
            if self.users.id_of(name).is_some_and(|owner| owner != id) {
                return Err(MetadataError::UserExists {
                    username: name.to_owned(),
                });
            }
            self.users.rename(&id, name.to_owned());
        }
        if let Some(status) = status {
            self.users
                .get_mut(&id)
                .expect("resolved user exists")
                .status = status;
        }
        Ok(ApplyOutcome::UserUpdated { user: id })
    }

    pub(super) fn delete_user(
        &mut self,
        ctx: Ctx,
        user: &Ident,
    ) -> Result<ApplyOutcome, MetadataError> {
        let id = self.resolve_user(user)?;
        self.check(ctx, Action::ManageUsers)?;
        if id.is_root() {
            return Err(MetadataError::CannotDeleteUser { user: id });
        }
        let removed = self.users.remove(&id);
        assert!(removed.is_some(), "resolved user is removed");
        Ok(ApplyOutcome::UserDeleted { user: id })
    }

    pub(super) fn change_password(
        &mut self,
        ctx: Ctx,
        user: &Ident,
        new_password_hash: &str,
    ) -> Result<ApplyOutcome, MetadataError> {
        let id = self.resolve_user(user)?;
        self.check(ctx, Action::ChangePassword { target: id })?;
        self.users
            .get_mut(&id)
            .expect("resolved user exists")
            .password_hash = new_password_hash.to_owned();
        Ok(ApplyOutcome::PasswordChanged { user: id })
    }

    pub(super) fn update_permissions(
        &mut self,
        ctx: Ctx,
        user: &Ident,
        permissions: Option<&Permissions>,
    ) -> Result<ApplyOutcome, MetadataError> {
        let id = self.resolve_user(user)?;
        self.check(ctx, Action::ManageUsers)?;
        if id.is_root() {
            return Err(MetadataError::CannotChangePermissions { user: id });
        }
        self.users
            .get_mut(&id)
            .expect("resolved user exists")
            .permissions = permissions.cloned();
        Ok(ApplyOutcome::PermissionsUpdated { user: id })
    }

    pub(super) fn create_token(
        &mut self,
        ctx: Ctx,
        op: &OpKind,
    ) -> Result<ApplyOutcome, MetadataError> {
        let OpKind::CreatePersonalAccessToken {
            name,
            token_hash,
            expires_at_us,
            max_tokens_per_user,
        } = op
        else {
            unreachable!("dispatched by kind");
        };
        let owner = self.acting_user(ctx)?;
        validate_token_name(name)?;
        if owner.tokens.contains_key(name) {
            return Err(MetadataError::TokenExists {
                user: ctx.actor,
                name: name.clone(),
            });
        }
        if owner.tokens.len() >= *max_tokens_per_user as usize {
            return Err(MetadataError::TokenLimitReached {
                user: ctx.actor,
                limit: *max_tokens_per_user,
            });
        }
        if expires_at_us.is_some_and(|at| at <= ctx.now_us) {
            return Err(MetadataError::InvalidTokenExpiry {
                reason: "token would already be expired",
            });
        }
        let token = PersonalAccessToken {
            user_id: ctx.actor,
            name: name.clone(),
            token_hash: token_hash.clone(),
            created_at_us: ctx.now_us,
            expires_at_us: *expires_at_us,
        };
        let owner = self.users.get_mut(&ctx.actor).expect("acting user exists");
        owner.tokens.insert(name.clone(), token);
        Ok(ApplyOutcome::TokenCreated {
            user: ctx.actor,
            name: name.clone(),
        })
    }

    pub(super) fn delete_token(
        &mut self,
        ctx: Ctx,
        name: &str,
    ) -> Result<ApplyOutcome, MetadataError> {
        self.acting_user(ctx)?;
        let owner = self.users.get_mut(&ctx.actor).expect("acting user exists");
        if owner.tokens.remove(name).is_none() {
            return Err(MetadataError::TokenNotFound {
                user: ctx.actor,
                name: name.to_owned(),
            });
        }
        Ok(ApplyOutcome::TokenDeleted {
            user: ctx.actor,
            name: name.to_owned(),
        })
    }

    /// The token cleaner: removes every token expired at the op's timestamp.
    pub(super) fn delete_expired_tokens(&mut self, ctx: Ctx) -> ApplyOutcome {
        let mut count = 0u32;
        for user in self.users.values_mut() {
            let before = user.tokens.len();
            user.tokens.retain(|_, token| !token.is_expired(ctx.now_us));
            count += u32::try_from(before - user.tokens.len()).expect("at most a token limit");
        }
        ApplyOutcome::ExpiredTokensDeleted { count }
    }

    fn acting_user(&self, ctx: Ctx) -> Result<&User, MetadataError> {
        self.users
            .get(&ctx.actor)
            .ok_or(MetadataError::UserNotFound {
                user: Ident::Id(ctx.actor.0),
            })
    }
}

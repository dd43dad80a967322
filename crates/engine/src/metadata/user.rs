//! User, personal access token and client session records (storage spec
//! §11, §13, §19).
//!
//! Only hashes are stored: the Argon2 PHC string of the password and the
//! BLAKE3 hex digest of each token. Tokens are owned by their user and keyed
//! by name, so deleting a user removes its tokens.

use std::collections::BTreeMap;

use super::ids::{ClientId, UserId};
use super::names::Named;
use super::permissions::Permissions;

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum UserStatus {
    #[default]
    Active,
    Inactive,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct User {
    pub id: UserId,
    username: String,
    pub password_hash: String,
    pub status: UserStatus,
    pub permissions: Option<Permissions>,
    pub created_at_us: u64,
    pub(crate) tokens: BTreeMap<String, PersonalAccessToken>,
}

impl Named for User {
    fn name(&self) -> &str {
        &self.username
    }
    fn set_name(&mut self, name: String) {
        self.username = name;
    }
}

/// The fields of a user record, used to build or restore one.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UserHeader {
    pub id: UserId,
    pub username: String,
    pub password_hash: String,
    pub status: UserStatus,
    pub permissions: Option<Permissions>,
    pub created_at_us: u64,
}

impl User {
    pub(crate) fn new(header: UserHeader) -> Self {
        Self {
            id: header.id,
            username: header.username,
            password_hash: header.password_hash,
            status: header.status,
            permissions: header.permissions,
            created_at_us: header.created_at_us,
            tokens: BTreeMap::new(),
        }
    }

    pub fn username(&self) -> &str {
        &self.username
    }

    pub fn is_active(&self) -> bool {
        self.status == UserStatus::Active
    }

    /// The user's tokens, by name.
    pub fn tokens(&self) -> impl Iterator<Item = &PersonalAccessToken> {
        self.tokens.values()
    }

    pub fn token(&self, name: &str) -> Option<&PersonalAccessToken> {
        self.tokens.get(name)
    }

    pub fn tokens_count(&self) -> usize {
        self.tokens.len()
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PersonalAccessToken {
    pub user_id: UserId,
    pub name: String,
    /// BLAKE3 hex digest of the raw token.
    pub token_hash: String,
    pub created_at_us: u64,
    /// `None` = never expires.
    pub expires_at_us: Option<u64>,
}

impl PersonalAccessToken {
    /// Expired when `expires_at <= now` (storage spec §13).
    pub fn is_expired(&self, now_us: u64) -> bool {
        self.expires_at_us.is_some_and(|at| at <= now_us)
    }
}

/// How a client session is connected.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Transport {
    Tcp,
    Quic,
    Http,
    WebSocket,
}

/// A registered client session (a logged-in connection or HTTP credential).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ClientSession {
    pub id: ClientId,
    pub user_id: UserId,
    pub transport: Transport,
    pub address: String,
    pub registered_at_us: u64,
    /// The cluster node holding the session's connection (`None` on a
    /// single node).
    pub node: Option<u8>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn given_expiry_when_checking_should_expire_at_or_after_deadline() {
        let token = PersonalAccessToken {
            user_id: UserId(1),
            name: "ci".into(),
            token_hash: "h".into(),
            created_at_us: 0,
            expires_at_us: Some(100),
        };
        assert!(!token.is_expired(99));
        assert!(token.is_expired(100));
        let forever = PersonalAccessToken {
            expires_at_us: None,
            ..token
        };
        assert!(!forever.is_expired(u64::MAX));
    }
}

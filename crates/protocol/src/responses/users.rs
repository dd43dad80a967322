//! Login, user and personal access token replies (spec 7.3.7, 10.2, 10.3).
//!
//! ```text
//! login reply  = user_id u32 | session u64 (non-zero) | server_protocol_version u32
//!                | server_version Name
//! user record  = id u32 | created_at u64 | status u8 | username Name
//!                | options_len u32 | options
//! user details = user record | (4 zero bytes | 01 | permissions_len u32 | permissions)
//! PAT list     = (name Name | expiry_at u64)*     raw token = token Name
//! ```

use crate::primitives::{Permissions, put_name};
use crate::requests::UserStatus;
use crate::wire::WireWrite;

/// The payload of a successful login (after the result section).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LoginReply<'a> {
    pub user_id: u32,
    /// Must be non-zero: the SDK fails the login on 0.
    pub session: u64,
    pub server_protocol_version: u32,
    pub server_version: &'a str,
}

impl LoginReply<'_> {
    pub fn encode(&self, out: &mut Vec<u8>) {
        assert!(
            self.session != 0,
            "a login reply must carry a non-zero session"
        );
        out.put_u32_le(self.user_id);
        out.put_u64_le(self.session);
        out.put_u32_le(self.server_protocol_version);
        put_name(out, self.server_version);
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct UserInfo<'a> {
    pub id: u32,
    pub created_at: u64,
    pub status: UserStatus,
    pub username: &'a str,
    pub options: &'a [u8],
}

impl UserInfo<'_> {
    pub fn encode(&self, out: &mut Vec<u8>) {
        out.put_u32_le(self.id);
        out.put_u64_le(self.created_at);
        out.put_u8(self.status as u8);
        put_name(out, self.username);
        out.put_u32_bytes(self.options);
    }
}

/// User records back to back (32).
pub fn encode_users(out: &mut Vec<u8>, users: &[UserInfo<'_>]) {
    for user in users {
        user.encode(out);
    }
}

/// User details (31, 33): the record, then the permissions if any.
pub fn encode_user_details(
    out: &mut Vec<u8>,
    user: &UserInfo<'_>,
    permissions: Option<&Permissions>,
) {
    user.encode(out);
    match permissions {
        None => out.put_u32_le(0),
        Some(permissions) => {
            out.put_u8(1);
            out.put_len_u32(permissions.encoded_len());
            permissions.encode(out);
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PersonalAccessTokenInfo<'a> {
    pub name: &'a str,
    /// µs since the epoch; 0 = never expires.
    pub expiry_at: u64,
}

/// The caller's tokens back to back (41).
pub fn encode_personal_access_tokens(out: &mut Vec<u8>, tokens: &[PersonalAccessTokenInfo<'_>]) {
    for token in tokens {
        put_name(out, token.name);
        out.put_u64_le(token.expiry_at);
    }
}

/// The raw token of a new PAT (42), shown only once.
pub fn encode_raw_token(out: &mut Vec<u8>, token: &str) {
    put_name(out, token);
}

#[cfg(test)]
mod tests {
    use super::*;
    use iggy_binary_protocol::WireDecode;
    use iggy_binary_protocol::responses::personal_access_tokens::{
        GetPersonalAccessTokensResponse, RawPersonalAccessTokenResponse,
    };
    use iggy_binary_protocol::responses::users::{
        GetUsersResponse, LoginRegisterResponse, UserDetailsResponse,
    };

    fn user(options: &[u8]) -> UserInfo<'_> {
        UserInfo {
            id: 1,
            created_at: 5,
            status: UserStatus::Inactive,
            username: "alice",
            options,
        }
    }

    #[test]
    fn given_login_reply_when_decoded_by_the_sdk_should_match() {
        let mut out = Vec::new();
        LoginReply {
            user_id: 0,
            session: 7,
            server_protocol_version: 0x2C00,
            server_version: "0.9.0",
        }
        .encode(&mut out);
        let (sdk, used) = LoginRegisterResponse::decode(&out).unwrap();
        assert_eq!(
            (sdk.user_id, sdk.session, sdk.server_protocol_version, used),
            (0, 7, 0x2C00, out.len())
        );
        assert_eq!(sdk.server_version.as_str(), "0.9.0");
    }

    #[test]
    fn given_user_details_with_and_without_permissions_when_decoded_by_the_sdk_should_match() {
        let mut options = Vec::new();
        crate::primitives::put_kv_pair(&mut options, 2, b"k", 2, b"v");
        let mut permissions = Permissions::default();
        permissions.global.read_streams = true;
        permissions
            .streams
            .push(crate::primitives::StreamPermissions {
                stream_id: 4,
                ..Default::default()
            });
        for perms in [None, Some(&permissions)] {
            let mut out = Vec::new();
            encode_user_details(&mut out, &user(&options), perms);
            let (sdk, used) = UserDetailsResponse::decode(&out).unwrap();
            assert_eq!(used, out.len());
            assert_eq!(
                (sdk.user.id, sdk.user.status, sdk.user.username.as_str()),
                (1, 2, "alice")
            );
            assert_eq!(sdk.user.options.as_bytes(), &options[..]);
            assert_eq!(sdk.permissions.is_some(), perms.is_some());
            if let Some(p) = sdk.permissions {
                assert!(p.global.read_streams);
                assert_eq!(p.streams[0].stream_id, 4);
            }
        }
        let mut list = Vec::new();
        encode_users(
            &mut list,
            &[
                user(&[]),
                UserInfo {
                    id: 2,
                    username: "bob",
                    ..user(&[])
                },
            ],
        );
        let (sdk, _) = GetUsersResponse::decode(&list).unwrap();
        assert_eq!(sdk.users.len(), 2);
    }

    #[test]
    fn given_tokens_when_decoded_by_the_sdk_should_match() {
        let mut out = Vec::new();
        let tokens = [
            PersonalAccessTokenInfo {
                name: "a",
                expiry_at: 0,
            },
            PersonalAccessTokenInfo {
                name: "b",
                expiry_at: 9,
            },
        ];
        encode_personal_access_tokens(&mut out, &tokens);
        let (sdk, _) = GetPersonalAccessTokensResponse::decode(&out).unwrap();
        assert_eq!(
            (sdk.tokens[1].name.as_str(), sdk.tokens[1].expiry_at),
            ("b", 9)
        );
        let mut raw = Vec::new();
        encode_raw_token(&mut raw, "secret-token");
        assert_eq!(
            RawPersonalAccessTokenResponse::decode(&raw)
                .unwrap()
                .0
                .token
                .as_str(),
            "secret-token"
        );
    }
}

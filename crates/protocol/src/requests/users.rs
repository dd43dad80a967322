//! User requests (spec 10.2).
//!
//! ```text
//! 31 GET_USER / 34 DELETE_USER  user_id Id
//! 33 CREATE_USER         username Name | password_len u8 | password | status u8
//!                        | has_permissions u8 [| permissions_len u32 | permissions]
//!                        | options to end
//! 35 UPDATE_USER         user_id Id | has_username u8 [| Name] | has_status u8 [| status u8]
//!                        | options to end
//! 36 UPDATE_PERMISSIONS  user_id Id | has_permissions u8 [| permissions_len u32 | permissions]
//! 37 CHANGE_PASSWORD     user_id Id | current_len u8 | current | new_len u8 | new
//! ```

use super::{exact, options_to_end};
use crate::primitives::{Identifier, Options, Permissions, WireName};
use crate::wire::{DecodeError, Reader};

/// User status byte: 1 active, 2 inactive.
fn status(r: &mut Reader<'_>) -> Result<UserStatus, DecodeError> {
    let at = r.position();
    match r.u8("user status")? {
        1 => Ok(UserStatus::Active),
        2 => Ok(UserStatus::Inactive),
        other => Err(DecodeError::InvalidValue {
            field: "user status",
            at,
            value: u64::from(other),
        }),
    }
}

fn optional_permissions(r: &mut Reader<'_>) -> Result<Option<Permissions>, DecodeError> {
    if r.flag("has permissions")? {
        Permissions::decode_prefixed(r).map(Some)
    } else {
        Ok(None)
    }
}

/// Whether a user may log in (spec 8.9).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum UserStatus {
    Active = 1,
    Inactive = 2,
}

/// A request naming one user (get, delete).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct UserRef<'a> {
    pub user_id: Identifier<'a>,
}

impl<'a> UserRef<'a> {
    pub fn decode(body: &'a [u8]) -> Result<Self, DecodeError> {
        exact(body, |r| {
            Ok(Self {
                user_id: Identifier::decode(r, "user id")?,
            })
        })
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CreateUser<'a> {
    pub username: WireName<'a>,
    pub password: &'a str,
    pub status: UserStatus,
    pub permissions: Option<Permissions>,
    pub options: Options<'a>,
}

impl<'a> CreateUser<'a> {
    pub fn decode(body: &'a [u8]) -> Result<Self, DecodeError> {
        exact(body, |r| {
            Ok(Self {
                username: WireName::decode(r, "username")?,
                password: r.u8_str("password")?,
                status: status(r)?,
                permissions: optional_permissions(r)?,
                options: options_to_end(r)?,
            })
        })
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct UpdateUser<'a> {
    pub user_id: Identifier<'a>,
    pub username: Option<WireName<'a>>,
    pub status: Option<UserStatus>,
    pub options: Options<'a>,
}

impl<'a> UpdateUser<'a> {
    pub fn decode(body: &'a [u8]) -> Result<Self, DecodeError> {
        exact(body, |r| {
            let user_id = Identifier::decode(r, "user id")?;
            let username = if r.flag("has username")? {
                Some(WireName::decode(r, "username")?)
            } else {
                None
            };
            let status = if r.flag("has status")? {
                Some(status(r)?)
            } else {
                None
            };
            Ok(Self {
                user_id,
                username,
                status,
                options: options_to_end(r)?,
            })
        })
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UpdatePermissions<'a> {
    pub user_id: Identifier<'a>,
    pub permissions: Option<Permissions>,
}

impl<'a> UpdatePermissions<'a> {
    pub fn decode(body: &'a [u8]) -> Result<Self, DecodeError> {
        exact(body, |r| {
            Ok(Self {
                user_id: Identifier::decode(r, "user id")?,
                permissions: optional_permissions(r)?,
            })
        })
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ChangePassword<'a> {
    pub user_id: Identifier<'a>,
    pub current_password: &'a str,
    pub new_password: &'a str,
}

impl<'a> ChangePassword<'a> {
    pub fn decode(body: &'a [u8]) -> Result<Self, DecodeError> {
        exact(body, |r| {
            Ok(Self {
                user_id: Identifier::decode(r, "user id")?,
                current_password: r.u8_str("current password")?,
                new_password: r.u8_str("new password")?,
            })
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::requests::sdk;
    use iggy_binary_protocol::requests::users::{
        ChangePasswordRequest, CreateUserRequest, GetUserRequest, UpdatePermissionsRequest,
        UpdateUserRequest,
    };
    use iggy_binary_protocol::{
        WireDecode, WireEncode, WireIdentifier, WireName as SdkName, WireOptions, WirePermissions,
    };

    fn sdk_permissions() -> WirePermissions {
        let mut block = Vec::new();
        Permissions::default().encode(&mut block);
        block[0] = 1;
        WirePermissions::decode_from(&block).unwrap()
    }

    #[test]
    fn given_sdk_create_user_when_decoding_should_match() {
        let sdk = CreateUserRequest {
            username: SdkName::new("alice").unwrap(),
            password: "secret123".into(),
            status: 2,
            permissions: Some(sdk_permissions()),
            options: WireOptions::empty(),
        };
        let bytes = sdk.to_bytes();
        let ours = CreateUser::decode(&bytes).unwrap();
        assert_eq!(ours.username.as_str(), "alice");
        assert_eq!(ours.password, "secret123");
        assert_eq!(ours.status, UserStatus::Inactive);
        assert!(ours.permissions.unwrap().global.manage_servers);
        assert!(ours.options.is_empty());
        let without = CreateUserRequest {
            permissions: None,
            status: 1,
            ..sdk
        };
        assert_eq!(
            CreateUser::decode(&without.to_bytes()).unwrap().permissions,
            None
        );
    }

    #[test]
    fn given_sdk_update_requests_when_decoding_should_match() {
        let sdk = UpdateUserRequest {
            user_id: sdk::named("bob"),
            username: Some(SdkName::new("robert").unwrap()),
            status: Some(1),
            options: WireOptions::empty(),
        };
        let bytes = sdk.to_bytes();
        let ours = UpdateUser::decode(&bytes).unwrap();
        assert_eq!(ours.user_id, Identifier::Name("bob"));
        assert_eq!(ours.username.map(|n| n.as_str()), Some("robert"));
        assert_eq!(ours.status, Some(UserStatus::Active));
        let bare = UpdateUserRequest {
            username: None,
            status: None,
            ..sdk
        };
        let bytes = bare.to_bytes();
        let ours = UpdateUser::decode(&bytes).unwrap();
        assert_eq!((ours.username, ours.status), (None, None));

        let sdk = UpdatePermissionsRequest {
            user_id: WireIdentifier::numeric(3),
            permissions: Some(sdk_permissions()),
        };
        let bytes = sdk.to_bytes();
        let ours = UpdatePermissions::decode(&bytes).unwrap();
        assert_eq!(ours.user_id, sdk::id(&sdk.user_id));
        assert!(ours.permissions.is_some());
    }

    #[test]
    fn given_sdk_password_and_get_requests_when_decoding_should_match() {
        let sdk = ChangePasswordRequest {
            user_id: WireIdentifier::numeric(1),
            current_password: "old-pass".into(),
            new_password: "new-pass".into(),
        };
        let bytes = sdk.to_bytes();
        let ours = ChangePassword::decode(&bytes).unwrap();
        assert_eq!(
            (ours.current_password, ours.new_password),
            ("old-pass", "new-pass")
        );
        let get = GetUserRequest {
            user_id: WireIdentifier::numeric(0),
        };
        assert_eq!(
            UserRef::decode(&get.to_bytes()).unwrap().user_id,
            Identifier::Numeric(0)
        );
    }

    #[test]
    fn given_bad_status_or_trailing_bytes_when_decoding_should_reject() {
        let mut body = vec![5, b'a', b'l', b'i', b'c', b'e', 3, b'p', b'w', b'd', 9, 0];
        assert!(CreateUser::decode(&body).is_err());
        body[10] = 1;
        assert!(CreateUser::decode(&body).is_ok());
        body.push(1);
        assert!(CreateUser::decode(&body).is_err());
    }
}

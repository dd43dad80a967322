//! Login bodies (spec 7.3.3..7.3.6): the Register operation, codes 40 and 45.
//!
//! ```text
//! prefix   = protocol_version u32 (packed) | sdk_name Name | sdk_version Name
//! password = prefix | username Name | password_len u8 | password | context_len u32 | context
//! token    = prefix | token Name | context_len u32 | context
//! ```
//!
//! The header does not say which code was sent, so the body shape decides:
//! it is the password shape if that parses exactly, else the token shape if
//! that parses exactly. The version gate runs before either, right after the
//! prefix. Every failure names the eviction reason the server answers with.

use super::exact;
use crate::header::EvictionReason;
use crate::primitives::WireName;
use crate::wire::{DecodeError, Reader};

const COMPONENT_BITS: u32 = 10;

/// Packs a version as `major << 20 | minor << 10 | patch`.
pub const fn pack_version(major: u32, minor: u32, patch: u32) -> u32 {
    assert!(
        major < 1024 && minor < 1024 && patch < 1024,
        "version components are 10 bits"
    );
    (major << (2 * COMPONENT_BITS)) | (minor << COMPONENT_BITS) | patch
}

/// The protocol this codec speaks: 0.11.0.
pub const PROTOCOL_VERSION: u32 = pack_version(0, 11, 0);
/// The oldest protocol accepted at login.
pub const PROTOCOL_VERSION_MIN: u32 = PROTOCOL_VERSION;

const _: () = assert!(PROTOCOL_VERSION == 0x2C00 && PROTOCOL_VERSION_MIN >= 1);

/// The 0.11.0 gate: any 0.11.x patch is accepted, nothing else.
pub const fn is_protocol_compatible(packed: u32) -> bool {
    packed >= PROTOCOL_VERSION_MIN
        && (packed >> COMPONENT_BITS) <= (PROTOCOL_VERSION >> COMPONENT_BITS)
}

/// The version prefix every login body starts with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ClientVersionInfo<'a> {
    pub protocol_version: u32,
    pub sdk_name: WireName<'a>,
    pub sdk_version: WireName<'a>,
}

impl<'a> ClientVersionInfo<'a> {
    pub fn read(r: &mut Reader<'a>) -> Result<Self, DecodeError> {
        Ok(Self {
            protocol_version: r.u32("protocol version")?,
            sdk_name: WireName::decode(r, "sdk name")?,
            sdk_version: WireName::decode(r, "sdk version")?,
        })
    }
}

/// What the client logs in with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LoginCredentials<'a> {
    Password {
        username: WireName<'a>,
        password: &'a str,
    },
    Token {
        token: WireName<'a>,
    },
}

fn context<'a>(r: &mut Reader<'a>) -> Result<&'a str, DecodeError> {
    r.u32_str("client context")
}

impl<'a> LoginCredentials<'a> {
    /// Parses the password shape from the bytes after the prefix, exactly.
    pub fn parse_password(tail: &'a [u8]) -> Result<(Self, &'a str), DecodeError> {
        exact(tail, |r| {
            let username = WireName::decode(r, "username")?;
            let password = r.u8_str("password")?;
            Ok((Self::Password { username, password }, context(r)?))
        })
    }

    /// Parses the token shape from the bytes after the prefix, exactly.
    pub fn parse_token(tail: &'a [u8]) -> Result<(Self, &'a str), DecodeError> {
        exact(tail, |r| {
            let token = WireName::decode(r, "token")?;
            Ok((Self::Token { token }, context(r)?))
        })
    }
}

/// Why a login body was refused, and so which eviction answers it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LoginError {
    #[error("login body has no decodable version prefix: {source}")]
    MalformedPrefix { source: DecodeError },
    #[error("protocol version {version:#x} is outside the accepted window")]
    IncompatibleProtocol { version: u32 },
    #[error("login body is neither the password nor the token shape")]
    UnknownShape {
        password: DecodeError,
        token: DecodeError,
    },
}

impl LoginError {
    /// Reason 14 for the version gate (send the window with it), 15 otherwise.
    pub fn eviction_reason(&self) -> EvictionReason {
        match self {
            Self::IncompatibleProtocol { .. } => EvictionReason::IncompatibleProtocol,
            Self::MalformedPrefix { .. } | Self::UnknownShape { .. } => {
                EvictionReason::MalformedLogin
            }
        }
    }

    /// The underlying decode failure, for callers that only report one.
    pub fn into_decode_error(self) -> DecodeError {
        match self {
            Self::MalformedPrefix { source } => source,
            Self::IncompatibleProtocol { version } => DecodeError::InvalidValue {
                field: "protocol version",
                at: 0,
                value: u64::from(version),
            },
            Self::UnknownShape { password, .. } => password,
        }
    }
}

/// A decoded login body.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LoginRequest<'a> {
    pub version: ClientVersionInfo<'a>,
    pub credentials: LoginCredentials<'a>,
    /// Informational; SDK 0.11.0 sends an empty one.
    pub client_context: &'a str,
}

impl<'a> LoginRequest<'a> {
    pub fn decode(body: &'a [u8]) -> Result<Self, LoginError> {
        let mut r = Reader::new(body);
        let version = ClientVersionInfo::read(&mut r)
            .map_err(|source| LoginError::MalformedPrefix { source })?;
        if !is_protocol_compatible(version.protocol_version) {
            return Err(LoginError::IncompatibleProtocol {
                version: version.protocol_version,
            });
        }
        let tail = r.rest();
        let (credentials, client_context) = match LoginCredentials::parse_password(tail) {
            Ok(parsed) => parsed,
            Err(password) => LoginCredentials::parse_token(tail)
                .map_err(|token| LoginError::UnknownShape { password, token })?,
        };
        Ok(Self {
            version,
            credentials,
            client_context,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use iggy_binary_protocol::requests::users::{
        LoginRegisterRequest, LoginRegisterWithPatRequest,
    };
    use iggy_binary_protocol::{ClientVersionInfo as SdkVersion, WireEncode, WireName as SdkName};

    fn sdk_version(protocol_version: u32) -> SdkVersion {
        SdkVersion {
            protocol_version,
            sdk_name: SdkName::new("rust-sdk").unwrap(),
            sdk_version: SdkName::new("0.11.0").unwrap(),
        }
    }

    fn password_body(protocol_version: u32, context: Option<&str>) -> Vec<u8> {
        LoginRegisterRequest {
            version_info: sdk_version(protocol_version),
            username: SdkName::new("iggy").unwrap(),
            password: "iggy".into(),
            client_context: context.map(str::to_owned),
        }
        .to_bytes()
        .to_vec()
    }

    #[test]
    fn given_sdk_password_login_when_decoding_should_read_credentials() {
        let body = password_body(PROTOCOL_VERSION, None);
        let login = LoginRequest::decode(&body).unwrap();
        assert_eq!(login.version.protocol_version, 0x2C00);
        assert_eq!(login.version.sdk_name.as_str(), "rust-sdk");
        assert_eq!(login.version.sdk_version.as_str(), "0.11.0");
        let LoginCredentials::Password { username, password } = login.credentials else {
            panic!("password shape")
        };
        assert_eq!(
            (username.as_str(), password, login.client_context),
            ("iggy", "iggy", "")
        );
        let with_context = password_body(PROTOCOL_VERSION, Some("ctx"));
        assert_eq!(
            LoginRequest::decode(&with_context).unwrap().client_context,
            "ctx"
        );
    }

    #[test]
    fn given_sdk_token_login_when_decoding_should_read_token() {
        let token = "t0k3n-".repeat(20);
        let body = LoginRegisterWithPatRequest {
            version_info: sdk_version(PROTOCOL_VERSION),
            token: token.clone().into(),
            client_context: None,
        }
        .to_bytes();
        let login = LoginRequest::decode(&body).unwrap();
        assert_eq!(
            login.credentials,
            LoginCredentials::Token {
                token: WireName::new(&token).unwrap()
            }
        );
    }

    #[test]
    fn given_versions_when_gating_should_accept_any_0_11_patch_only() {
        assert!(is_protocol_compatible(0x2C00));
        assert!(is_protocol_compatible(0x2C01));
        assert!(is_protocol_compatible(0x2FFF));
        assert!(!is_protocol_compatible(0x3002));
        assert!(!is_protocol_compatible(0x2809));
        for version in 0..0x4000 {
            assert_eq!(
                is_protocol_compatible(version),
                iggy_binary_protocol::is_protocol_compatible(version)
            );
        }
        let err = LoginRequest::decode(&password_body(0x3002, None)).unwrap_err();
        assert_eq!(err, LoginError::IncompatibleProtocol { version: 0x3002 });
        assert_eq!(err.eviction_reason(), EvictionReason::IncompatibleProtocol);
    }

    #[test]
    fn given_malformed_bodies_when_decoding_should_map_to_malformed_login() {
        let body = password_body(PROTOCOL_VERSION, None);
        let truncated_prefix = LoginRequest::decode(&body[..6]).unwrap_err();
        assert!(matches!(
            truncated_prefix,
            LoginError::MalformedPrefix { .. }
        ));
        let mut trailing = body.clone();
        trailing.push(0);
        let shape = LoginRequest::decode(&trailing).unwrap_err();
        assert!(matches!(shape, LoginError::UnknownShape { .. }));
        assert_eq!(shape.eviction_reason(), EvictionReason::MalformedLogin);
        for cut in 0..body.len() {
            assert!(LoginRequest::decode(&body[..cut]).is_err(), "cut at {cut}");
        }
    }
}

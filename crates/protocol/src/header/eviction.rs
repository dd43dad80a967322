//! The eviction header (command 13, spec 4.5): a header-only frame telling
//! the client its login or session is dead.
//!
//! ```text
//! offset size type  field
//!   0..128    -     common prefix (common.rs); size = 256, command = 13
//!    128   16 u128  client                       non-zero
//!    144    4 u32   server_protocol_version      only for reason 14, else 0
//!    148    4 u32   server_protocol_version_min  only for reason 14, else 0
//!    152  103 -     reserved                     zero
//!    255    1 u8    reason
//! ```

use super::common::{
    PREFIX_END, Prefix, RESERVED_FRAME, header_bytes, put_u32, put_u128, u32_at, u128_at,
};
use super::{Command, HEADER_SIZE, HeaderError};
use crate::error::ErrorCode;

const CLIENT: usize = 128;
const VERSION_MAX: usize = 144;
const VERSION_MIN: usize = 148;
const RESERVED: usize = 152;
const REASON: usize = 255;

const _: () =
    assert!(CLIENT == PREFIX_END && CLIENT + 16 == VERSION_MAX && VERSION_MAX + 4 == VERSION_MIN);
const _: () =
    assert!(VERSION_MIN + 4 == RESERVED && RESERVED + 103 == REASON && REASON + 1 == HEADER_SIZE);

/// Why the server evicted the client (byte 255).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum EvictionReason {
    /// Never valid on the wire.
    Reserved = 0,
    NoSession = 1,
    ClientReleaseTooLow = 2,
    ClientReleaseTooHigh = 3,
    InvalidRequestOperation = 4,
    InvalidRequestBody = 5,
    InvalidRequestBodySize = 6,
    SessionTooLow = 7,
    SessionReleaseMismatch = 8,
    InvalidCredentials = 9,
    InvalidToken = 10,
    UserInactive = 11,
    SessionError = 12,
    StaleClient = 13,
    IncompatibleProtocol = 14,
    MalformedLogin = 15,
}

impl EvictionReason {
    const ALL: [EvictionReason; 16] = [
        Self::Reserved,
        Self::NoSession,
        Self::ClientReleaseTooLow,
        Self::ClientReleaseTooHigh,
        Self::InvalidRequestOperation,
        Self::InvalidRequestBody,
        Self::InvalidRequestBodySize,
        Self::SessionTooLow,
        Self::SessionReleaseMismatch,
        Self::InvalidCredentials,
        Self::InvalidToken,
        Self::UserInactive,
        Self::SessionError,
        Self::StaleClient,
        Self::IncompatibleProtocol,
        Self::MalformedLogin,
    ];

    pub fn from_u8(value: u8) -> Option<Self> {
        Self::ALL.get(usize::from(value)).copied()
    }

    pub const fn as_u8(self) -> u8 {
        self as u8
    }

    /// The error SDK 0.11.0 reports for this reason (spec 4.5). For
    /// `IncompatibleProtocol` this assumes a well-formed window.
    pub const fn sdk_error(self) -> ErrorCode {
        match self {
            Self::Reserved
            | Self::NoSession
            | Self::SessionTooLow
            | Self::SessionReleaseMismatch
            | Self::UserInactive
            | Self::SessionError => ErrorCode::Unauthenticated,
            Self::ClientReleaseTooLow
            | Self::ClientReleaseTooHigh
            | Self::InvalidRequestOperation
            | Self::InvalidRequestBody
            | Self::InvalidRequestBodySize => ErrorCode::InvalidCommand,
            Self::InvalidCredentials => ErrorCode::InvalidCredentials,
            Self::InvalidToken => ErrorCode::InvalidPersonalAccessToken,
            Self::StaleClient => ErrorCode::StaleClient,
            Self::IncompatibleProtocol => ErrorCode::IncompatibleProtocolVersion,
            Self::MalformedLogin => ErrorCode::InvalidFormat,
        }
    }
}

/// A decoded eviction header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EvictionHeader {
    pub cluster: u128,
    pub view: u32,
    pub replica: u8,
    pub client: u128,
    pub server_protocol_version: u32,
    pub server_protocol_version_min: u32,
    pub reason: EvictionReason,
}

impl EvictionHeader {
    /// An eviction for `client` with any reason except `Reserved` and
    /// `IncompatibleProtocol` (which carries a window: use
    /// [`EvictionHeader::incompatible_protocol`]).
    pub fn new(client: u128, reason: EvictionReason) -> Self {
        assert!(client != 0, "an eviction must name a non-zero client");
        assert!(
            !matches!(
                reason,
                EvictionReason::Reserved | EvictionReason::IncompatibleProtocol
            ),
            "reason {reason:?} cannot be built with EvictionHeader::new"
        );
        Self::unchecked(client, reason, 0, 0)
    }

    /// Reason 14, carrying the accepted window `min..=max` of packed versions.
    pub fn incompatible_protocol(client: u128, max: u32, min: u32) -> Self {
        assert!(client != 0, "an eviction must name a non-zero client");
        assert!(
            min >= 1 && min <= max,
            "protocol window must satisfy 1 <= min <= max"
        );
        Self::unchecked(client, EvictionReason::IncompatibleProtocol, max, min)
    }

    fn unchecked(client: u128, reason: EvictionReason, max: u32, min: u32) -> Self {
        Self {
            cluster: 0,
            view: 0,
            replica: 0,
            client,
            server_protocol_version: max,
            server_protocol_version_min: min,
            reason,
        }
    }

    /// Decodes the first 256 bytes of `bytes`. Reserved regions must be
    /// zero; `validate` checks the remaining rules.
    pub fn decode(bytes: &[u8]) -> Result<Self, HeaderError> {
        let b = header_bytes(bytes)?;
        let prefix = Prefix::decode(b)?;
        if prefix.command != Command::Eviction {
            return Err(HeaderError::UnexpectedCommand {
                expected: Command::Eviction,
                found: prefix.command,
            });
        }
        if prefix.size as usize != HEADER_SIZE {
            return Err(HeaderError::InvalidEviction {
                rule: "size must be 256",
            });
        }
        let reserved_zero = b[RESERVED_FRAME..PREFIX_END]
            .iter()
            .chain(&b[RESERVED..REASON])
            .all(|&x| x == 0);
        if !reserved_zero {
            return Err(HeaderError::InvalidEviction {
                rule: "reserved bytes must be zero",
            });
        }
        let value = b[REASON];
        let reason =
            EvictionReason::from_u8(value).ok_or(HeaderError::UnknownEvictionReason { value })?;
        let header = Self {
            cluster: prefix.cluster,
            view: prefix.view,
            replica: prefix.replica,
            client: u128_at(b, CLIENT),
            server_protocol_version: u32_at(b, VERSION_MAX),
            server_protocol_version_min: u32_at(b, VERSION_MIN),
            reason,
        };
        Ok(header)
    }

    /// The field rules of spec 4.5: non-zero client, a real reason, and a
    /// protocol window only (and always well-formed) on reason 14.
    pub fn validate(&self) -> Result<(), HeaderError> {
        let (max, min) = (
            self.server_protocol_version,
            self.server_protocol_version_min,
        );
        let rule = if self.client == 0 {
            "client must be non-zero"
        } else if self.reason == EvictionReason::Reserved {
            "reason must not be Reserved"
        } else if self.reason == EvictionReason::IncompatibleProtocol && (min == 0 || max < min) {
            "window must satisfy 1 <= min <= max"
        } else if self.reason != EvictionReason::IncompatibleProtocol && (min != 0 || max != 0) {
            "window only travels with reason 14"
        } else {
            return Ok(());
        };
        Err(HeaderError::InvalidEviction { rule })
    }

    /// Writes all 256 bytes: `size = 256`, `command = 13`, reserved zero.
    pub fn write_into(&self, out: &mut [u8; HEADER_SIZE]) {
        let prefix = Prefix {
            checksum: 0,
            checksum_body: 0,
            cluster: self.cluster,
            size: HEADER_SIZE as u32,
            view: self.view,
            release: 0,
            command: Command::Eviction,
            replica: self.replica,
        };
        prefix.write(out);
        put_u128(out, CLIENT, self.client);
        put_u32(out, VERSION_MAX, self.server_protocol_version);
        put_u32(out, VERSION_MIN, self.server_protocol_version_min);
        out[RESERVED..REASON].fill(0);
        out[REASON] = self.reason.as_u8();
    }

    pub fn encode(&self) -> [u8; HEADER_SIZE] {
        let mut out = [0u8; HEADER_SIZE];
        self.write_into(&mut out);
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use iggy_binary_protocol::ConsensusHeader;

    fn sdk_accepts(header: &EvictionHeader) -> bool {
        let aligned = crate::tests::Aligned(header.encode());
        let sdk: &iggy_binary_protocol::EvictionHeader = bytemuck::checked::from_bytes(&aligned.0);
        sdk.validate().is_ok()
            && sdk.reason as u8 == header.reason.as_u8()
            && sdk.client == header.client
    }

    #[test]
    fn given_every_reason_when_encoding_should_round_trip_and_satisfy_the_sdk() {
        for reason in EvictionReason::ALL.into_iter().skip(1) {
            let header = match reason {
                EvictionReason::IncompatibleProtocol => {
                    EvictionHeader::incompatible_protocol(9, 0x2C00, 0x2C00)
                }
                _ => EvictionHeader::new(9, reason),
            };
            assert_eq!(header.validate(), Ok(()));
            assert_eq!(EvictionHeader::decode(&header.encode()), Ok(header));
            assert!(sdk_accepts(&header), "{reason:?}");
        }
    }

    #[test]
    fn given_broken_fields_when_validating_should_reject() {
        let mut h = EvictionHeader::new(1, EvictionReason::NoSession);
        h.server_protocol_version = 5;
        assert!(h.validate().is_err());
        let mut h = EvictionHeader::incompatible_protocol(1, 10, 5);
        h.server_protocol_version_min = 11;
        assert!(h.validate().is_err());
        let mut h = EvictionHeader::new(1, EvictionReason::NoSession);
        h.client = 0;
        assert!(h.validate().is_err());
    }

    #[test]
    fn given_nonzero_reserved_byte_when_decoding_should_reject() {
        let mut bytes = EvictionHeader::new(1, EvictionReason::StaleClient).encode();
        bytes[200] = 1;
        assert!(EvictionHeader::decode(&bytes).is_err());
        bytes[200] = 0;
        bytes[255] = 16;
        assert_eq!(
            EvictionHeader::decode(&bytes),
            Err(HeaderError::UnknownEvictionReason { value: 16 })
        );
    }

    #[test]
    fn given_reasons_when_mapping_to_sdk_errors_should_follow_the_spec_table() {
        assert_eq!(EvictionReason::InvalidCredentials.sdk_error().as_u32(), 42);
        assert_eq!(EvictionReason::InvalidToken.sdk_error().as_u32(), 53);
        assert_eq!(EvictionReason::StaleClient.sdk_error().as_u32(), 30);
        assert_eq!(
            EvictionReason::IncompatibleProtocol.sdk_error().as_u32(),
            14003
        );
        assert_eq!(EvictionReason::MalformedLogin.sdk_error().as_u32(), 4);
        assert_eq!(EvictionReason::NoSession.sdk_error().as_u32(), 40);
        assert_eq!(EvictionReason::InvalidRequestBody.sdk_error().as_u32(), 3);
    }
}

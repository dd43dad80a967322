//! System requests (spec 10.1): snapshot, describe-options, attach consumer
//! session, get client. Ping, stats, cluster metadata, me and the client
//! list have empty bodies (see `requests::empty`).
//!
//! ```text
//! 11 GET_SNAPSHOT_FILE       compression u8 | types_count u8 | types_count × type u8
//! 13 DESCRIBE_OPTIONS        scope u8 (1 topic, 2 stream, 3 user)
//! 14 ATTACH_CONSUMER_SESSION client_id u128 | session u64 | metadata_watermark u64
//! 21 GET_CLIENT              client_id u32
//! ```

use super::exact;
use crate::wire::{DecodeError, Reader};

/// A snapshot request. Codes are kept raw; the server decides which
/// compression and snapshot types (spec 8.9) it supports.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GetSnapshot<'a> {
    pub compression: u8,
    pub types: &'a [u8],
}

impl<'a> GetSnapshot<'a> {
    pub fn decode(body: &'a [u8]) -> Result<Self, DecodeError> {
        exact(body, |r| {
            let compression = r.u8("compression")?;
            let count = usize::from(r.u8("types count")?);
            Ok(Self {
                compression,
                types: r.bytes("snapshot types", count)?,
            })
        })
    }
}

/// Which option catalog a DescribeOptions request asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum OptionsScope {
    Topic = 1,
    Stream = 2,
    User = 3,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DescribeOptions {
    pub scope: OptionsScope,
}

impl DescribeOptions {
    pub fn decode(body: &[u8]) -> Result<Self, DecodeError> {
        exact(body, |r| {
            let scope = match r.u8("scope")? {
                1 => OptionsScope::Topic,
                2 => OptionsScope::Stream,
                3 => OptionsScope::User,
                other => {
                    return Err(DecodeError::InvalidValue {
                        field: "scope",
                        at: 0,
                        value: u64::from(other),
                    });
                }
            };
            Ok(Self { scope })
        })
    }
}

/// Cluster routing only (spec 7.11).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AttachConsumerSession {
    pub client_id: u128,
    pub session: u64,
    pub metadata_watermark: u64,
}

impl AttachConsumerSession {
    pub fn decode(body: &[u8]) -> Result<Self, DecodeError> {
        exact(body, |r| Self::read(r))
    }

    pub(crate) fn read(r: &mut Reader<'_>) -> Result<Self, DecodeError> {
        Ok(Self {
            client_id: r.u128("client id")?,
            session: r.u64("session")?,
            metadata_watermark: r.u64("metadata watermark")?,
        })
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GetClient {
    pub client_id: u32,
}

impl GetClient {
    pub fn decode(body: &[u8]) -> Result<Self, DecodeError> {
        exact(body, |r| {
            Ok(Self {
                client_id: r.u32("client id")?,
            })
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use iggy_binary_protocol::WireEncode;
    use iggy_binary_protocol::requests::system::{
        AttachConsumerSessionRequest, DescribeOptionsRequest, GetClientRequest, GetSnapshotRequest,
    };

    #[test]
    fn given_sdk_snapshot_request_when_decoding_should_match() {
        let sdk = GetSnapshotRequest {
            compression: 4,
            snapshot_types: vec![1, 2, 100],
        };
        let bytes = sdk.to_bytes();
        assert_eq!(
            GetSnapshot::decode(&bytes),
            Ok(GetSnapshot {
                compression: 4,
                types: &[1, 2, 100]
            })
        );
        assert!(GetSnapshot::decode(&bytes[..bytes.len() - 1]).is_err());
    }

    #[test]
    fn given_sdk_describe_options_when_decoding_should_match_scope() {
        for (scope, ours) in [
            (1, OptionsScope::Topic),
            (2, OptionsScope::Stream),
            (3, OptionsScope::User),
        ] {
            let bytes = DescribeOptionsRequest { scope }.to_bytes();
            assert_eq!(
                DescribeOptions::decode(&bytes),
                Ok(DescribeOptions { scope: ours })
            );
        }
        assert!(DescribeOptions::decode(&[0]).is_err());
        assert!(DescribeOptions::decode(&[1, 0]).is_err());
    }

    #[test]
    fn given_sdk_attach_and_get_client_when_decoding_should_match() {
        let sdk = AttachConsumerSessionRequest {
            client_id: u128::MAX - 1,
            session: 7,
            metadata_watermark: 9,
        };
        let decoded = AttachConsumerSession::decode(&sdk.to_bytes()).unwrap();
        assert_eq!(
            (
                decoded.client_id,
                decoded.session,
                decoded.metadata_watermark
            ),
            (u128::MAX - 1, 7, 9)
        );
        assert_eq!(
            GetClient::decode(&GetClientRequest { client_id: 42 }.to_bytes()),
            Ok(GetClient { client_id: 42 })
        );
    }
}

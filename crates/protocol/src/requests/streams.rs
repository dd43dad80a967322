//! Stream requests (spec 10.4). The list (201) has an empty body.
//!
//! ```text
//! 200 GET_STREAM / 203 DELETE_STREAM / 205 PURGE_STREAM  stream_id Id
//! 202 CREATE_STREAM  name Name | options to end
//! 204 UPDATE_STREAM  stream_id Id | name Name | options to end
//! ```

use super::{exact, options_to_end};
use crate::primitives::{Identifier, Options, WireName};
use crate::wire::DecodeError;

/// A request naming one stream (get, delete, purge, list topics).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StreamRef<'a> {
    pub stream_id: Identifier<'a>,
}

impl<'a> StreamRef<'a> {
    pub fn decode(body: &'a [u8]) -> Result<Self, DecodeError> {
        exact(body, |r| {
            Ok(Self {
                stream_id: Identifier::decode(r, "stream id")?,
            })
        })
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CreateStream<'a> {
    pub name: WireName<'a>,
    pub options: Options<'a>,
}

impl<'a> CreateStream<'a> {
    pub fn decode(body: &'a [u8]) -> Result<Self, DecodeError> {
        exact(body, |r| {
            Ok(Self {
                name: WireName::decode(r, "stream name")?,
                options: options_to_end(r)?,
            })
        })
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct UpdateStream<'a> {
    pub stream_id: Identifier<'a>,
    pub name: WireName<'a>,
    pub options: Options<'a>,
}

impl<'a> UpdateStream<'a> {
    pub fn decode(body: &'a [u8]) -> Result<Self, DecodeError> {
        exact(body, |r| {
            Ok(Self {
                stream_id: Identifier::decode(r, "stream id")?,
                name: WireName::decode(r, "stream name")?,
                options: options_to_end(r)?,
            })
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::requests::sdk;
    use iggy_binary_protocol::requests::streams::{
        CreateStreamRequest, GetStreamRequest, UpdateStreamRequest,
    };
    use iggy_binary_protocol::{WireEncode, WireIdentifier, WireName as SdkName, WireOptions};

    #[test]
    fn given_sdk_stream_requests_when_decoding_should_match() {
        let sdk = CreateStreamRequest {
            name: SdkName::new("orders").unwrap(),
            options: WireOptions::empty(),
        };
        let bytes = sdk.to_bytes();
        let ours = CreateStream::decode(&bytes).unwrap();
        assert_eq!(ours.name.as_str(), "orders");
        assert!(ours.options.is_empty());

        let mut options = Vec::new();
        crate::primitives::put_kv_pair(&mut options, 2, b"k", 2, b"v");
        let sdk = UpdateStreamRequest {
            stream_id: sdk::named("orders"),
            name: SdkName::new("orders2").unwrap(),
            options: WireOptions::from_slice(&options).unwrap(),
        };
        let bytes = sdk.to_bytes();
        let ours = UpdateStream::decode(&bytes).unwrap();
        assert_eq!(ours.stream_id, Identifier::Name("orders"));
        assert_eq!(ours.name.as_str(), "orders2");
        assert_eq!(ours.options.get("k").unwrap().value, b"v");

        let get = GetStreamRequest {
            stream_id: WireIdentifier::numeric(5),
        };
        assert_eq!(
            StreamRef::decode(&get.to_bytes()).unwrap().stream_id,
            Identifier::Numeric(5)
        );
    }

    #[test]
    fn given_broken_options_when_decoding_create_should_reject() {
        assert!(CreateStream::decode(&[1, b's', 1, 1, 0, 0, 0, b'k']).is_err());
        assert!(CreateStream::decode(&[0]).is_err());
    }
}

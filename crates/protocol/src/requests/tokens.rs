//! Personal access token requests (spec 10.3). The list (41) has an empty
//! body; PAT login (45) is in `login.rs`.
//!
//! ```text
//! 42 CREATE_PERSONAL_ACCESS_TOKEN  name Name | expiry u64 (µs; 0 default, u64::MAX never)
//! 43 DELETE_PERSONAL_ACCESS_TOKEN  name Name
//! ```

use super::exact;
use crate::primitives::WireName;
use crate::wire::DecodeError;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CreatePersonalAccessToken<'a> {
    pub name: WireName<'a>,
    pub expiry_us: u64,
}

impl<'a> CreatePersonalAccessToken<'a> {
    pub fn decode(body: &'a [u8]) -> Result<Self, DecodeError> {
        exact(body, |r| {
            Ok(Self {
                name: WireName::decode(r, "token name")?,
                expiry_us: r.u64("expiry")?,
            })
        })
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DeletePersonalAccessToken<'a> {
    pub name: WireName<'a>,
}

impl<'a> DeletePersonalAccessToken<'a> {
    pub fn decode(body: &'a [u8]) -> Result<Self, DecodeError> {
        exact(body, |r| {
            Ok(Self {
                name: WireName::decode(r, "token name")?,
            })
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use iggy_binary_protocol::requests::personal_access_tokens::{
        CreatePersonalAccessTokenRequest, DeletePersonalAccessTokenRequest,
    };
    use iggy_binary_protocol::{WireEncode, WireName as SdkName};

    #[test]
    fn given_sdk_token_requests_when_decoding_should_match() {
        let sdk = CreatePersonalAccessTokenRequest {
            name: SdkName::new("ci").unwrap(),
            expiry: u64::MAX,
        };
        let bytes = sdk.to_bytes();
        let ours = CreatePersonalAccessToken::decode(&bytes).unwrap();
        assert_eq!((ours.name.as_str(), ours.expiry_us), ("ci", u64::MAX));
        let sdk = DeletePersonalAccessTokenRequest {
            name: SdkName::new("ci").unwrap(),
        };
        assert_eq!(
            DeletePersonalAccessToken::decode(&sdk.to_bytes())
                .unwrap()
                .name
                .as_str(),
            "ci"
        );
        assert!(DeletePersonalAccessToken::decode(&[2, b'c', b'i', 0]).is_err());
    }
}

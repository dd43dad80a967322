//! Personal access tokens: minting, hashing and expiry rules (storage spec
//! §13).
//!
//! A raw token is 50 random bytes in standard padded base64 (68 chars),
//! minted on the receiving node and returned once; only its BLAKE3 hex
//! digest is replicated. Requested expiries are durations in µs: 0 = server
//! default, `u64::MAX` = never. [`resolve_expiry`] turns one into the
//! absolute `expires_at` that the create operation carries.

use rand::RngCore;

use super::errors::MetadataError;

pub const TOKEN_RANDOM_BYTES: usize = 50;
pub const TOKEN_ENCODED_LEN: usize = 68;
/// Default `personal_access_token.max_tokens_per_user`.
pub const DEFAULT_MAX_TOKENS_PER_USER: u32 = 100;
/// Requested expiry meaning "use the server default".
pub const EXPIRY_SERVER_DEFAULT: u64 = 0;
/// Requested expiry meaning "never expires".
pub const EXPIRY_NEVER: u64 = u64::MAX;

const _: () = assert!(TOKEN_RANDOM_BYTES.div_ceil(3) * 4 == TOKEN_ENCODED_LEN);

const BASE64_ALPHABET: &[u8; 64] =
    b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

/// A freshly minted token: the raw string for the client, the hash to store.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MintedToken {
    pub raw: String,
    pub hash: String,
}

/// Mints a token from the thread RNG.
pub fn mint_token() -> MintedToken {
    mint_token_with(&mut rand::rng())
}

/// Mints a token from the given RNG (tests and simulators pass a seeded one).
pub fn mint_token_with(rng: &mut impl RngCore) -> MintedToken {
    let mut bytes = [0u8; TOKEN_RANDOM_BYTES];
    rng.fill_bytes(&mut bytes);
    let raw = base64_encode(&bytes);
    assert_eq!(raw.len(), TOKEN_ENCODED_LEN);
    let hash = hash_token(&raw);
    MintedToken { raw, hash }
}

/// BLAKE3 of the raw token's bytes, lowercase hex.
pub fn hash_token(raw: &str) -> String {
    blake3::hash(raw.as_bytes()).to_hex().to_string()
}

/// Resolves a requested expiry into an absolute deadline (`None` = never).
/// `server_default_us` is the configured default duration, `None` = never.
pub fn resolve_expiry(
    requested_us: u64,
    now_us: u64,
    server_default_us: Option<u64>,
) -> Result<Option<u64>, MetadataError> {
    let duration = match requested_us {
        EXPIRY_NEVER => return Ok(None),
        EXPIRY_SERVER_DEFAULT => match server_default_us {
            None | Some(EXPIRY_NEVER) => return Ok(None),
            Some(duration) => duration,
        },
        duration => duration,
    };
    let expires_at = now_us
        .checked_add(duration)
        .ok_or(MetadataError::InvalidTokenExpiry {
            reason: "expiry overflows the clock",
        })?;
    Ok(Some(expires_at))
}

/// Standard base64 with `=` padding.
pub fn base64_encode(bytes: &[u8]) -> String {
    let mut out = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for chunk in bytes.chunks(3) {
        let b = [
            chunk[0],
            *chunk.get(1).unwrap_or(&0),
            *chunk.get(2).unwrap_or(&0),
        ];
        let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        for i in 0..4 {
            if i <= chunk.len() {
                let index = (n >> (18 - 6 * i)) & 0x3F;
                out.push(char::from(BASE64_ALPHABET[index as usize]));
            } else {
                out.push('=');
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use rand::SeedableRng;
    use rand::rngs::StdRng;

    use super::*;

    #[test]
    fn given_rfc4648_vectors_when_encoding_should_match() {
        let vectors = [
            ("", ""),
            ("f", "Zg=="),
            ("fo", "Zm8="),
            ("foo", "Zm9v"),
            ("foob", "Zm9vYg=="),
            ("fooba", "Zm9vYmE="),
            ("foobar", "Zm9vYmFy"),
        ];
        for (input, expected) in vectors {
            assert_eq!(base64_encode(input.as_bytes()), expected);
        }
        assert_eq!(base64_encode(&[0xFB, 0xFF]), "+/8=");
    }

    #[test]
    fn given_rng_when_minting_should_produce_68_chars_and_matching_hash() {
        let token = mint_token_with(&mut StdRng::seed_from_u64(1));
        assert_eq!(token.raw.len(), TOKEN_ENCODED_LEN);
        assert!(token.raw.ends_with('='));
        assert_eq!(token.hash, hash_token(&token.raw));
        assert_eq!(token.hash.len(), 64);
        assert_ne!(mint_token().raw, mint_token().raw);
    }

    #[test]
    fn given_known_input_when_hashing_should_give_blake3_hex() {
        assert_eq!(
            hash_token(""),
            "af1349b9f5f9a1a6a0404dea36dcc9499bcb25c9adc112b7cc9a93cae41f3262"
        );
    }

    #[test]
    fn given_requested_expiries_when_resolving_should_follow_sentinels() {
        assert_eq!(resolve_expiry(EXPIRY_NEVER, 10, Some(5)), Ok(None));
        assert_eq!(resolve_expiry(EXPIRY_SERVER_DEFAULT, 10, None), Ok(None));
        assert_eq!(
            resolve_expiry(EXPIRY_SERVER_DEFAULT, 10, Some(5)),
            Ok(Some(15))
        );
        assert_eq!(resolve_expiry(7, 10, None), Ok(Some(17)));
        let overflow = resolve_expiry(u64::MAX - 1, 10, None).map_err(|e| e.code());
        assert_eq!(overflow, Err(56));
    }
}

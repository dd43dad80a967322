//! Self-issued JSON Web Tokens, signed with HMAC (HS256, HS384, HS512) through
//! the `jsonwebtoken` crate.
//!
//! A token is three base64url fields (URL-safe alphabet, no padding) joined by
//! dots: header, claims ([`Claims`]) and the HMAC of the first two under the
//! encoding secret. The library signs, checks the signature and the header's
//! algorithm; this module keeps the rules the HTTP spec §5.2 adds around it.
//!
//! Verification ([`Keys::verify`]) is sans-IO: the caller passes the current
//! time. It checks, in order, the token's shape, that the header names exactly
//! the configured algorithm (so `"none"` and every other algorithm are refused
//! before any key is used), the signature, expiry and not-before with the
//! configured leeway, the issuer and the audience. The `aud` claim may be a
//! single string or an array of strings; an array is accepted when any of its
//! elements is a valid audience.
//!
//! The module also makes the random pieces a token needs: a UUIDv7 token id
//! ([`uuid_v7`]) and a random signing secret ([`random_secret`]).

use std::collections::HashSet;

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use jsonwebtoken::errors::ErrorKind;
use jsonwebtoken::{DecodingKey, EncodingKey, Header, Validation};
use rand::Rng;
use rand::distr::Alphanumeric;
use serde::{Deserialize, Serialize};

/// The HMAC algorithm a token is signed with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Algorithm {
    /// HMAC with SHA-256.
    Hs256,
    /// HMAC with SHA-384.
    Hs384,
    /// HMAC with SHA-512.
    Hs512,
}

impl Algorithm {
    /// Parses the config value "HS256"/"HS384"/"HS512" (case-insensitive);
    /// anything else is `None`.
    pub fn parse(s: &str) -> Option<Self> {
        [Self::Hs256, Self::Hs384, Self::Hs512]
            .into_iter()
            .find(|alg| alg.name().eq_ignore_ascii_case(s))
    }

    /// The JOSE header `alg` value: "HS256", "HS384" or "HS512".
    pub fn name(self) -> &'static str {
        match self {
            Self::Hs256 => "HS256",
            Self::Hs384 => "HS384",
            Self::Hs512 => "HS512",
        }
    }

    fn library(self) -> jsonwebtoken::Algorithm {
        match self {
            Self::Hs256 => jsonwebtoken::Algorithm::HS256,
            Self::Hs384 => jsonwebtoken::Algorithm::HS384,
            Self::Hs512 => jsonwebtoken::Algorithm::HS512,
        }
    }
}

/// The claims a token carries.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Claims {
    /// Unique token id.
    pub jti: String,
    /// User id as a decimal string.
    pub sub: String,
    /// Issuer.
    pub iss: String,
    /// Audience. On verification this is the valid audience the token named.
    pub aud: String,
    /// Issued at, Unix seconds.
    pub iat: u64,
    /// Expires at, Unix seconds.
    pub exp: u64,
    /// Not valid before, Unix seconds.
    pub nbf: u64,
}

/// The JOSE header as read before any key is used; only `alg` matters.
#[derive(Deserialize)]
pub(super) struct HeaderIn {
    pub alg: String,
}

/// The `aud` claim as found in a token: one string or an array of strings.
#[derive(Debug, Clone, Deserialize)]
#[serde(untagged)]
pub(super) enum Audience {
    One(String),
    Many(Vec<String>),
}

impl Audience {
    /// The first audience in the token that `valid` accepts.
    pub(super) fn pick(self, valid: impl Fn(&str) -> bool) -> Option<String> {
        let candidates = match self {
            Self::One(one) => vec![one],
            Self::Many(many) => many,
        };
        candidates.into_iter().find(|candidate| valid(candidate))
    }
}

/// The claims as found in a token, before the audience is normalised.
#[derive(Deserialize)]
struct RawClaims {
    jti: String,
    sub: String,
    iss: String,
    aud: Audience,
    iat: u64,
    exp: u64,
    nbf: u64,
}

/// Why a token was refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum JwtError {
    /// Not three base64url fields of the expected JSON.
    Malformed,
    /// The header's `alg` is not an accepted algorithm.
    UnsupportedAlgorithm,
    /// The signature does not match.
    BadSignature,
    /// The token expired (beyond the leeway).
    Expired,
    /// The token is not valid yet (beyond the leeway).
    NotYetValid,
    /// The issuer is not one of the valid issuers.
    WrongIssuer,
    /// No audience in the token is one of the valid audiences.
    WrongAudience,
    /// A trusted issuer published no key with the token's `kid` (yet).
    UnknownKey,
}

impl std::fmt::Display for JwtError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let message = match self {
            Self::Malformed => "malformed token",
            Self::UnsupportedAlgorithm => "unsupported algorithm",
            Self::BadSignature => "invalid signature",
            Self::Expired => "token expired",
            Self::NotYetValid => "token not yet valid",
            Self::WrongIssuer => "invalid issuer",
            Self::WrongAudience => "invalid audience",
            Self::UnknownKey => "unknown signing key",
        };
        f.write_str(message)
    }
}

impl std::error::Error for JwtError {}

impl From<jsonwebtoken::errors::Error> for JwtError {
    /// The library's refusals in this module's words.
    fn from(error: jsonwebtoken::errors::Error) -> Self {
        match error.kind() {
            ErrorKind::InvalidSignature => Self::BadSignature,
            ErrorKind::InvalidAlgorithm
            | ErrorKind::InvalidAlgorithmName
            | ErrorKind::UnsupportedAlgorithm
            | ErrorKind::MissingAlgorithm => Self::UnsupportedAlgorithm,
            ErrorKind::ExpiredSignature => Self::Expired,
            ErrorKind::ImmatureSignature => Self::NotYetValid,
            ErrorKind::InvalidIssuer => Self::WrongIssuer,
            ErrorKind::InvalidAudience => Self::WrongAudience,
            _ => Self::Malformed,
        }
    }
}

/// Signing and verification keys plus the checks applied on verification.
pub struct Keys {
    algorithm: Algorithm,
    encoding_key: EncodingKey,
    decoding_key: DecodingKey,
    valid_issuers: Vec<String>,
    valid_audiences: Vec<String>,
    leeway_secs: u64,
}

impl std::fmt::Debug for Keys {
    /// Shows the settings but never the secrets.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Keys")
            .field("algorithm", &self.algorithm)
            .field("valid_issuers", &self.valid_issuers)
            .field("valid_audiences", &self.valid_audiences)
            .field("leeway_secs", &self.leeway_secs)
            .finish_non_exhaustive()
    }
}

/// The settings [`Keys::new`] takes besides the secrets.
pub struct KeyRules {
    pub valid_issuers: Vec<String>,
    pub valid_audiences: Vec<String>,
    /// Tolerance on `exp` and `nbf`.
    pub leeway_secs: u64,
}

impl Keys {
    /// Keys that sign with `encoding_secret` and verify with `decoding_secret`
    /// (the same bytes for HMAC unless a secret is being rotated).
    pub fn new(
        algorithm: Algorithm,
        encoding_secret: &[u8],
        decoding_secret: &[u8],
        rules: KeyRules,
    ) -> Self {
        Self {
            algorithm,
            encoding_key: EncodingKey::from_secret(encoding_secret)
                .expect("HMAC accepts keys of any length"),
            decoding_key: DecodingKey::from_secret(decoding_secret)
                .expect("HMAC accepts keys of any length"),
            valid_issuers: rules.valid_issuers,
            valid_audiences: rules.valid_audiences,
            leeway_secs: rules.leeway_secs,
        }
    }

    /// Header {"typ":"JWT","alg":..} . claims . signature, each base64url
    /// without padding.
    pub fn mint(&self, claims: &Claims) -> String {
        jsonwebtoken::encode(
            &Header::new(self.algorithm.library()),
            claims,
            &self.encoding_key,
        )
        .expect("HMAC signing of serializable claims cannot fail")
    }

    /// Verifies structure, header `alg` (must equal the configured algorithm),
    /// signature, `exp` (`now > exp + leeway` is [`JwtError::Expired`]), `nbf`
    /// (`now + leeway < nbf` is [`JwtError::NotYetValid`]), issuer and audience,
    /// and returns the claims. `now` is in Unix seconds. When the token's `aud`
    /// is an array, the returned claims hold the first valid element of it.
    pub fn verify(&self, token: &str, now: u64) -> Result<Claims, JwtError> {
        let header: HeaderIn = peek_json(token, 0)?;
        if header.alg != self.algorithm.name() {
            return Err(JwtError::UnsupportedAlgorithm);
        }
        let raw: RawClaims =
            jsonwebtoken::decode(token, &self.decoding_key, &self.signature_only())?.claims;
        check_times(raw.exp, raw.nbf, now, self.leeway_secs)?;
        if !self.valid_issuers.contains(&raw.iss) {
            return Err(JwtError::WrongIssuer);
        }
        let aud = raw
            .aud
            .pick(|candidate| self.valid_audiences.iter().any(|v| v == candidate))
            .ok_or(JwtError::WrongAudience)?;
        Ok(Claims {
            jti: raw.jti,
            sub: raw.sub,
            iss: raw.iss,
            aud,
            iat: raw.iat,
            exp: raw.exp,
            nbf: raw.nbf,
        })
    }

    /// The library checks the algorithm and the signature only; the claims
    /// are checked here against the caller's clock.
    fn signature_only(&self) -> Validation {
        let mut validation = Validation::new(self.algorithm.library());
        validation.required_spec_claims = HashSet::new();
        validation.validate_exp = false;
        validation.validate_nbf = false;
        validation.validate_aud = false;
        validation
    }
}

/// `exp` and `nbf` against `now` with `leeway_secs` either side.
pub(super) fn check_times(exp: u64, nbf: u64, now: u64, leeway_secs: u64) -> Result<(), JwtError> {
    if now > exp.saturating_add(leeway_secs) {
        return Err(JwtError::Expired);
    }
    if now.saturating_add(leeway_secs) < nbf {
        return Err(JwtError::NotYetValid);
    }
    Ok(())
}

/// The JSON of field `index` (0 header, 1 claims) of a three-field token,
/// read without checking the signature: only to choose how to verify it.
pub(super) fn peek_json<T: serde::de::DeserializeOwned>(
    token: &str,
    index: usize,
) -> Result<T, JwtError> {
    let fields: Vec<&str> = token.split('.').collect();
    if fields.len() != 3 {
        return Err(JwtError::Malformed);
    }
    let bytes = URL_SAFE_NO_PAD
        .decode(fields[index])
        .map_err(|_| JwtError::Malformed)?;
    serde_json::from_slice(&bytes).map_err(|_| JwtError::Malformed)
}

/// A fresh UUIDv7 string (RFC 9562: 48-bit Unix ms timestamp, version 7,
/// variant `10`, the rest random), lowercase hyphenated, e.g.
/// "0196a8d2-7c3e-7b6a-9a1e-3f2b1c0d4e5f". Only the low 48 bits of `unix_ms`
/// are used.
pub fn uuid_v7(unix_ms: u64) -> String {
    let mut bytes: [u8; 16] = rand::rng().random();
    bytes[..6].copy_from_slice(&unix_ms.to_be_bytes()[2..]);
    bytes[6] = 0x70 | (bytes[6] & 0x0f);
    bytes[8] = 0x80 | (bytes[8] & 0x3f);
    let hex: String = bytes.iter().map(|byte| format!("{byte:02x}")).collect();
    format!(
        "{}-{}-{}-{}-{}",
        &hex[0..8],
        &hex[8..12],
        &hex[12..16],
        &hex[16..20],
        &hex[20..32]
    )
}

/// A random secret of 32..=63 alphanumeric characters (used when no secret is
/// configured).
pub fn random_secret() -> String {
    let mut rng = rand::rng();
    let len = rng.random_range(32..=63);
    (0..len)
        .map(|_| char::from(rng.sample(Alphanumeric)))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    const ISSUER: &str = "iggy.apache.org";
    const AUDIENCE: &str = "iggy.apache.org";
    const SECRET: &[u8] = b"top secret";

    fn keys_with(algorithm: Algorithm, secret: &[u8], leeway_secs: u64) -> Keys {
        Keys::new(
            algorithm,
            secret,
            secret,
            KeyRules {
                valid_issuers: vec![ISSUER.to_string()],
                valid_audiences: vec![AUDIENCE.to_string(), "other-audience".to_string()],
                leeway_secs,
            },
        )
    }

    fn keys(algorithm: Algorithm) -> Keys {
        keys_with(algorithm, SECRET, 0)
    }

    fn claims() -> Claims {
        Claims {
            jti: "0196a8d2-7c3e-7b6a-9a1e-3f2b1c0d4e5f".to_string(),
            sub: "42".to_string(),
            iss: ISSUER.to_string(),
            aud: AUDIENCE.to_string(),
            iat: 1_000,
            exp: 2_000,
            nbf: 1_000,
        }
    }

    fn b64(bytes: &[u8]) -> String {
        URL_SAFE_NO_PAD.encode(bytes)
    }

    /// An HS256 token over arbitrary header and payload JSON, signed with
    /// the library's raw signing function.
    fn hs256_token(header: &str, payload: &str, secret: &[u8]) -> String {
        let input = format!("{}.{}", b64(header.as_bytes()), b64(payload.as_bytes()));
        let key = EncodingKey::from_secret(secret).unwrap();
        let signature =
            jsonwebtoken::crypto::sign(input.as_bytes(), &key, jsonwebtoken::Algorithm::HS256)
                .unwrap();
        format!("{input}.{signature}")
    }

    fn fields(token: &str) -> Vec<String> {
        token.split('.').map(str::to_string).collect()
    }

    #[test]
    fn algorithm_parse_and_name() {
        assert_eq!(Algorithm::parse("HS256"), Some(Algorithm::Hs256));
        assert_eq!(Algorithm::parse("hs384"), Some(Algorithm::Hs384));
        assert_eq!(Algorithm::parse("Hs512"), Some(Algorithm::Hs512));
        assert_eq!(Algorithm::parse("none"), None);
        assert_eq!(Algorithm::parse("RS256"), None);
        assert_eq!(Algorithm::parse(""), None);
        assert_eq!(Algorithm::Hs384.name(), "HS384");
    }

    #[test]
    fn round_trip_each_algorithm() {
        for algorithm in [Algorithm::Hs256, Algorithm::Hs384, Algorithm::Hs512] {
            let keys = keys(algorithm);
            let token = keys.mint(&claims());
            assert_eq!(keys.verify(&token, 1_500), Ok(claims()), "{algorithm:?}");
        }
    }

    #[test]
    fn signature_length_matches_algorithm() {
        for (algorithm, len) in [
            (Algorithm::Hs256, 32),
            (Algorithm::Hs384, 48),
            (Algorithm::Hs512, 64),
        ] {
            let token = keys(algorithm).mint(&claims());
            let signature = URL_SAFE_NO_PAD.decode(&fields(&token)[2]).unwrap();
            assert_eq!(signature.len(), len, "{algorithm:?}");
        }
    }

    /// Tokens minted before the move to the library (header fields in the
    /// order alg, typ) still verify: only the bytes under the signature count.
    #[test]
    fn given_token_in_previous_layout_when_verifying_should_accept() {
        let keys = keys_with(Algorithm::Hs256, b"secret", 0);
        let header = r#"{"alg":"HS256","typ":"JWT"}"#;
        let payload = r#"{"jti":"id-1","sub":"42","iss":"iggy.apache.org","aud":"iggy.apache.org","iat":1,"exp":2,"nbf":1}"#;
        let token = hs256_token(header, payload, b"secret");
        let claims = keys.verify(&token, 1).unwrap();
        assert_eq!(claims.sub, "42");
        assert_eq!(claims.jti, "id-1");
    }

    #[test]
    fn given_minted_token_when_reading_header_should_name_hs256_and_jwt() {
        let token = keys(Algorithm::Hs256).mint(&claims());
        let header: serde_json::Value = peek_json(&token, 0).unwrap();
        assert_eq!(header["alg"], "HS256");
        assert_eq!(header["typ"], "JWT");
    }

    #[test]
    fn tampered_payload_refused() {
        let keys = keys(Algorithm::Hs256);
        let token = fields(&keys.mint(&claims()));
        let mut forged = claims();
        forged.sub = "1".to_string();
        let payload = b64(&serde_json::to_vec(&forged).unwrap());
        let tampered = format!("{}.{}.{}", token[0], payload, token[2]);
        assert_eq!(keys.verify(&tampered, 1_500), Err(JwtError::BadSignature));
    }

    #[test]
    fn tampered_signature_refused() {
        let keys = keys(Algorithm::Hs256);
        let token = fields(&keys.mint(&claims()));
        let mut signature = URL_SAFE_NO_PAD.decode(&token[2]).unwrap();
        signature[0] ^= 1;
        let tampered = format!("{}.{}.{}", token[0], token[1], b64(&signature));
        assert_eq!(keys.verify(&tampered, 1_500), Err(JwtError::BadSignature));
        let truncated = format!("{}.{}.{}", token[0], token[1], b64(&signature[..31]));
        assert_eq!(keys.verify(&truncated, 1_500), Err(JwtError::BadSignature));
        let empty = format!("{}.{}.", token[0], token[1]);
        assert_eq!(keys.verify(&empty, 1_500), Err(JwtError::BadSignature));
    }

    #[test]
    fn other_secret_refused() {
        let token = keys_with(Algorithm::Hs256, b"another secret", 0).mint(&claims());
        assert_eq!(
            keys(Algorithm::Hs256).verify(&token, 1_500),
            Err(JwtError::BadSignature)
        );
    }

    #[test]
    fn separate_decoding_secret_is_used() {
        let minter = keys_with(Algorithm::Hs256, b"old", 0);
        let verifier = Keys::new(
            Algorithm::Hs256,
            b"new",
            b"old",
            KeyRules {
                valid_issuers: vec![ISSUER.to_string()],
                valid_audiences: vec![AUDIENCE.to_string()],
                leeway_secs: 0,
            },
        );
        let token = minter.mint(&claims());
        assert_eq!(verifier.verify(&token, 1_500), Ok(claims()));
    }

    #[test]
    fn alg_none_refused() {
        let keys = keys(Algorithm::Hs256);
        let payload = b64(&serde_json::to_vec(&claims()).unwrap());
        for alg in ["none", "None", "NONE"] {
            let header = b64(format!(r#"{{"alg":"{alg}","typ":"JWT"}}"#).as_bytes());
            let unsigned = format!("{header}.{payload}.");
            assert_eq!(
                keys.verify(&unsigned, 1_500),
                Err(JwtError::UnsupportedAlgorithm)
            );
        }
    }

    #[test]
    fn other_alg_refused() {
        let token = keys(Algorithm::Hs384).mint(&claims());
        assert_eq!(
            keys(Algorithm::Hs256).verify(&token, 1_500),
            Err(JwtError::UnsupportedAlgorithm)
        );
        let payload = serde_json::to_string(&claims()).unwrap();
        let lowercase = hs256_token(r#"{"alg":"hs256","typ":"JWT"}"#, &payload, SECRET);
        assert_eq!(
            keys(Algorithm::Hs256).verify(&lowercase, 1_500),
            Err(JwtError::UnsupportedAlgorithm)
        );
    }

    #[test]
    fn expiry_boundaries() {
        let token = keys(Algorithm::Hs256).mint(&claims());
        let strict = keys(Algorithm::Hs256);
        assert!(strict.verify(&token, 2_000).is_ok());
        assert_eq!(strict.verify(&token, 2_001), Err(JwtError::Expired));
        let lenient = keys_with(Algorithm::Hs256, SECRET, 5);
        assert!(lenient.verify(&token, 2_005).is_ok());
        assert_eq!(lenient.verify(&token, 2_006), Err(JwtError::Expired));
    }

    #[test]
    fn not_before_boundaries() {
        let token = keys(Algorithm::Hs256).mint(&claims());
        let strict = keys(Algorithm::Hs256);
        assert!(strict.verify(&token, 1_000).is_ok());
        assert_eq!(strict.verify(&token, 999), Err(JwtError::NotYetValid));
        let lenient = keys_with(Algorithm::Hs256, SECRET, 5);
        assert!(lenient.verify(&token, 995).is_ok());
        assert_eq!(lenient.verify(&token, 994), Err(JwtError::NotYetValid));
    }

    #[test]
    fn huge_leeway_does_not_overflow() {
        let mut late = claims();
        late.exp = u64::MAX;
        late.nbf = u64::MAX;
        let keys = keys_with(Algorithm::Hs256, SECRET, u64::MAX);
        let token = keys.mint(&late);
        assert_eq!(keys.verify(&token, u64::MAX), Ok(late));
    }

    #[test]
    fn wrong_issuer_refused() {
        let keys = keys(Algorithm::Hs256);
        let mut foreign = claims();
        foreign.iss = "someone-else".to_string();
        let token = keys.mint(&foreign);
        assert_eq!(keys.verify(&token, 1_500), Err(JwtError::WrongIssuer));
    }

    #[test]
    fn wrong_audience_refused() {
        let keys = keys(Algorithm::Hs256);
        let mut foreign = claims();
        foreign.aud = "someone-else".to_string();
        let token = keys.mint(&foreign);
        assert_eq!(keys.verify(&token, 1_500), Err(JwtError::WrongAudience));
    }

    fn token_with_audience(aud: &str) -> String {
        let header = r#"{"alg":"HS256","typ":"JWT"}"#;
        let payload = format!(
            r#"{{"jti":"j","sub":"1","iss":"{ISSUER}","aud":{aud},"iat":1000,"exp":2000,"nbf":1000}}"#
        );
        hs256_token(header, &payload, SECRET)
    }

    #[test]
    fn audience_array_accepted_when_any_is_valid() {
        let keys = keys(Algorithm::Hs256);
        let token = token_with_audience(r#"["x","other-audience","y"]"#);
        let claims = keys.verify(&token, 1_500).unwrap();
        assert_eq!(claims.aud, "other-audience");
        assert_eq!(claims.sub, "1");
    }

    #[test]
    fn audience_array_refused_when_none_is_valid() {
        let keys = keys(Algorithm::Hs256);
        for aud in [r#"["x","y"]"#, "[]"] {
            let token = token_with_audience(aud);
            assert_eq!(keys.verify(&token, 1_500), Err(JwtError::WrongAudience));
        }
    }

    #[test]
    fn audience_of_wrong_type_is_malformed() {
        let keys = keys(Algorithm::Hs256);
        for aud in ["42", "[1,2]", "null", r#"{"a":"b"}"#] {
            let token = token_with_audience(aud);
            assert_eq!(
                keys.verify(&token, 1_500),
                Err(JwtError::Malformed),
                "{aud}"
            );
        }
    }

    #[test]
    fn garbage_is_malformed() {
        let keys = keys(Algorithm::Hs256);
        let valid = keys.mint(&claims());
        let extra = format!("{valid}.abc");
        for garbage in [
            "",
            ".",
            "..",
            "a.b",
            "a.b.c",
            "a.b.c.d",
            "!!!.@@@.###",
            "not a token",
            extra.as_str(),
        ] {
            assert_eq!(
                keys.verify(garbage, 1_500),
                Err(JwtError::Malformed),
                "{garbage:?}"
            );
        }
    }

    #[test]
    fn signed_non_json_payload_is_malformed() {
        let keys = keys(Algorithm::Hs256);
        let header = r#"{"alg":"HS256","typ":"JWT"}"#;
        for payload in ["not json", "{}", r#"{"sub":"1"}"#] {
            let token = hs256_token(header, payload, SECRET);
            assert_eq!(
                keys.verify(&token, 1_500),
                Err(JwtError::Malformed),
                "{payload}"
            );
        }
    }

    #[test]
    fn padded_base64_is_malformed() {
        let keys = keys(Algorithm::Hs256);
        let token = fields(&keys.mint(&claims()));
        let padded = format!("{}.{}.{}=", token[0], token[1], token[2]);
        assert_eq!(keys.verify(&padded, 1_500), Err(JwtError::Malformed));
    }

    #[test]
    fn error_messages_are_short_and_lowercase() {
        for error in [
            JwtError::Malformed,
            JwtError::UnsupportedAlgorithm,
            JwtError::BadSignature,
            JwtError::Expired,
            JwtError::NotYetValid,
            JwtError::WrongIssuer,
            JwtError::WrongAudience,
            JwtError::UnknownKey,
        ] {
            let message = error.to_string();
            assert!(!message.is_empty());
            assert_eq!(message, message.to_lowercase());
        }
    }

    #[test]
    fn debug_hides_secrets() {
        let debug = format!("{:?}", keys(Algorithm::Hs256));
        assert!(!debug.contains("top secret"));
        assert!(!debug.contains("116")); // first byte of the secret as a number
    }

    #[test]
    fn uuid_v7_format() {
        let unix_ms = 0x0196_a8d2_7c3e;
        let uuid = uuid_v7(unix_ms);
        assert_eq!(uuid.len(), 36);
        let groups: Vec<&str> = uuid.split('-').collect();
        let lengths: Vec<usize> = groups.iter().map(|group| group.len()).collect();
        assert_eq!(lengths, [8, 4, 4, 4, 12]);
        assert!(
            uuid.chars()
                .all(|c| c == '-' || c.is_ascii_digit() || ('a'..='f').contains(&c))
        );
        assert!(uuid.starts_with("0196a8d2-7c3e-"));
        assert_eq!(&groups[2][..1], "7");
        let variant = u8::from_str_radix(&groups[3][..1], 16).unwrap();
        assert_eq!(variant & 0b1100, 0b1000);
        assert_ne!(uuid, uuid_v7(unix_ms));
    }

    #[test]
    fn uuid_v7_timestamp_uses_low_48_bits() {
        let uuid = uuid_v7(u64::MAX);
        assert!(uuid.starts_with("ffffffff-ffff-7"));
        let uuid = uuid_v7(1);
        assert!(uuid.starts_with("00000000-0001-7"));
    }

    #[test]
    fn random_secret_shape() {
        let secret = random_secret();
        assert!((32..=63).contains(&secret.len()));
        assert!(secret.chars().all(|c| c.is_ascii_alphanumeric()));
        assert_ne!(secret, random_secret());
    }
}

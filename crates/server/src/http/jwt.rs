//! JSON Web Tokens signed with HMAC (HS256, HS384, HS512).
//!
//! A token is three base64url fields (URL-safe alphabet, no padding) joined by
//! dots:
//!
//! ```text
//! base64url(header) "." base64url(claims) "." base64url(signature)
//! ```
//!
//! The header is the JSON object `{"alg":"HS256","typ":"JWT"}` (with the
//! configured algorithm), the claims are the JSON form of [`Claims`], and the
//! signature is the HMAC of the ASCII text `base64url(header) "." base64url(claims)`
//! under the encoding secret.
//!
//! Verification ([`Keys::verify`]) is sans-IO: the caller passes the current
//! time. It checks, in order, the token's shape, that the header names exactly
//! the configured algorithm (so `"none"` and every other algorithm are refused),
//! the signature (compared in constant time), expiry and not-before with the
//! configured leeway, the issuer and the audience. The `aud` claim may be a
//! single string or an array of strings; an array is accepted when any of its
//! elements is a valid audience.
//!
//! The module also makes the random pieces a token needs: a UUIDv7 token id
//! ([`uuid_v7`]) and a random signing secret ([`random_secret`]).

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use hmac::digest::KeyInit;
use hmac::{Hmac, Mac};
use rand::Rng;
use rand::distr::Alphanumeric;
use serde::{Deserialize, Serialize};
use sha2::{Sha256, Sha384, Sha512};

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

    /// The HMAC of `input` under `key`.
    fn sign(self, key: &[u8], input: &[u8]) -> Vec<u8> {
        match self {
            Self::Hs256 => hmac_sign::<Hmac<Sha256>>(key, input),
            Self::Hs384 => hmac_sign::<Hmac<Sha384>>(key, input),
            Self::Hs512 => hmac_sign::<Hmac<Sha512>>(key, input),
        }
    }

    /// Whether `signature` is the HMAC of `input` under `key`, compared in
    /// constant time.
    fn verify(self, key: &[u8], input: &[u8], signature: &[u8]) -> bool {
        match self {
            Self::Hs256 => hmac_verify::<Hmac<Sha256>>(key, input, signature),
            Self::Hs384 => hmac_verify::<Hmac<Sha384>>(key, input, signature),
            Self::Hs512 => hmac_verify::<Hmac<Sha512>>(key, input, signature),
        }
    }
}

/// A keyed MAC over `input`; HMAC accepts keys of any length.
fn new_mac<M: Mac + KeyInit>(key: &[u8], input: &[u8]) -> M {
    let mut mac = <M as KeyInit>::new_from_slice(key).expect("HMAC accepts keys of any length");
    Mac::update(&mut mac, input);
    mac
}

fn hmac_sign<M: Mac + KeyInit>(key: &[u8], input: &[u8]) -> Vec<u8> {
    new_mac::<M>(key, input).finalize().into_bytes().to_vec()
}

fn hmac_verify<M: Mac + KeyInit>(key: &[u8], input: &[u8], signature: &[u8]) -> bool {
    new_mac::<M>(key, input).verify_slice(signature).is_ok()
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

/// The JOSE header as minted.
#[derive(Serialize)]
struct HeaderOut<'a> {
    alg: &'a str,
    typ: &'a str,
}

/// The JOSE header as read; only `alg` matters, other fields are ignored.
#[derive(Deserialize)]
struct HeaderIn {
    alg: String,
}

/// The `aud` claim as found in a token: one string or an array of strings.
#[derive(Deserialize)]
#[serde(untagged)]
enum Audience {
    One(String),
    Many(Vec<String>),
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
    /// The header's `alg` is not the configured algorithm.
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
        };
        f.write_str(message)
    }
}

impl std::error::Error for JwtError {}

/// Signing and verification keys plus the checks applied on verification.
pub struct Keys {
    algorithm: Algorithm,
    encoding_secret: Vec<u8>,
    decoding_secret: Vec<u8>,
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

impl Keys {
    /// Keys that sign with `encoding_secret` and verify with `decoding_secret`
    /// (the same bytes for HMAC unless a secret is being rotated), accepting
    /// tokens from `valid_issuers` for `valid_audiences`, with `leeway_secs` of
    /// tolerance on `exp` and `nbf`.
    pub fn new(
        algorithm: Algorithm,
        encoding_secret: Vec<u8>,
        decoding_secret: Vec<u8>,
        valid_issuers: Vec<String>,
        valid_audiences: Vec<String>,
        leeway_secs: u64,
    ) -> Self {
        Self {
            algorithm,
            encoding_secret,
            decoding_secret,
            valid_issuers,
            valid_audiences,
            leeway_secs,
        }
    }

    /// Header {"alg":..,"typ":"JWT"} . claims . signature, each base64url
    /// without padding.
    pub fn mint(&self, claims: &Claims) -> String {
        let header = HeaderOut {
            alg: self.algorithm.name(),
            typ: "JWT",
        };
        let header = serde_json::to_vec(&header).expect("a header always serializes");
        let payload = serde_json::to_vec(claims).expect("claims always serialize");
        let signing_input = format!(
            "{}.{}",
            URL_SAFE_NO_PAD.encode(header),
            URL_SAFE_NO_PAD.encode(payload)
        );
        let signature = self
            .algorithm
            .sign(&self.encoding_secret, signing_input.as_bytes());
        format!("{signing_input}.{}", URL_SAFE_NO_PAD.encode(signature))
    }

    /// Verifies structure, header `alg` (must equal the configured algorithm),
    /// signature, `exp` (`now > exp + leeway` is [`JwtError::Expired`]), `nbf`
    /// (`now + leeway < nbf` is [`JwtError::NotYetValid`]), issuer and audience,
    /// and returns the claims. `now` is in Unix seconds. When the token's `aud`
    /// is an array, the returned claims hold the first valid element of it.
    pub fn verify(&self, token: &str, now: u64) -> Result<Claims, JwtError> {
        let (signing_input, header, payload, signature) = split_token(token)?;
        self.check_algorithm(header)?;
        self.check_signature(signing_input, signature)?;
        let raw: RawClaims = decode_json(payload)?;
        self.check_times(&raw, now)?;
        self.check_issuer(&raw.iss)?;
        let aud = self.pick_audience(raw.aud)?;
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

    fn check_algorithm(&self, header: &str) -> Result<(), JwtError> {
        let header: HeaderIn = decode_json(header)?;
        if header.alg == self.algorithm.name() {
            Ok(())
        } else {
            Err(JwtError::UnsupportedAlgorithm)
        }
    }

    fn check_signature(&self, signing_input: &str, signature: &str) -> Result<(), JwtError> {
        let signature = decode_base64(signature)?;
        let valid =
            self.algorithm
                .verify(&self.decoding_secret, signing_input.as_bytes(), &signature);
        if valid {
            Ok(())
        } else {
            Err(JwtError::BadSignature)
        }
    }

    fn check_times(&self, claims: &RawClaims, now: u64) -> Result<(), JwtError> {
        if now > claims.exp.saturating_add(self.leeway_secs) {
            return Err(JwtError::Expired);
        }
        if now.saturating_add(self.leeway_secs) < claims.nbf {
            return Err(JwtError::NotYetValid);
        }
        Ok(())
    }

    fn check_issuer(&self, iss: &str) -> Result<(), JwtError> {
        if self.valid_issuers.iter().any(|valid| valid == iss) {
            Ok(())
        } else {
            Err(JwtError::WrongIssuer)
        }
    }

    /// The first audience in the token that is a valid one.
    fn pick_audience(&self, aud: Audience) -> Result<String, JwtError> {
        let candidates = match aud {
            Audience::One(one) => vec![one],
            Audience::Many(many) => many,
        };
        candidates
            .into_iter()
            .find(|candidate| self.valid_audiences.contains(candidate))
            .ok_or(JwtError::WrongAudience)
    }
}

/// Splits a token into its signing input and its three fields.
fn split_token(token: &str) -> Result<(&str, &str, &str, &str), JwtError> {
    let (signing_input, signature) = token.rsplit_once('.').ok_or(JwtError::Malformed)?;
    let (header, payload) = signing_input.split_once('.').ok_or(JwtError::Malformed)?;
    if payload.contains('.') {
        return Err(JwtError::Malformed);
    }
    Ok((signing_input, header, payload, signature))
}

fn decode_base64(field: &str) -> Result<Vec<u8>, JwtError> {
    URL_SAFE_NO_PAD
        .decode(field)
        .map_err(|_| JwtError::Malformed)
}

fn decode_json<T: serde::de::DeserializeOwned>(field: &str) -> Result<T, JwtError> {
    let bytes = decode_base64(field)?;
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
            secret.to_vec(),
            secret.to_vec(),
            vec![ISSUER.to_string()],
            vec![AUDIENCE.to_string(), "other-audience".to_string()],
            leeway_secs,
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

    /// An HS256 token over arbitrary header and payload JSON, signed in the
    /// test with the hmac crate directly.
    fn hs256_token(header: &str, payload: &str, secret: &[u8]) -> String {
        let input = format!("{}.{}", b64(header.as_bytes()), b64(payload.as_bytes()));
        let mut mac = <Hmac<Sha256> as KeyInit>::new_from_slice(secret).unwrap();
        Mac::update(&mut mac, input.as_bytes());
        let signature = mac.finalize().into_bytes();
        format!("{input}.{}", b64(&signature))
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

    #[test]
    fn known_answer_hs256() {
        let keys = keys_with(Algorithm::Hs256, b"secret", 0);
        let claims = Claims {
            jti: "id-1".to_string(),
            sub: "42".to_string(),
            iss: "iggy".to_string(),
            aud: "iggy.apache.org".to_string(),
            iat: 1,
            exp: 2,
            nbf: 1,
        };
        let header = r#"{"alg":"HS256","typ":"JWT"}"#;
        let payload = r#"{"jti":"id-1","sub":"42","iss":"iggy","aud":"iggy.apache.org","iat":1,"exp":2,"nbf":1}"#;
        assert_eq!(keys.mint(&claims), hs256_token(header, payload, b"secret"));
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
            b"new".to_vec(),
            b"old".to_vec(),
            vec![ISSUER.to_string()],
            vec![AUDIENCE.to_string()],
            0,
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

//! Tokens from external identity providers (HTTP spec §5.3).
//!
//! A bearer that is not a self-issued token is tried here: its unverified
//! `iss` (scheme and host lower-cased) picks a configured issuer, or it is
//! refused. The header's `alg` must be one the issuer allows (RS256 and
//! ES256 unless configured; never `none` nor an HMAC algorithm, so a public
//! key can never act as an HMAC secret). The key is the issuer's PEM key, or
//! the JWKS key its `kid` selects. The library then checks the signature,
//! `exp` and `nbf` (with the configured leeway) and the audience when one
//! is configured. The token acts as the issuer's configured `user_id`.

use std::collections::HashSet;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use jsonwebtoken::{Algorithm, DecodingKey, Validation};
use serde::Deserialize;
use server::config::TrustedIssuer;

use super::jwks::{self, JwksCache};
use super::jwt::{Audience, HeaderIn, JwtError, peek_json};

/// How often a JWKS is fetched again when the issuer does not say.
pub const JWKS_REFRESH_DEFAULT: Duration = Duration::from_secs(300);
/// The algorithms an issuer may use when its entry names none.
pub const ALGORITHMS_DEFAULT: [Algorithm; 2] = [Algorithm::RS256, Algorithm::ES256];

/// Where an issuer's public keys come from.
enum KeySource {
    Pem(DecodingKey),
    Jwks(Arc<JwksCache>),
}

struct Issuer {
    /// Normalised (see [`normalise`]).
    issuer: String,
    audience: Option<String>,
    algorithms: Vec<Algorithm>,
    user_id: u32,
    keys: KeySource,
}

/// A verified external token.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Verified {
    pub user_id: u32,
    /// The token's `jti`, or a hash of the token when it has none: the key
    /// of its HTTP session.
    pub token_id: String,
    pub exp: u64,
}

/// The claims read from an external token; everything else is ignored.
#[derive(Deserialize)]
struct ExternalClaims {
    #[serde(default)]
    jti: Option<String>,
    exp: u64,
    #[serde(default)]
    #[allow(dead_code)] // checked by the library; kept to refuse a wrong type
    aud: Option<Audience>,
}

#[derive(Deserialize)]
struct IssuerOnly {
    iss: Option<String>,
}

#[derive(Default)]
pub struct TrustedIssuers {
    issuers: Vec<Issuer>,
    leeway_secs: u64,
}

impl TrustedIssuers {
    /// Reads PEM keys and starts the JWKS fetch thread. Fails on an
    /// unreadable key file or an unknown algorithm (validation has already
    /// refused empty issuers and user 0).
    pub fn from_config(entries: &[TrustedIssuer], leeway_secs: u64) -> anyhow::Result<Self> {
        let jwks_sources = entries
            .iter()
            .filter(|entry| !entry.jwks_url.is_empty())
            .map(|entry| {
                let interval = entry
                    .jwks_refresh_interval
                    .map(Duration::from)
                    .filter(|d| !d.is_zero())
                    .unwrap_or(JWKS_REFRESH_DEFAULT);
                (entry.jwks_url.clone(), interval)
            })
            .collect();
        let mut caches = jwks::start(jwks_sources)
            .context("cannot start the JWKS fetch thread")?
            .into_iter();
        let mut issuers = Vec::with_capacity(entries.len());
        for (index, entry) in entries.iter().enumerate() {
            let keys = if entry.jwks_url.is_empty() {
                KeySource::Pem(read_pem(entry, index)?)
            } else {
                KeySource::Jwks(caches.next().expect("one cache per jwks_url"))
            };
            issuers.push(Issuer {
                issuer: normalise(&entry.issuer),
                audience: entry.audience.clone().filter(|a| !a.is_empty()),
                algorithms: algorithms(entry, index)?,
                user_id: entry.user_id,
                keys,
            });
        }
        Ok(Self {
            issuers,
            leeway_secs,
        })
    }

    pub fn is_empty(&self) -> bool {
        self.issuers.is_empty()
    }

    /// Verifies a token against the issuer its `iss` names.
    pub fn verify(&self, token: &str) -> Result<Verified, JwtError> {
        let issuer = self.issuer_of(token)?;
        let header: HeaderIn = peek_json(token, 0)?;
        let algorithm = issuer
            .algorithms
            .iter()
            .copied()
            .find(|alg| format!("{alg:?}") == header.alg)
            .ok_or(JwtError::UnsupportedAlgorithm)?;
        let kid = jsonwebtoken::decode_header(token)?.kid;
        let claims: ExternalClaims = match &issuer.keys {
            KeySource::Pem(key) => self.decode(token, key, algorithm, issuer)?,
            KeySource::Jwks(cache) => {
                let keys = cache.keys();
                let key = keys.find(kid.as_deref()).ok_or(JwtError::UnknownKey)?;
                self.decode(token, key, algorithm, issuer)?
            }
        };
        let token_id = claims
            .jti
            .unwrap_or_else(|| blake3::hash(token.as_bytes()).to_hex().to_string());
        Ok(Verified {
            user_id: issuer.user_id,
            token_id,
            exp: claims.exp,
        })
    }

    /// The JWKS cache of the issuer a token names, to refresh when its
    /// `kid` is unknown.
    pub fn jwks_of(&self, token: &str) -> Option<&Arc<JwksCache>> {
        match &self.issuer_of(token).ok()?.keys {
            KeySource::Jwks(cache) => Some(cache),
            KeySource::Pem(_) => None,
        }
    }

    fn issuer_of(&self, token: &str) -> Result<&Issuer, JwtError> {
        let claims: IssuerOnly = peek_json(token, 1)?;
        let iss = normalise(&claims.iss.ok_or(JwtError::WrongIssuer)?);
        self.issuers
            .iter()
            .find(|issuer| issuer.issuer == iss)
            .ok_or(JwtError::WrongIssuer)
    }

    fn decode(
        &self,
        token: &str,
        key: &DecodingKey,
        algorithm: Algorithm,
        issuer: &Issuer,
    ) -> Result<ExternalClaims, JwtError> {
        let mut validation = Validation::new(algorithm);
        validation.leeway = self.leeway_secs;
        validation.validate_nbf = true;
        validation.required_spec_claims = HashSet::from(["exp".to_owned()]);
        match &issuer.audience {
            Some(audience) => validation.set_audience(&[audience]),
            None => validation.validate_aud = false,
        }
        Ok(jsonwebtoken::decode(token, key, &validation)?.claims)
    }
}

/// Scheme and host lower-cased; the path is kept as written.
pub fn normalise(issuer: &str) -> String {
    let Some((scheme, rest)) = issuer.split_once("://") else {
        return issuer.to_owned();
    };
    let (host, path) = rest.split_at(rest.find('/').unwrap_or(rest.len()));
    format!(
        "{}://{}{}",
        scheme.to_ascii_lowercase(),
        host.to_ascii_lowercase(),
        path
    )
}

fn algorithms(entry: &TrustedIssuer, index: usize) -> anyhow::Result<Vec<Algorithm>> {
    let Some(names) = &entry.algorithms else {
        return Ok(ALGORITHMS_DEFAULT.to_vec());
    };
    names
        .iter()
        .map(|name| match name.as_str() {
            "RS256" => Ok(Algorithm::RS256),
            "RS384" => Ok(Algorithm::RS384),
            "RS512" => Ok(Algorithm::RS512),
            "ES256" => Ok(Algorithm::ES256),
            "ES384" => Ok(Algorithm::ES384),
            other => anyhow::bail!(
                "http.jwt.trusted_issuers[{index}].algorithms: {other:?} is not supported"
            ),
        })
        .collect()
}

/// An RSA or EC public key in PEM (SubjectPublicKeyInfo or PKCS#1).
fn read_pem(entry: &TrustedIssuer, index: usize) -> anyhow::Result<DecodingKey> {
    let path = entry.key_file.as_deref().unwrap_or_default();
    let pem = std::fs::read(path).with_context(|| {
        format!("http.jwt.trusted_issuers[{index}].key_file: cannot read {path:?}")
    })?;
    DecodingKey::from_rsa_pem(&pem)
        .or_else(|_| DecodingKey::from_ec_pem(&pem))
        .map_err(|e| {
            anyhow::anyhow!(
                "http.jwt.trusted_issuers[{index}].key_file: {path:?} is not an RSA or EC public key in PEM: {e}"
            )
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn given_issuer_urls_when_normalising_should_lowercase_scheme_and_host_only() {
        assert_eq!(
            normalise("HTTPS://Login.Example.COM/Realms/Iggy"),
            "https://login.example.com/Realms/Iggy"
        );
        assert_eq!(normalise("https://idp.example"), "https://idp.example");
        assert_eq!(normalise("Plain-Name"), "Plain-Name");
    }
}

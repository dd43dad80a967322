//! Who is calling (HTTP API spec §5): bearer tokens are JWTs this server
//! issued at login, JWTs of a trusted external issuer (§5.3), or raw
//! personal access tokens, tried in that order.
//!
//! Tokens are stateless: logout and refresh revoke nothing, and a token
//! dies at its `exp` (logout ends the server-side session of `sessions`). Without a configured secret a random one is made at
//! start-up, so tokens do not survive a restart.

use anyhow::Context;
use base64::Engine as _;
use engine::metadata::UserId;
use hyper::HeaderMap;
use protocol::ErrorCode;
use serde::Serialize;

use super::error::ApiError;
use super::jwt::{self, Algorithm, Claims, JwtError, KeyRules, Keys};
use super::sessions::Credential;
use super::trusted_issuers::TrustedIssuers;
use crate::node::Node;
use server::config::{JwtConfig, TokenExpiry};

/// Seconds added for a token that "never" expires (spec §5.2).
const NEVER_EXPIRES_SECS: u64 = 1_000_000_000;
/// How long a request whose token names an unknown JWKS `kid` waits for the
/// early fetch it asked for, and how often it looks.
const JWKS_WAIT: std::time::Duration = std::time::Duration::from_secs(3);
const JWKS_WAIT_STEP: std::time::Duration = std::time::Duration::from_millis(25);

pub struct HttpAuth {
    keys: Keys,
    trusted: TrustedIssuers,
    issuer: String,
    audience: String,
    lifetime_secs: u64,
    not_before_secs: u64,
}

/// The login answer.
#[derive(Debug, Serialize)]
pub struct IdentityInfo {
    pub user_id: u32,
    pub access_token: AccessToken,
}

#[derive(Debug, Serialize)]
pub struct AccessToken {
    pub token: String,
    /// The token's `exp`, Unix seconds.
    pub expiry: u64,
}

impl HttpAuth {
    pub fn from_config(config: &JwtConfig) -> anyhow::Result<Self> {
        let algorithm = Algorithm::parse(&config.algorithm).with_context(|| {
            format!(
                "http.jwt.algorithm: '{}' is not supported (HS256, HS384 or HS512)",
                config.algorithm
            )
        })?;
        let decode = |secret: &str| -> anyhow::Result<Vec<u8>> {
            if config.use_base64_secret {
                base64::engine::general_purpose::STANDARD
                    .decode(secret)
                    .context("http.jwt: the secret is not valid base64")
            } else {
                Ok(secret.as_bytes().to_vec())
            }
        };
        let (encoding, decoding) = match (
            config.encoding_secret.is_empty(),
            config.decoding_secret.is_empty(),
        ) {
            (true, true) => {
                let secret = jwt::random_secret().into_bytes();
                (secret.clone(), secret)
            }
            (false, true) => {
                let secret = decode(&config.encoding_secret)?;
                (secret.clone(), secret)
            }
            (true, false) => {
                let secret = decode(&config.decoding_secret)?;
                (secret.clone(), secret)
            }
            (false, false) => (
                decode(&config.encoding_secret)?,
                decode(&config.decoding_secret)?,
            ),
        };
        let lifetime_secs = match config.access_token_expiry {
            TokenExpiry::Never => NEVER_EXPIRES_SECS,
            TokenExpiry::ServerDefault => 3600,
            TokenExpiry::After(d) => d.as_secs().max(1),
        };
        let mut valid_issuers = config.valid_issuers.clone();
        valid_issuers.push(config.issuer.clone());
        let mut valid_audiences = config.valid_audiences.clone();
        valid_audiences.push(config.audience.clone());
        let leeway_secs = std::time::Duration::from(config.clock_skew).as_secs();
        Ok(Self {
            keys: Keys::new(
                algorithm,
                &encoding,
                &decoding,
                KeyRules {
                    valid_issuers,
                    valid_audiences,
                    leeway_secs,
                },
            ),
            trusted: TrustedIssuers::from_config(&config.trusted_issuers, leeway_secs)?,
            issuer: config.issuer.clone(),
            audience: config.audience.clone(),
            lifetime_secs,
            not_before_secs: std::time::Duration::from(config.not_before).as_secs(),
        })
    }

    /// A fresh access token for a user.
    pub fn issue(&self, user_id: u32, now_secs: u64) -> IdentityInfo {
        let exp = now_secs.saturating_add(self.lifetime_secs);
        let claims = Claims {
            jti: jwt::uuid_v7(now_secs.saturating_mul(1000)),
            sub: user_id.to_string(),
            iss: self.issuer.clone(),
            aud: self.audience.clone(),
            iat: now_secs,
            exp,
            nbf: now_secs.saturating_add(self.not_before_secs),
        };
        IdentityInfo {
            user_id,
            access_token: AccessToken {
                token: self.keys.mint(&claims),
                expiry: exp,
            },
        }
    }

    /// The user a self-issued token names, if it verifies.
    pub fn user_of_token(&self, token: &str, now_secs: u64) -> Option<u32> {
        let claims = self.keys.verify(token, now_secs).ok()?;
        claims.sub.parse().ok()
    }

    /// Resolves the bearer of a request to an active user and the
    /// credential that names its session: a self-issued JWT first, then a
    /// trusted issuer's JWT, then a raw personal access token.
    pub async fn authenticate(
        &self,
        node: &Node,
        headers: &HeaderMap,
    ) -> Result<(UserId, Credential), ApiError> {
        let bearer = bearer_of(headers)?;
        let now_us = crate::node::process_stats::now_us();
        let self_issued = self
            .keys
            .verify(bearer, now_us / 1_000_000)
            .ok()
            .and_then(|claims| Some((claims.sub.parse().ok()?, claims)));
        let (user, credential) = match self_issued {
            Some((user, claims)) => (
                user,
                Credential {
                    key: format!("jwt:{}", claims.jti),
                    expires_at: Some(claims.exp),
                },
            ),
            None => match self.verify_external(bearer).await {
                Some(verified) => (
                    verified.user_id,
                    Credential {
                        key: format!("jwt:{}", verified.token_id),
                        expires_at: Some(verified.exp),
                    },
                ),
                None => personal_access_token(node, bearer)?,
            },
        };
        let metadata = node.metadata();
        match metadata.user(UserId(user)) {
            Some(u) if u.is_active() => Ok((u.id, credential)),
            _ => Err(ErrorCode::Unauthenticated.into()),
        }
    }

    /// A trusted issuer's token, waiting (without blocking the shard) for
    /// one early JWKS fetch when its `kid` is not known yet.
    async fn verify_external(&self, bearer: &str) -> Option<super::trusted_issuers::Verified> {
        if self.trusted.is_empty() {
            return None;
        }
        match self.trusted.verify(bearer) {
            Ok(verified) => return Some(verified),
            Err(JwtError::UnknownKey) => {}
            Err(e) => {
                tracing::debug!("external token refused: {e}");
                return None;
            }
        }
        let cache = self.trusted.jwks_of(bearer)?;
        let seen = cache.generation();
        cache.request_refresh();
        let deadline = std::time::Instant::now() + JWKS_WAIT;
        while cache.generation() == seen && std::time::Instant::now() < deadline {
            compio::time::sleep(JWKS_WAIT_STEP).await;
        }
        self.trusted
            .verify(bearer)
            .inspect_err(|e| tracing::debug!("external token refused: {e}"))
            .ok()
    }
}

/// The token of `Authorization: Bearer <token>`, or 401.
fn bearer_of(headers: &HeaderMap) -> Result<&str, ApiError> {
    let Some(value) = headers.get(hyper::header::AUTHORIZATION) else {
        return Err(ErrorCode::AccessTokenMissing.into());
    };
    let bearer = value
        .to_str()
        .ok()
        .and_then(|v| {
            v.strip_prefix("Bearer ")
                .or_else(|| v.strip_prefix("bearer "))
        })
        .map(str::trim)
        .unwrap_or_default();
    if bearer.is_empty() {
        return Err(ErrorCode::AccessTokenMissing.into());
    }
    Ok(bearer)
}

/// A raw personal access token as the bearer (spec §5.4).
fn personal_access_token(node: &Node, bearer: &str) -> Result<(u32, Credential), ApiError> {
    let hash = engine::metadata::token::hash_token(bearer);
    let user = node
        .token_user_by_hash(&hash)
        .ok_or(ApiError::iggy(ErrorCode::Unauthenticated))?;
    let credential = Credential {
        key: format!("pat:{hash}"),
        expires_at: None,
    };
    Ok((user, credential))
}

//! JSON Web Key Sets of trusted issuers (HTTP spec §5.3), fetched off the
//! shards.
//!
//! Each issuer with a `jwks_url` has a [`JwksCache`]: the keys by `kid`, and a
//! generation number bumped on every successful fetch. One thread,
//! `jwks-fetch`, owns a current-thread tokio runtime and an HTTP(S) client; it
//! fetches every set at start-up, again every refresh interval, and early when
//! a request met an unknown `kid` ([`JwksCache::request_refresh`]). Early
//! fetches of one issuer are at most one per [`REFETCH_MIN`], so a stream of
//! tokens with made-up `kid`s cannot turn the server into a fetch loop.
//! A failed fetch keeps the previous keys.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc::{self, RecvTimeoutError};
use std::sync::{Arc, RwLock};
use std::time::{Duration, Instant};

use bytes::Bytes;
use http_body_util::{BodyExt, Empty, Limited};
use jsonwebtoken::DecodingKey;
use jsonwebtoken::jwk::JwkSet;

/// The shortest time between two fetches of one set asked for by requests.
pub const REFETCH_MIN: Duration = Duration::from_secs(5);
/// A JWKS document larger than this is refused.
pub const JWKS_BYTES_MAX: usize = 1024 * 1024;
/// One fetch (connect, request, body) gives up after this.
pub const FETCH_TIMEOUT: Duration = Duration::from_secs(10);

/// The keys of one issuer's set.
#[derive(Default)]
pub struct KeySet {
    by_kid: HashMap<String, DecodingKey>,
    /// Keys published without a `kid`; used only when a token names none.
    anonymous: Vec<DecodingKey>,
}

impl KeySet {
    /// The key a token's `kid` selects; without a `kid`, the set's only key.
    pub fn find(&self, kid: Option<&str>) -> Option<&DecodingKey> {
        match kid {
            Some(kid) => self.by_kid.get(kid),
            None if self.by_kid.len() + self.anonymous.len() == 1 => {
                self.by_kid.values().chain(&self.anonymous).next()
            }
            None => None,
        }
    }

    /// The usable keys of a JWKS document; keys of unsupported types are
    /// skipped.
    pub fn parse(document: &[u8]) -> Result<Self, String> {
        let set: JwkSet = serde_json::from_slice(document).map_err(|e| e.to_string())?;
        let mut keys = Self::default();
        for jwk in &set.keys {
            let Ok(key) = DecodingKey::from_jwk(jwk) else {
                continue;
            };
            match &jwk.common.key_id {
                Some(kid) => {
                    keys.by_kid.insert(kid.clone(), key);
                }
                None => keys.anonymous.push(key),
            }
        }
        Ok(keys)
    }

    pub fn len(&self) -> usize {
        self.by_kid.len() + self.anonymous.len()
    }
}

/// One issuer's set as last fetched.
pub struct JwksCache {
    pub url: String,
    pub refresh_interval: Duration,
    keys: RwLock<Arc<KeySet>>,
    generation: AtomicU64,
    refresh_wanted: AtomicBool,
    wake: mpsc::Sender<()>,
}

impl JwksCache {
    pub fn keys(&self) -> Arc<KeySet> {
        Arc::clone(&self.keys.read().unwrap_or_else(|e| e.into_inner()))
    }

    /// Bumped after every successful fetch.
    pub fn generation(&self) -> u64 {
        self.generation.load(Ordering::Acquire)
    }

    /// Asks the fetch thread for an early fetch (rate-limited there).
    pub fn request_refresh(&self) {
        self.refresh_wanted.store(true, Ordering::Release);
        // The thread only stops with the process; a send error is moot.
        let _ = self.wake.send(());
    }

    fn store(&self, keys: KeySet) {
        *self.keys.write().unwrap_or_else(|e| e.into_inner()) = Arc::new(keys);
        self.generation.fetch_add(1, Ordering::AcqRel);
    }
}

/// Creates one cache per `(url, refresh_interval)` and starts the fetch
/// thread for them (none when the list is empty).
pub fn start(sources: Vec<(String, Duration)>) -> std::io::Result<Vec<Arc<JwksCache>>> {
    if sources.is_empty() {
        return Ok(Vec::new());
    }
    let (wake, woken) = mpsc::channel();
    let caches: Vec<Arc<JwksCache>> = sources
        .into_iter()
        .map(|(url, refresh_interval)| {
            Arc::new(JwksCache {
                url,
                refresh_interval,
                keys: RwLock::new(Arc::new(KeySet::default())),
                generation: AtomicU64::new(0),
                refresh_wanted: AtomicBool::new(false),
                wake: wake.clone(),
            })
        })
        .collect();
    let owned = caches.clone();
    std::thread::Builder::new()
        .name("jwks-fetch".to_owned())
        .spawn(move || run(owned, woken))?;
    Ok(caches)
}

/// When each cache was last fetched (successfully or not).
struct Schedule {
    last: Vec<Option<Instant>>,
}

impl Schedule {
    fn due(&self, index: usize, cache: &JwksCache, now: Instant) -> bool {
        match self.last[index] {
            None => true,
            Some(last) => {
                let since = now.duration_since(last);
                since >= cache.refresh_interval
                    || (since >= REFETCH_MIN && cache.refresh_wanted.load(Ordering::Acquire))
            }
        }
    }
}

fn run(caches: Vec<Arc<JwksCache>>, woken: mpsc::Receiver<()>) {
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(e) => {
            tracing::error!(
                "JWKS fetch thread cannot start a runtime: {e}; trusted issuers with a jwks_url refuse every token"
            );
            return;
        }
    };
    let client = match client() {
        Ok(client) => client,
        Err(e) => {
            tracing::error!("JWKS fetch thread cannot build an HTTP client: {e}");
            return;
        }
    };
    let mut schedule = Schedule {
        last: vec![None; caches.len()],
    };
    loop {
        let now = Instant::now();
        for (index, cache) in caches.iter().enumerate() {
            if schedule.due(index, cache, now) {
                cache.refresh_wanted.store(false, Ordering::Release);
                schedule.last[index] = Some(Instant::now());
                fetch_into(&runtime, &client, cache);
            }
        }
        // Wake on a request or at the latest when the soonest refresh or
        // the rate limit of a wanted one is due.
        let wait = caches
            .iter()
            .map(|cache| cache.refresh_interval)
            .chain(std::iter::once(REFETCH_MIN))
            .min()
            .unwrap_or(REFETCH_MIN);
        match woken.recv_timeout(wait) {
            Ok(()) | Err(RecvTimeoutError::Timeout) => {}
            Err(RecvTimeoutError::Disconnected) => return,
        }
    }
}

type Client = hyper_util::client::legacy::Client<
    hyper_rustls::HttpsConnector<hyper_util::client::legacy::connect::HttpConnector>,
    Empty<Bytes>,
>;

fn client() -> Result<Client, std::io::Error> {
    let connector = hyper_rustls::HttpsConnectorBuilder::new()
        .with_provider_and_webpki_roots(Arc::new(rustls::crypto::ring::default_provider()))
        .map_err(std::io::Error::other)?
        .https_or_http()
        .enable_http1()
        .build();
    Ok(
        hyper_util::client::legacy::Client::builder(hyper_util::rt::TokioExecutor::new())
            .build(connector),
    )
}

fn fetch_into(runtime: &tokio::runtime::Runtime, client: &Client, cache: &JwksCache) {
    let fetched = runtime.block_on(async {
        tokio::time::timeout(FETCH_TIMEOUT, fetch(client, &cache.url))
            .await
            .unwrap_or_else(|_| Err(format!("no answer within {FETCH_TIMEOUT:?}")))
    });
    match fetched.and_then(|body| KeySet::parse(&body)) {
        Ok(keys) => {
            tracing::debug!(url = %cache.url, keys = keys.len(), "fetched a JWKS");
            cache.store(keys);
        }
        Err(e) => {
            tracing::warn!(url = %cache.url, "cannot fetch the JWKS: {e}; keeping the previous keys")
        }
    }
}

async fn fetch(client: &Client, url: &str) -> Result<Bytes, String> {
    let uri: hyper::Uri = url.parse().map_err(|e| format!("bad URL: {e}"))?;
    let response = client.get(uri).await.map_err(|e| e.to_string())?;
    if !response.status().is_success() {
        return Err(format!("HTTP {}", response.status()));
    }
    let body = Limited::new(response.into_body(), JWKS_BYTES_MAX)
        .collect()
        .await
        .map_err(|e| e.to_string())?;
    Ok(body.to_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;

    const EC_JWK: &str = r#"{"kty":"EC","crv":"P-256","x":"f83OJ3D2xF1Bg8vub9tLe1gHMzV76e8Tus9uPHvRVEU","y":"x_FEzRu9m36HLN_tue659LNpXW6pCyStikYjKIWI5a0"}"#;

    #[test]
    fn given_set_with_kids_when_finding_should_select_by_kid_only() {
        let document = format!(
            r#"{{"keys":[{},{}]}}"#,
            EC_JWK.replacen('{', r#"{"kid":"a","#, 1),
            EC_JWK.replacen('{', r#"{"kid":"b","#, 1)
        );
        let keys = KeySet::parse(document.as_bytes()).unwrap();
        assert_eq!(keys.len(), 2);
        assert!(keys.find(Some("a")).is_some());
        assert!(keys.find(Some("c")).is_none());
        assert!(
            keys.find(None).is_none(),
            "two keys: a token must say which"
        );
    }

    #[test]
    fn given_single_key_when_token_names_no_kid_should_use_it() {
        let document = format!(r#"{{"keys":[{EC_JWK}]}}"#);
        let keys = KeySet::parse(document.as_bytes()).unwrap();
        assert!(keys.find(None).is_some());
    }

    #[test]
    fn given_unsupported_key_types_when_parsing_should_skip_them() {
        let document =
            r#"{"keys":[{"kty":"oct","kid":"s","k":"c2VjcmV0"},{"kty":"XYZ","kid":"x"}]}"#;
        let keys = KeySet::parse(document.as_bytes());
        // An unknown `kty` fails the whole document in the library's model;
        // either way no key is usable.
        assert!(keys.map(|k| k.find(Some("x")).is_none()).unwrap_or(true));
    }

    #[test]
    fn given_garbage_when_parsing_should_fail() {
        assert!(KeySet::parse(b"not json").is_err());
    }
}

//! Tokens of trusted external issuers over HTTP (HTTP spec §5.3): RS256 and
//! ES256 tokens signed by an issuer's key are accepted as the issuer's
//! configured user, whether the key comes from a JWKS served by a loopback
//! HTTP server or from a PEM file; a wrong key, a wrong issuer or audience,
//! an expired token, `alg: none` and an unknown `kid` are refused. The
//! server's own HS256 tokens keep working beside them.
//!
//! Keys are fixtures under `tests/fixtures/jwt/` made for this test with
//! openssl; the JWKS is derived from them with the library.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod harness;

use std::io::{BufRead, BufReader, Write};
use std::net::{SocketAddr, TcpListener};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use harness::http::{request, root_token};
use harness::{ServerOptions, TestServer, Workdir};
use jsonwebtoken::jwk::{Jwk, JwkSet};
use jsonwebtoken::{Algorithm, EncodingKey, Header};
use serde_json::json;

const JWKS_ISSUER: &str = "https://IdP.Example/realms/iggy";
const PEM_ISSUER: &str = "https://pem-issuer.example";
const AUDIENCE: &str = "iggy-api";
/// The first user created after root.
const MAPPED_USER_ID: u32 = 1;

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/jwt")
        .join(name)
}

fn rsa_key(name: &str) -> EncodingKey {
    EncodingKey::from_rsa_pem(&std::fs::read(fixture(name)).unwrap()).unwrap()
}

fn ec_key() -> EncodingKey {
    EncodingKey::from_ec_pem(&std::fs::read(fixture("ec_private.pem")).unwrap()).unwrap()
}

fn jwk(key: &EncodingKey, algorithm: Algorithm, kid: &str) -> Jwk {
    let mut jwk = Jwk::from_encoding_key(key, algorithm).unwrap();
    jwk.common.key_id = Some(kid.to_owned());
    jwk
}

/// Serves one JWKS document to every request and counts the requests.
struct JwksServer {
    addr: SocketAddr,
    hits: Arc<AtomicUsize>,
}

impl JwksServer {
    fn start(document: String) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let hits = Arc::new(AtomicUsize::new(0));
        let counter = Arc::clone(&hits);
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(mut stream) = stream else { continue };
                let mut reader = BufReader::new(stream.try_clone().unwrap());
                let mut line = String::new();
                while reader.read_line(&mut line).is_ok_and(|n| n > 2) {
                    line.clear();
                }
                counter.fetch_add(1, Ordering::SeqCst);
                let response = format!(
                    "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{document}",
                    document.len()
                );
                let _ = stream.write_all(response.as_bytes());
            }
        });
        Self { addr, hits }
    }
}

fn now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs()
}

fn claims(issuer: &str, audience: &str, exp: u64) -> serde_json::Value {
    json!({ "iss": issuer, "aud": audience, "sub": "someone@idp", "exp": exp, "iat": now() })
}

fn sign(
    algorithm: Algorithm,
    kid: Option<&str>,
    claims: &serde_json::Value,
    key: &EncodingKey,
) -> String {
    let mut header = Header::new(algorithm);
    header.kid = kid.map(str::to_owned);
    jsonwebtoken::encode(&header, claims, key).unwrap()
}

/// GET /metrics, which any authenticated user may read.
fn status_with(addr: SocketAddr, token: &str) -> u16 {
    request(addr, "GET", "/metrics", Some(token), None).status
}

struct Setup {
    _workdir: Workdir,
    server: TestServer,
    jwks: JwksServer,
}

fn start() -> Setup {
    let rsa = rsa_key("rsa_private.pem");
    let ec = ec_key();
    let set = JwkSet {
        keys: vec![
            jwk(&rsa, Algorithm::RS256, "rsa-1"),
            jwk(&ec, Algorithm::ES256, "ec-1"),
        ],
    };
    let jwks = JwksServer::start(serde_json::to_string(&set).unwrap());
    let config = format!(
        r#"
[[http.jwt.trusted_issuers]]
issuer = "{JWKS_ISSUER}"
audience = "{AUDIENCE}"
jwks_url = "http://{}/realms/iggy/certs"
user_id = {MAPPED_USER_ID}

[[http.jwt.trusted_issuers]]
issuer = "{PEM_ISSUER}"
key_file = "{}"
algorithms = ["RS256"]
user_id = {MAPPED_USER_ID}
"#,
        jwks.addr,
        fixture("rsa_public.pem").display()
    );
    let workdir = Workdir::new();
    let server = TestServer::start(&workdir, &ServerOptions::default().config_file(&config));
    let http = server.address("http").unwrap();
    let body = br#"{"username":"idp-user","password":"idp-password","status":"active"}"#;
    let created = request(http, "POST", "/users", Some(&root_token(http)), Some(body));
    assert_eq!(created.status, 200, "{}", created.text());
    assert_eq!(created.json()["id"], MAPPED_USER_ID);
    Setup {
        _workdir: workdir,
        server,
        jwks,
    }
}

#[test]
fn given_trusted_issuers_when_presenting_external_tokens_should_accept_only_valid_ones() {
    let setup = start();
    let http = setup.server.address("http").unwrap();
    let fresh = now() + 600;
    let rsa = rsa_key("rsa_private.pem");

    let rs256 = sign(
        Algorithm::RS256,
        Some("rsa-1"),
        &claims(JWKS_ISSUER, AUDIENCE, fresh),
        &rsa,
    );
    assert_eq!(status_with(http, &rs256), 200, "RS256 from the JWKS");
    let es256 = sign(
        Algorithm::ES256,
        Some("ec-1"),
        &claims(JWKS_ISSUER, AUDIENCE, fresh),
        &ec_key(),
    );
    assert_eq!(status_with(http, &es256), 200, "ES256 from the JWKS");
    let lowercase_issuer = sign(
        Algorithm::RS256,
        Some("rsa-1"),
        &claims(&JWKS_ISSUER.to_lowercase(), AUDIENCE, fresh),
        &rsa,
    );
    assert_eq!(
        status_with(http, &lowercase_issuer),
        200,
        "issuer host compared lower-cased"
    );
    let pem = sign(
        Algorithm::RS256,
        None,
        &claims(PEM_ISSUER, "any", fresh),
        &rsa,
    );
    assert_eq!(status_with(http, &pem), 200, "RS256 from the PEM key file");
    assert_eq!(
        status_with(http, &root_token(http)),
        200,
        "self-issued HS256 still works"
    );

    let other = rsa_key("rsa_other_private.pem");
    let refused = [
        (
            "wrong key",
            sign(
                Algorithm::RS256,
                Some("rsa-1"),
                &claims(JWKS_ISSUER, AUDIENCE, fresh),
                &other,
            ),
        ),
        (
            "wrong key, PEM issuer",
            sign(
                Algorithm::RS256,
                None,
                &claims(PEM_ISSUER, "any", fresh),
                &other,
            ),
        ),
        (
            "wrong issuer",
            sign(
                Algorithm::RS256,
                Some("rsa-1"),
                &claims("https://evil.example", AUDIENCE, fresh),
                &rsa,
            ),
        ),
        (
            "wrong audience",
            sign(
                Algorithm::RS256,
                Some("rsa-1"),
                &claims(JWKS_ISSUER, "someone-else", fresh),
                &rsa,
            ),
        ),
        (
            "expired",
            sign(
                Algorithm::RS256,
                Some("rsa-1"),
                &claims(JWKS_ISSUER, AUDIENCE, now() - 3600),
                &rsa,
            ),
        ),
        (
            "ES256 not allowed for the PEM issuer",
            sign(
                Algorithm::ES256,
                None,
                &claims(PEM_ISSUER, "any", fresh),
                &ec_key(),
            ),
        ),
        ("alg none", unsigned(&claims(JWKS_ISSUER, AUDIENCE, fresh))),
    ];
    for (why, token) in refused {
        let response = request(http, "GET", "/metrics", Some(&token), None);
        assert_eq!(response.status, 401, "{why}: {}", response.text());
    }
}

#[test]
fn given_unknown_kid_when_presenting_token_should_refetch_jwks_then_refuse() {
    let setup = start();
    let http = setup.server.address("http").unwrap();
    let rsa = rsa_key("rsa_private.pem");
    let known = sign(
        Algorithm::RS256,
        Some("rsa-1"),
        &claims(JWKS_ISSUER, AUDIENCE, now() + 600),
        &rsa,
    );
    assert_eq!(status_with(http, &known), 200);
    let fetched = setup.jwks.hits.load(Ordering::SeqCst);
    assert!(fetched >= 1);
    // Wait out the early-fetch rate limit so the unknown kid may trigger one.
    std::thread::sleep(std::time::Duration::from_secs(6));
    let unknown = sign(
        Algorithm::RS256,
        Some("rotated"),
        &claims(JWKS_ISSUER, AUDIENCE, now() + 600),
        &rsa,
    );
    assert_eq!(status_with(http, &unknown), 401);
    assert!(
        setup.jwks.hits.load(Ordering::SeqCst) > fetched,
        "an unknown kid fetches the JWKS again"
    );
}

#[test]
fn given_external_token_when_refreshing_should_refuse() {
    let setup = start();
    let http = setup.server.address("http").unwrap();
    let token = sign(
        Algorithm::RS256,
        Some("rsa-1"),
        &claims(JWKS_ISSUER, AUDIENCE, now() + 600),
        &rsa_key("rsa_private.pem"),
    );
    assert_eq!(status_with(http, &token), 200);
    let body = json!({ "token": token }).to_string();
    let response = request(
        http,
        "POST",
        "/users/refresh-token",
        None,
        Some(body.as_bytes()),
    );
    assert_eq!(response.status, 401, "{}", response.text());
}

/// `{"alg":"none"}` . claims . (empty signature)
fn unsigned(claims: &serde_json::Value) -> String {
    let header = URL_SAFE_NO_PAD.encode(br#"{"alg":"none","typ":"JWT"}"#);
    let payload = URL_SAFE_NO_PAD.encode(claims.to_string());
    format!("{header}.{payload}.")
}

//! Rules of the client transports: HTTP (JWT, CORS, metrics, TLS), TCP,
//! QUIC and WebSocket. A disabled transport is not checked, except for the
//! WebSocket sizes, which must be sane whenever they are set.

use super::{non_empty, quoted, require};
use crate::config::error::ConfigError;
use crate::config::schema::{
    CorsConfig, HttpConfig, ListenerTlsConfig, ServerConfig, TRUSTED_ISSUER_ALGORITHMS,
    WebSocketConfig,
};
use std::time::Duration;

use crate::config::values::{ByteSize, TokenExpiry};

/// JWT algorithms the server signs with: HMAC only.
const JWT_ALGORITHMS: [&str; 3] = ["HS256", "HS384", "HS512"];
/// Method names CORS may allow (compared case-insensitively).
const HTTP_METHODS: [&str; 9] = [
    "GET", "POST", "PUT", "DELETE", "PATCH", "HEAD", "OPTIONS", "CONNECT", "TRACE",
];
const WILDCARD: &str = "*";

pub(super) fn validate(
    config: &ServerConfig,
    warnings: &mut Vec<String>,
) -> Result<(), ConfigError> {
    if config.http.enabled {
        validate_http(&config.http, warnings)?;
    }
    if config.tcp.enabled {
        validate_listener_tls("tcp.tls", &config.tcp.tls)?;
        validate_tcp_limits(config)?;
    }
    if config.quic.enabled {
        validate_quic(config)?;
    }
    validate_websocket(&config.websocket, config.message_bus.max_message_size)?;
    if config.websocket.enabled {
        validate_listener_tls("websocket.tls", &config.websocket.tls)?;
    }
    Ok(())
}

/// SDKs ping every 5 s, so an idle timeout must leave room for that.
const TCP_IDLE_TIMEOUT_MIN: Duration = Duration::from_secs(10);

fn validate_tcp_limits(config: &ServerConfig) -> Result<(), ConfigError> {
    let tcp = &config.tcp;
    require(
        tcp.max_connections >= 1,
        "tcp.max_connections",
        tcp.max_connections,
        "at least 1",
    )?;
    require(
        tcp.max_failed_logins >= 1,
        "tcp.max_failed_logins",
        tcp.max_failed_logins,
        "at least 1",
    )?;
    require(
        Duration::from(tcp.frame_timeout) >= Duration::from_secs(1),
        "tcp.frame_timeout",
        tcp.frame_timeout,
        "at least 1 s",
    )?;
    let idle = Duration::from(tcp.idle_timeout);
    require(
        idle.is_zero() || idle >= TCP_IDLE_TIMEOUT_MIN,
        "tcp.idle_timeout",
        tcp.idle_timeout,
        "\"0 s\" (disabled) or at least 10 s (clients ping every 5 s)",
    )
}

fn validate_http(http: &HttpConfig, warnings: &mut Vec<String>) -> Result<(), ConfigError> {
    let jwt = &http.jwt;
    require(
        jwt.access_token_expiry != TokenExpiry::ServerDefault,
        "http.jwt.access_token_expiry",
        quoted(jwt.access_token_expiry),
        "a duration such as \"1 h\" or \"none\"; the server-default sentinel is not allowed here",
    )?;
    require(
        JWT_ALGORITHMS.contains(&jwt.algorithm.as_str()),
        "http.jwt.algorithm",
        quoted(&jwt.algorithm),
        "one of HS256, HS384, HS512",
    )?;
    let both_set = !jwt.encoding_secret.is_empty() && !jwt.decoding_secret.is_empty();
    if both_set && jwt.encoding_secret != jwt.decoding_secret {
        warnings.push(
            "http.jwt.encoding_secret and http.jwt.decoding_secret differ; HMAC tokens signed with one \
             will not verify with the other"
                .to_owned(),
        );
    }
    for (index, issuer) in jwt.trusted_issuers.iter().enumerate() {
        let key = |field: &str| format!("http.jwt.trusted_issuers[{index}].{field}");
        non_empty(&key("issuer"), &issuer.issuer)?;
        let key_file = issuer.key_file.as_deref().unwrap_or_default();
        require(
            issuer.jwks_url.is_empty() != key_file.is_empty(),
            &key("jwks_url"),
            quoted(&issuer.jwks_url),
            "a non-empty URL, or an empty one with key_file set (exactly one of the two)",
        )?;
        for algorithm in issuer.algorithms.iter().flatten() {
            require(
                TRUSTED_ISSUER_ALGORITHMS.contains(&algorithm.as_str()),
                &key("algorithms"),
                quoted(algorithm),
                "RS256, RS384, RS512, ES256 or ES384",
            )?;
        }
        require(
            issuer.user_id != 0,
            &key("user_id"),
            issuer.user_id,
            "a non-zero user id",
        )?;
    }
    if http.cors.enabled {
        validate_cors(&http.cors)?;
    }
    if http.metrics.enabled {
        let endpoint = &http.metrics.endpoint;
        require(
            endpoint.starts_with('/'),
            "http.metrics.endpoint",
            quoted(endpoint),
            "a path starting with \"/\"",
        )?;
    }
    if http.tls.enabled {
        let allowed = "a non-empty path when http.tls.enabled = true";
        require(
            !http.tls.cert_file.is_empty(),
            "http.tls.cert_file",
            quoted(""),
            allowed,
        )?;
        require(
            !http.tls.key_file.is_empty(),
            "http.tls.key_file",
            quoted(""),
            allowed,
        )?;
    }
    Ok(())
}

fn validate_cors(cors: &CorsConfig) -> Result<(), ConfigError> {
    for method in &cors.allowed_methods {
        let known = HTTP_METHODS
            .iter()
            .any(|name| name.eq_ignore_ascii_case(method));
        let allowed = format!("HTTP method names: {}", HTTP_METHODS.join(", "));
        require(known, "http.cors.allowed_methods", quoted(method), &allowed)?;
    }
    if let Some(position) = cors
        .allowed_origins
        .iter()
        .skip(1)
        .position(|origin| origin == WILDCARD)
    {
        return Err(ConfigError::invalid(
            &format!("http.cors.allowed_origins[{}]", position + 1),
            quoted(WILDCARD),
            "\"*\" only as the first entry (any origin), otherwise explicit origins",
        ));
    }
    if cors.allow_credentials {
        let any_origin = cors
            .allowed_origins
            .first()
            .is_some_and(|origin| origin == WILDCARD);
        let any_header = cors.allowed_headers.iter().any(|header| header == WILDCARD);
        let any_exposed = cors.exposed_headers.iter().any(|header| header == WILDCARD);
        let allowed = "false while allowed_origins, allowed_headers or exposed_headers contain the wildcard \"*\"";
        require(
            !(any_origin || any_header || any_exposed),
            "http.cors.allow_credentials",
            true,
            allowed,
        )?;
    }
    Ok(())
}

fn validate_listener_tls(section: &str, tls: &ListenerTlsConfig) -> Result<(), ConfigError> {
    if tls.enabled && !tls.self_signed {
        let allowed = format!(
            "a non-empty path when {section}.enabled = true and {section}.self_signed = false"
        );
        require(
            !tls.cert_file.is_empty(),
            &format!("{section}.cert_file"),
            quoted(""),
            &allowed,
        )?;
        require(
            !tls.key_file.is_empty(),
            &format!("{section}.key_file"),
            quoted(""),
            &allowed,
        )?;
    }
    Ok(())
}

fn validate_quic(config: &ServerConfig) -> Result<(), ConfigError> {
    let quic = &config.quic;
    require(
        quic.max_concurrent_bidi_streams >= 1,
        "quic.max_concurrent_bidi_streams",
        quic.max_concurrent_bidi_streams,
        "at least 1",
    )?;
    let allowed = format!(
        "greater than 0 and at most quic.receive_window ({})",
        quic.receive_window
    );
    let window = quic.stream_receive_window;
    require(
        !window.is_zero() && window <= quic.receive_window,
        "quic.stream_receive_window",
        quoted(window),
        &allowed,
    )?;
    let certificate = &quic.certificate;
    if !certificate.self_signed {
        let allowed = "a non-empty path when quic.certificate.self_signed = false";
        require(
            !certificate.cert_file.is_empty(),
            "quic.certificate.cert_file",
            quoted(""),
            allowed,
        )?;
        require(
            !certificate.key_file.is_empty(),
            "quic.certificate.key_file",
            quoted(""),
            allowed,
        )?;
    }
    Ok(())
}

fn validate_websocket(
    websocket: &WebSocketConfig,
    bus_message_max: ByteSize,
) -> Result<(), ConfigError> {
    let optional_sizes = [
        ("websocket.read_buffer_size", websocket.read_buffer_size),
        ("websocket.write_buffer_size", websocket.write_buffer_size),
        (
            "websocket.max_write_buffer_size",
            websocket.max_write_buffer_size,
        ),
        ("websocket.max_message_size", websocket.max_message_size),
        ("websocket.max_frame_size", websocket.max_frame_size),
    ];
    for (key, size) in optional_sizes {
        if let Some(size) = size {
            require(
                !size.is_zero(),
                key,
                quoted(size),
                "a non-zero size, or leave the key unset",
            )?;
        }
    }
    let message_max = websocket.max_message_size_or_default();
    let allowed = format!("at most message_bus.max_message_size ({bus_message_max})");
    require(
        message_max <= bus_message_max,
        "websocket.max_message_size",
        quoted(message_max),
        &allowed,
    )?;
    let frame_max = websocket.max_frame_size_or_default();
    let allowed = format!("at most websocket.max_message_size ({message_max})");
    require(
        frame_max <= message_max,
        "websocket.max_frame_size",
        quoted(frame_max),
        &allowed,
    )?;
    if let Some(write_cap) = websocket.max_write_buffer_size {
        let write_buffer = websocket.write_buffer_size_or_default();
        let allowed = format!("greater than websocket.write_buffer_size ({write_buffer})");
        require(
            write_cap > write_buffer,
            "websocket.max_write_buffer_size",
            quoted(write_cap),
            &allowed,
        )?;
    }
    Ok(())
}

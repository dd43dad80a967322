//! The Streamable HTTP transport: rmcp's session-keeping service behind a
//! small hyper listener that serves one path on a loopback address and
//! answers 401 to any request without `Authorization: Bearer <http.token>`.
//! The token check comes first, before rmcp sees the request, so an
//! unauthenticated caller can neither open a session nor learn the tools.

use std::convert::Infallible;
use std::sync::Arc;

use bytes::Bytes;
use http_body_util::{BodyExt, Full, combinators::BoxBody};
use hyper::body::Incoming;
use hyper::header::{AUTHORIZATION, CONTENT_TYPE, HeaderValue, WWW_AUTHENTICATE};
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::{Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use tokio::net::TcpListener;

use crate::config::HttpConfig;
use crate::tools::IggyTools;

type Body = BoxBody<Bytes, Infallible>;
type McpService = StreamableHttpService<IggyTools, LocalSessionManager>;

/// What every request is checked against.
struct Gate {
    path: String,
    expected_authorization: String,
}

/// Binds the loopback address and serves until the future is dropped.
pub async fn serve(config: &HttpConfig, tools: IggyTools) -> anyhow::Result<()> {
    let address = config.socket_address()?;
    let listener = TcpListener::bind(address).await?;
    let bound = listener.local_addr()?;
    tracing::info!(
        "listening on http://{bound}{} (bearer token required)",
        config.path
    );
    let service: McpService = StreamableHttpService::new(
        move || Ok(tools.clone()),
        Arc::new(LocalSessionManager::default()),
        StreamableHttpServerConfig::default(),
    );
    let gate = Arc::new(Gate {
        path: config.path.clone(),
        expected_authorization: format!("Bearer {}", config.token),
    });
    loop {
        let (stream, peer) = listener.accept().await?;
        let service = service.clone();
        let gate = gate.clone();
        tokio::spawn(async move {
            let handler = service_fn(move |request| {
                let service = service.clone();
                let gate = gate.clone();
                async move { Ok::<_, Infallible>(route(&gate, &service, request).await) }
            });
            let connection = http1::Builder::new().serve_connection(TokioIo::new(stream), handler);
            if let Err(error) = connection.await {
                tracing::debug!(%peer, %error, "http connection ended with an error");
            }
        });
    }
}

async fn route(gate: &Gate, service: &McpService, request: Request<Incoming>) -> Response<Body> {
    if request.uri().path() != gate.path {
        return plain(StatusCode::NOT_FOUND, "not found");
    }
    let authorization = request.headers().get(AUTHORIZATION);
    if !authorized(authorization, &gate.expected_authorization) {
        let mut response = plain(StatusCode::UNAUTHORIZED, "a bearer token is required");
        response
            .headers_mut()
            .insert(WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
        return response;
    }
    service.handle(request).await
}

/// Compares in time independent of where the first difference lies, so the
/// token cannot be guessed byte by byte from response times.
fn authorized(header: Option<&HeaderValue>, expected: &str) -> bool {
    let Some(given) = header.map(HeaderValue::as_bytes) else {
        return false;
    };
    let expected = expected.as_bytes();
    let mut difference = given.len() ^ expected.len();
    for (index, byte) in expected.iter().enumerate() {
        let other = given.get(index).copied().unwrap_or(0);
        difference |= usize::from(byte ^ other);
    }
    difference == 0
}

fn plain(status: StatusCode, text: &'static str) -> Response<Body> {
    let mut response = Response::new(Full::new(Bytes::from_static(text.as_bytes())).boxed());
    *response.status_mut() = status;
    response
        .headers_mut()
        .insert(CONTENT_TYPE, HeaderValue::from_static("text/plain"));
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn given_headers_when_checking_the_token_should_accept_only_the_exact_one() {
        let expected = "Bearer s3cret";
        let header = |value: &'static str| HeaderValue::from_static(value);
        assert!(authorized(Some(&header("Bearer s3cret")), expected));
        assert!(!authorized(None, expected));
        assert!(!authorized(Some(&header("Bearer s3cre")), expected));
        assert!(!authorized(Some(&header("Bearer s3cret2")), expected));
        assert!(!authorized(Some(&header("Basic s3cret")), expected));
    }
}

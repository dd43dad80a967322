//! The HTTP REST API (HTTP API spec), served by hyper on shard 0.
//!
//! One request goes: count it, answer CORS preflights, serve the web
//! console under `/ui` (`console`), match the route,
//! authenticate the bearer (except on public routes), read the body under
//! `http.max_request_size`, run the handler against the same engine the
//! binary protocol uses (a write made with a credential under its
//! server-side session, through the client-sessions table: `write`), and
//! render JSON. Success and redirect answers carry `iggy-view` (except
//! `/ping`); errors never do.

mod api;
mod auth;
mod console;
mod cors;
mod error;
mod forward;
mod forward_tls;
mod json;
mod jwks;
mod jwt;
mod router;
mod sessions;
mod trusted_issuers;
mod turns;
mod write;

use std::convert::Infallible;
use std::net::SocketAddr;
use std::rc::Rc;

use bytes::Bytes;
use cyper_core::{CompioExecutor, CompioTimer, HyperStream};
use http_body_util::{BodyExt, Full, Limited};
use hyper::body::Incoming;
use hyper::header::{CONNECTION, CONTENT_TYPE, HeaderValue, RETRY_AFTER};
use hyper::{Request, Response, StatusCode};
use send_wrapper::SendWrapper;
use server::config::{ClusterConfig, HttpConfig};
use tracing::{Instrument, debug, info, warn};

use crate::node::Shard;
pub use auth::HttpAuth;
use cors::Cors;
pub use error::ApiError;
use router::{Route, RouteError};

pub type HttpResponse = Response<Full<Bytes>>;

/// The view number of this node's metadata (a single node stays in view 0).
const VIEW: &str = "0";

/// Everything the HTTP listener needs, built once at start-up.
pub struct HttpSettings {
    pub auth: HttpAuth,
    /// HTTPS (HTTP/2 through ALPN, or HTTP/1.1); `transport` builds the
    /// acceptor when it binds the socket.
    pub tls: Option<compio::tls::TlsAcceptor>,
    pub max_request_size: usize,
    pub cors: Option<Cors>,
    pub metrics_path: Option<String>,
    /// Serve the web console under `/ui` (`http.web_ui`).
    pub web_ui: bool,
    /// Forward control-plane requests to the metadata leader (spec §16.2),
    /// over HTTP or HTTPS as this listener serves; `None`: forwarding off.
    pub forwarding: Option<forward::Transport>,
}

impl HttpSettings {
    /// `own_ip` is this node's roster `ip` (cluster mode).
    pub fn from_config(
        config: &HttpConfig,
        cluster: &ClusterConfig,
        own_ip: Option<&str>,
    ) -> anyhow::Result<Self> {
        let mut jwt = config.jwt.clone();
        let psk = &cluster.auth.shared_secret;
        let shared_psk = cluster.enabled && cluster.auth.enabled && !psk.is_empty();
        let own_secret = !jwt.encoding_secret.is_empty() || !jwt.decoding_secret.is_empty();
        if shared_psk && !own_secret {
            // Tokens keyed by the cluster's PSK verify on every node.
            let key =
                blake3::derive_key("iggy-server http jwt from cluster psk v1", psk.as_bytes());
            jwt.encoding_secret = key.iter().map(|b| format!("{b:02x}")).collect();
            jwt.use_base64_secret = false;
        }
        Ok(Self {
            auth: HttpAuth::from_config(&jwt)?,
            tls: None,
            max_request_size: usize::try_from(config.max_request_size.as_bytes())
                .unwrap_or(usize::MAX),
            cors: config.cors.enabled.then(|| Cors::from_config(&config.cors)),
            metrics_path: config
                .metrics
                .enabled
                .then(|| config.metrics.endpoint.clone()),
            web_ui: config.web_ui,
            forwarding: forwarding(config, cluster, own_ip, own_secret || shared_psk),
        })
    }
}

/// How this node forwards, if it does: tokens must verify on every node,
/// and over HTTPS the peers' certificates must be verifiable
/// (`forward_tls`); otherwise forwarding stays off, with a warning.
fn forwarding(
    config: &HttpConfig,
    cluster: &ClusterConfig,
    own_ip: Option<&str>,
    shared_token_key: bool,
) -> Option<forward::Transport> {
    if !cluster.enabled || !shared_token_key {
        return None;
    }
    if !config.tls.enabled {
        return Some(forward::Transport::Plain);
    }
    let connector = match own_ip {
        Some(own_ip) => forward_tls::connector(&config.tls, &cluster.tls, own_ip),
        None => Err(forward_tls::ForwardTlsError::NoRosterEntry),
    };
    match connector {
        Ok(connector) => {
            let trusted = forward_tls::trusted_files(&config.tls, &cluster.tls).join(", ");
            info!("HTTP forwarding to the leader runs over HTTPS, trusting {trusted}");
            Some(forward::Transport::Tls(connector))
        }
        Err(e) => {
            warn!(
                "HTTP forwarding to the leader is off: {e}. Followers answer control-plane \
                 writes with 503 and linearizable reads with 307; see docs/cluster.md"
            );
            None
        }
    }
}

pub struct HttpApp {
    pub shard: Rc<Shard>,
    pub settings: HttpSettings,
    sessions: sessions::HttpSessions,
    forwarder: forward::Forwarder,
}

/// How often expired HTTP sessions are ended.
const SESSION_SWEEP_INTERVAL: std::time::Duration = std::time::Duration::from_secs(1);

/// Spawns the accept loop on this shard (shard 0).
pub fn serve(shard: &Rc<Shard>, listener: std::net::TcpListener, settings: HttpSettings) {
    let listener = match compio::net::TcpListener::from_std(listener) {
        Ok(listener) => listener,
        Err(e) => {
            tracing::error!("cannot serve the HTTP listener: {e}");
            return;
        }
    };
    let app = Rc::new(HttpApp {
        shard: shard.clone(),
        settings,
        sessions: sessions::HttpSessions::new(shard.ctx.limits.clients_table_max),
        forwarder: forward::Forwarder::default(),
    });
    compio::runtime::spawn(sweep_sessions(app.clone())).detach();
    compio::runtime::spawn(accept_loop(listener, app)).detach();
}

async fn sweep_sessions(app: Rc<HttpApp>) {
    while !app.shard.ctx.is_stopping() {
        compio::time::sleep(SESSION_SWEEP_INTERVAL).await;
        let now_secs = crate::node::process_stats::now_us() / 1_000_000;
        app.sessions.sweep(&app.shard.node, now_secs);
    }
}

async fn accept_loop(listener: compio::net::TcpListener, app: Rc<HttpApp>) {
    let shard = app.shard.clone();
    while let Some((stream, peer)) = shard.next_connection(&listener, "HTTP").await {
        let _ = stream.set_nodelay(true);
        compio::runtime::spawn(serve_connection(app.clone(), stream, peer)).detach();
    }
}

async fn serve_connection(app: Rc<HttpApp>, stream: compio::net::TcpStream, peer: SocketAddr) {
    let metrics = &app.shard.ctx.metrics;
    metrics.connection_opened(crate::metrics::Transport::Http);
    let io = match &app.settings.tls {
        None => HyperStream::new_plain(stream),
        Some(tls) => {
            let timeout = app.shard.ctx.limits.handshake_grace;
            match compio::time::timeout(timeout, tls.accept(stream)).await {
                Ok(Ok(stream)) => HyperStream::new_tls(stream),
                Ok(Err(e)) => {
                    debug!(%peer, "HTTPS handshake failed: {e}");
                    metrics.connection_closed(crate::metrics::Transport::Http);
                    return;
                }
                Err(_) => {
                    debug!(%peer, "HTTPS handshake timed out");
                    metrics.connection_closed(crate::metrics::Transport::Http);
                    return;
                }
            }
        }
    };
    let service = Service(SendWrapper::new((app.clone(), peer)));
    let mut builder = hyper_util::server::conn::auto::Builder::new(CompioExecutor);
    // A client must finish sending its request head within the frame
    // timeout (no slow-drip headers holding connections open).
    builder
        .http1()
        .timer(CompioTimer)
        .header_read_timeout(app.shard.ctx.limits.frame_timeout);
    builder.http2().timer(CompioTimer);
    if let Err(e) = builder.serve_connection(Box::pin(io), service).await {
        debug!(%peer, "HTTP connection ended: {e}");
    }
    metrics.connection_closed(crate::metrics::Transport::Http);
}

/// The hyper service: the app lives on this shard's thread only, which the
/// wrapper asserts (hyper wants `Send` futures even on one thread).
struct Service(SendWrapper<(Rc<HttpApp>, SocketAddr)>);

impl hyper::service::Service<Request<Incoming>> for Service {
    type Response = HttpResponse;
    type Error = Infallible;
    type Future =
        SendWrapper<std::pin::Pin<Box<dyn Future<Output = Result<HttpResponse, Infallible>>>>>;

    fn call(&self, request: Request<Incoming>) -> Self::Future {
        let (app, peer) = (Rc::clone(&self.0.0), self.0.1);
        SendWrapper::new(Box::pin(async move { Ok(app.handle(request, peer).await) }))
    }
}

impl HttpApp {
    async fn handle(&self, request: Request<Incoming>, peer: SocketAddr) -> HttpResponse {
        let _busy = self.shard.request_guard();
        self.shard.ctx.metrics.http_request();
        let origin = request.headers().get(hyper::header::ORIGIN).cloned();
        if let Some(cors) = &self.settings.cors
            && let Some(preflight) = cors.preflight(&request)
        {
            return preflight;
        }
        let span = crate::telemetry::http_span(request.method(), request.uri(), request.headers());
        let mut response = self.dispatch(request, peer).instrument(span.clone()).await;
        let status = response.status();
        crate::telemetry::record_outcome(
            &span,
            !status.is_server_error() && !status.is_client_error(),
            &status.as_u16(),
        );
        if let (Some(cors), Some(origin)) = (&self.settings.cors, origin) {
            cors.decorate(&origin, &mut response);
        }
        response
    }

    async fn dispatch(&self, request: Request<Incoming>, peer: SocketAddr) -> HttpResponse {
        if let Some(page) =
            console::serve(self.settings.web_ui, request.method(), request.uri().path())
        {
            return page;
        }
        let metrics_path = self.settings.metrics_path.as_deref();
        let route = match router::route(request.method(), request.uri().path(), metrics_path) {
            Ok(route) => route,
            Err(RouteError::NotFound) => return empty(StatusCode::NOT_FOUND),
            Err(RouteError::MethodNotAllowed) => return empty(StatusCode::METHOD_NOT_ALLOWED),
        };
        let node = &self.shard.node;
        let cluster = node.committer.as_ref();
        let follower = cluster.is_some_and(|c| {
            !matches!(c.leader(), crate::node::cluster_commit::Leader::Here { .. })
        });
        if follower && forward::was_forwarded(request.headers()) {
            return forward::second_hop(); // one hop only
        }
        let query = request.uri().query().unwrap_or_default();
        let forwarded = follower
            && self.settings.forwarding.is_some()
            && forward::forwardable(
                &route,
                request.method(),
                forward::exactly_linearizable(query),
            );
        if !forwarded && let Some(answer) = self.follower_read(&request) {
            return answer;
        }
        if let Some(index) = api::command_index(&route) {
            if let Some(code) = protocol::CommandCode::ALL.get(index) {
                crate::telemetry::record_command(&tracing::Span::current(), code.name());
            }
            node.ctx
                .metrics
                .request(crate::metrics::Transport::Http, index);
        }
        let caller = if route.is_public() {
            None
        } else {
            match self
                .settings
                .auth
                .authenticate(node, request.headers())
                .await
            {
                Ok(found) => Some(found),
                Err(e) => return error_response(&e),
            }
        };
        if let (Route::Logout, Some((_, credential))) = (&route, &caller) {
            self.sessions.end(node, credential);
        }
        let is_write = request.method() != hyper::Method::GET;
        let query = request.uri().query().unwrap_or_default().to_owned();
        let (parts, body) = request.into_parts();
        let body = match self.read_body(body).await {
            Ok(body) => body,
            Err(response) => return *response,
        };
        if forwarded && let (Some(cluster), Some(transport)) = (cluster, &self.settings.forwarding)
        {
            // Verified here first (above); the leader checks it again.
            let outgoing = forward::Outgoing {
                method: parts.method.clone(),
                target: parts
                    .uri
                    .path_and_query()
                    .map_or_else(|| parts.uri.path().to_owned(), |p| p.as_str().to_owned()),
                headers: &parts.headers,
                body: body.clone(),
            };
            let leader = || cluster.leader();
            if let Some(answer) = self.forwarder.forward(transport, &outgoing, leader).await {
                return answer;
            }
        }
        let call = api::HttpCall {
            app: self,
            user: caller.as_ref().map(|(user, _)| *user),
            query: &query,
            body: &body,
        };
        let is_ping = route == Route::Ping;
        // Writes made with a credential (all but logout) run under its
        // server-side session, through the client-sessions table.
        let result = match &caller {
            Some((user, credential)) if is_write && route != Route::Logout => {
                let writer = sessions::Writer {
                    credential,
                    user_id: user.0,
                    peer,
                    now_secs: crate::node::process_stats::now_us() / 1_000_000,
                };
                write::run(self, &writer, call, route).await
            }
            _ => api::run(call, route).await,
        };
        match result {
            Ok(reply) => {
                let mut response = reply.into_response(!is_ping);
                if !is_ping {
                    self.stamp_view(&mut response);
                }
                response
            }
            Err(e) => error_response(&e),
        }
    }

    /// A cluster node's answers carry its metadata view in `iggy-view` (a
    /// single node stays in view 0).
    fn stamp_view(&self, response: &mut HttpResponse) {
        if let Some(cluster) = self.shard.node.committer.as_ref() {
            response
                .headers_mut()
                .insert("iggy-view", HeaderValue::from(cluster.view()));
        }
    }

    /// A cluster node that does not lead the metadata group answers a read
    /// asking for `consistency=linearizable` with a redirect to the leader
    /// (307, `Location`, `iggy-view`), or 503 `not_primary` while no leader
    /// is known (HTTP API spec §16.1); every other request is served here.
    fn follower_read(&self, request: &Request<Incoming>) -> Option<HttpResponse> {
        use crate::node::cluster_commit::Leader;
        if request.method() != hyper::Method::GET {
            return None;
        }
        let query = request.uri().query()?;
        let linearizable = router::query_pairs(query)?
            .iter()
            .any(|(key, value)| key == "consistency" && value == "linearizable");
        let cluster = self.shard.node.committer.as_ref()?;
        if !linearizable {
            return None;
        }
        match cluster.leader() {
            Leader::Here { .. } => None,
            Leader::There {
                view,
                ip,
                http_port,
            } => {
                let scheme = if self.settings.tls.is_some() {
                    "https"
                } else {
                    "http"
                };
                let host = if ip.contains(':') {
                    format!("[{ip}]")
                } else {
                    ip
                };
                let location = format!(
                    "{scheme}://{host}:{http_port}{}?{query}",
                    request.uri().path()
                );
                let mut response = empty(StatusCode::TEMPORARY_REDIRECT);
                let headers = response.headers_mut();
                if let Ok(value) = HeaderValue::from_str(&location) {
                    headers.insert(hyper::header::LOCATION, value);
                }
                headers.insert("iggy-view", HeaderValue::from(view));
                Some(response)
            }
            Leader::Unknown { .. } => {
                let mut error = ApiError::http(
                    StatusCode::SERVICE_UNAVAILABLE,
                    "not_primary",
                    "no metadata leader is known yet; retry",
                );
                error.retry_after = true;
                Some(error_response(&error))
            }
        }
    }

    /// The whole body, or 413 (with `Connection: close`) past the limit.
    async fn read_body(&self, body: Incoming) -> Result<Bytes, Box<HttpResponse>> {
        match Limited::new(body, self.settings.max_request_size)
            .collect()
            .await
        {
            Ok(collected) => Ok(collected.to_bytes()),
            Err(e) if e.is::<http_body_util::LengthLimitError>() => {
                let error = ApiError::http(
                    StatusCode::PAYLOAD_TOO_LARGE,
                    "payload_too_large",
                    format!(
                        "the request body is larger than http.max_request_size ({} bytes)",
                        self.settings.max_request_size
                    ),
                );
                let mut response = error_response(&error);
                response
                    .headers_mut()
                    .insert(CONNECTION, HeaderValue::from_static("close"));
                Err(Box::new(response))
            }
            Err(e) => Err(Box::new(error_response(&ApiError::bad_request(format!(
                "cannot read the request body: {e}"
            ))))),
        }
    }
}

fn empty(status: StatusCode) -> HttpResponse {
    let mut response = Response::new(Full::new(Bytes::new()));
    *response.status_mut() = status;
    response
}

pub fn error_response(error: &ApiError) -> HttpResponse {
    let mut response = Response::new(Full::new(Bytes::from(error.body())));
    *response.status_mut() = error.status;
    let headers = response.headers_mut();
    headers.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
    if error.retry_after {
        headers.insert(RETRY_AFTER, HeaderValue::from_static("1"));
    }
    response
}

/// Adds `iggy-view` to a success answer.
fn with_view(mut response: HttpResponse) -> HttpResponse {
    response
        .headers_mut()
        .insert("iggy-view", HeaderValue::from_static(VIEW));
    response
}

//! Follower-to-leader forwarding of control-plane requests (HTTP API spec
//! §16.2). Active only in cluster mode when a bearer minted on one node
//! verifies on every node (`http.jwt` secrets set, or `cluster.auth` on,
//! whose PSK then keys the tokens). Over a plain listener forwards go over
//! HTTP; with `http.tls` on they go over HTTPS, trusting what
//! `forward_tls` says (the cluster CA and this node's own HTTP chain) and
//! checking the leader's roster `ip` on its certificate.
//!
//! A node that does not lead the metadata group re-sends a forwardable
//! request (writes to users, tokens, streams, topics, partitions and
//! consumer groups, logout, and those routes' GETs that ask for
//! `consistency=linearizable`) to the leader's roster address and HTTP
//! port, once verified here, with `iggy-forwarded: 1`; it relays the
//! status, the body and the `Content-Type`, `Retry-After` and `iggy-view`
//! headers. A connection failure (a failed TLS handshake included), a 307
//! or a 503 whose body is id 58 (the request provably never entered a
//! pipeline) is retried every 50 ms for up to 30 s, finding the leader
//! afresh each time. Partition-plane routes are never forwarded, and a
//! request that was forwarded once is never forwarded again (one hop).

use std::cell::Cell;
use std::time::{Duration, Instant};

use bytes::Bytes;
use compio::net::TcpStream;
use cyper_core::HyperStream;
use http_body_util::{BodyExt, Full, Limited};
use hyper::header::{AUTHORIZATION, CONTENT_TYPE, HeaderMap, HeaderValue, RETRY_AFTER};
use hyper::{Method, Request, Response, StatusCode};
use protocol::ErrorCode;
use tracing::warn;

use super::router::Route;
use super::{ApiError, HttpResponse, error_response};
use crate::node::cluster_commit::Leader;

/// The header that marks a forwarded request.
pub const FORWARDED: &str = "iggy-forwarded";
/// Forwards in flight per node at most.
const IN_FLIGHT_MAX: usize = 128;
const RETRY_EVERY: Duration = Duration::from_millis(50);
const RETRY_FOR: Duration = Duration::from_secs(30);
/// One attempt, connection to last body byte.
const ATTEMPT_TIMEOUT: Duration = Duration::from_secs(35);
/// The TCP connection; over HTTPS, the TLS handshake as well.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(2);
/// A failing TLS handshake is logged at most this often.
const HANDSHAKE_WARNING_EVERY: Duration = Duration::from_secs(10);
/// A relayed answer larger than this is refused (502).
const RELAYED_MAX: usize = 64 << 20;

/// Whether a request on `route` goes to the leader: writes of the
/// forwardable routes, and their GETs asking for a linearizable read.
pub fn forwardable(route: &Route, method: &Method, linearizable: bool) -> bool {
    use Route as R;
    let control_plane = matches!(
        route,
        R::Logout
            | R::Users
            | R::CreateUser
            | R::User(_)
            | R::UpdateUser(_)
            | R::DeleteUser(_)
            | R::ChangePassword(_)
            | R::UpdatePermissions(_)
            | R::Tokens
            | R::CreateToken
            | R::DeleteToken(_)
            | R::Streams
            | R::CreateStream
            | R::Stream(_)
            | R::UpdateStream(_)
            | R::DeleteStream(_)
            | R::PurgeStream(_)
            | R::Topics(_)
            | R::CreateTopic(_)
            | R::Topic(..)
            | R::UpdateTopic(..)
            | R::DeleteTopic(..)
            | R::PurgeTopic(..)
            | R::CreatePartitions(..)
            | R::DeletePartitions(..)
            | R::DeleteSegments(..)
            | R::Groups(..)
            | R::CreateGroup(..)
            | R::Group(..)
            | R::DeleteGroup(..)
    );
    control_plane && (*method != Method::GET || linearizable)
}

/// Whether the query is exactly `consistency=linearizable` (spec §16.1:
/// only then is a GET forwarded).
pub fn exactly_linearizable(query: &str) -> bool {
    super::router::query_pairs(query).is_some_and(|pairs| {
        pairs.len() == 1 && pairs[0].0 == "consistency" && pairs[0].1 == "linearizable"
    })
}

/// What a forward needs of the original request.
pub struct Outgoing<'a> {
    pub method: Method,
    /// Path and query, as received.
    pub target: String,
    pub headers: &'a HeaderMap,
    pub body: Bytes,
}

/// How a forward reaches the leader: the scheme of this node's listener.
#[derive(Clone)]
pub enum Transport {
    Plain,
    /// HTTPS, with the trust `forward_tls::connector` built.
    Tls(compio::tls::TlsConnector),
}

/// Counts forwards in flight.
#[derive(Default)]
pub struct Forwarder {
    in_flight: Cell<usize>,
    /// When a failed TLS handshake was last logged.
    handshake_warned: Cell<Option<Instant>>,
}

/// How one attempt ended.
enum Attempt {
    /// Relay this answer.
    Answer(HttpResponse),
    /// Nothing reached the leader, or it said "not me"/58: try again.
    Retry,
    /// The TLS handshake failed (nothing was sent): try again, and say why.
    Handshake(String),
    /// Sent, then failed: the request may have been carried out.
    Failed(String),
    TimedOut,
}

impl Forwarder {
    /// Forwards `request` to the leader `leader()` names, retrying as the
    /// module says; `None` once this node leads (serve it here).
    pub async fn forward(
        &self,
        transport: &Transport,
        request: &Outgoing<'_>,
        leader: impl Fn() -> Leader,
    ) -> Option<HttpResponse> {
        if self.in_flight.get() >= IN_FLIGHT_MAX {
            let mut error = ApiError::http(
                StatusCode::SERVICE_UNAVAILABLE,
                "forward_busy",
                "too many requests are being forwarded to the leader; retry",
            );
            error.retry_after = true;
            return Some(error_response(&error));
        }
        self.in_flight.set(self.in_flight.get() + 1);
        let answer = self.forward_with_retries(transport, request, leader).await;
        self.in_flight.set(self.in_flight.get() - 1);
        answer
    }

    async fn forward_with_retries(
        &self,
        transport: &Transport,
        request: &Outgoing<'_>,
        leader: impl Fn() -> Leader,
    ) -> Option<HttpResponse> {
        let deadline = Instant::now() + RETRY_FOR;
        loop {
            if let Leader::Here { .. } = leader() {
                return None;
            }
            if let Leader::There { ip, http_port, .. } = leader() {
                match attempt(&ip, http_port, transport, request).await {
                    Attempt::Answer(response) => return Some(response),
                    Attempt::Retry => {}
                    Attempt::Handshake(reason) => self.handshake_failed(&ip, http_port, &reason),
                    Attempt::Failed(reason) => {
                        let error = ApiError::http(
                            StatusCode::BAD_GATEWAY,
                            "forward_failed",
                            format!("forwarding to the leader failed after sending: {reason}"),
                        );
                        return Some(error_response(&error));
                    }
                    Attempt::TimedOut => {
                        let error = ApiError::http(
                            StatusCode::GATEWAY_TIMEOUT,
                            "forward_timeout",
                            "the leader did not answer the forwarded request in time",
                        );
                        return Some(error_response(&error));
                    }
                }
            }
            if Instant::now() >= deadline {
                let mut error = ApiError::http(
                    StatusCode::SERVICE_UNAVAILABLE,
                    "no_reachable_primary",
                    "no metadata leader could be reached; retry",
                );
                error.retry_after = true;
                return Some(error_response(&error));
            }
            compio::time::sleep(RETRY_EVERY).await;
        }
    }

    /// Logs a failed TLS handshake with the leader, at most once per
    /// `HANDSHAKE_WARNING_EVERY` (a forward retries it every 50 ms).
    fn handshake_failed(&self, ip: &str, port: u16, reason: &str) {
        let now = Instant::now();
        if self
            .handshake_warned
            .get()
            .is_some_and(|last| now.duration_since(last) < HANDSHAKE_WARNING_EVERY)
        {
            return;
        }
        self.handshake_warned.set(Some(now));
        warn!(leader = %ip, port, "forwarding: the TLS handshake with the leader failed: {reason}");
    }
}

async fn attempt(ip: &str, port: u16, transport: &Transport, request: &Outgoing<'_>) -> Attempt {
    let address = if ip.contains(':') {
        format!("[{ip}]:{port}")
    } else {
        format!("{ip}:{port}")
    };
    let connect = TcpStream::connect(address.as_str());
    let stream = match compio::time::timeout(CONNECT_TIMEOUT, connect).await {
        Ok(Ok(stream)) => stream,
        _ => return Attempt::Retry,
    };
    let _ = stream.set_nodelay(true);
    let io = match transport {
        Transport::Plain => HyperStream::new_plain(stream),
        // The leader's certificate must name its roster `ip`.
        Transport::Tls(connector) => {
            match compio::time::timeout(CONNECT_TIMEOUT, connector.connect(ip, stream)).await {
                Ok(Ok(stream)) => HyperStream::new_tls(stream),
                Ok(Err(e)) => return Attempt::Handshake(e.to_string()),
                Err(_) => return Attempt::Handshake("timed out".to_owned()),
            }
        }
    };
    match compio::time::timeout(ATTEMPT_TIMEOUT, exchange(io, &address, request)).await {
        Ok(attempt) => attempt,
        Err(_) => Attempt::TimedOut,
    }
}

async fn exchange(io: HyperStream<TcpStream>, host: &str, request: &Outgoing<'_>) -> Attempt {
    let Ok((mut sender, connection)) = hyper::client::conn::http1::handshake(io).await else {
        return Attempt::Retry;
    };
    compio::runtime::spawn(async move {
        let _ = connection.await;
    })
    .detach();
    let mut builder = Request::builder()
        .method(request.method.clone())
        .uri(request.target.as_str())
        .header(hyper::header::HOST, host)
        .header(FORWARDED, "1");
    for name in [AUTHORIZATION, CONTENT_TYPE] {
        if let Some(value) = request.headers.get(&name) {
            builder = builder.header(name, value.clone());
        }
    }
    let Ok(outgoing) = builder.body(Full::new(request.body.clone())) else {
        return Attempt::Failed("the request could not be rebuilt".to_owned());
    };
    let response = match sender.send_request(outgoing).await {
        Ok(response) => response,
        // Not sent at all: safe to try again. Otherwise whether the
        // leader read it is unknown.
        Err(e) if e.is_canceled() => return Attempt::Retry,
        Err(e) => return Attempt::Failed(e.to_string()),
    };
    let status = response.status();
    let headers = response.headers().clone();
    let body = match Limited::new(response.into_body(), RELAYED_MAX)
        .collect()
        .await
    {
        Ok(collected) => collected.to_bytes(),
        Err(e) if e.is::<http_body_util::LengthLimitError>() => {
            return Attempt::Failed(format!("its answer is larger than {RELAYED_MAX} bytes"));
        }
        Err(e) => return Attempt::Failed(e.to_string()),
    };
    if status == StatusCode::TEMPORARY_REDIRECT || never_entered(status, &body) {
        return Attempt::Retry;
    }
    let mut relayed = Response::new(Full::new(body));
    *relayed.status_mut() = status;
    for name in [CONTENT_TYPE, RETRY_AFTER] {
        if let Some(value) = headers.get(&name) {
            relayed.headers_mut().insert(name, value.clone());
        }
    }
    if let Some(view) = headers.get("iggy-view") {
        relayed.headers_mut().insert("iggy-view", view.clone());
    }
    Attempt::Answer(relayed)
}

/// A 503 whose body is error 58: the leader provably did not start it.
fn never_entered(status: StatusCode, body: &[u8]) -> bool {
    #[derive(serde::Deserialize)]
    struct Id {
        id: u32,
    }
    status == StatusCode::SERVICE_UNAVAILABLE
        && serde_json::from_slice::<Id>(body)
            .is_ok_and(|e| e.id == ErrorCode::TransientNotAccepted as u32)
}

/// A request that was forwarded once and reached another follower.
pub fn second_hop() -> HttpResponse {
    let error = ApiError::iggy(ErrorCode::TransientNotAccepted);
    error_response(&error)
}

/// Whether the request came from a forwarding node.
pub fn was_forwarded(headers: &HeaderMap) -> bool {
    headers.get(FORWARDED) == Some(&HeaderValue::from_static("1"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn forwardable_routes_are_the_control_plane_writes_and_linearizable_reads() {
        let stream = Route::CreateStream;
        assert!(forwardable(&stream, &Method::POST, false));
        assert!(!forwardable(&Route::Streams, &Method::GET, false));
        assert!(forwardable(&Route::Streams, &Method::GET, true));
        let send = Route::Send("s".into(), "t".into());
        assert!(!forwardable(&send, &Method::POST, false), "partition plane");
        let poll = Route::Poll("s".into(), "t".into());
        assert!(
            !forwardable(&poll, &Method::GET, true),
            "never, even linearizable"
        );
        assert!(!forwardable(&Route::Stats, &Method::GET, true));
        assert!(forwardable(&Route::Logout, &Method::DELETE, false));
        assert!(!forwardable(&Route::Login, &Method::POST, false), "public");
    }

    #[test]
    fn only_the_exact_pair_makes_a_get_linearizable_for_forwarding() {
        assert!(exactly_linearizable("consistency=linearizable"));
        assert!(!exactly_linearizable("consistency=serializable"));
        assert!(!exactly_linearizable("consistency=linearizable&x=1"));
        assert!(!exactly_linearizable(""));
    }

    #[test]
    fn a_503_with_id_58_is_retried_and_other_answers_are_not() {
        let body = ApiError::iggy(ErrorCode::TransientNotAccepted).body();
        assert!(never_entered(StatusCode::SERVICE_UNAVAILABLE, &body));
        let committed = ApiError::iggy(ErrorCode::TransientNotCommitted).body();
        assert!(!never_entered(StatusCode::SERVICE_UNAVAILABLE, &committed));
        assert!(!never_entered(StatusCode::BAD_REQUEST, &body));
    }
}

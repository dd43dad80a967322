//! OpenTelemetry export from the real binary (configuration §7.9): with
//! `telemetry.enabled`, spans and logs reach a loopback OTLP receiver over
//! HTTP/protobuf and over gRPC, carrying `service.name` from the config, a
//! request span per command with its transport, stream and topic, and the
//! caller's trace id when an HTTP request sent a W3C `traceparent`.
//!
//! The receivers are small: the HTTP one is a std `TcpListener` that reads
//! one POST per connection; the gRPC one is hyper's HTTP/2 server answering
//! every call with an empty message and `grpc-status: 0`. Payloads are
//! checked as protobuf bytes, where strings appear verbatim.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod harness;

use std::convert::Infallible;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpListener};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use bytes::Bytes;
use harness::http::{request, request_with, root_token};
use harness::{ServerOptions, TestServer, Workdir, raw};
use http_body_util::BodyExt;
use hyper::body::Frame;
use protocol::CommandCode;

/// A traceparent whose trace id the exported request span must carry.
const TRACE_ID_HEX: &str = "4bf92f3577b34da6a3ce929d0e0e4736";
const TRACEPARENT: &str = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";

/// Export requests received: (path, protobuf payload).
type Received = Arc<Mutex<Vec<(String, Vec<u8>)>>>;

fn start_http_receiver() -> (SocketAddr, Received) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let received: Received = Arc::default();
    let store = Arc::clone(&received);
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(stream) = stream else { continue };
            let store = Arc::clone(&store);
            std::thread::spawn(move || serve_http(stream, &store));
        }
    });
    (addr, received)
}

/// Serves POSTs on one keep-alive connection until the peer closes it.
fn serve_http(mut stream: std::net::TcpStream, store: &Received) {
    let mut reader = BufReader::new(stream.try_clone().unwrap());
    loop {
        let mut request_line = String::new();
        if reader.read_line(&mut request_line).unwrap_or(0) == 0 {
            return;
        }
        let path = request_line
            .split(' ')
            .nth(1)
            .unwrap_or_default()
            .to_owned();
        let mut length = 0;
        loop {
            let mut line = String::new();
            reader.read_line(&mut line).unwrap();
            if line.trim().is_empty() {
                break;
            }
            if let Some((name, value)) = line.split_once(':')
                && name.eq_ignore_ascii_case("content-length")
            {
                length = value.trim().parse().unwrap();
            }
        }
        let mut body = vec![0; length];
        reader.read_exact(&mut body).unwrap();
        store.lock().unwrap().push((path, body));
        let answer =
            "HTTP/1.1 200 OK\r\ncontent-type: application/x-protobuf\r\ncontent-length: 0\r\n\r\n";
        if stream.write_all(answer.as_bytes()).is_err() {
            return;
        }
    }
}

fn start_grpc_receiver() -> (SocketAddr, Received) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let addr = listener.local_addr().unwrap();
    let received: Received = Arc::default();
    let store = Arc::clone(&received);
    std::thread::spawn(move || {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        runtime.block_on(async move {
            let listener = tokio::net::TcpListener::from_std(listener).unwrap();
            loop {
                let (stream, _) = listener.accept().await.unwrap();
                let store = Arc::clone(&store);
                let service = hyper::service::service_fn(move |request| {
                    grpc_export(request, Arc::clone(&store))
                });
                tokio::spawn(
                    hyper::server::conn::http2::Builder::new(hyper_util::rt::TokioExecutor::new())
                        .serve_connection(hyper_util::rt::TokioIo::new(stream), service),
                );
            }
        });
    });
    (addr, received)
}

/// The reply of a unary gRPC call: its frames, sent in order.
struct GrpcBody(std::collections::VecDeque<Frame<Bytes>>);

impl hyper::body::Body for GrpcBody {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        mut self: std::pin::Pin<&mut Self>,
        _: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        std::task::Poll::Ready(self.0.pop_front().map(Ok))
    }
}

/// Stores the message of one unary call and answers with an empty one.
async fn grpc_export(
    request: hyper::Request<hyper::body::Incoming>,
    store: Received,
) -> Result<hyper::Response<GrpcBody>, Infallible> {
    let path = request.uri().path().to_owned();
    let body = request.into_body().collect().await.unwrap().to_bytes();
    // 1 byte compressed flag, 4 bytes big-endian length, then the message.
    store
        .lock()
        .unwrap()
        .push((path, body.get(5..).unwrap_or_default().to_vec()));
    let mut trailers = hyper::HeaderMap::new();
    trailers.insert("grpc-status", "0".parse().unwrap());
    let frames = [
        Frame::data(Bytes::from_static(&[0, 0, 0, 0, 0])),
        Frame::trailers(trailers),
    ];
    let response = hyper::Response::builder()
        .header("content-type", "application/grpc")
        .body(GrpcBody(frames.into_iter().collect()))
        .unwrap();
    Ok(response)
}

fn start_server(transport: &str, receiver: SocketAddr, service: &str) -> (Workdir, TestServer) {
    let workdir = Workdir::new();
    let options = ServerOptions::default()
        .env("IGGY_TELEMETRY_ENABLED", "true")
        .env("IGGY_TELEMETRY_SERVICE_NAME", service)
        .env("IGGY_TELEMETRY_TRACES_TRANSPORT", transport)
        .env(
            "IGGY_TELEMETRY_TRACES_ENDPOINT",
            &format!("http://{receiver}/v1/traces"),
        )
        .env("IGGY_TELEMETRY_LOGS_TRANSPORT", transport)
        .env(
            "IGGY_TELEMETRY_LOGS_ENDPOINT",
            &format!("http://{receiver}/v1/logs"),
        );
    let server = TestServer::start(&workdir, &options);
    (workdir, server)
}

/// Requests over HTTP (with a traceparent on one) and the binary protocol.
fn exercise(server: &TestServer) {
    let http = server.address("http").unwrap();
    let token = root_token(http);
    let created = request(
        http,
        "POST",
        "/streams",
        Some(&token),
        Some(br#"{"name":"tele"}"#),
    );
    assert!(created.status < 300, "{}", created.text());
    let topic = br#"{"name":"orders","partitions_count":1,"compression_algorithm":"none","message_expiry":0,"max_topic_size":0}"#;
    request(
        http,
        "POST",
        "/streams/tele/topics",
        Some(&token),
        Some(topic),
    );
    let traced = request_with(
        http,
        "GET",
        "/streams/tele/topics/orders",
        &[("traceparent", TRACEPARENT)],
        Some(&token),
        None,
    );
    assert!(traced.status < 500);
    // A stream named only in a binary request's body (the HTTP create
    // names it in the body, which spans do not record).
    let created = request(
        http,
        "POST",
        "/streams",
        Some(&token),
        Some(br#"{"name":"binscope"}"#),
    );
    assert!(created.status < 300, "{}", created.text());
    let mut tcp = raw::connect(server.tcp());
    let session = raw::login(&mut tcp);
    raw::send(&mut tcp, CommandCode::Ping, session, 1, &[]);
    raw::read_frame(&mut tcp).unwrap();
    let mut stream_by_name = vec![2u8, 8];
    stream_by_name.extend_from_slice(b"binscope");
    raw::send(
        &mut tcp,
        CommandCode::GetTopics,
        session,
        2,
        &stream_by_name,
    );
    raw::read_frame(&mut tcp).unwrap();
}

fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    haystack
        .windows(needle.len())
        .any(|window| window == needle)
}

/// Waits until some payload at a path ending in `path_suffix` holds every
/// needle; returns whether one did.
fn wait_for(received: &Received, path_suffix: &str, needles: &[&[u8]]) -> bool {
    let deadline = Instant::now() + Duration::from_secs(20);
    while Instant::now() < deadline {
        let found = received.lock().unwrap().iter().any(|(path, body)| {
            path.ends_with(path_suffix) && needles.iter().all(|needle| contains(body, needle))
        });
        if found {
            return true;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    false
}

fn trace_id() -> Vec<u8> {
    (0..16)
        .map(|i| u8::from_str_radix(&TRACE_ID_HEX[2 * i..2 * i + 2], 16).unwrap())
        .collect()
}

fn paths(received: &Received) -> Vec<String> {
    received
        .lock()
        .unwrap()
        .iter()
        .map(|(p, _)| p.clone())
        .collect()
}

#[test]
fn given_otlp_http_receiver_when_requests_run_should_export_spans_and_logs_with_service_name() {
    let (receiver, received) = start_http_receiver();
    let (_workdir, server) = start_server("http", receiver, "iggy-otlp-http");
    exercise(&server);
    let span_needles: [&[u8]; 5] = [b"iggy-otlp-http", b"command", b"stream", b"tele", b"orders"];
    assert!(
        wait_for(&received, "/v1/traces", &span_needles),
        "spans: {:?}",
        paths(&received)
    );
    assert!(
        wait_for(&received, "/v1/traces", &[b"iggy-otlp-http", b"binscope"]),
        "a binary request's span names the stream it asked for"
    );
    assert!(
        wait_for(&received, "/v1/traces", &[b"iggy-otlp-http", &trace_id()]),
        "the traceparent's trace id"
    );
    assert!(
        wait_for(&received, "/v1/traces", &[b"transport", b"tcp", b"ping"]),
        "binary span"
    );
    assert!(
        wait_for(&received, "/v1/logs", &[b"iggy-otlp-http", b"server ready"]),
        "logs: {:?}",
        paths(&received)
    );
    let metrics = request(
        server.address("http").unwrap(),
        "GET",
        "/metrics",
        Some(&root_token(server.address("http").unwrap())),
        None,
    );
    assert!(
        metrics
            .text()
            .contains("iggy_telemetry_dropped_total{signal=\"traces\"} 0"),
        "{}",
        metrics.text()
    );
}

#[test]
fn given_otlp_grpc_receiver_when_requests_run_should_export_spans_and_logs_with_service_name() {
    let (receiver, received) = start_grpc_receiver();
    let (_workdir, server) = start_server("grpc", receiver, "iggy-otlp-grpc");
    exercise(&server);
    let traces = "opentelemetry.proto.collector.trace.v1.TraceService/Export";
    let logs = "opentelemetry.proto.collector.logs.v1.LogsService/Export";
    assert!(
        wait_for(
            &received,
            traces,
            &[b"iggy-otlp-grpc", b"command", b"tele", &trace_id()]
        ),
        "spans: {:?}",
        paths(&received)
    );
    assert!(
        wait_for(&received, logs, &[b"iggy-otlp-grpc", b"server ready"]),
        "logs: {:?}",
        paths(&received)
    );
}

#[test]
fn given_unreachable_collector_when_requests_run_should_keep_serving() {
    let unused = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap();
    let (_workdir, server) = start_server("http", unused, "iggy-no-collector");
    let started = Instant::now();
    exercise(&server);
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "export must not slow requests down"
    );
}

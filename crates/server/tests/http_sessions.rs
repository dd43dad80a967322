//! HTTP writes go through the client-sessions table under their
//! credential's server-side session, as binary-protocol writes do: one
//! credential's concurrent writes take turns instead of failing as in
//! flight, a refused write does not block the next, and a session the
//! bounded table evicted is renewed without the user noticing.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod harness;

use std::io::Write;
use std::net::{SocketAddr, TcpStream};
use std::sync::{Arc, Barrier};

use harness::http::{RawResponse, http_client_ids, request, root_token};
use harness::{ServerOptions, TestServer, Workdir, raw};
use protocol::CommandCode;
use protocol::header::{ReplyHeader, RequestHeader};

const WRITERS: usize = 20;

fn start_with(env: &[(&str, &str)]) -> (Workdir, TestServer) {
    let workdir = Workdir::new();
    let mut options = ServerOptions::default();
    for (k, v) in env {
        options = options.env(k, v);
    }
    let server = TestServer::start(&workdir, &options);
    (workdir, server)
}

fn create_stream(addr: SocketAddr, token: &str, name: &str) -> RawResponse {
    let body = format!(r#"{{"name":"{name}"}}"#);
    request(addr, "POST", "/streams", Some(token), Some(body.as_bytes()))
}

fn stream_names(addr: SocketAddr, token: &str) -> Vec<String> {
    let response = request(addr, "GET", "/streams", Some(token), None);
    assert_eq!(response.status, 200, "{}", response.text());
    response.sorted_names()
}

/// Creates `WRITERS` streams at once with one credential; every write must
/// succeed.
fn create_streams_concurrently(addr: SocketAddr, token: &str) {
    let start = Arc::new(Barrier::new(WRITERS));
    let writers: Vec<_> = (0..WRITERS)
        .map(|i| {
            let (start, token) = (start.clone(), token.to_owned());
            std::thread::spawn(move || {
                start.wait();
                create_stream(addr, &token, &format!("s{i:02}"))
            })
        })
        .collect();
    for writer in writers {
        let response = writer.join().unwrap();
        assert_eq!(response.status, 200, "{}", response.text());
    }
}

/// A binary-protocol login as `client`; the connection keeps the session.
fn binary_login(addr: SocketAddr, client: u128) -> TcpStream {
    let mut stream = raw::connect(addr);
    let body = raw::login_body(harness::ROOT_USERNAME, harness::ROOT_PASSWORD);
    let mut frame = RequestHeader::for_command(CommandCode::LoginRegister, client, 0, 0, &body)
        .encode()
        .to_vec();
    frame.extend_from_slice(&body);
    stream.write_all(&frame).unwrap();
    let (header, _) = raw::read_frame(&mut stream).unwrap();
    assert_eq!(ReplyHeader::decode(&header).unwrap().status, 0);
    stream
}

#[test]
fn given_one_jwt_when_writing_concurrently_should_apply_every_write_under_one_session() {
    let (_workdir, server) = start_with(&[]);
    let addr = server.address("http").unwrap();
    let token = root_token(addr);
    create_streams_concurrently(addr, &token);
    let expected: Vec<String> = (0..WRITERS).map(|i| format!("s{i:02}")).collect();
    assert_eq!(stream_names(addr, &token), expected);
    assert_eq!(http_client_ids(addr, &token).len(), 1);
}

#[test]
fn given_one_personal_access_token_when_writing_concurrently_should_apply_every_write() {
    let (_workdir, server) = start_with(&[]);
    let addr = server.address("http").unwrap();
    let jwt = root_token(addr);
    let created = request(
        addr,
        "POST",
        "/personal-access-tokens",
        Some(&jwt),
        Some(br#"{"name":"writers","expiry":0}"#),
    );
    assert_eq!(created.status, 200, "{}", created.text());
    let pat = created.json()["token"].as_str().unwrap().to_owned();
    create_streams_concurrently(addr, &pat);
    assert_eq!(stream_names(addr, &pat).len(), WRITERS);
    // One session for the JWT's write, one for the token's writes.
    assert_eq!(http_client_ids(addr, &pat).len(), 2);
}

#[test]
fn given_a_refused_http_write_when_writing_again_should_succeed() {
    let (_workdir, server) = start_with(&[]);
    let addr = server.address("http").unwrap();
    let token = root_token(addr);
    assert_eq!(create_stream(addr, &token, "a").status, 200);
    let refused = create_stream(addr, &token, "a");
    assert_eq!(refused.status, 400, "{}", refused.text());
    let created = create_stream(addr, &token, "b");
    assert_eq!(created.status, 200, "{}", created.text());
    assert_eq!(stream_names(addr, &token), ["a", "b"]);
}

#[test]
fn given_an_http_session_evicted_from_the_client_table_when_writing_should_renew_it() {
    // The smallest table (two clients) on one shard, which serves HTTP and
    // every binary connection, so the logins below share its table.
    let (_workdir, server) = start_with(&[
        ("IGGY_METADATA_CLIENTS_TABLE_MAX", "2"),
        ("IGGY_SYSTEM_SHARDING_CPU_ALLOCATION", "1"),
    ]);
    let addr = server.address("http").unwrap();
    let token = root_token(addr);
    assert_eq!(create_stream(addr, &token, "a").status, 200);
    let first = http_client_ids(addr, &token);
    assert_eq!(first.len(), 1);

    // Two binary logins fill the table; the second evicts the entry with
    // the oldest commit, the HTTP session's.
    let _one = binary_login(server.tcp(), 0x0101);
    let _two = binary_login(server.tcp(), 0x0202);

    let created = create_stream(addr, &token, "b");
    assert_eq!(created.status, 200, "{}", created.text());
    let renewed = http_client_ids(addr, &token);
    assert_eq!(renewed.len(), 1, "the stale session ended: {renewed:?}");
    assert_ne!(renewed, first, "a new session was opened");

    // The new session serves the credential's later writes.
    assert_eq!(create_stream(addr, &token, "c").status, 200);
    assert_eq!(http_client_ids(addr, &token), renewed);
    assert_eq!(stream_names(addr, &token), ["a", "b", "c"]);
}

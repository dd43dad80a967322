//! Connection limits from configuration: `tcp.max_connections`,
//! `tcp.idle_timeout` and `tcp.max_failed_logins`.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod harness;

use std::io::Read;
use std::net::TcpStream;
use std::time::{Duration, Instant};

use harness::raw::{connect, login_body, read_frame, send, try_send};
use harness::{ServerOptions, TestServer, Workdir, run_to_exit};
use protocol::CommandCode;

fn ping(stream: &mut TcpStream) -> bool {
    send(stream, CommandCode::Ping, 0, 0, b"");
    read_frame(stream).is_some()
}

fn closed(stream: &mut TcpStream) -> bool {
    let mut byte = [0u8; 1];
    matches!(stream.read(&mut byte), Ok(0) | Err(_))
}

#[test]
fn given_connection_limit_when_exceeded_should_refuse_only_the_extra_connection() {
    let workdir = Workdir::new();
    let server = TestServer::start(
        &workdir,
        &ServerOptions::default().env("IGGY_TCP_MAX_CONNECTIONS", "2"),
    );
    let mut first = connect(server.tcp());
    let mut second = connect(server.tcp());
    assert!(ping(&mut first) && ping(&mut second));
    let mut third = connect(server.tcp());
    assert!(
        closed(&mut third),
        "the third connection is closed at accept"
    );
    assert!(ping(&mut first), "the others keep working");
    drop(second);
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let mut again = connect(server.tcp());
        let _ = again.set_read_timeout(Some(Duration::from_millis(500)));
        let accepted = try_send(&mut again, CommandCode::Ping, 0, 0, b"").is_ok()
            && read_frame(&mut again).is_some();
        if accepted {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "room never came back after a connection closed"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

#[test]
fn given_idle_timeout_when_a_connection_is_silent_should_close_it_and_keep_the_active_one() {
    let workdir = Workdir::new();
    let server = TestServer::start(
        &workdir,
        &ServerOptions::default().env("IGGY_TCP_IDLE_TIMEOUT", "10 s"),
    );
    let mut silent = connect(server.tcp());
    let mut active = connect(server.tcp());
    assert!(ping(&mut silent) && ping(&mut active));
    silent
        .set_read_timeout(Some(Duration::from_secs(30)))
        .unwrap();
    let started = Instant::now();
    while started.elapsed() < Duration::from_secs(13) {
        assert!(ping(&mut active), "an active connection stays open");
        std::thread::sleep(Duration::from_secs(2));
    }
    assert!(closed(&mut silent), "the silent connection was closed");
}

#[test]
fn given_too_short_idle_timeout_when_booting_should_refuse_naming_the_key() {
    let workdir = Workdir::new();
    let (status, output) = run_to_exit(
        &workdir,
        &ServerOptions::default().env("IGGY_TCP_IDLE_TIMEOUT", "5 s"),
    );
    assert!(!status.success());
    assert!(output.contains("tcp.idle_timeout"), "{output}");
}

#[test]
fn given_failed_login_limit_when_reached_should_close_the_connection() {
    let workdir = Workdir::new();
    let server = TestServer::start(
        &workdir,
        &ServerOptions::default().env("IGGY_TCP_MAX_FAILED_LOGINS", "2"),
    );
    let mut guesser = connect(server.tcp());
    let mut answered = 0;
    for _ in 0..5 {
        let body = login_body("iggy", "wrong-guess");
        let sent = try_send(&mut guesser, CommandCode::LoginRegister, 0, 0, &body);
        if sent.is_err() || read_frame(&mut guesser).is_none() {
            break;
        }
        answered += 1;
    }
    assert_eq!(answered, 2, "two failures are answered, then it closes");
    assert!(closed(&mut guesser));
    let mut other = connect(server.tcp());
    assert!(ping(&mut other), "a new connection is served");
}

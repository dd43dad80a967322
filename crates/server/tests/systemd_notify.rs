//! The service-manager protocol end to end: a Unix datagram socket stands
//! in for systemd's `NOTIFY_SOCKET`, and the real binary runs against it.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod harness;

use std::net::TcpStream;
use std::os::unix::net::UnixDatagram;
use std::path::Path;
use std::time::{Duration, Instant};

use harness::{ServerOptions, TestServer, Workdir};

/// `WATCHDOG_USEC` for the test: the server pings every half of it.
const WATCHDOG_USEC: u64 = 400_000;
const PING_INTERVAL: Duration = Duration::from_millis(200);
const WATCH_FOR: Duration = Duration::from_millis(1_300);

fn manager_socket(workdir: &Workdir) -> (UnixDatagram, String) {
    let path = workdir.path().join("notify.sock");
    let socket = UnixDatagram::bind(&path).unwrap();
    socket
        .set_read_timeout(Some(Duration::from_secs(30)))
        .unwrap();
    (socket, path.to_string_lossy().into_owned())
}

fn receive(socket: &UnixDatagram) -> String {
    let mut buffer = [0u8; 2048];
    let n = socket.recv(&mut buffer).expect("a notification in time");
    String::from_utf8(buffer[..n].to_vec()).unwrap()
}

/// At the moment READY=1 arrives, the dump must already name every bound
/// listener and each stream listener must take a connection at once.
fn assert_listeners_accept(data: &Path) {
    let dump = std::fs::read_to_string(data.join("runtime").join("current_config.toml"))
        .expect("the runtime dump exists when READY=1 arrives");
    let dump: toml::Value = dump.parse().expect("a complete dump");
    for transport in ["tcp", "http", "websocket"] {
        let address = dump[transport]["address"].as_str().unwrap();
        TcpStream::connect_timeout(&address.parse().unwrap(), Duration::from_secs(2))
            .unwrap_or_else(|e| panic!("{transport} at {address} refused after READY=1: {e}"));
    }
    let quic = dump["quic"]["address"].as_str().unwrap();
    assert!(!quic.ends_with(":0"), "QUIC is bound when READY=1 arrives");
}

#[test]
fn given_notify_socket_when_server_runs_should_send_ready_after_binding_then_watchdog_then_stopping()
 {
    let workdir = Workdir::new();
    let (socket, path) = manager_socket(&workdir);
    let options = ServerOptions::default()
        .env("NOTIFY_SOCKET", &path)
        .env("WATCHDOG_USEC", &WATCHDOG_USEC.to_string());
    let server = std::thread::scope(|scope| {
        let starting = scope.spawn(|| TestServer::start(&workdir, &options));
        let first = receive(&socket);
        assert!(
            first.starts_with("READY=1\nSTATUS=serving tcp "),
            "the first notification is READY=1, got {first:?}"
        );
        assert_listeners_accept(&workdir.data());
        starting.join().unwrap()
    });

    let watching = Instant::now();
    let mut pings = Vec::new();
    while watching.elapsed() < WATCH_FOR {
        let message = receive(&socket);
        assert_eq!(message, "WATCHDOG=1\n", "only pings while serving");
        pings.push(Instant::now());
    }
    // Six intervals fit in the window; a loaded machine may withhold or
    // delay one, but never pings faster than asked.
    let expected = (WATCH_FOR.as_millis() / PING_INTERVAL.as_millis()) as usize;
    assert!(
        (2..=expected + 1).contains(&pings.len()),
        "{} pings in {WATCH_FOR:?} at one per {PING_INTERVAL:?}",
        pings.len()
    );

    let (status, _) = server.stop();
    assert!(status.success(), "clean exit on SIGTERM: {status}");
    let mut after_ping = receive(&socket);
    while after_ping == "WATCHDOG=1\n" {
        after_ping = receive(&socket);
    }
    assert_eq!(after_ping, "STOPPING=1\nSTATUS=stopping\n");
    socket.set_nonblocking(true).unwrap();
    let mut buffer = [0u8; 256];
    if let Ok(n) = socket.recv(&mut buffer) {
        let rest = String::from_utf8_lossy(&buffer[..n]);
        assert!(
            !rest.contains("WATCHDOG"),
            "no ping after STOPPING=1: {rest:?}"
        );
    }
}

#[test]
fn given_malformed_notify_socket_when_booting_should_refuse_with_the_variable_named() {
    let workdir = Workdir::new();
    let options = ServerOptions::default().env("NOTIFY_SOCKET", "relative/notify.sock");
    let (status, output) = harness::run_to_exit(&workdir, &options);
    assert!(!status.success());
    assert!(output.contains("NOTIFY_SOCKET"), "{output}");
}

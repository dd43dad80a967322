//! Every plaintext transport (TCP, QUIC, WebSocket, HTTP) runs the shared
//! scenario against one server; the runtime dump and cluster metadata agree
//! on every bound port; bad input on one transport never disturbs the
//! others.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod harness;

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream, UdpSocket};
use std::time::Duration;

use harness::raw::{WS_UPGRADE, ws_frame};
use harness::scenario::{self, Carrier};
use harness::sdk::root_client;
use harness::{ServerOptions, TestServer, Workdir};
use iggy::prelude::*;

struct Served {
    _workdir: Workdir,
    server: TestServer,
}

impl Served {
    fn start() -> Self {
        Self::start_with(ServerOptions::default())
    }

    fn start_with(options: ServerOptions) -> Self {
        let workdir = Workdir::new();
        let server = TestServer::start(&workdir, &options);
        Self {
            _workdir: workdir,
            server,
        }
    }

    fn addr(&self, transport: &str) -> SocketAddr {
        self.server
            .address(transport)
            .unwrap_or_else(|| panic!("{transport} is served"))
    }

    fn carriers(&self) -> Vec<(&'static str, Carrier)> {
        vec![
            ("tcp", Carrier::Tcp(self.addr("tcp"))),
            ("quic", Carrier::Quic(self.addr("quic"))),
            ("websocket", Carrier::WebSocket(self.addr("websocket"))),
            (
                "http",
                Carrier::Http(format!("http://{}", self.addr("http"))),
            ),
        ]
    }
}

#[tokio::test]
async fn the_scenario_passes_on_every_plaintext_transport() {
    let served = Served::start();
    for (label, carrier) in served.carriers() {
        let client = scenario::connect(&carrier).await;
        scenario::run(&client, &format!("scenario-{label}")).await;
    }
}

#[tokio::test]
async fn the_runtime_dump_and_cluster_metadata_agree_on_every_port() {
    let served = Served::start();
    let ports: Vec<u16> = ["tcp", "quic", "http", "websocket"]
        .iter()
        .map(|t| served.addr(t).port())
        .collect();
    assert!(ports.iter().all(|p| *p != 0));
    for (label, carrier) in served.carriers() {
        let client = scenario::connect(&carrier).await;
        let metadata = client.get_cluster_metadata().await.unwrap();
        assert_eq!(metadata.nodes.len(), 1, "{label}");
        let e = &metadata.nodes[0].endpoints;
        assert_eq!(
            vec![e.tcp, e.quic, e.http, e.websocket],
            ports,
            "cluster metadata over {label}"
        );
    }
}

/// A minimal WebSocket client: the upgrade, then masked frames.
struct RawWs(TcpStream);

impl RawWs {
    fn connect(addr: SocketAddr) -> Self {
        let mut stream = TcpStream::connect(addr).unwrap();
        stream
            .set_read_timeout(Some(Duration::from_secs(10)))
            .unwrap();
        stream.write_all(WS_UPGRADE.as_bytes()).unwrap();
        let mut head = Vec::new();
        let mut byte = [0u8; 1];
        while !head.ends_with(b"\r\n\r\n") {
            stream.read_exact(&mut byte).unwrap();
            head.push(byte[0]);
        }
        assert!(
            head.starts_with(b"HTTP/1.1 101"),
            "{}",
            String::from_utf8_lossy(&head)
        );
        Self(stream)
    }

    fn send(&mut self, opcode: u8, payload: &[u8]) {
        self.0.write_all(&ws_frame(true, opcode, payload)).unwrap();
    }

    /// The next frame's opcode and payload (server frames are unmasked).
    fn receive(&mut self) -> (u8, Vec<u8>) {
        let mut head = [0u8; 2];
        self.0.read_exact(&mut head).unwrap();
        let len = match head[1] & 0x7F {
            126 => {
                let mut b = [0u8; 2];
                self.0.read_exact(&mut b).unwrap();
                u16::from_be_bytes(b) as usize
            }
            127 => {
                let mut b = [0u8; 8];
                self.0.read_exact(&mut b).unwrap();
                u64::from_be_bytes(b) as usize
            }
            n => n as usize,
        };
        let mut payload = vec![0u8; len];
        self.0.read_exact(&mut payload).unwrap();
        (head[0] & 0x0F, payload)
    }
}

const CONTINUATION: u8 = 0;
const TEXT: u8 = 1;
const BINARY: u8 = 2;
const CLOSE: u8 = 8;
const PING: u8 = 9;
const PONG: u8 = 10;

/// A PING request frame.
fn ping_frame() -> Vec<u8> {
    harness::raw::ping_frame()
}

#[tokio::test]
async fn bad_input_on_any_transport_is_closed_without_disturbing_others() {
    let served = Served::start();
    let tcp = root_client(served.addr("tcp")).await;
    tcp.create_stream("kept").await.unwrap();

    // WebSocket: a well-formed frame is answered; a text message and a
    // message whose length is not its frame's size are closed with reasons.
    let mut ws = RawWs::connect(served.addr("websocket"));
    ws.send(BINARY, &ping_frame());
    let (opcode, reply) = ws.receive();
    assert_eq!(opcode, BINARY);
    assert_eq!(reply.len(), 256);
    ws.send(TEXT, b"hello");
    let (opcode, payload) = ws.receive();
    assert_eq!(opcode, CLOSE);
    assert_eq!(u16::from_be_bytes([payload[0], payload[1]]), 1003);
    let mut ws = RawWs::connect(served.addr("websocket"));
    let mut truncated = ping_frame();
    truncated.truncate(200);
    ws.send(BINARY, &truncated);
    let (opcode, payload) = ws.receive();
    assert_eq!(opcode, CLOSE);
    assert_eq!(u16::from_be_bytes([payload[0], payload[1]]), 1008);
    let mut ws = RawWs::connect(served.addr("websocket"));
    let mut oversized = ping_frame();
    oversized[48..52].copy_from_slice(&(1u32 << 30).to_le_bytes());
    ws.send(BINARY, &oversized);
    assert_eq!(ws.receive().0, CLOSE);

    // QUIC: garbage datagrams are dropped.
    let udp = UdpSocket::bind("127.0.0.1:0").unwrap();
    for size in [1usize, 100, 1200, 1500] {
        udp.send_to(&vec![0xAB; size], served.addr("quic")).unwrap();
    }

    // HTTP: garbage instead of a request line.
    let mut http = TcpStream::connect(served.addr("http")).unwrap();
    http.set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    http.write_all(b"\x00\x01garbage\r\n\r\n").unwrap();
    let mut answer = Vec::new();
    let _ = http.read_to_end(&mut answer);
    assert!(answer.is_empty() || answer.starts_with(b"HTTP/1.1 400"));

    // Everyone else keeps being served, on every transport.
    for (label, carrier) in served.carriers() {
        let client = scenario::connect(&carrier).await;
        let streams = client.get_streams().await.unwrap();
        assert_eq!(streams.len(), 1, "{label}");
    }
    assert_eq!(tcp.get_streams().await.unwrap()[0].name, "kept");
}

#[test]
fn a_self_signed_tls_certificate_is_generated_when_no_file_exists() {
    let workdir = Workdir::new();
    let options = ServerOptions {
        config_file: Some(
            "[tcp.tls]\nenabled = true\nself_signed = true\n\
             cert_file = \"does/not/exist.pem\"\nkey_file = \"does/not/exist.key\"\n"
                .to_owned(),
        ),
        ..ServerOptions::default()
    };
    let server = TestServer::start(&workdir, &options);
    let addr = server.address("tcp").unwrap();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let client = IggyClient::builder()
            .with_tcp()
            .with_server_address(format!("localhost:{}", addr.port()))
            .with_tls_enabled(true)
            .with_tls_domain("localhost".to_owned())
            .with_tls_validate_certificate(false)
            .build()
            .unwrap();
        client.connect().await.unwrap();
        client
            .login_user(harness::ROOT_USERNAME, harness::ROOT_PASSWORD)
            .await
            .unwrap();
        client.ping().await.unwrap();
    });
}

#[test]
fn a_websocket_message_dripping_past_the_frame_timeout_is_closed_but_silence_is_not() {
    let served = Served::start_with(ServerOptions::default().env("IGGY_TCP_FRAME_TIMEOUT", "1 s"));
    let mut silent = RawWs::connect(served.addr("websocket"));
    let mut dripping = RawWs::connect(served.addr("websocket"));
    // A binary frame of 256 payload bytes, masked: its header, then one
    // byte every 200 ms, far slower than the 1 s allowed for the message.
    dripping
        .0
        .write_all(&[0x82, 0x80 | 126, 1, 0, 1, 2, 3, 4])
        .unwrap();
    let started = std::time::Instant::now();
    let mut closed = false;
    while started.elapsed() < Duration::from_secs(8) {
        if dripping.0.write_all(&[0u8]).is_err() {
            closed = true;
            break;
        }
        std::thread::sleep(Duration::from_millis(200));
        dripping.0.set_nonblocking(true).unwrap();
        let mut probe = [0u8; 1];
        let eof = matches!(dripping.0.read(&mut probe), Ok(0));
        dripping.0.set_nonblocking(false).unwrap();
        if eof {
            closed = true;
            break;
        }
    }
    assert!(closed, "the dripping connection was not closed");
    assert!(
        started.elapsed() >= Duration::from_millis(900),
        "closed too early"
    );
    // The silent connection outlived the timeout and still works.
    silent.send(BINARY, &ping_frame());
    let (opcode, reply) = silent.receive();
    assert_eq!((opcode, reply.len()), (BINARY, 256));
}

#[test]
fn websocket_pings_fragments_pipelined_messages_and_closes_are_served() {
    let served = Served::start();
    let mut ws = RawWs::connect(served.addr("websocket"));
    ws.send(PING, b"are you there");
    assert_eq!(ws.receive(), (PONG, b"are you there".to_vec()));

    // A request in three fragments with a ping among them, then two whole
    // requests, all in one write: each is answered, in order.
    let request = ping_frame();
    let mut bytes = ws_frame(false, BINARY, &request[..100]);
    bytes.extend(ws_frame(true, PING, b"mid"));
    bytes.extend(ws_frame(false, CONTINUATION, &request[100..200]));
    bytes.extend(ws_frame(true, CONTINUATION, &request[200..]));
    bytes.extend(ws_frame(true, BINARY, &request));
    bytes.extend(ws_frame(true, BINARY, &request));
    ws.0.write_all(&bytes).unwrap();
    assert_eq!(ws.receive(), (PONG, b"mid".to_vec()));
    for reply in 0..3 {
        let (opcode, payload) = ws.receive();
        assert_eq!((opcode, payload.len()), (BINARY, 256), "reply {reply}");
    }

    // A request of one-byte fragments.
    let mut bytes = ws_frame(false, BINARY, &request[..1]);
    for (i, byte) in request.iter().enumerate().skip(1) {
        let last = i == request.len() - 1;
        bytes.extend(ws_frame(last, CONTINUATION, &[*byte]));
    }
    ws.0.write_all(&bytes).unwrap();
    let (opcode, payload) = ws.receive();
    assert_eq!((opcode, payload.len()), (BINARY, 256));

    // A close is answered with a close carrying its code, then the end.
    ws.send(CLOSE, &1000u16.to_be_bytes());
    let (opcode, payload) = ws.receive();
    assert_eq!((opcode, &payload[..]), (CLOSE, &1000u16.to_be_bytes()[..]));
    let mut rest = Vec::new();
    ws.0.read_to_end(&mut rest).unwrap();
    assert!(rest.is_empty());

    // Broken frames close with 1002: unmasked, an unknown opcode, a
    // continuation with no message to continue.
    for broken in [
        vec![0x82, 0x01, 0x00],
        ws_frame(true, 0x3, b"x"),
        ws_frame(true, CONTINUATION, b"x"),
    ] {
        let mut ws = RawWs::connect(served.addr("websocket"));
        ws.0.write_all(&broken).unwrap();
        let (opcode, payload) = ws.receive();
        assert_eq!(opcode, CLOSE, "{broken:?}");
        assert_eq!(u16::from_be_bytes([payload[0], payload[1]]), 1002);
    }

    // A plain HTTP request on the WebSocket port is refused with 400.
    let mut http = TcpStream::connect(served.addr("websocket")).unwrap();
    http.set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    http.write_all(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
        .unwrap();
    let mut answer = Vec::new();
    let _ = http.read_to_end(&mut answer);
    assert!(answer.starts_with(b"HTTP/1.1 400"), "{answer:?}");
}

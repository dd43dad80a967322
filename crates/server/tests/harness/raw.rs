//! Raw protocol helpers: frames written and read by hand, for tests that
//! need what the SDK never sends.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::Duration;

use protocol::CommandCode;
use protocol::header::{HEADER_SIZE, ReplyHeader, RequestHeader};

pub const CLIENT: u128 = 0x1234_5678_9abc_def0_1122_3344_5566_7788;

pub fn connect(addr: SocketAddr) -> TcpStream {
    let stream = TcpStream::connect(addr).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    stream
}

pub fn send(stream: &mut TcpStream, code: CommandCode, session: u64, request: u64, body: &[u8]) {
    try_send(stream, code, session, request, body).unwrap();
}

/// Writes one request frame; fails when the server has closed the socket.
pub fn try_send(
    stream: &mut TcpStream,
    code: CommandCode,
    session: u64,
    request: u64,
    body: &[u8],
) -> std::io::Result<()> {
    let mut frame = RequestHeader::for_command(code, CLIENT, session, request, body)
        .encode()
        .to_vec();
    frame.extend_from_slice(body);
    stream.write_all(&frame)
}

/// A whole PING request frame (answered without a login).
pub fn ping_frame() -> Vec<u8> {
    RequestHeader::for_command(CommandCode::Ping, CLIENT, 0, 0, &[])
        .encode()
        .to_vec()
}

/// Reads one reply frame: its header bytes and body.
pub fn read_frame(stream: &mut TcpStream) -> Option<(Vec<u8>, Vec<u8>)> {
    let mut header = vec![0u8; HEADER_SIZE];
    stream.read_exact(&mut header).ok()?;
    let size = u32::from_le_bytes(header[48..52].try_into().unwrap()) as usize;
    let mut body = vec![0u8; size - HEADER_SIZE];
    stream.read_exact(&mut body).ok()?;
    Some((header, body))
}

pub fn login_body(username: &str, password: &str) -> Vec<u8> {
    let mut body = 0x2C00u32.to_le_bytes().to_vec();
    for text in ["raw-test", "0.1.0", username, password] {
        body.push(text.len() as u8);
        body.extend_from_slice(text.as_bytes());
    }
    body.extend_from_slice(&0u32.to_le_bytes());
    body
}

/// Logs in and returns the session number.
pub fn login(stream: &mut TcpStream) -> u64 {
    send(
        stream,
        CommandCode::LoginRegister,
        0,
        0,
        &login_body("iggy", "iggy"),
    );
    let (header, body) = read_frame(stream).unwrap();
    assert_eq!(ReplyHeader::decode(&header).unwrap().status, 0);
    u64::from_le_bytes(body[8..16].try_into().unwrap())
}

/// A WebSocket upgrade request (the RFC 6455 example key).
pub const WS_UPGRADE: &str = "GET / HTTP/1.1\r\nHost: localhost\r\nUpgrade: websocket\r\n\
    Connection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\
    Sec-WebSocket-Version: 13\r\n\r\n";

/// A masked WebSocket client frame.
pub fn ws_frame(fin: bool, opcode: u8, payload: &[u8]) -> Vec<u8> {
    let mut frame = vec![if fin { 0x80 } else { 0 } | opcode];
    match payload.len() {
        n if n < 126 => frame.push(0x80 | n as u8),
        n if n <= 0xFFFF => {
            frame.push(0x80 | 126);
            frame.extend_from_slice(&(n as u16).to_be_bytes());
        }
        n => {
            frame.push(0x80 | 127);
            frame.extend_from_slice(&(n as u64).to_be_bytes());
        }
    }
    let mask = [1u8, 2, 3, 4];
    frame.extend_from_slice(&mask);
    frame.extend(payload.iter().enumerate().map(|(i, b)| b ^ mask[i % 4]));
    frame
}

//! Hostile and malformed frames over raw TCP: each gets the protocol's
//! answer (a status, an eviction, or a closed connection), and a
//! well-behaved client on another connection keeps being served.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod harness;

use std::io::{Read, Write};
use std::net::TcpStream;

use harness::raw::{CLIENT, connect, login, login_body, read_frame, send, try_send};
use harness::sdk::root_client;
use harness::{ServerOptions, TestServer, Workdir};
use iggy::prelude::{StreamClient, SystemClient};
use protocol::CommandCode;
use protocol::header::{EvictionHeader, EvictionReason, HEADER_SIZE, ReplyHeader, RequestHeader};

fn is_closed(stream: &mut TcpStream) -> bool {
    let mut byte = [0u8; 1];
    matches!(stream.read(&mut byte), Ok(0) | Err(_))
}

#[tokio::test]
async fn given_malformed_frames_when_sent_should_answer_or_close_and_keep_serving_others() {
    let workdir = Workdir::new();
    let server = TestServer::start(&workdir, &ServerOptions::default());
    let addr = server.tcp();
    let good = root_client(addr).await;

    // A declared size below the header: the stream cannot be resynchronised.
    let mut tiny = connect(addr);
    let mut header = RequestHeader::for_command(CommandCode::Ping, CLIENT, 0, 0, b"").encode();
    header[48..52].copy_from_slice(&10u32.to_le_bytes());
    tiny.write_all(&header).unwrap();
    assert!(
        is_closed(&mut tiny),
        "a frame smaller than its header closes the connection"
    );

    // A declared size beyond the frame cap.
    let mut huge = connect(addr);
    header[48..52].copy_from_slice(&u32::MAX.to_le_bytes());
    huge.write_all(&header).unwrap();
    assert!(
        is_closed(&mut huge),
        "an oversized frame closes the connection"
    );

    // Garbage bytes.
    let mut garbage = connect(addr);
    garbage.write_all(&[0xAB; 512]).unwrap();
    assert!(is_closed(&mut garbage), "garbage closes the connection");

    // Before login: only ping; a read is denied with 40.
    let mut raw = connect(addr);
    send(&mut raw, CommandCode::GetStreams, 0, 0, b"");
    let (h, _) = read_frame(&mut raw).unwrap();
    assert_eq!(ReplyHeader::decode(&h).unwrap().status, 40);

    // A wrong password is an eviction with reason 9; the connection stays.
    send(
        &mut raw,
        CommandCode::LoginRegister,
        0,
        0,
        &login_body("iggy", "nope"),
    );
    let (h, _) = read_frame(&mut raw).unwrap();
    assert_eq!(
        EvictionHeader::decode(&h).unwrap().reason,
        EvictionReason::InvalidCredentials
    );

    // Logged in: a body whose checksum does not match is refused with 4, an
    // undecodable body with 3, an unknown command code with 3.
    let session = login(&mut raw);
    let body = [1u8, 1, b'x'];
    let mut frame =
        RequestHeader::for_command(CommandCode::CreateStream, CLIENT, session, 1, b"other")
            .encode()
            .to_vec();
    frame[48..52].copy_from_slice(&((HEADER_SIZE + body.len()) as u32).to_le_bytes());
    frame.extend_from_slice(&body);
    raw.write_all(&frame).unwrap();
    assert_eq!(
        ReplyHeader::decode(&read_frame(&mut raw).unwrap().0)
            .unwrap()
            .status,
        4
    );
    send(&mut raw, CommandCode::GetStream, session, 1, &[9, 9, 9]);
    assert_eq!(
        ReplyHeader::decode(&read_frame(&mut raw).unwrap().0)
            .unwrap()
            .status,
        3
    );
    let mut unknown =
        RequestHeader::for_command(CommandCode::Ping, CLIENT, session, 1, b"").encode();
    unknown[196..200].copy_from_slice(&9999u32.to_le_bytes());
    raw.write_all(&unknown).unwrap();
    assert_eq!(
        ReplyHeader::decode(&read_frame(&mut raw).unwrap().0)
            .unwrap()
            .status,
        3
    );

    // A password guesser is cut off after a few failures.
    let mut guesser = connect(addr);
    let mut answered = 0;
    for _ in 0..10 {
        let body = login_body("iggy", "guess");
        let sent = try_send(&mut guesser, CommandCode::LoginRegister, 0, 0, &body);
        if sent.is_err() || read_frame(&mut guesser).is_none() {
            break;
        }
        answered += 1;
    }
    assert_eq!(
        answered, 5,
        "five failed logins are answered, then the connection closes"
    );
    assert!(is_closed(&mut guesser));

    // The well-behaved client never noticed.
    good.ping().await.unwrap();
    assert!(good.get_streams().await.unwrap().is_empty());
}

//! Hostile clients at scale: many connections send garbage, truncated
//! frames, oversized lengths, byte-by-byte drips and login floods (over TCP,
//! and over WebSocket before and after the upgrade) while a
//! well-behaved SDK client produces and reads back numbered messages. The
//! good client must lose nothing, every bad connection must end, and the
//! server must keep accepting.
//!
//! `IGGY_HOSTILE_CONNECTIONS` sets the number of hostile connections
//! (default 1,000 in the regular suite; the soak runs use 5,000). Login
//! floods are limited to `LOGIN_FLOODS` connections: each costs five Argon2
//! verifications, which is the point of the limit but slow in a debug build.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod harness;

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use harness::raw::{CLIENT, WS_UPGRADE, login_body, ping_frame, ws_frame};
use harness::sdk::{id, name, root_client};
use harness::{ServerOptions, TestServer, Workdir};
use iggy::prelude::*;
use protocol::CommandCode;
use protocol::header::RequestHeader;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

const WAIT: Duration = Duration::from_secs(60);
const LOGIN_FLOODS: usize = 10;

/// Raises this process's open-files soft limit to its hard limit and
/// returns it.
fn raise_fd_limit() -> u64 {
    let mut limit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    unsafe {
        if libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) == 0 {
            limit.rlim_cur = limit.rlim_max;
            libc::setrlimit(libc::RLIMIT_NOFILE, &limit);
        }
    }
    limit.rlim_cur
}

/// Whether the server closed the connection (EOF or reset) within `WAIT`,
/// after reading and discarding anything it sent first.
async fn closed_by_server(stream: &mut TcpStream) -> bool {
    let mut buf = [0u8; 4096];
    let deadline = tokio::time::Instant::now() + WAIT;
    loop {
        match tokio::time::timeout_at(deadline, stream.read(&mut buf)).await {
            Ok(Ok(0)) | Ok(Err(_)) => return true,
            Ok(Ok(_)) => continue,
            Err(_) => return false,
        }
    }
}

#[derive(Clone, Copy, Debug)]
enum Attack {
    Garbage,
    Truncated,
    Oversized,
    Drip,
    LoginFlood,
    /// Garbage instead of a WebSocket upgrade request.
    WsGarbageUpgrade,
    /// Garbage after a WebSocket upgrade.
    WsGarbageFrames,
    /// A WebSocket frame head announcing 2^62 bytes.
    WsOversized,
    /// A WebSocket message dripped a byte at a time.
    WsDrip,
}

/// Upgrades `stream` to WebSocket; false if the server refuses.
async fn ws_upgrade(stream: &mut TcpStream) -> bool {
    if stream.write_all(WS_UPGRADE.as_bytes()).await.is_err() {
        return false;
    }
    let mut head = Vec::new();
    let mut byte = [0u8; 1];
    while !head.ends_with(b"\r\n\r\n") {
        match tokio::time::timeout(WAIT, stream.read_exact(&mut byte)).await {
            Ok(Ok(_)) => head.push(byte[0]),
            _ => return false,
        }
    }
    head.starts_with(b"HTTP/1.1 101")
}

/// Runs one attack; true when the server reacted as it should.
async fn attack(tcp: SocketAddr, ws: SocketAddr, kind: Attack, seed: u64) -> bool {
    let websocket = matches!(
        kind,
        Attack::WsGarbageUpgrade | Attack::WsGarbageFrames | Attack::WsOversized | Attack::WsDrip
    );
    let Ok(mut stream) = TcpStream::connect(if websocket { ws } else { tcp }).await else {
        return false;
    };
    let garbage: Vec<u8> = (0..300u64)
        .map(|i| (seed.wrapping_mul(31).wrapping_add(i * 7) % 251) as u8)
        .collect();
    match kind {
        Attack::Garbage | Attack::WsGarbageUpgrade => {
            let _ = stream.write_all(&garbage).await;
            closed_by_server(&mut stream).await
        }
        Attack::WsGarbageFrames => {
            ws_upgrade(&mut stream).await && {
                let _ = stream.write_all(&garbage).await;
                closed_by_server(&mut stream).await
            }
        }
        Attack::WsOversized => {
            ws_upgrade(&mut stream).await && {
                let mut head = vec![0x82, 0x80 | 127];
                head.extend_from_slice(&(1u64 << 62).to_be_bytes());
                head.extend_from_slice(&[1, 2, 3, 4]);
                let _ = stream.write_all(&head).await;
                closed_by_server(&mut stream).await
            }
        }
        Attack::WsDrip => {
            ws_upgrade(&mut stream).await && {
                for byte in ws_frame(true, 0x2, &ping_frame()).into_iter().take(60) {
                    if stream.write_all(&[byte]).await.is_err() {
                        break;
                    }
                    tokio::time::sleep(Duration::from_millis(50)).await;
                }
                closed_by_server(&mut stream).await
            }
        }
        Attack::Truncated => {
            // Half a header, then silence: closed after tcp.frame_timeout.
            let _ = stream.write_all(&ping_frame()[..100]).await;
            closed_by_server(&mut stream).await
        }
        Attack::Oversized => {
            let mut frame = ping_frame();
            frame[48..52].copy_from_slice(&u32::MAX.to_le_bytes());
            let _ = stream.write_all(&frame).await;
            closed_by_server(&mut stream).await
        }
        Attack::Drip => {
            // One byte every 50 ms would take 12.8 s for a header: the
            // server closes it once tcp.frame_timeout (2 s) has passed.
            for byte in ping_frame().into_iter().take(60) {
                if stream.write_all(&[byte]).await.is_err() {
                    break;
                }
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
            closed_by_server(&mut stream).await
        }
        Attack::LoginFlood => {
            for _ in 0..20 {
                let body = login_body("iggy", "not-the-password");
                let mut frame =
                    RequestHeader::for_command(CommandCode::LoginRegister, CLIENT, 0, 0, &body)
                        .encode()
                        .to_vec();
                frame.extend_from_slice(&body);
                if stream.write_all(&frame).await.is_err() {
                    break;
                }
            }
            closed_by_server(&mut stream).await
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hostile_connections_never_disturb_a_well_behaved_client() {
    let open_files = raise_fd_limit();
    let requested: usize = std::env::var("IGGY_HOSTILE_CONNECTIONS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1000);
    // Both ends of every connection live on this machine: stay inside the
    // open-files limit (the server raises its own the same way).
    let connections = requested.min(open_files.saturating_sub(256) as usize);
    if connections < requested {
        eprintln!("open-files limit {open_files}: {connections} hostile connections");
    }
    let workdir = Workdir::new();
    let options = ServerOptions::default().env("IGGY_TCP_FRAME_TIMEOUT", "2 s");
    let server = TestServer::start(&workdir, &options);
    let addr = server.tcp();
    let ws = server.address("websocket").expect("WebSocket is served");

    let good = root_client(addr).await;
    good.create_stream("good").await.unwrap();
    good.create_topic(&name("good"), "t", &TopicCreateOptions::default())
        .await
        .unwrap();

    let reacted = Arc::new(AtomicUsize::new(0));
    let kinds = [
        Attack::Garbage,
        Attack::Truncated,
        Attack::Oversized,
        Attack::Drip,
        Attack::WsGarbageUpgrade,
        Attack::WsGarbageFrames,
        Attack::WsOversized,
        Attack::WsDrip,
    ];
    let mut attackers = Vec::with_capacity(connections);
    for i in 0..connections {
        let reacted = reacted.clone();
        let kind = if i < LOGIN_FLOODS {
            Attack::LoginFlood
        } else {
            kinds[i % kinds.len()]
        };
        attackers.push(tokio::spawn(async move {
            if attack(addr, ws, kind, i as u64).await {
                reacted.fetch_add(1, Ordering::Relaxed);
            } else {
                eprintln!("attack {i} ({kind:?}) was not answered as expected");
            }
        }));
    }

    // Meanwhile the good client produces 2,000 numbered messages.
    for batch in 0..200u32 {
        let mut messages: Vec<IggyMessage> = (0..10)
            .map(|i| {
                IggyMessage::builder()
                    .payload(format!("{}", batch * 10 + i).into_bytes().into())
                    .build()
                    .unwrap()
            })
            .collect();
        good.send_messages(
            &name("good"),
            &name("t"),
            &Partitioning::partition_id(0),
            &mut messages,
        )
        .await
        .unwrap();
    }
    for attacker in attackers {
        attacker.await.unwrap();
    }
    assert_eq!(
        reacted.load(Ordering::Relaxed),
        connections,
        "every hostile connection got its close or its answer"
    );

    let mut offset = 0u64;
    while offset < 2000 {
        let polled = good
            .poll_messages(
                &name("good"),
                &name("t"),
                Some(0),
                &Consumer::new(id(1)),
                &PollingStrategy::offset(offset),
                1000,
                false,
            )
            .await
            .unwrap();
        assert!(!polled.messages.is_empty());
        for m in &polled.messages {
            assert_eq!(m.header.offset, offset);
            assert_eq!(m.payload.as_ref(), offset.to_string().as_bytes());
            offset += 1;
        }
    }
    let fresh = root_client(addr).await;
    fresh.ping().await.unwrap();
}

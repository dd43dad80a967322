//! Writes the fuzz seed corpus from real SDK traffic: the shared scenario
//! runs through a recording proxy, and every request frame the SDK sent is
//! saved under `fuzz/seeds/` (whole frames, SendMessages batch records, and
//! login bodies), one file per distinct input.
//!
//! Run with `cargo test -p server --test fuzz_seeds -- --ignored`; the seeds
//! are committed, so the regular suite only checks that they still decode.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod harness;

use std::io::{Read, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use harness::scenario::{self, Carrier};
use harness::{ServerOptions, TestServer, Workdir};
use protocol::header::{HEADER_SIZE, RequestHeader, frame_size};
use protocol::requests::SendMessages;
use protocol::{CommandCode, Route, route};

fn seeds_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fuzz/seeds")
}

/// Forwards one client connection to `upstream`, keeping every frame the
/// client sent.
fn record_proxy(upstream: SocketAddr) -> (SocketAddr, Arc<Mutex<Vec<Vec<u8>>>>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let frames = Arc::new(Mutex::new(Vec::new()));
    let recorded = frames.clone();
    std::thread::spawn(move || {
        for client in listener.incoming() {
            let Ok(mut client) = client else { return };
            let mut server = TcpStream::connect(upstream).unwrap();
            let (mut client_back, mut server_back) =
                (client.try_clone().unwrap(), server.try_clone().unwrap());
            std::thread::spawn(move || {
                let _ = std::io::copy(&mut server_back, &mut client_back);
                let _ = client_back.shutdown(Shutdown::Both);
            });
            let recorded = recorded.clone();
            std::thread::spawn(move || {
                loop {
                    let mut frame = vec![0u8; HEADER_SIZE];
                    if client.read_exact(&mut frame).is_err() {
                        break;
                    }
                    let size = frame_size(&frame).map_or(0, |s| s as usize);
                    frame.resize(size.max(HEADER_SIZE), 0);
                    if client.read_exact(&mut frame[HEADER_SIZE..]).is_err() {
                        break;
                    }
                    recorded.lock().unwrap().push(frame.clone());
                    if server.write_all(&frame).is_err() {
                        break;
                    }
                }
                let _ = server.shutdown(Shutdown::Both);
            });
        }
    });
    (addr, frames)
}

fn save(target: &str, input: &[u8]) {
    let dir = seeds_dir().join(target);
    std::fs::create_dir_all(&dir).unwrap();
    let name = format!("{:016x}", protocol::checksum::xxh3_64(input));
    std::fs::write(dir.join(name), input).unwrap();
}

#[tokio::test]
#[ignore = "writes fuzz/seeds; run on purpose"]
async fn record_sdk_frames_as_fuzz_seeds() {
    let workdir = Workdir::new();
    let server = TestServer::start(&workdir, &ServerOptions::default());
    let (proxy, frames) = record_proxy(server.tcp());
    let client = scenario::connect(&Carrier::Tcp(proxy)).await;
    scenario::run(&client, "seeds").await;
    drop(client);
    let frames = frames.lock().unwrap().clone();
    assert!(
        frames.len() > 20,
        "the scenario sent {} frames",
        frames.len()
    );
    for frame in &frames {
        save("request_frame", frame);
        let header = RequestHeader::decode(frame).unwrap();
        let body = &frame[HEADER_SIZE..];
        match route(&header) {
            Route::Command(CommandCode::SendMessages) => {
                let request = SendMessages::decode(body).unwrap();
                save("batch_record", request.record(body));
            }
            Route::Register => save("login_body", body),
            _ => {}
        }
    }
}

/// The committed seeds still decode as what they are.
#[test]
fn committed_seeds_are_valid_inputs() {
    for target in ["request_frame", "batch_record", "login_body", "http_json"] {
        let dir = seeds_dir().join(target);
        let entries: Vec<_> = std::fs::read_dir(&dir)
            .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
            .map(|e| std::fs::read(e.unwrap().path()).unwrap())
            .collect();
        assert!(!entries.is_empty(), "{target} has seeds");
        for input in entries {
            match target {
                "request_frame" => {
                    RequestHeader::decode(&input).unwrap();
                }
                "batch_record" => {
                    protocol::batch::validate_record(&input, protocol::batch::Verify::Checksums)
                        .unwrap();
                }
                "login_body" => {
                    protocol::requests::LoginRequest::decode(&input).unwrap();
                }
                _ => {
                    let send = protocol::http_json::decode_send_body(&input, 1, || 1);
                    let permissions =
                        serde_json::from_slice::<protocol::http_json::PermissionsJson>(&input);
                    assert!(send.is_ok() || permissions.is_ok(), "a valid HTTP body");
                }
            }
        }
    }
}

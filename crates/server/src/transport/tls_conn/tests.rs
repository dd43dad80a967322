//! A TLS connection on loopback: a blocking rustls client on its own
//! thread, the server side on a compio runtime, taken apart and resumed
//! over a duplicate of its socket as a move between shards does.

use std::io::{Read, Write};
use std::sync::Arc;

use bytes::Bytes;
use compio::buf::BufResult;
use compio::io::{AsyncReadExt, AsyncWriteExt};
use compio::net::{TcpListener, TcpStream};
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName};

use super::TlsConn;
use crate::transport::tcp::duplicate;
use crate::transport::tls::{Identity, server_config};

/// A request larger than four records and a reply larger than what the
/// connection seals before it sends.
const REQUEST: usize = 70_000;
const REPLY: usize = 1_500_000;
/// Pipelined requests are small and written at once, so that one record
/// holds both: the first cannot be read without the second's decrypted
/// bytes waiting behind it.
const PIPELINED: usize = 100;

fn request_len(pipelined: bool) -> usize {
    if pipelined { PIPELINED } else { REQUEST }
}

fn pattern(len: usize, seed: u8) -> Vec<u8> {
    (0..len)
        .map(|i| (i as u8).wrapping_mul(31) ^ seed)
        .collect()
}

fn identity() -> (Identity, CertificateDer<'static>) {
    let generated = rcgen::generate_simple_self_signed(vec!["localhost".to_owned()]).unwrap();
    let cert = generated.cert.der().clone();
    let identity = Identity {
        chain: vec![cert.clone()],
        key: PrivateKeyDer::Pkcs8(generated.key_pair.serialize_der().into()),
    };
    (identity, cert)
}

/// Connects, sends `first` (and `second` at once when `pipelined`), reads
/// the reply, then sends `second` (unless already sent) and reads its echo.
fn client(
    port: u16,
    cert: CertificateDer<'static>,
    pipelined: bool,
) -> std::thread::JoinHandle<(Vec<u8>, Vec<u8>)> {
    std::thread::spawn(move || {
        let mut roots = rustls::RootCertStore::empty();
        roots.add(cert).unwrap();
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let config = rustls::ClientConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .unwrap()
            .with_root_certificates(roots)
            .with_no_client_auth();
        let name = ServerName::try_from("localhost").unwrap();
        let connection = rustls::ClientConnection::new(Arc::new(config), name).unwrap();
        let socket = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
        let mut tls = rustls::StreamOwned::new(connection, socket);
        let len = request_len(pipelined);
        if pipelined {
            let mut both = pattern(len, 1);
            both.extend(pattern(len, 2));
            tls.write_all(&both).unwrap();
        } else {
            tls.write_all(&pattern(len, 1)).unwrap();
        }
        tls.flush().unwrap();
        let mut reply = vec![0; REPLY];
        tls.read_exact(&mut reply).unwrap();
        if !pipelined {
            tls.write_all(&pattern(len, 2)).unwrap();
            tls.flush().unwrap();
        }
        let mut echo = vec![0; len];
        tls.read_exact(&mut echo).unwrap();
        (reply, echo)
    })
}

async fn read_request(conn: &mut TlsConn, len: usize) -> Vec<u8> {
    let BufResult(result, request) = conn.read_exact(Vec::with_capacity(len)).await;
    result.unwrap();
    request
}

/// Serves one client: reads its first request, checks `is_idle` (false
/// only with the second request already read and decrypted), moves the connection onto a duplicate socket when idle,
/// answers with a large reply, then echoes the second request.
fn serve(pipelined: bool) {
    let (identity, cert) = identity();
    let config = server_config(identity, &[]).unwrap();
    compio::runtime::Runtime::new()
        .unwrap()
        .block_on(async move {
            let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
            let port = listener.local_addr().unwrap().port();
            let client = client(port, cert, pipelined);
            let (stream, _) = listener.accept().await.unwrap();
            let mut conn = TlsConn::accept(stream, config).await.unwrap();
            let len = request_len(pipelined);
            assert_eq!(read_request(&mut conn, len).await, pattern(len, 1));
            assert_eq!(conn.is_idle(), !pipelined, "idle only with nothing unread");
            if conn.is_idle() {
                let (stream, session) = conn.into_parts();
                let copy = TcpStream::from_std(duplicate(&stream).unwrap()).unwrap();
                drop(stream);
                conn = TlsConn::resume(copy, session);
            }
            let reply = pattern(REPLY, 3);
            let parts = vec![
                Bytes::copy_from_slice(&reply[..1000]),
                Bytes::copy_from_slice(&reply[1000..]),
            ];
            let BufResult(result, _) = conn.write_vectored_all(parts).await;
            result.unwrap();
            let second = read_request(&mut conn, len).await;
            assert_eq!(second, pattern(len, 2));
            let BufResult(result, _) = conn.write_all(second).await;
            result.unwrap();
            let (got_reply, echo) = client.join().unwrap();
            assert!(got_reply == reply, "the reply arrives whole and in order");
            assert_eq!(echo, pattern(len, 2));
        });
}

#[test]
fn given_an_idle_connection_when_taken_apart_and_resumed_should_carry_on_the_session() {
    serve(false);
}

#[test]
fn given_a_pipelined_request_when_checking_should_not_be_idle() {
    serve(true);
}

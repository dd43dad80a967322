//! TLS on every transport that has it: TCP, WebSocket (wss) and HTTP
//! (https, HTTP/2 through ALPN) run the shared scenario with a certificate
//! the test generates; QUIC uses its own self-signed one; a plaintext
//! client on a TLS port is closed without disturbing TLS clients.
//!
//! One test only: it points `SSL_CERT_FILE` at the test certificate so the
//! SDK's HTTPS client trusts it, and the environment is process-wide.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod harness;

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::sync::Arc;
use std::time::Duration;

use harness::scenario::{self, Carrier};
use harness::{ServerOptions, TestServer, Workdir};
use iggy::prelude::*;

fn tls_config(cert: &str, key: &str) -> String {
    format!(
        r#"
[tcp.tls]
enabled = true
self_signed = false
cert_file = "{cert}"
key_file = "{key}"

[websocket.tls]
enabled = true
self_signed = false
cert_file = "{cert}"
key_file = "{key}"

[http.tls]
enabled = true
cert_file = "{cert}"
key_file = "{key}"
"#
    )
}

/// Negotiates TLS with ALPN h2 and http/1.1; returns the chosen protocol.
fn negotiated_alpn(addr: SocketAddr, cert_pem: &str) -> Option<Vec<u8>> {
    use rustls::pki_types::CertificateDer;
    use rustls::pki_types::pem::PemObject;
    let mut roots = rustls::RootCertStore::empty();
    for cert in CertificateDer::pem_slice_iter(cert_pem.as_bytes()) {
        roots.add(cert.unwrap()).unwrap();
    }
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut config = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_root_certificates(roots)
        .with_no_client_auth();
    config.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
    let name = "localhost".try_into().unwrap();
    let mut connection = rustls::ClientConnection::new(Arc::new(config), name).unwrap();
    let mut socket = TcpStream::connect(addr).unwrap();
    while connection.is_handshaking() {
        connection.complete_io(&mut socket).unwrap();
    }
    connection.alpn_protocol().map(<[u8]>::to_vec)
}

#[tokio::test]
async fn the_scenario_passes_over_tls_on_every_transport() {
    let workdir = Workdir::new();
    let (cert, key) = workdir.localhost_certificate();
    let cert_pem = std::fs::read_to_string(&cert).unwrap();
    let (cert, key) = (cert.as_str(), key.as_str());
    // SAFETY: the only test of this binary sets it before any client exists.
    unsafe { std::env::set_var("SSL_CERT_FILE", cert) };

    let options = ServerOptions {
        config_file: Some(tls_config(cert, key)),
        ..ServerOptions::default()
    };
    let server = TestServer::start(&workdir, &options);
    let addr = |t: &str| server.address(t).unwrap();

    let carriers = [
        ("tcp-tls", Carrier::TcpTls(addr("tcp"), cert.to_owned())),
        ("quic", Carrier::Quic(addr("quic"))),
        (
            "websocket-tls",
            Carrier::WebSocketTls(addr("websocket"), cert.to_owned()),
        ),
        (
            "https",
            Carrier::Http(format!("https://localhost:{}", addr("http").port())),
        ),
    ];
    for (label, carrier) in &carriers {
        let client = scenario::connect(carrier).await;
        scenario::run(&client, &format!("scenario-{label}")).await;
    }
    // TLS connections are handed to the shards round-robin before their
    // handshake: two accepted in a row are served by different shards (when
    // there are two or more), and both carry the scenario.
    for (label, carrier) in [&carriers[0], &carriers[2]] {
        let first = scenario::connect(carrier).await;
        let second = scenario::connect(carrier).await;
        scenario::run(&first, &format!("first-{label}")).await;
        scenario::run(&second, &format!("second-{label}")).await;
    }

    assert_eq!(
        negotiated_alpn(addr("http"), &cert_pem).as_deref(),
        Some(&b"h2"[..]),
        "HTTPS offers HTTP/2 through ALPN"
    );

    // A plaintext frame on the TLS port fails the handshake and is closed.
    let mut plain = TcpStream::connect(addr("tcp")).unwrap();
    plain
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    plain.write_all(&harness::raw::ping_frame()).unwrap();
    let mut answer = Vec::new();
    let _ = plain.read_to_end(&mut answer);
    assert!(
        answer.len() < 256,
        "no frame is answered in plaintext on a TLS port"
    );
    // TLS clients are undisturbed.
    let client = scenario::connect(&carriers[0].1).await;
    client.create_stream("after").await.unwrap();
    assert_eq!(client.get_streams().await.unwrap().len(), 1);
}

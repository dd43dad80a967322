//! HTTP forwarding over HTTPS (HTTP API spec §16.2, `docs/cluster.md`):
//! three real `iggy-server` processes serve `http.tls`, and a follower
//! forwards a control-plane write to the leader over TLS. Once with one
//! certificate all nodes share (trusted as the node's own chain), once with
//! a certificate per node signed by the CA in `cluster.tls.ca_file`.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod harness;

use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;

use harness::cluster::*;
use harness::http::{RawResponse, request_tls};
use rcgen::{BasicConstraints, CertificateParams, IsCa, KeyPair};
use rustls::pki_types::CertificateDer;
use rustls::pki_types::pem::PemObject;

const PSK: &str = "[cluster.auth]\nenabled = true\n\
                   shared_secret = \"a shared secret of at least thirty-two bytes\"\n\n";

#[test]
fn given_a_shared_https_certificate_when_a_follower_gets_a_write_should_forward_it_over_tls() {
    let certs = tempfile::tempdir().unwrap();
    let generated = rcgen::generate_simple_self_signed(vec!["127.0.0.1".to_owned()]).unwrap();
    let cert = write(certs.path(), "cert.pem", &generated.cert.pem());
    let key = write(certs.path(), "key.pem", &generated.key_pair.serialize_pem());
    let nodes = start_cluster(&format!("{PSK}{}", http_tls(&cert, &key)));
    forwards_over_https(&nodes, &client(&generated.cert.pem()));
}

#[test]
fn given_per_node_certificates_from_the_cluster_ca_when_a_follower_gets_a_write_should_forward_it_over_tls()
 {
    let certs = tempfile::tempdir().unwrap();
    let ca_key = KeyPair::generate().unwrap();
    let mut ca_params = CertificateParams::new(Vec::<String>::new()).unwrap();
    ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    let ca = ca_params.self_signed(&ca_key).unwrap();
    let ca_file = write(certs.path(), "ca.pem", &ca.pem());
    // Each node's own certificate (leaf only, no CA in the chain) serves
    // both the replica links and HTTPS; only the CA makes the peers'
    // certificates verifiable.
    let files: Vec<(String, String)> = (0..NODES)
        .map(|id| {
            let key = KeyPair::generate().unwrap();
            let leaf = CertificateParams::new(vec!["127.0.0.1".to_owned()])
                .unwrap()
                .signed_by(&key, &ca, &ca_key)
                .unwrap();
            (
                write(certs.path(), &format!("node-{id}.pem"), &leaf.pem()),
                write(
                    certs.path(),
                    &format!("node-{id}.key"),
                    &key.serialize_pem(),
                ),
            )
        })
        .collect();
    let ports = reserve_ports();
    let nodes = start_nodes(&ports, |id| {
        let (cert, key) = &files[usize::from(id)];
        let cluster_tls = format!(
            "[cluster.tls]\nenabled = true\nself_signed = false\n\
             cert_file = \"{cert}\"\nkey_file = \"{key}\"\nca_file = \"{ca_file}\"\n\n"
        );
        config(
            &ports,
            &format!("{PSK}{cluster_tls}{}", http_tls(cert, key)),
        )
    });
    forwards_over_https(&nodes, &client(&ca.pem()));
}

/// A follower given a stream write over HTTPS forwards it to the leader,
/// which counts it, commits it and shows it; a linearizable read through
/// the follower is answered by the leader too.
fn forwards_over_https(nodes: &[Node], tls: &Arc<rustls::ClientConfig>) {
    eventually("the root user exists on every node", || {
        nodes.iter().all(|node| login(tls, node.http).is_some())
    });
    let mut leader = None;
    eventually("a leader is known", || {
        let token = login(tls, nodes[0].http).unwrap();
        let response = request_tls(tls, nodes[0].http, "GET", "/streams", Some(&token), None);
        leader = response
            .header("iggy-view")
            .and_then(|view| view.parse::<usize>().ok())
            .map(|view| view % usize::from(NODES));
        response.status == 200 && leader.is_some()
    });
    let leader = leader.unwrap();
    let follower = (leader + 1) % usize::from(NODES);
    let token = login(tls, nodes[follower].http).unwrap();
    let body = br#"{"name":"forwarded"}"#;
    let response = request_tls(
        tls,
        nodes[follower].http,
        "POST",
        "/streams",
        Some(&token),
        Some(body),
    );
    assert!(
        response.status == 200 || response.status == 201,
        "forwarded and committed: {} {}\nfollower log:\n{}",
        response.status,
        response.text(),
        log_of(&nodes[follower])
    );
    assert_eq!(response.json()["name"], "forwarded");
    assert_eq!(
        stream_names(tls, &nodes[leader]),
        ["forwarded"],
        "the leader answered, so it has applied the stream"
    );
    assert_eq!(
        created_streams(tls, &nodes[leader]),
        1,
        "the leader served the forwarded request itself"
    );
    eventually("every node lists the forwarded stream", || {
        nodes
            .iter()
            .all(|node| stream_names(tls, node) == ["forwarded"])
    });
    let path = "/streams?consistency=linearizable";
    let response = request_tls(tls, nodes[follower].http, "GET", path, Some(&token), None);
    assert_eq!(response.status, 200, "{}", response.text());
    assert_eq!(response.json()[0]["name"], "forwarded");
    let log = log_of(&nodes[follower]);
    assert!(
        log.contains("forwarding to the leader runs over HTTPS"),
        "{log}"
    );
    assert!(
        !log.contains("TLS handshake with the leader failed"),
        "{log}"
    );
}

fn http_tls(cert: &str, key: &str) -> String {
    format!("[http.tls]\nenabled = true\ncert_file = \"{cert}\"\nkey_file = \"{key}\"\n\n")
}

fn write(dir: &Path, file: &str, text: &str) -> String {
    let path = dir.join(file);
    std::fs::write(&path, text).unwrap();
    path.display().to_string()
}

/// A client trusting the certificates in `pem` only.
fn client(pem: &str) -> Arc<rustls::ClientConfig> {
    let mut roots = rustls::RootCertStore::empty();
    for cert in CertificateDer::pem_slice_iter(pem.as_bytes()) {
        roots.add(cert.unwrap()).unwrap();
    }
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_root_certificates(roots)
        .with_no_client_auth();
    Arc::new(config)
}

fn login(tls: &Arc<rustls::ClientConfig>, addr: SocketAddr) -> Option<String> {
    let body = br#"{"username":"iggy","password":"iggy"}"#;
    let response = request_tls(tls, addr, "POST", "/users/login", None, Some(body));
    (response.status == 200).then(|| {
        response.json()["access_token"]["token"]
            .as_str()
            .unwrap()
            .to_owned()
    })
}

fn authorized(tls: &Arc<rustls::ClientConfig>, node: &Node, path: &str) -> Option<RawResponse> {
    let token = login(tls, node.http)?;
    let response = request_tls(tls, node.http, "GET", path, Some(&token), None);
    (response.status == 200).then_some(response)
}

/// The streams `node` lists (none while it cannot log in).
fn stream_names(tls: &Arc<rustls::ClientConfig>, node: &Node) -> Vec<String> {
    let Some(response) = authorized(tls, node, "/streams") else {
        return Vec::new();
    };
    response.sorted_names()
}

/// How many create-stream requests `node` served (its `/metrics`).
fn created_streams(tls: &Arc<rustls::ClientConfig>, node: &Node) -> u64 {
    let metrics = authorized(tls, node, "/metrics").unwrap().text();
    metrics
        .lines()
        .filter(|line| line.starts_with("iggy_requests_total"))
        .filter(|line| line.contains("command=\"stream.create\""))
        .filter_map(|line| line.rsplit(' ').next()?.parse::<u64>().ok())
        .sum()
}

fn log_of(node: &Node) -> String {
    std::fs::read_to_string(node.workdir.data().join("logs/iggy-server.log")).unwrap_or_default()
}

//! Replica links on loopback (replication spec §8): real sockets on
//! 127.0.0.1, every endpoint on one compio runtime.

use std::future::Future;
use std::net::SocketAddr;
use std::time::{Duration, Instant};

use consensus::View;
use consensus::types::Op;
use consensus::vsr::message::Message;

use super::*;
use crate::cluster::METADATA_GROUP;
use crate::cluster::handshake::{ChannelBinding, HandshakeConfig, MacKey, PskKeys, Status};

const CLUSTER: u128 = 0x5eed;
const OLD: &[u8] = b"old-secret-old-secret-old-secret";
const NEW: &[u8] = b"new-secret-new-secret-new-secret";
const PATIENCE: Duration = Duration::from_secs(10);

fn run<F: Future>(test: F) -> F::Output {
    compio::runtime::Runtime::new()
        .expect("a runtime")
        .block_on(test)
}

/// `(current, previous)` secrets, or no auth.
type Secrets = Option<(&'static [u8], Option<&'static [u8]>)>;

fn keys(secrets: Secrets) -> Option<PskKeys> {
    secrets.map(|(current, previous)| PskKeys {
        current: MacKey::derive(current).expect("32 bytes"),
        previous: previous.map(|p| MacKey::derive(p).expect("32 bytes")),
    })
}

fn link_config(id: ReplicaId, roster: &[(ReplicaId, SocketAddr)], secrets: Secrets) -> LinkConfig {
    LinkConfig {
        cluster: CLUSTER,
        replica_id: id,
        peers: roster
            .iter()
            .copied()
            .filter(|(peer, _)| *peer != id)
            .collect(),
        psk: keys(secrets),
        max_message_size: 1 << 20,
        peer_queue_capacity: 4,
        max_batch: 8,
        reconnect_period: Duration::from_millis(20),
        handshake_grace: Duration::from_secs(2),
        inbound_capacity: 64,
        tls: None,
    }
}

/// `cluster.tls.self_signed` for a loopback roster.
fn self_signed_tls(roster: &[(ReplicaId, SocketAddr)]) -> crate::cluster::tls::LinkTls {
    let config = crate::config::ClusterTlsConfig {
        enabled: true,
        self_signed: true,
        cert_file: String::new(),
        key_file: String::new(),
        ca_file: String::new(),
    };
    let names = roster
        .iter()
        .map(|(id, address)| (*id, address.ip().to_string()))
        .collect();
    crate::cluster::tls::LinkTls::from_config(&config, "127.0.0.1", names).expect("self-signed")
}

/// A loopback roster of `n` nodes; its listeners, not yet served.
fn roster(n: u8) -> (Vec<(ReplicaId, SocketAddr)>, Vec<std::net::TcpListener>) {
    let listeners: Vec<_> = (0..n)
        .map(|_| bind_listener("127.0.0.1:0".parse().expect("an address")).expect("a port"))
        .collect();
    let addresses = (0..n)
        .zip(&listeners)
        .map(|(id, l)| (id, l.local_addr().expect("bound")))
        .collect();
    (addresses, listeners)
}

struct Node {
    links: Links,
    inbound: Inbound,
}

fn start(
    id: ReplicaId,
    roster: &[(ReplicaId, SocketAddr)],
    listener: std::net::TcpListener,
    secrets: Secrets,
) -> Node {
    let (links, inbound) =
        Links::start(link_config(id, roster, secrets), listener).expect("links start");
    Node { links, inbound }
}

/// Binds `address` again once the previous owner's socket is closed.
async fn rebind(address: SocketAddr) -> std::net::TcpListener {
    let deadline = Instant::now() + PATIENCE;
    loop {
        match bind_listener(address) {
            Ok(listener) => return listener,
            Err(e) if Instant::now() > deadline => panic!("cannot rebind {address}: {e}"),
            Err(_) => compio::time::sleep(Duration::from_millis(10)).await,
        }
    }
}

async fn eventually(what: &str, mut condition: impl FnMut() -> bool) {
    let deadline = Instant::now() + PATIENCE;
    while !condition() {
        assert!(Instant::now() < deadline, "timed out waiting until {what}");
        compio::time::sleep(Duration::from_millis(5)).await;
    }
}

fn connected(nodes: &[&Node]) -> bool {
    nodes.iter().enumerate().all(|(i, node)| {
        (0..nodes.len())
            .filter(|&j| j != i)
            .all(|j| node.links.status(j as u8).is_some_and(|s| s.connected))
    })
}

/// A frame from `from` whose commit number names the pair and a sequence.
fn frame(from: ReplicaId, to: ReplicaId, seq: u64) -> Frame {
    let commit = Op(u64::from(from) * 1000 + u64::from(to) * 100 + seq);
    Frame {
        cluster: CLUSTER,
        from,
        group: 42,
        incarnation: 1,
        message: Message::Commit {
            view: View(3),
            commit,
        },
    }
}

fn data_frame(from: ReplicaId, op: u64) -> Frame {
    let message = Message::RequestPrepares {
        view: View(3),
        from: Op(op),
        to: Op(op),
    };
    Frame {
        cluster: CLUSTER,
        from,
        group: 42,
        incarnation: 1,
        message,
    }
}

async fn receive(node: &Node) -> Frame {
    match compio::time::timeout(PATIENCE, node.inbound.recv()).await {
        Ok(Ok(frame)) => frame,
        other => panic!("no frame arrived: {other:?}"),
    }
}

/// Sends a frame across every ordered pair and checks each arrives.
async fn exchange_all(nodes: &[&Node], seq: u64) {
    let n = nodes.len() as u8;
    for from in 0..n {
        for to in (0..n).filter(|&to| to != from) {
            nodes[from as usize]
                .links
                .send(to, &frame(from, to, seq))
                .expect("queued");
        }
    }
    for to in 0..n {
        let mut got: Vec<Frame> = Vec::new();
        for _ in 1..n {
            got.push(receive(nodes[to as usize]).await);
        }
        got.sort_by_key(|f| f.from);
        let expected: Vec<Frame> = (0..n)
            .filter(|&from| from != to)
            .map(|from| frame(from, to, seq))
            .collect();
        assert_eq!(got, expected, "replica {to} received");
    }
}

#[test]
fn given_three_endpoints_when_started_should_link_every_pair_and_carry_frames_both_ways() {
    run(async {
        let (roster, listeners) = roster(3);
        let nodes: Vec<Node> = listeners
            .into_iter()
            .enumerate()
            .map(|(id, l)| start(id as u8, &roster, l, None))
            .collect();
        let all: Vec<&Node> = nodes.iter().collect();
        eventually("every pair is linked", || connected(&all)).await;
        exchange_all(&all, 1).await;
        exchange_all(&all, 2).await;
        let status = nodes[0].links.status(2).expect("a peer");
        assert_eq!(
            (
                status.frames_sent,
                status.frames_received,
                status.frames_rejected
            ),
            (2, 2, 0)
        );
        assert_eq!(nodes[0].links.status(0), None, "self is not a peer");
    });
}

#[test]
fn given_tls_and_psk_on_every_node_when_started_should_link_and_carry_frames() {
    run(async {
        let (roster, listeners) = roster(3);
        let tls = self_signed_tls(&roster);
        let nodes: Vec<Node> = listeners
            .into_iter()
            .enumerate()
            .map(|(id, listener)| {
                let mut config = link_config(id as u8, &roster, Some((NEW, None)));
                config.tls = Some(tls.clone());
                let (links, inbound) = Links::start(config, listener).expect("links start");
                Node { links, inbound }
            })
            .collect();
        let all: Vec<&Node> = nodes.iter().collect();
        eventually("every pair is linked over TLS", || connected(&all)).await;
        exchange_all(&all, 1).await;
        // A frame far larger than a TLS record crosses whole.
        let big = Frame {
            cluster: CLUSTER,
            from: 0,
            group: 42,
            incarnation: 1,
            message: Message::ForwardRequest {
                view: View(3),
                nonce: 9,
                body: vec![0x5a; 600_000],
            },
        };
        nodes[0].links.send(1, &big).expect("queued");
        let received = nodes[1].inbound.recv().await.expect("a frame");
        assert_eq!(received, big);
    });
}

/// PEM files of a CA and of a certificate it signed for `name`, in `dir`:
/// `cluster.tls` settings that use them.
fn ca_signed_tls(dir: &std::path::Path, name: &str) -> crate::config::ClusterTlsConfig {
    use rcgen::{BasicConstraints, CertificateParams, IsCa, KeyPair};
    let ca_key = KeyPair::generate().expect("a CA key");
    let mut ca_params = CertificateParams::new(Vec::<String>::new()).expect("params");
    ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    let ca = ca_params.self_signed(&ca_key).expect("a CA");
    let key = KeyPair::generate().expect("a key");
    let leaf = CertificateParams::new(vec![name.to_owned()])
        .expect("params")
        .signed_by(&key, &ca, &ca_key)
        .expect("signed");
    let write = |file: &str, text: String| {
        let path = dir.join(file);
        std::fs::write(&path, text).expect("written");
        path.display().to_string()
    };
    crate::config::ClusterTlsConfig {
        enabled: true,
        self_signed: false,
        cert_file: write("cert.pem", leaf.pem()),
        key_file: write("key.pem", key.serialize_pem()),
        ca_file: write("ca.pem", ca.pem()),
    }
}

#[test]
fn given_ca_signed_certificates_when_they_name_the_roster_ip_should_link_and_otherwise_not() {
    run(async {
        let dir = tempfile::tempdir().expect("a temp dir");
        for (name, links) in [("127.0.0.1", true), ("10.9.9.9", false)] {
            let (roster, listeners) = roster(2);
            let names: std::collections::BTreeMap<ReplicaId, String> = roster
                .iter()
                .map(|(id, address)| (*id, address.ip().to_string()))
                .collect();
            let settings = ca_signed_tls(dir.path(), name);
            let tls = crate::cluster::tls::LinkTls::from_config(&settings, "127.0.0.1", names)
                .expect("CA settings");
            let nodes: Vec<Node> = listeners
                .into_iter()
                .enumerate()
                .map(|(id, listener)| {
                    let mut config = link_config(id as u8, &roster, Some((NEW, None)));
                    config.tls = Some(tls.clone());
                    let (links, inbound) = Links::start(config, listener).expect("links start");
                    Node { links, inbound }
                })
                .collect();
            let all: Vec<&Node> = nodes.iter().collect();
            if links {
                eventually("linked with certificates naming the roster ip", || {
                    connected(&all)
                })
                .await;
                exchange_all(&all, 1).await;
            } else {
                compio::time::sleep(Duration::from_millis(300)).await;
                assert!(!connected(&all), "a certificate for {name} is refused");
            }
        }
    });
}

#[test]
fn given_a_tls_dialer_and_a_plaintext_acceptor_should_never_link() {
    run(async {
        let (roster, mut listeners) = roster(2);
        let plain = start(1, &roster, listeners.pop().expect("two"), Some((NEW, None)));
        let mut config = link_config(0, &roster, Some((NEW, None)));
        config.tls = Some(self_signed_tls(&roster));
        let (tls, _inbound) = Links::start(config, listeners.pop().expect("one")).expect("starts");
        compio::time::sleep(Duration::from_millis(300)).await;
        assert!(!tls.status(1).expect("a peer").connected);
        assert!(!plain.links.status(0).expect("a peer").connected);
    });
}

#[test]
fn given_psk_on_every_node_when_started_should_link_and_carry_frames() {
    run(async {
        let (roster, listeners) = roster(3);
        let secrets = Some((NEW, None));
        let nodes: Vec<Node> = listeners
            .into_iter()
            .enumerate()
            .map(|(id, l)| start(id as u8, &roster, l, secrets))
            .collect();
        let all: Vec<&Node> = nodes.iter().collect();
        eventually("every pair is linked", || connected(&all)).await;
        exchange_all(&all, 1).await;
    });
}

#[test]
fn given_a_node_with_another_psk_when_it_dials_should_never_connect_and_name_the_mac_mismatch() {
    run(async {
        let (roster, mut listeners) = roster(2);
        let acceptor = start(1, &roster, listeners.pop().expect("two"), Some((OLD, None)));
        let dialer = start(0, &roster, listeners.pop().expect("two"), Some((NEW, None)));
        let refusal = || dialer.links.status(1).and_then(|s| s.last_refusal);
        eventually("the dialer names the refusal", || refusal().is_some()).await;
        assert_eq!(refusal(), Some(HandshakeError::MacMismatch { peer: 1 }));
        compio::time::sleep(Duration::from_millis(200)).await;
        assert!(!dialer.links.status(1).expect("a peer").connected);
        assert!(!acceptor.links.status(0).expect("a peer").connected);
        dialer
            .links
            .send(1, &frame(0, 1, 1))
            .expect("queued while down");
        let nothing =
            compio::time::timeout(Duration::from_millis(100), acceptor.inbound.recv()).await;
        assert!(nothing.is_err(), "no frame crosses an unauthenticated link");
    });
}

#[test]
fn given_a_dialer_with_a_higher_id_when_it_dials_should_be_refused_by_the_directional_rule() {
    run(async {
        let (roster, mut listeners) = roster(3);
        let (low, high, nowhere) = (roster[0].1, roster[1].1, roster[2].1);
        drop(listeners.pop());
        // Replica 0 listens on `low` (and its dials to replica 1 find no
        // one); a misconfigured replica 1 believes `low` is replica 2.
        let acceptor = start(0, &[(0, low), (1, nowhere)], listeners.remove(0), None);
        let wrong_roster = [(1, high), (2, low)];
        let dialer = start(1, &wrong_roster, listeners.remove(0), None);
        let dialer_refusal = || dialer.links.status(2).and_then(|s| s.last_refusal);
        let acceptor_refusal = || acceptor.links.status(1).and_then(|s| s.last_refusal);
        eventually("both sides name the refusal", || {
            dialer_refusal().is_some() && acceptor_refusal().is_some()
        })
        .await;
        assert_eq!(
            dialer_refusal(),
            Some(HandshakeError::Refused {
                peer: 2,
                status: Status::DirectionalRule
            })
        );
        assert_eq!(
            acceptor_refusal(),
            Some(HandshakeError::Direction {
                dialer: 1,
                acceptor: 0
            })
        );
        assert!(!acceptor.links.status(1).expect("a peer").connected);
    });
}

#[test]
fn given_a_killed_peer_when_it_restarts_should_be_redialed_and_carry_traffic_again() {
    run(async {
        let (roster, listeners) = roster(3);
        let mut nodes: Vec<Option<Node>> = listeners
            .into_iter()
            .enumerate()
            .map(|(id, l)| Some(start(id as u8, &roster, l, None)))
            .collect();
        {
            let all: Vec<&Node> = nodes.iter().flatten().collect();
            eventually("every pair is linked", || connected(&all)).await;
            exchange_all(&all, 1).await;
        }
        drop(nodes[1].take());
        {
            let (zero, two) = (
                nodes[0].as_ref().expect("up"),
                nodes[2].as_ref().expect("up"),
            );
            let down = |n: &Node| !n.links.status(1).expect("a peer").connected;
            eventually("both survivors see replica 1 down", || {
                down(zero) && down(two)
            })
            .await;
        }
        let listener = rebind(roster[1].1).await;
        nodes[1] = Some(start(1, &roster, listener, None));
        let all: Vec<&Node> = nodes.iter().flatten().collect();
        eventually("every pair is linked again", || connected(&all)).await;
        exchange_all(&all, 2).await;
    });
}

#[test]
fn given_a_full_queue_when_sending_should_drop_and_count_instead_of_blocking() {
    run(async {
        let (roster, mut listeners) = roster(2);
        // Replica 1's port is bound but never served: its frames queue.
        let silent = listeners.pop().expect("two");
        let node = start(0, &roster, listeners.pop().expect("two"), None);
        let started = Instant::now();
        let results: Vec<_> = (1..=10)
            .map(|op| node.links.send(1, &data_frame(0, op)))
            .collect();
        assert!(
            started.elapsed() < Duration::from_secs(1),
            "sending never waits"
        );
        let full = Err(SendError::QueueFull {
            to: 1,
            lane: Lane::Data,
        });
        assert!(results[..4].iter().all(Result::is_ok));
        assert!(results[4..].iter().all(|r| *r == full));
        assert_eq!(
            node.links.send(1, &frame(0, 1, 1)),
            Ok(()),
            "control has its own lane"
        );
        assert_eq!(
            node.links.send(7, &frame(0, 1, 1)),
            Err(SendError::UnknownPeer { to: 7 })
        );
        let status = node.links.status(1).expect("a peer");
        assert_eq!(
            (
                status.dropped_data,
                status.dropped_control,
                status.connected
            ),
            (6, 0, false)
        );
        drop(silent);
    });
}

#[test]
fn given_queued_frames_when_the_peer_comes_up_should_deliver_control_first() {
    run(async {
        let (roster, mut listeners) = roster(2);
        let late = listeners.pop().expect("two");
        let early = start(0, &roster, listeners.pop().expect("two"), None);
        for op in 1..=3 {
            early.links.send(1, &data_frame(0, op)).expect("queued");
        }
        early.links.send(1, &frame(0, 1, 9)).expect("queued");
        let peer = start(1, &roster, late, None);
        let mut metadata = frame(0, 1, 10);
        metadata.group = METADATA_GROUP;
        assert_eq!(receive(&peer).await, frame(0, 1, 9), "control before data");
        for op in 1..=3 {
            assert_eq!(receive(&peer).await, data_frame(0, op));
        }
        early.links.send(1, &metadata).expect("queued");
        assert_eq!(receive(&peer).await, metadata);
    });
}

#[test]
fn given_a_rolling_psk_rotation_when_nodes_restart_one_by_one_should_keep_every_link_up() {
    run(async {
        let (roster, listeners) = roster(3);
        let steps: [Secrets; 4] = [
            Some((OLD, None)),
            Some((OLD, Some(NEW))),
            Some((NEW, Some(OLD))),
            Some((NEW, None)),
        ];
        let mut nodes: Vec<Option<Node>> = listeners
            .into_iter()
            .enumerate()
            .map(|(id, l)| Some(start(id as u8, &roster, l, steps[0])))
            .collect();
        let mut seq = 0;
        for step in &steps[1..] {
            for id in 0..3u8 {
                drop(nodes[id as usize].take());
                let listener = rebind(roster[id as usize].1).await;
                nodes[id as usize] = Some(start(id, &roster, listener, *step));
                let all: Vec<&Node> = nodes.iter().flatten().collect();
                eventually("every pair is linked mid-rotation", || connected(&all)).await;
                seq += 1;
                exchange_all(&all, seq).await;
            }
        }
    });
}

/// An acceptor (replica 1) and a hand-driven dialer (replica 0) that
/// writes raw bytes after a real handshake.
async fn raw_peer() -> (Node, compio::net::TcpStream) {
    let (roster, mut listeners) = roster(2);
    let acceptor = start(1, &roster, listeners.pop().expect("two"), None);
    let stream = compio::net::TcpStream::connect(roster[1].1)
        .await
        .expect("connects");
    let handshake = HandshakeConfig {
        cluster: CLUSTER,
        local: 0,
        psk: None,
        channel: ChannelBinding::Plaintext,
    };
    let channel = connection::Channel {
        stream: &stream,
        tls: None,
    };
    connection::dial_handshake(channel, handshake, 1)
        .await
        .expect("admitted");
    (acceptor, stream)
}

async fn write(stream: &compio::net::TcpStream, bytes: Vec<u8>) {
    use compio::io::AsyncWriteExt;
    let mut writer = stream;
    let compio::buf::BufResult(result, _) = writer.write_all(bytes).await;
    result.expect("written");
}

/// Sets header bytes and seals the header again (XXH3-64 of 16..256).
fn resealed(mut bytes: Vec<u8>, at: usize, value: u8) -> Vec<u8> {
    bytes[at] = value;
    let seal = u128::from(protocol::checksum::xxh3_64(&bytes[16..256]));
    bytes[..16].copy_from_slice(&seal.to_le_bytes());
    bytes
}

#[test]
fn given_bad_frames_on_a_link_should_drop_each_and_keep_the_connection() {
    run(async {
        let (acceptor, stream) = raw_peer().await;
        eventually("the acceptor is up", || {
            acceptor.links.status(0).is_some_and(|s| s.connected)
        })
        .await;
        let forged_sender = wire::encode(&frame(2, 1, 1));
        let other_cluster = wire::encode(&Frame {
            cluster: 9,
            ..frame(0, 1, 2)
        });
        let unknown_command = resealed(wire::encode(&frame(0, 1, 3)), 60, 99);
        let mut bad_body = wire::encode(&Frame {
            message: Message::StartViewChange { view: View(4) },
            ..frame(0, 1, 4)
        });
        bad_body = resealed(bad_body, 16, 0xee); // checksum_body no longer matches
        for bytes in [forged_sender, other_cluster, unknown_command, bad_body] {
            write(&stream, bytes).await;
        }
        write(&stream, wire::encode(&frame(0, 1, 5))).await;
        assert_eq!(
            receive(&acceptor).await,
            frame(0, 1, 5),
            "the good frame after four bad ones"
        );
        let status = acceptor.links.status(0).expect("a peer");
        assert_eq!(
            (
                status.frames_rejected,
                status.frames_received,
                status.connected
            ),
            (4, 1, true)
        );
    });
}

#[test]
fn given_a_bad_seal_on_a_link_should_close_the_connection() {
    run(async {
        let (acceptor, stream) = raw_peer().await;
        eventually("the acceptor is up", || {
            acceptor.links.status(0).is_some_and(|s| s.connected)
        })
        .await;
        let mut corrupt = wire::encode(&frame(0, 1, 1));
        corrupt[100] ^= 1;
        write(&stream, corrupt).await;
        eventually("the acceptor closes the link", || {
            !acceptor.links.status(0).expect("a peer").connected
        })
        .await;
        let mut buf = Vec::with_capacity(1);
        use compio::io::AsyncRead;
        let compio::buf::BufResult(read, _) = (&mut &stream).read(std::mem::take(&mut buf)).await;
        assert!(
            matches!(read, Ok(0) | Err(_)),
            "the socket is closed: {read:?}"
        );
    });
}

#[test]
fn given_the_server_configuration_should_take_the_roster_and_its_tls_settings() {
    let mut config = crate::config::ServerConfig::embedded_defaults();
    config.cluster.auth.enabled = true;
    config.cluster.auth.shared_secret = String::from_utf8(NEW.to_vec()).expect("ascii");
    let links = LinkConfig::from_server_config(&config, 0).expect("the shipped roster");
    assert_eq!(
        links.cluster,
        crate::cluster::cluster_id(&config.cluster.name)
    );
    assert_eq!(
        links.peers,
        vec![(1, node_address(&config, 1).expect("an address"))]
    );
    assert_eq!(links.psk, keys(Some((NEW, None))));
    assert_eq!(
        links.peer_queue_capacity,
        config.message_bus.peer_queue_capacity as usize
    );
    config.cluster.auth.previous_shared_secret = "short".into();
    assert!(matches!(
        LinkConfig::from_server_config(&config, 0),
        Err(LinkError::SecretTooShort {
            key: "cluster.auth.previous_shared_secret"
        })
    ));
    config.cluster.auth.previous_shared_secret = String::new();
    config.cluster.tls.enabled = true;
    let refused = LinkConfig::from_server_config(&config, 0).expect_err("no certificate");
    assert!(
        refused.to_string().contains("cert_file is required"),
        "{refused}"
    );
    config.cluster.tls.self_signed = true;
    let links = LinkConfig::from_server_config(&config, 0).expect("self-signed");
    assert!(links.tls.is_some());
    config.cluster.auth.enabled = false;
    assert!(matches!(
        LinkConfig::from_server_config(&config, 0),
        Err(LinkError::TlsWithoutAuth)
    ));
    assert!(matches!(
        LinkConfig::from_server_config(&config, 9),
        Err(LinkError::NotInRoster { replica_id: 9 })
    ));
}

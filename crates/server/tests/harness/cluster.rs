//! Three real `iggy-server` processes on loopback for the cluster tests:
//! free roster ports, each node's configuration, start and restart, a
//! cuttable relay on the replica links, and the SDK and HTTP probes the
//! tests share (what a node serves, sends, stored offsets, metrics).
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeMap;
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use iggy::prelude::*;

use super::http::{request, root_token};
use super::watchdog::Watchdog;
use super::{ServerOptions, TestServer, Workdir};

pub const NODES: u8 = 3;
/// How long a cluster test waits for something that should happen (an upper
/// bound only: waits end as soon as it happens). Generous because CI runs
/// three nodes and the rest of the suite on two cores: 40 s once ran out
/// while a restarted node caught up.
pub const DEADLINE: Duration = Duration::from_secs(90);

/// Five free ports per node (tcp, http, quic, websocket, replica): a
/// roster cannot use port 0, so they are found free, then released.
pub fn reserve_ports() -> Vec<[u16; 5]> {
    // Below the kernel's ephemeral range (32768 and up by default): a port a
    // killed node releases must not become a client socket's local port
    // before the node restarts on it. Ports are handed out in turn from a
    // per-process start, and each is checked free by binding it.
    static NEXT: std::sync::atomic::AtomicU16 = std::sync::atomic::AtomicU16::new(0);
    let base = 20_000 + (std::process::id() % 200) as u16 * 50;
    let take = || loop {
        let offset = NEXT.fetch_add(1, Ordering::Relaxed) % 10_000;
        let port = 20_000 + (base - 20_000 + offset) % 12_000;
        if TcpListener::bind(("127.0.0.1", port)).is_ok() {
            return port;
        }
    };
    (0..NODES)
        .map(|_| [take(), take(), take(), take(), take()])
        .collect()
}

pub fn config(ports: &[[u16; 5]], extra: &str) -> String {
    let mut text = String::from(extra);
    text.push_str(
        "[cluster]\nenabled = true\nname = \"test-cluster\"\nheartbeat_timeout = \"2 s\"\n\
         commit_broadcast_interval = \"250 ms\"\nview_change_status_timeout = \"2 s\"\n\n\
         [message_bus]\nreconnect_period = \"200 ms\"\n\n",
    );
    for (id, p) in ports.iter().enumerate() {
        text.push_str(&format!(
            "[[cluster.nodes]]\nname = \"node-{id}\"\nip = \"127.0.0.1\"\nreplica_id = {id}\n\n\
             [cluster.nodes.ports]\ntcp = {}\nhttp = {}\nquic = {}\nwebsocket = {}\ntcp_replica = {}\n\n",
            p[0], p[1], p[2], p[3], p[4]
        ));
    }
    text
}

pub struct Node {
    pub workdir: Workdir,
    pub options: ServerOptions,
    pub server: Option<TestServer>,
    pub http: SocketAddr,
    /// Shared by the nodes started together: the test fails, with their
    /// output, if it holds them past the watchdog's limit.
    pub watchdog: Arc<Watchdog>,
}

pub fn start_cluster(extra_config: &str) -> Vec<Node> {
    let ports = reserve_ports();
    let config = config(&ports, extra_config);
    start_nodes(&ports, |_| config.clone())
}

/// Starts a node for each of `ports` (node `id` on `ports[id]`) with the
/// configuration `config_of(id)`.
pub fn start_nodes(ports: &[[u16; 5]], config_of: impl Fn(u8) -> String) -> Vec<Node> {
    let count = u8::try_from(ports.len()).expect("a roster's size");
    let workdirs: Vec<Workdir> = (0..count).map(|_| Workdir::new()).collect();
    let watchdog = Arc::new(Watchdog::arm(
        workdirs.iter().map(|w| w.path().to_owned()).collect(),
    ));
    workdirs
        .into_iter()
        .zip(0..count)
        .map(|(workdir, id)| {
            let p = ports[usize::from(id)];
            let options = ServerOptions::default()
                .config_file(&config_of(id))
                .env("IGGY_CONFIG_PATH", "config.toml")
                .env("IGGY_TCP_ADDRESS", &format!("127.0.0.1:{}", p[0]))
                .env("IGGY_HTTP_ADDRESS", &format!("127.0.0.1:{}", p[1]))
                .env("IGGY_QUIC_ADDRESS", &format!("127.0.0.1:{}", p[2]))
                .env("IGGY_WEBSOCKET_ADDRESS", &format!("127.0.0.1:{}", p[3]))
                .arg("--replica-id")
                .arg(&id.to_string());
            let server = TestServer::start(&workdir, &options);
            let http = server.address("http").expect("http");
            Node {
                workdir,
                options,
                server: Some(server),
                http,
                watchdog: watchdog.clone(),
            }
        })
        .collect()
}

/// A TCP relay in front of one replica link that a test can cut (both
/// directions, open connections closed, new ones refused) and heal, or
/// hold up one direction (bytes wait in the relay, none is lost).
pub struct LinkProxy {
    port: u16,
    cut: Arc<AtomicBool>,
    open: Arc<Mutex<Vec<TcpStream>>>,
    /// Held-up directions: towards the acceptor, towards the dialer.
    held: [Arc<AtomicBool>; 2],
}

impl LinkProxy {
    pub fn start(upstream: u16) -> LinkProxy {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let cut = Arc::new(AtomicBool::new(false));
        let open: Arc<Mutex<Vec<TcpStream>>> = Arc::default();
        let held: [Arc<AtomicBool>; 2] = Default::default();
        let (cutting, opened, holding) = (cut.clone(), open.clone(), held.clone());
        std::thread::spawn(move || {
            for client in listener.incoming() {
                let Ok(client) = client else { continue };
                if cutting.load(Ordering::SeqCst) {
                    continue; // dropped: refused while cut
                }
                let Ok(server) = TcpStream::connect(("127.0.0.1", upstream)) else {
                    continue;
                };
                let mut open = opened.lock().unwrap();
                open.push(client.try_clone().unwrap());
                open.push(server.try_clone().unwrap());
                for (mut from, mut to, hold) in [
                    (
                        client.try_clone().unwrap(),
                        server.try_clone().unwrap(),
                        holding[0].clone(),
                    ),
                    (server, client, holding[1].clone()),
                ] {
                    std::thread::spawn(move || {
                        relay(&mut from, &mut to, &hold);
                        let _ = to.shutdown(std::net::Shutdown::Both);
                        let _ = from.shutdown(std::net::Shutdown::Both);
                    });
                }
            }
        });
        LinkProxy {
            port,
            cut,
            open,
            held,
        }
    }

    /// Holds up (or lets flow again) the bytes towards the node that
    /// dials this link (the lower id) or towards the one that accepts it.
    pub fn hold_towards(&self, dialer: bool, held: bool) {
        self.held[usize::from(dialer)].store(held, Ordering::SeqCst);
    }

    pub fn cut(&self) {
        self.cut.store(true, Ordering::SeqCst);
        for stream in self.open.lock().unwrap().drain(..) {
            let _ = stream.shutdown(std::net::Shutdown::Both);
        }
    }

    pub fn heal(&self) {
        self.cut.store(false, Ordering::SeqCst);
    }
}

/// Copies `from` to `to` until either ends, waiting while `hold` is set.
fn relay(from: &mut TcpStream, to: &mut TcpStream, hold: &AtomicBool) {
    use std::io::{Read, Write};
    let mut buffer = vec![0u8; 64 * 1024];
    loop {
        let n = match from.read(&mut buffer) {
            Ok(0) | Err(_) => return,
            Ok(n) => n,
        };
        while hold.load(Ordering::SeqCst) {
            std::thread::sleep(Duration::from_millis(10));
        }
        if to.write_all(&buffer[..n]).is_err() {
            return;
        }
    }
}

/// A cluster whose replica links all pass through `LinkProxy`s: node j
/// dials node i > j at the proxy `(j, i)` (only the lower id dials).
pub fn start_cluster_with_proxies() -> (Vec<Node>, BTreeMap<(u8, u8), LinkProxy>) {
    start_cluster_with_proxies_and("")
}

/// `start_cluster_with_proxies` with `extra` configuration on every node.
pub fn start_cluster_with_proxies_and(extra: &str) -> (Vec<Node>, BTreeMap<(u8, u8), LinkProxy>) {
    let ports = reserve_ports();
    let mut proxies = BTreeMap::new();
    for j in 0..NODES {
        for i in j + 1..NODES {
            proxies.insert((j, i), LinkProxy::start(ports[usize::from(i)][4]));
        }
    }
    let nodes = start_nodes(&ports, |id| {
        let mut seen = ports.clone();
        for i in id + 1..NODES {
            seen[usize::from(i)][4] = proxies[&(id, i)].port;
        }
        config(&seen, extra)
    });
    (nodes, proxies)
}

/// Polls `check` until it holds or the deadline passes.
pub fn eventually(what: &str, mut check: impl FnMut() -> bool) {
    let started = Instant::now();
    while !check() {
        assert!(started.elapsed() < DEADLINE, "timed out waiting: {what}");
        std::thread::sleep(Duration::from_millis(100));
    }
}

pub fn try_token(node: &Node) -> Option<String> {
    let body = br#"{"username":"iggy","password":"iggy"}"#;
    let response = request(node.http, "POST", "/users/login", None, Some(body));
    (response.status == 200).then(|| root_token(node.http))
}

/// The streams a node lists (none while it cannot log in yet: a node
/// that restarted applies the group's history again as it catches up).
pub fn stream_names(node: &Node) -> Vec<String> {
    let Some(token) = try_token(node) else {
        return Vec::new();
    };
    let response = request(node.http, "GET", "/streams", Some(&token), None);
    if response.status != 200 {
        return Vec::new();
    }
    response.sorted_names()
}

/// Creates a stream through whichever node accepts it; returns that node.
pub fn create_stream(nodes: &[Node], name: &str) -> usize {
    let body = format!(r#"{{"name":"{name}"}}"#);
    let mut leader = None;
    eventually(&format!("a leader accepts stream {name}"), || {
        for (index, node) in nodes.iter().enumerate() {
            if node.server.is_none() {
                continue;
            }
            let Some(token) = try_token(node) else {
                continue;
            };
            let response = request(
                node.http,
                "POST",
                "/streams",
                Some(&token),
                Some(body.as_bytes()),
            );
            if response.status == 201 || response.status == 200 {
                leader = Some(index);
                return true;
            }
        }
        false
    });
    leader.unwrap()
}

/// A started cluster whose leader created stream `orders`, the leader's
/// index, and a runtime for the SDK.
pub fn cluster_with_orders() -> (Vec<Node>, usize, tokio::runtime::Runtime) {
    with_orders(start_cluster(""))
}

/// Waits for `nodes` to have their root user, creates stream `orders` on
/// the leader; the nodes, the leader's index and a runtime for the SDK.
pub fn with_orders(nodes: Vec<Node>) -> (Vec<Node>, usize, tokio::runtime::Runtime) {
    eventually("the root user exists on every node", || {
        nodes.iter().all(|node| try_token(node).is_some())
    });
    let leader = create_stream(&nodes, "orders");
    (nodes, leader, sdk_runtime())
}

/// A single-threaded runtime for the SDK clients of one test thread.
pub fn sdk_runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}

/// Creates topic `orders/t` with `partitions` partitions through the node
/// at `tcp`.
pub async fn create_topic_t(tcp: SocketAddr, partitions: u32) {
    let client = super::sdk::root_client(tcp).await;
    let options = TopicCreateOptions {
        partitions_count: Some(partitions),
        ..TopicCreateOptions::default()
    };
    client
        .create_topic(&super::sdk::name("orders"), "t", &options)
        .await
        .unwrap();
}

/// Node `i`'s TCP address (it must be running).
pub fn tcp_of(nodes: &[Node], i: usize) -> SocketAddr {
    nodes[i].server.as_ref().unwrap().tcp()
}

/// Each message's offset and payload in partition `partition` of
/// `orders/t`, as the cluster answers an SDK client that connects to the
/// node at `tcp` (the SDK moves to the leader after login; `messages_at`
/// reads one node). Empty while it cannot log in or poll; why is printed
/// (shown with a failing test's output).
pub async fn messages_on(tcp: SocketAddr, partition: u32) -> Vec<(u64, Vec<u8>)> {
    let client = super::sdk::tcp_client(tcp).await;
    if let Err(e) = client.login_user("iggy", "iggy").await {
        eprintln!("messages_on {tcp}: login failed: {e}");
        return Vec::new();
    }
    let polled = client
        .poll_messages(
            &super::sdk::name("orders"),
            &super::sdk::name("t"),
            Some(partition),
            &Consumer::new(super::sdk::id(1)),
            &PollingStrategy::offset(0),
            1000,
            false,
        )
        .await;
    let _ = client.logout_user().await;
    polled.map_or_else(
        |e| {
            eprintln!("messages_on {tcp}: poll of partition {partition} failed: {e}");
            Vec::new()
        },
        |p| {
            p.messages
                .into_iter()
                .map(|m| (m.header.offset, m.payload.to_vec()))
                .collect()
        },
    )
}

/// `messages_on` once it answers at least `count` messages: right after
/// acknowledged sends the SDK may read a metadata leader that a view
/// change moved to a node that has not applied them yet.
pub fn messages_on_at_least(
    runtime: &tokio::runtime::Runtime,
    tcp: SocketAddr,
    partition: u32,
    count: usize,
) -> Vec<(u64, Vec<u8>)> {
    let mut messages = Vec::new();
    eventually(&format!("the SDK reads {count} messages"), || {
        messages = runtime.block_on(messages_on(tcp, partition));
        messages.len() >= count
    });
    messages
}

/// What node `node` itself serves from partition `partition` of
/// `orders/t`, offsets with payloads. Over its HTTP API, which answers
/// from the node's own copy: the SDK would follow the leader, so
/// `messages_on` shows the cluster's answer, not one node's. Empty while
/// the node cannot answer.
pub fn messages_at(node: &Node, partition: u32) -> Vec<(u64, Vec<u8>)> {
    try_messages_at(node, partition).unwrap_or_default()
}

/// `messages_at`, or None while the node cannot answer (so that "serves
/// nothing" is told apart from "cannot log in or poll yet").
pub fn try_messages_at(node: &Node, partition: u32) -> Option<Vec<(u64, Vec<u8>)>> {
    use base64::Engine as _;
    let token = try_token(node)?;
    let path = format!(
        "/streams/orders/topics/t/messages?consumer_id=1&partition_id={partition}\
         &kind=offset&value=0&count=1000&auto_commit=false"
    );
    let response = request(node.http, "GET", &path, Some(&token), None);
    if response.status != 200 {
        return None;
    }
    let body = response.json();
    let messages = body["messages"]
        .as_array()
        .expect("a message list")
        .iter()
        .map(|m| {
            let offset = m["header"]["offset"].as_u64().expect("an offset");
            let payload = base64::engine::general_purpose::STANDARD
                .decode(m["payload"].as_str().expect("a payload"))
                .expect("base64");
            (offset, payload)
        })
        .collect();
    Some(messages)
}

/// Sends `count` messages tagged `tag` to partition `partition` through the
/// node at `tcp`.
pub async fn send_to(
    tcp: SocketAddr,
    partition: u32,
    tag: &str,
    count: u32,
) -> Result<(), IggyError> {
    let client = super::sdk::tcp_client(tcp).await;
    client.login_user("iggy", "iggy").await?;
    let mut batch: Vec<IggyMessage> = (0..count)
        .map(|i| {
            IggyMessage::builder()
                .payload(format!("{tag}-{i}").into_bytes().into())
                .build()
                .unwrap()
        })
        .collect();
    let sent = client
        .send_messages(
            &super::sdk::name("orders"),
            &super::sdk::name("t"),
            &Partitioning::partition_id(partition),
            &mut batch,
        )
        .await;
    let _ = client.logout_user().await;
    sent.map(|_| ())
}

/// Stores `offset` for consumer `consumer` on partition 0 of `orders/t`.
pub async fn store_offset_t(client: &IggyClient, consumer: u32, offset: u64) {
    client
        .store_consumer_offset(
            &Consumer::new(super::sdk::id(consumer)),
            &super::sdk::name("orders"),
            &super::sdk::name("t"),
            Some(0),
            offset,
        )
        .await
        .unwrap();
}

pub async fn stored_offset_on(tcp: SocketAddr, consumer: u32) -> Option<u64> {
    let client = super::sdk::tcp_client(tcp).await;
    client.login_user("iggy", "iggy").await.ok()?;
    let stored = client
        .get_consumer_offset(
            &Consumer::new(super::sdk::id(consumer)),
            &super::sdk::name("orders"),
            &super::sdk::name("t"),
            Some(0),
        )
        .await
        .ok()??;
    Some(stored.stored_offset)
}

/// How many directories under `dir` have a name starting with `prefix`.
pub fn find_named(dir: &std::path::Path, prefix: &str) -> usize {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return 0;
    };
    entries
        .filter_map(Result::ok)
        .filter(|e| e.path().is_dir())
        .map(|e| {
            let own = usize::from(e.file_name().to_string_lossy().starts_with(prefix));
            own + find_named(&e.path(), prefix)
        })
        .sum()
}

/// How many `command` requests a node served (its `/metrics`).
pub fn requests_of(node: &Node, command: &str) -> u64 {
    let token = root_token(node.http);
    let metrics = request(node.http, "GET", "/metrics", Some(&token), None).text();
    let label = format!("command=\"{command}\"");
    metrics
        .lines()
        .filter(|line| line.starts_with("iggy_requests_total") && line.contains(&label))
        .filter_map(|line| line.rsplit(' ').next()?.parse::<u64>().ok())
        .sum()
}

pub async fn stored_offset_on_partition(
    tcp: SocketAddr,
    consumer: u32,
    partition: u32,
) -> Option<u64> {
    let client = super::sdk::tcp_client(tcp).await;
    client.login_user("iggy", "iggy").await.ok()?;
    let stored = client
        .get_consumer_offset(
            &Consumer::new(super::sdk::id(consumer)),
            &super::sdk::name("orders"),
            &super::sdk::name("t"),
            Some(partition),
        )
        .await
        .ok()??;
    Some(stored.stored_offset)
}

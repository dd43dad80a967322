//! A cluster of three real `iggy-server` processes under faults: the
//! leader killed again and again under sends (failover times), a network
//! partition between the processes, and each node wiped in turn.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod harness;

use std::time::{Duration, Instant};

use harness::TestServer;
use harness::cluster::*;
use harness::http::{http_client_ids, request, root_token};
use iggy::prelude::*;

/// Failover measurement (`IGGY_CLUSTER_FAILOVER=<rounds>`, off in the
/// suite): each round sends batches to the leader, SIGKILLs it, times how
/// long until a survivor accepts a send (a new client per attempt, as an SDK
/// reconnect would be), restarts the killed node and checks that every
/// node serves every acknowledged message exactly once, in order. Prints
/// each round's time and the median and worst.
#[test]
fn given_failover_rounds_when_the_leader_is_killed_should_lose_no_acknowledged_message() {
    let Some(rounds) = std::env::var("IGGY_CLUSTER_FAILOVER")
        .ok()
        .and_then(|v| v.parse::<u32>().ok())
    else {
        return;
    };
    let (mut nodes, mut leader, runtime) = cluster_with_orders();
    runtime.block_on(async {
        create_topic_t(tcp_of(&nodes, leader), 1).await;
    });
    let mut acknowledged: Vec<Vec<u8>> = Vec::new();
    let mut times = Vec::new();
    for round in 0..rounds {
        for batch in 0..3 {
            let tag = format!("r{round}-b{batch}");
            runtime
                .block_on(send_to(tcp_of(&nodes, leader), 0, &tag, 10))
                .unwrap();
            acknowledged.extend((0..10).map(|i| format!("{tag}-{i}").into_bytes()));
        }
        nodes[leader].server.take().unwrap().kill();
        let killed = Instant::now();
        let mut attempt = 0;
        let mut accepted = None;
        while accepted.is_none() {
            assert!(
                killed.elapsed() < DEADLINE,
                "round {round}: no survivor accepted a send"
            );
            for i in (0..nodes.len()).filter(|&i| nodes[i].server.is_some()) {
                // A tag per attempt: one that timed out may still commit.
                attempt += 1;
                let tag = format!("r{round}-after-{attempt}");
                let sent = runtime.block_on(async {
                    tokio::time::timeout(
                        Duration::from_secs(2),
                        send_to(tcp_of(&nodes, i), 0, &tag, 1),
                    )
                    .await
                });
                if matches!(sent, Ok(Ok(()))) {
                    accepted = Some(tag);
                    break;
                }
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        let took = killed.elapsed();
        times.push(took);
        acknowledged.push(format!("{}-0", accepted.expect("accepted")).into_bytes());
        println!("round {round}: killed node {leader}, a send was accepted after {took:?}");
        let node = &mut nodes[leader];
        node.server = Some(TestServer::start(&node.workdir, &node.options));
        leader = create_stream(&nodes, &format!("round-{round}"));
    }
    for (i, node) in nodes.iter().enumerate() {
        eventually(
            &format!("node {i} serves every acknowledged message"),
            || {
                let payloads: Vec<Vec<u8>> = messages_at(node, 0)
                    .into_iter()
                    .map(|(_, payload)| payload)
                    .collect();
                // Exactly once and in order; a send that timed out on the
                // client may still have been committed, so extra messages are
                // allowed between the acknowledged ones.
                let mut rest = payloads.iter();
                acknowledged.iter().all(|a| rest.any(|p| p == a))
                    && payloads.len()
                        == payloads
                            .iter()
                            .collect::<std::collections::BTreeSet<_>>()
                            .len()
            },
        );
    }
    times.sort();
    println!(
        "failover: {} rounds, median {:?}, worst {:?}",
        times.len(),
        times[times.len() / 2],
        times[times.len() - 1]
    );
}

#[test]
fn given_an_isolated_leader_when_the_network_heals_should_discard_what_it_prepared_alone() {
    let (nodes, proxies) = start_cluster_with_proxies();
    let (mut nodes, leader, runtime) = with_orders(nodes);
    runtime.block_on(async {
        create_topic_t(tcp_of(&nodes, leader), 1).await;
        send_to(tcp_of(&nodes, leader), 0, "before", 5)
            .await
            .unwrap();
    });

    // The leader is cut off from both peers.
    let isolate = |id: u8| {
        for ((j, i), proxy) in &proxies {
            if *j == id || *i == id {
                proxy.cut();
            }
        }
    };
    isolate(u8::try_from(leader).unwrap());
    // What it is sent now is never acknowledged: it has no quorum.
    let alone = runtime.block_on(async {
        tokio::time::timeout(
            Duration::from_secs(4),
            send_to(tcp_of(&nodes, leader), 0, "alone", 3),
        )
        .await
    });
    assert!(
        !matches!(alone, Ok(Ok(()))),
        "an isolated leader acknowledged"
    );

    // The majority elects and serves.
    let survivors: Vec<usize> = (0..nodes.len()).filter(|&i| i != leader).collect();
    let mut attempt = 0;
    eventually("the majority accepts a send", || {
        attempt += 1;
        survivors.iter().any(|&i| {
            let tag = format!("majority-{attempt}-{i}");
            matches!(
                runtime.block_on(async {
                    tokio::time::timeout(
                        Duration::from_secs(2),
                        send_to(tcp_of(&nodes, i), 0, &tag, 2),
                    )
                    .await
                }),
                Ok(Ok(()))
            )
        })
    });

    // Healed: the old leader rejoins as a backup of the new view, holds
    // what the majority committed, and what it prepared alone is gone.
    for proxy in proxies.values() {
        proxy.heal();
    }
    eventually("every node serves the majority's log", || {
        let logs: Vec<Vec<(u64, Vec<u8>)>> = (0..nodes.len())
            .map(|i| messages_at(&nodes[i], 0))
            .collect();
        logs[0].len() >= 7 && logs.windows(2).all(|w| w[0] == w[1])
    });
    let log = runtime.block_on(messages_on(tcp_of(&nodes, leader), 0));
    assert!(
        log.iter()
            .all(|(_, payload)| !payload.starts_with(b"alone")),
        "an op the isolated leader prepared alone was applied"
    );
    assert_eq!(
        log[..5].iter().map(|(o, _)| *o).collect::<Vec<_>>(),
        [0, 1, 2, 3, 4]
    );
    let token = root_token(nodes[leader].http);
    let response = request(
        nodes[leader].http,
        "GET",
        "/streams?consistency=linearizable",
        Some(&token),
        None,
    );
    assert_eq!(response.status, 307, "the old leader is a follower now");
    for node in &mut nodes {
        let (status, _) = node.server.take().unwrap().stop();
        assert!(status.success());
    }
}

#[test]
fn given_each_replica_wiped_in_turn_when_it_restarts_fresh_should_refill_from_its_peers() {
    let (mut nodes, leader, runtime) = cluster_with_orders();
    // 300 appends: more ops than a partition group keeps above its
    // checkpoint (256), so a wiped node cannot repair from the journals
    // alone and must refill its log from its peers' segments.
    let appends = 300;
    runtime.block_on(async {
        let tcp = tcp_of(&nodes, leader);
        create_topic_t(tcp, 1).await;
        let client = harness::sdk::tcp_client(tcp).await;
        client.login_user("iggy", "iggy").await.unwrap();
        for round in 0..appends {
            let mut batch: Vec<IggyMessage> = (0..2)
                .map(|i| {
                    IggyMessage::builder()
                        .payload(format!("kept-{round}-{i}").into_bytes().into())
                        .build()
                        .unwrap()
                })
                .collect();
            client
                .send_messages(
                    &harness::sdk::name("orders"),
                    &harness::sdk::name("t"),
                    &Partitioning::partition_id(0),
                    &mut batch,
                )
                .await
                .unwrap();
        }
        store_offset_t(&client, 7, 411).await;
    });
    let expected = messages_on_at_least(&runtime, tcp_of(&nodes, leader), 0, 2 * appends);
    assert_eq!(expected.len(), 2 * appends);
    for (victim, node) in nodes.iter_mut().enumerate() {
        let (status, _) = node.server.take().unwrap().stop();
        assert!(status.success());
        // `--fresh` erases the data directory before the node starts.
        let fresh = node.options.clone().arg("--fresh");
        node.server = Some(TestServer::start(&node.workdir, &fresh));
        // The victim's own copy (not the leader's, which the SDK follows):
        // the next wipe must not find the only full copies gone.
        eventually(
            &format!("wiped node {victim} serves every message again"),
            || messages_at(node, 0) == expected,
        );
        assert_eq!(stream_names(node), ["orders"]);
    }
    // Every node was wiped once, so whichever primary answers holds the
    // offset only through a refill.
    for i in 0..nodes.len() {
        assert_eq!(
            runtime.block_on(stored_offset_on(tcp_of(&nodes, i), 7)),
            Some(411),
            "the stored offset survives every wipe (asked through node {i})"
        );
    }
}

/// The node whose HTTP API serves a linearizable read itself (the
/// metadata leader), among the running nodes.
fn leader_index(nodes: &[Node]) -> Option<usize> {
    nodes.iter().position(|node| {
        node.server.is_some()
            && try_token(node).is_some_and(|token| {
                let path = "/stats?consistency=linearizable";
                request(node.http, "GET", path, Some(&token), None).status == 200
            })
    })
}

/// The created-view floor on real processes (replication spec §5.6, the
/// seed README's "Upgrade recovery"): a partition superblock whose log
/// view lies below the partition's committed creation view is refused at
/// boot with a log naming the directory and the views; that partition is
/// not served on the node, its files stay as they were, and the node and
/// the cluster serve everything else.
#[test]
fn given_a_partition_superblock_below_its_created_view_when_the_node_restarts_should_refuse_only_it()
 {
    let mut nodes = start_cluster("");
    eventually("the root user exists on every node", || {
        nodes.iter().all(|node| try_token(node).is_some())
    });
    // Two elections, so that the topic is created in view 2 or later.
    for _ in 0..2 {
        let mut leader = None;
        eventually("a leader", || {
            leader = leader_index(&nodes);
            leader.is_some()
        });
        let leader = leader.unwrap();
        nodes[leader].server.take().unwrap().kill();
        eventually("another leader", || leader_index(&nodes).is_some());
        let node = &mut nodes[leader];
        node.server = Some(TestServer::start(&node.workdir, &node.options));
    }
    let (nodes, leader, runtime) = with_orders(nodes);
    let mut nodes = nodes;
    runtime.block_on(async {
        create_topic_t(tcp_of(&nodes, leader), 1).await;
        send_to(tcp_of(&nodes, leader), 0, "kept", 5).await.unwrap();
    });
    let token = root_token(nodes[leader].http);
    let view: u32 = request(nodes[leader].http, "GET", "/streams", Some(&token), None)
        .header("iggy-view")
        .unwrap()
        .parse()
        .unwrap();
    assert!(view >= 2, "created in view {view}");
    let victim = (leader + 1) % nodes.len();
    eventually("the victim holds the messages", || {
        find_named(&nodes[victim].workdir.data(), "prepares-") == 1
    });
    let (status, _) = nodes[victim].server.take().unwrap().stop();
    assert!(status.success());

    // A superblock certifying log view 1 for the partition group, as an
    // older server could have left it.
    let data = nodes[victim].workdir.data();
    let partition_dir = std::fs::read_dir(data.join("streams"))
        .unwrap()
        .filter_map(Result::ok)
        .map(|stream| stream.path().join("topics"))
        .flat_map(|topics| std::fs::read_dir(topics).unwrap().filter_map(Result::ok))
        .map(|topic| topic.path().join("partitions").join("0"))
        .find(|dir| dir.join("created.revision").exists())
        .expect("the partition's directory");
    let id_of = |path: &std::path::Path, up: usize| -> u32 {
        let mut path = path.to_path_buf();
        for _ in 0..up {
            path.pop();
        }
        path.file_name().unwrap().to_str().unwrap().parse().unwrap()
    };
    let (stream, topic) = (id_of(&partition_dir, 4), id_of(&partition_dir, 2));
    let metadata_superblock = std::fs::read(data.join("cluster/metadata/superblock")).unwrap();
    let cluster = storage::superblock::Superblock::decode(&metadata_superblock)
        .unwrap()
        .identity
        .cluster;
    let wal_dir = compio::runtime::Runtime::new().unwrap().block_on(async {
        let revision = partition_dir.join("created.revision");
        let incarnation = storage::counter_file::load(&storage::RealStorage, &revision)
            .await
            .unwrap()
            .unwrap();
        let wal_dir = partition_dir.join(format!("prepares-{incarnation}"));
        let written = storage::superblock::Superblock {
            identity: storage::superblock::Identity {
                cluster,
                replica: victim as u8,
                group: (u64::from(stream) << 32) | (u64::from(topic) << 20),
                incarnation,
            },
            view,
            log_view: 1,
            uncertain: false,
        };
        storage::superblock::store(&storage::RealStorage, &wal_dir, None, &written)
            .await
            .unwrap();
        wal_dir
    });
    let snapshot = |dir: &std::path::Path| -> Vec<(std::ffi::OsString, Vec<u8>)> {
        let mut files: Vec<_> = std::fs::read_dir(dir)
            .unwrap()
            .filter_map(Result::ok)
            .filter(|e| e.path().is_file())
            .map(|e| (e.file_name(), std::fs::read(e.path()).unwrap()))
            .collect();
        files.sort();
        files
    };
    let before = snapshot(&wal_dir);

    let node = &mut nodes[victim];
    node.server = Some(TestServer::start(&node.workdir, &node.options));
    let log = data.join("logs").join("iggy-server.log");
    eventually("the refusal is logged", || {
        std::fs::read_to_string(&log).is_ok_and(|text| {
            text.contains("falls below committed creation view")
                && text.contains(&wal_dir.display().to_string())
                && text.contains(&format!(
                    "log view 1, which falls below committed creation view {view}"
                ))
        })
    });
    assert_eq!(
        snapshot(&wal_dir),
        before,
        "the refused files are kept as they were"
    );
    // The node serves everything else, and the cluster serves the
    // partition from the other two.
    assert_eq!(stream_names(&nodes[victim]), ["orders"]);
    let expected: Vec<String> = (0..5).map(|i| format!("kept-{i}")).collect();
    let served = runtime.block_on(messages_on(tcp_of(&nodes, leader), 0));
    let payloads: Vec<String> = served
        .into_iter()
        .map(|(_, p)| String::from_utf8(p).unwrap())
        .collect();
    assert_eq!(payloads, expected);
}

/// Cached replies across failover (replication spec §7.2): a write in
/// flight on a leader that is cut off is in doubt there; once the network
/// heals and the old leader follows the new view, the write is answered by
/// its fate (its result if the new view committed it, else 58, and the SDK
/// runs it again on the new leader), never 57 for a write that took effect
/// nor twice. Metadata writes (stream creates) here, appends below.
#[test]
fn given_a_leader_cut_off_mid_write_when_the_network_heals_should_answer_the_write_by_its_fate() {
    cut_leader_mid_writes(Plane::Metadata);
}

#[test]
fn given_a_leader_cut_off_mid_send_when_the_network_heals_should_answer_the_send_by_its_fate() {
    cut_leader_mid_writes(Plane::Partition);
}

#[derive(Clone, Copy)]
enum Plane {
    /// Each write creates stream `doubt-<i>`.
    Metadata,
    /// Each write appends message `doubt-<i>` to partition 0 of `orders/t`.
    Partition,
}

impl Plane {
    async fn write(self, client: &IggyClient, name: &str) -> Result<(), IggyError> {
        match self {
            Plane::Metadata => client.create_stream(name).await.map(|_| ()),
            Plane::Partition => {
                let message = IggyMessage::builder()
                    .payload(name.as_bytes().to_vec().into())
                    .build()?;
                client
                    .send_messages(
                        &harness::sdk::name("orders"),
                        &harness::sdk::name("t"),
                        &Partitioning::partition_id(0),
                        &mut [message],
                    )
                    .await
                    .map(|_| ())
            }
        }
    }

    /// What node `node` holds of the writes, in order.
    fn written(self, nodes: &[Node], node: usize) -> Vec<String> {
        match self {
            Plane::Metadata => {
                let mut listed = stream_names(&nodes[node]);
                listed.retain(|n| n.starts_with("doubt-"));
                listed
            }
            Plane::Partition => messages_at(&nodes[node], 0)
                .into_iter()
                .map(|(_, payload)| String::from_utf8(payload).unwrap())
                .collect(),
        }
    }
}

/// Writes one at a time to the leader through one SDK client, cuts the
/// leader off from its peers mid-stream, waits for the others to elect a
/// leader, heals, and checks that every write was answered as done and
/// took effect exactly once.
fn cut_leader_mid_writes(plane: Plane) {
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::{Arc, Mutex};

    let (nodes, proxies) = start_cluster_with_proxies();
    let (mut nodes, leader, runtime) = with_orders(nodes);
    let leader_tcp = tcp_of(&nodes, leader);
    if let Plane::Partition = plane {
        runtime.block_on(create_topic_t(leader_tcp, 1));
    }
    type Answers = Arc<Mutex<Vec<(String, Result<(), IggyError>)>>>;
    let results: Answers = Arc::default();
    let stop = Arc::new(AtomicBool::new(false));
    let writer = {
        let (results, stop) = (results.clone(), stop.clone());
        std::thread::spawn(move || {
            let runtime = sdk_runtime();
            runtime.block_on(async {
                let client = harness::sdk::root_client(leader_tcp).await;
                let mut i = 0;
                while !stop.load(Ordering::SeqCst) {
                    let name = format!("doubt-{i:04}");
                    let result = plane.write(&client, &name).await;
                    results.lock().unwrap().push((name, result));
                    i += 1;
                }
            });
        })
    };
    let written = || results.lock().unwrap().len();
    eventually("the leader answers writes", || written() >= 3);
    // Cut off mid-stream: the write in flight cannot commit on the leader
    // alone; the other two elect a new leader (with it or without it).
    for ((j, i), proxy) in &proxies {
        if usize::from(*j) == leader || usize::from(*i) == leader {
            proxy.cut();
        }
    }
    let at_cut = written();
    let survivors: Vec<usize> = (0..nodes.len()).filter(|&i| i != leader).collect();
    eventually("the majority elects a leader", || {
        survivors.iter().any(|&i| {
            try_token(&nodes[i]).is_some_and(|token| {
                let path = "/stats?consistency=linearizable";
                request(nodes[i].http, "GET", path, Some(&token), None).status == 200
            })
        })
    });
    assert!(
        written() <= at_cut + 1,
        "a cut-off leader acknowledged writes"
    );
    for proxy in proxies.values() {
        proxy.heal();
    }
    eventually("the writes go on after the heal", || {
        written() >= at_cut + 3
    });
    stop.store(true, Ordering::SeqCst);
    writer.join().unwrap();

    let results = results.lock().unwrap();
    for (name, result) in results.iter() {
        assert!(result.is_ok(), "write {name} answered {result:?}");
    }
    let expected: Vec<String> = results.iter().map(|(n, _)| n.clone()).collect();
    for node in 0..nodes.len() {
        eventually(
            &format!("node {node} holds each acknowledged write once"),
            || plane.written(&nodes, node) == expected,
        );
    }
    for node in &mut nodes {
        let (status, _) = node.server.take().unwrap().stop();
        assert!(status.success());
    }
}

/// A follower forwards a login to the leader, which commits it, but
/// everything the leader sends the follower (its prepare, its commits,
/// its answer) is held up. The follower's forward expires (its view
/// changes when the leader's heartbeats stop, or 5 s pass) and it looks
/// for the session's Register in its own log: once it holds the op
/// committed (from the new view, or from the leader when the link flows
/// again) it answers the login done. It used to answer 57 at expiry,
/// leaving a registered session no connection owned.
#[test]
fn given_a_forwarded_login_whose_answer_is_held_up_when_it_committed_should_answer_it_done() {
    let (nodes, proxies) = start_cluster_with_proxies();
    let (nodes, leader, _runtime) = with_orders(nodes);
    let follower = (leader + 1) % nodes.len();
    let (low, high) = (leader.min(follower), leader.max(follower));
    let proxy = &proxies[&(low as u8, high as u8)];
    proxy.hold_towards(follower == low, true);
    let tcp = tcp_of(&nodes, follower);
    let started = Instant::now();
    let login = std::thread::spawn(move || {
        let runtime = sdk_runtime();
        runtime.block_on(async {
            let client = harness::sdk::tcp_client(tcp).await;
            let result = client.login_user("iggy", "iggy").await.map(|_| ());
            (result, started.elapsed())
        })
    });
    std::thread::sleep(Duration::from_secs(7));
    proxy.hold_towards(follower == low, false);
    let (result, waited) = login.join().unwrap();
    assert!(
        result.is_ok(),
        "the login through the follower, answered after {waited:?}: {result:?}"
    );
}

/// The members of group `g` of `orders`/`t`, read through node `via`
/// (the SDK follows the leader), or `None` while no leader answers.
fn group_members(runtime: &tokio::runtime::Runtime, nodes: &[Node], via: usize) -> Option<u32> {
    runtime.block_on(async {
        let read = async {
            let client = harness::sdk::tcp_client(tcp_of(nodes, via)).await;
            client.login_user("iggy", "iggy").await.ok()?;
            let (stream, topic) = (harness::sdk::name("orders"), harness::sdk::name("t"));
            let group = client
                .get_consumer_group(&stream, &topic, &harness::sdk::name("g"))
                .await
                .ok()??;
            Some(group.members_count)
        };
        tokio::time::timeout(Duration::from_secs(5), read)
            .await
            .ok()?
    })
}

/// A root client through `tcp` that joined group `g` of `orders`/`t`
/// (creating the group first when `create`).
async fn join_group_g(tcp: std::net::SocketAddr, create: bool) -> IggyClient {
    let client = harness::sdk::root_client(tcp).await;
    let (stream, topic) = (harness::sdk::name("orders"), harness::sdk::name("t"));
    if create {
        client
            .create_consumer_group(&stream, &topic, "g")
            .await
            .unwrap();
    }
    client
        .join_consumer_group(&stream, &topic, &harness::sdk::name("g"))
        .await
        .unwrap();
    client
}

/// Ten-second client heartbeats: a lost node's sessions end after 12 s.
const HEARTBEAT_10S: &str = "[heartbeat]\ninterval = \"10 s\"\n\n";

/// Sessions whose connections went with their node end (they would hold
/// consumer-group partitions for ever): a node that restarts ends its own
/// sessions of the run before once it has caught up, and the leader ends
/// those of a node whose link stays down for 1.2 heartbeat intervals
/// (replication spec §7.4).
#[test]
fn given_group_members_on_a_killed_leader_when_it_restarts_or_stays_down_should_end_their_sessions()
{
    let (mut nodes, leader, runtime) = with_orders(start_cluster(HEARTBEAT_10S));
    let join = |runtime: &tokio::runtime::Runtime, nodes: &[Node], via: usize, create: bool| {
        let client = runtime.block_on(join_group_g(tcp_of(nodes, via), create));
        // The session stays open: its connection dies with the node.
        std::mem::forget(client);
    };
    runtime.block_on(create_topic_t(tcp_of(&nodes, leader), 2));
    join(&runtime, &nodes, leader, true);
    assert_eq!(group_members(&runtime, &nodes, leader), Some(1));

    // The leader is killed and restarted: it ends its old session itself.
    nodes[leader].server.take().unwrap().kill();
    let node = &mut nodes[leader];
    node.server = Some(TestServer::start(&node.workdir, &node.options));
    let second = create_stream(&nodes, "after-restart");
    eventually(
        "the restarted node ended its sessions of the run before",
        || group_members(&runtime, &nodes, second) == Some(0),
    );

    // A member on the new leader; the leader is killed and stays down.
    join(&runtime, &nodes, second, false);
    assert_eq!(group_members(&runtime, &nodes, second), Some(1));
    nodes[second].server.take().unwrap().kill();
    let third = create_stream(&nodes, "after-loss");
    assert_eq!(
        group_members(&runtime, &nodes, third),
        Some(1),
        "the lost node's session is kept while it may come back"
    );
    let lost = Instant::now();
    eventually("the leader ended the lost node's sessions", || {
        group_members(&runtime, &nodes, third) == Some(0)
    });
    assert!(
        lost.elapsed() >= Duration::from_secs(8),
        "not before its link stayed down 1.2 heartbeat intervals"
    );
}

/// A leader cut off long enough loses its sessions (the new leader ends
/// them after 1.2 heartbeat intervals); once the network heals it applies
/// those ends and closes its connections still bound to them, so their
/// clients log in again instead of acting on sessions the cluster no
/// longer has.
#[test]
fn given_an_isolated_leader_whose_sessions_were_ended_when_it_heals_should_close_their_connections()
{
    let (nodes, proxies) = start_cluster_with_proxies_and(HEARTBEAT_10S);
    let (nodes, leader, runtime) = with_orders(nodes);
    runtime.block_on(create_topic_t(tcp_of(&nodes, leader), 1));
    // The member's connection stays open on the leader, pinging it (so
    // the leader's own heartbeat verifier keeps it) until it is closed.
    let tcp = tcp_of(&nodes, leader);
    let (joined_tx, joined) = std::sync::mpsc::channel();
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let stopping = stop.clone();
    let member = std::thread::spawn(move || {
        sdk_runtime().block_on(async {
            let client = join_group_g(tcp, true).await;
            joined_tx.send(()).unwrap();
            while !stopping.load(std::sync::atomic::Ordering::Relaxed) {
                let _ = client.ping().await;
                tokio::time::sleep(Duration::from_millis(500)).await;
            }
        })
    });
    joined.recv().expect("joined");
    let leader_id = u8::try_from(leader).unwrap();
    for ((j, i), proxy) in &proxies {
        if *j == leader_id || *i == leader_id {
            proxy.cut();
        }
    }
    let others: Vec<usize> = (0..nodes.len()).filter(|&i| i != leader).collect();
    eventually("the others end the isolated leader's session", || {
        group_members(&runtime, &nodes, others[0]) == Some(0)
    });
    for proxy in proxies.values() {
        proxy.heal();
    }
    eventually(
        "the old leader closed the connection of the ended session",
        || {
            harness::output(nodes[leader].workdir.path())
                .contains("closing a connection whose session the cluster ended")
        },
    );
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    member.join().expect("the member's thread ends");
}

/// Two-second client heartbeats: a lost node's sessions end after 2.4 s.
const HEARTBEAT_2S: &str = "[heartbeat]\ninterval = \"2 s\"\n\n";

/// Sends one message, `payload`, to partition 0 of `orders`/`t` over HTTP
/// through `node` with `token`, until the node accepts it (the partition's
/// group may still be electing a primary).
fn send_over_http(node: &Node, token: &str, payload: &str) {
    use base64::Engine as _;
    let payload = base64::engine::general_purpose::STANDARD.encode(payload);
    let body = format!(
        r#"{{"partitioning":{{"kind":"partition_id","value":"AAAAAA=="}},"messages":[{{"id":0,"payload":"{payload}"}}]}}"#
    );
    let path = "/streams/orders/topics/t/messages";
    let started = Instant::now();
    loop {
        let response = request(node.http, "POST", path, Some(token), Some(body.as_bytes()));
        if matches!(response.status, 200 | 201 | 204) {
            return;
        }
        assert!(
            started.elapsed() < DEADLINE,
            "the node refused the send: {} {}",
            response.status,
            response.text()
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// An HTTP session has no socket to close: one the group ended while its
/// node was cut off past the lease (the leader ends a lost node's
/// sessions after 1.2 heartbeat intervals) leaves that node's client
/// table once the node applies the end, so the credential's next write
/// there opens a new session instead of going out under the one the
/// cluster no longer has.
#[test]
fn given_an_http_session_ended_while_its_node_was_cut_off_when_it_writes_again_should_open_a_new_session()
 {
    let (nodes, proxies) = start_cluster_with_proxies_and(HEARTBEAT_2S);
    let (nodes, leader, runtime) = with_orders(nodes);
    runtime.block_on(create_topic_t(tcp_of(&nodes, leader), 1));
    let cut_off = (leader + 1) % nodes.len();
    let node = &nodes[cut_off];
    eventually("the follower serves the topic", || {
        try_messages_at(node, 0).is_some()
    });
    // The credential's first write opens its session on this node.
    let token = root_token(node.http);
    send_over_http(node, &token, "before");
    let first = http_client_ids(node.http, &token);
    assert_eq!(first.len(), 1, "one HTTP session: {first:?}");

    let ended = || {
        harness::output(nodes[leader].workdir.path())
            .matches("ending a session no connection holds")
            .count()
    };
    let ended_before = ended();
    let cut_off_id = u8::try_from(cut_off).unwrap();
    for ((j, i), proxy) in &proxies {
        if *j == cut_off_id || *i == cut_off_id {
            proxy.cut();
        }
    }
    eventually("the leader ends the cut-off node's session", || {
        ended() > ended_before
    });
    // A stream created after the end commits behind it: once the node
    // lists the stream, it has applied the end as well.
    let others: Vec<usize> = (0..nodes.len()).filter(|&i| i != cut_off).collect();
    eventually(
        "the others commit a stream without the cut-off node",
        || {
            others.iter().any(|&i| {
                let token = root_token(nodes[i].http);
                let body = br#"{"name":"after-the-end"}"#;
                let response = request(nodes[i].http, "POST", "/streams", Some(&token), Some(body));
                matches!(response.status, 200 | 201)
            })
        },
    );
    for proxy in proxies.values() {
        proxy.heal();
    }
    eventually("the healed node applied the end of its session", || {
        stream_names(node).contains(&"after-the-end".to_owned())
    });

    send_over_http(node, &token, "after");
    let second = http_client_ids(node.http, &token);
    assert_eq!(second.len(), 1, "one HTTP session: {second:?}");
    assert_ne!(
        second, first,
        "the write after the end opened a new session"
    );
    eventually("the node serves both messages", || {
        let payloads: Vec<Vec<u8>> = messages_at(node, 0).into_iter().map(|(_, p)| p).collect();
        payloads == [b"before".to_vec(), b"after".to_vec()]
    });
}

//! Three real `iggy-server` processes replicate the metadata group: the
//! root user is created once for the cluster, a stream created on the
//! leader is on every node with the same bytes, a follower refuses metadata
//! writes naming the leader, a killed leader is replaced, and a restarted
//! node catches up from its journal, its checkpoint and its peers.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod harness;

use std::time::Instant;

use harness::TestServer;
use harness::cluster::*;
use harness::http::{request, request_with, root_token};
use iggy::prelude::*;

#[test]
fn given_three_nodes_when_metadata_is_written_should_replicate_it_and_survive_the_leader() {
    let mut nodes = start_cluster("");
    eventually("the root user exists on every node", || {
        nodes.iter().all(|node| try_token(node).is_some())
    });
    let leader = create_stream(&nodes, "orders");
    eventually("every node lists the stream", || {
        nodes.iter().all(|node| stream_names(node) == ["orders"])
    });
    let created: Vec<serde_json::Value> = nodes
        .iter()
        .map(|node| {
            let token = root_token(node.http);
            request(node.http, "GET", "/streams/orders", Some(&token), None).json()["created_at"]
                .clone()
        })
        .collect();
    assert!(
        created.windows(2).all(|w| w[0] == w[1]),
        "the same bytes everywhere: {created:?}"
    );

    // A linearizable read on a follower is redirected to the leader (HTTP
    // API spec §16.1); the leader serves it.
    let follower = (leader + 1) % usize::from(NODES);
    let token = root_token(nodes[follower].http);
    let path = "/streams?consistency=linearizable";
    let response = request(nodes[follower].http, "GET", path, Some(&token), None);
    assert_eq!(response.status, 307, "{}", response.text());
    assert_eq!(
        response.header("location"),
        Some(format!("http://{}{path}", nodes[leader].http).as_str())
    );
    let view = response.header("iggy-view").expect("the view").to_owned();
    let token = root_token(nodes[leader].http);
    let response = request(nodes[leader].http, "GET", path, Some(&token), None);
    assert_eq!(response.status, 200, "{}", response.text());
    assert_eq!(
        response.header("iggy-view"),
        Some(view.as_str()),
        "the leader's answers carry the view it leads"
    );

    // A client of a follower logs in over the binary protocol (its
    // Register is forwarded to the leader) and reads the replicated state.
    let tcp = nodes[follower].server.as_ref().unwrap().tcp();
    let runtime = sdk_runtime();
    let names = runtime.block_on(async {
        let client = harness::sdk::root_client(tcp).await;
        let streams = client.get_streams().await.unwrap();
        client.logout_user().await.unwrap();
        streams.into_iter().map(|s| s.name).collect::<Vec<_>>()
    });
    assert_eq!(names, ["orders"]);

    // A follower refuses, naming the leader (nothing recorded: code 58).
    let token = root_token(nodes[follower].http);
    let response = request(
        nodes[follower].http,
        "POST",
        "/streams",
        Some(&token),
        Some(br#"{"name":"x"}"#),
    );
    assert_ne!(response.status, 201, "a follower does not commit metadata");
    assert_eq!(
        response.json()["id"],
        58,
        "transient, not accepted: {}",
        response.text()
    );

    // The leader dies; the others elect and serve writes.
    nodes[leader].server.take().unwrap().kill();
    let new_leader = create_stream(&nodes, "after-failover");
    assert_ne!(new_leader, leader);

    // The old leader restarts on its data and catches up.
    let node = &mut nodes[leader];
    node.server = Some(TestServer::start(&node.workdir, &node.options));
    eventually("the restarted node caught up", || {
        stream_names(&nodes[leader]) == ["after-failover", "orders"]
    });
}

#[test]
fn given_metadata_checkpoints_when_a_node_restarts_should_boot_from_its_checkpoint() {
    // 256 journal slots: a checkpoint every 192 ops.
    let mut nodes = start_cluster("[metadata]\njournal_slots = 256\n\n");
    eventually("the root user exists on every node", || {
        nodes.iter().all(|node| try_token(node).is_some())
    });
    let leader = create_stream(&nodes, "s-0");
    let token = root_token(nodes[leader].http);
    let names: Vec<String> = (1..220).map(|i| format!("s-{i}")).collect();
    for name in &names {
        let body = format!(r#"{{"name":"{name}"}}"#);
        let response = request(
            nodes[leader].http,
            "POST",
            "/streams",
            Some(&token),
            Some(body.as_bytes()),
        );
        assert!(matches!(response.status, 200 | 201), "{}", response.text());
    }
    let follower = (leader + 1) % usize::from(NODES);
    eventually("the follower applied every stream", || {
        stream_names(&nodes[follower]).len() == 220
    });
    nodes[follower].server.take().unwrap().kill();
    let node = &mut nodes[follower];
    node.server = Some(TestServer::start(&node.workdir, &node.options));
    eventually("the restarted follower lists every stream again", || {
        stream_names(&nodes[follower]).len() == 220
    });
    let log = harness::output(nodes[follower].workdir.path());
    assert!(
        log.contains("metadata checkpoint installed"),
        "it booted from its checkpoint"
    );
}

/// Soak (`IGGY_CLUSTER_SOAK=<rounds>`, off in the suite): each round kills
/// a random node with SIGKILL, writes a stream through whichever node
/// leads, restarts the killed node, and checks that every node converges
/// on the same streams; it prints how long each round's write waited for
/// a leader (the failover time when the leader was the one killed).
#[test]
fn given_soak_rounds_when_nodes_are_killed_and_restarted_should_lose_no_stream() {
    let Some(rounds) = std::env::var("IGGY_CLUSTER_SOAK")
        .ok()
        .and_then(|v| v.parse::<u32>().ok())
    else {
        return;
    };
    let mut nodes = start_cluster("");
    eventually("the root user exists on every node", || {
        nodes.iter().all(|node| try_token(node).is_some())
    });
    let mut expected = Vec::new();
    let mut seed = 0x9E37_79B9_7F4A_7C15_u64;
    let mut leader = create_stream(&nodes, "round-start");
    expected.push("round-start".to_owned());
    for round in 0..rounds {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        // Every other round the leader dies; else a random node.
        let victim = if round % 2 == 0 {
            leader
        } else {
            (seed % u64::from(NODES)) as usize
        };
        nodes[victim].server.take().unwrap().kill();
        let name = format!("round-{round}");
        let started = Instant::now();
        leader = create_stream(&nodes, &name);
        println!(
            "round {round}: killed node {victim}, node {leader} took the write after {:?}",
            started.elapsed()
        );
        expected.push(name);
        let node = &mut nodes[victim];
        node.server = Some(TestServer::start(&node.workdir, &node.options));
        let mut sorted = expected.clone();
        sorted.sort();
        eventually(&format!("round {round}: every node converged"), || {
            nodes.iter().all(|node| stream_names(node) == sorted)
        });
    }
}

/// With a shared key for tokens (here the cluster PSK), a follower
/// forwards control-plane writes and linearizable reads to the leader and
/// relays its answers (HTTP API spec §16.2); one hop only.
#[test]
fn given_a_shared_token_key_when_a_follower_gets_a_write_should_forward_it_to_the_leader() {
    let nodes = start_cluster(
        "[cluster.auth]\nenabled = true\n\
         shared_secret = \"a shared secret of at least thirty-two bytes\"\n\n",
    );
    eventually("the root user exists on every node", || {
        nodes.iter().all(|node| try_token(node).is_some())
    });
    let mut leader = None;
    eventually("a leader is known", || {
        let token = root_token(nodes[0].http);
        let response = request(nodes[0].http, "GET", "/streams", Some(&token), None);
        leader = response
            .header("iggy-view")
            .and_then(|view| view.parse::<usize>().ok())
            .map(|view| view % usize::from(NODES));
        response.status == 200 && leader.is_some()
    });
    let leader = leader.unwrap();
    let follower = (leader + 1) % usize::from(NODES);
    // A token minted on the follower; the leader verifies it too.
    let token = root_token(nodes[follower].http);
    let body = br#"{"name":"forwarded"}"#;
    let response = request(
        nodes[follower].http,
        "POST",
        "/streams",
        Some(&token),
        Some(body),
    );
    assert!(
        response.status == 200 || response.status == 201,
        "forwarded and committed: {} {}",
        response.status,
        response.text()
    );
    assert_eq!(response.json()["name"], "forwarded");
    eventually("every node lists the forwarded stream", || {
        nodes.iter().all(|node| stream_names(node) == ["forwarded"])
    });
    // A linearizable read of a forwardable route is answered by the leader
    // through the follower, not redirected.
    let path = "/streams?consistency=linearizable";
    let response = request(nodes[follower].http, "GET", path, Some(&token), None);
    assert_eq!(response.status, 200, "{}", response.text());
    assert_eq!(response.json()[0]["name"], "forwarded");
    assert!(response.header("iggy-view").is_some(), "the leader's view");
    // A non-forwardable linearizable read is still redirected.
    let response = request(
        nodes[follower].http,
        "GET",
        "/stats?consistency=linearizable",
        Some(&token),
        None,
    );
    assert_eq!(response.status, 307, "{}", response.text());
    // Bad credentials are refused on the follower itself.
    let response = request(
        nodes[follower].http,
        "POST",
        "/streams",
        Some("not-a-token"),
        Some(br#"{"name":"refused"}"#),
    );
    assert_eq!(response.status, 401, "{}", response.text());
    // A request forwarded once that reaches a follower is not forwarded
    // again.
    let response = request_with(
        nodes[follower].http,
        "POST",
        "/streams",
        &[("iggy-forwarded", "1")],
        Some(&token),
        Some(br#"{"name":"second-hop"}"#),
    );
    assert_eq!(response.status, 503, "{}", response.text());
    assert_eq!(response.json()["id"], 58);
    assert_eq!(stream_names(&nodes[leader]), ["forwarded"]);
}

/// `cluster.tls` with `self_signed`: the replica links run TLS 1.3 under
/// the PSK handshake, and metadata and messages replicate over them (a
/// send is acknowledged only once a second node journaled it).
#[test]
fn given_tls_on_the_replica_links_when_writing_should_replicate_over_them() {
    let nodes = start_cluster(
        "[cluster.auth]\nenabled = true\n\
         shared_secret = \"a shared secret of at least thirty-two bytes\"\n\n\
         [cluster.tls]\nenabled = true\nself_signed = true\n\n",
    );
    eventually("the root user exists on every node", || {
        nodes.iter().all(|node| try_token(node).is_some())
    });
    let (nodes, leader, runtime) = with_orders(nodes);
    eventually("every node lists the stream", || {
        nodes.iter().all(|node| stream_names(node) == ["orders"])
    });
    runtime.block_on(async {
        create_topic_t(tcp_of(&nodes, leader), 1).await;
        send_to(tcp_of(&nodes, leader), 0, "sealed", 10)
            .await
            .unwrap();
    });
    let messages = runtime.block_on(messages_on(tcp_of(&nodes, leader), 0));
    assert_eq!(messages.len(), 10);
    let log = std::fs::read_to_string(nodes[leader].workdir.data().join("logs/iggy-server.log"))
        .unwrap_or_default();
    assert!(
        !log.contains("replica handshake"),
        "no refused handshake:\n{log}"
    );
}

/// A roster of one is a cluster whose groups have one replica: the node
/// leads every group, serves the SDK, and keeps what it acknowledged across
/// a SIGTERM and a SIGKILL.
#[test]
fn given_a_cluster_of_one_when_writing_and_restarting_should_serve_and_keep_everything() {
    let ports = reserve_ports()[..1].to_vec();
    let config = config(&ports, "");
    let (mut nodes, leader, runtime) = with_orders(start_nodes(&ports, |_| config.clone()));
    assert_eq!(leader, 0, "the only node leads");
    let tcp = tcp_of(&nodes, 0);
    runtime.block_on(async {
        create_topic_t(tcp, 2).await;
        send_to(tcp, 0, "a", 30).await.unwrap();
        send_to(tcp, 1, "b", 20).await.unwrap();
        let client = harness::sdk::root_client(tcp).await;
        store_offset_t(&client, 7, 11).await;
        let metadata = client.get_cluster_metadata().await.unwrap();
        assert_eq!(metadata.nodes.len(), 1, "{metadata:?}");
        assert_eq!(
            metadata.nodes[0].role,
            ClusterNodeRole::Leader,
            "{metadata:?}"
        );
    });
    let tagged = |tag: &str, first: u64, count: u32| -> Vec<(u64, Vec<u8>)> {
        (0..count)
            .map(|i| (first + u64::from(i), format!("{tag}-{i}").into_bytes()))
            .collect()
    };
    let first_partition = tagged("a", 0, 30);
    let mut second_partition = tagged("b", 0, 20);
    for stop in ["term", "kill"] {
        let server = nodes[0].server.take().unwrap();
        if stop == "term" {
            let (status, _) = server.stop();
            assert!(status.success(), "SIGTERM exits 0: {status:?}");
        } else {
            server.kill();
        }
        let node = &mut nodes[0];
        node.server = Some(TestServer::start(&node.workdir, &node.options));
        let tcp = tcp_of(&nodes, 0);
        eventually(
            &format!("the node serves its messages after a {stop}"),
            || {
                runtime.block_on(async {
                    messages_on(tcp, 0).await == first_partition
                        && messages_on(tcp, 1).await == second_partition
                })
            },
        );
        let stored = runtime.block_on(stored_offset_on(tcp, 7));
        assert_eq!(stored, Some(11), "the stored offset after a {stop}");
        // Writes go on after the restart.
        runtime.block_on(send_to(tcp, 1, stop, 5)).unwrap();
        let next = second_partition.len() as u64;
        second_partition.extend(tagged(stop, next, 5));
        assert_eq!(runtime.block_on(messages_on(tcp, 1)), second_partition);
    }
}

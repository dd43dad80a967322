//! The HTTP REST API through the official SDK's HttpClient and through raw
//! requests: every client method, the error paths, the header rules, the
//! 413 limit, one engine shared with TCP, and `/metrics`.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod harness;

use std::net::SocketAddr;

use harness::http::{http_clients, request, request_with, root_token};
use harness::sdk::{id, name, root_client};
use harness::{ServerOptions, TestServer, Workdir};
use iggy::prelude::*;

async fn http_client(addr: SocketAddr) -> HttpClient {
    let client = HttpClient::new(&format!("http://{addr}")).unwrap();
    client
        .login_user(harness::ROOT_USERNAME, harness::ROOT_PASSWORD)
        .await
        .unwrap();
    client
}

fn start_with(env: &[(&str, &str)]) -> (Workdir, TestServer, SocketAddr) {
    let workdir = Workdir::new();
    let mut options = ServerOptions::default();
    for (k, v) in env {
        options.env.insert((*k).to_owned(), (*v).to_owned());
    }
    let server = TestServer::start(&workdir, &options);
    let http = server.address("http").expect("HTTP is served");
    (workdir, server, http)
}

fn start() -> (Workdir, TestServer, SocketAddr) {
    start_with(&[])
}

fn message(payload: &str, headers: Option<(&str, &str)>) -> IggyMessage {
    let payload: bytes::Bytes = payload.to_owned().into_bytes().into();
    match headers {
        Some((k, v)) => {
            let mut map = std::collections::BTreeMap::new();
            map.insert(
                HeaderKey::try_from(k).unwrap(),
                HeaderValue::try_from(v).unwrap(),
            );
            IggyMessage::builder()
                .payload(payload)
                .user_headers(map)
                .build()
                .unwrap()
        }
        None => IggyMessage::builder().payload(payload).build().unwrap(),
    }
}

fn http_status<T: std::fmt::Debug>(result: Result<T, IggyError>) -> u16 {
    match result.expect_err("the server refuses this") {
        IggyError::HttpResponseError(status, _) => status,
        IggyError::Unauthenticated => 401,
        IggyError::Unauthorized => 403,
        IggyError::ResourceNotFound(_) => 404,
        other => panic!("unexpected error {other:?}"),
    }
}

#[tokio::test]
async fn sdk_http_client_manages_streams_topics_partitions_and_groups() {
    let (_workdir, _server, addr) = start();
    let client = http_client(addr).await;
    client.ping().await.unwrap();

    let stream = client.create_stream("orders").await.unwrap();
    assert_eq!((stream.id, stream.name.as_str()), (0, "orders"));
    assert_eq!(http_status(client.create_stream("orders").await), 400);
    assert!(client.get_stream(&name("nope")).await.unwrap().is_none());
    client
        .update_stream(&name("orders"), "orders2", &StreamUpdateOptions::default())
        .await
        .unwrap();
    assert_eq!(client.get_streams().await.unwrap()[0].name, "orders2");

    let options = TopicCreateOptions {
        partitions_count: Some(2),
        message_expiry: Some(IggyExpiry::ExpireDuration(IggyDuration::from(
            3_600_000_000,
        ))),
        ..TopicCreateOptions::default()
    };
    let topic = client.create_topic(&id(0), "t", &options).await.unwrap();
    assert_eq!((topic.id, topic.partitions_count), (0, 2));
    assert_eq!(
        topic.message_expiry,
        IggyExpiry::ExpireDuration(IggyDuration::from(3_600_000_000))
    );
    assert_eq!(
        http_status(client.create_topic(&id(0), "t", &options).await),
        400
    );
    assert!(
        client
            .get_topic(&id(0), &name("x"))
            .await
            .unwrap()
            .is_none()
    );
    assert_eq!(client.get_topics(&id(0)).await.unwrap().len(), 1);

    client.create_partitions(&id(0), &id(0), 3).await.unwrap();
    assert_eq!(
        client
            .get_topic(&id(0), &id(0))
            .await
            .unwrap()
            .unwrap()
            .partitions_count,
        5
    );
    client.delete_partitions(&id(0), &id(0), 2).await.unwrap();
    let details = client.get_topic(&id(0), &id(0)).await.unwrap().unwrap();
    assert_eq!(details.partitions.len(), 3);
    client.delete_segments(&id(0), &id(0), 0, 1).await.unwrap();
    assert_eq!(
        http_status(client.delete_segments(&id(0), &id(0), 9, 1).await),
        404
    );

    let group = client
        .create_consumer_group(&id(0), &id(0), "g1")
        .await
        .unwrap();
    assert_eq!((group.id, group.name.as_str()), (0, "g1"));
    assert_eq!(
        http_status(client.create_consumer_group(&id(0), &id(0), "g1").await),
        400
    );
    assert_eq!(
        client
            .get_consumer_groups(&id(0), &id(0))
            .await
            .unwrap()
            .len(),
        1
    );
    let fetched = client
        .get_consumer_group(&id(0), &id(0), &name("g1"))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(fetched.partitions_count, 3);
    client
        .delete_consumer_group(&id(0), &id(0), &id(0))
        .await
        .unwrap();
    assert!(
        client
            .get_consumer_group(&id(0), &id(0), &id(0))
            .await
            .unwrap()
            .is_none()
    );

    client
        .update_topic(
            &id(0),
            &id(0),
            "t2",
            &TopicUpdateOptions {
                message_expiry: Some(IggyExpiry::NeverExpire),
                ..TopicUpdateOptions::default()
            },
        )
        .await
        .unwrap();
    assert_eq!(
        client
            .get_topic(&id(0), &id(0))
            .await
            .unwrap()
            .unwrap()
            .name,
        "t2"
    );
    client.purge_topic(&id(0), &id(0)).await.unwrap();
    client.delete_topic(&id(0), &id(0)).await.unwrap();
    assert!(client.get_topic(&id(0), &id(0)).await.unwrap().is_none());
    client.purge_stream(&id(0)).await.unwrap();
    client.delete_stream(&id(0)).await.unwrap();
    assert_eq!(http_status(client.delete_stream(&id(0)).await), 404);
    assert!(client.get_streams().await.unwrap().is_empty());
}

#[tokio::test]
async fn sdk_http_client_sends_and_polls_with_every_partitioning_and_strategy() {
    let (_workdir, _server, addr) = start();
    let client = http_client(addr).await;
    client.create_stream("s").await.unwrap();
    let options = TopicCreateOptions {
        partitions_count: Some(3),
        ..TopicCreateOptions::default()
    };
    client
        .create_topic(&name("s"), "t", &options)
        .await
        .unwrap();
    let (s, t) = (name("s"), name("t"));

    let mut batch: Vec<IggyMessage> = (0..10)
        .map(|i| message(&format!("p0-{i}"), Some(("k", "v"))))
        .collect();
    client
        .send_messages(&s, &t, &Partitioning::partition_id(0), &mut batch)
        .await
        .unwrap();
    let mut keyed = vec![message("keyed", None)];
    client
        .send_messages(
            &s,
            &t,
            &Partitioning::messages_key_str("user-1").unwrap(),
            &mut keyed,
        )
        .await
        .unwrap();
    for i in 0..3 {
        let mut one = vec![message(&format!("b{i}"), None)];
        client
            .send_messages(&s, &t, &Partitioning::balanced(), &mut one)
            .await
            .unwrap();
    }
    let total: u64 = client
        .get_topic(&s, &t)
        .await
        .unwrap()
        .unwrap()
        .partitions
        .iter()
        .map(|p| p.messages_count)
        .sum();
    assert_eq!(total, 14);

    let consumer = Consumer::new(id(7));
    let poll = |strategy: PollingStrategy, count: u32, commit: bool| {
        let (client, s, t, consumer) = (&client, &s, &t, &consumer);
        async move {
            client
                .poll_messages(s, t, Some(0), consumer, &strategy, count, commit)
                .await
                .unwrap()
        }
    };
    let first = poll(PollingStrategy::first(), 3, false).await;
    assert_eq!(first.messages.len(), 3);
    assert_eq!(first.messages[0].payload.as_ref(), b"p0-0");
    assert_eq!(first.messages[0].header.offset, 0);
    let headers = first.messages[0].user_headers_map().unwrap().unwrap();
    assert_eq!(
        headers
            .get(&HeaderKey::try_from("k").unwrap())
            .unwrap()
            .as_str()
            .unwrap(),
        "v"
    );
    let at = poll(PollingStrategy::offset(5), 2, false).await;
    assert_eq!(at.messages[0].header.offset, 5);
    let last = poll(PollingStrategy::last(), 1, false).await;
    assert!(last.messages.last().unwrap().header.offset >= 9);
    let ts = first.messages[0].header.timestamp;
    let by_time = poll(PollingStrategy::timestamp(ts.into()), 100, false).await;
    assert!(by_time.messages.len() >= 10);
    let next = poll(PollingStrategy::next(), 4, true).await;
    assert_eq!(next.messages[0].header.offset, 0);
    let next = poll(PollingStrategy::next(), 4, true).await;
    assert_eq!(next.messages[0].header.offset, 4);

    let stored = client
        .get_consumer_offset(&consumer, &s, &t, Some(0))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(stored.stored_offset, 7);
    client
        .store_consumer_offset(&consumer, &s, &t, Some(0), 2)
        .await
        .unwrap();
    let stored = client
        .get_consumer_offset(&consumer, &s, &t, Some(0))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(stored.stored_offset, 2);
    client
        .delete_consumer_offset(&consumer, &s, &t, Some(0))
        .await
        .unwrap();
    assert!(
        client
            .get_consumer_offset(&consumer, &s, &t, Some(0))
            .await
            .unwrap()
            .is_none()
    );
    assert_eq!(
        http_status(
            client
                .poll_messages(
                    &s,
                    &name("nope"),
                    Some(0),
                    &consumer,
                    &PollingStrategy::first(),
                    1,
                    false
                )
                .await
        ),
        404
    );
    assert_eq!(
        http_status(
            client
                .send_messages(
                    &s,
                    &t,
                    &Partitioning::partition_id(9),
                    &mut [message("x", None)]
                )
                .await
        ),
        404
    );
}

#[tokio::test]
async fn sdk_http_client_manages_users_tokens_and_permissions() {
    let (_workdir, server, addr) = start();
    let client = http_client(addr).await;
    let alice = client
        .create_user("alice", "secret-1", UserStatus::Active, None)
        .await
        .unwrap();
    assert_eq!(alice.username, "alice");
    assert_eq!(
        http_status(
            client
                .create_user("alice", "secret-1", UserStatus::Active, None)
                .await
        ),
        400
    );
    assert_eq!(http_status(client.delete_user(&id(0)).await), 400);
    assert_eq!(client.get_users().await.unwrap().len(), 2);
    assert!(client.get_user(&name("bob")).await.unwrap().is_none());

    let alice_http = HttpClient::new(&format!("http://{addr}")).unwrap();
    alice_http.login_user("alice", "secret-1").await.unwrap();
    assert_eq!(http_status(alice_http.get_streams().await), 403);
    assert_eq!(http_status(alice_http.create_stream("x").await), 403);
    let read_only = Permissions {
        global: GlobalPermissions {
            read_streams: true,
            ..GlobalPermissions::default()
        },
        streams: None,
    };
    client
        .update_permissions(&name("alice"), Some(read_only.clone()))
        .await
        .unwrap();
    assert_eq!(
        client
            .get_user(&name("alice"))
            .await
            .unwrap()
            .unwrap()
            .permissions,
        Some(read_only)
    );
    alice_http.get_streams().await.unwrap();
    assert_eq!(http_status(alice_http.create_stream("x").await), 403);
    assert!(
        client.get_streams().await.unwrap().is_empty(),
        "a denied write changes nothing"
    );

    client
        .change_password(&name("alice"), "secret-1", "secret-2")
        .await
        .unwrap();
    let fresh = HttpClient::new(&format!("http://{addr}")).unwrap();
    assert_eq!(
        http_status(fresh.login_user("alice", "secret-1").await),
        400
    );
    fresh.login_user("alice", "secret-2").await.unwrap();

    let raw = client
        .create_personal_access_token("ci-token", PersonalAccessTokenExpiry::NeverExpire)
        .await
        .unwrap();
    assert_eq!(
        http_status(
            client
                .create_personal_access_token("ci-token", PersonalAccessTokenExpiry::NeverExpire)
                .await
        ),
        400
    );
    let tokens = client.get_personal_access_tokens().await.unwrap();
    assert_eq!((tokens.len(), tokens[0].name.as_str()), (1, "ci-token"));
    let by_token = HttpClient::new(&format!("http://{addr}")).unwrap();
    let identity = by_token
        .login_with_personal_access_token(&raw.token)
        .await
        .unwrap();
    assert_eq!(identity.user_id, 0);
    by_token.create_stream("via-token").await.unwrap();
    // A raw token is accepted as the bearer too.
    let direct = request(addr, "GET", "/streams", Some(&raw.token), None);
    assert_eq!(direct.status, 200);
    let bad = HttpClient::new(&format!("http://{addr}")).unwrap();
    assert_eq!(
        http_status(bad.login_with_personal_access_token("not-a-token").await),
        401
    );
    client
        .delete_personal_access_token("ci-token")
        .await
        .unwrap();
    assert_eq!(
        request(addr, "GET", "/streams", Some(&raw.token), None).status,
        401
    );

    client
        .update_user(
            &name("alice"),
            Some("alice2"),
            Some(UserStatus::Inactive),
            &UserUpdateOptions::default(),
        )
        .await
        .unwrap();
    let renamed = client.get_user(&id(alice.id)).await.unwrap().unwrap();
    assert_eq!(
        (renamed.username.as_str(), renamed.status),
        ("alice2", UserStatus::Inactive)
    );
    client.delete_user(&name("alice2")).await.unwrap();
    assert_eq!(client.get_users().await.unwrap().len(), 1);

    // The same engine behind both transports.
    let tcp = root_client(server.tcp()).await;
    let streams = tcp.get_streams().await.unwrap();
    assert_eq!(streams.len(), 1);
    assert_eq!(streams[0].name, "via-token");
    tcp.create_stream("from-tcp").await.unwrap();
    assert!(
        client
            .get_stream(&name("from-tcp"))
            .await
            .unwrap()
            .is_some()
    );

    let refreshed = client.refresh_access_token().await.unwrap();
    assert!(!refreshed.access_token.unwrap().token.is_empty());
    client.get_streams().await.unwrap();
    client.logout_user().await.unwrap();
}

#[tokio::test]
async fn sdk_http_client_reads_system_state() {
    let (_workdir, server, addr) = start();
    let client = http_client(addr).await;
    let stats = client.get_stats().await.unwrap();
    assert_eq!(stats.process_id, server.pid() as u32);
    let metadata = client.get_cluster_metadata().await.unwrap();
    assert_eq!(metadata.nodes.len(), 1);
    let node = &metadata.nodes[0];
    assert_eq!(node.role, ClusterNodeRole::Leader);
    assert_eq!(node.endpoints.tcp, server.tcp().port());
    assert_eq!(node.endpoints.http, addr.port());

    let _tcp = root_client(server.tcp()).await;
    let clients = client.get_clients().await.unwrap();
    assert!(!clients.is_empty());
    let one = client.get_client(clients[0].client_id).await.unwrap();
    assert!(one.is_some());
    assert!(client.get_client(999_999).await.unwrap().is_none());

    let zip = client
        .snapshot(
            SnapshotCompression::Deflated,
            vec![SystemSnapshotType::ServerConfig],
        )
        .await
        .unwrap();
    assert_eq!(&zip.0[..2], b"PK");
}

#[test]
fn iggy_view_is_only_on_authenticated_successes() {
    let (_workdir, _server, addr) = start();
    let ping = request(addr, "GET", "/ping", None, None);
    assert_eq!((ping.status, ping.text().as_str()), (200, "pong"));
    assert!(ping.header("iggy-view").is_none());

    let anonymous = request(addr, "GET", "/streams", None, None);
    assert_eq!(anonymous.status, 401);
    assert!(anonymous.header("iggy-view").is_none());
    assert_eq!(anonymous.json()["code"], "access_token_missing");

    let token = root_token(addr);
    let streams = request(addr, "GET", "/streams", Some(&token), None);
    assert_eq!(streams.status, 200);
    assert_eq!(streams.header("iggy-view"), Some("0"));

    let missing = request(addr, "GET", "/streams/nope", Some(&token), None);
    assert_eq!(missing.status, 404);
    assert!(missing.header("iggy-view").is_none());
    assert_eq!(
        missing.json(),
        serde_json::json!({"id": 404, "code": "not_found", "reason": "Resource not found", "field": null})
    );
}

#[test]
fn bad_requests_get_their_status_and_change_nothing() {
    let (_workdir, _server, addr) = start_with(&[("IGGY_HTTP_MAX_REQUEST_SIZE", "1 KB")]);
    let token = root_token(addr);
    let t = Some(token.as_str());

    assert_eq!(request(addr, "GET", "/no/such/route", t, None).status, 404);
    assert_eq!(request(addr, "PATCH", "/streams", t, None).status, 405);
    assert_eq!(
        request(addr, "GET", "/streams", Some("garbage-token"), None).json()["code"],
        "unauthenticated"
    );

    let bad_json = request(addr, "POST", "/streams", t, Some(b"{\"name\": "));
    assert_eq!(bad_json.status, 400);
    let wrong_type = request(addr, "POST", "/streams", t, Some(b"{\"name\": 5}"));
    assert_eq!(wrong_type.status, 422);
    assert!(wrong_type.json()["reason"].is_string());

    let big = format!("{{\"name\": \"{}\"}}", "x".repeat(2000));
    let too_large = request(addr, "POST", "/streams", t, Some(big.as_bytes()));
    assert_eq!(too_large.status, 413);
    assert_eq!(too_large.header("connection"), Some("close"));
    assert_eq!(too_large.json()["code"], "payload_too_large");

    let created = request(addr, "POST", "/streams", t, Some(b"{\"name\": \"s\"}"));
    assert_eq!(created.status, 200);
    let duplicate = request(addr, "POST", "/streams", t, Some(b"{\"name\": \"s\"}"));
    assert_eq!(duplicate.status, 400);
    assert_eq!(
        duplicate.json(),
        serde_json::json!({"id": 1012, "code": "stream_name_already_exists",
                           "reason": "Stream name already exists.", "field": "name"})
    );
    let bad_topic = request(
        addr,
        "POST",
        "/streams/s/topics",
        t,
        Some(br#"{"name": "t", "partitions_count": 1, "options": {"no_such_key": "1"}}"#),
    );
    assert_eq!(bad_topic.status, 400);
    let listed = request(addr, "GET", "/streams", t, None).json();
    assert_eq!(listed.as_array().unwrap().len(), 1);
    assert_eq!(
        listed[0]["topics_count"], 0,
        "refused requests applied nothing"
    );
    let empty_batch = request(
        addr,
        "POST",
        "/streams/s/topics/t/messages",
        t,
        Some(br#"{"partitioning": {"kind": "balanced", "value": ""}, "messages": []}"#),
    );
    assert_eq!(empty_batch.status, 400);
}

#[test]
fn expired_tokens_are_refused() {
    let (_workdir, _server, addr) = start_with(&[
        ("IGGY_HTTP_JWT_ACCESS_TOKEN_EXPIRY", "1s"),
        ("IGGY_HTTP_JWT_CLOCK_SKEW", "0s"),
    ]);
    let token = root_token(addr);
    assert_eq!(
        request(addr, "GET", "/streams", Some(&token), None).status,
        200
    );
    std::thread::sleep(std::time::Duration::from_millis(2100));
    let expired = request(addr, "GET", "/streams", Some(&token), None);
    assert_eq!(expired.status, 401);
    assert_eq!(expired.json()["code"], "unauthenticated");
    let refresh = request(
        addr,
        "POST",
        "/users/refresh-token",
        None,
        Some(format!(r#"{{"token": "{token}"}}"#).as_bytes()),
    );
    assert_eq!(refresh.status, 401);
}

/// Parses the text exposition: every sample line is `name[{labels}] value`.
fn samples(text: &str) -> Vec<(String, f64)> {
    let mut out = Vec::new();
    for line in text.lines() {
        if line.is_empty() || line.starts_with('#') {
            assert!(
                line.is_empty() || line.starts_with("# HELP ") || line.starts_with("# TYPE "),
                "bad comment line {line:?}"
            );
            continue;
        }
        let (series, value) = line.rsplit_once(' ').expect("a sample has a value");
        let value: f64 = value.parse().expect("a float value");
        let name_end = series.find('{').unwrap_or(series.len());
        let name = &series[..name_end];
        assert!(
            !name.is_empty() && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_'),
            "bad metric name {name:?}"
        );
        out.push((series.to_owned(), value));
    }
    out
}

fn sample(all: &[(String, f64)], series: &str) -> f64 {
    all.iter()
        .find(|(s, _)| s == series)
        .map_or(0.0, |(_, v)| *v)
}

#[tokio::test]
async fn metrics_parse_and_move_when_messages_flow() {
    let (_workdir, server, addr) = start();
    let token = root_token(addr);
    let anonymous = request(addr, "GET", "/metrics", None, None);
    assert_eq!(anonymous.status, 401);
    let before = request(addr, "GET", "/metrics", Some(&token), None);
    assert_eq!(before.status, 200);
    assert!(before.header("iggy-view").is_some());
    let before = samples(&before.text());

    let tcp = root_client(server.tcp()).await;
    tcp.create_stream("s").await.unwrap();
    tcp.create_topic(&name("s"), "t", &TopicCreateOptions::default())
        .await
        .unwrap();
    let mut batch: Vec<IggyMessage> = (0..25).map(|i| message(&format!("m{i}"), None)).collect();
    tcp.send_messages(
        &name("s"),
        &name("t"),
        &Partitioning::partition_id(0),
        &mut batch,
    )
    .await
    .unwrap();
    tcp.poll_messages(
        &name("s"),
        &name("t"),
        Some(0),
        &Consumer::new(id(1)),
        &PollingStrategy::first(),
        100,
        false,
    )
    .await
    .unwrap();

    let after = samples(&request(addr, "GET", "/metrics", Some(&token), None).text());
    let grew = |series: &str| sample(&after, series) - sample(&before, series);
    assert_eq!(grew("iggy_messages_received_total"), 25.0);
    assert_eq!(grew("iggy_messages_sent_total"), 25.0);
    assert!(grew("iggy_bytes_received_total") > 0.0);
    assert_eq!(
        grew("iggy_requests_total{command=\"message.send\",transport=\"tcp\"}"),
        1.0
    );
    assert_eq!(grew("iggy_send_latency_seconds_count"), 1.0);
    assert_eq!(grew("iggy_poll_latency_seconds_count"), 1.0);
    assert_eq!(sample(&after, "streams"), 1.0);
    assert_eq!(sample(&after, "topics"), 1.0);
    assert_eq!(sample(&after, "messages"), 25.0);
    assert!(sample(&after, "iggy_connections{transport=\"tcp\"}") >= 1.0);
    assert!(grew("http_requests_total") >= 1.0);
}

#[test]
fn cors_answers_preflights_and_exposes_the_view_header() {
    let (_workdir, _server, addr) = start();
    let preflight = request_with(
        addr,
        "OPTIONS",
        "/streams",
        &[
            ("Origin", "http://example.test"),
            ("Access-Control-Request-Method", "POST"),
        ],
        None,
        None,
    );
    assert_eq!(preflight.status, 200);
    assert_eq!(preflight.header("access-control-allow-origin"), Some("*"));
    assert!(
        preflight
            .header("access-control-allow-methods")
            .unwrap()
            .contains("POST")
    );
    let token = root_token(addr);
    let actual = request_with(
        addr,
        "GET",
        "/streams",
        &[("Origin", "http://example.test")],
        Some(&token),
        None,
    );
    assert_eq!(actual.status, 200);
    assert_eq!(
        actual.header("access-control-expose-headers"),
        Some("iggy-view")
    );
}

#[tokio::test]
async fn inactive_users_cannot_log_in() {
    let (_workdir, _server, addr) = start();
    let client = http_client(addr).await;
    client
        .create_user("dormant", "secret-1", UserStatus::Inactive, None)
        .await
        .unwrap();
    let login = request(
        addr,
        "POST",
        "/users/login",
        None,
        Some(br#"{"username": "dormant", "password": "secret-1"}"#),
    );
    assert_eq!(login.status, 400);
    assert_eq!(login.json()["code"], "user_inactive");
    let wrong = request(
        addr,
        "POST",
        "/users/login",
        None,
        Some(br#"{"username": "dormant", "password": "nope-nope"}"#),
    );
    assert_eq!(wrong.json()["code"], "invalid_credentials");
}

#[test]
fn a_request_head_dripping_past_the_frame_timeout_is_closed() {
    use std::io::{Read, Write};
    let (_workdir, _server, addr) = start_with(&[("IGGY_TCP_FRAME_TIMEOUT", "1 s")]);
    let mut slow = std::net::TcpStream::connect(addr).unwrap();
    slow.set_read_timeout(Some(std::time::Duration::from_secs(10)))
        .unwrap();
    slow.write_all(b"GET /ping HTTP/1.1\r\nHost: x\r\n")
        .unwrap();
    let started = std::time::Instant::now();
    let mut answer = Vec::new();
    let _ = slow.read_to_end(&mut answer);
    assert!(
        started.elapsed() < std::time::Duration::from_secs(9),
        "the server closed the stalled connection"
    );
    assert!(answer.is_empty() || answer.starts_with(b"HTTP/1.1 408"));
    assert_eq!(request(addr, "GET", "/ping", None, None).status, 200);
}

fn ok(status: u16) -> bool {
    (200..300).contains(&status)
}

#[test]
fn an_http_write_opens_a_listed_session_that_logout_ends_and_the_table_bounds() {
    // clients_table_max 4: at most 2 HTTP sessions.
    let (_workdir, _server, addr) = start_with(&[("IGGY_METADATA_CLIENTS_TABLE_MAX", "4")]);
    let first = root_token(addr);
    // Reads open nothing.
    assert!(http_clients(addr, &first).is_empty());
    let created = request(
        addr,
        "POST",
        "/streams",
        Some(&first),
        Some(br#"{"name":"a"}"#),
    );
    assert_eq!(created.status, 200, "{}", created.text());
    let listed = http_clients(addr, &first);
    assert_eq!(listed.len(), 1, "{listed:?}");
    assert_eq!(listed[0]["user_id"], 0);
    // Later writes with the same token reuse the session.
    let created = request(
        addr,
        "POST",
        "/streams",
        Some(&first),
        Some(br#"{"name":"b"}"#),
    );
    assert_eq!(created.status, 200, "{}", created.text());
    assert_eq!(http_clients(addr, &first).len(), 1);

    let second = root_token(addr);
    let third = root_token(addr);
    let purge = |token: &str| request(addr, "DELETE", "/streams/a/purge", Some(token), None);
    assert!(ok(purge(&second).status));
    assert_eq!(http_clients(addr, &first).len(), 2);
    let refused = purge(&third);
    assert_eq!(refused.status, 503, "{}", refused.text());

    // Logout frees a slot; the token itself still works and, on its next
    // write, opens a new session.
    let logout = request(addr, "DELETE", "/users/logout", Some(&first), None);
    assert!(ok(logout.status));
    assert_eq!(http_clients(addr, &second).len(), 1);
    assert!(ok(purge(&third).status));
    assert_eq!(http_clients(addr, &second).len(), 2);
}

#[test]
fn an_http_session_ends_when_its_token_expires() {
    let (_workdir, _server, addr) = start_with(&[("IGGY_HTTP_JWT_ACCESS_TOKEN_EXPIRY", "2 s")]);
    let short = root_token(addr);
    let created = request(
        addr,
        "POST",
        "/streams",
        Some(&short),
        Some(br#"{"name":"a"}"#),
    );
    assert!(ok(created.status), "{}", created.text());
    let watcher = root_token(addr);
    assert_eq!(http_clients(addr, &watcher).len(), 1);
    // Expiry is in whole seconds and the sweep runs every second.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(15);
    loop {
        std::thread::sleep(std::time::Duration::from_millis(500));
        let fresh = root_token(addr);
        if http_clients(addr, &fresh).is_empty() {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the expired token's session is still listed"
        );
    }
}

//! `iggy-mcp` over stdio against a real server, driven as an MCP client
//! drives it: the handshake, the tool list, every tool with writes enabled,
//! and the refusals of a read-only instance that logs in with a personal
//! access token read from a file.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod harness;

use harness::TestServer;
use harness::mcp::{McpStdio, PROTOCOL_VERSION};
use serde_json::{Value, json};

const ALL_WRITES: &[(&str, &str)] = &[
    ("IGGY_MCP_PERMISSIONS_CREATE", "true"),
    ("IGGY_MCP_PERMISSIONS_UPDATE", "true"),
    ("IGGY_MCP_PERMISSIONS_DELETE", "true"),
];

/// The reference's tool names, which agent configurations rely on.
const TOOL_NAMES: &[&str] = &[
    "change_password",
    "create_consumer_group",
    "create_partitions",
    "create_personal_access_token",
    "create_stream",
    "create_topic",
    "create_user",
    "delete_consumer_group",
    "delete_consumer_offset",
    "delete_partitions",
    "delete_personal_access_token",
    "delete_segments",
    "delete_stream",
    "delete_topic",
    "delete_user",
    "get_client",
    "get_clients",
    "get_cluster_metadata",
    "get_consumer_group",
    "get_consumer_groups",
    "get_consumer_offset",
    "get_me",
    "get_personal_access_tokens",
    "get_stats",
    "get_stream",
    "get_streams",
    "get_topic",
    "get_topics",
    "get_user",
    "get_users",
    "ping",
    "poll_messages",
    "purge_stream",
    "purge_topic",
    "send_messages",
    "snapshot",
    "store_consumer_offset",
    "update_permissions",
    "update_stream",
    "update_topic",
    "update_user",
];

fn properties(tool: &Value) -> Vec<String> {
    let mut names: Vec<String> = tool["inputSchema"]["properties"]
        .as_object()
        .map(|properties| properties.keys().cloned().collect())
        .unwrap_or_default();
    names.sort();
    names
}

#[test]
fn given_an_agent_over_stdio_when_it_initializes_should_see_every_tool_with_the_reference_arguments()
 {
    let server = TestServer::start();
    let mut mcp = McpStdio::start(&server, &[]);

    let init = mcp.initialize();
    assert_eq!(
        init["result"]["protocolVersion"], PROTOCOL_VERSION,
        "{init}"
    );
    assert_eq!(init["result"]["serverInfo"]["name"], "iggy-mcp");
    assert!(
        init["result"]["capabilities"]["tools"].is_object(),
        "{init}"
    );

    let tools = mcp.list_tools();
    let mut names: Vec<&str> = tools.iter().map(|t| t["name"].as_str().unwrap()).collect();
    names.sort();
    assert_eq!(names, TOOL_NAMES);
    let tool = |name: &str| tools.iter().find(|t| t["name"] == name).unwrap().clone();
    assert_eq!(
        properties(&tool("poll_messages")),
        [
            "auto_commit",
            "count",
            "offset",
            "partition_id",
            "strategy",
            "stream_id",
            "timestamp",
            "topic_id"
        ]
    );
    assert_eq!(
        properties(&tool("send_messages")),
        [
            "messages",
            "messages_key",
            "partition_id",
            "partitioning",
            "stream_id",
            "topic_id"
        ]
    );
    assert_eq!(
        properties(&tool("create_topic")),
        [
            "compression_algorithm",
            "max_size",
            "message_expiry",
            "name",
            "options",
            "partitions_count",
            "stream_id"
        ]
    );
    assert_eq!(tool("get_streams")["annotations"]["readOnlyHint"], true);
    assert_eq!(
        tool("delete_stream")["annotations"]["destructiveHint"],
        true
    );

    let ping = mcp.request("ping", json!({}));
    assert!(ping["result"].is_object(), "{ping}");
    assert!(mcp.close().success());
}

#[test]
fn given_writes_enabled_when_an_agent_runs_every_tool_should_operate_the_server() {
    let server = TestServer::start();
    let mut mcp = McpStdio::start(&server, ALL_WRITES);
    mcp.initialize();

    streams_and_topics(&mut mcp);
    messages_and_offsets(&mut mcp);
    consumer_groups(&mut mcp);
    users_and_tokens(&mut mcp);
    system(&mut mcp);
    teardown(&mut mcp);
}

fn streams_and_topics(mcp: &mut McpStdio) {
    let created = mcp
        .call("create_stream", json!({ "name": "orders" }))
        .json();
    assert_eq!(created["name"], "orders");
    let duplicate = mcp.call("create_stream", json!({ "name": "orders" }));
    assert!(duplicate.is_error);
    assert!(
        duplicate.text.contains("already exists"),
        "{}",
        duplicate.text
    );

    let streams = mcp.call("get_streams", json!({})).json();
    assert_eq!(streams.as_array().unwrap().len(), 1, "{streams}");
    let renamed = mcp.call(
        "update_stream",
        json!({ "stream_id": "orders", "name": "sales" }),
    );
    assert_eq!(renamed.json(), json!({ "ok": true }));
    assert_eq!(
        mcp.call("get_stream", json!({ "stream_id": "sales" }))
            .json()["name"],
        "sales"
    );
    let missing = mcp.call("get_stream", json!({ "stream_id": "orders" }));
    assert!(
        missing.is_error && missing.text.contains("not found"),
        "{missing:?}"
    );

    let topic = mcp
        .call(
            "create_topic",
            json!({ "stream_id": "sales", "name": "eu", "partitions_count": 2,
                    "message_expiry": "7d", "compression_algorithm": "none" }),
        )
        .json();
    assert_eq!(topic["name"], "eu");
    mcp.call(
        "create_partitions",
        json!({ "stream_id": "sales", "topic_id": "eu", "partitions_count": 1 }),
    )
    .json();
    let topics = mcp
        .call("get_topics", json!({ "stream_id": "sales" }))
        .json();
    assert_eq!(topics[0]["partitions_count"], 3, "{topics}");
    mcp.call(
        "update_topic",
        json!({ "stream_id": "sales", "topic_id": "eu", "name": "emea", "max_size": "10 GiB" }),
    )
    .json();
    let topic = mcp
        .call(
            "get_topic",
            json!({ "stream_id": "sales", "topic_id": "emea" }),
        )
        .json();
    assert_eq!(topic["partitions"].as_array().unwrap().len(), 3, "{topic}");
}

fn messages_and_offsets(mcp: &mut McpStdio) {
    let target = json!({ "stream_id": "sales", "topic_id": "emea" });
    let send = |extra: Value, payloads: &[&str]| {
        let mut arguments = target.clone();
        arguments.as_object_mut().unwrap().extend(
            extra.as_object().unwrap().clone().into_iter().chain([(
                "messages".to_owned(),
                json!(
                    payloads
                        .iter()
                        .map(|p| json!({ "payload": p }))
                        .collect::<Vec<_>>()
                ),
            )]),
        );
        arguments
    };
    let to_partition_0: Vec<String> = (0..12).map(|i| format!("order {i}")).collect();
    let refs: Vec<&str> = to_partition_0.iter().map(String::as_str).collect();
    let sent = mcp.call("send_messages", send(json!({ "partition_id": 0 }), &refs));
    assert_eq!(sent.json()["sent"], 12);
    mcp.call(
        "send_messages",
        send(
            json!({ "partitioning": "key", "messages_key": "customer-7" }),
            &["keyed"],
        ),
    )
    .json();
    mcp.call(
        "send_messages",
        send(json!({ "partitioning": "balanced" }), &["balanced"]),
    )
    .json();
    let poll = |strategy: &str, extra: Value| {
        let mut arguments = target.clone();
        let map = arguments.as_object_mut().unwrap();
        map.insert("partition_id".to_owned(), json!(0));
        map.insert("strategy".to_owned(), json!(strategy));
        map.extend(extra.as_object().unwrap().clone());
        arguments
    };
    let first = mcp.call("poll_messages", poll("first", json!({}))).json();
    assert_eq!(first["count"], 10, "count defaults to 10: {first}");
    assert_eq!(first["messages"][0]["payload"], "order 0");
    let at = mcp
        .call(
            "poll_messages",
            poll("offset", json!({ "offset": 11, "count": 5 })),
        )
        .json();
    assert_eq!(at["messages"][0]["payload"], "order 11", "{at}");
    let last = mcp
        .call("poll_messages", poll("last", json!({ "count": 1 })))
        .json();
    assert_eq!(
        last["messages"][0]["offset"], last["current_offset"],
        "{last}"
    );
    let since = mcp
        .call(
            "poll_messages",
            poll("timestamp", json!({ "timestamp": 0, "count": 3 })),
        )
        .json();
    assert_eq!(since["count"], 3, "{since}");
    let next = mcp
        .call("poll_messages", poll("next", json!({ "count": 4 })))
        .json();
    assert_eq!(next["messages"][0]["offset"], 0, "{next}");
    let committed = mcp
        .call(
            "get_consumer_offset",
            json!({ "stream_id": "sales", "topic_id": "emea", "partition_id": 0 }),
        )
        .json();
    assert_eq!(
        committed["stored_offset"], 3,
        "next commits when updates are on: {committed}"
    );

    let offset = json!({ "stream_id": "sales", "topic_id": "emea", "partition_id": 0 });
    let mut store = offset.clone();
    store["offset"] = json!(7);
    mcp.call("store_consumer_offset", store).json();
    let stored = mcp.call("get_consumer_offset", offset.clone()).json();
    assert_eq!(stored["stored_offset"], 7, "{stored}");
    mcp.call("delete_consumer_offset", offset.clone()).json();
    let gone = mcp.call("get_consumer_offset", offset);
    assert!(gone.is_error, "{gone:?}");
}

fn consumer_groups(mcp: &mut McpStdio) {
    let topic = json!({ "stream_id": "sales", "topic_id": "emea" });
    let mut create = topic.clone();
    create["name"] = json!("billing");
    let group = mcp.call("create_consumer_group", create).json();
    assert_eq!(group["name"], "billing");
    let groups = mcp.call("get_consumer_groups", topic.clone()).json();
    assert_eq!(groups.as_array().unwrap().len(), 1, "{groups}");
    let mut by_name = topic.clone();
    by_name["group_id"] = json!("billing");
    assert_eq!(
        mcp.call("get_consumer_group", by_name.clone()).json()["name"],
        "billing"
    );
    mcp.call("delete_consumer_group", by_name.clone()).json();
    assert!(mcp.call("get_consumer_group", by_name).is_error);
}

fn users_and_tokens(mcp: &mut McpStdio) {
    let user = mcp
        .call(
            "create_user",
            json!({ "username": "agent", "password": "secret-1",
                    "permissions": { "global": { "read_streams": true } } }),
        )
        .json();
    assert_eq!(user["username"], "agent");
    let users = mcp.call("get_users", json!({})).json();
    assert_eq!(
        users.as_array().unwrap().len(),
        2,
        "root and agent: {users}"
    );
    mcp.call(
        "update_user",
        json!({ "user_id": "agent", "username": "robot", "active": true }),
    )
    .json();
    mcp.call(
        "update_permissions",
        json!({ "user_id": "robot", "permissions": { "global": { "poll_messages": true } } }),
    )
    .json();
    let robot = mcp.call("get_user", json!({ "user_id": "robot" })).json();
    assert_eq!(
        robot["permissions"]["global"]["poll_messages"], true,
        "{robot}"
    );
    mcp.call(
        "change_password",
        json!({ "user_id": "robot", "current_password": "secret-1", "new_password": "secret-2" }),
    )
    .json();
    mcp.call("delete_user", json!({ "user_id": "robot" }))
        .json();
    assert!(mcp.call("get_user", json!({ "user_id": "robot" })).is_error);

    let token = mcp
        .call(
            "create_personal_access_token",
            json!({ "name": "ci-token", "expiry": "1h" }),
        )
        .json();
    assert!(
        token["token"].as_str().is_some_and(|t| !t.is_empty()),
        "{token}"
    );
    let tokens = mcp.call("get_personal_access_tokens", json!({})).json();
    assert_eq!(tokens[0]["name"], "ci-token", "{tokens}");
    mcp.call(
        "delete_personal_access_token",
        json!({ "name": "ci-token" }),
    )
    .json();
    let tokens = mcp.call("get_personal_access_tokens", json!({})).json();
    assert_eq!(tokens, json!([]));
}

fn system(mcp: &mut McpStdio) {
    assert_eq!(mcp.call("ping", json!({})).json(), json!({ "ok": true }));
    let stats = mcp.call("get_stats", json!({})).json();
    assert_eq!(stats["streams_count"], 1, "{stats}");
    let me = mcp.call("get_me", json!({})).json();
    let client_id = me["client_id"].as_u64().unwrap();
    let clients = mcp.call("get_clients", json!({})).json();
    assert!(!clients.as_array().unwrap().is_empty(), "{clients}");
    let client = mcp
        .call("get_client", json!({ "client_id": client_id }))
        .json();
    assert_eq!(client["client_id"], client_id, "{client}");
    let metadata = mcp.call("get_cluster_metadata", json!({}));
    assert!(!metadata.is_error, "{metadata:?}");
    let snapshot = mcp.call("snapshot", json!({ "types": ["test"] })).json();
    assert_eq!(snapshot["format"], "zip");
    assert!(snapshot["size_bytes"].as_u64().unwrap() > 0, "{snapshot}");
}

fn teardown(mcp: &mut McpStdio) {
    let topic = json!({ "stream_id": "sales", "topic_id": "emea" });
    let mut segments = topic.clone();
    segments["partition_id"] = json!(0);
    segments["segments_count"] = json!(1);
    let deleted = mcp.call("delete_segments", segments);
    assert!(
        !deleted.is_error || deleted.text.contains("iggy error"),
        "{deleted:?}"
    );
    let mut partitions = topic.clone();
    partitions["partitions_count"] = json!(1);
    mcp.call("delete_partitions", partitions).json();
    mcp.call("purge_topic", topic.clone()).json();
    mcp.call("delete_topic", topic).json();
    mcp.call("purge_stream", json!({ "stream_id": "sales" }))
        .json();
    mcp.call("delete_stream", json!({ "stream_id": "sales" }))
        .json();
    assert_eq!(mcp.call("get_streams", json!({})).json(), json!([]));
}

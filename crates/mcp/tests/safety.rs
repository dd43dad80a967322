//! The safety model end to end: a default (read-only) `iggy-mcp` answers
//! reads and refuses every write class without touching the server; each
//! class opens alone; a personal access token read from a file logs in.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod harness;

use harness::TestServer;
use harness::mcp::McpStdio;
use serde_json::json;

#[test]
fn given_a_read_only_mcp_logged_in_with_a_token_file_when_an_agent_writes_should_refuse() {
    let server = TestServer::start();
    let mut admin = McpStdio::start(&server, &[("IGGY_MCP_PERMISSIONS_CREATE", "true")]);
    admin.initialize();
    admin
        .call("create_stream", json!({ "name": "audit" }))
        .json();
    let topic = json!({ "stream_id": "audit", "name": "events", "partitions_count": 1 });
    admin.call("create_topic", topic).json();
    let token = admin
        .call("create_personal_access_token", json!({ "name": "reader" }))
        .json()["token"]
        .as_str()
        .unwrap()
        .to_owned();
    let dir = tempfile::tempdir().unwrap();
    let token_file = dir.path().join("iggy.pat");
    std::fs::write(&token_file, format!("{token}\n")).unwrap();
    let token_reference = format!("file:{}", token_file.display());

    let mut reader = McpStdio::start(
        &server,
        &[
            ("IGGY_MCP_IGGY_TOKEN", &token_reference),
            ("IGGY_MCP_IGGY_PASSWORD", "not-the-password"),
        ],
    );
    reader.initialize();
    let streams = reader.call("get_streams", json!({})).json();
    assert_eq!(streams[0]["name"], "audit", "{streams}");

    let target = json!({ "stream_id": "audit", "topic_id": "events" });
    let mut send = target.clone();
    send["messages"] = json!([{ "payload": "x" }]);
    let mut commit = target.clone();
    commit["auto_commit"] = json!(true);
    let mut store = target.clone();
    store["offset"] = json!(0);
    let refusals = [
        ("create_stream", json!({ "name": "other" }), "create"),
        ("send_messages", send, "create"),
        (
            "update_stream",
            json!({ "stream_id": "audit", "name": "x" }),
            "update",
        ),
        ("store_consumer_offset", store, "update"),
        ("poll_messages", commit, "update"),
        ("purge_topic", target.clone(), "delete"),
        ("delete_stream", json!({ "stream_id": "audit" }), "delete"),
    ];
    for (tool, arguments, class) in refusals {
        let reply = reader.call(tool, arguments);
        assert!(reply.is_error, "{tool} must be refused: {}", reply.text);
        assert!(
            reply
                .text
                .contains(&format!("'{class}' operations are disabled")),
            "{tool}: {}",
            reply.text
        );
    }
    let still_there = reader
        .call("get_stream", json!({ "stream_id": "audit" }))
        .json();
    assert_eq!(still_there["name"], "audit");
    let polled = reader.call("poll_messages", target).json();
    assert_eq!(polled["count"], 0, "a read-only poll still reads: {polled}");

    // The admin instance has create but not delete.
    let reply = admin.call("delete_stream", json!({ "stream_id": "audit" }));
    assert!(
        reply.is_error && reply.text.contains("'delete'"),
        "{}",
        reply.text
    );
}

#[test]
fn given_a_wrong_password_when_starting_should_exit_with_the_servers_refusal() {
    let server = TestServer::start();
    let mut mcp = McpStdio::start(&server, &[("IGGY_MCP_IGGY_PASSWORD", "wrong")]);
    let status = mcp.wait_for_exit();
    assert!(!status.success());
    let log = mcp.log();
    assert!(log.contains("refused the password login"), "{log}");
}

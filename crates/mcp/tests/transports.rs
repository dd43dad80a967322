//! `iggy-mcp` reaches the server over each of the SDK's transports: QUIC,
//! HTTP and WebSocket in the clear (QUIC is always TLS, with the server's
//! self-signed certificate), and TCP with TLS.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod harness;

use harness::TestServer;
use harness::mcp::McpStdio;
use serde_json::json;

/// Connects over `transport` with `env`, then checks that the tools answer
/// and that the server saw this client on that transport.
fn assert_served_over(server: &TestServer, transport: &str, env: &[(&str, &str)]) {
    let mut mcp = McpStdio::start(server, env);
    mcp.initialize();
    assert_eq!(mcp.call("ping", json!({})).json(), json!({ "ok": true }));
    assert_eq!(mcp.call("get_stats", json!({})).json()["streams_count"], 0);
    let me = mcp.call("get_me", json!({}));
    if transport == "http" {
        // The SDK's HTTP client has no session to describe; the tool says so.
        assert!(
            me.is_error && me.text.contains("feature_unavailable"),
            "{me:?}"
        );
    } else {
        let me = me.json();
        let seen = me["transport"]
            .as_str()
            .unwrap_or_default()
            .to_ascii_lowercase();
        assert!(seen.contains(transport), "{transport}: {me}");
    }
    assert_eq!(mcp.call("get_streams", json!({})).json(), json!([]));
}

#[test]
fn given_each_sdk_transport_when_iggy_mcp_connects_should_serve_tools() {
    let server = TestServer::start();
    let quic = server.address("quic").to_string();
    assert_served_over(
        &server,
        "quic",
        &[
            ("IGGY_MCP_IGGY_TRANSPORT", "quic"),
            ("IGGY_MCP_IGGY_ADDRESS", &quic),
            ("IGGY_MCP_IGGY_TLS_DOMAIN", "localhost"),
            ("IGGY_MCP_IGGY_TLS_VALIDATE_CERTIFICATE", "false"),
        ],
    );
    let http = format!("http://{}", server.address("http"));
    assert_served_over(
        &server,
        "http",
        &[
            ("IGGY_MCP_IGGY_TRANSPORT", "http"),
            ("IGGY_MCP_IGGY_ADDRESS", &http),
        ],
    );
    let websocket = server.address("websocket").to_string();
    assert_served_over(
        &server,
        "websocket",
        &[
            ("IGGY_MCP_IGGY_TRANSPORT", "ws"),
            ("IGGY_MCP_IGGY_ADDRESS", &websocket),
        ],
    );
}

#[test]
fn given_a_tls_tcp_listener_when_iggy_mcp_connects_with_tls_should_serve_tools() {
    let server = TestServer::start_with(&[("IGGY_TCP_TLS_ENABLED", "true")]);
    let tcp = format!("localhost:{}", server.address("tcp").port());
    assert_served_over(
        &server,
        "tcp",
        &[
            ("IGGY_MCP_IGGY_ADDRESS", &tcp),
            ("IGGY_MCP_IGGY_TLS_ENABLED", "true"),
            ("IGGY_MCP_IGGY_TLS_DOMAIN", "localhost"),
            ("IGGY_MCP_IGGY_TLS_VALIDATE_CERTIFICATE", "false"),
        ],
    );
}

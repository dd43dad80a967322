//! `iggy-mcp` over Streamable HTTP: the listener answers only requests that
//! carry its bearer token, on its path; with the token, an MCP session runs
//! as over stdio.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod harness;

use harness::TestServer;
use harness::mcp::{McpHttp, http_exchange};
use serde_json::json;

const TOKEN: &str = "test-bearer-7f3a";

#[test]
fn given_the_http_transport_when_a_request_lacks_the_token_should_answer_401() {
    let server = TestServer::start();
    let mcp = McpHttp::start(&server, TOKEN, &[]);
    let initialize = json!({
        "jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": { "protocolVersion": "2025-06-18", "capabilities": {},
                    "clientInfo": { "name": "t", "version": "0" } }
    });
    let refused = [
        None,
        Some("Bearer wrong-token"),
        Some("Basic dGVzdDp0ZXN0"),
        Some("test-bearer-7f3a"),
    ];
    for authorization in refused {
        let reply = mcp.post(authorization, &initialize);
        assert_eq!(reply.status, 401, "{authorization:?}: {reply:?}");
        assert_eq!(reply.header("www-authenticate"), Some("Bearer"));
    }
    let tools_list = json!({ "jsonrpc": "2.0", "id": 2, "method": "tools/list" });
    assert_eq!(mcp.post(None, &tools_list).status, 401);

    let elsewhere = http_exchange(
        mcp.address,
        "POST",
        "/other",
        &[("Authorization".to_owned(), format!("Bearer {TOKEN}"))],
        &initialize.to_string(),
    );
    assert_eq!(elsewhere.status, 404);
}

#[test]
fn given_the_token_when_an_agent_uses_http_should_run_a_session_like_stdio() {
    let server = TestServer::start();
    let mut mcp = McpHttp::start(&server, TOKEN, &[("IGGY_MCP_HTTP_PATH", "/agents/mcp")]);
    assert_eq!(mcp.path, "/agents/mcp");

    let init = mcp.initialize();
    assert_eq!(init["result"]["serverInfo"]["name"], "iggy-mcp", "{init}");
    let tools = mcp.request("tools/list", json!({}));
    assert_eq!(tools["result"]["tools"].as_array().unwrap().len(), 41);

    assert_eq!(mcp.call("ping", json!({})).json(), json!({ "ok": true }));
    assert_eq!(mcp.call("get_streams", json!({})).json(), json!([]));
    let nowhere = json!({ "stream_id": "nowhere", "topic_id": "t", "partition_id": 0 });
    let missing = mcp.call("poll_messages", nowhere);
    assert!(missing.is_error, "{missing:?}");
    assert!(missing.text.contains("iggy error"), "{}", missing.text);
    let refused = mcp.call("create_stream", json!({ "name": "x" }));
    assert!(
        refused.is_error && refused.text.contains("'create'"),
        "{refused:?}"
    );
}

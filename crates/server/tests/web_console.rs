//! The web console over plain HTTP (issue 19): served under /ui with the
//! right media types and policy, no credential needed to load it, unknown
//! assets 404, and `http.web_ui = false` turns it off. Also the console's
//! additions to the API: a consumer group's offsets and lag, and a
//! partition's segments.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod harness;

use std::net::SocketAddr;

use harness::http::{request, root_token};
use harness::sdk::{name, root_client};
use harness::{ServerOptions, TestServer, Workdir};
use iggy::prelude::*;

const CSP: &str = "default-src 'self'";

fn start(options: ServerOptions) -> (Workdir, TestServer, SocketAddr) {
    let workdir = Workdir::new();
    let server = TestServer::start(&workdir, &options);
    let http = server.address("http").expect("HTTP is served");
    (workdir, server, http)
}

#[test]
fn given_the_default_config_when_loading_the_console_should_serve_typed_assets_without_credentials()
{
    let (_workdir, _server, http) = start(ServerOptions::default());
    let cases = [
        ("/ui/", "text/html; charset=utf-8", "<!doctype html>"),
        ("/ui/index.html", "text/html; charset=utf-8", "js/app.js"),
        ("/ui/style.css", "text/css; charset=utf-8", ":root"),
        ("/ui/js/app.js", "text/javascript; charset=utf-8", "import"),
        (
            "/ui/js/pages/messages.js",
            "text/javascript; charset=utf-8",
            "export",
        ),
        ("/ui/favicon.svg", "image/svg+xml", "<svg"),
    ];
    for (path, content_type, start) in cases {
        let response = request(http, "GET", path, None, None);
        assert_eq!(response.status, 200, "{path}");
        assert_eq!(
            response.header("content-type"),
            Some(content_type),
            "{path}"
        );
        assert_eq!(
            response.header("content-security-policy"),
            Some(CSP),
            "{path}"
        );
        assert_eq!(response.header("x-content-type-options"), Some("nosniff"));
        assert!(response.text().contains(start), "{path} holds {start}");
    }
}

#[test]
fn given_the_console_when_asked_for_unknown_assets_or_bare_path_should_404_or_redirect() {
    let (_workdir, _server, http) = start(ServerOptions::default());
    for path in [
        "/ui/nope.js",
        "/ui/js/",
        "/ui/../Cargo.toml",
        "/ui/js/pages/none.js",
    ] {
        let response = request(http, "GET", path, None, None);
        assert_eq!(response.status, 404, "{path}");
        assert_eq!(response.header("content-security-policy"), Some(CSP));
    }
    let bare = request(http, "GET", "/ui", None, None);
    assert_eq!(bare.status, 308);
    assert_eq!(bare.header("location"), Some("/ui/"));
    let post = request(http, "POST", "/ui/", None, Some(b"{}"));
    assert_eq!(post.status, 405);
    assert_eq!(request(http, "GET", "/uix", None, None).status, 404);
}

#[test]
fn given_web_ui_false_when_loading_the_console_should_answer_404() {
    let options = ServerOptions::default().env("IGGY_HTTP_WEB_UI", "false");
    let (_workdir, _server, http) = start(options);
    for path in ["/ui", "/ui/", "/ui/js/app.js"] {
        let response = request(http, "GET", path, None, None);
        assert_eq!(response.status, 404, "{path}");
        assert_eq!(response.header("content-security-policy"), None);
    }
    assert_eq!(request(http, "GET", "/ping", None, None).status, 200);
}

#[test]
fn given_the_console_when_its_api_calls_have_no_credential_should_refuse_them() {
    let (_workdir, _server, http) = start(ServerOptions::default());
    assert_eq!(request(http, "GET", "/ui/", None, None).status, 200);
    for path in ["/stats", "/clients", "/streams", "/users"] {
        assert_eq!(request(http, "GET", path, None, None).status, 401, "{path}");
    }
}

#[tokio::test]
async fn given_a_group_with_a_stored_offset_when_reading_offsets_and_segments_should_report_lag_and_ranges()
 {
    let (_workdir, server, http) = start(ServerOptions::default());
    let client = root_client(server.tcp()).await;
    client.create_stream("s").await.unwrap();
    let options = TopicCreateOptions {
        partitions_count: Some(2),
        ..TopicCreateOptions::default()
    };
    client
        .create_topic(&name("s"), "t", &options)
        .await
        .unwrap();
    let mut messages: Vec<IggyMessage> = (0..5)
        .map(|i| {
            IggyMessage::builder()
                .payload(format!("m{i}").into_bytes().into())
                .build()
                .unwrap()
        })
        .collect();
    client
        .send_messages(
            &name("s"),
            &name("t"),
            &Partitioning::partition_id(0),
            &mut messages,
        )
        .await
        .unwrap();
    client
        .create_consumer_group(&name("s"), &name("t"), "g")
        .await
        .unwrap();
    client
        .join_consumer_group(&name("s"), &name("t"), &name("g"))
        .await
        .unwrap();
    let group = Consumer::group(name("g"));
    client
        .store_consumer_offset(&group, &name("s"), &name("t"), Some(0), 1)
        .await
        .unwrap();

    let token = root_token(http);
    let path = "/streams/s/topics/t/consumer-groups/g/offsets";
    let response = request(http, "GET", path, Some(&token), None);
    assert_eq!(response.status, 200, "{}", response.text());
    let lines = response.json();
    assert_eq!(lines[0]["partition_id"], 0);
    assert_eq!(lines[0]["current_offset"], 4);
    assert_eq!(lines[0]["stored_offset"], 1);
    assert_eq!(lines[0]["lag"], 3);
    assert_eq!(lines[1]["partition_id"], 1);
    assert!(lines[1]["stored_offset"].is_null());
    assert_eq!(lines[1]["lag"], 0);

    let by_id = request(
        http,
        "GET",
        "/streams/0/topics/0/consumer-groups/0/offsets",
        Some(&token),
        None,
    );
    assert_eq!(by_id.json(), lines);
    let missing = request(
        http,
        "GET",
        "/streams/s/topics/t/consumer-groups/nope/offsets",
        Some(&token),
        None,
    );
    assert_eq!(missing.status, 404);
    let anonymous = request(http, "GET", path, None, None);
    assert_eq!(anonymous.status, 401);

    let segments = request(
        http,
        "GET",
        "/streams/s/topics/t/partitions/0/segments",
        Some(&token),
        None,
    );
    assert_eq!(segments.status, 200, "{}", segments.text());
    let segments = segments.json();
    assert_eq!(segments.as_array().unwrap().len(), 1);
    assert_eq!(segments[0]["start_offset"], 0);
    assert_eq!(segments[0]["end_offset"], 4);
    assert_eq!(segments[0]["messages_count"], 5);
    assert_eq!(segments[0]["sealed"], false);
    assert!(segments[0]["size_bytes"].as_u64().unwrap() > 0);
    let empty = request(
        http,
        "GET",
        "/streams/s/topics/t/partitions/1/segments",
        Some(&token),
        None,
    );
    assert!(empty.json()[0]["end_offset"].is_null());
    let missing = request(
        http,
        "GET",
        "/streams/s/topics/t/partitions/9/segments",
        Some(&token),
        None,
    );
    assert_eq!(missing.status, 404);
}

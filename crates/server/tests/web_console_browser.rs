//! The web console in a real headless Chromium (issue 19): sign in through
//! the form, create a stream and a topic through the forms and check them
//! through the HTTP API, find messages sent by the SDK in the message
//! browser (an HTML payload stays text and runs nothing), send one from
//! the console, create a user and a token, and sign out. Every page is
//! saved as a screenshot under target/ui-screenshots/ for a person to look
//! at.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod harness;

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::PathBuf;

use harness::http::{request, root_token};
use harness::sdk::{name, root_client};
use harness::webdriver::{Browser, missing};
use harness::{ServerOptions, TestServer, Workdir};
use iggy::prelude::*;

const HOSTILE: &str = "<img src=x onerror=alert(1)>";

fn screenshots() -> PathBuf {
    let target = std::env::var_os("CARGO_TARGET_DIR").map_or_else(
        || PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../target"),
        PathBuf::from,
    );
    target.join("ui-screenshots")
}

fn message(payload: &str, headers: &[(&str, HeaderValue)]) -> IggyMessage {
    let mut map = BTreeMap::new();
    for (key, value) in headers {
        map.insert(HeaderKey::try_from(*key).unwrap(), value.clone());
    }
    let builder = IggyMessage::builder().payload(payload.to_owned().into_bytes().into());
    if map.is_empty() {
        builder.build().unwrap()
    } else {
        builder.user_headers(map).build().unwrap()
    }
}

/// Messages, a consumer group with a member and a committed offset, all
/// made through the SDK over TCP. The client stays connected (a member).
async fn produce(tcp: SocketAddr) -> IggyClient {
    let client = root_client(tcp).await;
    let mut messages = vec![
        message(
            "hello console",
            &[("trace", HeaderValue::try_from("abc-123").unwrap())],
        ),
        message(
            r#"{"amount":42,"currency":"EUR"}"#,
            &[("attempt", HeaderValue::from(7u32))],
        ),
        message(HOSTILE, &[]),
    ];
    client
        .send_messages(
            &name("orders"),
            &name("payments"),
            &Partitioning::partition_id(0),
            &mut messages,
        )
        .await
        .unwrap();
    client
        .create_consumer_group(&name("orders"), &name("payments"), "billing")
        .await
        .unwrap();
    client
        .join_consumer_group(&name("orders"), &name("payments"), &name("billing"))
        .await
        .unwrap();
    client
}

struct Console<'a> {
    browser: &'a Browser,
    dir: PathBuf,
}

impl Console<'_> {
    fn shot(&self, name: &str) {
        self.browser.screenshot(&self.dir, name);
    }

    fn sign_in(&self) {
        let b = self.browser;
        b.fill(&b.input("Username"), harness::ROOT_USERNAME);
        b.fill(&b.input("Password"), harness::ROOT_PASSWORD);
        b.click(&b.button("Sign in"));
        b.wait("//h1[normalize-space(.)='Overview']");
        b.text("Connected clients");
    }

    fn create_stream(&self, stream: &str) {
        let b = self.browser;
        b.click(&b.link("Streams"));
        b.click(&b.button("Create stream"));
        b.fill(&b.input("Name"), stream);
        b.click(&b.button("Create"));
        b.link(stream);
    }

    fn create_topic(&self, topic: &str, partitions: u32) {
        let b = self.browser;
        b.click(&b.button("Create topic"));
        b.fill(&b.input("Name"), topic);
        b.fill(&b.input("Partitions"), &partitions.to_string());
        b.fill(&b.input("Message expiry"), "7 days");
        b.choose(&b.input("Durability"), "Persisted (fsync on quorum)");
        b.click(&b.button("Create"));
        b.link(topic);
    }
}

#[tokio::test]
async fn given_a_browser_when_using_the_console_should_manage_and_browse_safely() {
    if let Some(reason) = missing() {
        harness::skip(&reason);
        return;
    }
    let workdir = Workdir::new();
    let server = TestServer::start(&workdir, &ServerOptions::default());
    let http = server.address("http").expect("HTTP is served");
    let browser = Browser::start();
    let console = Console {
        browser: &browser,
        dir: screenshots(),
    };
    let b = &browser;

    b.goto(&format!("http://{http}/ui/"));
    b.button("Sign in");
    console.shot("01-sign-in");
    console.sign_in();
    b.link("Overview");
    b.link("Users");
    console.shot("02-overview");

    console.create_stream("orders");
    let token = root_token(http);
    let stream = request(http, "GET", "/streams/orders", Some(&token), None);
    assert_eq!(stream.status, 200, "the stream exists: {}", stream.text());
    // A refusal reads as a sentence, inside the form.
    b.click(&b.button("Create stream"));
    b.fill(&b.input("Name"), "orders");
    b.click(&b.button("Create"));
    b.wait("//div[@role='alert'][normalize-space(.)='A stream with this name already exists.']");
    console.shot("03-error-in-words");
    b.click(&b.button("Cancel"));
    // Auto-refresh shows a stream made elsewhere.
    b.choose(&b.input("Auto-refresh"), "Every 5 s");
    let audit = request(
        http,
        "POST",
        "/streams",
        Some(&token),
        Some(br#"{"name":"audit"}"#),
    );
    assert_eq!(audit.status, 200, "{}", audit.text());
    b.link("audit");
    b.choose(&b.input("Auto-refresh"), "Off");
    console.shot("03-streams");

    b.click(&b.link("orders"));
    console.create_topic("payments", 2);
    console.shot("04-stream-topics");
    let topic = request(
        http,
        "GET",
        "/streams/orders/topics/payments",
        Some(&token),
        None,
    );
    assert_eq!(topic.status, 200, "the topic exists: {}", topic.text());
    let topic = topic.json();
    assert_eq!(topic["partitions_count"], 2);
    assert_eq!(topic["message_expiry"], 7 * 86_400 * 1_000_000u64);
    assert_eq!(topic["options"]["durability"]["value"], "persisted");

    // Editing keeps the expiry it shows and sets a new size limit.
    b.click(&b.button("Edit topic payments"));
    b.input("Message expiry");
    assert_eq!(
        b.execute("return document.querySelector('input[name=expiry]').value"),
        "1w"
    );
    b.fill(&b.input("Max size"), "2 GiB");
    b.click(&b.button("Save"));
    b.text("2.00 GiB");
    let edited = request(
        http,
        "GET",
        "/streams/orders/topics/payments",
        Some(&token),
        None,
    )
    .json();
    assert_eq!(edited["max_topic_size"], 2u64 << 30);
    assert_eq!(edited["message_expiry"], 7 * 86_400 * 1_000_000u64);

    let _member = produce(server.tcp()).await;

    b.click(&b.link("payments"));
    b.link("billing");
    b.wait("//span[contains(@class,'badge')][normalize-space(.)='Active']");
    console.shot("05-topic");
    b.click(&b.link("billing"));
    b.text("Offsets and lag");
    console.shot("06-consumer-group");
    b.click(&b.link("payments"));

    b.click(&b.link("Messages"));
    b.wait("//pre[normalize-space(.)='hello console']");
    b.text("abc-123");
    let hostile = b.wait(&format!("//pre[normalize-space(.)='{HOSTILE}']"));
    assert_eq!(b.element_text(&hostile), HOSTILE);
    assert_eq!(b.alert_text(), None, "the payload ran as script");
    assert_eq!(
        b.execute("return document.documentElement.dataset.cspViolations ?? null"),
        serde_json::Value::Null,
        "the console breaks its own Content-Security-Policy"
    );
    assert_eq!(
        b.execute("return document.querySelectorAll('main img').length"),
        0
    );
    console.shot("07-messages-text");
    b.choose(&b.input("Payload as"), "JSON");
    b.wait("//pre[contains(., '\"amount\": 42')]");
    console.shot("08-messages-json");
    b.choose(&b.input("Payload as"), "Hex");
    b.wait("//pre[contains(., '68 65 6c 6c 6f')]");
    console.shot("09-messages-hex");

    b.click(&b.link("Send messages"));
    b.fill(&b.input("Payload"), "sent from the console");
    b.click(&b.button("Add header"));
    b.fill(&b.input("Header 1 key"), "source");
    b.fill(&b.input("Header 1 value"), "browser");
    b.click(&b.button("Send"));
    b.wait("//p[starts-with(normalize-space(.), 'Message sent')]");
    console.shot("10-send");
    b.click(&b.link("Messages"));
    b.wait("//pre[normalize-space(.)='sent from the console']");
    b.text("browser");

    b.click(&b.link("Users"));
    b.click(&b.button("Create user"));
    b.fill(&b.input("Username"), "alice");
    b.fill(&b.input("Password"), "secret-1");
    b.click(&b.button("Create"));
    b.click(&b.link("alice"));
    b.text("Per stream");
    b.click(&b.wait("//label[normalize-space(.)='Read streams']/input"));
    b.click(&b.wait("//input[@aria-label='Poll on orders']"));
    b.click(&b.button("Save permissions"));
    b.text("Permissions saved.");
    console.shot("11-user");
    let alice = request(http, "GET", "/users/alice", Some(&token), None);
    assert_eq!(alice.status, 200, "the user exists: {}", alice.text());
    let permissions = &alice.json()["permissions"];
    assert_eq!(permissions["global"]["read_streams"], true);
    assert_eq!(permissions["global"]["manage_servers"], false);
    assert_eq!(permissions["streams"]["0"]["poll_messages"], true);

    b.click(&b.link("Access tokens"));
    b.click(&b.button("Create token"));
    b.fill(&b.input("Name"), "ci-token");
    b.click(&b.button("Create"));
    b.text("Your new access token");
    console.shot("12-token-once");
    let secret = b.element_text(&b.wait("//p[@class='secret']"));
    assert_eq!(secret.len(), 68, "a raw token: {secret}");
    b.click(&b.button("Done"));
    b.text("ci-token");

    b.click(&b.button("Sign out"));
    b.button("Sign in");
    b.text("You have signed out.");
    assert_eq!(
        b.execute("return sessionStorage.length"),
        0,
        "the token is forgotten"
    );
    console.shot("13-signed-out");

    // The token signs in too, and it acts as the user who made it.
    b.click(&b.wait("//button[@role='radio'][normalize-space(.)='Access token']"));
    b.fill(&b.input("Personal access token"), &secret);
    b.click(&b.button("Sign in"));
    b.wait("//h1[normalize-space(.)='Overview']");
    b.wait("//span[@class='who'][normalize-space(.)='iggy']");
    b.text("TCP");
    console.shot("14-overview-signed-in-with-token");
    b.click(&b.button("Sign out"));
    b.button("Sign in");
    assert_eq!(b.alert_text(), None);
}

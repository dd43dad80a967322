//! The web console in a real headless Chromium (issue 19): sign in through
//! the form, create a stream and a topic through the forms and check them
//! through the HTTP API, find messages sent by the SDK in the message
//! browser (an HTML payload stays text and runs nothing), send one from
//! the console, create a user and grant it global, per-stream and
//! per-topic permissions, create a token, and sign out. Every page is
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
    let mut numbered: Vec<IggyMessage> = (0..30).map(|i| message(&format!("n{i}"), &[])).collect();
    client
        .send_messages(
            &name("orders"),
            &name("payments"),
            &Partitioning::partition_id(1),
            &mut numbered,
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

/// A topic `orders/ledger` of 1 MiB segments holding a few sealed ones,
/// and a group `archivists` on it that never committed an offset.
async fn ledger(client: &IggyClient) {
    let options = TopicCreateOptions {
        partitions_count: Some(1),
        segment_size: Some(IggyByteSize::from(1_048_576u64)),
        ..TopicCreateOptions::default()
    };
    client
        .create_topic(&name("orders"), "ledger", &options)
        .await
        .unwrap();
    for batch in 0..6 {
        let mut messages: Vec<IggyMessage> = (0..600)
            .map(|i| message(&format!("{batch}-{i}-{}", "x".repeat(1024)), &[]))
            .collect();
        client
            .send_messages(
                &name("orders"),
                &name("ledger"),
                &Partitioning::partition_id(0),
                &mut messages,
            )
            .await
            .unwrap();
    }
    client
        .flush_unsaved_buffer(&name("orders"), &name("ledger"), 0, false)
        .await
        .unwrap();
    client
        .create_consumer_group(&name("orders"), &name("ledger"), "archivists")
        .await
        .unwrap();
}

/// The console in the browser, with the API beside it for checks.
struct Console<'a> {
    browser: &'a Browser,
    dir: PathBuf,
    http: SocketAddr,
    /// A root bearer for checks through the API.
    token: String,
}

impl Console<'_> {
    fn shot(&self, name: &str) {
        self.browser.screenshot(&self.dir, name);
    }

    fn api_get(&self, path: &str) -> serde_json::Value {
        let response = request(self.http, "GET", path, Some(&self.token), None);
        assert_eq!(response.status, 200, "GET {path}: {}", response.text());
        response.json()
    }

    fn sign_in(&self) {
        let b = self.browser;
        b.goto(&format!("http://{}/ui/", self.http));
        b.button("Sign in");
        self.shot("01-sign-in");
        b.fill(&b.input("Username"), harness::ROOT_USERNAME);
        b.fill(&b.input("Password"), harness::ROOT_PASSWORD);
        b.click(&b.button("Sign in"));
        b.wait("//h1[normalize-space(.)='Overview']");
        b.text("Connected clients");
        b.link("Overview");
        b.link("Users");
        self.shot("02-overview");
    }

    /// Creates a stream through the form, sees a refusal in words, and
    /// sees auto-refresh bring in a stream made elsewhere.
    fn streams(&self) {
        let b = self.browser;
        b.click(&b.link("Streams"));
        b.click(&b.button("Create stream"));
        b.fill(&b.input("Name"), "orders");
        b.click(&b.button("Create"));
        b.link("orders");
        assert_eq!(self.api_get("/streams/orders")["name"], "orders");

        b.click(&b.button("Create stream"));
        b.fill(&b.input("Name"), "orders");
        b.click(&b.button("Create"));
        b.wait(
            "//div[@role='alert'][normalize-space(.)='A stream with this name already exists.']",
        );
        self.shot("03-error-in-words");
        b.click(&b.button("Cancel"));

        b.choose(&b.input("Auto-refresh"), "Every 5 s");
        let body = br#"{"name":"audit"}"#;
        let audit = request(self.http, "POST", "/streams", Some(&self.token), Some(body));
        assert_eq!(audit.status, 200, "{}", audit.text());
        b.link("audit");
        b.choose(&b.input("Auto-refresh"), "Off");
        self.shot("03-streams");
    }

    /// Creates a topic through the form, then edits it: the expiry it
    /// shows is kept and a new size limit is set.
    fn topics(&self) {
        let b = self.browser;
        b.click(&b.link("orders"));
        b.click(&b.button("Create topic"));
        b.fill(&b.input("Name"), "payments");
        b.fill(&b.input("Partitions"), "2");
        b.fill(&b.input("Message expiry"), "7 days");
        b.choose(&b.input("Durability"), "Persisted (fsync on quorum)");
        b.click(&b.button("Create"));
        b.link("payments");
        self.shot("04-stream-topics");
        let path = "/streams/orders/topics/payments";
        let topic = self.api_get(path);
        assert_eq!(topic["partitions_count"], 2);
        assert_eq!(topic["message_expiry"], WEEK_US);
        assert_eq!(topic["options"]["durability"]["value"], "persisted");

        b.click(&b.button("Edit topic payments"));
        b.input("Message expiry");
        let shown = b.execute("return document.querySelector('input[name=expiry]').value");
        assert_eq!(shown, "1w");
        b.fill(&b.input("Max size"), "2 GiB");
        b.click(&b.button("Save"));
        b.text("2.00 GiB");
        let edited = self.api_get(path);
        assert_eq!(edited["max_topic_size"], 2u64 << 30);
        assert_eq!(edited["message_expiry"], WEEK_US);
    }

    fn topic_and_group(&self) {
        let b = self.browser;
        b.click(&b.link("payments"));
        b.link("billing");
        b.wait("//span[contains(@class,'badge')][normalize-space(.)='Active']");
        self.shot("05-topic");
        b.click(&b.link("billing"));
        b.text("Offsets and lag");
        self.shot("06-consumer-group");
        b.click(&b.link("payments"));
    }

    /// Finds the SDK's messages; the HTML payload stays text.
    fn browse_messages(&self) {
        let b = self.browser;
        b.click(&b.link("Messages"));
        b.wait("//pre[normalize-space(.)='hello console']");
        b.text("abc-123");
        let hostile = b.wait(&format!("//pre[normalize-space(.)='{HOSTILE}']"));
        assert_eq!(b.element_text(&hostile), HOSTILE);
        assert_eq!(b.alert_text(), None, "the payload ran as script");
        let violations = b.execute("return document.documentElement.dataset.cspViolations ?? null");
        assert_eq!(violations, serde_json::Value::Null, "a CSP refusal");
        let images = b.execute("return document.querySelectorAll('main img').length");
        assert_eq!(images, 0);
        self.shot("07-messages-text");
        b.choose(&b.input("Payload as"), "JSON");
        b.wait("//pre[contains(., '\"amount\": 42')]");
        self.shot("08-messages-json");
        b.choose(&b.input("Payload as"), "Hex");
        b.wait("//pre[contains(., '68 65 6c 6c 6f')]");
        self.shot("09-messages-hex");
        self.page_through_messages();
    }

    /// Pages through partition 1's thirty messages by offset.
    fn page_through_messages(&self) {
        let b = self.browser;
        b.choose(&b.input("Payload as"), "Text");
        b.choose(&b.input("Partition"), "Partition 1");
        b.choose(&b.input("Start"), "Oldest messages");
        b.choose(&b.input("Page size"), "10 per page");
        b.choose(&b.input("Order"), "Oldest first");
        b.click(&b.button("Show messages"));
        b.text("Offsets 0 to 9 of partition 1 (latest offset 29).");
        b.click(&b.button("Newer"));
        b.text("Offsets 10 to 19 of partition 1 (latest offset 29).");
        b.click(&b.button("Older"));
        b.text("Offsets 0 to 9 of partition 1 (latest offset 29).");
        b.choose(&b.input("Start"), "From an offset");
        b.fill(&b.input("Offset"), "25");
        b.click(&b.button("Show messages"));
        b.text("Offsets 25 to 29 of partition 1 (latest offset 29).");
        b.wait("//pre[normalize-space(.)='n29']");
        b.choose(&b.input("Start"), "Newest messages");
        b.choose(&b.input("Partition"), "Partition 0");
        b.click(&b.button("Show messages"));
        b.wait("//pre[normalize-space(.)='hello console']");
    }

    fn send_message(&self) {
        let b = self.browser;
        b.click(&b.link("Send messages"));
        b.choose(&b.input("Partitioning"), "A partition");
        b.choose(&b.input("Partition"), "Partition 0");
        b.fill(&b.input("Payload"), "sent from the console");
        b.click(&b.button("Add header"));
        b.fill(&b.input("Header 1 key"), "source");
        b.fill(&b.input("Header 1 value"), "browser");
        b.click(&b.button("Send"));
        b.wait("//p[starts-with(normalize-space(.), 'Message sent')]");
        self.shot("10-send");
        b.click(&b.link("Messages"));
        b.wait("//pre[normalize-space(.)='sent from the console']");
        b.text("browser");
    }

    /// Deletes the oldest sealed segment of orders/ledger through the
    /// topic page; the lag of a group that never committed is then the
    /// retained messages, not every offset since 0.
    fn retention_lag(&self) {
        let b = self.browser;
        let base = "/streams/orders/topics/ledger";
        let segments = self.api_get(&format!("{base}/partitions/0/segments"));
        let segments = segments.as_array().unwrap();
        assert!(segments.len() >= 2, "a sealed segment: {segments:?}");
        assert_eq!(segments[0]["sealed"], true);
        let first_end = segments[0]["end_offset"].as_u64().unwrap();
        let total: u64 = segments
            .iter()
            .map(|s| s["messages_count"].as_u64().unwrap())
            .sum();

        b.click(&b.link("Streams"));
        b.click(&b.link("orders"));
        b.click(&b.link("ledger"));
        b.click(&b.button(&format!(
            "Delete segments of partition 0 through offset {first_end}"
        )));
        b.click(&b.wait("//dialog//button[normalize-space(.)='Delete']"));
        b.text("Segments deleted.");
        b.wait_gone(&format!(
            "//button[@aria-label='Delete segments of partition 0 through offset {first_end}']"
        ));
        let lines = self.api_get(&format!("{base}/consumer-groups/archivists/offsets"));
        let line = &lines[0];
        let retained = line["messages_count"].as_u64().unwrap();
        let current = line["current_offset"].as_u64().unwrap();
        assert_eq!(retained, total - (first_end + 1), "{line}");
        assert_eq!(current + 1, total);
        assert_eq!(line["stored_offset"], serde_json::Value::Null);

        b.click(&b.link("archivists"));
        let total_lag = b.wait(
            "//div[@class='stat'][div[normalize-space(.)='Total lag']]/div[@class='stat-value']",
        );
        let shown: String = b
            .element_text(&total_lag)
            .chars()
            .filter(char::is_ascii_digit)
            .collect();
        assert_eq!(
            shown,
            retained.to_string(),
            "lag from the first retained offset"
        );
        self.shot("10b-group-lag-after-retention");
    }

    /// Creates a user and grants global and per-stream permissions, then
    /// a topic-level one, checked through the API and by what the user may
    /// then do.
    fn users(&self) {
        let b = self.browser;
        b.click(&b.link("Users"));
        b.click(&b.button("Create user"));
        b.fill(&b.input("Username"), "alice");
        b.fill(&b.input("Password"), "secret-1");
        b.click(&b.button("Create"));
        b.click(&b.link("alice"));
        b.text("Per stream");
        b.click(&b.checkbox("Read streams"));
        b.click(&b.checkbox("Poll on orders"));
        self.save_permissions();
        let permissions = &self.api_get("/users/alice")["permissions"];
        assert_eq!(permissions["global"]["read_streams"], true);
        assert_eq!(permissions["global"]["manage_servers"], false);
        assert_eq!(permissions["streams"]["0"]["poll_messages"], true);
        assert_eq!(
            permissions["streams"]["0"]["topics"],
            serde_json::Value::Null
        );
        self.topic_permissions();
    }

    /// Saves the user page's permissions and waits for the page to show
    /// what the server kept (the picker starts over when it does).
    fn save_permissions(&self) {
        let b = self.browser;
        b.wait_gone("//div[@class='notice']");
        b.click(&b.button("Save permissions"));
        b.text("Permissions saved.");
        b.wait("//select[@name='grant-topic']/option[normalize-space(.)='Choose a stream first']");
    }

    /// Grants alice sending on orders/payments alone (no stream or global
    /// send): the API shows the topic entry and alice can now send there.
    fn topic_permissions(&self) {
        let b = self.browser;
        let alice = login(self.http, "alice", "secret-1");
        let send = |token: &str| {
            let body = br#"{"partitioning":{"kind":"balanced","value":""},"messages":[{"id":0,"payload":"ZnJvbSBhbGljZQ=="}]}"#;
            let path = "/streams/orders/topics/payments/messages";
            request(self.http, "POST", path, Some(token), Some(body)).status
        };
        assert_eq!(send(&alice), 403, "alice may not send yet");

        b.text("No topic-level permissions.");
        b.choose(&b.input("Stream"), "orders");
        b.wait("//option[normalize-space(.)='payments']");
        b.choose(&b.input("Topic"), "payments");
        b.click(&b.button("Add topic permissions"));
        b.click(&b.checkbox("Send on payments in orders"));
        b.click(&b.checkbox("Read topic on payments in orders"));
        self.save_permissions();
        let topic = &self.api_get("/users/alice")["permissions"]["streams"]["0"];
        assert_eq!(topic["poll_messages"], true, "the stream grant stays");
        assert_eq!(topic["send_messages"], false);
        let granted = &topic["topics"]["0"];
        assert_eq!(granted["send_messages"], true);
        assert_eq!(granted["read_topic"], true);
        assert_eq!(granted["manage_topic"], false);
        assert_eq!(granted["poll_messages"], false);
        assert!(
            b.checked(&b.checkbox("Send on payments in orders")),
            "shown as saved"
        );
        assert!(!b.checked(&b.checkbox("Manage topic on payments in orders")));
        self.shot("11-user-permissions");
        assert_eq!(send(&alice), 201, "the topic grant lets alice send");

        // Removing the row and saving takes the grant away again.
        b.click(&b.button("Remove permissions on payments in orders"));
        b.text("No topic-level permissions.");
        self.save_permissions();
        let stream = &self.api_get("/users/alice")["permissions"]["streams"]["0"];
        assert_eq!(stream["topics"], serde_json::Value::Null);
        assert_eq!(stream["poll_messages"], true);
        assert_eq!(send(&alice), 403, "the grant is gone");
    }

    /// Creates a personal access token; returns the secret shown once.
    fn create_token(&self) -> String {
        let b = self.browser;
        b.click(&b.link("Access tokens"));
        b.click(&b.button("Create token"));
        b.fill(&b.input("Name"), "ci-token");
        b.click(&b.button("Create"));
        b.text("Your new access token");
        self.shot("12-token-once");
        let secret = b.element_text(&b.wait("//p[@class='secret']"));
        assert_eq!(secret.len(), 68, "a raw token: {secret}");
        b.click(&b.button("Done"));
        b.text("ci-token");
        secret
    }

    fn sign_out(&self) {
        let b = self.browser;
        b.click(&b.button("Sign out"));
        b.button("Sign in");
        b.text("You have signed out.");
        let stored = b.execute("return sessionStorage.length");
        assert_eq!(stored, 0, "the token is forgotten");
    }

    /// The token signs in too, and acts as the user who made it.
    fn sign_in_with_token(&self, secret: &str) {
        let b = self.browser;
        b.click(&b.wait("//button[@role='radio'][normalize-space(.)='Access token']"));
        b.fill(&b.input("Personal access token"), secret);
        b.click(&b.button("Sign in"));
        b.wait("//h1[normalize-space(.)='Overview']");
        b.wait("//span[@class='who'][normalize-space(.)='iggy']");
        b.text("TCP");
        self.shot("14-overview-signed-in-with-token");
    }
}

/// A bearer for a user signing in through the API.
fn login(http: SocketAddr, username: &str, password: &str) -> String {
    let body = serde_json::json!({"username": username, "password": password}).to_string();
    let response = request(http, "POST", "/users/login", None, Some(body.as_bytes()));
    assert_eq!(response.status, 200, "{}", response.text());
    response.json()["access_token"]["token"]
        .as_str()
        .unwrap()
        .to_owned()
}

const WEEK_US: u64 = 7 * 86_400 * 1_000_000;

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
        http,
        token: root_token(http),
    };

    console.sign_in();
    console.streams();
    console.topics();
    let member = produce(server.tcp()).await;
    console.topic_and_group();
    console.browse_messages();
    console.send_message();
    ledger(&member).await;
    console.retention_lag();
    console.users();
    let secret = console.create_token();
    console.sign_out();
    console.shot("13-signed-out");
    console.sign_in_with_token(&secret);
    console.sign_out();
    assert_eq!(browser.alert_text(), None);
}

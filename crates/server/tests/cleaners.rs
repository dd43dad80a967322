//! Periodic cleaners through the real binary: expired personal access
//! tokens disappear and can no longer log in.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod harness;

use std::time::{Duration, Instant};

use harness::sdk::{root_client, tcp_client};
use harness::{ServerOptions, TestServer, Workdir};
use iggy::prelude::*;

#[tokio::test]
async fn given_expired_token_when_cleaner_runs_should_delete_it() {
    let workdir = Workdir::new();
    let options = ServerOptions::default().env("IGGY_PERSONAL_ACCESS_TOKEN_CLEANER_INTERVAL", "1s");
    let server = TestServer::start(&workdir, &options);
    let client = root_client(server.tcp()).await;
    let expiry = IggyExpiry::ExpireDuration(IggyDuration::from(Duration::from_secs(1)));
    let token = client
        .create_personal_access_token("short", expiry)
        .await
        .unwrap();
    client
        .create_personal_access_token("long", IggyExpiry::NeverExpire)
        .await
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(15);
    loop {
        let names: Vec<String> = client
            .get_personal_access_tokens()
            .await
            .unwrap()
            .into_iter()
            .map(|t| t.name)
            .collect();
        if names == ["long"] {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the expired token was never cleaned: {names:?}"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let other = tcp_client(server.tcp()).await;
    let err = other
        .login_with_personal_access_token(&token.token)
        .await
        .unwrap_err();
    assert_eq!(err.as_code(), 53, "{err}");
}

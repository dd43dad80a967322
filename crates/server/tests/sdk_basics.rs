//! The official SDK over TCP against the real binary: login, streams,
//! topics, messages and offsets, with their error paths.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod harness;

use harness::sdk::{id, name, read_back, root_client, tcp_client};
use harness::{ServerOptions, TestServer, Workdir};
use iggy::prelude::*;

#[tokio::test]
async fn given_fresh_server_when_logging_in_should_accept_root_and_refuse_wrong_password() {
    let workdir = Workdir::new();
    let server = TestServer::start(&workdir, &ServerOptions::default());
    let client = tcp_client(server.tcp()).await;
    let err = client
        .login_user("iggy", "wrong-password")
        .await
        .unwrap_err();
    assert_eq!(
        err.as_code(),
        IggyError::InvalidCredentials.as_code(),
        "{err}"
    );
    let identity = client.login_user("iggy", "iggy").await.unwrap();
    assert_eq!(identity.user_id, 0);
    client.ping().await.unwrap();
    let metadata = client.get_cluster_metadata().await.unwrap();
    assert_eq!(metadata.nodes.len(), 1);
    let me = client.get_me().await.unwrap();
    assert_eq!(me.user_id, Some(0));
}

#[tokio::test]
async fn given_stream_when_managing_should_create_get_update_and_delete() {
    let workdir = Workdir::new();
    let server = TestServer::start(&workdir, &ServerOptions::default());
    let client = root_client(server.tcp()).await;
    let created = client.create_stream("orders").await.unwrap();
    assert_eq!(created.id, 0);
    let err = client.create_stream("orders").await.unwrap_err();
    assert_eq!(
        err.as_code(),
        IggyError::StreamNameAlreadyExists("orders".into()).as_code(),
        "{err}"
    );
    assert!(client.get_stream(&name("missing")).await.unwrap().is_none());
    client
        .update_stream(&id(0), "orders-v2", &StreamUpdateOptions::default())
        .await
        .unwrap();
    let fetched = client
        .get_stream(&name("orders-v2"))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(fetched.id, 0);
    assert_eq!(client.get_streams().await.unwrap().len(), 1);
    client.delete_stream(&id(0)).await.unwrap();
    assert!(client.get_streams().await.unwrap().is_empty());
    let err = client.delete_stream(&id(0)).await.unwrap_err();
    assert_eq!(err.as_code(), 1009, "{err}");
}

fn message(i: u32) -> IggyMessage {
    let key = HeaderKey::try_from("index").unwrap();
    let headers = std::collections::BTreeMap::from([(key, HeaderValue::from(i))]);
    IggyMessage::builder()
        .payload(format!("message-{i}").into())
        .user_headers(headers)
        .build()
        .unwrap()
}

#[tokio::test]
async fn given_topic_when_sending_and_polling_should_return_every_message_with_offsets() {
    let workdir = Workdir::new();
    let server = TestServer::start(&workdir, &ServerOptions::default());
    let client = root_client(server.tcp()).await;
    client.create_stream("s").await.unwrap();
    let options = TopicCreateOptions {
        partitions_count: Some(3),
        ..TopicCreateOptions::default()
    };
    let topic = client
        .create_topic(&name("s"), "t", &options)
        .await
        .unwrap();
    assert_eq!(topic.partitions_count, 3);

    let mut batch: Vec<IggyMessage> = (0..10).map(message).collect();
    client
        .send_messages(
            &name("s"),
            &name("t"),
            &Partitioning::partition_id(1),
            &mut batch,
        )
        .await
        .unwrap();
    let mut more: Vec<IggyMessage> = (10..15).map(message).collect();
    client
        .send_messages(
            &name("s"),
            &name("t"),
            &Partitioning::partition_id(1),
            &mut more,
        )
        .await
        .unwrap();

    let consumer = Consumer::new(id(7));
    let polled = client
        .poll_messages(
            &name("s"),
            &name("t"),
            Some(1),
            &consumer,
            &PollingStrategy::offset(3),
            100,
            false,
        )
        .await
        .unwrap();
    assert_eq!(polled.messages.len(), 12);
    assert_eq!(polled.current_offset, 14);
    for (k, m) in polled.messages.iter().enumerate() {
        let i = k as u32 + 3;
        assert_eq!(m.header.offset, u64::from(i));
        assert_eq!(m.payload, format!("message-{i}").as_bytes());
        let headers = m.user_headers_map().unwrap().unwrap();
        assert_eq!(
            headers[&HeaderKey::try_from("index").unwrap()]
                .as_uint32()
                .unwrap(),
            i
        );
        assert!(m.header.timestamp > 0);
    }

    let last = client
        .poll_messages(
            &name("s"),
            &name("t"),
            Some(1),
            &consumer,
            &PollingStrategy::last(),
            2,
            false,
        )
        .await
        .unwrap();
    assert_eq!(
        last.messages
            .iter()
            .map(|m| m.header.offset)
            .collect::<Vec<_>>(),
        vec![13, 14]
    );

    client
        .store_consumer_offset(&consumer, &name("s"), &name("t"), Some(1), 4)
        .await
        .unwrap();
    let stored = client
        .get_consumer_offset(&consumer, &name("s"), &name("t"), Some(1))
        .await
        .unwrap()
        .unwrap();
    assert_eq!((stored.stored_offset, stored.current_offset), (4, 14));
    let next = client
        .poll_messages(
            &name("s"),
            &name("t"),
            Some(1),
            &consumer,
            &PollingStrategy::next(),
            3,
            true,
        )
        .await
        .unwrap();
    assert_eq!(
        next.messages
            .iter()
            .map(|m| m.header.offset)
            .collect::<Vec<_>>(),
        vec![5, 6, 7]
    );
    let stored = client
        .get_consumer_offset(&consumer, &name("s"), &name("t"), Some(1))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        stored.stored_offset, 7,
        "auto-commit stored the last served offset"
    );

    let empty = client
        .poll_messages(
            &name("s"),
            &name("t"),
            Some(0),
            &consumer,
            &PollingStrategy::first(),
            10,
            false,
        )
        .await
        .unwrap();
    assert!(empty.messages.is_empty());
    let err = client
        .poll_messages(
            &name("s"),
            &name("t"),
            Some(9),
            &consumer,
            &PollingStrategy::first(),
            10,
            false,
        )
        .await
        .unwrap_err();
    assert_eq!(err.as_code(), 3007, "{err}");
}

#[tokio::test]
async fn given_messages_when_restarting_should_keep_metadata_and_messages() {
    let workdir = Workdir::new();
    let server = TestServer::start(&workdir, &ServerOptions::default());
    {
        let client = root_client(server.tcp()).await;
        client.create_stream("keep").await.unwrap();
        client
            .create_topic(&name("keep"), "t", &TopicCreateOptions::default())
            .await
            .unwrap();
        let mut batch: Vec<IggyMessage> = (0..5).map(message).collect();
        client
            .send_messages(
                &name("keep"),
                &name("t"),
                &Partitioning::partition_id(0),
                &mut batch,
            )
            .await
            .unwrap();
    }
    assert!(server.stop().0.success());

    let server = TestServer::start(&workdir, &ServerOptions::default());
    let client = root_client(server.tcp()).await;
    let topic = client
        .get_topic(&name("keep"), &name("t"))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(topic.messages_count, 5);
    let polled = read_back(&client, "keep", "t", 0, PollingStrategy::first(), 10).await;
    assert_eq!(polled.messages.len(), 5);
    assert_eq!(polled.messages[4].payload, "message-4".as_bytes());
}

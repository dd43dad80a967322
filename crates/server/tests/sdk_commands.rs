//! Every remaining command of the protocol through the official SDK TCP
//! client, with its error paths: topics, partitions, segments, stream purge,
//! consumer offsets, system reads, users, personal access tokens and
//! consumer groups. Errors are compared by number against the wire spec.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod harness;

use std::time::{Duration, Instant};

use harness::sdk::{id, name, root_client, tcp_client};
use harness::{ServerOptions, TestServer, Workdir};
use iggy::prelude::*;

const MIB: u64 = 1 << 20;
const STREAM_NOT_FOUND: u32 = 1009;
const TOPIC_NOT_FOUND: u32 = 2010;
const TOPIC_NAME_EXISTS: u32 = 2013;
const PARTITION_NOT_FOUND: u32 = 3007;
const CONSUMER_OFFSET_NOT_FOUND: u32 = 3021;
const INVALID_OFFSET: u32 = 4100;
const UNAUTHORIZED: u32 = 41;
const USER_ALREADY_EXISTS: u32 = 46;
const CANNOT_DELETE_USER: u32 = 48;
const PAT_ALREADY_EXISTS: u32 = 51;
const INVALID_PAT: u32 = 53;
const GROUP_NOT_FOUND: u32 = 5000;
const GROUP_NAME_EXISTS: u32 = 5004;
const GROUP_MEMBER_NOT_FOUND: u32 = 5006;
const RELEASE_TIMEOUT: Duration = Duration::from_secs(5);

fn assert_code<T: std::fmt::Debug>(result: Result<T, IggyError>, code: u32) {
    let err = result.expect_err("the server refuses this");
    assert_eq!(err.as_code(), code, "{err}");
}

fn messages(count: u32, payload_bytes: usize) -> Vec<IggyMessage> {
    (0..count)
        .map(|i| {
            let mut payload = format!("m{i}-").into_bytes();
            payload.resize(payload_bytes.max(payload.len()), b'x');
            IggyMessage::builder()
                .payload(payload.into())
                .build()
                .unwrap()
        })
        .collect()
}

async fn send(client: &IggyClient, stream: &str, topic: &str, partition: u32, count: u32) {
    client
        .send_messages(
            &name(stream),
            &name(topic),
            &Partitioning::partition_id(partition),
            &mut messages(count, 16),
        )
        .await
        .unwrap();
}

async fn topic(client: &IggyClient, stream: &str, topic: &str) -> TopicDetails {
    client
        .get_topic(&name(stream), &name(topic))
        .await
        .unwrap()
        .expect("topic exists")
}

async fn start() -> (Workdir, TestServer, IggyClient) {
    let workdir = Workdir::new();
    let server = TestServer::start(&workdir, &ServerOptions::default());
    let client = root_client(server.tcp()).await;
    (workdir, server, client)
}

async fn create_topic(client: &IggyClient, stream: &str, topic: &str, partitions: u32) {
    let options = TopicCreateOptions {
        partitions_count: Some(partitions),
        ..TopicCreateOptions::default()
    };
    client
        .create_topic(&name(stream), topic, &options)
        .await
        .unwrap();
}

#[tokio::test]
async fn given_stream_when_managing_topics_should_apply_options_and_report_errors() {
    let (_workdir, _server, client) = start().await;
    client.create_stream("s").await.unwrap();
    let hour = IggyExpiry::ExpireDuration(IggyDuration::from(3_600_000_000));
    let options = TopicCreateOptions {
        partitions_count: Some(2),
        message_expiry: Some(hour),
        max_topic_size: Some(MaxTopicSize::Custom(IggyByteSize::from(64 * MIB))),
        segment_size: Some(IggyByteSize::from(2 * MIB)),
        ..TopicCreateOptions::default()
    };
    let created = client
        .create_topic(&name("s"), "t", &options)
        .await
        .unwrap();
    assert_eq!((created.id, created.name.as_str()), (0, "t"));
    assert_eq!(created.partitions_count, 2);
    assert_eq!(created.partitions.len(), 2);
    assert_eq!(created.message_expiry, hour);
    assert_eq!(
        created.max_topic_size,
        MaxTopicSize::Custom(IggyByteSize::from(64 * MIB))
    );
    let parsed = TopicCreateOptions::from_resource_options(&created.options);
    assert_eq!(parsed.segment_size, Some(IggyByteSize::from(2 * MIB)));

    let by_id = client.get_topic(&name("s"), &id(0)).await.unwrap().unwrap();
    assert_eq!(by_id.name, "t");
    assert_eq!(by_id.message_expiry, hour);
    assert!(
        client
            .get_topic(&name("s"), &name("nope"))
            .await
            .unwrap()
            .is_none()
    );
    assert!(
        client
            .get_topic(&name("nope"), &name("t"))
            .await
            .unwrap()
            .is_none()
    );
    assert_eq!(client.get_topics(&name("s")).await.unwrap().len(), 1);

    let defaults = TopicCreateOptions::default();
    let duplicate = client.create_topic(&name("s"), "t", &defaults).await;
    assert_code(duplicate, TOPIC_NAME_EXISTS);
    let orphan = client.create_topic(&name("nope"), "t", &defaults).await;
    assert_code(orphan, STREAM_NOT_FOUND);

    let update = TopicUpdateOptions {
        message_expiry: Some(IggyExpiry::NeverExpire),
        ..TopicUpdateOptions::default()
    };
    client
        .update_topic(&name("s"), &name("t"), "t2", &update)
        .await
        .unwrap();
    let updated = topic(&client, "s", "t2").await;
    assert_eq!(updated.id, 0);
    assert_eq!(updated.message_expiry, IggyExpiry::NeverExpire);
    assert_eq!(
        updated.max_topic_size,
        MaxTopicSize::Custom(IggyByteSize::from(64 * MIB)),
        "absent keys keep their value"
    );

    send(&client, "s", "t2", 0, 5).await;
    send(&client, "s", "t2", 1, 3).await;
    assert_eq!(topic(&client, "s", "t2").await.messages_count, 8);
    client.purge_topic(&name("s"), &name("t2")).await.unwrap();
    let purged = topic(&client, "s", "t2").await;
    assert_eq!(purged.messages_count, 0);
    assert_eq!(purged.partitions_count, 2, "purge keeps the partitions");

    client.delete_topic(&name("s"), &name("t2")).await.unwrap();
    assert!(
        client
            .get_topic(&name("s"), &id(0))
            .await
            .unwrap()
            .is_none()
    );
    assert_code(
        client.delete_topic(&name("s"), &name("t2")).await,
        TOPIC_NOT_FOUND,
    );
    assert_code(
        client.purge_topic(&name("s"), &name("t2")).await,
        TOPIC_NOT_FOUND,
    );
}

#[tokio::test]
async fn given_topic_when_adding_and_removing_partitions_should_change_the_count() {
    let (_workdir, _server, client) = start().await;
    client.create_stream("s").await.unwrap();
    create_topic(&client, "s", "t", 3).await;
    client
        .create_partitions(&name("s"), &name("t"), 2)
        .await
        .unwrap();
    let grown = topic(&client, "s", "t").await;
    assert_eq!(grown.partitions_count, 5);
    let ids: Vec<u32> = grown.partitions.iter().map(|p| p.id).collect();
    assert_eq!(ids, vec![0, 1, 2, 3, 4]);
    send(&client, "s", "t", 4, 2).await;

    client
        .delete_partitions(&name("s"), &name("t"), 2)
        .await
        .unwrap();
    let shrunk = topic(&client, "s", "t").await;
    assert_eq!(shrunk.partitions_count, 3);
    assert_eq!(
        shrunk.messages_count, 0,
        "the removed partition took its messages"
    );
    let poll = client
        .poll_messages(
            &name("s"),
            &name("t"),
            Some(4),
            &Consumer::new(id(1)),
            &PollingStrategy::first(),
            1,
            false,
        )
        .await;
    assert_code(poll, PARTITION_NOT_FOUND);
    assert_code(
        client
            .create_partitions(&name("s"), &name("missing"), 1)
            .await,
        TOPIC_NOT_FOUND,
    );
}

#[tokio::test]
async fn given_sealed_segments_when_deleting_segments_should_drop_the_oldest() {
    let (_workdir, _server, client) = start().await;
    client.create_stream("s").await.unwrap();
    let options = TopicCreateOptions {
        partitions_count: Some(1),
        segment_size: Some(IggyByteSize::from(MIB)),
        ..TopicCreateOptions::default()
    };
    client
        .create_topic(&name("s"), "t", &options)
        .await
        .unwrap();
    for _ in 0..6 {
        client
            .send_messages(
                &name("s"),
                &name("t"),
                &Partitioning::partition_id(0),
                &mut messages(600, 1024),
            )
            .await
            .unwrap();
    }
    // Rollover happens when batches reach the segment file; flushing first
    // makes the segment count settled rather than about to change.
    client
        .flush_unsaved_buffer(&name("s"), &name("t"), 0, false)
        .await
        .unwrap();
    let before = topic(&client, "s", "t").await.partitions[0].clone();
    assert!(before.segments_count >= 3, "{before:?}");

    client
        .delete_segments(&name("s"), &name("t"), 0, 1)
        .await
        .unwrap();
    let after = topic(&client, "s", "t").await.partitions[0].clone();
    assert_eq!(after.segments_count, before.segments_count - 1);
    assert!(after.messages_count < before.messages_count);
    assert_eq!(after.current_offset, before.current_offset);
    let first = client
        .poll_messages(
            &name("s"),
            &name("t"),
            Some(0),
            &Consumer::new(id(1)),
            &PollingStrategy::first(),
            1,
            false,
        )
        .await
        .unwrap();
    assert!(
        first.messages[0].header.offset > 0,
        "the oldest segment is gone"
    );
    assert_code(
        client.delete_segments(&name("s"), &name("t"), 9, 1).await,
        PARTITION_NOT_FOUND,
    );
}

#[tokio::test]
async fn given_stream_with_messages_when_purging_should_empty_every_topic() {
    let (_workdir, _server, client) = start().await;
    client.create_stream("s").await.unwrap();
    create_topic(&client, "s", "a", 2).await;
    create_topic(&client, "s", "b", 1).await;
    send(&client, "s", "a", 1, 4).await;
    send(&client, "s", "b", 0, 6).await;
    let stream = client.get_stream(&name("s")).await.unwrap().unwrap();
    assert_eq!(stream.messages_count, 10);

    client.purge_stream(&name("s")).await.unwrap();
    let stream = client.get_stream(&name("s")).await.unwrap().unwrap();
    assert_eq!(stream.messages_count, 0);
    assert_eq!(stream.topics_count, 2, "purge keeps the topics");
    send(&client, "s", "b", 0, 1).await;
    assert_code(client.purge_stream(&name("nope")).await, STREAM_NOT_FOUND);
}

#[tokio::test]
async fn given_partition_when_managing_consumer_offsets_should_validate_them() {
    let (_workdir, _server, client) = start().await;
    client.create_stream("s").await.unwrap();
    create_topic(&client, "s", "t", 2).await;
    let consumer = Consumer::new(id(5));
    let (s, t) = (name("s"), name("t"));
    assert_code(
        client
            .store_consumer_offset(&consumer, &s, &t, Some(0), 0)
            .await,
        INVALID_OFFSET,
    );
    send(&client, "s", "t", 0, 10).await;
    assert!(
        client
            .get_consumer_offset(&consumer, &s, &t, Some(0))
            .await
            .unwrap()
            .is_none()
    );

    client
        .store_consumer_offset(&consumer, &s, &t, Some(0), 6)
        .await
        .unwrap();
    let stored = client
        .get_consumer_offset(&consumer, &s, &t, Some(0))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        (
            stored.partition_id,
            stored.stored_offset,
            stored.current_offset
        ),
        (0, 6, 9)
    );
    assert_code(
        client
            .store_consumer_offset(&consumer, &s, &t, Some(0), 10)
            .await,
        INVALID_OFFSET,
    );
    assert_code(
        client
            .store_consumer_offset(&consumer, &s, &t, Some(1), 0)
            .await,
        INVALID_OFFSET,
    );

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
    assert_code(
        client
            .delete_consumer_offset(&consumer, &s, &t, Some(0))
            .await,
        CONSUMER_OFFSET_NOT_FOUND,
    );
}

#[tokio::test]
async fn given_messages_when_flushing_should_accept_and_keep_them() {
    let (_workdir, _server, client) = start().await;
    client.create_stream("s").await.unwrap();
    create_topic(&client, "s", "t", 1).await;
    send(&client, "s", "t", 0, 3).await;
    client
        .flush_unsaved_buffer(&name("s"), &name("t"), 0, true)
        .await
        .unwrap();
    client
        .flush_unsaved_buffer(&name("s"), &name("t"), 0, false)
        .await
        .unwrap();
    assert_eq!(topic(&client, "s", "t").await.messages_count, 3);
    assert_code(
        client
            .flush_unsaved_buffer(&name("s"), &name("t"), 7, true)
            .await,
        PARTITION_NOT_FOUND,
    );
}

#[tokio::test]
async fn given_activity_when_reading_stats_and_clients_should_reflect_it() {
    let (_workdir, server, client) = start().await;
    let before = client.get_stats().await.unwrap();
    assert_eq!(before.streams_count, 0);
    assert!(before.clients_count >= 1);

    client.create_stream("s").await.unwrap();
    create_topic(&client, "s", "t", 3).await;
    send(&client, "s", "t", 2, 7).await;
    client
        .create_consumer_group(&name("s"), &name("t"), "g")
        .await
        .unwrap();
    let other = root_client(server.tcp()).await;
    let after = client.get_stats().await.unwrap();
    assert_eq!(after.streams_count, 1);
    assert_eq!(after.topics_count, 1);
    assert_eq!(after.partitions_count, 3);
    assert_eq!(after.messages_count, 7);
    assert_eq!(after.consumer_groups_count, 1);
    assert_eq!(after.clients_count, before.clients_count + 1);
    assert!(after.segments_count >= 3);
    assert!(after.process_id > 0);

    let me = client.get_me().await.unwrap();
    let other_me = other.get_me().await.unwrap();
    assert_ne!(me.client_id, other_me.client_id);
    let clients = client.get_clients().await.unwrap();
    let ids: Vec<u32> = clients.iter().map(|c| c.client_id).collect();
    assert!(
        ids.contains(&me.client_id) && ids.contains(&other_me.client_id),
        "{ids:?}"
    );
    let fetched = client
        .get_client(other_me.client_id)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(fetched.user_id, Some(0));
    assert_eq!(fetched.transport, "TCP");
    assert!(client.get_client(u32::MAX - 1).await.unwrap().is_none());

    let specs = client.describe_options(OptionsScope::Topic).await.unwrap();
    assert!(specs.iter().any(|s| s.key == "segment_size"), "{specs:?}");
}

fn read_only_permissions() -> Permissions {
    Permissions {
        global: GlobalPermissions {
            read_streams: true,
            ..GlobalPermissions::default()
        },
        streams: None,
    }
}

#[tokio::test]
async fn given_root_when_managing_users_should_apply_changes_and_enforce_permissions() {
    let (_workdir, server, client) = start().await;
    let alice = client
        .create_user("alice", "secret-1", UserStatus::Active, None)
        .await
        .unwrap();
    assert_eq!(alice.username, "alice");
    assert!(alice.permissions.is_none());
    assert_code(
        client
            .create_user("alice", "secret-1", UserStatus::Active, None)
            .await,
        USER_ALREADY_EXISTS,
    );
    assert_code(client.delete_user(&id(0)).await, CANNOT_DELETE_USER);
    assert_eq!(client.get_users().await.unwrap().len(), 2);
    let fetched = client.get_user(&name("alice")).await.unwrap().unwrap();
    assert_eq!(fetched.id, alice.id);
    assert!(client.get_user(&name("bob")).await.unwrap().is_none());

    let as_alice = tcp_client(server.tcp()).await;
    as_alice.login_user("alice", "secret-1").await.unwrap();
    assert_code(as_alice.create_stream("x").await, UNAUTHORIZED);
    assert_code(as_alice.get_streams().await, UNAUTHORIZED);

    client
        .update_permissions(&name("alice"), Some(read_only_permissions()))
        .await
        .unwrap();
    let fetched = client.get_user(&name("alice")).await.unwrap().unwrap();
    assert_eq!(fetched.permissions, Some(read_only_permissions()));
    let relogged = tcp_client(server.tcp()).await;
    relogged.login_user("alice", "secret-1").await.unwrap();
    relogged.get_streams().await.unwrap();
    assert_code(relogged.create_stream("x").await, UNAUTHORIZED);

    client
        .change_password(&name("alice"), "secret-1", "secret-2")
        .await
        .unwrap();
    let fresh = tcp_client(server.tcp()).await;
    assert!(fresh.login_user("alice", "secret-1").await.is_err());
    let fresh = tcp_client(server.tcp()).await;
    fresh.login_user("alice", "secret-2").await.unwrap();

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
    assert_eq!(renamed.username, "alice2");
    assert_eq!(renamed.status, UserStatus::Inactive);

    client.delete_user(&name("alice2")).await.unwrap();
    assert!(client.get_user(&id(alice.id)).await.unwrap().is_none());
    assert_eq!(client.get_users().await.unwrap().len(), 1);
}

#[tokio::test]
async fn given_personal_access_token_when_logging_in_should_authenticate_until_deleted() {
    let (_workdir, server, client) = start().await;
    let raw = client
        .create_personal_access_token("ci-token", PersonalAccessTokenExpiry::NeverExpire)
        .await
        .unwrap();
    assert!(!raw.token.is_empty());
    assert_code(
        client
            .create_personal_access_token("ci-token", PersonalAccessTokenExpiry::NeverExpire)
            .await,
        PAT_ALREADY_EXISTS,
    );
    let tokens = client.get_personal_access_tokens().await.unwrap();
    assert_eq!(tokens.len(), 1);
    assert_eq!(tokens[0].name, "ci-token");
    assert!(tokens[0].expiry_at.is_none());

    let second = tcp_client(server.tcp()).await;
    let identity = second
        .login_with_personal_access_token(&raw.token)
        .await
        .unwrap();
    assert_eq!(identity.user_id, 0);
    second.create_stream("via-token").await.unwrap();

    let bad = tcp_client(server.tcp()).await;
    assert_code(
        bad.login_with_personal_access_token("not-a-real-token")
            .await,
        INVALID_PAT,
    );

    client
        .delete_personal_access_token("ci-token")
        .await
        .unwrap();
    assert!(
        client
            .get_personal_access_tokens()
            .await
            .unwrap()
            .is_empty()
    );
    let after = tcp_client(server.tcp()).await;
    assert_code(
        after.login_with_personal_access_token(&raw.token).await,
        INVALID_PAT,
    );
}

async fn group(client: &IggyClient) -> Option<ConsumerGroupDetails> {
    client
        .get_consumer_group(&name("s"), &name("t"), &name("g"))
        .await
        .unwrap()
}

async fn wait_for_members(client: &IggyClient, members: u32) -> ConsumerGroupDetails {
    let deadline = Instant::now() + RELEASE_TIMEOUT;
    loop {
        let details = group(client).await.unwrap();
        if details.members_count == members || Instant::now() > deadline {
            return details;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

async fn poll_group(client: &IggyClient) -> PolledMessages {
    client
        .poll_messages(
            &name("s"),
            &name("t"),
            None,
            &Consumer::group(name("g")),
            &PollingStrategy::next(),
            100,
            true,
        )
        .await
        .unwrap()
}

#[tokio::test]
async fn given_consumer_group_when_members_join_poll_and_leave_should_track_membership() {
    let (_workdir, server, client) = start().await;
    client.create_stream("s").await.unwrap();
    create_topic(&client, "s", "t", 3).await;
    for partition in 0..3 {
        send(&client, "s", "t", partition, 4).await;
    }
    let created = client
        .create_consumer_group(&name("s"), &name("t"), "g")
        .await
        .unwrap();
    assert_eq!((created.name.as_str(), created.members_count), ("g", 0));
    assert_eq!(created.partitions_count, 3);
    assert_code(
        client
            .create_consumer_group(&name("s"), &name("t"), "g")
            .await,
        GROUP_NAME_EXISTS,
    );
    let listed = client
        .get_consumer_groups(&name("s"), &name("t"))
        .await
        .unwrap();
    assert_eq!(listed.len(), 1);

    let first = root_client(server.tcp()).await;
    let second = root_client(server.tcp()).await;
    for member in [&first, &second] {
        member
            .join_consumer_group(&name("s"), &name("t"), &name("g"))
            .await
            .unwrap();
    }
    let details = group(&client).await.unwrap();
    assert_eq!(details.members_count, 2);
    let assigned: u32 = details.members.iter().map(|m| m.partitions_count).sum();
    assert_eq!(assigned, 3, "{details:?}");

    let polled = poll_group(&first).await;
    assert_eq!(polled.messages.len(), 4);
    let owned = details
        .members
        .iter()
        .flat_map(|m| m.partitions.clone())
        .collect::<Vec<_>>();
    assert!(owned.contains(&polled.partition_id));
    let offset = first
        .get_consumer_offset(
            &Consumer::group(name("g")),
            &name("s"),
            &name("t"),
            Some(polled.partition_id),
        )
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        offset.stored_offset, 3,
        "auto-commit stored the group offset"
    );

    second
        .leave_consumer_group(&name("s"), &name("t"), &name("g"))
        .await
        .unwrap();
    let details = group(&client).await.unwrap();
    assert_eq!(details.members_count, 1);
    assert_eq!(details.members[0].partitions_count, 3);
    assert_code(
        second
            .leave_consumer_group(&name("s"), &name("t"), &name("g"))
            .await,
        GROUP_MEMBER_NOT_FOUND,
    );

    first.disconnect().await.unwrap();
    drop(first);
    let details = wait_for_members(&client, 0).await;
    assert_eq!(
        details.members_count, 0,
        "a disconnect releases the membership"
    );

    client
        .delete_consumer_group(&name("s"), &name("t"), &name("g"))
        .await
        .unwrap();
    assert!(group(&client).await.is_none());
    assert_code(
        client
            .delete_consumer_group(&name("s"), &name("t"), &name("g"))
            .await,
        GROUP_NOT_FOUND,
    );
    assert_code(
        client
            .join_consumer_group(&name("s"), &name("t"), &name("g"))
            .await,
        GROUP_NOT_FOUND,
    );
}

//! System replies decoded by the SDK's own response decoders.

use super::*;
use iggy_binary_protocol::WireDecode;
use iggy_binary_protocol::responses::clients::{ClientDetailsResponse, GetClientsResponse};
use iggy_binary_protocol::responses::messages::PollRoutingResponse;
use iggy_binary_protocol::responses::system::{
    ClusterMetadataResponse, DescribeOptionsResponse, StatsResponse,
};

fn node() -> ClusterNode<'static> {
    ClusterNode {
        name: "iggy-node",
        ip: "127.0.0.1",
        tcp_port: 8090,
        quic_port: 8080,
        http_port: 3000,
        websocket_port: 8092,
        role: NodeRole::Leader,
        status: NodeStatus::Healthy,
    }
}

#[test]
fn given_stats_when_decoded_by_the_sdk_should_match() {
    let metrics = [CacheMetric {
        stream_id: 1,
        topic_id: 2,
        partition_id: 3,
        hits: 4,
        misses: 5,
        hit_ratio: 0.5,
    }];
    let stats = Stats {
        process_id: 42,
        cpu_usage: 1.5,
        total_cpu_usage: 2.5,
        memory_usage: 3,
        total_memory: 4,
        available_memory: 5,
        run_time_us: 6,
        start_time_us: 7,
        read_bytes: 8,
        written_bytes: 9,
        messages_size_bytes: 10,
        streams_count: 11,
        topics_count: 12,
        partitions_count: 13,
        segments_count: 14,
        messages_count: 15,
        clients_count: 16,
        consumer_groups_count: 17,
        hostname: "host",
        os_name: "Linux",
        os_version: "6",
        kernel_version: "6.1",
        server_version: "0.9.0",
        server_semver: 9000,
        cache_metrics: &metrics,
        threads_count: 18,
        free_disk_space: 19,
        total_disk_space: 20,
    };
    let mut out = Vec::new();
    stats.encode(&mut out);
    let (sdk, used) = StatsResponse::decode(&out).unwrap();
    assert_eq!(used, out.len());
    assert_eq!(
        (sdk.process_id, sdk.cpu_usage, sdk.consumer_groups_count),
        (42, 1.5, 17)
    );
    assert_eq!(
        (sdk.messages_count, sdk.clients_count, sdk.segments_count),
        (15, 16, 14)
    );
    assert_eq!(
        (
            sdk.hostname.as_str(),
            sdk.kernel_version.as_str(),
            sdk.iggy_server_version.as_str()
        ),
        ("host", "6.1", "0.9.0")
    );
    assert_eq!(sdk.iggy_server_semver, Some(9000));
    assert_eq!(
        (sdk.cache_metrics[0].misses, sdk.cache_metrics[0].hit_ratio),
        (5, 0.5)
    );
    assert_eq!(
        (sdk.threads_count, sdk.free_disk_space, sdk.total_disk_space),
        (18, 19, 20)
    );
}

#[test]
fn given_cluster_metadata_when_decoded_by_the_sdk_should_match() {
    let nodes = [node()];
    let mut out = Vec::new();
    ClusterMetadata {
        name: "single-node",
        nodes: &nodes,
    }
    .encode(&mut out);
    let (sdk, used) = ClusterMetadataResponse::decode(&out).unwrap();
    assert_eq!(
        (sdk.name.as_str(), sdk.nodes.len(), used),
        ("single-node", 1, out.len())
    );
    let n = &sdk.nodes[0];
    assert_eq!(
        (
            n.ip.as_str(),
            n.tcp_port,
            n.quic_port,
            n.http_port,
            n.websocket_port
        ),
        ("127.0.0.1", 8090, 8080, 3000, 8092)
    );
    assert_eq!((n.role, n.status), (0, 0));
}

#[test]
fn given_option_descriptors_when_decoded_by_the_sdk_should_match() {
    let entries = [
        OptionDescriptor {
            key: "segment_size",
            kind: 12,
            default_value: &(1u64 << 30).to_le_bytes(),
            description: "size",
        },
        OptionDescriptor {
            key: "durability",
            kind: 2,
            default_value: &[],
            description: "",
        },
    ];
    let mut out = Vec::new();
    encode_describe_options(&mut out, &entries);
    let (sdk, used) = DescribeOptionsResponse::decode(&out).unwrap();
    assert_eq!((sdk.entries.len(), used), (2, out.len()));
    assert_eq!(
        (sdk.entries[0].key.as_str(), sdk.entries[0].kind),
        ("segment_size", 12)
    );
    assert_eq!(
        &sdk.entries[0].default_value[..],
        &(1u64 << 30).to_le_bytes()
    );
    assert!(sdk.entries[1].default_value.is_empty());
}

#[test]
fn given_clients_when_decoded_by_the_sdk_should_match() {
    let groups = [ClientGroup {
        stream_id: 1,
        topic_id: 2,
        group_id: 3,
    }];
    let client = ClientInfo {
        client_id: 5,
        user_id: None,
        transport: Transport::WebSocket,
        address: "1.2.3.4:5",
        consumer_groups: &groups,
    };
    let mut out = Vec::new();
    encode_client_details(&mut out, &client);
    let (sdk, used) = ClientDetailsResponse::decode(&out).unwrap();
    assert_eq!(used, out.len());
    assert_eq!(
        (
            sdk.client.user_id,
            sdk.client.transport,
            sdk.client.address.as_str()
        ),
        (u32::MAX, 4, "1.2.3.4:5")
    );
    assert_eq!(sdk.consumer_groups[0].group_id, 3);
    let mut list = Vec::new();
    encode_clients(
        &mut list,
        &[
            client,
            ClientInfo {
                client_id: 6,
                user_id: Some(0),
                ..client
            },
        ],
    );
    let (sdk, _) = GetClientsResponse::decode(&list).unwrap();
    assert_eq!(
        sdk.clients
            .iter()
            .map(|c| (c.client_id, c.user_id))
            .collect::<Vec<_>>(),
        vec![(5, u32::MAX), (6, 0)]
    );
}

#[test]
fn given_poll_routing_when_decoded_by_the_sdk_should_match() {
    let mut out = Vec::new();
    PollRouting {
        client_id: 9,
        session: 8,
        metadata_watermark: 7,
        primary: node(),
    }
    .encode(&mut out);
    let (sdk, used) = PollRoutingResponse::decode(&out).unwrap();
    assert_eq!(used, out.len());
    assert_eq!(
        (sdk.consumer_session.client_id, sdk.consumer_session.session),
        (9, 8)
    );
    assert_eq!(sdk.primary.name, "iggy-node");
}

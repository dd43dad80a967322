//! Builds the [`ServerContext`] every shard shares from the shard options
//! and the bound listener addresses (which the cluster-metadata reply
//! advertises).

use std::net::SocketAddr;
use std::sync::Arc;

use super::ShardOptions;
use crate::node::cluster_state::ClusterShared;
use crate::node::context::{Advertised, ContextOptions, Inbox, ServerContext};
use crate::node::disk_space::DiskSpace;
use crate::transport::BoundAddresses;

pub(super) fn server_context(
    options: &ShardOptions,
    inboxes: Vec<Inbox>,
    bound: &BoundAddresses,
) -> ServerContext {
    let context = ContextOptions {
        shard_count: options.specs.len(),
        frame_max_bytes: options.frame_max_bytes,
        drain_timeout: options.drain_timeout,
        data_path: options.data_path.clone(),
        limits: options.limits.clone(),
        advertised: advertised(bound),
        encryption: options.encryption.clone(),
        cluster: {
            let start = &options.cluster;
            let placement = &start.placement;
            let mut shared = ClusterShared::new(
                start.cluster_name.clone(),
                placement.identity.cluster,
                placement.identity.replica,
                placement.timing,
                start.nonce,
                start.roster.clone(),
                DiskSpace::new(&options.data_path),
            );
            shared.implicit = start.implicit;
            Arc::new(shared)
        },
    };
    ServerContext::new(context, inboxes)
}

/// The first bound address's host (loopback when nothing is served) and
/// every transport's port (0 when it is not served).
fn advertised(bound: &BoundAddresses) -> Advertised {
    let port = |addr: Option<SocketAddr>| addr.map_or(0, |a| a.port());
    let host = [bound.tcp, bound.websocket, bound.quic, bound.http]
        .into_iter()
        .flatten()
        .next()
        .map_or_else(|| "127.0.0.1".to_owned(), |a| a.ip().to_string());
    Advertised {
        host,
        tcp_port: port(bound.tcp),
        quic_port: port(bound.quic),
        http_port: port(bound.http),
        websocket_port: port(bound.websocket),
    }
}

//! What one node serves, read on that node alone: a session per node on a
//! plain `TcpClient` that never reconnects and so never follows a leader
//! (an `IggyClient` moves to the metadata leader when it signs in), each
//! checked on opening to have reached that node's process.

use std::collections::{BTreeMap, BTreeSet};
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use iggy::prelude::*;

use super::load::{CONSUMER, PARTITIONS, Snapshot, payload};
use crate::harness::sdk::{id, name};
use crate::harness::{ROOT_PASSWORD, ROOT_USERNAME};

const PROBE_TIMEOUT: Duration = Duration::from_secs(5);
const POLL_PAGE: u32 = 1000;

/// A partition's messages as a node serves them: offset and payload.
pub type Log = Vec<(u64, Vec<u8>)>;

/// One node as the probes address it.
#[derive(Clone, Copy)]
pub struct Target {
    pub index: usize,
    pub tcp: SocketAddr,
    pub pid: u32,
}

#[derive(Default)]
pub struct Sessions {
    by_node: BTreeMap<usize, (u32, TcpClient)>,
}

impl Sessions {
    async fn open(&mut self, target: Target) -> Result<&TcpClient, String> {
        if self
            .by_node
            .get(&target.index)
            .is_none_or(|s| s.0 != target.pid)
        {
            let config = TcpClientConfig {
                server_address: target.tcp.to_string(),
                reconnection: TcpClientReconnectionConfig {
                    enabled: false,
                    ..TcpClientReconnectionConfig::default()
                },
                ..TcpClientConfig::default()
            };
            let client = TcpClient::create(Arc::new(config)).unwrap();
            let opened = async {
                client.connect().await?;
                client.login_user(ROOT_USERNAME, ROOT_PASSWORD).await?;
                client.get_stats().await
            };
            let stats = match tokio::time::timeout(PROBE_TIMEOUT, opened).await {
                Ok(Ok(stats)) => stats,
                Ok(Err(e)) => return Err(format!("node {}: no session: {e}", target.index)),
                Err(_) => return Err(format!("node {}: no session in time", target.index)),
            };
            assert_eq!(
                stats.process_id, target.pid,
                "a probe of node {} reached another process",
                target.index
            );
            self.by_node.insert(target.index, (target.pid, client));
        }
        Ok(&self.by_node[&target.index].1)
    }

    /// Runs `request` on the node's session (dropped after a failure).
    async fn call<T>(
        &mut self,
        target: Target,
        what: &str,
        request: impl AsyncFnOnce(&TcpClient) -> Result<T, IggyError>,
    ) -> Result<T, String> {
        let client = self.open(target).await?;
        let error = match tokio::time::timeout(PROBE_TIMEOUT, request(client)).await {
            Ok(Ok(value)) => return Ok(value),
            Ok(Err(e)) => e.to_string(),
            Err(_) => "no answer in time".to_owned(),
        };
        self.by_node.remove(&target.index);
        Err(format!("node {}: {what}: {error}", target.index))
    }

    /// Whether every node names the same leader and sees every peer.
    pub async fn agree_on_leader(&mut self, targets: &[Target]) -> Result<(), String> {
        let mut leaders = Vec::new();
        for &target in targets {
            let metadata = self
                .call(target, "cluster metadata", async |c| {
                    c.get_cluster_metadata().await
                })
                .await?;
            let nodes = &metadata.nodes;
            let leading: Vec<&str> = nodes
                .iter()
                .filter(|n| n.role == ClusterNodeRole::Leader)
                .map(|n| n.name.as_str())
                .collect();
            let [leader] = leading[..] else {
                return Err(format!("node {} names leaders {leading:?}", target.index));
            };
            leaders.push(leader.to_owned());
            if let Some(peer) = nodes
                .iter()
                .find(|n| n.status != ClusterNodeStatus::Healthy)
            {
                let (name, status) = (&peer.name, peer.status);
                return Err(format!("node {} sees {name} {status}", target.index));
            }
        }
        if leaders.windows(2).any(|w| w[0] != w[1]) {
            return Err(format!("the nodes name different leaders: {leaders:?}"));
        }
        Ok(())
    }

    /// Whether the node serves the streams acknowledged in `snapshot` and,
    /// in each partition, the last message acknowledged there (at an
    /// offset no lower than the number acknowledged before it).
    pub async fn serves(&mut self, target: Target, snapshot: &Snapshot) -> Result<(), String> {
        let names = self.stream_names(target).await?;
        if let Some(missing) = snapshot.streams.iter().find(|s| !names.contains(*s)) {
            return Err(format!("node {} lacks stream {missing}", target.index));
        }
        for (partition, &(count, last)) in (0..PARTITIONS).zip(&snapshot.acked) {
            let Some(last) = last else { continue };
            let from = (count - 1) as u64;
            let wanted = payload(partition, last);
            let tail = self.log_from(target, partition, from).await?;
            if !tail.iter().any(|(_, p)| *p == wanted.as_bytes()) {
                let index = target.index;
                return Err(format!(
                    "node {index} lacks {wanted} at or after offset {from}"
                ));
            }
        }
        Ok(())
    }

    pub async fn stream_names(&mut self, target: Target) -> Result<BTreeSet<String>, String> {
        let streams = self.call(target, "streams", async |c| c.get_streams().await);
        Ok(streams.await?.into_iter().map(|s| s.name).collect())
    }

    /// Offset and payload of each message of `partition` from offset
    /// `from` on.
    pub async fn log_from(
        &mut self,
        target: Target,
        partition: u32,
        from: u64,
    ) -> Result<Log, String> {
        let (stream, topic) = (name("orders"), name("t"));
        let consumer = Consumer::new(id(1));
        let what = format!("poll of partition {partition}");
        let mut log = Vec::new();
        loop {
            let offset = log.last().map_or(from, |(o, _)| o + 1);
            let strategy = PollingStrategy::offset(offset);
            let polled = self
                .call(target, &what, async |c| {
                    let partition = Some(partition);
                    c.poll_messages(
                        &stream, &topic, partition, &consumer, &strategy, POLL_PAGE, false,
                    )
                    .await
                })
                .await?;
            if polled.messages.is_empty() {
                return Ok(log);
            }
            let page = polled.messages.into_iter();
            log.extend(page.map(|m| (m.header.offset, m.payload.to_vec())));
        }
    }

    pub async fn stored_offset(
        &mut self,
        target: Target,
        partition: u32,
    ) -> Result<Option<u64>, String> {
        let (stream, topic) = (name("orders"), name("t"));
        let consumer = Consumer::new(id(CONSUMER));
        let stored = self.call(target, "stored offset", async |c| {
            c.get_consumer_offset(&consumer, &stream, &topic, Some(partition))
                .await
        });
        Ok(stored.await?.map(|s| s.stored_offset))
    }
}

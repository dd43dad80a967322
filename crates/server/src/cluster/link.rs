//! The replica links of one node (replication spec §8): one TCP connection
//! per replica pair, the lower id dialing the higher every
//! `message_bus.reconnect_period` until admitted, the acceptor admitting only
//! lower ids. Each peer has a two-lane outgoing queue (`lanes`) that outlives
//! its connections; incoming frames of every peer go to one bounded channel,
//! [`Inbound`], which the consensus wiring drains.
//!
//! Runs on the compio runtime of the thread that calls [`Links::start`];
//! [`LinkSender`] may be cloned to any thread. Dropping [`Links`] cancels
//! the listener, the dialers and every connection.
//!
//! An acceptor that admits a peer already connected replaces the old
//! connection: a restarted dialer reconnects before the old socket shows
//! that it died.

use std::cell::{Cell, RefCell};
use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::rc::Rc;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use bytes::Bytes;
use compio::net::{TcpListener, TcpStream};
use compio::runtime::JoinHandle;
use consensus::wire::{self, Frame};
use crossfire::mpsc::{Array, bounded_async};
use crossfire::{AsyncRx, MAsyncTx};
use thiserror::Error;
use tracing::{debug, info, warn};

use super::connection::{self, Channel, Closed, ConnectionContext, FrameCounters};
use super::handshake::{ChannelBinding, HandshakeConfig, HandshakeError, ReplicaId};
use super::lanes::{self, Lane, LaneFull, LanesRx, LanesTx};
use super::tls::TlsSession;

mod config;
#[cfg(test)]
mod tests;

pub use config::{LinkConfig, bind_listener, node_address};

/// Pause after a failed accept (e.g. out of descriptors) before the next.
const ACCEPT_RETRY_PAUSE: Duration = Duration::from_millis(10);

/// Incoming frames of every peer, checked: sealed, decoded, of our
/// cluster, from the peer the connection authenticated.
pub type Inbound = AsyncRx<Array<Frame>>;

#[derive(Debug, Error)]
pub enum LinkError {
    #[error("cluster.tls.enabled requires cluster.auth.enabled")]
    TlsWithoutAuth,
    #[error(transparent)]
    Tls(#[from] super::tls::TlsSetupError),
    #[error("replica {replica_id} is not in cluster.nodes")]
    NotInRoster { replica_id: ReplicaId },
    #[error("cluster.nodes[replica_id = {replica_id}] has no ports.tcp_replica")]
    NoReplicaPort { replica_id: ReplicaId },
    #[error("cannot resolve {host}: {reason}")]
    Resolve { host: String, reason: String },
    #[error("{key} must be at least 32 bytes")]
    SecretTooShort { key: &'static str },
    #[error("cannot bind the replica listener on {address}: {source}")]
    Bind {
        address: SocketAddr,
        source: std::io::Error,
    },
    #[error("the replica listener: {0}")]
    Listener(std::io::Error),
}

/// Why a frame was not queued.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Error)]
pub enum SendError {
    #[error("replica {to} is not a peer")]
    UnknownPeer { to: ReplicaId },
    #[error("the {lane:?} lane to replica {to} is full; the frame is dropped")]
    QueueFull { to: ReplicaId, lane: Lane },
}

/// One peer's link as seen from here.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PeerStatus {
    pub connected: bool,
    /// The last handshake failure with this peer, cleared by a success.
    pub last_refusal: Option<HandshakeError>,
    pub frames_sent: u64,
    pub frames_received: u64,
    pub frames_rejected: u64,
    pub dropped_control: u64,
    pub dropped_data: u64,
}

/// The `Send` half of the links: queues frames to peers from any thread.
#[derive(Clone)]
pub struct LinkSender {
    local: ReplicaId,
    cluster: u128,
    queues: Arc<BTreeMap<ReplicaId, LanesTx>>,
}

impl LinkSender {
    /// Encodes `frame` and queues it to `to` without waiting; a full lane
    /// drops it (counted). The frame must be ours: our id, our cluster.
    pub fn send(&self, to: ReplicaId, frame: &Frame) -> Result<(), SendError> {
        assert_eq!(
            frame.from, self.local,
            "a replica sends only its own frames"
        );
        assert_eq!(frame.cluster, self.cluster, "a frame of another cluster");
        let (lane, bytes) = Self::encode(frame);
        self.send_encoded(to, lane, bytes)
    }

    /// A frame's lane and bytes, to queue (once encoded, to any number of
    /// peers) with `send_encoded`.
    pub fn encode(frame: &Frame) -> (Lane, Bytes) {
        (Lane::of(frame), Bytes::from(wire::encode(frame)))
    }

    /// Queues an encoded frame of ours (`encode`) to `to`, as `send` does.
    pub fn send_encoded(&self, to: ReplicaId, lane: Lane, bytes: Bytes) -> Result<(), SendError> {
        let queue = self.queues.get(&to).ok_or(SendError::UnknownPeer { to })?;
        queue
            .push(lane, bytes)
            .map_err(|LaneFull(lane)| SendError::QueueFull { to, lane })
    }

    /// Every peer's id, ascending.
    pub fn peers(&self) -> impl Iterator<Item = ReplicaId> + '_ {
        self.queues.keys().copied()
    }
}

/// One peer's state on this node's thread.
struct Peer {
    id: ReplicaId,
    address: SocketAddr,
    lanes: LanesRx,
    counters: Arc<FrameCounters>,
    /// Bumped by each connection that comes up, so only the newest one
    /// marks the peer disconnected when it ends.
    generation: Cell<u64>,
    connected: Cell<bool>,
    last_refusal: RefCell<Option<HandshakeError>>,
    /// The accepted connection serving this peer (acceptor side only).
    accepted: RefCell<Option<JoinHandle<()>>>,
}

struct Shared {
    config: LinkConfig,
    handshake: HandshakeConfig,
    peers: BTreeMap<ReplicaId, Peer>,
    inbound: MAsyncTx<Array<Frame>>,
    /// Accepted sockets still in their handshake.
    handshaking: RefCell<Vec<JoinHandle<()>>>,
}

/// This node's replica links; see the module docs.
pub struct Links {
    shared: Rc<Shared>,
    sender: LinkSender,
    local_address: SocketAddr,
    /// The accept loop and one dial loop per higher peer.
    tasks: Vec<JoinHandle<()>>,
}

impl Links {
    /// Starts accepting on `listener` and dialing every higher peer.
    /// Must run inside a compio runtime.
    pub fn start(
        config: LinkConfig,
        listener: std::net::TcpListener,
    ) -> Result<(Links, Inbound), LinkError> {
        config.check();
        let listener = TcpListener::from_std(listener).map_err(LinkError::Listener)?;
        let local_address = listener.local_addr().map_err(LinkError::Listener)?;
        let (inbound_tx, inbound_rx) = bounded_async(config.inbound_capacity);
        let mut queues = BTreeMap::new();
        let mut peers = BTreeMap::new();
        for &(id, address) in &config.peers {
            let (tx, rx) = lanes::lanes(config.peer_queue_capacity);
            queues.insert(id, tx);
            peers.insert(id, Peer::new(id, address, rx));
        }
        let sender = LinkSender {
            local: config.replica_id,
            cluster: config.cluster,
            queues: Arc::new(queues),
        };
        let handshake = HandshakeConfig {
            cluster: config.cluster,
            local: config.replica_id,
            psk: config.psk.clone(),
            channel: ChannelBinding::Plaintext,
        };
        let shared = Rc::new(Shared {
            config,
            handshake,
            peers,
            inbound: inbound_tx,
            handshaking: RefCell::default(),
        });
        let mut tasks = vec![compio::runtime::spawn(accept_loop(
            shared.clone(),
            listener,
        ))];
        for peer in shared
            .peers
            .values()
            .filter(|p| p.id > shared.config.replica_id)
        {
            tasks.push(compio::runtime::spawn(dial_loop(shared.clone(), peer.id)));
        }
        info!(replica = shared.config.replica_id, %local_address, peers = shared.peers.len(), "replica links started");
        Ok((
            Links {
                shared,
                sender,
                local_address,
                tasks,
            },
            inbound_rx,
        ))
    }

    /// Queues `frame` to `to`; see [`LinkSender::send`].
    pub fn send(&self, to: ReplicaId, frame: &Frame) -> Result<(), SendError> {
        self.sender.send(to, frame)
    }

    /// A sender for other threads.
    pub fn sender(&self) -> LinkSender {
        self.sender.clone()
    }

    /// The address the replica listener is bound to.
    pub fn local_address(&self) -> SocketAddr {
        self.local_address
    }

    pub fn status(&self, peer: ReplicaId) -> Option<PeerStatus> {
        let p = self.shared.peers.get(&peer)?;
        let dropped = self
            .sender
            .queues
            .get(&peer)
            .expect("every peer has a queue")
            .dropped();
        Some(PeerStatus {
            connected: p.connected.get(),
            last_refusal: p.last_refusal.borrow().clone(),
            frames_sent: p.counters.sent.load(Ordering::Relaxed),
            frames_received: p.counters.received.load(Ordering::Relaxed),
            frames_rejected: p.counters.rejected.load(Ordering::Relaxed),
            dropped_control: dropped.get(Lane::Control),
            dropped_data: dropped.get(Lane::Data),
        })
    }
}

impl Drop for Links {
    fn drop(&mut self) {
        // Tasks hold the shared state, so cancel them explicitly: dropping a
        // handle cancels its task, which closes its socket.
        self.tasks.clear();
        self.shared.handshaking.borrow_mut().clear();
        for peer in self.shared.peers.values() {
            peer.accepted.borrow_mut().take();
        }
    }
}

impl Peer {
    fn new(id: ReplicaId, address: SocketAddr, lanes: LanesRx) -> Peer {
        Peer {
            id,
            address,
            lanes,
            counters: Arc::default(),
            generation: Cell::new(0),
            connected: Cell::new(false),
            last_refusal: RefCell::default(),
            accepted: RefCell::default(),
        }
    }

    fn refused(&self, error: &Closed) {
        if let Closed::Handshake(e) = error {
            *self.last_refusal.borrow_mut() = Some(e.clone());
        }
    }
}

impl Shared {
    /// Serves an admitted connection with `peer` until it ends.
    async fn serve(&self, peer: &Peer, stream: TcpStream, tls: Option<TlsSession>) {
        let generation = peer.generation.get() + 1;
        peer.generation.set(generation);
        peer.connected.set(true);
        peer.last_refusal.borrow_mut().take();
        let _ = stream.set_nodelay(true);
        info!(peer = peer.id, "replica link up");
        let cx = ConnectionContext {
            cluster: self.config.cluster,
            peer: peer.id,
            max_message_size: self.config.max_message_size,
            max_batch: self.config.max_batch,
            lanes: &peer.lanes,
            inbound: &self.inbound,
            counters: &peer.counters,
        };
        let channel = Channel {
            stream: &stream,
            tls: tls.as_ref(),
        };
        let closed = connection::run(channel, cx).await;
        if peer.generation.get() == generation {
            peer.connected.set(false);
        }
        info!(peer = peer.id, "replica link down: {closed}");
    }
}

/// Dials `peer` (a higher id) for as long as the links live.
async fn dial_loop(shared: Rc<Shared>, peer: ReplicaId) {
    let peer = shared.peers.get(&peer).expect("dialing a roster peer");
    loop {
        match dial(&shared, peer).await {
            Ok((stream, tls)) => shared.serve(peer, stream, tls).await,
            Err(e) => {
                peer.refused(&e);
                match e {
                    Closed::Handshake(_) => {
                        warn!(peer = peer.id, address = %peer.address, "replica handshake failed: {e}")
                    }
                    _ => {
                        debug!(peer = peer.id, address = %peer.address, "cannot reach replica: {e}")
                    }
                }
            }
        }
        compio::time::sleep(shared.config.reconnect_period).await;
    }
}

async fn dial(shared: &Shared, peer: &Peer) -> Result<(TcpStream, Option<TlsSession>), Closed> {
    let attempt = async {
        let stream = TcpStream::connect(peer.address).await?;
        let tls = match &shared.config.tls {
            Some(tls) => Some(TlsSession::establish(&stream, tls.dial(peer.id)?).await?),
            None => None,
        };
        let channel = Channel {
            stream: &stream,
            tls: tls.as_ref(),
        };
        connection::dial_handshake(channel, shared.handshake.clone(), peer.id).await?;
        Ok((stream, tls))
    };
    within(shared.config.handshake_grace, attempt).await
}

async fn accept_loop(shared: Rc<Shared>, listener: TcpListener) {
    loop {
        let (stream, address) = match listener.accept().await {
            Ok(accepted) => accepted,
            Err(e) => {
                warn!("replica listener accept failed: {e}");
                compio::time::sleep(ACCEPT_RETRY_PAUSE).await;
                continue;
            }
        };
        let mut handshaking = shared.handshaking.borrow_mut();
        handshaking.retain(|task| !task.is_finished());
        handshaking.push(compio::runtime::spawn(admit(
            shared.clone(),
            stream,
            address,
        )));
    }
}

/// Runs an accepted socket's handshake, then hands it to its peer.
async fn admit(shared: Rc<Shared>, stream: TcpStream, address: SocketAddr) {
    let handshake = async {
        let tls = match &shared.config.tls {
            Some(tls) => Some(TlsSession::establish(&stream, tls.accept()?).await?),
            None => None,
        };
        let channel = Channel {
            stream: &stream,
            tls: tls.as_ref(),
        };
        let peer = connection::accept_handshake(channel, shared.handshake.clone()).await?;
        Ok((peer, tls))
    };
    let (peer, tls) = match within(shared.config.handshake_grace, handshake).await {
        Ok(admitted) => admitted,
        Err(e) => {
            if let Closed::Handshake(refusal) = &e
                && let Some(peer) = claimed_peer(refusal).and_then(|id| shared.peers.get(&id))
            {
                peer.refused(&e);
            }
            return warn!(%address, "replica handshake refused: {e}");
        }
    };
    let Some(slot) = shared.peers.get(&peer) else {
        return warn!(%address, peer, "replica handshake from a replica not in the roster; closing");
    };
    let serving = shared.clone();
    let task = compio::runtime::spawn(async move {
        let peer = serving.peers.get(&peer).expect("checked above");
        serving.serve(peer, stream, tls).await;
    });
    // Replacing the handle cancels the previous connection, if any.
    slot.accepted.borrow_mut().replace(task);
}

/// The dialer a refusal names, when it names one.
fn claimed_peer(refusal: &HandshakeError) -> Option<ReplicaId> {
    match *refusal {
        HandshakeError::Direction { dialer, .. } => Some(dialer),
        HandshakeError::MacMismatch { peer } => Some(peer),
        HandshakeError::WrongPeer { expected, .. } => Some(expected),
        _ => None,
    }
}

async fn within<T>(
    grace: Duration,
    work: impl std::future::Future<Output = Result<T, Closed>>,
) -> Result<T, Closed> {
    match compio::time::timeout(grace, work).await {
        Ok(result) => result,
        Err(_) => Err(Closed::Io(std::io::Error::new(
            std::io::ErrorKind::TimedOut,
            format!("no handshake within {grace:?}"),
        ))),
    }
}

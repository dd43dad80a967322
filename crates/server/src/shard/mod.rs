//! Thread-per-core shards.
//!
//! Each shard is an OS thread running its own single-threaded compio runtime
//! (io_uring when the kernel allows it). Shards share nothing mutable on the
//! data path: they talk through bounded channels carrying [`ShardMessage`].
//! Shard 0 serves the listeners and commits metadata; plaintext TCP
//! connections are handed to shards round-robin right after accept.
//!
//! Start-up: `ShardSet::start` binds the listeners (so their addresses are
//! known before any thread starts), creates every inbox, then the threads;
//! each thread reports `Ready` or the error that stopped it. Shutdown:
//! `ShardSet::shutdown` sends `Shutdown` to every inbox and joins the
//! threads within the configured deadline.

mod context;
mod event_loop;
pub mod plan;

use std::collections::HashSet;
use std::path::PathBuf;
use std::rc::Rc;
use std::sync::Arc;
use std::sync::mpsc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crossfire::AsyncRx;
use crossfire::mpsc::{Array, bounded_async};
use engine::metadata::MetadataState;
use tracing::{error, info, warn};

use crate::http::{self, HttpSettings};
use crate::node::context::{Limits, ServerContext};
use crate::node::shard_message::ShardMessage;
use crate::node::{Committer, Node, Shard, shard_state};
use crate::transport::{self, BoundAddresses, Listeners};
use plan::ShardSpec;
use server::notify::Liveness;

pub struct ShardOptions {
    pub specs: Vec<ShardSpec>,
    pub data_path: PathBuf,
    pub limits: Limits,
    pub inbox_capacity: usize,
    pub frame_max_bytes: usize,
    pub drain_timeout: Duration,
    pub join_timeout: Duration,
    /// `system.sharding.idle_spin` (see `event_loop`).
    pub idle_spin: Duration,
    /// Encryption at rest: the keys, when it is enabled.
    pub encryption: Option<Arc<engine::encryption::Keyring>>,
    /// The watchdog's beat counters, when a service manager runs one.
    pub liveness: Option<Arc<Liveness>>,
    /// Shard 0 runs this node's metadata replica (a roster of one on a
    /// single node).
    pub cluster: crate::node::cluster_commit::ClusterStart,
}

enum Ready {
    Started,
    Failed { shard: u16, reason: String },
}

pub struct ShardSet {
    context: Arc<ServerContext>,
    /// Each thread ends with what went wrong in its drain, if anything.
    threads: Vec<(u16, JoinHandle<Option<String>>)>,
    join_timeout: Duration,
}

/// What one shard thread starts with.
struct ShardStart {
    spec: ShardSpec,
    ctx: Arc<ServerContext>,
    inbox: AsyncRx<Array<ShardMessage>>,
    ready: mpsc::Sender<Ready>,
    /// Shard 0 only: the listeners and the HTTP API's settings.
    listeners: Option<(Listeners, HttpSettings)>,
    idle_spin: Duration,
    liveness: Option<Arc<Liveness>>,
    cluster: Option<crate::node::cluster_commit::ClusterStart>,
}

impl ShardSet {
    /// Starts every shard and waits until each is running.
    pub fn start(
        options: ShardOptions,
        listeners: Listeners,
        http: HttpSettings,
        bound: &BoundAddresses,
    ) -> anyhow::Result<ShardSet> {
        let (senders, receivers): (Vec<_>, Vec<_>) = options
            .specs
            .iter()
            .map(|_| bounded_async::<ShardMessage>(options.inbox_capacity))
            .unzip();
        let context = Arc::new(context::server_context(&options, senders, bound));
        let (ready_tx, ready_rx) = mpsc::channel();
        let mut threads = Vec::new();
        let mut listeners = Some((listeners, http));
        let mut cluster = Some(options.cluster);
        for (spec, inbox) in options.specs.into_iter().zip(receivers) {
            let first = spec.id == 0;
            let start = ShardStart {
                spec,
                ctx: context.clone(),
                inbox,
                ready: ready_tx.clone(),
                listeners: if first { listeners.take() } else { None },
                idle_spin: options.idle_spin,
                liveness: options.liveness.clone(),
                cluster: if first { cluster.take() } else { None },
            };
            let id = start.spec.id;
            let handle = std::thread::Builder::new()
                .name(format!("shard-{id}"))
                .spawn(move || run_thread(start))?;
            threads.push((id, handle));
        }
        drop(ready_tx);
        let mut set = ShardSet {
            context,
            threads,
            join_timeout: options.join_timeout,
        };
        match set.await_ready(&ready_rx) {
            Ok(()) => Ok(set),
            Err(e) => {
                set.shutdown();
                Err(e)
            }
        }
    }

    /// A roster of one: waits until its metadata group is normal and has
    /// its users (the root user created at the first start), so that the
    /// node reports ready only once a login can succeed. Nothing to wait
    /// for on a single node or in a larger cluster, whose group needs its
    /// peers.
    pub fn await_lone_cluster(&self, timeout: Duration) -> anyhow::Result<()> {
        let deadline = Instant::now() + timeout;
        while self.context.cluster.lone_node_starting() {
            if self.threads.iter().any(|(_, handle)| handle.is_finished()) {
                anyhow::bail!("a shard stopped while the metadata group was starting");
            }
            if Instant::now() >= deadline {
                anyhow::bail!("the metadata group did not start within {timeout:?}");
            }
            std::thread::sleep(Duration::from_millis(2));
        }
        Ok(())
    }

    fn await_ready(&mut self, ready: &mpsc::Receiver<Ready>) -> anyhow::Result<()> {
        for _ in 0..self.threads.len() {
            match ready.recv() {
                Ok(Ready::Started) => {}
                Ok(Ready::Failed { shard, reason }) => {
                    anyhow::bail!("shard {shard} failed to start: {reason}")
                }
                Err(_) => anyhow::bail!("a shard thread exited during start-up"),
            }
        }
        Ok(())
    }

    /// Stops every shard and joins the threads, waiting at most the join
    /// timeout. Returns false if some shard did not stop in time.
    pub fn shutdown(&mut self) -> Vec<String> {
        self.context.begin_stopping();
        for shard in 0..self.context.shard_count {
            send_shutdown(&self.context, shard, Duration::from_secs(1));
        }
        let deadline = Instant::now() + self.join_timeout;
        let mut problems = Vec::new();
        for (id, handle) in self.threads.drain(..) {
            while !handle.is_finished() && Instant::now() < deadline {
                std::thread::sleep(Duration::from_millis(5));
            }
            let problem = if !handle.is_finished() {
                Some(format!(
                    "shard {id} did not stop within {:?}",
                    self.join_timeout
                ))
            } else {
                handle
                    .join()
                    .unwrap_or_else(|_| Some(format!("shard {id} panicked")))
            };
            if let Some(problem) = problem {
                error!("{problem}");
                problems.push(problem);
            }
        }
        problems
    }
}

fn send_shutdown(ctx: &ServerContext, shard: usize, patience: Duration) {
    let deadline = Instant::now() + patience;
    let mut message = ShardMessage::Shutdown;
    loop {
        match ctx.try_send(shard, message) {
            Ok(()) => return,
            Err(back) if Instant::now() < deadline => {
                message = back;
                std::thread::sleep(Duration::from_millis(2));
            }
            Err(_) => {
                warn!("shard {shard} inbox stayed full; it will see the stop flag instead");
                return;
            }
        }
    }
}

fn run_thread(start: ShardStart) -> Option<String> {
    crate::metrics::bind_thread_to_shard(usize::from(start.spec.id));
    let mut builder = compio::runtime::RuntimeBuilder::new();
    if let Some(cpu) = start.spec.cpu {
        builder.thread_affinity(HashSet::from([cpu]));
    }
    let runtime = match builder.build() {
        Ok(runtime) => runtime,
        Err(e) => {
            let reason = format!("cannot build the async runtime: {e}");
            let _ = start.ready.send(Ready::Failed {
                shard: start.spec.id,
                reason,
            });
            return None;
        }
    };
    let id = start.spec.id;
    info!(shard = id, cpu = ?start.spec.cpu, driver = ?runtime.driver_type(), "shard started");
    let spin = start.idle_spin;
    let problem = event_loop::block_on(&runtime, shard_main(start), spin);
    info!(shard = id, "shard stopped");
    problem
}

/// Serves until `Shutdown`; returns what went wrong in the drain, if
/// anything (a failure to start is reported through `ready` instead).
async fn shard_main(start: ShardStart) -> Option<String> {
    let ShardStart {
        spec,
        ctx,
        inbox,
        ready,
        listeners,
        idle_spin: _,
        liveness,
        cluster,
    } = start;
    // Shard 0 runs this node's replica of the metadata group; every shard
    // starts from the empty state it replays as the group commits.
    let committer = cluster.map(|cluster| Committer::new(cluster, ctx.cluster.clone()));
    let node = Node::new(spec.id, ctx.clone(), MetadataState::new(), 0, committer);
    let shard = Rc::new(Shard::new(spec.id, ctx.clone(), node));
    if let Err(e) = shard.node.start().await {
        let _ = ready.send(Ready::Failed {
            shard: spec.id,
            reason: format!("{e:#}"),
        });
        return None;
    }
    if let Some((listeners, http)) = listeners {
        let shard = shard.clone();
        compio::runtime::spawn(async move {
            await_settled(&shard.ctx).await;
            serve_listeners(&shard, listeners, http);
        })
        .detach();
    }
    if let Some(liveness) = liveness {
        compio::runtime::spawn(beat(liveness, usize::from(spec.id))).detach();
    }
    let _ = ready.send(Ready::Started);
    while let Ok(message) = inbox.recv().await {
        match message {
            ShardMessage::Shutdown => break,
            ShardMessage::AdoptTcp { stream, peer, tls } => {
                transport::tcp::adopt(&shard, stream, peer, tls)
            }
            ShardMessage::ResumeConnection {
                stream,
                moved,
                tls,
                websocket,
            } => transport::connection::resume(&shard, stream, moved, tls, websocket),
            ShardMessage::AdoptWebSocket {
                stream,
                peer,
                limits,
                tls,
            } => transport::websocket::adopt(&shard, stream, peer, limits, tls),
            ShardMessage::MetadataSubmit { op, reply } => shard.node.enqueue_commit(op, reply),
            ShardMessage::MetadataApplied {
                op,
                commit,
                applied,
            } => {
                shard.node.apply_committed(&op, commit).await;
                applied.send(());
            }
            ShardMessage::MetadataReplaced {
                state,
                commit,
                replaced,
            } => {
                if let Err(e) = shard.node.replace_metadata((*state).clone(), commit).await {
                    error!(
                        shard = shard.node.shard_id,
                        "replacing the metadata failed: {e:#}"
                    );
                    std::process::exit(70);
                }
                replaced.send(());
            }
            ShardMessage::Partition(call) => {
                shard_state::note_activity();
                shard.node.serve_partition_call(call)
            }
            ShardMessage::ReplicaFrame(frame) => shard.node.deliver_replica_frame(frame),
        }
    }
    let abandoned = shard.drain().await;
    shard.node.stop().await;
    (abandoned > 0).then(|| {
        format!(
            "shard {}: {abandoned} requests still running at the drain deadline were abandoned",
            spec.id
        )
    })
}

/// Proves to the watchdog that this shard's event loop keeps turning.
async fn beat(liveness: Arc<Liveness>, shard: usize) {
    loop {
        compio::time::sleep(liveness.beat_interval()).await;
        liveness.beat(shard);
    }
}

/// A lone node accepts clients once it has started
/// (`lone_node_starting`): before that a login would find no users and be
/// refused as bad credentials. The listeners are bound already, so a client
/// connecting meanwhile waits in the kernel's backlog.
async fn await_settled(ctx: &ServerContext) {
    while ctx.cluster.lone_node_starting() {
        compio::time::sleep(Duration::from_millis(2)).await;
    }
}

/// Starts every accept loop on shard 0, in the order the listeners were
/// bound; the HTTP socket (and its TLS acceptor) was bound with the others.
fn serve_listeners(shard: &Rc<Shard>, listeners: Listeners, settings: HttpSettings) {
    transport::serve(shard, listeners, |listener, tls| {
        http::serve(shard, listener, HttpSettings { tls, ..settings })
    });
}

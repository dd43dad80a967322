//! The start-up sequence, told in order. Each step lives in a leaf module;
//! this file only says what happens when.
//!
//!  1. Environment: the process environment plus `.env`; the
//!     `--with-default-root-credentials` flag fills in missing root variables.
//!  2. Configuration: defaults, file, environment; validated once, and a
//!     partition cache touched at start checked against the memory.
//!  3. Root credentials are resolved (before any thread starts).
//!  4. `--fresh` wipes the data directory (and nothing else ever does).
//!  5. The data directory is initialised or its format marker checked;
//!     an incompatible directory is refused before anything in it changes.
//!     Then the encryption keys are checked against its key check file
//!     (another key, or encryption off over encrypted data, is refused the
//!     same way).
//!  6. Logging starts (stdout and `<data>/logs/`).
//!  7. The runtime directory is recreated.
//!  8. Metadata is recovered from the journal; the root user is created
//!     when there are no users.
//!  9. Listeners are bound; shards start and shard 0 serves the listeners.
//! 10. The runtime dump is written with the bound addresses: ready, and a
//!     service manager that asked (`NOTIFY_SOCKET`) is told so; its
//!     watchdog is pinged while every shard keeps running.
//! 11. SIGINT/SIGTERM: tell the manager, stop accepting, drain, flush,
//!     exit 0.

mod adopt;
pub mod cluster;
pub mod data_dir;
pub mod encryption;
pub mod log_file;
pub mod logging;
mod memory;
pub mod root_credentials;
pub mod runtime_dump;

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use signal_hook::consts::{SIGINT, SIGTERM};
use signal_hook::iterator::Signals;
use tracing::{info, warn};

use crate::args::Args;
use crate::http::HttpSettings;
use crate::node::cluster_commit::ClusterStart;
use crate::node::context::Limits;
use crate::shard::plan;
use crate::shard::{ShardOptions, ShardSet};
use crate::transport::{self, BoundAddresses};
use server::config::{self, ConfigSources, NumaTopology, SYSFS_SYSTEM_ROOT, ServerConfig};
use server::notify::{Liveness, Message, Notifier};

pub fn run(args: Args) -> anyhow::Result<()> {
    let cwd = std::env::current_dir().context("cannot read the working directory")?;
    let (env, mut notes) = collect_environment(&args, &cwd)?;
    let loaded = config::load(&ConfigSources {
        env: env.clone(),
        cwd: cwd.clone(),
    })
    .map_err(anyhow::Error::msg)?;
    notes.extend(
        loaded
            .validate(args.replica_id)
            .map_err(anyhow::Error::msg)?,
    );
    let config = &loaded.config;
    memory::check_cache_prefault(&config.system.partition)?;
    // Every node of a larger cluster must create the same root user; a
    // roster of one may generate its password, as a single node does.
    let root = root_credentials::resolve(
        &env,
        config.cluster.enabled && config.cluster.nodes.len() > 1,
    )?;
    let notifier = Notifier::from_env(|name| lookup(&env, name))?;

    let data = cwd.join(&config.system.path);
    let wiped = args.fresh && data_dir::wipe(&data)?;
    let prepared = data_dir::prepare(&data)?;
    let encryption = encryption::prepare(&data, &config.system.encryption)?;
    let telemetry = crate::telemetry::start(&config.telemetry)?;
    let log_file = start_logging(config, &data, &env, telemetry.as_ref())?;
    info!(version = env!("CARGO_PKG_VERSION"), data = %data.display(), ?prepared, log_file = ?log_file, "starting iggy-server");
    if wiped {
        warn!(
            "--fresh: deleted the data directory {} before start-up",
            data.display()
        );
    }
    notes.extend(loaded.warnings.iter().cloned());
    if let Some(note) = &encryption.note {
        info!("{note}");
    }
    raise_open_files_limit(config.tcp.max_connections);
    notes.iter().for_each(|note| warn!("{note}"));
    loaded.applied_env.iter().for_each(|line| info!("{line}"));

    let runtime_dir = data.join(&config.system.runtime.path);
    runtime_dump::recreate_dir(&runtime_dir).with_context(|| {
        format!(
            "cannot recreate the runtime directory {}",
            runtime_dir.display()
        )
    })?;
    // Without `[cluster]` the single node runs as a roster of one: a group
    // of one for the metadata and for each partition, on the cluster's code.
    let implicit = (!config.cluster.enabled).then(|| cluster::implicit_roster(config));
    let mut cluster_start = cluster::prepare(
        implicit.as_ref().unwrap_or(config),
        args.replica_id,
        &data,
        &root,
    )?;
    cluster_start.implicit = implicit.is_some();
    if cluster_start.placement.replicas == 1 {
        adopt::single_node(&data)?;
    }
    let mut signals = Signals::new([SIGINT, SIGTERM]).context("cannot install signal handlers")?;
    let own_ip = cluster::effective_replica_id(config, args.replica_id)
        .and_then(|id| config.cluster.node(id))
        .map(|node| node.ip.as_str());
    let http_settings = HttpSettings::from_config(&config.http, &config.cluster, own_ip)?;
    let (listeners, bound) = transport::bind(config)?;
    cluster::fill_bound_ports(&mut cluster_start, &bound);
    let mut options = shard_options(config, &data, cluster_start)?;
    options.encryption = encryption.keyring;
    let liveness = notifier
        .ping_interval()
        .map(|ping| Arc::new(Liveness::new(options.specs.len(), ping)));
    options.liveness = liveness.clone();
    let mut shards = ShardSet::start(options, listeners, http_settings, &bound)?;
    if let Err(e) = shards.await_lone_cluster(LONE_CLUSTER_START) {
        shards.shutdown();
        return Err(e);
    }
    let dump = runtime_dump::write(&runtime_dir, &dump_contents(config, &bound))
        .with_context(|| format!("cannot write the runtime dump in {}", runtime_dir.display()))?;
    info!(dump = %dump.display(), tcp = ?bound.tcp, http = ?bound.http, "server ready");
    notifier.send(&Message::Ready {
        status: ready_status(&bound),
    });
    let watchdog = match liveness {
        Some(liveness) => notifier
            .start_watchdog(liveness)
            .context("cannot start the watchdog thread")?,
        None => None,
    };

    let signal = signals.forever().next().unwrap_or(SIGTERM);
    info!(signal, "shutting down");
    notifier.send(&Message::Stopping);
    if let Some(watchdog) = watchdog {
        watchdog.stop();
    }
    let problems = shards.shutdown();
    problems
        .iter()
        .for_each(|problem| notifier.send(&Message::Status(problem.clone())));
    info!(clean = problems.is_empty(), "stopped");
    if let Some(telemetry) = telemetry {
        telemetry.shutdown();
    }
    Ok(())
}

/// How long a roster of one may take to open its metadata group (replay
/// its journal) before the start-up fails.
const LONE_CLUSTER_START: Duration = Duration::from_secs(300);

fn lookup(env: &[(String, String)], name: &str) -> Option<String> {
    env.iter()
        .rev()
        .find(|(key, _)| key == name)
        .map(|(_, value)| value.clone())
}

/// The `STATUS=` text sent with `READY=1`: what is served where.
fn ready_status(bound: &BoundAddresses) -> String {
    let served = [
        ("tcp", bound.tcp),
        ("quic", bound.quic),
        ("http", bound.http),
        ("websocket", bound.websocket),
    ];
    let listeners: Vec<String> = served
        .iter()
        .filter_map(|(name, address)| address.map(|address| format!("{name} {address}")))
        .collect();
    format!("serving {}", listeners.join(", "))
}

/// The process environment plus `.env`, with the root-credentials flag
/// applied. Also returns notes to log once logging is up.
/// Environment variables as name/value pairs, in the order read.
type Environment = Vec<(String, String)>;

fn collect_environment(args: &Args, cwd: &Path) -> anyhow::Result<(Environment, Vec<String>)> {
    let mut env: Vec<(String, String)> = std::env::vars().collect();
    config::load_dotenv(&mut env, cwd).map_err(anyhow::Error::msg)?;
    let mut notes = Vec::new();
    if args.with_default_root_credentials
        && let Some(note) = root_credentials::apply_default_flag(&mut env)
    {
        notes.push(note);
    }
    Ok((env, notes))
}

fn start_logging(
    config: &ServerConfig,
    data: &Path,
    env: &[(String, String)],
    telemetry: Option<&crate::telemetry::Telemetry>,
) -> anyhow::Result<Option<PathBuf>> {
    let logging = &config.system.logging;
    let file_dir = logging.file_enabled.then(|| data.join(&logging.path));
    let rust_log = env
        .iter()
        .rev()
        .find(|(k, _)| k == "RUST_LOG")
        .map(|(_, v)| v.as_str());
    let rotation = log_file::RotationLimits {
        max_file_bytes: logging.max_file_size.as_bytes(),
        max_total_bytes: logging.max_total_size.as_bytes(),
        retention: Duration::from(logging.retention),
    };
    Ok(logging::init(&logging::LoggingOptions {
        level: &logging.level,
        rotation,
        rust_log,
        file_dir: file_dir.as_deref(),
        telemetry,
    })?)
}

fn shard_options(
    config: &ServerConfig,
    data: &Path,
    cluster: ClusterStart,
) -> anyhow::Result<ShardOptions> {
    let sharding = &config.system.sharding;
    let allowed: Vec<usize> = plan::allowed_cpus().into_iter().collect();
    let topology = NumaTopology::read(Path::new(SYSFS_SYSTEM_ROOT));
    let cpus = sharding
        .cpu_allocation
        .resolve(&allowed, topology.as_ref(), sharding.pin_cores)
        .map_err(|e| anyhow::anyhow!("system.sharding.cpu_allocation: {e}"))?;
    Ok(ShardOptions {
        specs: plan::specs(&cpus, sharding.pin_cores),
        data_path: data.to_owned(),
        limits: Limits {
            max_tokens_per_user: config.personal_access_token.max_tokens_per_user,
            clients_table_max: config.metadata.clients_table_max as usize,
            validate_checksum_on_read: config.system.partition.validate_checksum,
            direct_io: config.system.partition.direct_io,
            partition_cache_bytes: config.system.partition.cache_size.as_bytes(),
            partition_cache_prefault: config.system.partition.cache_prefault,
            write_behind_bytes: config.system.partition.write_behind.as_bytes(),
            cleaner_interval: config
                .data_maintenance
                .messages
                .cleaner_enabled
                .then(|| Duration::from(config.data_maintenance.messages.interval)),
            rebalancing_timeout: Duration::from(config.consumer_group.rebalancing_timeout),
            max_connections: config.tcp.max_connections as usize,
            idle_timeout: Some(Duration::from(config.tcp.idle_timeout)).filter(|d| !d.is_zero()),
            max_failed_logins: config.tcp.max_failed_logins,
            frame_timeout: Duration::from(config.tcp.frame_timeout),
            handshake_grace: Duration::from(config.message_bus.handshake_grace),
            heartbeat_interval: config
                .heartbeat
                .enabled
                .then(|| Duration::from(config.heartbeat.interval)),
            token_cleaner_interval: config
                .personal_access_token
                .cleaner
                .enabled
                .then(|| Duration::from(config.personal_access_token.cleaner.interval)),
        },
        inbox_capacity: sharding.inbox_capacity,
        frame_max_bytes: usize::try_from(config.message_bus.max_message_size.as_bytes())
            .unwrap_or(usize::MAX),
        drain_timeout: Duration::from(sharding.shutdown_drain_timeout),
        join_timeout: Duration::from(sharding.shutdown_join_timeout),
        idle_spin: Duration::from(sharding.idle_spin),
        encryption: None,
        liveness: None,
        cluster,
    })
}

/// The effective configuration: bound addresses replace configured ones, and
/// a transport that is not served is reported as disabled.
fn dump_contents(config: &ServerConfig, bound: &BoundAddresses) -> String {
    let mut effective = config.clone();
    let apply = |enabled: &mut bool,
                 address: &mut std::net::SocketAddr,
                 bound: Option<std::net::SocketAddr>| match bound {
        Some(addr) => *address = addr,
        None => *enabled = false,
    };
    apply(
        &mut effective.tcp.enabled,
        &mut effective.tcp.address,
        bound.tcp,
    );
    apply(
        &mut effective.http.enabled,
        &mut effective.http.address,
        bound.http,
    );
    apply(
        &mut effective.quic.enabled,
        &mut effective.quic.address,
        bound.quic,
    );
    apply(
        &mut effective.websocket.enabled,
        &mut effective.websocket.address,
        bound.websocket,
    );
    effective.to_runtime_toml()
}

/// Every connection holds a descriptor, and the default soft limit (often
/// 1024) is far below `tcp.max_connections`: raise the soft limit to the hard
/// one and warn when even that is short.
fn raise_open_files_limit(max_connections: u32) {
    let mut limit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit/setrlimit with a valid, owned struct.
    unsafe {
        if libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) != 0 {
            return;
        }
        if limit.rlim_cur < limit.rlim_max {
            let raised = libc::rlimit {
                rlim_cur: limit.rlim_max,
                rlim_max: limit.rlim_max,
            };
            if libc::setrlimit(libc::RLIMIT_NOFILE, &raised) == 0 {
                limit = raised;
            }
        }
    }
    // Descriptors for files, logs and the runtime besides connections.
    let wanted = u64::from(max_connections) + 1024;
    if limit.rlim_cur < wanted {
        tracing::warn!(
            open_files = limit.rlim_cur,
            "the open-files limit is below tcp.max_connections plus room for files; \
             connections beyond it will be refused by the kernel"
        );
    } else {
        info!(open_files = limit.rlim_cur, "open-files limit");
    }
}

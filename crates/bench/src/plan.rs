//! Turns parsed arguments into a validated [`Plan`]: how many actors of each
//! role, which stream and partition each one owns, how many batches each
//! sends or reads, and what gets seeded before a consumer-only run.
//!
//! All combination rules live here and run once, before any connection is
//! made, so an impossible request fails fast with a [`PlanError`]. Pinned
//! actor `i` (0-based) owns stream `i % streams`, partition `i / streams`;
//! the plan guarantees `streams * partitions >= actors`, so no two pinned
//! actors of one role share a partition.

use std::path::PathBuf;
use std::time::Duration;

use iggy::prelude::MAX_PAYLOAD_SIZE;

use crate::args::{BenchOptions, BenchmarkKind, Cli, Transport};
use crate::units::MessageSize;

pub const DEFAULT_ACTORS: u32 = 4;
pub const DEFAULT_MESSAGE_BATCHES: u64 = 1000;
/// Each actor holds its own connection; beyond this a run measures the client.
pub const MAX_ACTORS: u32 = 1024;
pub const TOPIC_NAME: &str = "bench-topic";
pub const CONSUMER_GROUP_NAME: &str = "bench-group";

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum PlanError {
    #[error("--{flag} must be at least 1")]
    Zero { flag: &'static str },
    #[error("{benchmark} does not use --{flag}")]
    UnusedFlag {
        benchmark: &'static str,
        flag: &'static str,
    },
    #[error("{actors} actors exceed the limit of {limit}")]
    TooManyActors { actors: u32, limit: u32 },
    #[error("give either --message-batches or --total-data, not both")]
    BatchesAndTotalData,
    #[error("message size range {min_bytes}..{max_bytes} is empty or starts at 0")]
    BadSizeRange { min_bytes: u32, max_bytes: u32 },
    #[error("message size {max_bytes} B exceeds the protocol maximum of {limit_bytes} B")]
    MessageTooLarge { max_bytes: u32, limit_bytes: u32 },
    #[error("--streams {streams} exceeds the {actors} actors: some streams would stay idle")]
    IdleStreams { streams: u32, actors: u32 },
    #[error(
        "{actors} pinned actors need {actors} partitions but {streams} streams x {partitions} \
         partitions give only {slots}"
    )]
    TooFewSlots {
        actors: u32,
        streams: u32,
        partitions: u32,
        slots: u32,
    },
    #[error(
        "a consumer group of {consumers} members needs at least {consumers} partitions, \
         got {partitions}"
    )]
    TooFewGroupPartitions { consumers: u32, partitions: u32 },
    #[error("{consumers} consumers but only {producers} producers: consumer N reads producer N")]
    ConsumersWithoutProducer { consumers: u32, producers: u32 },
    #[error(
        "end-to-end actors both produce and consume: --producers {producers} and --consumers {consumers} disagree"
    )]
    EndToEndCountsDisagree { producers: u32, consumers: u32 },
    #[error("--stream-prefix must not be empty")]
    EmptyPrefix,
    #[error(
        "--tls applies to the tcp and websocket transports (quic always encrypts; for https give an https:// address)"
    )]
    TlsTransport,
    #[error("--{flag} needs --tls")]
    TlsFlagWithoutTls { flag: &'static str },
}

/// 1-based actor number, unique across roles within one run. It doubles as
/// the consumer id of pinned consumers and as the high half of message ids.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ActorId(pub u32);

/// Where a producer writes or a consumer reads inside its stream's topic.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Placement {
    /// One explicit 0-based partition.
    Partition(u32),
    /// Producers: balanced partitioning. Consumers: the stream's consumer group.
    Balanced,
}

/// When a consumer stops.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ConsumeUntil {
    /// After this many messages (data seeded or left by an earlier run).
    Messages(u64),
    /// After everything the given producer sent, warm-up batches included.
    ProducerDone(ActorId),
    /// When the stream's consumer group as a whole has read this many.
    GroupDone(u64),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    Producer(Placement),
    Consumer(Placement, ConsumeUntil),
    EndToEnd(u32),
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ActorPlan {
    pub id: ActorId,
    pub role: Role,
    /// Index into [`Plan::streams`].
    pub stream_index: usize,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StreamPlan {
    pub name: String,
    pub partitions: u32,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Workload {
    pub message_size: MessageSize,
    pub messages_per_batch: u32,
    /// Measured batches for each producer (and the share each consumer reads).
    pub batches_per_actor: u64,
    pub rate_limit_bytes_per_sec: Option<u64>,
    pub warmup: Duration,
    pub idle_timeout: Duration,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConnectionPlan {
    pub transport: Transport,
    pub address: String,
    pub username: String,
    pub password: String,
    /// TLS on tcp or websocket.
    pub tls: Option<TlsPlan>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TlsPlan {
    pub domain: String,
    pub ca_file: Option<String>,
    pub verify: bool,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OutputPlan {
    pub dry_run: bool,
    pub json: bool,
    pub csv: Option<PathBuf>,
    pub progress: bool,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Plan {
    pub kind: BenchmarkKind,
    pub streams: Vec<StreamPlan>,
    pub actors: Vec<ActorPlan>,
    /// Unmeasured producers that fill the streams before a consumer-only run.
    pub seeders: Vec<ActorPlan>,
    pub workload: Workload,
    pub persisted: bool,
    pub consumer_group: bool,
    pub reuse_streams: bool,
    pub connection: ConnectionPlan,
    pub output: OutputPlan,
}

/// Actor counts and layout before actors are placed.
struct Shape {
    producers: u32,
    consumers: u32,
    streams: u32,
    partitions: u32,
}

impl Plan {
    pub fn from_cli(cli: &Cli) -> Result<Self, PlanError> {
        let options = &cli.options;
        let kind = cli.benchmark;
        check_workload_flags(options)?;
        let shape = shape_for(kind, options)?;
        let streams = (1..=shape.streams)
            .map(|n| StreamPlan {
                name: format!("{}-{n}", options.stream_prefix),
                partitions: shape.partitions,
            })
            .collect();
        let batches_per_actor = batches_per_actor(kind, options, &shape);
        let actors = place_actors(
            kind,
            &shape,
            batches_per_actor.saturating_mul(u64::from(options.messages_per_batch)),
        );
        let seeders = if options.reuse_streams {
            Vec::new()
        } else {
            seeders_for(&actors)
        };
        Ok(Self {
            kind,
            streams,
            actors,
            seeders,
            workload: Workload {
                message_size: options.message_size,
                messages_per_batch: options.messages_per_batch,
                batches_per_actor,
                rate_limit_bytes_per_sec: options.rate_limit,
                warmup: options.warmup_time,
                idle_timeout: options.idle_timeout,
            },
            persisted: options.fsync,
            consumer_group: kind == BenchmarkKind::BalancedConsumerGroup,
            reuse_streams: options.reuse_streams,
            connection: connection_for(options)?,
            output: OutputPlan {
                dry_run: options.dry_run,
                json: options.json,
                csv: options.csv.clone(),
                progress: !options.quiet,
            },
        })
    }

    /// Payload bytes `actor_count` actors are expected to move, each sending
    /// or reading its batches once (used for the progress line).
    pub fn expected_bytes(&self, actor_count: usize) -> f64 {
        let per_actor = self.workload.batches_per_actor as f64
            * f64::from(self.workload.messages_per_batch)
            * self.workload.message_size.average_bytes();
        per_actor * actor_count as f64
    }
}

impl std::fmt::Display for Plan {
    /// The `--dry-run` description: layout, volume, and every actor's seat.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let workload = &self.workload;
        let partitions = self.streams.first().map_or(0, |stream| stream.partitions);
        writeln!(
            f,
            "{}: {} actors on {} streams x {partitions} partitions (topic `{TOPIC_NAME}`{})",
            self.kind.name(),
            self.actors.len(),
            self.streams.len(),
            if self.persisted { ", persisted" } else { "" },
        )?;
        writeln!(
            f,
            "  {} batches x {} messages of {} per actor, ~{} measured",
            workload.batches_per_actor,
            workload.messages_per_batch,
            workload.message_size,
            crate::units::format_bytes(self.expected_bytes(self.actors.len())),
        )?;
        if !self.seeders.is_empty() {
            writeln!(
                f,
                "  seeding first: {} unmeasured producers",
                self.seeders.len()
            )?;
        }
        for actor in &self.actors {
            let stream = &self.streams[actor.stream_index].name;
            writeln!(
                f,
                "  actor {:<3} {stream:<12} {}",
                actor.id.0,
                describe_role(&actor.role)
            )?;
        }
        Ok(())
    }
}

fn describe_role(role: &Role) -> String {
    let place = |placement: &Placement| match placement {
        Placement::Partition(partition) => format!("partition {partition}"),
        Placement::Balanced => "balanced".to_string(),
    };
    match role {
        Role::Producer(placement) => format!("producer  {}", place(placement)),
        Role::EndToEnd(partition) => format!("end-to-end  partition {partition}"),
        Role::Consumer(placement, until) => {
            let until = match until {
                ConsumeUntil::Messages(count) => format!("{count} messages"),
                ConsumeUntil::ProducerDone(producer) => format!("all of actor {}", producer.0),
                ConsumeUntil::GroupDone(count) => format!("group reads {count}"),
            };
            let place = match placement {
                Placement::Balanced => format!("group `{CONSUMER_GROUP_NAME}`"),
                other => place(other),
            };
            format!("consumer  {place}, until {until}")
        }
    }
}

fn check_workload_flags(options: &BenchOptions) -> Result<(), PlanError> {
    if options.messages_per_batch == 0 {
        return Err(PlanError::Zero {
            flag: "messages-per-batch",
        });
    }
    if options.message_batches == Some(0) {
        return Err(PlanError::Zero {
            flag: "message-batches",
        });
    }
    if options.total_data == Some(0) {
        return Err(PlanError::Zero { flag: "total-data" });
    }
    if options.message_batches.is_some() && options.total_data.is_some() {
        return Err(PlanError::BatchesAndTotalData);
    }
    let size = options.message_size;
    if size.min_bytes == 0 || size.min_bytes > size.max_bytes {
        return Err(PlanError::BadSizeRange {
            min_bytes: size.min_bytes,
            max_bytes: size.max_bytes,
        });
    }
    if size.max_bytes > MAX_PAYLOAD_SIZE {
        return Err(PlanError::MessageTooLarge {
            max_bytes: size.max_bytes,
            limit_bytes: MAX_PAYLOAD_SIZE,
        });
    }
    if options.stream_prefix.is_empty() {
        return Err(PlanError::EmptyPrefix);
    }
    Ok(())
}

fn nonzero(value: Option<u32>, flag: &'static str) -> Result<Option<u32>, PlanError> {
    match value {
        Some(0) => Err(PlanError::Zero { flag }),
        other => Ok(other),
    }
}

fn reject(value: Option<u32>, kind: BenchmarkKind, flag: &'static str) -> Result<(), PlanError> {
    match value {
        Some(_) => Err(PlanError::UnusedFlag {
            benchmark: kind.name(),
            flag,
        }),
        None => Ok(()),
    }
}

/// Producer and consumer counts for the benchmark, with its defaults.
fn actor_counts(kind: BenchmarkKind, options: &BenchOptions) -> Result<(u32, u32), PlanError> {
    use BenchmarkKind as K;
    let producers = nonzero(options.producers, "producers")?;
    let consumers = nonzero(options.consumers, "consumers")?;
    match kind {
        K::PinnedProducer | K::BalancedProducer => {
            reject(consumers, kind, "consumers")?;
            Ok((producers.unwrap_or(DEFAULT_ACTORS), 0))
        }
        K::PinnedConsumer | K::BalancedConsumerGroup => {
            reject(producers, kind, "producers")?;
            Ok((0, consumers.unwrap_or(DEFAULT_ACTORS)))
        }
        K::PinnedProducerAndConsumer => {
            let producers = producers.unwrap_or(DEFAULT_ACTORS);
            let consumers = consumers.unwrap_or(producers);
            if consumers > producers {
                return Err(PlanError::ConsumersWithoutProducer {
                    consumers,
                    producers,
                });
            }
            Ok((producers, consumers))
        }
        K::EndToEndProducingConsumer => match (producers, consumers) {
            (Some(p), Some(c)) if p != c => Err(PlanError::EndToEndCountsDisagree {
                producers: p,
                consumers: c,
            }),
            (p, c) => Ok((p.or(c).unwrap_or(DEFAULT_ACTORS), 0)),
        },
    }
}

fn is_pinned(kind: BenchmarkKind) -> bool {
    !matches!(
        kind,
        BenchmarkKind::BalancedProducer | BenchmarkKind::BalancedConsumerGroup
    )
}

fn shape_for(kind: BenchmarkKind, options: &BenchOptions) -> Result<Shape, PlanError> {
    let (producers, consumers) = actor_counts(kind, options)?;
    let total = producers.saturating_add(consumers);
    if total > MAX_ACTORS {
        return Err(PlanError::TooManyActors {
            actors: total,
            limit: MAX_ACTORS,
        });
    }
    // The actors that own slots: producers whenever there are any.
    let actors = producers.max(consumers);
    let pinned = is_pinned(kind);
    let streams = nonzero(options.streams, "streams")?.unwrap_or(if pinned { actors } else { 1 });
    if streams > actors {
        return Err(PlanError::IdleStreams { streams, actors });
    }
    let actors_per_stream = actors.div_ceil(streams);
    let partitions = nonzero(options.partitions, "partitions")?.unwrap_or(actors_per_stream);
    // Both factors may be large; saturating keeps the comparison meaningful.
    let slots = streams.saturating_mul(partitions);
    if pinned && slots < actors {
        return Err(PlanError::TooFewSlots {
            actors,
            streams,
            partitions,
            slots,
        });
    }
    if kind == BenchmarkKind::BalancedConsumerGroup && partitions < actors_per_stream {
        return Err(PlanError::TooFewGroupPartitions {
            consumers: actors_per_stream,
            partitions,
        });
    }
    Ok(Shape {
        producers,
        consumers,
        streams,
        partitions,
    })
}

fn batches_per_actor(kind: BenchmarkKind, options: &BenchOptions, shape: &Shape) -> u64 {
    let Some(total_bytes) = options.total_data else {
        return options.message_batches.unwrap_or(DEFAULT_MESSAGE_BATCHES);
    };
    // Data is counted once, on the side that creates it: producers when the
    // benchmark has any, else the consumers (whose data is seeded).
    let data_actors = match kind {
        BenchmarkKind::EndToEndProducingConsumer => shape.producers,
        _ if shape.producers > 0 => shape.producers,
        _ => shape.consumers,
    };
    let per_batch_bytes =
        f64::from(options.messages_per_batch) * options.message_size.average_bytes();
    let batches = (total_bytes as f64 / (f64::from(data_actors) * per_batch_bytes)).ceil();
    (batches as u64).max(1)
}

fn place_actors(kind: BenchmarkKind, shape: &Shape, messages_per_actor: u64) -> Vec<ActorPlan> {
    let streams = shape.streams;
    let mut roles: Vec<(Role, u32)> = Vec::new();
    for index in 0..shape.producers {
        let (stream, partition) = (index % streams, index / streams);
        roles.push(match kind {
            BenchmarkKind::EndToEndProducingConsumer => (Role::EndToEnd(partition), stream),
            BenchmarkKind::BalancedProducer => (Role::Producer(Placement::Balanced), stream),
            _ => (Role::Producer(Placement::Partition(partition)), stream),
        });
    }
    for index in 0..shape.consumers {
        let (stream, partition) = (index % streams, index / streams);
        let pinned = Placement::Partition(partition);
        roles.push(match kind {
            BenchmarkKind::PinnedProducerAndConsumer => {
                // Producers take ids 1..=producers, so producer `index` is `index + 1`.
                let until = ConsumeUntil::ProducerDone(ActorId(index + 1));
                (Role::Consumer(pinned, until), stream)
            }
            BenchmarkKind::BalancedConsumerGroup => {
                let members = group_members(shape.consumers, streams, stream);
                let until =
                    ConsumeUntil::GroupDone(messages_per_actor.saturating_mul(u64::from(members)));
                (Role::Consumer(Placement::Balanced, until), stream)
            }
            _ => {
                let until = ConsumeUntil::Messages(messages_per_actor);
                (Role::Consumer(pinned, until), stream)
            }
        });
    }
    roles
        .into_iter()
        .zip(1..)
        .map(|((role, stream), id)| ActorPlan {
            id: ActorId(id),
            role,
            stream_index: stream as usize,
        })
        .collect()
}

/// Consumers placed round-robin on `streams` streams: how many land on `stream`.
fn group_members(consumers: u32, streams: u32, stream: u32) -> u32 {
    consumers / streams + u32::from(stream < consumers % streams)
}

/// One unmeasured producer per consumer of a consumer-only benchmark, writing
/// exactly what that consumer will read.
fn seeders_for(actors: &[ActorPlan]) -> Vec<ActorPlan> {
    let has_producers = actors
        .iter()
        .any(|actor| !matches!(actor.role, Role::Consumer(..)));
    if has_producers {
        return Vec::new();
    }
    actors
        .iter()
        .filter_map(|consumer| match consumer.role {
            Role::Consumer(placement, _) => Some(ActorPlan {
                id: consumer.id,
                role: Role::Producer(placement),
                stream_index: consumer.stream_index,
            }),
            _ => None,
        })
        .collect()
}

fn connection_for(options: &BenchOptions) -> Result<ConnectionPlan, PlanError> {
    let address = match (&options.server_address, options.transport) {
        (Some(address), Transport::Http) if !address.contains("://") => {
            format!("http://{address}")
        }
        (Some(address), _) => address.clone(),
        (None, Transport::Tcp) => "127.0.0.1:8090".to_string(),
        (None, Transport::Http) => "http://127.0.0.1:3000".to_string(),
        (None, Transport::Quic) => "127.0.0.1:8080".to_string(),
        (None, Transport::WebSocket) => "127.0.0.1:8092".to_string(),
    };
    Ok(ConnectionPlan {
        transport: options.transport,
        address,
        username: options.username.clone(),
        password: options.password.clone(),
        tls: tls_for(options)?,
    })
}

fn tls_for(options: &BenchOptions) -> Result<Option<TlsPlan>, PlanError> {
    if !options.tls {
        if options.tls_ca_file.is_some() {
            return Err(PlanError::TlsFlagWithoutTls {
                flag: "tls-ca-file",
            });
        }
        if options.tls_no_verify {
            return Err(PlanError::TlsFlagWithoutTls {
                flag: "tls-no-verify",
            });
        }
        return Ok(None);
    }
    if !matches!(options.transport, Transport::Tcp | Transport::WebSocket) {
        return Err(PlanError::TlsTransport);
    }
    Ok(Some(TlsPlan {
        domain: options.tls_domain.clone(),
        ca_file: options.tls_ca_file.clone(),
        verify: !options.tls_no_verify,
    }))
}

#[cfg(test)]
mod tests;

//! Running one phase (seeding or measuring) of a benchmark.
//!
//! Order: connect one client per actor, start the clock, wire up what
//! actors share (producer tallies, per-stream group counters), spawn every
//! actor into a `JoinSet`, then collect reports. The first actor error ends
//! the phase; dropping the `JoinSet` aborts the remaining actors, which is
//! also what happens when the caller's future is dropped on Ctrl-C.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::AtomicU64;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use anyhow::Context;
use iggy::prelude::IggyClient;
use tokio::task::JoinSet;

use crate::actors::consumer::ConsumerActor;
use crate::actors::e2e::EndToEnd;
use crate::actors::producer::Producer;
use crate::actors::{ActorReport, ProducerTally, RunContext, StopRule};
use crate::client;
use crate::plan::{ActorId, ActorPlan, ConsumeUntil, Plan, Role};
use crate::progress::{Progress, Ticker};
use crate::setup::{StreamHandle, Topology};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Phase {
    /// Unmeasured, unthrottled filling of streams for a consumer-only run.
    Seed,
    Measure,
}

/// What a finished measured phase hands to the report.
#[derive(Debug)]
pub struct PhaseOutcome {
    pub reports: Vec<ActorReport>,
    pub measure_from_us: u64,
}

/// Shared state that lets actors agree on when to stop.
#[derive(Default)]
struct Coordination {
    tallies: HashMap<ActorId, Arc<ProducerTally>>,
    groups: HashMap<usize, Arc<AtomicU64>>,
}

pub async fn run_phase(
    plan: &Plan,
    topology: &Topology,
    actors: &[ActorPlan],
    phase: Phase,
) -> anyhow::Result<PhaseOutcome> {
    let mut clients = Vec::with_capacity(actors.len());
    for actor in actors {
        let client = client::connect(&plan.connection)
            .await
            .with_context(|| format!("actor {}", actor.id.0))?;
        clients.push(client);
    }
    // The clock starts once every actor is connected.
    let context = Arc::new(context_for(plan, phase));
    let coordination = coordinate(actors);
    let _ticker = plan.output.progress.then(|| {
        let label = match phase {
            Phase::Seed => "seeding",
            Phase::Measure => plan.kind.name(),
        };
        let target_bytes = plan.expected_bytes(actors.len());
        Ticker::start(
            context.progress.clone(),
            label,
            target_bytes,
            context.measure_from,
        )
    });
    let mut running = JoinSet::new();
    for (actor, client) in actors.iter().zip(clients) {
        let stream = topology
            .streams
            .get(actor.stream_index)
            .context("setup did not prepare every stream")?
            .clone();
        let seat = Seat {
            client,
            context: context.clone(),
            actor: actor.clone(),
            stream,
        };
        spawn_actor(&mut running, seat, &coordination)?;
    }
    let mut reports = Vec::with_capacity(actors.len());
    while let Some(joined) = running.join_next().await {
        reports.push(joined.context("an actor task panicked")??);
    }
    reports.sort_by_key(|report| report.actor.id);
    Ok(PhaseOutcome {
        reports,
        measure_from_us: context.measure_from_us(),
    })
}

/// What every actor starts with, whatever its role.
struct Seat {
    client: IggyClient,
    context: Arc<RunContext>,
    actor: ActorPlan,
    stream: StreamHandle,
}

fn spawn_actor(
    running: &mut JoinSet<anyhow::Result<ActorReport>>,
    seat: Seat,
    coordination: &Coordination,
) -> anyhow::Result<()> {
    let Seat {
        client,
        context,
        actor,
        stream,
    } = seat;
    match actor.role {
        Role::Producer(placement) => {
            let tally = coordination.tallies.get(&actor.id).cloned();
            let producer = Producer {
                client,
                context,
                actor,
                placement,
                stream,
                tally,
            };
            running.spawn(producer.run());
        }
        Role::Consumer(placement, until) => {
            let stop = stop_rule(coordination, &actor, until)?;
            let consumer = ConsumerActor {
                client,
                context,
                actor,
                placement,
                stream,
                stop,
            };
            running.spawn(consumer.run());
        }
        Role::EndToEnd(partition) => {
            let e2e = EndToEnd {
                client,
                context,
                actor,
                partition,
                stream,
            };
            running.spawn(e2e.run());
        }
    }
    Ok(())
}

fn context_for(plan: &Plan, phase: Phase) -> RunContext {
    let mut workload = plan.workload.clone();
    if phase == Phase::Seed {
        workload.rate_limit_bytes_per_sec = None;
        workload.warmup = Duration::ZERO;
    }
    let run_start = Instant::now();
    RunContext {
        measure_from: run_start + workload.warmup,
        workload,
        run_start,
        progress: Arc::new(Progress::default()),
        // The SDK's HTTP client cannot encode a message id above u64::MAX,
        // and the nonce fills the id's high half: HTTP runs go without it.
        run_nonce: if plan.connection.transport == crate::args::Transport::Http {
            0
        } else {
            run_nonce()
        },
    }
}

/// Microseconds since the epoch: distinct for every run on one machine.
fn run_nonce() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |since| since.as_micros() as u64)
}

fn coordinate(actors: &[ActorPlan]) -> Coordination {
    let mut coordination = Coordination::default();
    for actor in actors {
        match actor.role {
            Role::Consumer(_, ConsumeUntil::ProducerDone(producer)) => {
                coordination.tallies.entry(producer).or_default();
            }
            Role::Consumer(_, ConsumeUntil::GroupDone(_)) => {
                coordination.groups.entry(actor.stream_index).or_default();
            }
            _ => {}
        }
    }
    coordination
}

fn stop_rule(
    coordination: &Coordination,
    actor: &ActorPlan,
    until: ConsumeUntil,
) -> anyhow::Result<StopRule> {
    Ok(match until {
        ConsumeUntil::Messages(count) => StopRule::Messages(count),
        ConsumeUntil::ProducerDone(producer) => StopRule::FollowProducer(
            coordination
                .tallies
                .get(&producer)
                .cloned()
                .context("a consumer follows a producer that is not in this phase")?,
        ),
        ConsumeUntil::GroupDone(target) => StopRule::Group {
            consumed: coordination
                .groups
                .get(&actor.stream_index)
                .cloned()
                .context("a group member has no group counter")?,
            target,
        },
    })
}

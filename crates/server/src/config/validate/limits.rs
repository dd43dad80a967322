//! Rules of the consensus and bus limits: `[metadata]`, `[partition]` and
//! `[message_bus]`, including the cross-key bounds between them.

use super::{in_range, non_zero, quoted, require};
use crate::config::error::ConfigError;
use crate::config::schema::ServerConfig;
use crate::config::values::ByteSize;

/// The view-change bitset tracks at most 127 uncommitted operations.
const PREPARE_QUEUE_DEPTH_MIN: u32 = 1;
const PREPARE_QUEUE_DEPTH_MAX: u32 = 127;
/// Journal slots cover this many queues of at least this depth.
const JOURNAL_SLOTS_PER_QUEUE: u32 = 4;
const JOURNAL_QUEUE_DEPTH_FLOOR: u32 = 64;
const JOURNAL_SLOTS_MAX: u32 = 1_048_576;
const CLIENTS_TABLE_MIN: u32 = 2;
const CLIENTS_TABLE_MAX: u32 = 65_536;
const EVICTED_RING_CAPACITY_MIN: u32 = 1;
const EVICTED_RING_CAPACITY_MAX: u32 = 65_536;
const EVICTED_RING_BYTES_LIMIT: ByteSize = ByteSize::mib(256);
const TRANSFER_BYTES_LIMIT: ByteSize = ByteSize::gib(64);
/// A received transfer artifact holds up to 1 GiB plus one bus frame.
const TRANSFER_ARTIFACT_BASE: ByteSize = ByteSize::gib(1);
/// Served-transfer budget should fit this many artifacts at once.
const CONCURRENT_TRANSFERS_MIN: u64 = 2;
const MESSAGE_BUS_BATCH_MIN: u32 = 1;
const MESSAGE_BUS_BATCH_MAX: u32 = 512;
/// A bus frame must hold more than its 256-byte header.
const MESSAGE_BUS_FRAME_FLOOR: ByteSize = ByteSize::new(256);

pub(super) fn validate(
    config: &ServerConfig,
    warnings: &mut Vec<String>,
) -> Result<(), ConfigError> {
    validate_metadata(config)?;
    validate_partition(config, warnings)?;
    validate_message_bus(config)
}

fn validate_metadata(config: &ServerConfig) -> Result<(), ConfigError> {
    let metadata = &config.metadata;
    let depth = metadata.prepare_queue_depth;
    in_range(
        "metadata.prepare_queue_depth",
        depth,
        PREPARE_QUEUE_DEPTH_MIN,
        PREPARE_QUEUE_DEPTH_MAX,
    )?;
    let slots_min = JOURNAL_SLOTS_PER_QUEUE * depth.max(JOURNAL_QUEUE_DEPTH_FLOOR);
    in_range(
        "metadata.journal_slots",
        metadata.journal_slots,
        slots_min,
        JOURNAL_SLOTS_MAX,
    )?;
    in_range(
        "metadata.clients_table_max",
        metadata.clients_table_max,
        CLIENTS_TABLE_MIN,
        CLIENTS_TABLE_MAX,
    )
}

fn validate_partition(
    config: &ServerConfig,
    warnings: &mut Vec<String>,
) -> Result<(), ConfigError> {
    let partition = &config.partition;
    let depth = partition.prepare_queue_depth;
    in_range(
        "partition.prepare_queue_depth",
        depth,
        PREPARE_QUEUE_DEPTH_MIN,
        PREPARE_QUEUE_DEPTH_MAX,
    )?;
    in_range(
        "partition.evicted_ring_capacity",
        partition.evicted_ring_capacity,
        EVICTED_RING_CAPACITY_MIN,
        EVICTED_RING_CAPACITY_MAX,
    )?;
    let ring_bytes = partition.evicted_ring_bytes_max;
    let allowed = format!("at most {EVICTED_RING_BYTES_LIMIT}");
    require(
        ring_bytes <= EVICTED_RING_BYTES_LIMIT,
        "partition.evicted_ring_bytes_max",
        quoted(ring_bytes),
        &allowed,
    )?;
    let served = partition.transfer_served_cache_bytes_max;
    let allowed = format!("at most {TRANSFER_BYTES_LIMIT}");
    require(
        served <= TRANSFER_BYTES_LIMIT,
        "partition.transfer_served_cache_bytes_max",
        quoted(served),
        &allowed,
    )?;
    let artifact = partition.transfer_artifact_bytes_max;
    let bus_frame = config.message_bus.max_message_size;
    let artifact_min = ByteSize::new(
        TRANSFER_ARTIFACT_BASE
            .as_bytes()
            .saturating_add(bus_frame.as_bytes()),
    );
    let allowed = format!(
        "at least {TRANSFER_ARTIFACT_BASE} + message_bus.max_message_size ({bus_frame}) = {artifact_min}, \
         and at most {TRANSFER_BYTES_LIMIT}"
    );
    require(
        artifact >= artifact_min && artifact <= TRANSFER_BYTES_LIMIT,
        "partition.transfer_artifact_bytes_max",
        quoted(artifact),
        &allowed,
    )?;
    if served.as_bytes() < artifact.as_bytes().saturating_mul(CONCURRENT_TRANSFERS_MIN) {
        warnings.push(format!(
            "partition.transfer_served_cache_bytes_max ({served}) allows fewer than {CONCURRENT_TRANSFERS_MIN} \
             concurrent served transfers of partition.transfer_artifact_bytes_max ({artifact})"
        ));
    }
    Ok(())
}

fn validate_message_bus(config: &ServerConfig) -> Result<(), ConfigError> {
    let bus = &config.message_bus;
    in_range(
        "message_bus.max_batch",
        bus.max_batch,
        MESSAGE_BUS_BATCH_MIN,
        MESSAGE_BUS_BATCH_MAX,
    )?;
    let allowed = format!("more than {MESSAGE_BUS_FRAME_FLOOR}");
    require(
        bus.max_message_size > MESSAGE_BUS_FRAME_FLOOR,
        "message_bus.max_message_size",
        quoted(bus.max_message_size),
        &allowed,
    )?;
    require(
        bus.peer_queue_capacity > 0,
        "message_bus.peer_queue_capacity",
        bus.peer_queue_capacity,
        "greater than 0",
    )?;
    for (key, interval) in [
        ("message_bus.reconnect_period", bus.reconnect_period),
        ("message_bus.close_peer_timeout", bus.close_peer_timeout),
        ("message_bus.close_grace", bus.close_grace),
        ("message_bus.handshake_grace", bus.handshake_grace),
    ] {
        non_zero(key, interval)?;
    }
    Ok(())
}

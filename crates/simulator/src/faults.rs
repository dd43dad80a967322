//! The fault rates of a run, drawn from its seed.

use consensus::vsr::Limits;

use crate::prng::Prng;

/// Fault rates, drawn from the seed (swarm testing): some runs are calm,
/// some stormy, some lose most messages.
#[derive(Debug, Clone, Copy)]
pub struct Faults {
    /// How far each replica's clock may be from true time, in ticks.
    pub clock_skew_ticks_max: u64,
    pub loss_per_million: u32,
    pub duplicate_per_million: u32,
    pub delay_ticks_max: u64,
    pub crash_per_million: u32,
    pub crash_mid_actions_per_million: u32,
    pub partition_per_million: u32,
    /// Chance that a crash also damages one journal entry on that disk.
    pub corrupt_on_crash_per_million: u32,
    /// Chance that a crashed replica is wiped and restarted blank.
    pub wipe_on_crash_per_million: u32,
    /// Chance that damage to one node's disk is followed by the crash of
    /// another node while the first recovers (the second failure that
    /// makes a lost copy matter).
    pub second_crash_per_million: u32,
    /// Chance that a crash is a power loss: unsynced appended entries may
    /// survive in part.
    pub power_loss_per_million: u32,
    /// Every node boots blank and the group starts by the genesis rule
    /// (every replica reports blank), instead of booting in view 0.
    pub cold_start: bool,
    /// Checkpoint spacing and state chunk size (small, so that journals
    /// are cut often and transfers take several chunks).
    pub limits: Limits,
    /// Checkpoints complete up to this many ticks after the replica asks
    /// (written beside the group, as the server's partition groups do);
    /// 0: at once. Drawn from its own stream.
    pub checkpoint_delay_ticks_max: u64,
}

impl Faults {
    pub(crate) fn draw(rng: &mut Prng) -> Faults {
        Faults {
            clock_skew_ticks_max: rng.below(500),
            loss_per_million: rng.below(150_000) as u32,
            duplicate_per_million: rng.below(50_000) as u32,
            delay_ticks_max: 1 + rng.below(20),
            crash_per_million: rng.below(2_000) as u32,
            crash_mid_actions_per_million: rng.below(20_000) as u32,
            partition_per_million: rng.below(5_000) as u32,
            corrupt_on_crash_per_million: rng.below(400_000) as u32,
            wipe_on_crash_per_million: rng.below(300_000) as u32,
            second_crash_per_million: rng.below(1_000_000) as u32,
            cold_start: rng.below(2) == 0,
            power_loss_per_million: rng.below(600_000) as u32,
            limits: {
                // One run in four never checkpoints by op count.
                let checkpoint_interval = match rng.below(4) {
                    0 => 1 << 40,
                    _ => 4 + rng.below(45),
                };
                let state_chunk_max = 8 + rng.below(57) as usize;
                Limits {
                    checkpoint_interval,
                    // A third of the runs also checkpoint by a byte budget
                    // (drawn from nothing new, so every seed's other draws
                    // stay as they were).
                    checkpoint_bytes: match checkpoint_interval % 3 {
                        0 => 16 * state_chunk_max as u64,
                        _ => u64::MAX,
                    },
                    state_chunk_max,
                }
            },
            checkpoint_delay_ticks_max: 0,
        }
    }
}

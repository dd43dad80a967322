//! The simulator in the suite: a range of seeds passes every invariant, and
//! one seed replays bit for bit. Longer runs: `cargo run --release -p
//! simulator -- --seeds 1..100000` (docs/replication.md).

use simulator::{Options, run};

/// Seeds run in the regular suite (debug build, a few seconds).
const SUITE_SEEDS: std::ops::Range<u64> = 1..400;

#[test]
fn given_suite_seeds_when_simulated_should_keep_every_invariant() {
    let mut committed = 0;
    for seed in SUITE_SEEDS {
        match run(Options::for_seed(seed)) {
            Ok(report) => committed += report.committed,
            Err(failure) => panic!(
                "seed {} failed at tick {}: {}",
                failure.seed, failure.tick, failure.reason
            ),
        }
    }
    assert!(
        committed > 20 * SUITE_SEEDS.count(),
        "the workload made progress"
    );
}

#[test]
fn given_one_seed_when_run_twice_should_give_the_same_trace() {
    let first = run(Options::for_seed(42)).expect("seed 42 passes");
    let second = run(Options::for_seed(42)).expect("seed 42 passes");
    assert_eq!(first, second, "a seed replays exactly");
    let other = run(Options::for_seed(43)).expect("seed 43 passes");
    assert_ne!(first.trace, other.trace, "another seed is another run");
}

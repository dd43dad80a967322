//! Each planted bug is caught: with it compiled in and selected, some seed
//! of a small range breaks an invariant (a failed check or a replica's
//! assertion). Run by `scripts/test.sh` with `--features planted-bugs`.
#![cfg(feature = "planted-bugs")]

use consensus::vsr::planted::{Bug, plant};
use simulator::{Options, run};

/// Seeds tried per bug; each is caught within this on the development
/// machine (first failing seeds 1, 1, 48 and 46 of 1..1000).
const SEEDS: std::ops::Range<u64> = 1..400;

fn first_failing_seed() -> Option<u64> {
    SEEDS.into_iter().find(|&seed| {
        let outcome = std::panic::catch_unwind(|| run(Options::for_seed(seed)));
        !matches!(outcome, Ok(Ok(_)))
    })
}

#[test]
fn given_each_planted_bug_when_simulating_should_break_an_invariant() {
    std::panic::set_hook(Box::new(|_| {}));
    for (name, bug) in Bug::ALL {
        plant(bug);
        let caught = first_failing_seed();
        plant(Bug::None);
        assert!(
            caught.is_some(),
            "planted bug {name} survived seeds {SEEDS:?}"
        );
    }
}

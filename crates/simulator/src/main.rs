//! `simulator --seed N` replays one run; `--seeds A..B` runs a range and
//! ends with `N seeds passed, N failed` (exit 1 on any failure, naming the
//! seed and the broken invariant).

use std::process::ExitCode;

use simulator::{Options, run};

fn usage() -> ExitCode {
    eprintln!("usage: simulator (--seed N | --seeds A..B) [--planted-bug NAME]");
    ExitCode::from(2)
}

/// Takes `--planted-bug NAME` off the arguments and plants it (only in a
/// build with the `planted-bugs` feature).
fn plant_bug(args: &mut Vec<String>) -> Result<(), String> {
    let Some(at) = args.iter().position(|a| a == "--planted-bug") else {
        return Ok(());
    };
    let name = args
        .get(at + 1)
        .cloned()
        .ok_or("--planted-bug needs a name")?;
    args.drain(at..at + 2);
    #[cfg(feature = "planted-bugs")]
    {
        use consensus::vsr::planted::{Bug, plant};
        let bug = Bug::named(&name).ok_or_else(|| format!("no planted bug {name:?}"))?;
        plant(bug);
        Ok(())
    }
    #[cfg(not(feature = "planted-bugs"))]
    Err(format!(
        "--planted-bug {name}: build with --features planted-bugs"
    ))
}

fn parse_range(text: &str) -> Option<(u64, u64)> {
    let (a, b) = text.split_once("..")?;
    Some((a.parse().ok()?, b.parse().ok()?))
}

fn main() -> ExitCode {
    let mut args: Vec<String> = std::env::args().skip(1).collect();
    if let Err(e) = plant_bug(&mut args) {
        eprintln!("simulator: {e}");
        return ExitCode::from(2);
    }
    let seeds = match args.as_slice() {
        [flag, n] if flag == "--seed" => match n.parse::<u64>() {
            Ok(n) => n..n + 1,
            Err(_) => return usage(),
        },
        [flag, range] if flag == "--seeds" => match parse_range(range) {
            Some((a, b)) if a < b => a..b,
            _ => return usage(),
        },
        _ => return usage(),
    };
    let single = seeds.end - seeds.start == 1;
    let (mut passed, mut failed) = (0u64, 0u64);
    // A replica's assertion failing is a found bug like any other: report
    // the seed and go on.
    std::panic::set_hook(Box::new(|_| {}));
    for seed in seeds {
        let outcome = std::panic::catch_unwind(|| run(Options::for_seed(seed)));
        let outcome = outcome.unwrap_or_else(|panic| {
            let reason = panic
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| panic.downcast_ref::<&str>().map(|s| (*s).to_owned()))
                .unwrap_or_default();
            Err(simulator::Failure {
                seed,
                tick: simulator::current_tick(),
                reason: format!("assertion: {reason}"),
            })
        });
        match outcome {
            Ok(report) => {
                passed += 1;
                if single {
                    println!("{report:?}");
                }
            }
            Err(failure) => {
                failed += 1;
                println!(
                    "seed {} failed at tick {}: {}",
                    failure.seed, failure.tick, failure.reason
                );
            }
        }
    }
    println!("{passed} seeds passed, {failed} failed");
    if failed == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}

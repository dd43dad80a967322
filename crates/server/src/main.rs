//! `iggy-server`: parse flags, then run the boot sequence (see `boot`).

mod allocator;
mod args;
mod boot;
mod diagnostics;
mod handlers;
mod http;
mod metrics;
mod node;
mod session;
mod shard;
mod telemetry;
mod transport;

use std::process::ExitCode;

fn main() -> ExitCode {
    allocator::tune();
    let args = match args::parse(std::env::args_os().skip(1)) {
        Ok(args::Parsed::Run(args)) => args,
        Ok(args::Parsed::Help) => {
            print!("{}", args::USAGE);
            return ExitCode::SUCCESS;
        }
        Ok(args::Parsed::Version) => {
            println!("iggy-server {}", env!("CARGO_PKG_VERSION"));
            return ExitCode::SUCCESS;
        }
        Err(e) => {
            eprintln!("iggy-server: {e}");
            return ExitCode::from(2);
        }
    };
    match boot::run(args) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            tracing::error!("start-up failed: {e:#}");
            eprintln!("iggy-server: {e:#}");
            ExitCode::FAILURE
        }
    }
}

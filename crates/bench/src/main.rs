//! `iggy-bench`: a load generator for Iggy-compatible servers, built on the
//! published `iggy` SDK.
//!
//! The run, in order: parse and validate a [`plan::Plan`]; connect a setup
//! client; create the streams ([`setup`]); seed them if a consumer-only
//! benchmark needs data; run the measured phase ([`run`]); print the report
//! ([`report`]); and always delete what this run created, whether it
//! finished, failed, or was interrupted with Ctrl-C.

mod actors;
mod args;
mod batch;
mod client;
mod plan;
mod progress;
mod rate;
mod report;
mod run;
mod setup;
mod stats;
mod units;

use std::process::ExitCode;

use anyhow::Context;
use clap::Parser;
use iggy::prelude::IggyClient;

use crate::args::Cli;
use crate::plan::Plan;
use crate::report::BenchReport;
use crate::run::Phase;
use crate::setup::Topology;

/// Exit code of a run stopped by Ctrl-C (128 + SIGINT), as shells expect.
const EXIT_INTERRUPTED: u8 = 130;

enum Ending {
    Finished(Box<BenchReport>),
    Failed(anyhow::Error),
    Interrupted,
}

#[tokio::main]
async fn main() -> ExitCode {
    let cli = Cli::parse();
    let plan = match Plan::from_cli(&cli) {
        Ok(plan) => plan,
        Err(error) => {
            eprintln!("iggy-bench: {error}");
            return ExitCode::from(2);
        }
    };
    if plan.output.dry_run {
        print!("{plan}");
        return ExitCode::SUCCESS;
    }
    match run(&plan).await {
        Ok(code) => code,
        Err(error) => {
            eprintln!("iggy-bench: {error:#}");
            ExitCode::FAILURE
        }
    }
}

async fn run(plan: &Plan) -> anyhow::Result<ExitCode> {
    let admin = client::connect(&plan.connection).await?;
    let mut topology = Topology::default();
    let ending = tokio::select! {
        outcome = execute(&admin, plan, &mut topology) => match outcome {
            Ok(report) => Ending::Finished(Box::new(report)),
            Err(error) => Ending::Failed(error),
        },
        _ = tokio::signal::ctrl_c() => Ending::Interrupted,
    };
    if let Ending::Interrupted = ending {
        eprintln!("iggy-bench: interrupted, cleaning up");
    }
    let cleaned = setup::cleanup(&admin, &topology, plan.reuse_streams).await;
    match ending {
        Ending::Finished(report) => {
            // The results stand even if cleanup fails, so publish them first.
            publish(plan, &report)?;
            cleaned?;
            Ok(ExitCode::SUCCESS)
        }
        Ending::Failed(error) => {
            if let Err(cleanup_error) = cleaned {
                eprintln!("iggy-bench: {cleanup_error:#}");
            }
            Err(error)
        }
        Ending::Interrupted => {
            cleaned?;
            Ok(ExitCode::from(EXIT_INTERRUPTED))
        }
    }
}

async fn execute(
    admin: &IggyClient,
    plan: &Plan,
    topology: &mut Topology,
) -> anyhow::Result<BenchReport> {
    setup::prepare(admin, plan, topology).await?;
    if !plan.seeders.is_empty() {
        run::run_phase(plan, topology, &plan.seeders, Phase::Seed)
            .await
            .context("seeding the streams")?;
    }
    let outcome = run::run_phase(plan, topology, &plan.actors, Phase::Measure).await?;
    Ok(BenchReport::build(plan, &outcome))
}

fn publish(plan: &Plan, report: &BenchReport) -> anyhow::Result<()> {
    if let Some(path) = &plan.output.csv {
        std::fs::write(path, report::render_csv(report))
            .with_context(|| format!("cannot write {}", path.display()))?;
    }
    if plan.output.json {
        println!("{}", report::render_json(report)?);
    } else {
        print!("{}", report::render_table(report));
    }
    Ok(())
}

//! The `iggy` command-line client: a thin layer over the published Iggy SDK
//! that reproduces iggy-cli 0.14.0 (see docs/cli.md and the CLI spec).
//! Order of a run: parse (usage errors exit 2), completion or banner, then
//! `app::run` (contexts, credentials, connect, login, command, logout);
//! runtime errors print `Error: …` on stderr and exit 1 (3 for not-found
//! under `--strict` or JSON output).

mod app;
mod args;
mod banner;
mod cmd;
mod context;
mod credentials;
mod debug_log;
mod error;
mod output;
mod parse;
mod progress;
mod render;
mod secrets;
mod settings;

use args::{Cli, Command, OutputFormat};
use clap::{CommandFactory, Parser};
use output::{Out, write_stdout};
use std::process::ExitCode;

fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => {
            let _ = e.print();
            return ExitCode::from(u8::try_from(e.exit_code()).unwrap_or(2));
        }
    };
    if let Some(Command::Message(args::MessageAction::Poll(poll))) = &cli.command
        && poll.missing_strategy()
    {
        return poll_usage_error(args::message::MISSING_STRATEGY);
    }
    if let Some(shell) = cli.global.generate {
        print_completion(shell);
        return ExitCode::SUCCESS;
    }
    match &cli.command {
        None => {
            print_banner();
            return ExitCode::SUCCESS;
        }
        Some(Command::Completion(c)) => {
            print_completion(c.shell);
            return ExitCode::SUCCESS;
        }
        Some(_) => {}
    }
    if let Some(path) = &cli.global.debug {
        debug_log::start(path);
    }
    let out = Out {
        quiet: cli.global.quiet,
        format: app::output_format(&cli.global),
        strict: cli.global.strict,
        lines_to_stderr: std::cell::Cell::new(false),
    };
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("Error: could not start the async runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    let result = runtime.block_on(app::run(cli, &out));
    runtime.shutdown_background();
    match result {
        Ok(()) => {
            tracing::debug!(target: output::TARGET, "exit code 0");
            ExitCode::SUCCESS
        }
        Err(error) => {
            tracing::error!(
                target: output::TARGET,
                exit_code = error.exit_code(),
                "Error: {}",
                error.render()
            );
            match (&error, out.format) {
                (error::CliError::NotFound, _) => {}
                (_, OutputFormat::Text) => eprintln!("Error: {}", error.render()),
                _ => eprintln!("{}", error.to_json()),
            }
            ExitCode::from(error.exit_code())
        }
    }
}

/// A usage error found after parsing (`message poll` without a strategy),
/// printed the way clap prints its own.
fn poll_usage_error(message: &str) -> ExitCode {
    let mut command = Cli::command();
    command.build();
    let poll = command
        .find_subcommand_mut("message")
        .and_then(|m| m.find_subcommand_mut("poll"));
    if let Some(poll) = poll {
        let _ = poll
            .error(clap::error::ErrorKind::MissingRequiredArgument, message)
            .print();
    }
    ExitCode::from(2)
}

fn print_completion(shell: clap_complete::Shell) {
    let mut script = Vec::new();
    clap_complete::generate(shell, &mut Cli::command(), "iggy", &mut script);
    write_stdout(String::from_utf8_lossy(&script).trim_end_matches('\n'));
}

fn print_banner() {
    let mut command = Cli::command()
        .help_template("{about-with-newline}\n{usage-heading} {usage}\n\nCommands:\n{subcommands}");
    let help = command.render_help().to_string();
    write_stdout(&format!(
        "{}\n{}\n{}",
        banner::ART,
        help.trim_end(),
        banner::FOOTER
    ));
}

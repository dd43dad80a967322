//! Command bodies: each prints its `Executing` line (after login), calls one
//! SDK method and prints the result in the formats of spec §6.

pub mod consume;
pub mod context;
pub mod format;
pub mod groups;
pub mod messages;
pub mod poll;
pub mod session;
pub mod streams;
pub mod system;
pub mod topics;
pub mod users;

use crate::args::Command;
use crate::credentials::{Credentials, PromptPolicy};
use crate::error::CliError;
use crate::output::Out;
use crate::secrets::SecretStore;
use iggy::prelude::IggyClient;

/// What a command gets to work with.
pub struct Run<'a> {
    pub client: &'a IggyClient,
    pub out: &'a Out,
    pub store: &'a SecretStore,
    /// The server address string of stored entries (§4.5).
    pub server: Option<String>,
    pub policy: PromptPolicy,
}

pub async fn dispatch(
    command: Command,
    run: &Run<'_>,
    credentials: Option<&Credentials>,
) -> Result<(), CliError> {
    match command {
        Command::Stream(a) => streams::run(a, run).await,
        Command::Topic(a) => topics::run(a, run).await,
        Command::Partition(a) => topics::partitions(a, run).await,
        Command::Segment(a) => topics::segments(a, run).await,
        Command::Message(a) => messages::run(a, run).await,
        Command::ConsumerOffset(a) => groups::offsets(a, run).await,
        Command::ConsumerGroup(a) => groups::run(a, run).await,
        Command::User(a) => users::run(a, run).await,
        Command::Pat(a) => users::pats(a, run).await,
        Command::Ping(a) => system::ping(a, run).await,
        Command::Me => system::me(run).await,
        Command::Options(a) => system::options(a, run).await,
        Command::Stats(a) => system::stats(a, run).await,
        Command::Snapshot(a) => system::snapshot(a, run).await,
        Command::Client(a) => system::clients(a, run).await,
        Command::Cluster(a) => system::cluster(a, run).await,
        Command::Login(a) => session::login(a, run).await,
        Command::Logout => session::logout(run, credentials).await,
        Command::Context(_) | Command::Session(_) | Command::Completion(_) => {
            unreachable!("handled before connecting")
        }
    }
}

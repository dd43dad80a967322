//! The command line: one subcommand per benchmark and one shared set of
//! options. Options are `global`, so they may appear before or after the
//! subcommand. Nothing here decides what a combination means; `plan.rs`
//! turns these raw values into a validated plan.

use std::path::PathBuf;
use std::time::Duration;

use clap::{Args, Parser, Subcommand, ValueEnum};

use crate::units::{self, MessageSize};

#[derive(Debug, Parser)]
#[command(
    name = "iggy-bench",
    version,
    about = "Load generator for Iggy-compatible message-streaming servers"
)]
pub struct Cli {
    #[command(subcommand)]
    pub benchmark: BenchmarkKind,
    #[command(flatten)]
    pub options: BenchOptions,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Subcommand)]
pub enum BenchmarkKind {
    /// Each producer writes its own stream (or partition).
    PinnedProducer,
    /// Each consumer reads its own stream (or partition), seeded beforehand.
    PinnedConsumer,
    /// Producers and consumers run together, consumer N reading producer N's data.
    PinnedProducerAndConsumer,
    /// Producers spread batches over partitions with balanced partitioning.
    BalancedProducer,
    /// Consumers share partitions through a consumer group per stream.
    BalancedConsumerGroup,
    /// Each actor sends a batch, then polls it back, timing produce-to-consume.
    EndToEndProducingConsumer,
}

impl BenchmarkKind {
    pub fn name(self) -> &'static str {
        match self {
            Self::PinnedProducer => "pinned-producer",
            Self::PinnedConsumer => "pinned-consumer",
            Self::PinnedProducerAndConsumer => "pinned-producer-and-consumer",
            Self::BalancedProducer => "balanced-producer",
            Self::BalancedConsumerGroup => "balanced-consumer-group",
            Self::EndToEndProducingConsumer => "end-to-end-producing-consumer",
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Transport {
    Tcp,
    Http,
    Quic,
    #[value(name = "websocket", alias = "ws")]
    WebSocket,
}

#[derive(Debug, Clone, Args)]
pub struct BenchOptions {
    /// Payload bytes per message: fixed (`1000`) or an inclusive range (`1000..2000`).
    #[arg(long, global = true, default_value = "1000", value_parser = units::parse_message_size)]
    pub message_size: MessageSize,
    /// Messages in every send (and the poll count of consumers).
    #[arg(long, global = true, default_value_t = 1000)]
    pub messages_per_batch: u32,
    /// Measured batches per actor [default: 1000]. Excludes --total-data.
    #[arg(long, global = true)]
    pub message_batches: Option<u64>,
    /// Total payload to move across all actors (e.g. `1GB`); sets the batch count.
    #[arg(long, global = true, value_parser = units::parse_byte_size)]
    pub total_data: Option<u64>,
    /// Producer count (for end-to-end: the actor count) [default: 4].
    #[arg(long, global = true)]
    pub producers: Option<u32>,
    /// Consumer count [default: 4].
    #[arg(long, global = true)]
    pub consumers: Option<u32>,
    /// Stream count [default: one per actor when pinned, 1 when balanced].
    #[arg(long, global = true)]
    pub streams: Option<u32>,
    /// Partitions per topic [default: 1 when pinned; the actors per stream when balanced].
    #[arg(long, global = true)]
    pub partitions: Option<u32>,
    /// Per-actor payload rate cap, e.g. `100MB/s`.
    #[arg(long, global = true, value_parser = units::parse_rate)]
    pub rate_limit: Option<u64>,
    /// Run the workload this long before measuring starts (e.g. `5s`).
    #[arg(long, global = true, default_value = "0s", value_parser = units::parse_duration)]
    pub warmup_time: Duration,
    /// Create topics with durability `persisted`, so every batch is fsynced.
    #[arg(long, global = true)]
    pub fsync: bool,
    #[arg(long, global = true, value_enum, default_value_t = Transport::Tcp)]
    pub transport: Transport,
    /// host:port (tcp, quic, websocket) or URL (http) [default: the transport's usual port].
    #[arg(long, global = true)]
    pub server_address: Option<String>,
    /// TLS on the tcp and websocket transports (quic is always encrypted; for
    /// https give an `https://` server address).
    #[arg(long, global = true)]
    pub tls: bool,
    /// The name the server's certificate is checked against.
    #[arg(long, global = true, default_value = "localhost")]
    pub tls_domain: String,
    /// Trust the certificates of this CA file (PEM) instead of the system's roots.
    #[arg(long, global = true)]
    pub tls_ca_file: Option<String>,
    /// Accept any certificate (a test server's self-signed one).
    #[arg(long, global = true)]
    pub tls_no_verify: bool,
    #[arg(long, global = true, default_value = "iggy")]
    pub username: String,
    #[arg(long, global = true, default_value = "iggy")]
    pub password: String,
    /// Use existing streams (create missing ones) and never delete them.
    #[arg(long, global = true)]
    pub reuse_streams: bool,
    /// Streams are named `<prefix>-1`, `<prefix>-2`, ...
    #[arg(long, global = true, default_value = "bench")]
    pub stream_prefix: String,
    /// Fail a consumer that receives nothing for this long.
    #[arg(long, global = true, default_value = "10s", value_parser = units::parse_duration)]
    pub idle_timeout: Duration,
    /// Print one JSON document on stdout instead of the table.
    #[arg(long, global = true)]
    pub json: bool,
    /// Write a per-second time series to this CSV file.
    #[arg(long, global = true)]
    pub csv: Option<PathBuf>,
    /// No live progress line on stderr.
    #[arg(long, global = true)]
    pub quiet: bool,
    /// Print the validated plan (streams, actors, volume) and exit without connecting.
    #[arg(long, global = true)]
    pub dry_run: bool,
}

#[cfg(test)]
pub(crate) fn parse_for_test(line: &str) -> Result<Cli, clap::Error> {
    Cli::try_parse_from(std::iter::once("iggy-bench").chain(line.split_whitespace()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn given_only_a_subcommand_when_parsing_should_apply_defaults() {
        let cli = parse_for_test("pinned-producer").expect("parses");
        assert_eq!(cli.benchmark, BenchmarkKind::PinnedProducer);
        let options = cli.options;
        assert_eq!(options.message_size, MessageSize::fixed(1000));
        assert_eq!(options.messages_per_batch, 1000);
        assert_eq!(options.message_batches, None);
        assert_eq!(options.transport, Transport::Tcp);
        assert_eq!(options.warmup_time, Duration::ZERO);
        assert_eq!(options.username, "iggy");
        assert!(!options.fsync && !options.reuse_streams && !options.json);
        assert!(!options.tls && !options.tls_no_verify && options.tls_ca_file.is_none());
        assert_eq!(options.tls_domain, "localhost");
    }

    #[test]
    fn given_options_after_subcommand_when_parsing_should_accept_them() {
        let cli = parse_for_test(
            "balanced-producer --producers 8 --message-size 100..200 --rate-limit 50MB/s \
             --total-data 2GB --transport http --fsync --warmup-time 3s",
        )
        .expect("parses");
        let options = cli.options;
        assert_eq!(options.producers, Some(8));
        assert_eq!(options.message_size.min_bytes, 100);
        assert_eq!(options.message_size.max_bytes, 200);
        assert_eq!(options.rate_limit, Some(50_000_000));
        assert_eq!(options.total_data, Some(2_000_000_000));
        assert_eq!(options.transport, Transport::Http);
        assert_eq!(options.warmup_time, Duration::from_secs(3));
        assert!(options.fsync);
    }

    #[test]
    fn given_options_before_subcommand_when_parsing_should_accept_them() {
        let cli = parse_for_test("--consumers 2 --json pinned-consumer").expect("parses");
        assert_eq!(cli.benchmark, BenchmarkKind::PinnedConsumer);
        assert_eq!(cli.options.consumers, Some(2));
        assert!(cli.options.json);
    }

    #[test]
    fn given_unknown_benchmark_or_bad_value_when_parsing_should_fail() {
        assert!(parse_for_test("pinned-everything").is_err());
        assert!(parse_for_test("pinned-producer --message-size big").is_err());
        assert!(parse_for_test("pinned-producer --transport carrier-pigeon").is_err());
        assert!(parse_for_test("").is_err());
    }

    #[test]
    fn given_every_benchmark_name_when_parsing_should_round_trip_through_name() {
        for kind in [
            BenchmarkKind::PinnedProducer,
            BenchmarkKind::PinnedConsumer,
            BenchmarkKind::PinnedProducerAndConsumer,
            BenchmarkKind::BalancedProducer,
            BenchmarkKind::BalancedConsumerGroup,
            BenchmarkKind::EndToEndProducingConsumer,
        ] {
            let cli = parse_for_test(kind.name()).expect("parses");
            assert_eq!(cli.benchmark, kind);
        }
    }
}

//! Command-line flags of `iggy-server`.
//!
//! The flag set is small and fixed (spec: configuration §4), so it is parsed
//! by hand: `--fresh`/`-f`, `--with-default-root-credentials`,
//! `--replica-id <N>`, `--help`/`-h`, `--version`/`-V`.

use std::ffi::OsString;

pub const USAGE: &str = "\
iggy-server: persistent message-streaming server (Iggy protocol 0.11 compatible)

Usage: iggy-server [OPTIONS]

Options:
  -f, --fresh                          Delete the data directory (system.path) before starting.
                                       An explicit reset: never use it for routine restarts.
      --with-default-root-credentials  Use iggy/iggy for IGGY_ROOT_USERNAME/IGGY_ROOT_PASSWORD when
                                       they are not set (only affects the first creation of root)
      --replica-id <N>                 This node's replica id in cluster.nodes (cluster mode)
  -h, --help                           Print help
  -V, --version                        Print version

Configuration: embedded defaults, then the file named by IGGY_CONFIG_PATH (or ./config.toml),
then IGGY_* environment variables mirroring the TOML path (e.g. IGGY_TCP_ADDRESS=127.0.0.1:0).
";

/// What the command line asked for.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Args {
    pub fresh: bool,
    pub with_default_root_credentials: bool,
    pub replica_id: Option<u8>,
}

/// The outcome of parsing: run the server, or print something and exit.
#[derive(Debug, PartialEq, Eq)]
pub enum Parsed {
    Run(Args),
    Help,
    Version,
}

#[derive(Debug, PartialEq, Eq, thiserror::Error)]
pub enum ArgsError {
    #[error("unknown argument '{arg}' (see --help)")]
    Unknown { arg: String },
    #[error("--replica-id needs a value between 0 and 255, got {value:?}")]
    BadReplicaId { value: Option<String> },
}

/// Parses the arguments after the program name.
pub fn parse(args: impl IntoIterator<Item = OsString>) -> Result<Parsed, ArgsError> {
    let mut out = Args::default();
    let mut args = args.into_iter().map(|a| a.to_string_lossy().into_owned());
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "-f" | "--fresh" => out.fresh = true,
            "--with-default-root-credentials" => out.with_default_root_credentials = true,
            "-h" | "--help" => return Ok(Parsed::Help),
            "-V" | "--version" => return Ok(Parsed::Version),
            "--replica-id" => out.replica_id = Some(parse_replica_id(args.next())?),
            other => match other.strip_prefix("--replica-id=") {
                Some(value) => out.replica_id = Some(parse_replica_id(Some(value.to_owned()))?),
                None => {
                    return Err(ArgsError::Unknown {
                        arg: other.to_owned(),
                    });
                }
            },
        }
    }
    Ok(Parsed::Run(out))
}

fn parse_replica_id(value: Option<String>) -> Result<u8, ArgsError> {
    value
        .as_deref()
        .and_then(|v| v.parse::<u8>().ok())
        .ok_or(ArgsError::BadReplicaId { value })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(args: &[&str]) -> Result<Parsed, ArgsError> {
        parse(args.iter().map(OsString::from))
    }

    #[test]
    fn given_no_flags_when_parsing_should_run_with_defaults() {
        assert_eq!(run(&[]), Ok(Parsed::Run(Args::default())));
    }

    #[test]
    fn given_every_flag_when_parsing_should_set_each() {
        let parsed = run(&[
            "--fresh",
            "--with-default-root-credentials",
            "--replica-id",
            "2",
        ]);
        let expected = Args {
            fresh: true,
            with_default_root_credentials: true,
            replica_id: Some(2),
        };
        assert_eq!(parsed, Ok(Parsed::Run(expected)));
        assert_eq!(
            run(&["-f", "--replica-id=0"]).map(|p| matches!(p, Parsed::Run(a) if a.fresh)),
            Ok(true)
        );
    }

    #[test]
    fn given_help_or_version_when_parsing_should_ask_to_print() {
        assert_eq!(run(&["-h"]), Ok(Parsed::Help));
        assert_eq!(run(&["--version"]), Ok(Parsed::Version));
    }

    #[test]
    fn given_bad_input_when_parsing_should_name_it() {
        assert_eq!(
            run(&["--frsh"]),
            Err(ArgsError::Unknown {
                arg: "--frsh".into()
            })
        );
        assert!(matches!(
            run(&["--replica-id", "300"]),
            Err(ArgsError::BadReplicaId { .. })
        ));
        assert!(matches!(
            run(&["--replica-id"]),
            Err(ArgsError::BadReplicaId { value: None })
        ));
    }
}

//! The service-manager notification protocol without any I/O: where the
//! datagrams go (`NOTIFY_SOCKET`), how often the watchdog wants a ping
//! (`WATCHDOG_USEC`, `WATCHDOG_PID`), what a datagram says, and whether the
//! shards have shown enough life since the last ping to send the next one.

use std::path::PathBuf;
use std::time::Duration;

/// A `STATUS=` text longer than this is cut: the manager shows one line.
pub const STATUS_BYTES_MAX: usize = 512;

/// The shards beat this many times per watchdog ping, so one late beat
/// (a busy shard, a scheduler hiccup) does not cost a ping.
pub const BEATS_PER_PING: u32 = 4;

/// Where the manager listens, from `NOTIFY_SOCKET`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Target {
    /// A socket file.
    Path(PathBuf),
    /// A Linux abstract socket (`@name`): the name without the `@`.
    Abstract(Vec<u8>),
}

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum EnvError {
    #[error(
        "NOTIFY_SOCKET = {value:?} is neither an absolute socket path nor an abstract name (@name)"
    )]
    Socket { value: String },
    #[error("WATCHDOG_USEC = {value:?} is not a positive whole number of microseconds")]
    WatchdogUsec { value: String },
}

/// The notification settings the manager handed this process.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Settings {
    pub target: Target,
    /// How often to send `WATCHDOG=1`: half the manager's timeout, as its
    /// documentation asks. `None` when the watchdog is off or meant for
    /// another process.
    pub ping_interval: Option<Duration>,
}

/// Reads the variables. `Ok(None)` when `NOTIFY_SOCKET` is absent or
/// empty: then the server sends nothing at all.
pub fn settings_from_env(
    lookup: impl Fn(&str) -> Option<String>,
    own_pid: u32,
) -> Result<Option<Settings>, EnvError> {
    let Some(socket) = lookup("NOTIFY_SOCKET").filter(|v| !v.is_empty()) else {
        return Ok(None);
    };
    let target = parse_target(&socket)?;
    let for_us = match lookup("WATCHDOG_PID").filter(|v| !v.is_empty()) {
        Some(pid) => pid.trim().parse::<u32>().ok() == Some(own_pid),
        None => true,
    };
    let ping_interval = match lookup("WATCHDOG_USEC").filter(|v| !v.is_empty()) {
        Some(value) if for_us => Some(parse_ping_interval(&value)?),
        _ => None,
    };
    Ok(Some(Settings {
        target,
        ping_interval,
    }))
}

fn parse_target(value: &str) -> Result<Target, EnvError> {
    if let Some(name) = value.strip_prefix('@')
        && !name.is_empty()
    {
        return Ok(Target::Abstract(name.as_bytes().to_vec()));
    }
    if value.starts_with('/') {
        return Ok(Target::Path(PathBuf::from(value)));
    }
    Err(EnvError::Socket {
        value: value.to_owned(),
    })
}

fn parse_ping_interval(value: &str) -> Result<Duration, EnvError> {
    let error = || EnvError::WatchdogUsec {
        value: value.to_owned(),
    };
    let usec: u64 = value.trim().parse().map_err(|_| error())?;
    if usec == 0 {
        return Err(error());
    }
    Ok(Duration::from_micros(usec) / 2)
}

/// One notification. Each is sent as its own datagram.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Message {
    /// Every enabled transport is bound and accepting; `status` says where.
    Ready {
        status: String,
    },
    Watchdog,
    /// Shutdown has begun: the manager stops applying the watchdog.
    Stopping,
    Status(String),
}

impl Message {
    /// The datagram: newline-separated `KEY=value` assignments.
    pub fn encode(&self) -> Vec<u8> {
        let text = match self {
            Message::Ready { status } => format!("READY=1\nSTATUS={}\n", one_line(status)),
            Message::Watchdog => "WATCHDOG=1\n".to_owned(),
            Message::Stopping => "STOPPING=1\nSTATUS=stopping\n".to_owned(),
            Message::Status(status) => format!("STATUS={}\n", one_line(status)),
        };
        text.into_bytes()
    }
}

/// A newline would start another assignment, so status text is folded onto
/// one line and cut to [`STATUS_BYTES_MAX`] on a character boundary.
fn one_line(text: &str) -> String {
    let mut line: String = text
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect();
    if line.len() > STATUS_BYTES_MAX {
        let mut end = STATUS_BYTES_MAX;
        while !line.is_char_boundary(end) {
            end -= 1;
        }
        line.truncate(end);
    }
    line
}

/// Decides each watchdog ping from the shards' beat counters: a ping is
/// earned only when every shard has beaten since the previous decision.
/// A stalled shard (a blocked event loop, a busy loop, a deadlock) stops
/// the pings, and the manager then restarts the server.
#[derive(Debug)]
pub struct WatchdogGate {
    seen: Vec<u64>,
}

#[derive(Debug, PartialEq, Eq)]
pub enum Decision {
    Ping,
    /// Withhold the ping: these shards have not beaten since last time.
    Stalled {
        shards: Vec<usize>,
    },
}

impl WatchdogGate {
    pub fn new(shard_count: usize) -> Self {
        assert!(shard_count > 0, "a server runs at least one shard");
        Self {
            seen: vec![0; shard_count],
        }
    }

    pub fn decide(&mut self, beats: &[u64]) -> Decision {
        assert_eq!(beats.len(), self.seen.len(), "one beat counter per shard");
        let stalled: Vec<usize> = beats
            .iter()
            .zip(&self.seen)
            .enumerate()
            .filter(|(_, (now, before))| now == before)
            .map(|(shard, _)| shard)
            .collect();
        self.seen.copy_from_slice(beats);
        if stalled.is_empty() {
            Decision::Ping
        } else {
            Decision::Stalled { shards: stalled }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> {
        let pairs: Vec<(String, String)> = pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect();
        move |key| pairs.iter().find(|(k, _)| k == key).map(|(_, v)| v.clone())
    }

    #[test]
    fn given_no_notify_socket_when_reading_env_should_do_nothing() {
        assert_eq!(settings_from_env(env(&[]), 7), Ok(None));
        let empty = env(&[("NOTIFY_SOCKET", ""), ("WATCHDOG_USEC", "1000000")]);
        assert_eq!(settings_from_env(empty, 7), Ok(None));
    }

    #[test]
    fn given_path_and_abstract_sockets_when_reading_env_should_parse_both() {
        let path = settings_from_env(env(&[("NOTIFY_SOCKET", "/run/systemd/notify")]), 7);
        assert_eq!(
            path.map(|s| s.map(|s| s.target)),
            Ok(Some(Target::Path("/run/systemd/notify".into())))
        );
        let abstract_name = settings_from_env(env(&[("NOTIFY_SOCKET", "@sd/notify")]), 7);
        assert_eq!(
            abstract_name.map(|s| s.map(|s| s.target)),
            Ok(Some(Target::Abstract(b"sd/notify".to_vec())))
        );
    }

    #[test]
    fn given_relative_or_bare_at_socket_when_reading_env_should_refuse() {
        for value in ["notify", "@", "./notify"] {
            assert!(matches!(
                settings_from_env(env(&[("NOTIFY_SOCKET", value)]), 7),
                Err(EnvError::Socket { .. })
            ));
        }
    }

    #[test]
    fn given_watchdog_usec_when_reading_env_should_ping_at_half_of_it() {
        let settings = settings_from_env(
            env(&[("NOTIFY_SOCKET", "/n"), ("WATCHDOG_USEC", "30000000")]),
            7,
        );
        assert_eq!(
            settings.map(|s| s.and_then(|s| s.ping_interval)),
            Ok(Some(Duration::from_secs(15)))
        );
    }

    #[test]
    fn given_watchdog_pid_of_another_process_when_reading_env_should_not_ping() {
        let other = env(&[
            ("NOTIFY_SOCKET", "/n"),
            ("WATCHDOG_USEC", "1000000"),
            ("WATCHDOG_PID", "8"),
        ]);
        let settings = settings_from_env(other, 7).ok().flatten();
        assert_eq!(settings.and_then(|s| s.ping_interval), None);
        let ours = env(&[
            ("NOTIFY_SOCKET", "/n"),
            ("WATCHDOG_USEC", "1000000"),
            ("WATCHDOG_PID", "7"),
        ]);
        let settings = settings_from_env(ours, 7).ok().flatten();
        assert_eq!(
            settings.and_then(|s| s.ping_interval),
            Some(Duration::from_millis(500))
        );
    }

    #[test]
    fn given_bad_watchdog_usec_when_reading_env_should_refuse() {
        for value in ["0", "-5", "1s"] {
            assert!(matches!(
                settings_from_env(env(&[("NOTIFY_SOCKET", "/n"), ("WATCHDOG_USEC", value)]), 7),
                Err(EnvError::WatchdogUsec { .. })
            ));
        }
    }

    #[test]
    fn given_each_message_when_encoding_should_write_assignments() {
        let ready = Message::Ready {
            status: "serving tcp 0.0.0.0:8090".into(),
        };
        assert_eq!(
            ready.encode(),
            b"READY=1\nSTATUS=serving tcp 0.0.0.0:8090\n"
        );
        assert_eq!(Message::Watchdog.encode(), b"WATCHDOG=1\n");
        assert_eq!(Message::Stopping.encode(), b"STOPPING=1\nSTATUS=stopping\n");
    }

    #[test]
    fn given_multiline_long_status_when_encoding_should_send_one_cut_line() {
        let text = format!("shard 1 did not stop\nREADY=1{}", "é".repeat(600));
        let encoded = String::from_utf8(Message::Status(text).encode()).expect("utf-8");
        assert_eq!(encoded.matches('\n').count(), 1, "one assignment only");
        assert!(!encoded.contains("\nREADY=1"));
        assert!(encoded.len() <= "STATUS=\n".len() + STATUS_BYTES_MAX);
    }

    #[test]
    fn given_every_shard_beating_when_deciding_should_ping() {
        let mut gate = WatchdogGate::new(2);
        assert_eq!(gate.decide(&[1, 3]), Decision::Ping);
        assert_eq!(gate.decide(&[2, 4]), Decision::Ping);
    }

    #[test]
    fn given_a_shard_without_beats_when_deciding_should_withhold_the_ping() {
        let mut gate = WatchdogGate::new(3);
        assert_eq!(gate.decide(&[1, 1, 1]), Decision::Ping);
        assert_eq!(
            gate.decide(&[2, 1, 2]),
            Decision::Stalled { shards: vec![1] }
        );
        assert_eq!(
            gate.decide(&[3, 2, 3]),
            Decision::Ping,
            "a recovered shard earns pings again"
        );
    }
}

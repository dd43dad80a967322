//! Notifications to a service manager (systemd `Type=notify`), built into
//! every binary and needing no libsystemd: one datagram per message to the
//! Unix socket named by `NOTIFY_SOCKET`. With that variable absent the
//! server sends nothing.
//!
//! Order of events: boot sends `READY=1` once every enabled transport is
//! bound and accepting and the runtime dump is written; from then a
//! watchdog thread sends `WATCHDOG=1` every half of `WATCHDOG_USEC`, but
//! only while every shard keeps beating (see [`Liveness`]); on a signal
//! boot sends `STOPPING=1`, and a `STATUS=` line for each part of the
//! shutdown that failed. The protocol itself (variables, datagram text,
//! the ping decision) is I/O-free in [`protocol`].

pub mod protocol;

use std::os::linux::net::SocketAddrExt;
use std::os::unix::net::{SocketAddr, UnixDatagram};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc;
use std::thread::JoinHandle;
use std::time::Duration;

use tracing::{debug, warn};

use protocol::{BEATS_PER_PING, Decision, Settings, Target, WatchdogGate};
pub use protocol::{EnvError, Message};

#[derive(Debug, thiserror::Error)]
pub enum NotifyError {
    #[error(transparent)]
    Env(#[from] EnvError),
    #[error("cannot open a socket to NOTIFY_SOCKET {target:?}: {source}")]
    Socket {
        target: Target,
        source: std::io::Error,
    },
}

/// Sends notifications, or nothing when no manager asked for them.
pub struct Notifier {
    channel: Option<Arc<Channel>>,
}

struct Channel {
    socket: UnixDatagram,
    address: SocketAddr,
    ping_interval: Option<Duration>,
}

impl Notifier {
    /// Reads `NOTIFY_SOCKET`, `WATCHDOG_USEC` and `WATCHDOG_PID` through
    /// `lookup`. A variable that is set but malformed is an error: the
    /// manager would otherwise wait for a `READY=1` that never comes.
    pub fn from_env(lookup: impl Fn(&str) -> Option<String>) -> Result<Self, NotifyError> {
        let Some(settings) = protocol::settings_from_env(lookup, std::process::id())? else {
            return Ok(Self { channel: None });
        };
        let Settings {
            target,
            ping_interval,
        } = settings;
        let opened = UnixDatagram::unbound().and_then(|socket| {
            let address = match &target {
                Target::Path(path) => SocketAddr::from_pathname(path)?,
                Target::Abstract(name) => SocketAddr::from_abstract_name(name)?,
            };
            Ok((socket, address))
        });
        let (socket, address) = opened.map_err(|source| NotifyError::Socket {
            target: target.clone(),
            source,
        })?;
        Ok(Self {
            channel: Some(Arc::new(Channel {
                socket,
                address,
                ping_interval,
            })),
        })
    }

    /// The watchdog ping period, when the manager runs a watchdog for us.
    pub fn ping_interval(&self) -> Option<Duration> {
        self.channel.as_ref()?.ping_interval
    }

    pub fn send(&self, message: &Message) {
        if let Some(channel) = &self.channel {
            channel.send(message);
        }
    }

    /// Starts the watchdog thread when the manager asked for pings; it
    /// stops when the returned handle is stopped or dropped.
    pub fn start_watchdog(&self, liveness: Arc<Liveness>) -> std::io::Result<Option<Watchdog>> {
        let Some(channel) = self.channel.clone() else {
            return Ok(None);
        };
        let Some(interval) = channel.ping_interval else {
            return Ok(None);
        };
        let (stop, stopped) = mpsc::channel::<()>();
        let thread = std::thread::Builder::new()
            .name("watchdog".into())
            .spawn(move || run_watchdog(&channel, &liveness, interval, &stopped))?;
        Ok(Some(Watchdog {
            stop: Some(stop),
            thread: Some(thread),
        }))
    }
}

impl Channel {
    fn send(&self, message: &Message) {
        match self.socket.send_to_addr(&message.encode(), &self.address) {
            Ok(_) => debug!(?message, "notified the service manager"),
            Err(e) => warn!(?message, "cannot notify the service manager: {e}"),
        }
    }
}

/// Sleeps a ping interval, then pings if every shard beat meanwhile;
/// returns when the stop sender is dropped.
fn run_watchdog(
    channel: &Channel,
    liveness: &Liveness,
    interval: Duration,
    stopped: &mpsc::Receiver<()>,
) {
    let mut gate = WatchdogGate::new(liveness.beats.len());
    while let Err(mpsc::RecvTimeoutError::Timeout) = stopped.recv_timeout(interval) {
        match gate.decide(&liveness.snapshot()) {
            Decision::Ping => channel.send(&Message::Watchdog),
            Decision::Stalled { shards } => warn!(
                ?shards,
                "watchdog ping withheld: these shards have not run since the last ping"
            ),
        }
    }
}

/// The running watchdog thread.
pub struct Watchdog {
    stop: Option<mpsc::Sender<()>>,
    thread: Option<JoinHandle<()>>,
}

impl Watchdog {
    /// Stops pinging; returns once the thread has ended.
    pub fn stop(mut self) {
        self.halt();
    }

    fn halt(&mut self) {
        drop(self.stop.take());
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

impl Drop for Watchdog {
    fn drop(&mut self) {
        self.halt();
    }
}

/// One beat counter per shard. Each shard's event loop runs a task that
/// beats every [`Liveness::beat_interval`]; the beat only happens when the
/// loop is turning, so it is the evidence the watchdog pings on.
#[derive(Debug)]
pub struct Liveness {
    beats: Vec<AtomicU64>,
    beat_interval: Duration,
}

impl Liveness {
    pub fn new(shard_count: usize, ping_interval: Duration) -> Self {
        assert!(shard_count > 0, "a server runs at least one shard");
        Self {
            beats: (0..shard_count).map(|_| AtomicU64::new(0)).collect(),
            beat_interval: ping_interval / BEATS_PER_PING,
        }
    }

    pub fn beat_interval(&self) -> Duration {
        self.beat_interval
    }

    pub fn beat(&self, shard: usize) {
        self.beats[shard].fetch_add(1, Ordering::Relaxed);
    }

    fn snapshot(&self) -> Vec<u64> {
        self.beats
            .iter()
            .map(|beats| beats.load(Ordering::Relaxed))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Instant;

    fn listener() -> (tempfile::TempDir, UnixDatagram, String) {
        let dir = tempfile::tempdir().expect("temp dir");
        let path = dir.path().join("notify.sock");
        let socket = UnixDatagram::bind(&path).expect("bind");
        socket
            .set_read_timeout(Some(Duration::from_secs(5)))
            .expect("timeout");
        (dir, socket, path.to_string_lossy().into_owned())
    }

    fn receive(socket: &UnixDatagram) -> String {
        let mut buffer = [0u8; 1024];
        let n = socket.recv(&mut buffer).expect("a datagram");
        String::from_utf8_lossy(&buffer[..n]).into_owned()
    }

    #[test]
    fn given_notify_socket_when_sending_ready_should_deliver_one_datagram() {
        let (_dir, socket, path) = listener();
        let notifier =
            Notifier::from_env(|k| (k == "NOTIFY_SOCKET").then(|| path.clone())).expect("notifier");
        notifier.send(&Message::Ready {
            status: "serving".into(),
        });
        assert_eq!(receive(&socket), "READY=1\nSTATUS=serving\n");
    }

    #[test]
    fn given_abstract_socket_when_sending_should_deliver() {
        let name = format!("iggy-notify-test-{}", std::process::id());
        let address = SocketAddr::from_abstract_name(name.as_bytes()).expect("address");
        let socket = UnixDatagram::bind_addr(&address).expect("bind abstract");
        socket
            .set_read_timeout(Some(Duration::from_secs(5)))
            .expect("timeout");
        let notifier = Notifier::from_env(|k| (k == "NOTIFY_SOCKET").then(|| format!("@{name}")))
            .expect("notifier");
        notifier.send(&Message::Stopping);
        assert_eq!(receive(&socket), "STOPPING=1\nSTATUS=stopping\n");
    }

    #[test]
    fn given_beating_shards_when_watchdog_runs_should_ping_until_stopped() {
        let (_dir, socket, path) = listener();
        let notifier = Notifier::from_env(|k| match k {
            "NOTIFY_SOCKET" => Some(path.clone()),
            "WATCHDOG_USEC" => Some("100000".into()),
            _ => None,
        })
        .expect("notifier");
        let liveness = Arc::new(Liveness::new(1, Duration::from_millis(50)));
        let beating = liveness.clone();
        let beater = std::thread::spawn(move || {
            for _ in 0..40 {
                beating.beat(0);
                std::thread::sleep(beating.beat_interval());
            }
        });
        let watchdog = notifier
            .start_watchdog(liveness)
            .expect("thread")
            .expect("watchdog on");
        let started = Instant::now();
        assert_eq!(receive(&socket), "WATCHDOG=1\n");
        assert_eq!(receive(&socket), "WATCHDOG=1\n");
        assert!(
            started.elapsed() >= Duration::from_millis(90),
            "two pings 50 ms apart"
        );
        watchdog.stop();
        beater.join().expect("beater");
    }

    #[test]
    fn given_a_silent_shard_when_watchdog_runs_should_withhold_pings() {
        let (_dir, socket, path) = listener();
        socket
            .set_read_timeout(Some(Duration::from_millis(300)))
            .expect("timeout");
        let notifier = Notifier::from_env(|k| match k {
            "NOTIFY_SOCKET" => Some(path.clone()),
            "WATCHDOG_USEC" => Some("60000".into()),
            _ => None,
        })
        .expect("notifier");
        let liveness = Arc::new(Liveness::new(2, Duration::from_millis(30)));
        let _watchdog = notifier.start_watchdog(liveness).expect("thread");
        let mut buffer = [0u8; 64];
        assert!(socket.recv(&mut buffer).is_err(), "no ping without beats");
    }

    #[test]
    fn given_no_notify_socket_when_starting_watchdog_should_do_nothing() {
        let notifier = Notifier::from_env(|_| None).expect("notifier");
        assert_eq!(notifier.ping_interval(), None);
        let liveness = Arc::new(Liveness::new(1, Duration::from_millis(10)));
        assert!(
            notifier
                .start_watchdog(liveness)
                .expect("no thread")
                .is_none()
        );
        notifier.send(&Message::Stopping);
    }
}

//! Test support: starts the real `iggy-server` on ephemeral ports in a
//! temporary directory (bound addresses read from its runtime dump) and runs
//! the real `iggy` binary with an isolated `IGGY_HOME` and environment.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

const START_TIMEOUT: Duration = Duration::from_secs(60);

/// The server binary: beside ours when the workspace built it (as
/// `cargo test --workspace` does), else built once into a separate target
/// directory so the running cargo's lock is not needed.
pub fn server_binary() -> PathBuf {
    static PATH: OnceLock<PathBuf> = OnceLock::new();
    PATH.get_or_init(|| {
        let ours = PathBuf::from(env!("CARGO_BIN_EXE_iggy"));
        let beside = ours.with_file_name("iggy-server");
        if beside.exists() {
            return beside;
        }
        let target = ours.parent().unwrap().join("cli-test-server");
        let status = Command::new(env!("CARGO"))
            .args(["build", "-p", "server", "--bin", "iggy-server"])
            .env("CARGO_TARGET_DIR", &target)
            .current_dir(env!("CARGO_MANIFEST_DIR"))
            .status()
            .expect("cargo runs");
        assert!(status.success(), "building iggy-server failed");
        target.join("debug").join("iggy-server")
    })
    .clone()
}

pub struct Server {
    child: Child,
    _dir: tempfile::TempDir,
    dump: toml::Value,
}

impl Server {
    pub fn start() -> Server {
        Self::start_with(&[])
    }

    /// Starts the server with extra `IGGY_<config path>` overrides.
    #[allow(clippy::zombie_processes)] // Drop kills and waits for the child.
    pub fn start_with(extra: &[(&str, &str)]) -> Server {
        let dir = tempfile::tempdir().unwrap();
        let mut command = Command::new(server_binary());
        for (key, _) in std::env::vars().filter(|(k, _)| k.starts_with("IGGY_") || k == "RUST_LOG")
        {
            command.env_remove(key);
        }
        for key in [
            "IGGY_TCP_ADDRESS",
            "IGGY_HTTP_ADDRESS",
            "IGGY_QUIC_ADDRESS",
            "IGGY_WEBSOCKET_ADDRESS",
        ] {
            command.env(key, "127.0.0.1:0");
        }
        for (key, value) in extra {
            command.env(key, value);
        }
        let log = std::fs::File::create(dir.path().join("server.out")).unwrap();
        let child = command
            .env("IGGY_ROOT_USERNAME", "iggy")
            .env("IGGY_ROOT_PASSWORD", "iggy")
            .env("IGGY_SYSTEM_SHARDING_CPU_ALLOCATION", "2")
            .env("IGGY_SYSTEM_SHARDING_PIN_CORES", "false")
            .current_dir(dir.path())
            .stdin(Stdio::null())
            .stdout(log.try_clone().unwrap())
            .stderr(log)
            .spawn()
            .unwrap();
        let dump_path = dir.path().join("local_data/runtime/current_config.toml");
        let deadline = Instant::now() + START_TIMEOUT;
        loop {
            if let Some(dump) = std::fs::read_to_string(&dump_path)
                .ok()
                .and_then(|t| t.parse::<toml::Value>().ok())
            {
                return Server {
                    child,
                    _dir: dir,
                    dump,
                };
            }
            assert!(Instant::now() < deadline, "server did not start");
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    pub fn address(&self, transport: &str) -> SocketAddr {
        self.dump[transport]["address"]
            .as_str()
            .unwrap()
            .parse()
            .unwrap()
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The result of one `iggy` run.
pub struct Run {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
}

impl Run {
    pub fn lines(&self) -> Vec<&str> {
        self.stdout.lines().collect()
    }
    pub fn last_line(&self) -> &str {
        self.stdout.lines().last().unwrap_or_default()
    }
    /// stderr without the keyring warnings a host without a keyring prints.
    pub fn errors(&self) -> String {
        self.stderr
            .lines()
            .filter(|l| !l.contains(" WARN "))
            .collect::<Vec<_>>()
            .join("\n")
    }
}

/// A user of the CLI: an isolated `IGGY_HOME`, root credentials in the
/// environment and the server's addresses in the `IGGY_CLI_*` variables.
pub struct User {
    pub home: tempfile::TempDir,
    pub env: Vec<(String, String)>,
}

impl User {
    pub fn new(server: Option<&Server>) -> User {
        let home = tempfile::tempdir().unwrap();
        let mut env = vec![
            ("IGGY_HOME".to_owned(), home.path().display().to_string()),
            ("TZ".to_owned(), "UTC".to_owned()),
            ("COLUMNS".to_owned(), "200".to_owned()),
            ("NO_COLOR".to_owned(), "1".to_owned()),
            ("IGGY_USERNAME".to_owned(), "iggy".to_owned()),
            ("IGGY_PASSWORD".to_owned(), "iggy".to_owned()),
        ];
        if let Some(s) = server {
            env.push((
                "IGGY_CLI_TCP_SERVER_ADDRESS".into(),
                s.address("tcp").to_string(),
            ));
            env.push((
                "IGGY_CLI_QUIC_SERVER_ADDRESS".into(),
                s.address("quic").to_string(),
            ));
            env.push((
                "IGGY_CLI_WEBSOCKET_SERVER_ADDRESS".into(),
                s.address("websocket").to_string(),
            ));
            env.push((
                "IGGY_CLI_HTTP_API_URL".into(),
                format!("http://{}", s.address("http")),
            ));
        }
        User { home, env }
    }

    pub fn without(mut self, key: &str) -> User {
        self.env.retain(|(k, _)| k != key);
        self
    }

    pub fn with(mut self, key: &str, value: &str) -> User {
        self.env.retain(|(k, _)| k != key);
        self.env.push((key.to_owned(), value.to_owned()));
        self
    }

    pub fn home(&self) -> &Path {
        self.home.path()
    }

    pub fn run(&self, args: &[&str]) -> Run {
        self.run_with_stdin(args, None)
    }

    pub fn run_with_stdin(&self, args: &[&str], stdin: Option<&[u8]>) -> Run {
        let mut command = Command::new(env!("CARGO_BIN_EXE_iggy"));
        for (key, _) in std::env::vars().filter(|(k, _)| k.starts_with("IGGY") || k == "NO_COLOR") {
            command.env_remove(key);
        }
        command
            .args(args)
            .envs(self.env.iter().map(|(k, v)| (k, v)));
        command.stdin(if stdin.is_some() {
            Stdio::piped()
        } else {
            Stdio::null()
        });
        command.stdout(Stdio::piped()).stderr(Stdio::piped());
        let mut child = command.spawn().unwrap();
        if let Some(bytes) = stdin {
            use std::io::Write;
            // A command that refuses its arguments exits without reading
            // its input: a broken pipe then is its answer, not an error.
            match child.stdin.take().unwrap().write_all(bytes) {
                Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => {}
                other => other.unwrap(),
            }
        }
        let Output {
            status,
            stdout,
            stderr,
        } = child.wait_with_output().unwrap();
        Run {
            code: status.code().unwrap_or(-1),
            stdout: String::from_utf8_lossy(&stdout).into_owned(),
            stderr: String::from_utf8_lossy(&stderr).into_owned(),
        }
    }

    /// Runs a command that must succeed and returns its output.
    pub fn ok(&self, args: &[&str]) -> Run {
        let run = self.run(args);
        assert_eq!(
            run.code, 0,
            "iggy {args:?} failed:\n{}\n{}",
            run.stdout, run.stderr
        );
        run
    }
}

impl User {
    pub fn clone_without_credentials(&self) -> User {
        self.clone_with("IGGY_HOME", &self.home().display().to_string())
            .without("IGGY_USERNAME")
            .without("IGGY_PASSWORD")
    }

    pub fn clone_with(&self, key: &str, value: &str) -> User {
        let mut env = self.env.clone();
        env.retain(|(k, _)| k != key);
        env.push((key.to_owned(), value.to_owned()));
        User {
            home: tempfile::tempdir().unwrap(),
            env,
        }
    }
}

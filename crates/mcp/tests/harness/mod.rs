//! Integration harness: starts the real `iggy-server` on port 0 in a
//! temporary working directory (bound addresses from
//! `runtime/current_config.toml`) and the real `iggy-mcp` beside it, which
//! the tests drive as an MCP client would (see `mcp.rs`).
//!
//! The server binary is the workspace's own: `cargo test --workspace`
//! builds it next to `iggy-mcp`; when it is missing (a lone
//! `cargo test -p mcp` on a clean clone) it is built once with cargo.
//! `IGGY_SERVER_BIN` names another binary.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

pub mod mcp;

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

pub const ROOT_USERNAME: &str = "iggy";
pub const ROOT_PASSWORD: &str = "iggy";
const START_TIMEOUT: Duration = Duration::from_secs(30);

/// A running server; killed on drop.
pub struct TestServer {
    child: Child,
    dump: toml::Value,
    workdir: tempfile::TempDir,
}

impl TestServer {
    pub fn start() -> TestServer {
        Self::start_with(&[])
    }

    /// Starts with extra `IGGY_*` variables (e.g. TLS switches).
    pub fn start_with(env: &[(&str, &str)]) -> TestServer {
        let workdir = tempfile::tempdir().unwrap();
        let log = std::fs::File::create(workdir.path().join("server.out")).unwrap();
        let mut command = Command::new(server_binary());
        command
            .current_dir(workdir.path())
            .stdin(Stdio::null())
            .stdout(log.try_clone().unwrap())
            .stderr(log);
        clear_iggy_env(&mut command);
        for transport in ["TCP", "HTTP", "QUIC", "WEBSOCKET"] {
            command.env(format!("IGGY_{transport}_ADDRESS"), "127.0.0.1:0");
        }
        command
            .env("IGGY_ROOT_USERNAME", ROOT_USERNAME)
            .env("IGGY_ROOT_PASSWORD", ROOT_PASSWORD)
            .env("IGGY_SYSTEM_SHARDING_CPU_ALLOCATION", "1")
            .env("IGGY_SYSTEM_SHARDING_PIN_CORES", "false")
            .env("RUST_LOG", "warn")
            .envs(env.iter().copied());
        let child = command.spawn().unwrap();
        let dump_path = workdir
            .path()
            .join("local_data")
            .join("runtime")
            .join("current_config.toml");
        let mut server = TestServer {
            child,
            dump: toml::Value::Boolean(false),
            workdir,
        };
        server.dump = server.wait_for_dump(&dump_path);
        server
    }

    fn wait_for_dump(&mut self, path: &Path) -> toml::Value {
        let deadline = Instant::now() + START_TIMEOUT;
        loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                panic!(
                    "server exited during start-up with {status}:\n{}",
                    self.output()
                );
            }
            let dump = std::fs::read_to_string(path)
                .ok()
                .and_then(|text| text.parse::<toml::Value>().ok());
            if let Some(dump) = dump {
                return dump;
            }
            assert!(Instant::now() < deadline, "server did not start in time");
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// The bound address of a transport section: `tcp`, `quic`, `http`,
    /// `websocket`.
    pub fn address(&self, transport: &str) -> SocketAddr {
        self.dump
            .get(transport)
            .and_then(|section| section.get("address"))
            .and_then(toml::Value::as_str)
            .and_then(|address| address.parse().ok())
            .unwrap_or_else(|| panic!("the server serves {transport}"))
    }

    pub fn output(&self) -> String {
        std::fs::read_to_string(self.workdir.path().join("server.out")).unwrap_or_default()
    }
}

impl Drop for TestServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Removes inherited `IGGY_*` variables so the developer's environment
/// cannot change what a test starts.
pub fn clear_iggy_env(command: &mut Command) {
    for (key, _) in std::env::vars().filter(|(key, _)| key.starts_with("IGGY_")) {
        command.env_remove(key);
    }
}

pub fn mcp_binary() -> &'static str {
    env!("CARGO_BIN_EXE_iggy-mcp")
}

/// The `iggy-server` binary, built at most once per test process.
pub fn server_binary() -> &'static Path {
    static BINARY: OnceLock<PathBuf> = OnceLock::new();
    BINARY.get_or_init(|| {
        if let Some(path) = std::env::var_os("IGGY_SERVER_BIN") {
            return PathBuf::from(path);
        }
        let sibling = Path::new(mcp_binary())
            .parent()
            .expect("iggy-mcp lives in a directory")
            .join("iggy-server");
        if !sibling.exists() {
            build_server();
        }
        assert!(sibling.exists(), "iggy-server was not built at {sibling:?}");
        sibling
    })
}

fn build_server() {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned());
    let status = Command::new(cargo)
        .args(["build", "-p", "server", "--bin", "iggy-server"])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .status()
        .expect("cargo runs");
    assert!(status.success(), "building iggy-server failed");
}

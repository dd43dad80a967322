//! The container image without a container engine: the Dockerfile at the
//! repository root is linted with hadolint, and the real binary boots with
//! exactly the environment its `ENV` lines (and the documented `docker run`)
//! give it. Only the ports become 0, so parallel tests do not collide; the
//! 0.0.0.0 binds and the advertised-address rule stay as shipped.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod harness;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use harness::{ServerOptions, TestServer, Workdir};

/// The ports the image publishes, as `EXPOSE` must list them.
const EXPOSED: [&str; 4] = ["8090/tcp", "8080/udp", "3000/tcp", "8092/tcp"];

fn repository_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The Dockerfile's instructions, continuation lines joined, comments kept
/// apart (the documented `docker run` lives in them).
struct Dockerfile {
    instructions: Vec<(String, String)>,
    comments: String,
}

impl Dockerfile {
    fn read() -> Self {
        let text = std::fs::read_to_string(repository_root().join("Dockerfile")).unwrap();
        let mut instructions = Vec::new();
        let mut comments = String::new();
        let mut pending = String::new();
        for line in text.lines() {
            let trimmed = line.trim();
            if trimmed.starts_with('#') {
                comments.push_str(trimmed.trim_start_matches('#'));
                comments.push('\n');
                continue;
            }
            match trimmed.strip_suffix('\\') {
                Some(head) => pending.push_str(head),
                None => {
                    pending.push_str(trimmed);
                    let (keyword, rest) = pending.split_once(' ').unwrap_or((&pending, ""));
                    if !keyword.is_empty() {
                        instructions.push((keyword.to_uppercase(), rest.trim().to_owned()));
                    }
                    pending.clear();
                }
            }
        }
        Self {
            instructions,
            comments,
        }
    }

    fn all(&self, keyword: &str) -> impl Iterator<Item = &str> {
        self.instructions
            .iter()
            .filter(move |(k, _)| k == keyword)
            .map(|(_, rest)| rest.as_str())
    }

    /// `ENV KEY=VALUE ...` of the final stage (values without spaces or
    /// quotes, which the parser insists on).
    fn env(&self) -> BTreeMap<String, String> {
        let last_stage = self
            .instructions
            .iter()
            .rposition(|(k, _)| k == "FROM")
            .unwrap();
        let mut env = BTreeMap::new();
        for (keyword, rest) in &self.instructions[last_stage..] {
            if keyword != "ENV" {
                continue;
            }
            for pair in rest.split_whitespace() {
                let (key, value) = pair.split_once('=').expect("ENV KEY=VALUE form");
                assert!(!value.contains('"'), "unquoted ENV values: {pair}");
                env.insert(key.to_owned(), value.to_owned());
            }
        }
        env
    }

    /// The `-e NAME=VALUE` options of the documented `docker run`.
    fn documented_run_env(&self) -> BTreeMap<String, String> {
        let words: Vec<&str> = self.comments.split_whitespace().collect();
        words
            .windows(2)
            .filter(|w| w[0] == "-e")
            .filter_map(|w| w[1].split_once('='))
            .map(|(k, v)| (k.to_owned(), v.to_owned()))
            .collect()
    }
}

/// The image's environment with every listener's port set to 0.
fn image_env(extra: &BTreeMap<String, String>) -> BTreeMap<String, String> {
    let mut env = Dockerfile::read().env();
    for (key, value) in env.iter_mut() {
        if key.ends_with("_ADDRESS") && key != "IGGY_NODE_ADVERTISED_ADDRESS" {
            let (host, _) = value.rsplit_once(':').expect("HOST:PORT");
            *value = format!("{host}:0");
        }
    }
    env.extend(extra.clone());
    env
}

fn options(env: BTreeMap<String, String>) -> ServerOptions {
    ServerOptions {
        env,
        args: Vec::new(),
        config_file: None,
    }
}

#[test]
fn given_image_env_when_inspected_should_bind_every_listener_to_the_wildcard() {
    let env = Dockerfile::read().env();
    for (key, port) in [
        ("IGGY_TCP_ADDRESS", "8090"),
        ("IGGY_QUIC_ADDRESS", "8080"),
        ("IGGY_HTTP_ADDRESS", "3000"),
        ("IGGY_WEBSOCKET_ADDRESS", "8092"),
    ] {
        assert_eq!(
            env.get(key).map(String::as_str),
            Some(&*format!("0.0.0.0:{port}"))
        );
    }
    assert!(
        !env.contains_key("IGGY_NODE_ADVERTISED_ADDRESS"),
        "the image leaves the advertised address to `docker run`"
    );
}

#[test]
fn given_dockerfile_when_inspected_should_expose_the_ports_run_non_root_and_keep_a_volume() {
    let dockerfile = Dockerfile::read();
    let exposed: Vec<&str> = dockerfile
        .all("EXPOSE")
        .flat_map(str::split_whitespace)
        .collect();
    assert_eq!(exposed, EXPOSED);
    let user = dockerfile.all("USER").last().expect("a USER instruction");
    let uid: u32 = user.split(':').next().unwrap().parse().expect("numeric");
    assert_ne!(uid, 0, "runs as a non-root user");
    let workdir = dockerfile.all("WORKDIR").last().unwrap();
    let data = Path::new(workdir).join(&dockerfile.env()["IGGY_SYSTEM_PATH"]);
    let volume = dockerfile.all("VOLUME").last().expect("a VOLUME");
    assert!(
        volume.contains(&*data.to_string_lossy()),
        "{volume} holds {data:?}"
    );
    let built = dockerfile.all("RUN").any(|run| {
        run.contains("cargo build --release")
            && ["iggy-server", "iggy", "iggy-bench"]
                .iter()
                .all(|bin| run.contains(&format!("--bin {bin} ")) || run.ends_with(bin))
    });
    assert!(built, "the build stage builds all three binaries");
}

#[test]
fn given_image_env_without_advertised_address_when_booting_should_refuse() {
    let workdir = Workdir::new();
    let env = image_env(&BTreeMap::new());
    let (status, output) = harness::run_to_exit(&workdir, &options(env));
    assert!(!status.success());
    assert!(output.contains("node.advertised_address"), "{output}");
    assert!(output.contains("IGGY_NODE_ADVERTISED_ADDRESS"), "{output}");
}

#[test]
fn given_image_env_and_documented_run_when_booting_should_serve_on_the_wildcard() {
    let workdir = Workdir::new();
    let documented = Dockerfile::read().documented_run_env();
    assert_eq!(
        documented
            .get("IGGY_NODE_ADVERTISED_ADDRESS")
            .map(String::as_str),
        Some("localhost"),
        "the documented docker run sets the advertised address"
    );
    let env = image_env(&documented);
    // The harness finds the runtime dump under `local_data`; the image keeps
    // its data under IGGY_SYSTEM_PATH instead.
    let data = workdir.path().join(&env["IGGY_SYSTEM_PATH"]);
    std::os::unix::fs::symlink(&data, workdir.data()).unwrap();
    let server = TestServer::start(&workdir, &options(env));
    for transport in ["tcp", "quic", "http", "websocket"] {
        let address = server.address(transport).expect("served");
        assert!(address.ip().is_unspecified(), "{transport} binds {address}");
        assert_ne!(address.port(), 0);
    }
    let tcp = server.tcp();
    std::net::TcpStream::connect(("127.0.0.1", tcp.port())).expect("reachable");
    assert!(data.join("runtime").is_dir(), "data under IGGY_SYSTEM_PATH");
    let (status, _) = server.stop();
    assert!(status.success());
}

#[test]
fn given_dockerfile_when_linted_with_hadolint_should_pass() {
    let dockerfile = repository_root().join("Dockerfile");
    let output = match Command::new("hadolint").arg(&dockerfile).output() {
        Ok(output) => output,
        Err(_) => {
            return harness::skip("hadolint is not installed (scripts/install-lint-tools.sh)");
        }
    };
    assert!(
        output.status.success(),
        "hadolint:\n{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
}

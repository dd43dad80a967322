//! Start-up, configuration layering, the data directory and shutdown, driven
//! through the real binary.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod harness;

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

use harness::{ServerOptions, TestServer, Workdir, run_to_exit};

#[test]
fn given_port_zero_everywhere_when_booting_should_publish_bound_ports_in_dump() {
    let workdir = Workdir::new();
    let server = TestServer::start(&workdir, &ServerOptions::default());
    let tcp = server.tcp();
    assert_ne!(tcp.port(), 0);
    std::net::TcpStream::connect(tcp).expect("the published TCP address accepts connections");
    for transport in ["tcp", "http", "quic", "websocket"] {
        let section = server
            .dump
            .get(transport)
            .expect("every transport section is in the dump");
        assert!(
            section.get("enabled").is_some() && section.get("address").is_some(),
            "{transport}"
        );
        if let Some(addr) = server.address(transport) {
            assert_ne!(addr.port(), 0, "{transport} is served on a real port");
        }
    }
    assert!(workdir.data().join("logs").join("iggy-server.log").exists());
}

#[test]
fn given_file_and_env_when_booting_should_layer_env_over_file_over_default() {
    let workdir = Workdir::new();
    let file =
        "[heartbeat]\ninterval = \"10 s\"\n\n[personal_access_token]\nmax_tokens_per_user = 7\n";
    let options = ServerOptions::default()
        .config_file(file)
        .env("IGGY_HEARTBEAT_INTERVAL", "20 s");
    let server = TestServer::start(&workdir, &options);
    let get = |section: &str, key: &str| server.dump[section][key].clone();
    assert_eq!(
        duration_secs(&get("heartbeat", "interval")),
        20,
        "environment beats file"
    );
    assert_eq!(
        get("personal_access_token", "max_tokens_per_user").as_integer(),
        Some(7),
        "file beats default"
    );
    assert_eq!(
        duration_secs(&get("consumer_group", "rebalancing_timeout")),
        30,
        "default stays"
    );
}

fn duration_secs(value: &toml::Value) -> u64 {
    let text = value
        .as_str()
        .expect("durations are strings")
        .replace(' ', "");
    let (number, unit) = text.split_at(
        text.find(|c: char| !c.is_ascii_digit())
            .unwrap_or(text.len()),
    );
    let n: u64 = number.parse().unwrap();
    match unit {
        "s" => n,
        "m" | "min" => n * 60,
        other => panic!("unexpected duration unit {other:?} in {text:?}"),
    }
}

#[test]
fn given_invalid_value_when_booting_should_exit_non_zero_naming_the_key() {
    let workdir = Workdir::new();
    let options = ServerOptions::default().env("IGGY_SYSTEM_SHARDING_INBOX_CAPACITY", "0");
    let (status, output) = run_to_exit(&workdir, &options);
    assert!(!status.success());
    assert!(
        output.contains("system.sharding.inbox_capacity"),
        "{output}"
    );
}

#[test]
fn given_a_prefaulted_cache_larger_than_memory_when_booting_should_refuse_naming_the_key() {
    let workdir = Workdir::new();
    let options = ServerOptions::default()
        .env("IGGY_SYSTEM_PARTITION_CACHE_SIZE", "100 TiB")
        .env("IGGY_SYSTEM_PARTITION_CACHE_PREFAULT", "true");
    let (status, output) = run_to_exit(&workdir, &options);
    assert!(!status.success());
    assert!(
        output.contains("system.partition.cache_size") && output.contains("cache_prefault"),
        "{output}"
    );
    assert!(
        !workdir.data().exists(),
        "refused before the data directory"
    );
}

#[test]
fn given_data_when_restarting_plainly_should_keep_it_and_fresh_should_wipe_it() {
    let workdir = Workdir::new();
    let server = TestServer::start(&workdir, &ServerOptions::default());
    let kept = workdir.data().join("streams").join("kept.txt");
    std::fs::create_dir_all(kept.parent().unwrap()).unwrap();
    std::fs::write(&kept, "still here").unwrap();
    assert!(server.stop().0.success());

    let server = TestServer::start(&workdir, &ServerOptions::default());
    assert!(kept.exists(), "a plain restart keeps data");
    assert!(server.stop().0.success());

    let server = TestServer::start(&workdir, &ServerOptions::default().arg("--fresh"));
    assert!(!kept.exists(), "--fresh wipes the data directory");
    assert!(
        workdir.data().join("format").exists(),
        "and starts a new one"
    );
    drop(server);
}

#[test]
fn given_incompatible_marker_when_booting_should_refuse_and_leave_directory_untouched() {
    let workdir = Workdir::new();
    let data = workdir.data();
    std::fs::create_dir_all(data.join("metadata")).unwrap();
    std::fs::write(data.join("format"), "IGGY-DURABLE-SESSIONS-3\n").unwrap();
    std::fs::write(data.join("metadata").join("journal.wal"), [1u8, 2, 3, 4]).unwrap();
    let before = snapshot(&data);

    let (status, output) = run_to_exit(&workdir, &ServerOptions::default());
    assert!(!status.success());
    assert!(output.contains("IGGY-DURABLE-SESSIONS-3"), "{output}");
    assert_eq!(snapshot(&data), before, "nothing in the directory changed");
}

/// Every path under `root` with its bytes and modification time.
fn snapshot(root: &Path) -> BTreeMap<String, (Vec<u8>, std::time::SystemTime)> {
    let mut out = BTreeMap::new();
    let mut stack = vec![root.to_owned()];
    while let Some(dir) = stack.pop() {
        let meta = std::fs::metadata(&dir).unwrap();
        out.insert(
            dir.display().to_string(),
            (Vec::new(), meta.modified().unwrap()),
        );
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                stack.push(path);
            } else {
                let modified = std::fs::metadata(&path).unwrap().modified().unwrap();
                out.insert(
                    path.display().to_string(),
                    (std::fs::read(&path).unwrap(), modified),
                );
            }
        }
    }
    out
}

#[test]
fn given_running_server_when_sigterm_should_exit_zero_promptly() {
    let workdir = Workdir::new();
    let server = TestServer::start(&workdir, &ServerOptions::default());
    let _idle_client = std::net::TcpStream::connect(server.tcp()).unwrap();
    let (status, took) = server.stop();
    assert!(status.success(), "exit status {status}");
    assert!(took < Duration::from_secs(5), "took {took:?}");
}

#[test]
fn given_help_and_version_flags_when_running_should_print_and_exit_zero() {
    let workdir = Workdir::new();
    let (status, output) = run_to_exit(&workdir, &ServerOptions::default().arg("--help"));
    assert!(status.success() && output.contains("--fresh"), "{output}");
    let (status, output) = run_to_exit(&workdir, &ServerOptions::default().arg("--version"));
    assert!(
        status.success() && output.contains("iggy-server"),
        "{output}"
    );
    assert!(!workdir.data().exists(), "help and version touch nothing");
}

#[test]
fn given_half_root_credentials_when_booting_should_refuse() {
    let workdir = Workdir::new();
    let options = ServerOptions::default().without_env("IGGY_ROOT_PASSWORD");
    let (status, output) = run_to_exit(&workdir, &options);
    assert!(!status.success());
    assert!(output.contains("IGGY_ROOT_PASSWORD"), "{output}");
}

#[test]
fn given_cluster_enabled_when_peers_are_absent_should_not_serve_alone() {
    // A roster of two nodes, whose node 1 never starts.
    let free = || {
        std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port()
    };
    let mut config = String::from("[cluster]\nenabled = true\n\n");
    for id in 0..2 {
        config.push_str(&format!(
            "[[cluster.nodes]]\nname = \"n{id}\"\nip = \"127.0.0.1\"\nreplica_id = {id}\n\n\
             [cluster.nodes.ports]\ntcp = {}\nhttp = {}\nquic = {}\nwebsocket = {}\n\
             tcp_replica = {}\n\n",
            free(),
            free(),
            free(),
            free(),
            free()
        ));
    }
    let workdir = Workdir::new();
    let options = ServerOptions::default()
        .config_file(&config)
        .env("IGGY_CONFIG_PATH", "config.toml")
        .env("IGGY_ROOT_USERNAME", "admin")
        .env("IGGY_ROOT_PASSWORD", "secret-password")
        .arg("--replica-id")
        .arg("0");
    let server = TestServer::start(&workdir, &options);
    let http = server.address("http").expect("http");
    std::thread::sleep(std::time::Duration::from_secs(1));
    let body = br#"{"username":"admin","password":"secret-password"}"#;
    let response = harness::http::request(http, "POST", "/users/login", None, Some(body));
    assert_ne!(
        response.status,
        200,
        "no root user before the whole roster met (genesis): {}",
        response.text()
    );
    assert!(
        workdir.data().join("cluster/metadata").exists(),
        "it runs as replica 0 of the roster"
    );
    let (status, _) = server.stop();
    assert!(status.success(), "stops cleanly while waiting for peers");
}

#[test]
fn given_a_slow_start_when_a_client_logs_in_at_once_should_wait_and_be_accepted() {
    // Two shards each touching 512 MiB of partition cache at start: the
    // listeners are bound long before the metadata (the root user) is
    // replayed. A login sent meanwhile must wait, not be refused.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let address: std::net::SocketAddr = format!("127.0.0.1:{port}").parse().unwrap();
    let workdir = Workdir::new();
    let options = ServerOptions::default()
        .env("IGGY_TCP_ADDRESS", &address.to_string())
        .env("IGGY_SYSTEM_PARTITION_DIRECT_IO", "always")
        .env("IGGY_SYSTEM_PARTITION_CACHE_SIZE", "1 GiB")
        .env("IGGY_SYSTEM_PARTITION_CACHE_PREFAULT", "true");
    let mut child = harness::spawn(&workdir, &options);
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    let mut stream = loop {
        if let Ok(stream) = std::net::TcpStream::connect(address) {
            break stream;
        }
        assert!(std::time::Instant::now() < deadline, "never bound");
        std::thread::sleep(Duration::from_millis(1));
    };
    stream
        .set_read_timeout(Some(Duration::from_secs(30)))
        .unwrap();
    let session = harness::raw::login(&mut stream);
    assert_ne!(session, 0);
    child.kill().unwrap();
    child.wait().unwrap();
}

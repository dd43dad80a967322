//! Tests of the whole loading pipeline: layers, environment, errors, the
//! runtime dump round trip.

use std::path::Path;

use super::*;
use crate::config::values::{ByteSize, ConfigDuration};

struct Fixture {
    directory: tempfile::TempDir,
}

impl Fixture {
    fn new() -> Self {
        Self {
            directory: tempfile::tempdir().expect("temp dir"),
        }
    }

    fn with_file(self, name: &str, text: &str) -> Self {
        let path = self.directory.path().join(name);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).expect("create dir");
        }
        std::fs::write(path, text).expect("write config");
        self
    }

    fn sources(&self, env: &[(&str, &str)]) -> ConfigSources {
        ConfigSources {
            env: env
                .iter()
                .map(|(name, value)| ((*name).to_owned(), (*value).to_owned()))
                .collect(),
            cwd: self.directory.path().to_owned(),
        }
    }

    /// Loads and validates as boot does, with clustering off.
    fn load(&self, env: &[(&str, &str)]) -> Result<LoadedConfig, ConfigError> {
        let mut loaded = load(&self.sources(env))?;
        let warnings = loaded.validate(None)?;
        loaded.warnings.extend(warnings);
        Ok(loaded)
    }

    fn path(&self) -> &Path {
        self.directory.path()
    }
}

fn invalid_parts(error: ConfigError) -> (String, String, String, Option<String>) {
    match error {
        ConfigError::InvalidValue {
            key,
            value,
            allowed,
            origin,
        } => (key, value, allowed, origin),
        other => panic!("expected an invalid value, got {other}"),
    }
}

#[test]
fn given_no_file_and_no_env_when_loading_should_use_defaults_and_warn() {
    let fixture = Fixture::new();
    let loaded = fixture.load(&[]).expect("defaults load");
    assert_eq!(loaded.config, ServerConfig::embedded_defaults());
    assert_eq!(loaded.file, None);
    assert!(loaded.applied_env.is_empty());
    assert_eq!(loaded.warnings.len(), 1, "{:?}", loaded.warnings);
    assert!(loaded.warnings[0].contains("config.toml"));
}

#[test]
fn given_config_file_when_loading_should_override_defaults_key_by_key() {
    let fixture = Fixture::new().with_file(
        "config.toml",
        "[tcp]\naddress = \"127.0.0.1:0\"\n[system.memory_pool]\nsize = \"1 GiB\"\n\
         [[cluster.nodes]]\nname = \"solo\"\nip = \"10.0.0.1\"\nreplica_id = 0\n[cluster.nodes.ports]\ntcp_replica = 1\n",
    );
    let loaded = fixture.load(&[]).expect("file loads");
    let config = &loaded.config;
    assert_eq!(loaded.file, Some(fixture.path().join("config.toml")));
    assert_eq!(config.tcp.address.to_string(), "127.0.0.1:0");
    assert!(config.tcp.enabled, "sibling keys keep their defaults");
    assert_eq!(config.system.memory_pool.size, ByteSize::gib(1));
    assert_eq!(config.system.memory_pool.bucket_capacity, 8_192);
    assert_eq!(config.cluster.nodes.len(), 1, "arrays replace");
    assert_eq!(config.cluster.nodes[0].name, "solo");
    assert!(loaded.warnings.is_empty(), "{:?}", loaded.warnings);
}

#[test]
fn given_env_and_file_when_loading_should_let_env_win_and_report_applied() {
    let fixture = Fixture::new().with_file("config.toml", "[tcp]\naddress = \"127.0.0.1:1000\"\n");
    let loaded = fixture
        .load(&[
            ("IGGY_TCP_ADDRESS", "127.0.0.1:2000"),
            ("IGGY_SYSTEM_MEMORY_POOL_SIZE", "1 GiB"),
            ("IGGY_HTTP_JWT_ENCODING_SECRET", "top-secret"),
            ("IGGY_HTTP_ENABLED", ""),
        ])
        .expect("env loads");
    assert_eq!(loaded.config.tcp.address.to_string(), "127.0.0.1:2000");
    assert_eq!(loaded.config.system.memory_pool.size, ByteSize::gib(1));
    assert_eq!(loaded.config.http.jwt.encoding_secret, "top-secret");
    assert!(loaded.config.http.enabled, "empty values are ignored");
    assert_eq!(
        loaded.applied_env,
        [
            "IGGY_HTTP_JWT_ENCODING_SECRET value changed to: ****** from environment variable",
            "IGGY_SYSTEM_MEMORY_POOL_SIZE value changed to: 1 GiB from environment variable",
            "IGGY_TCP_ADDRESS value changed to: 127.0.0.1:2000 from environment variable",
        ]
    );
}

#[test]
fn given_indexed_env_for_every_node_field_when_loading_should_replace_roster() {
    let fixture = Fixture::new();
    let mut env = vec![
        ("IGGY_CLUSTER_ENABLED", "true"),
        ("IGGY_HTTP_CORS_ALLOWED_ORIGINS", "[a, \"b,c\"]"),
    ];
    let fields = [
        ("0", "NAME", "n0"),
        ("0", "IP", "10.0.0.1"),
        ("0", "REPLICA_ID", "0"),
        ("1", "NAME", "n1"),
        ("1", "IP", "10.0.0.2"),
        ("1", "REPLICA_ID", "1"),
    ];
    let names: Vec<(String, &str)> = fields
        .iter()
        .map(|(index, field, value)| (format!("IGGY_CLUSTER_NODES_{index}_{field}"), *value))
        .collect();
    let ports: Vec<(String, String)> = (0..2)
        .flat_map(|index| {
            ["TCP", "QUIC", "HTTP", "WEBSOCKET", "TCP_REPLICA"]
                .iter()
                .enumerate()
                .map(move |(offset, port)| {
                    (
                        format!("IGGY_CLUSTER_NODES_{index}_PORTS_{port}"),
                        format!("{}", 7000 + index * 10 + offset),
                    )
                })
        })
        .collect();
    env.extend(names.iter().map(|(name, value)| (name.as_str(), *value)));
    env.extend(
        ports
            .iter()
            .map(|(name, value)| (name.as_str(), value.as_str())),
    );
    let loaded = load(&fixture.sources(&env)).expect("env roster loads");
    assert!(loaded.validate(Some(1)).is_ok());
    let config = loaded.config;
    assert_eq!(config.cluster.nodes.len(), 2);
    assert_eq!(config.cluster.nodes[1].ports.tcp_replica, Some(7014));
    assert_eq!(config.cluster.nodes[1].ip, "10.0.0.2");
    assert_eq!(config.http.cors.allowed_origins, ["a", "b,c"]);
}

#[test]
fn given_single_indexed_node_env_when_loading_should_fail_naming_missing_field() {
    let fixture = Fixture::new();
    let error = fixture
        .load(&[("IGGY_CLUSTER_NODES_1_PORTS_TCP_REPLICA", "9999")])
        .expect_err("incomplete roster");
    let (key, value, allowed, _) = invalid_parts(error);
    assert_eq!(key, "cluster.nodes[0].name");
    assert_eq!(value, "(not set)");
    assert!(allowed.contains("replaces the file's"), "{allowed}");
}

#[test]
fn given_unknown_env_variable_when_loading_should_warn_with_suggestion() {
    let fixture = Fixture::new().with_file("config.toml", "");
    let loaded = fixture
        .load(&[("IGGY_SYSTEM_MEMORY_POOL_SIZES", "1 GiB")])
        .expect("loads");
    assert_eq!(loaded.warnings.len(), 1);
    assert!(
        loaded.warnings[0].contains("`IGGY_SYSTEM_MEMORY_POOL_SIZE`"),
        "{}",
        loaded.warnings[0]
    );
}

#[test]
fn given_bad_values_when_loading_should_name_key_value_and_allowed_forms() {
    let fixture = Fixture::new().with_file("config.toml", "[tcp]\naddress = \"localhost\"\n");
    let (key, value, allowed, origin) = invalid_parts(fixture.load(&[]).expect_err("bad address"));
    assert_eq!(
        (key.as_str(), value.as_str(), origin),
        ("tcp.address", "\"localhost\"", None)
    );
    assert!(allowed.contains("HOST:PORT"), "{allowed}");

    let fixture = Fixture::new();
    let error = fixture
        .load(&[("IGGY_CONSUMER_GROUP_REBALANCING_TIMEOUT", "30 fortnights")])
        .expect_err("bad duration");
    let message = error.to_string();
    let (key, value, allowed, origin) = invalid_parts(error);
    assert_eq!(key, "consumer_group.rebalancing_timeout");
    assert_eq!(value, "\"30 fortnights\"");
    assert!(allowed.contains("unknown time unit"), "{allowed}");
    assert_eq!(
        origin.as_deref(),
        Some("IGGY_CONSUMER_GROUP_REBALANCING_TIMEOUT")
    );
    assert!(
        message.contains("IGGY_CONSUMER_GROUP_REBALANCING_TIMEOUT"),
        "{message}"
    );

    let error = fixture
        .load(&[("IGGY_QUIC_MAX_CONCURRENT_BIDI_STREAMS", "many")])
        .expect_err("bad type");
    let (key, value, allowed, _) = invalid_parts(error);
    assert_eq!(
        (key.as_str(), value.as_str()),
        ("quic.max_concurrent_bidi_streams", "\"many\"")
    );
    assert!(allowed.contains("u32"), "{allowed}");

    let error = fixture
        .load(&[("IGGY_SYSTEM_MEMORY_POOL_SIZE", "100 MiB")])
        .expect_err("rule");
    let (key, value, allowed, origin) = invalid_parts(error);
    assert_eq!(
        (key.as_str(), value.as_str()),
        ("system.memory_pool.size", "\"100 MiB\"")
    );
    assert!(allowed.contains("512 MiB"), "{allowed}");
    assert_eq!(origin.as_deref(), Some("IGGY_SYSTEM_MEMORY_POOL_SIZE"));
}

#[test]
fn given_removed_keys_when_loading_should_refuse_naming_replacement() {
    let fixture = Fixture::new().with_file("config.toml", "[system.topic]\nmax_size = \"10 GB\"\n");
    let message = fixture.load(&[]).expect_err("removed file key").to_string();
    assert!(
        message.contains("system.topic.max_size") && message.contains("max_topic_size"),
        "{message}"
    );
    let fixture = Fixture::new();
    let message = fixture
        .load(&[("IGGY_SYSTEM_SEGMENT_PREALLOCATE", "true")])
        .expect_err("removed env")
        .to_string();
    assert!(message.contains("preallocate_segments"), "{message}");
}

#[test]
fn given_unknown_file_keys_when_loading_should_warn_or_refuse_in_strict_tables() {
    let fixture = Fixture::new().with_file(
        "config.toml",
        "[tcp]\nadress = \"127.0.0.1:1\"\n[bogus]\nx = 1\n",
    );
    let loaded = fixture.load(&[]).expect("unknown keys only warn");
    assert_eq!(loaded.warnings.len(), 2, "{:?}", loaded.warnings);
    assert!(
        loaded
            .warnings
            .iter()
            .any(|w| w.contains("`tcp.adress`") && w.contains("`tcp.address`"))
    );
    assert!(loaded.warnings.iter().any(|w| w.contains("`bogus`")));
    let fixture = Fixture::new().with_file("config.toml", "[cluster.tls]\nenabeld = true\n");
    assert!(matches!(
        fixture.load(&[]),
        Err(ConfigError::UnknownKey { .. })
    ));
}

#[test]
fn given_config_path_variable_when_loading_should_resolve_relative_and_refuse_missing() {
    let fixture = Fixture::new().with_file("conf/custom.toml", "[http]\nenabled = false\n");
    let loaded = fixture
        .load(&[("IGGY_CONFIG_PATH", "conf/custom.toml")])
        .expect("explicit file");
    assert!(!loaded.config.http.enabled);
    assert_eq!(loaded.file, Some(fixture.path().join("conf/custom.toml")));
    let error = fixture
        .load(&[("IGGY_CONFIG_PATH", "nope.toml")])
        .expect_err("missing file");
    assert!(matches!(error, ConfigError::FileNotFound { .. }));
    let broken = Fixture::new().with_file("config.toml", "[tcp\n");
    assert!(matches!(broken.load(&[]), Err(ConfigError::Syntax { .. })));
}

#[test]
fn given_runtime_dump_when_parsed_back_should_equal_config_without_secrets() {
    let fixture = Fixture::new();
    let env = [
        ("IGGY_TCP_ADDRESS", "127.0.0.1:0"),
        ("IGGY_HTTP_JWT_ENCODING_SECRET", "enc-secret"),
        ("IGGY_HTTP_JWT_DECODING_SECRET", "enc-secret"),
        (
            "IGGY_SYSTEM_ENCRYPTION_KEY",
            "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=",
        ),
        ("IGGY_WEBSOCKET_MAX_FRAME_SIZE", "1 MiB"),
        ("IGGY_SYSTEM_SHARDING_CPU_ALLOCATION", "2"),
        ("IGGY_HTTP_JWT_TRUSTED_ISSUERS_0_ISSUER", "idp"),
        (
            "IGGY_HTTP_JWT_TRUSTED_ISSUERS_0_JWKS_URL",
            "https://idp/jwks",
        ),
        ("IGGY_HTTP_JWT_TRUSTED_ISSUERS_0_USER_ID", "7"),
        ("IGGY_DATA_MAINTENANCE_MESSAGES_INTERVAL", "1h 30m"),
    ];
    let mut config = fixture.load(&env).expect("loads").config;
    config.tcp.address = "127.0.0.1:41877".parse().expect("address");
    let dump = config.to_runtime_toml();
    for secret in [
        "enc-secret",
        "AAECAwQF",
        "encoding_secret",
        "decoding_secret",
        "shared_secret",
    ] {
        assert!(!dump.contains(secret), "dump leaks {secret}:\n{dump}");
    }
    assert!(dump.contains("address = \"127.0.0.1:41877\""), "{dump}");
    let back = Fixture::new().with_file("config.toml", &dump);
    let reloaded = back.load(&[]).expect("dump loads");
    assert!(reloaded.warnings.is_empty(), "{:?}", reloaded.warnings);
    let mut expected = config.clone();
    expected.http.jwt.encoding_secret.clear();
    expected.http.jwt.decoding_secret.clear();
    expected.system.encryption.key.clear();
    assert_eq!(reloaded.config, expected);
    assert_eq!(
        reloaded.config.data_maintenance.messages.interval,
        ConfigDuration::from_secs(5_400)
    );
}

#[test]
fn given_every_transport_when_dumping_should_write_enabled_and_address() {
    let mut config = ServerConfig::embedded_defaults();
    config.quic.enabled = false;
    let dump: toml::Table = config.to_runtime_toml().parse().expect("dump is TOML");
    for section in ["tcp", "http", "quic", "websocket"] {
        let table = dump[section].as_table().expect(section);
        assert!(
            table.contains_key("enabled") && table.contains_key("address"),
            "{section}"
        );
    }
    assert_eq!(dump["quic"]["enabled"].as_bool(), Some(false));
}

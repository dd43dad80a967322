#![allow(clippy::unwrap_used, clippy::expect_used)]

use super::*;
use std::collections::HashMap;

fn env_of(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> {
    let map: HashMap<String, String> = pairs
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect();
    move |name| map.get(name).cloned()
}

#[test]
fn given_no_file_and_no_env_when_loading_should_be_read_only_stdio_over_tcp() {
    let config = Config::load_from(env_of(&[])).unwrap();
    assert_eq!(config.transport, McpTransport::Stdio);
    assert_eq!(config.iggy.transport, IggyTransport::Tcp);
    assert_eq!(config.iggy.address, DEFAULT_IGGY_ADDRESS);
    assert_eq!(
        config.permissions,
        PermissionsConfig {
            read: true,
            create: false,
            update: false,
            delete: false
        }
    );
}

#[test]
fn given_a_file_and_env_when_loading_should_let_env_win() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("mcp.toml");
    std::fs::write(
        &path,
        r#"
transport = "http"
[http]
address = "127.0.0.1:9999"
token = "from-file"
[iggy]
transport = "quic"
address = "127.0.0.1:8080"
[permissions]
create = true
"#,
    )
    .unwrap();
    let config = Config::load_from(env_of(&[
        (CONFIG_PATH_ENV, path.to_str().unwrap()),
        ("IGGY_MCP_IGGY_TRANSPORT", "ws"),
        ("IGGY_MCP_PERMISSIONS_DELETE", "true"),
        ("IGGY_MCP_HTTP_PATH", "/agents"),
    ]))
    .unwrap();
    assert_eq!(config.transport, McpTransport::Http);
    assert_eq!(config.http.token, "from-file");
    assert_eq!(config.http.path, "/agents");
    assert_eq!(config.iggy.transport, IggyTransport::Ws);
    assert!(config.permissions.create && config.permissions.delete);
    assert!(!config.permissions.update);
}

#[test]
fn given_http_transport_without_token_when_loading_should_refuse() {
    let error = Config::load_from(env_of(&[("IGGY_MCP_TRANSPORT", "http")])).unwrap_err();
    assert!(error.to_string().contains("bearer token"), "{error}");
}

#[test]
fn given_a_non_loopback_http_address_when_loading_should_refuse() {
    let error = Config::load_from(env_of(&[
        ("IGGY_MCP_TRANSPORT", "http"),
        ("IGGY_MCP_HTTP_TOKEN", "t"),
        ("IGGY_MCP_HTTP_ADDRESS", "0.0.0.0:8082"),
    ]))
    .unwrap_err();
    assert!(error.to_string().contains("loopback"), "{error}");
}

#[test]
fn given_a_token_file_when_loading_should_read_the_trimmed_token() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("pat");
    std::fs::write(&path, "  secret-pat\n").unwrap();
    let reference = format!("file:{}", path.display());
    let config = Config::load_from(env_of(&[("IGGY_MCP_IGGY_TOKEN", &reference)])).unwrap();
    assert_eq!(config.iggy.token, "secret-pat");
}

#[test]
fn given_an_empty_token_file_when_loading_should_refuse() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("pat");
    std::fs::write(&path, "\n").unwrap();
    let reference = format!("file:{}", path.display());
    let error = Config::load_from(env_of(&[("IGGY_MCP_IGGY_TOKEN", &reference)])).unwrap_err();
    assert!(
        matches!(error, ConfigError::EmptySecretFile { .. }),
        "{error}"
    );
}

#[test]
fn given_a_bad_boolean_when_loading_should_name_the_variable() {
    let error = Config::load_from(env_of(&[("IGGY_MCP_PERMISSIONS_CREATE", "maybe")])).unwrap_err();
    assert!(
        error.to_string().contains("IGGY_MCP_PERMISSIONS_CREATE"),
        "{error}"
    );
}

#[test]
fn given_an_unknown_key_in_the_file_when_loading_should_refuse() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("mcp.toml");
    std::fs::write(&path, "[iggy]\nadress = \"x:1\"\n").unwrap();
    let error =
        Config::load_from(env_of(&[(CONFIG_PATH_ENV, path.to_str().unwrap())])).unwrap_err();
    assert!(matches!(error, ConfigError::Parse { .. }), "{error}");
}

#[test]
fn given_neither_password_nor_token_when_loading_should_refuse() {
    let error = Config::load_from(env_of(&[("IGGY_MCP_IGGY_PASSWORD", "")])).unwrap_err();
    assert!(error.to_string().contains("iggy.token"), "{error}");
}

#[test]
fn given_the_example_file_when_loading_should_match_the_defaults() {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/config.example.toml");
    let config = Config::load_from(env_of(&[(CONFIG_PATH_ENV, path)])).unwrap();
    let defaults = Config::default();
    assert_eq!(config.transport, defaults.transport);
    assert_eq!(config.permissions, defaults.permissions);
    assert_eq!(config.iggy.address, defaults.iggy.address);
    assert_eq!(config.http.address, defaults.http.address);
    assert!(config.iggy.tls.validate_certificate);
}

#[test]
fn given_a_file_in_the_reference_layout_when_loading_should_accept_it_and_name_what_is_ignored() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("reference.toml");
    std::fs::write(
        &path,
        r#"
transport = "stdio"
[http]
address = "127.0.0.1:8082"
path = "/mcp"
[http.cors]
enabled = false
allowed_origins = ["*"]
[http.tls]
enabled = false
cert_file = "cert.pem"
[iggy]
address = "localhost:8090"
username = "iggy"
password = "iggy"
token = ""
consumer = "iggy-mcp"
[iggy.tls]
enabled = false
ca_file = "ca.pem"
domain = ""
[permissions]
create = true
read = true
update = true
delete = true
[telemetry]
enabled = false
"#,
    )
    .unwrap();
    let config = Config::load_from(env_of(&[(CONFIG_PATH_ENV, path.to_str().unwrap())])).unwrap();
    assert!(config.permissions.delete);
    assert_eq!(config.iggy.address, "localhost:8090");
    assert_eq!(
        config.ignored_sections(),
        ["telemetry", "http.cors", "http.tls"]
    );
}

#[test]
fn given_http_tls_enabled_when_loading_should_refuse() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("mcp.toml");
    std::fs::write(
        &path,
        "transport = \"http\"\n[http]\ntoken = \"t\"\n[http.tls]\nenabled = true\n",
    )
    .unwrap();
    let error =
        Config::load_from(env_of(&[(CONFIG_PATH_ENV, path.to_str().unwrap())])).unwrap_err();
    assert!(error.to_string().contains("http.tls"), "{error}");
}

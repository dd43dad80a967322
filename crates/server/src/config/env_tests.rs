//! Unit tests of environment name matching and value conversion.

use super::*;

fn vars(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
    pairs
        .iter()
        .map(|(name, value)| ((*name).to_owned(), (*value).to_owned()))
        .collect()
}

fn overlay(pairs: &[(&str, &str)]) -> EnvOverlay {
    build_overlay(&SchemaNode::server(), &vars(pairs)).expect("overlay builds")
}

fn at<'a>(table: &'a toml::Table, dotted: &str) -> &'a Value {
    let mut segments = dotted.split('.');
    let mut current = &table[segments.next().expect("a first segment")];
    for segment in segments {
        current = match segment.parse::<usize>() {
            Ok(index) => &current[index],
            Err(_) => &current[segment],
        };
    }
    current
}

#[test]
fn given_names_with_underscored_keys_when_resolving_should_find_the_leaf() {
    let result = overlay(&[
        ("IGGY_SYSTEM_MEMORY_POOL_SIZE", "1 GiB"),
        ("IGGY_DATA_MAINTENANCE_MESSAGES_CLEANER_ENABLED", "FALSE"),
        ("IGGY_SYSTEM_SHARDING_CPU_ALLOCATION", "2"),
        ("IGGY_CLUSTER_SUPERBLOCK_WEDGED_FATAL_TIMEOUT", "0"),
    ]);
    assert_eq!(
        at(&result.table, "system.memory_pool.size"),
        &Value::String("1 GiB".into())
    );
    assert_eq!(
        at(&result.table, "data_maintenance.messages.cleaner_enabled"),
        &Value::Boolean(false)
    );
    assert_eq!(
        at(&result.table, "system.sharding.cpu_allocation"),
        &Value::String("2".into())
    );
    assert_eq!(
        at(&result.table, "cluster.superblock_wedged_fatal_timeout"),
        &Value::String("0".into())
    );
    assert!(result.warnings.is_empty(), "{:?}", result.warnings);
    assert_eq!(
        result.origins["system.memory_pool.size"],
        "IGGY_SYSTEM_MEMORY_POOL_SIZE"
    );
}

#[test]
fn given_indexed_names_when_resolving_should_build_arrays_with_gaps_as_empty_tables() {
    let result = overlay(&[
        ("IGGY_CLUSTER_NODES_1_PORTS_TCP_REPLICA", "9191"),
        (
            "IGGY_CLUSTER_NODES_1_ADVERTISED_ADDRESSES_2_CLIENT_CIDR",
            "10.0.0.0/8",
        ),
        (
            "IGGY_HTTP_JWT_TRUSTED_ISSUERS_0_JWKS_URL",
            "https://idp/jwks",
        ),
    ]);
    let nodes = at(&result.table, "cluster.nodes")
        .as_array()
        .expect("array");
    assert_eq!(nodes.len(), 2);
    assert_eq!(nodes[0], Value::Table(toml::Table::new()));
    assert_eq!(
        at(&result.table, "cluster.nodes.1.ports.tcp_replica"),
        &Value::Integer(9191)
    );
    let selectors = at(&result.table, "cluster.nodes.1.advertised_addresses")
        .as_array()
        .expect("array");
    assert_eq!(selectors.len(), 3);
    assert_eq!(
        selectors[2]["client_cidr"],
        Value::String("10.0.0.0/8".into())
    );
    assert_eq!(
        at(&result.table, "http.jwt.trusted_issuers.0.jwks_url"),
        &Value::String("https://idp/jwks".into())
    );
    assert!(
        result
            .origins
            .contains_key("cluster.nodes[1].advertised_addresses[2].client_cidr")
    );
}

#[test]
fn given_indices_beyond_limits_when_resolving_should_ignore_silently() {
    let result = overlay(&[
        ("IGGY_CLUSTER_NODES_256_IP", "10.0.0.1"),
        (
            "IGGY_CLUSTER_NODES_0_ADVERTISED_ADDRESSES_16_ADDRESS",
            "host",
        ),
    ]);
    assert!(result.table.is_empty());
    assert!(result.warnings.is_empty());
    assert!(result.applied.is_empty());
}

#[test]
fn given_list_variables_when_converting_should_split_outside_quotes() {
    let result = overlay(&[
        ("IGGY_HTTP_CORS_ALLOWED_ORIGINS", "[a, \"b,c\"]"),
        ("IGGY_HTTP_CORS_ALLOWED_METHODS", "GET"),
        ("IGGY_HTTP_JWT_VALID_AUDIENCES", "[]"),
    ]);
    let strings =
        |values: &[&str]| Value::Array(values.iter().map(|v| Value::String((*v).into())).collect());
    assert_eq!(
        at(&result.table, "http.cors.allowed_origins"),
        &strings(&["a", "b,c"])
    );
    assert_eq!(
        at(&result.table, "http.cors.allowed_methods"),
        &strings(&["GET"])
    );
    assert_eq!(at(&result.table, "http.jwt.valid_audiences"), &strings(&[]));
}

#[test]
fn given_raw_texts_when_parsing_generically_should_follow_spec_order() {
    assert_eq!(parse_value("TrUe"), Value::Boolean(true));
    assert_eq!(parse_value("42"), Value::Integer(42));
    assert_eq!(parse_value("-7"), Value::Integer(-7));
    assert_eq!(parse_value("2.5"), Value::Float(2.5));
    assert_eq!(parse_value("NaN"), Value::String("NaN".into()));
    assert_eq!(
        parse_value("127.0.0.1:8090"),
        Value::String("127.0.0.1:8090".into())
    );
    assert_eq!(parse_value("30 s"), Value::String("30 s".into()));
    assert_eq!(
        parse_value("[1, \"x,y\", true]"),
        Value::Array(vec![
            Value::Integer(1),
            Value::String("x,y".into()),
            Value::Boolean(true)
        ])
    );
}

#[test]
fn given_string_leaf_when_value_looks_numeric_should_keep_text() {
    let result = overlay(&[
        ("IGGY_HTTP_JWT_ENCODING_SECRET", "12345"),
        ("IGGY_CLUSTER_NAME", "\"quoted\""),
    ]);
    assert_eq!(
        at(&result.table, "http.jwt.encoding_secret"),
        &Value::String("12345".into())
    );
    assert_eq!(
        at(&result.table, "cluster.name"),
        &Value::String("quoted".into())
    );
}

#[test]
fn given_empty_and_exempt_variables_when_building_should_ignore_them() {
    let result = overlay(&[
        ("IGGY_TCP_ADDRESS", ""),
        ("IGGY_ROOT_PASSWORD", "secret"),
        ("IGGY_CONNECTORS_SINK_X_ENABLED", "true"),
        ("OTHER_TCP_ADDRESS", "1.2.3.4:5"),
    ]);
    assert!(result.table.is_empty());
    assert!(result.warnings.is_empty(), "{:?}", result.warnings);
    assert!(result.applied.is_empty());
}

#[test]
fn given_unknown_variable_when_building_should_warn_with_suggestions() {
    let result = overlay(&[("IGGY_TCP_ADRESS", "127.0.0.1:1")]);
    assert!(result.table.is_empty());
    assert_eq!(result.warnings.len(), 1);
    let warning = &result.warnings[0];
    assert!(warning.contains("IGGY_TCP_ADRESS"), "{warning}");
    assert!(warning.contains("`IGGY_TCP_ADDRESS`"), "{warning}");
}

#[test]
fn given_secret_variable_when_applied_should_mask_value() {
    let result = overlay(&[
        ("IGGY_SYSTEM_ENCRYPTION_KEY", "c2VjcmV0"),
        ("IGGY_TCP_ADDRESS", "127.0.0.1:0"),
    ]);
    assert_eq!(
        result.applied,
        [
            "IGGY_SYSTEM_ENCRYPTION_KEY value changed to: ****** from environment variable",
            "IGGY_TCP_ADDRESS value changed to: 127.0.0.1:0 from environment variable",
        ]
    );
}

#[test]
fn given_removed_key_variable_when_building_should_refuse() {
    let error = build_overlay(
        &SchemaNode::server(),
        &vars(&[("IGGY_SYSTEM_SEGMENT_SIZE", "1 GiB")]),
    )
    .expect_err("removed key");
    assert!(error.to_string().contains("segment_size"), "{error}");
}

#[test]
fn given_schema_when_listing_names_should_be_unique_and_resolve_back() {
    let schema = SchemaNode::server();
    let mut names = Vec::new();
    collect_env_names(&schema, "IGGY".to_owned(), &mut names);
    let count = names.len();
    names.sort();
    names.dedup();
    assert_eq!(names.len(), count, "two keys share one variable name");
    for name in names
        .iter()
        .filter(|name| !name.contains("_1") && !name.contains("_2"))
    {
        let found = resolve(&schema, &name[ENV_PREFIX.len()..]).expect(name);
        assert!(found.in_range, "{name}");
    }
}

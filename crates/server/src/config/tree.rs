//! The key tree of the schema, used where the typed structs cannot help:
//! matching environment names, spotting unknown file keys, and merging
//! layers as plain TOML before one typed deserialization.
//!
//! The tree is derived by serializing [`ServerConfig::schema_sample`], which
//! sets every optional key and puts one element in each array of tables, so
//! it can never drift from the structs.

use std::collections::BTreeMap;

use toml::Value;

use super::schema::ServerConfig;
use super::suggest::similar_names;

/// Environment variables address `cluster.nodes` indices 0..=255 ...
pub(crate) const CLUSTER_NODES_ENV_LEN_MAX: usize = 256;
/// ... and 0..=15 of each node's `advertised_addresses` ...
pub(crate) const ADVERTISED_ADDRESSES_ENV_LEN_MAX: usize = 16;
/// ... and 0..=15 of `http.jwt.trusted_issuers`.
pub(crate) const TRUSTED_ISSUERS_ENV_LEN_MAX: usize = 16;

/// Tables whose unknown keys fail loading instead of warning (spec §8:
/// they deny unknown fields). Matched as dotted-path prefixes.
const STRICT_TABLE_PREFIXES: [&str; 2] = ["cluster.tls.", "cluster.nodes["];

/// The kind of a leaf value, which steers how environment text converts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum LeafKind {
    /// Strings and every string-encoded value type (durations, sizes, ...).
    Text,
    Integer,
    Float,
    Boolean,
    /// An array of scalars, set as a whole.
    List(Box<LeafKind>),
}

#[derive(Debug, Clone, PartialEq)]
pub(crate) enum SchemaNode {
    Leaf(LeafKind),
    Table(BTreeMap<String, SchemaNode>),
    /// An array of tables; the environment may address `env_len_max` entries.
    TableArray {
        element: Box<SchemaNode>,
        env_len_max: usize,
    },
}

impl SchemaNode {
    /// The key tree of [`ServerConfig`].
    pub(crate) fn server() -> Self {
        let sample = Value::try_from(ServerConfig::schema_sample())
            .expect("the configuration schema serializes to TOML; pinned by a unit test");
        Self::from_value(&sample, "")
    }

    fn from_value(value: &Value, path: &str) -> Self {
        match value {
            Value::Table(table) => Self::Table(
                table
                    .iter()
                    .map(|(key, child)| (key.clone(), Self::from_value(child, &join(path, key))))
                    .collect(),
            ),
            Value::Array(items) => match items.first() {
                Some(first @ Value::Table(_)) => Self::TableArray {
                    element: Box::new(Self::from_value(first, path)),
                    env_len_max: table_array_env_len_max(path),
                },
                Some(first) => Self::Leaf(LeafKind::List(Box::new(leaf_kind(first)))),
                None => Self::Leaf(LeafKind::List(Box::new(LeafKind::Text))),
            },
            scalar => Self::Leaf(leaf_kind(scalar)),
        }
    }
}

fn leaf_kind(value: &Value) -> LeafKind {
    match value {
        Value::Integer(_) => LeafKind::Integer,
        Value::Float(_) => LeafKind::Float,
        Value::Boolean(_) => LeafKind::Boolean,
        _ => LeafKind::Text,
    }
}

fn table_array_env_len_max(path: &str) -> usize {
    match path {
        "cluster.nodes" => CLUSTER_NODES_ENV_LEN_MAX,
        "cluster.nodes.advertised_addresses" => ADVERTISED_ADDRESSES_ENV_LEN_MAX,
        "http.jwt.trusted_issuers" => TRUSTED_ISSUERS_ENV_LEN_MAX,
        other => panic!("array of tables `{other}` needs an environment index limit in tree.rs"),
    }
}

fn join(path: &str, key: &str) -> String {
    if path.is_empty() {
        key.to_owned()
    } else {
        format!("{path}.{key}")
    }
}

/// Merges `overlay` into `base`: tables merge key by key, scalars and
/// arrays replace.
pub(crate) fn merge(base: &mut toml::Table, overlay: toml::Table) {
    for (key, value) in overlay {
        match (base.get_mut(&key), value) {
            (Some(Value::Table(base_table)), Value::Table(overlay_table)) => {
                merge(base_table, overlay_table)
            }
            (_, value) => {
                base.insert(key, value);
            }
        }
    }
}

/// A key of the file that the schema does not know.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct UnknownKey {
    /// Dotted path, array indices in brackets: `cluster.nodes[0].portz`.
    pub path: String,
    /// Similar keys of the same table, as full paths.
    pub suggestions: Vec<String>,
    /// True inside a table that denies unknown keys.
    pub strict: bool,
}

/// Every key of `value` that `schema` does not know, in file order.
pub(crate) fn unknown_keys(schema: &SchemaNode, value: &Value) -> Vec<UnknownKey> {
    let mut found = Vec::new();
    collect_unknown(schema, value, "", &mut found);
    found
}

fn collect_unknown(schema: &SchemaNode, value: &Value, path: &str, found: &mut Vec<UnknownKey>) {
    match (schema, value) {
        (SchemaNode::Table(children), Value::Table(table)) => {
            for (key, child_value) in table {
                let child_path = join(path, key);
                match children.get(key) {
                    Some(child_schema) => {
                        collect_unknown(child_schema, child_value, &child_path, found)
                    }
                    None => found.push(UnknownKey {
                        suggestions: similar_names(key, children.keys().map(String::as_str))
                            .iter()
                            .map(|sibling| join(path, sibling))
                            .collect(),
                        strict: STRICT_TABLE_PREFIXES
                            .iter()
                            .any(|prefix| child_path.starts_with(prefix)),
                        path: child_path,
                    }),
                }
            }
        }
        (SchemaNode::TableArray { element, .. }, Value::Array(items)) => {
            for (index, item) in items.iter().enumerate() {
                collect_unknown(element, item, &format!("{path}[{index}]"), found);
            }
        }
        // Leaves, and shape mismatches that deserialization reports.
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn table(text: &str) -> toml::Table {
        text.parse().expect(text)
    }

    #[test]
    fn given_schema_when_built_should_expose_nested_tables_arrays_and_optional_keys() {
        let SchemaNode::Table(root) = SchemaNode::server() else {
            panic!("root is a table")
        };
        let SchemaNode::Table(cluster) = &root["cluster"] else {
            panic!("cluster is a table")
        };
        let SchemaNode::TableArray {
            element,
            env_len_max,
        } = &cluster["nodes"]
        else {
            panic!("cluster.nodes is an array of tables")
        };
        assert_eq!(*env_len_max, CLUSTER_NODES_ENV_LEN_MAX);
        let SchemaNode::Table(node) = element.as_ref() else {
            panic!("a node is a table")
        };
        assert!(node.contains_key("advertised_addresses"));
        assert!(node.contains_key("advertised_address"));
        let SchemaNode::Table(websocket) = &root["websocket"] else {
            panic!("websocket is a table")
        };
        assert_eq!(
            websocket["max_frame_size"],
            SchemaNode::Leaf(LeafKind::Text)
        );
        let SchemaNode::Table(node_section) = &root["node"] else {
            panic!("node is a table")
        };
        assert!(node_section.contains_key("advertised_address"));
    }

    #[test]
    fn given_layers_when_merging_should_merge_tables_and_replace_scalars_and_arrays() {
        let mut base =
            table("a = 1\nlist = [1, 2]\n[t]\nx = 1\ny = 2\n[[nodes]]\nn = 1\n[[nodes]]\nn = 2\n");
        merge(
            &mut base,
            table("list = [3]\n[t]\ny = 5\n[[nodes]]\nn = 9\n"),
        );
        assert_eq!(
            base,
            table("a = 1\nlist = [3]\n[t]\nx = 1\ny = 5\n[[nodes]]\nn = 9\n")
        );
    }

    #[test]
    fn given_file_with_typos_when_scanning_should_report_paths_suggestions_and_strictness() {
        let file = Value::Table(table(
            "[tcp]\nadress = \"x\"\n[cluster.tls]\nenabeld = true\n[[cluster.nodes]]\nname = \"a\"\nportz = 1\n",
        ));
        let mut unknown = unknown_keys(&SchemaNode::server(), &file);
        unknown.sort_by(|left, right| left.path.cmp(&right.path));
        let paths: Vec<&str> = unknown.iter().map(|key| key.path.as_str()).collect();
        assert_eq!(
            paths,
            [
                "cluster.nodes[0].portz",
                "cluster.tls.enabeld",
                "tcp.adress"
            ]
        );
        assert_eq!(unknown[0].suggestions, ["cluster.nodes[0].ports"]);
        assert_eq!(unknown[1].suggestions, ["cluster.tls.enabled"]);
        assert!(unknown[0].strict && unknown[1].strict && !unknown[2].strict);
        assert_eq!(unknown[2].suggestions, ["tcp.address"]);
    }
}

//! Environment overrides (spec §3). A variable is `IGGY_` plus the key's
//! TOML path, segments upper-cased and joined by `_`, array indices as
//! segments. Because keys contain underscores, names are matched by
//! walking the schema tree with backtracking, never split blindly.
//!
//! The matched variables form one TOML overlay: values converted per §3.2,
//! arrays built only from the indexed variables present (so they replace
//! the file's arrays, §3.3). Empty values are ignored; unknown names warn
//! with suggestions; removed keys refuse boot.

use std::collections::BTreeMap;

use toml::Value;

use super::error::{ConfigError, suggestion_note};
use super::removed;
use super::schema::SECRET_KEYS;
use super::suggest::similar_names;
use super::tree::{LeafKind, SchemaNode};

pub(crate) const ENV_PREFIX: &str = "IGGY_";
/// Shown instead of the value of a secret variable.
pub(crate) const SECRET_MASK: &str = "******";

/// `IGGY_*` variables read elsewhere, never warned about. The spec's list,
/// plus this server's own knobs of spec §11.
const EXEMPT_NAMES: [&str; 13] = [
    "IGGY_CONFIG_PATH",
    "IGGY_ENV_PATH",
    "IGGY_DISPLAY_CONFIG",
    "IGGY_ROOT_USERNAME",
    "IGGY_ROOT_PASSWORD",
    "IGGY_SHARD_RUNTIME_CAPACITY",
    "IGGY_SHARD_EVENT_INTERVAL",
    "IGGY_CI_BUILD",
    "IGGY_TEST_CLUSTER_NODES",
    "IGGY_TEST_CLEANUP_DISABLED",
    "IGGY_TEST_VERBOSE",
    "IGGY_CONNECTORS_CONFIG_PATH",
    "IGGY_MCP_CONFIG_PATH",
];
const EXEMPT_PREFIXES: [&str; 2] = ["IGGY_CONNECTORS_SINK_", "IGGY_CONNECTORS_SOURCE_"];

/// The environment layer, ready to merge.
#[derive(Debug, Default)]
pub(crate) struct EnvOverlay {
    pub table: toml::Table,
    /// "`NAME` value changed to: X from environment variable", secrets masked.
    pub applied: Vec<String>,
    pub warnings: Vec<String>,
    /// Dotted key path (`cluster.nodes[1].ports.tcp`) to the variable that set it.
    pub origins: BTreeMap<String, String>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Segment {
    Key(String),
    Index(usize),
}

/// A variable name resolved to a leaf of the schema.
struct NameMatch<'a> {
    segments: Vec<Segment>,
    leaf: &'a LeafKind,
    /// False when an index exceeds its array's environment limit; such
    /// variables are ignored silently.
    in_range: bool,
}

/// Builds the overlay from the environment (after `.env` loading).
pub(crate) fn build_overlay(
    schema: &SchemaNode,
    env: &[(String, String)],
) -> Result<EnvOverlay, ConfigError> {
    let mut variables: Vec<&(String, String)> = env
        .iter()
        .filter(|(name, _)| name.starts_with(ENV_PREFIX))
        .collect();
    variables.sort_by(|left, right| left.0.cmp(&right.0));
    let mut overlay = EnvOverlay::default();
    let mut root = Value::Table(toml::Table::new());
    let mut unknown = Vec::new();
    for (name, text) in variables {
        if text.is_empty() {
            continue;
        }
        removed::check_env_name(name)?;
        if is_exempt(name) {
            continue;
        }
        let Some(found) = resolve(schema, &name[ENV_PREFIX.len()..]) else {
            unknown.push(name.as_str());
            continue;
        };
        if !found.in_range {
            continue;
        }
        let key = dotted_path(&found.segments);
        insert_at(&mut root, &found.segments, convert(text, found.leaf));
        let shown = if SECRET_KEYS.contains(&key.as_str()) {
            SECRET_MASK
        } else {
            text.as_str()
        };
        overlay.applied.push(format!(
            "{name} value changed to: {shown} from environment variable"
        ));
        overlay.origins.insert(key, name.clone());
    }
    if !unknown.is_empty() {
        let mut valid_names = Vec::new();
        collect_env_names(schema, "IGGY".to_owned(), &mut valid_names);
        for name in unknown {
            let suggestions = similar_names(name, valid_names.iter().map(String::as_str));
            overlay.warnings.push(format!(
                "unknown environment variable {name} is ignored{}",
                suggestion_note(&suggestions)
            ));
        }
    }
    if let Value::Table(table) = root {
        overlay.table = table;
    }
    Ok(overlay)
}

fn is_exempt(name: &str) -> bool {
    EXEMPT_NAMES.contains(&name)
        || EXEMPT_PREFIXES
            .iter()
            .any(|prefix| name.starts_with(prefix))
}

/// Matches the rest of a variable name (after `IGGY_`) against the tree,
/// trying every key that fits and backtracking on a dead end.
fn resolve<'a>(node: &'a SchemaNode, rest: &str) -> Option<NameMatch<'a>> {
    match node {
        SchemaNode::Table(children) => children.iter().find_map(|(key, child)| {
            let after = rest.strip_prefix(key.to_ascii_uppercase().as_str())?;
            let mut found = match (after, child) {
                ("", SchemaNode::Leaf(leaf)) => NameMatch {
                    segments: Vec::new(),
                    leaf,
                    in_range: true,
                },
                _ => resolve(child, after.strip_prefix('_')?)?,
            };
            found.segments.insert(0, Segment::Key(key.clone()));
            Some(found)
        }),
        SchemaNode::TableArray {
            element,
            env_len_max,
        } => {
            let digits_end = rest
                .find(|c: char| !c.is_ascii_digit())
                .unwrap_or(rest.len());
            let (digits, after) = rest.split_at(digits_end);
            let canonical = !digits.is_empty() && (digits == "0" || !digits.starts_with('0'));
            if !canonical {
                return None;
            }
            let mut found = resolve(element, after.strip_prefix('_')?)?;
            // An index too large even for usize is out of range as well.
            let index = digits.parse::<usize>().unwrap_or(usize::MAX);
            found.in_range &= index < *env_len_max;
            found.segments.insert(0, Segment::Index(index));
            Some(found)
        }
        SchemaNode::Leaf(_) => None,
    }
}

/// Every valid variable name, for suggestions.
fn collect_env_names(node: &SchemaNode, prefix: String, names: &mut Vec<String>) {
    match node {
        SchemaNode::Leaf(_) => names.push(prefix),
        SchemaNode::Table(children) => {
            for (key, child) in children {
                collect_env_names(
                    child,
                    format!("{prefix}_{}", key.to_ascii_uppercase()),
                    names,
                );
            }
        }
        SchemaNode::TableArray {
            element,
            env_len_max,
        } => {
            for index in 0..*env_len_max {
                collect_env_names(element, format!("{prefix}_{index}"), names);
            }
        }
    }
}

fn dotted_path(segments: &[Segment]) -> String {
    let mut path = String::new();
    for segment in segments {
        match segment {
            Segment::Key(key) if path.is_empty() => path.push_str(key),
            Segment::Key(key) => {
                path.push('.');
                path.push_str(key);
            }
            Segment::Index(index) => path.push_str(&format!("[{index}]")),
        }
    }
    path
}

/// Stores `value` at `segments`, creating tables, and padding arrays with
/// empty tables up to the index (spec §3.3: such gaps fail later).
fn insert_at(slot: &mut Value, segments: &[Segment], value: Value) {
    let Some((first, rest)) = segments.split_first() else {
        *slot = value;
        return;
    };
    match first {
        Segment::Key(key) => {
            if !slot.is_table() {
                *slot = Value::Table(toml::Table::new());
            }
            let table = slot.as_table_mut().expect("the slot was just made a table");
            let child = table
                .entry(key.clone())
                .or_insert_with(|| Value::Table(toml::Table::new()));
            insert_at(child, rest, value);
        }
        Segment::Index(index) => {
            if !slot.is_array() {
                *slot = Value::Array(Vec::new());
            }
            let items = slot
                .as_array_mut()
                .expect("the slot was just made an array");
            while items.len() <= *index {
                items.push(Value::Table(toml::Table::new()));
            }
            insert_at(&mut items[*index], rest, value);
        }
    }
}

/// Converts a variable's text for a leaf of the given kind. String-typed
/// leaves keep the text (so a numeric secret stays a string); list leaves
/// accept `[a, "b,c"]` or a single bare element; other leaves follow §3.2.
fn convert(text: &str, leaf: &LeafKind) -> Value {
    match leaf {
        LeafKind::Text => Value::String(
            strip_quotes(text.trim())
                .map_or(text, |inner| inner)
                .to_owned(),
        ),
        LeafKind::List(element) => {
            let elements = split_list(text).unwrap_or_else(|| vec![text.trim().to_owned()]);
            Value::Array(elements.iter().map(|item| convert(item, element)).collect())
        }
        LeafKind::Integer | LeafKind::Float | LeafKind::Boolean => parse_value(text),
    }
}

/// The generic conversion of spec §3.2: arrays, booleans in any case,
/// unsigned, signed, then finite floats; anything else stays a string.
pub(crate) fn parse_value(text: &str) -> Value {
    let trimmed = text.trim();
    if let Some(elements) = split_list(trimmed) {
        return Value::Array(elements.iter().map(|item| parse_value(item)).collect());
    }
    if trimmed.eq_ignore_ascii_case("true") || trimmed.eq_ignore_ascii_case("false") {
        return Value::Boolean(trimmed.eq_ignore_ascii_case("true"));
    }
    if let Some(integer) = trimmed
        .parse::<u64>()
        .ok()
        .and_then(|value| i64::try_from(value).ok())
    {
        return Value::Integer(integer);
    }
    if let Ok(integer) = trimmed.parse::<i64>() {
        return Value::Integer(integer);
    }
    if let Ok(float) = trimmed.parse::<f64>()
        && float.is_finite()
        && trimmed.chars().any(|c| c.is_ascii_digit())
    {
        return Value::Float(float);
    }
    Value::String(text.to_owned())
}

/// Splits `[a, b, "c,d"]` on commas outside double quotes and strips each
/// element's surrounding quotes; `None` when the text is not bracketed.
fn split_list(text: &str) -> Option<Vec<String>> {
    let inner = text.trim().strip_prefix('[')?.strip_suffix(']')?;
    if inner.trim().is_empty() {
        return Some(Vec::new());
    }
    let mut elements = Vec::new();
    let mut current = String::new();
    let mut quoted = false;
    for c in inner.chars() {
        match c {
            '"' => {
                quoted = !quoted;
                current.push(c);
            }
            ',' if !quoted => elements.push(std::mem::take(&mut current)),
            _ => current.push(c),
        }
    }
    elements.push(current);
    Some(
        elements
            .iter()
            .map(|element| {
                let element = element.trim();
                strip_quotes(element).unwrap_or(element).to_owned()
            })
            .collect(),
    )
}

fn strip_quotes(text: &str) -> Option<&str> {
    text.strip_prefix('"')?.strip_suffix('"')
}

#[cfg(test)]
#[path = "env_tests.rs"]
mod tests;

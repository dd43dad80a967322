//! The loading pipeline: defaults, file, environment, one typed
//! deserialization; validation follows with the `--replica-id` flag.
//! Removed keys refuse boot before their layer is merged; unknown file keys
//! become warnings (errors inside the tables that deny unknown keys).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde_path_to_error::Segment;
use toml::Value;

use super::env;
use super::error::{ConfigError, suggestion_note};
use super::removed;
use super::schema::ServerConfig;
use super::tree::{self, SchemaNode, unknown_keys};

/// Names the configuration file; relative paths are looked up in the
/// working directory, then in each parent directory.
pub const CONFIG_PATH_VARIABLE: &str = "IGGY_CONFIG_PATH";
/// Read from the working directory when `IGGY_CONFIG_PATH` is not set.
pub const DEFAULT_CONFIG_FILE: &str = "config.toml";
/// Shown for a key that deserialization wanted but no layer set.
const NOT_SET: &str = "(not set)";
/// What a required key that no layer set allows.
const REQUIRED: &str = "a value; this key is required";

/// Everything loading reads: the environment (after `.env` loading) and
/// the working directory.
#[derive(Debug, Clone, Default)]
pub struct ConfigSources {
    pub env: Vec<(String, String)>,
    pub cwd: PathBuf,
}

/// A loaded configuration and what loading has to report. Not yet
/// validated: call [`LoadedConfig::validate`] once with `--replica-id`.
#[derive(Debug, Clone)]
pub struct LoadedConfig {
    pub config: ServerConfig,
    /// The configuration file merged, if one was found.
    pub file: Option<PathBuf>,
    /// Unknown keys and variables, and a missing default file.
    pub warnings: Vec<String>,
    /// "`NAME` value changed to: X from environment variable", secrets masked.
    pub applied_env: Vec<String>,
    /// Dotted key path to the environment variable that set it.
    env_origins: BTreeMap<String, String>,
}

impl LoadedConfig {
    /// [`ServerConfig::validate`], with refusals also naming the
    /// environment variable that set the value.
    pub fn validate(&self, replica_id: Option<u8>) -> Result<Vec<String>, ConfigError> {
        self.config
            .validate(replica_id)
            .map_err(|error| attach_origin(error, &self.env_origins))
    }
}

/// Loads the configuration (spec §1): embedded defaults, then the file,
/// then the environment, deserialized once. Validation is separate because
/// it needs the `--replica-id` flag.
pub fn load(sources: &ConfigSources) -> Result<LoadedConfig, ConfigError> {
    let schema = SchemaNode::server();
    let mut merged = ServerConfig::embedded_default_table();
    let mut warnings = Vec::new();
    let file = locate_file(sources)?;
    match &file {
        Some(path) => {
            let table = read_file(path)?;
            removed::check_file(&table, path)?;
            report_unknown_keys(&schema, &table, path, &mut warnings)?;
            tree::merge(&mut merged, table);
        }
        None => warnings.push(format!(
            "no configuration file {DEFAULT_CONFIG_FILE} in {}; running on the embedded defaults",
            sources.cwd.display()
        )),
    }
    let overlay = env::build_overlay(&schema, &sources.env)?;
    warnings.extend(overlay.warnings);
    tree::merge(&mut merged, overlay.table);
    let config = deserialize(merged).map_err(|error| attach_origin(error, &overlay.origins))?;
    Ok(LoadedConfig {
        config,
        file,
        warnings,
        applied_env: overlay.applied,
        env_origins: overlay.origins,
    })
}

fn locate_file(sources: &ConfigSources) -> Result<Option<PathBuf>, ConfigError> {
    let explicit = sources
        .env
        .iter()
        .rev()
        .find(|(name, value)| name == CONFIG_PATH_VARIABLE && !value.is_empty())
        .map(|(_, value)| Path::new(value));
    let Some(explicit) = explicit else {
        let default = sources.cwd.join(DEFAULT_CONFIG_FILE);
        return Ok(default.is_file().then_some(default));
    };
    let found = if explicit.is_absolute() {
        explicit.is_file().then(|| explicit.to_owned())
    } else {
        sources
            .cwd
            .ancestors()
            .map(|directory| directory.join(explicit))
            .find(|candidate| candidate.is_file())
    };
    found.map(Some).ok_or_else(|| ConfigError::FileNotFound {
        path: sources.cwd.join(explicit),
    })
}

fn read_file(path: &Path) -> Result<toml::Table, ConfigError> {
    let text = std::fs::read_to_string(path).map_err(|source| ConfigError::Read {
        path: path.to_owned(),
        source,
    })?;
    text.parse()
        .map_err(|error: toml::de::Error| ConfigError::Syntax {
            path: path.to_owned(),
            message: error.to_string().trim_end().to_owned(),
        })
}

fn report_unknown_keys(
    schema: &SchemaNode,
    file: &toml::Table,
    path: &Path,
    warnings: &mut Vec<String>,
) -> Result<(), ConfigError> {
    for unknown in unknown_keys(schema, &Value::Table(file.clone())) {
        if unknown.strict {
            return Err(ConfigError::UnknownKey {
                key: unknown.path,
                path: path.to_owned(),
                suggestions: unknown.suggestions,
            });
        }
        warnings.push(format!(
            "unknown configuration key `{}` in {} is ignored{}",
            unknown.path,
            path.display(),
            suggestion_note(&unknown.suggestions)
        ));
    }
    Ok(())
}

/// Deserializes the merged layers, turning a type error into an
/// [`ConfigError::InvalidValue`] with the key's path and its value.
pub(crate) fn deserialize(merged: toml::Table) -> Result<ServerConfig, ConfigError> {
    let root = Value::Table(merged);
    serde_path_to_error::deserialize(root.clone()).map_err(|error| {
        // The first line is serde's message; toml appends the key after it.
        let inner = error.inner().to_string();
        let message = inner.lines().next().unwrap_or_default().to_owned();
        let path = error.path().to_string();
        let (key, value, allowed) = match missing_field(&message) {
            Some(field) => (
                format!("{path}.{field}"),
                NOT_SET.to_owned(),
                REQUIRED.to_owned(),
            ),
            None => {
                let value = lookup(&root, error.path())
                    .map_or_else(|| NOT_SET.to_owned(), Value::to_string);
                (path, value, message)
            }
        };
        ConfigError::InvalidValue {
            key,
            value,
            allowed,
            origin: None,
        }
    })
}

fn missing_field(message: &str) -> Option<&str> {
    message.strip_prefix("missing field `")?.split('`').next()
}

fn lookup<'a>(root: &'a Value, path: &serde_path_to_error::Path) -> Option<&'a Value> {
    path.iter()
        .try_fold(root, |current, segment| match segment {
            Segment::Seq { index } => current.as_array()?.get(*index),
            Segment::Map { key } => current.as_table()?.get(key),
            _ => None,
        })
}

/// Names the variable behind a refused value and, when the environment
/// built an array, explains that it replaced the file's array (spec §3.3).
fn attach_origin(error: ConfigError, origins: &BTreeMap<String, String>) -> ConfigError {
    let ConfigError::InvalidValue {
        key,
        value,
        mut allowed,
        origin: None,
    } = error
    else {
        return error;
    };
    if let Some(array) = key.split_once('[').map(|(array, _)| array) {
        let element_prefix = format!("{array}[");
        let from_env = origins.keys().any(|set| set.starts_with(&element_prefix));
        if from_env && !origins.contains_key(&key) {
            allowed.push_str(&format!(
                "; environment variables set `{array}` entries, so the environment's `{array}` replaces \
                 the file's and every required field of every entry must come from the environment"
            ));
        }
    }
    ConfigError::InvalidValue {
        origin: origins.get(&key).cloned(),
        key,
        value,
        allowed,
    }
}

#[cfg(test)]
#[path = "load_tests.rs"]
mod tests;

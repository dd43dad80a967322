//! The runtime configuration dump (spec §6): the effective configuration
//! as TOML without the secret keys. Boot code first writes the bound
//! listener addresses into the config, then calls
//! [`ServerConfig::to_runtime_toml`] and writes the result to
//! `<system.path>/<system.runtime.path>/current_config.toml`.

use toml::Value;

use super::schema::{SECRET_KEYS, ServerConfig};

/// Name of the dump inside the runtime directory.
pub const RUNTIME_CONFIG_FILE: &str = "current_config.toml";

impl ServerConfig {
    /// The complete effective configuration, secrets omitted. Every
    /// transport section carries `enabled` and `address`.
    pub fn to_runtime_toml(&self) -> String {
        let mut value = Value::try_from(self)
            .expect("the configuration schema serializes to TOML; pinned by a unit test");
        for key in SECRET_KEYS {
            remove_dotted(&mut value, key);
        }
        toml::to_string(&value).expect("a TOML table serializes; pinned by a unit test")
    }
}

fn remove_dotted(root: &mut Value, dotted: &str) {
    let Some((parents, leaf)) = dotted.rsplit_once('.') else {
        return;
    };
    let parent = parents.split('.').try_fold(root, |current, segment| {
        current.as_table_mut()?.get_mut(segment)
    });
    if let Some(table) = parent.and_then(Value::as_table_mut) {
        table.remove(leaf);
    }
}

//! Server configuration: schema, value syntax, loading and validation.
//!
//! Loading ([`load`]) is pure over its inputs ([`ConfigSources`]): the
//! embedded `default_config.toml` is the base layer, the configuration file
//! is merged over it, then the `IGGY_*` environment variables; tables merge
//! key by key while scalars and arrays replace. The merged TOML is
//! deserialized once into [`ServerConfig`]. Boot then validates once with
//! the `--replica-id` flag ([`LoadedConfig::validate`], which also names the
//! environment variable behind a refused value). Every refusal is a
//! [`ConfigError`] naming the key, the value and what is allowed.
//! [`load_dotenv`] runs first, on the caller's copy of the environment.
//!
//! The runtime dump ([`ServerConfig::to_runtime_toml`]) writes the
//! effective configuration without its secrets.

mod dotenv;
mod dump;
mod env;
mod error;
mod load;
mod removed;
mod schema;
mod suggest;
mod tree;
mod validate;
mod values;

pub use dotenv::load_dotenv;
pub use dump::RUNTIME_CONFIG_FILE;
pub use error::ConfigError;
pub use load::{CONFIG_PATH_VARIABLE, ConfigSources, DEFAULT_CONFIG_FILE, LoadedConfig, load};
pub use schema::*;
pub use values::{
    ByteSize, Cidr, ConfigDuration, CpuAllocation, CpuAllocationError, NumaAllocation, NumaNode,
    NumaTopology, ParseValueError, SYSFS_SYSTEM_ROOT, TokenExpiry, is_valid_host, parse_cpu_list,
    socket_address,
};

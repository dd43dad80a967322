//! [`ServerConfig::validate`]: every per-key and cross-key rule of spec §7
//! and §10, checked once after merging. The first broken rule is returned
//! as a [`ConfigError::InvalidValue`] naming the key, the value and what is
//! allowed; soft problems come back as warnings. Secrets are never echoed:
//! their value is shown as a length.
//!
//! Rules live beside the section they check: `transport.rs`, `system.rs`,
//! `cluster.rs` (cluster and node), `roster.rs` (cluster nodes) and
//! `limits.rs` (metadata, partition, message bus); service sections below.

mod cluster;
mod limits;
mod roster;
mod system;
mod transport;

use std::fmt::Display;

use super::error::ConfigError;
use super::schema::ServerConfig;
use super::values::ConfigDuration;

/// Warnings produced by a successful validation.
pub type ValidationWarnings = Vec<String>;

impl ServerConfig {
    /// Checks every rule. `replica_id` is the `--replica-id` flag, which
    /// must select exactly one roster node in cluster mode.
    pub fn validate(&self, replica_id: Option<u8>) -> Result<ValidationWarnings, ConfigError> {
        let mut warnings = Vec::new();
        validate_services(self)?;
        // The bus frame cap bounds other sizes, so its own rules come first.
        limits::validate(self, &mut warnings)?;
        transport::validate(self, &mut warnings)?;
        system::validate(&self.system)?;
        cluster::validate(self, replica_id, &mut warnings)?;
        Ok(warnings)
    }
}

fn validate_services(config: &ServerConfig) -> Result<(), ConfigError> {
    non_zero(
        "consumer_group.rebalancing_timeout",
        config.consumer_group.rebalancing_timeout,
    )?;
    let messages = &config.data_maintenance.messages;
    if messages.cleaner_enabled {
        non_zero("data_maintenance.messages.interval", messages.interval)?;
    }
    let tokens = &config.personal_access_token;
    require(
        tokens.max_tokens_per_user > 0,
        "personal_access_token.max_tokens_per_user",
        tokens.max_tokens_per_user,
        "greater than 0",
    )?;
    if tokens.cleaner.enabled {
        non_zero(
            "personal_access_token.cleaner.interval",
            tokens.cleaner.interval,
        )?;
    }
    if config.heartbeat.enabled {
        non_zero("heartbeat.interval", config.heartbeat.interval)?;
    }
    let telemetry = &config.telemetry;
    if telemetry.enabled {
        non_empty("telemetry.service_name", &telemetry.service_name)?;
        non_empty("telemetry.logs.endpoint", &telemetry.logs.endpoint)?;
        non_empty("telemetry.traces.endpoint", &telemetry.traces.endpoint)?;
    }
    Ok(())
}

/// Fails with `allowed` unless `holds`.
pub(crate) fn require(
    holds: bool,
    key: &str,
    value: impl Display,
    allowed: &str,
) -> Result<(), ConfigError> {
    if holds {
        Ok(())
    } else {
        Err(ConfigError::invalid(key, value, allowed))
    }
}

pub(crate) fn non_zero(key: &str, value: ConfigDuration) -> Result<(), ConfigError> {
    require(!value.is_zero(), key, quoted(value), "a non-zero duration")
}

pub(crate) fn non_empty(key: &str, value: &str) -> Result<(), ConfigError> {
    require(
        !value.trim().is_empty(),
        key,
        quoted(value),
        "a non-empty string",
    )
}

/// Fails unless `min <= value <= max`.
pub(crate) fn in_range<T: PartialOrd + Display>(
    key: &str,
    value: T,
    min: T,
    max: T,
) -> Result<(), ConfigError> {
    let allowed = format!("{min} ..= {max}");
    require(value >= min && value <= max, key, value, &allowed)
}

/// Fails unless `0 < value <= max`.
pub(crate) fn positive_at_most(
    key: &str,
    value: ConfigDuration,
    max: ConfigDuration,
) -> Result<(), ConfigError> {
    let allowed = format!("greater than 0s and at most {max}");
    require(
        !value.is_zero() && value <= max,
        key,
        quoted(value),
        &allowed,
    )
}

/// Shows a value the way it is written in TOML.
pub(crate) fn quoted(value: impl Display) -> String {
    format!("\"{value}\"")
}

/// Shows a secret without revealing it.
pub(crate) fn secret_shown(secret: &str) -> String {
    format!("(secret of {} bytes)", secret.len())
}

#[cfg(test)]
mod tests;

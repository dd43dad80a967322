//! Secure storage for stored PATs and the login session (spec §4.5): the OS
//! keyring through `keyring` (service/account names as the reference), or a
//! 0600 TOML file under `$IGGY_HOME` for hosts without one (§9.8).

use std::path::PathBuf;

pub const SESSION_ACCOUNT: &str = "iggy-cli-session";

pub fn pat_service(server: &str) -> String {
    format!("iggy:{server}")
}

pub fn session_service(server: &str) -> String {
    format!("iggy-cli-session:{server}")
}

pub enum SecretStore {
    Keyring,
    File(PathBuf),
}

impl SecretStore {
    /// Whether the store can be used, and the store's error when it cannot.
    pub fn status(&self) -> Result<(), String> {
        match self {
            SecretStore::Keyring => keyring::Entry::store_status()
                .as_ref()
                .map(|_| ())
                .map_err(ToString::to_string),
            SecretStore::File(_) => Ok(()),
        }
    }

    /// Fails with the store's "no default store" text when entries cannot be
    /// created, so callers can refuse before changing anything on the server.
    pub fn usable(&self) -> Result<(), String> {
        match self.status() {
            Ok(()) => Ok(()),
            Err(_) => Err(keyring::Error::NoDefaultStore.to_string()),
        }
    }

    pub fn get(&self, service: &str, account: &str) -> Result<Option<String>, String> {
        match self {
            SecretStore::Keyring => {
                let entry = keyring::Entry::new(service, account).map_err(|e| e.to_string())?;
                match entry.get_password() {
                    Ok(secret) => Ok(Some(secret)),
                    Err(keyring::Error::NoEntry) => Ok(None),
                    Err(e) => Err(e.to_string()),
                }
            }
            SecretStore::File(path) => Ok(read_file(path)
                .get(service)
                .and_then(|t| t.get(account))
                .and_then(|v| v.as_str())
                .map(str::to_owned)),
        }
    }

    pub fn set(&self, service: &str, account: &str, secret: &str) -> Result<(), String> {
        match self {
            SecretStore::Keyring => keyring::Entry::new(service, account)
                .and_then(|entry| entry.set_password(secret))
                .map_err(|e| e.to_string()),
            SecretStore::File(path) => {
                let mut all = read_file(path);
                let table = all
                    .entry(service.to_owned())
                    .or_insert_with(|| toml::Value::Table(toml::Table::new()));
                if let toml::Value::Table(t) = table {
                    t.insert(account.to_owned(), secret.into());
                }
                write_file(path, &all)
            }
        }
    }

    /// Removes an entry; a missing entry is not an error.
    pub fn delete(&self, service: &str, account: &str) -> Result<(), String> {
        match self {
            SecretStore::Keyring => {
                let entry = keyring::Entry::new(service, account).map_err(|e| e.to_string())?;
                match entry.delete_credential() {
                    Ok(()) | Err(keyring::Error::NoEntry) => Ok(()),
                    Err(e) => Err(e.to_string()),
                }
            }
            SecretStore::File(path) => {
                let mut all = read_file(path);
                if let Some(toml::Value::Table(t)) = all.get_mut(service) {
                    t.remove(account);
                    if t.is_empty() {
                        all.remove(service);
                    }
                }
                write_file(path, &all)
            }
        }
    }
}

fn read_file(path: &PathBuf) -> toml::Table {
    std::fs::read_to_string(path)
        .ok()
        .and_then(|text| text.parse().ok())
        .unwrap_or_default()
}

fn write_file(path: &PathBuf, all: &toml::Table) -> Result<(), String> {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).map_err(|e| e.to_string())?;
    }
    std::fs::write(path, all.to_string()).map_err(|e| e.to_string())?;
    restrict_mode(path);
    Ok(())
}

#[cfg(unix)]
pub fn restrict_mode(path: &std::path::Path) {
    use std::os::unix::fs::PermissionsExt;
    // Secrets are stored in plain text; keep them readable by the owner only.
    let _ = std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600));
}

#[cfg(not(unix))]
pub fn restrict_mode(_path: &std::path::Path) {}

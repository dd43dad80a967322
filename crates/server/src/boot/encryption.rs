//! Encryption at rest at boot: the configured keys are decoded and checked
//! against the data directory's key check file (`engine::encryption::
//! key_check`, which owns the file's layout and the rule).
//!
//! Runs right after the data directory's format marker is checked and before
//! anything else in the directory changes (logs, runtime dump, metadata): a
//! refusal leaves the directory byte for byte as it was. The only write is
//! the key check file itself, atomically (temporary file, fsync, rename,
//! directory fsync), when a key is used for the first time. Keys are never
//! logged; errors name the configuration key, not its value.

use std::fs;
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use base64::Engine;
use base64::alphabet::STANDARD;
use base64::engine::{DecodePaddingMode, GeneralPurpose, GeneralPurposeConfig};
use engine::encryption::key_check::{
    Admitted, ConfiguredKeys, KEY_CHECK_FILE, KeyCheckFile, KeyCheckFileError, Refusal, admit,
};
use engine::encryption::{EncryptionKey, Keyring};
use server::config::EncryptionConfig;

/// Standard base64, padding optional (as configuration validation allows).
const KEY_BASE64: GeneralPurpose = GeneralPurpose::new(
    &STANDARD,
    GeneralPurposeConfig::new().with_decode_padding_mode(DecodePaddingMode::Indifferent),
);

#[derive(Debug, thiserror::Error)]
pub enum EncryptionBootError {
    #[error("{key} is not standard base64 of exactly 32 bytes{entry}")]
    MalformedKey { key: &'static str, entry: String },
    #[error("refusing data directory {dir}: {refusal}. Nothing was changed")]
    Refused { dir: PathBuf, refusal: Refusal },
    #[error(
        "refusing data directory {dir}: its {KEY_CHECK_FILE} is unreadable: {source}. Nothing was changed"
    )]
    Damaged {
        dir: PathBuf,
        source: KeyCheckFileError,
    },
    #[error("cannot use {path}: {source}")]
    Io { path: PathBuf, source: io::Error },
}

/// What boot goes on with: the keyring (none when encryption is off) and a
/// line to log once logging is up (ids only, never key material).
pub struct EncryptionSetup {
    pub keyring: Option<Arc<Keyring>>,
    pub note: Option<String>,
}

/// Decodes the configured keys, checks them against `data`'s key check
/// file and records a new key. Refuses without changing anything.
pub fn prepare(
    data: &Path,
    config: &EncryptionConfig,
) -> Result<EncryptionSetup, EncryptionBootError> {
    let configured = config
        .enabled
        .then(|| configured_keys(config))
        .transpose()?;
    let recorded = read_recorded(data)?;
    let admitted = admit(recorded.as_ref(), configured.as_ref()).map_err(|refusal| {
        EncryptionBootError::Refused {
            dir: data.to_owned(),
            refusal,
        }
    })?;
    let Admitted::Encrypted { keyring, record } = admitted else {
        return Ok(EncryptionSetup {
            keyring: None,
            note: None,
        });
    };
    if let Some(file) = &record {
        write_recorded(data, file)?;
    }
    let ids: Vec<u32> = keyring.ids().map(|id| id.0).collect();
    let note = format!(
        "encryption at rest: AES-256-GCM, sealing under key id {}, key ids readable {ids:?}{}",
        keyring.active(),
        if record.is_some() {
            " (a new key was recorded in the key check file)"
        } else {
            ""
        }
    );
    Ok(EncryptionSetup {
        keyring: Some(Arc::new(keyring)),
        note: Some(note),
    })
}

fn configured_keys(config: &EncryptionConfig) -> Result<ConfiguredKeys, EncryptionBootError> {
    let current = decode_key(&config.key).ok_or(EncryptionBootError::MalformedKey {
        key: "system.encryption.key",
        entry: String::new(),
    })?;
    let previous = config
        .previous_key_texts()
        .enumerate()
        .map(|(index, text)| {
            decode_key(text).ok_or(EncryptionBootError::MalformedKey {
                key: "system.encryption.previous_keys",
                entry: format!(" (entry {index})"),
            })
        })
        .collect::<Result<_, _>>()?;
    Ok(ConfiguredKeys { current, previous })
}

fn decode_key(text: &str) -> Option<EncryptionKey> {
    let bytes = KEY_BASE64.decode(text.trim()).ok()?;
    EncryptionKey::from_slice(&bytes)
}

fn read_recorded(data: &Path) -> Result<Option<KeyCheckFile>, EncryptionBootError> {
    let path = data.join(KEY_CHECK_FILE);
    match fs::read(&path) {
        Ok(bytes) => {
            KeyCheckFile::decode(&bytes)
                .map(Some)
                .map_err(|source| EncryptionBootError::Damaged {
                    dir: data.to_owned(),
                    source,
                })
        }
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
        Err(source) => Err(EncryptionBootError::Io { path, source }),
    }
}

fn write_recorded(data: &Path, file: &KeyCheckFile) -> Result<(), EncryptionBootError> {
    let target = data.join(KEY_CHECK_FILE);
    let tmp = data.join(format!("{KEY_CHECK_FILE}.tmp"));
    let io_err = |source| EncryptionBootError::Io {
        path: target.clone(),
        source,
    };
    let mut out = fs::File::create(&tmp).map_err(io_err)?;
    out.write_all(&file.encode()).map_err(io_err)?;
    out.sync_all().map_err(io_err)?;
    fs::rename(&tmp, &target).map_err(io_err)?;
    fs::File::open(data)
        .and_then(|dir| dir.sync_all())
        .map_err(io_err)
}

#[cfg(test)]
mod tests {
    use super::*;

    const KEY_A: &str = "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=";
    const KEY_B: &str = "HxwdHhscGhkYFxYVFBMSERAPDg0MCwoJCAcGBQQDAgE=";

    fn config(enabled: bool, key: &str, previous: &str) -> EncryptionConfig {
        EncryptionConfig {
            enabled,
            key: key.into(),
            previous_keys: previous.into(),
        }
    }

    #[test]
    fn given_new_key_when_preparing_should_record_it_once_and_accept_it_again() {
        let dir = tempfile::tempdir().unwrap();
        let setup = prepare(dir.path(), &config(true, KEY_A, "")).unwrap();
        assert_eq!(setup.keyring.unwrap().active().0, 1);
        let recorded = fs::read(dir.path().join(KEY_CHECK_FILE)).unwrap();
        assert!(
            !recorded.windows(4).any(|w| w == [0, 1, 2, 3]),
            "never the key"
        );
        let again = prepare(dir.path(), &config(true, KEY_A.trim_end_matches('='), "")).unwrap();
        assert!(again.note.unwrap().contains("key id 1"));
        assert_eq!(fs::read(dir.path().join(KEY_CHECK_FILE)).unwrap(), recorded);
    }

    #[test]
    fn given_recorded_key_when_preparing_with_another_or_disabled_should_refuse_unchanged() {
        let dir = tempfile::tempdir().unwrap();
        prepare(dir.path(), &config(true, KEY_A, "")).unwrap();
        let before = fs::read(dir.path().join(KEY_CHECK_FILE)).unwrap();
        let other = prepare(dir.path(), &config(true, KEY_B, "")).err().unwrap();
        assert!(other.to_string().contains("does not match"), "{other}");
        let off = prepare(dir.path(), &config(false, "", "")).err().unwrap();
        assert!(off.to_string().contains("enabled = false"), "{off}");
        assert_eq!(fs::read(dir.path().join(KEY_CHECK_FILE)).unwrap(), before);
        assert_eq!(fs::read_dir(dir.path()).unwrap().count(), 1);
    }

    #[test]
    fn given_malformed_key_when_preparing_should_name_the_key_not_its_value() {
        let dir = tempfile::tempdir().unwrap();
        let err = prepare(dir.path(), &config(true, "c2VjcmV0", ""))
            .err()
            .unwrap();
        let text = err.to_string();
        assert!(text.contains("system.encryption.key"), "{text}");
        assert!(!text.contains("c2VjcmV0"), "{text}");
        let err = prepare(dir.path(), &config(true, KEY_A, "nope"))
            .err()
            .unwrap();
        assert!(err.to_string().contains("previous_keys is not"), "{err}");
        assert!(err.to_string().contains("(entry 0)"), "{err}");
        assert_eq!(fs::read_dir(dir.path()).unwrap().count(), 0);
    }

    #[test]
    fn given_old_key_as_previous_when_preparing_should_rotate() {
        let dir = tempfile::tempdir().unwrap();
        prepare(dir.path(), &config(true, KEY_A, "")).unwrap();
        let rotated = prepare(dir.path(), &config(true, KEY_B, KEY_A)).unwrap();
        let keyring = rotated.keyring.unwrap();
        assert_eq!(keyring.active().0, 2);
        assert_eq!(keyring.ids().count(), 2);
    }
}

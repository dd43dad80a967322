//! Password hashing with Argon2id (PHC strings) and verification.
//!
//! The receiving node validates the plaintext (`names::validate_password`),
//! hashes it here with a random salt, and replicates only the hash. Logins
//! for unknown users still run one verification ([`verify_dummy`]) so the
//! response time does not reveal whether a username exists.

use std::sync::OnceLock;

use argon2::Argon2;
use argon2::password_hash::{PasswordHash, PasswordHasher, PasswordVerifier, SaltString};
use rand::RngCore;

pub const SALT_BYTES: usize = 16;

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("password hashing failed: {reason}")]
pub struct PasswordHashError {
    pub reason: String,
}

/// Hashes a password with a fresh random salt into a PHC string.
pub fn hash_password(plaintext: &str) -> Result<String, PasswordHashError> {
    let mut salt = [0u8; SALT_BYTES];
    rand::rng().fill_bytes(&mut salt);
    hash_with_salt(plaintext, &salt)
}

fn hash_with_salt(plaintext: &str, salt: &[u8]) -> Result<String, PasswordHashError> {
    let salt = SaltString::encode_b64(salt).map_err(|e| PasswordHashError {
        reason: e.to_string(),
    })?;
    let hash = Argon2::default()
        .hash_password(plaintext.as_bytes(), &salt)
        .map_err(|e| PasswordHashError {
            reason: e.to_string(),
        })?;
    Ok(hash.to_string())
}

/// True when `plaintext` matches the PHC string; a malformed hash never
/// matches.
pub fn verify_password(plaintext: &str, phc_hash: &str) -> bool {
    let Ok(parsed) = PasswordHash::new(phc_hash) else {
        return false;
    };
    Argon2::default()
        .verify_password(plaintext.as_bytes(), &parsed)
        .is_ok()
}

/// Performs one verification against a fixed hash and returns false, to
/// equalise timing for unknown usernames.
pub fn verify_dummy(plaintext: &str) -> bool {
    static DUMMY: OnceLock<Option<String>> = OnceLock::new();
    let dummy = DUMMY.get_or_init(|| hash_with_salt("dummy-password", &[0x5A; SALT_BYTES]).ok());
    if let Some(hash) = dummy {
        // The result is discarded: the user does not exist either way.
        let _ = verify_password(plaintext, hash);
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn given_password_when_hashing_and_verifying_should_match_only_itself() {
        let hash = hash_password("secret").expect("hashing works");
        assert!(hash.starts_with("$argon2id$"));
        assert!(verify_password("secret", &hash));
        assert!(!verify_password("Secret", &hash));
        assert!(!verify_password("secret", "not-a-phc-string"));
        assert!(!verify_dummy("secret"));
    }
}

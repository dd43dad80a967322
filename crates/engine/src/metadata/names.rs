//! Name rules (storage spec §1) and the name-indexed map that enforces
//! uniqueness.
//!
//! Lengths are counted in UTF-8 bytes. Passwords are checked by the caller
//! before hashing ([`validate_password`]); the state machine only ever sees
//! the hash.

use std::collections::BTreeMap;

use super::errors::MetadataError;

pub const NAME_MIN_BYTES: usize = 1;
pub const NAME_MAX_BYTES: usize = 255;
pub const USERNAME_MIN_BYTES: usize = 3;
pub const USERNAME_MAX_BYTES: usize = 50;
pub const PASSWORD_MIN_BYTES: usize = 3;
pub const PASSWORD_MAX_BYTES: usize = 100;
pub const TOKEN_NAME_MIN_BYTES: usize = 3;
pub const TOKEN_NAME_MAX_BYTES: usize = 30;

const _: () = assert!(USERNAME_MAX_BYTES <= NAME_MAX_BYTES);
const _: () = assert!(TOKEN_NAME_MAX_BYTES <= NAME_MAX_BYTES);

fn within(text: &str, min: usize, max: usize) -> bool {
    (min..=max).contains(&text.len())
}

pub fn validate_stream_name(name: &str) -> Result<(), MetadataError> {
    within(name, NAME_MIN_BYTES, NAME_MAX_BYTES)
        .then_some(())
        .ok_or(MetadataError::InvalidStreamName {
            len_bytes: name.len(),
        })
}

pub fn validate_topic_name(name: &str) -> Result<(), MetadataError> {
    within(name, NAME_MIN_BYTES, NAME_MAX_BYTES)
        .then_some(())
        .ok_or(MetadataError::InvalidTopicName {
            len_bytes: name.len(),
        })
}

pub fn validate_group_name(name: &str) -> Result<(), MetadataError> {
    within(name, NAME_MIN_BYTES, NAME_MAX_BYTES)
        .then_some(())
        .ok_or(MetadataError::InvalidConsumerGroupName {
            len_bytes: name.len(),
        })
}

pub fn validate_username(name: &str) -> Result<(), MetadataError> {
    within(name, USERNAME_MIN_BYTES, USERNAME_MAX_BYTES)
        .then_some(())
        .ok_or(MetadataError::InvalidUsername {
            len_bytes: name.len(),
        })
}

/// Checks a plaintext password before it is hashed.
pub fn validate_password(password: &str) -> Result<(), MetadataError> {
    within(password, PASSWORD_MIN_BYTES, PASSWORD_MAX_BYTES)
        .then_some(())
        .ok_or(MetadataError::InvalidPassword {
            len_bytes: password.len(),
        })
}

pub fn validate_token_name(name: &str) -> Result<(), MetadataError> {
    within(name, TOKEN_NAME_MIN_BYTES, TOKEN_NAME_MAX_BYTES)
        .then_some(())
        .ok_or(MetadataError::InvalidTokenName {
            len_bytes: name.len(),
        })
}

/// A record that carries a unique name within its [`NamedMap`].
pub(crate) trait Named {
    fn name(&self) -> &str;
    fn set_name(&mut self, name: String);
}

/// Records keyed by ID with a unique-name index beside them.
///
/// Invariant: `by_name` maps exactly the names of the records in `by_id`.
/// Names change only through [`NamedMap::rename`]; records keep their name
/// field private so `get_mut` cannot break the index.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct NamedMap<K, V> {
    by_id: BTreeMap<K, V>,
    by_name: BTreeMap<String, K>,
}

impl<K, V> Default for NamedMap<K, V> {
    fn default() -> Self {
        Self {
            by_id: BTreeMap::new(),
            by_name: BTreeMap::new(),
        }
    }
}

impl<K: Ord + Copy, V: Named> NamedMap<K, V> {
    pub fn len(&self) -> usize {
        self.by_id.len()
    }

    pub fn get(&self, id: &K) -> Option<&V> {
        self.by_id.get(id)
    }

    pub fn get_mut(&mut self, id: &K) -> Option<&mut V> {
        self.by_id.get_mut(id)
    }

    pub fn id_of(&self, name: &str) -> Option<K> {
        self.by_name.get(name).copied()
    }

    pub fn contains_name(&self, name: &str) -> bool {
        self.by_name.contains_key(name)
    }

    pub fn ids(&self) -> impl Iterator<Item = K> + '_ {
        self.by_id.keys().copied()
    }

    pub fn values(&self) -> impl Iterator<Item = &V> {
        self.by_id.values()
    }

    pub fn values_mut(&mut self) -> impl Iterator<Item = &mut V> {
        self.by_id.values_mut()
    }

    /// Inserts a record whose ID and name are both unused (checked by the
    /// caller beforehand, asserted here).
    pub fn insert(&mut self, id: K, value: V) {
        let previous = self.by_name.insert(value.name().to_owned(), id);
        assert!(previous.is_none(), "name must be unused before insert");
        let replaced = self.by_id.insert(id, value);
        assert!(replaced.is_none(), "ID must be unused before insert");
    }

    pub fn remove(&mut self, id: &K) -> Option<V> {
        let value = self.by_id.remove(id)?;
        let removed = self.by_name.remove(value.name());
        assert!(removed.is_some(), "name index out of sync");
        Some(value)
    }

    /// Renames a record; the new name must be unused by any other record.
    pub fn rename(&mut self, id: &K, name: String) {
        let value = self.by_id.get_mut(id).expect("rename target exists");
        if value.name() == name {
            return;
        }
        assert!(!self.by_name.contains_key(&name), "new name must be unused");
        self.by_name.remove(value.name());
        self.by_name.insert(name.clone(), *id);
        value.set_name(name);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, PartialEq)]
    struct Item(String);

    impl Named for Item {
        fn name(&self) -> &str {
            &self.0
        }
        fn set_name(&mut self, name: String) {
            self.0 = name;
        }
    }

    #[test]
    fn given_length_bounds_when_validating_should_accept_only_inside() {
        assert!(validate_stream_name("").is_err());
        assert!(validate_stream_name("s").is_ok());
        assert!(validate_topic_name(&"t".repeat(255)).is_ok());
        assert!(validate_topic_name(&"t".repeat(256)).is_err());
        assert!(validate_group_name(&"g".repeat(256)).is_err());
        assert_eq!(validate_username("ab").map_err(|e| e.code()), Err(43));
        assert!(validate_username(&"u".repeat(50)).is_ok());
        assert!(validate_username(&"u".repeat(51)).is_err());
        assert_eq!(validate_password("pw").map_err(|e| e.code()), Err(44));
        assert!(validate_password(&"p".repeat(100)).is_ok());
        assert!(validate_password(&"p".repeat(101)).is_err());
        assert_eq!(validate_token_name("ab").map_err(|e| e.code()), Err(50));
        assert!(validate_token_name(&"n".repeat(30)).is_ok());
        assert!(validate_token_name(&"n".repeat(31)).is_err());
    }

    #[test]
    fn given_named_map_when_renaming_and_removing_should_keep_index_in_sync() {
        let mut map = NamedMap::default();
        map.insert(1u32, Item("a".into()));
        map.insert(2u32, Item("b".into()));
        map.rename(&1, "c".into());
        assert_eq!(map.id_of("c"), Some(1));
        assert_eq!(map.id_of("a"), None);
        assert_eq!(map.remove(&2), Some(Item("b".into())));
        assert!(!map.contains_name("b"));
        assert_eq!(map.len(), 1);
    }
}

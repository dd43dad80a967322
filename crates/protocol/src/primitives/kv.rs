//! Key/value TLV blocks (spec 8.7): message user headers and "options".
//!
//! ```text
//! block = pair*            pair  = key field | value field
//! field = kind u8 (non-zero) | length u32 (1..=255) | data
//! ```
//!
//! Structural rules hold for both uses: non-zero kinds, lengths 1..=255, no
//! overrun, an even number of fields; unknown kinds are allowed. User
//! headers are also capped at 100 000 bytes per message. Options add: keys
//! are String (kind 2) and valid UTF-8, no duplicate keys, at most 1024
//! pairs and 100 000 bytes. The empty block is valid for both.

pub use crate::wire::KvError;
use crate::wire::WireWrite;

pub const MAX_KV_FIELD_LEN: usize = 255;
pub const MAX_USER_HEADERS_BYTES: usize = 100_000;
pub const MAX_OPTIONS: usize = 1024;
pub const MAX_OPTIONS_BYTES: usize = 100_000;

/// The kind codes of `iggy_common`'s `HeaderKind`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum ValueKind {
    Raw = 1,
    String = 2,
    Bool = 3,
    Int8 = 4,
    Int16 = 5,
    Int32 = 6,
    Int64 = 7,
    Int128 = 8,
    Uint8 = 9,
    Uint16 = 10,
    Uint32 = 11,
    Uint64 = 12,
    Uint128 = 13,
    Float32 = 14,
    Float64 = 15,
}

impl ValueKind {
    /// The data length a fixed-size kind requires; `None` for Raw/String.
    pub const fn fixed_len(self) -> Option<usize> {
        match self {
            Self::Raw | Self::String => None,
            Self::Bool | Self::Int8 | Self::Uint8 => Some(1),
            Self::Int16 | Self::Uint16 => Some(2),
            Self::Int32 | Self::Uint32 | Self::Float32 => Some(4),
            Self::Int64 | Self::Uint64 | Self::Float64 => Some(8),
            Self::Int128 | Self::Uint128 => Some(16),
        }
    }
}

/// One key/value pair, borrowed from its block.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KvEntry<'a> {
    pub key_kind: u8,
    pub key: &'a [u8],
    pub value_kind: u8,
    pub value: &'a [u8],
}

/// Reads the field at `at`: `(kind, data, next offset)`.
fn field(block: &[u8], at: usize) -> Result<(u8, &[u8], usize), KvError> {
    let head = block.get(at..at + 5).ok_or(KvError::Overrun { at })?;
    if head[0] == 0 {
        return Err(KvError::ZeroKind { at });
    }
    let len = u32::from_le_bytes([head[1], head[2], head[3], head[4]]) as usize;
    if !(1..=MAX_KV_FIELD_LEN).contains(&len) {
        return Err(KvError::FieldLength {
            at: at + 1,
            len: len as u64,
        });
    }
    let data = block
        .get(at + 5..at + 5 + len)
        .ok_or(KvError::Overrun { at })?;
    Ok((head[0], data, at + 5 + len))
}

/// Checks the structural rules; returns the number of pairs.
fn validate_structure(block: &[u8]) -> Result<usize, KvError> {
    let (mut at, mut fields) = (0, 0);
    while at < block.len() {
        at = field(block, at)?.2;
        fields += 1;
    }
    if fields % 2 != 0 {
        return Err(KvError::OddFieldCount { fields });
    }
    Ok(fields / 2)
}

/// Iterates the pairs of a validated block.
#[derive(Debug, Clone)]
pub struct KvIter<'a> {
    block: &'a [u8],
    at: usize,
}

impl<'a> Iterator for KvIter<'a> {
    /// The pair and the offset of its key field.
    type Item = (usize, KvEntry<'a>);

    fn next(&mut self) -> Option<Self::Item> {
        let start = self.at;
        let (key_kind, key, next) = field(self.block, start).ok()?;
        let (value_kind, value, next) = field(self.block, next).ok()?;
        self.at = next;
        Some((
            start,
            KvEntry {
                key_kind,
                key,
                value_kind,
                value,
            },
        ))
    }
}

/// A validated message user-headers block.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct UserHeaders<'a>(&'a [u8]);

impl<'a> UserHeaders<'a> {
    pub fn parse(block: &'a [u8]) -> Result<Self, KvError> {
        if block.len() > MAX_USER_HEADERS_BYTES {
            return Err(KvError::TooLarge {
                len: block.len(),
                max: MAX_USER_HEADERS_BYTES,
            });
        }
        validate_structure(block)?;
        Ok(Self(block))
    }

    pub fn iter(&self) -> impl Iterator<Item = KvEntry<'a>> + use<'a> {
        KvIter {
            block: self.0,
            at: 0,
        }
        .map(|(_, entry)| entry)
    }

    pub fn as_bytes(&self) -> &'a [u8] {
        self.0
    }
}

/// A validated options block: String keys, unique, bounded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Options<'a>(&'a [u8]);

impl<'a> Options<'a> {
    pub const EMPTY: Options<'static> = Options(&[]);

    pub fn parse(block: &'a [u8]) -> Result<Self, KvError> {
        if block.len() > MAX_OPTIONS_BYTES {
            return Err(KvError::TooLarge {
                len: block.len(),
                max: MAX_OPTIONS_BYTES,
            });
        }
        let pairs = validate_structure(block)?;
        if pairs > MAX_OPTIONS {
            return Err(KvError::TooManyPairs {
                pairs,
                max: MAX_OPTIONS,
            });
        }
        let mut keys: Vec<(&[u8], usize)> = Vec::with_capacity(pairs);
        for (at, entry) in (KvIter { block, at: 0 }) {
            if entry.key_kind != ValueKind::String as u8 || std::str::from_utf8(entry.key).is_err()
            {
                return Err(KvError::KeyNotString { at });
            }
            keys.push((entry.key, at));
        }
        keys.sort_unstable();
        if let Some(pair) = keys.windows(2).find(|pair| pair[0].0 == pair[1].0) {
            return Err(KvError::DuplicateKey {
                at: pair[0].1.max(pair[1].1),
            });
        }
        Ok(Self(block))
    }

    /// Pairs with their keys as text, in block order.
    pub fn iter(&self) -> impl Iterator<Item = (&'a str, KvEntry<'a>)> + use<'a> {
        KvIter {
            block: self.0,
            at: 0,
        }
        .filter_map(|(_, entry)| Some((std::str::from_utf8(entry.key).ok()?, entry)))
    }

    pub fn get(&self, key: &str) -> Option<KvEntry<'a>> {
        self.iter().find(|(k, _)| *k == key).map(|(_, entry)| entry)
    }

    pub fn len(&self) -> usize {
        self.iter().count()
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    pub fn as_bytes(&self) -> &'a [u8] {
        self.0
    }
}

/// Appends one pair. Kinds must be non-zero and both fields 1..=255 bytes.
pub fn put_kv_pair(out: &mut Vec<u8>, key_kind: u8, key: &[u8], value_kind: u8, value: &[u8]) {
    for (kind, data) in [(key_kind, key), (value_kind, value)] {
        assert!(kind != 0, "key/value kinds are non-zero");
        assert!(
            (1..=MAX_KV_FIELD_LEN).contains(&data.len()),
            "key/value fields are 1..=255 bytes"
        );
        out.put_u8(kind);
        out.put_len_u32(data.len());
        out.put_bytes(data);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn string_pair(out: &mut Vec<u8>, key: &str, value: &str) {
        put_kv_pair(out, 2, key.as_bytes(), 2, value.as_bytes());
    }

    #[test]
    fn given_valid_blocks_when_parsing_should_iterate_pairs() {
        let mut block = Vec::new();
        string_pair(&mut block, "durability", "replicated");
        put_kv_pair(
            &mut block,
            2,
            b"segment_size",
            12,
            &(1u64 << 30).to_le_bytes(),
        );
        let options = Options::parse(&block).unwrap();
        assert_eq!(options.len(), 2);
        assert_eq!(options.get("durability").unwrap().value, b"replicated");
        assert_eq!(options.get("segment_size").unwrap().value_kind, 12);
        assert!(options.get("missing").is_none());
        assert_eq!(UserHeaders::parse(&block).unwrap().iter().count(), 2);
        assert!(Options::parse(&[]).unwrap().is_empty());
    }

    #[test]
    fn given_structural_faults_when_parsing_should_reject_both_kinds() {
        let mut one_field = Vec::new();
        put_kv_pair(&mut one_field, 1, b"k", 1, b"v");
        one_field.truncate(6);
        let zero_kind = [0u8, 1, 0, 0, 0, b'k', 1, 1, 0, 0, 0, b'v'];
        let zero_len = [1u8, 0, 0, 0, 0, 1, 1, 0, 0, 0, b'v'];
        let long_len = [1u8, 0, 1, 0, 0];
        let mut overrun = Vec::new();
        put_kv_pair(&mut overrun, 1, b"k", 1, b"vv");
        overrun.pop();
        for block in [
            &one_field[..],
            &zero_kind,
            &zero_len,
            &long_len,
            &overrun,
            &[1],
        ] {
            assert!(UserHeaders::parse(block).is_err(), "{block:?}");
            assert!(Options::parse(block).is_err(), "{block:?}");
        }
    }

    #[test]
    fn given_option_rule_violations_when_parsing_should_reject_only_options() {
        let mut raw_key = Vec::new();
        put_kv_pair(&mut raw_key, 1, b"k", 2, b"v");
        assert!(UserHeaders::parse(&raw_key).is_ok());
        assert!(matches!(
            Options::parse(&raw_key),
            Err(KvError::KeyNotString { at: 0 })
        ));
        let mut duplicate = Vec::new();
        string_pair(&mut duplicate, "a", "1");
        string_pair(&mut duplicate, "a", "2");
        assert!(UserHeaders::parse(&duplicate).is_ok());
        assert!(matches!(
            Options::parse(&duplicate),
            Err(KvError::DuplicateKey { .. })
        ));
        let mut many = Vec::new();
        for i in 0..=MAX_OPTIONS {
            string_pair(&mut many, &format!("k{i}"), "v");
        }
        assert!(matches!(
            Options::parse(&many),
            Err(KvError::TooManyPairs { .. })
        ));
    }

    #[test]
    fn given_oversized_blocks_when_parsing_should_reject() {
        let mut big = Vec::new();
        while big.len() <= MAX_USER_HEADERS_BYTES {
            put_kv_pair(&mut big, 1, &[7; 255], 1, &[8; 255]);
        }
        assert!(matches!(
            UserHeaders::parse(&big),
            Err(KvError::TooLarge { .. })
        ));
        assert!(matches!(
            Options::parse(&big),
            Err(KvError::TooLarge { .. })
        ));
    }

    #[test]
    fn given_blocks_when_validated_by_the_sdk_should_agree() {
        use iggy_binary_protocol::{validate_options, validate_user_headers};
        let mut good = Vec::new();
        string_pair(&mut good, "b", "2");
        string_pair(&mut good, "a", "1");
        let mut raw_key = Vec::new();
        put_kv_pair(&mut raw_key, 1, b"k", 2, b"v");
        for block in [&good[..], &raw_key, &[], &[1, 1, 0, 0, 0, 1]] {
            assert_eq!(
                validate_options(block).is_ok(),
                Options::parse(block).is_ok(),
                "{block:?}"
            );
            assert_eq!(
                validate_user_headers(block).is_ok(),
                UserHeaders::parse(block).is_ok(),
                "{block:?}"
            );
        }
    }
}

//! Typed option values as clients send them (the domain mirror of the wire's
//! key/value TLV kinds, binary spec §8.7) and the coercions the option
//! catalogue accepts: "values of the right kind or a parsable String".

/// One option value. The kind codes (`kind_code`) follow the TLV numbering
/// 1..=15 and are also what the metadata journal stores.
#[derive(Clone, Debug, PartialEq)]
pub enum OptionValue {
    Raw(Vec<u8>),
    String(String),
    Bool(bool),
    I8(i8),
    I16(i16),
    I32(i32),
    I64(i64),
    I128(i128),
    U8(u8),
    U16(u16),
    U32(u32),
    U64(u64),
    U128(u128),
    F32(f32),
    F64(f64),
}

/// A key with its value, in the order the client sent them.
#[derive(Clone, Debug, PartialEq)]
pub struct OptionEntry {
    pub key: String,
    pub value: OptionValue,
}

impl OptionEntry {
    pub fn new(key: &str, value: OptionValue) -> Self {
        Self {
            key: key.to_owned(),
            value,
        }
    }
}

impl OptionValue {
    pub fn kind_code(&self) -> u8 {
        match self {
            OptionValue::Raw(_) => 1,
            OptionValue::String(_) => 2,
            OptionValue::Bool(_) => 3,
            OptionValue::I8(_) => 4,
            OptionValue::I16(_) => 5,
            OptionValue::I32(_) => 6,
            OptionValue::I64(_) => 7,
            OptionValue::I128(_) => 8,
            OptionValue::U8(_) => 9,
            OptionValue::U16(_) => 10,
            OptionValue::U32(_) => 11,
            OptionValue::U64(_) => 12,
            OptionValue::U128(_) => 13,
            OptionValue::F32(_) => 14,
            OptionValue::F64(_) => 15,
        }
    }

    /// The value's bytes as the TLV carries them (numbers little-endian).
    pub fn to_bytes(&self) -> Vec<u8> {
        match self {
            OptionValue::Raw(bytes) => bytes.clone(),
            OptionValue::String(text) => text.as_bytes().to_vec(),
            OptionValue::Bool(flag) => vec![u8::from(*flag)],
            OptionValue::I8(v) => v.to_le_bytes().to_vec(),
            OptionValue::I16(v) => v.to_le_bytes().to_vec(),
            OptionValue::I32(v) => v.to_le_bytes().to_vec(),
            OptionValue::I64(v) => v.to_le_bytes().to_vec(),
            OptionValue::I128(v) => v.to_le_bytes().to_vec(),
            OptionValue::U8(v) => v.to_le_bytes().to_vec(),
            OptionValue::U16(v) => v.to_le_bytes().to_vec(),
            OptionValue::U32(v) => v.to_le_bytes().to_vec(),
            OptionValue::U64(v) => v.to_le_bytes().to_vec(),
            OptionValue::U128(v) => v.to_le_bytes().to_vec(),
            OptionValue::F32(v) => v.to_le_bytes().to_vec(),
            OptionValue::F64(v) => v.to_le_bytes().to_vec(),
        }
    }

    /// Rebuilds a value from its kind code and bytes; `None` on an unknown
    /// kind, a wrong fixed width, invalid UTF-8 or a bool other than 0/1.
    pub fn from_bytes(kind: u8, bytes: &[u8]) -> Option<Self> {
        Some(match kind {
            1 => OptionValue::Raw(bytes.to_vec()),
            2 => OptionValue::String(String::from_utf8(bytes.to_vec()).ok()?),
            3 => match bytes {
                [0] => OptionValue::Bool(false),
                [1] => OptionValue::Bool(true),
                _ => return None,
            },
            4 => OptionValue::I8(i8::from_le_bytes(bytes.try_into().ok()?)),
            5 => OptionValue::I16(i16::from_le_bytes(bytes.try_into().ok()?)),
            6 => OptionValue::I32(i32::from_le_bytes(bytes.try_into().ok()?)),
            7 => OptionValue::I64(i64::from_le_bytes(bytes.try_into().ok()?)),
            8 => OptionValue::I128(i128::from_le_bytes(bytes.try_into().ok()?)),
            9 => OptionValue::U8(u8::from_le_bytes(bytes.try_into().ok()?)),
            10 => OptionValue::U16(u16::from_le_bytes(bytes.try_into().ok()?)),
            11 => OptionValue::U32(u32::from_le_bytes(bytes.try_into().ok()?)),
            12 => OptionValue::U64(u64::from_le_bytes(bytes.try_into().ok()?)),
            13 => OptionValue::U128(u128::from_le_bytes(bytes.try_into().ok()?)),
            14 => OptionValue::F32(f32::from_le_bytes(bytes.try_into().ok()?)),
            15 => OptionValue::F64(f64::from_le_bytes(bytes.try_into().ok()?)),
            _ => return None,
        })
    }

    /// An integer of any kind that fits u64 (negative values do not).
    pub fn as_integer(&self) -> Option<u64> {
        match *self {
            OptionValue::U8(v) => Some(u64::from(v)),
            OptionValue::U16(v) => Some(u64::from(v)),
            OptionValue::U32(v) => Some(u64::from(v)),
            OptionValue::U64(v) => Some(v),
            OptionValue::U128(v) => u64::try_from(v).ok(),
            OptionValue::I8(v) => u64::try_from(v).ok(),
            OptionValue::I16(v) => u64::try_from(v).ok(),
            OptionValue::I32(v) => u64::try_from(v).ok(),
            OptionValue::I64(v) => u64::try_from(v).ok(),
            OptionValue::I128(v) => u64::try_from(v).ok(),
            _ => None,
        }
    }

    pub fn as_text(&self) -> Option<&str> {
        match self {
            OptionValue::String(text) => Some(text.trim()),
            _ => None,
        }
    }

    /// A Bool, or the strings `true` / `false` (any case).
    pub fn as_flag(&self) -> Option<bool> {
        match self {
            OptionValue::Bool(flag) => Some(*flag),
            OptionValue::String(text) => match text.trim().to_ascii_lowercase().as_str() {
                "true" => Some(true),
                "false" => Some(false),
                _ => None,
            },
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn given_every_kind_when_round_tripping_bytes_should_rebuild_value() {
        let values = [
            OptionValue::Raw(vec![9, 8]),
            OptionValue::String("x".into()),
            OptionValue::Bool(true),
            OptionValue::I8(-1),
            OptionValue::I16(-2),
            OptionValue::I32(-3),
            OptionValue::I64(-4),
            OptionValue::I128(-5),
            OptionValue::U8(1),
            OptionValue::U16(2),
            OptionValue::U32(3),
            OptionValue::U64(4),
            OptionValue::U128(5),
            OptionValue::F32(1.5),
            OptionValue::F64(2.5),
        ];
        for (index, value) in values.iter().enumerate() {
            assert_eq!(usize::from(value.kind_code()), index + 1);
            let rebuilt = OptionValue::from_bytes(value.kind_code(), &value.to_bytes());
            assert_eq!(rebuilt.as_ref(), Some(value));
        }
    }

    #[test]
    fn given_bad_widths_when_rebuilding_should_refuse() {
        assert_eq!(OptionValue::from_bytes(12, &[1, 2, 3]), None);
        assert_eq!(OptionValue::from_bytes(3, &[2]), None);
        assert_eq!(OptionValue::from_bytes(2, &[0xFF]), None);
        assert_eq!(OptionValue::from_bytes(16, &[0]), None);
    }

    #[test]
    fn given_mixed_kinds_when_coercing_should_follow_catalogue_rules() {
        assert_eq!(OptionValue::U32(7).as_integer(), Some(7));
        assert_eq!(OptionValue::I64(-1).as_integer(), None);
        assert_eq!(OptionValue::U128(u128::MAX).as_integer(), None);
        assert_eq!(OptionValue::String("TRUE".into()).as_flag(), Some(true));
        assert_eq!(OptionValue::U8(1).as_flag(), None);
    }
}

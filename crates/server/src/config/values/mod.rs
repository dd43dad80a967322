//! Value types of the configuration file and their human string forms
//! (spec §2): durations, byte sizes, token expiry, socket addresses, CPU
//! allocation, plus the host and CIDR checks used by validation.
//!
//! Every type parses with `FromStr`, prints its canonical form with
//! `Display`, and (de)serializes through those two, so the runtime dump
//! written from a parsed value parses back to the same value.

mod byte_size;
mod cpu;
mod duration;
mod expiry;
mod network;
mod numa;

use std::fmt;
use std::marker::PhantomData;

use serde::de::{self, Visitor};
use thiserror::Error;

pub use byte_size::ByteSize;
pub use cpu::{CpuAllocation, CpuAllocationError, NumaAllocation};
pub use duration::ConfigDuration;
pub use expiry::TokenExpiry;
pub use network::{Cidr, is_valid_host, socket_address};
pub use numa::{NumaNode, NumaTopology, SYSFS_SYSTEM_ROOT, parse_cpu_list};

/// A string that does not parse as the value type it was given for.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[error("{reason} in {value:?}; expected {expected}")]
pub struct ParseValueError {
    pub value: String,
    pub reason: String,
    pub expected: &'static str,
}

impl ParseValueError {
    pub(crate) fn new(value: &str, reason: impl Into<String>, expected: &'static str) -> Self {
        Self {
            value: value.to_owned(),
            reason: reason.into(),
            expected,
        }
    }

    /// A serde error without the value, which the key-level error shows.
    pub(crate) fn into_serde<E: de::Error>(self) -> E {
        E::custom(format_args!("{}; expected {}", self.reason, self.expected))
    }
}

/// A value type written in the file either as text or as a bare integer.
pub(crate) trait ConfigText: Sized {
    /// What the value accepts, phrased for error messages.
    const EXPECTED: &'static str;

    fn from_text(text: &str) -> Result<Self, ParseValueError>;

    fn from_integer(value: i64) -> Result<Self, ParseValueError>;
}

/// Serde visitor shared by all [`ConfigText`] types.
pub(crate) struct TextVisitor<T>(PhantomData<T>);

impl<T> TextVisitor<T> {
    pub(crate) const fn new() -> Self {
        Self(PhantomData)
    }
}

impl<T: ConfigText> Visitor<'_> for TextVisitor<T> {
    type Value = T;

    fn expecting(&self, formatter: &mut fmt::Formatter) -> fmt::Result {
        formatter.write_str(T::EXPECTED)
    }

    fn visit_str<E: de::Error>(self, text: &str) -> Result<T, E> {
        T::from_text(text).map_err(ParseValueError::into_serde)
    }

    fn visit_i64<E: de::Error>(self, value: i64) -> Result<T, E> {
        T::from_integer(value).map_err(ParseValueError::into_serde)
    }

    fn visit_u64<E: de::Error>(self, value: u64) -> Result<T, E> {
        let signed = i64::try_from(value).map_err(|_| {
            ParseValueError::new(&value.to_string(), "number too large", T::EXPECTED).into_serde()
        })?;
        self.visit_i64(signed)
    }
}

/// Implements `Serialize` through `Display` and `Deserialize` through
/// [`ConfigText`] for a value type.
macro_rules! text_serde {
    ($type:ty) => {
        impl serde::Serialize for $type {
            fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
                serializer.collect_str(self)
            }
        }

        impl<'de> serde::Deserialize<'de> for $type {
            fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
                deserializer.deserialize_any($crate::config::values::TextVisitor::<$type>::new())
            }
        }

        impl std::str::FromStr for $type {
            type Err = $crate::config::values::ParseValueError;

            fn from_str(text: &str) -> Result<Self, Self::Err> {
                <$type as $crate::config::values::ConfigText>::from_text(text)
            }
        }
    };
}
pub(crate) use text_serde;

/// Splits `"  12 MiB"` into the leading number and the rest, both trimmed.
pub(crate) fn split_number(text: &str) -> (&str, &str) {
    let text = text.trim();
    let end = text
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(text.len());
    (&text[..end], text[end..].trim())
}

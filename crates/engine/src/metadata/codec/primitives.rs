//! Writers and a bounds-checked reader for the primitives listed in the
//! codec module docs, plus the shared composite encodings (identifiers,
//! option entries, permissions, small enums).

use std::collections::BTreeMap;

use crate::metadata::ids::{Ident, StreamId, TopicId};
use crate::metadata::permissions::{
    GlobalPermissions, Permissions, StreamPermissions, TopicPermissions,
};
use crate::metadata::topic::option_value::{OptionEntry, OptionValue};
use crate::metadata::user::{Transport, UserStatus};

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CodecError {
    #[error("unexpected end of input: {needed} bytes needed at offset {offset}")]
    UnexpectedEnd { offset: usize, needed: usize },
    #[error("unsupported {what} format version {found}")]
    UnsupportedVersion { what: &'static str, found: u16 },
    #[error("invalid {field} value {value} at offset {offset}")]
    InvalidTag {
        field: &'static str,
        value: u64,
        offset: usize,
    },
    #[error("invalid UTF-8 at offset {offset}")]
    InvalidUtf8 { offset: usize },
    #[error("{count} trailing bytes after the encoded value")]
    TrailingBytes { count: usize },
    #[error("inconsistent snapshot: {reason}")]
    Inconsistent { reason: &'static str },
}

/// Little-endian writers on a byte buffer.
pub(crate) trait Put {
    fn put_u8(&mut self, v: u8);
    fn put_u16(&mut self, v: u16);
    fn put_u32(&mut self, v: u32);
    fn put_u64(&mut self, v: u64);
    fn put_u128(&mut self, v: u128);
    fn put_bool(&mut self, v: bool);
    fn put_str(&mut self, v: &str);
    fn put_len(&mut self, len: usize);
}

impl Put for Vec<u8> {
    fn put_u8(&mut self, v: u8) {
        self.push(v);
    }
    fn put_u16(&mut self, v: u16) {
        self.extend_from_slice(&v.to_le_bytes());
    }
    fn put_u32(&mut self, v: u32) {
        self.extend_from_slice(&v.to_le_bytes());
    }
    fn put_u64(&mut self, v: u64) {
        self.extend_from_slice(&v.to_le_bytes());
    }
    fn put_u128(&mut self, v: u128) {
        self.extend_from_slice(&v.to_le_bytes());
    }
    fn put_bool(&mut self, v: bool) {
        self.push(u8::from(v));
    }
    fn put_str(&mut self, v: &str) {
        // Names are at most 255 bytes and hashes ~100; a longer string is a
        // programmer error, not an operating condition.
        let len = u16::try_from(v.len()).expect("encoded strings are shorter than 64 KiB");
        self.put_u16(len);
        self.extend_from_slice(v.as_bytes());
    }
    fn put_len(&mut self, len: usize) {
        self.put_u32(u32::try_from(len).expect("collections hold fewer than 2^32 items"));
    }
}

/// A cursor over encoded bytes; every read is bounds-checked.
pub(crate) struct Reader<'a> {
    bytes: &'a [u8],
    offset: usize,
}

impl<'a> Reader<'a> {
    pub fn new(bytes: &'a [u8]) -> Self {
        Self { bytes, offset: 0 }
    }

    pub fn take(&mut self, needed: usize) -> Result<&'a [u8], CodecError> {
        let end = self
            .offset
            .checked_add(needed)
            .filter(|end| *end <= self.bytes.len());
        let end = end.ok_or(CodecError::UnexpectedEnd {
            offset: self.offset,
            needed,
        })?;
        let slice = &self.bytes[self.offset..end];
        self.offset = end;
        Ok(slice)
    }

    fn array<const N: usize>(&mut self) -> Result<[u8; N], CodecError> {
        let slice = self.take(N)?;
        Ok(slice.try_into().expect("take returned exactly N bytes"))
    }

    pub fn u8(&mut self) -> Result<u8, CodecError> {
        Ok(self.array::<1>()?[0])
    }
    pub fn u16(&mut self) -> Result<u16, CodecError> {
        Ok(u16::from_le_bytes(self.array()?))
    }
    pub fn u32(&mut self) -> Result<u32, CodecError> {
        Ok(u32::from_le_bytes(self.array()?))
    }
    pub fn u64(&mut self) -> Result<u64, CodecError> {
        Ok(u64::from_le_bytes(self.array()?))
    }
    pub fn u128(&mut self) -> Result<u128, CodecError> {
        Ok(u128::from_le_bytes(self.array()?))
    }

    pub fn bool(&mut self, field: &'static str) -> Result<bool, CodecError> {
        let offset = self.offset;
        match self.u8()? {
            0 => Ok(false),
            1 => Ok(true),
            value => Err(CodecError::InvalidTag {
                field,
                value: value.into(),
                offset,
            }),
        }
    }

    pub fn str(&mut self) -> Result<String, CodecError> {
        let len = usize::from(self.u16()?);
        let offset = self.offset;
        let bytes = self.take(len)?;
        String::from_utf8(bytes.to_vec()).map_err(|_| CodecError::InvalidUtf8 { offset })
    }

    /// A `vec<T>` count, bounded by the bytes left so a corrupt count cannot
    /// force a huge allocation (every item takes at least one byte).
    pub fn len(&mut self) -> Result<usize, CodecError> {
        let count = self.u32()? as usize;
        if count > self.bytes.len() - self.offset {
            return Err(CodecError::UnexpectedEnd {
                offset: self.offset,
                needed: count,
            });
        }
        Ok(count)
    }

    pub fn opt<T>(
        &mut self,
        field: &'static str,
        read: impl FnOnce(&mut Self) -> Result<T, CodecError>,
    ) -> Result<Option<T>, CodecError> {
        if self.bool(field)? {
            read(self).map(Some)
        } else {
            Ok(None)
        }
    }

    pub fn tag_error(&self, field: &'static str, value: u64) -> CodecError {
        CodecError::InvalidTag {
            field,
            value,
            offset: self.offset,
        }
    }

    pub fn finish(self) -> Result<(), CodecError> {
        match self.bytes.len() - self.offset {
            0 => Ok(()),
            count => Err(CodecError::TrailingBytes { count }),
        }
    }
}

pub(crate) fn put_ident(out: &mut Vec<u8>, ident: &Ident) {
    match ident {
        Ident::Id(id) => {
            out.put_u8(1);
            out.put_u32(*id);
        }
        Ident::Name(name) => {
            out.put_u8(2);
            out.put_str(name);
        }
    }
}

pub(crate) fn read_ident(r: &mut Reader<'_>) -> Result<Ident, CodecError> {
    match r.u8()? {
        1 => Ok(Ident::Id(r.u32()?)),
        2 => Ok(Ident::Name(r.str()?)),
        tag => Err(r.tag_error("ident kind", tag.into())),
    }
}

pub(crate) fn put_option_entries(out: &mut Vec<u8>, entries: &[OptionEntry]) {
    out.put_len(entries.len());
    for entry in entries {
        out.put_str(&entry.key);
        out.put_u8(entry.value.kind_code());
        let bytes = entry.value.to_bytes();
        out.put_len(bytes.len());
        out.extend_from_slice(&bytes);
    }
}

pub(crate) fn read_option_entries(r: &mut Reader<'_>) -> Result<Vec<OptionEntry>, CodecError> {
    let count = r.len()?;
    let mut entries = Vec::with_capacity(count);
    for _ in 0..count {
        let key = r.str()?;
        let kind = r.u8()?;
        let len = r.u32()? as usize;
        let bytes = r.take(len)?;
        let value = OptionValue::from_bytes(kind, bytes)
            .ok_or_else(|| r.tag_error("option value kind", kind.into()))?;
        entries.push(OptionEntry { key, value });
    }
    Ok(entries)
}

fn bits<const N: usize>(flags: [bool; N]) -> u16 {
    flags
        .iter()
        .enumerate()
        .fold(0u16, |acc, (i, set)| acc | (u16::from(*set) << i))
}

fn flags<const N: usize>(bits: u16) -> [bool; N] {
    std::array::from_fn(|i| bits & (1 << i) != 0)
}

fn check_bits(
    r: &Reader<'_>,
    field: &'static str,
    value: u16,
    count: usize,
) -> Result<u16, CodecError> {
    if value >> count == 0 {
        Ok(value)
    } else {
        Err(r.tag_error(field, value.into()))
    }
}

pub(crate) fn put_permissions(out: &mut Vec<u8>, permissions: &Permissions) {
    out.put_u16(bits(permissions.global.flags()));
    out.put_len(permissions.streams.len());
    for (stream_id, stream) in &permissions.streams {
        out.put_u32(stream_id.0);
        out.put_u8(bits(stream.flags()) as u8);
        out.put_len(stream.topics.len());
        for (topic_id, topic) in &stream.topics {
            out.put_u32(topic_id.0);
            out.put_u8(bits(topic.flags()) as u8);
        }
    }
}

pub(crate) fn read_permissions(r: &mut Reader<'_>) -> Result<Permissions, CodecError> {
    let global_bits = r.u16()?;
    let global =
        GlobalPermissions::from_flags(flags(check_bits(r, "global flags", global_bits, 10)?));
    let mut streams = BTreeMap::new();
    for _ in 0..r.len()? {
        let stream_id = StreamId(r.u32()?);
        let stream_bits = u16::from(r.u8()?);
        let stream_bits = check_bits(r, "stream flags", stream_bits, 6)?;
        let mut topics = BTreeMap::new();
        for _ in 0..r.len()? {
            let topic_id = TopicId(r.u32()?);
            let topic_bits = u16::from(r.u8()?);
            let topic_bits = check_bits(r, "topic flags", topic_bits, 4)?;
            topics.insert(topic_id, TopicPermissions::from_flags(flags(topic_bits)));
        }
        streams.insert(
            stream_id,
            StreamPermissions::from_flags(flags(stream_bits), topics),
        );
    }
    Ok(Permissions { global, streams })
}

pub(crate) fn user_status_code(status: UserStatus) -> u8 {
    match status {
        UserStatus::Active => 1,
        UserStatus::Inactive => 2,
    }
}

pub(crate) fn read_user_status(r: &mut Reader<'_>) -> Result<UserStatus, CodecError> {
    match r.u8()? {
        1 => Ok(UserStatus::Active),
        2 => Ok(UserStatus::Inactive),
        tag => Err(r.tag_error("user status", tag.into())),
    }
}

pub(crate) fn transport_code(transport: Transport) -> u8 {
    match transport {
        Transport::Tcp => 1,
        Transport::Quic => 2,
        Transport::Http => 3,
        Transport::WebSocket => 4,
    }
}

pub(crate) fn read_transport(r: &mut Reader<'_>) -> Result<Transport, CodecError> {
    match r.u8()? {
        1 => Ok(Transport::Tcp),
        2 => Ok(Transport::Quic),
        3 => Ok(Transport::Http),
        4 => Ok(Transport::WebSocket),
        tag => Err(r.tag_error("transport", tag.into())),
    }
}

//! Identifier newtypes, their limits, the packed partition namespace and the
//! request-side identifier [`Ident`].
//!
//! Limits follow storage spec §1: streams < 2^20, topics < 4096 per stream,
//! partitions < 1,000,000 per topic. IDs at or above a limit are refused when
//! allocated; they are never masked into the namespace.

use std::fmt;

/// Exclusive upper bound of stream IDs (20 bits).
pub const STREAM_ID_LIMIT: u32 = 1 << STREAM_ID_BITS;
/// Exclusive upper bound of topic IDs within one stream (12 bits).
pub const TOPIC_ID_LIMIT: u32 = 1 << TOPIC_ID_BITS;
/// Exclusive upper bound of partition IDs within one topic.
pub const PARTITION_ID_LIMIT: u32 = 1_000_000;
/// Exclusive upper bound of user IDs (the whole u32 space except the
/// "no user" sentinel of client replies).
pub const USER_ID_LIMIT: u32 = u32::MAX;

/// Bit widths of the packed namespace.
pub const STREAM_ID_BITS: u32 = 20;
pub const TOPIC_ID_BITS: u32 = 12;
pub const PARTITION_ID_BITS: u32 = 20;

/// The metadata consensus group's namespace value (bit 63 set).
pub const METADATA_NAMESPACE: u64 = 1 << 63;

const _: () = assert!(PARTITION_ID_LIMIT <= 1 << PARTITION_ID_BITS);
const _: () = assert!(STREAM_ID_BITS + TOPIC_ID_BITS + PARTITION_ID_BITS == 52);

macro_rules! id_newtype {
    ($(#[$doc:meta])* $name:ident, $inner:ty) => {
        $(#[$doc])*
        #[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
        pub struct $name(pub $inner);

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                self.0.fmt(f)
            }
        }

        impl From<$inner> for $name {
            fn from(value: $inner) -> Self {
                Self(value)
            }
        }
    };
}

id_newtype!(
    /// A stream's ID, unique on the server.
    StreamId,
    u32
);
id_newtype!(
    /// A topic's ID, unique within its stream.
    TopicId,
    u32
);
id_newtype!(
    /// A partition's ID, unique within its topic.
    PartitionId,
    u32
);
id_newtype!(
    /// A user's ID; the root user is always 0.
    UserId,
    u32
);
id_newtype!(
    /// A consumer group's ID, unique within its topic and never reused.
    ConsumerGroupId,
    u32
);
id_newtype!(
    /// A client session's ID: `shard << 112 | sequence`.
    ClientId,
    u128
);

impl UserId {
    /// The root user, created at first boot; every check short-circuits for it.
    pub const ROOT: UserId = UserId(0);

    pub fn is_root(self) -> bool {
        self == Self::ROOT
    }
}

impl ClientId {
    /// The 32-bit ID exposed to clients (the low 32 bits).
    pub fn wire_id(self) -> u32 {
        // Truncation is the documented exposure rule.
        (self.0 & u128::from(u32::MAX)) as u32
    }
}

/// The packed partition namespace: stream (bits 51..32), topic (31..20),
/// partition (19..0). Used for shard routing and consensus group identity.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Namespace(u64);

impl Namespace {
    /// Packs the three IDs, or `None` if any is at or above its limit.
    pub fn try_new(stream: StreamId, topic: TopicId, partition: PartitionId) -> Option<Self> {
        if stream.0 >= STREAM_ID_LIMIT
            || topic.0 >= TOPIC_ID_LIMIT
            || partition.0 >= PARTITION_ID_LIMIT
        {
            return None;
        }
        let packed = (u64::from(stream.0) << (TOPIC_ID_BITS + PARTITION_ID_BITS))
            | (u64::from(topic.0) << PARTITION_ID_BITS)
            | u64::from(partition.0);
        Some(Self(packed))
    }

    pub fn as_u64(self) -> u64 {
        self.0
    }

    pub fn stream(self) -> StreamId {
        StreamId(((self.0 >> (TOPIC_ID_BITS + PARTITION_ID_BITS)) & mask(STREAM_ID_BITS)) as u32)
    }

    pub fn topic(self) -> TopicId {
        TopicId(((self.0 >> PARTITION_ID_BITS) & mask(TOPIC_ID_BITS)) as u32)
    }

    pub fn partition(self) -> PartitionId {
        PartitionId((self.0 & mask(PARTITION_ID_BITS)) as u32)
    }
}

const fn mask(bits: u32) -> u64 {
    (1 << bits) - 1
}

/// An identifier as a request names a resource: by ID or by name.
///
/// Storage spec §1: "a name that parses as u32 is read as a numeric ID", so
/// `Name("7")` resolves exactly like `Id(7)`. [`Ident::parse`] applies the
/// rule up front; resolution applies it again for names built directly.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Ident {
    Id(u32),
    Name(String),
}

impl Ident {
    /// Reads a textual identifier (e.g. an HTTP path segment).
    pub fn parse(text: &str) -> Self {
        match numeric_name(text) {
            Some(id) => Ident::Id(id),
            None => Ident::Name(text.to_owned()),
        }
    }

    /// The numeric ID this identifier resolves by, if it is numeric.
    pub fn as_id(&self) -> Option<u32> {
        match self {
            Ident::Id(id) => Some(*id),
            Ident::Name(name) => numeric_name(name),
        }
    }
}

impl fmt::Display for Ident {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Ident::Id(id) => write!(f, "#{id}"),
            Ident::Name(name) => write!(f, "'{name}'"),
        }
    }
}

impl From<u32> for Ident {
    fn from(id: u32) -> Self {
        Ident::Id(id)
    }
}

impl From<&str> for Ident {
    fn from(text: &str) -> Self {
        Ident::parse(text)
    }
}

/// Only plain ASCII digits count as numeric (no sign, no spaces).
fn numeric_name(text: &str) -> Option<u32> {
    if text.is_empty() || !text.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    text.parse().ok()
}

/// The lowest value not present in `occupied` (ascending, no duplicates) that
/// is below `limit`. A pure function of the occupied set, as replicated ID
/// allocation requires.
pub(crate) fn lowest_unused(occupied: impl Iterator<Item = u32>, limit: u32) -> Option<u32> {
    let mut candidate = 0u32;
    for id in occupied {
        assert!(id >= candidate, "occupied IDs must be ascending and unique");
        if id != candidate {
            break;
        }
        candidate = candidate.checked_add(1)?;
    }
    (candidate < limit).then_some(candidate)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn given_spec_examples_when_packing_namespace_should_match_spec_values() {
        let ns = Namespace::try_new(StreamId(5), TopicId(2), PartitionId(7)).expect("in range");
        assert_eq!(ns.as_u64(), 0x0000_0005_0020_0007);
        let max = Namespace::try_new(StreamId(4095), TopicId(4095), PartitionId(999_999))
            .expect("in range");
        assert_eq!(max.as_u64(), 0x0FFF_FFFF_423F);
        assert_eq!(max.stream(), StreamId(4095));
        assert_eq!(max.topic(), TopicId(4095));
        assert_eq!(max.partition(), PartitionId(999_999));
    }

    #[test]
    fn given_ids_at_limits_when_packing_should_refuse_instead_of_masking() {
        assert!(
            Namespace::try_new(StreamId(STREAM_ID_LIMIT), TopicId(0), PartitionId(0)).is_none()
        );
        assert!(Namespace::try_new(StreamId(0), TopicId(TOPIC_ID_LIMIT), PartitionId(0)).is_none());
        assert!(
            Namespace::try_new(StreamId(0), TopicId(0), PartitionId(PARTITION_ID_LIMIT)).is_none()
        );
        let top = Namespace::try_new(StreamId(STREAM_ID_LIMIT - 1), TopicId(0), PartitionId(0))
            .expect("in range");
        assert_eq!(top.stream(), StreamId(STREAM_ID_LIMIT - 1));
        assert!(top.as_u64() < METADATA_NAMESPACE);
    }

    #[test]
    fn given_numeric_name_when_parsing_ident_should_read_it_as_id() {
        assert_eq!(Ident::parse("42"), Ident::Id(42));
        assert_eq!(Ident::parse("orders"), Ident::Name("orders".into()));
        assert_eq!(Ident::parse("+5"), Ident::Name("+5".into()));
        assert_eq!(Ident::parse("4294967296"), Ident::Name("4294967296".into()));
        assert_eq!(Ident::Name("7".into()).as_id(), Some(7));
    }

    #[test]
    fn given_occupied_sets_when_allocating_should_pick_lowest_gap() {
        assert_eq!(lowest_unused([].into_iter(), 10), Some(0));
        assert_eq!(lowest_unused([0, 1, 3].into_iter(), 10), Some(2));
        assert_eq!(lowest_unused([1, 2].into_iter(), 10), Some(0));
        assert_eq!(lowest_unused([0, 1].into_iter(), 2), None);
    }

    #[test]
    fn given_client_id_when_exposing_should_use_low_32_bits() {
        let id = ClientId((3u128 << 112) | 0x1_0000_0005);
        assert_eq!(id.wire_id(), 5);
    }
}

//! The simulated service: a small model of what the server replicates,
//! split into groups as the server splits it (replication spec §2). The
//! metadata group creates streams and creates and deletes partitions;
//! each partition incarnation is a group of its own that takes sends and
//! consumer-offset stores. Every replica applies committed entries to its
//! copy in op order; clients are answered with the results, so the checker
//! can compare every replica and every reply with one sequential run.
//!
//! ```text
//! metadata bodies:  1 create stream     id u8
//!                   4 create partition  slot u8, created_view u32 LE (stamped by the primary)
//!                   5 delete partition  slot u8
//! partition bodies: 2 send              messages u8
//!                   3 store offset      consumer u8, offset u32 LE
//! results: create stream 1 (created) / 0 (exists); create partition
//!          1, revision u32 LE (created) / 0 (exists); delete 1 / 0 (absent);
//!          send: base offset u64 LE; store 1 (stored) / 0 (beyond the end)
//! ```

use std::collections::{BTreeMap, BTreeSet};

use crate::prng::Prng;

/// Partition slots (a slot is re-used by each new incarnation).
pub const SLOTS: u8 = 4;

/// A consensus group of the simulated service.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum GroupId {
    Metadata,
    /// One incarnation of a partition: frames of another incarnation of
    /// the same slot never reach it.
    Partition {
        slot: u8,
        revision: u32,
    },
}

/// A live partition as the metadata state records it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Incarnation {
    pub revision: u32,
    /// The metadata view whose primary admitted the create: the group
    /// starts there (its first primary is that metadata primary).
    pub created_view: u32,
    /// The metadata op that created it.
    pub created_op: u64,
}

/// What applying a metadata op did to the set of partition groups.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Effect {
    None,
    Created(u8, Incarnation),
    Deleted(u8, Incarnation),
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Metadata {
    streams: BTreeSet<u8>,
    partitions: BTreeMap<u8, Incarnation>,
    /// The last revision handed out (bumped by every create).
    revision: u32,
}

impl Metadata {
    /// Applies one committed metadata op (`op` is its position).
    pub fn apply(&mut self, op: u64, body: &[u8]) -> (Vec<u8>, Effect) {
        match body {
            [1, id, ..] => (vec![u8::from(self.streams.insert(*id))], Effect::None),
            [4, slot, a, b, c, d, ..] if *slot < SLOTS => {
                if self.partitions.contains_key(slot) {
                    return (vec![0], Effect::None);
                }
                self.revision += 1;
                let incarnation = Incarnation {
                    revision: self.revision,
                    created_view: u32::from_le_bytes([*a, *b, *c, *d]),
                    created_op: op,
                };
                self.partitions.insert(*slot, incarnation);
                let mut result = vec![1];
                result.extend_from_slice(&self.revision.to_le_bytes());
                (result, Effect::Created(*slot, incarnation))
            }
            [5, slot, ..] => match self.partitions.remove(slot) {
                Some(incarnation) => (vec![1], Effect::Deleted(*slot, incarnation)),
                None => (vec![0], Effect::None),
            },
            _ => (vec![0xFF], Effect::None),
        }
    }

    /// The live partition incarnations.
    pub fn partitions(&self) -> impl Iterator<Item = (u8, Incarnation)> + '_ {
        self.partitions.iter().map(|(&slot, &inc)| (slot, inc))
    }

    pub fn live(&self, group: GroupId) -> bool {
        match group {
            GroupId::Metadata => true,
            GroupId::Partition { slot, revision } => self
                .partitions
                .get(&slot)
                .is_some_and(|inc| inc.revision == revision),
        }
    }

    /// ```text
    /// streams: count u8, ids u8 each; revision u32 LE; partitions: count u8,
    /// then (slot u8, revision u32 LE, created_view u32 LE, created_op u64 LE)
    /// ```
    fn encode(&self, out: &mut Vec<u8>) {
        out.push(u8::try_from(self.streams.len()).expect("stream ids are u8"));
        out.extend(self.streams.iter());
        out.extend_from_slice(&self.revision.to_le_bytes());
        out.push(u8::try_from(self.partitions.len()).expect("few slots"));
        for (&slot, inc) in &self.partitions {
            out.push(slot);
            out.extend_from_slice(&inc.revision.to_le_bytes());
            out.extend_from_slice(&inc.created_view.to_le_bytes());
            out.extend_from_slice(&inc.created_op.to_le_bytes());
        }
    }

    fn decode(bytes: &mut Reader<'_>) -> Option<Metadata> {
        let mut state = Metadata::default();
        for _ in 0..bytes.u8()? {
            state.streams.insert(bytes.u8()?);
        }
        state.revision = bytes.u32()?;
        for _ in 0..bytes.u8()? {
            let slot = bytes.u8()?;
            let incarnation = Incarnation {
                revision: bytes.u32()?,
                created_view: bytes.u32()?,
                created_op: bytes.u64()?,
            };
            state.partitions.insert(slot, incarnation);
        }
        Some(state)
    }
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Partition {
    next_offset: u64,
    offsets: BTreeMap<u8, u32>,
}

impl Partition {
    pub fn apply(&mut self, body: &[u8]) -> Vec<u8> {
        match body {
            [2, messages, ..] => {
                let base = self.next_offset;
                self.next_offset += u64::from(*messages);
                base.to_le_bytes().to_vec()
            }
            [3, consumer, a, b, c, d, ..] => {
                let offset = u32::from_le_bytes([*a, *b, *c, *d]);
                if u64::from(offset) < self.next_offset {
                    self.offsets.insert(*consumer, offset);
                    vec![1]
                } else {
                    vec![0]
                }
            }
            _ => vec![0xFF],
        }
    }

    /// ```text
    /// next offset u64 LE; offsets: count u8, then (consumer u8, offset u32 LE)
    /// ```
    fn encode(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.next_offset.to_le_bytes());
        out.push(u8::try_from(self.offsets.len()).expect("few consumers"));
        for (&consumer, &offset) in &self.offsets {
            out.push(consumer);
            out.extend_from_slice(&offset.to_le_bytes());
        }
    }

    fn decode(bytes: &mut Reader<'_>) -> Option<Partition> {
        let mut state = Partition {
            next_offset: bytes.u64()?,
            ..Partition::default()
        };
        for _ in 0..bytes.u8()? {
            let consumer = bytes.u8()?;
            state.offsets.insert(consumer, bytes.u32()?);
        }
        Some(state)
    }
}

/// One group's service state.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum State {
    Metadata(Metadata),
    Partition(Partition),
}

impl State {
    pub fn new(group: GroupId) -> State {
        match group {
            GroupId::Metadata => State::Metadata(Metadata::default()),
            GroupId::Partition { .. } => State::Partition(Partition::default()),
        }
    }

    pub fn apply(&mut self, op: u64, body: &[u8]) -> (Vec<u8>, Effect) {
        match self {
            State::Metadata(state) => state.apply(op, body),
            State::Partition(state) => (state.apply(body), Effect::None),
        }
    }

    pub fn metadata(&self) -> Option<&Metadata> {
        match self {
            State::Metadata(state) => Some(state),
            State::Partition(_) => None,
        }
    }

    pub fn encode(&self, out: &mut Vec<u8>) {
        match self {
            State::Metadata(state) => state.encode(out),
            State::Partition(state) => state.encode(out),
        }
    }

    /// Reads what `encode` wrote for a group of this kind from the front
    /// of `bytes`, returning the rest.
    pub fn decode(group: GroupId, bytes: &[u8]) -> Option<(State, &[u8])> {
        let mut reader = Reader(bytes);
        let state = match group {
            GroupId::Metadata => State::Metadata(Metadata::decode(&mut reader)?),
            GroupId::Partition { .. } => State::Partition(Partition::decode(&mut reader)?),
        };
        Some((state, reader.0))
    }
}

/// A little-endian reader over a byte string.
pub struct Reader<'a>(pub &'a [u8]);

impl Reader<'_> {
    pub fn take(&mut self, n: usize) -> Option<&[u8]> {
        let (head, rest) = self.0.split_at_checked(n)?;
        self.0 = rest;
        Some(head)
    }
    pub fn u8(&mut self) -> Option<u8> {
        Some(self.take(1)?[0])
    }
    pub fn u32(&mut self) -> Option<u32> {
        Some(u32::from_le_bytes(self.take(4)?.try_into().ok()?))
    }
    pub fn u64(&mut self) -> Option<u64> {
        Some(u64::from_le_bytes(self.take(8)?.try_into().ok()?))
    }
    pub fn u128(&mut self) -> Option<u128> {
        Some(u128::from_le_bytes(self.take(16)?.try_into().ok()?))
    }
}

/// A random request from the workload stream, aimed at a group the
/// client believes live (`metadata` is the committed metadata state).
pub fn random_request(rng: &mut Prng, metadata: &Metadata) -> (GroupId, Vec<u8>) {
    let slot = rng.below(u64::from(SLOTS)) as u8;
    match rng.below(20) {
        0 | 1 => (GroupId::Metadata, vec![1, rng.below(8) as u8]),
        2 => (GroupId::Metadata, vec![5, slot]),
        kind => match metadata.partitions.get(&slot) {
            None => (GroupId::Metadata, vec![4, slot, 0, 0, 0, 0]),
            Some(inc) => {
                let group = GroupId::Partition {
                    slot,
                    revision: inc.revision,
                };
                if kind < 14 {
                    (group, vec![2, 1 + rng.below(10) as u8])
                } else {
                    let mut body = vec![3, rng.below(3) as u8];
                    body.extend_from_slice(&(rng.below(40) as u32).to_le_bytes());
                    (group, body)
                }
            }
        },
    }
}

/// The primary fixes the nondeterminism of a create: the view it admits
/// it in becomes the new group's created view.
pub fn stamp_created_view(body: &mut [u8], view: u32) {
    if let [4, _, rest @ ..] = body
        && rest.len() >= 4
    {
        rest[..4].copy_from_slice(&view.to_le_bytes());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn given_metadata_ops_when_applied_should_create_and_delete_incarnations() {
        let mut state = Metadata::default();
        assert_eq!(state.apply(1, &[1, 5]).0, vec![1]);
        assert_eq!(
            state.apply(2, &[1, 5]).0,
            vec![0],
            "a second create finds it"
        );
        let (result, effect) = state.apply(3, &[4, 2, 7, 0, 0, 0]);
        assert_eq!(result, vec![1, 1, 0, 0, 0]);
        let first = Incarnation {
            revision: 1,
            created_view: 7,
            created_op: 3,
        };
        assert_eq!(effect, Effect::Created(2, first));
        assert_eq!(state.apply(4, &[4, 2, 9, 0, 0, 0]).0, vec![0], "exists");
        assert_eq!(
            state.apply(5, &[5, 2]),
            (vec![1], Effect::Deleted(2, first))
        );
        let (_, effect) = state.apply(6, &[4, 2, 9, 0, 0, 0]);
        assert!(
            matches!(effect, Effect::Created(2, Incarnation { revision: 2, .. })),
            "a new incarnation"
        );
    }

    #[test]
    fn given_partition_ops_when_applied_should_give_deterministic_results() {
        let mut state = Partition::default();
        assert_eq!(state.apply(&[2, 3]), 0u64.to_le_bytes().to_vec());
        assert_eq!(state.apply(&[2, 2]), 3u64.to_le_bytes().to_vec());
        assert_eq!(state.apply(&[3, 1, 4, 0, 0, 0]), vec![1]);
        assert_eq!(state.apply(&[3, 1, 5, 0, 0, 0]), vec![0], "beyond the end");
    }

    #[test]
    fn given_states_when_encoded_should_decode_to_the_same_states() {
        let mut metadata = State::new(GroupId::Metadata);
        metadata.apply(1, &[1, 5]);
        metadata.apply(2, &[4, 3, 2, 0, 0, 0]);
        let mut bytes = Vec::new();
        metadata.encode(&mut bytes);
        assert_eq!(
            bytes,
            [
                1, 5, 1, 0, 0, 0, 1, 3, 1, 0, 0, 0, 2, 0, 0, 0, 2, 0, 0, 0, 0, 0, 0, 0
            ],
            "golden: stream 5; revision 1; slot 3 at revision 1, view 2, op 2"
        );
        bytes.push(0xEE);
        let (decoded, rest) = State::decode(GroupId::Metadata, &bytes).expect("decodes");
        assert_eq!(decoded, metadata);
        assert_eq!(rest, [0xEE], "only its own bytes are read");

        let group = GroupId::Partition {
            slot: 3,
            revision: 1,
        };
        let mut partition = State::new(group);
        partition.apply(1, &[2, 7]);
        partition.apply(2, &[3, 2, 4, 0, 0, 0]);
        let mut bytes = Vec::new();
        partition.encode(&mut bytes);
        assert_eq!(bytes, [7, 0, 0, 0, 0, 0, 0, 0, 1, 2, 4, 0, 0, 0]);
        let (decoded, rest) = State::decode(group, &bytes).expect("decodes");
        assert_eq!((decoded, rest), (partition, &[][..]));
    }
}

//! One encoding of a prepare for every backup (see `PrepareMemo`).

use bytes::Bytes;
use consensus::View;
use consensus::vsr::message::{Message, ReplicaId};

use crate::node::cluster_state::ClusterShared;
use server::cluster::LinkSender;
use server::cluster::lanes::Lane;

/// What makes two prepares the same frame: the message's fields and the
/// entry (its identity covers the content; its body is the same buffer).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct PrepareKey {
    view: View,
    commit: u64,
    op: u64,
    identity: u64,
    body: *const u8,
}

/// The latest prepare this group sent, encoded: a prepare goes to every
/// backup in turn, and is encoded (copied and checksummed) once for all.
#[derive(Default)]
pub(super) struct PrepareMemo(Option<(PrepareKey, Lane, Bytes)>);

impl PrepareMemo {
    /// Queues `message` to `to`; a prepare equal to the latest one reuses
    /// its bytes.
    pub(super) fn send(
        &mut self,
        shared: &ClusterShared,
        ns: u64,
        incarnation: u64,
        to: ReplicaId,
        message: Message,
    ) {
        let Some(key) = PrepareKey::of(&message) else {
            shared.send(to, ns, incarnation, message);
            return;
        };
        let (lane, bytes) = match &self.0 {
            Some((last, lane, bytes)) if *last == key => (*lane, bytes.clone()),
            _ => {
                let (lane, bytes) = LinkSender::encode(&shared.frame(ns, incarnation, message));
                self.0 = Some((key, lane, bytes.clone()));
                (lane, bytes)
            }
        };
        shared.send_encoded(to, ns, lane, bytes);
    }
}

impl PrepareKey {
    fn of(message: &Message) -> Option<PrepareKey> {
        match message {
            Message::Prepare {
                view,
                commit,
                entry,
            } => Some(PrepareKey {
                view: *view,
                commit: commit.0,
                op: entry.op.0,
                identity: entry.identity,
                body: entry.body.as_ptr(),
            }),
            _ => None,
        }
    }
}

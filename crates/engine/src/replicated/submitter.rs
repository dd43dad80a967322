//! This node's own client in a group and how its submissions are synced.

use bytes::Bytes;
use consensus::vsr::NotAdmitted;
use consensus::vsr::message::{ReplicaId, Request};
use consensus::{ClientId, RequestNumber, View};
use storage::Storage;

use super::{Effect, Group, GroupError, StateMachine};

/// When a submission's journal sync happens.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Sync {
    /// With the submission (`Group::on_request`).
    Now,
    /// With the next `Group::sync_prepared`, shared by every submission
    /// prepared before it.
    Later,
}

/// This node's own client in a group: a new id per boot (so its request
/// numbers may restart at 1 safely) and the next request number.
pub struct Submitter {
    client: ClientId,
    next_request: u64,
}

/// What a submission through a `Submitter` came to.
#[derive(Debug)]
pub enum Submitted {
    /// Prepared as request `request`; its result comes with the
    /// `Effect::Reply` for it.
    Prepared {
        request: RequestNumber,
        effects: Vec<Effect>,
    },
    /// Not the primary of a normal view: the primary of `view` is.
    NotPrimary { view: View },
    /// The pipeline is full; nothing was prepared (safe to retry).
    Busy,
}

impl Submitter {
    /// The client of replica `replica` for the boot with this `nonce`.
    pub fn new(nonce: u64, replica: ReplicaId) -> Self {
        Submitter {
            client: own_client(nonce, replica),
            next_request: 1,
        }
    }

    pub fn client(&self) -> ClientId {
        self.client
    }

    /// Submits `body` as this node's next request.
    pub async fn submit<S: Storage, M: StateMachine>(
        &mut self,
        group: &mut Group<S, M>,
        body: impl Into<Bytes>,
        now_us: u64,
    ) -> Result<Submitted, GroupError> {
        self.submit_as(group, body.into(), now_us, Sync::Now).await
    }

    /// Submits `body` as this node's next request, syncing the journal
    /// now or leaving that to `Group::sync_prepared` (group commit).
    pub async fn submit_as<S: Storage, M: StateMachine>(
        &mut self,
        group: &mut Group<S, M>,
        body: Bytes,
        now_us: u64,
        sync: Sync,
    ) -> Result<Submitted, GroupError> {
        let request = RequestNumber(self.next_request);
        let submitted = Request {
            client: self.client,
            number: request,
            body,
        };
        let outcome = match sync {
            Sync::Now => group.on_request(submitted, now_us).await?,
            Sync::Later => group.prepare_request(submitted, now_us).await?,
        };
        Ok(match outcome {
            Ok(effects) => {
                self.next_request += 1;
                Submitted::Prepared { request, effects }
            }
            Err(NotAdmitted::NotPrimary { view }) => Submitted::NotPrimary { view },
            Err(NotAdmitted::Busy) => Submitted::Busy,
        })
    }
}

/// The client id of replica `replica`'s own submissions in the boot with
/// this `nonce` (distinct per boot and per replica).
pub(super) fn own_client(nonce: u64, replica: ReplicaId) -> ClientId {
    assert!(nonce != 0, "a boot nonce is never zero");
    ClientId((u128::from(nonce) << 8) | u128::from(replica))
}

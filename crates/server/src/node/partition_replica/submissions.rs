//! Submissions reaching a partition group's task: prepared here on the
//! primary (several queued together share one journal sync), forwarded
//! once to the primary elsewhere, or refused.

use std::time::Instant;

use consensus::vsr::message::{Message, ReplicaId};
use consensus::{Op, View};
use crossfire::AsyncRx;
use crossfire::mpsc::Array;
use crossfire::oneshot::TxOneshot;
use engine::cluster_partition::{
    APPEND_PREFIX, Command, Decoded, Submit, decode, encode_append, encode_command,
};
use engine::replicated::{Effect, GroupError, Sync};
use protocol::ErrorCode;
use storage::Offset;
use tracing::warn;

use super::super::process_stats::now_us;
use super::{Forwarded, GATHER_MAX, Input, NOT_ACCEPTED, Outcome, Task, forward_reply};

impl Task {
    /// A submission and those queued right behind it (at most
    /// `GATHER_MAX`): each is prepared in turn and one journal sync covers
    /// them all (group commit), so producers sharing a partition share its
    /// writes. The first other input found waits for the next turn.
    pub(super) async fn on_submits(
        &mut self,
        command: Command,
        reply: TxOneshot<Outcome>,
        rx: &AsyncRx<Array<Input>>,
    ) -> Result<Vec<Effect>, GroupError> {
        let mut effects = self.on_submit(command, reply, Sync::Later).await?;
        for _ in 1..GATHER_MAX {
            match rx.try_recv() {
                Ok(Input::Submit(command, reply)) => {
                    effects.extend(self.on_submit(command, reply, Sync::Later).await?);
                }
                Ok(other) => {
                    self.stashed = Some(other);
                    break;
                }
                Err(_) => break,
            }
        }
        effects.extend(self.group.sync_prepared().await?);
        Ok(effects)
    }

    pub(super) async fn on_submit(
        &mut self,
        mut command: Command,
        reply: TxOneshot<Outcome>,
        sync: Sync,
    ) -> Result<Vec<Effect>, GroupError> {
        let view = self.group.group().replica().view();
        if let Some(code) = self.refused_for_space(&command) {
            reply.send(Outcome::Refused(code));
            return Ok(Vec::new());
        }
        match self.group.submit_as(&mut command, now_us(), sync).await? {
            Submit::Prepared { request, effects } => {
                self.waiters.insert(request, (view, command, reply));
                return Ok(effects);
            }
            Submit::Rejected(code) => reply.send(Outcome::Refused(code)),
            Submit::NotPrimary { view } => self.forward(view, command, reply),
            Submit::Busy => reply.send(Outcome::Refused(NOT_ACCEPTED)),
        }
        Ok(Vec::new())
    }

    /// Sends the submission to the primary of `view` (once; never
    /// re-forwarded there).
    pub(super) fn forward(&mut self, view: View, command: Command, reply: TxOneshot<Outcome>) {
        let primary = (view.0 % u32::from(self.shared.replicas)) as u8;
        if primary == self.shared.replica {
            // The primary-elect of a view not started yet.
            reply.send(Outcome::Refused(NOT_ACCEPTED));
            return;
        }
        let body = match &command {
            Command::Append { buffer, range } => match buffer.get(range.clone()) {
                Some(record) => encode_append(Offset::ZERO, record),
                None => {
                    reply.send(Outcome::Refused(ErrorCode::InvalidMessagesCount));
                    return;
                }
            },
            other => encode_command(other).expect("not an append"),
        };
        let nonce = self.next_nonce;
        self.next_nonce += 1;
        let forwarded = Forwarded {
            view,
            sent: Instant::now(),
            commit: self.group.group().replica().commit_min(),
        };
        self.forwards.insert(nonce, (forwarded, command, reply));
        self.send(primary, Message::ForwardRequest { view, nonce, body });
    }

    /// Primary: another node's submission, prepared as ours.
    pub(super) async fn on_forwarded(
        &mut self,
        origin: ReplicaId,
        nonce: u64,
        body: Vec<u8>,
    ) -> Result<Vec<Effect>, GroupError> {
        let view = self.group.group().replica().view();
        let mut command = match decode(&body) {
            Ok(Decoded::Append { .. }) => Command::Append {
                range: APPEND_PREFIX..body.len(),
                buffer: body,
            },
            Ok(Decoded::StoreOffset { consumer, offset }) => {
                Command::StoreOffset { consumer, offset }
            }
            Ok(Decoded::DeleteOffset { consumer }) => Command::DeleteOffset { consumer },
            Ok(Decoded::Purge { generation }) => Command::Purge { generation },
            Err(e) => {
                warn!(
                    peer = origin,
                    ns = self.ns,
                    "a forwarded partition op was refused: {e}"
                );
                let code = ErrorCode::InvalidMessagesCount as u32;
                self.send(origin, forward_reply(view, nonce, Op::ZERO, code));
                return Ok(Vec::new());
            }
        };
        if let Some(code) = self.refused_for_space(&command) {
            self.send(origin, forward_reply(view, nonce, Op::ZERO, code as u32));
            return Ok(Vec::new());
        }
        let refusal = match self.group.submit(&mut command, now_us()).await? {
            Submit::Prepared { request, effects } => {
                self.remote.insert(request, (origin, nonce));
                return Ok(effects);
            }
            Submit::Rejected(code) => code,
            // Never re-forwarded: the origin tries again.
            Submit::NotPrimary { .. } => NOT_ACCEPTED,
            Submit::Busy => NOT_ACCEPTED,
        };
        self.send(origin, forward_reply(view, nonce, Op::ZERO, refusal as u32));
        Ok(Vec::new())
    }

    /// A primary's append that would leave the disk without its reserve
    /// (`disk_space`): refused as a single node refuses on a full disk.
    pub(super) fn refused_for_space(&self, command: &Command) -> Option<ErrorCode> {
        let Command::Append { range, .. } = command else {
            return None;
        };
        let primary = self.group.group().replica().is_primary();
        (primary && !self.shared.disk.admit(range.len() as u64))
            .then_some(ErrorCode::CannotSaveMessagesToSegment)
    }
}

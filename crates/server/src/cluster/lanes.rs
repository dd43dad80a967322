//! One peer's outgoing queue: two bounded lanes of encoded frames
//! (replication spec §8). The control lane carries the metadata group and
//! every view-change, Commit and PrepareOk frame, so bulk partition traffic
//! in the data lane can never starve heartbeats into spurious view changes.
//!
//! A full lane drops the frame (counted) and never blocks the sender:
//! retransmission covers the loss. Senders may live on any thread; the one
//! receiver (the peer's current connection) drains control before data. A
//! doorbell of capacity one wakes the receiver: a sender rings after
//! pushing, and a ring left over from frames already drained only costs the
//! receiver one empty look.

use std::sync::Arc;

use bytes::Bytes;
use std::sync::atomic::{AtomicU64, Ordering};

use consensus::vsr::message::Message;
use consensus::wire::Frame;
use crossfire::mpsc::{Array, bounded_async};
use crossfire::{AsyncRx, MAsyncTx, TryRecvError, TrySendError};

use super::METADATA_GROUP;

/// Which lane a frame travels in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Lane {
    Control,
    Data,
}

impl Lane {
    /// Metadata-group frames and the messages that keep a view alive or
    /// change it go in the control lane; the rest (prepares, repair, state
    /// transfer) in the data lane.
    pub fn of(frame: &Frame) -> Lane {
        if frame.group == METADATA_GROUP {
            return Lane::Control;
        }
        match frame.message {
            Message::PrepareOk { .. }
            | Message::Commit { .. }
            | Message::StartViewChange { .. }
            | Message::DoViewChange { .. }
            | Message::StartView { .. }
            | Message::RequestStartView { .. }
            | Message::ViewReport { .. } => Lane::Control,
            _ => Lane::Data,
        }
    }
}

/// Frames dropped because a lane was full, by lane.
#[derive(Debug, Default)]
pub struct DropCounters {
    control: AtomicU64,
    data: AtomicU64,
}

impl DropCounters {
    pub fn get(&self, lane: Lane) -> u64 {
        self.counter(lane).load(Ordering::Relaxed)
    }

    fn counter(&self, lane: Lane) -> &AtomicU64 {
        match lane {
            Lane::Control => &self.control,
            Lane::Data => &self.data,
        }
    }
}

/// The lane was full; the frame is dropped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LaneFull(pub Lane);

/// The sending half, cheap to clone and `Send`.
#[derive(Clone)]
pub struct LanesTx {
    control: MAsyncTx<Array<Bytes>>,
    data: MAsyncTx<Array<Bytes>>,
    doorbell: MAsyncTx<Array<()>>,
    dropped: Arc<DropCounters>,
}

/// The receiving half, owned by the peer and lent to its connection.
pub struct LanesRx {
    control: AsyncRx<Array<Bytes>>,
    data: AsyncRx<Array<Bytes>>,
    doorbell: AsyncRx<Array<()>>,
}

/// Two lanes of `capacity` frames each.
pub fn lanes(capacity: usize) -> (LanesTx, LanesRx) {
    assert!(capacity > 0, "a lane holds at least one frame");
    let (control_tx, control_rx) = bounded_async(capacity);
    let (data_tx, data_rx) = bounded_async(capacity);
    let (doorbell_tx, doorbell_rx) = bounded_async(1);
    let tx = LanesTx {
        control: control_tx,
        data: data_tx,
        doorbell: doorbell_tx,
        dropped: Arc::default(),
    };
    let rx = LanesRx {
        control: control_rx,
        data: data_rx,
        doorbell: doorbell_rx,
    };
    (tx, rx)
}

impl LanesTx {
    /// Queues one encoded frame without waiting.
    pub fn push(&self, lane: Lane, frame: Bytes) -> Result<(), LaneFull> {
        let queue = match lane {
            Lane::Control => &self.control,
            Lane::Data => &self.data,
        };
        match queue.try_send(frame) {
            Ok(()) => {
                // Full means a ring is already pending; both are fine.
                let _ = self.doorbell.try_send(());
                Ok(())
            }
            Err(TrySendError::Full(_) | TrySendError::Disconnected(_)) => {
                self.dropped.counter(lane).fetch_add(1, Ordering::Relaxed);
                Err(LaneFull(lane))
            }
        }
    }

    pub fn dropped(&self) -> &DropCounters {
        &self.dropped
    }
}

impl LanesRx {
    /// Waits for frames and takes up to `max` of them, control first.
    /// `None` once every sender is gone.
    pub async fn next_batch(&self, max: usize) -> Option<Vec<Bytes>> {
        assert!(max > 0);
        loop {
            let mut batch = Vec::new();
            take(&self.control, &mut batch, max);
            take(&self.data, &mut batch, max);
            if !batch.is_empty() {
                assert!(batch.len() <= max);
                return Some(batch);
            }
            self.doorbell.recv().await.ok()?;
        }
    }
}

fn take(lane: &AsyncRx<Array<Bytes>>, batch: &mut Vec<Bytes>, max: usize) {
    while batch.len() < max {
        match lane.try_recv() {
            Ok(frame) => batch.push(frame),
            Err(TryRecvError::Empty | TryRecvError::Disconnected) => return,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use consensus::View;
    use consensus::types::Op;

    fn frame(group: u64, message: Message) -> Frame {
        Frame {
            cluster: 1,
            from: 0,
            group,
            incarnation: 0,
            message,
        }
    }

    #[test]
    fn given_frames_when_classified_should_keep_view_and_metadata_traffic_in_control() {
        let commit = Message::Commit {
            view: View(1),
            commit: Op(2),
        };
        let range = Message::RequestPrepares {
            view: View(1),
            from: Op(1),
            to: Op(2),
        };
        assert_eq!(Lane::of(&frame(7, commit)), Lane::Control);
        assert_eq!(Lane::of(&frame(7, range.clone())), Lane::Data);
        assert_eq!(Lane::of(&frame(METADATA_GROUP, range)), Lane::Control);
    }

    #[test]
    fn given_a_full_lane_when_pushing_should_drop_and_count_without_touching_the_other_lane() {
        let (tx, rx) = lanes(2);
        assert_eq!(tx.push(Lane::Data, Bytes::from(vec![1])), Ok(()));
        assert_eq!(tx.push(Lane::Data, Bytes::from(vec![2])), Ok(()));
        assert_eq!(
            tx.push(Lane::Data, Bytes::from(vec![3])),
            Err(LaneFull(Lane::Data))
        );
        assert_eq!(tx.push(Lane::Control, Bytes::from(vec![9])), Ok(()));
        assert_eq!(
            (
                tx.dropped().get(Lane::Data),
                tx.dropped().get(Lane::Control)
            ),
            (1, 0)
        );
        let batch = compio::runtime::Runtime::new()
            .expect("a runtime")
            .block_on(rx.next_batch(8));
        assert_eq!(
            batch,
            Some(vec![
                Bytes::from(vec![9]),
                Bytes::from(vec![1]),
                Bytes::from(vec![2])
            ])
        );
    }
}

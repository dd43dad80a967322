//! One write at a time per HTTP credential. The client-sessions table lets
//! one request per client id execute at a time and refuses a second as in
//! flight; an HTTP client may send many writes with one credential at once,
//! so they take turns here instead, first come first served.
//!
//! The turn is a value: whoever holds the `Turn` may write, and dropping it
//! hands it to the oldest waiter still waiting (through a oneshot channel),
//! or frees the queue when nobody waits. A waiter whose request was dropped
//! while it waited is skipped; one dropped after the turn reached it drops
//! the turn, which passes it on again. So the turn is never lost.
//!
//! Shard-local (`Rc`, `RefCell`): the HTTP server runs on shard 0 only.

use std::cell::RefCell;
use std::collections::VecDeque;
use std::rc::Rc;

use crossfire::oneshot::{TxOneshot, oneshot};

/// The queue of one credential's writes.
#[derive(Debug, Clone, Default)]
pub struct TurnQueue {
    state: Rc<RefCell<State>>,
}

#[derive(Default)]
struct State {
    /// A `Turn` of this queue exists (held, or on its way to a waiter).
    taken: bool,
    waiters: VecDeque<TxOneshot<Turn>>,
}

impl std::fmt::Debug for State {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("State")
            .field("taken", &self.taken)
            .field("waiters", &self.waiters.len())
            .finish()
    }
}

/// The right to write under the credential; dropping it passes it on.
#[derive(Debug)]
pub struct Turn {
    /// `None` only while the turn is being handed over.
    state: Option<Rc<RefCell<State>>>,
}

impl TurnQueue {
    /// Waits until every write queued before this one has dropped its turn.
    pub async fn take(&self) -> Turn {
        let waiting = {
            let mut state = self.state.borrow_mut();
            if !state.taken {
                assert!(state.waiters.is_empty(), "a free queue has no waiters");
                state.taken = true;
                return Turn {
                    state: Some(self.state.clone()),
                };
            }
            let (tx, rx) = oneshot();
            state.waiters.push_back(tx);
            rx
        };
        // Holding `self` keeps the state, and with it this waiter's sender,
        // alive: the sender is only ever consumed by sending the turn.
        waiting
            .await
            .expect("a waiter's sender lives in the queue until it sends")
    }

    /// Nobody holds or waits for a turn: the queue may be forgotten.
    pub fn is_idle(&self) -> bool {
        !self.state.borrow().taken
    }
}

impl Drop for Turn {
    fn drop(&mut self) {
        let Some(state) = self.state.take() else {
            return;
        };
        loop {
            let next = {
                let mut queue = state.borrow_mut();
                assert!(queue.taken, "a turn exists only while its queue is taken");
                match queue.waiters.pop_front() {
                    Some(next) => next,
                    None => {
                        queue.taken = false;
                        return;
                    }
                }
            };
            // A waiter whose request was dropped (its client went away)
            // cannot take the turn: skip it.
            if next.is_disconnected() {
                continue;
            }
            next.send(Turn { state: Some(state) });
            return;
        }
    }
}

#[cfg(test)]
mod tests {
    use std::cell::RefCell;
    use std::pin::pin;
    use std::rc::Rc;
    use std::task::{Context, Poll, Waker};

    use super::*;

    fn poll<F: Future>(future: std::pin::Pin<&mut F>) -> Poll<F::Output> {
        future.poll(&mut Context::from_waker(Waker::noop()))
    }

    #[test]
    fn given_a_free_queue_when_taking_should_get_the_turn_at_once() {
        let queue = TurnQueue::default();
        assert!(queue.is_idle());
        let turn = poll(pin!(queue.take()));
        assert!(turn.is_ready());
        assert!(!queue.is_idle());
        drop(turn);
        assert!(queue.is_idle());
    }

    #[test]
    fn given_a_held_turn_when_others_wait_should_serve_them_one_at_a_time_in_order() {
        let queue = TurnQueue::default();
        let order = Rc::new(RefCell::new(Vec::new()));
        let write = |n: u32| {
            let (queue, order) = (queue.clone(), order.clone());
            async move {
                let _turn = queue.take().await;
                order.borrow_mut().push(n);
            }
        };
        let first = poll(pin!(queue.take()));
        let Poll::Ready(first) = first else {
            panic!("a free queue gives the turn at once")
        };
        let mut second = pin!(write(2));
        let mut third = pin!(write(3));
        assert!(poll(second.as_mut()).is_pending());
        assert!(poll(third.as_mut()).is_pending());
        // Polled again while the turn is held, neither runs.
        assert!(poll(third.as_mut()).is_pending());
        assert!(order.borrow().is_empty());

        drop(first);
        assert!(
            poll(third.as_mut()).is_pending(),
            "the third waits for the second"
        );
        assert!(poll(second.as_mut()).is_ready());
        assert!(poll(third.as_mut()).is_ready());
        assert_eq!(*order.borrow(), [2, 3]);
        assert!(queue.is_idle());
    }

    #[test]
    fn given_a_waiter_dropped_while_waiting_when_the_turn_is_released_should_skip_it() {
        let queue = TurnQueue::default();
        let Poll::Ready(first) = poll(pin!(queue.take())) else {
            panic!("a free queue gives the turn at once")
        };
        {
            let mut gone = Box::pin(queue.take());
            assert!(poll(gone.as_mut()).is_pending());
        }
        let mut next = pin!(queue.take());
        assert!(poll(next.as_mut()).is_pending());
        drop(first);
        let Poll::Ready(turn) = poll(next.as_mut()) else {
            panic!("the dropped waiter is skipped")
        };
        drop(turn);
        assert!(queue.is_idle());
    }

    #[test]
    fn given_a_waiter_dropped_after_the_turn_reached_it_should_pass_the_turn_on() {
        let queue = TurnQueue::default();
        let Poll::Ready(first) = poll(pin!(queue.take())) else {
            panic!("a free queue gives the turn at once")
        };
        let mut handed = Box::pin(queue.take());
        assert!(poll(handed.as_mut()).is_pending());
        let mut next = pin!(queue.take());
        assert!(poll(next.as_mut()).is_pending());
        drop(first);
        // The turn now sits in `handed`'s channel; dropping it unreceived
        // must not lose the turn.
        drop(handed);
        assert!(poll(next.as_mut()).is_ready());
        assert!(queue.is_idle());
    }
}

//! The shard's event loop: compio's `block_on`, except that a shard that
//! has just served a request keeps polling io_uring without sleeping for a
//! short window before it parks, as long as requests keep arriving within
//! that window.
//!
//! Why: on a virtual machine an idle vCPU halts, and waking a halted vCPU
//! (and the thread parked on it) costs tens of microseconds, more than the
//! work of a small request. A client sending one message at a time gets its
//! next request to the server within that window, so the shard is awake
//! when it lands. The loop yields the CPU (`sched_yield`) between polls, so
//! a client or another thread on the same core still runs; after the window
//! with no request the shard parks as before and an idle server uses no
//! CPU.

use std::future::Future;
use std::pin::pin;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use compio::runtime::Runtime;

// Serving a request records activity (`Shard::request_guard`); the loop
// keeps polling for `spin` after the last one.
use crate::node::shard_state::activity;

/// Runs `future` to completion on `runtime`; `spin` zero parks at once.
pub fn block_on<F: Future>(runtime: &Runtime, future: F, spin: Duration) -> F::Output {
    runtime.enter(|| {
        let waker = runtime.waker();
        let mut context = Context::from_waker(&waker);
        let mut future = pin!(future);
        let mut seen = activity();
        let mut idle_since: Option<Instant> = None;
        let mut spin_pays = true;
        loop {
            if let Poll::Ready(output) = future.as_mut().poll(&mut context) {
                runtime.run();
                return output;
            }
            if runtime.run() {
                runtime.poll_with(Some(Duration::ZERO));
                continue;
            }
            let now = Instant::now();
            let served = activity();
            if served != seen {
                seen = served;
                // Spinning pays only while requests come closer together
                // than the window; a client that pauses longer (large
                // batches, think time) would only lose CPU to the spin.
                if let Some(since) = idle_since.take() {
                    spin_pays = now - since <= spin;
                }
            }
            let since = *idle_since.get_or_insert(now);
            if spin_pays && now - since < spin {
                runtime.poll_with(Some(Duration::ZERO));
                std::thread::yield_now();
            } else {
                runtime.poll();
            }
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::node::shard_state::note_activity;

    /// Spawned tasks, timers and activity all complete under the spinning
    /// loop as under compio's own.
    fn run_with(spin: Duration) -> u32 {
        let runtime = compio::runtime::RuntimeBuilder::new()
            .build()
            .expect("runtime");
        block_on(
            &runtime,
            async {
                let mut total = 0;
                for round in 0..20 {
                    note_activity();
                    let task = compio::runtime::spawn(async move { round * 2 });
                    compio::time::sleep(Duration::from_micros(50)).await;
                    total += task.await.expect("task");
                }
                total
            },
            spin,
        )
    }

    #[test]
    fn given_spin_or_none_when_running_should_complete_every_task() {
        assert_eq!(run_with(Duration::ZERO), 380);
        assert_eq!(run_with(Duration::from_micros(200)), 380);
    }
}

//! A minimal async lock for one thread: it serialises the file operations of
//! a partition log (flush, fsync, rollover, retention) across the tasks of a
//! shard. Release wakes every waiter and the first to run takes the lock;
//! fairness is not guaranteed, which is fine for short critical sections.

use std::cell::{Cell, RefCell};
use std::future::poll_fn;
use std::task::{Poll, Waker};

#[derive(Debug, Default)]
pub struct AsyncLock {
    locked: Cell<bool>,
    waiters: RefCell<Vec<Waker>>,
}

/// Holding it means holding the lock; dropping it releases.
#[derive(Debug)]
pub struct AsyncLockGuard<'a> {
    lock: &'a AsyncLock,
}

impl AsyncLock {
    pub async fn lock(&self) -> AsyncLockGuard<'_> {
        poll_fn(|cx| {
            if self.locked.replace(true) {
                self.waiters.borrow_mut().push(cx.waker().clone());
                Poll::Pending
            } else {
                Poll::Ready(())
            }
        })
        .await;
        AsyncLockGuard { lock: self }
    }
}

impl Drop for AsyncLockGuard<'_> {
    fn drop(&mut self) {
        self.lock.locked.set(false);
        let waiters = std::mem::take(&mut *self.lock.waiters.borrow_mut());
        for waker in waiters {
            waker.wake();
        }
    }
}

#[cfg(test)]
mod tests {
    use std::rc::Rc;

    use super::*;

    #[compio::test]
    async fn given_contended_lock_should_run_critical_sections_one_at_a_time() {
        let lock = Rc::new(AsyncLock::default());
        let inside = Rc::new(Cell::new(0u32));
        let mut tasks = Vec::new();
        for _ in 0..8 {
            let (lock, inside) = (Rc::clone(&lock), Rc::clone(&inside));
            tasks.push(compio::runtime::spawn(async move {
                let _guard = lock.lock().await;
                inside.set(inside.get() + 1);
                assert_eq!(inside.get(), 1, "two tasks inside the critical section");
                compio::time::sleep(std::time::Duration::from_millis(1)).await;
                inside.set(inside.get() - 1);
            }));
        }
        for task in tasks {
            task.await.unwrap();
        }
    }
}

//! Two storage steps awaited together (a group's journal sync and its
//! machine's held batches' sync overlap instead of following each other).

use std::future::{Future, poll_fn};
use std::pin::pin;
use std::task::Poll;

/// Runs `a` and `b` concurrently on this task and returns both results.
pub async fn join2<A: Future, B: Future>(a: A, b: B) -> (A::Output, B::Output) {
    let (mut a, mut b) = (pin!(a), pin!(b));
    let (mut done_a, mut done_b) = (None, None);
    poll_fn(|cx| {
        if done_a.is_none()
            && let Poll::Ready(out) = a.as_mut().poll(cx)
        {
            done_a = Some(out);
        }
        if done_b.is_none()
            && let Poll::Ready(out) = b.as_mut().poll(cx)
        {
            done_b = Some(out);
        }
        if done_a.is_some() && done_b.is_some() {
            Poll::Ready(())
        } else {
            Poll::Pending
        }
    })
    .await;
    (
        done_a.expect("polled to completion"),
        done_b.expect("polled to completion"),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[compio::test]
    async fn given_two_futures_when_joined_should_return_both_outputs() {
        let slow = async {
            compio::time::sleep(std::time::Duration::from_millis(5)).await;
            1
        };
        assert_eq!(join2(slow, async { "b" }).await, (1, "b"));
    }
}

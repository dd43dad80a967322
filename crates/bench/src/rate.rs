//! Per-actor payload rate limiting with a token bucket.
//!
//! [`TokenBucket`] is pure: callers pass the current instant and get back how
//! long to wait, so tests drive it with a made-up clock. The bucket refills
//! at `rate` bytes per second up to `capacity` and may go into debt: a batch
//! larger than the capacity is admitted at once and the debt is paid by the
//! wait that follows, so any batch size works and the long-run rate holds.
//! [`RateLimiter`] wraps the bucket with the real clock and a tokio sleep.

use std::time::{Duration, Instant};

/// The burst allowance, as a fraction of one second of traffic.
const BURST_FRACTION_OF_RATE: f64 = 0.1;

#[derive(Debug, Clone)]
pub struct TokenBucket {
    rate_bytes_per_sec: f64,
    capacity_bytes: f64,
    /// Negative while in debt.
    tokens_bytes: f64,
    refilled_at: Instant,
}

impl TokenBucket {
    /// A full bucket refilling at `rate_bytes_per_sec`.
    pub fn new(rate_bytes_per_sec: u64, capacity_bytes: u64, now: Instant) -> Self {
        assert!(rate_bytes_per_sec > 0, "a zero rate would wait forever");
        Self {
            rate_bytes_per_sec: rate_bytes_per_sec as f64,
            capacity_bytes: capacity_bytes as f64,
            tokens_bytes: capacity_bytes as f64,
            refilled_at: now,
        }
    }

    /// Takes `bytes` from the bucket and returns how long the caller must
    /// wait before moving them. Zero while the bucket holds enough.
    pub fn reserve(&mut self, bytes: u64, now: Instant) -> Duration {
        self.refill(now);
        self.tokens_bytes -= bytes as f64;
        if self.tokens_bytes >= 0.0 {
            return Duration::ZERO;
        }
        Duration::from_secs_f64(-self.tokens_bytes / self.rate_bytes_per_sec)
    }

    fn refill(&mut self, now: Instant) {
        // An instant earlier than the last refill (never from a monotonic
        // clock, but possible from a caller) adds nothing.
        let elapsed = now.saturating_duration_since(self.refilled_at);
        self.refilled_at = self.refilled_at.max(now);
        let refilled = self.tokens_bytes + elapsed.as_secs_f64() * self.rate_bytes_per_sec;
        self.tokens_bytes = refilled.min(self.capacity_bytes);
    }
}

/// A token bucket on the real clock; `None` rate means unlimited.
#[derive(Debug)]
pub struct RateLimiter {
    bucket: Option<TokenBucket>,
}

impl RateLimiter {
    pub fn new(rate_bytes_per_sec: Option<u64>) -> Self {
        let bucket = rate_bytes_per_sec.map(|rate| {
            let capacity = (rate as f64 * BURST_FRACTION_OF_RATE) as u64;
            TokenBucket::new(rate, capacity, Instant::now())
        });
        Self { bucket }
    }

    /// Sleeps as long as the bucket asks before `bytes` may move.
    pub async fn throttle(&mut self, bytes: u64) {
        let Some(bucket) = self.bucket.as_mut() else {
            return;
        };
        let wait = bucket.reserve(bytes, Instant::now());
        if !wait.is_zero() {
            tokio::time::sleep(wait).await;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MB: u64 = 1_000_000;

    /// Float refill maths may be a nanosecond off; a microsecond is plenty.
    fn assert_about(actual: Duration, expected: Duration) {
        let gap = actual.abs_diff(expected);
        assert!(gap < Duration::from_micros(1), "{actual:?} != {expected:?}");
    }

    #[test]
    fn given_full_bucket_when_reserving_within_capacity_should_not_wait() {
        let start = Instant::now();
        let mut bucket = TokenBucket::new(10 * MB, MB, start);
        assert_eq!(bucket.reserve(MB / 2, start), Duration::ZERO);
        assert_eq!(bucket.reserve(MB / 2, start), Duration::ZERO);
    }

    #[test]
    fn given_empty_bucket_when_reserving_should_wait_bytes_over_rate() {
        let start = Instant::now();
        let mut bucket = TokenBucket::new(10 * MB, MB, start);
        assert_eq!(bucket.reserve(MB, start), Duration::ZERO);
        // 5 MB at 10 MB/s: half a second of debt.
        assert_eq!(bucket.reserve(5 * MB, start), Duration::from_millis(500));
    }

    #[test]
    fn given_time_passes_when_reserving_should_refill_at_rate_up_to_capacity() {
        let start = Instant::now();
        let mut bucket = TokenBucket::new(10 * MB, MB, start);
        assert_eq!(bucket.reserve(MB, start), Duration::ZERO);
        // 50 ms refill 0.5 MB, so 1 MB leaves 0.5 MB of debt: 50 ms.
        let later = start + Duration::from_millis(50);
        assert_about(bucket.reserve(MB, later), Duration::from_millis(50));
        // A long idle spell refills only to capacity, not beyond.
        let much_later = later + Duration::from_secs(60);
        assert_eq!(bucket.reserve(MB, much_later), Duration::ZERO);
        assert_about(bucket.reserve(MB, much_later), Duration::from_millis(100));
    }

    #[test]
    fn given_steady_load_when_waiting_as_told_should_hold_the_rate() {
        let start = Instant::now();
        let mut bucket = TokenBucket::new(2 * MB, 0, start);
        let mut now = start;
        for _ in 0..10 {
            now += bucket.reserve(MB, now);
        }
        // Ten 1 MB batches at 2 MB/s finish 5 s in, the last one admitted at 5 s.
        assert_eq!(now.duration_since(start), Duration::from_secs(5));
    }

    #[test]
    fn given_instant_before_last_refill_when_reserving_should_not_refill() {
        let start = Instant::now() + Duration::from_secs(1);
        let mut bucket = TokenBucket::new(MB, 0, start);
        let earlier = start - Duration::from_millis(500);
        assert_eq!(bucket.reserve(MB, earlier), Duration::from_secs(1));
    }
}

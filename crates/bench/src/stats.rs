//! Latency recording and the arithmetic behind every reported number.
//!
//! An actor appends one [`Sample`] per measured send or poll; nothing is
//! aggregated on the hot path. Afterwards, [`LatencySummary::from_latencies`]
//! sorts the latencies and reads percentiles by the nearest-rank rule (the
//! smallest sample with at least p% of samples at or below it, so p9999 of a
//! small set is its maximum), [`Throughput`] divides volume by the measured
//! window, and [`per_second_series`] buckets samples by the second they ended.

use std::time::Duration;

/// One measured operation: a sent batch, a non-empty poll, or a round trip.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Sample {
    /// When the operation finished, in microseconds since the run started.
    pub finished_at_us: u64,
    pub latency_us: u64,
    pub messages: u32,
    pub payload_bytes: u64,
}

/// Percentile ranks in parts per million, so rank arithmetic stays exact.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Percentile {
    pub label: &'static str,
    pub parts_per_million: u64,
}

pub const REPORTED_PERCENTILES: [Percentile; 6] = [
    Percentile {
        label: "p50",
        parts_per_million: 500_000,
    },
    Percentile {
        label: "p90",
        parts_per_million: 900_000,
    },
    Percentile {
        label: "p95",
        parts_per_million: 950_000,
    },
    Percentile {
        label: "p99",
        parts_per_million: 990_000,
    },
    Percentile {
        label: "p999",
        parts_per_million: 999_000,
    },
    Percentile {
        label: "p9999",
        parts_per_million: 999_900,
    },
];

/// Nearest-rank percentile of an ascending slice: rank = ceil(n * p), 1-based.
/// `None` for an empty slice.
pub fn percentile(sorted: &[u64], parts_per_million: u64) -> Option<u64> {
    assert!(
        parts_per_million <= 1_000_000,
        "a percentile is at most 100%"
    );
    debug_assert!(sorted.is_sorted(), "percentile needs ascending input");
    if sorted.is_empty() {
        return None;
    }
    let count = sorted.len() as u128;
    let rank = (count * u128::from(parts_per_million)).div_ceil(1_000_000);
    // Rank 0 only arises for p0; the smallest sample answers it.
    let index = (rank.max(1) - 1) as usize;
    Some(sorted[index])
}

/// The reported latency figures, all in microseconds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub struct LatencySummary {
    pub samples: u64,
    pub min_us: u64,
    pub mean_us: u64,
    pub p50_us: u64,
    pub p90_us: u64,
    pub p95_us: u64,
    pub p99_us: u64,
    pub p999_us: u64,
    pub p9999_us: u64,
    pub max_us: u64,
}

impl LatencySummary {
    /// Summarises latencies in any order; `None` when there are none.
    pub fn from_latencies(mut latencies: Vec<u64>) -> Option<Self> {
        latencies.sort_unstable();
        let at =
            |index: usize| percentile(&latencies, REPORTED_PERCENTILES[index].parts_per_million);
        let total: u128 = latencies.iter().map(|&value| u128::from(value)).sum();
        Some(Self {
            samples: latencies.len() as u64,
            min_us: *latencies.first()?,
            mean_us: (total / latencies.len() as u128) as u64,
            p50_us: at(0)?,
            p90_us: at(1)?,
            p95_us: at(2)?,
            p99_us: at(3)?,
            p999_us: at(4)?,
            p9999_us: at(5)?,
            max_us: *latencies.last()?,
        })
    }

    /// The figures in report order, labelled.
    pub fn labelled(&self) -> [(&'static str, u64); 7] {
        [
            ("p50", self.p50_us),
            ("p90", self.p90_us),
            ("p95", self.p95_us),
            ("p99", self.p99_us),
            ("p999", self.p999_us),
            ("p9999", self.p9999_us),
            ("max", self.max_us),
        ]
    }
}

/// Volume moved in a measured window.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Throughput {
    pub messages: u64,
    pub payload_bytes: u64,
    pub window: Duration,
}

pub const BYTES_PER_MB: f64 = 1_000_000.0;

impl Throughput {
    pub fn of_samples<'a>(samples: impl IntoIterator<Item = &'a Sample>, window: Duration) -> Self {
        let (messages, payload_bytes) = samples.into_iter().fold((0, 0), |(m, b), s| {
            (m + u64::from(s.messages), b + s.payload_bytes)
        });
        Self {
            messages,
            payload_bytes,
            window,
        }
    }

    /// Decimal megabytes (10^6 B) per second; 0 for an empty window.
    pub fn mb_per_sec(&self) -> f64 {
        self.per_second(self.payload_bytes) / BYTES_PER_MB
    }

    pub fn messages_per_sec(&self) -> f64 {
        self.per_second(self.messages)
    }

    fn per_second(&self, amount: u64) -> f64 {
        let seconds = self.window.as_secs_f64();
        if seconds <= 0.0 {
            return 0.0;
        }
        amount as f64 / seconds
    }
}

/// Everything that finished during one wall-clock second of the run.
#[derive(Debug, Clone, PartialEq)]
pub struct SecondBucket {
    /// 1 for the first second after measurement began.
    pub elapsed_s: u64,
    pub mb_per_sec: f64,
    pub messages_per_sec: f64,
    pub p50_us: Option<u64>,
    pub p99_us: Option<u64>,
}

/// Buckets samples by `(finished_at_us - origin_us) / 1 s`. Samples before
/// `origin_us` (warm-up) are ignored. Seconds with no samples appear with
/// zero volume so the series has no holes.
pub fn per_second_series<'a>(
    samples: impl IntoIterator<Item = &'a Sample>,
    origin_us: u64,
) -> Vec<SecondBucket> {
    let mut buckets: Vec<(u64, u64, Vec<u64>)> = Vec::new();
    for sample in samples {
        let Some(offset_us) = sample.finished_at_us.checked_sub(origin_us) else {
            continue;
        };
        let second = (offset_us / 1_000_000) as usize;
        if buckets.len() <= second {
            buckets.resize_with(second + 1, || (0, 0, Vec::new()));
        }
        let bucket = &mut buckets[second];
        bucket.0 += sample.payload_bytes;
        bucket.1 += u64::from(sample.messages);
        bucket.2.push(sample.latency_us);
    }
    buckets
        .into_iter()
        .zip(1..)
        .map(|((bytes, messages, mut latencies), elapsed_s)| {
            latencies.sort_unstable();
            SecondBucket {
                elapsed_s,
                mb_per_sec: bytes as f64 / BYTES_PER_MB,
                messages_per_sec: messages as f64,
                p50_us: percentile(&latencies, 500_000),
                p99_us: percentile(&latencies, 990_000),
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample(finished_at_us: u64, latency_us: u64) -> Sample {
        Sample {
            finished_at_us,
            latency_us,
            messages: 10,
            payload_bytes: 1000,
        }
    }

    #[test]
    fn given_empty_input_when_summarising_should_report_nothing() {
        assert_eq!(percentile(&[], 500_000), None);
        assert_eq!(LatencySummary::from_latencies(Vec::new()), None);
    }

    #[test]
    fn given_one_sample_when_summarising_should_report_it_everywhere() {
        let summary = LatencySummary::from_latencies(vec![42]).expect("one sample");
        assert_eq!(summary.samples, 1);
        assert!(summary.labelled().iter().all(|&(_, value)| value == 42));
        assert_eq!((summary.min_us, summary.mean_us), (42, 42));
    }

    #[test]
    fn given_one_to_hundred_when_taking_percentiles_should_match_nearest_rank() {
        let values: Vec<u64> = (1..=100).collect();
        assert_eq!(percentile(&values, 500_000), Some(50));
        assert_eq!(percentile(&values, 900_000), Some(90));
        assert_eq!(percentile(&values, 990_000), Some(99));
        assert_eq!(percentile(&values, 999_000), Some(100));
        assert_eq!(percentile(&values, 1_000_000), Some(100));
        assert_eq!(percentile(&values, 0), Some(1));
    }

    #[test]
    fn given_small_set_when_taking_p9999_should_give_the_maximum() {
        let summary = LatencySummary::from_latencies(vec![5, 1, 3, 2, 4]).expect("samples");
        assert_eq!(summary.p9999_us, 5);
        assert_eq!(summary.p999_us, 5);
        assert_eq!(summary.p50_us, 3);
        assert_eq!(summary.max_us, 5);
        assert_eq!(summary.mean_us, 3);
    }

    #[test]
    fn given_ten_thousand_samples_when_taking_p9999_should_not_be_the_maximum() {
        let values: Vec<u64> = (1..=10_000).collect();
        assert_eq!(percentile(&values, 999_900), Some(9_999));
        let summary =
            LatencySummary::from_latencies(values.into_iter().rev().collect()).expect("samples");
        assert_eq!(summary.p99_us, 9_900);
        assert_eq!(summary.p9999_us, 9_999);
        assert_eq!(summary.max_us, 10_000);
    }

    #[test]
    fn given_skewed_distribution_when_summarising_should_expose_the_tail() {
        // 990 fast operations and 10 slow ones: p99 is still fast, p999 slow.
        let mut values = vec![100; 990];
        values.extend(vec![10_000; 10]);
        let summary = LatencySummary::from_latencies(values).expect("samples");
        assert_eq!(summary.p50_us, 100);
        assert_eq!(summary.p99_us, 100);
        assert_eq!(summary.p999_us, 10_000);
        assert_eq!(summary.mean_us, 199);
    }

    #[test]
    fn given_volume_and_window_when_computing_throughput_should_divide() {
        let samples = [sample(1, 1), sample(2, 1)];
        let throughput = Throughput::of_samples(&samples, Duration::from_millis(500));
        assert_eq!(throughput.messages, 20);
        assert_eq!(throughput.payload_bytes, 2000);
        assert_eq!(throughput.messages_per_sec(), 40.0);
        assert_eq!(throughput.mb_per_sec(), 0.004);
    }

    #[test]
    fn given_zero_window_when_computing_throughput_should_report_zero() {
        let throughput = Throughput::of_samples(&[sample(1, 1)], Duration::ZERO);
        assert_eq!(throughput.mb_per_sec(), 0.0);
        assert_eq!(throughput.messages_per_sec(), 0.0);
    }

    #[test]
    fn given_samples_across_seconds_when_bucketing_should_fill_gaps_and_skip_warmup() {
        let samples = [
            sample(500_000, 9),    // warm-up, before the origin
            sample(1_200_000, 10), // second 1
            sample(1_900_000, 30), // second 1
            sample(3_100_000, 20), // second 3
        ];
        let series = per_second_series(&samples, 1_000_000);
        assert_eq!(series.len(), 3);
        assert_eq!(series[0].elapsed_s, 1);
        assert_eq!(series[0].messages_per_sec, 20.0);
        assert_eq!(series[0].mb_per_sec, 0.002);
        assert_eq!(series[0].p50_us, Some(10));
        assert_eq!(series[0].p99_us, Some(30));
        assert_eq!(series[1].messages_per_sec, 0.0);
        assert_eq!(series[1].p50_us, None);
        assert_eq!(series[2].p99_us, Some(20));
    }
}

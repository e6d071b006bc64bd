//! Timing helpers shared by the benchmarks.

use std::time::{Duration, Instant};

/// Median over `rounds` of the mean time per call of `f` in batches of `batch` calls
/// (after one warm-up batch).
pub fn median_time(mut f: impl FnMut(), batch: usize, rounds: usize) -> Duration {
    for _ in 0..batch {
        f();
    }
    let mut samples: Vec<Duration> = (0..rounds)
        .map(|_| {
            let start = Instant::now();
            for _ in 0..batch {
                f();
            }
            start.elapsed() / batch as u32
        })
        .collect();
    samples.sort();
    samples[rounds / 2]
}

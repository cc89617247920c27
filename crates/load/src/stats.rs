//! Latency samples and their summaries: percentiles by rank over every
//! recorded request (no histogram buckets, no interpolation), and throughput.

use std::time::Duration;

/// Every request's latency in one measured cell, in nanoseconds.
#[derive(Debug, Default, Clone)]
pub struct Samples {
    pub nanos: Vec<u64>,
}

impl Samples {
    pub fn extend(&mut self, other: &Samples) {
        self.nanos.extend_from_slice(&other.nanos);
    }

    pub fn summary(&self) -> Option<Latency> {
        if self.nanos.is_empty() {
            return None;
        }
        let mut v = self.nanos.clone();
        v.sort_unstable();
        // Nearest rank: the smallest value with at least q of the samples at
        // or below it.
        let at = |q: f64| {
            let rank = (q * v.len() as f64).ceil() as usize;
            v[rank.clamp(1, v.len()) - 1]
        };
        Some(Latency {
            count: v.len(),
            p50: at(0.50),
            p90: at(0.90),
            p99: at(0.99),
            p999: at(0.999),
            max: v[v.len() - 1],
        })
    }
}

/// Percentiles of one cell, in nanoseconds.
#[derive(Debug, Clone, Copy)]
pub struct Latency {
    pub count: usize,
    pub p50: u64,
    pub p90: u64,
    pub p99: u64,
    pub p999: u64,
    pub max: u64,
}

/// Requests per second.
pub fn rate(requests: usize, took: Duration) -> f64 {
    requests as f64 / took.as_secs_f64().max(1e-9)
}

/// The median of a few per-round figures (the middle one, or the mean of the
/// two middle ones).
pub fn median(mut xs: Vec<f64>) -> Option<f64> {
    if xs.is_empty() {
        return None;
    }
    xs.sort_by(f64::total_cmp);
    let n = xs.len();
    Some(if n % 2 == 1 {
        xs[n / 2]
    } else {
        (xs[n / 2 - 1] + xs[n / 2]) / 2.0
    })
}

/// A duration for a table: µs below 10 ms, ms up to 10 s, s above.
pub fn fmt_nanos(n: u64) -> String {
    let us = n as f64 / 1000.0;
    if us < 10.0 {
        format!("{us:.1} µs")
    } else if us < 10_000.0 {
        format!("{us:.0} µs")
    } else if us < 10_000_000.0 {
        format!("{:.1} ms", us / 1000.0)
    } else {
        format!("{:.1} s", us / 1_000_000.0)
    }
}

/// A rate for a table, rounded to three significant figures.
pub fn fmt_rate(r: f64) -> String {
    if r >= 1000.0 {
        let k = r / 1000.0;
        if k >= 100.0 {
            format!("{:.0}k", k)
        } else if k >= 10.0 {
            format!("{:.1}k", k)
        } else {
            format!("{:.2}k", k)
        }
    } else {
        format!("{r:.0}")
    }
}

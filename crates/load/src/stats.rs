//! Latency samples and their summaries: an HDR histogram of every recorded
//! request (three significant figures, so a percentile is within 0.1% of
//! the exact rank), and throughput.

use std::time::Duration;

use hdrhistogram::Histogram;

/// Every request's latency in one measured cell, in nanoseconds.
#[derive(Debug, Clone)]
pub struct Samples {
    hist: Histogram<u64>,
}

impl Default for Samples {
    fn default() -> Samples {
        // 1 ns to an hour, sized up front: recording in the measuring loops
        // never allocates (a longer latency counts as an hour).
        let hist = Histogram::new_with_bounds(1, 3_600_000_000_000, 3).expect("valid bounds");
        Samples { hist }
    }
}

impl Samples {
    /// Records one request's latency.
    pub fn record(&mut self, nanos: u64) {
        self.hist.saturating_record(nanos);
    }

    /// How many latencies were recorded.
    pub fn len(&self) -> usize {
        self.hist.len() as usize
    }

    pub fn extend(&mut self, other: &Samples) {
        self.hist
            .add(&other.hist)
            .expect("histograms of the same bounds");
    }

    pub fn summary(&self) -> Option<Latency> {
        let h = &self.hist;
        if h.is_empty() {
            return None;
        }
        Some(Latency {
            count: self.len(),
            p50: h.value_at_quantile(0.50),
            p90: h.value_at_quantile(0.90),
            p99: h.value_at_quantile(0.99),
            p999: h.value_at_quantile(0.999),
            max: h.max(),
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

//! How many requests each connection carried (issue 16: "per connection how many requests
//! it carried"). Counted by the connection itself as a plain integer and handed here once,
//! when the connection ends, so the cost is per connection, never per request.

use hdrhistogram::Histogram;
use serde::{Deserialize, Serialize};

/// A worker's (or a run's) connections by the number of requests each answered; merged by
/// adding. The count, sum, min and max are exact; the median comes from an HDR histogram
/// with 3 significant digits (within 0.1%).
#[derive(Debug, Clone)]
pub struct RequestsPerConnection {
    counts: Histogram<u64>,
    sum: u64,
    min: u64,
    max: u64,
}

impl Default for RequestsPerConnection {
    fn default() -> Self {
        let mut counts = Histogram::new(3).expect("3 significant digits are valid");
        counts.auto(true);
        RequestsPerConnection {
            counts,
            sum: 0,
            min: u64::MAX,
            max: 0,
        }
    }
}

impl RequestsPerConnection {
    /// One connection ended after answering `requests` (0: it opened and answered nothing).
    pub fn ended(&mut self, requests: u64) {
        // Auto-resizing: a value can always be recorded.
        let _ = self.counts.record(requests);
        self.sum += requests;
        self.min = self.min.min(requests);
        self.max = self.max.max(requests);
    }

    pub fn add(&mut self, other: &RequestsPerConnection) {
        let _ = self.counts.add(&other.counts);
        self.sum += other.sum;
        self.min = self.min.min(other.min);
        self.max = self.max.max(other.max);
    }

    pub fn connections(&self) -> u64 {
        self.counts.len()
    }

    /// The figures a report shows, or `None` when no connection was counted.
    pub fn spread(&self) -> Option<ConnectionSpread> {
        let h = &self.counts;
        (!h.is_empty()).then(|| ConnectionSpread {
            connections: h.len(),
            min: self.min,
            // The bucket's highest equivalent value can pass the true maximum.
            median: h.value_at_quantile(0.5).clamp(self.min, self.max),
            mean: self.sum as f64 / h.len() as f64,
            max: self.max,
        })
    }
}

/// Requests answered per connection, over the connections a run opened.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ConnectionSpread {
    /// Connections counted (each once, when it ended).
    pub connections: u64,
    pub min: u64,
    /// Within 0.1% (HDR, 3 significant digits); the other figures are exact.
    pub median: u64,
    pub mean: f64,
    pub max: u64,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spread_of_merged_workers_is_exact() {
        let mut a = RequestsPerConnection::default();
        assert!(a.spread().is_none());
        a.ended(0);
        a.ended(10);
        let mut b = RequestsPerConnection::default();
        b.ended(20);
        a.add(&b);
        let s = a.spread().unwrap();
        assert_eq!((s.connections, s.min, s.median, s.max), (3, 0, 10, 20));
        assert!((s.mean - 10.0).abs() < 1e-9);
        let mut big = RequestsPerConnection::default();
        for n in [300_001, 300_001, 300_003] {
            big.ended(n);
        }
        let s = big.spread().unwrap();
        assert_eq!((s.min, s.max), (300_001, 300_003));
        assert!((s.mean * 3.0 - 900_005.0).abs() < 1e-6, "{s:?}");
        assert!(s.median.abs_diff(300_001) <= 300, "{s:?}");
    }
}

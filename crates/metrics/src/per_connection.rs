//! How many requests each connection carried (issue 16: "per connection how many requests
//! it carried"). Counted by the connection itself as a plain integer and handed here once,
//! when the connection ends, so the cost is per connection, never per request.

use hdrhistogram::Histogram;
use serde::{Deserialize, Serialize};

/// A worker's (or a run's) connections by the number of requests each answered; merged by
/// adding. HDR with 2 significant digits: a median of 10,000 requests is read within 1%.
#[derive(Debug, Clone)]
pub struct RequestsPerConnection {
    counts: Histogram<u64>,
}

impl Default for RequestsPerConnection {
    fn default() -> Self {
        let mut counts = Histogram::new(2).expect("2 significant digits are valid");
        counts.auto(true);
        RequestsPerConnection { counts }
    }
}

impl RequestsPerConnection {
    /// One connection ended after answering `requests` (0: it opened and answered nothing).
    pub fn ended(&mut self, requests: u64) {
        // Auto-resizing: a value can always be recorded.
        let _ = self.counts.record(requests);
    }

    pub fn add(&mut self, other: &RequestsPerConnection) {
        let _ = self.counts.add(&other.counts);
    }

    pub fn connections(&self) -> u64 {
        self.counts.len()
    }

    /// The figures a report shows, or `None` when no connection was counted.
    pub fn spread(&self) -> Option<ConnectionSpread> {
        let h = &self.counts;
        (!h.is_empty()).then(|| ConnectionSpread {
            connections: h.len(),
            min: h.min(),
            median: h.value_at_quantile(0.5),
            mean: h.mean(),
            max: h.max(),
        })
    }
}

/// Requests answered per connection, over the connections a run opened.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ConnectionSpread {
    /// Connections counted (each once, when it ended).
    pub connections: u64,
    pub min: u64,
    /// Within 1% (HDR, 2 significant digits).
    pub median: u64,
    pub mean: f64,
    pub max: u64,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spread_of_merged_workers() {
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
    }
}

//! [`Distribution`]: the figures a report shows for one histogram.

use hdrhistogram::Histogram;
use serde::{Deserialize, Serialize};

/// The percentiles every report lists (as quantiles).
pub const REPORTED_QUANTILES: [f64; 10] =
    [0.5, 0.75, 0.9, 0.95, 0.99, 0.999, 0.9999, 0.0, 1.0, 0.25];

/// Summary figures of a duration histogram, in microseconds.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Distribution {
    pub count: u64,
    pub min_us: u64,
    pub mean_us: f64,
    pub stdev_us: f64,
    pub max_us: u64,
    /// `(percentile, value)` pairs, percentile in 0..=100, ascending. In JSON a list of
    /// `{"p": 99.0, "us": 812}` objects (`jq '.summary.latency.percentiles_us[] |
    /// select(.p == 99) | .us'`); reports of schema 1 held `[99.0, 812]` pairs, still read.
    #[serde(with = "percentile_objects")]
    #[schemars(with = "Vec<Percentile>")]
    pub percentiles_us: Vec<(f64, u64)>,
}

/// One percentile of a [`Distribution`] as JSON shows it.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Percentile {
    /// The percentile, 0..=100 (99.9 is the 99.9th).
    pub p: f64,
    /// Its value in microseconds.
    pub us: u64,
}

mod percentile_objects {
    use super::Percentile;
    use serde::{Deserialize, Deserializer, Serialize, Serializer};

    /// Schema 2 objects, or the pairs of schema 1.
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum Either {
        Object(Percentile),
        Pair(f64, u64),
    }

    pub fn serialize<S: Serializer>(v: &[(f64, u64)], s: S) -> Result<S::Ok, S::Error> {
        v.iter()
            .map(|&(p, us)| Percentile { p, us })
            .collect::<Vec<_>>()
            .serialize(s)
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<(f64, u64)>, D::Error> {
        Ok(Vec::<Either>::deserialize(d)?
            .into_iter()
            .map(|e| match e {
                Either::Object(Percentile { p, us }) => (p, us),
                Either::Pair(p, us) => (p, us),
            })
            .collect())
    }
}

impl Distribution {
    pub fn of(h: &Histogram<u64>) -> Self {
        let mut quantiles = REPORTED_QUANTILES.to_vec();
        quantiles.sort_by(f64::total_cmp);
        let empty = h.is_empty();
        Distribution {
            count: h.len(),
            min_us: if empty { 0 } else { h.min() },
            mean_us: if empty { 0.0 } else { h.mean() },
            stdev_us: if empty { 0.0 } else { h.stdev() },
            max_us: if empty { 0 } else { h.max() },
            percentiles_us: quantiles
                .into_iter()
                .map(|q| (q * 100.0, if empty { 0 } else { h.value_at_quantile(q) }))
                .collect(),
        }
    }

    /// The value at percentile `p` (0..=100) if it is one of the reported ones.
    pub fn percentile(&self, p: f64) -> Option<u64> {
        self.percentiles_us
            .iter()
            .find(|(q, _)| (q - p).abs() < 1e-9)
            .map(|&(_, v)| v)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::new_histogram;

    #[test]
    fn figures_of_a_known_histogram() {
        let mut h = new_histogram();
        for v in 1..=1000u64 {
            h.record(v).unwrap();
        }
        let d = Distribution::of(&h);
        assert_eq!(d.count, 1000);
        assert_eq!(d.min_us, 1);
        assert_eq!(d.max_us, 1000);
        assert_eq!(d.percentile(50.0), Some(500));
        assert_eq!(d.percentile(99.0), Some(990));
        assert_eq!(d.percentile(100.0), Some(1000));
        assert!((d.mean_us - 500.5).abs() < 1.0);
        assert!(d.percentiles_us.windows(2).all(|w| w[0].0 < w[1].0));
    }

    #[test]
    fn empty_histogram_is_all_zero() {
        let d = Distribution::of(&new_histogram());
        assert_eq!((d.count, d.min_us, d.max_us), (0, 0, 0));
    }
}

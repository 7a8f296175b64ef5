//! Segments: one run split into exact, disjoint shares for several machines.
//!
//! A [`Segment`] is "share `index` of `weights.len()` shares, sized by `weights`". Everything a
//! run counts is numbered from 0 (open-loop requests on the global schedule, connections,
//! sessions, the requests of `-n`), and item `k` belongs to exactly one segment,
//! [`Segment::owner_of`]`(k)`. Ownership repeats with period `W = sum(weights)`: within one
//! period, segment `i` owns `weights[i]` positions, spread as evenly as a greedy
//! largest-deficit order spreads them (equal weights give `0, 1, ..., n-1`: worker `i` of `n`
//! owns `i, i+n, ...`, the rule the engine already uses between threads).
//!
//! Because shares are counts of owned items among `0..total`, they add up to `total` exactly,
//! never overlap and never shrink when `total` grows, whatever the weights. Nothing here reads
//! a clock or does I/O; the property tests check those three promises.
//!
//! ```
//! use loadmark_plan::Segment;
//! let s = Segment::parse("1/3", "--segment").unwrap();
//! assert_eq!(s.share_of(10), 3); // items 1, 4, 7
//! assert_eq!(s.global(2), 7);
//! let big = Segment::parse("0/2:1:1", "--segment").unwrap(); // half of the load
//! assert_eq!(big.share_of(8), 4);
//! ```

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::text::PlanError;

/// The largest period (sum of weights): the ownership pattern is one entry per position.
pub const MAX_WEIGHT_SUM: u64 = 100_000;

const FORM: &str = "INDEX/COUNT (0-based, e.g. 3/8) or INDEX/W0:W1:... with whole-number weights, e.g. 0/2:1:1; INDEX below the number of shares";

/// One share of a run.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(try_from = "SegmentFields")]
pub struct Segment {
    /// Which share, from 0.
    pub index: u32,
    /// Relative size of every share (all 1: equal shares); their count is the number of
    /// segments.
    pub weights: Vec<u32>,
    /// Positions this segment owns within one period, ascending (derived, not serialized).
    #[serde(skip)]
    #[schemars(skip)]
    positions: Vec<u32>,
}

impl Segment {
    /// The whole run: one share owning everything.
    pub fn whole() -> Segment {
        Segment::new(0, vec![1]).expect("valid")
    }

    /// Share `index` of `count` equal shares.
    pub fn equal(index: u32, count: u32) -> Result<Segment, PlanError> {
        Segment::new(index, vec![1; count as usize])
    }

    /// Share `index` with the given weights; an error when `index` is out of range, a weight is
    /// zero or the weights sum above [`MAX_WEIGHT_SUM`].
    pub fn new(index: u32, weights: Vec<u32>) -> Result<Segment, PlanError> {
        let sum: u64 = weights.iter().map(|&w| u64::from(w)).sum();
        let text = || {
            let w: Vec<String> = weights.iter().map(u32::to_string).collect();
            format!("{index}/{}", w.join(":"))
        };
        if weights.is_empty()
            || index as usize >= weights.len()
            || weights.contains(&0)
            || sum > MAX_WEIGHT_SUM
        {
            return Err(PlanError::invalid("--segment", text(), FORM));
        }
        let positions = pattern(&weights)
            .into_iter()
            .enumerate()
            .filter(|&(_, owner)| owner == index)
            .map(|(p, _)| p as u32)
            .collect();
        Ok(Segment {
            index,
            weights,
            positions,
        })
    }

    /// Parses `3/8` (share 3 of 8 equal shares) or `0/2:1:1` (share 0 of three, weighted).
    pub fn parse(text: &str, field: &'static str) -> Result<Segment, PlanError> {
        let bad = || PlanError::invalid(field, text, FORM);
        let (index, rest) = text.trim().split_once('/').ok_or_else(bad)?;
        let index: u32 = index.trim().parse().map_err(|_| bad())?;
        let weights: Vec<u32> = if rest.contains(':') {
            rest.split(':')
                .map(|w| w.trim().parse::<u32>().map_err(|_| bad()))
                .collect::<Result<_, _>>()?
        } else {
            let count: u32 = rest.trim().parse().map_err(|_| bad())?;
            if u64::from(count) > MAX_WEIGHT_SUM {
                return Err(bad());
            }
            vec![1; count as usize]
        };
        Segment::new(index, weights).map_err(|_| bad())
    }

    /// How many shares the run is split into.
    pub fn count(&self) -> u32 {
        self.weights.len() as u32
    }

    /// True for the whole run (one share).
    pub fn is_whole(&self) -> bool {
        self.weights.len() == 1
    }

    fn period(&self) -> u64 {
        self.weights.iter().map(|&w| u64::from(w)).sum()
    }

    /// Which segment owns item `k`.
    pub fn owner_of(&self, k: u64) -> u32 {
        let period = self.period();
        let p = k % period;
        // Rebuilding the pattern is O(W); callers on a hot path use `global` instead.
        pattern(&self.weights)[p as usize]
    }

    /// How many of the items `0..total` this segment owns.
    pub fn share_of(&self, total: u64) -> u64 {
        let period = self.period();
        let whole = total / period * self.positions.len() as u64;
        let rest = total % period;
        whole + self.positions.partition_point(|&p| u64::from(p) < rest) as u64
    }

    /// The global number of this segment's `j`-th item (from 0): ascending in `j`, and
    /// `owner_of(global(j)) == index`.
    pub fn global(&self, j: u64) -> u64 {
        let own = self.positions.len() as u64;
        j / own * self.period() + u64::from(self.positions[(j % own) as usize])
    }

    /// Text [`Segment::parse`] reads back: `3/8` for equal shares, `0/2:1:1` otherwise.
    pub fn to_text(&self) -> String {
        if self.weights.iter().all(|&w| w == 1) {
            format!("{}/{}", self.index, self.weights.len())
        } else {
            let w: Vec<String> = self.weights.iter().map(u32::to_string).collect();
            format!("{}/{}", self.index, w.join(":"))
        }
    }
}

/// What a saved segment holds; the derived positions are rebuilt (and the fields checked).
#[derive(Deserialize, JsonSchema)]
struct SegmentFields {
    index: u32,
    weights: Vec<u32>,
}

impl TryFrom<SegmentFields> for Segment {
    type Error = PlanError;
    fn try_from(f: SegmentFields) -> Result<Segment, PlanError> {
        Segment::new(f.index, f.weights)
    }
}

/// The owner of each position of one period: at each position the share furthest behind its
/// ideal count `weight * (p + 1) / W` takes it (ties: the lowest index), so every prefix is as
/// close to the weights as whole items allow.
fn pattern(weights: &[u32]) -> Vec<u32> {
    let total: u64 = weights.iter().map(|&w| u64::from(w)).sum();
    let mut taken = vec![0u64; weights.len()];
    let mut out = Vec::with_capacity(total as usize);
    for p in 0..total {
        // deficit_i * W = w_i * (p + 1) - taken_i * W, compared in integers.
        let (best, _) = weights
            .iter()
            .enumerate()
            .map(|(i, &w)| {
                (
                    i,
                    i128::from(w) * i128::from(p + 1) - i128::from(taken[i] * total),
                )
            })
            .fold(
                (0, i128::MIN),
                |acc, (i, d)| if d > acc.1 { (i, d) } else { acc },
            );
        taken[best] += 1;
        out.push(best as u32);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn all(weights: &[u32]) -> Vec<Segment> {
        (0..weights.len() as u32)
            .map(|i| Segment::new(i, weights.to_vec()).unwrap())
            .collect()
    }

    #[test]
    fn equal_shares_are_round_robin() {
        let segs = all(&[1, 1, 1]);
        assert_eq!(segs[0].positions, vec![0]);
        assert_eq!(segs[2].global(0), 2);
        assert_eq!(segs[2].global(1), 5);
        assert_eq!(segs[1].share_of(10), 3);
        assert_eq!(segs[0].share_of(10), 4);
        assert_eq!(segs[0].owner_of(9), 0);
    }

    #[test]
    fn weights_spread_evenly_within_a_period() {
        assert_eq!(pattern(&[2, 1, 1]), vec![0, 1, 2, 0]);
        assert_eq!(pattern(&[3, 1]), vec![0, 0, 1, 0]);
    }

    #[test]
    fn parse_and_print_round_trip_and_bad_text_names_the_flag() {
        for text in ["0/1", "3/8", "0/2:1:1", "2/1:1:5"] {
            assert_eq!(Segment::parse(text, "--segment").unwrap().to_text(), text);
        }
        assert_eq!(
            Segment::parse("1/1:1", "--segment").unwrap().to_text(),
            "1/2"
        );
        for bad in [
            "", "3", "8/8", "-1/3", "a/3", "0/0", "0/1:0", "0/", "1/x:2", "0/200000",
        ] {
            let e = Segment::parse(bad, "--segment").unwrap_err().to_string();
            assert!(
                e.starts_with("--segment") && e.contains("INDEX/COUNT"),
                "{bad}: {e}"
            );
        }
    }

    proptest! {
        #[test]
        fn shares_add_up_never_overlap_and_grow(
            weights in proptest::collection::vec(1u32..6, 1..7),
            total in 0u64..500,
        ) {
            let segs = all(&weights);
            let shares: Vec<u64> = segs.iter().map(|s| s.share_of(total)).collect();
            prop_assert_eq!(shares.iter().sum::<u64>(), total);
            // Every item once: the globals of all segments below total are 0..total exactly.
            let mut seen = vec![0u8; total as usize];
            for (s, &n) in segs.iter().zip(&shares) {
                for j in 0..n {
                    let k = s.global(j);
                    prop_assert!(k < total);
                    prop_assert_eq!(s.owner_of(k), s.index);
                    seen[k as usize] += 1;
                }
                // The next one is past the end: the share is exactly the owned prefix.
                prop_assert!(s.global(n) >= total);
            }
            prop_assert!(seen.iter().all(|&c| c == 1));
            for s in &segs {
                prop_assert!(s.share_of(total + 1) >= s.share_of(total));
            }
        }

        #[test]
        fn shares_follow_the_weights_within_one_item_per_period_position(
            weights in proptest::collection::vec(1u32..6, 1..7),
            total in 0u64..2000,
        ) {
            let w: u64 = weights.iter().map(|&x| u64::from(x)).sum();
            for s in all(&weights) {
                let ideal = total as f64 * f64::from(s.weights[s.index as usize]) / w as f64;
                prop_assert!((s.share_of(total) as f64 - ideal).abs() < 1.0 + 1e-9,
                    "share {} ideal {}", s.share_of(total), ideal);
            }
        }
    }
}

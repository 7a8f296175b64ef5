//! Change detection: E-divisive means (Matteson and James, 2014) with a permutation test, as
//! Apache Otava (formerly Hunter) does, and the gate's test of one new run against its
//! series' recent history. Pure functions of the values: no store, no clock.
//!
//! The false-positive rate is stated, not tuned: a split is kept only when the energy
//! statistic of the best split of its segment is exceeded by at most a share `alpha` of
//! random reorderings of the same values (the permutation p-value). On a series with no
//! change the first split is the only test made, so the chance of reporting any change point
//! at all is `alpha` (0.05 by default), whatever the values' distribution: the test adapts to
//! each series' noise because it is the series' own values that are shuffled.

/// How the detector decides.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Settings {
    /// The false-positive rate of each split: its permutation p-value must be at most this.
    pub alpha: f64,
    /// Random reorderings per test (199 gives p-values in steps of 0.005).
    pub permutations: usize,
    /// The fewest runs on each side of a change point.
    pub min_size: usize,
    /// Seed of the reorderings: the same series always gives the same answer.
    pub seed: u64,
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            alpha: 0.05,
            permutations: 199,
            min_size: 3,
            seed: 0x6c6f_6164_6d61_726b,
        }
    }
}

/// A change in a series: the run at `index` is the first of the new level.
#[derive(Debug, Clone, PartialEq)]
pub struct ChangePoint {
    pub index: usize,
    /// The permutation test's p-value of this split.
    pub p_value: f64,
    /// The mean of the runs since the change point before (or the start) up to this one.
    pub before_mean: f64,
    /// The mean from this run up to the next change point (or the end).
    pub after_mean: f64,
}

impl ChangePoint {
    /// The change relative to the level before: 0.1 is 10% higher.
    pub fn magnitude(&self) -> f64 {
        relative(self.before_mean, self.after_mean)
    }
}

/// `(after - before) / |before|`; 0 when both are 0, infinite from 0 to anything else.
pub fn relative(before: f64, after: f64) -> f64 {
    if before == 0.0 {
        if after == 0.0 {
            0.0
        } else {
            f64::INFINITY.copysign(after)
        }
    } else {
        (after - before) / before.abs()
    }
}

/// `(start, end, best split)`: a segment of the series and, once computed, its best split.
type Segment = (usize, usize, Option<(usize, f64)>);

/// The change points of `values`, in order.
pub fn e_divisive(values: &[f64], settings: &Settings) -> Vec<ChangePoint> {
    let min = settings.min_size.max(2);
    let mut rng = Rng(settings.seed | 1);
    // Segments [start, end) not yet known to hold no change, each with its best split.
    let mut open: Vec<Segment> = vec![(0, values.len(), None)];
    let mut found: Vec<(usize, f64)> = Vec::new();
    loop {
        for seg in open.iter_mut() {
            if seg.2.is_none() {
                seg.2 = best_split(&values[seg.0..seg.1], min);
            }
        }
        let Some(pick) = open
            .iter()
            .enumerate()
            .filter_map(|(i, s)| s.2.map(|(_, q)| (i, q)))
            .max_by(|a, b| a.1.total_cmp(&b.1))
            .map(|(i, _)| i)
        else {
            break;
        };
        let (start, end, Some((tau, q))) = open[pick] else {
            break;
        };
        let p = permutation_p(&values[start..end], q, min, settings.permutations, &mut rng);
        if p > settings.alpha {
            break;
        }
        found.push((start + tau, p));
        open.swap_remove(pick);
        open.push((start, start + tau, None));
        open.push((start + tau, end, None));
    }
    found.sort_by_key(|f| f.0);
    let bounds: Vec<usize> = std::iter::once(0)
        .chain(found.iter().map(|f| f.0))
        .chain(std::iter::once(values.len()))
        .collect();
    found
        .iter()
        .enumerate()
        .map(|(i, &(index, p_value))| ChangePoint {
            index,
            p_value,
            before_mean: mean(&values[bounds[i]..index]),
            after_mean: mean(&values[index..bounds[i + 2]]),
        })
        .collect()
}

pub fn mean(values: &[f64]) -> f64 {
    if values.is_empty() {
        return f64::NAN;
    }
    values.iter().sum::<f64>() / values.len() as f64
}

/// Sample standard deviation (n - 1).
pub fn stdev(values: &[f64]) -> f64 {
    if values.len() < 2 {
        return 0.0;
    }
    let m = mean(values);
    let ss: f64 = values.iter().map(|v| (v - m) * (v - m)).sum();
    (ss / (values.len() - 1) as f64).sqrt()
}

/// The split of `x` with the largest energy statistic Q, `(tau, Q)`: `x[..tau]` against
/// `x[tau..]`, each side at least `min` long.
fn best_split(x: &[f64], min: usize) -> Option<(usize, f64)> {
    let n = x.len();
    if n < 2 * min {
        return None;
    }
    let prefix = Prefix::of(x);
    (min..=n - min)
        .map(|tau| (tau, prefix.q(tau)))
        .max_by(|a, b| a.1.total_cmp(&b.1))
}

/// 2-D prefix sums of the distance matrix |x_i - x_j|, so any block's sum is O(1).
struct Prefix {
    n: usize,
    sums: Vec<f64>,
}

impl Prefix {
    fn of(x: &[f64]) -> Prefix {
        let n = x.len();
        let w = n + 1;
        let mut sums = vec![0.0; w * w];
        for i in 0..n {
            let mut row = 0.0;
            for j in 0..n {
                row += (x[i] - x[j]).abs();
                sums[(i + 1) * w + j + 1] = sums[i * w + j + 1] + row;
            }
        }
        Prefix { n, sums }
    }

    /// The sum over rows [r0, r1) and columns [c0, c1).
    fn block(&self, r0: usize, r1: usize, c0: usize, c1: usize) -> f64 {
        let w = self.n + 1;
        self.sums[r1 * w + c1] - self.sums[r0 * w + c1] - self.sums[r1 * w + c0]
            + self.sums[r0 * w + c0]
    }

    /// Q(tau) = mn/(m+n) · (2/(mn) Σ|x-y| − 1/C(m,2) Σ|x-x'| − 1/C(n,2) Σ|y-y'|).
    fn q(&self, tau: usize) -> f64 {
        let (m, k) = (tau as f64, (self.n - tau) as f64);
        let between = self.block(0, tau, tau, self.n);
        let left = self.block(0, tau, 0, tau) / 2.0;
        let right = self.block(tau, self.n, tau, self.n) / 2.0;
        let e =
            2.0 * between / (m * k) - left / (m * (m - 1.0) / 2.0) - right / (k * (k - 1.0) / 2.0);
        m * k / (m + k) * e
    }
}

/// The share of reorderings of `x` whose best split is at least as strong as `observed`
/// (counting the observed order itself, so never 0).
fn permutation_p(x: &[f64], observed: f64, min: usize, rounds: usize, rng: &mut Rng) -> f64 {
    let mut shuffled = x.to_vec();
    let mut at_least = 0usize;
    for _ in 0..rounds {
        rng.shuffle(&mut shuffled);
        let q = best_split(&shuffled, min).map_or(0.0, |(_, q)| q);
        if q >= observed * (1.0 - 1e-12) {
            at_least += 1;
        }
    }
    (at_least + 1) as f64 / (rounds + 1) as f64
}

/// xorshift64*: small, seeded, good enough to shuffle.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    fn shuffle(&mut self, x: &mut [f64]) {
        for i in (1..x.len()).rev() {
            let j = (self.next() % (i as u64 + 1)) as usize;
            x.swap(i, j);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Deterministic noise around `level`: a spread of ±`noise` (share of the level).
    fn noisy(level: f64, noise: f64, n: usize, seed: u64) -> Vec<f64> {
        let mut rng = Rng(seed | 1);
        (0..n)
            .map(|_| {
                // Sum of uniforms: near-normal, sd about noise * level.
                let u: f64 = (0..4)
                    .map(|_| (rng.next() >> 11) as f64 / (1u64 << 53) as f64)
                    .sum();
                level * (1.0 + noise * (u - 2.0) * 1.7)
            })
            .collect()
    }

    #[test]
    fn a_step_change_is_found_where_it_is_with_its_levels() {
        let mut x = noisy(100.0, 0.02, 30, 7);
        x.extend(noisy(120.0, 0.02, 30, 8));
        let found = e_divisive(&x, &Settings::default());
        assert_eq!(found.len(), 1, "{found:?}");
        let cp = &found[0];
        assert!((29..=31).contains(&cp.index), "{cp:?}");
        assert!(cp.p_value <= 0.05);
        assert!((cp.before_mean - 100.0).abs() < 2.0, "{cp:?}");
        assert!((cp.magnitude() - 0.2).abs() < 0.03, "{cp:?}");
    }

    #[test]
    fn two_changes_are_both_found() {
        let mut x = noisy(100.0, 0.01, 20, 1);
        x.extend(noisy(130.0, 0.01, 20, 2));
        x.extend(noisy(90.0, 0.01, 20, 3));
        let found: Vec<usize> = e_divisive(&x, &Settings::default())
            .iter()
            .map(|c| c.index)
            .collect();
        assert_eq!(found.len(), 2, "{found:?}");
        assert!((19..=21).contains(&found[0]) && (39..=41).contains(&found[1]));
    }

    #[test]
    fn noise_alone_rarely_gives_a_change_point() {
        // 100 series without a change: about alpha (5%) of them may show one.
        let false_alarms = (0..100)
            .filter(|seed| {
                !e_divisive(&noisy(100.0, 0.05, 40, *seed + 100), &Settings::default()).is_empty()
            })
            .count();
        assert!(
            false_alarms <= 12,
            "{false_alarms} of 100 noise-only series"
        );
    }

    #[test]
    fn too_short_a_series_has_no_change_point() {
        assert!(e_divisive(&[1.0, 100.0, 1.0, 100.0, 1.0], &Settings::default()).is_empty());
        assert!(e_divisive(&[], &Settings::default()).is_empty());
    }
}

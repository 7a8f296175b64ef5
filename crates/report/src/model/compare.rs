//! [`compare`]: a baseline run against a candidate, per metric, with a verdict that accounts
//! for run-to-run noise.
//!
//! The deltas come from the whole-run figures (histograms); whether a delta is real or noise
//! is decided on the per-second series of both runs with a two-sided Mann-Whitney U test
//! (exact up to 60 seconds in all, normal approximation with tie correction above). A metric
//! is flagged only when the test is significant (`p <= alpha`), the change is at least
//! `min_effect`, and the per-second medians move the same way as the whole-run delta.
//! Per-second series hold p50, p99 and max, so p90, p99 and p99.9 are judged on the
//! per-second p99 (the nearest tail the series keeps). With fewer than 4 whole seconds in a
//! run no test can reach p < 0.05, so short runs are never flagged: the output says why.
//!
//! Part of the model: imports `model` siblings and `units` only, never a renderer.

use std::fmt;

use serde::{Deserialize, Serialize};

use super::report::Report;
use crate::units::format_us;

/// The metrics compared, in display order.
pub const COMPARED: [Compared; 7] = [
    Compared::Rps,
    Compared::P50,
    Compared::P90,
    Compared::P99,
    Compared::P999,
    Compared::Max,
    Compared::ErrorRate,
];

/// Fewer whole seconds than this in either run: no verdict is possible.
pub const MIN_SECONDS: usize = 4;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Compared {
    Rps,
    P50,
    P90,
    P99,
    #[serde(rename = "p99.9")]
    P999,
    Max,
    ErrorRate,
}

impl Compared {
    pub fn name(self) -> &'static str {
        match self {
            Compared::Rps => "req/s",
            Compared::P50 => "p50",
            Compared::P90 => "p90",
            Compared::P99 => "p99",
            Compared::P999 => "p99.9",
            Compared::Max => "max",
            Compared::ErrorRate => "error rate",
        }
    }

    fn parse(name: &str) -> Option<Compared> {
        Some(match name.to_ascii_lowercase().as_str() {
            "rps" | "req/s" => Compared::Rps,
            "p50" => Compared::P50,
            "p90" => Compared::P90,
            "p99" => Compared::P99,
            "p99.9" => Compared::P999,
            "max" => Compared::Max,
            "errors" | "error_rate" | "error-rate" | "failed" => Compared::ErrorRate,
            _ => return None,
        })
    }

    /// Higher is better (req/s) or lower is better (latency, errors).
    fn higher_is_better(self) -> bool {
        self == Compared::Rps
    }

    /// The metric over the whole run; `None` for a latency of a run that measured none (every
    /// request failed), which must read "n/a", never 0 µs.
    fn whole(self, r: &Report) -> Option<f64> {
        let h = &r.totals.latency;
        let q = |q: f64| (!h.is_empty()).then(|| h.value_at_quantile(q) as f64);
        match self {
            Compared::Rps => Some(r.summary.rps),
            Compared::P50 => q(0.5),
            Compared::P90 => q(0.9),
            Compared::P99 => q(0.99),
            Compared::P999 => q(0.999),
            Compared::Max => q(1.0),
            Compared::ErrorRate => {
                let c = r.summary.requests.completed;
                Some(if c == 0 {
                    0.0
                } else {
                    r.failed() as f64 * 100.0 / c as f64
                })
            }
        }
    }

    fn per_second(self, r: &Report) -> Vec<f64> {
        let points = r
            .series
            .iter()
            .filter(|p| !p.warmup && (p.second + 1) as f64 <= r.run.elapsed_s + 1e-3);
        match self {
            Compared::Rps => points.map(|p| p.responses as f64).collect(),
            Compared::ErrorRate => points
                .filter(|p| p.responses + p.errors > 0)
                .map(|p| p.failed as f64 * 100.0 / (p.responses + p.errors) as f64)
                .collect(),
            _ => points
                .filter(|p| p.responses > 0)
                .map(|p| match self {
                    Compared::P50 => p.latency_p50_us,
                    Compared::Max => p.latency_max_us,
                    _ => p.latency_p99_us,
                } as f64)
                .collect(),
        }
    }

    pub(crate) fn show(self, v: Option<f64>) -> String {
        match (self, v) {
            (_, None) => "n/a".into(),
            (Compared::Rps, Some(v)) => format!("{v:.1}"),
            (Compared::ErrorRate, Some(v)) => format!("{v:.3}%"),
            (_, Some(v)) => format_us(v),
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    Better,
    Worse,
    NoSignificantChange,
}

/// One metric of a comparison.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct MetricDelta {
    pub metric: Compared,
    /// `None` (JSON `null`) for a latency of a run that measured none.
    pub baseline: Option<f64>,
    pub candidate: Option<f64>,
    /// Relative change in percent; `None` when the baseline is zero or either run measured
    /// nothing.
    pub delta_percent: Option<f64>,
    /// Two-sided Mann-Whitney p-value over the per-second values (1 when not testable).
    pub p_value: f64,
    pub verdict: Verdict,
}

impl MetricDelta {
    /// `faster`/`slower` for latency and req/s, `fewer errors`/`more errors` for errors.
    pub fn verdict_words(&self) -> &'static str {
        match (self.verdict, self.metric) {
            (Verdict::NoSignificantChange, _) => "no significant change",
            (Verdict::Better, Compared::ErrorRate) => "fewer errors",
            (Verdict::Worse, Compared::ErrorRate) => "more errors",
            (Verdict::Better, _) => "faster",
            (Verdict::Worse, _) => "slower",
        }
    }

    pub(crate) fn delta_text(&self) -> String {
        match (self.delta_percent, self.baseline, self.candidate) {
            (Some(d), _, _) => format!("{d:+.1}%"),
            (None, Some(_), Some(0.0)) => "0".into(),
            (None, Some(_), Some(_)) => "new".into(),
            (None, _, _) => "n/a".into(),
        }
    }
}

/// Settings of the significance test.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct CompareSettings {
    /// Significance level of the test (0.05).
    pub alpha: f64,
    /// Smallest change, in percent, worth flagging (5).
    pub min_effect_percent: f64,
}

impl Default for CompareSettings {
    fn default() -> Self {
        CompareSettings {
            alpha: 0.05,
            min_effect_percent: 5.0,
        }
    }
}

/// A comparison of two runs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Comparison {
    pub baseline_name: String,
    pub candidate_name: String,
    pub baseline_seconds: usize,
    pub candidate_seconds: usize,
    pub settings: CompareSettings,
    pub metrics: Vec<MetricDelta>,
    /// `--fail-if` gates, when given.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub gates: Vec<GateResult>,
    /// Why no verdict could be reached, if so.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
    /// Differences between the runs that `--force` overrode (see [`crate::differences`]):
    /// every rendering lists them above the figures.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub forced: Vec<String>,
}

impl Comparison {
    pub fn get(&self, metric: Compared) -> &MetricDelta {
        self.metrics
            .iter()
            .find(|m| m.metric == metric)
            .expect("every metric is compared")
    }

    pub fn gates_failed(&self) -> bool {
        self.gates.iter().any(|g| !g.passed)
    }
}

/// Compares `candidate` with `baseline`.
pub fn compare(
    baseline_name: &str,
    baseline: &Report,
    candidate_name: &str,
    candidate: &Report,
    settings: CompareSettings,
) -> Comparison {
    let base_seconds = Compared::Rps.per_second(baseline).len();
    let cand_seconds = Compared::Rps.per_second(candidate).len();
    let metrics = COMPARED
        .iter()
        .map(|&m| {
            let (base, cand) = (m.whole(baseline), m.whole(candidate));
            let Some((b, c)) = base.zip(cand) else {
                return MetricDelta {
                    metric: m,
                    baseline: base,
                    candidate: cand,
                    delta_percent: None,
                    p_value: 1.0,
                    verdict: Verdict::NoSignificantChange,
                };
            };
            let delta_percent = (b != 0.0).then(|| (c - b) * 100.0 / b);
            let (xs, ys) = (m.per_second(baseline), m.per_second(candidate));
            let p_value = if xs.len() >= MIN_SECONDS && ys.len() >= MIN_SECONDS {
                mann_whitney(&xs, &ys)
            } else {
                1.0
            };
            let effect = delta_percent.map_or(if c != 0.0 { f64::INFINITY } else { 0.0 }, f64::abs);
            let moved_same_way = (median(&ys) - median(&xs)).signum() == (c - b).signum();
            let verdict = if p_value <= settings.alpha
                && effect >= settings.min_effect_percent
                && moved_same_way
                && c != b
            {
                if (c > b) == m.higher_is_better() {
                    Verdict::Better
                } else {
                    Verdict::Worse
                }
            } else {
                Verdict::NoSignificantChange
            };
            MetricDelta {
                metric: m,
                baseline: base,
                candidate: cand,
                delta_percent,
                p_value,
                verdict,
            }
        })
        .collect();
    Comparison {
        baseline_name: baseline_name.to_string(),
        candidate_name: candidate_name.to_string(),
        baseline_seconds: base_seconds,
        candidate_seconds: cand_seconds,
        settings,
        metrics,
        gates: Vec::new(),
        forced: Vec::new(),
        note: (base_seconds.min(cand_seconds) < MIN_SECONDS).then(|| {
            format!("a run has fewer than {MIN_SECONDS} whole measured seconds: too few to tell a change from noise; run longer")
        }),
    }
}

fn median(v: &[f64]) -> f64 {
    if v.is_empty() {
        return 0.0;
    }
    let mut s = v.to_vec();
    s.sort_by(f64::total_cmp);
    let n = s.len();
    if n % 2 == 1 {
        s[n / 2]
    } else {
        (s[n / 2 - 1] + s[n / 2]) / 2.0
    }
}

/// Two-sided p-value of the Mann-Whitney U test (midranks for ties): exact by counting the
/// rank sums of every split up to 60 values in all, normal approximation above.
pub fn mann_whitney(xs: &[f64], ys: &[f64]) -> f64 {
    let (n1, n2) = (xs.len(), ys.len());
    if n1 == 0 || n2 == 0 {
        return 1.0;
    }
    let n = n1 + n2;
    let mut all: Vec<(f64, bool)> = xs
        .iter()
        .map(|&x| (x, true))
        .chain(ys.iter().map(|&y| (y, false)))
        .collect();
    all.sort_by(|a, b| a.0.total_cmp(&b.0));
    // Doubled midranks, so they stay integers.
    let mut ranks2 = vec![0usize; n];
    let mut ties_term = 0.0;
    let mut i = 0;
    while i < n {
        let mut j = i;
        while j + 1 < n && all[j + 1].0 == all[i].0 {
            j += 1;
        }
        let t = (j - i + 1) as f64;
        ties_term += t * t * t - t;
        for r in ranks2.iter_mut().take(j + 1).skip(i) {
            *r = i + j + 2; // (i+1 + j+1) / 2 * 2
        }
        i = j + 1;
    }
    let w2: usize = (0..n).filter(|&k| all[k].1).map(|k| ranks2[k]).sum();
    let mean2 = (n1 * (n + 1)) as f64; // doubled expected rank sum
    let observed = (w2 as f64 - mean2).abs();
    if n <= 60 {
        // counts[k][s]: ways to pick k values whose doubled ranks sum to s.
        let max_sum: usize = ranks2.iter().sum();
        let mut counts = vec![vec![0f64; max_sum + 1]; n1 + 1];
        counts[0][0] = 1.0;
        for &r in &ranks2 {
            for k in (1..=n1).rev() {
                let (lower, upper) = counts.split_at_mut(k);
                let (prev, cur) = (&lower[k - 1], &mut upper[0]);
                for s in (r..=max_sum).rev() {
                    cur[s] += prev[s - r];
                }
            }
        }
        let total: f64 = counts[n1].iter().sum();
        let extreme: f64 = counts[n1]
            .iter()
            .enumerate()
            .filter(|(s, _)| (*s as f64 - mean2).abs() >= observed - 1e-9)
            .map(|(_, c)| c)
            .sum();
        return (extreme / total).min(1.0);
    }
    let (n1f, n2f, nf) = (n1 as f64, n2 as f64, n as f64);
    let var = n1f * n2f / 12.0 * ((nf + 1.0) - ties_term / (nf * (nf - 1.0)));
    if var <= 0.0 {
        return 1.0;
    }
    let z = ((observed / 2.0) - 0.5).max(0.0) / var.sqrt();
    (2.0 * normal_tail(z)).min(1.0)
}

/// P(Z > z) for a standard normal (Abramowitz-Stegun 7.1.26 erfc, error < 1.5e-7).
fn normal_tail(z: f64) -> f64 {
    let x = z / std::f64::consts::SQRT_2;
    let t = 1.0 / (1.0 + 0.327_591_1 * x);
    let poly = t
        * (0.254_829_592
            + t * (-0.284_496_736
                + t * (1.421_413_741 + t * (-1.453_152_027 + t * 1.061_405_429))));
    0.5 * poly * (-x * x).exp()
}

/// A `--fail-if` gate: `METRIC>+10%` fails when the metric rose by more than 10% and the
/// change is significant; `rps<-5%` when req/s fell by more than 5% and significantly.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct FailIf {
    pub text: String,
    pub metric: Compared,
    /// True for `>`: fail on a rise beyond `percent`; false for `<`: on a fall below it.
    pub above: bool,
    pub percent: f64,
}

/// A `--fail-if` that cannot be understood.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("--fail-if {text:?}: {reason}; write METRIC>+N% or METRIC<-N% with METRIC one of rps, p50, p90, p99, p99.9, max, errors (e.g. 'p99>+10%', 'rps<-5%')")]
pub struct FailIfError {
    pub text: String,
    pub reason: String,
}

impl FailIf {
    pub fn parse(text: &str) -> Result<FailIf, FailIfError> {
        let err = |reason: &str| FailIfError {
            text: text.to_string(),
            reason: reason.to_string(),
        };
        let compact: String = text.chars().filter(|c| !c.is_whitespace()).collect();
        let at = compact.find(['<', '>']).ok_or_else(|| err("no < or >"))?;
        let (name, rest) = compact.split_at(at);
        let metric =
            Compared::parse(name).ok_or_else(|| err(&format!("unknown metric {name:?}")))?;
        let above = rest.starts_with('>');
        let value = rest[1..]
            .strip_suffix('%')
            .ok_or_else(|| err("the change must be a percentage"))?;
        let percent: f64 = value
            .parse()
            .ok()
            .filter(|v: &f64| v.is_finite())
            .ok_or_else(|| err(&format!("{value:?} is not a number")))?;
        Ok(FailIf {
            text: text.trim().to_string(),
            metric,
            above,
            percent,
        })
    }

    /// Fails only for a significant change beyond the limit: noise never fails a build.
    pub fn check(&self, c: &Comparison) -> GateResult {
        let m = c.get(self.metric);
        let delta = m.delta_percent.unwrap_or(match (m.baseline, m.candidate) {
            (Some(b), Some(c)) if c > b => f64::INFINITY,
            _ => 0.0,
        });
        let beyond = if self.above {
            delta > self.percent
        } else {
            delta < self.percent
        };
        let significant = m.verdict != Verdict::NoSignificantChange;
        GateResult {
            gate: self.text.clone(),
            passed: !(beyond && significant),
            detail: format!(
                "{} changed {}{}",
                m.metric.name(),
                m.delta_text(),
                match (beyond, significant) {
                    (true, true) => " (significant)",
                    (true, false) => " (beyond the limit, but within noise)",
                    _ => "",
                }
            ),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct GateResult {
    pub gate: String,
    pub passed: bool,
    pub detail: String,
}

impl fmt::Display for GateResult {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let word = if self.passed { "PASS" } else { "FAIL" };
        write!(f, "{word}  {}  ({})", self.gate, self.detail)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exact_mann_whitney_matches_known_values() {
        // Complete separation of 4 and 4: 2 of C(8,4) = 70 splits are as extreme.
        let p = mann_whitney(&[1.0, 2.0, 3.0, 4.0], &[5.0, 6.0, 7.0, 8.0]);
        assert!((p - 2.0 / 70.0).abs() < 1e-12, "{p}");
        // 3 and 3 can never go below 0.1.
        let p = mann_whitney(&[1.0, 2.0, 3.0], &[4.0, 5.0, 6.0]);
        assert!((p - 0.1).abs() < 1e-12, "{p}");
        // Interleaved: no evidence.
        let p = mann_whitney(&[1.0, 3.0, 5.0, 7.0], &[2.0, 4.0, 6.0, 8.0]);
        assert!(p > 0.5, "{p}");
        // All tied: p = 1.
        assert!((mann_whitney(&[5.0; 5], &[5.0; 6]) - 1.0).abs() < 1e-12);
    }

    #[test]
    fn normal_approximation_for_long_runs() {
        let xs: Vec<f64> = (0..40).map(|i| i as f64).collect();
        let shifted: Vec<f64> = (0..40).map(|i| i as f64 + 20.0).collect();
        let same: Vec<f64> = (0..40).map(|i| i as f64 + 0.5).collect();
        assert!(mann_whitney(&xs, &shifted) < 0.001);
        assert!(mann_whitney(&xs, &same) > 0.5);
        assert!((normal_tail(1.959_964) - 0.025).abs() < 1e-4);
    }

    #[test]
    fn fail_if_parses() {
        let f = FailIf::parse("p99>+10%").unwrap();
        assert_eq!((f.metric, f.above, f.percent), (Compared::P99, true, 10.0));
        let f = FailIf::parse("rps < -5%").unwrap();
        assert_eq!((f.metric, f.above, f.percent), (Compared::Rps, false, -5.0));
        assert!(FailIf::parse("p42>+10%").is_err());
        assert!(FailIf::parse("p99>10ms").is_err());
        assert!(FailIf::parse("p99").is_err());
    }
}

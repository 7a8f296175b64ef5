//! The result of a capacity search (`loadmark find`, a plan's `find:` step): the highest
//! open-loop rate that met every objective, the interval the repeated boundary steps give
//! it, why the search ended, the objective that broke first, and the latency-throughput
//! curve with its knee. JSON is its complete form; `capacity` is in requests (for a
//! scenario, iterations) per second. Part of the model: imports `model` siblings and
//! `units` only, never a renderer.

use serde::{Deserialize, Serialize};

/// Bumped when a field changes meaning, is renamed or removed.
pub const CAPACITY_SCHEMA_VERSION: u32 = 1;

/// Why the search ended.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum SearchEnd {
    /// Bisected down to the precision asked: `capacity` lies between the last rate that met
    /// every objective and the first that did not.
    Found,
    /// Every objective held at `--to`: the capacity is at least that; search higher.
    MetAtTo,
    /// The first rate (`--from`) already broke an objective: search lower.
    BrokeAtFrom,
    /// loadmark itself could not hold a rate (a saturated load thread, requests left late
    /// because of the client or the machine): the figures there measure the client, so
    /// nothing above the last good rate is reported as the server's.
    ClientLimited,
    /// The server stopped answering (every request failed, mostly to connect): the search
    /// ends with the last good rate and the error class.
    ServerDown,
    /// Stopped by a signal: the steps that ran are kept.
    Interrupted,
    /// The step budget ran out before the bisection converged (steps whose verdicts
    /// contradict each other from run to run: a noisy service or machine).
    StepLimit,
}

/// One step of the search: a rate held for a while, and what it measured.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct CurvePoint {
    /// The rate asked for (requests or iterations per second).
    pub offered: f64,
    /// Responses per second over the measured time.
    pub achieved: f64,
    pub p50_us: u64,
    pub p90_us: u64,
    pub p99_us: u64,
    /// Requests that ended in the measured time (responses and errors).
    pub completed: u64,
    /// Transport errors, and every response that is not 2xx/3xx on top of them.
    pub errors: u64,
    pub failed: u64,
    /// Every objective held here.
    pub met: bool,
    /// The objectives that broke here, each with the value seen (e.g. `p99 < 20ms (45.1ms)`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub broken: Vec<String>,
    /// A repeat of a boundary step (for the interval), not a step of the search proper.
    #[serde(default)]
    pub repeat: bool,
    /// Why this step's verdict does not count, or ended the search: `client late` (the
    /// step broke while loadmark was late or busy; it runs again), `server down`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

/// Where the capacity lies, from repeating the boundary steps.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct CapacityInterval {
    /// The highest rate that met every objective in most of its runs.
    pub low: f64,
    /// The lowest rate above `low` that broke one in most of its runs.
    pub high: f64,
    /// How many times each of the two ran, and in how many runs each broke an objective.
    pub runs_low: u32,
    pub broke_low: u32,
    pub runs_high: u32,
    pub broke_high: u32,
}

/// A whole capacity search.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct CapacityResult {
    pub schema_version: u32,
    /// Always `"capacity"`: tells this file from a run's result.
    pub kind: String,
    pub loadmark_version: String,
    pub url: String,
    /// What the rate counts: `requests` or `iterations` (a scenario).
    pub unit: String,
    /// The protocol spoken (`HTTP/1.1`, `HTTP/2`, ...).
    pub protocol: String,
    /// The objectives as written, e.g. `p99 < 20ms`.
    pub objectives: Vec<String>,
    /// The highest rate that met every objective, per second (`None`: none did).
    pub capacity: Option<f64>,
    /// What the server answered at that rate, per second.
    pub achieved_at_capacity: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub interval: Option<CapacityInterval>,
    pub end: SearchEnd,
    /// The verdict in plain words, with what to do next when the search could not decide.
    pub message: String,
    /// The objective(s) broken at the lowest rate that broke any.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub broke_first: Vec<String>,
    /// The offered rate at the knee of the latency-throughput curve (see [`knee`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub knee: Option<f64>,
    /// How long each step lasted and why (the count rule), in words.
    pub step_rule: String,
    /// Every step, in the order run.
    pub curve: Vec<CurvePoint>,
}

impl CapacityResult {
    /// The result as pretty JSON.
    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).expect("a capacity result serializes") + "\n"
    }

    /// Reads a saved result back.
    pub fn from_json(text: &str) -> Result<Self, serde_json::Error> {
        serde_json::from_str(text)
    }

    /// The curve's points by offered rate, lowest first (repeats included).
    pub fn sorted_curve(&self) -> Vec<&CurvePoint> {
        let mut points: Vec<&CurvePoint> = self.curve.iter().collect();
        points.sort_by(|a, b| a.offered.total_cmp(&b.offered));
        points
    }
}

/// The p99 multiple of the low-load p99 past which latency has left its floor.
pub const KNEE_LATENCY_FACTOR: f64 = 2.0;
/// The share of the offered rate below which the server no longer kept up.
pub const KNEE_THROUGHPUT_SHARE: f64 = 0.95;

/// The knee of the latency-throughput curve: the highest offered rate up to which every step
/// both kept up (achieved at least 95% of offered) and kept its p99 within twice the p99 of
/// the lowest rate. Past it, latency grows with the queue. `None` when no step left that
/// floor (no knee reached) or the curve is empty.
pub fn knee(curve: &[CurvePoint]) -> Option<f64> {
    let mut points: Vec<&CurvePoint> = curve.iter().filter(|p| p.note.is_none()).collect();
    points.sort_by(|a, b| a.offered.total_cmp(&b.offered));
    let floor = points.first()?.p99_us.max(1) as f64;
    let on_floor = |p: &CurvePoint| {
        p.p99_us as f64 <= floor * KNEE_LATENCY_FACTOR
            && p.achieved >= p.offered * KNEE_THROUGHPUT_SHARE
    };
    let first_off = points.iter().position(|p| !on_floor(p))?;
    (first_off > 0).then(|| points[first_off - 1].offered)
}

/// The objectives broken at the lowest offered rate that broke any.
pub fn broke_first(curve: &[CurvePoint]) -> Vec<String> {
    curve
        .iter()
        .filter(|p| !p.broken.is_empty())
        .min_by(|a, b| a.offered.total_cmp(&b.offered))
        .map(|p| p.broken.clone())
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn point(offered: f64, achieved: f64, p99_ms: u64, broken: &[&str]) -> CurvePoint {
        CurvePoint {
            offered,
            achieved,
            p50_us: 500,
            p90_us: 800,
            p99_us: p99_ms * 1000,
            completed: 1000,
            errors: 0,
            failed: 0,
            met: broken.is_empty(),
            broken: broken.iter().map(|s| s.to_string()).collect(),
            repeat: false,
            note: None,
        }
    }

    #[test]
    fn the_knee_is_the_last_rate_on_the_latency_floor_that_kept_up() {
        let curve = vec![
            point(1000.0, 1000.0, 2, &[]),
            point(8000.0, 7000.0, 90, &["p99 < 20ms (90ms)"]),
            point(2000.0, 2000.0, 3, &[]),
            point(4000.0, 3990.0, 4, &[]),
            point(6000.0, 5990.0, 12, &["errors < 1% (3%)"]),
        ];
        // 6000 has a p99 of 12 ms, six times the 2 ms floor: the knee is 4000.
        assert_eq!(knee(&curve), Some(4000.0));
        assert_eq!(broke_first(&curve), vec!["errors < 1% (3%)".to_string()]);
        // No step off the floor: no knee.
        assert_eq!(knee(&curve[..1]), None);
        // A server that did not keep up at the first rate has no knee on the curve either.
        assert_eq!(knee(&[point(1000.0, 500.0, 2, &[])]), None);
    }
}

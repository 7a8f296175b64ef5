//! Thresholds: pass/fail conditions on a run's figures, such as `p99<50ms`, `errors<1%` or
//! `rps>10000`, checked when the run ends.
//!
//! A threshold names a metric, a comparison and a value with its unit. A metric that does
//! not exist, a missing unit or a malformed value is a parse error, so a typo can never pass
//! silently. A latency threshold on a run without responses fails (there is nothing to
//! prove it held).
//!
//! Part of the model: imports `model` siblings and `units` only, never a renderer.

use std::fmt;

use serde::{Deserialize, Serialize};

use super::report::Report;
use super::scenario::ScenarioFigures;
use crate::units::format_us;
use loadmark_metrics::GRPC_CODES;

/// The metrics a threshold can name, listed in parse errors.
pub const THRESHOLD_METRICS: &str = "p50, p75, p90, p95, p99, p99.9, p99.99, min, max, mean (latency; value with a unit: us, ms, s), rps (responses per second), errors (transport errors: a count, or N% of completed requests), failed (errors plus non-2xx/3xx responses: count or %), dropped (open loop: count or % of requests due), checks (% of check evaluations that passed, or a count of failures), check:NAME (the same for the check named NAME), status:NAME (gRPC calls that ended with the status code NAME, e.g. status:UNAVAILABLE: a count, or N% of completed calls)";

/// What a threshold measures.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Metric {
    /// Latency at this percentile (0..=100).
    Percentile(f64),
    Min,
    Max,
    Mean,
    Rps,
    Errors,
    Failed,
    Dropped,
    /// Checks over every check: a pass rate in %, or a count of failed evaluations.
    Checks,
    /// One named check (see [`Threshold::check`]): pass rate in %, or failures.
    Check,
    /// gRPC calls that ended with one status code (see [`Threshold::status`]): a count, or
    /// a % of completed calls.
    Status,
}

/// How the observed value must compare with the limit.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub enum Op {
    #[serde(rename = "<")]
    Lt,
    #[serde(rename = "<=")]
    Le,
    #[serde(rename = ">")]
    Gt,
    #[serde(rename = ">=")]
    Ge,
}

impl Op {
    pub fn holds(self, actual: f64, limit: f64) -> bool {
        match self {
            Op::Lt => actual < limit,
            Op::Le => actual <= limit,
            Op::Gt => actual > limit,
            Op::Ge => actual >= limit,
        }
    }
}

/// The unit of a threshold's value.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Unit {
    /// Microseconds (written with us, µs, ms or s).
    Micros,
    /// A plain number (rps, or a count).
    Count,
    /// A percentage of the relevant total.
    Percent,
}

/// A parsed threshold.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Threshold {
    /// As the user wrote it.
    pub text: String,
    pub metric: Metric,
    pub op: Op,
    /// In `unit`: µs for latency, a number for rps and counts, 0..=100 for percent.
    pub limit: f64,
    pub unit: Unit,
    /// The check's name for `check:NAME`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub check: Option<String>,
    /// The gRPC status code's name for `status:NAME`, as `grpc/status.proto` spells it
    /// (`UNAVAILABLE`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<String>,
}

/// A threshold that cannot be understood.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ThresholdError {
    /// No comparison operator: write METRIC<VALUE, e.g. `p99<50ms`.
    #[error("threshold {0:?}: expected METRIC OP VALUE with OP one of <, <=, >, >= (e.g. 'p99<50ms', 'errors<1%', 'rps>10000')")]
    NoOperator(String),
    /// The metric name is not one loadmark measures.
    #[error("threshold {text:?}: unknown metric {metric:?}; known metrics: {THRESHOLD_METRICS}")]
    UnknownMetric { text: String, metric: String },
    /// `status:NAME` names no gRPC status code.
    #[error("threshold {text:?}: {name:?} is not a gRPC status code; status:NAME takes one of {}", GRPC_CODES.join(", "))]
    UnknownStatus { text: String, name: String },
    /// The value is not a number with a unit this metric accepts.
    #[error("threshold {text:?}: {reason}")]
    BadValue { text: String, reason: String },
}

impl Threshold {
    /// Parses `METRIC OP VALUE`, e.g. `p99<50ms`, `p99.9 <= 1s`, `errors<1%`, `rps>=10000`.
    pub fn parse(text: &str) -> Result<Threshold, ThresholdError> {
        let compact: String = text.chars().filter(|c| !c.is_whitespace()).collect();
        let at = compact
            .find(['<', '>'])
            .ok_or_else(|| ThresholdError::NoOperator(text.to_string()))?;
        let (name, rest) = compact.split_at(at);
        // `check:NAME` keeps the name's case; the name cannot hold spaces or < >.
        let check = name
            .strip_prefix("check:")
            .or_else(|| name.strip_prefix("CHECK:"))
            .map(str::to_string);
        if check.as_deref() == Some("") {
            return Err(ThresholdError::UnknownMetric {
                text: text.to_string(),
                metric: name.to_string(),
            });
        }
        // `status:NAME`: a gRPC code's name in any case (`status:unavailable`), or its number.
        let status = match name
            .strip_prefix("status:")
            .or_else(|| name.strip_prefix("STATUS:"))
        {
            Some(code) => Some(
                status_name(code).ok_or_else(|| ThresholdError::UnknownStatus {
                    text: text.to_string(),
                    name: code.to_string(),
                })?,
            ),
            None => None,
        };
        let (op, value) = if let Some(v) = rest.strip_prefix("<=") {
            (Op::Le, v)
        } else if let Some(v) = rest.strip_prefix(">=") {
            (Op::Ge, v)
        } else if let Some(v) = rest.strip_prefix('<') {
            (Op::Lt, v)
        } else {
            (Op::Gt, &rest[1..])
        };
        let metric = if check.is_some() {
            Some(Metric::Check)
        } else if status.is_some() {
            Some(Metric::Status)
        } else {
            parse_metric(&name.to_ascii_lowercase())
        };
        let metric = metric.ok_or_else(|| ThresholdError::UnknownMetric {
            text: text.to_string(),
            metric: name.to_string(),
        })?;
        let bad = |reason: &str| ThresholdError::BadValue {
            text: text.to_string(),
            reason: reason.to_string(),
        };
        let number = |s: &str| -> Result<f64, ThresholdError> {
            s.parse::<f64>()
                .ok()
                .filter(|v| v.is_finite() && *v >= 0.0)
                .ok_or_else(|| {
                    bad(&format!(
                        "{value:?} is not a non-negative number with a unit"
                    ))
                })
        };
        let (limit, unit) = match metric {
            Metric::Percentile(_) | Metric::Min | Metric::Max | Metric::Mean => {
                let (digits, scale) = if let Some(v) = value.strip_suffix("ms") {
                    (v, 1_000.0)
                } else if let Some(v) = value
                    .strip_suffix("us")
                    .or_else(|| value.strip_suffix("µs"))
                {
                    (v, 1.0)
                } else if let Some(v) = value.strip_suffix('s') {
                    (v, 1_000_000.0)
                } else {
                    return Err(bad("a latency needs a unit: us, ms or s (e.g. 50ms)"));
                };
                (number(digits)? * scale, Unit::Micros)
            }
            Metric::Rps => {
                if value.ends_with('%') {
                    return Err(bad("rps takes a number of responses per second, not a %"));
                }
                (
                    number(value.strip_suffix("/s").unwrap_or(value))?,
                    Unit::Count,
                )
            }
            Metric::Errors
            | Metric::Failed
            | Metric::Dropped
            | Metric::Checks
            | Metric::Check
            | Metric::Status => match value.strip_suffix('%') {
                Some(v) => {
                    let p = number(v)?;
                    if p > 100.0 {
                        return Err(bad("a percentage is at most 100%"));
                    }
                    (p, Unit::Percent)
                }
                None => (number(value)?, Unit::Count),
            },
        };
        Ok(Threshold {
            text: text.trim().to_string(),
            metric,
            op,
            limit,
            unit,
            check,
            status,
        })
    }

    /// The observed value in this threshold's unit, or `None` when the run has no data for
    /// it (no responses for a latency figure, no requests for a percentage).
    pub fn observe(&self, r: &Report) -> Option<f64> {
        let s = &r.summary;
        self.observe_in(&Figures {
            latency: &r.totals.latency,
            rps: s.rps,
            completed: s.requests.completed,
            errors: s.requests.errors,
            failed: r.failed(),
            dropped: s.dropped,
            checks: s.checks.as_ref(),
            grpc: r.totals.grpc.as_deref(),
        })
    }

    /// The observed value among `f`.
    fn observe_in(&self, f: &Figures<'_>) -> Option<f64> {
        let h = f.latency;
        let latency = |get: &dyn Fn() -> f64| (!h.is_empty()).then(get);
        let of = |count: u64, total: u64| match self.unit {
            Unit::Percent => (total > 0).then(|| count as f64 * 100.0 / total as f64),
            _ => Some(count as f64),
        };
        match self.metric {
            Metric::Percentile(p) => latency(&|| h.value_at_quantile(p / 100.0) as f64),
            Metric::Min => latency(&|| h.min() as f64),
            Metric::Max => latency(&|| h.max() as f64),
            Metric::Mean => latency(&|| h.mean()),
            Metric::Rps => Some(f.rps),
            Metric::Errors => of(f.errors, f.completed),
            Metric::Failed => of(f.failed, f.completed),
            Metric::Dropped => of(f.dropped, f.completed + f.dropped),
            // A run without gRPC calls has no data (fails): an HTTP run cannot prove it.
            Metric::Status => {
                let name = self.status.as_deref()?;
                of(f.grpc?.count(name), f.completed)
            }
            // A pass rate in %, a count of failures otherwise; no checks: no data (fails).
            Metric::Checks | Metric::Check => {
                let stats = f.checks?;
                let (passed, failed) = match &self.check {
                    Some(name) => {
                        let c = stats.get(name)?;
                        (c.passed, c.failed)
                    }
                    None => (stats.passed(), stats.evaluated() - stats.passed()),
                };
                match self.unit {
                    Unit::Percent => (passed + failed > 0)
                        .then(|| passed as f64 * 100.0 / (passed + failed) as f64),
                    _ => Some(failed as f64),
                }
            }
        }
    }

    /// Checks this threshold against a report.
    pub fn check(&self, r: &Report) -> ThresholdResult {
        self.result(self.observe(r), None)
    }

    /// Checks this threshold against one named scenario's figures.
    pub fn check_scenario(&self, name: &str, f: &ScenarioFigures) -> ThresholdResult {
        let actual = self.observe_in(&Figures {
            latency: &f.latency,
            rps: f.rps,
            completed: f.completed,
            errors: f.errors,
            failed: f.failed,
            dropped: f.dropped,
            checks: f.checks.as_ref(),
            grpc: None,
        });
        self.result(actual, Some(name))
    }

    fn result(&self, actual: Option<f64>, scenario: Option<&str>) -> ThresholdResult {
        ThresholdResult {
            threshold: self.text.clone(),
            passed: actual.is_some_and(|a| self.op.holds(a, self.limit)),
            actual: actual.map(|a| self.show(a)),
            scenario: scenario.map(str::to_string),
        }
    }

    fn show(&self, v: f64) -> String {
        match self.unit {
            Unit::Micros => format_us(v),
            Unit::Percent => format!("{v:.3}%"),
            Unit::Count if self.metric == Metric::Rps => format!("{v:.1}"),
            Unit::Count => format!("{v:.0}"),
        }
    }
}

/// A gRPC status code's name as `grpc/status.proto` spells it, from its name in any case or
/// its number (`unavailable`, `14`).
fn status_name(text: &str) -> Option<String> {
    let upper = text.to_ascii_uppercase();
    GRPC_CODES
        .iter()
        .enumerate()
        .find(|(code, name)| **name == upper || text.parse::<usize>() == Ok(*code))
        .map(|(_, name)| (*name).to_string())
}

fn parse_metric(name: &str) -> Option<Metric> {
    Some(match name {
        "min" => Metric::Min,
        "max" => Metric::Max,
        "mean" | "avg" => Metric::Mean,
        "rps" | "req/s" => Metric::Rps,
        "errors" | "error" => Metric::Errors,
        "failed" => Metric::Failed,
        "dropped" => Metric::Dropped,
        "checks" => Metric::Checks,
        _ => {
            let digits = name.strip_prefix('p')?;
            if digits.is_empty() || !digits.chars().all(|c| c.is_ascii_digit() || c == '.') {
                return None;
            }
            let p: f64 = digits.parse().ok()?;
            if !(0.0..=100.0).contains(&p) {
                return None;
            }
            Metric::Percentile(p)
        }
    })
}

/// The outcome of one threshold, as reports carry it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ThresholdResult {
    /// The threshold as written, e.g. `p99<50ms`.
    pub threshold: String,
    pub passed: bool,
    /// The observed value with its unit; `None` when the run had no data for it (a failure).
    pub actual: Option<String>,
    /// A named scenario's own threshold (plans' `scenarios.NAME.thresholds`): its name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scenario: Option<String>,
}

/// The figures a threshold reads, of the whole run or of one named scenario.
struct Figures<'a> {
    latency: &'a hdrhistogram::Histogram<u64>,
    rps: f64,
    completed: u64,
    errors: u64,
    failed: u64,
    dropped: u64,
    checks: Option<&'a loadmark_metrics::CheckStats>,
    /// gRPC runs only: calls by status code.
    grpc: Option<&'a loadmark_metrics::GrpcStats>,
}

impl ThresholdResult {
    /// The threshold as written, after its scenario's name when it is a scenario's own
    /// (`buy: p99<50ms`).
    pub fn label(&self) -> String {
        match &self.scenario {
            Some(name) => format!("{name}: {}", self.threshold),
            None => self.threshold.clone(),
        }
    }
}

impl fmt::Display for ThresholdResult {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}  {}  (actual {})",
            if self.passed { "PASS" } else { "FAIL" },
            self.label(),
            self.actual.as_deref().unwrap_or("no data")
        )
    }
}

/// Parses every threshold, all errors reported at once.
pub fn parse_thresholds(texts: &[String]) -> Result<Vec<Threshold>, Vec<ThresholdError>> {
    let (ok, bad): (Vec<_>, Vec<_>) = texts
        .iter()
        .map(|t| Threshold::parse(t))
        .partition(Result::is_ok);
    if bad.is_empty() {
        Ok(ok.into_iter().map(Result::unwrap).collect())
    } else {
        Err(bad.into_iter().map(|e| e.unwrap_err()).collect())
    }
}

/// Checks every threshold, then each named scenario's own (plans' `scenarios:`, parsed when
/// the plan was read); the results go into `report.thresholds`.
pub fn check_thresholds(thresholds: &[Threshold], report: &Report) -> Vec<ThresholdResult> {
    let mut results: Vec<ThresholdResult> = thresholds.iter().map(|t| t.check(report)).collect();
    for (named, section) in report.plan.scenarios.iter().zip(&report.summary.scenarios) {
        let empty = loadmark_metrics::ScenarioStats::default();
        let stats = report
            .totals
            .scenarios
            .iter()
            .find(|s| s.name.as_deref() == Some(named.name.as_str()))
            .unwrap_or(&empty);
        let figures = ScenarioFigures::of(stats, section.measured_s);
        for text in &named.thresholds {
            results.push(match Threshold::parse(text) {
                Ok(t) => t.check_scenario(&named.name, &figures),
                // Checked when the plan was read; a hand-edited result fails it, saying why.
                Err(e) => ThresholdResult {
                    threshold: text.clone(),
                    passed: false,
                    actual: Some(format!("not a threshold: {e}")),
                    scenario: Some(named.name.clone()),
                },
            });
        }
    }
    results
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_metrics_ops_and_units() {
        let t = Threshold::parse("p99<50ms").unwrap();
        assert_eq!(
            (t.metric, t.op, t.limit, t.unit),
            (Metric::Percentile(99.0), Op::Lt, 50_000.0, Unit::Micros)
        );
        let t = Threshold::parse(" p99.9 <= 1.5s ").unwrap();
        assert_eq!(
            (t.metric, t.op, t.limit),
            (Metric::Percentile(99.9), Op::Le, 1_500_000.0)
        );
        let t = Threshold::parse("errors<1%").unwrap();
        assert_eq!(
            (t.metric, t.limit, t.unit),
            (Metric::Errors, 1.0, Unit::Percent)
        );
        let t = Threshold::parse("failed<=10").unwrap();
        assert_eq!(
            (t.metric, t.op, t.unit),
            (Metric::Failed, Op::Le, Unit::Count)
        );
        let t = Threshold::parse("rps>10000").unwrap();
        assert_eq!((t.metric, t.op, t.limit), (Metric::Rps, Op::Gt, 10_000.0));
        assert_eq!(Threshold::parse("mean<800us").unwrap().limit, 800.0);
        assert_eq!(Threshold::parse("max<2s").unwrap().metric, Metric::Max);
        assert_eq!(Threshold::parse("dropped>=0").unwrap().op, Op::Ge);
    }

    #[test]
    fn check_thresholds_keep_the_name_and_take_percent_or_count() {
        let t = Threshold::parse("check:Login_OK > 99.9%").unwrap();
        assert_eq!(
            (t.metric, t.op, t.limit, t.unit, t.check.as_deref()),
            (Metric::Check, Op::Gt, 99.9, Unit::Percent, Some("Login_OK"))
        );
        let t = Threshold::parse("checks<=5").unwrap();
        assert_eq!(
            (t.metric, t.unit, t.check),
            (Metric::Checks, Unit::Count, None)
        );
        assert!(Threshold::parse("check:>1%").is_err());
        assert!(Threshold::parse("checks>101%").is_err());
    }

    #[test]
    fn status_thresholds_name_a_grpc_code_in_any_case_or_by_number() {
        let t = Threshold::parse("status:UNAVAILABLE < 0.1%").unwrap();
        assert_eq!(
            (t.metric, t.op, t.limit, t.unit, t.status.as_deref()),
            (
                Metric::Status,
                Op::Lt,
                0.1,
                Unit::Percent,
                Some("UNAVAILABLE")
            )
        );
        let t = Threshold::parse("status:deadline_exceeded<=3").unwrap();
        assert_eq!(
            (t.unit, t.limit, t.status.as_deref()),
            (Unit::Count, 3.0, Some("DEADLINE_EXCEEDED"))
        );
        assert_eq!(
            Threshold::parse("status:8<1%").unwrap().status.as_deref(),
            Some("RESOURCE_EXHAUSTED")
        );
        let e = Threshold::parse("status:UNAVAILBLE<1%").unwrap_err();
        assert!(
            matches!(&e, ThresholdError::UnknownStatus { name, .. } if name == "UNAVAILBLE"),
            "{e}"
        );
        let said = e.to_string();
        assert!(
            said.contains("not a gRPC status code") && said.contains("OK, CANCELLED, UNKNOWN"),
            "{said}"
        );
        assert!(Threshold::parse("status:17<1%").is_err());
        assert!(Threshold::parse("status:<1%").is_err());
        assert!(Threshold::parse("status:OK>150%").is_err());
    }

    #[test]
    fn typos_and_missing_units_are_errors() {
        for bad in [
            "p99",
            "latency<5ms",
            "p101<5ms",
            "px<5ms",
            "errrors<1%",
            "p99<50",
        ] {
            assert!(Threshold::parse(bad).is_err(), "{bad} parsed");
        }
        let e = Threshold::parse("p999<5ms").unwrap_err();
        assert!(e.to_string().contains("unknown metric"), "{e}");
        let e = Threshold::parse("p99<50").unwrap_err();
        assert!(e.to_string().contains("needs a unit"), "{e}");
        assert!(Threshold::parse("rps>5%").is_err());
        assert!(Threshold::parse("errors<150%").is_err());
        assert!(Threshold::parse("p99<-5ms").is_err());
        let all = parse_thresholds(&["p99<1ms".into(), "bogus<1".into(), "x".into()]).unwrap_err();
        assert_eq!(all.len(), 2);
    }
}

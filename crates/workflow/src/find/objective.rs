//! Service-level objectives of a capacity search (`--slo 'p99 < 20ms'`, a `find:` step's
//! `slo:`): the threshold syntax of `run --threshold`, limited to the bounds a rising load
//! can break, and the count rule that sets how many requests a step needs.

use loadmark_report::{Metric, Op, Threshold, ThresholdError, Unit};

/// The confidence of the count rule, and its two-sided normal quantile.
pub const CONFIDENCE: f64 = 0.95;
const Z: f64 = 1.959_964;

/// An objective that cannot be used, located: where it came from (`--slo #2`, a plan's
/// file:line:column), the column inside the text, and why.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{origin}: objective {text:?}, at character {column}: {reason}")]
pub struct ObjectiveError {
    pub origin: String,
    pub text: String,
    /// 1-based, in `text`.
    pub column: usize,
    pub reason: String,
}

/// Parses one objective. `origin` names where it was written, for the error.
pub fn parse_objective(text: &str, origin: &str) -> Result<Threshold, ObjectiveError> {
    let located = |column: usize, reason: String| ObjectiveError {
        origin: origin.to_string(),
        text: text.to_string(),
        column: column + 1,
        reason,
    };
    let op_at = text.find(['<', '>']);
    let t = Threshold::parse(text).map_err(|e| match &e {
        ThresholdError::NoOperator(_) => located(
            text.len(),
            "expected METRIC < VALUE, e.g. 'p99 < 20ms', 'p99.9 < 100ms', 'errors < 0.1%', 'rps > 1000'".into(),
        ),
        ThresholdError::UnknownMetric { metric, .. } => located(
            text.find(metric.as_str()).unwrap_or(0),
            format!("unknown metric {metric:?} (p50 … p99.9, mean, max, errors, failed, dropped, rps)"),
        ),
        ThresholdError::UnknownStatus { name, .. } => located(
            text.find(name.as_str()).unwrap_or(0),
            e.to_string(),
        ),
        ThresholdError::BadValue { reason, .. } => {
            let after = op_at.map_or(0, |at| {
                at + 1 + text[at + 1..].chars().take_while(|c| *c == '=' || c.is_whitespace()).count()
            });
            located(after, reason.clone())
        }
    })?;
    let upper = matches!(t.op, Op::Lt | Op::Le);
    let column = op_at.unwrap_or(0);
    match t.metric {
        Metric::Rps | Metric::Checks | Metric::Check if upper && t.unit != Unit::Count => {
            Err(located(
                column,
                "a rate or pass rate must be a lower bound: use > or >=".into(),
            ))
        }
        Metric::Rps if upper => Err(located(
            column,
            "rps must be a lower bound: 'rps > N'".into(),
        )),
        Metric::Rps | Metric::Checks | Metric::Check => Ok(t),
        _ if !upper => Err(located(
            column,
            "a rising load only makes this grow: an objective bounds it from above (< or <=)"
                .into(),
        )),
        _ => Ok(t),
    }
}

/// The share of requests in the tail an objective looks at: 1% for p99, 0.1% for p99.9 or
/// `errors < 0.1%`; `None` when it looks at no tail (a mean, a count, a rate).
fn tail_share(t: &Threshold) -> Option<f64> {
    let share = match (t.metric, t.unit) {
        (Metric::Percentile(p), _) => 1.0 - p / 100.0,
        (Metric::Errors | Metric::Failed | Metric::Dropped | Metric::Status, Unit::Percent) => {
            t.limit / 100.0
        }
        _ => return None,
    };
    (share > 0.0 && share < 1.0).then_some(share)
}

/// The requests a step needs so that the number of them in an objective's tail (share t)
/// is known to within ±50% at 95% confidence: n·t ≥ 2·z·√(n·t·(1−t)), that is
/// n ≥ 4·z²·(1−t)/t. For p99 that is 1,522 requests, and the true p99 then lies between the
/// measured p98.5 and p99.5 (a distribution-free order-statistic interval); for p99.9 or
/// `errors < 0.1%`, 15,351. The strictest objective sets it; 0 when none looks at a tail.
pub fn requests_needed(objectives: &[Threshold]) -> u64 {
    objectives
        .iter()
        .filter_map(tail_share)
        .map(|t| (4.0 * Z * Z * (1.0 - t) / t).ceil() as u64)
        .max()
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn objectives_parse_as_thresholds_bounded_the_right_way() {
        let t = parse_objective("p99 < 20ms", "--slo #1").unwrap();
        assert_eq!((t.metric, t.limit), (Metric::Percentile(99.0), 20_000.0));
        assert!(parse_objective("p99.9 < 100ms", "x").is_ok());
        assert!(parse_objective("errors < 0.1%", "x").is_ok());
        assert!(parse_objective("rps > 1000", "x").is_ok());
        let e = parse_objective("p99 > 20ms", "--slo #2").unwrap_err();
        assert_eq!(e.column, 5, "{e}");
        assert!(e
            .to_string()
            .starts_with("--slo #2: objective \"p99 > 20ms\", at character 5"));
        let e = parse_objective("p99 < 20xs", "--slo #1").unwrap_err();
        assert_eq!(e.column, 7, "{e}");
        let e = parse_objective("latency < 20ms", "plan.yaml:4:12").unwrap_err();
        assert_eq!(e.column, 1, "{e}");
        assert!(e.to_string().contains("unknown metric"), "{e}");
        assert_eq!(parse_objective("p99 20ms", "x").unwrap_err().column, 9);
        assert!(parse_objective("rps < 10", "x").is_err());
    }

    #[test]
    fn the_count_rule_follows_the_strictest_tail() {
        let p = |s| parse_objective(s, "x").unwrap();
        assert_eq!(requests_needed(&[p("p99 < 20ms")]), 1_522);
        assert_eq!(requests_needed(&[p("p99 < 20ms"), p("p99.9 < 1s")]), 15_351);
        assert_eq!(requests_needed(&[p("errors < 0.1%")]), 15_351);
        assert_eq!(requests_needed(&[p("mean < 5ms")]), 0);
    }
}

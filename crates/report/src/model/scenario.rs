//! A scenario's summary (issue 17): the iterations (completed, ended early, dropped,
//! their duration) and one row per step with its own requests, statuses, errors, latency,
//! checks and extraction failures. The summary is read from the totals' `ScenarioStats`, so a
//! merged report (added histograms) shows exact figures too.
//!
//! Part of the model: imports `model` siblings and `units` only, never a renderer.

use hdrhistogram::Histogram;
use loadmark_metrics::{Distribution, ErrorCounts, ScenarioStats, StatusCounts};
use serde::{Deserialize, Serialize};

/// One step's figures in a report.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct StepSummary {
    pub name: String,
    /// Requests of this step that ended (responses and errors).
    pub requests: u64,
    pub responses: u64,
    pub status: StatusCounts,
    pub errors: ErrorCounts,
    pub latency: Distribution,
    /// Checks of this step evaluated and failed (0 without checks).
    pub checks_passed: u64,
    pub checks_failed: u64,
    /// Responses from which a value could not be extracted (each ended its iteration).
    pub extraction_failures: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub first_extraction_failure: Option<String>,
}

/// A scenario run's iterations and steps.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ScenarioSummary {
    /// Iterations that ran every step.
    pub iterations: u64,
    /// Iterations per second over the measured time.
    pub iterations_per_s: f64,
    /// Iterations ended early by a failed request or a failed extraction.
    pub aborted: u64,
    /// Open model: iterations due when every user was busy (not started).
    pub dropped: u64,
    /// Duration of complete iterations (think times included).
    pub duration: Distribution,
    pub steps: Vec<StepSummary>,
}

impl ScenarioSummary {
    pub(crate) fn of(s: &ScenarioStats, measured_s: f64) -> Self {
        ScenarioSummary {
            iterations: s.iterations,
            iterations_per_s: if measured_s > 0.0 {
                s.iterations as f64 / measured_s
            } else {
                0.0
            },
            aborted: s.aborted,
            dropped: s.dropped,
            duration: Distribution::of(&s.duration),
            steps: s
                .steps
                .iter()
                .map(|st| StepSummary {
                    name: st.name.clone(),
                    requests: st.completed(),
                    responses: st.responses,
                    status: st.status.clone(),
                    errors: st.errors.clone(),
                    latency: Distribution::of(&st.latency),
                    checks_passed: st.checks.as_ref().map_or(0, |c| c.passed()),
                    checks_failed: st.checks.as_ref().map_or(0, |c| c.evaluated() - c.passed()),
                    extraction_failures: st.extraction_failures,
                    first_extraction_failure: st.first_extraction_failure.clone(),
                })
                .collect(),
        }
    }
}

/// One of several scenarios run at once (plans' `scenarios:`): its own requests, rate and
/// latency over its own time, its iterations and steps, and its own thresholds.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct NamedScenarioSummary {
    pub name: String,
    /// When it began, seconds from the run's start.
    pub start_s: f64,
    /// The measured time it ran (its own span within the run's measured time), seconds.
    pub measured_s: f64,
    /// Its requests that ended (responses and errors), over every step.
    pub requests: u64,
    /// Transport errors of its requests.
    pub errors: u64,
    /// Errors plus non-2xx/3xx responses.
    pub failed: u64,
    /// Its requests per second over `measured_s`.
    pub rps: f64,
    /// Latency of all its requests (every step's histogram added).
    pub latency: Distribution,
    /// Its iterations and steps, as a single scenario's.
    pub scenario: ScenarioSummary,
}

/// The figures thresholds read of one named scenario: the whole run's words, over its own
/// requests (so `p99<50ms` on a scenario means its requests' p99).
pub struct ScenarioFigures {
    pub latency: Histogram<u64>,
    pub completed: u64,
    pub errors: u64,
    pub failed: u64,
    /// Iterations due when every user was busy (open model).
    pub dropped: u64,
    pub rps: f64,
    pub checks: Option<loadmark_metrics::CheckStats>,
}

impl ScenarioFigures {
    pub fn of(s: &ScenarioStats, measured_s: f64) -> Self {
        let mut latency = loadmark_metrics::new_histogram();
        let mut checks: Option<loadmark_metrics::CheckStats> = None;
        let (mut completed, mut errors, mut failed) = (0, 0, 0);
        for st in &s.steps {
            latency.add(&st.latency).expect("same histogram bounds");
            completed += st.completed();
            errors += st.errors.total();
            failed += st.errors.total() + st.status.not_success();
            if let Some(c) = &st.checks {
                checks.get_or_insert_with(Default::default).merge(c);
            }
        }
        ScenarioFigures {
            latency,
            completed,
            errors,
            failed,
            dropped: s.dropped,
            rps: if measured_s > 0.0 {
                completed as f64 / measured_s
            } else {
                0.0
            },
            checks,
        }
    }
}

impl NamedScenarioSummary {
    /// `stats` of the scenario `named`, which ran `measured_s` of the run's measured time.
    pub(crate) fn of(
        named: &loadmark_plan::NamedScenario,
        stats: &ScenarioStats,
        measured_s: f64,
    ) -> Self {
        let f = ScenarioFigures::of(stats, measured_s);
        NamedScenarioSummary {
            name: named.name.clone(),
            start_s: named.start.as_secs_f64(),
            measured_s,
            requests: f.completed,
            errors: f.errors,
            failed: f.failed,
            rps: f.rps,
            latency: Distribution::of(&f.latency),
            scenario: ScenarioSummary::of(stats, measured_s),
        }
    }
}

/// The measured seconds of `named` in a run whose measured time is `measured` after a
/// warm-up of `warmup`: from its start (or the warm-up's end) to its end (or the run's).
/// One that ends by its iteration count ends when it last recorded (`until_us`).
pub(crate) fn measured_of(
    named: &loadmark_plan::NamedScenario,
    stats: &ScenarioStats,
    (warmup, measured): (std::time::Duration, std::time::Duration),
) -> f64 {
    let from = named.start.max(warmup);
    let run_end = warmup + measured;
    let end = named
        .ends_after()
        .unwrap_or(std::time::Duration::from_micros(stats.until_us));
    end.min(run_end).saturating_sub(from).as_secs_f64()
}

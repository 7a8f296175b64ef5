//! A scenario's summary (issue 17): the iterations (completed, ended early, dropped,
//! their duration) and one row per step with its own requests, statuses, errors, latency,
//! checks and extraction failures. The summary is read from the totals' `ScenarioStats`, so a
//! merged report (added histograms) shows exact figures too.
//!
//! Part of the model: imports `model` siblings and `units` only, never a renderer.

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

//! [`ScenarioStats`]: what a scenario run (issue 17) counts beyond its requests: each named
//! step's own latency histogram, statuses, errors and checks, extraction failures, and the
//! whole iteration's duration. Steps are matched by name, so merging adds them exactly.

use hdrhistogram::Histogram;
use serde::{Deserialize, Serialize};

use crate::checks::CheckStats;
use crate::error_kind::{ErrorCounts, ErrorKind};
use crate::snapshot::{hist_base64, new_histogram, StatusCounts};

/// One step's figures.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct StepStats {
    pub name: String,
    /// Responses of any status.
    pub responses: u64,
    pub status: StatusCounts,
    pub errors: ErrorCounts,
    /// Latency of this step's responses, µs (from the step's send, or in an open model from
    /// the iteration's intended start when the step is the first).
    #[serde(with = "hist_base64")]
    #[schemars(with = "String")]
    pub latency: Histogram<u64>,
    /// This step's checks (absent when it has none).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub checks: Option<CheckStats>,
    /// Responses from which a value could not be extracted: the iteration ended there.
    #[serde(default)]
    pub extraction_failures: u64,
    /// What the first extraction failure saw.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub first_extraction_failure: Option<String>,
}

impl StepStats {
    fn new(name: &str) -> Self {
        StepStats {
            name: name.to_string(),
            responses: 0,
            status: StatusCounts::default(),
            errors: ErrorCounts::default(),
            latency: new_histogram(),
            checks: None,
            extraction_failures: 0,
            first_extraction_failure: None,
        }
    }

    /// Requests of this step that ended (responses and errors).
    pub fn completed(&self) -> u64 {
        self.responses + self.errors.total()
    }

    fn merge(&mut self, other: &StepStats) {
        self.responses += other.responses;
        self.status.merge(&other.status);
        self.errors.merge(&other.errors);
        self.latency
            .add(&other.latency)
            .expect("same histogram bounds");
        if let Some(theirs) = &other.checks {
            self.checks
                .get_or_insert_with(Default::default)
                .merge(theirs);
        }
        self.extraction_failures += other.extraction_failures;
        if self.first_extraction_failure.is_none() {
            self.first_extraction_failure
                .clone_from(&other.first_extraction_failure);
        }
    }
}

/// A scenario's iterations and steps.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ScenarioStats {
    /// One of several scenarios run at once (plans' `scenarios:`): its name. Absent for a
    /// plan's single `scenario:`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// One of several scenarios: when it last recorded anything, µs from the run's start
    /// (so a scenario that ends by its iteration count is rated over the time it ran).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub until_us: u64,
    /// Iterations that ran every step.
    pub iterations: u64,
    /// Iterations ended early: a request failed (transport error) or an extraction failed.
    pub aborted: u64,
    /// Open model: iterations due when every virtual user was busy and the cap was reached.
    #[serde(default)]
    pub dropped: u64,
    /// Duration of the iterations that ran every step, µs (open model: from the intended
    /// start), think times included.
    #[serde(with = "hist_base64")]
    #[schemars(with = "String")]
    pub duration: Histogram<u64>,
    pub steps: Vec<StepStats>,
}

impl Default for ScenarioStats {
    fn default() -> Self {
        ScenarioStats {
            name: None,
            until_us: 0,
            iterations: 0,
            aborted: 0,
            dropped: 0,
            duration: new_histogram(),
            steps: Vec::new(),
        }
    }
}

/// How one request of a step ended, for [`ScenarioStats::record_step`].
pub enum StepOutcome<'a> {
    Response { status: u16, latency_us: u64 },
    Error(ErrorKind, &'a dyn std::fmt::Display),
}

impl ScenarioStats {
    /// An empty record of the scenario called `name` (plans' `scenarios:`).
    pub fn named(name: &str) -> Self {
        ScenarioStats {
            name: Some(name.to_string()),
            ..Default::default()
        }
    }

    /// The stats of step `index`, created (with the steps before it) when new.
    pub fn step(&mut self, index: usize, names: &[String]) -> &mut StepStats {
        while self.steps.len() <= index {
            let name = &names[self.steps.len()];
            self.steps.push(StepStats::new(name));
        }
        &mut self.steps[index]
    }

    pub fn record_step(&mut self, index: usize, names: &[String], outcome: StepOutcome<'_>) {
        let step = self.step(index, names);
        match outcome {
            StepOutcome::Response { status, latency_us } => {
                step.responses += 1;
                step.status.record(status);
                crate::record_us(&mut step.latency, latency_us);
            }
            StepOutcome::Error(kind, detail) => step.errors.record(kind, detail),
        }
    }

    pub fn get(&self, name: &str) -> Option<&StepStats> {
        self.steps.iter().find(|s| s.name == name)
    }

    /// Adds `other` into `self`, steps matched by name (new ones appended in their order).
    pub fn merge(&mut self, other: &ScenarioStats) {
        self.iterations += other.iterations;
        self.aborted += other.aborted;
        self.dropped += other.dropped;
        self.until_us = self.until_us.max(other.until_us);
        self.duration
            .add(&other.duration)
            .expect("same histogram bounds");
        for theirs in &other.steps {
            match self.steps.iter_mut().find(|s| s.name == theirs.name) {
                Some(mine) => mine.merge(theirs),
                None => self.steps.push(theirs.clone()),
            }
        }
    }
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// Where a scenario's figures go: the plan's single scenario, or one of its named ones.
#[derive(Debug, Clone, Copy)]
pub enum ScenarioSlot<'a> {
    Single,
    Named(&'a str),
}

/// Adds named scenarios' figures into `mine`, each matched by name (new ones appended).
pub fn merge_named(mine: &mut Vec<ScenarioStats>, theirs: &[ScenarioStats]) {
    for other in theirs {
        match mine.iter_mut().find(|m| m.name == other.name) {
            Some(m) => m.merge(other),
            None => mine.push(other.clone()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn steps_merge_by_name_exactly() {
        let names = vec!["login".to_string(), "list".to_string()];
        let mut a = ScenarioStats::default();
        a.record_step(
            1,
            &names,
            StepOutcome::Response {
                status: 200,
                latency_us: 100,
            },
        );
        a.record_step(0, &names, StepOutcome::Error(ErrorKind::Read, &"reset"));
        a.iterations = 1;
        let mut b = ScenarioStats::default();
        let other = vec!["list".to_string(), "open".to_string()];
        b.record_step(
            0,
            &other,
            StepOutcome::Response {
                status: 500,
                latency_us: 300,
            },
        );
        b.step(1, &other).extraction_failures = 2;
        b.aborted = 2;
        a.merge(&b);
        assert_eq!(a.steps.len(), 3);
        let list = a.get("list").unwrap();
        assert_eq!((list.responses, list.latency.len()), (2, 2));
        assert_eq!(list.status.not_success(), 1);
        assert_eq!(a.get("login").unwrap().completed(), 1);
        assert_eq!(a.get("open").unwrap().extraction_failures, 2);
        assert_eq!((a.iterations, a.aborted), (1, 2));
        let json = serde_json::to_string(&a).unwrap();
        assert_eq!(serde_json::from_str::<ScenarioStats>(&json).unwrap(), a);
    }
}

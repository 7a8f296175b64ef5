//! Several scenarios in one run (plans' `scenarios:`, as k6's): each a journey with its own
//! load model, start and length, and thresholds, all against the plan's target, on the same
//! worker threads, in one report with a section per scenario.
//!
//! ```yaml
//! scenarios:
//!   browse: {steps: [...], load: {stages: '5s:0->20,10s:20'}}
//!   buy:    {steps: [...], load: {iterations_per_second: 20, duration: 10s}, start: 5s}
//!   health: {steps: [{request: {url: /status}}], load: {users: 1, iterations: 100}}
//! ```
//!
//! The file form ([`NamedScenarioFile`]) is checked when the plan is read; each scenario
//! then becomes a [`NamedScenario`] in the [`Plan`], whose `load` and `stop` describe the
//! whole run. [`Plan::scenario_plans`] gives each scenario as the single-scenario plan the
//! engine already runs.

use std::time::Duration;

use indexmap::IndexMap;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::plan::{duration_text, Load, Plan, Stop};
use crate::scenario::ScenarioStepFile;

/// One scenario of a plan's `scenarios:`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct NamedScenarioFile {
    /// What each virtual user does in one iteration, as in a plan's `scenario:`.
    pub steps: Vec<ScenarioStepFile>,
    /// This scenario's load model and length; what is not here (threads, timeouts,
    /// `http2`, `cookies`) comes from the plan's `load:`, shared by every scenario.
    #[serde(default)]
    pub load: ScenarioLoadFile,
    /// When the scenario begins, from the run's start, in whole seconds (e.g. `10s`)
    /// [default: 0s].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub start: Option<String>,
    /// Pass/fail conditions on this scenario's own requests and iterations, as the plan's
    /// `thresholds` are on the whole run's (e.g. `[p99<50ms, errors<1%]`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub thresholds: Vec<String>,
}

/// A scenario's own load: how many users, on what model, for how long.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ScenarioLoadFile {
    /// Closed model: virtual users looping the journey; with `iterations_per_second`, the
    /// most users busy at once [default: 50 closed, 1000 open].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub users: Option<usize>,
    /// User counts over time (`30s:0->100,1m:100`), or with `iterations_per_second` the
    /// rates of iterations.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stages: Option<String>,
    /// Open model: iterations started per second on a schedule.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub iterations_per_second: Option<f64>,
    /// How long the scenario runs from its start, e.g. `30s` [default: 10s unless
    /// `iterations` or `stages`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub duration: Option<String>,
    /// Exactly this many iterations (closed model, or at the rate with
    /// `iterations_per_second`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub iterations: Option<u64>,
}

/// A scenario of a run with several, validated.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct NamedScenario {
    pub name: String,
    pub steps: Vec<ScenarioStepFile>,
    /// Its own load model (its `threads` are the run's).
    pub load: Load,
    /// When its load ends, counted from its own start.
    pub stop: Stop,
    /// When it begins, from the run's start (whole seconds, so its seconds line up with
    /// the run's).
    #[serde(with = "duration_text")]
    #[schemars(with = "String")]
    pub start: Duration,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub thresholds: Vec<String>,
}

impl NamedScenario {
    /// When its load ends, from the run's start (`None`: when its iterations are done).
    pub fn ends_after(&self) -> Option<Duration> {
        match self.stop {
            Stop::Duration(d) => Some(self.start + d),
            Stop::Requests(_) => None,
        }
    }
}

impl Plan {
    /// Each scenario of a plan with several, as the single-scenario plan the engine runs:
    /// the whole plan with the scenario's steps, load and stop (empty for other plans).
    pub fn scenario_plans(&self) -> Vec<(&NamedScenario, Plan)> {
        self.scenarios
            .iter()
            .map(|named| {
                let mut plan = self.clone();
                plan.scenarios = Vec::new();
                plan.scenario = Some(named.steps.clone());
                plan.load = named.load.clone();
                plan.stop = named.stop;
                (named, plan)
            })
            .collect()
    }

    /// The load and stop of a run made of `scenarios` on `threads` threads: as many
    /// connections as they may hold together, and the time the last one ends (or a count,
    /// when one ends by its iterations).
    pub fn whole_run_of(scenarios: &[NamedScenario], threads: usize) -> (Load, Stop) {
        let connections = scenarios
            .iter()
            .map(|s| s.load.max_connections())
            .sum::<usize>()
            .max(1);
        let load = Load::Closed {
            connections,
            threads,
        };
        let ends: Option<Vec<Duration>> = scenarios.iter().map(NamedScenario::ends_after).collect();
        let stop = match ends {
            Some(ends) => Stop::Duration(ends.into_iter().max().unwrap_or_default()),
            None => Stop::Requests(
                scenarios
                    .iter()
                    .map(|s| match s.stop {
                        Stop::Requests(n) => n,
                        Stop::Duration(_) => 0,
                    })
                    .sum(),
            ),
        };
        (load, stop)
    }
}

/// A plan file's `scenarios:`, by name, in the file's order.
pub type NamedScenarioFiles = IndexMap<String, NamedScenarioFile>;

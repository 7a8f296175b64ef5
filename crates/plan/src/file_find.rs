//! A plan's `find:` key: every step (each target, each swept combination) is a capacity
//! search under the same objectives instead of one run at a fixed load, so a stack
//! comparison reports each stack's capacity.
//!
//! ```yaml
//! find:
//!   slo: ['p99 < 5ms', 'errors < 0.1%']
//!   from: 1000
//!   to: 100000
//! ```
//!
//! Here the keys are read and checked, with file:line:column errors; the objectives are
//! kept as text with where each stands in the file, for the search (in the workflow crate,
//! which owns their syntax) to parse and to locate its own errors.

use std::time::Duration;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::file::PlanFile;
use crate::file_steps::{locate, PlanFileError};
use crate::text::parse_duration;

/// The first rate tried when a search names none, per second.
pub const FIND_FROM: f64 = 100.0;
/// The highest rate tried when a search names none.
pub const FIND_TO: f64 = 100_000.0;
/// Each rising step's multiplier when a search names none.
pub const FIND_FACTOR: f64 = 2.0;
/// How close (percent) the bisection brings its two rates when a search names none.
pub const FIND_PRECISION: f64 = 2.0;
/// Extra runs of each boundary rate when a search names none.
pub const FIND_REPEATS: u32 = 2;
/// The step budget when a search names none.
pub const FIND_MAX_STEPS: usize = 40;
/// The least measured time of a step when a search names none.
pub const FIND_HOLD: Duration = Duration::from_secs(5);
/// A step's warm-up when a search names none.
pub const FIND_WARMUP: Duration = Duration::from_secs(1);
/// The pause without load between steps when a search names none.
pub const FIND_COOLDOWN: Duration = Duration::from_secs(1);

/// `find:` as written: the same words as `loadmark find`'s flags.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct FindFile {
    /// Objectives every rate must meet, as `--slo` takes them, e.g. `['p99 < 20ms',
    /// 'errors < 0.1%']` (at least one).
    pub slo: Vec<String>,
    /// The first rate tried, requests (a scenario: iterations) per second [default: 100].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub from: Option<f64>,
    /// The highest rate tried [default: 100000].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub to: Option<f64>,
    /// Each rising step multiplies the rate by this [default: 2].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub factor: Option<f64>,
    /// The bisection stops when its two rates are this close, in percent [default: 2].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub precision: Option<f64>,
    /// The least measured time of each step, e.g. `5s` (longer when the objectives need
    /// more requests) [default: 5s].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hold: Option<String>,
    /// Load left out of each step's figures, whole seconds [default: 1s].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub warmup: Option<String>,
    /// No load between steps, so a queue left by an overloaded step drains [default: 1s].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cooldown: Option<String>,
    /// Extra runs of each of the two boundary rates, for the interval [default: 2].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub repeats: Option<u32>,
    /// At most this many steps in each search (0 counts as 1) [default: 40].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_steps: Option<usize>,
}

/// One objective of `find.slo`, and where it stands in the plan file.
#[derive(Debug, Clone, PartialEq)]
pub struct LocatedObjective {
    pub text: String,
    /// `plan.yaml:7:12`: the file, and the line and column where the objective's text
    /// begins.
    pub at: String,
}

/// `find:`, checked, its defaults filled in.
#[derive(Debug, Clone, PartialEq)]
pub struct FindSpec {
    pub slo: Vec<LocatedObjective>,
    pub from: f64,
    pub to: f64,
    pub factor: f64,
    /// A fraction: 0.02 for 2%.
    pub precision: f64,
    pub hold: Duration,
    pub warmup: Duration,
    pub cooldown: Duration,
    pub repeats: u32,
    /// At least 1 when the search runs.
    pub max_steps: usize,
}

/// The load keys a search sets itself, and what to write instead.
const OWN_KEYS: &[(&str, &str, &str)] = &[
    (
        "load",
        "rate",
        "the search sets the rate: find.from, find.to",
    ),
    (
        "load",
        "stages",
        "the search sets the rate: find.from, find.to",
    ),
    (
        "load",
        "iterations_per_second",
        "the search sets the rate: find.from, find.to",
    ),
    ("load", "duration", "each step's length is find.hold"),
    ("load", "requests", "each step's length is find.hold"),
    ("load", "iterations", "each step's length is find.hold"),
    ("load", "warmup", "each step's is find.warmup"),
    ("sweep", "rate", "the search sets the rate"),
];

/// Reads `file.find`, if any; `text` is the plan's YAML and `name` its file, for locations.
pub(crate) fn find_spec(
    file: &PlanFile,
    text: &str,
    name: &str,
    err: &dyn Fn(&[&str], String) -> PlanFileError,
) -> Result<Option<FindSpec>, PlanFileError> {
    let Some(f) = &file.find else {
        return Ok(None);
    };
    let l = &file.load;
    let given = [
        l.rate.is_some(),
        l.stages.is_some(),
        l.iterations_per_second.is_some(),
        l.duration.is_some(),
        l.requests.is_some(),
        l.iterations.is_some(),
        l.warmup.is_some(),
        file.sweep.rate.is_some(),
    ];
    for ((section, key, instead), given) in OWN_KEYS.iter().zip(given) {
        if given {
            return Err(err(
                &[section, key],
                format!("{section}.{key} with find: {instead}"),
            ));
        }
    }
    let refused = [
        (!file.thresholds.is_empty(), "thresholds", "with find: the objectives are find.slo"),
        (file.websocket.is_some(), "websocket", "with find: a capacity search raises a request rate; WebSocket plans are not searched yet"),
        (!file.scenarios.is_empty(), "scenarios", "with find: a capacity search drives one load; search one scenario at a time (scenario:)"),
    ];
    for (given, key, why) in refused {
        if given {
            return Err(err(&[key], format!("{key} {why}")));
        }
    }
    let duration = |key: &str, value: &Option<String>, default: Duration| match value {
        None => Ok(default),
        Some(v) => parse_duration(v).map_err(|_| {
            err(
                &["find", key],
                format!("find.{key}: {v:?} is not a duration; expected e.g. 500ms, 30s, 2m"),
            )
        }),
    };
    let spec = FindSpec {
        slo: objectives(&f.slo, text, name),
        from: f.from.unwrap_or(FIND_FROM),
        to: f.to.unwrap_or(FIND_TO),
        factor: f.factor.unwrap_or(FIND_FACTOR),
        precision: f.precision.unwrap_or(FIND_PRECISION) / 100.0,
        hold: duration("hold", &f.hold, FIND_HOLD)?,
        warmup: duration("warmup", &f.warmup, FIND_WARMUP)?,
        cooldown: duration("cooldown", &f.cooldown, FIND_COOLDOWN)?,
        repeats: f.repeats.unwrap_or(FIND_REPEATS),
        max_steps: f.max_steps.unwrap_or(FIND_MAX_STEPS),
    };
    spec.check()
        .map_err(|e| err(&["find", e.key], format!("find.{}: {}", e.key, e.reason)))?;
    Ok(Some(spec))
}

/// A value of a search that cannot be used: its key (`to`; the flag `--to`) and why.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{key}: {reason}")]
pub struct FindKeyError {
    pub key: &'static str,
    pub reason: String,
}

impl FindSpec {
    /// Whether the search can run as given: rates above zero and rising, a bisection that
    /// ends, a warm-up of whole seconds. `loadmark find` checks its flags with this too.
    pub fn check(&self) -> Result<(), FindKeyError> {
        let bad = |key: &'static str, reason: String| Err(FindKeyError { key, reason });
        if self.slo.is_empty() {
            return bad("slo", "at least one objective, e.g. 'p99 < 20ms'".into());
        }
        if !(self.from > 0.0 && self.from.is_finite()) {
            return bad(
                "from",
                format!("a rate above zero, e.g. 100, not {}", self.from),
            );
        }
        if !(self.to >= self.from && self.to.is_finite()) {
            return bad(
                "to",
                format!(
                    "a rate at least the first one ({}), not {}",
                    self.from, self.to
                ),
            );
        }
        if !(self.factor > 1.0 && self.factor.is_finite()) {
            return bad("factor", format!("above 1, e.g. 2, not {}", self.factor));
        }
        if !(self.precision > 0.0 && self.precision < 1.0) {
            return bad(
                "precision",
                format!(
                    "a percentage between 0 and 100, e.g. 2, not {}",
                    self.precision * 100.0
                ),
            );
        }
        if self.warmup.subsec_nanos() != 0 {
            return bad(
                "warmup",
                "whole seconds (the per-second series is aligned on them)".into(),
            );
        }
        Ok(())
    }
}

/// Each objective with the line and column of its text, searched from `find.slo` on (a
/// flow list on the key's line, or a block list below it); the key's own place when the
/// text is not found as written (an escaped string).
fn objectives(slo: &[String], text: &str, name: &str) -> Vec<LocatedObjective> {
    let (key_line, key_column) = locate(text, &["find", "slo"]);
    let mut from_line = key_line - 1;
    slo.iter()
        .map(|objective| {
            let found = text
                .lines()
                .enumerate()
                .skip(from_line)
                .find_map(|(i, line)| line.find(objective.as_str()).map(|c| (i, c)));
            let (line, column) = match found {
                Some((i, c)) => {
                    from_line = i;
                    (i + 1, c + 1)
                }
                None => (key_line, key_column),
            };
            LocatedObjective {
                text: objective.clone(),
                at: format!("{name}:{line}:{column}"),
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use crate::load_plan_text;

    const TARGETS: &str =
        "targets:\n  a: {url: 'http://127.0.0.1:1'}\n  b: {url: 'http://127.0.0.1:2'}\n";

    #[test]
    fn find_makes_every_step_a_search_with_its_objectives_located() {
        let text = format!(
            "{TARGETS}load: {{threads: 1, max_connections: 64}}\nfind:\n  slo:\n    - p99 < 5ms\n    - 'errors < 0.1%'\n  from: 500\n  to: 5000\n  hold: 2s\n  warmup: 0s\n"
        );
        let plan = load_plan_text(&text, "plan.yaml", 2).unwrap();
        let spec = plan.find.expect("a find spec");
        assert_eq!(spec.slo[0].text, "p99 < 5ms");
        assert_eq!(spec.slo[0].at, "plan.yaml:7:7");
        assert_eq!(spec.slo[1].at, "plan.yaml:8:8");
        assert_eq!((spec.from, spec.to, spec.factor), (500.0, 5000.0, 2.0));
        assert_eq!(spec.precision, 0.02);
        assert_eq!(spec.hold.as_secs(), 2);
        assert!(spec.warmup.is_zero());
        assert_eq!((spec.repeats, spec.max_steps), (2, 40));
        // One search per target, each step's plan the open loop at `from` with the pool
        // the plan gave.
        assert_eq!(plan.steps.len(), 2);
        match &plan.steps[1].plan.load {
            crate::Load::Open {
                rate,
                max_connections,
                threads,
                ..
            } => {
                assert_eq!(rate.stages[0].from, 500.0);
                assert_eq!((*max_connections, *threads), (64, 1));
            }
            other => panic!("{other:?}"),
        }
        // A flow list: located on the key's line.
        let text = format!("{TARGETS}find: {{slo: ['p99 < 5ms'], to: 900}}\n");
        let plan = load_plan_text(&text, "p.yaml", 2).unwrap();
        assert_eq!(plan.find.unwrap().slo[0].at, "p.yaml:4:15");
        assert!(load_plan_text(TARGETS, "p.yaml", 2).unwrap().find.is_none());
    }

    #[test]
    fn find_refuses_what_the_search_sets_and_bad_values_where_they_are() {
        let bad = |extra: &str| {
            load_plan_text(&format!("{TARGETS}{extra}"), "p.yaml", 2)
                .unwrap_err()
                .to_string()
        };
        // Each error where it is, said the way the reference words it.
        for (extra, said) in [
            (
                "load:\n  rate: 100\nfind: {slo: ['p99 < 5ms']}\n",
                "p.yaml:5:3: load.rate with find: the search sets the rate: find.from, find.to",
            ),
            (
                "sweep:\n  rate: [1, 2]\nfind: {slo: ['p99 < 5ms']}\n",
                "p.yaml:5:3: sweep.rate with find",
            ),
            (
                "thresholds: [p99<5ms]\nfind: {slo: ['p99 < 5ms']}\n",
                "p.yaml:4:1: thresholds with find: the objectives are find.slo",
            ),
            (
                "find:\n  slo: ['p99 < 5ms']\n  to: 10\n  from: 100\n",
                "p.yaml:6:3: find.to: a rate at least the first one (100), not 10",
            ),
            (
                "find:\n  slo: []\n",
                "p.yaml:5:3: find.slo: at least one objective, e.g. 'p99 < 20ms'",
            ),
            (
                "find:\n  slo: ['p99 < 5ms']\n  hold: 5 s\n",
                "p.yaml:6:3: find.hold: \"5 s\" is not a duration",
            ),
            (
                "find:\n  slo: ['p99 < 5ms']\n  warmup: 1500ms\n",
                "p.yaml:6:3: find.warmup: whole seconds",
            ),
        ] {
            let e = bad(extra);
            assert!(e.starts_with(said), "{extra:?}: {e}");
        }
        assert!(bad("find:\n  slo: ['p99 < 5ms']\n  form: 100\n").contains("unknown field `form`"));
    }
}

//! The plan file's `scenarios:` checked and turned into [`NamedScenario`]s: each one's steps
//! compiled (errors name the step's line under `scenarios.NAME.steps`), its load normalized
//! by the same [`Settings`] as a plan's, its start in whole seconds.

use std::time::Duration;

use crate::file::PlanFile;
use crate::file_scenario::{one_protocol_over_tls, refuse_beside_steps};
use crate::file_steps::{locate, PlanFileError};
use crate::plan::{Load, RequestSpec};
use crate::scenarios::NamedScenario;
use crate::settings::Settings;
use crate::target::Target;

/// Where item `index` of the list under `keys` starts (line, column), for errors.
fn locate_item(text: &str, keys: &[&str], index: usize) -> (usize, usize) {
    let (key_line, key_column) = locate(text, keys);
    let mut item_indent = None;
    let mut seen = 0;
    for (i, line) in text.lines().enumerate().skip(key_line) {
        let trimmed = line.trim_start();
        let indent = line.len() - trimmed.len();
        if trimmed.is_empty() || trimmed.starts_with('#') {
            continue;
        }
        if indent < key_column {
            break;
        }
        if trimmed.starts_with("- ") && *item_indent.get_or_insert(indent) == indent {
            if seen == index {
                return (i + 1, indent + 3);
            }
            seen += 1;
        }
    }
    (key_line, key_column)
}

/// A plan file's `scenarios:`, each checked and normalized; empty without one. `threads`
/// is the run's thread setting, `cores` its default.
pub(crate) fn named_scenarios_of(
    file: &PlanFile,
    text: &str,
    columns: &[String],
    base: &Settings,
    cores: usize,
    err: &dyn Fn(&[&str], String) -> PlanFileError,
) -> Result<Vec<NamedScenario>, PlanFileError> {
    if file.scenarios.is_empty() {
        return Ok(Vec::new());
    }
    refuse_beside_steps(file, err)?;
    let load = &file.load;
    for (key, given) in [
        ("users", load.users.is_some()),
        ("connections", load.connections.is_some()),
        ("rate", load.rate.is_some()),
        (
            "iterations_per_second",
            load.iterations_per_second.is_some(),
        ),
        ("stages", load.stages.is_some()),
        ("duration", load.duration.is_some()),
        ("iterations", load.iterations.is_some()),
        ("requests", load.requests.is_some()),
        ("max_connections", load.max_connections.is_some()),
    ] {
        if given {
            return Err(err(
                &["load", key],
                format!(
                    "load.{key}: with `scenarios:` each scenario sets its own load \
                     (scenarios.NAME.load); the plan's `load:` keeps what they share \
                     (threads, timeouts, http2, cookies, warmup)"
                ),
            ));
        }
    }
    for (key, given) in [
        ("connections", file.sweep.connections.is_some()),
        ("rate", file.sweep.rate.is_some()),
        ("pipeline", file.sweep.pipeline.is_some()),
    ] {
        if given {
            return Err(err(
                &["sweep", key],
                format!("sweep.{key}: a plan with `scenarios:` sets each scenario's load by name; it cannot sweep one for all"),
            ));
        }
    }
    // Any valid request will do: only the load and the stop are kept from these plans.
    let placeholder = RequestSpec {
        method: "GET".into(),
        url: Target::parse("http://127.0.0.1/").expect("a valid URL"),
        headers: Vec::new(),
        body: Vec::new(),
        keep_alive: true,
    };
    let mut named = Vec::new();
    for (name, scenario) in &file.scenarios {
        let at = |keys: &[&str], message: String| {
            let mut path = vec!["scenarios", name.as_str()];
            path.extend_from_slice(keys);
            err(&path, format!("scenarios.{name}: {message}"))
        };
        if name.is_empty() || name.chars().any(|c| c.is_control()) {
            return Err(at(&[], "a scenario's name must be printable text".into()));
        }
        let step_at = |i: usize, message: String| {
            let (line, column) = locate_item(text, &["scenarios", name, "steps"], i);
            PlanFileError {
                line,
                column,
                message: format!("scenarios.{name}: {message}"),
                ..err(&[], String::new())
            }
        };
        crate::scenario::Scenario::compile(&scenario.steps, columns)
            .map_err(|e| step_at(e.step, e.message))?;
        one_protocol_over_tls(file, &scenario.steps, &|i| step_at(i, String::new())).map_err(
            |mut e| {
                e.message = format!("scenarios.{name}: {}", e.message);
                e
            },
        )?;
        let l = &scenario.load;
        let duration = |key: &str, value: &Option<String>| {
            value
                .as_deref()
                .map(|v| {
                    crate::text::parse_duration(v).map_err(|_| {
                        at(
                            &["load", key],
                            format!("{key}: {v:?} is not a duration; expected e.g. 500ms, 30s, 2m"),
                        )
                    })
                })
                .transpose()
        };
        let start = match &scenario.start {
            Some(v) => crate::text::parse_duration(v)
                .ok()
                .filter(|d| d.subsec_nanos() == 0)
                .ok_or_else(|| {
                    at(
                        &["start"],
                        format!(
                            "start: {v:?}: expected whole seconds from the run's start, e.g. 10s"
                        ),
                    )
                })?,
            None => Duration::ZERO,
        };
        // A ramp's stages are user counts unless iterations_per_second makes them rates.
        let open = l.iterations_per_second.is_some();
        let ramp_from = (l.stages.is_some() && !open).then_some(0);
        let settings = Settings {
            connections: if open { None } else { l.users.or(ramp_from) },
            rate: l.iterations_per_second,
            stages: l.stages.clone(),
            max_connections: if open { l.users } else { None },
            threads: None,
            duration: duration("duration", &l.duration)?,
            requests: l.iterations,
            ..base.clone()
        };
        let plan = settings
            .to_plan(placeholder.clone(), cores)
            .map_err(|e| at(&["load"], e.to_string()))?;
        named.push(NamedScenario {
            name: name.clone(),
            steps: scenario.steps.clone(),
            load: plan.load,
            stop: plan.stop,
            start,
            thresholds: scenario.thresholds.clone(),
        });
    }
    Ok(named)
}

/// The run's thread count for `scenarios`: the plan's `load.threads`, else the cores, at
/// most the connections they may hold together.
pub(crate) fn run_threads(
    scenarios: &[NamedScenario],
    threads: Option<usize>,
    cores: usize,
) -> usize {
    let connections: usize = scenarios.iter().map(|s| s.load.max_connections()).sum();
    threads.unwrap_or(cores.min(connections.max(1))).max(1)
}

/// Makes `plan` the run of `scenarios`: its load and stop describe the whole run.
pub(crate) fn apply(plan: &mut crate::plan::Plan, scenarios: &[NamedScenario], threads: usize) {
    let (load, stop): (Load, _) = crate::plan::Plan::whole_run_of(scenarios, threads);
    plan.load = load;
    plan.stop = stop;
    plan.scenario = None;
    plan.scenarios = scenarios.to_vec();
}

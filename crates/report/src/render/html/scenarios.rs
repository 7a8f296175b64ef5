//! Charts over time per scenario, for plans that run several at once (`scenarios:`): each
//! scenario's requests per second and p99 latency, from the seconds' own per-scenario figures
//! (`SeriesPoint::scenarios`). Drawn like every chart over time (SVG, and uPlot over it on the
//! shared time cursor), so a scenario's second lines up with the run's and every step's.
//!
//! Imports the HTML renderer's chart helpers and step labels, never another format.

use super::chart::{per_step_chart, Line};
use super::interactive::{Charts, TimeChart};
use super::step_label;
use crate::model::Bundle;

/// Nothing when no step ran several scenarios.
pub(super) fn scenario_charts(o: &mut String, ix: &mut Charts, b: &Bundle) {
    if b.steps
        .iter()
        .all(|s| s.report.summary.scenarios.is_empty())
    {
        return;
    }
    let multi = b.steps.len() > 1;
    // Per step, one line per scenario (in the plan's order) of the figure `f` of its second;
    // a second in which the scenario recorded nothing is 0 requests but no latency.
    let lines = |f: &dyn Fn(&loadmark_metrics::ScenarioPoint) -> f64, when_idle: Option<f64>| {
        b.steps
            .iter()
            .map(|s| {
                let names = s.report.summary.scenarios.iter().map(|n| n.name.as_str());
                let lines = names
                    .map(|name| Line {
                        name: if multi {
                            format!("{} {name}", step_label(s))
                        } else {
                            name.to_string()
                        },
                        points: s
                            .report
                            .chart_series()
                            .iter()
                            .filter_map(|p| {
                                let value = match p.scenarios.iter().find(|x| x.name == name) {
                                    Some(x) if x.requests > 0 => Some(f(x)),
                                    _ => when_idle,
                                };
                                value.map(|v| (p.second as f64, v))
                            })
                            .collect(),
                    })
                    .collect();
                (step_label(s), lines)
            })
            .collect::<Vec<(String, Vec<Line>)>>()
    };
    const TIME: &str = "time since start (s)";
    let rps_title = "Requests per second by scenario";
    let rps = lines(&|x| x.requests as f64, Some(0.0));
    ix.per_step(
        &TimeChart {
            id: "scenario-rps",
            title: rps_title,
            x_label: TIME,
            y_label: "requests/s",
            unit: "/s",
            may_log: false,
        },
        &rps,
    );
    o.push_str(&per_step_chart(
        "scenario-rps",
        rps_title,
        TIME,
        "requests/s",
        rps,
    ));
    let p99_title = "p99 latency by scenario";
    let p99 = lines(&|x| x.latency_p99_us as f64 / 1000.0, None);
    ix.per_step(
        &TimeChart {
            id: "scenario-p99",
            title: p99_title,
            x_label: TIME,
            y_label: "latency (ms)",
            unit: "ms",
            may_log: true,
        },
        &p99,
    );
    o.push_str(&per_step_chart(
        "scenario-p99",
        p99_title,
        TIME,
        "latency (ms)",
        p99,
    ));
}

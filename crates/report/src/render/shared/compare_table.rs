//! A plan's `compare:` tables (one metric, rows by one key, columns by another), as data:
//! Markdown and HTML render the same tables.
//!
//! Imports `model` and `units` only, never a format's renderer.

use std::collections::BTreeSet;

use loadmark_plan::{CompareFile, CompareMetric};

use crate::model::{Bundle, BundleStep};
use crate::units::{format_pct, format_rate};

/// One table: `rows[i].1[j]` is the metric of the step with row `rows[i].0` and column
/// `columns[j]` (`—` when no step has both).
pub(crate) struct CompareTable {
    pub title: String,
    pub rows_key: String,
    pub columns_key: String,
    pub columns: Vec<String>,
    pub rows: Vec<(String, Vec<String>)>,
}

fn metric_value(step: &BundleStep, metric: CompareMetric) -> String {
    let s = &step.report.summary;
    let pct = |p: f64| format_pct(&s.latency, p);
    match metric {
        CompareMetric::Rps => format_rate(s.rps),
        CompareMetric::P50 => pct(50.0),
        CompareMetric::P90 => pct(90.0),
        CompareMetric::P99 => pct(99.0),
        CompareMetric::Capacity => match &step.capacity {
            // The objective that broke first says what limits that stack.
            Some(c) => {
                let capacity = c
                    .capacity
                    .map_or("none".into(), crate::render::shared::capacity::rate);
                match c.broke_first.as_slice() {
                    [] => capacity,
                    broke => format!("{capacity} ({})", broke.join("; ")),
                }
            }
            None => "—".into(),
        },
        CompareMetric::Errors => {
            let failed = step.report.failed();
            format!(
                "{:.2}%",
                failed as f64 * 100.0 / s.requests.completed.max(1) as f64
            )
        }
    }
}

fn metric_name(metric: CompareMetric) -> &'static str {
    match metric {
        CompareMetric::Rps => "req/s",
        CompareMetric::P50 => "latency p50",
        CompareMetric::P90 => "latency p90",
        CompareMetric::P99 => "latency p99",
        CompareMetric::Errors => "failed requests",
        CompareMetric::Capacity => "capacity req/s (objective that broke first)",
    }
}

/// The tables of `c`: one per combination of the swept values that are neither rows nor
/// columns.
pub(crate) fn comparison_tables(b: &Bundle, c: &CompareFile) -> Vec<CompareTable> {
    let mut tables = Vec::new();

    let label_of = |step: &BundleStep, key: &str| -> Option<String> {
        if key == "target" {
            return Some(step.target.clone());
        }
        if let Some((_, v)) = step.params.iter().find(|(k, _)| k == key) {
            return Some(v.clone());
        }
        b.targets
            .iter()
            .find(|t| t.name == step.target)
            .and_then(|t| {
                t.labels
                    .iter()
                    .find(|(k, _)| k == key)
                    .map(|(_, v)| v.clone())
            })
    };
    // One table per combination of the other swept values.
    let rest = |s: &BundleStep| -> Vec<(String, String)> {
        s.params
            .iter()
            .filter(|(k, _)| k != "target" && *k != c.rows && *k != c.columns)
            .cloned()
            .collect()
    };
    let groups: BTreeSet<Vec<(String, String)>> = b.steps.iter().map(rest).collect();
    let ordered = |key: &str| {
        let mut seen: Vec<String> = Vec::new();
        for s in &b.steps {
            if let Some(v) = label_of(s, key) {
                if !seen.contains(&v) {
                    seen.push(v);
                }
            }
        }
        seen
    };
    let rows = ordered(&c.rows);
    let cols = ordered(&c.columns);
    for group in groups {
        let title = c
            .title
            .clone()
            .unwrap_or_else(|| format!("{}: {} by {}", metric_name(c.metric), c.rows, c.columns));
        let suffix = if group.is_empty() {
            String::new()
        } else {
            format!(
                " ({})",
                group
                    .iter()
                    .map(|(k, v)| format!("{k}={v}"))
                    .collect::<Vec<_>>()
                    .join(", ")
            )
        };
        let mut table = CompareTable {
            title: format!("{title}{suffix}"),
            rows_key: c.rows.clone(),
            columns_key: c.columns.clone(),
            columns: cols.clone(),
            rows: Vec::new(),
        };
        for r in &rows {
            let cells: Vec<String> = cols
                .iter()
                .map(|col| {
                    b.steps
                        .iter()
                        .find(|s| {
                            label_of(s, &c.rows).as_ref() == Some(r)
                                && label_of(s, &c.columns).as_ref() == Some(col)
                                && rest(s) == group
                        })
                        .map_or("—".to_string(), |s| metric_value(s, c.metric))
                })
                .collect();
            table.rows.push((r.clone(), cells));
        }
        tables.push(table);
    }
    tables
}

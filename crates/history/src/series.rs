//! Series: the runs that measure the same thing over time. A series is identified by the
//! plan hash, the step, the target, and the tags the reader chooses (`--by env`): tags that
//! change every run (a commit) are not part of it unless asked.

use std::collections::BTreeMap;

use crate::detect::{e_divisive, ChangePoint, Settings};
use crate::record::MetricInfo;
use crate::record::RunInfo;
use crate::store::StoredRun;

/// What identifies a series.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct SeriesKey {
    pub plan_hash: String,
    pub step: Option<i64>,
    pub params: String,
    pub target: String,
    /// The chosen tags' values (a missing tag is empty).
    pub tags: Vec<(String, String)>,
}

impl SeriesKey {
    pub fn of(run: &RunInfo, by: &[String]) -> SeriesKey {
        SeriesKey {
            plan_hash: run.plan_hash.clone(),
            step: run.step,
            params: run.params.clone(),
            target: run.target.clone(),
            tags: by
                .iter()
                .map(|k| (k.clone(), run.tags.get(k).cloned().unwrap_or_default()))
                .collect(),
        }
    }

    /// One line: `plan 1a2b3c4d5e6f · step 2 (c=100) · http://h/ · env=staging`.
    pub fn label(&self) -> String {
        let mut parts = vec![format!("plan {}", short(&self.plan_hash))];
        if let Some(step) = self.step {
            parts.push(if self.params.is_empty() {
                format!("step {step}")
            } else {
                format!("step {step} ({})", self.params)
            });
        }
        parts.push(self.target.clone());
        for (k, v) in &self.tags {
            parts.push(format!("{k}={v}"));
        }
        parts.join(" · ")
    }

    /// The chosen tags as `k=v` words.
    pub fn tags_text(&self) -> String {
        self.tags
            .iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect::<Vec<_>>()
            .join(" ")
    }
}

/// A hash short enough for a line: its first 12 hex digits.
pub fn short(hash: &str) -> &str {
    &hash[..hash.len().min(12)]
}

/// The runs grouped by series, each series oldest first, the series in the order of their
/// first run.
pub fn group<'a>(runs: &'a [StoredRun], by: &[String]) -> Vec<(SeriesKey, Vec<&'a StoredRun>)> {
    let mut order: Vec<SeriesKey> = Vec::new();
    let mut groups: BTreeMap<SeriesKey, Vec<&StoredRun>> = BTreeMap::new();
    for run in runs {
        let key = SeriesKey::of(run, by);
        if !groups.contains_key(&key) {
            order.push(key.clone());
        }
        groups.entry(key).or_default().push(run);
    }
    order
        .into_iter()
        .map(|k| {
            let runs = groups.remove(&k).unwrap_or_default();
            (k, runs)
        })
        .collect()
}

/// One metric of one series over time, with its change points.
#[derive(Debug, Clone)]
pub struct Trend<'a> {
    pub series: SeriesKey,
    pub metric: &'static MetricInfo,
    /// The runs that have this metric, oldest first, and their values.
    pub runs: Vec<&'a StoredRun>,
    pub values: Vec<f64>,
    pub change_points: Vec<ChangePoint>,
}

impl Trend<'_> {
    /// The change point at position `i` of `runs`, if one is there.
    pub fn change_at(&self, i: usize) -> Option<&ChangePoint> {
        self.change_points.iter().find(|c| c.index == i)
    }
}

/// Every series' trend of every metric asked, change points detected with `settings`.
pub fn trends<'a>(
    runs: &'a [StoredRun],
    by: &[String],
    metrics: &[&'static MetricInfo],
    settings: &Settings,
) -> Vec<Trend<'a>> {
    let mut out = Vec::new();
    for (series, members) in group(runs, by) {
        for metric in metrics {
            let (runs, values): (Vec<&StoredRun>, Vec<f64>) = members
                .iter()
                .filter_map(|r| r.metrics.get(metric.name).map(|v| (*r, *v)))
                .filter(|(_, v)| v.is_finite())
                .unzip();
            let change_points = e_divisive(&values, settings);
            out.push(Trend {
                series: series.clone(),
                metric,
                runs,
                values,
                change_points,
            });
        }
    }
    out
}

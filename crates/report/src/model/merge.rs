//! [`merge_reports`]: several reports (e.g. one per load-generating machine, run at the same
//! time against one target) added into one.
//!
//! Histograms and counters add exactly, so every percentile of the merged report is the
//! percentile of all samples together; percentiles are never averaged. The series add per
//! second index (seconds since each run's start). The result does not depend on the order of
//! the inputs: they are put in a canonical order first.
//!
//! Part of the model: imports `model` siblings and `units` only, never a renderer.

use std::time::{Duration, UNIX_EPOCH};

use loadmark_metrics::{SeriesPoint, Snapshot, Totals};

use super::alike::{differences, Purpose};
use super::report::{Report, RunFacts};

/// Reports could not be merged.
#[derive(Debug, thiserror::Error)]
pub enum MergeError {
    /// Nothing to merge: pass at least one report.
    #[error("no reports to merge")]
    Empty,
    /// The reports measure different things (another URL, protocol or load model): adding
    /// them would give numbers of nothing. Merge runs of one plan only, or pass `--force`.
    #[error("these reports do not measure the same thing: {}", .0.join("; "))]
    Differ(Vec<String>),
    /// Segments of a split run that do not make one whole run: missing, twice, or from
    /// another plan. Merge every segment of one run, or pass `--allow-partial` for missing ones.
    #[error("{0}")]
    Split(super::split::SplitProblem),
}

/// Adds `reports` into one report.
///
/// Counters, status codes, errors and the HDR histograms are summed. The runs are taken to
/// have run side by side (several clients at once), so the measured time is the longest one
/// and req/s is the sum of all responses over it. Per-second p50/p99 of the merged series
/// cannot be exact (per-second histograms are not saved): they are the highest of the
/// inputs' values, an upper bound; per-second maximum latency is exact.
pub fn merge_reports(reports: &[Report]) -> Result<Report, MergeError> {
    let names: Vec<String> = (1..=reports.len()).map(|i| format!("report {i}")).collect();
    merge_reports_with(reports, &names, false)
}

/// How `merge` treats what does not fit.
#[derive(Debug, Clone, Copy, Default)]
pub struct MergeOptions {
    /// Merge reports that measure different things (each difference becomes a finding).
    pub force: bool,
    /// Merge the segments present when some are missing; the result is marked PARTIAL.
    pub allow_partial: bool,
}

/// [`merge_reports`], with the inputs named (`names[i]` for `reports[i]`, e.g. file names)
/// in the refusal; `force` merges reports that differ anyway and records each difference as
/// a health finding of the merged report, so its every rendering says what was forced.
pub fn merge_reports_with(
    reports: &[Report],
    names: &[String],
    force: bool,
) -> Result<Report, MergeError> {
    merge_with_options(
        reports,
        names,
        MergeOptions {
            force,
            allow_partial: false,
        },
    )
}

/// [`merge_reports_with`] for segments of split runs too: segments must all belong to one
/// run and plan (never forced), each once, none missing unless `allow_partial`.
pub fn merge_with_options(
    reports: &[Report],
    names: &[String],
    options: MergeOptions,
) -> Result<Report, MergeError> {
    let force = options.force;
    if reports.is_empty() {
        return Err(MergeError::Empty);
    }
    let split = super::split::check_and_join(reports, names, options.allow_partial)
        .map_err(MergeError::Split)?;
    let name = |i: usize| {
        names
            .get(i)
            .cloned()
            .unwrap_or_else(|| format!("report {}", i + 1))
    };
    let differences: Vec<String> = reports
        .iter()
        .enumerate()
        .skip(1)
        .flat_map(|(i, r)| differences(Purpose::Merge, (&name(0), &name(i)), &reports[0], r))
        .collect();
    if !differences.is_empty() && !force {
        return Err(MergeError::Differ(differences));
    }
    // Canonical order, so plan, environment and addresses do not depend on argument order.
    let mut sorted: Vec<(String, &Report)> = reports
        .iter()
        .map(|r| (serde_json::to_string(r).expect("a Report serializes"), r))
        .collect();
    sorted.sort_by(|a, b| a.0.cmp(&b.0));
    let sorted: Vec<&Report> = sorted.into_iter().map(|(_, r)| r).collect();
    let first = sorted[0];

    let mut snapshot = Snapshot::default();
    let mut series: Vec<SeriesPoint> = Vec::new();
    let (mut warmup_completed, mut in_flight) = (0, 0);
    for r in &sorted {
        snapshot.merge(&r.totals);
        warmup_completed += r.summary.requests.warmup_completed;
        in_flight += r.summary.requests.in_flight_at_end;
        for p in &r.series {
            let i = p.second as usize;
            while series.len() <= i {
                series.push(empty_point(series.len() as u64, p.warmup));
            }
            add_point(&mut series[i], p);
        }
    }
    let secs = |f: fn(&Report) -> f64| sorted.iter().map(|r| f(r)).fold(0.0, f64::max);
    let sum = |f: fn(&Report) -> f64| sorted.iter().map(|r| f(r)).sum::<f64>();
    let mut addrs: Vec<&str> = sorted.iter().map(|r| r.run.target_addr.as_str()).collect();
    addrs.sort_unstable();
    addrs.dedup();
    let facts = RunFacts {
        started_at: UNIX_EPOCH,
        elapsed: Duration::from_secs_f64(secs(|r| r.run.elapsed_s)),
        measured: Duration::from_secs_f64(secs(|r| r.run.measured_s)),
        interrupted: sorted.iter().any(|r| r.run.interrupted),
        client_cpu_user: Duration::from_secs_f64(sum(|r| r.run.client_cpu.user_s)),
        client_cpu_system: Duration::from_secs_f64(sum(|r| r.run.client_cpu.system_s)),
        busiest_worker: secs(|r| r.run.client_cpu.busiest_worker),
        target_addr: addrs.join(","),
        contention: None,
    };
    let totals = Totals {
        snapshot,
        warmup_completed,
        in_flight,
        series,
    };
    let mut merged = Report::new(&first.plan, &facts, totals, first.environment.clone());
    let mut proxies: Vec<&str> = sorted
        .iter()
        .filter_map(|r| r.run.proxy.as_deref())
        .collect();
    proxies.sort_unstable();
    proxies.dedup();
    merged.run.proxy = (!proxies.is_empty()).then(|| proxies.join(", "));
    merged.run.started_at = sorted
        .iter()
        .map(|r| r.run.started_at.clone())
        .min()
        .unwrap_or_default();
    merged.loadmark_version = first.loadmark_version.clone();
    merged.summary.protocol = super::protocol::ProtocolSummary::merged(&sorted);
    for d in differences {
        merged.run.health.findings.push(format!(
            "merged with --force although the reports differ in {d}"
        ));
    }
    if let Some(split) = split {
        merged
            .run
            .health
            .findings
            .extend(super::split::findings(&split));
        merged.split = Some(split);
    }
    Ok(merged)
}

fn empty_point(second: u64, warmup: bool) -> SeriesPoint {
    SeriesPoint::empty(second, warmup)
}

fn add_point(into: &mut SeriesPoint, p: &SeriesPoint) {
    into.warmup |= p.warmup;
    into.responses += p.responses;
    into.errors += p.errors;
    into.failed += p.failed;
    into.bytes_read += p.bytes_read;
    into.connections_opened += p.connections_opened;
    into.latency_p50_us = into.latency_p50_us.max(p.latency_p50_us);
    into.latency_p99_us = into.latency_p99_us.max(p.latency_p99_us);
    into.latency_max_us = into.latency_max_us.max(p.latency_max_us);
    into.messages_sent += p.messages_sent;
    into.messages_received += p.messages_received;
    // Each scenario's second as the whole run's: counts added, latencies the highest.
    for theirs in &p.scenarios {
        match into.scenarios.iter_mut().find(|s| s.name == theirs.name) {
            Some(mine) => {
                mine.requests += theirs.requests;
                mine.failed += theirs.failed;
                mine.iterations += theirs.iterations;
                mine.latency_p50_us = mine.latency_p50_us.max(theirs.latency_p50_us);
                mine.latency_p99_us = mine.latency_p99_us.max(theirs.latency_p99_us);
                mine.latency_max_us = mine.latency_max_us.max(theirs.latency_max_us);
            }
            None => into.scenarios.push(theirs.clone()),
        }
    }
}

//! `loadmark history` and `--record` (issue 38): the CLI side of `loadmark_history`. The
//! store is opened before a run (a bad store is refused before any load is spent) and
//! written after it; a recording that fails is loud and fails the exit code, and never costs
//! the run's own result file.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context, Result};
use loadmark_history::{
    detect::Settings, gate, metric, render, Location, MetricInfo, NewRun, SeriesKey, Store,
    StoreError, StoredRun,
};

use crate::args::{
    CompareRunsArgs, DetectArgs, DetectFlags, GateArgs, HistoryArgs, HistoryCommand, HistoryFormat,
    HistoryImportArgs, ListArgs, RecordFlags, Selection, TrendArgs,
};
use crate::output::{print_out, write_atomic};
use crate::UsageError;

/// `--store`, else `$LOADMARK_STORE`, else the user's data directory.
fn location(flag: Option<&str>) -> Result<Location> {
    if let Some(store) = flag {
        return Ok(Location::parse(store));
    }
    if let Some(store) = std::env::var("LOADMARK_STORE")
        .ok()
        .filter(|s| !s.is_empty())
    {
        return Ok(Location::parse(&store));
    }
    loadmark_history::default_location().ok_or_else(|| {
        UsageError(
            "no history store: give --store FILE (neither $HOME nor $XDG_DATA_HOME is set)".into(),
        )
        .into()
    })
}

/// Opens the store; a file or database that is not a loadmark store, or one of a newer
/// schema, is the user's to fix (exit 2).
fn open(location: &Location) -> Result<Store> {
    Store::open(location).map_err(|e| match e {
        StoreError::NotADatabase { .. }
        | StoreError::Foreign { .. }
        | StoreError::TooNew { .. } => UsageError(e.to_string()).into(),
        e => anyhow::Error::new(e).context("opening the history store"),
    })
}

/// The store a run will be recorded in, opened before the run.
pub struct Recorder {
    store: Store,
    tags: BTreeMap<String, String>,
}

impl Recorder {
    /// `None` without --record (nor --store or --tag).
    pub fn before_run(flags: &RecordFlags) -> Result<Option<Recorder>> {
        if !flags.wanted() {
            return Ok(None);
        }
        let store = open(&location(flags.store.as_deref())?)?;
        Ok(Some(Recorder {
            store,
            tags: flags.tags.iter().cloned().collect(),
        }))
    }

    /// Records a run's report. `saved`: the JSON result file the run wrote, if any; when the
    /// recording fails without one, the result is saved to a new file so it is not lost.
    /// Returns whether it was recorded (the error is printed).
    pub fn record_report(self, report: &loadmark_report::Report, saved: Option<&Path>) -> bool {
        let run = NewRun::of_report(report, &self.tags);
        let fallback = || {
            let stamp: String = report
                .run
                .started_at
                .chars()
                .filter(|c| c.is_ascii_alphanumeric())
                .collect();
            let path = PathBuf::from(format!("loadmark-result-{stamp}.json"));
            write_atomic(&path, &loadmark_report::render_json(report)).map(|_| path)
        };
        self.record(&[run], saved, fallback)
    }

    /// Records every step of a bench bundle, written to `saved` already.
    pub fn record_bundle(self, bundle: &loadmark_report::Bundle, saved: &Path) -> bool {
        let runs = NewRun::of_bundle(bundle, &self.tags);
        self.record(&runs, Some(saved), || Ok(saved.to_path_buf()))
    }

    fn record(
        mut self,
        runs: &[NewRun],
        saved: Option<&Path>,
        fallback: impl FnOnce() -> Result<PathBuf>,
    ) -> bool {
        let store = self.store.location().to_string();
        match self.store.insert(runs) {
            Ok(done) => {
                let ids: Vec<String> = done.ids.iter().map(|i| i.to_string()).collect();
                eprintln!(
                    "loadmark: recorded in {store} as run{} {}",
                    if ids.len() == 1 { "" } else { "s" },
                    if ids.is_empty() {
                        "(already stored)".into()
                    } else {
                        ids.join(", ")
                    }
                );
                true
            }
            Err(e) => {
                let kept = match saved {
                    Some(path) => Ok(path.to_path_buf()),
                    None => fallback(),
                };
                let kept = match kept {
                    Ok(path) => format!(
                        "the result is in {} (`loadmark history import {}` records it later)",
                        path.display(),
                        path.display()
                    ),
                    Err(w) => format!("and the result could not be saved either: {w:#}"),
                };
                eprintln!("loadmark: error: recording the run failed: {e}; {kept}");
                false
            }
        }
    }
}

pub fn history(args: &HistoryArgs) -> Result<ExitCode> {
    match &args.what {
        HistoryCommand::List(a) => list(a),
        HistoryCommand::Trend(a) => trend(a),
        HistoryCommand::Detect(a) => detect(a),
        HistoryCommand::Gate(a) => gate(a),
        HistoryCommand::Import(a) => import(a),
        HistoryCommand::Compare(a) => compare(a),
    }
}

/// The selected runs of the store, oldest first.
fn selected(sel: &Selection) -> Result<(Store, Vec<StoredRun>)> {
    let mut store = open(&location(sel.store.as_deref())?)?;
    let runs = store.runs()?;
    let cutoff = sel
        .since
        .map(|age| loadmark_report::rfc3339(std::time::SystemTime::now() - age));
    let plan_hash = match &sel.plan {
        Some(path) => Some(loadmark_history::plan_file_hash(
            &std::fs::read_to_string(path).map_err(|e| {
                UsageError(format!("--plan {}: cannot read it: {e}", path.display()))
            })?,
        )),
        None => None,
    };
    let keep = |r: &StoredRun| {
        cutoff
            .as_ref()
            .is_none_or(|c| r.started_at.as_str() >= c.as_str())
            && plan_hash.as_ref().is_none_or(|h| &r.plan_hash == h)
            && sel.tags.iter().all(|(k, v)| r.tags.get(k) == Some(v))
            && sel
                .target
                .as_ref()
                .is_none_or(|t| r.target.contains(t.as_str()))
            && sel.step.as_ref().is_none_or(|s| step_matches(r, s))
    };
    Ok((store, runs.into_iter().filter(keep).collect()))
}

/// `--step 2` is step 2; `--step connections=100` (or `'connections=100 rate=5'`) the steps with those
/// parameters.
fn step_matches(run: &StoredRun, wanted: &str) -> bool {
    if let Ok(n) = wanted.trim().parse::<i64>() {
        return run.step == Some(n);
    }
    let have: Vec<&str> = run.params.split_whitespace().collect();
    wanted
        .split([' ', ','])
        .filter(|w| !w.is_empty())
        .all(|w| have.contains(&w))
}

fn metrics(names: &[String], default: &[&str]) -> Result<Vec<&'static MetricInfo>> {
    let names: Vec<&str> = if names.is_empty() {
        default.to_vec()
    } else {
        names.iter().map(String::as_str).collect()
    };
    names
        .iter()
        .map(|n| {
            metric(n).ok_or_else(|| {
                let known: Vec<&str> = loadmark_history::METRICS.iter().map(|m| m.name).collect();
                UsageError(format!(
                    "--metric {n}: no such metric; one of {}",
                    known.join(", ")
                ))
                .into()
            })
        })
        .collect()
}

fn settings(flags: &DetectFlags) -> Settings {
    Settings {
        alpha: flags.alpha,
        permutations: flags.permutations.max(19),
        ..Settings::default()
    }
}

fn list(args: &ListArgs) -> Result<ExitCode> {
    let (store, runs) = selected(&args.selection)?;
    let p99 = metric("p99").expect("p99 is a metric");
    let rps = metric("rps").expect("rps is a metric");
    let by = &args.selection.by;
    let value = |r: &StoredRun, m: &MetricInfo| {
        r.metrics
            .get(m.name)
            .map_or("-".to_string(), |v| render::format_value(m, *v))
    };
    let tags = |r: &StoredRun| {
        r.tags
            .iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect::<Vec<_>>()
            .join(" ")
    };
    let out = match args.format.unwrap_or(HistoryFormat::Text) {
        HistoryFormat::Json => {
            let rows: Vec<serde_json::Value> = runs
                .iter()
                .map(|r| {
                    serde_json::json!({
                        "id": r.id, "started_at": r.started_at, "recorded_at": r.recorded_at,
                        "plan_hash": r.plan_hash, "step": r.step, "params": r.params,
                        "target": r.target, "loadmark_version": r.loadmark_version,
                        "tags": r.tags, "metrics": r.metrics, "source": r.source,
                    })
                })
                .collect();
            serde_json::to_string_pretty(&rows)? + "\n"
        }
        HistoryFormat::Csv => {
            let mut o = String::from("id,started_at,series,tags,p99_us,rps\n");
            for r in &runs {
                let q = |s: String| format!("\"{}\"", s.replace('"', "\"\""));
                o.push_str(&format!(
                    "{},{},{},{},{},{}\n",
                    r.id,
                    r.started_at,
                    q(SeriesKey::of(r, by).label()),
                    q(tags(r)),
                    r.metrics
                        .get("p99")
                        .map_or(String::new(), |v| v.to_string()),
                    r.metrics
                        .get("rps")
                        .map_or(String::new(), |v| v.to_string()),
                ));
            }
            o
        }
        HistoryFormat::Text | HistoryFormat::Html => {
            let mut o = format!(
                "{} run{} in {}\n",
                runs.len(),
                if runs.len() == 1 { "" } else { "s" },
                store.location()
            );
            for (key, members) in loadmark_history::group(&runs, by) {
                o.push_str(&format!("series: {}\n", key.label()));
                for r in members {
                    o.push_str(&format!(
                        "  {:>6}  {:<20}  p99 {:>9}  rps {:>10}  {}\n",
                        r.id,
                        r.started_at.get(..19).unwrap_or(&r.started_at),
                        value(r, p99),
                        value(r, rps),
                        tags(r)
                    ));
                }
            }
            o
        }
    };
    print_out(out)?;
    Ok(ExitCode::SUCCESS)
}

fn trend(args: &TrendArgs) -> Result<ExitCode> {
    let metrics = metrics(&args.metrics, &["p99", "rps"])?;
    let (_, runs) = selected(&args.selection)?;
    let trends =
        loadmark_history::trends(&runs, &args.selection.by, &metrics, &settings(&args.detect));
    let format = match (&args.output, args.format) {
        (_, Some(f)) => f,
        (Some(path), None) => match path.extension().and_then(|e| e.to_str()) {
            Some("html" | "htm") => HistoryFormat::Html,
            Some("csv") => HistoryFormat::Csv,
            Some("json") => HistoryFormat::Json,
            _ => HistoryFormat::Text,
        },
        (None, None) => HistoryFormat::Text,
    };
    let out = match format {
        HistoryFormat::Text => render::table(&trends),
        HistoryFormat::Csv => render::csv(&trends),
        HistoryFormat::Html => render::html(&trends, "loadmark history: trends"),
        HistoryFormat::Json => serde_json::to_string_pretty(&trends_json(&trends))? + "\n",
    };
    crate::gate::write_or_print(args.output.as_deref(), &out)?;
    Ok(ExitCode::SUCCESS)
}

fn trends_json(trends: &[loadmark_history::Trend<'_>]) -> serde_json::Value {
    trends
        .iter()
        .map(|t| {
            serde_json::json!({
                "series": t.series.label(),
                "metric": t.metric.name,
                "runs": t.runs.iter().zip(&t.values).map(|(r, v)| serde_json::json!({
                    "id": r.id, "started_at": r.started_at, "value": v,
                })).collect::<Vec<_>>(),
                "change_points": t.change_points.iter().map(|c| serde_json::json!({
                    "run": t.runs[c.index].id, "before_mean": c.before_mean,
                    "after_mean": c.after_mean, "magnitude": c.magnitude(), "p_value": c.p_value,
                })).collect::<Vec<_>>(),
            })
        })
        .collect()
}

fn detect(args: &DetectArgs) -> Result<ExitCode> {
    let metrics = metrics(&args.metrics, &["p50", "p99", "rps", "error_rate"])?;
    let (_, runs) = selected(&args.selection)?;
    let s = settings(&args.detect);
    let trends = loadmark_history::trends(&runs, &args.selection.by, &metrics, &s);
    let out = match args.format.unwrap_or(HistoryFormat::Text) {
        HistoryFormat::Json => serde_json::to_string_pretty(&trends_json(&trends))? + "\n",
        HistoryFormat::Csv => {
            let mut o = String::from(
                "series,metric,run,started_at,before_mean,after_mean,magnitude,p_value\n",
            );
            for t in &trends {
                for c in &t.change_points {
                    let r = t.runs[c.index];
                    o.push_str(&format!(
                        "\"{}\",{},{},{},{},{},{},{}\n",
                        t.series.label().replace('"', "\"\""),
                        t.metric.name,
                        r.id,
                        r.started_at,
                        c.before_mean,
                        c.after_mean,
                        c.magnitude(),
                        c.p_value
                    ));
                }
            }
            o
        }
        HistoryFormat::Text | HistoryFormat::Html => {
            let mut o = format!(
                "E-divisive means, permutation test ({} reorderings): a change point is reported when p <= {} (the false-positive rate of a series without change)\n",
                s.permutations, s.alpha
            );
            let mut last = None;
            let mut found = 0;
            for t in &trends {
                if last != Some(&t.series) {
                    o.push_str(&format!(
                        "series: {} ({} runs)\n",
                        t.series.label(),
                        t.runs.len()
                    ));
                    last = Some(&t.series);
                }
                if t.change_points.is_empty() {
                    o.push_str(&format!("  {}: no change point\n", t.metric.name));
                }
                for c in &t.change_points {
                    found += 1;
                    o.push_str(&format!(
                        "  {}: change at {} (started {})\n",
                        t.metric.name,
                        render::describe_change(t.metric, t.runs[c.index].id, c),
                        t.runs[c.index].started_at
                    ));
                }
            }
            o.push_str(&format!(
                "{found} change point{}\n",
                if found == 1 { "" } else { "s" }
            ));
            o
        }
    };
    print_out(out)?;
    Ok(ExitCode::SUCCESS)
}

/// What the gate judges: its series, its name in the output, its run id when it is stored
/// (left out of its own history), and its figures.
type Candidate = (SeriesKey, String, Option<i64>, BTreeMap<String, f64>);

fn gate(args: &GateArgs) -> Result<ExitCode> {
    let metrics = metrics(&args.metrics, &["p99"])?;
    let (_, runs) = selected(&args.selection)?;
    let s = settings(&args.detect);
    let by = &args.selection.by;
    // What is judged: each series' newest run, or the runs of a result file.
    let candidates: Vec<Candidate> = match &args.result {
        Some(path) => {
            let text = std::fs::read_to_string(path).map_err(|e| {
                UsageError(format!("--result {}: cannot read it: {e}", path.display()))
            })?;
            loadmark_history::runs_of_file(&text, &Default::default())
                .map_err(|e| UsageError(format!("--result {}: {e}", path.display())))?
                .into_iter()
                .map(|n| {
                    (
                        SeriesKey::of(&n.info, &[]),
                        path.display().to_string(),
                        None,
                        n.info.metrics,
                    )
                })
                .collect()
        }
        None => loadmark_history::group(&runs, by)
            .into_iter()
            .filter_map(|(key, members)| {
                let newest = members.last()?;
                Some((
                    key,
                    format!("run {}", newest.id),
                    Some(newest.id),
                    newest.metrics.clone(),
                ))
            })
            .collect(),
    };
    if candidates.is_empty() {
        print_out("no runs to judge: the store has none that match\n")?;
        return Ok(ExitCode::SUCCESS);
    }
    let mut failed = 0;
    let mut out = String::new();
    for (key, what, judged, figures) in &candidates {
        out.push_str(&format!("series: {}\n", key.label()));
        // The series' runs before the one judged.
        let history: Vec<&StoredRun> = runs
            .iter()
            .filter(|r| same_series(r, key) && Some(r.id) != *judged)
            .collect();
        for m in &metrics {
            let Some(newest) = figures.get(m.name) else {
                out.push_str(&format!(
                    "  {}: {what} has no {}; not judged\n",
                    m.name, m.name
                ));
                continue;
            };
            let values: Vec<f64> = history
                .iter()
                .filter_map(|r| r.metrics.get(m.name).copied())
                .collect();
            let v = gate::judge(&values, *newest, m.higher_is_worse, args.max_regression, &s);
            if v.regression {
                failed += 1;
            }
            out.push_str(&format!(
                "  {} {}: {what} at {} is {}\n",
                if v.regression { "FAIL" } else { "ok  " },
                m.name,
                render::format_value(m, *newest),
                v.reason
            ));
        }
    }
    print_out(out)?;
    if failed > 0 {
        eprintln!(
            "loadmark: history gate: {failed} significant regression{} (alpha {}, --max-regression {:.1}%)",
            if failed == 1 { "" } else { "s" },
            s.alpha,
            100.0 * args.max_regression
        );
        return Ok(ExitCode::from(crate::EXIT_RUN_FAILED));
    }
    Ok(ExitCode::SUCCESS)
}

/// Whether `run` belongs to the series `key` (a key made without tags matches any tags: a
/// result file judged with `--result` has none).
fn same_series(run: &StoredRun, key: &SeriesKey) -> bool {
    run.plan_hash == key.plan_hash
        && run.step == key.step
        && run.params == key.params
        && run.target == key.target
        && key
            .tags
            .iter()
            .all(|(k, v)| run.tags.get(k).map_or(v.is_empty(), |have| have == v))
}

fn import(args: &HistoryImportArgs) -> Result<ExitCode> {
    let tags: BTreeMap<String, String> = args.tags.iter().cloned().collect();
    // Every file is read before anything is written: one bad file imports nothing.
    let mut runs = Vec::new();
    for path in &args.files {
        let text = std::fs::read_to_string(path)
            .map_err(|e| UsageError(format!("{}: cannot read it: {e}", path.display())))?;
        let found = loadmark_history::runs_of_file(&text, &tags)
            .map_err(|e| UsageError(format!("{}: {e}", path.display())))?;
        runs.extend(found.into_iter().map(|mut r| {
            r.info.source = Some(path.display().to_string());
            r
        }));
    }
    let mut store = open(&location(args.store.as_deref())?)?;
    let done = store
        .insert(&runs)
        .with_context(|| format!("importing into {}", store.location()))?;
    print_out(format!(
        "imported {} run{} from {} file{} into {}{}\n",
        done.ids.len(),
        if done.ids.len() == 1 { "" } else { "s" },
        args.files.len(),
        if args.files.len() == 1 { "" } else { "s" },
        store.location(),
        if done.duplicates > 0 {
            format!(" ({} already stored)", done.duplicates)
        } else {
            String::new()
        }
    ))?;
    Ok(ExitCode::SUCCESS)
}

fn compare(args: &CompareRunsArgs) -> Result<ExitCode> {
    let mut store = open(&location(args.store.as_deref())?)?;
    let mut read = |id: i64| -> Result<loadmark_report::Report> {
        let text = store.result(id).map_err(|e| UsageError(e.to_string()))?;
        loadmark_report::read_result(&text).with_context(|| format!("run {id}'s stored result"))
    };
    let (a, b) = (read(args.baseline)?, read(args.candidate)?);
    let c = loadmark_report::compare(
        &format!("run {}", args.baseline),
        &a,
        &format!("run {}", args.candidate),
        &b,
        Default::default(),
    );
    print_out(loadmark_report::render_comparison_text(&c))?;
    Ok(ExitCode::SUCCESS)
}

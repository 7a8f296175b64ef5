//! The gates over saved results: reading a result (or a worker's log holding one), merging
//! the segments of a split run and checking thresholds on the whole, comparing a candidate
//! with a baseline under `--fail-if` gates. Every error here is the user's input.

use std::path::{Path, PathBuf};

use loadmark_cluster::frame::{Collected, Collector};
use loadmark_report::{
    parse_thresholds, CompareSettings, Comparison, FailIf, MergeError, MergeOptions, Purpose,
    Report, Threshold,
};

/// Why a saved result cannot be read.
#[derive(Debug, thiserror::Error)]
pub enum ReadError {
    /// The file is missing or unreadable.
    #[error("{}: cannot read it: {error}", path.display())]
    Unreadable {
        path: PathBuf,
        error: std::io::Error,
    },
    /// A worker's log whose framed result is cut off: the worker died while writing it.
    #[error("{}: the framed result in this log is cut off (the worker died while writing it)", path.display())]
    CutOff { path: PathBuf },
    /// The file is not a loadmark result (or one of a newer schema).
    #[error("{}: {error}", path.display())]
    NotAResult { path: PathBuf, error: String },
}

/// Thresholds that do not parse, one line each, naming where they came from.
#[derive(Debug, thiserror::Error)]
#[error("{}", lines.join("\n"))]
pub struct ThresholdsError {
    pub lines: Vec<String>,
}

/// Reads a saved run report. A worker's log (`kubectl logs` of a `loadmark k8s` pod) holds
/// its result framed: that is read too.
pub fn read_report(path: &Path) -> Result<Report, ReadError> {
    let mut text = std::fs::read_to_string(path).map_err(|error| ReadError::Unreadable {
        path: path.to_path_buf(),
        error,
    })?;
    if text.contains("LOADMARK-RESULT-BEGIN") {
        text = framed_result(&text).ok_or_else(|| ReadError::CutOff {
            path: path.to_path_buf(),
        })?;
    }
    loadmark_report::read_result(&text).map_err(|e| ReadError::NotAResult {
        path: path.to_path_buf(),
        error: e.to_string(),
    })
}

/// The one result framed in a worker's log, if it is whole.
fn framed_result(log: &str) -> Option<String> {
    let mut c = Collector::new();
    for line in log.lines() {
        c.feed(0, line);
    }
    match c.finish().0.remove(&0) {
        Some(Collected::Result(json)) => Some(json),
        _ => None,
    }
}

/// `--threshold` flags, parsed before any load is sent.
pub fn flag_thresholds(texts: &[String]) -> Result<Vec<Threshold>, ThresholdsError> {
    parse_thresholds(texts).map_err(|errors| ThresholdsError {
        lines: errors.iter().map(|e| format!("--threshold: {e}")).collect(),
    })
}

/// A plan file's `thresholds`, parsed before any server starts or load is sent.
pub fn plan_thresholds(texts: &[String], plan: &Path) -> Result<Vec<Threshold>, ThresholdsError> {
    parse_thresholds(texts).map_err(|errors| ThresholdsError {
        lines: errors
            .iter()
            .map(|e| format!("{}: thresholds: {e}", plan.display()))
            .collect(),
    })
}

/// Each named scenario's own `thresholds` (plans' `scenarios:`), parsed before any load is
/// sent; the report checks them on each scenario's figures.
pub fn scenario_thresholds(
    file: &loadmark_plan::PlanFile,
    plan: &Path,
) -> Result<(), ThresholdsError> {
    let mut lines = Vec::new();
    for (name, scenario) in &file.scenarios {
        if let Err(errors) = parse_thresholds(&scenario.thresholds) {
            lines.extend(
                errors
                    .iter()
                    .map(|e| format!("{}: scenarios.{name}.thresholds: {e}", plan.display())),
            );
        }
    }
    match lines.is_empty() {
        true => Ok(()),
        false => Err(ThresholdsError { lines }),
    }
}

/// What `loadmark merge` is asked.
#[derive(Debug, Clone, Default)]
pub struct MergeRequest {
    /// `--threshold`s, checked on the merged report.
    pub thresholds: Vec<String>,
    /// Merge runs that do not measure the same thing (the report says so).
    pub force: bool,
    /// Merge although segments are missing (the report says PARTIAL).
    pub allow_partial: bool,
}

/// Why results cannot be merged.
#[derive(Debug, thiserror::Error)]
pub enum MergeRunsError {
    #[error(transparent)]
    Read(#[from] ReadError),
    #[error(transparent)]
    Thresholds(#[from] ThresholdsError),
    /// The segments do not make one run (missing, doubled, another run's).
    #[error("{0}")]
    Split(String),
    /// The runs differ in what they measure: merge them with `--force` if that is meant.
    #[error("{0}\n(pass --force to merge them anyway; the merged report will say so)")]
    Mismatch(String),
}

/// The merged report, its thresholds checked, and what the user should be warned of.
#[derive(Debug)]
pub struct Merged {
    pub report: Report,
    /// How many results were merged.
    pub inputs: usize,
    /// Findings of the merge worth a warning: a forced merge, then a partial one.
    pub warnings: Vec<String>,
}

/// Merges the results in `files` (named by their paths) into one report.
pub fn merge_files(files: &[PathBuf], request: &MergeRequest) -> Result<Merged, MergeRunsError> {
    let reports = files
        .iter()
        .map(|p| read_report(p))
        .collect::<Result<Vec<_>, _>>()?;
    let names: Vec<String> = files.iter().map(|p| p.display().to_string()).collect();
    let thresholds = flag_thresholds(&request.thresholds)?;
    let options = MergeOptions {
        force: request.force,
        allow_partial: request.allow_partial,
    };
    let mut merged =
        loadmark_report::merge_with_options(&reports, &names, options).map_err(|e| match e {
            MergeError::Split(_) => MergeRunsError::Split(e.to_string()),
            e => MergeRunsError::Mismatch(e.to_string()),
        })?;
    merged.thresholds = loadmark_report::check_thresholds(&thresholds, &merged);
    let warnings = merge_warnings(&merged);
    Ok(Merged {
        report: merged,
        inputs: reports.len(),
        warnings,
    })
}

/// The merged report's findings a user must not miss: forced first, then partial.
fn merge_warnings(merged: &Report) -> Vec<String> {
    let findings = &merged.run.health.findings;
    let forced = findings
        .iter()
        .filter(|f| f.starts_with("merged with --force"));
    let partial = findings.iter().filter(|f| f.starts_with("PARTIAL"));
    forced.chain(partial).cloned().collect()
}

/// What `loadmark compare` is asked.
#[derive(Debug, Clone)]
pub struct CompareRequest {
    pub baseline: PathBuf,
    pub candidate: PathBuf,
    /// `--fail-if` gates (`p99>+10%`).
    pub fail_if: Vec<String>,
    pub alpha: f64,
    pub min_effect_percent: f64,
    /// Compare runs that do not measure the same thing (the output says so).
    pub force: bool,
}

/// Why two results cannot be compared.
#[derive(Debug, thiserror::Error)]
pub enum CompareRunsError {
    /// A `--fail-if` gate does not parse (the message shows the form).
    #[error("{0}")]
    FailIf(String),
    /// `--alpha` outside (0, 1) or a negative `--min-effect`.
    #[error("--alpha must be in (0, 1) and --min-effect >= 0")]
    Settings,
    #[error(transparent)]
    Read(#[from] ReadError),
    /// The runs differ in what they measure: compare them with `--force` if that is meant.
    #[error("these runs do not measure the same thing: {}\n(pass --force to compare them anyway; the output will say so)", .0.join("; "))]
    NotAlike(Vec<String>),
}

/// Compares the candidate with the baseline and checks the gates; `forced` in the result
/// lists what differs when `force` let unlike runs through (each worth a warning).
pub fn compare_files(request: &CompareRequest) -> Result<Comparison, CompareRunsError> {
    let gates = request
        .fail_if
        .iter()
        .map(|t| FailIf::parse(t))
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| CompareRunsError::FailIf(e.to_string()))?;
    let valid = request.alpha > 0.0 && request.alpha < 1.0 && request.min_effect_percent >= 0.0;
    if !valid {
        return Err(CompareRunsError::Settings);
    }
    let baseline = read_report(&request.baseline)?;
    let candidate = read_report(&request.candidate)?;
    let base_name = request.baseline.display().to_string();
    let cand_name = request.candidate.display().to_string();
    let forced = loadmark_report::differences(
        Purpose::Compare,
        (&base_name, &cand_name),
        &baseline,
        &candidate,
    );
    if !forced.is_empty() && !request.force {
        return Err(CompareRunsError::NotAlike(forced));
    }
    let mut c = loadmark_report::compare(
        &base_name,
        &baseline,
        &cand_name,
        &candidate,
        CompareSettings {
            alpha: request.alpha,
            min_effect_percent: request.min_effect_percent,
        },
    );
    c.gates = gates.iter().map(|g| g.check(&c)).collect();
    c.forced = forced;
    Ok(c)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scratch(name: &str, text: &str) -> PathBuf {
        let dir =
            std::env::temp_dir().join(format!("loadmark-workflow-gate-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join(name);
        std::fs::write(&path, text).unwrap();
        path
    }

    #[test]
    fn a_missing_or_foreign_file_is_named() {
        let missing = Path::new("/nonexistent/r.json");
        let e = read_report(missing).unwrap_err();
        assert!(e
            .to_string()
            .starts_with("/nonexistent/r.json: cannot read it: "));
        assert!(crate::is_usage(&e));
        let foreign = scratch("foreign.json", "{\"hello\": 1}");
        let e = read_report(&foreign).unwrap_err();
        assert!(matches!(e, ReadError::NotAResult { .. }), "{e}");
        assert!(e
            .to_string()
            .starts_with(&format!("{}: ", foreign.display())));
    }

    #[test]
    fn a_worker_log_with_a_result_cut_off_says_so() {
        let log = scratch(
            "pod.log",
            "loadmark: starting\nLOADMARK-RESULT-BEGIN\nAAAA\n",
        );
        let e = read_report(&log).unwrap_err();
        assert!(matches!(e, ReadError::CutOff { .. }));
        assert!(e.to_string().ends_with(
            "the framed result in this log is cut off (the worker died while writing it)"
        ));
        assert_eq!(framed_result("no frame here"), None);
    }

    #[test]
    fn thresholds_that_do_not_parse_name_their_source_one_per_line() {
        assert!(flag_thresholds(&["p99<100ms".into()]).unwrap().len() == 1);
        let e = flag_thresholds(&["p99<<1".into(), "nonsense".into()]).unwrap_err();
        assert_eq!(e.lines.len(), 2);
        assert!(e.lines.iter().all(|l| l.starts_with("--threshold: ")));
        assert_eq!(e.to_string(), e.lines.join("\n"));
        let e = plan_thresholds(&["nonsense".into()], Path::new("p.yaml")).unwrap_err();
        assert!(e.lines[0].starts_with("p.yaml: thresholds: "), "{e}");
    }

    #[test]
    fn compare_checks_its_gates_and_settings_before_reading_files() {
        let mut request = CompareRequest {
            baseline: "/nonexistent/a.json".into(),
            candidate: "/nonexistent/b.json".into(),
            fail_if: vec!["p99 is worse".into()],
            alpha: 0.05,
            min_effect_percent: 5.0,
            force: false,
        };
        let e = compare_files(&request).unwrap_err();
        assert!(matches!(e, CompareRunsError::FailIf(_)), "{e}");
        assert!(e.to_string().starts_with("--fail-if \"p99 is worse\": "));
        request.fail_if = vec!["p99>+10%".into()];
        request.alpha = 1.0;
        assert!(matches!(
            compare_files(&request).unwrap_err(),
            CompareRunsError::Settings
        ));
        request.alpha = 0.05;
        let e = compare_files(&request).unwrap_err();
        assert!(matches!(e, CompareRunsError::Read(_)) && crate::is_usage(&e));
    }

    #[test]
    fn unlike_runs_are_refused_listing_what_differs() {
        let e = CompareRunsError::NotAlike(vec!["the URL".into(), "the method".into()]);
        assert_eq!(
            e.to_string(),
            "these runs do not measure the same thing: the URL; the method\n(pass --force to compare them anyway; the output will say so)"
        );
        let e = MergeRunsError::Mismatch("the runs differ in the URL".into());
        assert!(e
            .to_string()
            .ends_with("(pass --force to merge them anyway; the merged report will say so)"));
    }
}

//! What the store keeps of a run: its identity (plan hash, step, target, tags), the figures
//! trends and detection read ([`METRICS`]), and the full result JSON.

use std::collections::BTreeMap;

use loadmark_report::{Bundle, BundleStep, Report};
use sha1::{Digest, Sha1};

/// What the store keeps of every run beside its result JSON: the run's identity (plan hash,
/// step, target, tags) and the figures trends read. A run about to be recorded
/// ([`NewRun`]) and one read back ([`crate::StoredRun`]) both carry one.
#[derive(Debug, Clone, PartialEq)]
pub struct RunInfo {
    /// UTC, RFC 3339, from the result (`run.started_at`).
    pub started_at: String,
    /// SHA-1 (hex) of the plan: a plan file's text (`bench`), or the redacted plan a
    /// command line made (`run`, `ws`).
    pub plan_hash: String,
    /// The plan file's step number (`bench`), none for `run` and `ws`.
    pub step: Option<i64>,
    /// The step's parameters as `k=v` words (`c=100 rate=500`), empty when none.
    pub params: String,
    /// The URL loaded (`run`, `ws`) or the plan's target name (`bench`).
    pub target: String,
    pub loadmark_version: String,
    pub tags: BTreeMap<String, String>,
    /// The figures of [`METRICS`] this run has.
    pub metrics: BTreeMap<String, f64>,
    /// The file it was imported from, if any.
    pub source: Option<String>,
}

/// A run about to be recorded.
#[derive(Debug, Clone, PartialEq)]
pub struct NewRun {
    pub info: RunInfo,
    /// The result JSON as loadmark writes it (`run -o r.json`): histograms, per-step and
    /// per-scenario sections, the environment.
    pub result: String,
}

impl std::ops::Deref for NewRun {
    type Target = RunInfo;
    fn deref(&self) -> &RunInfo {
        &self.info
    }
}

impl NewRun {
    /// SHA-1 of the result JSON: the same result recorded twice is stored once.
    pub fn digest(&self) -> String {
        hex(&Sha1::digest(self.result.as_bytes()))
    }

    /// A run recorded by `run` or `ws` (or a result file imported).
    pub fn of_report(report: &Report, tags: &BTreeMap<String, String>) -> NewRun {
        NewRun {
            info: RunInfo {
                started_at: report.run.started_at.clone(),
                plan_hash: loadmark_report::plan_hash(&report.plan, &[], None),
                step: None,
                params: String::new(),
                target: report.plan.request.url.to_string(),
                loadmark_version: report.loadmark_version.clone(),
                tags: tags.clone(),
                metrics: metrics_of(report, None),
                source: None,
            },
            result: loadmark_report::render_json(report),
        }
    }

    /// Every step of a plan file's bundle (`bench`), one run each.
    pub fn of_bundle(bundle: &Bundle, tags: &BTreeMap<String, String>) -> Vec<NewRun> {
        let plan_hash = plan_file_hash(&bundle.plan_text);
        bundle
            .steps
            .iter()
            .map(|step| {
                let run = NewRun::of_report(&step.report, tags);
                NewRun {
                    info: RunInfo {
                        plan_hash: plan_hash.clone(),
                        step: Some(step.number as i64),
                        params: params_text(&step.params),
                        target: step.target.clone(),
                        metrics: metrics_of(&step.report, Some(step)),
                        ..run.info
                    },
                    ..run
                }
            })
            .collect()
    }
}

/// The plan hash of a plan file's runs (`bench`): SHA-1 of its text.
pub fn plan_file_hash(text: &str) -> String {
    hex(&Sha1::digest(text.as_bytes()))
}

/// `[("c", "100"), ("rate", "5")]` as `c=100 rate=5`.
pub fn params_text(params: &[(String, String)]) -> String {
    params
        .iter()
        .map(|(k, v)| format!("{k}={v}"))
        .collect::<Vec<_>>()
        .join(" ")
}

pub(crate) fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// How a metric's value reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unit {
    Micros,
    PerSecond,
    Count,
    Percent,
    Bytes,
}

/// A figure the history trends and judges.
#[derive(Debug, Clone, Copy)]
pub struct MetricInfo {
    pub name: &'static str,
    pub unit: Unit,
    /// Whether a higher value is worse (latency, errors) or better (throughput).
    pub higher_is_worse: bool,
    pub about: &'static str,
}

/// Every metric recorded with a run; `--metric` takes these names.
pub const METRICS: &[MetricInfo] = &[
    MetricInfo {
        name: "p50",
        unit: Unit::Micros,
        higher_is_worse: true,
        about: "latency, 50th percentile",
    },
    MetricInfo {
        name: "p90",
        unit: Unit::Micros,
        higher_is_worse: true,
        about: "latency, 90th percentile",
    },
    MetricInfo {
        name: "p99",
        unit: Unit::Micros,
        higher_is_worse: true,
        about: "latency, 99th percentile",
    },
    MetricInfo {
        name: "p99.9",
        unit: Unit::Micros,
        higher_is_worse: true,
        about: "latency, 99.9th percentile",
    },
    MetricInfo {
        name: "mean",
        unit: Unit::Micros,
        higher_is_worse: true,
        about: "latency, mean",
    },
    MetricInfo {
        name: "max",
        unit: Unit::Micros,
        higher_is_worse: true,
        about: "latency, maximum",
    },
    MetricInfo {
        name: "ttfb_p99",
        unit: Unit::Micros,
        higher_is_worse: true,
        about: "time to first byte, 99th percentile",
    },
    MetricInfo {
        name: "rps",
        unit: Unit::PerSecond,
        higher_is_worse: false,
        about: "responses per second",
    },
    MetricInfo {
        name: "errors",
        unit: Unit::Count,
        higher_is_worse: true,
        about: "requests that failed without a response",
    },
    MetricInfo {
        name: "error_rate",
        unit: Unit::Percent,
        higher_is_worse: true,
        about: "errors and non-2xx/3xx responses, % of completed requests",
    },
    MetricInfo {
        name: "checks_failed",
        unit: Unit::Count,
        higher_is_worse: true,
        about: "responses that failed a check",
    },
    MetricInfo {
        name: "server_cpu",
        unit: Unit::Percent,
        higher_is_worse: true,
        about: "the monitored server's mean CPU, % of one core (bench)",
    },
    MetricInfo {
        name: "server_rss",
        unit: Unit::Bytes,
        higher_is_worse: true,
        about: "the monitored server's peak RSS (bench)",
    },
];

/// The metric named `name`, if there is one.
pub fn metric(name: &str) -> Option<&'static MetricInfo> {
    METRICS.iter().find(|m| m.name == name)
}

/// The figures of [`METRICS`] a report (and its bench step) has.
pub fn metrics_of(report: &Report, step: Option<&BundleStep>) -> BTreeMap<String, f64> {
    let s = &report.summary;
    let mut m = BTreeMap::new();
    let mut put = |name: &str, value: f64| {
        m.insert(name.to_string(), value);
    };
    let pct = |d: &loadmark_report::Report, p: f64| {
        d.summary
            .latency
            .percentiles_us
            .iter()
            .find(|(q, _)| (*q - p).abs() < 1e-9)
            .map(|(_, us)| *us as f64)
    };
    if s.latency.count > 0 {
        for (name, p) in [("p50", 50.0), ("p90", 90.0), ("p99", 99.0), ("p99.9", 99.9)] {
            if let Some(v) = pct(report, p) {
                put(name, v);
            }
        }
        put("mean", s.latency.mean_us);
        put("max", s.latency.max_us as f64);
    }
    if let Some((_, us)) = s
        .ttfb
        .percentiles_us
        .iter()
        .find(|(q, _)| (*q - 99.0).abs() < 1e-9)
    {
        if s.ttfb.count > 0 {
            put("ttfb_p99", *us as f64);
        }
    }
    put("rps", s.rps);
    put("errors", s.requests.errors as f64);
    if s.requests.completed > 0 {
        let failed = s.requests.errors + s.requests.non_success_responses;
        put(
            "error_rate",
            100.0 * failed as f64 / s.requests.completed as f64,
        );
    }
    if let Some(checks) = &s.checks {
        put("checks_failed", checks.failed_responses as f64);
    }
    if let Some(server) = step.and_then(|s| s.server.as_ref()) {
        put("server_cpu", server.cpu_mean_percent);
        put("server_rss", server.rss_peak_bytes as f64);
    }
    m
}

/// A result file's runs: a run's result (`run -o r.json`, `merge`) is one, a plan bundle
/// (`bench`'s bundle.json) one per step.
pub fn runs_of_file(text: &str, tags: &BTreeMap<String, String>) -> Result<Vec<NewRun>, FileError> {
    if text.contains("\"steps\"") && text.contains("\"plan_text\"") {
        let bundle = Bundle::from_json(text)?;
        Ok(NewRun::of_bundle(&bundle, tags))
    } else {
        let report = loadmark_report::read_result(text)?;
        Ok(vec![NewRun::of_report(&report, tags)])
    }
}

/// A file that is not a loadmark result nor a plan bundle.
#[derive(Debug, thiserror::Error)]
pub enum FileError {
    /// A bundle (`bench`'s bundle.json) that does not read.
    #[error(transparent)]
    Bundle(#[from] loadmark_report::ReadError),
    /// A result (`run -o r.json`, `merge`, a `--stream` file) that does not read.
    #[error(transparent)]
    Result(#[from] loadmark_report::ResultError),
}

//! `loadmark history`'s flags, and `--record`/`--store`/`--tag` of the commands that run a
//! load (issue 38). The work is in `crate::history`.

use std::path::PathBuf;

use clap::{Args, Subcommand, ValueEnum};

/// Recording a run in the results history: shared by `run`, `ws` and `bench`.
#[derive(Args, Debug, Clone, Default)]
pub struct RecordFlags {
    /// Record the run in the results history once it has ended (never during the load):
    /// see `loadmark history`
    #[arg(long = "record", help_heading = "History")]
    pub record: bool,

    /// The history store: a SQLite file, or postgres://USER@HOST/DB for a shared one
    /// [default: ~/.local/share/loadmark/history.sqlite, or $LOADMARK_STORE]; implies --record
    #[arg(long = "store", value_name = "FILE|URL", help_heading = "History")]
    pub store: Option<String>,

    /// A tag recorded with the run, KEY=VALUE (repeatable), e.g. --tag commit=abc123 --tag
    /// env=staging; implies --record
    #[arg(long = "tag", value_name = "KEY=VALUE", value_parser = tag_arg, help_heading = "History")]
    pub tags: Vec<(String, String)>,
}

impl RecordFlags {
    pub fn wanted(&self) -> bool {
        self.record || self.store.is_some() || !self.tags.is_empty()
    }
}

pub(crate) fn tag_arg(s: &str) -> Result<(String, String), String> {
    match s.split_once('=') {
        Some((k, v)) if !k.trim().is_empty() => Ok((k.trim().to_string(), v.to_string())),
        _ => Err(format!("a tag is KEY=VALUE (e.g. env=staging), not {s:?}")),
    }
}

#[derive(Args, Debug)]
#[command(after_help = "Examples:\n  \
    loadmark run http://127.0.0.1:8080/status -d 30s --record --tag commit=abc123 --tag env=staging\n  \
    loadmark history list --since 30d\n  \
    loadmark history trend --metric p99 --metric rps -o trend.html\n  \
    loadmark history detect --metric p99\n  \
    loadmark history gate --metric p99 --max-regression 5%\n  \
    loadmark history import results/*.json\n\n\
    A series is the runs of one plan (its hash), step and target, split further by the tags \
    named with --by. Every command takes --store (default ~/.local/share/loadmark/history.sqlite, \
    or $LOADMARK_STORE).")]
pub struct HistoryArgs {
    #[command(subcommand)]
    pub what: HistoryCommand,
}

#[derive(Subcommand, Debug)]
pub enum HistoryCommand {
    /// The recorded runs, oldest first, with their series, tags, p99 and req/s.
    #[command(after_help = "Examples:\n  \
        loadmark history list --since 30d\n  \
        loadmark history list --plan stack.yaml --tag env=staging --format csv")]
    List(ListArgs),
    /// Metrics of each series over its runs, as a table, CSV or an HTML chart, change
    /// points marked.
    #[command(after_help = "Examples:\n  \
        loadmark history trend --metric p99 --metric rps\n  \
        loadmark history trend --metric p99 --step connections=100 -o trend.html\n  \
        loadmark history trend --metric rps --by env --format csv")]
    Trend(TrendArgs),
    /// Change points of each series (E-divisive means with a permutation test): the run
    /// where each happened, the means before and after, the magnitude and the p-value.
    #[command(after_help = "Examples:\n  \
        loadmark history detect\n  \
        loadmark history detect --metric p99 --alpha 0.01")]
    Detect(DetectArgs),
    /// Exit 1 when the newest run of a series (or a result file) is a significant
    /// regression against the series' history: worse than its noise allows, and by more
    /// than --max-regression.
    #[command(after_help = "Examples:\n  \
        loadmark history gate --metric p99 --max-regression 5%\n  \
        loadmark history gate --metric p99 --metric rps --max-regression 10% --result result.json")]
    Gate(GateArgs),
    /// Add saved results (`run -o r.json`, `merge`, `bench`'s bundle.json) to the store;
    /// a result already stored is skipped.
    #[command(after_help = "Examples:\n  \
        loadmark history import results/*.json\n  \
        loadmark history import bundle.json --tag env=staging")]
    Import(ImportArgs),
    /// Compare two recorded runs as `loadmark compare` does: exact on their histograms,
    /// noise judged on their per-second values.
    #[command(after_help = "Examples:\n  \
        loadmark history compare 12 17")]
    Compare(CompareRunsArgs),
}

/// The store, and which runs.
#[derive(Args, Debug, Clone, Default)]
pub struct Selection {
    /// The history store: a SQLite file or a postgres:// URL [default:
    /// ~/.local/share/loadmark/history.sqlite, or $LOADMARK_STORE]
    #[arg(long = "store", value_name = "FILE|URL")]
    pub store: Option<String>,
    /// Only runs that started within this long, e.g. 30d, 12h, 90m
    #[arg(long = "since", value_name = "AGE", value_parser = age_arg)]
    pub since: Option<std::time::Duration>,
    /// Only runs of this plan file (`loadmark bench FILE`)
    #[arg(long = "plan", value_name = "FILE")]
    pub plan: Option<PathBuf>,
    /// Only runs with this tag, KEY=VALUE (repeatable: all must match)
    #[arg(long = "tag", value_name = "KEY=VALUE", value_parser = tag_arg)]
    pub tags: Vec<(String, String)>,
    /// Only this step: its number, or its parameters as KEY=VALUE (e.g. connections=100)
    #[arg(long = "step", value_name = "N|KEY=VALUE")]
    pub step: Option<String>,
    /// Only runs whose target (URL, or a plan's target name) contains this
    #[arg(long = "target", value_name = "TEXT")]
    pub target: Option<String>,
    /// Split series further by these tags' values (comma-separated), e.g. --by env
    #[arg(long = "by", value_name = "TAG", value_delimiter = ',')]
    pub by: Vec<String>,
}

fn age_arg(s: &str) -> Result<std::time::Duration, String> {
    let s = s.trim();
    let (number, unit) = s.split_at(s.find(|c: char| !c.is_ascii_digit()).unwrap_or(s.len()));
    let n: u64 = number
        .parse()
        .map_err(|_| format!("an age is a number and a unit (30d, 12h, 90m, 2w), not {s:?}"))?;
    let secs = match unit {
        "w" => 7 * 86_400,
        "d" => 86_400,
        "h" => 3_600,
        "m" => 60,
        "s" => 1,
        _ => return Err(format!("an age's unit is w, d, h, m or s (30d), not {s:?}")),
    };
    Ok(std::time::Duration::from_secs(n * secs))
}

#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum HistoryFormat {
    Text,
    Csv,
    Json,
    /// One self-contained HTML page of charts (trend only)
    Html,
}

#[derive(Args, Debug)]
pub struct ListArgs {
    #[command(flatten)]
    pub selection: Selection,
    /// text (default), csv or json
    #[arg(long = "format", value_enum)]
    pub format: Option<HistoryFormat>,
}

/// Detection's settings, shared by trend, detect and gate.
#[derive(Args, Debug, Clone)]
pub struct DetectFlags {
    /// The false-positive rate of each change point (and of the gate): a change is reported
    /// only when its permutation p-value is at most this
    #[arg(long = "alpha", default_value_t = 0.05, value_parser = alpha_arg)]
    pub alpha: f64,
    /// Random reorderings of the series per test (more: finer p-values, slower)
    #[arg(long = "permutations", default_value_t = 199)]
    pub permutations: usize,
}

fn alpha_arg(s: &str) -> Result<f64, String> {
    match s.parse::<f64>() {
        Ok(a) if a > 0.0 && a < 1.0 => Ok(a),
        _ => Err(format!(
            "alpha is a probability between 0 and 1 (e.g. 0.05), not {s:?}"
        )),
    }
}

#[derive(Args, Debug)]
pub struct TrendArgs {
    #[command(flatten)]
    pub selection: Selection,
    /// A metric to show (repeatable) [default: p99 and rps]: p50 p90 p99 p99.9 mean max
    /// ttfb_p99 rps errors error_rate checks_failed server_cpu server_rss
    #[arg(long = "metric", value_name = "NAME")]
    pub metrics: Vec<String>,
    /// Write to this file (.html, .csv, .txt; the format from the extension)
    #[arg(short = 'o', long = "output", value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// text (default), csv, json or html
    #[arg(long = "format", value_enum)]
    pub format: Option<HistoryFormat>,
    #[command(flatten)]
    pub detect: DetectFlags,
}

#[derive(Args, Debug)]
pub struct DetectArgs {
    #[command(flatten)]
    pub selection: Selection,
    /// A metric to test (repeatable) [default: p50 p99 rps error_rate]
    #[arg(long = "metric", value_name = "NAME")]
    pub metrics: Vec<String>,
    /// text (default), csv or json
    #[arg(long = "format", value_enum)]
    pub format: Option<HistoryFormat>,
    #[command(flatten)]
    pub detect: DetectFlags,
}

#[derive(Args, Debug)]
pub struct GateArgs {
    #[command(flatten)]
    pub selection: Selection,
    /// A metric to judge (repeatable) [default: p99]
    #[arg(long = "metric", value_name = "NAME")]
    pub metrics: Vec<String>,
    /// The most a metric may get worse before it fails, if the change is also beyond the
    /// series' noise, e.g. 5%
    #[arg(long = "max-regression", value_name = "PERCENT", default_value = "0%", value_parser = percent_arg)]
    pub max_regression: f64,
    /// Judge this result file (not recorded) instead of each series' newest run
    #[arg(long = "result", value_name = "FILE")]
    pub result: Option<PathBuf>,
    #[command(flatten)]
    pub detect: DetectFlags,
}

fn percent_arg(s: &str) -> Result<f64, String> {
    let number = s.trim().trim_end_matches('%');
    match number.parse::<f64>() {
        Ok(p) if p >= 0.0 && p.is_finite() => Ok(p / 100.0),
        _ => Err(format!("a percentage, e.g. 5%, not {s:?}")),
    }
}

#[derive(Args, Debug)]
pub struct ImportArgs {
    /// Result files (JSON) and bundles
    #[arg(required = true, value_name = "FILE")]
    pub files: Vec<PathBuf>,
    /// The history store [default: ~/.local/share/loadmark/history.sqlite, or $LOADMARK_STORE]
    #[arg(long = "store", value_name = "FILE|URL")]
    pub store: Option<String>,
    /// A tag recorded with every imported run, KEY=VALUE (repeatable)
    #[arg(long = "tag", value_name = "KEY=VALUE", value_parser = tag_arg)]
    pub tags: Vec<(String, String)>,
}

#[derive(Args, Debug)]
pub struct CompareRunsArgs {
    /// The baseline run's id (`loadmark history list`)
    pub baseline: i64,
    /// The candidate run's id
    pub candidate: i64,
    #[arg(long = "store", value_name = "FILE|URL")]
    pub store: Option<String>,
}

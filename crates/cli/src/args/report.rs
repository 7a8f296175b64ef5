//! What happens with a run's report: output files and formats, thresholds and exit codes,
//! the step table's layout.

use std::path::PathBuf;

use clap::{Args, ValueEnum};

use super::{Format, RecordFlags};

/// What happens with a run's report: shared by `run` and `ws`.
#[derive(Args, Debug)]
pub struct ReportFlags {
    /// Write the report to this file (format from the extension: .json, .txt, .md, .csv,
    /// .html)
    #[arg(short = 'o', long = "output", help_heading = "Output")]
    pub output: Option<PathBuf>,

    /// Format of --output, or of standard output when there is no --output
    #[arg(long = "format", value_enum, help_heading = "Output")]
    pub format: Option<Format>,

    /// The JSON report on standard output (oha's --json): --format json
    #[arg(long = "json", help_heading = "Output", conflicts_with_all = ["format", "output"])]
    pub json: bool,

    /// Keep secret header values (Authorization, Cookie, *key*, *token*, ...) in reports
    /// instead of redacting them
    #[arg(long = "show-secrets", help_heading = "Output")]
    pub show_secrets: bool,

    /// No live progress line. (hey's and oha's -q RATE is -R/--rate here)
    #[arg(short = 'q', long = "quiet", help_heading = "Live")]
    pub quiet: bool,

    /// Accepted for oha habits: there is no full-screen view unless --tui asks for one
    #[arg(long = "no-tui", help_heading = "Live", conflicts_with = "tui")]
    pub no_tui: bool,

    /// Pass/fail condition checked at the end, e.g. 'p99<50ms', 'errors<1%', 'rps>10000'
    /// (repeatable); exit code 3 when one fails. Metrics: p50 p90 p95 p99 p99.9 (any pN),
    /// min, max, mean, rps, errors, failed, dropped, checks, check:NAME, and for gRPC runs
    /// status:NAME (calls that ended with that code, e.g. 'status:UNAVAILABLE<0.1%')
    #[arg(
        long = "threshold",
        value_name = "METRIC<VALUE",
        help_heading = "Checks"
    )]
    pub thresholds: Vec<String>,

    /// Write the threshold results as JUnit XML to this file
    #[arg(long = "junit", value_name = "FILE", help_heading = "Checks")]
    pub junit: Option<PathBuf>,

    /// Exit with code 4 when the run was not clean: the client saturated, requests dropped,
    /// or requests (messages) left late
    #[arg(long = "strict", help_heading = "Checks")]
    pub strict: bool,

    /// Exit with code 1 when any request failed this way: errors (transport errors), 4xx,
    /// 5xx, or failed (errors, every non-2xx/3xx response, and every response or WebSocket
    /// reply that failed a --check: the report's failed requests); repeatable. Without it,
    /// only a run in which no request succeeded exits 1
    #[arg(
        long = "fail-on",
        value_enum,
        value_name = "WHAT",
        help_heading = "Checks"
    )]
    pub fail_on: Vec<FailOn>,

    #[command(flatten, next_help_heading = "Live")]
    pub live: crate::live::LiveFlags,

    #[command(flatten, next_help_heading = "Distributed (split over machines)")]
    pub split: crate::split::SplitFlags,

    #[command(flatten, next_help_heading = "History")]
    pub record: RecordFlags,

    #[command(flatten, next_help_heading = "Output")]
    pub table: TableFlags,
}

/// Failures that `--fail-on` turns into exit code 1.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum FailOn {
    /// Transport errors of any kind (connect, tls, read, write, timeout, protocol, ...)
    Errors,
    /// Responses with a 4xx status
    #[value(name = "4xx")]
    Status4xx,
    /// Responses with a 5xx status
    #[value(name = "5xx")]
    Status5xx,
    /// Errors, every response that is not 2xx/3xx, and every response or WebSocket reply
    /// that failed a --check
    Failed,
}

/// The step table of Markdown, HTML and CSV-summary output: shared by `run`, `ws` and
/// `report`.
#[derive(Args, Debug, Clone, Default)]
pub struct TableFlags {
    /// The step table's columns, comma-separated, e.g. rps,rps_stdev,latency_mean,p95,
    /// connect_mean,ttfb_mean,failed (see `loadmark schema` for every name)
    #[arg(long = "columns", value_delimiter = ',', value_parser = column_arg)]
    pub columns: Vec<loadmark_plan::Column>,
    /// Also lay the run out as wrk, bombardier, ab or taurus print their summary (loadmark's
    /// own figures, labelled so)
    #[arg(long = "style", value_parser = style_arg)]
    pub style: Option<loadmark_plan::TableStyle>,
}

fn column_arg(s: &str) -> Result<loadmark_plan::Column, String> {
    loadmark_plan::Column::parse(s.trim())
}

fn style_arg(s: &str) -> Result<loadmark_plan::TableStyle, String> {
    loadmark_plan::TableStyle::parse(s)
}

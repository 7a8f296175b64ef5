//! The versioned loadmark [`Report`] and its renderers.
//!
//! A `Report` is everything a run produced, in one serializable struct: the plan (secrets
//! redacted), the environment, the summary figures, the per-second series and the raw HDR
//! histograms. JSON is its complete, stable form: a saved report can be rendered again,
//! merged or compared later without rerunning. Renderers are pure functions of a `Report`.
//!
//! ```
//! # use loadmark_report::{render_text, Report};
//! # fn saved() -> String { std::fs::read_to_string("result.json").unwrap() }
//! # fn demo() -> Result<(), Box<dyn std::error::Error>> {
//! let report = Report::from_json(&saved())?;
//! print!("{}", render_text(&report));
//! # Ok(()) }
//! ```
//!
//! Design decisions:
//! - Summary figures are derived from the histograms at build time and stored too, so
//!   machines reading JSON need no HDR decoder; the histograms stay the truth.
//! - `schema_version` changes whenever a field changes meaning; readers refuse newer versions.
//! - Merging adds snapshots (histograms and counters) and never averages percentiles; the
//!   inputs are put in a canonical order first, so argument order cannot change the result.
//! - Thresholds parse strictly (unknown metric or missing unit is an error) and are checked
//!   against the histograms; their results ride in `Report::thresholds` (absent when none).
//! - Comparisons judge noise on the per-second series (Mann-Whitney U), not on single figures.
//! - HTML is inline SVG drawn here: no JavaScript, nothing fetched, printable.

mod alike;
mod bundle;
mod checks;
mod protocol;
pub use protocol::ProtocolSummary;
mod html_checks;
mod scenario;
pub use scenario::{ScenarioSummary, StepSummary};
mod compare;
mod compare_table;
mod csv;
mod environment;
mod format;
mod histogram;
mod html;
mod html_compare;
mod html_details;
mod html_table;
mod html_usage;
mod junit;
mod markdown;
mod merge;
mod model;
mod schema;
mod split;
mod stream;
mod styles;
mod table;
mod text;
mod threshold;
mod websocket;

pub use alike::{differences, Purpose};
pub use bundle::{
    equivalent_command, reproduce_command, Bundle, BundleService, BundleStep, BundleTarget,
    ServerUsage, ServiceUsage, UsageSample,
};
pub use compare::{
    compare, mann_whitney, render_comparison_markdown, render_comparison_text, CompareSettings,
    Compared, Comparison, FailIf, FailIfError, GateResult, MetricDelta, Verdict, COMPARED,
    MIN_SECONDS,
};
pub use csv::{
    render_bundle_csv, render_bundle_csv_steps, render_bundle_csv_summary, render_csv,
    render_csv_steps, render_csv_summary,
};
pub use environment::{Build, Environment, HostState};
pub use format::{format_bytes, format_pct, format_us};
pub use html::{render_html, render_html_bundle};
pub use html_compare::render_comparison_html;
pub use junit::{render_junit, render_junit_with_checks};
pub use markdown::render_markdown;
pub use merge::{merge_reports, merge_reports_with, merge_with_options, MergeError, MergeOptions};
pub use model::{
    rfc3339, ClientCpu, CpuContention, Health, ReadError, Report, RequestCounts, RpsStats,
    RunFacts, RunInfo, Summary, LATENCY_DEFINITION, LATE_LAG_P99_US, OPEN_LATENCY_DEFINITION,
    SATURATED_BUSY, SCHEMA_VERSION,
};
pub use schema::{bundle_schema, result_schema};
pub use split::{plan_hash, Part, Split, SplitProblem, SKEW_TRUST_S};
pub use stream::{
    is_stream, read_result, stream_schema, ResultError, Stream, StreamError, StreamLine,
    StreamSecond, StreamStart,
};
pub use styles::{style_blocks, StyleBlock};
pub use table::{
    cell as table_cell, columns as table_columns, header as table_header, render_steps_text, Cell,
};
pub use text::{render_text, render_text_titled};
pub use threshold::{
    check_thresholds, parse_thresholds, render_thresholds_text, Metric, Op, Threshold,
    ThresholdError, ThresholdResult, Unit, THRESHOLD_METRICS,
};
pub use websocket::{WsSummary, HELD_RATE};

/// The report as pretty JSON (its complete form).
pub fn render_json(report: &Report) -> String {
    let mut out = serde_json::to_string_pretty(report).expect("a Report always serializes");
    out.push('\n');
    out
}

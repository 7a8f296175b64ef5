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
//!
//! Layout: two layers. `model` holds the types (a run's [`Report`], a plan's [`Bundle`], a
//! [`Comparison`]) and every pure computation and finding on them; it imports no renderer.
//! `render` holds one module per format (text, Markdown, HTML, CSV, JUnit), each rendering
//! every section for its format; a format imports `model`, `units` (number formatting) and
//! `render::shared` (what several formats show alike), never another format. The names
//! below are re-exported flat, so callers need not know where a type lives.

mod model;
mod render;
mod units;

pub use model::{
    broke_first, bundle_schema, check_thresholds, compare, differences, equivalent_command,
    is_stream, knee, mann_whitney, merge_reports, merge_reports_with, merge_with_options,
    parse_thresholds, plan_hash, read_result, reproduce_command, reproduce_find_command,
    result_schema, rfc3339, stream_schema, Build, Bundle, BundleService, BundleStep, BundleTarget,
    CapacityInterval, CapacityResult, ClientCpu, CompareSettings, Compared, Comparison,
    CpuContention, CurvePoint, Environment, FailIf, FailIfError, GateResult, Health, HostState,
    MergeError, MergeOptions, Metric, MetricDelta, NamedScenarioSummary, Op, Part, ProtocolFacts,
    ProtocolSummary, Purpose, ReadError, Report, RequestCounts, ResultError, RpsStats, RunFacts,
    RunInfo, ScenarioFigures, ScenarioSummary, SearchEnd, ServerUsage, ServiceUsage, Split,
    SplitProblem, StepSummary, Stream, StreamError, StreamLine, StreamSecond, StreamStart, Summary,
    Threshold, ThresholdError, ThresholdResult, Unit, UsageSample, Verdict, WsSummary,
    CAPACITY_SCHEMA_VERSION, COMPARED, HELD_RATE, KNEE_LATENCY_FACTOR, KNEE_THROUGHPUT_SHARE,
    LATENCY_DEFINITION, LATE_LAG_P99_US, MIN_SECONDS, OPEN_LATENCY_DEFINITION, SATURATED_BUSY,
    SCHEMA_VERSION, SKEW_TRUST_S, THRESHOLD_METRICS,
};
pub use render::csv::{
    render_bundle_csv, render_bundle_csv_steps, render_bundle_csv_summary, render_csv,
    render_csv_steps, render_csv_summary,
};
pub use render::html::{
    render_capacity_html, render_comparison_html, render_html, render_html_bundle, UPLOT_CSS,
    UPLOT_JS,
};
pub use render::junit::{render_junit, render_junit_with_checks};
pub use render::markdown::{render_capacity_markdown, render_comparison_markdown, render_markdown};
pub use render::shared::styles::{style_blocks, StyleBlock};
pub use render::shared::table::{
    cell as table_cell, columns as table_columns, header as table_header, Cell,
};
pub use render::text::{
    render_capacity_text, render_comparison_text, render_steps_text, render_text,
    render_text_titled, render_thresholds_text,
};
pub use units::{format_bytes, format_pct, format_us};

/// The report as pretty JSON (its complete form).
pub fn render_json(report: &Report) -> String {
    let mut out = serde_json::to_string_pretty(report).expect("a Report always serializes");
    out.push('\n');
    out
}

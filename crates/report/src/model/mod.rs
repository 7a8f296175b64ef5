//! The report's model: the types a run, a bundle of runs and a comparison are made of, and
//! every pure computation on them (health findings, thresholds, comparison statistics,
//! merging, split runs, reading and the JSON schemas). Nothing here lays out a format: the
//! renderers under `render` read these types and add words and markup. Modules here import
//! each other, `units` (number formatting for findings) and the `metrics` and `plan` crates,
//! never `render`.

mod alike;
mod bundle;
mod capacity;
mod compare;
mod environment;
mod grpc;
mod health;
mod merge;
mod protocol;
mod report;
mod scenario;
mod schema;
mod split;
mod stream;
mod threshold;
mod websocket;

pub use alike::{differences, Purpose};
pub(crate) use bundle::COMMAND_LINE;
pub use bundle::{
    equivalent_command, reproduce_command, reproduce_find_command, Bundle, BundleService,
    BundleStep, BundleTarget, ServerUsage, ServiceUsage, UsageSample,
};
pub use capacity::{
    broke_first, knee, CapacityInterval, CapacityResult, CurvePoint, SearchEnd,
    CAPACITY_SCHEMA_VERSION, KNEE_LATENCY_FACTOR, KNEE_THROUGHPUT_SHARE,
};
pub use compare::{
    compare, mann_whitney, CompareSettings, Compared, Comparison, FailIf, FailIfError, GateResult,
    MetricDelta, Verdict, COMPARED, MIN_SECONDS,
};
pub use environment::{Build, Environment, HostState};
pub use grpc::GrpcSummary;
pub use merge::{merge_reports, merge_reports_with, merge_with_options, MergeError, MergeOptions};
pub use protocol::{ProtocolFacts, ProtocolSummary};
pub use report::{
    rfc3339, ClientCpu, CpuContention, Health, ReadError, Report, RequestCounts, RpsStats,
    RunFacts, RunInfo, Summary, LATENCY_DEFINITION, LATE_LAG_P99_US, OPEN_LATENCY_DEFINITION,
    SATURATED_BUSY, SCHEMA_VERSION,
};
pub use scenario::{NamedScenarioSummary, ScenarioFigures, ScenarioSummary, StepSummary};
pub use schema::{bundle_schema, result_schema};
pub(crate) use split::short as short_hash;
#[cfg(test)]
pub(crate) use split::tests::partial_split as split_fixture;
pub use split::{plan_hash, Part, Split, SplitProblem, SKEW_TRUST_S};
pub use stream::{
    is_stream, read_result, stream_schema, ResultError, Stream, StreamError, StreamLine,
    StreamSecond, StreamStart,
};
pub use threshold::{
    check_thresholds, parse_thresholds, Metric, Op, Threshold, ThresholdError, ThresholdResult,
    Unit, THRESHOLD_METRICS,
};
pub use websocket::{WsSummary, HELD_RATE};

//! The loadmark plan: what to send, how hard, for how long.
//!
//! Every way of starting a run (today the `loadmark run` flags; a YAML plan file later) is
//! normalized into one validated [`Plan`], so the engine has exactly one input to honour and
//! tests have one path to cover. Parsing helpers here turn user text into typed values and
//! name the flag and the expected form when the text is wrong.
//!
//! ```
//! use loadmark_plan::{parse_duration, Target};
//! let t = Target::parse("http://127.0.0.1:8080/api/features?x=1").unwrap();
//! assert_eq!(t.host_header(), "127.0.0.1:8080");
//! assert_eq!(t.path_and_query(), "/api/features?x=1");
//! assert_eq!(parse_duration("1m30s").unwrap().as_secs(), 90);
//! ```
//!
//! Design decisions:
//! - Durations are `Duration`, policies are enums; no bare integers of milliseconds.
//! - Validation collects what is wrong in words a user can act on ([`PlanError`]).
//! - Secrets never leave through a report: [`Plan::redacted`] masks sensitive header values.

mod check;
mod clock;
mod file;
mod file_find;
mod file_scenario;
mod file_scenarios;
mod file_steps;
mod grpc;
mod plan;
mod proxy;
mod scenario;
mod scenarios;
mod schedule;
mod segment;
mod services;
mod settings;
mod table;
mod target;
mod taurus;
mod template;
mod text;
mod validate;
mod websocket;

pub use check::{
    grpc_code_text, Check, CheckError, Cmp, Expr, HeaderTest, JsonTest, NumTest, TextTest,
    CHECK_FORMS,
};
pub use clock::parse_rfc3339;
pub use file::{
    AttachFile, CompareFile, CompareMetric, DataFile, LaunchFile, LoadFile, MonitorFile, PlanFile,
    ReadyFile, ReportFile, RequestFile, ServiceFile, SweepFile, TargetFile, WebSocketFile,
};
pub use file_find::{
    FindFile, FindKeyError, FindSpec, LocatedObjective, FIND_COOLDOWN, FIND_FACTOR, FIND_FROM,
    FIND_HOLD, FIND_MAX_STEPS, FIND_PRECISION, FIND_REPEATS, FIND_TO, FIND_WARMUP,
};
pub use file_steps::{
    load_plan_file, load_plan_file_with, load_plan_text, Launch, LoadedPlan, PlanFileError, Ready,
    Step,
};
pub use grpc::{
    BodyEncoder, CarriedGrpcSchema, DecodeFn, GrpcCodec, GrpcSchemaFile, GrpcStreaming,
};
pub use plan::{
    DataPer, Http2, Http3, Load, Mix, Plan, Protocol, RequestSpec, ScriptRef, Stop, Timeouts,
    TlsFiles, TlsPolicy, DEFAULT_TIMEOUT, MAX_STREAMS,
};
pub use proxy::{no_proxy_matches, Proxy, ProxyKind, DEFAULT_PROXY_PORT};
pub use scenario::{
    locate_step, Extract, GrpcStep, RequestStep, Scenario, ScenarioError, ScenarioStepFile,
    Step as ScenarioStep, StepGrpcFile, StepProtocol, StepRequestFile, Think, EXTRACT_FORMS,
};
pub use scenarios::{NamedScenario, NamedScenarioFile, NamedScenarioFiles, ScenarioLoadFile};
pub use schedule::{Pace, Profile, Stage};
pub use segment::{Segment, MAX_WEIGHT_SUM};
pub use services::{Service, ServicePlan};
pub use settings::{Settings, DEFAULT_CONNECTIONS, DEFAULT_DURATION, DEFAULT_MAX_CONNECTIONS};
pub use table::{Column, Dist, Stat, TableStyle, COLUMN_NAMES, DEFAULT_COLUMNS};
pub use target::{Scheme, Target};
pub use taurus::{apply_overrides, is_taurus, taurus_plan};
pub use template::{next_random, parse_csv, Piece, RenderContext, Template};
pub use text::{
    format_duration, parse_duration, parse_header, percent_decode, redact_header_value,
    redact_plan_text, PlanError,
};
pub use websocket::{WsMode, WsPayload, WsSpec, MAX_WS_MESSAGE, WS_SEQ_BYTES};

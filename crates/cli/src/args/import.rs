//! `loadmark import`'s flags: one subcommand per kind of document (issue 41), each with the
//! flags every import shares ([`ImportCommon`]). The work is in `crate::import`.

use std::path::PathBuf;

use clap::{Args, Subcommand};

use super::values::at_least_one;

#[derive(Args, Debug)]
#[command(after_help = "Examples:\n  \
    loadmark import har session.har -o journey.yaml\n  \
    loadmark import curl -o plan.yaml -- curl 'http://127.0.0.1:8080/echo' --json '{\"a\":1}'\n  \
    loadmark run --curl \"curl -X POST http://127.0.0.1:8080/echo -d a=1\" -n 100\n  \
    loadmark import openapi api.yaml --read-only -o api-plan.yaml\n  \
    loadmark import postman collection.json --environment local.json --folder Journey\n  \
    loadmark import postman collection.json -o plan.yaml   # a scenario per folder\n  \
    loadmark import openapi api.yaml --per-tag --users 5 --duration 30s -o api-plan.yaml\n\n\
    The plan is checked with loadmark's own plan loader before it is written; what was left \
    out or replaced is said on stderr. Recorded secrets (cookies, Authorization, API keys) \
    become {{csv NAME}} columns of a data file written beside the plan with REPLACE-ME values, \
    unless --keep-secrets.")]
pub struct ImportArgs {
    #[command(subcommand)]
    pub what: ImportKind,
}

#[derive(Subcommand, Debug)]
pub enum ImportKind {
    /// A HAR 1.2 recording (Chrome, Firefox, mitmproxy): its requests as a scenario, with
    /// think times, extracted values and status checks.
    Har(HarArgs),
    /// A curl command line (as "Copy as cURL" writes it): a single-request plan.
    Curl(CurlArgs),
    /// An OpenAPI 3.0 or 3.1 document (YAML or JSON): a step per operation (a scenario per
    /// tag with --per-tag), with parameters and bodies from its examples or schemas, status
    /// checks, and its security schemes as data-file columns.
    Openapi(OpenApiArgs),
    /// A Postman collection (v2.0 or v2.1): a scenario per folder, variables filled, plain
    /// script assignments, status checks and extractions translated, the rest listed.
    Postman(PostmanArgs),
}

/// Flags every import takes.
#[derive(Args, Debug)]
pub struct ImportCommon {
    /// Write the plan here (and the secrets' data file beside it) [default: stdout]
    #[arg(short = 'o', long = "output", value_name = "FILE")]
    pub output: Option<PathBuf>,

    /// Virtual users (connections for a single request) in the plan's load, or in each
    /// scenario's [default: 1]
    #[arg(long = "users", value_parser = at_least_one, allow_negative_numbers = true)]
    pub users: Option<usize>,

    /// Iterations (requests for a single request) in the plan's load, or in each scenario's
    /// [default: 1 unless --duration]
    #[arg(long = "iterations", conflicts_with = "duration")]
    pub iterations: Option<u64>,

    /// Run the plan (each scenario) for this long instead of a number of iterations, e.g. 30s
    #[arg(long = "duration")]
    pub duration: Option<String>,

    /// Write recorded secrets (cookies, Authorization, API keys) into the plan as they are
    #[arg(long = "keep-secrets")]
    pub keep_secrets: bool,

    /// The plan's name [default: from the document]
    #[arg(long = "name")]
    pub name: Option<String>,
}

#[derive(Args, Debug)]
pub struct HarArgs {
    /// The HAR file
    pub file: PathBuf,

    /// Keep requests to this host (HOST or HOST:PORT) instead of the first request's host
    #[arg(long = "include-host", value_name = "HOST")]
    pub include_host: Option<String>,

    /// Leave out requests whose URL matches PATTERN (`*` matches anything), repeatable
    #[arg(long = "exclude", value_name = "PATTERN")]
    pub exclude: Vec<String>,

    /// Keep static assets (scripts, styles, images, fonts), left out by default
    #[arg(long = "include-static")]
    pub include_static: bool,

    /// Think times: `recorded` (the gaps between requests), `none`, or a factor applied to
    /// the recorded gaps (0.5 halves them)
    #[arg(
        long = "think",
        default_value = "recorded",
        value_name = "recorded|none|FACTOR"
    )]
    pub think: String,

    #[command(flatten)]
    pub common: ImportCommon,
}

#[derive(Args, Debug)]
pub struct CurlArgs {
    #[command(flatten)]
    pub common: ImportCommon,

    /// The curl command, after `--`: `-- curl URL -H ...` (or one quoted string)
    #[arg(
        required = true,
        last = true,
        allow_hyphen_values = true,
        value_name = "CURL"
    )]
    pub command: Vec<String>,
}

#[derive(Args, Debug)]
pub struct OpenApiArgs {
    /// The OpenAPI document (YAML or JSON)
    pub file: PathBuf,

    /// The service's base URL [default: the document's first server]
    #[arg(long = "base-url", value_name = "URL")]
    pub base_url: Option<String>,

    /// Which of the document's servers, from 1 [default: 1]
    #[arg(long = "server", value_name = "N", value_parser = at_least_one)]
    pub server: Option<usize>,

    /// Only operations with this tag, repeatable
    #[arg(long = "tag")]
    pub tags: Vec<String>,

    /// A scenario per tag in one plan (`scenarios:`): each operation under its first tag,
    /// those without one under `untagged`; --users/--iterations/--duration are each one's
    #[arg(long = "per-tag")]
    pub per_tag: bool,

    /// Only these methods, comma-separated: `--methods GET,HEAD`
    #[arg(long = "methods", value_delimiter = ',', value_name = "METHODS")]
    pub methods: Vec<String>,

    /// Only operations that write nothing (GET, HEAD, OPTIONS)
    #[arg(long = "read-only", conflicts_with = "methods")]
    pub read_only: bool,

    /// Also check that each JSON response has the fields its schema requires
    #[arg(long = "check-schema")]
    pub check_schema: bool,

    #[command(flatten)]
    pub common: ImportCommon,
}

#[derive(Args, Debug)]
pub struct PostmanArgs {
    /// The collection (v2.0 or v2.1 JSON)
    pub file: PathBuf,

    /// A Postman environment file whose values fill {{variables}}
    #[arg(long = "environment", value_name = "FILE")]
    pub environment: Option<PathBuf>,

    /// Only this folder of the collection, as the plan's one scenario [default: a scenario
    /// per top-level folder (`scenarios:`), the top level's own requests one more]
    #[arg(long = "folder", conflicts_with = "flatten")]
    pub folder: Option<String>,

    /// Every request in the collection's order as one scenario, as Postman's collection
    /// runner runs them (a value one folder's response sets reaches the next folders)
    #[arg(long = "flatten")]
    pub flatten: bool,

    #[command(flatten)]
    pub common: ImportCommon,
}

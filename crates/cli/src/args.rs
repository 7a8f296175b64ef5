//! Command-line flags (the clap definitions). Their values are parsed in `args/values.rs`;
//! `args/plan.rs` turns them into a [`Plan`].

mod argv;
mod grpc;
#[cfg(test)]
mod help_tests;
mod history;
mod import;
mod plan;
mod report;
mod tls;
mod values;
mod ws;

pub use grpc::GrpcArgs;
pub use history::{
    CompareRunsArgs, DetectArgs, DetectFlags, GateArgs, HistoryArgs, HistoryCommand, HistoryFormat,
    ImportArgs as HistoryImportArgs, ListArgs, RecordFlags, Selection, TrendArgs,
};
pub use import::{ImportArgs, ImportCommon, ImportKind};
pub use report::{FailOn, ReportFlags, TableFlags};
pub use tls::TlsFlags;
pub(crate) use values::duration_arg;
use values::{at_least_one, at_least_one_u64, basic_auth_arg, header_arg};
pub use ws::WsArgs;

use std::path::PathBuf;
use std::time::Duration;

use clap::{Args, Parser, Subcommand, ValueEnum};

/// The command line read: other tools' habits first (`loadmark URL` is `loadmark run URL`),
/// then clap; a usage error is printed here and its exit code returned.
pub fn parse(args: Vec<std::ffi::OsString>) -> Result<Cli, std::process::ExitCode> {
    let usage = || std::process::ExitCode::from(crate::EXIT_USAGE);
    let args = argv::prepare(args).map_err(|argv::ArgvError(message)| {
        eprintln!("error: {message}");
        usage()
    })?;
    match Cli::try_parse_from(&args) {
        Ok(mut cli) => {
            cli.command.fold_habits();
            Ok(cli)
        }
        Err(e) => {
            let code = e.exit_code();
            let hint = argv::hint_for(&e, &args);
            // Help and version go to stdout, errors to stderr, as clap's own exit would.
            let _ = e.print();
            if let Some(hint) = hint {
                eprintln!("\n  tip: {hint}");
            }
            Err(std::process::ExitCode::from(
                u8::try_from(code).unwrap_or(2),
            ))
        }
    }
}

#[derive(Parser, Debug)]
#[command(
    name = "loadmark",
    version = crate::dist::VERSION,
    about = "A fast, truthful HTTP and WebSocket load generator and benchmark-report tool",
    long_about = "A fast, truthful HTTP and WebSocket load generator and benchmark-report tool.\n\n\
        Latency is recorded in HDR histograms, every request is accounted for (response, \
        classified error, or in flight at the end), and reports come as text, JSON, Markdown, HTML \
        or CSV (the per-second series, the summary, a journey's steps), with thresholds as JUnit XML.",
    after_help = "Exit codes: 0 ok, 1 run error or failed run (no request succeeded, or --fail-on), 2 usage or plan error, 3 thresholds (--threshold, compare --fail-if) failed, 4 run not clean under --strict, 130 interrupted (report still written).\n\n\
        Examples:\n  loadmark quickstart\n  loadmark run http://127.0.0.1:8080/status -c 100 -d 30s\n  loadmark run URL -n 2000 -c 20 -o result.json\n  \
        loadmark http://127.0.0.1:8080/status -c 100 -d 30s\n\n\
        `loadmark URL ...` (or load flags first: -c, -d, -n, -R ...) is `loadmark run URL ...`."
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Subcommand, Debug)]
pub enum Command {
    /// Load a URL: closed loop (-c: each connection sends its next request when the last
    /// ended) or open loop (-R/--stages: requests arrive on a schedule).
    #[command(after_help = "Examples:\n  \
        loadmark run http://127.0.0.1:8080/status -c 100 -d 30s\n  \
        loadmark run http://127.0.0.1:8080/json -R 2000 -d 1m --threshold 'p99<50ms'\n  \
        loadmark run http://127.0.0.1:8080/echo -b '{\"a\":1}' -T application/json -n 1000 -o result.json\n  \
        loadmark http://127.0.0.1:8080/status -c 10 -d 5s\n\n\
        `loadmark URL ...` is `loadmark run URL ...`.")]
    Run(Box<RunArgs>),
    /// Load a WebSocket endpoint: sessions that send on an interval and time each echo, or
    /// send a message and wait for its reply (closed loop), with pings and upgrade checks.
    Ws(Box<WsArgs>),
    /// Load a gRPC method (unary and streaming calls): its schema from a .proto compiled at
    /// run time, a protoset or the server's reflection; calls counted by grpc-status name.
    Grpc(Box<GrpcArgs>),
    /// Serve the built-in target (/status, /bytes/N, /json, /delay/MS, /status/CODE, /echo,
    /// /chunked/N, /flaky/N/K, /close, /relay?url=LOOPBACK-URL; WebSocket /ws/echo, /ws/json, /ws/close-after/N, /ws/drop-after/N;
    /// with --http2, the gRPC service loadmark.target.Target with reflection) until Ctrl-C.
    #[command(after_help = "Examples:\n  \
        loadmark serve --port 8080\n  \
        loadmark serve --port 8443 --tls --http2 -t 2\n  \
        loadmark serve --port 8443 --tls --http3\n  \
        loadmark serve --port 8080 --stall 1s --every 5s\n  \
        loadmark serve --port 8080 --capacity 5000 --queue 50ms")]
    Serve(ServeArgs),
    /// Start the built-in target in this process and benchmark it: the whole tool in one go.
    #[command(after_help = "Examples:\n  \
        loadmark quickstart\n  \
        loadmark quickstart --path /json -c 10 -d 10s -o quickstart.json")]
    Quickstart(QuickstartArgs),
    /// Run a plan file: every step, servers launched and monitored, and the benchmark
    /// document (Markdown) and its JSON bundle written to --out.
    #[command(after_help = "Examples:\n  \
        loadmark bench examples/concurrency-sweep.yaml --check\n  \
        loadmark bench examples/concurrency-sweep.yaml --out results\n  \
        loadmark bench examples/taurus.yml -o execution.0.hold-for=1m")]
    Bench(BenchArgs),
    /// Render a saved JSON report or plan bundle again (text, JSON, Markdown, HTML or CSV).
    #[command(after_help = "Examples:\n  \
        loadmark report result.json\n  \
        loadmark report result.json -o result.html\n  \
        loadmark report results/bundle.json --format csv-summary --columns rps,p99,failed")]
    Report(ReportArgs),
    /// Print a JSON Schema: of plan files (for editor completion, the default), of saved
    /// results (`run -o r.json`, `merge`) or of plan bundles (`bench`'s bundle.json).
    #[command(after_help = "Examples:\n  \
        loadmark schema > loadmark-plan.schema.json\n  \
        loadmark schema result")]
    Schema(SchemaArgs),
    /// Add saved JSON reports (e.g. one per client machine, run side by side) into one:
    /// histograms and counters add exactly, percentiles are never averaged.
    #[command(after_help = "Examples:\n  \
        loadmark merge host1.json host2.json -o all.json\n  \
        loadmark merge seg-0.json seg-1.json seg-2.json --allow-partial --threshold 'p99<20ms'")]
    Merge(MergeArgs),
    /// Compare a candidate run with a baseline: per-metric deltas and a verdict that tells a
    /// change from run-to-run noise (Mann-Whitney U test on the per-second values).
    #[command(after_help = "Examples:\n  \
        loadmark compare before.json after.json\n  \
        loadmark compare before.json after.json --fail-if 'p99>+10%' --fail-if 'rps<-5%'\n  \
        loadmark compare before.json after.json --format md > comparison.md")]
    Compare(CompareArgs),
    /// Print a Kubernetes Indexed Job (and its ConfigMap) that runs a plan split over N pods,
    /// and the commands that collect and merge their results.
    #[command(after_help = "Examples:\n  \
        loadmark k8s plan.yml --workers 8 --image registry.example/loadmark:1 > job.yaml\n  \
        loadmark k8s plan.yml --workers 4 --image loadmark:dev --step 2 --start-at +5m")]
    K8s(crate::k8s::K8sArgs),
    /// Run one segment of a plan given as JSON and print its result framed for a launcher
    /// (what srun tasks and Kubernetes pods run).
    #[command(hide = true)]
    Worker(crate::split::WorkerArgs),
    /// Print the shell completion script for bash, zsh, fish, elvish or PowerShell.
    #[command(after_help = "Examples:\n  \
        loadmark completions bash > /etc/bash_completion.d/loadmark\n  \
        loadmark completions zsh > ~/.zfunc/_loadmark\n  \
        loadmark completions fish > ~/.config/fish/completions/loadmark.fish")]
    Completions(crate::dist::CompletionsArgs),
    /// Write the man pages (loadmark.1 and one per subcommand) into DIR.
    #[command(after_help = "Examples:\n  \
        loadmark man /usr/local/share/man/man1\n  \
        loadmark man target/man")]
    Man(crate::dist::ManArgs),
    /// Find the capacity: the highest open-loop rate at which every objective (--slo) holds,
    /// rising from --from, then bisecting; with the latency-throughput curve and its knee.
    #[command(after_help = "Examples:\n  \
        loadmark find http://127.0.0.1:8080/status --slo 'p99 < 20ms' --slo 'errors < 0.1%'\n  \
        loadmark find http://127.0.0.1:8080/json --slo 'p99.9 < 100ms' --from 1000 --to 200000 --hold 20s --http2\n  \
        loadmark find http://127.0.0.1:8080/status --slo 'p99 < 5ms' --slo 'failed < 1%' -o capacity.html\n\n\
        Each step holds its rate for --hold (longer when the objectives need more requests: \
        1,522 for p99 at 95% confidence) after a --step-warmup. A step where loadmark itself \
        saturated ends the search, said so (exit 4), never reported as the server's capacity.")]
    Find(Box<crate::find::FindArgs>),
    /// Turn a HAR recording, a curl command, an OpenAPI document or a Postman collection
    /// into a plan file, checked by loadmark's own plan loader.
    Import(ImportArgs),
    /// The results history: runs recorded with --record (or imported), their trends,
    /// change points, and a regression gate for CI.
    History(HistoryArgs),
}

impl Command {
    /// Other tools' spellings that clap took as flags of their own, folded into loadmark's
    /// (oha's `--json` is `--format json`).
    fn fold_habits(&mut self) {
        let report = match self {
            Command::Run(args) => &mut args.report,
            Command::Ws(args) => &mut args.report,
            Command::Grpc(args) => &mut args.report,
            _ => return,
        };
        if report.json {
            report.format = Some(Format::Json);
        }
    }
}

#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    Text,
    Json,
    /// Markdown, ready to commit
    #[value(alias = "markdown")]
    Md,
    /// The per-second series as CSV (one row per second; bundles: per step and second)
    Csv,
    /// The summary as CSV (one row per run, or per step of a bundle)
    CsvSummary,
    /// A scenario's steps as CSV (one row per step of the journey)
    CsvSteps,
    /// One self-contained HTML page with charts (inline SVG, no JavaScript)
    Html,
}

#[derive(Args, Debug)]
pub struct RunArgs {
    /// The URL to load (http:// or https://)
    #[arg(
        required_unless_present = "curl",
        default_value = "",
        hide_default_value = true
    )]
    pub url: String,

    /// A curl command to load instead of URL and the request flags: its method, URL,
    /// headers, body and TLS options, e.g. --curl "curl -X POST http://h/x -d @body.json"
    #[arg(long = "curl", value_name = "COMMAND", help_heading = "Request", conflicts_with_all = ["method", "headers", "body", "body_file", "content_type", "basic_auth", "cookies"])]
    pub curl: Option<String>,

    /// Concurrent connections, closed loop (each runs one request at a time) [default: 50];
    /// with -R, connections opened before the schedule starts (wrk2's -c)
    #[arg(short = 'c', long = "connections", visible_alias = "vus", help_heading = "Load", value_parser = at_least_one, allow_negative_numbers = true)]
    pub connections: Option<usize>,

    /// Open loop: send this many requests per second, whatever the responses do (wrk2 -R);
    /// with -n, exactly that many requests at this rate. Also N/DURATION as vegeta writes it:
    /// 500/1s, 500/s, 30000/1m
    #[arg(short = 'R', long = "rate", value_name = "RATE", help_heading = "Open loop", value_parser = rate_arg)]
    pub rate: Option<f64>,

    /// A schedule: request rates (open loop), e.g. '10s:0->5000,40s:5000,10s:5000->0', or,
    /// with -c, connection counts (closed loop), e.g. -c 1 --stages '30s:200'. DURATION:TO
    /// ramps from the previous value (the first from -R, -c, or 0)
    #[arg(long = "stages", help_heading = "Open loop", conflicts_with_all = ["duration", "requests"])]
    pub stages: Option<String>,

    /// Open loop: the connection pool grows on demand up to this cap; requests due when all
    /// are busy are dropped and counted [default: 1000]
    #[arg(long = "max-connections", help_heading = "Open loop")]
    pub max_connections: Option<usize>,

    /// Worker threads, each with its own event loop [default: CPU cores, at most -c]
    #[arg(short = 't', long = "threads", help_heading = "Load", value_parser = at_least_one, allow_negative_numbers = true)]
    pub threads: Option<usize>,

    /// How long to run, e.g. 30s, 2m, 1m30s (-z as in oha) [default: 10s unless -n is given].
    /// A request body is -b/--body here, not -d (as in hey and curl)
    #[arg(short = 'd', short_alias = 'z', long = "duration", help_heading = "Load", value_parser = run_duration_arg, conflicts_with = "requests")]
    pub duration: Option<Duration>,

    /// Send exactly this many requests, then stop (--iterations as in k6)
    #[arg(short = 'n', long = "requests", visible_alias = "iterations", help_heading = "Load", value_parser = at_least_one_u64, allow_negative_numbers = true)]
    pub requests: Option<u64>,

    /// HTTP method [default: GET, or POST when a body is given]
    #[arg(short = 'm', long = "method", help_heading = "Request")]
    pub method: Option<String>,

    /// Add a header, 'Name: value' (repeatable)
    #[arg(short = 'H', long = "header", help_heading = "Request", value_parser = header_arg)]
    pub headers: Vec<(String, String)>,

    /// Request body; '@FILE' reads it from FILE (as curl's -d @FILE)
    #[arg(
        short = 'b',
        long = "body",
        help_heading = "Request",
        conflicts_with = "body_file"
    )]
    pub body: Option<String>,

    /// Read the request body from a file (-p as in ab)
    #[arg(short = 'p', long = "body-file", help_heading = "Request")]
    pub body_file: Option<PathBuf>,

    /// Content-Type of the body (-T as in ab and hey); the same as -H 'Content-Type: TYPE'
    #[arg(
        short = 'T',
        long = "content-type",
        help_heading = "Request",
        value_name = "TYPE"
    )]
    pub content_type: Option<String>,

    /// HTTP basic authentication, USER:PASSWORD (-A as in ab); sends an Authorization header
    /// (redacted in reports)
    #[arg(short = 'A', long = "basic-auth", help_heading = "Request", value_name = "USER:PASSWORD", value_parser = basic_auth_arg)]
    pub basic_auth: Option<String>,

    /// A cookie, 'name=value' or several as 'a=1; b=2' (repeatable; -C as in ab); sends a
    /// Cookie header
    #[arg(
        short = 'C',
        long = "cookie",
        help_heading = "Request",
        value_name = "NAME=VALUE"
    )]
    pub cookies: Vec<String>,

    /// Per-request timeout, from the request's start to its last response byte
    #[arg(long = "timeout", help_heading = "Load", value_parser = duration_arg, default_value = "10s")]
    pub timeout: Duration,

    /// Timeout of each connection attempt (TCP and TLS) [default: --timeout]
    #[arg(long = "connect-timeout", help_heading = "Load", value_parser = duration_arg)]
    pub connect_timeout: Option<Duration>,

    /// Send `Connection: close`: one new connection per request (--disable-keepalive as in
    /// oha)
    #[arg(
        long = "no-keepalive",
        visible_alias = "disable-keepalive",
        help_heading = "Protocol"
    )]
    pub no_keepalive: bool,

    /// Accepted for ab habits (-k, keep-alive): keep-alive is already the default. (curl's
    /// -k is --insecure here.)
    #[arg(
        short = 'k',
        long = "keepalive",
        help_heading = "Protocol",
        conflicts_with = "no_keepalive"
    )]
    pub keepalive: bool,

    /// Run load first for this long (whole seconds) without counting it
    #[arg(long = "warmup", help_heading = "Load", value_parser = duration_arg)]
    pub warmup: Option<Duration>,

    /// Accepted for wrk habits: the latency distribution is always shown
    #[arg(long = "latency", help_heading = "Output")]
    pub latency: bool,

    /// Do not verify TLS certificates (printed in the report)
    #[arg(long = "insecure", help_heading = "TLS")]
    pub insecure: bool,

    /// Speak HTTP/2: negotiated with ALPN over https:// (refused if the server does not
    /// offer h2, unless --http2-fallback), from the first byte over http:// (h2c with prior
    /// knowledge)
    #[arg(long = "http2", help_heading = "Protocol")]
    pub http2: bool,

    /// With --http2 over https://: if the server does not offer h2 with ALPN, run over
    /// HTTP/1.1 instead of refusing (what curl's --http2 does); the report names the
    /// protocol used
    #[arg(long = "http2-fallback", help_heading = "Protocol", requires = "http2")]
    pub http2_fallback: bool,

    /// Speak HTTP/3 over QUIC (UDP to the URL's port; https:// only, ALPN h3): --insecure,
    /// --cacert and --cert apply as over TLS; --streams sets the requests each connection
    /// carries at once; the report adds handshake times and QUIC's packet, loss and
    /// congestion figures
    #[arg(long = "http3", help_heading = "Protocol", conflicts_with_all = ["http2", "pipeline", "unix_socket"])]
    pub http3: bool,

    /// With --http3: connections after the first resume the TLS session and send their first
    /// requests with the handshake (0-RTT); only GET, HEAD and OPTIONS go early (early data
    /// can be replayed), others wait for the handshake; the report counts 0-RTT apart. With
    /// --no-keepalive every request opens a connection
    #[arg(long = "http3-0rtt", help_heading = "Protocol", requires = "http3")]
    pub http3_0rtt: bool,

    /// Concurrent streams per HTTP/2 or HTTP/3 connection (h2load's -m) [default: 1]
    #[arg(long = "streams", help_heading = "Protocol", value_parser = at_least_one, allow_negative_numbers = true)]
    pub streams: Option<usize>,

    /// Connect to this Unix domain socket instead of the URL's host and port (as curl); the
    /// URL still gives the Host header and the path
    #[arg(long = "unix-socket", help_heading = "Protocol", value_name = "PATH")]
    pub unix_socket: Option<PathBuf>,

    /// HTTP/1.1 pipelining: P requests written together per connection, responses read in
    /// order, then the next P (wrk's pipeline script; P = 16 in TechEmpower's plaintext); with
    /// -R, each due request is written at once, up to P unanswered per connection
    #[arg(long = "pipeline", help_heading = "Protocol", value_name = "P", value_parser = at_least_one, allow_negative_numbers = true)]
    pub pipeline: Option<usize>,

    /// Go through this proxy, as curl's -x: http://[USER:PASSWORD@]HOST:PORT (plain http://
    /// requests are forwarded; https://, HTTP/2 and WebSocket go through a CONNECT tunnel),
    /// socks5://... (names resolved here) or socks5h://... (the proxy resolves them); no
    /// scheme means http://, no port 1080. [default: $http_proxy or $HTTP_PROXY for http://
    /// and ws://, $https_proxy or $HTTPS_PROXY for https:// and wss://, then $ALL_PROXY].
    /// Hosts on $NO_PROXY (comma-separated names, which also match their subdomains, IP
    /// addresses, CIDR ranges, or '*') go direct; loopback is NOT exempt (as in curl). -x ''
    /// ignores the environment's proxy. Connect times then include the proxy's tunnel set-up,
    /// a refusal by the proxy (407, CONNECT answered 502, a SOCKS5 reply code) is a connect
    /// error naming it, and the report says which proxy was used
    #[arg(
        short = 'x',
        long = "proxy",
        value_name = "URL",
        help_heading = "Protocol"
    )]
    pub proxy: Option<String>,

    /// A wrk Lua script (wrk's -s): its wrk table, setup/init/request/response/delay/done
    /// run as in wrk; arguments after `--` go to its init(args)
    #[arg(
        short = 's',
        long = "script",
        help_heading = "Request",
        value_name = "FILE"
    )]
    pub script: Option<PathBuf>,

    /// Arguments for the script's init(args), after `--` (args[0] is the URL, as in wrk)
    #[arg(last = true, value_name = "SCRIPT ARGS", requires = "script")]
    pub script_args: Vec<String>,
    /// Check every response (repeatable), counted pass/fail by name; a failed check is
    /// not an error (the latency is recorded) and shows in reports and in the thresholds
    /// 'checks>99%' and 'check:NAME>99%'. Forms: 'status == 200', 'status in 200..299',
    /// 'latency < 200ms', 'header content-type contains json', 'header x-id exists',
    /// 'body contains "ok"', 'body matches REGEX', 'body size < 1024', 'json /items/0/id
    /// exists', 'json /ok == true', 'json /n > 3', 'json /items length > 0'; name one with
    /// 'NAME: EXPR'. Header, body and JSON checks buffer each response (up to 1 MiB)
    #[arg(long = "check", help_heading = "Checks", value_name = "EXPR", value_parser = check_arg)]
    pub checks: Vec<loadmark_plan::Check>,

    #[command(flatten)]
    pub tls: TlsFlags,

    #[command(flatten)]
    pub report: ReportFlags,
}

/// A rate in requests per second: a number (wrk2), or N/DURATION (vegeta: 500/1s, 500/s,
/// 30000/1m).
fn rate_arg(text: &str) -> Result<f64, String> {
    values::rate(text)
}

/// `run`'s -d: a duration, and a hint for hey's and curl's -d (a body) when the value looks
/// like one.
fn run_duration_arg(text: &str) -> Result<Duration, String> {
    values::run_duration(text)
}

fn check_arg(text: &str) -> Result<loadmark_plan::Check, String> {
    loadmark_plan::Check::parse(text).map_err(|e| e.to_string())
}

#[derive(Args, Debug)]
pub struct ServeArgs {
    /// Address to bind (loopback unless told otherwise)
    #[arg(long = "host", default_value = "127.0.0.1")]
    pub host: std::net::IpAddr,
    /// Port to listen on (0 picks a free one)
    #[arg(short = 'p', long = "port", default_value_t = 8080)]
    pub port: u16,
    /// Server threads
    #[arg(short = 't', long = "threads", default_value_t = 1)]
    pub threads: usize,
    /// Freeze for this long in every period (--every): shows coordinated omission
    #[arg(long = "stall", value_parser = duration_arg, requires = "every")]
    pub stall: Option<Duration>,
    /// The period of --stall, e.g. --stall 1s --every 5s
    #[arg(long = "every", value_parser = duration_arg, requires = "stall")]
    pub every: Option<Duration>,
    /// Bind with SO_REUSEPORT, to take over a port that whoever chose it holds bound (not
    /// listening) with SO_REUSEPORT until the server is up
    #[arg(long = "reuse-port")]
    pub reuse_port: bool,
    /// Serve HTTP/2 too: a connection that opens with HTTP/2's preface is h2c (prior
    /// knowledge), any other HTTP/1.1
    #[arg(long = "http2")]
    pub http2: bool,
    /// TLS with a self-signed certificate made at start (written to a file named on the
    /// first line); with --http2, h2 is offered by ALPN
    #[arg(long = "tls")]
    pub tls: bool,
    /// With --tls: HTTP/3 too, over QUIC on the UDP port of the same number (as Caddy), with
    /// the same certificate; `loadmark run https://... --http3` loads it
    #[arg(long = "http3", requires = "tls")]
    pub http3: bool,
    /// Also listen on this Unix domain socket (it must not exist; removed at exit)
    #[arg(long = "unix-socket", value_name = "PATH")]
    pub unix_socket: Option<PathBuf>,
    /// Serve at most N requests per second, first come first served through one queue (a
    /// server of known capacity, for `loadmark find`); a request that would wait longer
    /// than --queue is answered 503 at once
    #[arg(long = "capacity", value_name = "N", value_parser = rate_arg)]
    pub capacity: Option<f64>,
    /// With --capacity: the longest a request waits in the queue before it is refused
    #[arg(long = "queue", value_parser = duration_arg, default_value = "100ms", requires = "capacity")]
    pub queue: Duration,
}

#[derive(Args, Debug)]
pub struct QuickstartArgs {
    /// How long to run
    #[arg(short = 'd', long = "duration", value_parser = duration_arg, default_value = "5s")]
    pub duration: Duration,
    /// Concurrent connections
    #[arg(short = 'c', long = "connections", default_value_t = 50)]
    pub connections: usize,
    /// Path on the built-in target to load
    #[arg(long = "path", default_value = "/status")]
    pub path: String,
    /// Port of the built-in target on 127.0.0.1 (0 picks a free one)
    #[arg(short = 'p', long = "port", default_value_t = 0)]
    pub port: u16,
    /// Write the report to this file too (.json or .txt)
    #[arg(short = 'o', long = "output")]
    pub output: Option<PathBuf>,
}

#[derive(Args, Debug, Clone)]
pub struct BenchArgs {
    /// The plan file (YAML; or a Taurus `bzt` config, whose HTTP subset runs as a plan);
    /// `loadmark schema` prints the plan's JSON Schema
    pub plan: PathBuf,
    /// Check the plan and list its steps without running anything
    #[arg(long = "check")]
    pub check: bool,
    /// Print the plan as a native loadmark plan (a Taurus config translated) and exit
    #[arg(long = "explain")]
    pub explain: bool,
    /// Directory for BENCHMARKS.md, bundle.json and the servers' logs
    #[arg(long = "out", default_value = "loadmark-results")]
    pub out: PathBuf,
    /// KEY=VALUE overrides a key of the plan's YAML, as bzt's -o does (e.g. -o
    /// execution.concurrency=600, -o load.connections=8; repeatable); -o DIR (no `=`) is
    /// --out DIR
    #[arg(short = 'o', value_name = "KEY=VALUE|DIR")]
    pub o: Vec<String>,
    /// Keep secret header values in the document, the bundle and the printed commands
    #[arg(long = "show-secrets")]
    pub show_secrets: bool,
    /// No live progress line
    #[arg(short = 'q', long = "quiet")]
    pub quiet: bool,
    #[command(flatten)]
    pub metrics: crate::live::MetricsFlags,
    /// Names the run in the metrics' run_id label [default: the start time in Unix seconds
    /// and the process id, e.g. 1764052200-4242]
    #[arg(long = "run-id", value_name = "ID")]
    pub run_id: Option<String>,
    /// Columns and style, instead of the plan's `report:`
    #[command(flatten)]
    pub table: TableFlags,
    /// Run every step as N Slurm tasks (srun), each its own segment, and merge them: the
    /// step's figures are those of one machine generating the whole load
    #[arg(long = "slurm", value_name = "N")]
    pub slurm: Option<u32>,
    /// Extra srun option for --slurm, repeatable (e.g. --srun-arg=--partition=load)
    #[arg(long = "srun-arg", value_name = "ARG", allow_hyphen_values = true)]
    pub srun_args: Vec<String>,
    #[command(flatten, next_help_heading = "History")]
    pub record: RecordFlags,
}

#[derive(Args, Debug)]
pub struct ReportArgs {
    /// A JSON report (`loadmark run -o FILE.json`) or bundle (`loadmark bench`)
    pub file: PathBuf,
    /// Output format [default: from the --output extension, else text]
    #[arg(long = "format", value_enum)]
    pub format: Option<Format>,
    /// Write to this file instead of standard output (.json, .txt, .md, .csv, .html)
    #[arg(short = 'o', long = "output")]
    pub output: Option<PathBuf>,
    /// Columns and style (a bundle's own, from its plan, unless given here)
    #[command(flatten)]
    pub table: TableFlags,
}

#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum SchemaKind {
    /// Plan files (YAML)
    #[default]
    Plan,
    /// Saved run results (JSON)
    Result,
    /// Plan bundles (JSON)
    Bundle,
    /// Each line of a streamed result (`--stream FILE`, JSON Lines)
    Stream,
}

#[derive(Args, Debug)]
pub struct SchemaArgs {
    /// Which schema
    #[arg(value_enum, default_value = "plan")]
    pub what: SchemaKind,
}

#[derive(Args, Debug)]
pub struct MergeArgs {
    /// JSON reports to add (`loadmark run -o FILE.json`)
    #[arg(required = true)]
    pub files: Vec<PathBuf>,
    /// Write the merged JSON report here [default: standard output]
    #[arg(short = 'o', long = "output")]
    pub output: Option<PathBuf>,
    /// Merge even when the reports differ in URL, protocol or load model (the merged report
    /// lists what was forced)
    #[arg(long = "force")]
    pub force: bool,
    /// Segments of a split run: merge those present when some are missing; the result is
    /// marked PARTIAL and names them
    #[arg(long = "allow-partial")]
    pub allow_partial: bool,
    /// Pass/fail condition checked on the merged result (as `run --threshold`); exit 3
    /// when one fails
    #[arg(long = "threshold", value_name = "METRIC<VALUE")]
    pub thresholds: Vec<String>,
    /// Exit 4 when the merged run was not clean (a client saturated, requests dropped or late)
    #[arg(long = "strict")]
    pub strict: bool,
}

#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum CompareFormat {
    Text,
    Json,
    /// Markdown, ready to paste into a pull request
    #[value(alias = "markdown")]
    Md,
    /// A self-contained HTML page with bar charts
    Html,
}

#[derive(Args, Debug)]
pub struct CompareArgs {
    /// The baseline JSON report
    pub baseline: PathBuf,
    /// The candidate JSON report
    pub candidate: PathBuf,
    /// Fail (exit 3) on a significant change beyond a limit, e.g. 'p99>+10%', 'rps<-5%',
    /// 'errors>+0%' (repeatable); changes within noise never fail
    #[arg(long = "fail-if", value_name = "METRIC>+N%")]
    pub fail_if: Vec<String>,
    /// Output format
    #[arg(long = "format", value_enum, default_value = "text")]
    pub format: CompareFormat,
    /// Significance level of the test
    #[arg(long = "alpha", default_value_t = 0.05)]
    pub alpha: f64,
    /// Smallest change, in percent, that counts as one
    #[arg(long = "min-effect", default_value_t = 5.0)]
    pub min_effect: f64,
    /// Compare even when the runs differ in protocol (HTTP, WebSocket) or load model (closed,
    /// open loop) (the output lists what was forced)
    #[arg(long = "force")]
    pub force: bool,
}

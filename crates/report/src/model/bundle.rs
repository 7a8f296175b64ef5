//! [`Bundle`]: the result of a whole plan file, every step's full [`Report`] included, so the
//! document can be rendered again, or compared, without rerunning anything.
//!
//! Part of the model: imports `model` siblings and `units` only, never a renderer.

use serde::{Deserialize, Serialize};

use loadmark_plan::{Column, CompareFile, Load, Plan, Stop, TableStyle, TlsPolicy, WsPayload};

use super::environment::Environment;
use super::report::{ReadError, Report, SCHEMA_VERSION};

/// A target as the document describes it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct BundleTarget {
    pub name: String,
    pub url: String,
    #[serde(default)]
    pub labels: Vec<(String, String)>,
    /// The command loadmark started it with, if it did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub launch: Option<String>,
    /// The process loadmark monitored, if attached.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub attach: Option<String>,
}

/// One sample of the server's resources.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct UsageSample {
    pub at_ms: u64,
    pub cpu_percent: f64,
    pub rss_bytes: u64,
}

/// What the server under test used during one step (sampled from /proc).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ServerUsage {
    pub pid: u32,
    pub rss_start_bytes: u64,
    pub rss_peak_bytes: u64,
    pub rss_end_bytes: u64,
    /// 100 is one core.
    pub cpu_mean_percent: f64,
    pub cpu_peak_percent: f64,
    pub threads_peak: u64,
    pub fds_peak: u64,
    pub samples: Vec<UsageSample>,
}

/// What a service (a backend, a database: started by the plan, never loaded) used during
/// one step.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ServiceUsage {
    pub name: String,
    pub usage: ServerUsage,
}

/// A service as the document describes it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct BundleService {
    pub name: String,
    /// The command loadmark started it with.
    pub launch: String,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub depends_on: Vec<String>,
}

/// One step of the plan and its outcome.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct BundleStep {
    pub number: usize,
    pub target: String,
    pub params: Vec<(String, String)>,
    /// The `loadmark run` command that repeats this step alone.
    pub command: String,
    pub report: Report,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server: Option<ServerUsage>,
    /// The services that ran during the step, monitored (when the plan monitors).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub services: Vec<ServiceUsage>,
    /// What went wrong around the step (a service that died during it), in words.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
    /// A `find:` plan's step is a capacity search: its result (`capacity` in requests per
    /// second, the objective that broke first, the curve). `report` is then the run at the
    /// capacity (the last at that rate), or the search's last run when no rate met the
    /// objectives.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub capacity: Option<super::capacity::CapacityResult>,
}

/// A whole benchmark document's data.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Bundle {
    pub schema_version: u32,
    pub loadmark_version: String,
    #[serde(default)]
    pub name: Option<String>,
    #[serde(default)]
    pub description: Option<String>,
    pub plan_file: String,
    /// The plan file as it was run.
    pub plan_text: String,
    pub environment: Environment,
    pub targets: Vec<BundleTarget>,
    /// The plan's services, in start order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub services: Vec<BundleService>,
    pub steps: Vec<BundleStep>,
    #[serde(default)]
    pub compare: Vec<CompareFile>,
    /// The step table's columns (empty: the default ones).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub columns: Vec<Column>,
    /// Each step also laid out as this tool prints its summary.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub style: Option<TableStyle>,
    /// Stopped by a signal: the steps that ran are all here.
    #[serde(default)]
    pub interrupted: bool,
    /// What kept steps from running (a service that died), in words.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
}

/// The `plan_file` of a one-run bundle made from the command line.
pub(crate) const COMMAND_LINE: &str = "(command line)";

impl Bundle {
    /// A one-step bundle around a single run, so one report renders as a document too.
    pub fn of_report(report: Report) -> Bundle {
        let url = report.plan.request.url.to_string();
        let thresholds: Vec<String> = report
            .thresholds
            .iter()
            .map(|t| t.threshold.clone())
            .collect();
        let command = reproduce_command(&report.plan, &thresholds);
        Bundle {
            schema_version: SCHEMA_VERSION,
            loadmark_version: report.loadmark_version.clone(),
            name: None,
            description: None,
            plan_file: COMMAND_LINE.into(),
            plan_text: command.clone(),
            environment: report.environment.clone(),
            targets: vec![BundleTarget {
                name: "target".into(),
                url,
                labels: Vec::new(),
                launch: None,
                attach: None,
            }],
            steps: vec![BundleStep {
                number: 1,
                target: "target".into(),
                params: Vec::new(),
                command,
                report,
                server: None,
                services: Vec::new(),
                notes: Vec::new(),
                capacity: None,
            }],
            services: Vec::new(),
            compare: Vec::new(),
            columns: Vec::new(),
            style: None,
            interrupted: false,
            notes: Vec::new(),
        }
    }

    pub fn to_json(&self) -> String {
        let mut out = serde_json::to_string_pretty(self).expect("a Bundle always serializes");
        out.push('\n');
        out
    }

    pub fn from_json(text: &str) -> Result<Bundle, ReadError> {
        let mut bundle: Bundle = super::report::read_versioned(text)?;
        // Older files are read into the current types, and written again in this schema.
        bundle.schema_version = SCHEMA_VERSION;
        for step in &mut bundle.steps {
            step.report.schema_version = SCHEMA_VERSION;
        }
        Ok(bundle)
    }
}

fn quote(text: &str) -> String {
    if text
        .bytes()
        .all(|b| b.is_ascii_alphanumeric() || b"-_./:=@,".contains(&b))
    {
        text.to_string()
    } else {
        format!("'{}'", text.replace('\'', r"'\''"))
    }
}

/// The `loadmark run` command line that runs `plan` (secrets as the plan holds them).
pub fn equivalent_command(plan: &Plan) -> String {
    reproduce_command(plan, &[])
}

/// [`equivalent_command`] with a `--threshold` for each of `thresholds`: what repeats a run
/// and its pass/fail verdict (the "How to reproduce" of a document).
pub fn reproduce_command(plan: &Plan, thresholds: &[String]) -> String {
    command_line(plan, thresholds, None)
}

/// The `loadmark find` command line that searches `plan`'s capacity: the request, pool and
/// protocol flags of `run`, then `search`'s flags and values (`--slo`, `--from`, ...), which
/// set the rate and each step's length (a `find:` plan's step).
pub fn reproduce_find_command(plan: &Plan, search: &[(&str, String)]) -> String {
    command_line(plan, &[], Some(search))
}

fn command_line(plan: &Plan, thresholds: &[String], search: Option<&[(&str, String)]>) -> String {
    use loadmark_plan::format_duration as d;
    if !plan.scenarios.is_empty() {
        // Several scenarios, each with its own load: no `run` flags say that.
        let names: Vec<&str> = plan.scenarios.iter().map(|s| s.name.as_str()).collect();
        return format!(
            "# scenarios {} on {}: only a plan file runs several at once (loadmark bench)",
            names.join(", "),
            plan.request.url
        );
    }
    let mut args = vec![
        "loadmark".to_string(),
        if search.is_some() {
            "find"
        } else if plan.websocket.is_some() {
            "ws"
        } else {
            "run"
        }
        .to_string(),
        quote(plan.request.url.as_str()),
    ];
    if let Some(ws) = &plan.websocket {
        args.push(format!("--mode {}", ws.mode.as_str()));
        if let Some(i) = ws.interval {
            args.push(format!("--interval {}", d(i)));
        }
        match &ws.payload {
            WsPayload::Random { min, max } if min == max => args.push(format!("--payload {min}")),
            WsPayload::Random { min, max } => args.push(format!("--payload {min}..{max}")),
            WsPayload::Message(text) => args.push(format!("--message {}", quote(text))),
        }
        if ws.binary {
            args.push("--binary".into());
        }
        if let Some(field) = &ws.reply_match {
            args.push(format!("--reply-match {}", quote(field)));
        }
        if let Some(s) = ws.session_duration {
            args.push(format!("--session-duration {}", d(s)));
        }
        if let Some(p) = ws.ping {
            args.push(format!("--ping {}", d(p)));
        }
    }
    match &plan.load {
        Load::Closed {
            connections,
            threads,
        } => args.extend([format!("-c {connections}"), format!("-t {threads}")]),
        Load::Ramp {
            connections,
            threads,
        } => args.extend([
            // `-c` with `--stages` makes the stages connection counts; the stages' text says
            // where each starts (`0->20`), so `-c` only has to be one `run` accepts (>= 1).
            format!(
                "-c {}",
                connections.stages.first().map_or(1.0, |s| s.from.max(1.0))
            ),
            format!("--stages {}", quote(&connections.to_text())),
            format!("-t {threads}"),
        ]),
        Load::Open {
            rate,
            max_connections,
            threads,
            connections,
        } => {
            match (rate.stages.as_slice(), plan.stop) {
                // The search sets the rate and each step's length.
                _ if search.is_some() => {}
                ([one], Stop::Requests(n)) if one.from == one.to => {
                    args.push(format!("-R {}", one.from));
                    args.push(format!("-n {n}"));
                }
                ([one], _) if one.from == one.to => {
                    args.push(format!("-R {}", one.from));
                    args.push(format!("-d {}", d(one.duration)));
                }
                _ => args.push(format!("--stages {}", quote(&rate.to_text()))),
            }
            if let Some(c) = connections {
                args.push(format!("-c {c}"));
            }
            args.extend([
                format!("--max-connections {max_connections}"),
                format!("-t {threads}"),
            ]);
        }
    }
    if matches!(plan.load, Load::Closed { .. }) {
        match plan.stop {
            Stop::Duration(x) => args.push(format!("-d {}", d(x))),
            Stop::Requests(n) => args.push(format!("-n {n}")),
        }
    }
    // A script's request comes from the script: its method, headers and body are not flags.
    let flags_request = plan.script.is_none();
    if flags_request && plan.request.method != "GET" && plan.websocket.is_none() {
        args.push(format!("-m {}", plan.request.method));
    }
    for (name, value) in plan.request.headers.iter().filter(|_| flags_request) {
        args.push(format!("-H {}", quote(&format!("{name}: {value}"))));
    }
    if flags_request && !plan.request.body.is_empty() {
        args.push(format!(
            "-b {}",
            quote(&String::from_utf8_lossy(&plan.request.body))
        ));
    }
    if !plan.request.keep_alive {
        args.push("--no-keepalive".into());
    }
    if let Some(h2) = &plan.protocol.http2 {
        args.push(format!("--http2 --streams {}", h2.streams));
        if h2.fallback {
            args.push("--http2-fallback".into());
        }
    }
    if let Some(depth) = plan.protocol.pipeline {
        args.push(format!("--pipeline {depth}"));
    }
    if let Some(path) = &plan.protocol.unix_socket {
        args.push(format!(
            "--unix-socket {}",
            quote(&path.display().to_string())
        ));
    }
    args.push(format!("--timeout {}", d(plan.timeouts.request)));
    if !plan.warmup.is_zero() && search.is_none() {
        args.push(format!("--warmup {}", d(plan.warmup)));
    }
    if plan.tls.is_insecure() {
        args.push("--insecure".into());
    }
    for c in &plan.checks {
        args.push(format!("--check {}", quote(&c.text)));
    }
    if let TlsPolicy::Files(f) = &plan.tls {
        for (flag, file) in [("--cacert", &f.ca), ("--cert", &f.cert), ("--key", &f.key)] {
            if let Some(file) = file {
                args.push(format!("{flag} {}", quote(&file.display().to_string())));
            }
        }
    }
    if let Some(script) = &plan.script {
        args.push(format!("-s {}", quote(&script.path)));
        if !script.args.is_empty() {
            args.push("--".into());
            args.extend(script.args.iter().map(|a| quote(a)));
        }
    }
    for t in thresholds {
        args.push(format!("--threshold {}", quote(t)));
    }
    for (flag, value) in search.unwrap_or_default() {
        args.push(format!("{flag} {}", quote(value)));
    }
    if !plan.mix.others.is_empty() && plan.scenario.is_none() {
        // As for a scenario: say what the flags leave out rather than print a command that
        // silently sends only the first request.
        args.push(format!(
            "# plus the plan's {} other weighted request{}, which have no command-line form",
            plan.mix.others.len(),
            if plan.mix.others.len() == 1 { "" } else { "s" }
        ));
    }
    if let Some(steps) = &plan.scenario {
        // No flag spells a scenario: say so rather than print a command that runs
        // something else (`-c` are its users, `-n` its iterations).
        args.push(format!(
            "# plus the plan's scenario ({} steps), which has no command-line form",
            steps.len()
        ));
    }
    args.join(" ")
}

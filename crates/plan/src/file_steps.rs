//! Reading a plan file: YAML errors with file, line and column (and a did-you-mean for
//! misspelt keys), then validation and expansion into one [`Plan`] per step.

use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::file::PlanFile;
use crate::file_scenario::{data_per, scenario_of};
use crate::plan::{Plan, RequestSpec};
use crate::settings::Settings;
use crate::target::Target;
use crate::text::parse_duration;
use crate::websocket::{WsMode, WsPayload, WsSpec};

/// Something wrong in a plan file, located as precisely as the file allows.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{file}:{line}:{column}: {message}")]
pub struct PlanFileError {
    pub file: String,
    pub line: usize,
    pub column: usize,
    pub message: String,
}

/// One run of a plan file: a target, the swept values, and the normalized plan.
#[derive(Debug, Clone, PartialEq)]
pub struct Step {
    /// Position in the plan, from 1.
    pub number: usize,
    pub target: String,
    /// The swept parameters and their values for this step, in sweep order.
    pub params: Vec<(String, String)>,
    pub plan: Plan,
}

/// Readiness, resolved: what the launcher waits for.
#[derive(Debug, Clone, PartialEq)]
pub enum Ready {
    Port(String),
    Http(String),
    Delay(Duration),
}

/// A launch block with its durations and paths resolved.
#[derive(Debug, Clone, PartialEq)]
pub struct Launch {
    pub command: String,
    pub env: Vec<(String, String)>,
    pub cwd: Option<PathBuf>,
    pub ready: Ready,
    pub ready_timeout: Duration,
    pub stop_grace: Duration,
}

/// A plan file, read and checked.
#[derive(Debug, Clone)]
pub struct LoadedPlan {
    pub path: PathBuf,
    pub text: String,
    pub file: PlanFile,
    pub steps: Vec<Step>,
    /// Launch blocks by target name (only targets that have one).
    pub launches: Vec<(String, Launch)>,
    /// The `services:`, in start order, and when each starts and stops.
    pub services: crate::services::ServicePlan,
    pub pause: Duration,
    pub monitor_interval: Option<Duration>,
    /// `find:`: every step is a capacity search, its plan the search's template.
    pub find: Option<crate::file_find::FindSpec>,
}

/// Finds where `keys` (a path of mapping keys) sits in the YAML text, for error messages:
/// each key is looked for on a later line, indented deeper than the one before.
pub(crate) fn locate(text: &str, keys: &[&str]) -> (usize, usize) {
    let mut found = (1, 1);
    let mut min_line = 0;
    let mut min_indent: isize = -1;
    for key in keys {
        let hit = text
            .lines()
            .enumerate()
            .skip(min_line)
            .find_map(|(i, line)| {
                let trimmed = line.trim_start();
                // A list item's key sits after its "- ": that is its indentation.
                let item = trimmed.len() - trimmed.trim_start_matches("- ").len();
                let indent = line.len() - trimmed.len() + item;
                let rest = trimmed.trim_start_matches("- ").trim_start_matches('{');
                let is_key =
                    rest.starts_with(key) && rest[key.len()..].trim_start().starts_with(':');
                (is_key && indent as isize > min_indent).then_some((i, indent))
            });
        match hit {
            Some((i, indent)) => {
                found = (i + 1, indent + 1);
                min_line = i + 1;
                min_indent = indent as isize;
            }
            None => break,
        }
    }
    found
}

/// Edit distance, for did-you-mean suggestions.
fn distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut prev = row[0];
        row[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let cur = row[j + 1];
            row[j + 1] = (prev + usize::from(ca != *cb)).min(row[j] + 1).min(cur + 1);
            prev = cur;
        }
    }
    row[b.len()]
}

/// Turns serde's "unknown field `x`, expected one of `a`, `b`" into a did-you-mean.
fn suggest(message: &str) -> Option<String> {
    let unknown = message.split('`').nth(1)?;
    let expected: Vec<&str> = message
        .split("expected")
        .nth(1)?
        .split('`')
        .skip(1)
        .step_by(2)
        .collect();
    expected
        .iter()
        .map(|e| (distance(unknown, e), *e))
        .filter(|(d, e)| *d <= 2.max(e.len() / 3))
        .min()
        .map(|(_, e)| format!("did you mean `{e}`?"))
}

impl PlanFile {
    /// Parses YAML text; `file` names it in errors.
    pub fn parse(text: &str, file: &str) -> Result<PlanFile, PlanFileError> {
        serde_norway::from_str(text).map_err(|e| {
            let (line, column) = e.location().map_or((1, 1), |l| (l.line(), l.column()));
            let mut message = e.to_string();
            // The location is already in front; serde_norway repeats it at the end.
            if let Some(i) = message.find(" at line ") {
                message.truncate(i);
            }
            if message.contains("unknown field") {
                if let Some(s) = suggest(&message) {
                    message = format!("{message}; {s}");
                }
            }
            PlanFileError {
                file: file.to_string(),
                line,
                column,
                message,
            }
        })
    }

    /// The plan as native YAML (`bench --explain`): loading it again gives the same steps.
    pub fn to_yaml(&self) -> String {
        serde_norway::to_string(self).expect("a plan file always serializes")
    }

    /// The JSON Schema of plan files, for editors.
    pub fn json_schema() -> String {
        let schema = schemars::schema_for!(PlanFile);
        serde_json::to_string_pretty(&schema).expect("a schema always serializes")
    }
}

/// Reads, parses and checks a plan file; every error names the file, line and column.
/// Reads an optional duration at some keys of the plan, or says where it is wrong.
type ParseDuration<'a> =
    dyn Fn(&[&str], &Option<String>) -> Result<Option<Duration>, PlanFileError> + 'a;

/// The `websocket:` section as a checked [`WsSpec`]; errors point at its keys.
fn websocket_spec(
    w: &crate::file::WebSocketFile,
    err: &dyn Fn(&[&str], String) -> PlanFileError,
    duration: &ParseDuration<'_>,
) -> Result<WsSpec, PlanFileError> {
    let interval = duration(&["websocket", "interval"], &w.interval)?;
    let mode = match &w.mode {
        Some(m) => WsMode::parse(m)
            .map_err(|e| err(&["websocket", "mode"], format!("websocket.mode: {e}")))?,
        None if interval.is_some() => WsMode::Echo,
        None => WsMode::Request,
    };
    let payload = match (&w.message, &w.payload) {
        (Some(_), Some(_)) => {
            return Err(err(
                &["websocket", "message"],
                "websocket: give payload or message, not both".into(),
            ))
        }
        (Some(text), None) => WsPayload::Message(text.clone()),
        (None, Some(range)) => WsPayload::parse_range(range)
            .map_err(|e| err(&["websocket", "payload"], format!("websocket.payload: {e}")))?,
        (None, None) => WsPayload::Random { min: 128, max: 128 },
    };
    let spec = WsSpec {
        mode,
        payload,
        binary: w.binary.unwrap_or(false),
        interval,
        session_duration: duration(&["websocket", "session_duration"], &w.session_duration)?,
        ping: duration(&["websocket", "ping"], &w.ping)?,
        reply_match: w.reply_match.clone(),
    };
    spec.validate()
        .map_err(|e| err(&["websocket"], format!("websocket: {e}")))?;
    Ok(spec)
}

pub fn load_plan_file(path: &Path, cores: usize) -> Result<LoadedPlan, PlanFileError> {
    load_plan_file_with(path, cores, &[])
}

/// Reads a plan file (native, or a Taurus config: see [`crate::is_taurus`]) after applying
/// `KEY=VALUE` overrides to its YAML.
pub fn load_plan_file_with(
    path: &Path,
    cores: usize,
    overrides: &[String],
) -> Result<LoadedPlan, PlanFileError> {
    let name = path.display().to_string();
    let at_start = |message: String| PlanFileError {
        file: name.clone(),
        line: 1,
        column: 1,
        message,
    };
    let text = std::fs::read_to_string(path)
        .map_err(|e| at_start(format!("cannot read the plan file: {e}")))?;
    // With overrides, positions are those of the overridden text (comments dropped).
    let text = crate::taurus::apply_overrides(&text, overrides).map_err(at_start)?;
    let file = if crate::taurus::is_taurus(&text) {
        crate::taurus::taurus_plan(&text, &name)?
    } else {
        PlanFile::parse(&text, &name)?
    };
    let base = path.parent().unwrap_or(Path::new("."));
    expand(file, text, path.to_path_buf(), base, cores)
}

fn expand(
    file: PlanFile,
    text: String,
    path: PathBuf,
    base: &Path,
    cores: usize,
) -> Result<LoadedPlan, PlanFileError> {
    let err = |keys: &[&str], message: String| {
        let (line, column) = locate(&text, keys);
        PlanFileError {
            file: path.display().to_string(),
            line,
            column,
            message,
        }
    };
    let duration =
        |keys: &[&str], value: &Option<String>| -> Result<Option<Duration>, PlanFileError> {
            value
                .as_deref()
                .map(|v| {
                    parse_duration(v).map_err(|_| {
                        err(
                            keys,
                            format!(
                                "{}: {v:?} is not a duration; expected e.g. 500ms, 30s, 2m",
                                keys.join(".")
                            ),
                        )
                    })
                })
                .transpose()
        };
    if file.targets.is_empty() {
        return Err(err(
            &["targets"],
            "targets: at least one target is needed".into(),
        ));
    }
    let find = crate::file_find::find_spec(&file, &text, &path.display().to_string(), &err)?;
    let load = &file.load;
    // The data file, read now so that templates (and a scenario's) are checked against its
    // columns; its own errors name the data file's line.
    let data = file.data.as_ref().map(|d| base.join(d.file()));
    let columns = match &data {
        Some(path) => {
            let text = std::fs::read_to_string(path).map_err(|e| {
                err(
                    &["data"],
                    format!("data {:?}: cannot read it: {e}", path.display()),
                )
            })?;
            crate::template::parse_csv(&text)
                .map_err(|e| err(&["data"], format!("data {:?}: {e}", path.display())))?
                .0
        }
        None => Vec::new(),
    };
    let scenario = scenario_of(&file, &text, &path, &columns, &err)?;
    let per = data_per(&file, &err)?;
    // A scenario's ramp: `stages` without `iterations_per_second` are user counts, from
    // `users` (or 0), as `--stages` with `-c` are connection counts for `run`.
    let ramp_from = (scenario.is_some()
        && load.stages.is_some()
        && load.iterations_per_second.is_none()
        && load.rate.is_none())
    .then_some(0);
    let base_settings = Settings {
        connections: load.users.or(load.connections).or(ramp_from),
        // A search's steps: the open loop at its first rate (each search step sets its own).
        rate: load
            .iterations_per_second
            .or(load.rate)
            .or(find.as_ref().map(|f| f.from)),
        stages: load.stages.clone(),
        max_connections: load.max_connections,
        threads: load.threads,
        duration: duration(&["load", "duration"], &load.duration)?,
        requests: load.iterations.or(load.requests),
        keep_alive: load.keepalive,
        timeout: duration(&["load", "timeout"], &load.timeout)?,
        connect_timeout: duration(&["load", "connect_timeout"], &load.connect_timeout)?,
        warmup: duration(&["load", "warmup"], &load.warmup)?,
        insecure: load.insecure.unwrap_or(false),
        http2: load.http2.unwrap_or(false),
        http3: load.http3.unwrap_or(false),
        http3_0rtt: load.http3_0rtt.unwrap_or(false),
        streams: load.streams,
        http2_fallback: load.http2_fallback.unwrap_or(false),
        unix_socket: load.unix_socket.clone(),
        pipeline: load.pipeline,
    };
    let named = crate::file_scenarios::named_scenarios_of(
        &file,
        &text,
        &columns,
        &base_settings,
        cores,
        &err,
    )?;
    let named_threads = crate::file_scenarios::run_threads(&named, load.threads, cores);
    let websocket = match &file.websocket {
        Some(w) => Some(websocket_spec(w, &err, &duration)?),
        None => None,
    };
    if websocket.is_some() && !file.requests.is_empty() {
        return Err(err(
            &["requests"],
            "a WebSocket plan sends its messages from `websocket`; `requests` is for HTTP".into(),
        ));
    }
    if !file.requests.is_empty() && file.request != crate::file::RequestFile::default() {
        return Err(err(
            &["requests"],
            "give `request` or `requests`, not both".into(),
        ));
    }
    let request_files: Vec<(&'static str, &crate::file::RequestFile)> = if file.requests.is_empty()
    {
        vec![("request", &file.request)]
    } else {
        file.requests.iter().map(|r| ("requests", r)).collect()
    };
    let mut bodies = Vec::new();
    for (section, r) in &request_files {
        bodies.push(match (&r.body, &r.body_file) {
            (Some(_), Some(_)) => {
                return Err(err(
                    &[section, "body_file"],
                    format!("{section}: give body or body_file, not both"),
                ))
            }
            (Some(b), None) => b.clone().into_bytes(),
            (None, Some(f)) => std::fs::read(base.join(f)).map_err(|e| {
                err(
                    &[section, "body_file"],
                    format!("{section}.body_file {f:?}: cannot read it: {e}"),
                )
            })?,
            (None, None) => Vec::new(),
        });
    }
    // Templates: anywhere a request has `{{`; checked now against the data file's columns.
    let templated = request_files.iter().zip(&bodies).any(|((_, r), body)| {
        r.path.contains("{{")
            || r.headers.values().any(|v| v.contains("{{"))
            || String::from_utf8_lossy(body).contains("{{")
    });
    if templated {
        for ((section, r), body) in request_files.iter().zip(&bodies) {
            let check = |field: &'static str, text: &str| {
                crate::template::Template::parse(text, field, &columns)
                    .map(|_| ())
                    .map_err(|e| err(&[section, field], format!("{section}: {e}")))
            };
            check("path", &r.path)?;
            for v in r.headers.values() {
                check("headers", v)?;
            }
            check("body", &String::from_utf8_lossy(body))?;
        }
    }
    let names: Vec<String> = match &file.sweep.targets {
        Some(list) => {
            for name in list {
                if !file.targets.contains_key(name) {
                    let known: Vec<&str> = file.targets.keys().map(String::as_str).collect();
                    return Err(err(
                        &["sweep", "targets"],
                        format!(
                            "sweep.targets: no target named {name:?}; the targets are {}",
                            known.join(", ")
                        ),
                    ));
                }
            }
            list.clone()
        }
        None => file.targets.keys().cloned().collect(),
    };
    // The matrix of swept values, in a fixed order: connections, rate, keepalive, threads,
    // streams, pipeline.
    let mut combos: Vec<Vec<(String, String)>> = vec![Vec::new()];
    let mut add_axis = |name: &str, values: Option<Vec<String>>| {
        if let Some(values) = values {
            combos = combos
                .iter()
                .flat_map(|c| {
                    values.iter().map(move |v| {
                        let mut c = c.clone();
                        c.push((name.to_string(), v.clone()));
                        c
                    })
                })
                .collect();
        }
    };
    fn texts<T: ToString>(values: &Option<Vec<T>>) -> Option<Vec<String>> {
        values
            .as_ref()
            .map(|v| v.iter().map(T::to_string).collect())
    }
    let sw = &file.sweep;
    add_axis("connections", texts(&sw.connections));
    add_axis("rate", texts(&sw.rate));
    add_axis("keepalive", texts(&sw.keepalive));
    add_axis("threads", texts(&sw.threads));
    add_axis("streams", texts(&sw.streams));
    add_axis("pipeline", texts(&sw.pipeline));
    let mut steps = Vec::new();
    for name in &names {
        let target = &file.targets[name];
        let mut specs = Vec::new();
        for ((section, r), body) in request_files.iter().zip(&bodies) {
            let url_text = format!("{}{}", target.url.trim_end_matches('/'), r.path);
            let parse = if websocket.is_some() {
                Target::parse_ws
            } else {
                Target::parse
            };
            let url = parse(&url_text).map_err(|e| {
                let keys: &[&str] = if r.path.is_empty() {
                    &["targets", name, "url"]
                } else {
                    &[section, "path"]
                };
                err(keys, format!("targets.{name}.url + {section}.path: {e}"))
            })?;
            let mut headers: Vec<(String, String)> = target
                .headers
                .iter()
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect();
            headers.extend(r.headers.iter().map(|(k, v)| (k.clone(), v.clone())));
            specs.push((
                r.weight.unwrap_or(1),
                RequestSpec {
                    method: r.method.to_ascii_uppercase(),
                    url,
                    headers,
                    body: body.clone(),
                    keep_alive: true,
                },
            ));
        }
        for combo in &combos {
            let mut s = base_settings.clone();
            if let Some(path) = &target.unix {
                s.unix_socket = Some(path.clone());
            }
            for (key, value) in combo {
                match key.as_str() {
                    "connections" => s.connections = value.parse().ok(),
                    "rate" => s.rate = value.parse().ok(),
                    "keepalive" => s.keep_alive = value.parse().ok(),
                    "streams" => s.streams = value.parse().ok(),
                    "pipeline" => s.pipeline = value.parse().ok(),
                    _ => s.threads = value.parse().ok(),
                }
            }
            let request = specs[0].1.clone();
            let planned = match &websocket {
                Some(spec) => s.to_ws_plan(request, spec.clone(), cores),
                None => s.to_plan(request, cores),
            };
            let mut plan = planned.map_err(|e| {
                let key = combo.last().map_or("load", |(k, _)| k.as_str());
                let section = if combo.is_empty() { "load" } else { "sweep" };
                err(
                    &[section, key],
                    format!("step {} ({name}): {e}", steps.len() + 1),
                )
            })?;
            let keep_alive = plan.request.keep_alive;
            plan.mix = if websocket.is_some() {
                Default::default()
            } else {
                crate::plan::Mix {
                    weight: specs[0].0,
                    others: specs[1..]
                        .iter()
                        .map(|(w, r)| {
                            (
                                *w,
                                RequestSpec {
                                    keep_alive,
                                    ..r.clone()
                                },
                            )
                        })
                        .collect(),
                    templated,
                    data: data.clone(),
                    per,
                    encode_body: None,
                    grpc_schema: None,
                }
            };
            plan.cookies = (scenario.is_some() || !named.is_empty()) && load.cookies == Some(true);
            // Checks (issue 17) hold for every response of every step; for a websocket
            // plan, for every reply (request mode).
            plan.checks.clone_from(&file.checks);
            if plan.websocket.is_some() {
                plan.validate().map_err(|e| {
                    // At the check no reply can meet, if it is one; else at `checks:`.
                    let mut located = err(&["checks"], e.to_string());
                    let offending = plan.checks.iter().find(|c| !c.expr.applies_to_messages());
                    if let Some((i, column)) = offending.and_then(|c| {
                        text.lines()
                            .enumerate()
                            .skip(located.line)
                            .find_map(|(i, l)| l.find(&c.text).map(|col| (i, col)))
                    }) {
                        (located.line, located.column) = (i + 1, column + 1);
                    }
                    located
                })?;
            }
            plan.scenario.clone_from(&scenario);
            if !named.is_empty() {
                crate::file_scenarios::apply(&mut plan, &named, named_threads);
                plan.validate()
                    .map_err(|e| err(&["scenarios"], e.to_string()))?;
            }
            let mut params = Vec::new();
            if names.len() > 1 {
                params.push(("target".to_string(), name.clone()));
            }
            params.extend(combo.iter().cloned());
            steps.push(Step {
                number: steps.len() + 1,
                target: name.clone(),
                params,
                plan,
            });
        }
        if let (Some(_), Some(_)) = (&target.launch, &target.attach) {
            return Err(err(
                &["targets", name, "attach"],
                format!("targets.{name}: launch or attach, not both"),
            ));
        }
        if let Some(a) = &target.attach {
            let given = [
                a.pid.is_some(),
                a.process.is_some(),
                a.socket.is_some(),
                a.port.is_some(),
            ];
            if given.iter().filter(|&&g| g).count() != 1 {
                return Err(err(
                    &["targets", name, "attach"],
                    format!(
                        "targets.{name}.attach: give exactly one of pid, process, socket or port"
                    ),
                ));
            }
        }
    }
    for (i, c) in file.compare.iter().enumerate() {
        for label in [&c.rows, &c.columns] {
            let swept = steps
                .iter()
                .any(|s: &Step| s.params.iter().any(|(k, _)| k == label));
            let known = label == "target"
                || swept
                || file.targets.values().any(|t| t.labels.contains_key(label));
            if !known {
                return Err(err(
                    &["compare"],
                    format!("compare[{i}]: {label:?} is neither a target label nor a swept parameter (use `target` for target names)"),
                ));
            }
        }
    }
    let mut launches = Vec::new();
    for (name, target) in &file.targets {
        let Some(l) = &target.launch else { continue };
        let r = &l.ready;
        if target.unix.is_some() && r.port.is_none() && r.http.is_none() && r.delay.is_none() {
            // Readiness defaults to the URL's TCP port, which a socket target does not open.
            return Err(err(
                &["targets", name, "unix"],
                format!(
                    "targets.{name}: a target on a Unix socket has no TCP port to wait for; \
                     give launch.ready (http: a URL answering 2xx, port: host:port, or delay)"
                ),
            ));
        }
        let launch = crate::services::resolve_launch(
            l.into(),
            &["targets", name, "launch"],
            Some(&target.url),
            base,
            &err,
            &duration,
        )?;
        launches.push((name.clone(), launch));
    }
    let step_targets: Vec<&str> = steps.iter().map(|s| s.target.as_str()).collect();
    let services = crate::services::plan_services(&file, &step_targets, base, &err, &duration)?;
    let pause = duration(&["pause"], &file.pause)?.unwrap_or_default();
    let monitor_interval = match &file.monitor {
        Some(m) => {
            Some(duration(&["monitor", "interval"], &m.interval)?.unwrap_or(Duration::from_secs(1)))
        }
        None => None,
    };
    Ok(LoadedPlan {
        path,
        text,
        file,
        steps,
        launches,
        services,
        pause,
        monitor_interval,
        find,
    })
}

/// Expands plan text without reading files from disk for bodies (tests, `--check` of text).
pub fn load_plan_text(text: &str, name: &str, cores: usize) -> Result<LoadedPlan, PlanFileError> {
    let file = if crate::taurus::is_taurus(text) {
        crate::taurus::taurus_plan(text, name)?
    } else {
        PlanFile::parse(text, name)?
    };
    expand(
        file,
        text.to_string(),
        PathBuf::from(name),
        Path::new("."),
        cores,
    )
}

#[cfg(test)]
#[path = "file_tests.rs"]
mod tests;

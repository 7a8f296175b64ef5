//! Taurus (`bzt`) configs as plans: the HTTP subset of `execution:` and `scenarios:` becomes
//! a native [`PlanFile`] (what `loadmark bench --explain` prints), and what loadmark cannot
//! honour is refused by name with its place in the YAML. Also `-o key=value` overrides,
//! which work on native plans too.
//!
//! The mapping: `concurrency` → connections; `ramp-up` + `hold-for` → connection stages
//! (`RAMP:1->C,HOLD:C`), or with `throughput` an open loop whose rate ramps to it over
//! `ramp-up` (`max_connections` = concurrency); `iterations` → exactly `iterations ×
//! concurrency × requests` requests (Taurus counts iterations per user, each walking every
//! request); a scenario's `requests` (a URL string, or url/method/headers/body) → requests of
//! equal weight (mixed at random, not walked in order per user), `default-address` → the
//! target URL, `headers` → the target's headers, `timeout` and `keepalive` → load settings.

use indexmap::IndexMap;
use serde_norway::{Mapping, Value};

use crate::file::{LoadFile, PlanFile, RequestFile, TargetFile};
use crate::file_steps::{locate, PlanFileError};

/// Whether `text` is a Taurus config rather than a native plan: it has `execution:` at the
/// top and no `targets:`.
pub fn is_taurus(text: &str) -> bool {
    let top = |key: &str| {
        text.lines()
            .any(|l| l.starts_with(key) && l[key.len()..].trim_start().starts_with(':'))
    };
    top("execution") && !top("targets")
}

/// Executors that are not the HTTP subset loadmark runs.
const OTHER_EXECUTORS: &[&str] = &[
    "selenium",
    "apiritif",
    "gatling",
    "locust",
    "grinder",
    "siege",
    "ab",
    "tsung",
    "pbench",
    "molotov",
    "k6",
    "vegeta",
    "newman",
    "junit",
    "testng",
    "nunit",
    "mocha",
    "rspec",
    "pytest",
    "robot",
    "wdio",
    "jmeter-jmx",
];

/// Scenario keys that only JMeter (or a browser) can honour.
const JMETER_ONLY: &[&str] = &[
    "script",
    "think-time",
    "data-sources",
    "variables",
    "include-scenario",
    "store-cookie",
    "store-cache",
    "retrieve-resources",
    "properties",
    "system-properties",
    "use-dns-cache-mgr",
    "force-parent-sample",
    "content-encoding",
    "follow-redirects",
    "random-controller",
    "browser",
    "generate-flow-markers",
];

/// Request keys that only JMeter can honour.
const JMETER_ONLY_REQUEST: &[&str] = &[
    "assert",
    "assert-jsonpath",
    "assert-xpath",
    "extract-regexp",
    "extract-jsonpath",
    "extract-xpath",
    "extract-css-jquery",
    "extract-boundary",
    "jsr223",
    "think-time",
    "upload-files",
    "body-file",
    "content-encoding",
    "follow-redirects",
    "if",
    "loop",
    "while",
    "foreach",
    "transaction",
    "include-scenario",
    "action",
    "set-variables",
];

struct Ctx<'a> {
    text: &'a str,
    file: &'a str,
}

impl Ctx<'_> {
    fn err(&self, keys: &[&str], message: String) -> PlanFileError {
        let (line, column) = locate(self.text, keys);
        PlanFileError {
            file: self.file.to_string(),
            line,
            column,
            message,
        }
    }
}

fn get<'v>(m: &'v Mapping, key: &str) -> Option<&'v Value> {
    m.get(Value::String(key.to_string()))
}

fn text_of(v: &Value) -> Option<String> {
    match v {
        Value::String(s) => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        Value::Bool(b) => Some(b.to_string()),
        _ => None,
    }
}

/// A Taurus duration: `30s`, `1m30s`, or a bare number of seconds.
fn duration(v: &Value) -> Option<String> {
    let t = text_of(v)?;
    Some(if t.chars().all(|c| c.is_ascii_digit() || c == '.') {
        format!("{t}s")
    } else {
        t
    })
}

fn number(v: &Value) -> Option<f64> {
    match v {
        Value::Number(n) => n.as_f64(),
        Value::String(s) => s.trim().parse().ok(),
        _ => None,
    }
}

/// Translates a Taurus config into a native plan file.
pub fn taurus_plan(text: &str, file: &str) -> Result<PlanFile, PlanFileError> {
    let cx = Ctx { text, file };
    let root: Value = serde_norway::from_str(text).map_err(|e| {
        let (line, column) = e.location().map_or((1, 1), |l| (l.line(), l.column()));
        PlanFileError {
            file: file.to_string(),
            line,
            column,
            message: e.to_string(),
        }
    })?;
    let root = root
        .as_mapping()
        .ok_or_else(|| cx.err(&[], "a Taurus config is a mapping".into()))?;
    for (k, _) in root {
        let key = k.as_str().unwrap_or("");
        if !matches!(
            key,
            "execution"
                | "scenarios"
                | "settings"
                | "modules"
                | "reporting"
                | "services"
                | "provisioning"
                | "included-configs"
                | "version"
        ) {
            return Err(cx.err(
                &[key],
                format!(
                    "{key}: not a Taurus section loadmark knows; it runs execution: and scenarios:"
                ),
            ));
        }
    }
    for key in ["services", "provisioning", "included-configs"] {
        if get(root, key).is_some() {
            return Err(cx.err(&[key], format!("{key}: loadmark does not run Taurus {key}; put servers under a native plan's services: (loadmark bench --explain prints one to start from)")));
        }
    }
    let executions: Vec<&Mapping> = match get(root, "execution") {
        Some(Value::Sequence(list)) => list.iter().filter_map(Value::as_mapping).collect(),
        Some(Value::Mapping(m)) => vec![m],
        _ => Vec::new(),
    };
    let [exec] = executions.as_slice() else {
        return Err(cx.err(
            &["execution"],
            format!(
                "execution: loadmark runs exactly one execution item, this config has {}",
                executions.len()
            ),
        ));
    };
    for (k, _) in *exec {
        let key = k.as_str().unwrap_or("");
        if !matches!(
            key,
            "executor"
                | "concurrency"
                | "ramp-up"
                | "hold-for"
                | "iterations"
                | "throughput"
                | "scenario"
                | "steps"
        ) {
            return Err(cx.err(&["execution", key], format!("execution.{key}: not something loadmark can honour (it runs concurrency, ramp-up, hold-for, iterations, throughput, scenario)")));
        }
    }
    if let Some(ex) = get(exec, "executor").and_then(Value::as_str) {
        if ex != "jmeter" {
            let why = if OTHER_EXECUTORS.contains(&ex) {
                "another tool's executor"
            } else {
                "an executor loadmark does not know"
            };
            return Err(cx.err(
                &["execution", "executor"],
                format!("execution.executor: {ex:?} is {why}; loadmark runs the HTTP requests of the default (jmeter) executor's scenarios, by itself"),
            ));
        }
    }
    if get(exec, "steps").is_some() {
        return Err(cx.err(&["execution", "steps"], "execution.steps: JMeter's stepped ramp-up is not supported; write load.stages in a native plan".into()));
    }
    let at = |key: &str| -> Result<Option<&Value>, PlanFileError> { Ok(get(exec, key)) };
    let bad = |key: &str, what: &str| {
        cx.err(
            &["execution", key],
            format!("execution.{key}: expected {what}"),
        )
    };
    let concurrency = match at("concurrency")? {
        Some(v) => Some(
            number(v)
                .filter(|n| *n >= 1.0)
                .ok_or_else(|| bad("concurrency", "a number of users, at least 1"))?
                as usize,
        ),
        None => None,
    };
    let ramp = match at("ramp-up")? {
        Some(v) => Some(duration(v).ok_or_else(|| bad("ramp-up", "a duration, e.g. 30s"))?),
        None => None,
    };
    let hold = match at("hold-for")? {
        Some(v) => Some(duration(v).ok_or_else(|| bad("hold-for", "a duration, e.g. 1m"))?),
        None => None,
    };
    let iterations = match at("iterations")? {
        Some(v) => Some(
            number(v)
                .filter(|n| *n >= 1.0)
                .ok_or_else(|| bad("iterations", "a count, at least 1"))? as u64,
        ),
        None => None,
    };
    let throughput = match at("throughput")? {
        Some(v) => Some(
            number(v)
                .filter(|n| *n > 0.0)
                .ok_or_else(|| bad("throughput", "requests per second"))?,
        ),
        None => None,
    };

    // The scenario: a name under `scenarios:`, or inline.
    let (scenario, sc_keys): (&Mapping, Vec<String>) = match get(exec, "scenario") {
        Some(Value::String(name)) => {
            let found = get(root, "scenarios")
                .and_then(Value::as_mapping)
                .and_then(|m| get(m, name))
                .and_then(Value::as_mapping)
                .ok_or_else(|| {
                    cx.err(
                        &["execution", "scenario"],
                        format!("execution.scenario: no scenario named {name:?} under scenarios:"),
                    )
                })?;
            (found, vec!["scenarios".into(), name.clone()])
        }
        Some(Value::Mapping(m)) => (m, vec!["execution".into(), "scenario".into()]),
        _ => {
            return Err(cx.err(
                &["execution"],
                "execution.scenario: give a scenario (its name under scenarios:, or inline)".into(),
            ))
        }
    };
    fn keys_with<'k>(base: &'k [String], extra: &'k str) -> Vec<&'k str> {
        base.iter().map(String::as_str).chain([extra]).collect()
    }

    for (k, _) in scenario {
        let key = k.as_str().unwrap_or("");
        if JMETER_ONLY.contains(&key) {
            let what = if key == "script" {
                "a JMeter or Selenium script"
            } else {
                "JMeter-only"
            };
            return Err(cx.err(
                &keys_with(&sc_keys, key),
                format!(
                    "{}.{key}: {what}; loadmark runs the HTTP requests themselves",
                    sc_keys.join(".")
                ),
            ));
        }
        if !matches!(
            key,
            "requests" | "default-address" | "headers" | "timeout" | "keepalive"
        ) {
            return Err(cx.err(&keys_with(&sc_keys, key), format!("{}.{key}: not something loadmark can honour (it runs requests, default-address, headers, timeout, keepalive)", sc_keys.join("."))));
        }
    }
    let address = get(scenario, "default-address")
        .and_then(Value::as_str)
        .unwrap_or("")
        .trim_end_matches('/')
        .to_string();
    let mut headers = IndexMap::new();
    if let Some(h) = get(scenario, "headers").and_then(Value::as_mapping) {
        for (k, v) in h {
            headers.insert(
                text_of(k).unwrap_or_default(),
                text_of(v).unwrap_or_default(),
            );
        }
    }
    let list = get(scenario, "requests")
        .and_then(Value::as_sequence)
        .ok_or_else(|| {
            cx.err(
                &keys_with(&sc_keys, "requests"),
                format!("{}.requests: give a list of requests", sc_keys.join(".")),
            )
        })?;
    let mut urls = Vec::new();
    let mut requests = Vec::new();
    for r in list {
        let (url, method, rheaders, body) = match r {
            Value::String(url) => (url.clone(), "GET".to_string(), IndexMap::new(), None),
            Value::Mapping(m) => {
                for (k, _) in m {
                    let key = k.as_str().unwrap_or("");
                    if JMETER_ONLY_REQUEST.contains(&key)
                        || !matches!(key, "url" | "method" | "headers" | "body" | "label")
                    {
                        return Err(cx.err(&keys_with(&sc_keys, key), format!("{}.requests: {key} is not something loadmark can honour (JMeter-only, or unknown); a request is url, method, headers, body, label", sc_keys.join("."))));
                    }
                }
                let url = get(m, "url").and_then(Value::as_str).ok_or_else(|| {
                    cx.err(
                        &keys_with(&sc_keys, "requests"),
                        format!("{}.requests: each request needs a url", sc_keys.join(".")),
                    )
                })?;
                let mut h = IndexMap::new();
                if let Some(hm) = get(m, "headers").and_then(Value::as_mapping) {
                    for (k, v) in hm {
                        h.insert(
                            text_of(k).unwrap_or_default(),
                            text_of(v).unwrap_or_default(),
                        );
                    }
                }
                let body = match get(m, "body") {
                    None => None,
                    Some(Value::String(s)) => Some(s.clone()),
                    Some(_) => return Err(cx.err(&keys_with(&sc_keys, "body"), "body: loadmark sends a body as written; give it as a string (a mapping is JMeter's form encoding)".into())),
                };
                let method = get(m, "method")
                    .and_then(Value::as_str)
                    .unwrap_or("GET")
                    .to_ascii_uppercase();
                (url.to_string(), method, h, body)
            }
            _ => {
                return Err(cx.err(
                    &keys_with(&sc_keys, "requests"),
                    "requests: each is a URL or a mapping with url".into(),
                ))
            }
        };
        let full = if url.starts_with("http://") || url.starts_with("https://") {
            url
        } else if address.is_empty() {
            return Err(cx.err(
                &keys_with(&sc_keys, "requests"),
                format!(
                    "{}.requests: {url:?} is relative and the scenario has no default-address",
                    sc_keys.join(".")
                ),
            ));
        } else {
            format!("{address}/{}", url.trim_start_matches('/'))
        };
        urls.push(full);
        requests.push((method, rheaders, body));
    }
    // One target: the common origin of every request; each request keeps its own path.
    let origin = |u: &str| -> String {
        let after = u.find("://").map_or(0, |i| i + 3);
        match u[after..].find('/') {
            Some(i) => u[..after + i].to_string(),
            None => u.to_string(),
        }
    };
    let base = origin(&urls[0]);
    if let Some(other) = urls.iter().find(|u| origin(u) != base) {
        return Err(cx.err(&keys_with(&sc_keys, "requests"), format!("{}.requests: {other:?} goes to another host than {base:?}; loadmark loads one target per step", sc_keys.join("."))));
    }
    let request_files: Vec<RequestFile> = urls
        .iter()
        .zip(requests)
        .map(|(u, (method, headers, body))| RequestFile {
            method,
            path: u[base.len()..].to_string(),
            headers,
            body,
            body_file: None,
            weight: None,
        })
        .collect();

    let mut load = LoadFile {
        keepalive: get(scenario, "keepalive").and_then(Value::as_bool),
        timeout: get(scenario, "timeout").and_then(duration),
        ..LoadFile::default()
    };
    let users = concurrency.unwrap_or(1);
    match (throughput, iterations) {
        (Some(_), Some(_)) => return Err(cx.err(&["execution", "iterations"], "execution: throughput with iterations: loadmark's open loop stops on time, give hold-for".into())),
        (Some(rate), None) => {
            load.max_connections = Some(users);
            match (&ramp, &hold) {
                (Some(r), Some(h)) => load.stages = Some(format!("{r}:0->{rate},{h}:{rate}")),
                (Some(r), None) => load.stages = Some(format!("{r}:0->{rate}")),
                (None, h) => {
                    load.rate = Some(rate);
                    load.duration = h.clone();
                }
            }
        }
        (None, Some(n)) => {
            if ramp.is_some() || hold.is_some() {
                return Err(cx.err(&["execution", "iterations"], "execution: iterations with ramp-up or hold-for: loadmark stops on a count or on time, not both".into()));
            }
            load.connections = Some(users);
            load.requests = Some(n * users as u64 * request_files.len() as u64);
        }
        (None, None) => {
            load.connections = Some(users);
            match (&ramp, &hold) {
                (Some(r), Some(h)) => load.stages = Some(format!("{r}:1->{users},{h}:{users}")),
                (Some(r), None) => load.stages = Some(format!("{r}:1->{users}")),
                (None, Some(h)) => load.duration = Some(h.clone()),
                (None, None) => return Err(cx.err(&["execution"], "execution: say how long (hold-for) or how many (iterations)".into())),
            }
        }
    }
    let single = request_files.len() == 1;
    let mut targets = IndexMap::new();
    targets.insert(
        "target".to_string(),
        TargetFile {
            url: base,
            headers,
            labels: IndexMap::new(),
            launch: None,
            attach: None,
            depends_on: Vec::new(),
            unix: None,
        },
    );
    Ok(PlanFile {
        name: Some(format!("{file} (Taurus config)")),
        description: None,
        services: IndexMap::new(),
        targets,
        request: if single {
            request_files[0].clone()
        } else {
            RequestFile::default()
        },
        requests: if single { Vec::new() } else { request_files },
        data: None,
        websocket: None,
        checks: Vec::new(),
        scenario: None,
        scenarios: Default::default(),
        grpc: None,
        find: None,
        load,
        sweep: Default::default(),
        pause: None,
        compare: Vec::new(),
        monitor: None,
        report: Default::default(),
        thresholds: Vec::new(),
    })
}

/// Applies `key=value` overrides (`-o execution.concurrency=600`, `-o load.connections=8`):
/// dot-separated keys, a number picks a list item, a word on a list applies to every item;
/// values are YAML scalars. Returns the new text (comments are not kept).
pub fn apply_overrides(text: &str, overrides: &[String]) -> Result<String, String> {
    if overrides.is_empty() {
        return Ok(text.to_string());
    }
    let mut root: Value = serde_norway::from_str(text).map_err(|e| e.to_string())?;
    for o in overrides {
        let (key, value) = o.split_once('=').ok_or_else(|| {
            format!("-o {o:?}: expected KEY=VALUE, e.g. execution.concurrency=600")
        })?;
        let value: Value =
            serde_norway::from_str(value).unwrap_or(Value::String(value.to_string()));
        let path: Vec<&str> = key.split('.').collect();
        set(&mut root, &path, &value).map_err(|why| format!("-o {o:?}: {why}"))?;
    }
    serde_norway::to_string(&root).map_err(|e| e.to_string())
}

fn set(node: &mut Value, path: &[&str], value: &Value) -> Result<(), String> {
    let Some((first, rest)) = path.split_first() else {
        *node = value.clone();
        return Ok(());
    };
    match node {
        Value::Sequence(items) => match first.parse::<usize>() {
            Ok(i) => {
                let len = items.len();
                let item = items
                    .get_mut(i)
                    .ok_or_else(|| format!("item {i} does not exist (the list has {len})"))?;
                set(item, rest, value)
            }
            Err(_) => items.iter_mut().try_for_each(|item| set(item, path, value)),
        },
        Value::Mapping(m) => {
            let entry = m
                .entry(Value::String(first.to_string()))
                .or_insert(if rest.is_empty() {
                    Value::Null
                } else {
                    Value::Mapping(Mapping::new())
                });
            set(entry, rest, value)
        }
        Value::Null => {
            *node = Value::Mapping(Mapping::new());
            set(node, path, value)
        }
        _ => Err(format!(
            "{first:?} is inside a value that is not a mapping or a list"
        )),
    }
}

#[cfg(test)]
#[path = "taurus_tests.rs"]
mod tests;

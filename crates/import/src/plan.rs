//! The plan an import produces, and its YAML.
//!
//! Importers fill a small model ([`PlanDoc`]) and one writer turns it into the YAML a person
//! would have written: block style, keys in the order the guides use, only what is not a
//! default, and every scalar quoted only when YAML needs it. The same model also gives the
//! plan as a JSON value ([`PlanDoc::to_value`]), so tests can check that loading the YAML
//! gives back exactly what the importer meant (the round trip the issue asks for).

use std::fmt::Write as _;
use std::time::Duration;

use serde_json::{json, Map, Value};

/// One generated plan: a single request, or a scenario of steps.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct PlanDoc {
    /// The plan's `name:`.
    pub name: String,
    /// Comment lines at the top: where the plan came from, what to look at.
    pub comments: Vec<String>,
    /// The target's name (`targets: {NAME: ...}`).
    pub target_name: String,
    /// The target's base URL: scheme, host and port (and a base path, if any).
    pub target_url: String,
    /// Headers every request carries (`targets.NAME.headers`).
    pub target_headers: Vec<(String, String)>,
    /// A CSV file beside the plan whose columns feed `{{csv NAME}}` (secrets, per-user data).
    pub data: Option<String>,
    /// What is sent: one request, or a journey.
    pub body: PlanBody,
    pub load: LoadDoc,
    /// Plan-wide checks (only for a single-request plan; a scenario checks per step).
    pub checks: Vec<String>,
}

/// A single request (`request:`), a scenario (`scenario:`), or several scenarios at once
/// (`scenarios:`, by name).
#[derive(Debug, Clone, PartialEq)]
pub enum PlanBody {
    Request(RequestDoc),
    Scenario(Vec<StepDoc>),
    /// Each with its own steps and load; the plan's [`PlanDoc::load`] then gives only what
    /// they share (`cookies`, `insecure`, `http2`).
    Scenarios(Vec<ScenarioDoc>),
}

/// One scenario of a plan's `scenarios:`.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ScenarioDoc {
    /// Its name: printable and unique within the plan ([`unique_scenario_names`]).
    pub name: String,
    pub steps: Vec<StepDoc>,
    /// Its `load:` (users, iterations, duration; the shared switches are the plan's).
    pub load: LoadDoc,
}

impl Default for PlanBody {
    fn default() -> Self {
        PlanBody::Scenario(Vec::new())
    }
}

/// One step of a scenario.
#[derive(Debug, Clone, PartialEq)]
pub enum StepDoc {
    Request(RequestDoc),
    /// A pause; `Some(max)` makes it a random time between the two.
    Think(Duration, Option<Duration>),
}

/// A request: in a scenario step (with name, extractions and checks) or the plan's own.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct RequestDoc {
    /// The step's name (scenario only); unique within the plan.
    pub name: Option<String>,
    /// A comment above the step (e.g. "a Postman script that could not be translated").
    pub comment: Option<String>,
    pub method: String,
    /// Path and query on the target, starting with `/`.
    pub url: String,
    pub headers: Vec<(String, String)>,
    pub body: Option<String>,
    /// A file holding the body, relative to the plan (single-request plans only).
    pub body_file: Option<String>,
    /// Variable name and extraction (`json /token`), in order.
    pub extract: Vec<(String, String)>,
    pub checks: Vec<String>,
}

/// The plan's `load:` section.
#[derive(Debug, Clone, PartialEq)]
pub struct LoadDoc {
    /// Users (scenario) or connections (single request).
    pub users: usize,
    /// Iterations (scenario) or requests (single request); `None` runs for `duration`.
    pub iterations: Option<u64>,
    pub duration: Option<String>,
    pub cookies: bool,
    pub insecure: bool,
    pub http2: bool,
}

impl Default for LoadDoc {
    fn default() -> Self {
        LoadDoc {
            users: 1,
            iterations: Some(1),
            duration: None,
            cookies: false,
            insecure: false,
            http2: false,
        }
    }
}

/// Formats a duration as plan files spell it (`250ms`, `2s`).
pub fn duration_text(d: Duration) -> String {
    let ms = d.as_millis();
    if ms.is_multiple_of(1000) && ms > 0 {
        format!("{}s", ms / 1000)
    } else {
        format!("{ms}ms")
    }
}

/// A YAML scalar for `text`: plain when YAML reads it back as the same string, quoted
/// otherwise. serde_norway knows YAML's rules (what looks like a number, a bool, a comment);
/// a string it would write as a block scalar is written as a JSON string instead, which is a
/// valid double-quoted YAML scalar and stays on one line.
pub fn scalar(text: &str) -> String {
    match serde_norway::to_string(text) {
        Ok(s) if !s.trim_end().contains('\n') => s.trim_end().to_string(),
        _ => serde_json::to_string(text).expect("a string serializes"),
    }
}

impl PlanDoc {
    /// The plan as YAML text.
    pub fn to_yaml(&self) -> String {
        let mut out = String::new();
        for line in &self.comments {
            let _ = writeln!(out, "# {line}");
        }
        let _ = writeln!(out, "name: {}", scalar(&self.name));
        let _ = writeln!(out, "targets:\n  {}:", scalar(&self.target_name));
        let _ = writeln!(out, "    url: {}", scalar(&self.target_url));
        write_map(&mut out, 4, "headers", &self.target_headers);
        if let Some(data) = &self.data {
            let _ = writeln!(out, "data: {}", scalar(data));
        }
        match &self.body {
            PlanBody::Request(r) => {
                out.push_str("request:\n");
                write_request(&mut out, 2, r, "path");
                write_list(&mut out, 0, "checks", &self.checks);
            }
            PlanBody::Scenario(steps) => {
                out.push_str("scenario:\n");
                for step in steps {
                    write_step(&mut out, 2, step);
                }
            }
            PlanBody::Scenarios(list) => {
                out.push_str("scenarios:\n");
                for sc in list {
                    let _ = writeln!(out, "  {}:", scalar(&sc.name));
                    out.push_str("    steps:\n");
                    for step in &sc.steps {
                        write_step(&mut out, 6, step);
                    }
                    write_model(&mut out, 4, &sc.load, ("users", "iterations"));
                }
            }
        }
        self.write_load(&mut out);
        out
    }

    fn write_load(&self, out: &mut String) {
        let l = &self.load;
        let mut shared = String::new();
        match self.body {
            PlanBody::Scenario(_) => write_model(&mut shared, 0, l, ("users", "iterations")),
            PlanBody::Request(_) => write_model(&mut shared, 0, l, ("connections", "requests")),
            PlanBody::Scenarios(_) => {}
        }
        for (key, on) in [
            ("cookies", l.cookies),
            ("insecure", l.insecure),
            ("http2", l.http2),
        ] {
            if on {
                if shared.is_empty() {
                    shared.push_str("load:\n");
                }
                let _ = writeln!(shared, "  {key}: true");
            }
        }
        out.push_str(&shared);
    }

    /// The plan as the JSON value its YAML means: what loading the YAML must give back.
    pub fn to_value(&self) -> Value {
        let mut target = Map::new();
        target.insert("url".into(), json!(self.target_url));
        if !self.target_headers.is_empty() {
            target.insert("headers".into(), pairs(&self.target_headers));
        }
        let mut plan = Map::new();
        plan.insert("name".into(), json!(self.name));
        plan.insert(
            "targets".into(),
            json!({ self.target_name.clone(): target }),
        );
        if let Some(data) = &self.data {
            plan.insert("data".into(), json!(data));
        }
        let mut load = Map::new();
        let mut model = true;
        match &self.body {
            PlanBody::Request(r) => {
                plan.insert("request".into(), request_value(r, "path"));
                if !self.checks.is_empty() {
                    plan.insert("checks".into(), json!(self.checks));
                }
                load.insert("connections".into(), json!(self.load.users));
                if let Some(n) = self.load.iterations {
                    load.insert("requests".into(), json!(n));
                }
            }
            PlanBody::Scenario(steps) => {
                let steps: Vec<Value> = steps.iter().map(step_value).collect();
                plan.insert("scenario".into(), Value::Array(steps));
                load.insert("users".into(), json!(self.load.users));
                if let Some(n) = self.load.iterations {
                    load.insert("iterations".into(), json!(n));
                }
            }
            PlanBody::Scenarios(list) => {
                model = false;
                let mut all = Map::new();
                for sc in list {
                    let steps: Vec<Value> = sc.steps.iter().map(step_value).collect();
                    let mut own = Map::new();
                    own.insert("users".into(), json!(sc.load.users));
                    if let Some(n) = sc.load.iterations {
                        own.insert("iterations".into(), json!(n));
                    }
                    if let Some(d) = &sc.load.duration {
                        own.insert("duration".into(), json!(d));
                    }
                    all.insert(
                        sc.name.clone(),
                        json!({ "steps": steps, "load": Value::Object(own) }),
                    );
                }
                plan.insert("scenarios".into(), Value::Object(all));
            }
        }
        if let (Some(d), true) = (&self.load.duration, model) {
            load.insert("duration".into(), json!(d));
        }
        for (key, on) in [
            ("cookies", self.load.cookies),
            ("insecure", self.load.insecure),
            ("http2", self.load.http2),
        ] {
            if on {
                load.insert(key.into(), json!(true));
            }
        }
        if !load.is_empty() {
            plan.insert("load".into(), Value::Object(load));
        }
        Value::Object(plan)
    }
}

fn pairs(list: &[(String, String)]) -> Value {
    Value::Object(
        list.iter()
            .map(|(k, v)| (k.clone(), json!(v)))
            .collect::<Map<_, _>>(),
    )
}

fn request_value(r: &RequestDoc, url_key: &str) -> Value {
    let mut m = Map::new();
    if r.method != "GET" || url_key == "path" {
        m.insert("method".into(), json!(r.method));
    }
    m.insert(url_key.into(), json!(r.url));
    if !r.headers.is_empty() {
        m.insert("headers".into(), pairs(&r.headers));
    }
    if let Some(b) = &r.body {
        m.insert("body".into(), json!(b));
    }
    if let Some(f) = &r.body_file {
        m.insert("body_file".into(), json!(f));
    }
    Value::Object(m)
}

fn step_value(step: &StepDoc) -> Value {
    match step {
        StepDoc::Think(a, b) => json!({ "think": think_text(*a, *b) }),
        StepDoc::Request(r) => {
            let mut m = Map::new();
            if let Some(n) = &r.name {
                m.insert("name".into(), json!(n));
            }
            m.insert("request".into(), request_value(r, "url"));
            if !r.extract.is_empty() {
                m.insert("extract".into(), pairs(&r.extract));
            }
            if !r.checks.is_empty() {
                m.insert("check".into(), json!(r.checks));
            }
            Value::Object(m)
        }
    }
}

fn think_text(a: Duration, b: Option<Duration>) -> String {
    match b {
        Some(b) => format!("{}..{}", duration_text(a), duration_text(b)),
        None => duration_text(a),
    }
}

/// A `load:` with users and iterations (or connections and requests) and duration, at
/// `indent`; the shared switches are written by the caller.
fn write_model(out: &mut String, indent: usize, l: &LoadDoc, keys: (&str, &str)) {
    let pad = " ".repeat(indent);
    let _ = writeln!(out, "{pad}load:");
    let _ = writeln!(out, "{pad}  {}: {}", keys.0, l.users);
    if let Some(n) = l.iterations {
        let _ = writeln!(out, "{pad}  {}: {n}", keys.1);
    }
    if let Some(d) = &l.duration {
        let _ = writeln!(out, "{pad}  duration: {}", scalar(d));
    }
}

/// A step as a list item at `indent` (2 under `scenario:`, 6 under `scenarios.NAME.steps`).
fn write_step(out: &mut String, indent: usize, step: &StepDoc) {
    let pad = " ".repeat(indent);
    match step {
        StepDoc::Think(a, b) => {
            let _ = writeln!(out, "{pad}- think: {}", think_text(*a, *b));
        }
        StepDoc::Request(r) => {
            if let Some(c) = &r.comment {
                for line in c.lines() {
                    let _ = writeln!(out, "{pad}# {line}");
                }
            }
            // The first key goes on the list item's line, the rest under it.
            match &r.name {
                Some(n) => {
                    let _ = writeln!(out, "{pad}- name: {}", scalar(n));
                    let _ = writeln!(out, "{pad}  request:");
                }
                None => {
                    let _ = writeln!(out, "{pad}- request:");
                }
            }
            write_request(out, indent + 4, r, "url");
            write_map(out, indent + 2, "extract", &r.extract);
            write_list(out, indent + 2, "check", &r.checks);
        }
    }
}

fn write_request(out: &mut String, indent: usize, r: &RequestDoc, url_key: &str) {
    let pad = " ".repeat(indent);
    // A scenario step's method defaults to GET; a single request is spelled out in full.
    if r.method != "GET" || url_key == "path" {
        let _ = writeln!(out, "{pad}method: {}", scalar(&r.method));
    }
    let _ = writeln!(out, "{pad}{url_key}: {}", scalar(&r.url));
    write_map(out, indent, "headers", &r.headers);
    if let Some(b) = &r.body {
        let _ = writeln!(out, "{pad}body: {}", scalar(b));
    }
    if let Some(f) = &r.body_file {
        let _ = writeln!(out, "{pad}body_file: {}", scalar(f));
    }
}

fn write_map(out: &mut String, indent: usize, key: &str, list: &[(String, String)]) {
    if list.is_empty() {
        return;
    }
    let pad = " ".repeat(indent);
    let _ = writeln!(out, "{pad}{key}:");
    for (k, v) in list {
        let _ = writeln!(out, "{pad}  {}: {}", scalar(k), scalar(v));
    }
}

fn write_list(out: &mut String, indent: usize, key: &str, list: &[String]) {
    if list.is_empty() {
        return;
    }
    let pad = " ".repeat(indent);
    let _ = writeln!(out, "{pad}{key}:");
    for item in list {
        let _ = writeln!(out, "{pad}  - {}", scalar(item));
    }
}

/// Step names must differ: a repeated `GET /items` becomes `GET /items (2)`.
pub fn unique_names(steps: &mut [StepDoc]) {
    let mut seen: Vec<String> = Vec::new();
    for step in steps {
        if let StepDoc::Request(r) = step {
            let base = r
                .name
                .clone()
                .unwrap_or_else(|| format!("{} {}", r.method, r.url));
            let mut name = base.clone();
            let mut n = 1;
            while seen.contains(&name) {
                n += 1;
                name = format!("{base} ({n})");
            }
            seen.push(name.clone());
            r.name = Some(name);
        }
    }
}

/// Scenario names as a plan takes them: printable (control characters become spaces,
/// surrounding space trimmed, an empty one `scenario`) and unique (`Health (2)`).
pub fn unique_scenario_names(list: &mut [ScenarioDoc]) {
    let mut seen: Vec<String> = Vec::new();
    for sc in list {
        let cleaned: String = sc
            .name
            .chars()
            .map(|c| if c.is_control() { ' ' } else { c })
            .collect();
        let base = match cleaned.trim() {
            "" => "scenario".to_string(),
            t => t.to_string(),
        };
        let mut name = base.clone();
        let mut n = 1;
        while seen.contains(&name) {
            n += 1;
            name = format!("{base} ({n})");
        }
        seen.push(name.clone());
        sc.name = name;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scenario_names_are_made_printable_and_unique() {
        let sc = |n: &str| ScenarioDoc {
            name: n.into(),
            ..Default::default()
        };
        let mut list = vec![sc("Health"), sc(" Health\n"), sc("\t"), sc("a\u{7}b")];
        unique_scenario_names(&mut list);
        let names: Vec<_> = list.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(names, ["Health", "Health (2)", "scenario", "a b"]);
    }

    #[test]
    fn scalars_are_quoted_only_when_yaml_needs_it() {
        assert_eq!(scalar("/items"), "/items");
        assert_eq!(scalar("status == 200"), "status == 200");
        assert_eq!(scalar("true"), "'true'");
        assert_eq!(scalar("123"), "'123'");
        assert_eq!(scalar("a: b"), "'a: b'");
        assert_eq!(scalar("# no"), "'# no'");
        assert_eq!(scalar("two\nlines"), "\"two\\nlines\"");
        assert_eq!(scalar(""), "''");
    }

    #[test]
    fn durations_are_spelled_as_plans_spell_them() {
        assert_eq!(duration_text(Duration::from_millis(1500)), "1500ms");
        assert_eq!(duration_text(Duration::from_secs(2)), "2s");
        assert_eq!(duration_text(Duration::ZERO), "0ms");
    }

    #[test]
    fn repeated_step_names_are_numbered() {
        let r = |m: &str, u: &str| {
            StepDoc::Request(RequestDoc {
                method: m.into(),
                url: u.into(),
                ..Default::default()
            })
        };
        let mut steps = vec![r("GET", "/a"), r("GET", "/a"), r("POST", "/a")];
        unique_names(&mut steps);
        let names: Vec<_> = steps
            .iter()
            .map(|s| match s {
                StepDoc::Request(r) => r.name.clone().unwrap(),
                _ => unreachable!(),
            })
            .collect();
        assert_eq!(names, ["GET /a", "GET /a (2)", "POST /a"]);
    }
}

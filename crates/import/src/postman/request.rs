//! One Postman request item as a scenario step.

use base64::Engine as _;
use indexmap::IndexMap;
use serde_json::{json, Value};

use super::script::{translate, Script};
use super::{script_lines, Item};
use crate::curl::{urlencode, BOUNDARY};
use crate::plan::RequestDoc;
use crate::secrets::{is_secret_header, Secrets};
use crate::values::var_name;

/// Builds steps in order, tracking variables: their values, and which ones a response set.
pub struct Builder {
    vars: IndexMap<String, String>,
    /// Postman names set from a response by an earlier step of this scenario: `{{var}}`
    /// from then on.
    extracted: Vec<String>,
    /// Names set from a response in an earlier scenario (another folder): not this one's.
    elsewhere: Vec<String>,
    /// A literal `{{` met since [`Builder::take_literal`] last looked.
    literal: bool,
    secrets: Secrets,
    /// Variables with no value anywhere: data-file columns.
    columns: Vec<(String, String)>,
    origin: Option<String>,
    warnings: Vec<String>,
}

impl Builder {
    pub fn new(vars: IndexMap<String, String>, secrets: Secrets) -> Builder {
        Builder {
            vars,
            extracted: Vec::new(),
            elsewhere: Vec::new(),
            literal: false,
            secrets,
            columns: Vec::new(),
            origin: None,
            warnings: Vec::new(),
        }
    }

    /// The next steps are another scenario's: the variables responses set so far are not
    /// its own.
    pub fn new_scenario(&mut self) {
        for v in self.extracted.drain(..) {
            if !self.elsewhere.contains(&v) {
                self.elsewhere.push(v);
            }
        }
    }

    /// Whether a literal `{{` was met since the last call.
    fn take_literal(&mut self) -> bool {
        std::mem::take(&mut self.literal)
    }

    /// The step for a request item; `None` if it goes to another host than the first, or
    /// holds a literal `{{` (said).
    pub fn step(&mut self, it: &Item) -> Option<RequestDoc> {
        let name = it.name.clone();
        let events = it.item.get("event");
        let pre = translate(&script_lines(events, "prerequest"));
        self.vars.extend(pre.sets.iter().cloned());
        self.list(&name, "pre-request", &pre.untranslated);
        for (var, _) in &pre.extracts {
            self.warnings.push(format!("{name:?}: pre-request script sets {var} from a response it has not got; not translated"));
        }
        let req = it.item.get("request").cloned().unwrap_or(Value::Null);
        let req = match req {
            Value::String(url) => json!({ "url": url }),
            other => other,
        };
        self.take_literal();
        let url = self.subst(&url_text(req.get("url")), &name);
        let mut literal = self.take_literal().then_some("URL");
        let (origin, path) = split_url(&url);
        match &self.origin {
            None => self.origin = Some(origin),
            Some(o) if *o != origin => {
                self.warnings.push(format!(
                    "{name:?}: left out, it goes to {origin}, not {o} (a plan has one target)"
                ));
                return None;
            }
            Some(_) => {}
        }
        let mut headers = self.headers(&req, &name);
        let mut path = path;
        self.auth(it.auth, &name, &mut headers, &mut path);
        literal = literal.or(self.take_literal().then_some("headers or auth"));
        let body = self.body(req.get("body"), &name, &mut headers);
        literal = literal.or(self.take_literal().then_some("body"));
        if let Some(field) = literal {
            self.warnings.push(crate::literal::left_out(&name, field));
            return None;
        }
        let tests = translate(&script_lines(events, "test"));
        self.list(&name, "test", &tests.untranslated);
        let extract = self.learn(&tests);
        Some(RequestDoc {
            name: Some(name),
            method: req
                .get("method")
                .and_then(Value::as_str)
                .unwrap_or("GET")
                .to_ascii_uppercase(),
            url: path,
            headers,
            body,
            extract,
            checks: tests.checks,
            ..Default::default()
        })
    }

    /// The target's origin, the warnings, and the data file's columns.
    pub fn finish(self) -> (Option<String>, Vec<String>, Vec<(String, String)>) {
        let (mut cols, secret_warnings) = self.secrets.finish();
        let mut warnings = self.warnings;
        warnings.extend(secret_warnings);
        cols.extend(self.columns);
        (self.origin, warnings, cols)
    }

    fn list(&mut self, name: &str, kind: &str, lines: &[String]) {
        for l in lines {
            self.warnings
                .push(format!("{name:?}: {kind} script line not translated: {l}"));
        }
    }

    /// What a test script set: extractions on this step (variables from the next step on),
    /// literal values.
    fn learn(&mut self, tests: &Script) -> Vec<(String, String)> {
        let mut out = Vec::new();
        for (var, extraction) in &tests.extracts {
            if !self.extracted.contains(var) {
                self.extracted.push(var.clone());
            }
            out.push((var_name(var), extraction.clone()));
        }
        self.vars.extend(tests.sets.iter().cloned());
        out
    }

    /// `{{name}}` filled in: a variable a response set stays a plan variable, one with a
    /// value is replaced by it, `{{$randomInt}}` becomes `{{rand_int 0 1000}}`, any other a
    /// data-file column (said).
    fn subst(&mut self, text: &str, place: &str) -> String {
        self.subst_depth(text, place, 0)
    }

    fn subst_depth(&mut self, text: &str, place: &str, depth: usize) -> String {
        let mut out = String::new();
        let mut rest = text;
        while let Some(start) = rest.find("{{") {
            let Some(len) = rest[start..].find("}}") else {
                self.literal = true;
                break;
            };
            out.push_str(&rest[..start]);
            let name = rest[start + 2..start + len].trim().to_string();
            rest = &rest[start + len + 2..];
            // `{{}}`, `{{{x}}}`: not a Postman variable, sent as it is; a plan cannot.
            if name.is_empty() || name.contains(['{', '}']) {
                self.literal = true;
                out.push_str("{{");
                out.push_str(&name);
                out.push_str("}}");
                continue;
            }
            let value = if self.extracted.contains(&name) {
                format!("{{{{{}}}}}", var_name(&name))
            } else if let Some(v) = self.vars.get(&name).cloned().filter(|_| depth < 4) {
                self.subst_depth(&v, place, depth + 1)
            } else if name == "$randomInt" {
                "{{rand_int 0 1000}}".into()
            } else if self.elsewhere.contains(&name) {
                self.column_with(&name, place, "is set from a response in another folder (another scenario here; --flatten runs the folders in order as one)")
            } else {
                self.column(&name, place)
            };
            out.push_str(&value);
        }
        out.push_str(rest);
        out
    }

    fn column(&mut self, name: &str, place: &str) -> String {
        self.column_with(name, place, "has no value in the collection or environment")
    }

    fn column_with(&mut self, name: &str, place: &str, why: &str) -> String {
        let col = var_name(name.trim_start_matches('$'));
        if !self.columns.iter().any(|(c, _)| *c == col) {
            self.warnings.push(format!(
                "{place:?}: {{{{{name}}}}} {why}: read from the data file's column {col}"
            ));
            self.columns.push((col.clone(), String::new()));
        }
        format!("{{{{csv {col}}}}}")
    }

    fn headers(&mut self, req: &Value, place: &str) -> Vec<(String, String)> {
        let mut out = Vec::new();
        for h in req
            .get("header")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            if h.get("disabled").and_then(Value::as_bool) == Some(true) {
                continue;
            }
            let (Some(k), Some(v)) = (
                h.get("key").and_then(Value::as_str),
                h.get("value").and_then(Value::as_str),
            ) else {
                continue;
            };
            let value = self.subst(v, place);
            let value = self.secret(k, value, place, is_secret_header(k));
            out.push((k.to_string(), value));
        }
        out
    }

    /// A credential written as a literal goes to the data file (unless --keep-secrets);
    /// one made of plan variables stays.
    fn secret(&mut self, hint: &str, value: String, place: &str, secret: bool) -> String {
        if !secret || value.contains("{{") {
            return value;
        }
        self.secrets
            .replace(hint, &value, &format!("{place}: {hint}"))
    }

    /// The item's auth (or its folders'/collection's) as a header or a query parameter.
    fn auth(
        &mut self,
        auth: Option<&Value>,
        place: &str,
        headers: &mut Vec<(String, String)>,
        path: &mut String,
    ) {
        let Some(auth) = auth else { return };
        let kind = auth.get("type").and_then(Value::as_str).unwrap_or("noauth");
        let param = |key: &str| auth_param(auth, kind, key);
        match kind {
            "noauth" => {}
            "bearer" => {
                let token = self.subst(&param("token").unwrap_or_default(), place);
                let value = self.secret("token", token, place, true);
                headers.push(("Authorization".into(), format!("Bearer {value}")));
            }
            "basic" => {
                let user = self.subst(&param("username").unwrap_or_default(), place);
                let pass = self.subst(&param("password").unwrap_or_default(), place);
                let value = if format!("{user}{pass}").contains("{{") {
                    self.column("basic_credentials", place)
                } else {
                    let b64 =
                        base64::engine::general_purpose::STANDARD.encode(format!("{user}:{pass}"));
                    self.secret("basic", b64, place, true)
                };
                headers.push(("Authorization".into(), format!("Basic {value}")));
            }
            "apikey" => {
                let key = self.subst(&param("key").unwrap_or_else(|| "X-API-Key".into()), place);
                let value = self.subst(&param("value").unwrap_or_default(), place);
                let value = self.secret(&key, value, place, true);
                if param("in").as_deref() == Some("query") {
                    let sep = if path.contains('?') { '&' } else { '?' };
                    path.push_str(&format!("{sep}{key}={value}"));
                } else {
                    headers.push((key, value));
                }
            }
            other => self.warnings.push(format!(
                "{place:?}: {other} auth is not translated (bearer, basic and apikey are)"
            )),
        }
    }

    fn body(
        &mut self,
        body: Option<&Value>,
        place: &str,
        headers: &mut Vec<(String, String)>,
    ) -> Option<String> {
        let body = body?;
        let mode = body.get("mode").and_then(Value::as_str).unwrap_or("raw");
        let (text, content_type) = match mode {
            "raw" => {
                let raw = body.get("raw").and_then(Value::as_str).unwrap_or("");
                let json = body
                    .pointer("/options/raw/language")
                    .and_then(Value::as_str)
                    == Some("json");
                (
                    self.subst(raw, place),
                    json.then_some("application/json".to_string()),
                )
            }
            "urlencoded" => {
                let pairs: Vec<String> = self
                    .fields(body.get("urlencoded"), place)
                    .into_iter()
                    .map(|(k, v)| format!("{}={}", enc(&k), enc(&v)))
                    .collect();
                (
                    pairs.join("&"),
                    Some("application/x-www-form-urlencoded".into()),
                )
            }
            "formdata" => {
                let mut text = String::new();
                for (k, v) in self.fields(body.get("formdata"), place) {
                    text.push_str(&format!("--{BOUNDARY}\r\nContent-Disposition: form-data; name=\"{k}\"\r\n\r\n{v}\r\n"));
                }
                text.push_str(&format!("--{BOUNDARY}--\r\n"));
                (
                    text,
                    Some(format!("multipart/form-data; boundary={BOUNDARY}")),
                )
            }
            "graphql" => {
                let g = body.get("graphql").cloned().unwrap_or(Value::Null);
                let query = g.get("query").and_then(Value::as_str).unwrap_or("");
                let variables = match g.get("variables") {
                    Some(Value::String(s)) if !s.trim().is_empty() => {
                        serde_json::from_str(s).unwrap_or(json!({}))
                    }
                    Some(v @ Value::Object(_)) => v.clone(),
                    _ => json!({}),
                };
                let text = json!({ "query": query, "variables": variables }).to_string();
                (self.subst(&text, place), Some("application/json".into()))
            }
            other => {
                self.warnings.push(format!("{place:?}: a {other} body is not imported (raw, urlencoded, formdata and graphql are)"));
                return None;
            }
        };
        let has_type = headers
            .iter()
            .any(|(k, _)| k.eq_ignore_ascii_case("content-type"));
        if let (Some(ct), false) = (content_type, has_type) {
            headers.push(("Content-Type".into(), ct));
        }
        Some(text)
    }

    /// Enabled text fields of a urlencoded or formdata body; file parts are said.
    fn fields(&mut self, list: Option<&Value>, place: &str) -> Vec<(String, String)> {
        let mut out = Vec::new();
        for f in list.and_then(Value::as_array).into_iter().flatten() {
            if f.get("disabled").and_then(Value::as_bool) == Some(true) {
                continue;
            }
            let key = f.get("key").and_then(Value::as_str).unwrap_or("");
            if f.get("type").and_then(Value::as_str) == Some("file") {
                self.warnings.push(format!(
                    "{place:?}: the file part {key:?} is left out (only text parts are sent)"
                ));
                continue;
            }
            let value = f.get("value").and_then(Value::as_str).unwrap_or("");
            out.push((self.subst(key, place), self.subst(value, place)));
        }
        out
    }
}

/// Percent-encodes a form value, but not a `{{placeholder}}` in it.
fn enc(s: &str) -> String {
    if s.contains("{{") {
        s.to_string()
    } else {
        urlencode(s.as_bytes())
    }
}

/// An auth parameter: v2.1 lists `[{key, value}]`, v2.0 has an object.
fn auth_param(auth: &Value, kind: &str, key: &str) -> Option<String> {
    match auth.get(kind)? {
        Value::Array(list) => list
            .iter()
            .find(|p| p.get("key").and_then(Value::as_str) == Some(key))
            .and_then(|p| p.get("value"))
            .and_then(Value::as_str)
            .map(str::to_string),
        Value::Object(m) => m.get(key).and_then(Value::as_str).map(str::to_string),
        _ => None,
    }
}

/// A request's URL as text: a string, the object's `raw`, else built from its parts; path
/// variables (`:id`) filled from its `variable` list.
fn url_text(url: Option<&Value>) -> String {
    let Some(url) = url else { return String::new() };
    let mut text = match url {
        Value::String(s) => return s.clone(),
        _ => url
            .get("raw")
            .and_then(Value::as_str)
            .map(str::to_string)
            .unwrap_or_else(|| built(url)),
    };
    for v in url
        .get("variable")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        if let (Some(k), Some(val)) = (
            v.get("key").and_then(Value::as_str),
            v.get("value").and_then(Value::as_str),
        ) {
            text = text.replace(&format!("/:{k}"), &format!("/{val}"));
        }
    }
    text
}

fn built(url: &Value) -> String {
    let join = |v: Option<&Value>, sep: &str| match v {
        Some(Value::Array(l)) => l
            .iter()
            .filter_map(Value::as_str)
            .collect::<Vec<_>>()
            .join(sep),
        Some(Value::String(s)) => s.clone(),
        _ => String::new(),
    };
    let mut text = format!(
        "{}://{}",
        url.get("protocol")
            .and_then(Value::as_str)
            .unwrap_or("http"),
        join(url.get("host"), ".")
    );
    if let Some(p) = url.get("port").and_then(Value::as_str) {
        text.push_str(&format!(":{p}"));
    }
    text.push('/');
    text.push_str(&join(url.get("path"), "/"));
    let query: Vec<String> = url
        .get("query")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter(|q| q.get("disabled").and_then(Value::as_bool) != Some(true))
        .filter_map(|q| {
            Some(format!(
                "{}={}",
                q.get("key")?.as_str()?,
                q.get("value").and_then(Value::as_str).unwrap_or("")
            ))
        })
        .collect();
    if !query.is_empty() {
        text.push_str(&format!("?{}", query.join("&")));
    }
    text
}

/// `http://h:1/p?q#f` as (`http://h:1`, `/p?q`); no scheme means http.
fn split_url(text: &str) -> (String, String) {
    let text = text.split('#').next().unwrap_or(text);
    let (scheme, rest) = text.split_once("://").unwrap_or(("http", text));
    let end = rest.find(['/', '?']).unwrap_or(rest.len());
    let path = &rest[end..];
    let path = if path.starts_with('/') {
        path.to_string()
    } else {
        format!("/{path}")
    };
    (
        format!("{}://{}", scheme.to_ascii_lowercase(), &rest[..end]),
        path,
    )
}

//! One operation as a scenario step: its parameters filled, its body, its security
//! scheme's headers and its checks.

use serde_json::Value;

use super::example::{example, given};
use super::{Doc, OpenApiOptions};
use crate::plan::RequestDoc;
use crate::values::var_name;
use crate::{curl::urlencode, pointer_token};

/// Builds steps and remembers what they need: the security schemes' data-file columns.
pub struct Builder<'a> {
    doc: &'a Doc,
    opts: &'a OpenApiOptions,
    columns: Vec<(String, String)>,
    warnings: Vec<String>,
    left_out: Vec<String>,
}

/// Media types a body is sent as, the first the operation offers winning.
const BODY_TYPES: &[&str] = &[
    "application/json",
    "+json",
    "application/x-www-form-urlencoded",
    "multipart/form-data",
    "text/plain",
];

impl<'a> Builder<'a> {
    pub fn new(doc: &'a Doc, opts: &'a OpenApiOptions) -> Builder<'a> {
        Builder {
            doc,
            opts,
            columns: Vec::new(),
            warnings: Vec::new(),
            left_out: Vec::new(),
        }
    }

    /// The step for `method path` (`item` is the path item, for its shared parameters); or
    /// the field whose documented example holds a literal `{{` (no plan can send it).
    pub fn step(
        &mut self,
        path: &str,
        method: &str,
        item: &Value,
        op: &Value,
        base_path: &str,
    ) -> Result<RequestDoc, String> {
        let place = format!("{method} {path}");
        let mut url = path.to_string();
        let mut query: Vec<(String, String)> = Vec::new();
        let mut headers: Vec<(String, String)> = Vec::new();
        let mut cookies: Vec<String> = Vec::new();
        for p in self.parameters(item, op) {
            let name = p
                .get("name")
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_string();
            let location = p.get("in").and_then(Value::as_str).unwrap_or("");
            let required = p.get("required").and_then(Value::as_bool) == Some(true);
            let (value, documented) = self.param_value(p);
            if location != "path" && !required && !documented {
                self.left_out.push(format!("{place} ({name})"));
                continue;
            }
            match location {
                "path" => {
                    let text = scalar(&value);
                    url = url.replace(&format!("{{{name}}}"), &urlencode(text.as_bytes()));
                }
                "query" => query.extend(query_pairs(&name, &value)),
                "header" => headers.push((name, scalar(&value))),
                "cookie" => cookies.push(format!("{name}={}", scalar(&value))),
                _ => {}
            }
        }
        // The document's own values, before the security schemes' `{{csv NAME}}`.
        let literal = crate::literal::holding(
            [("path".to_string(), url.as_str())]
                .into_iter()
                .chain(
                    query
                        .iter()
                        .map(|(k, v)| (format!("{k} parameter"), v.as_str())),
                )
                .chain(
                    query
                        .iter()
                        .map(|(k, _)| (format!("{k} parameter"), k.as_str())),
                )
                .chain(
                    headers
                        .iter()
                        .map(|(k, v)| (format!("{k} header"), v.as_str())),
                )
                .chain(
                    cookies
                        .iter()
                        .map(|c| ("Cookie header".to_string(), c.as_str())),
                ),
        );
        if let Some(field) = literal {
            return Err(field);
        }
        self.security(op, &place, &mut headers, &mut query, &mut cookies);
        if !cookies.is_empty() {
            headers.push(("Cookie".into(), cookies.join("; ")));
        }
        let body = self.body(op, &place, &mut headers);
        if body.as_deref().is_some_and(|b| b.contains("{{")) {
            return Err("body".into());
        }
        let mut url = format!("{base_path}{url}");
        if !query.is_empty() {
            let q: Vec<String> = query.iter().map(|(k, v)| format!("{k}={v}")).collect();
            url = format!("{url}?{}", q.join("&"));
        }
        Ok(RequestDoc {
            name: op
                .get("operationId")
                .and_then(Value::as_str)
                .map(str::to_string),
            method: method.to_string(),
            url,
            headers,
            body,
            checks: self.checks(op, &place),
            ..Default::default()
        })
    }

    /// The data-file columns and the warnings, once every step is built.
    pub fn finish(mut self) -> (Vec<(String, String)>, Vec<String>) {
        if !self.left_out.is_empty() {
            self.warnings.push(format!(
                "left out optional parameters that have no example or default: {}",
                self.left_out.join(", ")
            ));
        }
        (self.columns, self.warnings)
    }

    /// The path item's parameters, then the operation's (which override by name and place).
    fn parameters(&self, item: &'a Value, op: &'a Value) -> Vec<&'a Value> {
        let mut out: Vec<&Value> = Vec::new();
        for list in [item.get("parameters"), op.get("parameters")] {
            for p in list.and_then(Value::as_array).into_iter().flatten() {
                let p = self.doc.resolve(p);
                let key = |v: &Value| (v.get("name").cloned(), v.get("in").cloned());
                out.retain(|q| key(q) != key(p));
                out.push(p);
            }
        }
        out
    }

    /// A parameter's value, and whether the document gave it (rather than generated).
    fn param_value(&self, p: &Value) -> (Value, bool) {
        if let Some(v) = p.get("example") {
            return (v.clone(), true);
        }
        if let Some(v) = first_example(self.doc, p.get("examples")) {
            return (v, true);
        }
        let schema = self.doc.resolve(p.get("schema").unwrap_or(&Value::Null));
        match given(schema) {
            Some(v) => (v, true),
            None => (example(self.doc, schema), false),
        }
    }

    /// The operation's security requirement (its own, else the document's): the first
    /// alternative, each scheme's credential a data-file column.
    fn security(
        &mut self,
        op: &Value,
        place: &str,
        headers: &mut Vec<(String, String)>,
        query: &mut Vec<(String, String)>,
        cookies: &mut Vec<String>,
    ) {
        let reqs = op.get("security").or(self.doc.root.get("security"));
        let Some(first) = reqs.and_then(|r| r.as_array()?.first()?.as_object()) else {
            return;
        };
        for name in first.keys() {
            let scheme = self
                .doc
                .root
                .pointer(&format!(
                    "/components/securitySchemes/{}",
                    pointer_token(name)
                ))
                .map(|s| self.doc.resolve(s))
                .unwrap_or(&Value::Null);
            let kind = scheme.get("type").and_then(Value::as_str).unwrap_or("");
            let http = scheme.get("scheme").and_then(Value::as_str).unwrap_or("");
            let col = self.column(name, kind, http);
            let csv = format!("{{{{csv {col}}}}}");
            match (kind, http.to_ascii_lowercase().as_str()) {
                ("http", "basic") => headers.push(("Authorization".into(), format!("Basic {csv}"))),
                ("http", "bearer") | ("oauth2" | "openIdConnect", _) => {
                    headers.push(("Authorization".into(), format!("Bearer {csv}")))
                }
                ("apiKey", _) => {
                    let key = scheme.get("name").and_then(Value::as_str).unwrap_or(name);
                    match scheme.get("in").and_then(Value::as_str) {
                        Some("query") => query.push((key.to_string(), csv)),
                        Some("cookie") => cookies.push(format!("{key}={csv}")),
                        _ => headers.push((key.to_string(), csv)),
                    }
                }
                _ => self.warnings.push(format!(
                    "{place}: security scheme {name:?} ({kind} {http}) is not sent: loadmark maps bearer, basic, apiKey and OAuth2 tokens"
                )),
            }
        }
    }

    /// The data-file column for a security scheme, said once.
    fn column(&mut self, scheme: &str, kind: &str, http: &str) -> String {
        let col = var_name(scheme);
        if !self.columns.iter().any(|(c, _)| *c == col) {
            let what = match (kind, http) {
                ("http", "basic") => "base64 of USER:PASSWORD",
                ("apiKey", _) => "the API key",
                _ => "a token",
            };
            let label = format!("{kind} {http}");
            self.warnings.push(format!(
                "security scheme {scheme:?} ({}): sent from {{{{csv {col}}}}}; fill in {what} in the data file",
                label.trim()
            ));
            self.columns.push((col.clone(), String::new()));
        }
        col
    }

    /// The request body: the media type's example, else one generated from its schema.
    fn body(
        &mut self,
        op: &Value,
        place: &str,
        headers: &mut Vec<(String, String)>,
    ) -> Option<String> {
        let rb = self.doc.resolve(op.get("requestBody")?);
        let content = rb.get("content")?.as_object()?;
        let (media, m) = BODY_TYPES
            .iter()
            .find_map(|want| {
                content
                    .iter()
                    .find(|(k, _)| k.starts_with(want) || k.ends_with(want))
            })
            .or_else(|| content.iter().next())?;
        let value = match m.get("example") {
            Some(v) => v.clone(),
            None => first_example(self.doc, m.get("examples"))
                .unwrap_or_else(|| example(self.doc, m.get("schema").unwrap_or(&Value::Null))),
        };
        let (content_type, text) = encode(media, &value);
        if !BODY_TYPES.iter().any(|t| media.contains(t)) {
            self.warnings.push(format!(
                "{place}: the {media} body is an example text ({text:?}); put a real one in the plan"
            ));
        }
        headers.push(("Content-Type".into(), content_type));
        Some(text)
    }

    /// `status == N` for one documented success code, `status in LO..HI` for several.
    fn checks(&mut self, op: &Value, place: &str) -> Vec<String> {
        let responses = op.get("responses").and_then(Value::as_object);
        let mut ranges: Vec<(u16, u16)> = Vec::new();
        for code in responses.into_iter().flat_map(|r| r.keys()) {
            let range = match code.parse::<u16>() {
                Ok(n) => Some((n, n)),
                Err(_) => code
                    .to_ascii_uppercase()
                    .strip_suffix("XX")
                    .and_then(|d| d.parse::<u16>().ok())
                    .map(|d| (d * 100, d * 100 + 99)),
            };
            ranges.extend(range.filter(|(lo, _)| *lo < 400));
        }
        let mut checks = match (
            ranges.iter().map(|r| r.0).min(),
            ranges.iter().map(|r| r.1).max(),
        ) {
            (Some(lo), Some(hi)) if lo == hi => vec![format!("status == {lo}")],
            (Some(lo), Some(hi)) => vec![format!("status in {lo}..{hi}")],
            _ => {
                self.warnings.push(format!(
                    "{place}: no success response documented; checked as status < 400"
                ));
                vec!["status < 400".into()]
            }
        };
        if self.opts.check_schema {
            checks.extend(self.schema_checks(responses, &ranges));
        }
        checks
    }

    /// `json /FIELD exists` for the required fields of the first success response's JSON
    /// object schema (`allOf` parts included).
    fn schema_checks(
        &self,
        responses: Option<&serde_json::Map<String, Value>>,
        ranges: &[(u16, u16)],
    ) -> Vec<String> {
        let lowest = ranges.iter().map(|r| r.0).min();
        let Some(resp) = responses.and_then(|r| {
            r.iter()
                .find(|(k, _)| k.parse::<u16>().ok() == lowest)
                .map(|(_, v)| self.doc.resolve(v))
        }) else {
            return Vec::new();
        };
        let Some(schema) = resp
            .get("content")
            .and_then(Value::as_object)
            .and_then(|c| {
                c.iter()
                    .find(|(k, _)| k.contains("json"))
                    .and_then(|(_, m)| m.get("schema"))
            })
        else {
            return Vec::new();
        };
        let schema = self.doc.resolve(schema);
        let mut parts = vec![schema];
        parts.extend(
            schema
                .get("allOf")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .map(|s| self.doc.resolve(s)),
        );
        let mut out = Vec::new();
        for field in parts
            .iter()
            .flat_map(|p| {
                p.get("required")
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
            })
            .filter_map(Value::as_str)
        {
            let check = format!("json /{} exists", pointer_token(field));
            if !out.contains(&check) {
                out.push(check);
            }
        }
        out
    }
}

/// The first of a map of Example objects (`examples: {NAME: {value: ...}}`).
fn first_example(doc: &Doc, examples: Option<&Value>) -> Option<Value> {
    let (_, ex) = examples?.as_object()?.iter().next()?;
    doc.resolve(ex).get("value").cloned()
}

/// A parameter's text: strings as they are, other values as JSON.
fn scalar(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Array(list) => list.iter().map(scalar).collect::<Vec<_>>().join(","),
        other => other.to_string(),
    }
}

/// A query parameter (form style, exploded: an array repeats the name), encoded.
fn query_pairs(name: &str, v: &Value) -> Vec<(String, String)> {
    let items = match v {
        Value::Array(list) => list.clone(),
        other => vec![other.clone()],
    };
    items
        .iter()
        .map(|i| (urlencode(name.as_bytes()), urlencode(scalar(i).as_bytes())))
        .collect()
}

/// The body's Content-Type and text for a value.
fn encode(media: &str, v: &Value) -> (String, String) {
    let fields = || {
        v.as_object()
            .into_iter()
            .flatten()
            .map(|(k, x)| (k.clone(), scalar(x)))
            .collect::<Vec<_>>()
    };
    if media.contains("x-www-form-urlencoded") && v.is_object() {
        let pairs: Vec<String> = fields()
            .iter()
            .map(|(k, x)| format!("{}={}", urlencode(k.as_bytes()), urlencode(x.as_bytes())))
            .collect();
        return (media.to_string(), pairs.join("&"));
    }
    if media.starts_with("multipart/form-data") && v.is_object() {
        let b = crate::curl::BOUNDARY;
        let mut body = String::new();
        for (k, x) in fields() {
            body.push_str(&format!(
                "--{b}\r\nContent-Disposition: form-data; name=\"{k}\"\r\n\r\n{x}\r\n"
            ));
        }
        body.push_str(&format!("--{b}--\r\n"));
        return (format!("multipart/form-data; boundary={b}"), body);
    }
    match v {
        Value::String(s) if !media.contains("json") => (media.to_string(), s.clone()),
        other => (media.to_string(), other.to_string()),
    }
}

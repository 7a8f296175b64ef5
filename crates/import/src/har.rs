//! HAR 1.1/1.2 recordings (Chrome, Firefox, Playwright, mitmproxy) into scenarios: the
//! requests to one host in the order they started, static assets and other hosts left out,
//! the recorded gaps as think times, values reused from earlier responses as extractions,
//! the recorded status as each step's check, and browser noise (sec-ch-*, User-Agent, …)
//! left out, said in one warning.

use std::collections::BTreeMap;
use std::time::Duration;

use base64::Engine as _;
use serde_json::Value;

use crate::correlate::Correlator;
use crate::plan::{unique_names, PlanBody, PlanDoc, RequestDoc, StepDoc};
use crate::secrets::{is_secret_header, Secrets};
use crate::values::rfc3339_millis;
use crate::{parse_json, ImportError, Imported, Options};

/// Think times between steps.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Think {
    /// The gaps as recorded.
    Recorded,
    /// No think steps.
    None,
    /// The gaps times this factor.
    Scale(f64),
}

impl Think {
    pub fn parse(text: &str) -> Result<Think, String> {
        match text {
            "recorded" => Ok(Think::Recorded),
            "none" => Ok(Think::None),
            _ => match text.parse::<f64>() {
                Ok(f) if f.is_finite() && f >= 0.0 => Ok(Think::Scale(f)),
                _ => Err(format!(
                    "--think {text}: expected recorded, none or a factor (0.5)"
                )),
            },
        }
    }
}

/// How a HAR is read.
#[derive(Debug, Clone)]
pub struct HarOptions {
    pub common: Options,
    /// Keep this host (`HOST` or `HOST:PORT`) instead of the first request's.
    pub include_host: Option<String>,
    /// URL patterns (`*` matches anything) to leave out.
    pub exclude: Vec<String>,
    pub include_static: bool,
    pub think: Think,
}

/// Gaps shorter than this are the browser's own pace, not a user thinking.
const MIN_THINK: Duration = Duration::from_millis(50);

/// Request headers a person would not write: the browser's, the connection's, and those
/// loadmark sets itself.
const NOISE: &[&str] = &[
    "host",
    "content-length",
    "connection",
    "keep-alive",
    "accept-encoding",
    "accept-language",
    "user-agent",
    "referer",
    "origin",
    "upgrade-insecure-requests",
    "cache-control",
    "pragma",
    "te",
    "dnt",
    "priority",
    "proxy-connection",
    "if-none-match",
    "if-modified-since",
];

/// Chrome's resource types and file extensions of static assets.
const STATIC_TYPES: &[&str] = &["stylesheet", "script", "image", "font", "media", "manifest"];
const STATIC_EXT: &[&str] = &[
    "js", "mjs", "css", "png", "jpg", "jpeg", "gif", "svg", "ico", "webp", "avif", "woff", "woff2",
    "ttf", "otf", "eot", "map", "mp4", "webm", "mp3",
];

/// One recorded exchange, read from the HAR.
struct Entry {
    start_ms: f64,
    time_ms: f64,
    method: String,
    url: url::Url,
    headers: Vec<(String, String)>,
    body: Option<String>,
    status: u16,
    response_headers: Vec<(String, String)>,
    response_text: Option<String>,
    resource_type: Option<String>,
}

/// A HAR document as a scenario plan.
pub fn import(text: &str, file: &str, opts: &HarOptions) -> Result<Imported, ImportError> {
    let doc = parse_json(text, file)?;
    let version = doc.pointer("/log/version").and_then(Value::as_str);
    match version {
        Some("1.1" | "1.2") | None if doc.pointer("/log").is_some() => {}
        _ if doc.pointer("/log").is_none() => {
            return Err(ImportError::field(
                file,
                "/log",
                "missing: not a HAR document",
            ))
        }
        Some(v) => {
            return Err(ImportError::Version {
                file: file.into(),
                what: "HAR version",
                found: v.into(),
                supported: "1.1, 1.2",
            })
        }
        None => unreachable!("handled above"),
    }
    let list = doc
        .pointer("/log/entries")
        .and_then(Value::as_array)
        .ok_or_else(|| ImportError::field(file, "/log/entries", "expected an array"))?;
    let mut entries = Vec::new();
    for (i, e) in list.iter().enumerate() {
        entries.push(entry(e, file, &format!("/log/entries/{i}"))?);
    }
    entries.sort_by(|a, b| a.start_ms.total_cmp(&b.start_ms));
    let mut warnings = Vec::new();
    let kept = filter(entries, opts, &mut warnings)?;
    build(kept, opts, file, warnings)
}

fn str_at<'a>(v: &'a Value, key: &str, file: &str, at: &str) -> Result<&'a str, ImportError> {
    v.get(key)
        .and_then(Value::as_str)
        .ok_or_else(|| ImportError::field(file, &format!("{at}/{key}"), "expected a string"))
}

fn pairs(v: Option<&Value>) -> Vec<(String, String)> {
    v.and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(|h| {
                    Some((
                        h.get("name")?.as_str()?.to_string(),
                        h.get("value")?.as_str()?.to_string(),
                    ))
                })
                .collect()
        })
        .unwrap_or_default()
}

fn entry(e: &Value, file: &str, at: &str) -> Result<Entry, ImportError> {
    let req = e
        .get("request")
        .ok_or_else(|| ImportError::field(file, &format!("{at}/request"), "missing"))?;
    let rat = format!("{at}/request");
    let url_text = str_at(req, "url", file, &rat)?;
    let url = url::Url::parse(url_text).map_err(|err| {
        ImportError::field(file, &format!("{rat}/url"), format!("{url_text:?}: {err}"))
    })?;
    let started = str_at(e, "startedDateTime", file, at)?;
    let start_ms = rfc3339_millis(started).ok_or_else(|| {
        ImportError::field(
            file,
            &format!("{at}/startedDateTime"),
            format!("{started:?}: expected an RFC 3339 time"),
        )
    })?;
    let resp = e.get("response").cloned().unwrap_or(Value::Null);
    Ok(Entry {
        start_ms,
        time_ms: e
            .get("time")
            .and_then(Value::as_f64)
            .unwrap_or(0.0)
            .max(0.0),
        method: str_at(req, "method", file, &rat)?.to_string(),
        url,
        headers: pairs(req.get("headers")),
        body: post_data(req.get("postData")),
        status: resp.get("status").and_then(Value::as_u64).unwrap_or(0) as u16,
        response_headers: pairs(resp.get("headers")),
        response_text: response_text(resp.get("content")),
        resource_type: e
            .get("_resourceType")
            .and_then(Value::as_str)
            .map(str::to_string),
    })
}

/// The request body: `text`, or the form `params` joined as a browser sends them.
fn post_data(pd: Option<&Value>) -> Option<String> {
    let pd = pd?;
    if let Some(t) = pd.get("text").and_then(Value::as_str) {
        return Some(t.to_string());
    }
    let params = pairs(pd.get("params"));
    (!params.is_empty()).then(|| {
        params
            .iter()
            .map(|(n, v)| format!("{n}={v}"))
            .collect::<Vec<_>>()
            .join("&")
    })
}

fn response_text(content: Option<&Value>) -> Option<String> {
    let c = content?;
    let text = c.get("text")?.as_str()?;
    if c.get("encoding").and_then(Value::as_str) == Some("base64") {
        let bytes = base64::engine::general_purpose::STANDARD
            .decode(text)
            .ok()?;
        return String::from_utf8(bytes).ok();
    }
    Some(text.to_string())
}

fn host_port(u: &url::Url) -> String {
    match u.port() {
        Some(p) => format!("{}:{p}", u.host_str().unwrap_or("")),
        None => u.host_str().unwrap_or("").to_string(),
    }
}

fn is_static(e: &Entry) -> bool {
    if e.resource_type
        .as_deref()
        .is_some_and(|t| STATIC_TYPES.contains(&t))
    {
        return true;
    }
    let path = e.url.path();
    let ext = path.rsplit_once('.').map(|(_, x)| x.to_ascii_lowercase());
    ext.is_some_and(|x| STATIC_EXT.contains(&x.as_str()))
}

/// `*` matches any run of characters; the pattern must match the whole URL.
fn glob(pattern: &str, text: &str) -> bool {
    let parts: Vec<&str> = pattern.split('*').collect();
    let mut rest = text;
    for (i, part) in parts.iter().enumerate() {
        if i == 0 {
            match rest.strip_prefix(part) {
                Some(r) => rest = r,
                None => return false,
            }
        } else if i == parts.len() - 1 {
            return rest.ends_with(part);
        } else {
            match rest.find(part) {
                Some(at) => rest = &rest[at + part.len()..],
                None => return false,
            }
        }
    }
    rest.is_empty()
}

/// The entries to keep; what was left out goes into `warnings`.
fn filter(
    entries: Vec<Entry>,
    opts: &HarOptions,
    warnings: &mut Vec<String>,
) -> Result<Vec<Entry>, ImportError> {
    let total = entries.len();
    let mut dropped: BTreeMap<&'static str, Vec<String>> = BTreeMap::new();
    let mut web = Vec::new();
    for e in entries {
        if !matches!(e.url.scheme(), "http" | "https") {
            dropped
                .entry("not HTTP")
                .or_default()
                .push(e.url.to_string());
        } else if !opts.include_static && is_static(&e) {
            dropped
                .entry("static assets")
                .or_default()
                .push(e.url.path().to_string());
        } else if opts.exclude.iter().any(|p| glob(p, e.url.as_str())) {
            dropped
                .entry("excluded by --exclude")
                .or_default()
                .push(e.url.to_string());
        } else {
            web.push(e);
        }
    }
    let host = match &opts.include_host {
        Some(h) => h.clone(),
        None => match web.first() {
            Some(e) => host_port(&e.url),
            None => return Err(ImportError::Empty(format!("no request left of {total} recorded (static assets and other schemes are left out; --include-static keeps assets)"))),
        },
    };
    let mut kept = Vec::new();
    for e in web {
        let hp = host_port(&e.url);
        if hp == host || e.url.host_str() == Some(host.as_str()) {
            kept.push(e);
        } else {
            dropped.entry("other hosts").or_default().push(hp);
        }
    }
    for (why, list) in &dropped {
        warnings.push(format!(
            "left out {} request(s), {why}: {}",
            list.len(),
            summary(list)
        ));
    }
    if kept.is_empty() {
        return Err(ImportError::Empty(format!(
            "no request to {host} among the {total} recorded"
        )));
    }
    Ok(kept)
}

/// `a (2), b` for a list with repeats, at most 8 names.
fn summary(list: &[String]) -> String {
    let mut counts: Vec<(String, usize)> = Vec::new();
    for item in list {
        match counts.iter_mut().find(|(n, _)| n == item) {
            Some((_, c)) => *c += 1,
            None => counts.push((item.clone(), 1)),
        }
    }
    let mut parts: Vec<String> = counts
        .iter()
        .take(8)
        .map(|(n, c)| {
            if *c > 1 {
                format!("{n} ({c})")
            } else {
                n.clone()
            }
        })
        .collect();
    if counts.len() > 8 {
        parts.push(format!("and {} more", counts.len() - 8));
    }
    parts.join(", ")
}

/// Headers left out: the browser's, the connection's, and those loadmark sets itself.
fn is_noise(name: &str) -> bool {
    let lower = name.to_ascii_lowercase();
    name.starts_with(':') || NOISE.contains(&lower.as_str()) || lower.starts_with("sec-")
}

/// The warning for an entry whose URL, kept headers or body hold a literal `{{`.
fn literal_braces(e: &Entry) -> Option<String> {
    let target = match e.url.query() {
        Some(q) => format!("{}?{q}", e.url.path()),
        None => e.url.path().to_string(),
    };
    let headers = e
        .headers
        .iter()
        .filter(|(n, _)| !is_noise(n))
        .map(|(n, v)| (format!("{n} header"), v.as_str()));
    let fields = [("URL".to_string(), target.as_str())]
        .into_iter()
        .chain(headers)
        .chain(e.body.as_deref().map(|b| ("body".to_string(), b)));
    let field = crate::literal::holding(fields)?;
    Some(crate::literal::left_out(
        &format!("{} {target}", e.method),
        &field,
    ))
}

fn think_step(gap_ms: f64, think: Think) -> Option<StepDoc> {
    let factor = match think {
        Think::None => return None,
        Think::Recorded => 1.0,
        Think::Scale(f) => f,
    };
    let d = Duration::from_millis((gap_ms * factor).round().max(0.0) as u64);
    (gap_ms >= MIN_THINK.as_millis() as f64 && !d.is_zero()).then_some(StepDoc::Think(d, None))
}

fn build(
    entries: Vec<Entry>,
    opts: &HarOptions,
    file: &str,
    mut warnings: Vec<String>,
) -> Result<Imported, ImportError> {
    let first = &entries[0].url;
    let target_url = first.origin().ascii_serialization();
    let mut corr = Correlator::default();
    let mut secrets = Secrets::new(opts.common.keep_secrets);
    let mut noise: Vec<String> = Vec::new();
    let mut jar = false;
    let mut steps: Vec<StepDoc> = Vec::new();
    let mut last_end: Option<f64> = None;
    for e in &entries {
        if let Some(w) = literal_braces(e) {
            warnings.push(w);
            continue;
        }
        if let Some(end) = last_end {
            steps.extend(think_step(e.start_ms - end, opts.think));
        }
        last_end = Some(e.start_ms + e.time_ms);
        let mut url = e.url.path().to_string();
        if let Some(q) = e.url.query() {
            url = format!("{url}?{q}");
        }
        let place = format!("{} {}", e.method, url);
        let url = corr.apply_path(&url);
        let mut headers = Vec::new();
        for (name, value) in &e.headers {
            let lower = name.to_ascii_lowercase();
            if is_noise(name) {
                if !noise.contains(&lower) {
                    noise.push(lower);
                }
                continue;
            }
            if lower == "cookie" && corr.all_cookies_set(value) {
                jar = true;
                continue;
            }
            if lower == "accept" && value == "*/*" {
                continue;
            }
            let value = corr.apply_text(value);
            let value = if is_secret_header(name) && !value.contains("{{") {
                secrets.replace(name, &value, &format!("{place}: {name}"))
            } else {
                value
            };
            headers.push((name.clone(), value));
        }
        let body = e.body.as_deref().map(|b| corr.apply_text(b));
        corr.sent(&e.url, e.body.as_deref(), &e.headers);
        corr.learn(steps.len(), e.response_text.as_deref(), &e.response_headers);
        steps.push(StepDoc::Request(RequestDoc {
            method: e.method.clone(),
            url,
            headers,
            body,
            checks: if e.status > 0 {
                vec![format!("status == {}", e.status)]
            } else {
                vec![]
            },
            ..Default::default()
        }));
    }
    // Think steps only between requests: none left before the first or after the last.
    while matches!(steps.last(), Some(StepDoc::Think(..))) {
        steps.pop();
    }
    if steps.is_empty() {
        return Err(ImportError::Empty(format!(
            "{file}: no request left to load: {}",
            warnings.join("; ")
        )));
    }
    corr.place_extractions(&mut steps);
    unique_names(&mut steps);
    if !noise.is_empty() {
        warnings.push(format!(
            "left out headers the browser or connection sets (loadmark sets its own Host, \
             User-Agent and Content-Length): {}",
            noise.join(", ")
        ));
    }
    if jar {
        warnings.push("Cookie headers carrying cookies the recorded responses set are left to each user's cookie jar (load.cookies: true)".into());
    }
    warnings.extend(corr.report());
    let (cols, secret_warnings) = secrets.finish();
    warnings.extend(secret_warnings);
    let requests = steps
        .iter()
        .filter(|s| matches!(s, StepDoc::Request(_)))
        .count();
    let mut load = opts.common.load();
    load.cookies = jar;
    let plan = PlanDoc {
        name: opts.common.name.clone().unwrap_or_else(|| {
            let base = file.rsplit('/').next().unwrap_or(file);
            format!("Recorded journey ({base})")
        }),
        comments: vec![format!(
            "Imported from {file} by `loadmark import har`: {requests} request(s) to {target_url}."
        )],
        target_name: crate::curl::target_name(first),
        target_url,
        data: (!cols.is_empty()).then(|| opts.common.secrets_file.clone()),
        body: PlanBody::Scenario(steps),
        load,
        ..Default::default()
    };
    Ok(Imported {
        plan,
        warnings,
        secrets: cols,
    })
}

#[cfg(test)]
mod tests;

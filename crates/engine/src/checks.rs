//! Evaluating response checks (issue 17): pure functions over one response.
//!
//! The parsed expressions come from `loadmark_plan::Check`. A connection buffers a response
//! (head and body, as received, up to [`CAPTURE_LIMIT`]) only when a check reads headers or
//! the body; status and latency checks read what the parser already knows. JSON is parsed at
//! most once per response, and only when a JSON check asks.

use std::time::Duration;

use loadmark_metrics::{Recorder, Sample};
use loadmark_plan::{Check, Expr, HeaderTest, JsonTest, TextTest};

/// The most bytes of one response (head and body) buffered for checks. A longer response
/// fails every check that needs its headers or body, with an example saying so.
pub const CAPTURE_LIMIT: usize = 1024 * 1024;

/// A run's checks, ready to evaluate: regexes compiled once.
pub(crate) struct Checks {
    checks: Vec<Check>,
    names: Vec<String>,
    regexes: Vec<Option<regex::Regex>>,
    /// Some check reads headers or the body.
    pub(crate) capture: bool,
}

/// One response as the checks see it.
pub(crate) struct View<'a> {
    pub status: u16,
    pub latency: Duration,
    /// Head and body bytes as received (chunked framing included); empty unless captured.
    pub raw: &'a [u8],
    /// The response was longer than [`CAPTURE_LIMIT`].
    pub overflow: bool,
    /// `raw` is one WebSocket reply's payload (issue 20): all body, no status or headers.
    pub message: bool,
}

impl<'a> View<'a> {
    /// A response: its status, its latency (from the due time in an open loop) and what was
    /// kept of its bytes.
    pub(crate) fn response(sample: &Sample, raw: &'a [u8], overflow: bool) -> View<'a> {
        View {
            status: sample.status,
            latency: (sample.ended)
                .saturating_duration_since(sample.scheduled.unwrap_or(sample.started)),
            raw,
            overflow,
            message: false,
        }
    }

    /// A WebSocket reply in request mode: its payload and its round trip.
    pub(crate) fn message(payload: &'a [u8], latency: Duration) -> View<'a> {
        View {
            // A reply that came is a success at the transport level: one that fails a check
            // is counted among the failed answers, as a 2xx response that fails one is.
            status: 200,
            latency,
            raw: payload,
            overflow: false,
            message: true,
        }
    }
}

impl Checks {
    pub(crate) fn new(checks: &[Check]) -> Option<Checks> {
        if checks.is_empty() {
            return None;
        }
        let regexes = checks
            .iter()
            .map(|c| match &c.expr {
                Expr::Body(TextTest::Matches(re))
                | Expr::Header(_, HeaderTest::Text(TextTest::Matches(re))) => {
                    // Validated when the plan was parsed.
                    regex::Regex::new(re).ok()
                }
                _ => None,
            })
            .collect();
        Some(Checks {
            names: checks.iter().map(|c| c.name.clone()).collect(),
            capture: checks.iter().any(Check::needs_response),
            checks: checks.to_vec(),
            regexes,
        })
    }

    /// Evaluates every check on `view` and records the outcome at `at`.
    pub(crate) fn record(&self, view: &View<'_>, at: std::time::Instant, recorder: &mut Recorder) {
        let parsed = if self.capture {
            Parsed::of(view)
        } else {
            Parsed::default()
        };
        let failed = self.failures(view, &parsed);
        recorder.record_checks(at, &self.names, view.status, &failed, |i| {
            describe(&self.checks[i], view, &parsed)
        });
    }

    /// A scenario step's checks (issue 17): the outcome is counted in step `step`'s figures
    /// under the checks' own names, and in the run's under `global` (a name per check,
    /// unique across steps).
    pub(crate) fn record_step(
        &self,
        view: &View<'_>,
        parsed: &Parsed<'_>,
        at: std::time::Instant,
        recorder: &mut Recorder,
        (step, steps, slot): (usize, &[String], loadmark_metrics::ScenarioSlot<'_>),
        global: &[String],
    ) {
        let failed = self.failures(view, parsed);
        let example = |i: usize| describe(&self.checks[i], view, parsed);
        recorder
            .scenario_in(at, slot)
            .step(step, steps)
            .checks
            .get_or_insert_with(Default::default)
            .record(&self.names, view.status, &failed, example);
        recorder.record_checks_named(at, global, view.status, &failed, example);
    }

    /// Which checks fail on `view`.
    fn failures(&self, view: &View<'_>, parsed: &Parsed<'_>) -> Flags {
        let mut json: Option<Option<serde_json::Value>> = None;
        // Up to 16 checks without allocating; more are rare.
        let mut failed = smallvec(self.checks.len());
        for (i, c) in self.checks.iter().enumerate() {
            failed[i] = !self.holds(i, c, view, parsed, &mut json);
        }
        failed
    }

    fn holds(
        &self,
        i: usize,
        c: &Check,
        view: &View<'_>,
        parsed: &Parsed<'_>,
        json: &mut Option<Option<serde_json::Value>>,
    ) -> bool {
        if c.needs_response() && (view.overflow || parsed.body.is_none()) {
            return false;
        }
        let body = parsed.body.as_deref().unwrap_or(&[]);
        match &c.expr {
            Expr::Status(t) => t.holds(f64::from(view.status)),
            Expr::Latency(cmp, d) => cmp.holds(view.latency, *d),
            Expr::BodySize(t) => t.holds(body.len() as f64),
            Expr::Body(t) => self.text_holds(i, t, body),
            Expr::Header(name, t) => {
                let value = parsed.header(name);
                match t {
                    HeaderTest::Exists => value.is_some(),
                    HeaderTest::Absent => value.is_none(),
                    HeaderTest::Text(t) => value.is_some_and(|v| self.text_holds(i, t, v)),
                }
            }
            Expr::Json(pointer, t) => {
                let doc = json.get_or_insert_with(|| serde_json::from_slice(body).ok());
                let Some(doc) = doc else {
                    return false;
                };
                let v = doc.pointer(pointer);
                match t {
                    JsonTest::Exists => v.is_some(),
                    JsonTest::Absent => v.is_none(),
                    JsonTest::Eq(want) => v == Some(want),
                    JsonTest::Ne(want) => v.is_some_and(|v| v != want),
                    JsonTest::Num(cmp, n) => v
                        .and_then(serde_json::Value::as_f64)
                        .is_some_and(|x| cmp.holds(x, *n)),
                    JsonTest::Length(t) => v
                        .and_then(|v| match v {
                            serde_json::Value::Array(a) => Some(a.len()),
                            serde_json::Value::Object(o) => Some(o.len()),
                            serde_json::Value::String(s) => Some(s.chars().count()),
                            _ => None,
                        })
                        .is_some_and(|n| t.holds(n as f64)),
                }
            }
            // A gRPC step's response carries its call's status as this header
            // (`crate::scenario::grpc`).
            Expr::GrpcStatus(eq, code) => {
                let seen = parsed.header("grpc-status").and_then(grpc_status);
                seen.is_some_and(|s| (s == *code) == *eq)
            }
        }
    }

    fn text_holds(&self, i: usize, t: &TextTest, hay: &[u8]) -> bool {
        match t {
            TextTest::Contains(s) => memfind(hay, s.as_bytes()),
            TextTest::Eq(s) => hay == s.as_bytes(),
            TextTest::Ne(s) => hay != s.as_bytes(),
            TextTest::Matches(_) => match (&self.regexes[i], std::str::from_utf8(hay)) {
                (Some(re), Ok(text)) => re.is_match(text),
                _ => false,
            },
        }
    }
}

/// A fixed-size run of flags, on the stack for up to 16 checks.
fn smallvec(n: usize) -> Flags {
    if n <= 16 {
        Flags::Small([false; 16], n)
    } else {
        Flags::Large(vec![false; n])
    }
}

enum Flags {
    Small([bool; 16], usize),
    Large(Vec<bool>),
}

impl std::ops::Deref for Flags {
    type Target = [bool];
    fn deref(&self) -> &[bool] {
        match self {
            Flags::Small(a, n) => &a[..*n],
            Flags::Large(v) => v,
        }
    }
}

impl std::ops::DerefMut for Flags {
    fn deref_mut(&mut self) -> &mut [bool] {
        match self {
            Flags::Small(a, n) => &mut a[..*n],
            Flags::Large(v) => v,
        }
    }
}

fn grpc_status(value: &[u8]) -> Option<u32> {
    std::str::from_utf8(value).ok()?.trim().parse().ok()
}

fn memfind(hay: &[u8], needle: &[u8]) -> bool {
    needle.is_empty() || hay.windows(needle.len()).any(|w| w == needle)
}

/// The head split into headers, and the body with any chunked framing removed.
#[derive(Default)]
pub(crate) struct Parsed<'a> {
    pub(crate) headers: Vec<(&'a str, &'a [u8])>,
    /// `None` when the captured bytes are not a whole response.
    pub(crate) body: Option<std::borrow::Cow<'a, [u8]>>,
}

impl<'a> Parsed<'a> {
    pub(crate) fn of(view: &View<'a>) -> Parsed<'a> {
        let mut out = Parsed::default();
        if view.message {
            out.body = Some(std::borrow::Cow::Borrowed(view.raw));
            return out;
        }
        let mut raw = view.raw;
        // Interim (1xx) responses come before the final one: skip their heads.
        loop {
            let mut storage = [httparse::EMPTY_HEADER; loadmark_wire::http1::MAX_HEADERS];
            let mut resp = httparse::Response::new(&mut storage);
            let Ok(httparse::Status::Complete(head_len)) = resp.parse(raw) else {
                return out;
            };
            if resp
                .code
                .is_some_and(|c| (100..200).contains(&c) && c != 101)
            {
                raw = &raw[head_len..];
                continue;
            }
            let chunked = resp.headers.iter().any(|h| {
                h.name.eq_ignore_ascii_case("transfer-encoding")
                    && String::from_utf8_lossy(h.value)
                        .to_ascii_lowercase()
                        .contains("chunked")
            });
            // The parsed headers borrow `storage`; keep them as slices of `raw` instead.
            out.headers = resp
                .headers
                .iter()
                .map(|h| (h.name, h.value))
                .map(|(n, v)| (rebase(raw, n), rebase_bytes(raw, v)))
                .collect();
            let body = &raw[head_len..];
            out.body = if chunked {
                dechunk(body).map(std::borrow::Cow::Owned)
            } else {
                Some(std::borrow::Cow::Borrowed(body))
            };
            return out;
        }
    }

    pub(crate) fn header(&self, name: &str) -> Option<&'a [u8]> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| *v)
    }
}

/// `part` is a slice of `raw`: the same bytes with `raw`'s lifetime.
fn rebase_bytes<'a>(raw: &'a [u8], part: &[u8]) -> &'a [u8] {
    let start = part.as_ptr() as usize - raw.as_ptr() as usize;
    &raw[start..start + part.len()]
}

fn rebase<'a>(raw: &'a [u8], part: &str) -> &'a str {
    std::str::from_utf8(rebase_bytes(raw, part.as_bytes())).unwrap_or("")
}

/// The data of a chunked body (the parser has already checked its framing).
fn dechunk(mut body: &[u8]) -> Option<Vec<u8>> {
    let mut out = Vec::with_capacity(body.len());
    loop {
        let line_end = body.windows(2).position(|w| w == b"\r\n")?;
        let size_text = std::str::from_utf8(&body[..line_end]).ok()?;
        let size_text = size_text.split(';').next()?.trim();
        let size = usize::from_str_radix(size_text, 16).ok()?;
        body = &body[line_end + 2..];
        if size == 0 {
            return Some(out);
        }
        out.extend_from_slice(body.get(..size)?);
        body = body.get(size + 2..)?;
    }
}

/// What a failed check saw: the status, the value it tested, and the start of the body.
fn describe(c: &Check, view: &View<'_>, parsed: &Parsed<'_>) -> String {
    let excerpt = |b: &[u8]| String::from_utf8_lossy(&b[..b.len().min(120)]).into_owned();
    if c.needs_response() && view.overflow {
        return format!(
            "status {}; response longer than the {} KiB checks buffer, not checked",
            view.status,
            CAPTURE_LIMIT / 1024
        );
    }
    let body = parsed.body.as_deref();
    let seen = match &c.expr {
        Expr::Status(_) => String::new(),
        Expr::Latency(..) => format!("; latency {:?}", view.latency),
        Expr::Header(name, _) => match parsed.header(name) {
            Some(v) => format!("; {name}: {}", excerpt(v)),
            None => format!("; no {name} header"),
        },
        Expr::BodySize(_) => format!("; body {} bytes", body.map_or(0, <[u8]>::len)),
        Expr::Body(_) | Expr::Json(..) => String::new(),
        Expr::GrpcStatus(..) => match parsed.header("grpc-status").and_then(grpc_status) {
            Some(code) => {
                let message = parsed
                    .header("grpc-message")
                    .map(|m| format!(" ({})", excerpt(m)))
                    .unwrap_or_default();
                format!(
                    "; grpc-status {}{message}",
                    loadmark_plan::grpc_code_text(code)
                )
            }
            None => "; no grpc-status".to_string(),
        },
    };
    let body_part = match body {
        Some(b) if !b.is_empty() => format!("; body: {}", excerpt(b)),
        Some(_) => "; empty body".to_string(),
        None if c.needs_response() => "; response could not be read back".to_string(),
        None => String::new(),
    };
    if view.message {
        // A reply has no status: say what it was, then what it held.
        let body_part = body_part.replacen("; body: ", "; ", 1);
        return format!("reply{seen}{body_part}");
    }
    format!("status {}{seen}{body_part}", view.status)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(checks: &[&str], raw: &[u8], status: u16) -> Vec<(u64, u64, Option<String>)> {
        let parsed: Vec<Check> = checks.iter().map(|c| Check::parse(c).unwrap()).collect();
        let checks = Checks::new(&parsed).unwrap();
        let origin = std::time::Instant::now();
        let mut rec = Recorder::new(origin);
        let view = View {
            status,
            latency: Duration::from_millis(5),
            raw,
            overflow: false,
            message: false,
        };
        checks.record(&view, origin, &mut rec);
        let report = rec.finish();
        let stats = report.intervals[0].snapshot.checks.clone().unwrap();
        stats
            .checks
            .into_iter()
            .map(|c| (c.passed, c.failed, c.first_failure))
            .collect()
    }

    #[test]
    fn evaluates_status_headers_body_and_json() {
        let raw = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 38\r\n\r\n{\"ok\":true,\"items\":[{\"id\":7}],\"n\":3.5}";
        let out = run(
            &[
                "status == 200",
                "status in 500..599",
                "header content-type contains json",
                "header x-missing exists",
                "body contains \"items\"",
                "body size < 10",
                "json /ok == true",
                "json /items/0/id == 7",
                "json /items length > 0",
                "json /n >= 3.5",
                "json /nope exists",
                "body matches \"^\\\\{.*\\\\}$\"",
                "latency < 1ms",
            ],
            raw,
            200,
        );
        let verdicts: Vec<bool> = out.iter().map(|o| o.0 == 1).collect();
        assert_eq!(
            verdicts,
            [true, false, true, false, true, false, true, true, true, true, false, true, false]
        );
        assert_eq!(
            out[5].2.as_deref().unwrap(),
            "status 200; body 38 bytes; body: {\"ok\":true,\"items\":[{\"id\":7}],\"n\":3.5}"
        );
        assert_eq!(
            out[3].2.as_deref().unwrap().split(';').nth(1),
            Some(" no x-missing header")
        );
    }

    #[test]
    fn reads_chunked_bodies_after_interim_responses() {
        let raw = b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n4;x=y\r\n{\"a\"\r\n3\r\n:1}\r\n0\r\nT: v\r\n\r\n";
        let out = run(&["json /a == 1", "body size == 7"], raw, 200);
        assert_eq!(out[0].0, 1, "{out:?}");
        assert_eq!(out[1].0, 1, "{out:?}");
    }

    #[test]
    fn body_checks_fail_on_unparsable_json_and_overflow() {
        let raw = b"HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\nnot";
        let out = run(&["json /a absent", "status == 200"], raw, 200);
        assert_eq!(
            (out[0].0, out[0].1),
            (0, 1),
            "not JSON: every JSON test fails"
        );
        assert_eq!(out[1].0, 1);
    }
}

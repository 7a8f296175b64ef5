//! Where each request's bytes come from: one request encoded once (the common case, no work
//! per request), or a weighted mix of requests, some with templates rendered per request into
//! the connection's reusable buffer.

use std::cell::{Cell, RefCell};

use loadmark_plan::{parse_csv, Plan, RenderContext, RequestSpec, Segment, Template};
use loadmark_wire::http1::encode_request;

use crate::script::WorkerScript;

/// A request whose bytes are rendered per request.
struct Templated {
    method: String,
    path: Template,
    host: String,
    headers: Vec<(String, Template)>,
    body: Template,
    keep_alive: bool,
    /// gRPC: the rendered body is the message as JSON, encoded per call by this.
    encode: Option<loadmark_plan::BodyEncoder>,
}

enum Bytes {
    Fixed(Box<[u8]>),
    Templated(Templated),
}

struct Choice {
    meta: Meta,
    bytes: Bytes,
}

/// What the exchange must know about a request besides its bytes.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Meta {
    /// A HEAD request: its response has no body whatever its head says.
    pub head: bool,
    /// The request says `Connection: close` (--no-keepalive or the user's header): the
    /// connection is never reused after it, whatever the server answers (RFC 9112 §9.6).
    pub close: bool,
    /// The method is idempotent: it may be sent again when a reused connection turns out
    /// to have been closed before any response byte (RFC 9110 §9.2.2).
    pub idempotent: bool,
    /// How many requests the bytes hold: more than one when a script pipelines them.
    pub batch: u32,
}

/// Picks and produces requests; one per worker, so no locks.
pub(crate) struct RequestSource {
    choices: Vec<Choice>,
    /// Running sums of the weights, for a weighted pick.
    cumulative: Vec<u64>,
    rng: Cell<u64>,
    /// Requests this worker picked without a global number (closed loop).
    seq: Cell<u64>,
    rows: Vec<Vec<String>>,
    /// This worker's place among the segment's workers, and the segment's among the run's:
    /// a closed-loop request's number is `segment.global(seq * workers + worker)`, unique
    /// across every worker of every machine.
    worker: u64,
    workers: u64,
    segment: Segment,
    /// The worker's script, when the run has one (see [`crate::script`]).
    script: Option<RefCell<Box<dyn WorkerScript>>>,
    /// The script makes every request (its `request()`); else the plan's request is sent.
    dynamic: bool,
    /// False under --no-keepalive: a script's request is then made to say `Connection:
    /// close` and its connection is not reused, as the plan's own request is.
    keep_alive: bool,
    wants_response: bool,
    /// Through a forwarding HTTP proxy: each request rewritten for it (`crate::proxy`);
    /// fixed bytes were rewritten once, here.
    forward: Option<crate::proxy::Forward>,
}

/// The request to send: borrowed from the source, or rendered into the caller's buffer.
pub(crate) enum Picked<'a> {
    Fixed(&'a [u8], Meta),
    Rendered(Meta),
    /// The script failed to make a request; the message says why.
    Failed(String),
}

/// Why a plan's requests cannot be prepared.
#[derive(Debug, thiserror::Error)]
pub enum SourceError {
    /// The data file could not be read: check the path in the plan.
    #[error("data file {path}: {message}")]
    Data { path: String, message: String },
    /// A template is malformed; the message names the field.
    #[error("{0}")]
    Template(#[from] loadmark_plan::PlanError),
}

fn templated(
    spec: &RequestSpec,
    columns: &[String],
    encode: Option<loadmark_plan::BodyEncoder>,
) -> Result<Templated, SourceError> {
    let path = placeholders_unescaped(spec.url.path_and_query());
    let body = String::from_utf8_lossy(&spec.body);
    Ok(Templated {
        method: spec.method.clone(),
        path: Template::parse(&path, "request.path", columns)?,
        host: spec.url.host_header().to_string(),
        headers: spec
            .headers
            .iter()
            .map(|(n, v)| Ok((n.clone(), Template::parse(v, "request.headers", columns)?)))
            .collect::<Result<_, SourceError>>()?,
        body: Template::parse(&body, "request.body", columns)?,
        keep_alive: spec.keep_alive,
        encode,
    })
}

/// The URL parser percent-encodes `{{ ... }}` in a path (braces, spaces); templates need the
/// placeholders back as written. Only the placeholders are decoded: the rest stays as parsed.
fn placeholders_unescaped(path: &str) -> String {
    let braces = path.replace("%7B", "{").replace("%7D", "}");
    let mut out = String::with_capacity(braces.len());
    let mut rest = braces.as_str();
    while let Some(start) = rest.find("{{") {
        let Some(len) = rest[start..].find("}}") else {
            break;
        };
        out.push_str(&rest[..start]);
        out.push_str(&loadmark_plan::percent_decode(
            &rest[start..start + len + 2],
        ));
        rest = &rest[start + len + 2..];
    }
    out.push_str(rest);
    out
}

impl RequestSource {
    /// Prepares the plan's requests for worker `worker` of `workers` in `segment`; random keys
    /// differ per worker and segment.
    pub(crate) fn new(
        plan: &Plan,
        worker: u64,
        workers: u64,
        segment: &Segment,
    ) -> Result<RequestSource, SourceError> {
        let seed = (u64::from(segment.index) << 32 | worker) + 1;
        let (columns, rows) = match &plan.mix.data {
            Some(path) => {
                let text = std::fs::read_to_string(path).map_err(|e| SourceError::Data {
                    path: path.display().to_string(),
                    message: e.to_string(),
                })?;
                parse_csv(&text).map_err(|e| SourceError::Data {
                    path: path.display().to_string(),
                    message: e.to_string(),
                })?
            }
            None => (Vec::new(), Vec::new()),
        };
        let all = std::iter::once((plan.mix.weight.max(1), &plan.request))
            .chain(plan.mix.others.iter().map(|(w, r)| ((*w).max(1), r)));
        let mut choices = Vec::new();
        let mut cumulative = Vec::new();
        let mut sum = 0u64;
        let forward = crate::proxy::Forward::for_plan(plan);
        for (weight, spec) in all {
            let bytes = if plan.mix.templated {
                Bytes::Templated(templated(spec, &columns, plan.mix.encode_body.clone())?)
            } else {
                let mut bytes = encode_request(spec);
                if let Some(forward) = &forward {
                    forward.rewrite(&mut bytes);
                }
                Bytes::Fixed(bytes.into())
            };
            choices.push(Choice {
                meta: Meta {
                    head: spec.method == "HEAD",
                    close: !spec.keep_alive || spec.says_close(),
                    idempotent: spec.idempotent(),
                    batch: 1,
                },
                bytes,
            });
            sum += u64::from(weight);
            cumulative.push(sum);
        }
        Ok(RequestSource {
            choices,
            cumulative,
            rng: Cell::new(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1),
            seq: Cell::new(0),
            rows,
            worker,
            workers,
            segment: segment.clone(),
            script: None,
            dynamic: false,
            keep_alive: plan.request.keep_alive,
            wants_response: false,
            forward,
        })
    }

    /// Hands this worker's script its calls: requests when it makes them, responses when it
    /// wants them, delays.
    pub(crate) fn with_script(mut self, script: Box<dyn WorkerScript>) -> Self {
        self.dynamic = script.dynamic();
        self.wants_response = script.wants_response();
        self.script = Some(RefCell::new(script));
        self
    }

    /// True when responses go to the script: their bytes must be kept, not dropped.
    pub(crate) fn wants_response(&self) -> bool {
        self.wants_response
    }

    /// Hands one whole response (as read) to the script.
    pub(crate) fn response(&self, bytes: &[u8]) -> Result<(), String> {
        let Some(script) = &self.script else {
            return Ok(());
        };
        let (status, headers, body) = crate::script::split_response(bytes);
        script.borrow_mut().response(status, &headers, &body)
    }

    /// The script's wait before the next request of a connection, if any.
    pub(crate) fn delay(&self) -> Result<Option<std::time::Duration>, String> {
        match &self.script {
            Some(script) => script.borrow_mut().delay(),
            None => Ok(None),
        }
    }

    /// The script stopped its thread.
    pub(crate) fn stopped(&self) -> bool {
        self.script.as_ref().is_some_and(|s| s.borrow().stopped())
    }

    fn scripted(&self, buf: &mut Vec<u8>) -> Picked<'_> {
        let script = self.script.as_ref().expect("dynamic implies a script");
        buf.clear();
        match script.borrow_mut().request(buf) {
            Ok(batch) => {
                let close = if self.keep_alive {
                    batch == 1 && says_close(buf)
                } else {
                    close_last(buf);
                    true
                };
                if let Some(forward) = &self.forward {
                    forward.rewrite(buf);
                }
                let method = buf.split(|&b| b == b' ').next().unwrap_or(b"");
                Picked::Rendered(Meta {
                    head: method == b"HEAD",
                    close,
                    idempotent: matches!(
                        method,
                        b"GET" | b"HEAD" | b"PUT" | b"DELETE" | b"OPTIONS" | b"TRACE"
                    ),
                    batch,
                })
            }
            Err(message) => Picked::Failed(message),
        }
    }

    /// The next request: a weighted pick, rendered into `buf` when it has templates.
    ///
    /// `global` is the request's number on an open-loop schedule. The pick and the data row
    /// are functions of that number, so a request is the same whichever machine or worker
    /// sends it and a split run sends exactly the mix and rows of one machine.
    pub(crate) fn next<'a>(&'a self, global: Option<u64>, buf: &mut Vec<u8>) -> Picked<'a> {
        if self.dynamic {
            return self.scripted(buf);
        }
        if self.choices.len() == 1 {
            if let Bytes::Fixed(bytes) = &self.choices[0].bytes {
                return Picked::Fixed(bytes, self.choices[0].meta);
            }
        }
        let k = global.unwrap_or_else(|| {
            let seq = self.seq.get();
            self.seq.set(seq + 1);
            self.segment.global(seq * self.workers + self.worker)
        });
        let index = if self.choices.len() == 1 {
            0
        } else {
            let total = *self.cumulative.last().expect("at least one request");
            let x = mix64(k) % total;
            self.cumulative.partition_point(|&c| c <= x)
        };
        let mut rng = self.rng.get();
        let choice = &self.choices[index];
        let picked = match &choice.bytes {
            Bytes::Fixed(bytes) => Picked::Fixed(bytes, choice.meta),
            Bytes::Templated(t) => {
                let row: &[String] = if self.rows.is_empty() {
                    &[]
                } else {
                    &self.rows[(k % self.rows.len() as u64) as usize]
                };
                let mut ctx = RenderContext {
                    rng: &mut rng,
                    seq: k,
                    row,
                    segment: self.segment.index,
                };
                match render(t, &mut ctx, buf) {
                    Ok(()) => {
                        if let Some(forward) = &self.forward {
                            forward.rewrite(buf);
                        }
                        Picked::Rendered(choice.meta)
                    }
                    Err(message) => Picked::Failed(message),
                }
            }
        };
        self.rng.set(rng);
        picked
    }
}

/// True when a script's request head says `Connection: close` (any case): the connection
/// is then not reused after it. Only the head is looked at.
fn says_close(request: &[u8]) -> bool {
    let head_end = request
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .unwrap_or(request.len());
    request[..head_end].split(|&b| b == b'\n').any(|line| {
        line.len() > 11
            && line[..11].eq_ignore_ascii_case(b"connection:")
            && line[11..]
                .windows(5)
                .any(|w| w.eq_ignore_ascii_case(b"close"))
    })
}

/// Under --no-keepalive: makes the last request of a script's bytes say `Connection: close`
/// (the header added at the end of its head, in place of any other Connection header, unless
/// the head says close already), so that the
/// server knows the connection ends after it (RFC 9112 §9.6); the caller closes it then. The
/// earlier requests of a pipelined batch are left as they are: a server closes after the
/// first request that says close, and the rest of the batch would go unanswered.
fn close_last(buf: &mut Vec<u8>) {
    let start = crate::script::last_request_start(buf);
    if says_close(&buf[start..]) {
        return;
    }
    let Some(end) = buf[start..].windows(4).position(|w| w == b"\r\n\r\n") else {
        return;
    };
    // The head's own Connection lines (`keep-alive`) go: one header, one meaning.
    let head = &buf[start..start + end + 2];
    let mut rewritten = Vec::with_capacity(head.len() + 19);
    for line in head.split_inclusive(|&b| b == b'\n') {
        if !(line.len() > 11 && line[..11].eq_ignore_ascii_case(b"connection:")) {
            rewritten.extend_from_slice(line);
        }
    }
    rewritten.extend_from_slice(b"Connection: close\r\n");
    buf.splice(start..start + end + 2, rewritten);
}

/// splitmix64's finalizer: consecutive request numbers give unrelated picks.
fn mix64(k: u64) -> u64 {
    let mut z = k.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// Renders a whole request: the body first (its length goes in the head), then the head.
/// Renders one request; `Err` when a gRPC body's rendering is not a message of the method
/// (a data row's value of the wrong type, say).
fn render(t: &Templated, ctx: &mut RenderContext<'_>, out: &mut Vec<u8>) -> Result<(), String> {
    let mut body = Vec::new();
    t.body.render(ctx, &mut body);
    if let Some(encode) = &t.encode {
        let json = std::mem::take(&mut body);
        encode.encode(&json, &mut body).map_err(|e| {
            format!(
                "the request message {:?} does not encode: {e}",
                String::from_utf8_lossy(&json)
            )
        })?;
    }
    out.clear();
    out.extend_from_slice(t.method.as_bytes());
    out.push(b' ');
    t.path.render(ctx, out);
    out.extend_from_slice(b" HTTP/1.1\r\n");
    // The user's own Host or User-Agent replaces ours, as for a fixed request.
    let given = |name: &str| t.headers.iter().any(|(n, _)| n.eq_ignore_ascii_case(name));
    if !given("host") {
        out.extend_from_slice(b"Host: ");
        out.extend_from_slice(t.host.as_bytes());
        out.extend_from_slice(b"\r\n");
    }
    if !given("user-agent") {
        out.extend_from_slice(
            concat!("User-Agent: loadmark/", env!("CARGO_PKG_VERSION"), "\r\n").as_bytes(),
        );
    }
    for (name, value) in &t.headers {
        out.extend_from_slice(name.as_bytes());
        out.extend_from_slice(b": ");
        value.render(ctx, out);
        out.extend_from_slice(b"\r\n");
    }
    if !body.is_empty() || matches!(t.method.as_str(), "POST" | "PUT" | "PATCH") {
        out.extend_from_slice(format!("Content-Length: {}\r\n", body.len()).as_bytes());
    }
    if !t.keep_alive {
        out.extend_from_slice(b"Connection: close\r\n");
    }
    out.extend_from_slice(b"\r\n");
    out.extend_from_slice(&body);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn placeholders_come_back_from_the_url_parser() {
        let url = loadmark_plan::Target::parse("http://h/a/{{csv code}}/b%2Fc?k={{rand_int 1 9}}")
            .unwrap();
        let path = placeholders_unescaped(url.path_and_query());
        assert_eq!(path, "/a/{{csv code}}/b%2Fc?k={{rand_int 1 9}}");
    }

    #[test]
    fn close_goes_on_the_last_request_only_once() {
        let mut one = b"GET / HTTP/1.1\r\nHost: h\r\n\r\n".to_vec();
        close_last(&mut one);
        assert_eq!(
            one,
            b"GET / HTTP/1.1\r\nHost: h\r\nConnection: close\r\n\r\n"
        );
        close_last(&mut one);
        assert_eq!(one.len(), 46, "a request that says close is left as it is");
        let mut said =
            b"POST / HTTP/1.1\r\nconnection: Close\r\nContent-Length: 2\r\n\r\nhi".to_vec();
        let before = said.clone();
        close_last(&mut said);
        assert_eq!(said, before);
        let mut kept = b"GET / HTTP/1.1\r\nConnection: keep-alive\r\nHost: h\r\n\r\n".to_vec();
        close_last(&mut kept);
        assert_eq!(
            kept, b"GET / HTTP/1.1\r\nHost: h\r\nConnection: close\r\n\r\n",
            "keep-alive is replaced, not contradicted"
        );
        let mut two =
            b"GET /a HTTP/1.1\r\n\r\nPOST /b HTTP/1.1\r\nContent-Length: 2\r\n\r\nhi".to_vec();
        close_last(&mut two);
        assert_eq!(
            two,
            b"GET /a HTTP/1.1\r\n\r\nPOST /b HTTP/1.1\r\nContent-Length: 2\r\nConnection: close\r\n\r\nhi"
        );
    }
}

#[cfg(test)]
mod own_headers {
    use super::*;

    fn rendered(headers: &[(&str, &str)]) -> String {
        let t = Templated {
            method: "GET".into(),
            path: Template::parse("/x/{{seq}}", "path", &[]).unwrap(),
            host: "h:1".into(),
            headers: headers
                .iter()
                .map(|(n, v)| (n.to_string(), Template::parse(v, "headers", &[]).unwrap()))
                .collect(),
            body: Template::parse("", "body", &[]).unwrap(),
            keep_alive: true,
            encode: None,
        };
        let mut rng = 1;
        let mut ctx = RenderContext {
            rng: &mut rng,
            seq: 7,
            row: &[],
            segment: 0,
        };
        let mut out = Vec::new();
        render(&t, &mut ctx, &mut out).unwrap();
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn a_templated_request_sends_the_users_host_and_user_agent_once() {
        let ours = rendered(&[]);
        assert!(ours.starts_with("GET /x/7 HTTP/1.1\r\nHost: h:1\r\nUser-Agent: loadmark/"));
        let theirs = rendered(&[("user-agent", "curl/8"), ("HOST", "example")]);
        assert_eq!(
            theirs,
            "GET /x/7 HTTP/1.1\r\nuser-agent: curl/8\r\nHOST: example\r\n\r\n"
        );
    }
}

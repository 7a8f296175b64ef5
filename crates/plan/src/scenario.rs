//! Scenarios (issue 17): what one virtual user does in one iteration, as ordered steps.
//!
//! ```yaml
//! scenario:
//!   - name: login
//!     request: {method: POST, url: /login, body: '{"user":"u{{seq}}"}'}
//!     extract: {token: json /token}
//!     check: [status == 200]
//!   - think: 100ms..500ms
//!   - name: list
//!     request: {url: /items, headers: {Authorization: 'Bearer {{token}}'}}
//! ```
//!
//! The file form ([`ScenarioStepFile`]) mirrors the YAML, is kept in the [`crate::Plan`] as
//! written (so reports show it), and is compiled into a [`Scenario`] both when the plan is
//! checked (errors name the step) and on each worker thread. Extractions and checks parse
//! when the YAML is read, so their errors carry the file's line and column.

use std::fmt;
use std::time::Duration;

use indexmap::IndexMap;
use schemars::JsonSchema;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::check::Check;
use crate::template::Template;
use crate::text::parse_duration;

/// One step of a scenario: a request (with `name`, `extract`, `check`) or a `think` time.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ScenarioStepFile {
    /// The step's name in reports and thresholds [default: METHOD URL].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// What the step sends.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request: Option<StepRequestFile>,
    /// A gRPC call instead of `request` (issue 36), on the user's own HTTP/2 connection for
    /// gRPC: its first response message reads as JSON for `extract` and `json`/`body`
    /// checks, and `grpc-status == OK` checks its status.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub grpc: Option<StepGrpcFile>,
    /// Values to take from the response, by variable name: `json /pointer`, `regex PATTERN`
    /// (its first group, else the whole match), `header NAME`, `cookie NAME` (from
    /// Set-Cookie). Later steps use them as `{{name}}`. A value that cannot be extracted
    /// ends the iteration (counted by step) instead of sending a broken request.
    #[serde(default, skip_serializing_if = "IndexMap::is_empty")]
    #[schemars(with = "IndexMap<String, String>")]
    pub extract: IndexMap<String, Extract>,
    /// Checks on this step's responses, counted by name (see `--check`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub check: Vec<Check>,
    /// A pause instead of a request: `500ms`, or a random time in `100ms..500ms`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub think: Option<Think>,
}

/// The request of a step; `url` is a path on the target (`/items/{{item}}`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct StepRequestFile {
    /// [default: GET]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub method: Option<String>,
    /// Path and query on the target, starting with `/`; may hold templates.
    #[serde(alias = "path")]
    pub url: String,
    #[serde(default, skip_serializing_if = "IndexMap::is_empty")]
    pub headers: IndexMap<String, String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub body: Option<String>,
    /// The protocol this step speaks: `h1` (HTTP/1.1), `h2` (HTTP/2, one connection per
    /// user), `h3` (HTTP/3 over QUIC, one connection per user, https:// only) or `ws` (a
    /// WebSocket session to `url`: `body` is one text message, the step waits for one
    /// reply; checks and extractions read the reply) [default: the plan's, `h2` with
    /// `load.http2`, `h3` with `load.http3`]. Steps of one journey may mix them over
    /// `http://` (HTTP/2 with prior knowledge); over `https://` ALPN decides, so HTTP steps
    /// over TCP speak the plan's protocol (`h3` steps, over QUIC, mix with either).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub protocol: Option<StepProtocol>,
}

/// A gRPC call of a step: `{call: pkg.Service/Method, message: '{"name":"{{user}}"}'}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct StepGrpcFile {
    /// The method, `package.Service/Method` (as ghz and grpcurl spell it), found in the
    /// plan's `grpc:` schemas or by the target's reflection.
    pub call: String,
    /// The request message as JSON (the proto3 JSON mapping); may hold templates and
    /// variables, rendered per call [default: {}].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    /// Metadata sent with the call, by name; values may hold templates.
    #[serde(default, skip_serializing_if = "IndexMap::is_empty")]
    pub metadata: IndexMap<String, String>,
    /// Set by the CLI from the plan's schema before the run; never in a file.
    #[serde(skip)]
    #[schemars(skip)]
    pub codec: Option<crate::grpc::GrpcCodec>,
}

impl StepGrpcFile {
    /// The method as `pkg.Service/Method` (`pkg.Service.Method` is accepted too), or why
    /// `call` names none.
    pub fn method(&self) -> Result<(String, String), String> {
        let call = self.call.trim().trim_start_matches('/');
        let split = call.rsplit_once('/').or_else(|| call.rsplit_once('.'));
        match split {
            Some((s, m))
                if !s.is_empty()
                    && !m.is_empty()
                    && !s.contains('/')
                    && [s, m].iter().all(|p| {
                        p.chars()
                            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '.')
                    }) =>
            {
                Ok((s.to_string(), m.to_string()))
            }
            _ => Err(format!(
                "grpc.call {:?}: expected package.Service/Method, e.g. helloworld.Greeter/SayHello",
                self.call
            )),
        }
    }
}

/// The protocol of a scenario step.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum StepProtocol {
    /// HTTP/1.1 on the user's keep-alive connection.
    H1,
    /// HTTP/2 on the user's HTTP/2 connection.
    H2,
    /// HTTP/3 on the user's QUIC connection (https:// only).
    H3,
    /// A message and its reply on the user's WebSocket session to the step's URL.
    Ws,
}

/// Where an extracted value comes from.
#[derive(Debug, Clone, PartialEq)]
pub enum Extract {
    /// An RFC 6901 pointer into a JSON body (may hold templates); strings are taken without
    /// quotes, other values as JSON text.
    Json(String),
    /// A regex over the body: its first capture group, else the whole match.
    Regex(String),
    /// The first header of that name (any case).
    Header(String),
    /// The value of a cookie set by `Set-Cookie`.
    Cookie(String),
}

/// The forms an extraction can take, for errors and the schema.
pub const EXTRACT_FORMS: &str =
    "json /pointer | regex PATTERN | header NAME | cookie NAME (e.g. `json /token`)";

impl Extract {
    pub fn parse(text: &str) -> Result<Extract, String> {
        let text = text.trim();
        let (kind, rest) = text.split_once(char::is_whitespace).unwrap_or((text, ""));
        let rest = rest.trim();
        if rest.is_empty() {
            return Err(format!("{text:?}: expected {EXTRACT_FORMS}"));
        }
        match kind {
            "json" if rest.starts_with('/') || rest.starts_with("{{") => {
                Ok(Extract::Json(rest.to_string()))
            }
            "json" => Err(format!(
                "{text:?}: a JSON pointer starts with '/', e.g. json /items/0/id"
            )),
            "regex" => {
                let pattern = rest
                    .strip_prefix('"')
                    .and_then(|r| r.strip_suffix('"'))
                    .unwrap_or(rest);
                regex::Regex::new(pattern)
                    .map_err(|e| format!("{text:?}: not a valid regex: {e}"))?;
                Ok(Extract::Regex(pattern.to_string()))
            }
            "header" => Ok(Extract::Header(rest.to_ascii_lowercase())),
            "cookie" => Ok(Extract::Cookie(rest.to_string())),
            _ => Err(format!(
                "{text:?}: expected {EXTRACT_FORMS}, found {kind:?}"
            )),
        }
    }
}

impl fmt::Display for Extract {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Extract::Json(p) => write!(f, "json {p}"),
            Extract::Regex(r) => write!(f, "regex {r}"),
            Extract::Header(h) => write!(f, "header {h}"),
            Extract::Cookie(c) => write!(f, "cookie {c}"),
        }
    }
}

impl Serialize for Extract {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for Extract {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let text = String::deserialize(d)?;
        Extract::parse(&text).map_err(serde::de::Error::custom)
    }
}

/// A think time: fixed, or uniformly random between two ends (both included).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Think {
    pub min: Duration,
    pub max: Duration,
}

impl Think {
    pub fn parse(text: &str) -> Result<Think, String> {
        let one = |t: &str| {
            parse_duration(t.trim()).map_err(|_| {
                format!("think {text:?}: expected a duration (500ms, 1s) or a range 100ms..500ms")
            })
        };
        let (min, max) = match text.split_once("..") {
            Some((a, b)) => (one(a)?, one(b)?),
            None => (one(text)?, one(text)?),
        };
        if min > max {
            return Err(format!(
                "think {text:?}: the range's start is after its end"
            ));
        }
        Ok(Think { min, max })
    }
}

impl Serialize for Think {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        if self.min == self.max {
            s.collect_str(&format_args!("{:?}", self.min))
        } else {
            s.collect_str(&format_args!("{:?}..{:?}", self.min, self.max))
        }
    }
}

impl<'de> Deserialize<'de> for Think {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        // A bare number in YAML (`think: 1`) is seconds, as elsewhere in plans.
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Raw {
            Text(String),
            Number(f64),
        }
        let text = match Raw::deserialize(d)? {
            Raw::Text(t) => t,
            Raw::Number(n) => n.to_string(),
        };
        Think::parse(&text).map_err(serde::de::Error::custom)
    }
}

impl JsonSchema for Think {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "Think".into()
    }

    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({
            "type": ["string", "number"],
            "description": "A pause: a duration (500ms, 2s) or a random one in a range (100ms..500ms)",
        })
    }
}

/// A compiled scenario: templates parsed, variables numbered.
#[derive(Debug, Clone)]
pub struct Scenario {
    pub steps: Vec<Step>,
    /// Variable names in order of first extraction; `Template`s refer to them by index.
    pub vars: Vec<String>,
    /// Names of the request steps, in order (the per-step figures' names).
    pub names: Vec<String>,
}

/// A compiled step.
#[derive(Debug, Clone)]
pub enum Step {
    Request(Box<RequestStep>),
    Think(Think),
}

#[derive(Debug, Clone)]
pub struct RequestStep {
    /// The step's place among the request steps (its figures' index).
    pub index: usize,
    pub name: String,
    pub method: String,
    pub path: Template,
    pub headers: Vec<(String, Template)>,
    pub body: Template,
    /// Variable index and where its value comes from (a JSON pointer may be templated).
    pub extract: Vec<(usize, Extract, Option<Template>)>,
    pub checks: Vec<Check>,
    /// The step's own protocol (`None`: the plan's).
    pub protocol: Option<StepProtocol>,
    /// A `grpc:` step: its call (`pkg.Service/Method`) and codec (set by the CLI). Its
    /// request is a POST to `/pkg.Service/Method` with gRPC's headers, the message as body.
    pub grpc: Option<GrpcStep>,
}

/// A compiled `grpc:` step.
#[derive(Debug, Clone)]
pub struct GrpcStep {
    pub call: String,
    pub codec: Option<crate::grpc::GrpcCodec>,
}

/// A scenario that does not compile: which step (0-based among all steps) and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScenarioError {
    pub step: usize,
    pub message: String,
}

impl Scenario {
    /// Compiles the file form. `columns` are the data file's columns (`{{csv NAME}}`).
    pub fn compile(
        files: &[ScenarioStepFile],
        columns: &[String],
    ) -> Result<Scenario, ScenarioError> {
        let mut vars: Vec<String> = Vec::new();
        let mut names: Vec<String> = Vec::new();
        let mut steps = Vec::new();
        if !files
            .iter()
            .any(|s| s.request.is_some() || s.grpc.is_some())
        {
            return Err(ScenarioError {
                step: 0,
                message: "scenario: at least one step needs a `request` (or a `grpc` call)".into(),
            });
        }
        for (i, f) in files.iter().enumerate() {
            let fail = |message: String| ScenarioError { step: i, message };
            let label = f.name.clone().unwrap_or_else(|| format!("step {}", i + 1));
            if let (Some(_), Some(_)) = (&f.request, &f.grpc) {
                return Err(fail(format!(
                    "scenario step {label}: give `request` or `grpc`, not both (a step sends one thing)"
                )));
            }
            let grpc_request;
            let r = match (&f.request, &f.grpc) {
                (Some(r), _) => Some(r),
                (None, Some(g)) => {
                    grpc_request = grpc_as_request(g)
                        .map_err(|m| fail(format!("scenario step {label}: {m}")))?;
                    Some(&grpc_request)
                }
                (None, None) => None,
            };
            let Some(r) = r else {
                let Some(think) = f.think else {
                    return Err(fail(format!(
                        "scenario step {label}: expected `request` (a request step), `grpc` (a gRPC call) or `think` (a pause)"
                    )));
                };
                if f.name.is_some() || !f.extract.is_empty() || !f.check.is_empty() {
                    return Err(fail(format!(
                        "scenario step {label}: a `think` step pauses only; name, extract and check belong to request steps"
                    )));
                }
                steps.push(Step::Think(think));
                continue;
            };
            if f.think.is_some() {
                return Err(fail(format!(
                    "scenario step {label}: give `request` or `think`, not both (make the pause a step of its own)"
                )));
            }
            if f.grpc.is_none() {
                if let Some(c) = f
                    .check
                    .iter()
                    .find(|c| matches!(c.expr, crate::check::Expr::GrpcStatus(..)))
                {
                    return Err(fail(format!(
                        "scenario step {label}: check {:?} reads a gRPC call's status; this step is no `grpc:` call",
                        c.text
                    )));
                }
            }
            let method = r.method.clone().unwrap_or_else(|| "GET".into());
            if method.is_empty() || !method.bytes().all(|b| b.is_ascii_alphabetic()) {
                return Err(fail(format!(
                    "scenario step {label}: method {method:?} is not an HTTP method"
                )));
            }
            if !r.url.starts_with('/') {
                return Err(fail(format!(
                    "scenario step {label}: url {:?} must be a path on the target, starting with '/'",
                    r.url
                )));
            }
            let websocket = r.protocol == Some(StepProtocol::Ws);
            if websocket && method != "GET" {
                return Err(fail(format!(
                    "scenario step {label}: a WebSocket step opens its session with GET; its `body` is the message (drop `method: {method}`)"
                )));
            }
            let name = f.name.clone().unwrap_or_else(|| {
                if let Some(g) = &f.grpc {
                    format!("GRPC {}", g.call.trim().trim_start_matches('/'))
                } else if websocket {
                    format!("WS {}", r.url)
                } else {
                    format!("{method} {}", r.url)
                }
            });
            if names.contains(&name) {
                return Err(fail(format!(
                    "scenario step {name:?}: two steps have this name; each step's figures need their own"
                )));
            }
            let templ = |text: &str, field: &'static str| {
                Template::parse_with_vars(text, field, columns, &vars).map_err(|e| {
                    let known = if vars.is_empty() {
                        "no variable is extracted before it".to_string()
                    } else {
                        format!("variables known here: {}", vars.join(", "))
                    };
                    fail(format!("scenario step {name}: {e} ({known})"))
                })
            };
            let path = templ(&r.url, "request.url")?;
            let headers = r
                .headers
                .iter()
                .map(|(k, v)| Ok((k.clone(), templ(v, "request.headers")?)))
                .collect::<Result<Vec<_>, ScenarioError>>()?;
            let body = templ(r.body.as_deref().unwrap_or(""), "request.body")?;
            let mut extract = Vec::new();
            let mut new_vars = Vec::new();
            for (var, how) in &f.extract {
                if var.is_empty() || !var.chars().all(|c| c.is_alphanumeric() || c == '_') {
                    return Err(fail(format!(
                        "scenario step {name}: variable {var:?}: use letters, digits and _"
                    )));
                }
                if matches!(
                    var.as_str(),
                    "seq" | "segment" | "rand_int" | "rand_f" | "csv"
                ) {
                    return Err(fail(format!(
                        "scenario step {name}: {var:?} is a placeholder's name; choose another variable name"
                    )));
                }
                let pointer = match how {
                    Extract::Json(p) => Some(templ(p, "extract")?),
                    _ => None,
                };
                new_vars.push((var.clone(), how.clone(), pointer));
            }
            for (var, how, pointer) in new_vars {
                let index = match vars.iter().position(|v| *v == var) {
                    Some(i) => i,
                    None => {
                        vars.push(var);
                        vars.len() - 1
                    }
                };
                extract.push((index, how, pointer));
            }
            names.push(name.clone());
            steps.push(Step::Request(Box::new(RequestStep {
                index: names.len() - 1,
                name,
                method,
                path,
                headers,
                body,
                extract,
                checks: f.check.clone(),
                protocol: r.protocol,
                grpc: f.grpc.as_ref().map(|g| GrpcStep {
                    call: r.url.trim_start_matches('/').to_string(),
                    codec: g.codec.clone(),
                }),
            })));
        }
        Ok(Scenario { steps, vars, names })
    }

    /// Some step reads a response's headers or body (a check or an extraction).
    pub fn needs_response(&self) -> bool {
        self.steps.iter().any(|s| match s {
            Step::Request(r) => !r.extract.is_empty() || r.checks.iter().any(Check::needs_response),
            Step::Think(_) => false,
        })
    }
}

/// A `grpc:` step as the request it sends: a POST of the message (made protobuf by the
/// step's codec as it is sent) with gRPC's headers and the step's metadata, over HTTP/2.
fn grpc_as_request(g: &StepGrpcFile) -> Result<StepRequestFile, String> {
    let (service, method) = g.method()?;
    let mut headers = IndexMap::new();
    headers.insert("content-type".to_string(), "application/grpc".to_string());
    headers.insert("te".to_string(), "trailers".to_string());
    for (name, value) in &g.metadata {
        let lower = name.to_ascii_lowercase();
        if lower.starts_with(':') || ["content-type", "te"].contains(&lower.as_str()) {
            return Err(format!(
                "grpc.metadata {name:?}: gRPC sets this header itself"
            ));
        }
        headers.insert(lower, value.clone());
    }
    Ok(StepRequestFile {
        method: Some("POST".into()),
        url: format!("/{service}/{method}"),
        headers,
        body: Some(g.message.clone().unwrap_or_else(|| "{}".into())),
        protocol: Some(StepProtocol::H2),
    })
}

/// Where step `index` of `scenario:` starts in the YAML text (line, column), for errors.
pub fn locate_step(text: &str, index: usize) -> (usize, usize) {
    let mut lines = text.lines().enumerate();
    let Some((start, _)) = lines
        .by_ref()
        .find(|(_, l)| l.trim_start().starts_with("scenario:"))
    else {
        return (1, 1);
    };
    let mut item_indent = None;
    let mut seen = 0;
    for (i, line) in lines {
        let trimmed = line.trim_start();
        let indent = line.len() - trimmed.len();
        if trimmed.is_empty() || trimmed.starts_with('#') {
            continue;
        }
        if !trimmed.starts_with("- ") && indent == 0 {
            break;
        }
        if trimmed.starts_with("- ") && *item_indent.get_or_insert(indent) == indent {
            if seen == index {
                return (i + 1, indent + 3);
            }
            seen += 1;
        }
    }
    (start + 1, 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn steps(yaml: &str) -> Vec<ScenarioStepFile> {
        serde_norway::from_str(yaml).unwrap()
    }

    #[test]
    fn compiles_a_journey_with_variables() {
        let s = Scenario::compile(
            &steps(
                r#"
- name: login
  request: {method: POST, url: /login, body: '{"user":"u{{seq}}"}'}
  extract: {token: json /token}
  check: [status == 200]
- think: 10ms..20ms
- name: list
  request: {url: /items, headers: {Authorization: 'Bearer {{token}}'}}
  extract: {item: 'json /items/{{rand_int 0 9}}/id', sid: cookie session}
- request: {url: '/items/{{item}}'}
"#,
            ),
            &[],
        )
        .unwrap();
        assert_eq!(s.vars, ["token", "item", "sid"]);
        assert_eq!(s.names, ["login", "list", "GET /items/{{item}}"]);
        assert!(s.needs_response());
        match &s.steps[1] {
            Step::Think(t) => assert_eq!(
                (t.min, t.max),
                (Duration::from_millis(10), Duration::from_millis(20))
            ),
            _ => panic!("think"),
        }
    }

    #[test]
    fn errors_name_the_step_and_what_was_expected() {
        let err = |yaml: &str| Scenario::compile(&steps(yaml), &[]).unwrap_err();
        let e = err("- {name: a, request: {url: '/x/{{tokn}}'}}\n");
        assert!(
            e.message.contains("step a") && e.message.contains("no variable is extracted"),
            "{e:?}"
        );
        let e = err(
            "- {name: a, request: {url: /x}, extract: {token: json /t}}\n- {name: b, request: {url: '/{{tokn}}'}}\n",
        );
        assert_eq!(e.step, 1);
        assert!(e.message.contains("variables known here: token"), "{e:?}");
        let e = err("- {name: a, request: {url: x}}\n");
        assert!(e.message.contains("starting with '/'"), "{e:?}");
        let e = err("- {request: {url: /a}}\n- {request: {url: /a}}\n");
        assert!(e.message.contains("two steps have this name"), "{e:?}");
        let e = err("- {name: a}\n");
        assert!(e.message.contains("at least one step"), "{e:?}");
        let e = err("- {request: {url: /a}}\n- {name: t}\n");
        assert!(e.message.contains("expected `request`"), "{e:?}");
        for (bad, says) in [
            (
                "- {request: {url: /a}, extract: {t: jsn /x}}",
                "expected json",
            ),
            (
                "- {request: {url: /a}, extract: {t: json x}}",
                "starts with '/'",
            ),
            (
                "- {request: {url: /a}, extract: {t: 'regex ('}}",
                "not a valid regex",
            ),
            ("- {think: 5ms..1ms}", "start is after its end"),
            ("- {think: soon}", "expected a duration"),
        ] {
            let e = serde_norway::from_str::<Vec<ScenarioStepFile>>(bad)
                .unwrap_err()
                .to_string();
            assert!(e.contains(says), "{bad}: {e}");
        }
    }

    #[test]
    fn extractions_and_thinks_round_trip() {
        let files = steps(
            "- {request: {url: /a}, extract: {a: json /x, b: 'regex id=(\\d+)', c: header X-Token, d: cookie sid}}\n- {think: 250ms}\n",
        );
        let text = serde_norway::to_string(&files).unwrap();
        assert_eq!(steps(&text), files);
    }

    #[test]
    fn steps_are_located() {
        let text = "targets: {}\nscenario:\n  - name: a\n    request: {url: /a}\n  - think: 1s\n  - name: c\nload: {}\n";
        assert_eq!(locate_step(text, 0), (3, 5));
        assert_eq!(locate_step(text, 2), (6, 5));
    }
}

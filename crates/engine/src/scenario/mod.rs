//! Scenario executors (issue 17): virtual users running a plan's `scenario:` steps.
//!
//! A virtual user is one task with its own variables and a connection per protocol its
//! steps speak, each kept alive across its steps: HTTP/1.1 requests go through
//! [`crate::connection::perform_bytes`], the exchange `loadmark run` uses, HTTP/2 ones
//! through the user's [`h2::Link`] on the HTTP/2 executors' connection, so classification,
//! retries and timeouts are the same as in `loadmark run` (`grpc:` steps go on a second such
//! link whose streams read as gRPC calls, [`grpc`]). A response is recorded twice: into the run's figures (as any response) and into
//! its step's ([`loadmark_metrics::StepStats`]). The response is kept only when the step
//! has an extraction or a check that reads it (up to [`crate::checks::CAPTURE_LIMIT`]).
//!
//! Closed model: N users loop the scenario until the duration ends or the iteration count
//! is spent; with `stages`, the number of users follows the profile ([`ramp_users`]).
//! Open model: iterations start on the schedule (`Profile::due(k)`, iteration k of
//! the whole run) on a free user, up to a cap; an iteration due when every user is busy is
//! dropped and counted. Its first request's latency, and its duration, run from its intended
//! start.
//!
//! Per-user state: a data-file row (`per: user`: user k keeps row k; `per: iteration`:
//! iteration k takes row k) and, with `load.cookies`, a cookie jar ([`crate::cookies`]).

use std::cell::{Cell, RefCell};
use std::rc::Rc;
use std::sync::Arc;
use std::time::{Duration, Instant};

use loadmark_metrics::{ScenarioSlot, StepOutcome};
use loadmark_plan::{
    next_random, parse_csv, DataPer, Extract, Plan, Profile, RenderContext, RequestStep, Scenario,
    ScenarioStep, Segment, StepProtocol,
};
use tokio::task::JoinSet;

use crate::checks::Checks;
use crate::closed::{Budget, ClosedDriver, Until};
use crate::connection::{perform_bytes, Connection, Shared};
use crate::cookies::Jar;
use crate::http2::client::H2Run;
use crate::http2::Negotiated;
use crate::open::{Schedule, Share};
use crate::settle;
use crate::source::Meta;
use crate::transport::Transport;

mod grpc;
mod h2;
mod h3;
mod response;
mod ws;

use response::{cut, settle};

/// A request step, ready to run.
struct StepRun {
    step: RequestStep,
    meta: Meta,
    checks: Option<Checks>,
    /// The checks' names in the run's list: `STEP: CHECK` unless the check was named.
    global_names: Vec<String>,
    regexes: Vec<Option<regex::Regex>>,
    /// The response must be kept (an extraction or a check reads it).
    capture: bool,
    /// The request's bytes, when nothing in them changes (no template, no cookie jar):
    /// rendered once, so such a step costs what `loadmark run`'s fixed request does.
    fixed: Option<Vec<u8>>,
    /// What the step speaks (its `protocol`, else the plan's).
    protocol: StepProtocol,
    /// `fixed`, prepared for HTTP/2 once.
    prepared: Option<Arc<loadmark_wire::http2::request::Prepared>>,
    /// A `grpc:` step: its message made protobuf and its answer read as JSON through this
    /// (the CLI made it from the plan's schema).
    grpc: Option<loadmark_plan::GrpcCodec>,
}

/// What every user of a worker shares: the compiled scenario.
pub(crate) struct ScenarioShared {
    steps: Vec<Option<StepRun>>,
    thinks: Vec<Option<(Duration, Duration)>>,
    names: Vec<String>,
    vars: usize,
    host: String,
    /// The target URL's path, prefixed to every step's (without a trailing '/').
    prefix: String,
    headers: Vec<(String, String)>,
    keep_alive: bool,
    segment: Segment,
    worker: u64,
    workers: u64,
    /// Users this worker created so far: the next one's number is derived from it.
    users: Cell<u64>,
    /// The data file's rows (`{{csv NAME}}`), and who takes which.
    rows: Vec<Vec<String>>,
    per: DataPer,
    /// A cookie jar per user (`load.cookies`): every response's head is kept and read.
    cookies: bool,
    /// Through a forwarding HTTP proxy: each request rewritten for it (`crate::proxy`).
    forward: Option<crate::proxy::Forward>,
    /// What the run's HTTP/2 connections share (a server that does not speak it at all).
    h2run: Arc<H2Run>,
    /// The run's QUIC client, when a step speaks HTTP/3 (each user binds its own socket).
    h3run: Option<Arc<crate::http3::H3Run>>,
    /// `:scheme` of HTTP/2 requests.
    scheme: &'static str,
    /// The longest response message a `grpc:` step's call accepts.
    grpc_limit: usize,
    /// One of several scenarios run at once: its name, where its figures go.
    name: Option<Box<str>>,
}

impl ScenarioShared {
    /// Compiles `plan.scenario` (checked when the plan was loaded, so it compiles).
    pub(crate) fn new(
        plan: &Plan,
        (worker, workers): (u64, u64),
        segment: &Segment,
        (h2run, h3run): (Arc<H2Run>, Option<Arc<crate::http3::H3Run>>),
        name: Option<&str>,
    ) -> Option<Self> {
        let files = plan.scenario.as_ref()?;
        // Read and checked when the plan was loaded; the source read it again already.
        let (columns, rows) = match &plan.mix.data {
            Some(path) => parse_csv(&std::fs::read_to_string(path).ok()?).ok()?,
            None => (Vec::new(), Vec::new()),
        };
        let scenario = Scenario::compile(files, &columns).ok()?;
        let Scenario { steps, vars, names } = scenario;
        let mut runs = Vec::new();
        let mut thinks = Vec::new();
        for step in steps {
            match step {
                ScenarioStep::Think(t) => {
                    runs.push(None);
                    thinks.push(Some((t.min, t.max)));
                }
                ScenarioStep::Request(r) => {
                    let global_names = r
                        .checks
                        .iter()
                        .map(|c| {
                            // Unique in the run: scenarios run at once may share
                            // step names.
                            let scenario = name.map(|n| format!("{n}: ")).unwrap_or_default();
                            if c.name == c.text {
                                format!("{scenario}{}: {}", r.name, c.name)
                            } else {
                                format!("{scenario}{}", c.name)
                            }
                        })
                        .collect();
                    let checks = Checks::new(&r.checks);
                    let regexes = r
                        .extract
                        .iter()
                        .map(|(_, how, _)| match how {
                            Extract::Regex(re) => regex::Regex::new(re).ok(),
                            _ => None,
                        })
                        .collect();
                    let method = r.method.to_ascii_uppercase();
                    let grpc = r
                        .grpc
                        .as_ref()
                        .map(|g| g.codec.clone().unwrap_or_else(|| grpc::no_codec(&g.call)));
                    let capture = plan.cookies
                        || !r.extract.is_empty()
                        || checks.as_ref().is_some_and(|c| c.capture);
                    runs.push(Some(StepRun {
                        meta: Meta {
                            head: method == "HEAD",
                            close: !plan.request.keep_alive,
                            idempotent: matches!(
                                method.as_str(),
                                "GET" | "HEAD" | "PUT" | "DELETE" | "OPTIONS" | "TRACE"
                            ),
                            batch: 1,
                        },
                        step: RequestStep { method, ..*r },
                        checks,
                        global_names,
                        regexes,
                        capture,
                        fixed: None,
                        protocol: match (r.protocol, &plan.protocol) {
                            (Some(protocol), _) => protocol,
                            (None, p) if p.http3.is_some() => StepProtocol::H3,
                            (None, p) if p.http2.is_some() => StepProtocol::H2,
                            (None, _) => StepProtocol::H1,
                        },
                        prepared: None,
                        grpc,
                    }));
                    thinks.push(None);
                }
            }
        }
        let path = plan.request.url.path_and_query();
        let path = path.split('?').next().unwrap_or("");
        let mut shared = ScenarioShared {
            steps: runs,
            thinks,
            names,
            vars: vars.len(),
            host: plan.request.url.host_header().to_string(),
            prefix: path.trim_end_matches('/').to_string(),
            headers: plan.request.headers.clone(),
            keep_alive: plan.request.keep_alive,
            segment: segment.clone(),
            worker,
            workers,
            users: Cell::new(0),
            rows,
            per: plan.mix.per,
            cookies: plan.cookies,
            forward: crate::proxy::Forward::for_plan(plan),
            h2run,
            h3run,
            scheme: if plan.request.url.scheme().is_tls() {
                "https"
            } else {
                "http"
            },
            name: name.map(Into::into),
            grpc_limit: plan
                .protocol
                .grpc_max_receive
                .unwrap_or(crate::grpc::MAX_RECEIVE_MESSAGE),
        };
        let mut scratch = Me::new(shared.vars, 1, 0);
        for i in 0..shared.steps.len() {
            let Some(run) = &shared.steps[i] else {
                continue;
            };
            let step = &run.step;
            let literal = step.path.is_literal()
                && step.body.is_literal()
                && step.headers.iter().all(|(_, v)| v.is_literal());
            // A message that does not encode stays unrendered: each call says why.
            if literal && !shared.cookies && render(&shared, run, &mut scratch, 0).is_ok() {
                let bytes = std::mem::take(&mut scratch.request);
                let run = shared.steps[i].as_mut().expect("a request step");
                if run.protocol == StepProtocol::H2 {
                    run.prepared = h2::prepare_fixed(&bytes, shared.scheme);
                }
                run.fixed = Some(bytes);
            }
        }
        Some(shared)
    }

    /// Where this scenario's figures go.
    pub(crate) fn slot(&self) -> ScenarioSlot<'_> {
        match &self.name {
            Some(name) => ScenarioSlot::Named(name),
            None => ScenarioSlot::Single,
        }
    }

    /// A new user of this worker: its number is unique in the run (across workers and
    /// segments) and dense when every worker makes its share, so `per: user` rows go to
    /// users 0, 1, 2, ... in turn.
    fn new_user<S>(&self, seed: u64) -> User<S> {
        let local = self.users.get();
        self.users.set(local + 1);
        let id = self.segment.global(local * self.workers + self.worker);
        // Mixed with the number, so users made in the same instant draw different values.
        User::new(
            self.vars,
            seed ^ (id + 1).wrapping_mul(0xD6E8_FEB8_6659_FD93),
            id,
        )
    }

    /// The data row of an iteration: the user's, or the iteration's (numbered in the run).
    fn row(&self, user: u64, iteration: u64) -> usize {
        if self.rows.is_empty() {
            return 0;
        }
        let k = match self.per {
            DataPer::Iteration => iteration,
            DataPer::User | DataPer::Request => user,
        };
        (k % self.rows.len() as u64) as usize
    }
}

/// One virtual user: a link per protocol its steps speak (each opened at its first step and
/// kept across iterations, as a browser keeps its connections), and its own state.
pub(crate) struct User<S> {
    h1: Connection<S>,
    h2: Option<h2::Link<S>>,
    /// The user's gRPC channel: an HTTP/2 connection whose streams are gRPC calls.
    grpc: Option<h2::Link<S>>,
    h3: Option<h3::Link>,
    ws: Option<ws::Session<S>>,
    me: Me,
}

/// A user's own state: variables, random state, request buffer, data row and cookies.
pub(crate) struct Me {
    vars: Vec<String>,
    rng: u64,
    request: Vec<u8>,
    /// The user's number in the run (its `per: user` data row).
    id: u64,
    /// The data row of the running iteration.
    row: usize,
    jar: Jar,
}

impl Me {
    fn new(vars: usize, seed: u64, id: u64) -> Self {
        Me {
            vars: vec![String::new(); vars],
            rng: seed | 1,
            request: Vec::new(),
            id,
            row: 0,
            jar: Jar::default(),
        }
    }
}

impl<S> User<S> {
    fn new(vars: usize, seed: u64, id: u64) -> Self {
        User {
            h1: Connection::new(),
            h2: None,
            grpc: None,
            h3: None,
            ws: None,
            me: Me::new(vars, seed, id),
        }
    }

    /// The user leaves the run: its HTTP/2 connection's last bytes and request count go to
    /// the totals, its WebSocket session is closed (its HTTP/1.1 connection counts its own
    /// as it drops).
    async fn leave<T: Transport<Stream = S>>(self, shared: &Shared<T>)
    where
        S: tokio::io::AsyncWrite + Unpin,
    {
        for link in [self.h2, self.grpc].into_iter().flatten() {
            link.close(shared);
        }
        if let Some(session) = self.ws {
            session.close(&shared.recorder).await;
        }
    }
}

/// How an iteration ended.
enum Ended {
    Complete(Instant),
    /// A request failed or an extraction did: the rest of the iteration was not sent.
    Aborted,
}

/// Runs one iteration: every step in order. `scheduled` is its intended start (open model).
async fn iteration<T: Transport>(
    shared: &Shared<T>,
    sc: &ScenarioShared,
    user: &mut User<T::Stream>,
    seq: u64,
    scheduled: Option<Instant>,
) -> Ended
where
    T::Stream: Negotiated,
{
    let started = scheduled.unwrap_or_else(Instant::now);
    user.me.row = sc.row(user.me.id, seq);
    // The iteration's intended start: latency of its first request runs from it.
    let mut due = scheduled;
    for (i, run) in sc.steps.iter().enumerate() {
        let Some(run) = run else {
            let (min, max) = sc.thinks[i].expect("a step is a request or a think");
            let span = (max - min).as_micros() as u64;
            let extra = if span == 0 {
                0
            } else {
                next_random(&mut user.me.rng) % (span + 1)
            };
            tokio::time::sleep(min + Duration::from_micros(extra)).await;
            continue;
        };
        let index = run.step.index;
        let result = match run.protocol {
            StepProtocol::H2 => h2::perform(shared, sc, run, user, due.take(), seq).await,
            StepProtocol::H3 => h3::perform(shared, sc, run, user, due.take(), seq).await,
            StepProtocol::Ws => ws::perform(shared, sc, run, user, due.take(), seq).await,
            StepProtocol::H1 => {
                let bytes = match &run.fixed {
                    Some(bytes) => Ok(bytes),
                    None => render(sc, run, &mut user.me, seq)
                        .map(|()| &user.me.request)
                        .map_err(|m| (loadmark_metrics::ErrorKind::Protocol, m)),
                };
                match bytes {
                    Ok(bytes) => {
                        let meta = run.meta;
                        let capture = run.capture;
                        perform_bytes(shared, &mut user.h1, due.take(), bytes, meta, capture).await
                    }
                    Err(e) => Err(e),
                }
            }
        };
        let stamped = match run.protocol {
            StepProtocol::H1 => user.h1.stamped(),
            StepProtocol::H2 if run.grpc.is_some() => {
                user.grpc.as_ref().is_some_and(h2::Link::stamped)
            }
            StepProtocol::H2 => user.h2.as_ref().is_some_and(h2::Link::stamped),
            StepProtocol::H3 | StepProtocol::Ws => false,
        };
        shared.activity.request_ended(stamped);
        let sample = match result {
            Ok(sample) => sample,
            Err((kind, message)) => {
                let now = Instant::now();
                let mut rec = shared.recorder.borrow_mut();
                settle::failure_at(&mut rec, kind, now, &message);
                let stats = rec.scenario_in(now, sc.slot());
                stats.record_step(index, &sc.names, StepOutcome::Error(kind, &message));
                stats.aborted += 1;
                return Ended::Aborted;
            }
        };
        let settled = match run.protocol {
            StepProtocol::H2 if run.grpc.is_some() => {
                let link = user.grpc.as_mut();
                let (captured, status) =
                    link.map_or((None, None), |l| (l.take_capture(), l.take_status()));
                let codec = run.grpc.as_ref().expect("matched");
                let (view, overflow) = match captured.as_deref() {
                    Some(c) if run.capture => grpc::response_view(c, status, codec),
                    _ => (Vec::new(), false),
                };
                settle(
                    shared,
                    (sc, run),
                    &mut user.me,
                    &sample,
                    seq,
                    (&view, overflow),
                )
            }
            StepProtocol::H2 => {
                let captured = user.h2.as_mut().and_then(h2::Link::take_capture);
                let (raw, overflow) = captured
                    .as_deref()
                    .map_or((&[][..], false), |c| (&c.bytes[..], c.overflow));
                settle(
                    shared,
                    (sc, run),
                    &mut user.me,
                    &sample,
                    seq,
                    (raw, overflow),
                )
            }
            StepProtocol::H3 => {
                let response = user
                    .h3
                    .as_ref()
                    .map_or((&[][..], false), h3::Link::response);
                settle(shared, (sc, run), &mut user.me, &sample, seq, response)
            }
            StepProtocol::Ws => {
                let reply = user
                    .ws
                    .as_ref()
                    .map_or((&[][..], false), ws::Session::reply);
                settle(shared, (sc, run), &mut user.me, &sample, seq, reply)
            }
            StepProtocol::H1 => {
                let response = if run.capture {
                    user.h1.response()
                } else {
                    (&[][..], false)
                };
                let settled = settle(shared, (sc, run), &mut user.me, &sample, seq, response);
                user.h1.release_capture();
                settled
            }
        };
        if let Err(message) = settled {
            let mut rec = shared.recorder.borrow_mut();
            let stats = rec.scenario_in(sample.ended, sc.slot());
            let step = stats.step(index, &sc.names);
            step.extraction_failures += 1;
            step.first_extraction_failure
                .get_or_insert_with(|| cut(&message));
            stats.aborted += 1;
            return Ended::Aborted;
        }
    }
    Ended::Complete(started)
}

/// Renders a step's request into the user's buffer: body first (its length goes in the
/// head), then the head, as `source.rs` renders a templated request. A `grpc:` step's body
/// is its message encoded; `Err` says why the rendered JSON is no message of the method.
fn render(sc: &ScenarioShared, run: &StepRun, user: &mut Me, seq: u64) -> Result<(), String> {
    let step = &run.step;
    let mut ctx = RenderContext {
        rng: &mut user.rng,
        seq,
        row: sc.rows.get(user.row).map_or(&[], Vec::as_slice),
        segment: sc.segment.index,
    };
    let mut body = Vec::new();
    step.body.render_with_vars(&mut ctx, &user.vars, &mut body);
    if let Some(codec) = &run.grpc {
        let mut message = Vec::with_capacity(body.len());
        codec.encode.encode(&body, &mut message).map_err(|e| {
            format!(
                "the message as rendered ({}) is not the method's: {e}",
                String::from_utf8_lossy(&body[..body.len().min(120)])
            )
        })?;
        body = message;
    }
    let out = &mut user.request;
    out.clear();
    out.extend_from_slice(step.method.as_bytes());
    out.push(b' ');
    out.extend_from_slice(sc.prefix.as_bytes());
    step.path.render_with_vars(&mut ctx, &user.vars, out);
    out.extend_from_slice(b" HTTP/1.1\r\n");
    // The user's own Host or User-Agent (the target's or the step's) replaces ours: a
    // header sent twice is a different request.
    let given = |name: &str| {
        sc.headers.iter().any(|(n, _)| n.eq_ignore_ascii_case(name))
            || step
                .headers
                .iter()
                .any(|(n, _)| n.eq_ignore_ascii_case(name))
    };
    if !given("host") {
        out.extend_from_slice(b"Host: ");
        out.extend_from_slice(sc.host.as_bytes());
        out.extend_from_slice(b"\r\n");
    }
    if !given("user-agent") {
        out.extend_from_slice(
            concat!("User-Agent: loadmark/", env!("CARGO_PKG_VERSION"), "\r\n").as_bytes(),
        );
    }
    for (name, value) in &sc.headers {
        if !step
            .headers
            .iter()
            .any(|(n, _)| n.eq_ignore_ascii_case(name))
        {
            out.extend_from_slice(format!("{name}: {value}\r\n").as_bytes());
        }
    }
    for (name, value) in &step.headers {
        out.extend_from_slice(name.as_bytes());
        out.extend_from_slice(b": ");
        value.render_with_vars(&mut ctx, &user.vars, out);
        out.extend_from_slice(b"\r\n");
    }
    // The jar's cookies, unless the step or the target sends a Cookie header of its own
    // (what the plan says wins over what the server set).
    let cookie = |n: &String| n.eq_ignore_ascii_case("cookie");
    if sc.cookies
        && !step.headers.iter().any(|(n, _)| cookie(n))
        && !sc.headers.iter().any(|(n, _)| cookie(n))
    {
        user.jar.write_header(out);
    }
    if !body.is_empty() || matches!(step.method.as_str(), "POST" | "PUT" | "PATCH") {
        out.extend_from_slice(format!("Content-Length: {}\r\n", body.len()).as_bytes());
    }
    if !sc.keep_alive {
        out.extend_from_slice(b"Connection: close\r\n");
    }
    out.extend_from_slice(b"\r\n");
    out.extend_from_slice(&body);
    if let Some(forward) = &sc.forward {
        forward.rewrite(out);
    }
    Ok(())
}

/// Records an iteration that ran every step.
fn finished<T: Transport>(shared: &Shared<T>, sc: &ScenarioShared, started: Instant) {
    let now = Instant::now();
    let mut rec = shared.recorder.borrow_mut();
    let stats = rec.scenario_in(now, sc.slot());
    stats.iterations += 1;
    loadmark_metrics::record_us(
        &mut stats.duration,
        u64::try_from(now.saturating_duration_since(started).as_micros()).unwrap_or(u64::MAX),
    );
}

/// A scenario's closed loop: each slot a virtual user looping the scenario.
impl<T: Transport> ClosedDriver<T> for ScenarioShared
where
    T::Stream: Negotiated,
{
    fn run_slot(
        self: &Rc<Self>,
        shared: Rc<Shared<T>>,
        until: Until,
        seed: u64,
    ) -> impl std::future::Future<Output = ()> + 'static {
        user_loop(shared, self.clone(), until, seed)
    }
}

/// Closed model: one virtual user looping the scenario until the budget (iterations), the
/// deadline or its ramp says stop; a surplus user of a ramp leaves after the iteration it
/// is in.
async fn user_loop<T: Transport>(
    shared: Rc<Shared<T>>,
    sc: Rc<ScenarioShared>,
    until: Until,
    seed: u64,
) where
    T::Stream: Negotiated,
{
    let mut user = sc.new_user(seed);
    while !until.reached(Instant::now()) {
        let Some(seq) = next_iteration(&sc, &until.budget) else {
            break;
        };
        if let Ended::Complete(started) = iteration(&shared, &sc, &mut user, seq, None).await {
            finished(&shared, &sc, started);
        }
    }
    user.leave(&shared).await;
}

/// Claims the next iteration (closed model): its number in the whole run, dense on one
/// machine and unique across segments, as `{{seq}}` and the `per: iteration` row.
fn next_iteration(sc: &ScenarioShared, budget: &Budget) -> Option<u64> {
    budget
        .claim_numbered()
        .map(|local| sc.segment.global(local))
}

/// Open model: this worker's share of the iteration schedule, each on a free user (up to
/// `max_users`), then waits for the iterations it started.
pub(crate) async fn schedule_users<T: Transport>(
    shared: Rc<Shared<T>>,
    sc: Rc<ScenarioShared>,
    profile: Arc<Profile>,
    origin: Instant,
    share: Share,
    max_users: usize,
) where
    T::Stream: Negotiated,
{
    let created = Cell::new(0usize);
    let idle: Rc<RefCell<Vec<User<T::Stream>>>> = Rc::new(RefCell::new(Vec::new()));
    let mut running = JoinSet::new();
    let index = share.index;
    let mut schedule = Schedule::new(profile, origin, share);
    while let Some((k, due)) = schedule.next(&shared.idle_polling).await {
        while running.try_join_next().is_some() {}
        let user = idle.borrow_mut().pop().or_else(|| {
            (created.get() < max_users).then(|| {
                created.set(created.get() + 1);
                sc.new_user(k.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ index)
            })
        });
        match user {
            Some(mut user) => {
                let (shared, sc, idle) = (shared.clone(), sc.clone(), idle.clone());
                running.spawn_local(async move {
                    if let Ended::Complete(started) =
                        iteration(&shared, &sc, &mut user, k, Some(due)).await
                    {
                        finished(&shared, &sc, started);
                    }
                    idle.borrow_mut().push(user);
                });
            }
            None => {
                shared
                    .recorder
                    .borrow_mut()
                    .scenario_in(due, sc.slot())
                    .dropped += 1;
            }
        }
    }
    while running.join_next().await.is_some() {}
    let left: Vec<_> = idle.borrow_mut().drain(..).collect();
    for user in left {
        user.leave(&shared).await;
    }
}

//! Scenario executors (issue 17): virtual users running a plan's `scenario:` steps.
//!
//! A virtual user is one task with one HTTP/1.1 connection (kept alive across its steps)
//! and its own variables; every request goes through [`crate::connection::perform_bytes`],
//! the same exchange `loadmark run` uses, so classification, retries and timeouts are the
//! same. A response is recorded twice: into the run's figures (as any response) and into
//! its step's ([`loadmark_metrics::StepStats`]). The response is kept only when the step
//! has an extraction or a check that reads it (up to [`crate::checks::CAPTURE_LIMIT`]).
//!
//! Closed model: N users loop the scenario until the duration ends or the iteration count
//! is spent; with `stages`, the number of users follows the profile ([`ramp_users`]). Open model: iterations start on the schedule (`Profile::due(k)`, iteration k of
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

use loadmark_metrics::{Sample, StepOutcome};
use loadmark_plan::{
    next_random, parse_csv, DataPer, Extract, Plan, Profile, RenderContext, RequestStep, Scenario,
    ScenarioStep, Segment,
};
use tokio::task::JoinSet;

use crate::checks::{Checks, Parsed, View, CAPTURE_LIMIT};
use crate::closed::Budget;
use crate::connection::{perform_bytes, Connection, Shared};
use crate::cookies::Jar;
use crate::open::{Schedule, Share};
use crate::source::Meta;
use crate::transport::Transport;

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
}

impl ScenarioShared {
    /// Compiles `plan.scenario` (checked when the plan was loaded, so it compiles).
    pub(crate) fn new(plan: &Plan, worker: u64, workers: u64, segment: &Segment) -> Option<Self> {
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
                            if c.name == c.text {
                                format!("{}: {}", r.name, c.name)
                            } else {
                                c.name.clone()
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
        };
        let mut scratch: User<()> = User::new(shared.vars, 1, 0);
        for i in 0..shared.steps.len() {
            let Some(run) = &shared.steps[i] else {
                continue;
            };
            let step = &run.step;
            let literal = step.path.is_literal()
                && step.body.is_literal()
                && step.headers.iter().all(|(_, v)| v.is_literal());
            if literal && !shared.cookies {
                render(&shared, run, &mut scratch, 0);
                let bytes = std::mem::take(&mut scratch.request);
                shared.steps[i].as_mut().expect("a request step").fixed = Some(bytes);
            }
        }
        Some(shared)
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

/// One virtual user: its connection, variables, random state and cookies.
pub(crate) struct User<S> {
    conn: Connection<S>,
    vars: Vec<String>,
    rng: u64,
    request: Vec<u8>,
    /// The user's number in the run (its `per: user` data row).
    id: u64,
    /// The data row of the running iteration.
    row: usize,
    jar: Jar,
}

impl<S> User<S> {
    fn new(vars: usize, seed: u64, id: u64) -> Self {
        User {
            conn: Connection::new(),
            vars: vec![String::new(); vars],
            rng: seed | 1,
            request: Vec::new(),
            id,
            row: 0,
            jar: Jar::default(),
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
) -> Ended {
    let started = scheduled.unwrap_or_else(Instant::now);
    user.row = sc.row(user.id, seq);
    // The iteration's intended start: latency of its first request runs from it.
    let mut due = scheduled;
    for (i, run) in sc.steps.iter().enumerate() {
        let Some(run) = run else {
            let (min, max) = sc.thinks[i].expect("a step is a request or a think");
            let span = (max - min).as_micros() as u64;
            let extra = if span == 0 {
                0
            } else {
                next_random(&mut user.rng) % (span + 1)
            };
            tokio::time::sleep(min + Duration::from_micros(extra)).await;
            continue;
        };
        let bytes = match &run.fixed {
            Some(bytes) => bytes,
            None => {
                render(sc, run, user, seq);
                &user.request
            }
        };
        let result = perform_bytes(
            shared,
            &mut user.conn,
            due.take(),
            bytes,
            run.meta,
            run.capture,
        )
        .await;
        shared.activity.request_ended(user.conn.stamped());
        let index = run.step.index;
        let sample = match result {
            Ok(sample) => sample,
            Err((kind, message)) => {
                let now = Instant::now();
                let mut rec = shared.recorder.borrow_mut();
                rec.record_error(kind, now, &message);
                let stats = rec.scenario(now);
                stats.record_step(index, &sc.names, StepOutcome::Error(kind, &message));
                stats.aborted += 1;
                return Ended::Aborted;
            }
        };
        if let Err(message) = settle(shared, sc, run, user, &sample, seq) {
            let mut rec = shared.recorder.borrow_mut();
            let stats = rec.scenario(sample.ended);
            let step = stats.step(index, &sc.names);
            step.extraction_failures += 1;
            step.first_extraction_failure
                .get_or_insert_with(|| cut(&message));
            stats.aborted += 1;
            user.conn.release_capture();
            return Ended::Aborted;
        }
        user.conn.release_capture();
    }
    Ended::Complete(started)
}

/// Records a response (the run's figures, the step's, its checks) and extracts the step's
/// variables; an error says which extraction failed and what the response held.
fn settle<T: Transport>(
    shared: &Shared<T>,
    sc: &ScenarioShared,
    run: &StepRun,
    user: &mut User<T::Stream>,
    sample: &Sample,
    seq: u64,
) -> Result<(), String> {
    let mut rec = shared.recorder.borrow_mut();
    rec.record(sample);
    let latency = sample
        .ended
        .saturating_duration_since(sample.scheduled.unwrap_or(sample.started));
    rec.scenario(sample.ended).record_step(
        run.step.index,
        &sc.names,
        StepOutcome::Response {
            status: sample.status,
            latency_us: u64::try_from(latency.as_micros()).unwrap_or(u64::MAX),
        },
    );
    if run.checks.is_none() && run.step.extract.is_empty() && !sc.cookies {
        return Ok(());
    }
    // Status and latency checks read no bytes: nothing was kept, nothing is parsed.
    let (raw, overflow) = if run.capture {
        user.conn.response()
    } else {
        (&[][..], false)
    };
    let view = View {
        status: sample.status,
        latency,
        raw,
        overflow,
        message: false,
    };
    let parsed = if run.capture {
        Parsed::of(&view)
    } else {
        Parsed::default()
    };
    if sc.cookies {
        let now = std::time::SystemTime::now();
        for (_, value) in parsed
            .headers
            .iter()
            .filter(|(n, _)| n.eq_ignore_ascii_case("set-cookie"))
        {
            user.jar.store(value, now);
        }
    }
    if let Some(checks) = &run.checks {
        checks.record_step(
            &view,
            &parsed,
            sample.ended,
            &mut rec,
            (run.step.index, &sc.names),
            &run.global_names,
        );
    }
    drop(rec);
    if run.step.extract.is_empty() {
        return Ok(());
    }
    if overflow {
        return Err(format!(
            "status {}; the response is longer than the {} KiB extraction buffer",
            sample.status,
            CAPTURE_LIMIT / 1024
        ));
    }
    let mut json: Option<Option<serde_json::Value>> = None;
    for (k, (var, how, pointer)) in run.step.extract.iter().enumerate() {
        let value = extract(
            how,
            pointer.as_ref(),
            &run.regexes[k],
            &parsed,
            &mut json,
            (&mut user.rng, &user.vars, sc.rows.get(user.row)),
            seq,
        );
        match value {
            Some(v) if !v.bytes().any(|b| b < 0x20 || b == 0x7f) => user.vars[*var] = v,
            found => {
                let body = parsed.body.as_deref().unwrap_or(&[]);
                let why = if found.is_some() {
                    "holds a control character (not sent in a request)"
                } else {
                    "found nothing"
                };
                return Err(format!(
                    "{how} {why}; status {}, body: {}",
                    sample.status,
                    String::from_utf8_lossy(&body[..body.len().min(120)])
                ));
            }
        }
    }
    Ok(())
}

fn extract(
    how: &Extract,
    pointer: Option<&loadmark_plan::Template>,
    regex: &Option<regex::Regex>,
    parsed: &Parsed<'_>,
    json: &mut Option<Option<serde_json::Value>>,
    (rng, vars, row): (&mut u64, &[String], Option<&Vec<String>>),
    seq: u64,
) -> Option<String> {
    let body = parsed.body.as_deref()?;
    match how {
        Extract::Json(_) => {
            let mut path = Vec::new();
            let template = pointer?;
            template.render_with_vars(
                &mut RenderContext {
                    rng,
                    seq,
                    row: row.map_or(&[], Vec::as_slice),
                    segment: 0,
                },
                vars,
                &mut path,
            );
            let doc = json
                .get_or_insert_with(|| serde_json::from_slice(body).ok())
                .as_ref()?;
            match doc.pointer(std::str::from_utf8(&path).ok()?)? {
                serde_json::Value::String(s) => Some(s.clone()),
                serde_json::Value::Null => None,
                other => Some(other.to_string()),
            }
        }
        Extract::Regex(_) => {
            let text = std::str::from_utf8(body).ok()?;
            let caps = regex.as_ref()?.captures(text)?;
            caps.get(1)
                .or_else(|| caps.get(0))
                .map(|m| m.as_str().to_string())
        }
        Extract::Header(name) => parsed
            .header(name)
            .and_then(|v| std::str::from_utf8(v).ok())
            .map(|v| v.trim().to_string()),
        Extract::Cookie(name) => parsed
            .headers
            .iter()
            .filter(|(n, _)| n.eq_ignore_ascii_case("set-cookie"))
            .filter_map(|(_, v)| std::str::from_utf8(v).ok())
            .find_map(|v| {
                let pair = v.split(';').next()?;
                let (k, val) = pair.split_once('=')?;
                (k.trim() == name).then(|| val.trim().to_string())
            }),
    }
}

fn cut(s: &str) -> String {
    match s.char_indices().nth(loadmark_metrics::CHECK_EXAMPLE_CHARS) {
        Some((i, _)) => format!("{}…", &s[..i]),
        None => s.to_string(),
    }
}

/// Renders a step's request into the user's buffer: body first (its length goes in the
/// head), then the head, as `source.rs` renders a templated request.
fn render<S>(sc: &ScenarioShared, run: &StepRun, user: &mut User<S>, seq: u64) {
    let step = &run.step;
    let mut ctx = RenderContext {
        rng: &mut user.rng,
        seq,
        row: sc.rows.get(user.row).map_or(&[], Vec::as_slice),
        segment: sc.segment.index,
    };
    let mut body = Vec::new();
    step.body.render_with_vars(&mut ctx, &user.vars, &mut body);
    let out = &mut user.request;
    out.clear();
    out.extend_from_slice(step.method.as_bytes());
    out.push(b' ');
    out.extend_from_slice(sc.prefix.as_bytes());
    step.path.render_with_vars(&mut ctx, &user.vars, out);
    out.extend_from_slice(b" HTTP/1.1\r\nHost: ");
    out.extend_from_slice(sc.host.as_bytes());
    out.extend_from_slice(b"\r\n");
    out.extend_from_slice(
        concat!("User-Agent: loadmark/", env!("CARGO_PKG_VERSION"), "\r\n").as_bytes(),
    );
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
}

/// Records an iteration that ran every step.
fn finished<T: Transport>(shared: &Shared<T>, started: Instant) {
    let now = Instant::now();
    let mut rec = shared.recorder.borrow_mut();
    let stats = rec.scenario(now);
    stats.iterations += 1;
    loadmark_metrics::record_us(
        &mut stats.duration,
        u64::try_from(now.saturating_duration_since(started).as_micros()).unwrap_or(u64::MAX),
    );
}

/// Closed model: one virtual user looping the scenario until the budget (iterations) or
/// the deadline says stop.
pub(crate) async fn user_loop<T: Transport>(
    shared: Rc<Shared<T>>,
    sc: Rc<ScenarioShared>,
    budget: Arc<Budget>,
    deadline: Option<Instant>,
    seed: u64,
) {
    let mut user = sc.new_user(seed);
    while deadline.is_none_or(|d| Instant::now() < d) {
        let Some(seq) = next_iteration(&sc, &budget) else {
            break;
        };
        if let Ended::Complete(started) = iteration(&shared, &sc, &mut user, seq, None).await {
            finished(&shared, started);
        }
    }
}

/// Claims the next iteration (closed model): its number in the whole run, dense on one
/// machine and unique across segments, as `{{seq}}` and the `per: iteration` row.
fn next_iteration(sc: &ScenarioShared, budget: &Budget) -> Option<u64> {
    budget
        .claim_numbered()
        .map(|local| sc.segment.global(local))
}

/// Closed model with `stages`: the connection ramp's slots ([`crate::closed::ramp_slots`],
/// recomputed every ramp step) are users here. A missing user starts as a new user (a new
/// number and row); a surplus one leaves after the iteration it is in; none starts one
/// after the stages end.
pub(crate) async fn ramp_users<T: Transport>(
    shared: Rc<Shared<T>>,
    sc: Rc<ScenarioShared>,
    budget: Arc<Budget>,
    profile: Arc<Profile>,
    origin: Instant,
    share: Share,
) {
    crate::closed::ramp_slots(profile, origin, share, move |retire, end| {
        let (shared, sc, budget) = (shared.clone(), sc.clone(), budget.clone());
        async move {
            let mut user = sc.new_user(0x9E37_79B9_7F4A_7C15);
            while !retire.now() && Instant::now() < end {
                let Some(seq) = next_iteration(&sc, &budget) else {
                    break;
                };
                if let Ended::Complete(started) =
                    iteration(&shared, &sc, &mut user, seq, None).await
                {
                    finished(&shared, started);
                }
            }
        }
    })
    .await
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
) {
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
                        finished(&shared, started);
                    }
                    idle.borrow_mut().push(user);
                });
            }
            None => {
                shared.recorder.borrow_mut().scenario(due).dropped += 1;
            }
        }
    }
    while running.join_next().await.is_some() {}
}

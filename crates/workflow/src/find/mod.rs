//! Capacity search (`loadmark find`, a plan's `find:` step): how much open-loop load a
//! service holds before an objective breaks.
//!
//! The pieces compose and the pure ones are tested without a clock: [`objective`] parses
//! the objectives and sets how many requests a step needs, [`search`] picks the next rate
//! and decides when to stop, [`judge`] turns a step's report into a verdict and a point of
//! the curve. [`find`] drives them: it makes each step's plan (the caller's plan with an
//! open-loop rate, a warm-up and a hold), hands it to the caller to run (here, over Slurm,
//! or on Kubernetes: this crate does not care), and pauses between steps so a queue left
//! by an overloaded step drains before the next.

pub mod judge;
pub mod objective;
pub mod plan;
pub mod search;

use std::time::Duration;

use loadmark_plan::{format_duration, Load, Plan, Profile, Stop, DEFAULT_MAX_CONNECTIONS};
use loadmark_report::{
    broke_first, knee, CapacityInterval, CapacityResult, CurvePoint, Report, SearchEnd, Threshold,
    CAPACITY_SCHEMA_VERSION,
};

pub use objective::{parse_objective, requests_needed, ObjectiveError, CONFIDENCE};
pub use plan::{command_of, options_of};
pub use search::{Next, Search, SearchConfig, StepVerdict};

/// How many times a step that broke while the client was late runs again before the search
/// ends as client-limited.
pub const LATE_RETRIES: u32 = 2;

/// Everything a search needs besides the plan.
#[derive(Debug, Clone)]
pub struct FindOptions {
    pub objectives: Vec<Threshold>,
    pub search: SearchConfig,
    /// The least measured time of a step (longer when the count rule needs more requests).
    pub hold: Duration,
    /// Load before each step's measured time, left out of its figures (whole seconds).
    pub warmup: Duration,
    /// No load between steps, so a queue an overloaded step left behind drains.
    pub cooldown: Duration,
}

/// A search that could not run.
#[derive(Debug, thiserror::Error)]
pub enum FindError {
    /// A plan with several scenarios runs each at its own load: search one at a time.
    #[error("a capacity search drives one load: this plan has several scenarios (scenarios:); give each its own find step")]
    SeveralScenarios,
    /// A WebSocket plan has no request rate to raise.
    #[error("a capacity search raises a request rate: WebSocket runs (loadmark ws) are not searched yet")]
    WebSocket,
    /// Running a step failed before it measured anything (the engine's error).
    #[error("step at {rate:.0}/s: {source}")]
    Step {
        rate: f64,
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
}

impl FindError {
    /// The user's plan or flags were at fault.
    pub fn is_usage(&self) -> bool {
        matches!(self, FindError::SeveralScenarios | FindError::WebSocket)
    }
}

/// How long a step at `rate` holds its rate after the warm-up: `hold`, or longer when the
/// objectives need more requests (see [`requests_needed`]), rounded up to 100 ms.
pub fn hold_for(rate: f64, objectives: &[Threshold], hold: Duration) -> Duration {
    let needed = requests_needed(objectives) as f64 / rate.max(1e-9);
    let tenths = (needed.max(hold.as_secs_f64()) * 10.0).ceil();
    Duration::from_millis(tenths as u64 * 100)
}

/// The plan of the step at `rate`: the caller's plan, open loop at that rate for the warm-up
/// and the hold. Its pool (cap, threads, connections opened up front) is the caller's when
/// the plan was an open loop already.
pub fn step_plan(template: &Plan, rate: f64, opts: &FindOptions) -> Plan {
    let mut plan = template.clone();
    let length = opts.warmup + hold_for(rate, &opts.objectives, opts.hold);
    let (max_connections, connections) = match &template.load {
        Load::Open {
            max_connections,
            connections,
            ..
        } => (*max_connections, *connections),
        _ => (DEFAULT_MAX_CONNECTIONS, None),
    };
    plan.load = Load::Open {
        rate: Profile::constant(rate, length),
        max_connections,
        threads: template.load.threads(),
        connections,
    };
    plan.stop = Stop::Duration(length);
    plan.warmup = opts.warmup;
    plan
}

/// The words of the rule each step follows, for the result.
pub fn step_rule(opts: &FindOptions) -> String {
    let n = requests_needed(&opts.objectives);
    let count = if n > 0 {
        format!(
            ", and at least {} requests (so the count in the strictest objective's tail is known to ±50% at {:.0}% confidence: 1,522 for p99, whose true value then lies between the measured p98.5 and p99.5)",
            thousands(n),
            CONFIDENCE * 100.0
        )
    } else {
        String::new()
    };
    format!(
        "each step holds its rate for at least {}{count}, after a {} warm-up, with {} without load between steps",
        format_duration(opts.hold),
        format_duration(opts.warmup),
        format_duration(opts.cooldown)
    )
}

fn thousands(n: u64) -> String {
    let digits = n.to_string();
    let mut o = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            o.push(',');
        }
        o.push(c);
    }
    o
}

/// Runs the search: `run` runs one step's plan and returns its report (or why it could not);
/// `seen` hears each step's verdict and point as it ends, and is handed its report (a plan's
/// search keeps the one at the capacity); `stopped` says whether to stop (a signal), checked
/// between steps.
pub fn find(
    template: &Plan,
    opts: &FindOptions,
    mut run: impl FnMut(&Plan) -> Result<Report, Box<dyn std::error::Error + Send + Sync>>,
    mut seen: impl FnMut(&StepVerdict, &CurvePoint, Report),
    stopped: impl Fn() -> bool,
) -> Result<CapacityResult, FindError> {
    if !template.scenarios.is_empty() {
        return Err(FindError::SeveralScenarios);
    }
    if template.websocket.is_some() {
        return Err(FindError::WebSocket);
    }
    let mut search = Search::new(opts.search);
    let mut curve: Vec<CurvePoint> = Vec::new();
    let mut last_word = None;
    let end = loop {
        let (rate, repeat) = match search.next_step() {
            Next::Probe { rate, repeat } => (rate, repeat),
            Next::Done(end) => break end,
        };
        if stopped() {
            break SearchEnd::Interrupted;
        }
        if !curve.is_empty() && !opts.cooldown.is_zero() {
            std::thread::sleep(opts.cooldown);
        }
        let mut tries = 0;
        let (verdict, interrupted) = loop {
            let report = run(&step_plan(template, rate, opts))
                .map_err(|source| FindError::Step { rate, source })?;
            let interrupted = report.run.interrupted;
            let (verdict, mut point) = judge::judge(&report, &opts.objectives, rate);
            point.repeat = repeat;
            seen(&verdict, &point, report);
            curve.push(point);
            tries += 1;
            match verdict {
                // Other processes may have crowded loadmark for a moment: try again, after
                // the cooldown, before blaming the client.
                StepVerdict::Late(_) if tries <= LATE_RETRIES && !interrupted && !stopped() => {
                    std::thread::sleep(opts.cooldown);
                }
                StepVerdict::Late(why) => break (StepVerdict::ClientLimited(why), interrupted),
                other => break (other, interrupted),
            }
        };
        if interrupted {
            break SearchEnd::Interrupted;
        }
        if let StepVerdict::ClientLimited(why) | StepVerdict::ServerDown(why) = &verdict {
            last_word = Some((rate, why.clone()));
        }
        search.record(rate, &verdict);
    };
    Ok(result(template, opts, &search, end, curve, last_word))
}

fn result(
    template: &Plan,
    opts: &FindOptions,
    search: &Search,
    end: SearchEnd,
    curve: Vec<CurvePoint>,
    last_word: Option<(f64, String)>,
) -> CapacityResult {
    let capacity = search.last_pass();
    let achieved_at_capacity = capacity.and_then(|c| {
        curve
            .iter()
            .filter(|p| p.offered == c)
            .map(|p| p.achieved)
            .reduce(f64::min)
    });
    let interval = match (end == SearchEnd::Found, capacity, search.first_fail()) {
        (true, Some(low), Some(high)) => Some(CapacityInterval {
            low,
            high,
            runs_low: search.runs_at(low).0,
            broke_low: search.runs_at(low).1,
            runs_high: search.runs_at(high).0,
            broke_high: search.runs_at(high).1,
        }),
        _ => None,
    };
    let unit = if template.scenario.is_some() {
        "iterations"
    } else {
        "requests"
    };
    let rate = |r: Option<f64>| r.map_or("none".to_string(), |r| format!("{r:.0}/s"));
    let message = match &end {
        SearchEnd::Found => format!(
            "capacity {}: the highest rate that met every objective (in most of its runs)",
            rate(capacity)
        ),
        SearchEnd::MetAtTo => format!(
            "every objective held up to --to ({:.0}/s): the capacity is at least that; search higher with a larger --to",
            opts.search.to
        ),
        SearchEnd::BrokeAtFrom => format!(
            "the first rate ({:.0}/s, --from) already broke an objective: the capacity is below it; search lower with a smaller --from",
            opts.search.from
        ),
        SearchEnd::ClientLimited => format!(
            "stopped: loadmark could not hold {}: {}. Not reported as the server's capacity (last good rate {}); generate more load: more threads (-t), another machine, or --slurm N",
            last_word.as_ref().map_or("the rate".into(), |(r, _)| format!("{r:.0}/s")),
            last_word.as_ref().map_or("", |(_, w)| w.as_str()),
            rate(capacity)
        ),
        SearchEnd::ServerDown => format!(
            "stopped: the server stopped answering at {}: {}; last good rate {}",
            last_word.as_ref().map_or("?".into(), |(r, _)| format!("{r:.0}/s")),
            last_word.as_ref().map_or("", |(_, w)| w.as_str()),
            rate(capacity)
        ),
        SearchEnd::Interrupted => format!("interrupted; last good rate {}", rate(capacity)),
        SearchEnd::StepLimit => format!(
            "the step budget ran out before the bisection converged (verdicts that change from run to run: a noisy service or machine); last good rate {}",
            rate(capacity)
        ),
    };
    CapacityResult {
        schema_version: CAPACITY_SCHEMA_VERSION,
        kind: "capacity".into(),
        loadmark_version: env!("CARGO_PKG_VERSION").into(),
        url: template.redacted().request.url.to_string(),
        unit: unit.into(),
        protocol: protocol_name(template),
        objectives: opts.objectives.iter().map(|t| t.text.clone()).collect(),
        capacity,
        achieved_at_capacity,
        interval,
        end,
        message,
        broke_first: broke_first(&curve),
        knee: knee(&curve),
        step_rule: step_rule(opts),
        curve,
    }
}

fn protocol_name(plan: &Plan) -> String {
    if plan.protocol.http2.is_some() {
        "HTTP/2".into()
    } else {
        "HTTP/1.1".into()
    }
}

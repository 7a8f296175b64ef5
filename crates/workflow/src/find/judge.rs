//! One step's verdict from its report: did the server answer at all, which objectives held,
//! and, for a step that broke one, whether loadmark itself held the rate (its saturation
//! verdict, its schedule lag): if not, the step measured the client and ends the search.
//! Pure.

use loadmark_metrics::ErrorKind;
use loadmark_plan::Stop;
use loadmark_report::{
    check_thresholds, CurvePoint, Metric, Report, Threshold, LATE_LAG_P99_US, SATURATED_BUSY,
};

use super::search::StepVerdict;

/// Below this share of the offered rate answered, the server did not keep up, whatever the
/// objectives say (an objective on errors alone would pass a server that queues forever).
pub const KEEP_UP_SHARE: f64 = 0.9;

/// The verdict of a step offered `offered` per second, and its point on the curve.
pub fn judge(report: &Report, objectives: &[Threshold], offered: f64) -> (StepVerdict, CurvePoint) {
    let s = &report.summary;
    let h = &report.totals.latency;
    let q = |p: f64| {
        if h.is_empty() {
            0
        } else {
            h.value_at_quantile(p)
        }
    };
    let achieved = s.rps;
    let mut point = CurvePoint {
        offered,
        achieved,
        p50_us: q(0.5),
        p90_us: q(0.9),
        p99_us: q(0.99),
        completed: s.requests.completed,
        errors: s.requests.errors,
        failed: s.requests.errors + s.requests.non_success_responses,
        met: false,
        broken: Vec::new(),
        repeat: false,
        note: None,
    };
    let health = &report.run.health;
    let lag_p99 = s
        .schedule_lag
        .as_ref()
        .and_then(|l| l.percentile(99.0))
        .unwrap_or(0);
    let busy = client_busy(report);
    let client = if busy {
        Some(format!(
            "the client saturated: its busiest load thread used {:.0}% of a core (and waited for one the rest of the time)",
            report.run.client_cpu.busiest_worker * 100.0
        ))
    } else if lag_p99 > LATE_LAG_P99_US && !health.overloaded {
        // Late sends the health verdict does not put on the server: the client's or the
        // machine's (other processes on loadmark's cores).
        Some(format!(
            "requests left late (p99 schedule lag {:.1}ms) while the server kept up: the client or the machine could not hold the schedule",
            lag_p99 as f64 / 1000.0
        ))
    } else {
        None
    };
    if let Some(why) = server_down(report) {
        point.note = Some("server down".into());
        return (StepVerdict::ServerDown(why), point);
    }
    // Whether every broken objective could be the client's doing when it only left requests
    // late: a latency bound that the service time alone (first byte written to last byte
    // read, no schedule lag, no wait for a connection) met. Errors are the server's answer
    // (an overloaded server makes requests late too: its pool must grow).
    let mut client_could = true;
    for (t, r) in objectives.iter().zip(check_thresholds(objectives, report)) {
        if !r.passed {
            let seen = r.actual.unwrap_or_else(|| "no data".into());
            point.broken.push(format!("{} (was {seen})", r.threshold));
            client_could &= is_latency(t) && met_by_service_time(t, report);
        }
    }
    // A saturated client delays its sends, its reads and its pool alike: nothing it measured
    // is the server's alone.
    client_could |= busy;
    if s.dropped > 0 {
        point
            .broken
            .push(format!("no request dropped (was {})", s.dropped));
    }
    if achieved < offered * KEEP_UP_SHARE {
        point.broken.push(format!(
            "achieved ≥ {:.0}% of offered (was {:.0}/s)",
            KEEP_UP_SHARE * 100.0,
            achieved
        ));
    }
    point.met = point.broken.is_empty();
    // While the client was late or busy the server was not offered the step's rate (the
    // sends spread over more time than scheduled): a step that met every objective then has
    // not shown the server holds that rate, and one that broke an objective may have
    // measured the client. Both run again; only an objective the client could not have
    // broken (errors, a service time over its bound) is the server's verdict.
    if let Some(why) = client.filter(|_| point.met || client_could) {
        point.note = Some("client late".into());
        return (StepVerdict::Late(why), point);
    }
    let verdict = if point.met {
        StepVerdict::Met
    } else {
        StepVerdict::Broke(point.broken.clone())
    };
    (verdict, point)
}

/// The server went away: no response at all while requests failed, or most of them failing
/// to connect. Says the error class and its first example.
fn server_down(report: &Report) -> Option<String> {
    let s = &report.summary;
    let connect = s.errors.get(ErrorKind::Connect).count;
    let gone = (s.requests.responses == 0 && s.requests.errors > 0)
        || connect * 2 > s.requests.completed.max(1);
    if !gone {
        return None;
    }
    let (kind, stat) = s.errors.nonzero().max_by_key(|(_, stat)| stat.count)?;
    Some(format!(
        "{} errors ({}){}",
        kind.as_str(),
        stat.count,
        stat.first_example
            .as_deref()
            .map(|e| format!(", e.g. {e}"))
            .unwrap_or_default()
    ))
}

/// The busiest load thread ran, or was ready to run but waited for a CPU, nearly all the
/// time: it always had work, so it could not keep the schedule (on a crowded machine the
/// wait, not the running, is what shows).
fn client_busy(report: &Report) -> bool {
    let cpu = &report.run.client_cpu;
    let threads = report.plan.load.threads().max(1) as f64;
    let wall = report.run.elapsed_s.max(1e-9);
    // Over the schedule, not the wall time: requests still in flight when the schedule
    // ends keep the run open, idle, for up to --timeout, which would dilute the share.
    let schedule = match report.plan.stop {
        Stop::Duration(d) => d.as_secs_f64().clamp(1e-9, wall),
        Stop::Requests(_) => wall,
    };
    let ran = cpu.busiest_worker * wall / schedule;
    let waited = cpu.contention.as_ref().map_or(0.0, |c| c.waited_s) / threads / schedule;
    report.run.health.client_saturated || ran + waited >= SATURATED_BUSY
}

fn is_latency(t: &Threshold) -> bool {
    matches!(
        t.metric,
        Metric::Percentile(_) | Metric::Mean | Metric::Max | Metric::Min
    )
}

/// Whether a latency objective holds on the service time (the server's part of latency),
/// within [`SERVICE_MARGIN`] of its bound.
fn met_by_service_time(t: &Threshold, report: &Report) -> bool {
    let h = &report.totals.service;
    if h.is_empty() {
        return false;
    }
    let v = match t.metric {
        Metric::Percentile(p) => h.value_at_quantile(p / 100.0) as f64,
        Metric::Mean => h.mean(),
        Metric::Max => h.max() as f64,
        Metric::Min => h.min() as f64,
        _ => return false,
    };
    // With a margin: a service time at the bound itself means the server was there too.
    t.op.holds(v, t.limit * SERVICE_MARGIN)
}

/// The share of a latency bound the service time must stay under for a late client, not
/// the server, to be blamed for the breach.
const SERVICE_MARGIN: f64 = 0.9;

//! The run's health findings: whether the client (a saturated load thread, a crowded
//! machine) or the schedule (dropped or late requests, a send rate not held) got in the way
//! of the numbers, said in plain words that every format shows as they are. Part of the
//! model: imports `model` siblings and `units` only, never a renderer.

use std::time::Duration;

use loadmark_plan::{Load, Plan};

use super::report::{CpuContention, Health, RunFacts, Summary, LATE_LAG_P99_US, SATURATED_BUSY};

/// Says, in plain words, whether the client or the schedule got in the way of the numbers.
pub(crate) fn assess(plan: &Plan, facts: &RunFacts, summary: &Summary) -> Health {
    let mut health = Health {
        client_saturated: false,
        overloaded: false,
        findings: Vec::new(),
    };
    if facts.busiest_worker >= SATURATED_BUSY {
        health.client_saturated = true;
        health.findings.push(format!(
            "the client was saturated: its busiest load thread used {:.0}% of a core, so these figures may measure loadmark as much as the server; add threads (-t), or run loadmark on another machine",
            facts.busiest_worker * 100.0
        ));
    }
    if let Load::Open {
        max_connections, ..
    } = plan.load
    {
        if summary.dropped > 0 {
            health.overloaded = true;
            health.findings.push(format!(
                "{} requests were dropped: they were due while every connection was busy and none came free in time (up to {max_connections} connections, --max-connections; a request waits for one up to --timeout, and those still waiting when the run ends are dropped too); the target did not keep up with the rate, or the cap is too low",
                summary.dropped
            ));
        }
        if let Some(lag) = &summary.schedule_lag {
            let p99 = lag.percentile(99.0).unwrap_or(0);
            let crowded = facts
                .contention
                .as_ref()
                .and_then(|c| crowded_out(c, facts.elapsed));
            if p99 > LATE_LAG_P99_US {
                let why = if health.client_saturated {
                    ", because the client was saturated".to_string()
                } else if let Some(crowded) = &crowded {
                    format!(", because {crowded}")
                } else {
                    "; new connections had to be opened, or the client was busy".to_string()
                };
                health.findings.push(format!(
                    "requests left late: p99 schedule lag was {:.1}ms (actual minus intended send time){why}",
                    p99 as f64 / 1000.0,
                ));
                if !health.client_saturated && crowded.is_none() {
                    health.overloaded = true;
                }
            } else if let Some(p50) = summary.latency.percentile(50.0).filter(|&p| p > 0) {
                // Smaller than late, but a visible part of what latency reports: say so,
                // and whose it is.
                if p99 * 20 > p50 {
                    let whose = match &crowded {
                        Some(crowded) => format!("the lag is the machine's: {crowded}"),
                        None => "the client's own pacing is part of these latencies".to_string(),
                    };
                    health.findings.push(format!(
                        "schedule lag p99 was {p99}µs, {:.0}% of the latency p50 ({p50}µs): {whose}",
                        p99 as f64 * 100.0 / p50 as f64
                    ));
                }
            }
        }
    }
    let tls = summary.errors.get(loadmark_metrics::ErrorKind::Tls);
    let example = tls.first_example.as_deref().unwrap_or("");
    if tls.count > 0 && !plan.tls.is_insecure() && example.contains("certificate") {
        // `loadmark grpc`'s --insecure is ghz's plaintext; its --skip-verify is curl's -k.
        let grpc = plan.request.headers.iter().any(|(name, value)| {
            name.eq_ignore_ascii_case("content-type") && value.starts_with("application/grpc")
        });
        let skip = if grpc { "--skip-verify" } else { "--insecure" };
        health.findings.push(format!(
            "{} requests failed TLS verification ({example}): for a test server with a self-signed certificate add {skip}; for a private CA, --cacert FILE",
            tls.count
        ));
    }
    if let Some(ws) = &summary.websocket {
        let lag = summary
            .schedule_lag
            .as_ref()
            .map(|l| l.percentile(99.0).unwrap_or(0));
        let found = super::websocket::findings(ws, summary.dropped, lag, LATE_LAG_P99_US);
        if !found.is_empty() && !health.client_saturated {
            health.overloaded = true;
        }
        health.findings.extend(found);
    }
    health
}

/// The least run-queue wait, as a share of the run, that explains a schedule lag: a thread
/// kept from its CPU for 0.2% of a run misses a 20k req/s schedule by whole milliseconds.
const CROWDED_WAIT_SHARE: f64 = 0.002;

/// When other work kept the load threads off their CPUs long enough to explain a lag: the
/// words for it, with how long they waited and how busy the machine was.
fn crowded_out(c: &CpuContention, elapsed: Duration) -> Option<String> {
    let wall = elapsed.as_secs_f64().max(1e-9);
    (c.waited_s / wall >= CROWDED_WAIT_SHARE).then(|| {
        format!(
            "the load threads waited {:.1}ms in all for a CPU while they had requests to send \
             (other processes on their cores; the machine's {} CPUs were {:.0}% busy, {} of \
             them usable by loadmark): give loadmark a core of its own (taskset) or quiet the \
             machine",
            c.waited_s * 1e3,
            c.cpus,
            c.machine_busy * 100.0,
            c.usable_cpus
        )
    })
}

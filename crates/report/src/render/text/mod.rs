//! The terminal summary: what a wrk user reads at a glance, plus what wrk leaves out.
//!
//! Imports `model`, `units`, `render::shared` and its own section modules, never another
//! format.

mod capacity;
mod compare;
mod histogram;
mod sections;
mod websocket;

pub use capacity::render_capacity_text;
pub use compare::{render_comparison_text, render_steps_text};
pub use sections::render_thresholds_text;

use std::fmt::Write;

use hdrhistogram::Histogram;
use loadmark_metrics::Distribution;
use loadmark_plan::{format_duration, Load, Profile, Stop};

use crate::model::Report;
use crate::render::shared::{headline, report_protocol_lines, retries_line};
use crate::units::{format_bytes, format_of, format_pct, plural};

/// Renders the report for a terminal (plain text, no colour).
pub fn render_text(r: &Report) -> String {
    render_text_titled(r, None)
}

/// As [`render_text`], with the name a plan file gives the run (its `name:`) in the
/// headline of a scenario, whose one URL says little of what it does.
pub fn render_text_titled(r: &Report, name: Option<&str>) -> String {
    let mut o = String::new();
    let s = &r.summary;
    let req = &r.plan.request;
    if let Some(spec) = &r.plan.websocket {
        let _ = writeln!(o, "loadmark {}: WebSocket {}", r.loadmark_version, req.url);
        let _ = writeln!(
            o,
            "  {}, timeout {}",
            websocket::describe_load(&r.plan, spec),
            format_duration(r.plan.timeouts.request)
        );
    } else {
        header(&mut o, r, name);
    }
    notices(&mut o, r);
    if let Some(ws) = &s.websocket {
        websocket::render_text_block(&mut o, r, ws);
    } else {
        http_blocks(&mut o, r);
    }
    if let Some(sc) = &s.scenario {
        sections::scenario_block(&mut o, sc); // issue 17
    }
    for named in &s.scenarios {
        let _ = writeln!(
            o,
            "\n  {}",
            crate::render::shared::named_scenario_line(named)
        );
        sections::scenario_block(&mut o, &named.scenario);
    }
    if let Some(c) = &s.checks {
        let unit = if s.websocket.is_some() {
            "replies"
        } else {
            "responses"
        };
        sections::checks_block(&mut o, c, unit); // issues 17 and 20
    }
    if let Some(g) = &r.totals.grpc {
        sections::grpc_block(&mut o, g, s.grpc.as_ref(), r.plan.protocol.grpc.as_ref());
        // issue 36
    }
    errors_and_health(&mut o, r);
    if let Some(split) = &r.split {
        o.push_str(&sections::split_block(split));
    }
    o.push_str(&sections::render_thresholds_text(&r.thresholds));
    o
}

/// The load line of an HTTP run.
fn header(o: &mut String, r: &Report, name: Option<&str>) {
    let req = &r.plan.request;
    let _ = writeln!(o, "loadmark {}: {}", r.loadmark_version, headline(r, name));
    if let Some(script) = &r.plan.script {
        let args = if script.args.is_empty() {
            String::new()
        } else {
            format!(", init(args) given: {}", script.args.join(" "))
        };
        let _ = writeln!(o, "  wrk script {}{args}", script.path);
    }
    let stop = match r.plan.stop {
        Stop::Duration(d) => format!("for {}", format_duration(d)),
        Stop::Requests(n) => format!("{n} requests"),
    };
    let load = match &r.plan.load {
        Load::Closed {
            connections,
            threads,
        } => format!(
            "closed loop, {connections} connection{} on {threads} thread{}, {stop}",
            plural(*connections as u64),
            plural(*threads as u64),
        ),
        Load::Ramp {
            connections,
            threads,
        } => format!(
            "closed loop, connections ramping {} on {threads} thread{}",
            connections.to_text(),
            plural(*threads as u64),
        ),
        Load::Open {
            rate,
            max_connections,
            threads,
            ..
        } => format!(
            "open loop, {} {} ({} connection{} opened up front, up to {max_connections} on {threads} thread{})",
            describe_rate(rate),
            match r.plan.stop {
                Stop::Requests(n) => format!("for {n} requests"),
                Stop::Duration(_) => format!("for {}", format_duration(rate.duration())),
            },
            r.plan.load.preopen(),
            plural(r.plan.load.preopen() as u64),
            plural(*threads as u64),
        ),
    };
    let _ = writeln!(
        o,
        "  {load}{}, {}, timeout {}",
        if r.plan.warmup.is_zero() {
            String::new()
        } else {
            format!(" (warm-up {})", format_duration(r.plan.warmup))
        },
        if req.keep_alive {
            "keep-alive"
        } else {
            "Connection: close"
        },
        format_duration(r.plan.timeouts.request),
    );
}

/// TLS, interruption and saturation notices, then a blank line.
fn notices(o: &mut String, r: &Report) {
    for line in report_protocol_lines(r) {
        let _ = writeln!(o, "  {line}");
    }
    if r.plan.tls.is_insecure() {
        let _ = writeln!(o, "  TLS certificates NOT verified (--insecure)");
    }
    if r.run.interrupted {
        let _ = writeln!(
            o,
            "  INTERRUPTED after {:.2}s: figures cover the time that ran",
            r.run.elapsed_s
        );
    }
    if r.run.health.client_saturated {
        let _ = writeln!(o, "  CLIENT SATURATED: see the warning at the end");
    }
    let _ = writeln!(o);
}

/// Requests, rates, latency, connections and status codes of an HTTP run.
fn http_blocks(o: &mut String, r: &Report) {
    let s = &r.summary;
    let q = &s.requests;
    let _ = writeln!(
        o,
        "  Requests      {} completed in {:.2}s: {} responses, {} errors; {} in flight at the end (not counted){}",
        q.completed,
        r.run.measured_s,
        q.responses,
        q.errors,
        q.in_flight_at_end,
        if q.warmup_completed > 0 {
            format!("; {} during warm-up (not counted)", q.warmup_completed)
        } else {
            String::new()
        }
    );
    let rs = &s.rps_per_second;
    let _ = write!(o, "  Req/s         {:.2}", s.rps);
    if rs.seconds > 1 {
        let _ = write!(
            o,
            "   (per second over {}s: mean {:.0}, stdev {:.0}, min {}, max {})",
            rs.seconds, rs.mean, rs.stdev, rs.min, rs.max
        );
    }
    let _ = writeln!(o);
    let _ = writeln!(
        o,
        "  Transfer/s    {}/s read, {}/s written ({} and {} in all)",
        format_bytes(s.read_bytes_per_s),
        format_bytes(s.written_bytes_per_s),
        format_bytes(s.bytes_read as f64),
        format_bytes(s.bytes_written as f64),
    );
    let _ = writeln!(o);

    let open = matches!(r.plan.load, Load::Open { .. });
    if open {
        let _ = writeln!(
            o,
            "  Latency       from each request's intended send time: includes waiting and connecting"
        );
    } else {
        let _ = writeln!(
            o,
            "  Latency       first byte written to last byte received; excludes connecting"
        );
        let _ = writeln!(
            o,
            "                (closed loop: a server stall delays one request per connection and the"
        );
        let _ = writeln!(
            o,
            "                 requests that would have arrived meanwhile are never sent; -R measures those)"
        );
    }
    distribution_block(o, &s.latency, &r.totals.latency);
    if let Some(service) = &s.service_time {
        short_line(
            o,
            "Service time",
            service,
            "first byte written to last byte received",
        );
    }
    if let Some(lag) = &s.schedule_lag {
        short_line(o, "Schedule lag", lag, "actual minus intended send time");
    }
    if open {
        let _ = writeln!(
            o,
            "  Dropped       {}{}",
            s.dropped,
            if s.dropped > 0 {
                " requests were due with every connection busy and none came free in time"
            } else {
                ""
            }
        );
    }
    short_line(o, "TTFB", &s.ttfb, "");
    let _ = writeln!(
        o,
        "  Connect       {} connection{} opened: p50 {}  p99 {}  max {}",
        s.connections_opened,
        plural(s.connections_opened),
        format_pct(&s.connect, 50.0),
        format_pct(&s.connect, 99.0),
        format_of(&s.connect, s.connect.max_us as f64),
    );
    if let Some(pool) = &s.pool {
        let _ = writeln!(
            o,
            "                {}",
            pool_line(pool, s.connections_opened)
        );
    }
    if s.retries > 0 {
        let _ = writeln!(o, "                {}", retries_line(s.retries));
    }
    let _ = writeln!(o);
    let codes: Vec<String> = s.status.iter().map(|(c, n)| format!("{c}: {n}")).collect();
    let _ = writeln!(
        o,
        "  Status codes  {}",
        if codes.is_empty() {
            "none".to_string()
        } else {
            codes.join(", ")
        }
    );
    let classes: Vec<String> = (1..=5)
        .map(|c| (c, s.status.class(c)))
        .filter(|&(_, n)| n > 0)
        .map(|(c, n)| format!("{c}xx: {n}"))
        .collect();
    if !classes.is_empty() {
        let _ = writeln!(o, "                {}", classes.join(", "));
    }
}

/// Errors, client CPU, warnings: the same for every kind of run.
fn errors_and_health(o: &mut String, r: &Report) {
    let s = &r.summary;
    let q = &s.requests;
    let unit = if s.websocket.is_some() {
        "message"
    } else {
        "request"
    };
    // A gRPC call that ended with a non-OK status got a whole answer: it is no transport
    // error, and "none" alone would hide it (the status block above names each code).
    let grpc_not_ok = r.totals.grpc.as_ref().map_or(0, |g| g.not_ok());
    if s.errors.total() == 0 && grpc_not_ok > 0 {
        let _ = writeln!(
            o,
            "  Errors        none on the wire; {grpc_not_ok} calls ended with a non-OK gRPC status (above)"
        );
    } else if s.errors.total() == 0 {
        let _ = writeln!(o, "  Errors        none");
    } else {
        let _ = writeln!(o, "  Errors");
        for (kind, stat) in s.errors.nonzero() {
            let _ = writeln!(
                o,
                "    {:<10} {:>10}   first: {}",
                kind.as_str(),
                stat.count,
                stat.first_example.as_deref().unwrap_or("")
            );
        }
    }
    let _ = writeln!(
        o,
        "  Client CPU    {:.2}s user, {:.2}s system ({:.1}µs per {unit})",
        r.run.client_cpu.user_s, r.run.client_cpu.system_s, r.run.client_cpu.per_request_us
    );
    for finding in &r.run.health.findings {
        let _ = writeln!(o);
        let _ = writeln!(o, "  WARNING: {finding}");
    }
    let failed = r.failed();
    if failed > 0 {
        let _ = writeln!(o);
        let _ = writeln!(
            o,
            "  WARNING: {failed} of {} {unit}s failed ({:.2}%): {} errors{}",
            q.completed,
            failed as f64 * 100.0 / q.completed.max(1) as f64,
            q.errors,
            if s.websocket.is_some() {
                String::new()
            } else {
                format!(", {} non-2xx/3xx responses", q.non_success_responses)
            } + &s.checks.as_ref().map_or(String::new(), |c| {
                let what = if s.websocket.is_some() {
                    "replies"
                } else {
                    "2xx/3xx responses"
                };
                format!(
                    ", {} {what} that failed a check",
                    c.failed_success_responses
                )
            })
        );
    }
}

/// A latency's figures, its percentiles, and its histogram drawn from `h` (the HDR
/// histogram `d` was read from).
pub(crate) fn distribution_block(o: &mut String, d: &Distribution, h: &Histogram<u64>) {
    let _ = writeln!(
        o,
        "                min {}  mean {}  stdev {}  max {}",
        format_of(d, d.min_us as f64),
        format_of(d, d.mean_us),
        format_of(d, d.stdev_us),
        format_of(d, d.max_us as f64),
    );
    let _ = writeln!(o, "  Latency distribution ({} responses)", d.count);
    for &(p, v) in &d.percentiles_us {
        if (50.0..100.0).contains(&p) {
            let _ = writeln!(o, "    {:>7}  {}", format!("{p}%"), format_of(d, v as f64));
        }
    }
    histogram::render_text(o, h);
}

pub(crate) fn short_line(o: &mut String, label: &str, d: &Distribution, what: &str) {
    let _ = writeln!(
        o,
        "  {label:<13} p50 {}  p99 {}  max {}{}",
        format_pct(d, 50.0),
        format_pct(d, 99.0),
        format_of(d, d.max_us as f64),
        if what.is_empty() {
            String::new()
        } else {
            format!("   ({what})")
        }
    );
}

/// `1000 req/s`, or the stages for a ramp.
fn describe_rate(rate: &Profile) -> String {
    match rate.stages.as_slice() {
        [one] if one.from == one.to => format!("{} req/s", one.from),
        _ => format!("rate stages {}", rate.to_text()),
    }
}

/// Why an open loop's pool opened what it opened (issue 43): a pool that grew for a slow
/// server reads differently from one that replaced connections the server kept closing.
pub(crate) fn pool_line(pool: &loadmark_metrics::PoolCounts, opened: u64) -> String {
    let mut parts = vec![format!("{} up front", pool.preopened)];
    parts.push(format!(
        "{} grown while every connection waited on the server",
        pool.grown
    ));
    let reopened = pool.reopened(opened);
    if reopened > 0 {
        parts.push(format!(
            "{reopened} replacing connections the server closed"
        ));
    }
    let mut line = format!("pool: {}; peak {} open", parts.join(", "), pool.peak);
    if pool.closed_idle > 0 {
        line.push_str(&format!(", {} closed after 1 s unused", pool.closed_idle));
    }
    line
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_pool_line_says_why_connections_opened() {
        let pool = loadmark_metrics::PoolCounts {
            preopened: 2,
            grown: 5,
            closed_idle: 4,
            peak: 7,
        };
        assert_eq!(
            pool_line(&pool, 10),
            "pool: 2 up front, 5 grown while every connection waited on the server, 3 \
             replacing connections the server closed; peak 7 open, 4 closed after 1 s unused"
        );
        let quiet = loadmark_metrics::PoolCounts {
            preopened: 1,
            peak: 1,
            ..Default::default()
        };
        assert_eq!(
            pool_line(&quiet, 1),
            "pool: 1 up front, 0 grown while every connection waited on the server; peak 1 open"
        );
    }
}

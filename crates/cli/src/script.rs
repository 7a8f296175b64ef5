//! `loadmark run URL -s script.lua -- args`: wrk's Lua scripts, loaded before the load (so a
//! broken script is exit 2 before any request), and `done()` after the report.

use std::path::Path;

use loadmark_metrics::{new_histogram, ErrorKind};
use loadmark_plan::{Load, Plan, ScriptRef, Target};
use loadmark_report::Report;
use loadmark_script::{DoneInput, Script, UrlParts};

use crate::UsageError;

/// Loads the script for `plan` (one state per worker thread, `setup()` and `init()` run),
/// and makes the plan's request the `wrk` table's, so reports show (and redact) what the
/// script set.
pub(crate) fn prepare(plan: &mut Plan, path: &Path, args: &[String]) -> Result<Script, UsageError> {
    let url = plan.request.url.clone();
    let text = url.as_str();
    let scheme = text.split("://").next().unwrap_or("http").to_string();
    let port = url.port().to_string();
    let parts = UrlParts {
        scheme,
        host: url.host().to_string(),
        // wrk's port is nil when the URL has none.
        port: url
            .host_header()
            .ends_with(&format!(":{port}"))
            .then_some(port),
        path: url.path_and_query().to_string(),
    };
    let threads = plan.load.threads();
    let script = Script::load(path, text, &parts, &plan.request.headers, args, threads)
        .map_err(|e| UsageError(e.to_string()))?;
    let shown = path.display();
    if script.defined.delay && matches!(plan.load, Load::Open { .. }) {
        return Err(UsageError(format!(
            "script {shown} defines delay(), which paces each connection's requests; -R/--rate \
             sets the pace itself (open loop): use one or the other"
        )));
    }
    let first = script.addrs.first().copied().flatten();
    if script.addrs.iter().any(|a| *a != first) {
        return Err(UsageError(format!(
            "script {shown}: setup() gave threads different addresses (thread.addr): loadmark \
             sends all of a run's threads to one address"
        )));
    }
    if script.pipeline > 1 && !script.defined.request {
        return Err(UsageError(format!(
            "script {shown}: wrk.request() holds {} requests; pipelining needs a request() \
             function",
            script.pipeline
        )));
    }
    let wrk = &script.request;
    if let Ok(target) = Target::parse(&format!(
        "{}://{}{}",
        parts.scheme,
        url.host_header(),
        wrk.path
    )) {
        plan.request.url = target;
    }
    plan.request.method = wrk.method.clone();
    // Host and Content-Length are the engine's to write, from the URL and the body.
    plan.request.headers = wrk
        .headers
        .iter()
        .filter(|(name, value)| {
            let engines = name.eq_ignore_ascii_case("content-length")
                || (name.eq_ignore_ascii_case("host") && value == url.host_header());
            !engines
        })
        .cloned()
        .collect();
    plan.request.body = wrk.body.clone().unwrap_or_default();
    plan.script = Some(ScriptRef {
        path: shown.to_string(),
        args: args.to_vec(),
    });
    Ok(script)
}

/// Calls the script's `done(summary, latency, requests)` with this run's totals: wrk's
/// figures, from loadmark's own counts and histograms.
pub(crate) fn done(script: &Script, report: &Report) -> Result<(), UsageError> {
    let t = &report.totals;
    let e = |kinds: &[ErrorKind]| kinds.iter().map(|&k| t.errors.get(k).count).sum::<u64>();
    let status = t
        .status
        .iter()
        .filter(|(code, _)| *code > 399)
        .map(|(_, n)| n)
        .sum();
    let threads = report.plan.load.threads().max(1) as u64;
    let mut rates = new_histogram();
    let seconds: Vec<_> = report.series.iter().filter(|p| !p.warmup).collect();
    // The last second is usually partial: left out when there are others.
    let whole = if seconds.len() > 1 {
        &seconds[..seconds.len() - 1]
    } else {
        &seconds[..]
    };
    for point in whole {
        let _ = rates.record(point.responses / threads);
    }
    let input = DoneInput {
        duration: std::time::Duration::from_secs_f64(report.run.measured_s),
        requests: t.responses,
        bytes: t.bytes_read,
        errors: [
            e(&[ErrorKind::Connect, ErrorKind::Tls, ErrorKind::Resource]),
            e(&[ErrorKind::Read, ErrorKind::Protocol]),
            e(&[ErrorKind::Write]),
            status,
            e(&[ErrorKind::Timeout]),
        ],
        latency: t.latency.clone(),
        rates,
    };
    script.done(input).map_err(|e| UsageError(e.to_string()))
}

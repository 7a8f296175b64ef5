//! Named styles: each step laid out as wrk, bombardier, ab or Taurus print their summary,
//! so readers of documents written with those tools find the figures where they look for
//! them. Every figure is loadmark's own (its histograms, its per-second series), and every
//! block says so in its title: these never pretend to be the other tool's output.
//!
//! Where definitions differ, the lines follow loadmark's (the README lists them): wrk's
//! Req/Sec is per thread, here each whole second's responses divided by the threads (wrk
//! samples every 100 ms); bombardier's Reqs/sec is over whole seconds (it samples more
//! often); ab's Connect is per new connection, Processing and Total are the request's
//! latency (first byte written to last byte received; connect time is apart), Waiting is the
//! time to first byte; Taurus's "latency" is the time to first byte, as JMeter's.
//!
//! Imports `model` and `units` only, never a format's renderer.

use hdrhistogram::Histogram;
use loadmark_plan::TableStyle;

use crate::model::{Bundle, BundleStep};

/// One step's block: a title and the lines of text under it (monospace).
#[derive(Debug, Clone, PartialEq)]
pub struct StyleBlock {
    pub step: usize,
    pub title: String,
    pub lines: Vec<String>,
}

/// The blocks of every step, or none when the bundle has no style.
pub fn style_blocks(b: &Bundle) -> Vec<StyleBlock> {
    let Some(style) = b.style else {
        return Vec::new();
    };
    b.steps
        .iter()
        .map(|step| StyleBlock {
            step: step.number,
            title: title(style, step),
            lines: match style {
                TableStyle::Wrk => wrk(step),
                TableStyle::Bombardier => bombardier(step),
                TableStyle::Ab => ab(step),
                TableStyle::Taurus => taurus(step),
            },
        })
        .collect()
}

fn title(style: TableStyle, step: &BundleStep) -> String {
    let what = if step.report.plan.websocket.is_some() {
        ", round trips as requests"
    } else {
        ""
    };
    format!(
        "Step {}: in {}'s layout, computed by loadmark from its own measurements{what} (not {} output)",
        step.number,
        style.name(),
        style.name()
    )
}

/// Mean, stdev, max and the share within one stdev of the mean, of `values`.
fn stats(values: &[f64]) -> (f64, f64, f64, f64) {
    if values.is_empty() {
        return (0.0, 0.0, 0.0, 0.0);
    }
    let n = values.len() as f64;
    let mean = values.iter().sum::<f64>() / n;
    let stdev = if values.len() > 1 {
        (values.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / (n - 1.0)).sqrt()
    } else {
        0.0
    };
    let max = values.iter().copied().fold(f64::MIN, f64::max);
    let within = values.iter().filter(|v| (*v - mean).abs() <= stdev).count() as f64 / n;
    (mean, stdev, max, within * 100.0)
}

/// The share of a histogram's values within one stdev of its mean, in percent.
fn within_stdev(h: &Histogram<u64>) -> f64 {
    if h.is_empty() {
        return 0.0;
    }
    let (lo, hi) = (h.mean() - h.stdev(), h.mean() + h.stdev());
    let inside: u64 = h
        .iter_recorded()
        .filter(|v| {
            let x = v.value_iterated_to() as f64;
            x >= lo && x <= hi
        })
        .map(|v| v.count_at_value())
        .sum();
    inside as f64 * 100.0 / h.len() as f64
}

/// Responses of each whole measured second.
fn per_second(step: &BundleStep) -> Vec<f64> {
    step.report
        .chart_series()
        .iter()
        .filter(|p| !p.warmup && p.partial_s.is_none())
        .map(|p| p.responses as f64)
        .collect()
}

/// wrk's and bombardier's time units: `635.91us`, `12.92ms`, `1.02s`.
fn time(us: f64) -> String {
    if us < 1_000.0 {
        format!("{us:.2}us")
    } else if us < 1_000_000.0 {
        format!("{:.2}ms", us / 1_000.0)
    } else {
        format!("{:.2}s", us / 1_000_000.0)
    }
}

/// A figure of `d` in `unit`, or `n/a` when `d` measured nothing: no style shows a time
/// of zero for a latency that never happened.
fn of(d: &loadmark_metrics::Distribution, us: f64, unit: impl Fn(f64) -> String) -> String {
    if d.count == 0 {
        "n/a".into()
    } else {
        unit(us)
    }
}

/// wrk's metric numbers: `56.20k`, `1.12M`, `812.00`.
fn metric(v: f64) -> String {
    if v >= 1_000_000.0 {
        format!("{:.2}M", v / 1_000_000.0)
    } else if v >= 1_000.0 {
        format!("{:.2}k", v / 1_000.0)
    } else {
        format!("{v:.2}")
    }
}

/// wrk's and bombardier's sizes: `13.75MB` (binary multiples).
fn size(bytes: f64) -> String {
    const UNITS: [&str; 4] = ["B", "KB", "MB", "GB"];
    let mut v = bytes;
    let mut unit = 0;
    while v >= 1024.0 && unit < UNITS.len() - 1 {
        v /= 1024.0;
        unit += 1;
    }
    format!("{v:.2}{}", UNITS[unit])
}

/// The connections a step ran with, in words a closed-loop tool's reader expects.
fn connections(step: &BundleStep) -> String {
    use loadmark_plan::Load;
    match &step.report.plan.load {
        Load::Closed { connections, .. } => connections.to_string(),
        Load::Ramp { connections, .. } => {
            let peak = connections
                .stages
                .iter()
                .map(|s| s.from.max(s.to))
                .fold(0.0, f64::max);
            format!("up to {peak:.0}")
        }
        Load::Open {
            max_connections, ..
        } => format!("up to {max_connections} (open loop)"),
    }
}

fn measured_s(step: &BundleStep) -> f64 {
    step.report.run.measured_s
}

fn wrk(step: &BundleStep) -> Vec<String> {
    let r = &step.report;
    let s = &r.summary;
    let threads = r.plan.load.threads().max(1) as f64;
    let lat = &s.latency;
    let per_thread: Vec<f64> = per_second(step).iter().map(|v| v / threads).collect();
    let (rm, rsd, rmax, rwithin) = stats(&per_thread);
    let e = |k: loadmark_metrics::ErrorKind| s.errors.get(k).count;
    use loadmark_metrics::ErrorKind as K;
    let mut out = vec![
        format!(
            "  {} threads and {} connections",
            r.plan.load.threads(),
            connections(step)
        ),
        "  Thread Stats   Avg      Stdev     Max   +/- Stdev".into(),
        format!(
            "    Latency {:>10} {:>9} {:>8} {:>9}",
            of(lat, lat.mean_us, time),
            of(lat, lat.stdev_us, time),
            of(lat, lat.max_us as f64, time),
            of(lat, within_stdev(&r.totals.latency), |p| format!("{p:.2}%"))
        ),
        format!(
            "    Req/Sec {:>10} {:>9} {:>8} {:>8.2}%",
            metric(rm),
            metric(rsd),
            metric(rmax),
            rwithin
        ),
        "  Latency Distribution".into(),
    ];
    for p in [50.0, 75.0, 90.0, 99.0] {
        out.push(format!(
            "  {:>4}% {:>9}",
            p,
            of(lat, lat.percentile(p).unwrap_or(0) as f64, time)
        ));
    }
    out.push(format!(
        "  {} requests in {:.2}s, {} read",
        s.requests.responses,
        measured_s(step),
        size(s.bytes_read as f64)
    ));
    let socket = [
        e(K::Connect) + e(K::Tls),
        e(K::Read) + e(K::Protocol),
        e(K::Write),
        e(K::Timeout),
    ];
    if socket.iter().any(|&n| n > 0) {
        out.push(format!(
            "  Socket errors: connect {}, read {}, write {}, timeout {}",
            socket[0], socket[1], socket[2], socket[3]
        ));
    }
    if s.requests.non_success_responses > 0 {
        out.push(format!(
            "  Non-2xx or 3xx responses: {}",
            s.requests.non_success_responses
        ));
    }
    out.push(format!("Requests/sec: {:>10.2}", s.rps));
    out.push(format!("Transfer/sec: {:>10}", size(s.read_bytes_per_s)));
    out
}

fn bombardier(step: &BundleStep) -> Vec<String> {
    let s = &step.report.summary;
    let lat = &s.latency;
    let r = &s.rps_per_second;
    vec![
        "Statistics        Avg      Stdev        Max".into(),
        format!(
            "  Reqs/sec {:>10.2} {:>10.2} {:>10.2}",
            r.mean, r.stdev, r.max as f64
        ),
        format!(
            "  Latency  {:>10} {:>10} {:>10}",
            of(lat, lat.mean_us, time),
            of(lat, lat.stdev_us, time),
            of(lat, lat.max_us as f64, time)
        ),
        "  HTTP codes:".into(),
        format!(
            "    1xx - {}, 2xx - {}, 3xx - {}, 4xx - {}, 5xx - {}",
            s.status.class(1),
            s.status.class(2),
            s.status.class(3),
            s.status.class(4),
            s.status.class(5)
        ),
        format!("    others - {}", s.requests.errors),
        format!("  Throughput: {:>10}/s", size(s.read_bytes_per_s)),
    ]
}

fn ab(step: &BundleStep) -> Vec<String> {
    let r = &step.report;
    let s = &r.summary;
    let secs = measured_s(step).max(f64::MIN_POSITIVE);
    let conns = connections(step);
    let ms = |us: f64| us / 1_000.0;
    let row = |name: &str, d: &loadmark_metrics::Distribution| {
        if d.count == 0 {
            return format!(
                "{name:<12} {:>5} {:>4} {:>5} {:>6} {:>7}",
                "n/a", "", "", "", ""
            );
        }
        format!(
            "{name:<12} {:>5.0} {:>4.0} {:>5.1} {:>6.0} {:>7.0}",
            ms(d.min_us as f64),
            ms(d.mean_us),
            ms(d.stdev_us),
            ms(d.percentile(50.0).unwrap_or(0) as f64),
            ms(d.max_us as f64)
        )
    };
    let mut out = vec![
        format!("Concurrency Level:      {conns}"),
        format!("Time taken for tests:   {secs:.3} seconds"),
        format!("Complete requests:      {}", s.requests.completed),
        format!("Failed requests:        {}", s.requests.errors),
    ];
    if s.requests.non_success_responses > 0 {
        out.push(format!(
            "Non-2xx responses:      {}",
            s.requests.non_success_responses
        ));
    }
    out.extend([
        format!("Total transferred:      {} bytes", s.bytes_read),
        format!("Requests per second:    {:.2} [#/sec] (mean)", s.rps),
        format!(
            "Time per request:       {:.3} [ms] (mean)",
            ms(s.latency.mean_us)
        ),
        format!(
            "Time per request:       {:.3} [ms] (mean, across all concurrent requests)",
            if s.rps > 0.0 { 1_000.0 / s.rps } else { 0.0 }
        ),
        format!(
            "Transfer rate:          {:.2} [Kbytes/sec] received",
            s.read_bytes_per_s / 1024.0
        ),
        String::new(),
        "Connection Times (ms)".into(),
        "              min  mean[+/-sd] median   max".into(),
        row("Connect:", &s.connect),
        row("Processing:", &s.latency),
        row("Waiting:", &s.ttfb),
        row("Total:", &s.latency),
        String::new(),
        "Percentage of the requests served within a certain time (ms)".into(),
    ]);
    let h = &r.totals.latency;
    for p in [50.0, 66.0, 75.0, 80.0, 90.0, 95.0, 98.0, 99.0, 100.0] {
        let v = if h.is_empty() {
            "n/a".to_string()
        } else {
            format!("{:.0}", ms(h.value_at_quantile(p / 100.0) as f64))
        };
        let tail = if p == 100.0 { " (longest request)" } else { "" };
        out.push(format!("  {:>3}% {v:>6}{tail}", p));
    }
    out
}

fn taurus(step: &BundleStep) -> Vec<String> {
    let r = &step.report;
    let s = &r.summary;
    let samples = s.requests.completed;
    let failed = r.failed();
    let secs = |us: f64| format!("{:.3}", us / 1_000_000.0);
    let mut out = vec![
        format!(
            "Samples count: {samples}, {:.2}% failures",
            if samples == 0 {
                0.0
            } else {
                failed as f64 * 100.0 / samples as f64
            }
        ),
        format!(
            "Average times: total {}, latency {}, connect {}",
            of(&s.latency, s.latency.mean_us, secs),
            of(&s.ttfb, s.ttfb.mean_us, secs),
            of(&s.connect, s.connect.mean_us, secs)
        ),
    ];
    let h = &r.totals.latency;
    for p in [0.0, 50.0, 90.0, 95.0, 99.0, 99.9, 100.0] {
        let v = if h.is_empty() {
            "n/a".to_string()
        } else if p == 0.0 {
            secs(h.min() as f64)
        } else if p == 100.0 {
            secs(h.max() as f64)
        } else {
            secs(h.value_at_quantile(p / 100.0) as f64)
        };
        out.push(format!("Percentile {p:.1}%: {v}"));
    }
    out
}

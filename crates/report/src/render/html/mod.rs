//! One self-contained HTML page of a run or a plan bundle: inline CSS, inline SVG charts drawn
//! here in Rust, and over them interactive charts (uPlot, inlined; see `interactive`) from the
//! same numbers; no network. The SVGs are what shows without script and what is printed.
//!
//! Charts: the latency percentile spectrum on a log "nines" axis (HdrHistogram's plot),
//! req/s, p50/p99 and errors over time, req/s and p99 per scenario when several ran at
//! once, for bundles req/s and p99 per step (against the swept
//! parameter when it is numeric) as lines and bars, and the server's RSS and CPU over time
//! when it was monitored. Each chart is a `<figure class="chart" data-chart=NAME>` whose
//! data lines carry `data-points`, so tests can check what was drawn.
//!
//! Imports `model`, `units`, `render::shared` and its own section modules, never another format.

mod capacity;
mod chart;
mod checks;
mod compare;
mod details;
mod grpc;
mod interactive;
mod scenarios;
mod table;
mod usage;
mod websocket;

pub use capacity::render_capacity_html;
pub use compare::render_comparison_html;
pub use interactive::{UPLOT_CSS, UPLOT_JS};

use std::fmt::Write as _;

use crate::model::{Bundle, BundleStep, Report};
use crate::units::{format_bytes, format_us};
use chart::{bars, chart, per_step_chart, Line, XAxis};
use interactive::TimeChart;

/// One run as a page.
pub fn render_html(r: &Report) -> String {
    render_html_bundle(&Bundle::of_report(r.clone()))
}

/// A plan bundle (or one run wrapped as one) as a page.
pub fn render_html_bundle(b: &Bundle) -> String {
    let title = b.name.clone().unwrap_or_else(|| {
        if b.steps.len() == 1 {
            crate::render::shared::headline(&b.steps[0].report, None)
        } else {
            "Benchmark".into()
        }
    });
    let mut o = String::new();
    let _ = write!(
        o,
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n<title>loadmark: {}</title>\n<style>{CSS}</style>\n</head>\n<body>\n<h1>{}</h1>\n",
        esc(&title),
        esc(&title)
    );
    if let Some(d) = &b.description {
        let _ = writeln!(o, "<p>{}</p>", esc(d.trim()));
    }
    if b.interrupted {
        let _ = writeln!(
            o,
            "<p class=\"warn\">Interrupted: only the steps below ran.</p>"
        );
    }
    environment(&mut o, b);
    if b.columns.is_empty() {
        summary_table(&mut o, b);
    } else {
        table::summary(&mut o, b);
    }
    table::styles(&mut o, b);
    websocket::websocket_section(&mut o, b);
    grpc::grpc_section(&mut o, b); // issue 36
    details::comparisons(&mut o, b);
    notes(&mut o, b);
    details::details(&mut o, b, step_label);
    let multi = b.steps.len() > 1;
    let label = |s: &BundleStep| {
        if multi {
            step_label(s)
        } else {
            "latency".to_string()
        }
    };

    let mut ix = interactive::Charts::default();
    let histograms: Vec<(String, &hdrhistogram::Histogram<u64>)> = b
        .steps
        .iter()
        .map(|s| (label(s), &s.report.totals.latency))
        .collect();
    ix.spectrum("spectrum", "Latency by percentile", &histograms);
    let spectrum: Vec<Line> = b
        .steps
        .iter()
        .map(|s| Line {
            name: label(s),
            points: spectrum_points(&s.report),
        })
        .collect();
    o.push_str(&chart(
        "spectrum",
        "Latency by percentile",
        XAxis::Nines,
        "latency (ms)",
        &spectrum,
    ));

    over_time_charts(&mut o, &mut ix, b);
    scenarios::scenario_charts(&mut o, &mut ix, b);

    if multi {
        sweep(&mut o, &mut ix, b);
    }
    usage::server_usage(&mut o, &mut ix, b);
    o.push_str(&ix.scripts());
    let _ = writeln!(
        o,
        "<footer>loadmark {} · report schema {} · latency: {}</footer>\n</body>\n</html>",
        esc(&b.loadmark_version),
        b.schema_version,
        esc(b
            .steps
            .first()
            .map_or("", |s| s.report.run.latency_definition.as_str()))
    );
    o.replacen("</head>", &format!("{}</head>", ix.style()), 1)
}

/// The charts over time (req/s, latency, failures, WebSocket messages), as SVG and as
/// interactive charts, one per step when there are more than `chart::MAX_OVERLAID`.
fn over_time_charts(o: &mut String, ix: &mut interactive::Charts, b: &Bundle) {
    let multi = b.steps.len() > 1;
    let words = details::words(b);
    let over_time = |f: &dyn Fn(&loadmark_metrics::SeriesPoint) -> f64, suffix: &str| {
        b.steps
            .iter()
            .map(|s| Line {
                name: if multi {
                    format!("{} {suffix}", step_label(s))
                } else {
                    suffix.to_string()
                },
                points: s
                    .report
                    .chart_series()
                    .iter()
                    .map(|p| (p.second as f64, f(p)))
                    .collect(),
            })
            .collect::<Vec<_>>()
    };
    // Per step, the lines of each chart (several per step when a chart shows two figures).
    let by_step = |lines: Vec<Vec<Line>>| -> Vec<(String, Vec<Line>)> {
        let mut groups: Vec<(String, Vec<Line>)> = b
            .steps
            .iter()
            .map(|s| (step_label(s), Vec::new()))
            .collect();
        for figure in lines {
            for (i, line) in figure.into_iter().enumerate() {
                groups[i].1.push(line);
            }
        }
        groups
    };
    const TIME: &str = "time since start (s)";
    let answers_per_s = format!("{}/s", words.answers);
    let rps_title = format!(
        "{} per second over time",
        details::capitalized(words.answers)
    );
    let rps = by_step(vec![over_time(&|p| p.responses as f64, words.rate)]);
    ix.per_step(
        &TimeChart {
            id: "rps",
            title: &rps_title,
            x_label: TIME,
            y_label: &answers_per_s,
            unit: "/s",
            may_log: false,
        },
        &rps,
    );
    o.push_str(&per_step_chart(
        "rps",
        &rps_title,
        TIME,
        &answers_per_s,
        rps,
    ));
    let ms = |us: u64| us as f64 / 1000.0;
    let latency_title = "p50 and p99 latency over time";
    ix.per_step(
        &TimeChart {
            id: "latency-over-time",
            title: "p50, p99 and max latency over time",
            x_label: TIME,
            y_label: "latency (ms)",
            unit: "ms",
            may_log: true,
        },
        &by_step(vec![
            over_time(&|p| ms(p.latency_p50_us), "p50"),
            over_time(&|p| ms(p.latency_p99_us), "p99"),
            over_time(&|p| ms(p.latency_max_us), "max"),
        ]),
    );
    o.push_str(&per_step_chart(
        "latency-over-time",
        latency_title,
        TIME,
        "latency (ms)",
        by_step(vec![
            over_time(&|p| ms(p.latency_p50_us), "p50"),
            over_time(&|p| ms(p.latency_p99_us), "p99"),
        ]),
    ));
    let errors_title = if words.unit == "message" {
        "Failed messages over time".to_string()
    } else {
        "Failed requests over time (errors and non-2xx/3xx)".to_string()
    };
    // By class: transport errors (each ErrorKind) apart from the answers that failed
    // (non-2xx/3xx, failed checks); the series holds these two counts per second.
    ix.per_step(
        &TimeChart {
            id: "errors",
            title: &errors_title,
            x_label: TIME,
            y_label: "failed/s",
            unit: "/s",
            may_log: false,
        },
        &by_step(vec![
            over_time(&|p| p.errors as f64, "transport errors"),
            over_time(
                &|p| p.failed.saturating_sub(p.errors) as f64,
                &format!("failed {}", words.answers),
            ),
        ]),
    );
    o.push_str(&per_step_chart(
        "errors",
        &errors_title,
        TIME,
        "failed/s",
        by_step(vec![over_time(&|p| p.failed as f64, "failed")]),
    ));
    if b.steps.iter().any(|s| s.report.summary.websocket.is_some()) {
        let title = "WebSocket messages per second, sent and received";
        let messages = by_step(vec![
            over_time(&|p| p.messages_sent as f64, "sent/s"),
            over_time(&|p| p.messages_received as f64, "received/s"),
        ]);
        ix.per_step(
            &TimeChart {
                id: "messages",
                title,
                x_label: TIME,
                y_label: "messages/s",
                unit: "/s",
                may_log: false,
            },
            &messages,
        );
        o.push_str(&per_step_chart(
            "messages",
            title,
            TIME,
            "messages/s",
            messages,
        ));
    }
}

pub(crate) fn step_label(s: &BundleStep) -> String {
    let params: Vec<String> = s.params.iter().map(|(k, v)| format!("{k}={v}")).collect();
    if params.is_empty() {
        format!("step {} {}", s.number, s.target)
    } else {
        format!("step {} {} {}", s.number, s.target, params.join(" "))
    }
}

fn environment(o: &mut String, b: &Bundle) {
    let e = &b.environment;
    let started = b
        .steps
        .first()
        .map_or("", |s| s.report.run.started_at.as_str());
    let _ = writeln!(o, "<section class=\"env\"><h2>Environment</h2><table>");
    for (k, v) in [
        ("CPU", format!("{} ({} cores)", e.cpu_model, e.cores)),
        ("Memory", format_bytes(e.memory_bytes as f64)),
        ("OS", format!("{} · kernel {}", e.os, e.kernel)),
        (
            "Host",
            e.host
                .as_ref()
                .map_or_else(|| "not recorded".to_string(), |h| h.line(e.cores)),
        ),
        ("Started", started.to_string()),
        (
            "loadmark",
            e.build
                .as_ref()
                .map_or_else(|| b.loadmark_version.clone(), |build| build.to_string()),
        ),
        ("Plan", b.plan_file.clone()),
    ] {
        let _ = writeln!(o, "<tr><th>{k}</th><td>{}</td></tr>", esc(&v));
    }
    let _ = writeln!(o, "</table></section>");
}

fn summary_table(o: &mut String, b: &Bundle) {
    let w = details::words(b);
    let _ = writeln!(
        o,
        "<section><h2>Summary</h2><table class=\"num\"><tr><th>step</th><th>command</th><th>{}</th><th>p50</th><th>p90</th><th>p99</th><th>p99.9</th><th>max</th><th>{}</th><th>failed</th></tr>",
        w.rate, w.answers
    );
    for s in &b.steps {
        let r = &s.report;
        let h = &r.totals.latency;
        let q = |q: f64| {
            if h.is_empty() {
                "–".to_string()
            } else {
                format_us(h.value_at_quantile(q) as f64)
            }
        };
        let _ = writeln!(
            o,
            "<tr><td>{}</td><td><code>{}</code></td><td>{:.1}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            s.number,
            esc(&s.command),
            r.summary.rps,
            q(0.5),
            q(0.9),
            q(0.99),
            q(0.999),
            q(1.0),
            r.summary.requests.responses,
            r.failed()
        );
    }
    let _ = writeln!(o, "</table></section>");
}

fn notes(o: &mut String, b: &Bundle) {
    let mut items: Vec<(bool, String)> = b.notes.iter().map(|n| (false, n.clone())).collect();
    for s in &b.steps {
        let r = &s.report;
        for n in &s.notes {
            items.push((false, format!("step {}: {n}", s.number)));
        }
        for t in &r.thresholds {
            items.push((t.passed, format!("step {}: threshold {t}", s.number)));
        }
        for f in &r.run.health.findings {
            items.push((false, format!("step {}: {f}", s.number)));
        }
        for (kind, stat) in r.summary.errors.nonzero() {
            items.push((
                false,
                format!(
                    "step {}: {} {kind} errors; first: {}",
                    s.number,
                    stat.count,
                    stat.first_example.as_deref().unwrap_or("")
                ),
            ));
        }
    }
    if items.is_empty() {
        return;
    }
    let _ = writeln!(o, "<section><h2>Thresholds and notes</h2><ul>");
    for (ok, text) in items {
        let _ = writeln!(
            o,
            "<li class=\"{}\">{}</li>",
            if ok { "ok" } else { "warn" },
            esc(&text)
        );
    }
    let _ = writeln!(o, "</ul></section>");
}

/// Req/s and p99 per step: lines against the first parameter when every step has it as a
/// number, and bars always.
fn sweep(o: &mut String, ix: &mut interactive::Charts, b: &Bundle) {
    let key = b.steps[0].params.first().map(|(k, _)| k.clone());
    let numeric: Option<Vec<f64>> = key.as_ref().and_then(|k| {
        b.steps
            .iter()
            .map(|s| {
                s.params
                    .iter()
                    .find(|(pk, _)| pk == k)
                    .and_then(|(_, v)| v.trim_end_matches("/s").parse::<f64>().ok())
            })
            .collect()
    });
    if let (Some(k), Some(xs)) = (&key, numeric) {
        let mut targets: Vec<&str> = b.steps.iter().map(|s| s.target.as_str()).collect();
        targets.sort_unstable();
        targets.dedup();
        let lines = |f: &dyn Fn(&Report) -> f64| {
            targets
                .iter()
                .map(|t| Line {
                    name: t.to_string(),
                    points: b
                        .steps
                        .iter()
                        .zip(&xs)
                        .filter(|(s, _)| s.target == *t)
                        .map(|(s, &x)| (x, f(&s.report)))
                        .collect(),
                })
                .collect::<Vec<_>>()
        };
        let rps_title = format!("Responses per second versus {k}");
        let rps = lines(&|r| r.summary.rps);
        ix.xy(
            &TimeChart {
                id: "sweep-rps",
                title: &rps_title,
                x_label: k,
                y_label: "responses/s",
                unit: "/s",
                may_log: false,
            },
            &rps,
            &[],
        );
        o.push_str(&chart(
            "sweep-rps",
            &rps_title,
            XAxis::Linear(k),
            "responses/s",
            &rps,
        ));
        let p99_title = format!("p99 latency versus {k}");
        let p99 = lines(&|r| p99_ms(r));
        ix.xy(
            &TimeChart {
                id: "sweep-p99",
                title: &p99_title,
                x_label: k,
                y_label: "p99 latency (ms)",
                unit: "ms",
                may_log: true,
            },
            &p99,
            &[],
        );
        o.push_str(&chart(
            "sweep-p99",
            &p99_title,
            XAxis::Linear(k),
            "p99 latency (ms)",
            &p99,
        ));
    }
    let labels: Vec<String> = b.steps.iter().map(step_label).collect();
    let rps: Vec<f64> = b.steps.iter().map(|s| s.report.summary.rps).collect();
    let p99: Vec<f64> = b.steps.iter().map(|s| p99_ms(&s.report)).collect();
    o.push_str(&bars(
        "bars-rps",
        "Responses per second by step",
        "step",
        "responses/s",
        &labels,
        &rps,
    ));
    o.push_str(&bars(
        "bars-p99",
        "p99 latency by step",
        "step",
        "p99 latency (ms)",
        &labels,
        &p99,
    ));
}

fn p99_ms(r: &Report) -> f64 {
    let h = &r.totals.latency;
    if h.is_empty() {
        0.0
    } else {
        h.value_at_quantile(0.99) as f64 / 1000.0
    }
}

/// The percentile spectrum: x in "nines" up to what the sample count supports (at most
/// 99.999%), y in ms.
fn spectrum_points(r: &Report) -> Vec<(f64, f64)> {
    let h = &r.totals.latency;
    if h.is_empty() {
        return Vec::new();
    }
    let max_nines = (h.len() as f64).log10().clamp(1.0, 5.0);
    let steps = (max_nines * 20.0).ceil() as usize;
    (0..=steps)
        .map(|i| {
            let x = max_nines * i as f64 / steps as f64;
            let q = 1.0 - 10f64.powf(-x);
            (x, h.value_at_quantile(q) as f64 / 1000.0)
        })
        .collect()
}

pub(crate) fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

pub(crate) const CSS: &str = "body{font:15px/1.45 system-ui,-apple-system,Segoe UI,Roboto,sans-serif;max-width:960px;margin:1.5em auto;padding:0 1em;color:#222}h1{font-size:1.5em}h2{font-size:1.15em;margin-top:1.5em}table{border-collapse:collapse;margin:.5em 0}th,td{padding:.25em .6em;border-bottom:1px solid #ddd;text-align:left;vertical-align:top}table.num td{text-align:right}table.num td:nth-child(2){text-align:left}table.cmp td{text-align:right}table.cmp td:first-child,table.cmp td:last-child{text-align:left}code{font-size:.85em}figure.chart{margin:1.5em 0;break-inside:avoid;page-break-inside:avoid}svg{width:100%;height:auto;display:block}svg .title{font-size:15px;font-weight:600}svg .tick{font-size:11px;fill:#555}svg .label{font-size:12px;fill:#333}svg .grid{stroke:#e5e5e5;stroke-width:1}svg .axis{stroke:#777;stroke-width:1}svg path.series{fill:none;stroke-width:2}svg .empty{fill:#999}.multiples .grid{display:grid;grid-template-columns:repeat(auto-fill,minmax(300px,1fr));gap:.5em}.multiples figure.chart{margin:.3em 0}table.kv th{font-weight:600;white-space:nowrap}td.text,table[data-table] td:first-child{text-align:left!important}details{margin:.4em 0}details summary{cursor:pointer;font-weight:600}.legend span{display:inline-block;margin-right:1.2em;font-size:.85em}.legend i{display:inline-block;width:.9em;height:.9em;margin-right:.35em;vertical-align:-.1em}li.warn{color:#a33}li.ok{color:#262}.warn{color:#a33}footer{margin-top:2em;font-size:.8em;color:#666}@media print{body{max-width:none;margin:0;font-size:11pt}figure.chart{margin:.8em 0}}";

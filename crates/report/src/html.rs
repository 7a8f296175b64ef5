//! One self-contained HTML page of a run or a plan bundle: inline CSS and inline SVG charts
//! drawn here in Rust, no JavaScript, no network. Readable on a laptop and when printed.
//!
//! Charts: the latency percentile spectrum on a log "nines" axis (HdrHistogram's plot),
//! req/s, p50/p99 and errors over time, for bundles req/s and p99 per step (against the swept
//! parameter when it is numeric) as lines and bars, and the server's RSS and CPU over time
//! when it was monitored. Each chart is a `<figure class="chart" data-chart=NAME>` whose
//! data lines carry `data-points`, so tests can check what was drawn.

use std::fmt::Write as _;

use crate::bundle::{Bundle, BundleStep};
use crate::format::{format_bytes, format_us};
use crate::model::Report;

const W: f64 = 760.0;
const H: f64 = 300.0;
const L: f64 = 70.0; // left margin (y tick labels)
const R: f64 = 20.0;
const T: f64 = 36.0; // title
const B: f64 = 48.0; // x tick labels and axis title
const COLORS: [&str; 8] = [
    "#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#17becf",
];

/// A line to draw: its legend name and points `(x, y)`.
pub(crate) struct Line {
    pub name: String,
    pub points: Vec<(f64, f64)>,
}

/// How the x axis is labelled.
#[derive(Clone, Copy)]
enum XAxis<'a> {
    Linear(&'a str),
    /// Log "nines": x is -log10(1 - q).
    Nines,
}

/// One run as a page.
pub fn render_html(r: &Report) -> String {
    render_html_bundle(&Bundle::of_report(r.clone()))
}

/// A plan bundle (or one run wrapped as one) as a page.
pub fn render_html_bundle(b: &Bundle) -> String {
    let title = b.name.clone().unwrap_or_else(|| {
        if b.steps.len() == 1 {
            crate::text::headline(&b.steps[0].report, None)
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
        crate::html_table::summary(&mut o, b);
    }
    crate::html_table::styles(&mut o, b);
    crate::websocket::render_html_section(&mut o, b);
    crate::html_details::comparisons(&mut o, b);
    notes(&mut o, b);
    crate::html_details::details(&mut o, b, step_label);
    let multi = b.steps.len() > 1;
    let label = |s: &BundleStep| {
        if multi {
            step_label(s)
        } else {
            "latency".to_string()
        }
    };

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

    let words = crate::html_details::words(b);
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
    o.push_str(&per_step_chart(
        "rps",
        &format!(
            "{} per second over time",
            crate::html_details::capitalized(words.answers)
        ),
        TIME,
        &answers_per_s,
        by_step(vec![over_time(&|p| p.responses as f64, words.rate)]),
    ));
    o.push_str(&per_step_chart(
        "latency-over-time",
        "p50 and p99 latency over time",
        TIME,
        "latency (ms)",
        by_step(vec![
            over_time(&|p| p.latency_p50_us as f64 / 1000.0, "p50"),
            over_time(&|p| p.latency_p99_us as f64 / 1000.0, "p99"),
        ]),
    ));
    o.push_str(&per_step_chart(
        "errors",
        &if words.unit == "message" {
            "Failed messages over time".to_string()
        } else {
            "Failed requests over time (errors and non-2xx/3xx)".to_string()
        },
        TIME,
        "failed/s",
        by_step(vec![over_time(&|p| p.failed as f64, "failed")]),
    ));
    if b.steps.iter().any(|s| s.report.summary.websocket.is_some()) {
        o.push_str(&per_step_chart(
            "messages",
            "WebSocket messages per second, sent and received",
            TIME,
            "messages/s",
            by_step(vec![
                over_time(&|p| p.messages_sent as f64, "sent/s"),
                over_time(&|p| p.messages_received as f64, "received/s"),
            ]),
        ));
    }

    if multi {
        sweep(&mut o, b);
    }
    crate::html_usage::server_usage(&mut o, b);
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
    o
}

pub(crate) fn step_label(s: &BundleStep) -> String {
    let params: Vec<String> = s.params.iter().map(|(k, v)| format!("{k}={v}")).collect();
    if params.is_empty() {
        format!("step {} {}", s.number, s.target)
    } else {
        format!("step {} {} {}", s.number, s.target, params.join(" "))
    }
}

/// More steps than this, and a chart over time becomes small multiples: a dozen lines on
/// one chart cannot be told apart.
const MAX_OVERLAID: usize = 5;

const SMALL: Frame = Frame {
    w: 380.0,
    h: 240.0,
    y_max: None,
};

/// One chart of every step's lines, or with more than [`MAX_OVERLAID`] steps one small chart
/// per step (`{id}-step{n}`), all on one y scale so they compare by eye.
pub(crate) fn per_step_chart(
    id: &str,
    title: &str,
    x_label: &str,
    y_label: &str,
    groups: Vec<(String, Vec<Line>)>,
) -> String {
    if groups.len() <= MAX_OVERLAID {
        let lines: Vec<Line> = groups.into_iter().flat_map(|(_, l)| l).collect();
        return chart(id, title, XAxis::Linear(x_label), y_label, &lines);
    }
    let top = groups
        .iter()
        .flat_map(|(_, lines)| lines.iter().flat_map(|l| l.points.iter().map(|p| p.1)))
        .fold(0.0, f64::max);
    let frame = Frame {
        y_max: Some(nice_ceiling(top)),
        ..SMALL
    };
    let mut o = format!(
        "<section class=\"multiples\" data-multiples=\"{id}\"><h3>{}</h3><div class=\"grid\">\n",
        esc(title)
    );
    for (n, (label, lines)) in groups.into_iter().enumerate() {
        // The chart's title names the step: the legend names only the figures.
        let lines: Vec<Line> = lines
            .into_iter()
            .map(|l| Line {
                name: l
                    .name
                    .strip_prefix(&label)
                    .unwrap_or(&l.name)
                    .trim()
                    .to_string(),
                points: l.points,
            })
            .collect();
        o.push_str(&chart_in(
            frame,
            &format!("{id}-step{}", n + 1),
            &label,
            XAxis::Linear(x_label),
            y_label,
            &lines,
        ));
    }
    o.push_str("</div></section>\n");
    o
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
    let w = crate::html_details::words(b);
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
fn sweep(o: &mut String, b: &Bundle) {
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
        o.push_str(&chart(
            "sweep-rps",
            &format!("Responses per second versus {k}"),
            XAxis::Linear(k),
            "responses/s",
            &lines(&|r| r.summary.rps),
        ));
        o.push_str(&chart(
            "sweep-p99",
            &format!("p99 latency versus {k}"),
            XAxis::Linear(k),
            "p99 latency (ms)",
            &lines(&|r| p99_ms(r)),
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

/// 1, 2 or 5 times a power of ten, at least `v`.
fn nice_ceiling(v: f64) -> f64 {
    if v <= 0.0 || !v.is_finite() {
        return 1.0;
    }
    let p = 10f64.powf(v.log10().floor());
    [1.0, 2.0, 5.0, 10.0]
        .iter()
        .map(|m| m * p)
        .find(|&c| c >= v * (1.0 - 1e-12))
        .unwrap_or(10.0 * p)
}

fn tick_text(v: f64) -> String {
    if v == 0.0 {
        "0".into()
    } else if v.abs() >= 100.0 || (v.fract() == 0.0 && v.abs() >= 1.0) {
        format!("{v:.0}")
    } else if v.abs() >= 1.0 {
        format!("{v:.1}")
    } else {
        let s = format!("{v:.3}");
        s.trim_end_matches('0').to_string()
    }
}

fn chart(id: &str, title: &str, x: XAxis, y_label: &str, lines: &[Line]) -> String {
    chart_in(FULL, id, title, x, y_label, lines)
}

/// The size of a chart, and the top of its y axis when several charts must share one (small
/// multiples are compared by eye: one scale for all).
#[derive(Clone, Copy)]
struct Frame {
    w: f64,
    h: f64,
    y_max: Option<f64>,
}

const FULL: Frame = Frame {
    w: W,
    h: H,
    y_max: None,
};

fn chart_in(
    frame: Frame,
    id: &str,
    title: &str,
    x: XAxis,
    y_label: &str,
    lines: &[Line],
) -> String {
    let (w, h) = (frame.w, frame.h);
    let mut o = String::new();
    let total: usize = lines.iter().map(|l| l.points.len()).sum();
    let _ = writeln!(
        o,
        "<figure class=\"chart\" data-chart=\"{id}\" data-points=\"{total}\">\n<svg viewBox=\"0 0 {w} {h}\" role=\"img\" aria-label=\"{}\" xmlns=\"http://www.w3.org/2000/svg\">",
        esc(title)
    );
    let _ = writeln!(
        o,
        "<text x=\"{}\" y=\"20\" class=\"title\" text-anchor=\"middle\">{}</text>",
        w / 2.0,
        esc(title)
    );
    let all = || lines.iter().flat_map(|l| l.points.iter());
    let (pw, ph) = (w - L - R, h - T - B);
    if total == 0 {
        let _ = writeln!(
            o,
            "<text x=\"{}\" y=\"{}\" text-anchor=\"middle\" class=\"empty\">no data</text></svg></figure>",
            w / 2.0,
            h / 2.0
        );
        return o;
    }
    let x_min = all().map(|p| p.0).fold(f64::INFINITY, f64::min).min(0.0);
    let x_raw_max = all().map(|p| p.0).fold(f64::NEG_INFINITY, f64::max);
    let x_max = match x {
        XAxis::Nines => x_raw_max.ceil().max(1.0),
        XAxis::Linear(_) => nice_ceiling(x_raw_max.max(x_min + 1.0)),
    };
    let y_max = frame
        .y_max
        .unwrap_or_else(|| nice_ceiling(all().map(|p| p.1).fold(0.0, f64::max)));
    let sx = |v: f64| L + (v - x_min) / (x_max - x_min) * pw;
    let sy = |v: f64| T + ph - v / y_max * ph;
    // Grid and y ticks.
    for i in 0..=5 {
        let v = y_max * i as f64 / 5.0;
        let y = sy(v);
        let _ = writeln!(
            o,
            "<line x1=\"{L}\" y1=\"{y:.1}\" x2=\"{:.1}\" y2=\"{y:.1}\" class=\"grid\"/><text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"end\" class=\"tick\">{}</text>",
            L + pw,
            L - 6.0,
            y + 4.0,
            tick_text(v)
        );
    }
    // X ticks.
    let x_ticks: Vec<(f64, String)> = match x {
        XAxis::Nines => (0..=x_max as usize)
            .map(|n| {
                let label = match n {
                    0 => "0%".to_string(),
                    // Placed by hand below, between 0% and 90%.
                    1 => "90%".to_string(),
                    n => format!(
                        "99{}%",
                        if n > 2 {
                            format!(".{}", "9".repeat(n - 2))
                        } else {
                            String::new()
                        }
                    ),
                };
                (n as f64, label)
            })
            // HdrHistogram's axis: 50% sits at -log10(1 - 0.5) nines.
            .chain(std::iter::once((2f64.log10(), "50%".to_string())))
            .collect(),
        XAxis::Linear(_) if x_min == 0.0 && x_max <= 10.0 && x_max.fract() == 0.0 => (0..=x_max
            as usize)
            .map(|i| (i as f64, i.to_string()))
            .collect(),
        XAxis::Linear(_) => (0..=5)
            .map(|i| {
                let v = x_min + (x_max - x_min) * i as f64 / 5.0;
                (v, tick_text(v))
            })
            .collect(),
    };
    for (v, label) in &x_ticks {
        let xx = sx(*v);
        let _ = writeln!(
            o,
            "<line x1=\"{xx:.1}\" y1=\"{T}\" x2=\"{xx:.1}\" y2=\"{:.1}\" class=\"grid\"/><text x=\"{xx:.1}\" y=\"{:.1}\" text-anchor=\"middle\" class=\"tick\">{}</text>",
            T + ph,
            T + ph + 16.0,
            esc(label)
        );
    }
    let x_label = match x {
        XAxis::Nines => "percentile (log scale of nines)",
        XAxis::Linear(l) => l,
    };
    let _ = writeln!(
        o,
        "<line x1=\"{L}\" y1=\"{T}\" x2=\"{L}\" y2=\"{:.1}\" class=\"axis\"/><line x1=\"{L}\" y1=\"{:.1}\" x2=\"{:.1}\" y2=\"{:.1}\" class=\"axis\"/>",
        T + ph,
        T + ph,
        L + pw,
        T + ph
    );
    let _ = writeln!(
        o,
        "<text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"middle\" class=\"label\">{}</text>",
        L + pw / 2.0,
        h - 8.0,
        esc(x_label)
    );
    let _ = writeln!(
        o,
        "<text transform=\"translate(16 {:.1}) rotate(-90)\" text-anchor=\"middle\" class=\"label\">{}</text>",
        T + ph / 2.0,
        esc(y_label)
    );
    for (i, line) in lines.iter().enumerate() {
        let color = COLORS[i % COLORS.len()];
        let mut d = String::new();
        for (k, &(px, py)) in line.points.iter().enumerate() {
            let _ = write!(
                d,
                "{}{:.1},{:.1}",
                if k == 0 { "M" } else { " L" },
                sx(px),
                sy(py)
            );
        }
        let _ = writeln!(
            o,
            "<path class=\"series\" data-points=\"{}\" d=\"{d}\" stroke=\"{color}\"{}><title>{}</title></path>",
            line.points.len(),
            // Past the palette, colours come round again: dashes tell those lines apart.
            if i >= COLORS.len() {
                " stroke-dasharray=\"7 4\""
            } else {
                ""
            },
            esc(&line.name)
        );
        if line.points.len() == 1 {
            let (px, py) = line.points[0];
            let _ = writeln!(
                o,
                "<circle cx=\"{:.1}\" cy=\"{:.1}\" r=\"3\" fill=\"{color}\"/>",
                sx(px),
                sy(py)
            );
        }
    }
    o.push_str("</svg>\n");
    legend(&mut o, lines.iter().map(|l| l.name.as_str()));
    o.push_str("</figure>\n");
    o
}

fn legend<'a>(o: &mut String, names: impl Iterator<Item = &'a str>) {
    o.push_str("<figcaption class=\"legend\">");
    for (i, name) in names.enumerate() {
        let _ = write!(
            o,
            "<span><i style=\"background:{}\"></i>{}</span>",
            COLORS[i % COLORS.len()],
            esc(name)
        );
    }
    o.push_str("</figcaption>\n");
}

pub(crate) fn bars(
    id: &str,
    title: &str,
    x_label: &str,
    y_label: &str,
    labels: &[String],
    values: &[f64],
) -> String {
    let mut o = String::new();
    let _ = writeln!(
        o,
        "<figure class=\"chart\" data-chart=\"{id}\" data-points=\"{}\">\n<svg viewBox=\"0 0 {W} {H}\" role=\"img\" aria-label=\"{}\" xmlns=\"http://www.w3.org/2000/svg\">",
        values.len(),
        esc(title)
    );
    let _ = writeln!(
        o,
        "<text x=\"{}\" y=\"20\" class=\"title\" text-anchor=\"middle\">{}</text>",
        W / 2.0,
        esc(title)
    );
    let (pw, ph) = (W - L - R, H - T - B);
    let y_max = nice_ceiling(values.iter().copied().fold(0.0, f64::max));
    for i in 0..=5 {
        let v = y_max * i as f64 / 5.0;
        let y = T + ph - v / y_max * ph;
        let _ = writeln!(
            o,
            "<line x1=\"{L}\" y1=\"{y:.1}\" x2=\"{:.1}\" y2=\"{y:.1}\" class=\"grid\"/><text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"end\" class=\"tick\">{}</text>",
            L + pw,
            L - 6.0,
            y + 4.0,
            tick_text(v)
        );
    }
    let slot = pw / values.len().max(1) as f64;
    for (i, (&v, label)) in values.iter().zip(labels).enumerate() {
        let h = v / y_max * ph;
        let x = L + slot * i as f64 + slot * 0.15;
        let _ = writeln!(
            o,
            "<rect class=\"bar\" x=\"{x:.1}\" y=\"{:.1}\" width=\"{:.1}\" height=\"{h:.1}\" fill=\"{}\"><title>{}: {}</title></rect>",
            T + ph - h,
            slot * 0.7,
            COLORS[i % COLORS.len()],
            esc(label),
            tick_text(v)
        );
        let _ = writeln!(
            o,
            "<text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"middle\" class=\"tick\">{}</text>",
            x + slot * 0.35,
            T + ph + 16.0,
            i + 1
        );
    }
    let _ = writeln!(
        o,
        "<line x1=\"{L}\" y1=\"{:.1}\" x2=\"{:.1}\" y2=\"{:.1}\" class=\"axis\"/><text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"middle\" class=\"label\">{}</text><text transform=\"translate(16 {:.1}) rotate(-90)\" text-anchor=\"middle\" class=\"label\">{}</text>\n</svg>",
        T + ph,
        L + pw,
        T + ph,
        L + pw / 2.0,
        H - 8.0,
        esc(x_label),
        T + ph / 2.0,
        esc(y_label)
    );
    legend(&mut o, labels.iter().map(String::as_str));
    o.push_str("</figure>\n");
    o
}

pub(crate) fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

pub(crate) const CSS: &str = "body{font:15px/1.45 system-ui,-apple-system,Segoe UI,Roboto,sans-serif;max-width:960px;margin:1.5em auto;padding:0 1em;color:#222}h1{font-size:1.5em}h2{font-size:1.15em;margin-top:1.5em}table{border-collapse:collapse;margin:.5em 0}th,td{padding:.25em .6em;border-bottom:1px solid #ddd;text-align:left;vertical-align:top}table.num td{text-align:right}table.num td:nth-child(2){text-align:left}table.cmp td{text-align:right}table.cmp td:first-child,table.cmp td:last-child{text-align:left}code{font-size:.85em}figure.chart{margin:1.5em 0;break-inside:avoid;page-break-inside:avoid}svg{width:100%;height:auto;display:block}svg .title{font-size:15px;font-weight:600}svg .tick{font-size:11px;fill:#555}svg .label{font-size:12px;fill:#333}svg .grid{stroke:#e5e5e5;stroke-width:1}svg .axis{stroke:#777;stroke-width:1}svg path.series{fill:none;stroke-width:2}svg .empty{fill:#999}.multiples .grid{display:grid;grid-template-columns:repeat(auto-fill,minmax(300px,1fr));gap:.5em}.multiples figure.chart{margin:.3em 0}table.kv th{font-weight:600;white-space:nowrap}td.text,table[data-table] td:first-child{text-align:left!important}details{margin:.4em 0}details summary{cursor:pointer;font-weight:600}.legend span{display:inline-block;margin-right:1.2em;font-size:.85em}.legend i{display:inline-block;width:.9em;height:.9em;margin-right:.35em;vertical-align:-.1em}li.warn{color:#a33}li.ok{color:#262}.warn{color:#a33}footer{margin-top:2em;font-size:.8em;color:#666}@media print{body{max-width:none;margin:0;font-size:11pt}figure.chart{margin:.8em 0}}";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nice_numbers() {
        assert_eq!(nice_ceiling(0.0), 1.0);
        assert_eq!(nice_ceiling(3.2), 5.0);
        assert_eq!(nice_ceiling(10.0), 10.0);
        assert_eq!(nice_ceiling(1100.0), 2000.0);
        assert_eq!(tick_text(0.25), "0.25");
        assert_eq!(tick_text(2000.0), "2000");
    }
}

//! Trends as text tables, CSV and one self-contained HTML page (inline SVG drawn here, no
//! JavaScript, nothing fetched), change points marked in each.

use std::fmt::Write as _;

use loadmark_report::{format_bytes, format_us};

use crate::detect::ChangePoint;
use crate::record::{MetricInfo, Unit};
use crate::series::Trend;

/// A metric's value as people read it.
pub fn format_value(metric: &MetricInfo, v: f64) -> String {
    match metric.unit {
        Unit::Micros => format_us(v),
        Unit::PerSecond => format!("{v:.1}/s"),
        Unit::Count => format!("{v:.0}"),
        Unit::Percent => format!("{v:.2}%"),
        Unit::Bytes => format_bytes(v),
    }
}

/// One change point in words: `run 17: +14.8% (1.10ms → 1.26ms), p = 0.005`.
pub fn describe_change(metric: &MetricInfo, run: i64, cp: &ChangePoint) -> String {
    format!(
        "run {run}: {:+.1}% ({} → {}), p = {:.3}",
        100.0 * cp.magnitude(),
        format_value(metric, cp.before_mean),
        format_value(metric, cp.after_mean),
        cp.p_value
    )
}

/// Per series, a table with a row per run and a column per metric; `*` marks the run where a
/// change point starts a new level, and the change points follow the table.
pub fn table(trends: &[Trend<'_>]) -> String {
    let mut out = String::new();
    let mut i = 0;
    while i < trends.len() {
        let series = &trends[i].series;
        let group: Vec<&Trend> = trends[i..]
            .iter()
            .take_while(|t| &t.series == series)
            .collect();
        i += group.len();
        let _ = writeln!(out, "series: {}", series.label());
        let mut ids: Vec<(i64, &str)> = group
            .iter()
            .flat_map(|t| t.runs.iter().map(|r| (r.id, r.started_at.as_str())))
            .collect();
        ids.sort_by(|a, b| (a.1, a.0).cmp(&(b.1, b.0)));
        ids.dedup();
        let mut header = format!("  {:>6}  {:<20}", "run", "started");
        for t in &group {
            let _ = write!(header, "  {:>12}", t.metric.name);
        }
        out.push_str(header.trim_end());
        out.push('\n');
        for (id, started) in &ids {
            let mut line = format!("  {id:>6}  {:<20}", started.get(..19).unwrap_or(started));
            for t in &group {
                let cell = match t.runs.iter().position(|r| r.id == *id) {
                    Some(p) => {
                        let mark = if t.change_at(p).is_some() { "*" } else { " " };
                        format!("{}{mark}", format_value(t.metric, t.values[p]))
                    }
                    None => "-  ".to_string(),
                };
                let _ = write!(line, "  {cell:>12}");
            }
            out.push_str(line.trim_end());
            out.push('\n');
        }
        for t in &group {
            for cp in &t.change_points {
                let _ = writeln!(
                    out,
                    "  * {} change at {}",
                    t.metric.name,
                    describe_change(t.metric, t.runs[cp.index].id, cp)
                );
            }
        }
        out.push('\n');
    }
    if out.is_empty() {
        out.push_str("no runs\n");
    }
    out
}

/// One row per run and metric: `series,plan_hash,step,params,target,tags,run,started_at,
/// metric,value,change_point,p_value` (the last two filled on a change point's run).
pub fn csv(trends: &[Trend<'_>]) -> String {
    let mut out = String::from(
        "series,plan_hash,step,params,target,tags,run,started_at,metric,value,change_point,p_value\n",
    );
    for t in trends {
        let s = &t.series;
        for (i, (run, v)) in t.runs.iter().zip(&t.values).enumerate() {
            let cp = t.change_at(i);
            let fields = [
                s.label(),
                s.plan_hash.clone(),
                s.step.map(|n| n.to_string()).unwrap_or_default(),
                s.params.clone(),
                s.target.clone(),
                s.tags_text(),
                run.id.to_string(),
                run.started_at.clone(),
                t.metric.name.to_string(),
                v.to_string(),
                cp.map(|_| "true".to_string()).unwrap_or_default(),
                cp.map(|c| format!("{:.4}", c.p_value)).unwrap_or_default(),
            ];
            let row: Vec<String> = fields.iter().map(|f| csv_field(f)).collect();
            out.push_str(&row.join(","));
            out.push('\n');
        }
    }
    out
}

fn csv_field(f: &str) -> String {
    if f.contains([',', '"', '\n']) {
        format!("\"{}\"", f.replace('"', "\"\""))
    } else {
        f.to_string()
    }
}

fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// One page: per series and metric a line chart of the runs, each level between change
/// points drawn as its mean, each change point a dashed red line with its magnitude.
pub fn html(trends: &[Trend<'_>], title: &str) -> String {
    let mut out = String::new();
    let _ = write!(
        out,
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>{}</title>\n<style>\
         body{{font:14px/1.4 system-ui,sans-serif;margin:2em;color:#222}}\
         h2{{font-size:1.1em;margin-top:2em}}figure{{margin:1em 0}}\
         .line{{fill:none;stroke:#2b6cb0;stroke-width:1.5}}.dot{{fill:#2b6cb0}}\
         .level{{stroke:#555;stroke-width:1;stroke-dasharray:2 2}}\
         .change{{stroke:#c53030;stroke-width:1.5;stroke-dasharray:5 3}}\
         .axis{{stroke:#999}}text{{font-size:11px;fill:#444}}.cp{{fill:#c53030}}\
         </style></head><body>\n<h1>{}</h1>\n",
        esc(title),
        esc(title)
    );
    if trends.is_empty() {
        out.push_str("<p>No runs.</p>\n");
    }
    let mut last_series = None;
    for t in trends {
        if last_series != Some(&t.series) {
            let _ = writeln!(out, "<h2>{}</h2>", esc(&t.series.label()));
            last_series = Some(&t.series);
        }
        chart(&mut out, t);
        for cp in &t.change_points {
            let _ = writeln!(
                out,
                "<p class=\"change-point\">{} change at {}</p>",
                t.metric.name,
                esc(&describe_change(t.metric, t.runs[cp.index].id, cp))
            );
        }
    }
    out.push_str("</body></html>\n");
    out
}

fn chart(out: &mut String, t: &Trend<'_>) {
    const W: f64 = 720.0;
    const H: f64 = 220.0;
    const L: f64 = 70.0;
    const R: f64 = 20.0;
    const T: f64 = 15.0;
    const B: f64 = 30.0;
    let n = t.values.len();
    let lo = t.values.iter().cloned().fold(f64::INFINITY, f64::min);
    let hi = t.values.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
    let (lo, hi) = if n == 0 {
        (0.0, 1.0)
    } else if hi > lo {
        (lo - 0.05 * (hi - lo), hi + 0.05 * (hi - lo))
    } else {
        (lo - 0.5 - 0.05 * lo.abs(), hi + 0.5 + 0.05 * hi.abs())
    };
    let x = |i: f64| L + (W - L - R) * if n > 1 { i / (n - 1) as f64 } else { 0.5 };
    let y = |v: f64| T + (H - T - B) * (1.0 - (v - lo) / (hi - lo));
    let points: Vec<String> = t
        .values
        .iter()
        .enumerate()
        .map(|(i, v)| format!("{:.1},{:.1}", x(i as f64), y(*v)))
        .collect();
    let data: Vec<String> = t
        .runs
        .iter()
        .zip(&t.values)
        .map(|(r, v)| format!("{}:{v}", r.id))
        .collect();
    let _ = write!(
        out,
        "<figure class=\"chart\" data-chart=\"{}\" data-change-points=\"{}\">\
         <figcaption>{} ({})</figcaption>\n<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{W}\" height=\"{H}\" viewBox=\"0 0 {W} {H}\">\n\
         <line class=\"axis\" x1=\"{L}\" y1=\"{bottom}\" x2=\"{right}\" y2=\"{bottom}\"/><line class=\"axis\" x1=\"{L}\" y1=\"{T}\" x2=\"{L}\" y2=\"{bottom}\"/>\n",
        t.metric.name,
        t.change_points
            .iter()
            .map(|c| t.runs[c.index].id.to_string())
            .collect::<Vec<_>>()
            .join(" "),
        esc(t.metric.name),
        esc(t.metric.about),
        bottom = H - B,
        right = W - R,
    );
    for v in [lo, (lo + hi) / 2.0, hi] {
        let _ = writeln!(
            out,
            "<text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"end\">{}</text>",
            L - 6.0,
            y(v) + 4.0,
            esc(&format_value(t.metric, v))
        );
    }
    if let (Some(first), Some(last)) = (t.runs.first(), t.runs.last()) {
        let _ = writeln!(
            out,
            "<text x=\"{L}\" y=\"{:.1}\">run {}</text><text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"end\">run {}</text>",
            H - 10.0,
            first.id,
            W - R,
            H - 10.0,
            last.id
        );
    }
    // The levels: each segment between change points at its mean.
    let mut bounds: Vec<usize> = vec![0];
    bounds.extend(t.change_points.iter().map(|c| c.index));
    bounds.push(n);
    for w in bounds.windows(2) {
        if w[1] > w[0] {
            let m = crate::detect::mean(&t.values[w[0]..w[1]]);
            let _ = writeln!(
                out,
                "<line class=\"level\" x1=\"{:.1}\" y1=\"{:.1}\" x2=\"{:.1}\" y2=\"{:.1}\"/>",
                x(w[0] as f64),
                y(m),
                x((w[1] - 1) as f64),
                y(m)
            );
        }
    }
    for cp in &t.change_points {
        let cx = x(cp.index as f64 - 0.5);
        let _ = writeln!(
            out,
            "<line class=\"change\" x1=\"{cx:.1}\" y1=\"{T}\" x2=\"{cx:.1}\" y2=\"{:.1}\"/><text class=\"cp\" x=\"{:.1}\" y=\"{:.1}\">{:+.1}%</text>",
            H - B,
            cx + 3.0,
            T + 10.0,
            100.0 * cp.magnitude()
        );
    }
    let _ = writeln!(
        out,
        "<polyline class=\"line\" data-points=\"{}\" points=\"{}\"/>",
        data.join(" "),
        points.join(" ")
    );
    for (i, v) in t.values.iter().enumerate() {
        let _ = writeln!(
            out,
            "<circle class=\"dot\" cx=\"{:.1}\" cy=\"{:.1}\" r=\"2.5\"><title>run {}: {}</title></circle>",
            x(i as f64),
            y(*v),
            t.runs[i].id,
            esc(&format_value(t.metric, *v))
        );
    }
    out.push_str("</svg></figure>\n");
}

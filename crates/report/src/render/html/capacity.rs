//! A capacity search as one HTML page: the verdict's facts, p50/p90/p99 against the offered
//! and the achieved rate with the knee and the capacity marked (SVG, and interactive over it
//! as in a run's report), and the curve's table.

use std::fmt::Write as _;

use super::chart::{chart_marked, Line, Mark, XAxis};
use super::interactive::{Charts, TimeChart};
use super::{esc, CSS};
use crate::model::{CapacityResult, CurvePoint};
use crate::render::shared::capacity::{curve_row, facts, rate, CURVE_HEADER};

/// Renders a capacity search as a self-contained page (inline SVG and uPlot, nothing fetched).
pub fn render_capacity_html(r: &CapacityResult) -> String {
    let title = format!("Capacity of {}", r.url);
    let mut o = String::new();
    let _ = write!(
        o,
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n<title>loadmark: {}</title>\n<style>{CSS}</style>\n</head>\n<body>\n<h1>{}</h1>\n<table class=\"kv\">\n",
        esc(&title),
        esc(&title)
    );
    for (label, value) in facts(r) {
        let _ = writeln!(o, "<tr><th>{label}</th><td>{}</td></tr>", esc(&value));
    }
    o.push_str("</table>\n");
    // Repeats and notes (a step that measured the client) stay out of the lines.
    let points: Vec<&CurvePoint> = r
        .sorted_curve()
        .into_iter()
        .filter(|p| !p.repeat && p.note.is_none())
        .collect();
    let mut marks = Vec::new();
    if let Some(k) = r.knee {
        marks.push(Mark {
            x: k,
            label: format!("knee {}", rate(k)),
        });
    }
    let per_s = format!("{}/s", r.unit);
    let mut ix = Charts::default();
    for (id, axis, x_of) in [
        (
            "latency-offered",
            format!("offered {per_s}"),
            (|p: &CurvePoint| p.offered) as fn(&CurvePoint) -> f64,
        ),
        (
            "latency-achieved",
            format!("achieved {per_s}"),
            |p: &CurvePoint| p.achieved,
        ),
    ] {
        let mut marks_here: Vec<Mark> = marks
            .iter()
            .map(|m| Mark {
                x: m.x,
                label: m.label.clone(),
            })
            .collect();
        if let (Some(c), "latency-offered") = (r.capacity, id) {
            marks_here.push(Mark {
                x: c,
                label: format!("capacity {}", rate(c)),
            });
        }
        let line = |name: &str, y: fn(&CurvePoint) -> u64| {
            let mut pts: Vec<(f64, f64)> = points
                .iter()
                .map(|p| (x_of(p), y(p) as f64 / 1000.0))
                .collect();
            pts.sort_by(|a, b| a.0.total_cmp(&b.0));
            Line {
                name: name.to_string(),
                points: pts,
            }
        };
        let lines = [
            line("p50", |p| p.p50_us),
            line("p90", |p| p.p90_us),
            line("p99", |p| p.p99_us),
        ];
        let title = format!("Latency against the {axis}");
        let guides: Vec<(f64, String)> =
            marks_here.iter().map(|m| (m.x, m.label.clone())).collect();
        ix.xy(
            &TimeChart {
                id,
                title: &title,
                x_label: &axis,
                y_label: "latency (ms)",
                unit: "ms",
                may_log: true,
            },
            &lines,
            &guides,
        );
        o.push_str(&chart_marked(
            id,
            &format!("Latency against the {axis}"),
            XAxis::Linear(&axis),
            "latency (ms)",
            &lines,
            &marks_here,
        ));
    }
    o.push_str(
        "<h2>Steps, in the order run</h2>\n<table class=\"num\" data-table=\"curve\">\n<tr>",
    );
    for h in CURVE_HEADER {
        let _ = write!(o, "<th>{h}</th>");
    }
    o.push_str("</tr>\n");
    for p in &r.curve {
        o.push_str("<tr>");
        for cell in curve_row(p) {
            let _ = write!(o, "<td>{}</td>", esc(&cell));
        }
        o.push_str("</tr>\n");
    }
    o.push_str("</table>\n");
    o.push_str(&ix.scripts());
    let _ = write!(
        o,
        "<footer>loadmark {} capacity search</footer>\n</body>\n</html>\n",
        esc(&r.loadmark_version)
    );
    o.replacen("</head>", &format!("{}</head>", ix.style()), 1)
}

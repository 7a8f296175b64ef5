//! The words and rows of a capacity search that the text, Markdown and HTML formats show
//! alike: the verdict's facts and one row per step of the curve.

use crate::model::{CapacityResult, CurvePoint};
use crate::units::format_us;

/// A rate per second, thousands separated: `12,480`.
pub(crate) fn rate(v: f64) -> String {
    let whole = v.round() as u64;
    let digits = whole.to_string();
    let mut o = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            o.push(',');
        }
        o.push(c);
    }
    o
}

/// The verdict's facts, label and value, in reading order.
pub(crate) fn facts(r: &CapacityResult) -> Vec<(&'static str, String)> {
    let per_s = format!("{}/s", r.unit);
    let mut o = vec![
        ("Target", format!("{} ({})", r.url, r.protocol)),
        ("Objectives", r.objectives.join(", ")),
    ];
    o.push((
        "Capacity",
        match r.capacity {
            Some(c) => format!(
                "{} {per_s}{}",
                rate(c),
                r.achieved_at_capacity
                    .map(|a| format!(" (achieved {} {per_s})", rate(a)))
                    .unwrap_or_default()
            ),
            None => "none: no rate met every objective".into(),
        },
    ));
    if let Some(i) = &r.interval {
        o.push((
            "Interval",
            format!(
                "{} to {} {per_s}: {} of {} runs at {} met the objectives, {} of {} at {} broke one",
                rate(i.low),
                rate(i.high),
                i.runs_low - i.broke_low,
                i.runs_low,
                rate(i.low),
                i.broke_high,
                i.runs_high,
                rate(i.high),
            ),
        ));
    }
    if !r.broke_first.is_empty() {
        o.push(("Broke first", r.broke_first.join("; ")));
    }
    o.push((
        "Knee",
        match r.knee {
            Some(k) => format!("{} {per_s} (latency leaves its floor past it)", rate(k)),
            None => "not reached on this curve".into(),
        },
    ));
    o.push(("Steps", format!("{}: {}", r.curve.len(), r.step_rule)));
    o.push(("Verdict", r.message.clone()));
    o
}

/// The curve's table header.
pub(crate) const CURVE_HEADER: [&str; 8] = [
    "offered/s",
    "achieved/s",
    "p50",
    "p90",
    "p99",
    "errors",
    "failed",
    "verdict",
];

/// One row of the curve's table, in the order run.
pub(crate) fn curve_row(p: &CurvePoint) -> [String; 8] {
    let verdict = if let Some(note) = &p.note {
        note.clone()
    } else if p.met {
        "met".to_string()
    } else {
        format!("broke {}", p.broken.join(", "))
    };
    [
        format!(
            "{}{}",
            rate(p.offered),
            if p.repeat { " (repeat)" } else { "" }
        ),
        rate(p.achieved),
        format_us(p.p50_us as f64),
        format_us(p.p90_us as f64),
        format_us(p.p99_us as f64),
        p.errors.to_string(),
        p.failed.to_string(),
        verdict,
    ]
}

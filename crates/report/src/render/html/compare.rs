//! A comparison (`loadmark compare --format html`) as a self-contained page.
//!
//! Imports `model` and the HTML renderer's own modules, never another format.

use std::fmt::Write as _;

use super::chart::bars;
use super::{esc, CSS};

/// A comparison as a page: the table with verdicts, and baseline-versus-candidate bars for
/// every metric.
pub fn render_comparison_html(c: &crate::model::Comparison) -> String {
    use crate::model::{Compared, Verdict};
    let title = format!("{} vs {}", c.baseline_name, c.candidate_name);
    let mut o = String::new();
    let _ = write!(
        o,
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n<title>loadmark compare: {t}</title>\n<style>{CSS}</style>\n</head>\n<body>\n<h1>Comparison: {t}</h1>\n",
        t = esc(&title)
    );
    let _ = writeln!(
        o,
        "<section><table class=\"cmp\"><tr><th>metric</th><th>baseline</th><th>candidate</th><th>change</th><th>p</th><th>verdict</th></tr>"
    );
    for m in &c.metrics {
        let class = match m.verdict {
            Verdict::NoSignificantChange => "",
            Verdict::Better => " class=\"ok\"",
            Verdict::Worse => " class=\"warn\"",
        };
        let _ = writeln!(
            o,
            "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{:.3}</td><td{class}>{}</td></tr>",
            m.metric.name(),
            m.metric.show(m.baseline),
            m.metric.show(m.candidate),
            m.delta_percent
                .map_or_else(|| "–".to_string(), |d| format!("{d:+.1}%")),
            m.p_value,
            m.verdict_words()
        );
    }
    let _ = writeln!(
        o,
        "</table><p>Verdicts: two-sided Mann-Whitney U test on the per-second values of both runs ({} and {} seconds), significant at p &lt;= {} with a change of at least {}%.</p>",
        c.baseline_seconds, c.candidate_seconds, c.settings.alpha, c.settings.min_effect_percent
    );
    for f in &c.forced {
        let _ = writeln!(
            o,
            "<p class=\"warn\">Forced (--force): the runs differ in {}</p>",
            esc(f)
        );
    }
    if let Some(note) = &c.note {
        let _ = writeln!(o, "<p class=\"warn\">{}</p>", esc(note));
    }
    if !c.gates.is_empty() {
        let _ = writeln!(o, "<ul>");
        for g in &c.gates {
            let _ = writeln!(
                o,
                "<li class=\"{}\">{}</li>",
                if g.passed { "ok" } else { "warn" },
                esc(&g.to_string())
            );
        }
        let _ = writeln!(o, "</ul>");
    }
    let _ = writeln!(o, "</section>");
    let labels = [
        format!("baseline: {}", c.baseline_name),
        format!("candidate: {}", c.candidate_name),
    ];
    for m in &c.metrics {
        let (unit, scale) = match m.metric {
            Compared::Rps => ("responses/s", 1.0),
            Compared::ErrorRate => ("failed (% of requests)", 1.0),
            _ => ("latency (ms)", 0.001),
        };
        let id = format!("compare-{}", m.metric.name().replace([' ', '.', '/'], "-"));
        o.push_str(&bars(
            &id,
            &format!("{}: {}", m.metric.name(), m.verdict_words()),
            "run (1 baseline, 2 candidate)",
            unit,
            &labels,
            &[
                m.baseline.unwrap_or(0.0) * scale,
                m.candidate.unwrap_or(0.0) * scale,
            ],
        ));
    }
    o.push_str("</body>\n</html>\n");
    o
}

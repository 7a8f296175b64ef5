//! A capacity search as Markdown: the verdict's facts as a table, then the curve.

use std::fmt::Write;

use crate::model::CapacityResult;
use crate::render::shared::capacity::{curve_row, facts, CURVE_HEADER};

fn cell(s: &str) -> String {
    s.replace('|', "\\|")
}

/// Renders a capacity search as Markdown, ready to commit.
pub fn render_capacity_markdown(r: &CapacityResult) -> String {
    format!("# Capacity of {}\n\n{}", r.url, capacity_body(r, "##"))
}

/// The verdict's facts and the curve, the curve's heading at `level` (`##`): the whole
/// document of `loadmark find`, and a `find:` plan's step in its benchmark document.
pub(crate) fn capacity_body(r: &CapacityResult, level: &str) -> String {
    let mut o = "| | |\n|---|---|\n".to_string();
    for (label, value) in facts(r) {
        let _ = writeln!(o, "| {label} | {} |", cell(&value));
    }
    let _ = write!(o, "\n{level} Latency against throughput\n\n| ");
    o.push_str(&CURVE_HEADER.join(" | "));
    o.push_str(" |\n|");
    o.push_str(&"---:|".repeat(CURVE_HEADER.len() - 1));
    o.push_str("---|\n");
    for p in r.sorted_curve() {
        let row: Vec<String> = curve_row(p).iter().map(|c| cell(c)).collect();
        let _ = writeln!(o, "| {} |", row.join(" | "));
    }
    o
}

//! A capacity search for a terminal: the verdict's facts, then the curve step by step.

use std::fmt::Write;

use crate::model::CapacityResult;
use crate::render::shared::capacity::{curve_row, facts, CURVE_HEADER};

/// Renders a capacity search as plain text.
pub fn render_capacity_text(r: &CapacityResult) -> String {
    let mut o = format!("loadmark {}: capacity search\n", r.loadmark_version);
    for (label, value) in facts(r) {
        let _ = writeln!(o, "  {label:<12} {value}");
    }
    let rows: Vec<[String; 8]> = r.curve.iter().map(curve_row).collect();
    let mut widths: Vec<usize> = CURVE_HEADER.iter().map(|h| h.chars().count()).collect();
    for row in &rows {
        for (w, cell) in widths.iter_mut().zip(row.iter()).take(7) {
            *w = (*w).max(cell.chars().count());
        }
    }
    o.push_str("\n  Curve (in the order run)\n");
    let line = |o: &mut String, cells: &[&str]| {
        o.push_str("   ");
        for (i, cell) in cells.iter().enumerate() {
            if i == cells.len() - 1 {
                let _ = write!(o, "  {cell}");
            } else {
                let _ = write!(o, " {cell:>w$}", w = widths[i]);
            }
        }
        o.push('\n');
    };
    line(&mut o, &CURVE_HEADER);
    for row in &rows {
        let cells: Vec<&str> = row.iter().map(String::as_str).collect();
        line(&mut o, &cells);
    }
    o
}

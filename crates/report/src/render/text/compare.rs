//! Two text tables that are not a single run's report: a comparison of two runs
//! (`loadmark compare`) and the step table `bench` prints when a plan ends. Imports `model`,
//! `units` and `render::shared`, never another format.

use std::fmt::Write;

use loadmark_plan::Column;

use crate::model::{Bundle, Comparison};
use crate::render::shared::styles::style_blocks;
use crate::render::shared::table::{cell, columns, header};
use crate::render::shared::{headline, params};

/// Plain text table.
pub fn render_comparison_text(c: &Comparison) -> String {
    let mut o = String::new();
    let _ = writeln!(
        o,
        "loadmark compare: baseline {} ({} s) vs candidate {} ({} s)",
        c.baseline_name, c.baseline_seconds, c.candidate_name, c.candidate_seconds
    );
    let _ = writeln!(
        o,
        "  verdict: Mann-Whitney U on per-second values, p <= {} and |change| >= {}%\n",
        c.settings.alpha, c.settings.min_effect_percent
    );
    let _ = writeln!(
        o,
        "  {:<11} {:>12} {:>12} {:>9} {:>8}  verdict",
        "metric", "baseline", "candidate", "change", "p"
    );
    for m in &c.metrics {
        let _ = writeln!(
            o,
            "  {:<11} {:>12} {:>12} {:>9} {:>8.3}  {}",
            m.metric.name(),
            m.metric.show(m.baseline),
            m.metric.show(m.candidate),
            m.delta_text(),
            m.p_value,
            m.verdict_words()
        );
    }
    if let Some(note) = &c.note {
        let _ = writeln!(o, "\n  NOTE: {note}");
    }
    for f in &c.forced {
        let _ = writeln!(o, "\n  FORCED (--force): the runs differ in {f}");
    }
    if !c.gates.is_empty() {
        let _ = writeln!(o, "\n  Gates");
        for g in &c.gates {
            let _ = writeln!(o, "    {g}");
        }
    }
    o
}

/// The step table for a terminal (what `bench` prints when its plan ends): the chosen
/// columns aligned, then each step in the chosen style's layout, if any. The title is the
/// plan's name; a scenario's step names the scenario's steps.
pub fn render_steps_text(b: &Bundle) -> String {
    let mut o = String::new();
    let ran = b.steps.len();
    let _ = writeln!(
        o,
        "{} ({}): {ran} step{} ran{}",
        b.name.as_deref().unwrap_or("Benchmark"),
        b.plan_file,
        if ran == 1 { "" } else { "s" },
        if b.interrupted { ", INTERRUPTED" } else { "" }
    );
    let columns = columns(b);
    let mut table: Vec<Vec<String>> = vec![["#".to_string(), "step".to_string()]
        .into_iter()
        .chain(columns.iter().map(header))
        .collect()];
    for step in &b.steps {
        let name = match &step.report.plan.scenario {
            Some(_) => format!("{}: {}", params(step), headline(&step.report, None)),
            None => params(step),
        };
        table.push(
            [step.number.to_string(), name]
                .into_iter()
                .chain(columns.iter().map(|c| cell(c, step).text))
                .collect(),
        );
    }
    let widths: Vec<usize> = (0..table[0].len())
        .map(|i| {
            table
                .iter()
                .map(|row| row[i].chars().count())
                .max()
                .unwrap_or(0)
        })
        .collect();
    for row in &table {
        let mut line = String::from(" ");
        for (i, (text, width)) in row.iter().zip(&widths).enumerate() {
            let pad = width - text.chars().count();
            // Numbers right-aligned, the step's name and lists of words left-aligned.
            let left = i == 1
                || matches!(
                    columns.get(i.wrapping_sub(2)),
                    Some(Column::Errors | Column::Status | Column::BrokeFirst)
                );
            line.push(' ');
            if left {
                line.push_str(text);
                line.push_str(&" ".repeat(pad));
            } else {
                line.push_str(&" ".repeat(pad));
                line.push_str(text);
            }
            line.push(' ');
        }
        let _ = writeln!(o, "{}", line.trim_end());
    }
    for block in style_blocks(b) {
        let _ = writeln!(o, "\n{}\n", block.title);
        for line in &block.lines {
            let _ = writeln!(o, "  {}", line.trim_end());
        }
    }
    o
}

//! The HTML page's step table when a plan chose its columns, and its named-style blocks.
//!
//! Imports `model`, `render::shared` and the HTML renderer's own `esc`, never another format.

use std::fmt::Write as _;

use super::esc;
use crate::model::Bundle;

/// The summary with the plan's columns, after the step and its command.
pub(crate) fn summary(o: &mut String, b: &Bundle) {
    let columns = crate::render::shared::table::columns(b);
    let headers: String = columns
        .iter()
        .map(|c| format!("<th>{}</th>", esc(&crate::render::shared::table::header(c))))
        .collect();
    let _ = writeln!(
        o,
        "<section><h2>Summary</h2><table class=\"num\"><tr><th>step</th><th>command</th>{headers}</tr>"
    );
    for s in &b.steps {
        let cells: String = columns
            .iter()
            .map(|c| {
                format!(
                    "<td>{}</td>",
                    esc(&crate::render::shared::table::cell(c, s).text)
                )
            })
            .collect();
        let _ = writeln!(
            o,
            "<tr><td>{}</td><td><code>{}</code></td>{cells}</tr>",
            s.number,
            esc(&s.command)
        );
    }
    let _ = writeln!(o, "</table></section>");
}

/// Each step in the plan's named style, as preformatted text.
pub(crate) fn styles(o: &mut String, b: &Bundle) {
    let (Some(style), blocks) = (b.style, crate::render::shared::styles::style_blocks(b)) else {
        return;
    };
    let _ = writeln!(
        o,
        "<section><h2>Each step in {}'s layout</h2><p>loadmark's own figures, laid out as {} prints its summary; where the definitions differ, the README (\"Named styles\") says how loadmark computes them.</p>",
        style.name(),
        style.name()
    );
    for block in blocks {
        let lines: Vec<&str> = block.lines.iter().map(|l| l.trim_end()).collect();
        let _ = writeln!(
            o,
            "<h3>{}</h3><pre>{}</pre>",
            esc(&block.title),
            esc(&lines.join("\n"))
        );
    }
    let _ = writeln!(o, "</section>");
}

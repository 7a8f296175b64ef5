//! The WebSocket table of the HTML report: one row per step that ran WebSocket sessions.
//! Imports `model` and `render::shared`, and the HTML renderer's own `esc`.

use std::fmt::Write;

use crate::model::Bundle;
use crate::render::shared::{ws_row, WS_HEADS};

/// An HTML table of the WebSocket figures of every step that has them.
pub(crate) fn websocket_section(o: &mut String, b: &Bundle) {
    use super::esc;
    let rows: Vec<[String; 10]> = b
        .steps
        .iter()
        .filter_map(|s| {
            let ws = s.report.summary.websocket.as_ref()?;
            Some(ws_row(&s.number.to_string(), &s.report, ws))
        })
        .collect();
    if rows.is_empty() {
        return;
    }
    let heads: String = WS_HEADS.iter().map(|h| format!("<th>{h}</th>")).collect();
    let _ = writeln!(
        o,
        "<section><h2>WebSocket</h2><table class=\"num\"><tr>{heads}</tr>"
    );
    for row in rows {
        let cells: String = row.iter().map(|c| format!("<td>{}</td>", esc(c))).collect();
        let _ = writeln!(o, "<tr>{cells}</tr>");
    }
    let _ = writeln!(o, "</table></section>");
}

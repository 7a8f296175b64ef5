//! The gRPC tables of the HTML report (issue 36): one row per step that made gRPC calls, one
//! per status code with its first `grpc-message`, and what a streaming call's latency is.
//! Imports `model` and `render::shared`, and the HTML renderer's own `esc`.

use std::fmt::Write;

use crate::model::Bundle;
use crate::render::shared::grpc::{
    grpc_latency_notes, grpc_row, grpc_status_rows, GRPC_HEADS, GRPC_STATUS_HEADS,
};

/// HTML tables of the gRPC figures of every step that has them.
pub(crate) fn grpc_section(o: &mut String, b: &Bundle) {
    use super::esc;
    let rows: Vec<[String; 9]> = b
        .steps
        .iter()
        .filter_map(|s| grpc_row(&s.number.to_string(), &s.report))
        .collect();
    if rows.is_empty() {
        return;
    }
    let table = |o: &mut String, heads: &[&str], rows: &[Vec<String>]| {
        let heads: String = heads.iter().map(|h| format!("<th>{h}</th>")).collect();
        let _ = writeln!(o, "<table class=\"num\"><tr>{heads}</tr>");
        for row in rows {
            let cells: String = row.iter().map(|c| format!("<td>{}</td>", esc(c))).collect();
            let _ = writeln!(o, "<tr>{cells}</tr>");
        }
        let _ = writeln!(o, "</table>");
    };
    let _ = writeln!(
        o,
        "<section><h2>gRPC</h2><p>Every call ends as one response counted by its grpc-status, or as a transport error. A status other than OK is a failed call. The request message's size is its protobuf encoding, without gRPC's 5-byte prefix.</p>"
    );
    let rows: Vec<Vec<String>> = rows.into_iter().map(Vec::from).collect();
    table(o, &GRPC_HEADS, &rows);
    let statuses: Vec<Vec<String>> = b
        .steps
        .iter()
        .flat_map(|s| grpc_status_rows(&s.number.to_string(), &s.report))
        .map(Vec::from)
        .collect();
    if !statuses.is_empty() {
        table(o, &GRPC_STATUS_HEADS, &statuses);
    }
    let notes = grpc_latency_notes(b.steps.iter().map(|s| (s.number.to_string(), &s.report)));
    for (step, definition) in notes {
        let _ = writeln!(
            o,
            "<p>Step {}: a call's latency is {}.</p>",
            esc(&step),
            esc(definition)
        );
    }
    let _ = writeln!(o, "</section>");
}

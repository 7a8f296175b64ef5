//! The HTML tables of response checks and scenario steps (issue 17), in each step's details:
//! the same figures as the text and Markdown reports.
//!
//! Imports `model`, `render::shared` and the HTML renderer's own modules, never another format.

use std::fmt::Write;

use super::esc;
use crate::model::Report;

/// A table of the run's checks, then one of its scenario steps, when it has them.
pub(crate) fn checks_and_steps(o: &mut String, r: &Report) {
    if let Some(c) = &r.summary.checks {
        let _ = writeln!(
            o,
            "<p>Checks: {} of {} {} failed a check.</p>",
            c.failed_responses,
            c.checked_responses,
            super::details::words_of(r).checked
        );
        let _ = writeln!(
            o,
            "<table class=\"num\" data-table=\"checks\"><tr><th>check</th><th>passed</th><th>failed</th><th>pass rate</th><th>first failure</th></tr>"
        );
        for s in &c.checks {
            let _ = writeln!(
                o,
                "<tr><td class=\"text\">{}</td><td>{}</td><td>{}</td><td>{}</td><td class=\"text\">{}</td></tr>",
                esc(&s.name),
                s.passed,
                s.failed,
                crate::render::shared::pass_rate(s.passed, s.failed),
                esc(s.first_failure.as_deref().unwrap_or(""))
            );
        }
        let _ = writeln!(o, "</table>");
    }
    if let Some(s) = &r.summary.scenario {
        let _ = writeln!(
            o,
            "<p>Scenario: {} iterations complete, {} ended early, {} dropped.</p>",
            s.iterations, s.aborted, s.dropped
        );
        steps_table(o, s);
    }
    for named in &r.summary.scenarios {
        let s = &named.scenario;
        let _ = writeln!(
            o,
            "<p>{}; {} iterations complete, {} ended early, {} dropped.</p>",
            esc(&crate::render::shared::named_scenario_line(named)),
            s.iterations,
            s.aborted,
            s.dropped
        );
        steps_table(o, s);
    }
}

/// A scenario's steps, a row each.
fn steps_table(o: &mut String, s: &crate::model::ScenarioSummary) {
    {
        let _ = write!(
            o,
            "<table class=\"num\" data-table=\"scenario\"><tr><th>step</th>"
        );
        for h in crate::render::shared::SCENARIO_HEADS {
            let _ = write!(o, "<th>{h}</th>");
        }
        let _ = writeln!(o, "</tr>");
        for st in &s.steps {
            let _ = write!(o, "<tr><td class=\"text\">{}</td>", esc(&st.name));
            for c in crate::render::shared::scenario_cells(st) {
                let _ = write!(o, "<td>{}</td>", esc(&c));
            }
            let _ = writeln!(o, "</tr>");
        }
        let _ = writeln!(o, "</table>");
    }
}

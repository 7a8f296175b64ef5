//! The benchmark document: a [`Bundle`] as Markdown, ready to commit as BENCHMARKS.md.
//!
//! Imports `model`, `units`, `render::shared` and its own sections, never another format.

mod capacity;
mod sections;

pub use capacity::render_capacity_markdown;
pub use sections::render_comparison_markdown;

use std::fmt::Write;

use crate::model::{Bundle, BundleStep};
use loadmark_plan::Column;

use crate::render::shared::params;
use crate::units::format_bytes;

fn cell(text: &str) -> String {
    text.replace('|', "\\|").replace('\n', " ")
}

/// Renders the document.
pub fn render_markdown(b: &Bundle) -> String {
    let mut o = String::new();
    let _ = writeln!(o, "# {}\n", b.name.as_deref().unwrap_or("Benchmark"));
    if let Some(d) = &b.description {
        let _ = writeln!(o, "{}\n", d.trim());
    }
    if b.interrupted {
        let _ = writeln!(o, "> **Interrupted**: only the steps below ran.\n");
    }
    let e = &b.environment;
    let started = b
        .steps
        .first()
        .map_or("", |s| s.report.run.started_at.as_str());
    let _ = writeln!(o, "## Environment\n");
    let _ = writeln!(o, "| | |\n|---|---|");
    for (k, v) in [
        ("CPU", e.cpu_model.clone()),
        ("Cores", e.cores.to_string()),
        ("Memory", format_bytes(e.memory_bytes as f64)),
        ("OS", e.os.clone()),
        ("Kernel", e.kernel.clone()),
        (
            "Host",
            e.host
                .as_ref()
                .map_or_else(|| "not recorded".to_string(), |h| h.line(e.cores)),
        ),
        (
            "loadmark",
            e.build
                .as_ref()
                .map_or_else(|| b.loadmark_version.clone(), |build| build.to_string()),
        ),
        ("Date", started.to_string()),
        ("Plan", format!("`{}`", b.plan_file)),
    ] {
        let _ = writeln!(o, "| {k} | {} |", cell(&v));
    }
    let _ = writeln!(o, "\n## Targets\n");
    let _ = writeln!(o, "| target | URL | labels | server |\n|---|---|---|---|");
    for t in &b.targets {
        let labels: Vec<String> = t.labels.iter().map(|(k, v)| format!("{k}={v}")).collect();
        let server = match (&t.launch, &t.attach) {
            (Some(cmd), _) => format!("launched: `{}`", cell(cmd)),
            (None, Some(a)) => format!("attached: {}", cell(a)),
            _ => "not monitored".into(),
        };
        let _ = writeln!(
            o,
            "| {} | {} | {} | {} |",
            cell(&t.name),
            cell(&t.url),
            cell(&labels.join(", ")),
            server
        );
    }

    if !b.services.is_empty() {
        let _ = writeln!(o, "\n## Services\n");
        let _ = writeln!(
            o,
            "Started by the plan before the first step that needs them, stopped after the last; never loaded.\n"
        );
        let _ = writeln!(o, "| service | launched | depends on |\n|---|---|---|");
        for sv in &b.services {
            let _ = writeln!(
                o,
                "| {} | `{}` | {} |",
                cell(&sv.name),
                cell(&sv.launch),
                if sv.depends_on.is_empty() {
                    "—".to_string()
                } else {
                    cell(&sv.depends_on.join(", "))
                }
            );
        }
    }

    let _ = writeln!(o, "\n## Results\n");
    let _ = writeln!(
        o,
        "Latency is measured as each step's report states (closed loop: first byte written to last byte received; open loop: from the intended send time). Percentiles come from HDR histograms; failed = transport errors + non-2xx/3xx responses.\n"
    );
    let columns = crate::render::shared::table::columns(b);
    let headers: Vec<String> = columns
        .iter()
        .map(crate::render::shared::table::header)
        .collect();
    let _ = writeln!(o, "| # | step | {} |", headers.join(" | "));
    let align: Vec<&str> = columns
        .iter()
        .map(|c| match c {
            Column::Errors | Column::Status | Column::BrokeFirst => "---",
            _ => "---:",
        })
        .collect();
    let _ = writeln!(o, "|---:|---|{}|", align.join("|"));
    for step in &b.steps {
        let cells: Vec<String> = columns
            .iter()
            .map(|c| crate::render::shared::table::cell(c, step).text)
            .collect();
        let _ = writeln!(
            o,
            "| {} | {} | {} |",
            step.number,
            cell(&params(step)),
            cells
                .iter()
                .map(|c| cell(c))
                .collect::<Vec<_>>()
                .join(" | ")
        );
    }

    let blocks = crate::render::shared::styles::style_blocks(b);
    if let (Some(style), false) = (b.style, blocks.is_empty()) {
        let _ = writeln!(o, "\n## Each step in {}'s layout\n", style.name());
        let _ = writeln!(
            o,
            "loadmark's own figures, laid out as {} prints its summary for readers used to it; where the definitions differ, the README (\"Named styles\") says how loadmark computes them.",
            style.name()
        );
        for block in blocks {
            let _ = writeln!(o, "\n{}\n\n```text", block.title);
            for line in &block.lines {
                let _ = writeln!(o, "{}", line.trim_end());
            }
            let _ = writeln!(o, "```");
        }
    }

    let named: Vec<(String, &crate::model::Report)> = b
        .steps
        .iter()
        .map(|step| (format!("{} {}", step.number, params(step)), &step.report))
        .collect();
    sections::protocol_section(&mut o, &named); // issue 16
    sections::websocket_section(&mut o, &named);
    sections::grpc_section(&mut o, &named); // issue 36
    sections::checks_section(&mut o, &named); // issue 17
    sections::scenario_section(&mut o, &named); // issue 17

    for c in &b.compare {
        render_comparison(&mut o, b, c);
    }
    for step in &b.steps {
        if let Some(c) = &step.capacity {
            let _ = writeln!(
                o,
                "\n## Step {}: capacity of {}\n\n{}",
                step.number,
                cell(&params(step)),
                capacity::capacity_body(c, "###")
            );
        }
    }

    // One row per monitored process and step: the target's server, then each service.
    let rows: Vec<(&BundleStep, String, &crate::model::ServerUsage)> = b
        .steps
        .iter()
        .flat_map(|step| {
            let server = step.server.iter().map(move |u| (step, params(step), u));
            let services = step
                .services
                .iter()
                .map(move |x| (step, format!("service {}", x.name), &x.usage));
            server.chain(services)
        })
        .collect();
    if !rows.is_empty() {
        let _ = writeln!(o, "\n## Server resources\n");
        let _ = writeln!(o, "| # | step | RSS start | RSS peak | RSS end | growth | CPU mean | CPU peak | threads peak | fds peak |");
        let _ = writeln!(o, "|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|");
        for (step, what, u) in rows {
            let _ = writeln!(
                o,
                "| {} | {} | {} | {} | {} | {} | {:.0}% | {:.0}% | {} | {} |",
                step.number,
                cell(&what),
                format_bytes(u.rss_start_bytes as f64),
                format_bytes(u.rss_peak_bytes as f64),
                format_bytes(u.rss_end_bytes as f64),
                format_bytes(u.rss_end_bytes.saturating_sub(u.rss_start_bytes) as f64),
                u.cpu_mean_percent,
                u.cpu_peak_percent,
                u.threads_peak,
                u.fds_peak,
            );
        }
    }

    let _ = writeln!(o, "\n## Notes\n");
    let mut notes = 0;
    for note in &b.notes {
        let _ = writeln!(o, "- {}", cell(note));
        notes += 1;
    }
    for step in &b.steps {
        let r = &step.report;
        let s = &r.summary;
        let mut say = |text: String| {
            let _ = writeln!(o, "- Step {} ({}): {text}", step.number, params(step));
            notes += 1;
        };
        for note in &step.notes {
            say(cell(note));
        }
        for (kind, stat) in s.errors.nonzero() {
            say(format!(
                "{} {kind} errors; first: {}",
                stat.count,
                stat.first_example.as_deref().unwrap_or("")
            ));
        }
        for c in s.checks.iter().flat_map(|c| &c.checks) {
            if c.failed > 0 {
                say(format!("check {:?} failed {} times", c.name, c.failed));
            }
        }
        if s.retries > 0 {
            say(crate::render::shared::retries_line(s.retries)); // issue 20: as the text report says
        }
        if s.requests.non_success_responses > 0 {
            say(format!(
                "{} responses were not 2xx/3xx",
                s.requests.non_success_responses
            ));
        }
        for finding in &r.run.health.findings {
            say(finding.clone());
        }
        for t in &r.thresholds {
            say(format!("threshold {t}"));
        }
        if r.run.interrupted {
            say("interrupted: the figures cover the time that ran".into());
        }
    }
    if notes == 0 {
        let _ = writeln!(o, "Nothing suspicious: no errors, no non-2xx/3xx responses, the client was never the bottleneck.");
    }

    let _ = writeln!(o, "\n## How to reproduce\n");
    match b.steps.as_slice() {
        // One run from the command line: its command is the whole story.
        [only] if b.plan_file == crate::model::COMMAND_LINE => {
            let _ = writeln!(o, "`{}`", only.command);
        }
        steps => {
            let _ = writeln!(
                o,
                "All steps: `loadmark bench {}`. Each step alone:\n",
                b.plan_file
            );
            for step in steps {
                let _ = writeln!(o, "{}. `{}`", step.number, step.command);
            }
        }
    }
    if b.plan_file != crate::model::COMMAND_LINE {
        let _ = writeln!(
            o,
            "\n<details><summary>Plan file</summary>\n\n```yaml\n{}\n```\n</details>",
            b.plan_text.trim_end()
        );
    }
    o
}

fn render_comparison(o: &mut String, b: &Bundle, c: &loadmark_plan::CompareFile) {
    for t in crate::render::shared::compare_table::comparison_tables(b, c) {
        let _ = writeln!(o, "\n### {}\n", cell(&t.title));
        let _ = writeln!(
            o,
            "| {} \\ {} | {} |",
            cell(&t.rows_key),
            cell(&t.columns_key),
            t.columns
                .iter()
                .map(|c| cell(c))
                .collect::<Vec<_>>()
                .join(" | ")
        );
        let _ = writeln!(o, "|---|{}", "---:|".repeat(t.columns.len()));
        for (row, cells) in &t.rows {
            let _ = writeln!(o, "| {} | {} |", cell(row), cells.join(" | "));
        }
    }
}

//! The HTML page's resource charts: each launched or attached server's RSS and CPU over
//! each step, and the plan's services' (a backend's growth matters too).
//!
//! Imports `model` and the HTML renderer's own modules, never another format.

use super::chart::{per_step_chart, Line};
use super::interactive::{Charts, TimeChart};
use super::step_label;
use crate::model::{Bundle, ServerUsage, UsageSample};

pub(crate) fn server_usage(o: &mut String, ix: &mut Charts, b: &Bundle) {
    let has = |u: &ServerUsage| !u.samples.is_empty();
    let monitored: Vec<_> = b
        .steps
        .iter()
        .filter(|s| s.server.as_ref().is_some_and(has) || s.services.iter().any(|x| has(&x.usage)))
        .collect();
    if monitored.is_empty() {
        return;
    }
    // `skip`: the first sample has no interval before it, so no CPU figure (0% by
    // convention): a CPU line starts at the first real interval.
    let line = |name: String, samples: &[UsageSample], f: &dyn Fn(&UsageSample) -> f64, skip| {
        let skip = if samples.len() > skip { skip } else { 0 };
        Line {
            name,
            points: samples[skip..]
                .iter()
                .map(|p| (p.at_ms as f64 / 1000.0, f(p)))
                .collect(),
        }
    };
    let groups = |f: &dyn Fn(&UsageSample) -> f64, skip: usize| {
        monitored
            .iter()
            .map(|s| {
                let mut lines = Vec::new();
                if let Some(u) = &s.server {
                    lines.push(line(step_label(s), &u.samples, f, skip));
                }
                for x in &s.services {
                    let name = format!("{} service {}", step_label(s), x.name);
                    lines.push(line(name, &x.usage.samples, f, skip));
                }
                (step_label(s), lines)
            })
            .collect::<Vec<_>>()
    };
    const TIME: &str = "time since step start (s)";
    let charts: [(&str, &str, &str, &str, Vec<_>); 2] = [
        (
            "server-rss",
            "Server memory (RSS) over time",
            "RSS (MiB)",
            "MiB",
            groups(&|p| p.rss_bytes as f64 / (1024.0 * 1024.0), 0),
        ),
        (
            "server-cpu",
            "Server CPU over time (100% is one core)",
            "CPU (%)",
            "%",
            groups(&|p| p.cpu_percent, 1),
        ),
    ];
    for (id, title, y_label, unit, lines) in charts {
        ix.per_step(
            &TimeChart {
                id,
                title,
                x_label: TIME,
                y_label,
                unit,
                may_log: false,
            },
            &lines,
        );
        o.push_str(&per_step_chart(id, title, TIME, y_label, lines));
    }
}

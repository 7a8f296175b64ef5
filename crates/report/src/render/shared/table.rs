//! The step table as a model: each chosen [`Column`]'s header and, per step, its value both
//! in human units (Markdown, HTML) and raw (CSV: microseconds, bytes, per second). The
//! renderers only lay these out.
//!
//! Imports `model` and `units` only, never a format's renderer.

use hdrhistogram::Histogram;
use loadmark_metrics::Distribution;
use loadmark_plan::{Column, Dist, Stat, DEFAULT_COLUMNS};

use crate::model::{Bundle, BundleStep};
use crate::units::{format_bytes, format_of, format_rate};

/// One value of the table.
#[derive(Debug, Clone, PartialEq)]
pub struct Cell {
    /// In human units, e.g. `1.23ms`, `12.3k`, `2xx: 300`.
    pub text: String,
    /// For machines: a plain number in the unit of [`header_raw`], or text; empty when the
    /// figure does not exist (an empty histogram, a server not monitored).
    pub raw: String,
}

/// The columns a bundle's table shows: the plan's, or today's default (led by the
/// capacity and the objective that broke first when its steps are searches).
pub fn columns(b: &Bundle) -> Vec<Column> {
    if !b.columns.is_empty() {
        return b.columns.clone();
    }
    if b.steps.iter().any(|s| s.capacity.is_some()) {
        [Column::Capacity, Column::BrokeFirst]
            .into_iter()
            .chain(DEFAULT_COLUMNS.iter().copied())
            .collect()
    } else {
        DEFAULT_COLUMNS.to_vec()
    }
}

/// The header for documents.
pub fn header(c: &Column) -> String {
    match c {
        Column::Rps => "req/s".into(),
        Column::RpsStdev => "req/s stdev".into(),
        Column::RpsMin => "req/s min".into(),
        Column::RpsMax => "req/s max".into(),
        Column::Transfer => "transfer/s".into(),
        Column::Requests => "responses".into(),
        Column::Failed => "failed".into(),
        Column::Errors => "errors by kind".into(),
        Column::Status => "status classes".into(),
        Column::Class(c) => format!("{c}xx"),
        Column::Others => "others".into(),
        Column::Connections => "connections opened".into(),
        Column::ServerRss => "server RSS peak".into(),
        Column::ServerCpu => "server CPU mean / peak".into(),
        Column::Capacity => "capacity/s".into(),
        Column::BrokeFirst => "broke first".into(),
        Column::Of(d, s) => {
            let stat = match s {
                Stat::Min => "min".to_string(),
                Stat::Mean => "mean".into(),
                Stat::Stdev => "stdev".into(),
                Stat::Max => "max".into(),
                Stat::P(p) => format!("p{p}"),
            };
            match (d, s) {
                // Today's headers: latency is the table's subject.
                (Dist::Latency, Stat::P(_) | Stat::Max) => stat,
                (Dist::Latency, _) => format!("latency {stat}"),
                (Dist::Connect, _) => format!("connect {stat}"),
                (Dist::Ttfb, _) => format!("TTFB {stat}"),
            }
        }
    }
}

/// The header for CSV: the column's plan name with its unit.
pub fn header_raw(c: &Column) -> String {
    let unit = match c {
        Column::Rps | Column::RpsStdev | Column::RpsMin | Column::RpsMax | Column::Capacity => {
            "_per_s"
        }
        Column::Transfer => "_bytes_per_s",
        Column::ServerRss => "_peak_bytes",
        Column::ServerCpu => "_mean_percent",
        Column::Of(..) => "_us",
        _ => "",
    };
    format!("{}{unit}", c.name())
}

fn dist(step: &BundleStep, d: Dist) -> (&Distribution, &Histogram<u64>) {
    let (s, t) = (&step.report.summary, &step.report.totals);
    match d {
        Dist::Latency => (&s.latency, &t.latency),
        Dist::Connect => (&s.connect, &t.connect),
        Dist::Ttfb => (&s.ttfb, &t.ttfb),
    }
}

/// A figure of a distribution in microseconds, `None` when it measured nothing.
pub fn stat_us(step: &BundleStep, d: Dist, s: Stat) -> Option<f64> {
    let (dist, h) = dist(step, d);
    if dist.count == 0 {
        return None;
    }
    Some(match s {
        Stat::Min => dist.min_us as f64,
        Stat::Mean => dist.mean_us,
        Stat::Stdev => dist.stdev_us,
        Stat::Max => dist.max_us as f64,
        // The stored percentiles where they exist, so a default table reads as it always did.
        Stat::P(p) => dist
            .percentile(p)
            .unwrap_or_else(|| h.value_at_quantile(p / 100.0)) as f64,
    })
}

/// The value of `c` for `step`.
pub fn cell(c: &Column, step: &BundleStep) -> Cell {
    let s = &step.report.summary;
    let num = |text: String, raw: f64| Cell {
        text,
        raw: format!("{raw:.3}"),
    };
    let count = |n: u64| Cell {
        text: n.to_string(),
        raw: n.to_string(),
    };
    let none = || Cell {
        text: "—".into(),
        raw: String::new(),
    };
    match c {
        Column::Rps => num(format_rate(s.rps), s.rps),
        Column::RpsStdev => num(format_rate(s.rps_per_second.stdev), s.rps_per_second.stdev),
        Column::RpsMin => count(s.rps_per_second.min),
        Column::RpsMax => count(s.rps_per_second.max),
        Column::Transfer => num(
            format!("{}/s", format_bytes(s.read_bytes_per_s)),
            s.read_bytes_per_s,
        ),
        Column::Requests => count(s.requests.responses),
        Column::Failed => count(step.report.failed()),
        Column::Errors => {
            let kinds: Vec<String> = s
                .errors
                .nonzero()
                .map(|(k, st)| format!("{k}: {}", st.count))
                .collect();
            Cell {
                text: if kinds.is_empty() {
                    "—".into()
                } else {
                    kinds.join(", ")
                },
                raw: kinds.join("; "),
            }
        }
        Column::Status => {
            let classes: Vec<String> = (1..=5)
                .filter(|&c| s.status.class(c) > 0)
                .map(|c| format!("{c}xx: {}", s.status.class(c)))
                .collect();
            Cell {
                text: classes.join(", "),
                raw: classes.join("; "),
            }
        }
        Column::Class(k) => count(s.status.class(u16::from(*k))),
        Column::Others => count(s.requests.errors),
        Column::Connections => count(s.connections_opened),
        Column::ServerRss => match &step.server {
            Some(u) => Cell {
                text: format_bytes(u.rss_peak_bytes as f64),
                raw: u.rss_peak_bytes.to_string(),
            },
            None => none(),
        },
        Column::ServerCpu => match &step.server {
            Some(u) => Cell {
                text: format!("{:.0}% / {:.0}%", u.cpu_mean_percent, u.cpu_peak_percent),
                raw: format!("{:.1}", u.cpu_mean_percent),
            },
            None => none(),
        },
        Column::Capacity => match step.capacity.as_ref().and_then(|c| c.capacity) {
            Some(c) => num(crate::render::shared::capacity::rate(c), c),
            None => none(),
        },
        Column::BrokeFirst => match &step.capacity {
            Some(c) if !c.broke_first.is_empty() => Cell {
                text: c.broke_first.join("; "),
                raw: c.broke_first.join("; "),
            },
            _ => none(),
        },
        Column::Of(d, st) => {
            let (dist, _) = dist(step, *d);
            match stat_us(step, *d, *st) {
                Some(us) => num(format_of(dist, us), us),
                None => Cell {
                    text: "n/a".into(),
                    raw: String::new(),
                },
            }
        }
    }
}

//! The report's interactive charts: the numbers of the charts over time and of the latency
//! spectrum as one JSON document in the page, drawn by uPlot (vendored in
//! `crates/report/assets/uplot/`, inlined so the page stays one file that works offline and
//! makes no request) and by `assets/charts.js`, which puts each interactive chart in the
//! `<figure>` of the same `data-chart` name.
//!
//! The hand-drawn SVG stays in the page: it is what a browser without script shows, and what
//! is printed (the print style hides the canvas and shows the SVG again). Hover shows exact
//! values, dragging zooms, a double click resets, the legend toggles series, and every chart
//! over time shares one cursor (uPlot's cursor sync), so per-step charts are linked on time.
//!
//! The values are the JSON result's own: responses and failures per second as counted,
//! latencies as the series' microseconds divided by 1000 (exact in ms, three decimals).
//! Imports `chart::Line` and the HTML renderer's step labels, never another format.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use hdrhistogram::Histogram;
use serde::Serialize;

use super::chart::{Line, MAX_OVERLAID};

/// uPlot, vendored (assets/uplot/SOURCE.md): also the live dashboard's charts.
pub const UPLOT_JS: &str = include_str!("../../../assets/uplot/uPlot.iife.min.js");
/// uPlot's stylesheet.
pub const UPLOT_CSS: &str = include_str!("../../../assets/uplot/uPlot.min.css");
const CHARTS_JS: &str = include_str!("../../../assets/charts.js");

/// Screen: the canvas replaces the SVG and its legend once script has drawn it; print: the
/// SVG again (a canvas sized for the screen prints blurred and cut).
const CSS: &str = ".lm-plot{margin:0 0 .5em}.lm-plot .u-title{font-size:15px;font-weight:600}.lm-plot .u-legend{font-size:.8em}figure.lm-on>svg,figure.lm-on>figcaption{display:none}@media print{figure.lm-on>svg,figure.lm-on>figcaption{display:block!important}.lm-plot{display:none!important}}";

/// A spread of latencies this wide (max over the smallest positive value) is drawn on a
/// log axis: on a linear one the fast seconds lie flat on zero.
const LOG_SPREAD: f64 = 100.0;

/// The interactive charts of one page, in the order they were added.
#[derive(Default)]
pub(crate) struct Charts {
    charts: Vec<Spec>,
}

#[derive(Serialize)]
struct Spec {
    /// The `data-chart` of the figure it draws into.
    id: String,
    /// `time` (x in seconds since the start, cursor linked), `nines` (x is -log10(1 - q)) or
    /// `xy` (x any number: a swept parameter, an offered rate; cursor not linked).
    kind: &'static str,
    title: String,
    xlabel: String,
    ylabel: String,
    /// Appended to a value shown on hover.
    unit: &'static str,
    log: bool,
    /// One y scale for a set of small multiples (compared by eye).
    #[serde(skip_serializing_if = "Option::is_none")]
    ymax: Option<f64>,
    #[serde(serialize_with = "whole_or_not")]
    x: Vec<f64>,
    series: Vec<Series>,
    /// Labelled vertical guides (the spectrum's p50, p90, p99, p99.9).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    guides: Vec<Guide>,
}

#[derive(Serialize)]
struct Series {
    label: String,
    #[serde(serialize_with = "whole_or_not")]
    data: Vec<Option<f64>>,
    /// Set on a series of markers (points, no line): the name of each point.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    tags: Vec<Option<String>>,
}

/// A value as JSON: whole numbers without ".0" (most of a page's numbers are counts and
/// seconds; this keeps the embedded data about a tenth smaller).
#[derive(Clone, Copy)]
struct Num(f64);

impl Serialize for Num {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        if self.0.fract() == 0.0 && self.0.abs() < 1e15 {
            s.serialize_i64(self.0 as i64)
        } else {
            s.serialize_f64(self.0)
        }
    }
}

fn whole_or_not<T, S>(values: &[T], s: S) -> Result<S::Ok, S::Error>
where
    T: Copy + Into<Option<f64>>,
    S: serde::Serializer,
{
    s.collect_seq(values.iter().map(|&v| v.into().map(Num)))
}

#[derive(Serialize)]
struct Guide {
    x: f64,
    label: String,
}

/// What a chart over time (or over another x) shows, for its title, axes and hover text.
pub(crate) struct TimeChart<'a> {
    pub id: &'a str,
    pub title: &'a str,
    pub x_label: &'a str,
    pub y_label: &'a str,
    pub unit: &'static str,
    /// Latencies: switch to a log axis when the spread is wide.
    pub may_log: bool,
}

impl Charts {
    /// A chart over time, laid out as `chart::per_step_chart` lays out its SVG: every line on
    /// one chart for up to [`MAX_OVERLAID`] steps, else one chart per step (`{id}-step{n}`)
    /// on one y scale.
    pub(crate) fn per_step(&mut self, c: &TimeChart, groups: &[(String, Vec<Line>)]) {
        if groups.len() <= MAX_OVERLAID {
            let lines: Vec<&Line> = groups.iter().flat_map(|(_, l)| l).collect();
            let names = lines.iter().map(|l| l.name.clone()).collect();
            self.time(
                c,
                c.id.to_string(),
                c.title.to_string(),
                &lines,
                names,
                None,
            );
            return;
        }
        let top = groups
            .iter()
            .flat_map(|(_, lines)| lines.iter().flat_map(|l| l.points.iter().map(|p| p.1)))
            .fold(0.0, f64::max);
        for (n, (label, lines)) in groups.iter().enumerate() {
            let names = lines
                .iter()
                .map(|l| {
                    let short = l.name.strip_prefix(label.as_str()).unwrap_or(&l.name);
                    short.trim().to_string()
                })
                .collect();
            let lines: Vec<&Line> = lines.iter().collect();
            self.time(
                c,
                format!("{}-step{}", c.id, n + 1),
                label.clone(),
                &lines,
                names,
                // Nothing above zero (no failures anywhere): each chart picks its own scale.
                Some(top).filter(|&t| t > 0.0),
            );
        }
    }

    fn time(
        &mut self,
        c: &TimeChart,
        id: String,
        title: String,
        lines: &[&Line],
        names: Vec<String>,
        ymax: Option<f64>,
    ) {
        self.lines("time", c, id, title, lines, names, ymax, Vec::new());
    }

    /// Lines over an x that is not time (a swept parameter, an offered rate), with labelled
    /// vertical marks (a knee, a capacity); its cursor is its own.
    pub(crate) fn xy(&mut self, c: &TimeChart, lines: &[Line], marks: &[(f64, String)]) {
        let names = lines.iter().map(|l| l.name.clone()).collect();
        let lines: Vec<&Line> = lines.iter().collect();
        let guides = marks
            .iter()
            .map(|(x, label)| Guide {
                x: *x,
                label: label.clone(),
            })
            .collect();
        let (id, title) = (c.id.to_string(), c.title.to_string());
        self.lines("xy", c, id, title, &lines, names, None, guides);
    }

    #[allow(clippy::too_many_arguments)]
    fn lines(
        &mut self,
        kind: &'static str,
        c: &TimeChart,
        id: String,
        title: String,
        lines: &[&Line],
        names: Vec<String>,
        ymax: Option<f64>,
        guides: Vec<Guide>,
    ) {
        // x kept in millionths, so the union of every line's x values is exact (whole
        // seconds, a monitor's half seconds, a swept parameter).
        let key = |x: f64| (x * 1e6).round() as i64;
        let xs: BTreeMap<i64, f64> = lines
            .iter()
            .flat_map(|l| l.points.iter().map(|p| (key(p.0), p.0)))
            .collect();
        let log = c.may_log && wide_spread(lines.iter().flat_map(|l| l.points.iter().map(|p| p.1)));
        let series = lines
            .iter()
            .zip(names)
            .map(|(line, label)| {
                let by_x: BTreeMap<i64, f64> =
                    line.points.iter().map(|&(x, v)| (key(x), v)).collect();
                Series {
                    label,
                    data: xs
                        .keys()
                        .map(|k| by_x.get(k).copied().filter(|&v| !log || v > 0.0))
                        .collect(),
                    tags: Vec::new(),
                }
            })
            .collect();
        self.charts.push(Spec {
            id,
            kind,
            title,
            xlabel: c.x_label.to_string(),
            ylabel: c.y_label.to_string(),
            unit: c.unit,
            log,
            ymax: ymax.filter(|_| !log),
            x: xs.into_values().collect(),
            series,
            guides,
        });
    }

    /// The HDR percentile curve of each step on the log "nines" axis, each with its markers
    /// at p50, p90, p99, p99.9 (where its sample count reaches them) and max.
    pub(crate) fn spectrum(&mut self, id: &str, title: &str, steps: &[(String, &Histogram<u64>)]) {
        let steps: Vec<&(String, &Histogram<u64>)> =
            steps.iter().filter(|(_, h)| !h.is_empty()).collect();
        if steps.is_empty() {
            return;
        }
        let reach = |h: &Histogram<u64>| (h.len() as f64).log10().clamp(1.0, 5.0);
        let top = steps.iter().map(|(_, h)| reach(h)).fold(1.0, f64::max);
        // A grid of 1/20 nine, the guides, and each curve's end; kept in millionths of a nine
        // so equal positions merge.
        let key = |x: f64| (x * 1e6).round() as i64;
        let mut xs: BTreeMap<i64, f64> = (0..=(top * 20.0).floor() as i64)
            .map(|k| (key(k as f64 / 20.0), k as f64 / 20.0))
            .collect();
        let guides: Vec<(Guide, f64)> =
            [(0.5, "p50"), (0.9, "p90"), (0.99, "p99"), (0.999, "p99.9")]
                .iter()
                .map(|&(q, label)| {
                    // To a millionth of a nine, so p99 sits at 2, not at 1.9999999999999996.
                    let x = (nines(q) * 1e6).round() / 1e6;
                    let label = label.to_string();
                    (Guide { x, label }, q)
                })
                .filter(|(g, _)| g.x <= top + 1e-9)
                .collect();
        for x in guides
            .iter()
            .map(|(g, _)| g.x)
            .chain(steps.iter().map(|(_, h)| reach(h)))
        {
            xs.entry(key(x)).or_insert(x);
        }
        let x: Vec<f64> = xs.into_values().collect();
        let mut series = Vec::new();
        let multi = steps.len() > 1;
        for (label, h) in &steps {
            let end = reach(h);
            let ms = |q: f64| h.value_at_quantile(q) as f64 / 1000.0;
            series.push(Series {
                label: label.clone(),
                data: x
                    .iter()
                    .map(|&v| (v <= end + 1e-9).then(|| ms(1.0 - 10f64.powf(-v))))
                    .collect(),
                tags: Vec::new(),
            });
            let mut tags = vec![None; x.len()];
            let mut data = vec![None; x.len()];
            for (g, q) in guides.iter().filter(|(g, _)| g.x <= end + 1e-9) {
                let i = x.iter().position(|&v| key(v) == key(g.x)).unwrap_or(0);
                tags[i] = Some(g.label.clone());
                data[i] = Some(ms(*q));
            }
            let i = x.iter().position(|&v| key(v) == key(end)).unwrap_or(0);
            tags[i] = Some("max".to_string());
            data[i] = Some(h.max() as f64 / 1000.0);
            series.push(Series {
                label: if multi {
                    format!("{label} markers")
                } else {
                    "markers".into()
                },
                data,
                tags,
            });
        }
        let log = wide_spread(series.iter().flat_map(|s| s.data.iter().flatten().copied()));
        if log {
            for s in &mut series {
                for v in &mut s.data {
                    *v = v.filter(|&v| v > 0.0);
                }
            }
        }
        self.charts.push(Spec {
            id: id.to_string(),
            kind: "nines",
            title: title.to_string(),
            xlabel: "percentile (log scale of nines)".into(),
            ylabel: "latency (ms)".into(),
            unit: "ms",
            log,
            ymax: None,
            x,
            series,
            guides: guides.into_iter().map(|(g, _)| g).collect(),
        });
    }

    /// The style for the `<head>`: uPlot's and the swap between canvas and SVG.
    pub(crate) fn style(&self) -> String {
        if self.charts.is_empty() {
            return String::new();
        }
        format!("<style>{UPLOT_CSS}{CSS}</style>\n")
    }

    /// The data and the scripts, for the end of the `<body>`.
    pub(crate) fn scripts(&self) -> String {
        if self.charts.is_empty() {
            return String::new();
        }
        let json = serde_json::to_string(&self.charts).unwrap_or_else(|_| "[]".into());
        let mut o = String::new();
        // `<` only occurs inside JSON strings, where \u003c reads the same and no label can
        // close the script element.
        let _ = writeln!(
            o,
            "<script type=\"application/json\" id=\"lm-charts\">{}</script>",
            json.replace('<', "\\u003c")
        );
        let _ = writeln!(o, "<script>{}</script>", UPLOT_JS.trim_end());
        let _ = writeln!(o, "<script>{}</script>", CHARTS_JS.trim_end());
        o
    }
}

/// -log10(1 - q): where quantile `q` sits on the nines axis.
fn nines(q: f64) -> f64 {
    -(1.0 - q).log10()
}

fn wide_spread(values: impl Iterator<Item = f64>) -> bool {
    let (min, max) = values
        .filter(|&v| v > 0.0)
        .fold((f64::INFINITY, 0.0f64), |(lo, hi), v| {
            (lo.min(v), hi.max(v))
        });
    max > 0.0 && max / min >= LOG_SPREAD
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spread_and_nines() {
        assert!(wide_spread([0.0, 0.2, 20.0].into_iter()));
        assert!(!wide_spread([0.0, 0.3, 20.0].into_iter()));
        assert!(!wide_spread(std::iter::empty()));
        assert!((nines(0.999) - 3.0).abs() < 1e-9);
    }

    #[test]
    fn spectrum_marks_every_reached_percentile_and_max() {
        let mut h = Histogram::<u64>::new(3).unwrap();
        for v in 1..=2000u64 {
            h.record(v * 10).unwrap();
        }
        let mut c = Charts::default();
        c.spectrum("spectrum", "Latency", &[("latency".into(), &h)]);
        let s = &c.charts[0];
        let marks = &s.series[1];
        let named: Vec<&str> = marks.tags.iter().flatten().map(String::as_str).collect();
        assert_eq!(named, ["p50", "p90", "p99", "p99.9", "max"]);
        let max_at = marks
            .tags
            .iter()
            .position(|t| t.as_deref() == Some("max"))
            .unwrap();
        assert_eq!(marks.data[max_at], Some(h.max() as f64 / 1000.0));
        assert_eq!(s.x.len(), s.series[0].data.len());
    }
}

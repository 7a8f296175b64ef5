//! The HTML report's charts: inline SVG line charts (linear or log "nines" x axis), small
//! multiples when steps are too many to overlay, and bar charts, drawn here in Rust with no
//! JavaScript. Each chart is a `<figure class="chart" data-chart=NAME>` whose lines carry
//! `data-points`. Imports nothing but the HTML renderer's `esc`.

use std::fmt::Write as _;

use super::esc;

const W: f64 = 760.0;
const H: f64 = 300.0;
const L: f64 = 70.0; // left margin (y tick labels)
const R: f64 = 20.0;
const T: f64 = 36.0; // title
const B: f64 = 48.0; // x tick labels and axis title
const COLORS: [&str; 8] = [
    "#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#17becf",
];

/// A line to draw: its legend name and points `(x, y)`.
pub(crate) struct Line {
    pub name: String,
    pub points: Vec<(f64, f64)>,
}

/// How the x axis is labelled.
#[derive(Clone, Copy)]
pub(crate) enum XAxis<'a> {
    Linear(&'a str),
    /// Log "nines": x is -log10(1 - q).
    Nines,
}

/// More steps than this, and a chart over time becomes small multiples: a dozen lines on
/// one chart cannot be told apart.
pub(crate) const MAX_OVERLAID: usize = 5;

const SMALL: Frame = Frame {
    w: 380.0,
    h: 240.0,
    y_max: None,
};

/// One chart of every step's lines, or with more than [`MAX_OVERLAID`] steps one small chart
/// per step (`{id}-step{n}`), all on one y scale so they compare by eye.
pub(crate) fn per_step_chart(
    id: &str,
    title: &str,
    x_label: &str,
    y_label: &str,
    groups: Vec<(String, Vec<Line>)>,
) -> String {
    if groups.len() <= MAX_OVERLAID {
        let lines: Vec<Line> = groups.into_iter().flat_map(|(_, l)| l).collect();
        return chart(id, title, XAxis::Linear(x_label), y_label, &lines);
    }
    let top = groups
        .iter()
        .flat_map(|(_, lines)| lines.iter().flat_map(|l| l.points.iter().map(|p| p.1)))
        .fold(0.0, f64::max);
    let frame = Frame {
        y_max: Some(nice_ceiling(top)),
        ..SMALL
    };
    let mut o = format!(
        "<section class=\"multiples\" data-multiples=\"{id}\"><h3>{}</h3><div class=\"grid\">\n",
        esc(title)
    );
    for (n, (label, lines)) in groups.into_iter().enumerate() {
        // The chart's title names the step: the legend names only the figures.
        let lines: Vec<Line> = lines
            .into_iter()
            .map(|l| Line {
                name: l
                    .name
                    .strip_prefix(&label)
                    .unwrap_or(&l.name)
                    .trim()
                    .to_string(),
                points: l.points,
            })
            .collect();
        o.push_str(&chart_in(
            frame,
            &format!("{id}-step{}", n + 1),
            &label,
            XAxis::Linear(x_label),
            y_label,
            &lines,
            &[],
        ));
    }
    o.push_str("</div></section>\n");
    o
}

/// 1, 2 or 5 times a power of ten, at least `v`.
fn nice_ceiling(v: f64) -> f64 {
    if v <= 0.0 || !v.is_finite() {
        return 1.0;
    }
    let p = 10f64.powf(v.log10().floor());
    [1.0, 2.0, 5.0, 10.0]
        .iter()
        .map(|m| m * p)
        .find(|&c| c >= v * (1.0 - 1e-12))
        .unwrap_or(10.0 * p)
}

fn tick_text(v: f64) -> String {
    if v == 0.0 {
        "0".into()
    } else if v.abs() >= 100.0 || (v.fract() == 0.0 && v.abs() >= 1.0) {
        format!("{v:.0}")
    } else if v.abs() >= 1.0 {
        format!("{v:.1}")
    } else {
        let s = format!("{v:.3}");
        s.trim_end_matches('0').to_string()
    }
}

pub(crate) fn chart(id: &str, title: &str, x: XAxis, y_label: &str, lines: &[Line]) -> String {
    chart_in(FULL, id, title, x, y_label, lines, &[])
}

/// A vertical line across a chart at `x`, labelled at its top (a capacity search's knee).
pub(crate) struct Mark {
    pub x: f64,
    pub label: String,
}

/// As [`chart`], with vertical marks drawn over the lines.
pub(crate) fn chart_marked(
    id: &str,
    title: &str,
    x: XAxis,
    y_label: &str,
    lines: &[Line],
    marks: &[Mark],
) -> String {
    chart_in(FULL, id, title, x, y_label, lines, marks)
}

/// The size of a chart, and the top of its y axis when several charts must share one (small
/// multiples are compared by eye: one scale for all).
#[derive(Clone, Copy)]
struct Frame {
    w: f64,
    h: f64,
    y_max: Option<f64>,
}

const FULL: Frame = Frame {
    w: W,
    h: H,
    y_max: None,
};

fn chart_in(
    frame: Frame,
    id: &str,
    title: &str,
    x: XAxis,
    y_label: &str,
    lines: &[Line],
    marks: &[Mark],
) -> String {
    let (w, h) = (frame.w, frame.h);
    let mut o = String::new();
    let total: usize = lines.iter().map(|l| l.points.len()).sum();
    let _ = writeln!(
        o,
        "<figure class=\"chart\" data-chart=\"{id}\" data-points=\"{total}\">\n<svg viewBox=\"0 0 {w} {h}\" role=\"img\" aria-label=\"{}\" xmlns=\"http://www.w3.org/2000/svg\">",
        esc(title)
    );
    let _ = writeln!(
        o,
        "<text x=\"{}\" y=\"20\" class=\"title\" text-anchor=\"middle\">{}</text>",
        w / 2.0,
        esc(title)
    );
    let all = || lines.iter().flat_map(|l| l.points.iter());
    let (pw, ph) = (w - L - R, h - T - B);
    if total == 0 {
        let _ = writeln!(
            o,
            "<text x=\"{}\" y=\"{}\" text-anchor=\"middle\" class=\"empty\">no data</text></svg></figure>",
            w / 2.0,
            h / 2.0
        );
        return o;
    }
    let x_min = all().map(|p| p.0).fold(f64::INFINITY, f64::min).min(0.0);
    let x_raw_max = all().map(|p| p.0).fold(f64::NEG_INFINITY, f64::max);
    let x_max = match x {
        XAxis::Nines => x_raw_max.ceil().max(1.0),
        XAxis::Linear(_) => nice_ceiling(x_raw_max.max(x_min + 1.0)),
    };
    let y_max = frame
        .y_max
        .unwrap_or_else(|| nice_ceiling(all().map(|p| p.1).fold(0.0, f64::max)));
    let sx = |v: f64| L + (v - x_min) / (x_max - x_min) * pw;
    let sy = |v: f64| T + ph - v / y_max * ph;
    // Grid and y ticks.
    for i in 0..=5 {
        let v = y_max * i as f64 / 5.0;
        let y = sy(v);
        let _ = writeln!(
            o,
            "<line x1=\"{L}\" y1=\"{y:.1}\" x2=\"{:.1}\" y2=\"{y:.1}\" class=\"grid\"/><text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"end\" class=\"tick\">{}</text>",
            L + pw,
            L - 6.0,
            y + 4.0,
            tick_text(v)
        );
    }
    // X ticks.
    let x_ticks: Vec<(f64, String)> = match x {
        XAxis::Nines => (0..=x_max as usize)
            .map(|n| {
                let label = match n {
                    0 => "0%".to_string(),
                    // Placed by hand below, between 0% and 90%.
                    1 => "90%".to_string(),
                    n => format!(
                        "99{}%",
                        if n > 2 {
                            format!(".{}", "9".repeat(n - 2))
                        } else {
                            String::new()
                        }
                    ),
                };
                (n as f64, label)
            })
            // HdrHistogram's axis: 50% sits at -log10(1 - 0.5) nines.
            .chain(std::iter::once((2f64.log10(), "50%".to_string())))
            .collect(),
        XAxis::Linear(_) if x_min == 0.0 && x_max <= 10.0 && x_max.fract() == 0.0 => (0..=x_max
            as usize)
            .map(|i| (i as f64, i.to_string()))
            .collect(),
        XAxis::Linear(_) => (0..=5)
            .map(|i| {
                let v = x_min + (x_max - x_min) * i as f64 / 5.0;
                (v, tick_text(v))
            })
            .collect(),
    };
    for (v, label) in &x_ticks {
        let xx = sx(*v);
        let _ = writeln!(
            o,
            "<line x1=\"{xx:.1}\" y1=\"{T}\" x2=\"{xx:.1}\" y2=\"{:.1}\" class=\"grid\"/><text x=\"{xx:.1}\" y=\"{:.1}\" text-anchor=\"middle\" class=\"tick\">{}</text>",
            T + ph,
            T + ph + 16.0,
            esc(label)
        );
    }
    let x_label = match x {
        XAxis::Nines => "percentile (log scale of nines)",
        XAxis::Linear(l) => l,
    };
    let _ = writeln!(
        o,
        "<line x1=\"{L}\" y1=\"{T}\" x2=\"{L}\" y2=\"{:.1}\" class=\"axis\"/><line x1=\"{L}\" y1=\"{:.1}\" x2=\"{:.1}\" y2=\"{:.1}\" class=\"axis\"/>",
        T + ph,
        T + ph,
        L + pw,
        T + ph
    );
    let _ = writeln!(
        o,
        "<text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"middle\" class=\"label\">{}</text>",
        L + pw / 2.0,
        h - 8.0,
        esc(x_label)
    );
    let _ = writeln!(
        o,
        "<text transform=\"translate(16 {:.1}) rotate(-90)\" text-anchor=\"middle\" class=\"label\">{}</text>",
        T + ph / 2.0,
        esc(y_label)
    );
    for (i, line) in lines.iter().enumerate() {
        let color = COLORS[i % COLORS.len()];
        let mut d = String::new();
        for (k, &(px, py)) in line.points.iter().enumerate() {
            let _ = write!(
                d,
                "{}{:.1},{:.1}",
                if k == 0 { "M" } else { " L" },
                sx(px),
                sy(py)
            );
        }
        let _ = writeln!(
            o,
            "<path class=\"series\" data-points=\"{}\" d=\"{d}\" stroke=\"{color}\"{}><title>{}</title></path>",
            line.points.len(),
            // Past the palette, colours come round again: dashes tell those lines apart.
            if i >= COLORS.len() {
                " stroke-dasharray=\"7 4\""
            } else {
                ""
            },
            esc(&line.name)
        );
        if line.points.len() == 1 {
            let (px, py) = line.points[0];
            let _ = writeln!(
                o,
                "<circle cx=\"{:.1}\" cy=\"{:.1}\" r=\"3\" fill=\"{color}\"/>",
                sx(px),
                sy(py)
            );
        }
    }
    for mark in marks.iter().filter(|m| m.x >= x_min && m.x <= x_max) {
        let xx = sx(mark.x);
        let _ = writeln!(
            o,
            "<line x1=\"{xx:.1}\" y1=\"{T}\" x2=\"{xx:.1}\" y2=\"{:.1}\" class=\"mark\" stroke=\"#444\" stroke-dasharray=\"4 3\"/><text x=\"{:.1}\" y=\"{:.1}\" class=\"tick\">{}</text>",
            T + ph,
            xx + 4.0,
            T + 12.0,
            esc(&mark.label)
        );
    }
    o.push_str("</svg>\n");
    legend(&mut o, lines.iter().map(|l| l.name.as_str()));
    o.push_str("</figure>\n");
    o
}

fn legend<'a>(o: &mut String, names: impl Iterator<Item = &'a str>) {
    o.push_str("<figcaption class=\"legend\">");
    for (i, name) in names.enumerate() {
        let _ = write!(
            o,
            "<span><i style=\"background:{}\"></i>{}</span>",
            COLORS[i % COLORS.len()],
            esc(name)
        );
    }
    o.push_str("</figcaption>\n");
}

pub(crate) fn bars(
    id: &str,
    title: &str,
    x_label: &str,
    y_label: &str,
    labels: &[String],
    values: &[f64],
) -> String {
    let mut o = String::new();
    let _ = writeln!(
        o,
        "<figure class=\"chart\" data-chart=\"{id}\" data-points=\"{}\">\n<svg viewBox=\"0 0 {W} {H}\" role=\"img\" aria-label=\"{}\" xmlns=\"http://www.w3.org/2000/svg\">",
        values.len(),
        esc(title)
    );
    let _ = writeln!(
        o,
        "<text x=\"{}\" y=\"20\" class=\"title\" text-anchor=\"middle\">{}</text>",
        W / 2.0,
        esc(title)
    );
    let (pw, ph) = (W - L - R, H - T - B);
    let y_max = nice_ceiling(values.iter().copied().fold(0.0, f64::max));
    for i in 0..=5 {
        let v = y_max * i as f64 / 5.0;
        let y = T + ph - v / y_max * ph;
        let _ = writeln!(
            o,
            "<line x1=\"{L}\" y1=\"{y:.1}\" x2=\"{:.1}\" y2=\"{y:.1}\" class=\"grid\"/><text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"end\" class=\"tick\">{}</text>",
            L + pw,
            L - 6.0,
            y + 4.0,
            tick_text(v)
        );
    }
    let slot = pw / values.len().max(1) as f64;
    for (i, (&v, label)) in values.iter().zip(labels).enumerate() {
        let h = v / y_max * ph;
        let x = L + slot * i as f64 + slot * 0.15;
        let _ = writeln!(
            o,
            "<rect class=\"bar\" x=\"{x:.1}\" y=\"{:.1}\" width=\"{:.1}\" height=\"{h:.1}\" fill=\"{}\"><title>{}: {}</title></rect>",
            T + ph - h,
            slot * 0.7,
            COLORS[i % COLORS.len()],
            esc(label),
            tick_text(v)
        );
        let _ = writeln!(
            o,
            "<text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"middle\" class=\"tick\">{}</text>",
            x + slot * 0.35,
            T + ph + 16.0,
            i + 1
        );
    }
    let _ = writeln!(
        o,
        "<line x1=\"{L}\" y1=\"{:.1}\" x2=\"{:.1}\" y2=\"{:.1}\" class=\"axis\"/><text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"middle\" class=\"label\">{}</text><text transform=\"translate(16 {:.1}) rotate(-90)\" text-anchor=\"middle\" class=\"label\">{}</text>\n</svg>",
        T + ph,
        L + pw,
        T + ph,
        L + pw / 2.0,
        H - 8.0,
        esc(x_label),
        T + ph / 2.0,
        esc(y_label)
    );
    legend(&mut o, labels.iter().map(String::as_str));
    o.push_str("</figure>\n");
    o
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nice_numbers() {
        assert_eq!(nice_ceiling(0.0), 1.0);
        assert_eq!(nice_ceiling(3.2), 5.0);
        assert_eq!(nice_ceiling(10.0), 10.0);
        assert_eq!(nice_ceiling(1100.0), 2000.0);
        assert_eq!(tick_text(0.25), "0.25");
        assert_eq!(tick_text(2000.0), "2000");
    }
}

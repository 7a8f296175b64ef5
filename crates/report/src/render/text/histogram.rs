//! The text report's latency histogram: a compact bar chart of the distribution, as hey and
//! oha print one, read from the run's HDR histogram (so a merged report draws it exactly too).
//!
//! About ten rows, each counting the values above the row before and up to its own bound.
//! The rows are evenly spaced when the values span less than a decade, and log-spaced
//! otherwise: a loopback run's latencies go from tens of microseconds to a tail of
//! milliseconds, and even rows would put nearly every response in the first one.
//!
//! Imports `units` only.

use std::fmt::Write;

use hdrhistogram::Histogram;

use crate::units::format_us;

/// Rows the histogram aims at (fewer when bounds would read the same).
pub(crate) const ROWS: usize = 10;

/// The widest bar, in characters.
const BAR_WIDTH: u64 = 40;

/// One row: the values up to `upto_us` (and above the previous row's bound).
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Row {
    pub upto_us: u64,
    pub count: u64,
}

/// The rows of `h`, and whether they are log-spaced; `None` when `h` is empty.
pub(crate) fn rows(h: &Histogram<u64>, rows: usize) -> Option<(Vec<Row>, bool)> {
    if h.is_empty() {
        return None;
    }
    let (lo, hi) = (h.min(), h.max());
    let log = hi as f64 >= lo.max(1) as f64 * 10.0;
    let rows = rows.max(1);
    let mut bounds: Vec<u64> = (1..=rows)
        .map(|i| {
            let f = i as f64 / rows as f64;
            let b = if log {
                let lo = lo.max(1) as f64;
                lo * (hi as f64 / lo).powf(f)
            } else {
                lo as f64 + (hi - lo) as f64 * f
            };
            (b.ceil() as u64).min(hi)
        })
        .collect();
    // The last bound is the maximum itself, whatever the rounding did.
    *bounds.last_mut().expect("rows >= 1") = hi;
    bounds.dedup();
    // Two bounds that print alike would be two rows with the same label: keep the upper.
    let mut kept: Vec<u64> = Vec::with_capacity(bounds.len());
    for b in bounds {
        match kept.last_mut() {
            Some(last) if format_us(*last as f64) == format_us(b as f64) => *last = b,
            _ => kept.push(b),
        }
    }
    let mut out: Vec<Row> = kept
        .into_iter()
        .map(|upto_us| Row { upto_us, count: 0 })
        .collect();
    for v in h.iter_recorded() {
        // Every value of an HDR bucket is equivalent: the bucket's highest stands for them,
        // as max() does, so the last row holds the maximum.
        let value = h.highest_equivalent(v.value_iterated_to());
        let i = out
            .iter()
            .position(|r| value <= r.upto_us)
            .unwrap_or(out.len() - 1);
        out[i].count += v.count_at_value();
    }
    Some((out, log))
}

/// The histogram block of the text report; nothing when `h` measured nothing.
pub(crate) fn render_text(o: &mut String, h: &Histogram<u64>) {
    let Some((rows, log)) = rows(h, ROWS) else {
        return;
    };
    let _ = writeln!(
        o,
        "  Histogram     ({} buckets, each up to the value shown)",
        if log { "log-spaced" } else { "even" }
    );
    let most = rows.iter().map(|r| r.count).max().unwrap_or(0).max(1);
    let count_width = most.to_string().len();
    for r in &rows {
        // A bucket with anything in it shows at least one mark: a lone outlier is visible.
        let bar = if r.count == 0 {
            0
        } else {
            (r.count * BAR_WIDTH).div_ceil(most).max(1)
        };
        let line = format!(
            "    {:>7}  {:>count_width$}  {}",
            format_us(r.upto_us as f64),
            r.count,
            "■".repeat(bar as usize)
        );
        let _ = writeln!(o, "{}", line.trim_end());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn histogram(values: &[(u64, u64)]) -> Histogram<u64> {
        let mut h = loadmark_metrics::new_histogram();
        for &(v, n) in values {
            h.record_n(v, n).unwrap();
        }
        h
    }

    #[test]
    fn every_value_is_counted_once_and_the_last_row_ends_at_the_maximum() {
        let h = histogram(&[(50, 900), (80, 90), (400, 9), (20_000, 1)]);
        let (rows, log) = rows(&h, ROWS).unwrap();
        assert!(log, "50µs to 20ms spans more than a decade");
        assert_eq!(rows.iter().map(|r| r.count).sum::<u64>(), 1000);
        assert_eq!(rows.last().unwrap().upto_us, h.max());
        assert_eq!(rows.last().unwrap().count, 1, "the lone outlier");
        assert_eq!(rows.len(), ROWS);
        assert!(rows.windows(2).all(|w| w[0].upto_us < w[1].upto_us));
        // 50µs is the minimum and 80µs below the first bound (92µs): both in the first row.
        assert_eq!(
            rows[0],
            Row {
                upto_us: 92,
                count: 990
            }
        );
    }

    #[test]
    fn a_narrow_range_has_even_rows_and_no_two_rows_print_alike() {
        let h = histogram(&[(100, 5), (104, 5), (108, 10)]);
        let (rows, log) = rows(&h, ROWS).unwrap();
        assert!(!log);
        assert_eq!(
            rows.iter().map(|r| r.upto_us).collect::<Vec<_>>(),
            [101, 102, 103, 104, 105, 106, 107, 108],
            "8µs wide: integer bounds, deduplicated"
        );
        assert_eq!(rows.iter().map(|r| r.count).sum::<u64>(), 20);
        // One value: one row.
        let (one, _) = super::rows(&histogram(&[(70, 3)]), ROWS).unwrap();
        assert_eq!(
            one,
            [Row {
                upto_us: 70,
                count: 3
            }]
        );
        assert!(super::rows(&histogram(&[]), ROWS).is_none());
    }

    #[test]
    fn the_text_is_compact_with_bars_scaled_to_the_largest_row() {
        let mut o = String::new();
        render_text(
            &mut o,
            &histogram(&[(50, 900), (80, 90), (400, 9), (20_000, 1)]),
        );
        let lines: Vec<&str> = o.lines().collect();
        assert_eq!(lines.len(), 1 + ROWS, "{o}");
        assert_eq!(
            lines[0],
            "  Histogram     (log-spaced buckets, each up to the value shown)"
        );
        assert_eq!(lines[1], format!("       92µs  990  {}", "■".repeat(40)));
        assert_eq!(lines[2], "      166µs    0", "an empty row has no bar: {o}");
        assert_eq!(
            lines[ROWS], "    20.02ms    1  ■",
            "one mark for a lone outlier: {o}"
        );
        let mut empty = String::new();
        render_text(&mut empty, &histogram(&[]));
        assert_eq!(empty, "", "no histogram of nothing");
    }
}

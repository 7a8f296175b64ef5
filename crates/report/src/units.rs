//! Human units for durations, sizes and rates: the number formatting every renderer (and
//! the model's plain-words findings) shares, so a figure reads the same in every format.
//! Imports nothing from this crate.

/// `812µs`, `1.23ms`, `4.56s`.
pub fn format_us(us: f64) -> String {
    if us < 1_000.0 {
        format!("{us:.0}µs")
    } else if us < 1_000_000.0 {
        format!("{:.2}ms", us / 1_000.0)
    } else {
        format!("{:.2}s", us / 1_000_000.0)
    }
}

/// Percentile `p` of `d` in human units, or `n/a` when `d` measured nothing (an empty
/// histogram has no percentiles; `0µs` would claim something was fast).
pub fn format_pct(d: &loadmark_metrics::Distribution, p: f64) -> String {
    match d.percentile(p) {
        Some(v) if d.count > 0 => format_us(v as f64),
        _ => "n/a".to_string(),
    }
}

/// A figure of `d` (min, mean, max, ...) in human units, or `n/a` when `d` is empty.
pub fn format_of(d: &loadmark_metrics::Distribution, us: f64) -> String {
    if d.count == 0 {
        "n/a".to_string()
    } else {
        format_us(us)
    }
}

/// `12.3k` style for large rates, exact below 10 000.
pub(crate) fn format_rate(v: f64) -> String {
    if v >= 10_000.0 {
        format!("{:.1}k", v / 1000.0)
    } else {
        format!("{v:.0}")
    }
}

/// `512 B`, `1.50 KiB`, `2.25 MiB`, `1.00 GiB`.
pub fn format_bytes(bytes: f64) -> String {
    const UNITS: [&str; 5] = ["B", "KiB", "MiB", "GiB", "TiB"];
    let mut value = bytes;
    let mut unit = 0;
    while value >= 1024.0 && unit < UNITS.len() - 1 {
        value /= 1024.0;
        unit += 1;
    }
    if unit == 0 {
        format!("{value:.0} B")
    } else {
        format!("{value:.2} {}", UNITS[unit])
    }
}

/// The plural ending of `n` things: `""` for one, `"s"` otherwise.
pub(crate) fn plural(n: u64) -> &'static str {
    if n == 1 {
        ""
    } else {
        "s"
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn units() {
        assert_eq!(format_us(812.0), "812µs");
        assert_eq!(format_us(1_234.0), "1.23ms");
        assert_eq!(format_us(4_560_000.0), "4.56s");
        assert_eq!(format_bytes(512.0), "512 B");
        assert_eq!(format_bytes(1536.0), "1.50 KiB");
        assert_eq!(format_bytes(3.0 * 1024.0 * 1024.0 * 1024.0), "3.00 GiB");
    }
}

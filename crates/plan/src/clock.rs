//! Wall-clock instants as users write them: `2026-12-01T10:00:00Z` (RFC 3339, UTC or with
//! an offset, fractional seconds allowed) for `--start-at`, the agreed start of a split run.
//! Pure: parsing never reads the clock.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use crate::text::PlanError;

const FORM: &str =
    "an RFC 3339 time such as 2026-12-01T10:00:00Z or 2026-12-01T11:00:00.5+01:00, or +DURATION (from now, e.g. +5s)";

/// Parses an RFC 3339 date-time into a `SystemTime` (after 1970).
pub fn parse_rfc3339(text: &str, field: &'static str) -> Result<SystemTime, PlanError> {
    let bad = || PlanError::invalid(field, text, FORM);
    let t = text.trim();
    let b = t.as_bytes();
    if b.len() < 20 || b[4] != b'-' || b[7] != b'-' || !matches!(b[10], b'T' | b't' | b' ') {
        return Err(bad());
    }
    if b[13] != b':' || b[16] != b':' {
        return Err(bad());
    }
    let num = |r: std::ops::Range<usize>| -> Result<i64, PlanError> {
        let s = &t[r];
        if s.bytes().all(|c| c.is_ascii_digit()) {
            s.parse().map_err(|_| bad())
        } else {
            Err(bad())
        }
    };
    let (year, month, day) = (num(0..4)?, num(5..7)?, num(8..10)?);
    let (hour, minute, second) = (num(11..13)?, num(14..16)?, num(17..19)?);
    let mut rest = &t[19..];
    let mut nanos = 0u32;
    if let Some(frac) = rest.strip_prefix('.') {
        let digits = frac.bytes().take_while(u8::is_ascii_digit).count();
        if digits == 0 {
            return Err(bad());
        }
        let padded = format!("{:0<9}", &frac[..digits.min(9)]);
        nanos = padded.parse().map_err(|_| bad())?;
        rest = &frac[digits..];
    }
    let offset_s = match rest {
        "Z" | "z" => 0,
        _ if rest.len() == 6 && matches!(&rest[..1], "+" | "-") && &rest[3..4] == ":" => {
            let h: i64 = rest[1..3].parse().map_err(|_| bad())?;
            let m: i64 = rest[4..6].parse().map_err(|_| bad())?;
            let sign = if rest.starts_with('-') { -1 } else { 1 };
            if h > 23 || m > 59 {
                return Err(bad());
            }
            sign * (h * 3600 + m * 60)
        }
        _ => return Err(bad()),
    };
    let leap = |y: i64| (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
    let days_in = [
        31,
        if leap(year) { 29 } else { 28 },
        31,
        30,
        31,
        30,
        31,
        31,
        30,
        31,
        30,
        31,
    ];
    if !(1..=12).contains(&month)
        || day < 1
        || day > days_in[(month - 1) as usize]
        || hour > 23
        || minute > 59
        || second > 60
    {
        return Err(bad());
    }
    let secs =
        days_from_civil(year, month, day) * 86_400 + hour * 3600 + minute * 60 + second - offset_s;
    if secs < 0 {
        return Err(bad());
    }
    Ok(UNIX_EPOCH + Duration::new(secs as u64, nanos))
}

/// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's algorithm).
fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = if y >= 0 { y } else { y - 399 } / 400;
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

#[cfg(test)]
mod tests {
    use super::*;

    fn secs(t: SystemTime) -> f64 {
        t.duration_since(UNIX_EPOCH).unwrap().as_secs_f64()
    }

    #[test]
    fn utc_offsets_and_fractions() {
        assert_eq!(
            secs(parse_rfc3339("1970-01-01T00:00:00Z", "f").unwrap()),
            0.0
        );
        // `date -u -d 2026-12-01T10:00:00Z +%s`
        assert_eq!(
            secs(parse_rfc3339("2026-12-01T10:00:00Z", "f").unwrap()),
            1_796_119_200.0
        );
        assert_eq!(
            parse_rfc3339("2026-12-01T11:00:00+01:00", "f").unwrap(),
            parse_rfc3339("2026-12-01T10:00:00Z", "f").unwrap()
        );
        assert_eq!(
            secs(parse_rfc3339("2024-02-29T00:00:00.25Z", "f").unwrap()),
            1_709_164_800.25
        );
    }

    #[test]
    fn bad_times_name_the_flag_and_form() {
        for bad in [
            "",
            "2026-12-01",
            "2026-12-01T10:00:00",
            "2026-13-01T10:00:00Z",
            "2026-02-29T10:00:00Z",
            "2026-12-01T24:00:00Z",
            "2026-12-01T10:00:00.Z",
            "2026-12-01T10:00:00+1:00",
            "1969-12-31T23:59:59Z",
            "tomorrow",
        ] {
            let e = parse_rfc3339(bad, "--start-at").unwrap_err().to_string();
            assert!(
                e.starts_with("--start-at") && e.contains("RFC 3339"),
                "{bad}: {e}"
            );
        }
    }
}

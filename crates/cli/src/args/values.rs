//! Parsers for flag values: each says what it expected, in the words a user reads.

use std::time::Duration;

use loadmark_plan::{parse_duration, parse_header, WsMode};

pub(crate) fn duration_arg(text: &str) -> Result<Duration, String> {
    parse_duration(text).map_err(|_| {
        "expected a duration such as 500ms, 30s, 2m or 1m30s (a bare number means seconds)"
            .to_string()
    })
}

/// A count of at least 1: `-c -5` is told so, not taken for an unknown flag.
pub(super) fn at_least_one(text: &str) -> Result<usize, String> {
    match text.trim().parse::<i64>() {
        Ok(n) if n >= 1 => usize::try_from(n).map_err(|_| "too large".to_string()),
        Ok(_) => Err("must be at least 1".to_string()),
        Err(_) => Err("expected a whole number, at least 1".to_string()),
    }
}

/// A size in bytes: a number, or with a unit as ghz takes it (`4MB` is 4,000,000 bytes,
/// `4MiB` 4,194,304; KB/KiB, MB/MiB and GB/GiB, any case, a space allowed), at least 1.
pub(super) fn size_arg(text: &str) -> Result<usize, String> {
    let bad = || {
        format!(
            "{text:?}: expected a size in bytes, e.g. 4194304, 4MiB or 4MB (KB/KiB, MB/MiB, GB/GiB)"
        )
    };
    let t = text.trim();
    let split = t
        .find(|c: char| !c.is_ascii_digit() && c != '.')
        .unwrap_or(t.len());
    let (number, unit) = t.split_at(split);
    let number: f64 = number.parse().map_err(|_| bad())?;
    let scale: f64 = match unit.trim().to_ascii_lowercase().as_str() {
        "" | "b" => 1.0,
        "kb" | "k" => 1e3,
        "mb" | "m" => 1e6,
        "gb" | "g" => 1e9,
        "kib" => 1024.0,
        "mib" => 1024.0 * 1024.0,
        "gib" => 1024.0 * 1024.0 * 1024.0,
        _ => return Err(bad()),
    };
    let bytes = (number * scale).round();
    // A gRPC message length is 32 bits.
    if !(1.0..=f64::from(u32::MAX)).contains(&bytes) {
        return Err(format!("{text:?}: expected from 1 byte to 4GiB"));
    }
    Ok(bytes as usize)
}

pub(super) fn at_least_one_u64(text: &str) -> Result<u64, String> {
    at_least_one(text).map(|n| n as u64)
}

pub(super) fn basic_auth_arg(text: &str) -> Result<String, String> {
    if text.contains(':') {
        Ok(text.to_string())
    } else {
        Err("expected USER:PASSWORD".to_string())
    }
}

/// RFC 4648 base64 (with padding), for a basic-auth header: too small a need for a crate.
pub(super) fn base64(bytes: &[u8]) -> String {
    const ABC: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for chunk in bytes.chunks(3) {
        let b = [
            chunk[0],
            *chunk.get(1).unwrap_or(&0),
            *chunk.get(2).unwrap_or(&0),
        ];
        let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(ABC[(n >> (18 - 6 * i) & 63) as usize] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}

pub(super) fn mode_arg(text: &str) -> Result<WsMode, String> {
    WsMode::parse(text).map_err(|_| "expected one of echo, request, send, receive".to_string())
}

pub(super) fn header_arg(text: &str) -> Result<(String, String), String> {
    parse_header(text).map_err(|_| {
        "expected 'Name: value' with a token name (letters, digits, !#$%&'*+-.^_`|~)".to_string()
    })
}

/// A rate in requests per second: a number as wrk2 takes it, or N/DURATION as vegeta writes
/// it (500/1s, 500/s, 30000/1m: a duration without a number is one of its unit).
pub(super) fn rate(text: &str) -> Result<f64, String> {
    let form = "expected requests per second, e.g. 500, or N/DURATION as vegeta writes it: 500/1s, 500/s, 30000/1m";
    let text = text.trim();
    let Some((count, per)) = text.split_once('/') else {
        return text.parse::<f64>().map_err(|_| form.to_string());
    };
    let count: f64 = count.trim().parse().map_err(|_| form.to_string())?;
    let per = per.trim();
    if per.is_empty() {
        return Err(form.to_string());
    }
    let per = if per.starts_with(|c: char| c.is_ascii_digit()) {
        per.to_string()
    } else {
        format!("1{per}")
    };
    let per = parse_duration(&per).map_err(|_| form.to_string())?;
    if per.is_zero() {
        return Err(form.to_string());
    }
    Ok(count / per.as_secs_f64())
}

/// `run`'s -d: a duration. hey and curl write a request body after -d; a value that looks
/// like one (JSON, a form, @FILE) is told where the body goes instead.
pub(super) fn run_duration(text: &str) -> Result<Duration, String> {
    duration_arg(text).map_err(|e| {
        let t = text.trim_start();
        let body_like = t.starts_with(['{', '[', '<', '@', '"', '\''])
            || t.contains(['=', '&'])
            || t.contains(char::is_whitespace);
        if body_like {
            "-d is the duration here; for a request body use --body/-b (hey's and curl's -d; \
             -b @FILE reads it from a file)"
                .to_string()
        } else {
            e
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_as_ghz_writes_them() {
        assert_eq!(size_arg("4194304"), Ok(4 << 20));
        assert_eq!(size_arg("4MiB"), Ok(4 << 20));
        assert_eq!(size_arg("4 MB"), Ok(4_000_000));
        assert_eq!(size_arg("16kib"), Ok(16 << 10));
        for bad in ["big", "4XB", "0", "5GiB", "-1"] {
            assert!(size_arg(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn rates_as_wrk2_and_vegeta_write_them() {
        assert_eq!(rate("2000"), Ok(2000.0));
        assert_eq!(rate("500/1s"), Ok(500.0));
        assert_eq!(rate("500/s"), Ok(500.0));
        assert_eq!(rate("30000/1m"), Ok(500.0));
        assert_eq!(rate("50/100ms"), Ok(500.0));
        for bad in ["fast", "500/", "500/0s", "/1s", "500/1x"] {
            assert!(rate(bad).unwrap_err().contains("500/1s"), "{bad}");
        }
    }

    #[test]
    fn a_body_after_d_is_told_where_bodies_go() {
        assert_eq!(run_duration("5s"), Ok(Duration::from_secs(5)));
        for body in ["{}", "{\"a\":1}", "a=1&b=2", "@body.json", "[1, 2]"] {
            let e = run_duration(body).unwrap_err();
            assert!(e.starts_with("-d is the duration here"), "{body}: {e}");
            assert!(e.contains("--body/-b"), "{e}");
        }
        assert!(run_duration("ten")
            .unwrap_err()
            .starts_with("expected a duration"));
    }
}

//! Parsing user text: durations, headers; and the [`PlanError`] they give.

use std::time::Duration;

/// What is wrong with a plan or a flag, in words that name the field and the expected form.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PlanError {
    /// A value does not parse; `field` names the flag or plan key.
    #[error("{field}: invalid value {value:?}: expected {expected}")]
    Invalid {
        field: &'static str,
        value: String,
        expected: &'static str,
    },
    /// Two settings cannot be used together.
    #[error("{first} and {second} cannot be used together: {why}")]
    Conflict {
        first: &'static str,
        second: &'static str,
        why: &'static str,
    },
}

impl PlanError {
    pub fn invalid(field: &'static str, value: impl Into<String>, expected: &'static str) -> Self {
        PlanError::Invalid {
            field,
            value: value.into(),
            expected,
        }
    }
}

const DURATION_FORM: &str =
    "a duration such as 500ms, 30s, 2m, 1h or 1m30s (a bare number means seconds)";

/// Parses `500ms`, `30s`, `2m`, `1h`, `1m30s`, `1.5s`, or a bare number of seconds.
pub fn parse_duration(text: &str) -> Result<Duration, PlanError> {
    let bad = || PlanError::invalid("duration", text, DURATION_FORM);
    let s = text.trim();
    if s.is_empty() {
        return Err(bad());
    }
    if let Ok(secs) = s.parse::<f64>() {
        return Duration::try_from_secs_f64(secs).map_err(|_| bad());
    }
    let mut total = Duration::ZERO;
    let mut rest = s;
    while !rest.is_empty() {
        let num_end = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .ok_or_else(bad)?;
        if num_end == 0 {
            return Err(bad());
        }
        let value: f64 = rest[..num_end].parse().map_err(|_| bad())?;
        rest = &rest[num_end..];
        let unit_end = rest
            .find(|c: char| c.is_ascii_digit() || c == '.')
            .unwrap_or(rest.len());
        let unit_secs = match &rest[..unit_end] {
            "ns" => 1e-9,
            "us" | "µs" => 1e-6,
            "ms" => 1e-3,
            "s" => 1.0,
            "m" => 60.0,
            "h" => 3600.0,
            _ => return Err(bad()),
        };
        rest = &rest[unit_end..];
        let part = Duration::try_from_secs_f64(value * unit_secs).map_err(|_| bad())?;
        total = total.checked_add(part).ok_or_else(bad)?;
    }
    Ok(total)
}

/// Formats a duration the way [`parse_duration`] reads it back (`1m30s`, `250ms`, `10s`).
pub fn format_duration(d: Duration) -> String {
    let ms = d.as_millis();
    if ms == 0 && !d.is_zero() {
        return format!("{}us", d.as_micros());
    }
    if !ms.is_multiple_of(1000) {
        return format!("{ms}ms");
    }
    let secs = d.as_secs();
    let (h, m, s) = (secs / 3600, secs / 60 % 60, secs % 60);
    let mut out = String::new();
    if h > 0 {
        out += &format!("{h}h");
    }
    if m > 0 {
        out += &format!("{m}m");
    }
    if s > 0 || out.is_empty() {
        out += &format!("{s}s");
    }
    out
}

/// Parses `Name: value` (curl and wrk form). The name must be an HTTP token.
pub fn parse_header(text: &str) -> Result<(String, String), PlanError> {
    const FORM: &str = "'Name: value' with a token name (letters, digits, !#$%&'*+-.^_`|~)";
    let (name, value) = text
        .split_once(':')
        .ok_or_else(|| PlanError::invalid("--header", text, FORM))?;
    let name = name.trim();
    let is_token = !name.is_empty()
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b));
    let value = value.trim();
    if !is_token || value.bytes().any(|b| b == b'\r' || b == b'\n' || b == 0) {
        return Err(PlanError::invalid("--header", text, FORM));
    }
    Ok((name.to_string(), value.to_string()))
}

/// Masks, in a plan file's text, the values of keys that name secrets (`Authorization: ...`,
/// `X-Api-Key: ...`), in block (`key: value`) and flow (`{key: value, ...}`) style, so the
/// plan can be quoted in a report without its credentials.
pub fn redact_plan_text(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for line in text.split_inclusive('\n') {
        let mut result = String::new();
        // Split on the separators of flow mappings; each piece may be `key: value`.
        let mut rest = line;
        while !rest.is_empty() {
            let end = rest.find([',', '{', '}']).map_or(rest.len(), |i| i + 1);
            let (piece, tail) = rest.split_at(end);
            let (body, sep) = match piece.char_indices().last() {
                Some((i, ',' | '{' | '}')) => piece.split_at(i),
                _ => (piece, ""),
            };
            match body.split_once(':') {
                Some((key, value))
                    if redact_header_value(
                        key.trim()
                            .trim_start_matches("- ")
                            .trim_matches(['"', '\'']),
                        "x",
                    ) != "x"
                        && !value.trim().is_empty() =>
                {
                    let newline = if value.ends_with('\n') { "\n" } else { "" };
                    result.push_str(key);
                    result.push_str(": <redacted>");
                    result.push_str(newline);
                }
                _ => result.push_str(body),
            }
            result.push_str(sep);
            rest = tail;
        }
        out.push_str(&result);
    }
    out
}

/// Masks the value of a header that carries a secret (credentials, cookies, keys, tokens).
pub fn redact_header_value(name: &str, value: &str) -> String {
    let lower = name.to_ascii_lowercase();
    let sensitive = matches!(
        lower.as_str(),
        "authorization" | "proxy-authorization" | "cookie" | "set-cookie"
    ) || ["key", "token", "secret", "password"]
        .iter()
        .any(|w| lower.contains(w));
    if sensitive {
        "<redacted>".to_string()
    } else {
        value.to_string()
    }
}

/// `%XX` escapes decoded (a `%` not followed by two hex digits stays as it is); bytes that do
/// not make UTF-8 become U+FFFD. For URL parts: a proxy's user and password, a path's
/// placeholders.
pub fn percent_decode(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = |b: Option<&u8>| b.and_then(|&b| (b as char).to_digit(16));
        match (bytes[i], hex(bytes.get(i + 1)), hex(bytes.get(i + 2))) {
            (b'%', Some(h), Some(l)) => {
                out.push((h * 16 + l) as u8);
                i += 3;
            }
            (b, _, _) => {
                out.push(b);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations() {
        let ok = [
            ("30s", 30_000),
            ("2m", 120_000),
            ("1h", 3_600_000),
            ("1m30s", 90_000),
            ("500ms", 500),
            ("1.5s", 1_500),
            ("10", 10_000),
            ("0", 0),
        ];
        for (text, ms) in ok {
            assert_eq!(parse_duration(text).unwrap().as_millis(), ms, "{text}");
        }
        // The last one was found by fuzzing: it overflowed when adding.
        for bad in [
            "",
            "s",
            "10x",
            "-1s",
            "1s-",
            "abc",
            "1..2s",
            "-5",
            "10000000000000000000s10000000000000000000s",
        ] {
            let err = parse_duration(bad).unwrap_err().to_string();
            assert!(err.contains("expected a duration"), "{bad}: {err}");
        }
    }

    #[test]
    fn durations_round_trip_through_text() {
        for ms in [250u64, 1_000, 90_000, 3_723_000, 10] {
            let d = Duration::from_millis(ms);
            assert_eq!(parse_duration(&format_duration(d)).unwrap(), d);
        }
        assert_eq!(format_duration(Duration::from_secs(90)), "1m30s");
    }

    #[test]
    fn headers() {
        assert_eq!(
            parse_header("Client-Id: abc: d ").unwrap(),
            ("Client-Id".into(), "abc: d".into())
        );
        for bad in ["NoColon", ": v", "Bad Name: v", "X: a\r\nInjected: 1"] {
            assert!(parse_header(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn plan_text_redaction() {
        let text = "request:\n  headers:\n    Authorization: Bearer s3cret\n    Client-Id: bench\ntargets:\n  a: {url: 'http://h/', headers: {X-Api-Key: k3y, Accept: json}}\n";
        let r = redact_plan_text(text);
        assert!(!r.contains("s3cret") && !r.contains("k3y"), "{r}");
        assert!(
            r.contains("Client-Id: bench")
                && r.contains("Accept: json")
                && r.contains("url: 'http://h/'"),
            "{r}"
        );
        assert!(r.contains("Authorization: <redacted>\n"), "{r}");
        assert_eq!(r.lines().count(), text.lines().count());
    }

    #[test]
    fn redaction() {
        assert_eq!(
            redact_header_value("Authorization", "Bearer x"),
            "<redacted>"
        );
        assert_eq!(redact_header_value("X-Api-Key", "k"), "<redacted>");
        assert_eq!(redact_header_value("X-Auth-Token", "t"), "<redacted>");
        assert_eq!(redact_header_value("Client-Id", "c"), "c");
    }

    #[test]
    fn escapes_decode_and_stray_percents_stay() {
        assert_eq!(percent_decode("p%40ss%3Aw%2fd"), "p@ss:w/d");
        assert_eq!(percent_decode("100%"), "100%");
        assert_eq!(percent_decode("%4"), "%4");
        assert_eq!(percent_decode("%zz%41"), "%zzA");
        assert_eq!(percent_decode("%C3%A9"), "é");
        assert_eq!(percent_decode("%FF"), "\u{FFFD}");
    }
}

//! Values a later request reuses from an earlier response (tokens, ids, CSRF fields,
//! cookies): found in responses, looked for in later requests, and turned into an
//! extraction and `{{var}}`. Shared by the HAR and Postman importers.

use serde_json::Value;

use crate::pointer_token;

/// A value a response carried, and how a plan extracts it.
#[derive(Debug, Clone, PartialEq)]
pub struct Candidate {
    pub value: String,
    /// `json /token`, `cookie session`, `header Location`, `regex ...`.
    pub extract: String,
    /// A variable name suggested by where it was found (`token`, `items_id`).
    pub hint: String,
    /// A number: matched only as a whole path segment, query value or JSON value.
    pub numeric: bool,
}

/// Whether a string is distinctive enough to be a reused value rather than a word that
/// happens to recur: tokens and ids have digits or length.
fn distinctive(s: &str) -> bool {
    (s.len() >= 6 && s.chars().any(|c| c.is_ascii_digit())) || s.len() >= 20
}

/// The leaves of a JSON response that could be reused, in document order.
pub fn json_candidates(body: &Value) -> Vec<Candidate> {
    let mut out = Vec::new();
    walk(body, String::new(), &mut Vec::new(), &mut out);
    out
}

fn walk(v: &Value, pointer: String, keys: &mut Vec<String>, out: &mut Vec<Candidate>) {
    match v {
        Value::Object(m) => {
            for (k, child) in m {
                keys.push(k.clone());
                walk(child, format!("{pointer}/{}", pointer_token(k)), keys, out);
                keys.pop();
            }
        }
        Value::Array(a) => {
            for (i, child) in a.iter().enumerate() {
                walk(child, format!("{pointer}/{i}"), keys, out);
            }
        }
        Value::String(s) if distinctive(s) => out.push(Candidate {
            value: s.clone(),
            extract: format!("json {pointer}"),
            hint: hint(keys),
            numeric: false,
        }),
        Value::Number(n) if n.is_u64() || n.is_i64() => out.push(Candidate {
            value: n.to_string(),
            extract: format!("json {pointer}"),
            hint: hint(keys),
            numeric: true,
        }),
        _ => {}
    }
}

/// A name from the keys leading to a value: the last, with its parent's when it says
/// little on its own (`items` + `id` → `items_id`).
fn hint(keys: &[String]) -> String {
    let last = keys.last().map(String::as_str).unwrap_or("value");
    let generic = matches!(last, "id" | "value" | "key" | "uuid" | "name" | "data");
    let name = match keys.len() {
        n if generic && n >= 2 => format!("{}_{last}", keys[n - 2]),
        _ => last.to_string(),
    };
    var_name(&name)
}

/// A valid variable name: letters, digits and `_`, not starting with a digit.
pub fn var_name(text: &str) -> String {
    let mut s: String = text
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() {
                c.to_ascii_lowercase()
            } else {
                '_'
            }
        })
        .collect();
    if s.is_empty() || s.starts_with(|c: char| c.is_ascii_digit()) {
        s.insert(0, 'v');
    }
    // Names the templates reserve.
    if matches!(
        s.as_str(),
        "seq" | "segment" | "csv" | "rand_int" | "rand_f"
    ) {
        s.push_str("_value");
    }
    s
}

/// Hidden form fields in an HTML response (CSRF tokens): `name="X" value="V"`.
pub fn html_candidates(html: &str) -> Vec<Candidate> {
    let mut out = Vec::new();
    for tag in html.split('<').filter(|t| t.starts_with("input")) {
        let attr = |name: &str| {
            let key = format!("{name}=\"");
            let start = tag.find(&key)? + key.len();
            let end = tag[start..].find('"')?;
            Some(tag[start..start + end].to_string())
        };
        if let (Some(name), Some(value)) = (attr("name"), attr("value")) {
            if distinctive(&value) && tag.contains("hidden") {
                out.push(Candidate {
                    extract: format!(
                        "regex name=\"{}\"[^>]*value=\"([^\"]*)\"",
                        regex_escape(&name)
                    ),
                    hint: var_name(&name),
                    value,
                    numeric: false,
                });
            }
        }
    }
    out
}

fn regex_escape(s: &str) -> String {
    s.chars()
        .flat_map(|c| {
            let special = "\\.+*?()|[]{}^$".contains(c);
            special
                .then_some('\\')
                .into_iter()
                .chain(std::iter::once(c))
        })
        .collect()
}

/// Replaces each occurrence of `value` in `text` that stands on its own (no letter, digit,
/// `-`, `_` or `.` right before or after it) by `with`; how many were replaced.
pub fn replace_bounded(text: &str, value: &str, with: &str) -> (String, usize) {
    if value.is_empty() {
        return (text.to_string(), 0);
    }
    let word = |c: Option<char>| c.is_some_and(|c| c.is_ascii_alphanumeric() || "-_.".contains(c));
    let mut out = String::with_capacity(text.len());
    let mut n = 0;
    let mut rest = text;
    while let Some(at) = rest.find(value) {
        let before = if at > 0 {
            rest[..at].chars().last()
        } else {
            out.chars().last()
        };
        let after = rest[at + value.len()..].chars().next();
        out.push_str(&rest[..at]);
        if word(before) || word(after) {
            out.push_str(value);
        } else {
            out.push_str(with);
            n += 1;
        }
        rest = &rest[at + value.len()..];
    }
    out.push_str(rest);
    (out, n)
}

/// Milliseconds since 1970 of an RFC 3339 time (`2024-05-01T10:00:00.123Z`,
/// `...+02:00`); HAR's `startedDateTime`.
pub fn rfc3339_millis(text: &str) -> Option<f64> {
    let b = text.as_bytes();
    let num = |r: std::ops::Range<usize>| -> Option<i64> { text.get(r)?.parse().ok() };
    if b.len() < 19 || b[4] != b'-' || b[10] != b'T' {
        return None;
    }
    let (y, mo, d) = (num(0..4)?, num(5..7)?, num(8..10)?);
    let (h, mi, s) = (num(11..13)?, num(14..16)?, num(17..19)?);
    let mut i = 19;
    let mut frac = 0.0;
    if b.get(i) == Some(&b'.') {
        let start = i + 1;
        i = start;
        while b.get(i).is_some_and(u8::is_ascii_digit) {
            i += 1;
        }
        frac = format!("0.{}", &text[start..i]).parse().ok()?;
    }
    let offset_min = match b.get(i) {
        Some(b'Z') | Some(b'z') | None => 0,
        Some(sign @ (b'+' | b'-')) => {
            let m = num(i + 1..i + 3)? * 60 + num(i + 4..i + 6)?;
            if *sign == b'+' {
                m
            } else {
                -m
            }
        }
        _ => return None,
    };
    // Days from civil (Howard Hinnant's algorithm).
    let y2 = if mo <= 2 { y - 1 } else { y };
    let era = y2.div_euclid(400);
    let yoe = y2 - era * 400;
    let mp = (mo + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = era * 146_097 + doe - 719_468;
    let secs = days * 86_400 + h * 3600 + mi * 60 + s - offset_min * 60;
    Some(secs as f64 * 1000.0 + frac * 1000.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_leaves_worth_reusing_are_found_with_their_pointer_and_a_name() {
        let v: Value = serde_json::from_str(
            r#"{"token":"616c6963.4de67bdc","items":[{"id":7,"name":"x"}],"ok":true}"#,
        )
        .unwrap();
        let c = json_candidates(&v);
        let token = c.iter().find(|c| c.hint == "token").unwrap();
        assert_eq!(token.extract, "json /token");
        let id = c.iter().find(|c| c.hint == "items_id").unwrap();
        assert_eq!(
            (id.value.as_str(), id.extract.as_str()),
            ("7", "json /items/0/id")
        );
        assert!(id.numeric);
        assert_eq!(
            c.len(),
            2,
            "short words and booleans are not values to reuse"
        );
    }

    #[test]
    fn only_values_standing_on_their_own_are_replaced() {
        assert_eq!(
            replace_bounded("/items/4", "4", "{{id}}"),
            ("/items/{{id}}".into(), 1)
        );
        assert_eq!(
            replace_bounded("/v4/items/14", "4", "X"),
            ("/v4/items/14".into(), 0)
        );
        assert_eq!(
            replace_bounded("Bearer ab.12; x=ab.12", "ab.12", "{{t}}"),
            ("Bearer {{t}}; x={{t}}".into(), 2)
        );
    }

    #[test]
    fn hidden_fields_become_regex_extractions() {
        let c = html_candidates(
            r#"<form><input type="hidden" name="csrf_token" value="a1b2c3d4e5"></form>"#,
        );
        assert_eq!(c[0].value, "a1b2c3d4e5");
        assert_eq!(
            c[0].extract,
            r#"regex name="csrf_token"[^>]*value="([^"]*)""#
        );
    }

    #[test]
    fn rfc3339_times_of_browsers_and_proxies_read_alike() {
        let a = rfc3339_millis("2026-11-27T23:33:11.131Z").unwrap();
        let b = rfc3339_millis("2026-11-28T00:33:11.131000+01:00").unwrap();
        assert!((a - b).abs() < 1e-6);
        assert_eq!(rfc3339_millis("1970-01-01T00:00:01Z"), Some(1000.0));
        assert_eq!(rfc3339_millis("yesterday"), None);
    }
}

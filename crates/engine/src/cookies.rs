//! A virtual user's cookie jar (a scenario plan's `load.cookies: true`, issue 17).
//!
//! Deliberately small: a scenario talks to one target, so a cookie's `Path`, `Domain`,
//! `Secure` and `SameSite` change nothing and are ignored. What matters for a journey is
//! that a cookie set by one step is sent by the next, replaced when set again, and gone
//! once the server deletes it (`Max-Age=0`, or an `Expires` in the past; RFC 6265 §5.3:
//! `Max-Age` wins over `Expires`). A later expiry is not tracked: load-test sessions end
//! long before the cookies a server hands out.

use std::time::{SystemTime, UNIX_EPOCH};

#[derive(Debug, Default)]
pub(crate) struct Jar {
    /// Name and value, in the order first set (the order they are sent).
    cookies: Vec<(String, String)>,
}

impl Jar {
    /// Applies one `Set-Cookie` value; malformed ones (no `name=`) are ignored, as browsers
    /// do, and so are values with control characters (they would break the request head).
    pub(crate) fn store(&mut self, set_cookie: &[u8], now: SystemTime) {
        let Ok(text) = std::str::from_utf8(set_cookie) else {
            return;
        };
        let mut parts = text.split(';');
        let Some((name, value)) = parts.next().and_then(|p| p.split_once('=')) else {
            return;
        };
        let (name, value) = (name.trim(), value.trim());
        let token = |s: &str| !s.bytes().any(|b| b < 0x21 || b == 0x7f || b == b';');
        if name.is_empty() || !token(name) || value.bytes().any(|b| b < 0x20 || b == 0x7f) {
            return;
        }
        let (mut max_age, mut expires) = (None, None);
        for attr in parts {
            let (key, val) = attr.split_once('=').unwrap_or((attr, ""));
            match key.trim().to_ascii_lowercase().as_str() {
                "max-age" => max_age = val.trim().parse::<i64>().ok(),
                "expires" => expires = parse_http_date(val.trim()),
                _ => {}
            }
        }
        let deleted = match (max_age, expires) {
            (Some(age), _) => age <= 0,
            (None, Some(at)) => at <= now,
            (None, None) => false,
        };
        let slot = self.cookies.iter().position(|(n, _)| n == name);
        match (slot, deleted) {
            (Some(i), true) => {
                self.cookies.remove(i);
            }
            (Some(i), false) => value.clone_into(&mut self.cookies[i].1),
            (None, false) => self.cookies.push((name.to_string(), value.to_string())),
            (None, true) => {}
        }
    }

    /// Appends `Cookie: a=1; b=2\r\n` when the jar holds any.
    pub(crate) fn write_header(&self, out: &mut Vec<u8>) {
        if self.cookies.is_empty() {
            return;
        }
        out.extend_from_slice(b"Cookie: ");
        for (i, (name, value)) in self.cookies.iter().enumerate() {
            if i > 0 {
                out.extend_from_slice(b"; ");
            }
            out.extend_from_slice(name.as_bytes());
            out.push(b'=');
            out.extend_from_slice(value.as_bytes());
        }
        out.extend_from_slice(b"\r\n");
    }
}

/// The IMF-fixdate of RFC 9110 (`Thu, 01 Jan 1970 00:00:00 GMT`), also without the weekday
/// or with dashes (`01-Jan-1970`), which is how servers write deletion dates.
fn parse_http_date(text: &str) -> Option<SystemTime> {
    let text = text.split_once(',').map_or(text, |(_, rest)| rest).trim();
    let mut words = text.split([' ', '-']).filter(|w| !w.is_empty());
    let day: u64 = words.next()?.parse().ok()?;
    let month = words.next()?.to_ascii_lowercase();
    let month = [
        "jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec",
    ]
    .iter()
    .position(|m| month.starts_with(m))? as u64;
    let mut year: u64 = words.next()?.parse().ok()?;
    if year < 100 {
        year += if year < 70 { 2000 } else { 1900 };
    }
    let mut hms = words.next()?.split(':').map(|p| p.parse::<u64>().ok());
    let (h, m, s) = (hms.next()??, hms.next()??, hms.next()??);
    if !(1970..=9999).contains(&year) || day == 0 || day > 31 {
        return None;
    }
    // Days from the epoch to the first of the month (the civil-from-days inverse).
    let leap = |y: u64| (y.is_multiple_of(4) && !y.is_multiple_of(100)) || y.is_multiple_of(400);
    let mut days: u64 = (1970..year).map(|y| 365 + u64::from(leap(y))).sum();
    const BEFORE: [u64; 12] = [0, 31, 59, 90, 120, 151, 181, 212, 243, 273, 304, 334];
    days += BEFORE[month as usize] + u64::from(month >= 2 && leap(year)) + day - 1;
    Some(UNIX_EPOCH + std::time::Duration::from_secs(days * 86_400 + h * 3600 + m * 60 + s))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn header(jar: &Jar) -> String {
        let mut out = Vec::new();
        jar.write_header(&mut out);
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn cookies_are_set_replaced_and_deleted() {
        let now = UNIX_EPOCH + Duration::from_secs(1_700_000_000);
        let mut jar = Jar::default();
        assert_eq!(header(&jar), "");
        jar.store(b"session=abc; Path=/; HttpOnly", now);
        jar.store(b"theme=dark", now);
        assert_eq!(header(&jar), "Cookie: session=abc; theme=dark\r\n");
        jar.store(b"session=def; Max-Age=3600", now);
        assert_eq!(header(&jar), "Cookie: session=def; theme=dark\r\n");
        jar.store(b"session=; Max-Age=0", now);
        assert_eq!(header(&jar), "Cookie: theme=dark\r\n");
        jar.store(b"theme=x; Expires=Thu, 01 Jan 1970 00:00:00 GMT", now);
        assert_eq!(header(&jar), "");
        // Max-Age wins over Expires; a future date keeps the cookie.
        jar.store(
            b"a=1; Expires=Thu, 01 Jan 1970 00:00:00 GMT; Max-Age=60",
            now,
        );
        jar.store(b"b=2; expires=Wed, 01-Jan-2070 00:00:00 GMT", now);
        assert_eq!(header(&jar), "Cookie: a=1; b=2\r\n");
        for bad in [&b"novalue"[..], b"=x", b"a b=1", b"c=1\r\nX-Evil: 1"] {
            jar.store(bad, now);
        }
        assert_eq!(header(&jar), "Cookie: a=1; b=2\r\n");
    }

    #[test]
    fn http_dates_parse() {
        let at = |t: &str| {
            parse_http_date(t)
                .unwrap()
                .duration_since(UNIX_EPOCH)
                .unwrap()
                .as_secs()
        };
        assert_eq!(at("Thu, 01 Jan 1970 00:00:00 GMT"), 0);
        assert_eq!(at("Sun, 06 Nov 1994 08:49:37 GMT"), 784_111_777);
        assert_eq!(at("Tue, 29 Feb 2000 12:00:00 GMT"), 951_825_600);
        assert_eq!(at("Sunday, 06-Nov-94 08:49:37 GMT"), 784_111_777);
        assert!(parse_http_date("soon").is_none());
    }
}

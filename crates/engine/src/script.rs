//! Hooks for request scripts (wrk's Lua `request()`, `response()`, `delay()`): the engine
//! knows only these traits; the Lua side lives in the `loadmark-script` crate, so the engine
//! has no interpreter in it. A worker with no script, or a script without `request()`, sends
//! the request encoded once, exactly as without scripts.

use std::borrow::Cow;
use std::sync::Arc;
use std::time::Duration;

/// One worker's script: called only from that worker's thread.
pub trait WorkerScript: Send {
    /// True when the script makes every request (`request()` defined); false: the plan's
    /// request, encoded once, is sent and this script only sees responses or delays.
    fn dynamic(&self) -> bool;
    /// Writes the next request bytes into `out` (cleared first); returns how many HTTP
    /// requests they hold (more than one: pipelined). An error is the request's outcome,
    /// counted under the `script` error kind with the script's message.
    fn request(&mut self, out: &mut Vec<u8>) -> Result<u32, String>;
    /// True when responses must be handed over (`response()` defined); only then are their
    /// headers and bodies kept.
    fn wants_response(&self) -> bool;
    /// One response, head parsed, body de-chunked.
    fn response(
        &mut self,
        status: u16,
        headers: &[(&str, &str)],
        body: &[u8],
    ) -> Result<(), String>;
    /// How long to wait before the next request on a connection (`delay()`), if at all.
    fn delay(&mut self) -> Result<Option<Duration>, String>;
    /// The script asked its thread to stop (`wrk.thread:stop()`).
    fn stopped(&self) -> bool;
}

/// Makes each worker's script; handed to the engine in [`crate::Part::script`].
pub trait ScriptFactory: Send + Sync + std::fmt::Debug {
    fn worker(&self, index: usize) -> Box<dyn WorkerScript>;
}

/// A shared factory, as [`crate::Part`] keeps it.
pub type Scripts = Arc<dyn ScriptFactory>;

/// A response as a script sees it: status, headers as received, body de-chunked.
pub type SplitResponse<'a> = (u16, Vec<(&'a str, &'a str)>, Cow<'a, [u8]>);

/// Splits one whole response (as read) into status, headers and body; a chunked body is
/// de-chunked. The bytes were already accepted by the engine's parser, so this only slices.
pub fn split_response(bytes: &[u8]) -> SplitResponse<'_> {
    let mut rest = bytes;
    // Interim (1xx) heads come first; the final head is the last one before the body.
    loop {
        let Some(end) = find(rest, b"\r\n\r\n") else {
            return (0, Vec::new(), Cow::Borrowed(&[]));
        };
        let head = std::str::from_utf8(&rest[..end]).unwrap_or("");
        let body = &rest[end + 4..];
        let mut lines = head.split("\r\n");
        let status: u16 = lines
            .next()
            .and_then(|l| l.split(' ').nth(1))
            .and_then(|s| s.parse().ok())
            .unwrap_or(0);
        if (100..200).contains(&status) && status != 101 {
            rest = body;
            continue;
        }
        let headers: Vec<(&str, &str)> = lines
            .filter_map(|l| l.split_once(':'))
            .map(|(n, v)| (n.trim(), v.trim()))
            .collect();
        let chunked = headers.iter().any(|(n, v)| {
            n.eq_ignore_ascii_case("transfer-encoding")
                && v.to_ascii_lowercase().contains("chunked")
        });
        let body = if chunked {
            Cow::Owned(dechunk(body))
        } else {
            Cow::Borrowed(body)
        };
        return (status, headers, body);
    }
}

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

fn dechunk(mut rest: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    while let Some(eol) = find(rest, b"\r\n") {
        let line = std::str::from_utf8(&rest[..eol]).unwrap_or("0");
        let size =
            usize::from_str_radix(line.split(';').next().unwrap_or("0").trim(), 16).unwrap_or(0);
        rest = &rest[eol + 2..];
        if size == 0 || size > rest.len() {
            break;
        }
        out.extend_from_slice(&rest[..size]);
        rest = rest.get(size + 2..).unwrap_or(&[]);
    }
    out
}

/// How many whole HTTP/1.1 requests `bytes` hold, or what is wrong at which line and column
/// (1-based) of the bytes.
pub fn count_requests(bytes: &[u8]) -> Result<u32, String> {
    each_request(bytes, |_| {})
}

/// Where the last whole HTTP/1.1 request of `bytes` starts (0 for a single request): the
/// request of a pipelined batch after which the connection may be closed.
pub(crate) fn last_request_start(bytes: &[u8]) -> usize {
    let mut last = 0;
    let _ = each_request(bytes, |start| last = start);
    last
}

/// Walks the whole requests of `bytes`, handing `at_start` each one's offset; as
/// [`count_requests`], returns how many there are or what is wrong where.
pub(crate) fn each_request(bytes: &[u8], mut at_start: impl FnMut(usize)) -> Result<u32, String> {
    let mut rest = bytes;
    let mut count = 0u32;
    while !rest.is_empty() {
        at_start(bytes.len() - rest.len());
        let mut headers = [httparse::EMPTY_HEADER; 128];
        let mut req = httparse::Request::new(&mut headers);
        let at = |rest: &[u8]| position(bytes, bytes.len() - rest.len());
        let head = match req.parse(rest) {
            Ok(httparse::Status::Complete(n)) => n,
            Ok(httparse::Status::Partial) => {
                return Err(format!("incomplete request at {}", at(rest)))
            }
            Err(e) => return Err(format!("{e} at {}", at(rest))),
        };
        let length = req
            .headers
            .iter()
            .find(|h| h.name.eq_ignore_ascii_case("content-length"))
            .and_then(|h| {
                std::str::from_utf8(h.value)
                    .ok()?
                    .trim()
                    .parse::<usize>()
                    .ok()
            })
            .unwrap_or(0);
        if rest.len() < head + length {
            return Err(format!(
                "incomplete request at {}: Content-Length {length} but {} body bytes",
                at(rest),
                rest.len() - head
            ));
        }
        rest = &rest[head + length..];
        count += 1;
    }
    if count == 0 {
        return Err("empty request".into());
    }
    Ok(count)
}

fn position(bytes: &[u8], offset: usize) -> String {
    let before = &bytes[..offset];
    let line = before.iter().filter(|&&b| b == b'\n').count() + 1;
    let column = offset
        - before
            .iter()
            .rposition(|&b| b == b'\n')
            .map_or(0, |i| i + 1)
        + 1;
    format!("{line}:{column}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_pipelined_requests_and_names_the_bad_spot() {
        let two =
            b"GET /a HTTP/1.1\r\nHost: h\r\n\r\nPOST /b HTTP/1.1\r\nContent-Length: 2\r\n\r\nhi";
        assert_eq!(count_requests(two), Ok(2));
        let bad =
            count_requests(b"GET /a HTTP/1.1\r\nHost: h\r\n\r\nnot http\r\n\r\n").unwrap_err();
        assert!(bad.contains("at 4:1"), "{bad}");
        assert!(count_requests(b"").is_err());
        assert_eq!(last_request_start(two), 28);
        assert_eq!(last_request_start(b"GET /a HTTP/1.1\r\n\r\n"), 0);
    }

    #[test]
    fn splits_a_chunked_response() {
        let r = b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nX-A: b\r\n\r\n3\r\nabc\r\n2\r\nde\r\n0\r\n\r\n";
        let (status, headers, body) = split_response(r);
        assert_eq!(status, 200);
        assert_eq!(headers[1], ("X-A", "b"));
        assert_eq!(&body[..], b"abcde");
    }
}

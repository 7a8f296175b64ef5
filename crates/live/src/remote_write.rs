//! [`RemoteWriter`]: pushes the exposition to a Prometheus remote-write receiver
//! (`--remote-write URL`), once per tick, from its own thread.
//!
//! The samples are exactly the exposition's (the same families, labels, values and
//! timestamps: it is rendered and read back), so a pushed run and a scraped run store the same
//! series. Gauges, which the exposition leaves untimed, get the time of the tick. The wire
//! format is remote-write 1.0: a protobuf `WriteRequest`, snappy-compressed (block format),
//! POSTed over HTTP/1.1. Both are written here (a few dozen lines each) rather than pulled in.
//!
//! A slow or absent receiver never holds the run: ticks queue to the thread, which sends only
//! the newest (each holds every counter whole, so skipping one loses only gauge points), and
//! the end waits for the last delivery at most as long as the metrics linger.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream, ToSocketAddrs};
use std::sync::mpsc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use loadmark_plan::Plan;

use crate::openmetrics::{render, Format, Labels, StepState};
use crate::{LiveError, Tick};

/// How long one delivery may take to connect, send and be answered.
const IO_TIMEOUT: Duration = Duration::from_secs(5);

/// What the sending thread did, told at the end.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Delivered {
    /// Requests the receiver accepted (2xx).
    pub accepted: u64,
    /// Requests that failed (no connection, timeout, or a non-2xx answer).
    pub failed: u64,
    /// The last failure, as said by the receiver or the socket.
    pub last_error: Option<String>,
}

/// A remote-write client for the life of the process (every plan step of `bench` in turn).
pub struct RemoteWriter {
    steps: Vec<StepState>,
    tx: Option<mpsc::Sender<(String, i64)>>,
    done: mpsc::Receiver<Delivered>,
    /// The time given to the gauges of the last push, ms.
    last_ms: i64,
}

impl RemoteWriter {
    /// Checks `url` (`http://HOST[:PORT]/PATH`) and resolves it now, so a bad URL is a usage
    /// error before any load; starts the sending thread.
    pub fn new(url: &str) -> Result<RemoteWriter, LiveError> {
        let bad = |why: String| LiveError::RemoteWrite {
            url: url.to_string(),
            why,
        };
        let rest = url.strip_prefix("http://").ok_or_else(|| {
            bad("expected http://HOST[:PORT]/PATH (https is not supported: put the receiver's plain-HTTP address, e.g. http://127.0.0.1:9090/api/v1/write)".into())
        })?;
        let (authority, path) = match rest.find('/') {
            Some(i) => (&rest[..i], &rest[i..]),
            None => (rest, "/"),
        };
        let with_port = if authority.rsplit(':').next().is_some_and(|p| {
            !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()) && authority.contains(':')
        }) && !authority.ends_with(']')
        {
            authority.to_string()
        } else {
            format!("{authority}:80")
        };
        let addr: SocketAddr = with_port
            .to_socket_addrs()
            .map_err(|e| bad(format!("cannot resolve {authority}: {e}")))?
            .next()
            .ok_or_else(|| bad(format!("{authority} resolves to no address")))?;
        let (tx, rx) = mpsc::channel::<(String, i64)>();
        let (done_tx, done) = mpsc::channel();
        let host = authority.to_string();
        let path = path.to_string();
        std::thread::Builder::new()
            .name("loadmark-remote-write".into())
            .spawn(move || {
                let mut delivered = Delivered::default();
                while let Ok(mut batch) = rx.recv() {
                    // Only the newest matters: it holds every counter whole.
                    while let Ok(newer) = rx.try_recv() {
                        batch = newer;
                    }
                    let body = snappy_compress(&encode_write_request(&parse(&batch.0, batch.1)));
                    match post(addr, &host, &path, &body) {
                        Ok(()) => delivered.accepted += 1,
                        Err(e) => {
                            delivered.failed += 1;
                            delivered.last_error = Some(e);
                        }
                    }
                }
                let _ = done_tx.send(delivered);
            })
            .map_err(|e| bad(format!("cannot start its thread: {e}")))?;
        Ok(RemoteWriter {
            steps: Vec::new(),
            tx: Some(tx),
            done,
            last_ms: 0,
        })
    }

    /// Starts pushing a run (a plan step); earlier steps are pushed on with their final values.
    pub fn begin(&mut self, labels: Labels, plan: &Plan) {
        self.steps.retain(|s| s.labels() != &labels);
        self.steps.push(StepState::new(labels, plan));
    }

    /// Adds a tick to the current step and queues a push of everything.
    pub fn tick(&mut self, tick: &Tick) {
        if let Some(step) = self.steps.last_mut() {
            step.tick(tick);
        }
        // Strictly later than the last push: the run's last two ticks can come within a
        // millisecond, and Prometheus refuses a second value at the same time
        // ("duplicate sample for timestamp").
        let now_ms = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_millis() as i64)
            .max(self.last_ms + 1);
        self.last_ms = now_ms;
        if let Some(tx) = &self.tx {
            let _ = tx.send((render(&self.steps, Format::Text), now_ms));
        }
    }

    /// Sends what is queued and waits for it, at most `max`; `None` if it did not finish.
    pub fn finish(&mut self, max: Duration) -> Option<Delivered> {
        self.tx = None;
        self.done.recv_timeout(max).ok()
    }
}

/// One sample of the exposition: labels (`__name__` included, sorted by name as remote write
/// requires), value, time in milliseconds.
#[derive(Debug, Clone, PartialEq)]
struct Series {
    labels: Vec<(String, String)>,
    value: f64,
    ts_ms: i64,
}

/// Reads back the Prometheus text exposition (0.0.4) this crate renders; untimed samples
/// (gauges) get `now_ms`.
fn parse(text: &str, now_ms: i64) -> Vec<Series> {
    let mut out = Vec::new();
    for line in text.lines() {
        if line.starts_with('#') || line.is_empty() {
            continue;
        }
        let (name, mut rest) = match line.find(['{', ' ']) {
            Some(i) => (&line[..i], &line[i..]),
            None => continue,
        };
        let mut labels = vec![("__name__".to_string(), name.to_string())];
        if let Some(inner) = rest.strip_prefix('{') {
            let mut chars = inner.char_indices().peekable();
            let mut end = inner.len();
            // name="value",... with \\, \" and \n escapes in values.
            'labels: while let Some((start, _)) = chars.peek().copied() {
                let Some(eq) = inner[start..].find('=') else {
                    break;
                };
                let lname = inner[start..start + eq].trim_start_matches(',').to_string();
                for _ in 0..=eq + 1 {
                    chars.next(); // past `name="`
                }
                let mut value = String::new();
                while let Some((_, c)) = chars.next() {
                    match c {
                        '\\' => match chars.next() {
                            Some((_, 'n')) => value.push('\n'),
                            Some((_, other)) => value.push(other),
                            None => break 'labels,
                        },
                        '"' => break,
                        c => value.push(c),
                    }
                }
                labels.push((lname, value));
                match chars.next() {
                    Some((i, '}')) => {
                        end = i + 1;
                        break;
                    }
                    Some((_, ',')) => {}
                    _ => break,
                }
            }
            rest = &inner[end..];
        }
        let mut words = rest.split_whitespace();
        let Some(value) = words.next().and_then(|v| v.parse::<f64>().ok()) else {
            continue;
        };
        let ts_ms = words
            .next()
            .and_then(|t| t.parse::<i64>().ok())
            .unwrap_or(now_ms);
        labels.sort_by(|a, b| a.0.cmp(&b.0));
        out.push(Series {
            labels,
            value,
            ts_ms,
        });
    }
    out
}

fn varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

/// A length-delimited protobuf field.
fn field_bytes(out: &mut Vec<u8>, number: u64, bytes: &[u8]) {
    varint(out, number << 3 | 2);
    varint(out, bytes.len() as u64);
    out.extend_from_slice(bytes);
}

/// prometheus.WriteRequest { repeated TimeSeries timeseries = 1; }, TimeSeries { repeated
/// Label labels = 1; repeated Sample samples = 2; }, Label { string name = 1; string value
/// = 2; }, Sample { double value = 1; int64 timestamp = 2; }.
fn encode_write_request(series: &[Series]) -> Vec<u8> {
    let mut out = Vec::with_capacity(series.len() * 96);
    let (mut ts, mut item) = (Vec::new(), Vec::new());
    for s in series {
        ts.clear();
        for (name, value) in &s.labels {
            item.clear();
            field_bytes(&mut item, 1, name.as_bytes());
            field_bytes(&mut item, 2, value.as_bytes());
            field_bytes(&mut ts, 1, &item);
        }
        item.clear();
        item.push(1 << 3 | 1); // field 1, 64-bit
        item.extend_from_slice(&s.value.to_le_bytes());
        item.push(2 << 3); // field 2, varint
        varint(&mut item, s.ts_ms as u64);
        field_bytes(&mut ts, 2, &item);
        field_bytes(&mut out, 1, &ts);
    }
    out
}

/// Snappy's block format (what remote write's `Content-Encoding: snappy` means): greedy
/// matching of 4-byte sequences within 64 KiB, literals and 2-byte-offset copies.
fn snappy_compress(input: &[u8]) -> Vec<u8> {
    fn literal(out: &mut Vec<u8>, bytes: &[u8]) {
        if bytes.is_empty() {
            return;
        }
        let n = bytes.len() - 1;
        if n < 60 {
            out.push((n as u8) << 2);
        } else {
            let len = n.to_le_bytes();
            let width = (usize::BITS - n.leading_zeros()).div_ceil(8) as usize;
            out.push(((59 + width) as u8) << 2);
            out.extend_from_slice(&len[..width]);
        }
        out.extend_from_slice(bytes);
    }
    let mut out = Vec::with_capacity(input.len() / 2 + 16);
    varint(&mut out, input.len() as u64);
    let mut table = vec![0usize; 1 << 14]; // position + 1 of the last 4 bytes hashing here
    let hash = |w: u32| (w.wrapping_mul(0x1E35_A7BD) >> 18) as usize;
    let word = |i: usize| u32::from_le_bytes([input[i], input[i + 1], input[i + 2], input[i + 3]]);
    let (mut i, mut pending) = (0, 0);
    while i + 4 <= input.len() {
        let h = hash(word(i));
        let candidate = std::mem::replace(&mut table[h], i + 1);
        if candidate > 0 && i - (candidate - 1) <= 0xFFFF && word(candidate - 1) == word(i) {
            let from = candidate - 1;
            let mut len = 4;
            while i + len < input.len() && input[from + len] == input[i + len] {
                len += 1;
            }
            literal(&mut out, &input[pending..i]);
            let offset = (i - from) as u16;
            let mut left = len;
            while left > 0 {
                let n = left.min(64);
                out.push(((n - 1) as u8) << 2 | 2);
                out.extend_from_slice(&offset.to_le_bytes());
                left -= n;
            }
            i += len;
            pending = i;
        } else {
            i += 1;
        }
    }
    literal(&mut out, &input[pending..]);
    out
}

/// One POST; Ok on a 2xx answer.
fn post(addr: SocketAddr, host: &str, path: &str, body: &[u8]) -> Result<(), String> {
    let mut s = TcpStream::connect_timeout(&addr, IO_TIMEOUT).map_err(|e| e.to_string())?;
    s.set_read_timeout(Some(IO_TIMEOUT))
        .and_then(|()| s.set_write_timeout(Some(IO_TIMEOUT)))
        .map_err(|e| e.to_string())?;
    let head = format!(
        "POST {path} HTTP/1.1\r\nHost: {host}\r\nUser-Agent: loadmark/{}\r\nContent-Type: application/x-protobuf\r\nContent-Encoding: snappy\r\nX-Prometheus-Remote-Write-Version: 0.1.0\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        env!("CARGO_PKG_VERSION"),
        body.len()
    );
    s.write_all(head.as_bytes())
        .and_then(|()| s.write_all(body))
        .map_err(|e| e.to_string())?;
    let mut answer = Vec::new();
    let _ = s.take(64 * 1024).read_to_end(&mut answer);
    let text = String::from_utf8_lossy(&answer);
    let status = text.get(9..12).and_then(|c| c.parse::<u16>().ok());
    match status {
        Some(200..=299) => Ok(()),
        Some(code) => {
            let said = text.split_once("\r\n\r\n").map_or("", |(_, b)| b.trim());
            Err(format!("HTTP {code}: {said}"))
        }
        None => Err("no HTTP answer".into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A snappy block decoder (the format's definition, for the round trip).
    fn unsnappy(mut b: &[u8]) -> Vec<u8> {
        let (mut len, mut shift) = (0usize, 0);
        loop {
            let byte = b[0];
            b = &b[1..];
            len |= ((byte & 0x7F) as usize) << shift;
            shift += 7;
            if byte < 0x80 {
                break;
            }
        }
        let mut out = Vec::with_capacity(len);
        while !b.is_empty() {
            let tag = b[0];
            b = &b[1..];
            match tag & 3 {
                0 => {
                    let mut n = (tag >> 2) as usize;
                    if n >= 60 {
                        let w = n - 59;
                        let mut bytes = [0u8; 8];
                        bytes[..w].copy_from_slice(&b[..w]);
                        n = usize::from_le_bytes(bytes);
                        b = &b[w..];
                    }
                    out.extend_from_slice(&b[..=n]);
                    b = &b[n + 1..];
                }
                2 => {
                    let n = (tag >> 2) as usize + 1;
                    let offset = u16::from_le_bytes([b[0], b[1]]) as usize;
                    b = &b[2..];
                    for _ in 0..n {
                        out.push(out[out.len() - offset]);
                    }
                }
                other => panic!("tag {other} not written by the compressor"),
            }
        }
        assert_eq!(out.len(), len);
        out
    }

    #[test]
    fn snappy_round_trips_and_compresses_an_exposition() {
        let step = StepState::new(
            Labels {
                run_id: "r".into(),
                step: 1,
                segment: None,
            },
            &crate::openmetrics::tests::plan(),
        );
        let text = render(std::slice::from_ref(&step), Format::Text);
        for input in [
            text.as_bytes().to_vec(),
            Vec::new(),
            b"abc".to_vec(),
            vec![7u8; 100_000],
            (0..70_000u32).map(|i| (i * 7919 % 251) as u8).collect(),
        ] {
            let packed = snappy_compress(&input);
            assert_eq!(unsnappy(&packed), input);
        }
        assert!(snappy_compress(text.as_bytes()).len() < text.len() / 2);
    }

    #[test]
    fn the_exposition_reads_back_as_sorted_series_with_escapes_and_times() {
        let text = "# HELP x y\nloadmark_requests_total{run_id=\"a\\\"b\",step=\"1\"} 42 1700000000123\nloadmark_in_flight{step=\"2\",run_id=\"r\"} 3\n";
        let series = parse(text, 99);
        assert_eq!(
            series,
            vec![
                Series {
                    labels: vec![
                        ("__name__".into(), "loadmark_requests_total".into()),
                        ("run_id".into(), "a\"b".into()),
                        ("step".into(), "1".into()),
                    ],
                    value: 42.0,
                    ts_ms: 1_700_000_000_123,
                },
                Series {
                    labels: vec![
                        ("__name__".into(), "loadmark_in_flight".into()),
                        ("run_id".into(), "r".into()),
                        ("step".into(), "2".into()),
                    ],
                    value: 3.0,
                    ts_ms: 99,
                },
            ]
        );
        // Label { name = 1, value = 2 } inside TimeSeries field 1, inside WriteRequest field 1.
        let pb = encode_write_request(&series[1..]);
        assert_eq!(pb[0], 1 << 3 | 2);
        assert!(pb.windows(18).any(|w| w == b"loadmark_in_flight"));
    }

    #[test]
    fn a_url_that_is_not_plain_http_is_refused_with_the_reason() {
        let Err(e) = RemoteWriter::new("https://127.0.0.1:9090/api/v1/write") else {
            panic!("https accepted");
        };
        assert!(e.to_string().contains("https is not supported"), "{e}");
    }
}

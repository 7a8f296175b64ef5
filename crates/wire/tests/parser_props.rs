//! Property tests of the HTTP/1.1 response parser, on stable Rust in the normal suite:
//!
//! - any bytes, cut into any pieces, never panic and give the same verdict as the bytes fed
//!   whole (the same response, or the same error apart from the quoted excerpt, which can
//!   only quote what had arrived);
//! - valid responses (Content-Length, chunked with random chunking, extensions and trailers,
//!   close-delimited, after interim 1xx heads) parse to their status, keep-alive and exact
//!   byte counts under any split, and leave bytes that follow them untouched.
//!
//! The fuzz targets in `fuzz/` run the first property for much longer.

use loadmark_wire::http1::{Feed, Limits, ParseError, Response, ResponseParser};
use proptest::prelude::*;
use proptest::sample::Index;
use proptest::test_runner::Config;

/// Feeds `input` cut at `cuts` the way a connection does: unconsumed bytes are kept and the
/// next read appended; when the input ends the connection closes. Returns the response and
/// how many bytes followed it.
fn drive(
    limits: Limits,
    head_request: bool,
    input: &[u8],
    cuts: &[usize],
) -> Result<(Response, usize), ParseError> {
    let mut parser = ResponseParser::new(limits);
    parser.reset(head_request);
    let mut bounds: Vec<usize> = cuts.iter().map(|&c| c.min(input.len())).collect();
    bounds.sort_unstable();
    bounds.push(input.len());
    let mut pending = Vec::new();
    let mut start = 0;
    for end in bounds {
        pending.extend_from_slice(&input[start..end]);
        start = end;
        match parser.feed(&pending)? {
            Feed::Done { consumed, response } => {
                assert!(consumed <= pending.len());
                return Ok((response, pending.len() - consumed + (input.len() - start)));
            }
            Feed::NeedMore { consumed } => {
                assert!(consumed <= pending.len());
                pending.drain(..consumed);
            }
        }
    }
    parser.finish_eof().map(|r| (r, 0))
}

/// The verdict without the excerpt an error quotes: a split can only shorten what it quotes.
fn verdict(r: Result<(Response, usize), ParseError>) -> Result<(Response, usize), ParseError> {
    r.map_err(|e| match e {
        ParseError::Malformed { what, .. } => ParseError::Malformed {
            what,
            near: String::new(),
        },
        ParseError::BadChunkSize { .. } => ParseError::BadChunkSize {
            near: String::new(),
        },
        e => e,
    })
}

fn cuts_in(len: usize, cuts: &[Index]) -> Vec<usize> {
    cuts.iter().map(|i| i.index(len + 1)).collect()
}

fn config(cases: u32) -> Config {
    Config {
        cases,
        failure_persistence: None, // failures become explicit tests in parse_tests.rs
        ..Config::default()
    }
}

/// Small limits as well as the defaults, so the limit paths are walked too.
fn limits() -> impl Strategy<Value = Limits> {
    prop_oneof![
        Just(Limits::default()),
        (1usize..200, 1usize..40, 1usize..100).prop_map(|(h, c, t)| Limits {
            max_head_bytes: h,
            max_chunk_line_bytes: c,
            max_trailer_bytes: t,
        }),
    ]
}

/// Bytes that look enough like a response to get past the status line often.
fn response_like() -> impl Strategy<Value = Vec<u8>> {
    let pieces: Vec<&'static [u8]> = vec![
        b"HTTP/1.1 200 OK\r\n",
        b"HTTP/1.0 200 OK\r\n",
        b"HTTP/1.1 100 Continue\r\n\r\n",
        b"HTTP/1.1 204 No Content\r\n",
        b"Content-Length: 5\r\n",
        b"Content-Length: 0\r\n",
        b"Transfer-Encoding: chunked\r\n",
        b"Connection: close\r\n",
        b"Connection: keep-alive\r\n",
        b"\r\n",
        b"\n",
        b"5\r\nhello\r\n",
        b"a;ext=1\r\n0123456789\r\n",
        b"0\r\n",
        b"X-T: v\r\n",
        b"hello",
        b"zz",
        b" ",
        b":",
    ];
    prop::collection::vec(
        prop_oneof![
            prop::sample::select(pieces).prop_map(|p| p.to_vec()),
            prop::collection::vec(any::<u8>(), 0..4),
        ],
        0..24,
    )
    .prop_map(|parts| parts.concat())
}

/// A valid response with a few bytes replaced, inserted or deleted: errors deep in a head,
/// a chunked body or trailers, after many bytes were fine.
fn mutated() -> impl Strategy<Value = Vec<u8>> {
    (
        valid(),
        prop::collection::vec((any::<Index>(), any::<u8>(), 0u8..3), 1..4),
    )
        .prop_map(|(v, edits)| {
            let (mut bytes, _, _) = v.render();
            for (at, byte, op) in edits {
                let i = at.index(bytes.len() + 1);
                match op {
                    0 if i < bytes.len() => bytes[i] = byte,
                    1 if i < bytes.len() => {
                        bytes.remove(i);
                    }
                    _ => bytes.insert(i, byte),
                }
            }
            bytes
        })
}

proptest! {
    #![proptest_config(config(1000))]

    #[test]
    fn any_bytes_any_split_same_verdict_and_no_panic(
        input in prop_oneof![
            prop::collection::vec(any::<u8>(), 0..300),
            response_like(),
            mutated(),
        ],
        cuts in prop::collection::vec(any::<Index>(), 0..6),
        limits in limits(),
        head_request in any::<bool>(),
    ) {
        let whole = verdict(drive(limits, head_request, &input, &[]));
        let split = verdict(drive(limits, head_request, &input, &cuts_in(input.len(), &cuts)));
        prop_assert_eq!(split, whole);
    }
}

/// How a generated valid response delimits its body.
#[derive(Debug, Clone)]
enum Framing {
    Length,
    /// Chunk sizes, whether each size line carries an extension, upper-case hex, leading
    /// zeros, and trailer lines.
    Chunked {
        chunks: Vec<(usize, bool)>,
        upper: bool,
        zeros: usize,
        trailers: Vec<String>,
    },
    Close,
}

#[derive(Debug, Clone)]
struct Valid {
    interim: usize,
    status: u16,
    http10: bool,
    close: bool,
    headers: Vec<(String, String)>,
    framing: Framing,
    body: Vec<u8>,
    /// Bytes after the response (the start of another), for framed bodies.
    after: Vec<u8>,
}

impl Valid {
    /// The bytes, and what the parser must make of them.
    fn render(&self) -> (Vec<u8>, Response, usize) {
        let mut out = Vec::new();
        for _ in 0..self.interim {
            out.extend_from_slice(b"HTTP/1.1 100 Continue\r\n\r\n");
        }
        let version = if self.http10 { "1.0" } else { "1.1" };
        out.extend_from_slice(format!("HTTP/{version} {} Whatever\r\n", self.status).as_bytes());
        for (name, value) in &self.headers {
            out.extend_from_slice(format!("{name}: {value}\r\n").as_bytes());
        }
        let no_body = self.status == 204 || self.status == 304;
        match &self.framing {
            Framing::Length => {
                out.extend_from_slice(format!("Content-Length: {}\r\n", self.body.len()).as_bytes())
            }
            Framing::Chunked { .. } => out.extend_from_slice(b"Transfer-Encoding: chunked\r\n"),
            Framing::Close => {}
        }
        if self.close {
            out.extend_from_slice(b"Connection: close\r\n");
        } else if self.http10 {
            out.extend_from_slice(b"Connection: keep-alive\r\n");
        }
        out.extend_from_slice(b"\r\n");
        let head_bytes = out.len() as u64;
        let body_start = out.len();
        if !no_body {
            match &self.framing {
                Framing::Length | Framing::Close => out.extend_from_slice(&self.body),
                Framing::Chunked {
                    chunks,
                    upper,
                    zeros,
                    trailers,
                } => {
                    let mut rest = &self.body[..];
                    for &(size, ext) in chunks.iter().chain([(usize::MAX, false)].iter()) {
                        let size = size.min(rest.len());
                        if size == 0 {
                            continue; // a zero size would end the body early
                        }
                        let hex = if *upper {
                            format!("{}{size:X}", "0".repeat(*zeros))
                        } else {
                            format!("{}{size:x}", "0".repeat(*zeros))
                        };
                        out.extend_from_slice(hex.as_bytes());
                        if ext {
                            out.extend_from_slice(b";name=\"va;lue\"");
                        }
                        out.extend_from_slice(b"\r\n");
                        out.extend_from_slice(&rest[..size]);
                        out.extend_from_slice(b"\r\n");
                        rest = &rest[size..];
                    }
                    out.extend_from_slice(b"0\r\n");
                    for t in trailers {
                        out.extend_from_slice(format!("{t}\r\n").as_bytes());
                    }
                    out.extend_from_slice(b"\r\n");
                }
            }
        }
        let body_bytes = (out.len() - body_start) as u64;
        let until_close = matches!(self.framing, Framing::Close) && !no_body;
        let keep_alive = !self.close && !until_close;
        let mut after = 0;
        if !until_close {
            out.extend_from_slice(&self.after);
            after = self.after.len();
        }
        let response = Response {
            status: self.status,
            keep_alive,
            head_bytes,
            body_bytes,
        };
        (out, response, after)
    }
}

fn valid() -> impl Strategy<Value = Valid> {
    let token = "[A-Za-z][A-Za-z0-9-]{0,15}";
    let header = (token, "[ -~]{0,30}")
        .prop_filter("framing headers are chosen apart", |(n, _)| {
            let n = n.to_ascii_lowercase();
            n != "content-length" && n != "transfer-encoding" && n != "connection"
        })
        .prop_map(|(n, v)| (n, v.trim().to_string()));
    let framing = prop_oneof![
        Just(Framing::Length),
        (
            prop::collection::vec((1usize..300, any::<bool>()), 0..8),
            any::<bool>(),
            0usize..4,
            prop::collection::vec("X-[A-Za-z]{1,8}: [ -~]{0,20}", 0..3),
        )
            .prop_map(|(chunks, upper, zeros, trailers)| Framing::Chunked {
                chunks,
                upper,
                zeros,
                trailers: trailers
                    .into_iter()
                    .map(|t| t.trim_end().to_string())
                    .collect(),
            }),
        Just(Framing::Close),
    ];
    (
        0usize..3,
        prop_oneof![200u16..600, Just(204u16), Just(304u16)],
        any::<bool>(),
        any::<bool>(),
        prop::collection::vec(header, 0..6),
        framing,
        prop::collection::vec(any::<u8>(), 0..1500),
        prop::collection::vec(any::<u8>(), 0..40),
    )
        .prop_map(
            |(interim, status, http10, close, headers, framing, body, after)| Valid {
                interim,
                status,
                http10,
                close,
                headers,
                framing,
                body,
                after,
            },
        )
}

proptest! {
    #![proptest_config(config(300))]

    #[test]
    fn valid_responses_parse_exactly_under_any_split(
        response in valid(),
        cuts in prop::collection::vec(any::<Index>(), 0..8),
    ) {
        let (bytes, expected, after) = response.render();
        let whole = drive(Limits::default(), false, &bytes, &[]);
        prop_assert_eq!(&whole, &Ok((expected, after)));
        let split = drive(Limits::default(), false, &bytes, &cuts_in(bytes.len(), &cuts));
        prop_assert_eq!(split, whole);
    }

    #[test]
    fn a_valid_response_cut_short_is_an_eof_error_never_a_response(
        response in valid(),
        keep in any::<Index>(),
    ) {
        let (bytes, expected, after) = response.render();
        // Cut strictly inside the response; a close-delimited body may end anywhere, so only
        // its head can be cut short.
        let until_close = matches!(response.framing, Framing::Close)
            && response.status != 204
            && response.status != 304;
        let end = if until_close {
            expected.head_bytes as usize
        } else {
            bytes.len() - after
        };
        let cut = keep.index(end);
        let r = drive(Limits::default(), false, &bytes[..cut], &[]);
        prop_assert!(matches!(r, Err(ParseError::UnexpectedEof { .. })), "{:?}", r);
    }
}

//! An incremental HTTP/1.1 response parser that counts the body instead of keeping it.
//!
//! Feed it whatever the socket returned, split anywhere; it consumes what it can and says
//! when the response is complete. Heads are parsed by `httparse` once they are whole; bodies
//! (Content-Length, chunked with extensions and trailers, or delimited by close) are walked
//! byte-exactly without copying. Every size that could grow with a hostile server is capped,
//! and the cap is named in the error.

use std::fmt;

/// Caps on what one response may make the parser hold or walk.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Status lines plus headers, bytes, interim (1xx) responses included.
    pub max_head_bytes: usize,
    /// One chunk-size line (size and extensions), bytes.
    pub max_chunk_line_bytes: usize,
    /// All trailer lines together, bytes.
    pub max_trailer_bytes: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_head_bytes: 64 * 1024,
            max_chunk_line_bytes: 4 * 1024,
            max_trailer_bytes: 64 * 1024,
        }
    }
}

/// The most headers one response may carry.
pub const MAX_HEADERS: usize = 128;

/// A complete response, as far as a load generator cares.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Response {
    pub status: u16,
    /// False when the server closes after this response (HTTP/1.0 without keep-alive,
    /// `Connection: close`, a close-delimited body, or a protocol upgrade).
    pub keep_alive: bool,
    /// Bytes of status lines and headers, interim (1xx) responses included.
    pub head_bytes: u64,
    /// Bytes of the body as sent (chunk framing included).
    pub body_bytes: u64,
}

/// What [`ResponseParser::feed`] made of the bytes it was given.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Feed {
    /// The response is not complete. `consumed` bytes were used; keep the rest and append.
    NeedMore { consumed: usize },
    /// The response ended after `consumed` bytes; anything past them belongs to no request.
    Done { consumed: usize, response: Response },
}

/// Why a response could not be parsed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ParseError {
    /// Status line and headers exceed the limit.
    HeadTooLarge { limit: usize },
    /// More header lines than [`MAX_HEADERS`].
    TooManyHeaders,
    /// The status line or a header is not valid HTTP/1.x.
    Malformed { what: &'static str, near: String },
    /// Content-Length is not a number, or several disagree.
    BadContentLength { value: String },
    /// A chunk-size line does not start with hex digits.
    BadChunkSize { near: String },
    /// A chunk size of 2^60 bytes or more: no real server sends one.
    ChunkTooLarge,
    /// A chunk-size line exceeds the limit.
    ChunkLineTooLong { limit: usize },
    /// Chunk data is not followed by CRLF.
    BadChunkEnd,
    /// Trailers exceed the limit.
    TrailerTooLarge { limit: usize },
    /// The connection closed before the response was complete. `body` is (received,
    /// announced) body bytes when a Content-Length body was cut short.
    UnexpectedEof {
        received: u64,
        what: &'static str,
        body: Option<(u64, u64)>,
    },
}

impl ParseError {
    /// True when the server ended the connection early, rather than sending bad bytes.
    pub fn is_eof(&self) -> bool {
        matches!(self, ParseError::UnexpectedEof { .. })
    }
}

impl fmt::Display for ParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ParseError::HeadTooLarge { limit } => {
                write!(
                    f,
                    "response head (status line and headers) larger than the limit of {}",
                    Size(*limit)
                )
            }
            ParseError::TooManyHeaders => {
                write!(
                    f,
                    "response has more than {MAX_HEADERS} headers (the limit)"
                )
            }
            ParseError::Malformed { what, near } => write!(f, "malformed {what} near {near:?}"),
            ParseError::BadContentLength { value } => {
                write!(f, "invalid Content-Length {value:?}")
            }
            ParseError::BadChunkSize { near } => write!(f, "chunk size is not hex near {near:?}"),
            ParseError::ChunkTooLarge => write!(f, "chunk size of 2^60 bytes or more"),
            ParseError::ChunkLineTooLong { limit } => {
                write!(
                    f,
                    "chunk-size line longer than the limit of {}",
                    Size(*limit)
                )
            }
            ParseError::BadChunkEnd => write!(f, "chunk data not followed by CRLF"),
            ParseError::TrailerTooLarge { limit } => {
                write!(f, "trailers larger than the limit of {}", Size(*limit))
            }
            ParseError::UnexpectedEof {
                received,
                what,
                body,
            } => {
                write!(f, "connection closed {what}")?;
                if let Some((got, announced)) = body {
                    write!(
                        f,
                        " ({got} of {announced} body bytes, {received} bytes of response)"
                    )
                } else if *received > 0 {
                    write!(f, " ({received} bytes of response received)")
                } else {
                    Ok(())
                }
            }
        }
    }
}

impl std::error::Error for ParseError {}

/// A limit as a person reads it: "65536 bytes (64 KiB)".
struct Size(usize);

impl fmt::Display for Size {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let n = self.0;
        if n >= 1024 && n & 1023 == 0 {
            write!(f, "{n} bytes ({} KiB)", n / 1024)
        } else {
            write!(f, "{n} bytes")
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    Head,
    Length {
        remaining: u64,
    },
    UntilClose,
    ChunkSize {
        size: u64,
        digits: u32,
        in_ext: bool,
        line: usize,
        cr: bool,
    },
    ChunkData {
        remaining: u64,
    },
    ChunkDataEnd {
        cr: bool,
    },
    Trailer {
        line: usize,
        total: usize,
        cr: bool,
    },
    Done,
}

/// Parses one response at a time; [`ResponseParser::reset`] readies it for the next.
#[derive(Debug, Clone)]
pub struct ResponseParser {
    limits: Limits,
    state: State,
    head_request: bool,
    status: u16,
    keep_alive: bool,
    head_bytes: u64,
    body_bytes: u64,
    /// Bytes of an incomplete head the caller is holding for us.
    partial_head: u64,
}

fn excerpt(bytes: &[u8]) -> String {
    let end = bytes.len().min(40);
    String::from_utf8_lossy(&bytes[..end]).into_owned()
}

impl ResponseParser {
    pub fn new(limits: Limits) -> Self {
        ResponseParser {
            limits,
            state: State::Head,
            head_request: false,
            status: 0,
            keep_alive: true,
            head_bytes: 0,
            body_bytes: 0,
            partial_head: 0,
        }
    }

    /// Readies the parser for the response to a new request; `head_request` says the request
    /// was HEAD, whose response has no body whatever its headers say.
    pub fn reset(&mut self, head_request: bool) {
        self.state = State::Head;
        self.head_request = head_request;
        self.status = 0;
        self.keep_alive = true;
        self.head_bytes = 0;
        self.body_bytes = 0;
        self.partial_head = 0;
    }

    /// Bytes of this response seen so far.
    pub fn received(&self) -> u64 {
        self.head_bytes + self.body_bytes + self.partial_head
    }

    fn response(&self) -> Response {
        Response {
            status: self.status,
            keep_alive: self.keep_alive,
            head_bytes: self.head_bytes,
            body_bytes: self.body_bytes,
        }
    }

    /// Consumes as much of `buf` as belongs to this response.
    pub fn feed(&mut self, buf: &[u8]) -> Result<Feed, ParseError> {
        let mut pos = 0;
        loop {
            match self.state {
                State::Done => {
                    return Ok(Feed::Done {
                        consumed: pos,
                        response: self.response(),
                    })
                }
                State::Head => match self.parse_head(&buf[pos..])? {
                    Some(n) => pos += n,
                    None => return Ok(Feed::NeedMore { consumed: pos }),
                },
                _ if pos == buf.len() => return Ok(Feed::NeedMore { consumed: pos }),
                State::Length { remaining } => {
                    let take = remaining.min((buf.len() - pos) as u64);
                    pos += take as usize;
                    self.body_bytes += take;
                    self.state = if take == remaining {
                        State::Done
                    } else {
                        State::Length {
                            remaining: remaining - take,
                        }
                    };
                }
                State::UntilClose => {
                    self.body_bytes += (buf.len() - pos) as u64;
                    pos = buf.len();
                }
                State::ChunkData { remaining } => {
                    let take = remaining.min((buf.len() - pos) as u64);
                    pos += take as usize;
                    self.body_bytes += take;
                    self.state = if take == remaining {
                        State::ChunkDataEnd { cr: false }
                    } else {
                        State::ChunkData {
                            remaining: remaining - take,
                        }
                    };
                }
                _ => {
                    // Framing lines: walked byte by byte, they are a few bytes each.
                    let b = buf[pos];
                    self.step_framing(b, &buf[pos..])?;
                    pos += 1;
                    self.body_bytes += 1;
                }
            }
        }
    }

    /// Body bytes that come next and need no parsing, so a caller that only counts them may
    /// drop them unread ([`ResponseParser::skip_body`]): the rest of a Content-Length body, or
    /// of the current chunk's data (its CRLF and the next chunk-size line must still be fed).
    pub fn body_left(&self) -> Option<u64> {
        match self.state {
            State::Length { remaining } | State::ChunkData { remaining } => Some(remaining),
            _ => None,
        }
    }

    /// Counts `n` body bytes that were dropped unread (at most [`ResponseParser::body_left`]);
    /// the response when that completed it.
    pub fn skip_body(&mut self, n: u64) -> Option<Response> {
        let (remaining, chunked) = match self.state {
            State::Length { remaining } => (remaining, false),
            State::ChunkData { remaining } => (remaining, true),
            _ => return None,
        };
        let take = n.min(remaining);
        self.body_bytes += take;
        let left = remaining - take;
        self.state = match (chunked, left) {
            (false, 0) => State::Done,
            (false, _) => State::Length { remaining: left },
            (true, 0) => State::ChunkDataEnd { cr: false },
            (true, _) => State::ChunkData { remaining: left },
        };
        (self.state == State::Done).then(|| self.response())
    }

    /// The server closed the connection: completes a close-delimited body, or says what was
    /// missing.
    pub fn finish_eof(&mut self) -> Result<Response, ParseError> {
        let mut body = None;
        let what = match self.state {
            State::UntilClose | State::Done => {
                self.state = State::Done;
                return Ok(self.response());
            }
            State::Head if self.received() == 0 => "before any response byte",
            State::Head => "in the middle of the response head",
            State::Length { remaining } => {
                body = Some((self.body_bytes, self.body_bytes + remaining));
                "before the Content-Length body was complete"
            }
            _ => "in the middle of a chunked body",
        };
        Err(ParseError::UnexpectedEof {
            received: self.received(),
            what,
            body,
        })
    }

    /// Parses a whole head if `buf` holds one; returns the bytes it took.
    fn parse_head(&mut self, buf: &[u8]) -> Result<Option<usize>, ParseError> {
        let too_large = ParseError::HeadTooLarge {
            limit: self.limits.max_head_bytes,
        };
        // Interim heads already taken count against the same limit. Only one byte past what
        // is allowed is ever looked at, so the verdict depends on the bytes, not on how they
        // were split, and a hostile head costs at most the limit to parse.
        let allowed = self
            .limits
            .max_head_bytes
            .saturating_sub(self.head_bytes as usize);
        let window = &buf[..buf.len().min(allowed + 1)];
        // Uninitialized: zeroing 128 headers (4 KiB) per response cost more than parsing.
        let mut headers = [std::mem::MaybeUninit::<httparse::Header<'_>>::uninit(); MAX_HEADERS];
        let mut parsed = httparse::Response::new(&mut []);
        let config = httparse::ParserConfig::default();
        let n = match config.parse_response_with_uninit_headers(&mut parsed, window, &mut headers) {
            Ok(httparse::Status::Complete(n)) => n,
            Ok(httparse::Status::Partial) => {
                if window.len() > allowed {
                    return Err(too_large);
                }
                self.partial_head = buf.len() as u64;
                return Ok(None);
            }
            Err(httparse::Error::TooManyHeaders) => return Err(ParseError::TooManyHeaders),
            Err(e) => {
                let what = match e {
                    httparse::Error::Status | httparse::Error::Version => "status line",
                    _ => "response head",
                };
                return Err(ParseError::Malformed {
                    what,
                    near: excerpt(buf),
                });
            }
        };
        if n > allowed {
            return Err(too_large);
        }
        let status = parsed.code.unwrap_or(0);
        if status < 100 {
            // StatusCounts (and HTTP) know 100..=999 only.
            return Err(ParseError::Malformed {
                what: "status line",
                near: excerpt(buf),
            });
        }
        self.head_bytes += n as u64;
        self.partial_head = 0;
        if (100..200).contains(&status) && status != 101 {
            // Interim response (100 Continue, 103 Early Hints): the real one follows.
            return Ok(Some(n));
        }
        self.status = status;
        let http10 = parsed.version == Some(0);
        let mut close = http10;
        let mut length: Option<u64> = None;
        let mut chunked = false;
        let mut has_te = false;
        for h in parsed.headers.iter() {
            if h.name.eq_ignore_ascii_case("content-length") {
                let text = std::str::from_utf8(h.value).unwrap_or("").trim();
                let value: u64 = text
                    .parse()
                    .ok()
                    .filter(|_| !text.is_empty() && text.bytes().all(|b| b.is_ascii_digit()))
                    .ok_or_else(|| ParseError::BadContentLength {
                        value: excerpt(h.value),
                    })?;
                if length.is_some_and(|l| l != value) {
                    return Err(ParseError::BadContentLength {
                        value: excerpt(h.value),
                    });
                }
                length = Some(value);
            } else if h.name.eq_ignore_ascii_case("transfer-encoding") {
                has_te = true;
                // Chunked counts only as the final coding.
                let last = h.value.rsplit(|&b| b == b',').next().unwrap_or(b"");
                chunked = last.trim_ascii().eq_ignore_ascii_case(b"chunked");
            } else if h.name.eq_ignore_ascii_case("connection") {
                for token in h.value.split(|&b| b == b',') {
                    let token = token.trim_ascii();
                    if token.eq_ignore_ascii_case(b"close") {
                        close = true;
                    } else if token.eq_ignore_ascii_case(b"keep-alive") && http10 {
                        close = false;
                    }
                }
            }
        }
        self.keep_alive = !close;
        self.state = if self.head_request || status == 204 || status == 304 {
            State::Done
        } else if status == 101 {
            self.keep_alive = false;
            State::Done
        } else if has_te {
            if chunked {
                State::ChunkSize {
                    size: 0,
                    digits: 0,
                    in_ext: false,
                    line: 0,
                    cr: false,
                }
            } else {
                self.keep_alive = false;
                State::UntilClose
            }
        } else if let Some(len) = length {
            if len == 0 {
                State::Done
            } else {
                State::Length { remaining: len }
            }
        } else {
            self.keep_alive = false;
            State::UntilClose
        };
        Ok(Some(n))
    }

    fn step_framing(&mut self, b: u8, rest: &[u8]) -> Result<(), ParseError> {
        self.state = match self.state {
            State::ChunkSize {
                size,
                digits,
                in_ext,
                line,
                cr,
            } => {
                if line >= self.limits.max_chunk_line_bytes {
                    return Err(ParseError::ChunkLineTooLong {
                        limit: self.limits.max_chunk_line_bytes,
                    });
                }
                let bad = || ParseError::BadChunkSize {
                    near: excerpt(rest),
                };
                match b {
                    b'\n' if digits > 0 => {
                        if size == 0 {
                            State::Trailer {
                                line: 0,
                                total: 0,
                                cr: false,
                            }
                        } else {
                            State::ChunkData { remaining: size }
                        }
                    }
                    _ if cr => return Err(bad()),
                    b'\r' if digits > 0 => State::ChunkSize {
                        size,
                        digits,
                        in_ext,
                        line: line + 1,
                        cr: true,
                    },
                    _ if in_ext => State::ChunkSize {
                        size,
                        digits,
                        in_ext,
                        line: line + 1,
                        cr,
                    },
                    b';' | b' ' | b'\t' if digits > 0 => State::ChunkSize {
                        size,
                        digits,
                        in_ext: true,
                        line: line + 1,
                        cr,
                    },
                    _ => {
                        let digit = (b as char).to_digit(16).ok_or_else(bad)? as u64;
                        // Leading zeros are fine; a value that would reach 2^60 is not.
                        if size >= 1 << 56 {
                            return Err(ParseError::ChunkTooLarge);
                        }
                        State::ChunkSize {
                            size: size * 16 + digit,
                            digits: digits + 1,
                            in_ext,
                            line: line + 1,
                            cr,
                        }
                    }
                }
            }
            State::ChunkDataEnd { cr } => match b {
                b'\r' if !cr => State::ChunkDataEnd { cr: true },
                b'\n' => State::ChunkSize {
                    size: 0,
                    digits: 0,
                    in_ext: false,
                    line: 0,
                    cr: false,
                },
                _ => return Err(ParseError::BadChunkEnd),
            },
            State::Trailer { line, total, cr } => {
                if total >= self.limits.max_trailer_bytes {
                    return Err(ParseError::TrailerTooLarge {
                        limit: self.limits.max_trailer_bytes,
                    });
                }
                match b {
                    b'\n' if line == 0 => State::Done,
                    b'\n' => State::Trailer {
                        line: 0,
                        total: total + 1,
                        cr: false,
                    },
                    b'\r' if !cr => State::Trailer {
                        line,
                        total: total + 1,
                        cr: true,
                    },
                    _ if cr => {
                        return Err(ParseError::Malformed {
                            what: "trailer",
                            near: excerpt(rest),
                        })
                    }
                    _ => State::Trailer {
                        line: line + 1,
                        total: total + 1,
                        cr,
                    },
                }
            }
            other => other,
        };
        Ok(())
    }
}

#[cfg(test)]
#[path = "parse_tests.rs"]
mod tests;

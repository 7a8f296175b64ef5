//! The HTTP/1.1 response parser on arbitrary bytes, fed the way a connection feeds it (the
//! unconsumed rest kept, the next read appended, EOF at the end), cut at two points the
//! fuzzer chooses. It must never panic, and the cut must not change the verdict: the same
//! response, or the same error apart from the excerpt an error quotes.
//!
//! Input layout: 2 bytes first cut, 2 bytes second cut, 1 byte flags (bit 0: HEAD request,
//! bit 1: small limits scaled by the other bits, bit 7: also feed one byte at a time), then
//! the bytes the "server" sent.

#![no_main]

use libfuzzer_sys::fuzz_target;
use loadmark_wire::http1::{Feed, Limits, ParseError, Response, ResponseParser};

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
                let left = pending.len() - consumed + (input.len() - start);
                // Everything counted came from the input.
                assert!(response.head_bytes + response.body_bytes <= (input.len() - left) as u64);
                return Ok((response, left));
            }
            Feed::NeedMore { consumed } => {
                assert!(consumed <= pending.len());
                pending.drain(..consumed);
            }
        }
    }
    let r = parser.finish_eof().map(|r| (r, 0));
    if let Ok((response, _)) = &r {
        assert!(response.head_bytes + response.body_bytes <= input.len() as u64);
    }
    r
}

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

fuzz_target!(|data: &[u8]| {
    if data.len() < 5 {
        return;
    }
    let (ctl, input) = data.split_at(5);
    let cut = |i: usize| u16::from_le_bytes([ctl[i], ctl[i + 1]]) as usize % (input.len() + 1);
    let flags = ctl[4];
    let head_request = flags & 1 != 0;
    let scale = ((flags >> 2) & 0x1f) as usize;
    let limits = if flags & 2 != 0 {
        Limits {
            max_head_bytes: 1 + scale * 16,
            max_chunk_line_bytes: 1 + scale,
            max_trailer_bytes: 1 + scale * 4,
        }
    } else {
        Limits::default()
    };
    let whole = verdict(drive(limits, head_request, input, &[]));
    let split = verdict(drive(limits, head_request, input, &[cut(0), cut(2)]));
    assert_eq!(whole, split, "cut at {} and {}", cut(0), cut(2));
    if flags & 0x80 != 0 {
        let every: Vec<usize> = (0..input.len()).collect();
        assert_eq!(
            whole,
            verdict(drive(limits, head_request, input, &every)),
            "byte by byte"
        );
    }
    // The messages are what a report shows: rendering them must not panic either.
    if let Err(e) = &whole {
        let _ = e.to_string();
    }
});

use super::*;

/// Feeds `input` in pieces cut at `cuts`, like a socket would deliver it, keeping unconsumed
/// bytes as a caller does. Returns the response and how many bytes were left over.
fn feed_in_pieces(
    input: &[u8],
    cuts: &[usize],
    eof: bool,
) -> Result<(Response, usize), ParseError> {
    let mut parser = ResponseParser::new(Limits::default());
    parser.reset(false);
    let mut pending: Vec<u8> = Vec::new();
    let mut bounds: Vec<usize> = cuts.iter().copied().filter(|&c| c < input.len()).collect();
    bounds.push(input.len());
    let mut start = 0;
    for end in bounds {
        pending.extend_from_slice(&input[start..end]);
        start = end;
        match parser.feed(&pending)? {
            Feed::Done { consumed, response } => {
                let left = pending.len() - consumed + (input.len() - start);
                return Ok((response, left));
            }
            Feed::NeedMore { consumed } => {
                pending.drain(..consumed);
            }
        }
    }
    if eof {
        return parser.finish_eof().map(|r| (r, 0));
    }
    Err(ParseError::UnexpectedEof {
        received: parser.received(),
        what: "test ran out of input",
        body: None,
    })
}

fn parse(input: &[u8]) -> Result<(Response, usize), ParseError> {
    feed_in_pieces(input, &[], true)
}

/// The same result whatever the split, for every single and double split point.
fn assert_split_invariant(input: &[u8], eof: bool) {
    let whole = feed_in_pieces(input, &[], eof);
    for i in 0..=input.len() {
        assert_eq!(feed_in_pieces(input, &[i], eof), whole, "split at {i}");
        for j in (i..=input.len()).step_by(7) {
            assert_eq!(
                feed_in_pieces(input, &[i, j], eof),
                whole,
                "split at {i},{j}"
            );
        }
    }
}

#[test]
fn content_length_body() {
    let input = b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello";
    let (r, left) = parse(input).unwrap();
    assert_eq!(
        (r.status, r.keep_alive, r.body_bytes, left),
        (200, true, 5, 0)
    );
    assert_eq!(r.head_bytes, 38);
    assert_split_invariant(input, true);
}

#[test]
fn chunked_with_extensions_and_trailers() {
    let input = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n\
        5;name=value\r\nhello\r\n1A\r\nabcdefghijklmnopqrstuvwxyz\r\n0\r\nX-Trailer: yes\r\n\r\n";
    let (r, left) = parse(input).unwrap();
    assert_eq!((r.status, r.keep_alive, left), (200, true, 0));
    assert_eq!(r.head_bytes + r.body_bytes, input.len() as u64);
    assert_split_invariant(input, true);
}

#[test]
fn close_delimited_http10_body() {
    let input = b"HTTP/1.0 200 OK\r\nServer: old\r\n\r\nthe body runs until close";
    let (r, _) = parse(input).unwrap();
    assert_eq!((r.status, r.keep_alive, r.body_bytes), (200, false, 25));
    assert_split_invariant(input, true);
}

#[test]
fn http10_keep_alive_and_http11_close() {
    let (r, _) =
        parse(b"HTTP/1.0 200 OK\r\nConnection: keep-alive\r\nContent-Length: 0\r\n\r\n").unwrap();
    assert!(r.keep_alive);
    let (r, _) =
        parse(b"HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 0\r\n\r\n").unwrap();
    assert!(!r.keep_alive);
}

#[test]
fn no_body_for_head_204_304_and_interim_responses_skipped() {
    for input in [
        &b"HTTP/1.1 204 No Content\r\nContent-Length: 10\r\n\r\n"[..],
        &b"HTTP/1.1 304 Not Modified\r\nContent-Length: 10\r\n\r\n"[..],
    ] {
        let (r, left) = parse(input).unwrap();
        assert_eq!((r.body_bytes, left), (0, 0));
    }
    let mut p = ResponseParser::new(Limits::default());
    p.reset(true);
    let input = b"HTTP/1.1 200 OK\r\nContent-Length: 1000\r\n\r\n";
    assert!(
        matches!(p.feed(input).unwrap(), Feed::Done { consumed, .. } if consumed == input.len())
    );
    let input = b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 103 Early Hints\r\nLink: x\r\n\r\nHTTP/1.1 201 Created\r\nContent-Length: 2\r\n\r\nok";
    let (r, left) = parse(input).unwrap();
    assert_eq!((r.status, r.body_bytes, left), (201, 2, 0));
    assert_split_invariant(input, true);
}

#[test]
fn leftover_bytes_are_reported_not_eaten() {
    let (_, left) =
        parse(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nokHTTP/1.1 200 OK\r\n").unwrap();
    assert_eq!(left, 17);
}

#[test]
fn malformed_inputs_are_classified() {
    let cases: Vec<(&[u8], &str)> = vec![
        (b"GARBAGE\r\n\r\n", "malformed status line"),
        (
            b"HTTP/1.1 200 OK\r\nContent-Length: x\r\n\r\n",
            "invalid Content-Length",
        ),
        (
            b"HTTP/1.1 200 OK\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n",
            "invalid Content-Length",
        ),
        (
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n",
            "chunk size is not hex",
        ),
        (
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nabXY",
            "chunk data not followed by CRLF",
        ),
        (
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nFFFFFFFFFFFFFFFFFF\r\n",
            "chunk size of 2^60 bytes or more",
        ),
        (
            b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nabc",
            "before the Content-Length body was complete (3 of 10 body bytes",
        ),
        (b"HTTP/1.1 099 Odd\r\n\r\n", "malformed status line"),
        (b"", "before any response byte"),
        (b"HTTP/1.1 200 O", "in the middle of the response head"),
    ];
    for (input, expected) in cases {
        let err = parse(input).unwrap_err().to_string();
        assert!(
            err.contains(expected),
            "{:?}: {err}",
            String::from_utf8_lossy(input)
        );
    }
}

#[test]
fn limits_are_enforced_and_named() {
    let mut big = b"HTTP/1.1 200 OK\r\n".to_vec();
    while big.len() < 70 * 1024 {
        big.extend_from_slice(b"X-Filler: aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\r\n");
    }
    let err = feed_in_pieces(&big, &[100, 5000, 40_000], false).unwrap_err();
    assert!(
        err.to_string().contains("too") || err.to_string().contains("limit"),
        "{err}"
    );
    let mut long_chunk_line = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5;".to_vec();
    long_chunk_line.extend(std::iter::repeat_n(b'e', 5000));
    let err = parse(&long_chunk_line).unwrap_err().to_string();
    assert!(err.contains("limit of 4096 bytes"), "{err}");
}

#[test]
fn chunk_sizes_may_have_leading_zeros() {
    let input = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n\
        00000000000000000000005\r\nhello\r\n000\r\n\r\n";
    let (r, left) = parse(input).unwrap();
    assert_eq!((r.status, left), (200, 0));
    assert_eq!(r.head_bytes + r.body_bytes, input.len() as u64);
    assert_split_invariant(input, true);
}

#[test]
fn the_head_limit_is_named_in_kib_and_holds_whatever_the_split() {
    // A head past the limit, with garbage after it: the verdict is "too large" whether the
    // garbage arrived in the same read or not (only limit + 1 bytes are ever looked at).
    let mut input = b"HTTP/1.1 200 OK\r\n".to_vec();
    while input.len() <= 64 * 1024 {
        input.extend_from_slice(b"X-Filler: ");
        input.extend(std::iter::repeat_n(b'a', 1000));
        input.extend_from_slice(b"\r\n");
    }
    input.extend_from_slice(b"\x00garbage\r\n\r\n");
    for cuts in [&[][..], &[65_537][..], &[1000, 65_536][..]] {
        let err = feed_in_pieces(&input, cuts, true).unwrap_err();
        assert_eq!(err, ParseError::HeadTooLarge { limit: 65_536 }, "{cuts:?}");
        assert!(err.to_string().contains("64 KiB"), "{err}");
    }
}

#[test]
fn interim_heads_count_against_the_head_limit() {
    let mut input = Vec::new();
    while input.len() <= 64 * 1024 {
        input.extend_from_slice(b"HTTP/1.1 100 Continue\r\n\r\n");
    }
    input.extend_from_slice(b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n");
    let err = parse(&input).unwrap_err();
    assert!(matches!(err, ParseError::HeadTooLarge { .. }), "{err}");
}

/// A parser for a new response that has taken all of `input` and wants more.
fn fed(input: &[u8]) -> ResponseParser {
    let mut parser = ResponseParser::new(Limits::default());
    parser.reset(false);
    assert_eq!(
        parser.feed(input),
        Ok(Feed::NeedMore {
            consumed: input.len()
        })
    );
    parser
}

#[test]
fn a_content_length_body_can_be_skipped_unread_and_still_counted() {
    let head = b"HTTP/1.1 200 OK\r\nContent-Length: 1000\r\n\r\n";
    assert_eq!(fed(b"").body_left(), None, "no body before the head");
    let mut input = head.to_vec();
    input.extend_from_slice(&[b'x'; 100]);
    let mut parser = fed(&input);
    assert_eq!(parser.body_left(), Some(900));
    assert_eq!(parser.skip_body(899), None);
    assert_eq!(parser.body_left(), Some(1));
    // More than is left counts only what belongs to the body.
    let response = parser.skip_body(5).expect("complete");
    assert_eq!(response.body_bytes, 1000);
    assert_eq!(response.head_bytes, head.len() as u64);
    assert_eq!(parser.body_left(), None);
}

#[test]
fn chunk_data_can_be_skipped_and_the_framing_still_parsed() {
    let head = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n";
    let mut input = head.to_vec();
    input.extend_from_slice(b"3e8\r\nxxxx"); // 1000 bytes of data announced, 4 sent
    let mut parser = fed(&input);
    assert_eq!(parser.body_left(), Some(996));
    assert_eq!(parser.skip_body(995), None);
    assert_eq!(parser.body_left(), Some(1));
    // The last data byte, the chunk's CRLF and the last chunk are parsed as usual.
    let rest = b"x\r\n0\r\n\r\n";
    match parser.feed(rest) {
        Ok(Feed::Done { consumed, response }) => {
            assert_eq!(consumed, rest.len());
            assert_eq!(response.body_bytes, 5 + 1000 + 2 + 5, "framing counted too");
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn framing_and_close_delimited_bodies_cannot_be_skipped() {
    for head in [
        &b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"[..],
        &b"HTTP/1.0 200 OK\r\n\r\n"[..],
    ] {
        let mut parser = fed(head);
        assert_eq!(parser.body_left(), None, "{head:?}");
        assert_eq!(parser.skip_body(10), None);
        assert_eq!(parser.received(), head.len() as u64, "nothing was counted");
    }
}

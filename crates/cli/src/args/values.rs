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

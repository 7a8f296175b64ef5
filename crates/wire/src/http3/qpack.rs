//! QPACK header blocks (RFC 9204) with the static table only: the client announces a dynamic
//! table of 0 bytes, so every block it sends or accepts stands alone.
//!
//! The encoder writes a field as the static entry it matches (name and value), else as a
//! literal with the static entry's name, else as a literal with its own name; strings are
//! not Huffman-coded (a request's block is encoded once per fixed request, as for HTTP/2).
//! The decoder hands each field to a callback as two slices: of the block, of the static
//! table, or of a scratch buffer when the string is Huffman-coded.

use std::fmt;

use crate::http2::hpack::{read_int, write_int, HpackError};
use crate::http2::huffman;

/// Why a header block could not be decoded (QPACK_DECOMPRESSION_FAILED).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QpackError(pub &'static str);

impl fmt::Display for QpackError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.0)
    }
}

impl From<HpackError> for QpackError {
    fn from(e: HpackError) -> Self {
        QpackError(e.0)
    }
}

const DYNAMIC: QpackError =
    QpackError("a reference to the dynamic table, which the client allowed none of");
const STATIC_PAST: QpackError = QpackError("an index past the static table");
const TRUNCATED: QpackError = QpackError("a block that ends inside a field");
const STRING_PAST: QpackError = QpackError("a string longer than the block");

/// RFC 9204 Appendix A.
#[rustfmt::skip]
pub const STATIC: [(&[u8], &[u8]); 99] = [
    (b":authority", b""), (b":path", b"/"), (b"age", b"0"), (b"content-disposition", b""),
    (b"content-length", b"0"), (b"cookie", b""), (b"date", b""), (b"etag", b""),
    (b"if-modified-since", b""), (b"if-none-match", b""), (b"last-modified", b""),
    (b"link", b""), (b"location", b""), (b"referer", b""), (b"set-cookie", b""),
    (b":method", b"CONNECT"), (b":method", b"DELETE"), (b":method", b"GET"),
    (b":method", b"HEAD"), (b":method", b"OPTIONS"), (b":method", b"POST"),
    (b":method", b"PUT"), (b":scheme", b"http"), (b":scheme", b"https"),
    (b":status", b"103"), (b":status", b"200"), (b":status", b"304"), (b":status", b"404"),
    (b":status", b"503"), (b"accept", b"*/*"), (b"accept", b"application/dns-message"),
    (b"accept-encoding", b"gzip, deflate, br"), (b"accept-ranges", b"bytes"),
    (b"access-control-allow-headers", b"cache-control"),
    (b"access-control-allow-headers", b"content-type"),
    (b"access-control-allow-origin", b"*"), (b"cache-control", b"max-age=0"),
    (b"cache-control", b"max-age=2592000"), (b"cache-control", b"max-age=604800"),
    (b"cache-control", b"no-cache"), (b"cache-control", b"no-store"),
    (b"cache-control", b"public, max-age=31536000"), (b"content-encoding", b"br"),
    (b"content-encoding", b"gzip"), (b"content-type", b"application/dns-message"),
    (b"content-type", b"application/javascript"), (b"content-type", b"application/json"),
    (b"content-type", b"application/x-www-form-urlencoded"), (b"content-type", b"image/gif"),
    (b"content-type", b"image/jpeg"), (b"content-type", b"image/png"),
    (b"content-type", b"text/css"), (b"content-type", b"text/html; charset=utf-8"),
    (b"content-type", b"text/plain"), (b"content-type", b"text/plain;charset=utf-8"),
    (b"range", b"bytes=0-"), (b"strict-transport-security", b"max-age=31536000"),
    (b"strict-transport-security", b"max-age=31536000; includesubdomains"),
    (b"strict-transport-security", b"max-age=31536000; includesubdomains; preload"),
    (b"vary", b"accept-encoding"), (b"vary", b"origin"),
    (b"x-content-type-options", b"nosniff"), (b"x-xss-protection", b"1; mode=block"),
    (b":status", b"100"), (b":status", b"204"), (b":status", b"206"), (b":status", b"302"),
    (b":status", b"400"), (b":status", b"403"), (b":status", b"421"), (b":status", b"425"),
    (b":status", b"500"), (b"accept-language", b""),
    (b"access-control-allow-credentials", b"FALSE"),
    (b"access-control-allow-credentials", b"TRUE"), (b"access-control-allow-headers", b"*"),
    (b"access-control-allow-methods", b"get"),
    (b"access-control-allow-methods", b"get, post, options"),
    (b"access-control-allow-methods", b"options"),
    (b"access-control-expose-headers", b"content-length"),
    (b"access-control-request-headers", b"content-type"),
    (b"access-control-request-method", b"get"), (b"access-control-request-method", b"post"),
    (b"alt-svc", b"clear"), (b"authorization", b""),
    (b"content-security-policy", b"script-src 'none'; object-src 'none'; base-uri 'none'"),
    (b"early-data", b"1"), (b"expect-ct", b""), (b"forwarded", b""), (b"if-range", b""),
    (b"origin", b""), (b"purpose", b"prefetch"), (b"server", b""),
    (b"timing-allow-origin", b"*"), (b"upgrade-insecure-requests", b"1"),
    (b"user-agent", b""), (b"x-forwarded-for", b""), (b"x-frame-options", b"deny"),
    (b"x-frame-options", b"sameorigin"),
];

/// The encoded field section prefix of a block that uses no dynamic entry: Required Insert
/// Count 0, Delta Base 0 (§4.5.1).
pub fn start_block(out: &mut Vec<u8>) {
    out.extend_from_slice(&[0, 0]);
}

/// Appends one field (`name` lowercase) to a block begun with [`start_block`].
pub fn encode_field(name: &[u8], value: &[u8], out: &mut Vec<u8>) {
    let mut by_name = None;
    for (i, &(n, v)) in STATIC.iter().enumerate() {
        if n == name {
            if v == value {
                // Indexed field line, static (§4.5.2): 1 T=1 index.
                write_int(out, 0xc0, 6, i);
                return;
            }
            by_name.get_or_insert(i);
        }
    }
    match by_name {
        // Literal with name reference, static (§4.5.4): 01 N=0 T=1 index.
        Some(i) => write_int(out, 0x50, 4, i),
        // Literal with literal name (§4.5.6): 001 N=0 H=0 length.
        None => {
            write_int(out, 0x20, 3, name.len());
            out.extend_from_slice(name);
        }
    }
    write_int(out, 0x00, 7, value.len());
    out.extend_from_slice(value);
}

/// Decodes one block, calling `field(name, value)` for each field in order. `scratch` holds
/// Huffman-decoded strings (two buffers: a name and a value may both be coded).
pub fn decode(
    block: &[u8],
    scratch: &mut (Vec<u8>, Vec<u8>),
    mut field: impl FnMut(&[u8], &[u8]),
) -> Result<(), QpackError> {
    if block.is_empty() {
        return Err(TRUNCATED);
    }
    let mut pos = 0;
    if read_int(block, &mut pos, 8)? != 0 {
        return Err(DYNAMIC);
    }
    if pos >= block.len() {
        return Err(TRUNCATED);
    }
    read_int(block, &mut pos, 7)?; // Delta Base: no meaning without dynamic entries.
    let (names, values) = scratch;
    while let Some(&first) = block.get(pos) {
        if first & 0x80 != 0 {
            // Indexed field line: static when T (0x40) is set.
            if first & 0x40 == 0 {
                return Err(DYNAMIC);
            }
            let (name, value) = static_entry(read_int(block, &mut pos, 6)?)?;
            field(name, value);
        } else if first & 0x40 != 0 {
            // Literal with name reference: static when T (0x10) is set.
            if first & 0x10 == 0 {
                return Err(DYNAMIC);
            }
            let (name, _) = static_entry(read_int(block, &mut pos, 4)?)?;
            let value = read_string(block, &mut pos, 7, values)?;
            field(name, value);
        } else if first & 0x20 != 0 {
            // Literal with literal name: the name's Huffman flag is 0x08, its length 3 bits.
            let name = read_string(block, &mut pos, 3, names)?;
            let value = read_string(block, &mut pos, 7, values)?;
            field(name, value);
        } else {
            // Post-base forms (0001, 0000): dynamic entries only.
            return Err(DYNAMIC);
        }
    }
    Ok(())
}

fn static_entry(index: usize) -> Result<(&'static [u8], &'static [u8]), QpackError> {
    STATIC.get(index).copied().ok_or(STATIC_PAST)
}

/// A string whose length has an `n`-bit prefix, Huffman-coded when the bit above it is set.
fn read_string<'a>(
    block: &'a [u8],
    pos: &mut usize,
    n: u32,
    scratch: &'a mut Vec<u8>,
) -> Result<&'a [u8], QpackError> {
    let &first = block.get(*pos).ok_or(TRUNCATED)?;
    let len = read_int(block, pos, n)?;
    let raw = block[*pos..].get(..len).ok_or(STRING_PAST)?;
    *pos += len;
    if first & (1 << n) == 0 {
        return Ok(raw);
    }
    scratch.clear();
    huffman::decode(raw, scratch)?;
    Ok(scratch)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn decoded(block: &[u8]) -> Result<Vec<(String, String)>, QpackError> {
        let mut out = Vec::new();
        let mut scratch = Default::default();
        decode(block, &mut scratch, |n, v| {
            out.push((
                String::from_utf8_lossy(n).into(),
                String::from_utf8_lossy(v).into(),
            ))
        })?;
        Ok(out)
    }

    #[test]
    fn fields_encode_as_static_entries_names_or_literals_and_decode_back() {
        let fields = [
            (":method", "GET"),
            (":scheme", "https"),
            (":path", "/json?x=1"),
            (":authority", "127.0.0.1:8443"),
            ("content-type", "application/json"),
            ("x-request-id", "abc"),
            ("user-agent", "loadmark"),
        ];
        let mut block = Vec::new();
        start_block(&mut block);
        for (n, v) in fields {
            encode_field(n.as_bytes(), v.as_bytes(), &mut block);
        }
        // :method GET is static 17, :scheme https 23: one byte each.
        assert_eq!(&block[..4], &[0, 0, 0xc0 | 17, 0xc0 | 23]);
        let back = decoded(&block).unwrap();
        let want: Vec<_> = fields
            .iter()
            .map(|(n, v)| (n.to_string(), v.to_string()))
            .collect();
        assert_eq!(back, want);
    }

    #[test]
    fn huffman_coded_strings_decode_and_dynamic_references_are_refused() {
        // :status 200 (static 25), then "server: caddy" with the name by reference (92) and
        // the value Huffman-coded, then a literal name "x-a" with a Huffman-coded value.
        let mut block = vec![0, 0, 0xc0 | 25, 0x5f, 92 - 15];
        let mut coded = Vec::new();
        huffman::encode(b"caddy", &mut coded);
        block.push(0x80 | coded.len() as u8);
        block.extend_from_slice(&coded);
        block.extend_from_slice(&[0x23, b'x', b'-', b'a']);
        let mut coded = Vec::new();
        huffman::encode(b"hello world", &mut coded);
        block.push(0x80 | coded.len() as u8);
        block.extend_from_slice(&coded);
        assert_eq!(
            decoded(&block).unwrap(),
            [
                (":status".to_string(), "200".to_string()),
                ("server".into(), "caddy".into()),
                ("x-a".into(), "hello world".into())
            ]
        );
        // Required Insert Count 1; a dynamic indexed line; a post-base line; an index past 98.
        assert_eq!(decoded(&[1, 0, 0x80]), Err(DYNAMIC));
        assert_eq!(decoded(&[0, 0, 0x80]), Err(DYNAMIC));
        assert_eq!(decoded(&[0, 0, 0x10]), Err(DYNAMIC));
        assert_eq!(decoded(&[0, 0, 0xff, 99 - 63]), Err(STATIC_PAST));
        assert_eq!(decoded(&[0, 0, 0x51, 10, b'/']), Err(STRING_PAST));
        assert_eq!(decoded(&[0]), Err(TRUNCATED));
    }
}

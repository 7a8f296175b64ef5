//! HPACK (RFC 7541): the response header decoder, and the few encoding helpers requests need.
//!
//! The decoder hands each field to a callback as two slices, of the block itself when the
//! string is a plain literal, else of a scratch buffer the decoder keeps (Huffman strings) or
//! of a table entry, so a block decodes without allocating. Only an insertion into the dynamic
//! table may allocate, and it reuses the buffers of evicted entries.
//!
//! The encoder never uses the dynamic table nor Huffman coding: a request's block is encoded
//! once per fixed request, and a block that only refers to the static table means the same
//! whatever the server's SETTINGS_HEADER_TABLE_SIZE.

use std::collections::VecDeque;
use std::fmt;

use super::huffman;

/// Why a header block could not be decoded (a COMPRESSION_ERROR for the connection).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HpackError(pub &'static str);

impl fmt::Display for HpackError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.0)
    }
}

impl std::error::Error for HpackError {}

const INDEX_ZERO: HpackError = HpackError("an index of 0");
const INDEX_PAST: HpackError = HpackError("an index past the static and dynamic tables");
const OVERFLOW: HpackError = HpackError("an integer that overflows");
const TRUNCATED: HpackError = HpackError("a block that ends inside a field");
const STRING_PAST: HpackError = HpackError("a string longer than the block");
const UPDATE_ABOVE: HpackError = HpackError("a dynamic table size update above the limit");
const UPDATE_LATE: HpackError = HpackError("a dynamic table size update after the first field");

/// RFC 7541 Appendix A.
#[rustfmt::skip]
const STATIC: [(&[u8], &[u8]); 61] = [
    (b":authority", b""), (b":method", b"GET"), (b":method", b"POST"), (b":path", b"/"),
    (b":path", b"/index.html"), (b":scheme", b"http"), (b":scheme", b"https"),
    (b":status", b"200"), (b":status", b"204"), (b":status", b"206"), (b":status", b"304"),
    (b":status", b"400"), (b":status", b"404"), (b":status", b"500"), (b"accept-charset", b""),
    (b"accept-encoding", b"gzip, deflate"), (b"accept-language", b""), (b"accept-ranges", b""),
    (b"accept", b""), (b"access-control-allow-origin", b""), (b"age", b""), (b"allow", b""),
    (b"authorization", b""), (b"cache-control", b""), (b"content-disposition", b""),
    (b"content-encoding", b""), (b"content-language", b""), (b"content-length", b""),
    (b"content-location", b""), (b"content-range", b""), (b"content-type", b""),
    (b"cookie", b""), (b"date", b""), (b"etag", b""), (b"expect", b""), (b"expires", b""),
    (b"from", b""), (b"host", b""), (b"if-match", b""), (b"if-modified-since", b""),
    (b"if-none-match", b""), (b"if-range", b""), (b"if-unmodified-since", b""),
    (b"last-modified", b""), (b"link", b""), (b"location", b""), (b"max-forwards", b""),
    (b"proxy-authenticate", b""), (b"proxy-authorization", b""), (b"range", b""),
    (b"referer", b""), (b"refresh", b""), (b"retry-after", b""), (b"server", b""),
    (b"set-cookie", b""), (b"strict-transport-security", b""), (b"transfer-encoding", b""),
    (b"user-agent", b""), (b"vary", b""), (b"via", b""), (b"www-authenticate", b""),
];

/// The static indices (1-based) that have `name`: the first and the last, as the entries of
/// one name are consecutive. A `match` compiles to length and byte compares, cheaper than a
/// scan of the table for requests encoded per send (templates).
#[rustfmt::skip]
fn static_names(name: &[u8]) -> Option<(usize, usize)> {
    let i = match name {
        b":method" => return Some((2, 3)),
        b":path" => return Some((4, 5)),
        b":scheme" => return Some((6, 7)),
        b":status" => return Some((8, 14)),
        b":authority" => 1, b"accept-charset" => 15, b"accept-encoding" => 16,
        b"accept-language" => 17, b"accept-ranges" => 18, b"accept" => 19,
        b"access-control-allow-origin" => 20, b"age" => 21, b"allow" => 22,
        b"authorization" => 23, b"cache-control" => 24, b"content-disposition" => 25,
        b"content-encoding" => 26, b"content-language" => 27, b"content-length" => 28,
        b"content-location" => 29, b"content-range" => 30, b"content-type" => 31,
        b"cookie" => 32, b"date" => 33, b"etag" => 34, b"expect" => 35, b"expires" => 36,
        b"from" => 37, b"host" => 38, b"if-match" => 39, b"if-modified-since" => 40,
        b"if-none-match" => 41, b"if-range" => 42, b"if-unmodified-since" => 43,
        b"last-modified" => 44, b"link" => 45, b"location" => 46, b"max-forwards" => 47,
        b"proxy-authenticate" => 48, b"proxy-authorization" => 49, b"range" => 50,
        b"referer" => 51, b"refresh" => 52, b"retry-after" => 53, b"server" => 54,
        b"set-cookie" => 55, b"strict-transport-security" => 56, b"transfer-encoding" => 57,
        b"user-agent" => 58, b"vary" => 59, b"via" => 60, b"www-authenticate" => 61,
        _ => return None,
    };
    Some((i, i))
}

/// RFC 7541 §4.1: an entry counts its name's and value's lengths plus 32.
const ENTRY_OVERHEAD: usize = 32;

/// A dynamic table entry: name and value in one buffer, so an insertion allocates at most once.
struct Entry {
    buf: Vec<u8>,
    name_len: usize,
}

/// Evicted entries' buffers kept for reuse; a few cover a server that inserts one entry per
/// response (a new `date` each second).
const SPARE_BUFFERS: usize = 4;

/// Decodes the header blocks of one connection, whose dynamic table it keeps.
pub struct Decoder {
    /// Newest first, so dynamic index 62 is `entries[0]` (O(1) either way).
    entries: VecDeque<Entry>,
    /// The sum of the entries' sizes.
    size: usize,
    /// The table's maximum size, as last set by a size update.
    capacity: usize,
    /// The most a size update may set: our SETTINGS_HEADER_TABLE_SIZE.
    limit: usize,
    spare: Vec<Vec<u8>>,
    /// Huffman-decoded names and values, cleared for each string, never shrunk.
    name_buf: Vec<u8>,
    value_buf: Vec<u8>,
}

impl Decoder {
    /// Dynamic table limit 4096 (SETTINGS_HEADER_TABLE_SIZE's default, which the client never
    /// changes).
    pub fn new() -> Self {
        Self::with_max_table_size(4096)
    }

    /// For the RFC's examples that use 256.
    #[cfg_attr(not(test), allow(dead_code))]
    pub fn with_max_table_size(max: usize) -> Self {
        Decoder {
            entries: VecDeque::new(),
            size: 0,
            capacity: max,
            limit: max,
            spare: Vec::new(),
            name_buf: Vec::new(),
            value_buf: Vec::new(),
        }
    }

    #[cfg(test)]
    fn table_size(&self) -> usize {
        self.size
    }

    /// Decodes one complete header block (all HEADERS + CONTINUATION fragments joined),
    /// calling `field(name, value)` for each field in order. On error the decoder's state is
    /// unspecified (the connection is closed anyway).
    pub fn decode(
        &mut self,
        block: &[u8],
        mut field: impl FnMut(&[u8], &[u8]),
    ) -> Result<(), HpackError> {
        let mut pos = 0;
        let mut seen_field = false;
        while let Some(&first) = block.get(pos) {
            if first & 0x80 != 0 {
                // Indexed field (§6.1).
                let index = read_int(block, &mut pos, 7)?;
                let (name, value) = self.get(index)?;
                field(name, value);
                seen_field = true;
            } else if first & 0xe0 == 0x20 {
                // Dynamic table size update (§6.3): only at the start of a block (§4.2).
                if seen_field {
                    return Err(UPDATE_LATE);
                }
                let size = read_int(block, &mut pos, 5)?;
                if size > self.limit {
                    return Err(UPDATE_ABOVE);
                }
                self.capacity = size;
                self.evict_to(size);
            } else {
                // Literal (§6.2): with incremental indexing (01), without (0000) or never
                // indexed (0001); the last two are the same to a decoder.
                let indexing = first & 0x40 != 0;
                let index = read_int(block, &mut pos, if indexing { 6 } else { 4 })?;
                let name = if index == 0 {
                    read_string(block, &mut pos, &mut self.name_buf)?
                } else {
                    get(&self.entries, index)?.0
                };
                let value = read_string(block, &mut pos, &mut self.value_buf)?;
                field(name, value);
                seen_field = true;
                if indexing {
                    // Copied before the insertion evicts anything, `name` may be an entry.
                    let mut buf = self.spare.pop().unwrap_or_default();
                    buf.clear();
                    buf.extend_from_slice(name);
                    buf.extend_from_slice(value);
                    let name_len = name.len();
                    self.insert(Entry { buf, name_len });
                }
            }
        }
        Ok(())
    }

    fn get(&self, index: usize) -> Result<(&[u8], &[u8]), HpackError> {
        get(&self.entries, index)
    }

    /// §4.4: evicts until the new entry fits; an entry larger than the table empties it and is
    /// not inserted.
    fn insert(&mut self, entry: Entry) {
        let size = entry.buf.len() + ENTRY_OVERHEAD;
        if size > self.capacity {
            self.evict_to(0);
            self.recycle(entry.buf);
            return;
        }
        self.evict_to(self.capacity - size);
        self.size += size;
        self.entries.push_front(entry);
    }

    fn evict_to(&mut self, max: usize) {
        while self.size > max {
            let Some(old) = self.entries.pop_back() else {
                break;
            };
            self.size -= old.buf.len() + ENTRY_OVERHEAD;
            self.recycle(old.buf);
        }
    }

    fn recycle(&mut self, buf: Vec<u8>) {
        if self.spare.len() < SPARE_BUFFERS {
            self.spare.push(buf);
        }
    }
}

impl Default for Decoder {
    fn default() -> Self {
        Self::new()
    }
}

/// Index 1..=61 is the static table, 62.. the dynamic one, newest first (§2.3.3).
#[inline]
fn get(entries: &VecDeque<Entry>, index: usize) -> Result<(&[u8], &[u8]), HpackError> {
    if let Some(&entry) = STATIC.get(index.wrapping_sub(1)) {
        return Ok(entry);
    }
    if index == 0 {
        return Err(INDEX_ZERO);
    }
    let e = entries.get(index - STATIC.len() - 1).ok_or(INDEX_PAST)?;
    Ok(e.buf.split_at(e.name_len))
}

/// The most continuation bytes an integer may have: 5 carry 35 bits, beyond any size, index or
/// length a block can hold; more is an attack or garbage, refused rather than wrapped.
const MAX_CONTINUATIONS: u32 = 5;

/// §5.1: an integer with an `n`-bit prefix, starting at `block[*pos]` (which exists).
#[inline]
pub(crate) fn read_int(block: &[u8], pos: &mut usize, n: u32) -> Result<usize, HpackError> {
    let max = (1u32 << n) - 1;
    let prefix = u32::from(block[*pos]) & max;
    *pos += 1;
    if prefix < max {
        return Ok(prefix as usize);
    }
    let mut value = u64::from(prefix);
    for i in 0..MAX_CONTINUATIONS {
        let &b = block.get(*pos).ok_or(TRUNCATED)?;
        *pos += 1;
        value += u64::from(b & 0x7f) << (7 * i);
        if b & 0x80 == 0 {
            return u32::try_from(value)
                .map(|v| v as usize)
                .map_err(|_| OVERFLOW);
        }
    }
    Err(OVERFLOW)
}

/// §5.2: a string, as a slice of `block` or, when Huffman-coded, of `scratch`.
#[inline]
fn read_string<'a>(
    block: &'a [u8],
    pos: &mut usize,
    scratch: &'a mut Vec<u8>,
) -> Result<&'a [u8], HpackError> {
    let &first = block.get(*pos).ok_or(TRUNCATED)?;
    let len = read_int(block, pos, 7)?;
    let raw = block[*pos..].get(..len).ok_or(STRING_PAST)?;
    *pos += len;
    if first & 0x80 == 0 {
        return Ok(raw);
    }
    scratch.clear();
    huffman::decode(raw, scratch)?;
    Ok(scratch)
}

/// §5.1: `flags` are the first byte's bits above the `n`-bit prefix.
pub(crate) fn write_int(out: &mut Vec<u8>, flags: u8, n: u32, value: usize) {
    let max = (1usize << n) - 1;
    if value < max {
        out.push(flags | value as u8);
        return;
    }
    out.push(flags | max as u8);
    let mut rest = value - max;
    while rest >= 0x80 {
        out.push(rest as u8 | 0x80);
        rest >>= 7;
    }
    out.push(rest as u8);
}

/// A plain (not Huffman-coded) string.
fn write_string(out: &mut Vec<u8>, s: &[u8]) {
    write_int(out, 0, 7, s.len());
    out.extend_from_slice(s);
}

/// Encoder helpers for requests: the client never uses the dynamic table (so the server's
/// SETTINGS_HEADER_TABLE_SIZE never matters) and never Huffman-encodes (requests are encoded
/// once per fixed request). Appends one field to `out`:
/// - a static-table entry matching name AND value → indexed field (e.g. ":method: GET" → 0x82);
/// - a static-table name → literal without indexing, indexed name (4-bit prefix index);
/// - otherwise literal without indexing, new name.
///
/// `name` is already lowercase.
pub fn encode_field(name: &[u8], value: &[u8], out: &mut Vec<u8>) {
    match static_names(name) {
        Some((first, last)) => {
            if let Some(i) = (first..=last).find(|&i| STATIC[i - 1].1 == value) {
                write_int(out, 0x80, 7, i);
                return;
            }
            write_int(out, 0x00, 4, first);
        }
        None => {
            out.push(0x00);
            write_string(out, name);
        }
    }
    write_string(out, value);
}

#[cfg(test)]
#[path = "hpack_tests.rs"]
mod tests;

//! The HPACK Huffman code (RFC 7541 §5.2, Appendix B).
//!
//! The code is canonical: codes are handed out in order of (bit length, symbol), each one the
//! previous plus one, shifted left when the length grows. So the 257 bit lengths are all that
//! is written down here, and the codes, the decoding tables and the encoder's table are derived
//! from them at compile time (the tests check the result against the RFC's own codes).
//!
//! Decoding reads the string through a 64-bit accumulator: one look-up in a 12-bit table
//! (16 KiB) decodes one or two symbols of 5 to 12 bits (all of ASCII's letters, digits and
//! common punctuation); the rare longer codes (all of which start with eight ones) are found
//! by the canonical rule, one compare per length.

use super::hpack::HpackError;

const EOS: usize = 256;

/// The symbols of each code length, from Appendix B. EOS (256, 30 bits) is added apart, as it
/// does not fit in a byte string.
const BY_LENGTH: [(u8, &[u8]); 20] = [
    (5, b"012aceiost"),
    (6, b" %-./3456789=A_bdfghlmnpru"),
    (7, b":BCDEFGHIJKLMNOPQRSTUVWYjkqvwxyz"),
    (8, b"&*,;XZ"),
    (10, b"!\"()?"),
    (11, b"'+|"),
    (12, b"#>"),
    (13, b"\x00$@[]~"),
    (14, b"^}"),
    (15, b"<`{"),
    (19, b"\\\xc3\xd0"),
    (20, b"\x80\x82\x83\xa2\xb8\xc2\xe0\xe2"),
    (21, b"\x99\xa1\xa7\xac\xb0\xb1\xb3\xd1\xd8\xd9\xe3\xe5\xe6"),
    (
        22,
        b"\x81\x84\x85\x86\x88\x92\x9a\x9c\xa0\xa3\xa4\xa9\xaa\xad\xb2\xb5\xb9\xba\xbb\xbd\xbe\xc4\xc6\xe4\xe8\xe9",
    ),
    (
        23,
        b"\x01\x87\x89\x8a\x8b\x8c\x8d\x8f\x93\x95\x96\x97\x98\x9b\x9d\x9e\xa5\xa6\xa8\xae\xaf\xb4\xb6\xb7\xbc\xbf\xc5\xe7\xef",
    ),
    (24, b"\x09\x8e\x90\x91\x94\x9f\xab\xce\xd7\xe1\xec\xed"),
    (25, b"\xc7\xcf\xea\xeb"),
    (26, b"\xc0\xc1\xc8\xc9\xca\xcd\xd2\xd5\xda\xdb\xee\xf0\xf2\xf3\xff"),
    (
        27,
        b"\xcb\xcc\xd3\xd4\xd6\xdd\xde\xdf\xf1\xf4\xf5\xf6\xf7\xf8\xfa\xfb\xfc\xfd\xfe",
    ),
    (
        28,
        b"\x02\x03\x04\x05\x06\x07\x08\x0b\x0c\x0e\x0f\x10\x11\x12\x13\x14\x15\x17\x18\x19\x1a\x1b\x1c\x1d\x1e\x1f\x7f\xdc\xf9",
    ),
];
/// The 30-bit symbols besides EOS.
const LENGTH_30: &[u8] = b"\x0a\x0d\x16";
const MAX_LEN: usize = 30;

/// Bit length of each symbol (0..=256).
const LENGTHS: [u8; 257] = lengths();
/// Code of each symbol, right-aligned in `LENGTHS[sym]` bits.
const CODES: [u32; 257] = canonical_codes();

const fn lengths() -> [u8; 257] {
    let mut out = [0u8; 257];
    let mut g = 0;
    while g < BY_LENGTH.len() {
        let (len, syms) = BY_LENGTH[g];
        let mut i = 0;
        while i < syms.len() {
            out[syms[i] as usize] = len;
            i += 1;
        }
        g += 1;
    }
    let mut i = 0;
    while i < LENGTH_30.len() {
        out[LENGTH_30[i] as usize] = 30;
        i += 1;
    }
    out[EOS] = 30;
    out
}

/// The canonical assignment: by length, then by symbol.
const fn canonical_codes() -> [u32; 257] {
    let mut codes = [0u32; 257];
    let mut code = 0u32;
    let mut len = 1;
    while len <= MAX_LEN {
        let mut sym = 0;
        while sym < 257 {
            if LENGTHS[sym] as usize == len {
                codes[sym] = code;
                code += 1;
            }
            sym += 1;
        }
        code <<= 1;
        len += 1;
    }
    codes
}

/// Per length: the first code, how many codes, and where they start in `SORTED`.
struct Canonical {
    first: [u32; MAX_LEN + 1],
    count: [u32; MAX_LEN + 1],
    offset: [u16; MAX_LEN + 1],
    sorted: [u16; 257],
}

const CANONICAL: Canonical = canonical();

const fn canonical() -> Canonical {
    let mut c = Canonical {
        first: [0; MAX_LEN + 1],
        count: [0; MAX_LEN + 1],
        offset: [0; MAX_LEN + 1],
        sorted: [0; 257],
    };
    let mut n = 0;
    let mut len = 1;
    while len <= MAX_LEN {
        c.offset[len] = n as u16;
        let mut sym = 0;
        while sym < 257 {
            if LENGTHS[sym] as usize == len {
                if c.count[len] == 0 {
                    c.first[len] = CODES[sym];
                }
                c.count[len] += 1;
                c.sorted[n] = sym as u16;
                n += 1;
            }
            sym += 1;
        }
        len += 1;
    }
    c
}

const FAST_BITS: u32 = 12;

/// Indexed by the next 12 bits: the first symbol, and a second one when its code fits in the
/// bits left, so that text (5 to 8 bits a character) takes about one look-up per two
/// characters: the look-up chain (load, then shift by its result) is what bounds the speed.
/// 12 bits rather than 11 (8 KiB) decode a typical response block ~15% faster, as pairs of
/// 6-bit codes (digits 3-9, most lowercase letters) then fit.
/// Bits 0-7: first symbol; 8-15: second; 16-17: how many (0: a code longer than 12 bits);
/// 20-23: the first code's length; 24-28: both codes' length.
static FAST: [u32; 1 << FAST_BITS] = fast_table();

/// Indexed by the next 12 bits: the symbol (low byte) and code length (high byte) they start
/// with, or 0 for a code longer than 12 bits. Each code fills the range of indices it prefixes.
const fn single_table() -> [u16; 1 << FAST_BITS] {
    let mut t = [0u16; 1 << FAST_BITS];
    let mut sym = 0;
    while sym < 256 {
        let len = LENGTHS[sym] as u32;
        if len <= FAST_BITS {
            let start = (CODES[sym] << (FAST_BITS - len)) as usize;
            let mut i = 0;
            while i < 1 << (FAST_BITS - len) {
                t[start + i] = ((len as u16) << 8) | sym as u16;
                i += 1;
            }
        }
        sym += 1;
    }
    t
}

const fn fast_table() -> [u32; 1 << FAST_BITS] {
    let singles = single_table();
    let mut t = [0u32; 1 << FAST_BITS];
    let mut i = 0;
    while i < 1 << FAST_BITS {
        let first = singles[i] as u32;
        let len1 = first >> 8;
        if len1 != 0 {
            let mut entry = (first & 0xff) | 1 << 16 | len1 << 20 | len1 << 24;
            // The bits after the first code, as the start of the next 12 (zeros after).
            let rest = (i << len1) & ((1 << FAST_BITS) - 1);
            let second = singles[rest] as u32;
            let len2 = second >> 8;
            if len2 != 0 && len1 + len2 <= FAST_BITS {
                entry = (first & 0xff) | (second & 0xff) << 8 | 2 << 16 | len1 << 20;
                entry |= (len1 + len2) << 24;
            }
            t[i] = entry;
        }
        i += 1;
    }
    t
}

const BAD: HpackError = HpackError("a Huffman string with EOS or bad padding");

/// Decodes `src` (an HPACK Huffman string) appending to `out`. Err for EOS inside the string,
/// padding longer than 7 bits, or padding that is not the EOS prefix (all ones).
pub(crate) fn decode(src: &[u8], out: &mut Vec<u8>) -> Result<(), HpackError> {
    // The shortest code is 5 bits, so this is the most the string can hold (plus one byte, as
    // the fast path writes two symbols' room). Writing into a slice by index keeps the count in
    // a register, where `push` stores the length each time.
    let start = out.len();
    out.resize(start + src.len() * 8 / 5 + 1, 0);
    let r = decode_into(src, &mut out[start..]);
    out.truncate(start + *r.as_ref().unwrap_or(&0));
    r.map(|_| ())
}

fn decode_into(src: &[u8], buf: &mut [u8]) -> Result<usize, HpackError> {
    // The unread bits sit at the top of `acc`; `nbits` of them are real, the rest zeros.
    let mut acc = 0u64;
    let mut nbits = 0u32;
    let mut pos = 0;
    let mut n = 0;
    loop {
        // Refill to at least 57 bits while input lasts, 8 bytes at a time when there are 8.
        if nbits <= 56 {
            if let Some(word) = src.get(pos..pos + 8) {
                let word = u64::from_be_bytes(word.try_into().unwrap());
                let take = (64 - nbits) / 8;
                acc |= word >> nbits;
                nbits += take * 8;
                pos += take as usize;
                // Drops the bits of a byte that did not fit whole: it is read next time.
                if nbits < 64 {
                    acc &= !(u64::MAX >> nbits);
                }
            } else {
                while nbits <= 56 && pos < src.len() {
                    acc |= u64::from(src[pos]) << (56 - nbits);
                    nbits += 8;
                    pos += 1;
                }
            }
        }
        // The common case: codes of at most 12 bits, as long as 12 real bits are there.
        while nbits >= FAST_BITS {
            let e = FAST[(acc >> (64 - FAST_BITS)) as usize];
            let count = (e >> 16) as usize & 3;
            if count == 0 {
                break;
            }
            let len = e >> 24;
            buf[n] = e as u8;
            buf[n + 1] = (e >> 8) as u8;
            n += count;
            acc <<= len;
            nbits -= len;
        }
        // A long code needs up to 30 bits: refill first if the input has more.
        if nbits < 30 && pos < src.len() {
            continue;
        }
        if nbits == 0 {
            return Ok(n);
        }
        // The input's last bits (fewer than 12), or a long code.
        let e = FAST[(acc >> (64 - FAST_BITS)) as usize];
        let len = (e >> 20) & 0xf;
        // `len > nbits` means the match used the zeros past the end: no symbol there.
        let (sym, len) = if len != 0 && len <= nbits {
            ((e & 0xff) as usize, len)
        } else {
            match long_code(acc, nbits) {
                Some(found) => found,
                // No code completes in the bits left, so the input has ended (a long code
                // would have fit in 30 bits): what is left is padding, which must be under
                // 8 bits and EOS's prefix (all ones).
                None => {
                    let ones = !(u64::MAX >> nbits);
                    return if nbits <= 7 && acc == ones {
                        Ok(n)
                    } else {
                        Err(BAD)
                    };
                }
            }
        };
        if sym == EOS {
            return Err(BAD);
        }
        buf[n] = sym as u8;
        n += 1;
        acc <<= len;
        nbits -= len;
    }
}

/// A code longer than the fast table's, by the canonical rule: of the codes of length `len`,
/// the valid ones are `first[len]..first[len] + count[len]`; a prefix past them is the prefix
/// of a longer code.
#[cold]
fn long_code(acc: u64, nbits: u32) -> Option<(usize, u32)> {
    let c = &CANONICAL;
    let mut len = FAST_BITS + 1;
    while len <= nbits.min(MAX_LEN as u32) {
        let code = (acc >> (64 - len)) as u32;
        let i = code.wrapping_sub(c.first[len as usize]);
        if i < c.count[len as usize] {
            let sym = c.sorted[c.offset[len as usize] as usize + i as usize];
            return Some((usize::from(sym), len));
        }
        len += 1;
    }
    None
}

/// How many bytes `encode` appends for `src`. The client's requests are not Huffman-coded
/// (see `hpack::encode_field`): the tests use these two, callers may.
#[cfg_attr(not(test), allow(dead_code))]
pub(crate) fn encoded_len(src: &[u8]) -> usize {
    let bits: usize = src
        .iter()
        .map(|&b| usize::from(LENGTHS[usize::from(b)]))
        .sum();
    bits.div_ceil(8)
}

/// Encodes `src` appending to `out`, padded with ones (EOS's prefix) to a whole byte.
#[cfg_attr(not(test), allow(dead_code))]
pub(crate) fn encode(src: &[u8], out: &mut Vec<u8>) {
    out.reserve(encoded_len(src));
    let mut acc = 0u64;
    let mut nbits = 0u32;
    for &b in src {
        let len = u32::from(LENGTHS[usize::from(b)]);
        // At most 7 bits wait in `acc` here, and a code has at most 30 bits, so it fits.
        acc = (acc << len) | u64::from(CODES[usize::from(b)]);
        nbits += len;
        while nbits >= 8 {
            nbits -= 8;
            out.push((acc >> nbits) as u8);
        }
    }
    if nbits > 0 {
        let pad = 8 - nbits;
        out.push(((acc << pad) | ((1 << pad) - 1)) as u8);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn dec(src: &[u8]) -> Result<Vec<u8>, HpackError> {
        let mut out = Vec::new();
        decode(src, &mut out).map(|()| out)
    }

    fn enc(src: &[u8]) -> Vec<u8> {
        let mut out = Vec::new();
        encode(src, &mut out);
        out
    }

    /// Codes written in RFC 7541 Appendix B (symbol, code, bits): the first and the last symbol
    /// of every length, and a few more. The derived canonical code must give each of them.
    const FROM_RFC: &[(usize, u32, u8)] = &[
        (b'0' as usize, 0x0, 5),
        (b'a' as usize, 0x3, 5),
        (b't' as usize, 0x9, 5),
        (b' ' as usize, 0x14, 6),
        (b'u' as usize, 0x2d, 6),
        (b':' as usize, 0x5c, 7),
        (b'z' as usize, 0x7b, 7),
        (b'&' as usize, 0xf8, 8),
        (b'Z' as usize, 0xfd, 8),
        (b'!' as usize, 0x3f8, 10),
        (b'?' as usize, 0x3fc, 10),
        (b'\'' as usize, 0x7fa, 11),
        (b'|' as usize, 0x7fc, 11),
        (b'#' as usize, 0xffa, 12),
        (b'>' as usize, 0xffb, 12),
        (0, 0x1ff8, 13),
        (b'~' as usize, 0x1ffd, 13),
        (b'^' as usize, 0x3ffc, 14),
        (b'}' as usize, 0x3ffd, 14),
        (b'<' as usize, 0x7ffc, 15),
        (b'{' as usize, 0x7ffe, 15),
        (b'\\' as usize, 0x7fff0, 19),
        (208, 0x7fff2, 19),
        (128, 0xfffe6, 20),
        (226, 0xfffed, 20),
        (153, 0x1fffdc, 21),
        (230, 0x1fffe8, 21),
        (129, 0x3fffd2, 22),
        (233, 0x3fffeb, 22),
        (1, 0x7fffd8, 23),
        (239, 0x7ffff4, 23),
        (9, 0xffffea, 24),
        (237, 0xfffff5, 24),
        (199, 0x1ffffec, 25),
        (235, 0x1ffffef, 25),
        (192, 0x3ffffe0, 26),
        (255, 0x3ffffee, 26),
        (203, 0x7ffffde, 27),
        (254, 0x7fffff0, 27),
        (2, 0xfffffe2, 28),
        (127, 0xffffffc, 28),
        (249, 0xffffffe, 28),
        (10, 0x3ffffffc, 30),
        (13, 0x3ffffffd, 30),
        (22, 0x3ffffffe, 30),
        (EOS, 0x3fffffff, 30),
    ];

    #[test]
    fn canonical_codes_match_rfc_appendix_b() {
        for &(sym, code, len) in FROM_RFC {
            assert_eq!((CODES[sym], LENGTHS[sym]), (code, len), "symbol {sym}");
        }
    }

    /// Every symbol has a length, and the lengths fill the code space exactly (Kraft sum 1),
    /// so no symbol was left out or listed twice.
    #[test]
    fn every_symbol_once_and_the_code_is_complete() {
        assert!(LENGTHS.iter().all(|&l| (5..=30).contains(&l)));
        let listed: usize = BY_LENGTH.iter().map(|(_, s)| s.len()).sum::<usize>() + LENGTH_30.len();
        assert_eq!(listed, 256);
        let kraft: u64 = LENGTHS.iter().map(|&l| 1u64 << (30 - l)).sum();
        assert_eq!(kraft, 1 << 30);
    }

    /// RFC 7541 C.4.1 and C.6.1's strings.
    #[test]
    fn rfc_examples() {
        let cases: &[(&str, &[u8])] = &[
            (
                "www.example.com",
                &[
                    0xf1, 0xe3, 0xc2, 0xe5, 0xf2, 0x3a, 0x6b, 0xa0, 0xab, 0x90, 0xf4, 0xff,
                ],
            ),
            ("no-cache", &[0xa8, 0xeb, 0x10, 0x64, 0x9c, 0xbf]),
            (
                "custom-key",
                &[0x25, 0xa8, 0x49, 0xe9, 0x5b, 0xa9, 0x7d, 0x7f],
            ),
            (
                "custom-value",
                &[0x25, 0xa8, 0x49, 0xe9, 0x5b, 0xb8, 0xe8, 0xb4, 0xbf],
            ),
            ("302", &[0x64, 0x02]),
            ("private", &[0xae, 0xc3, 0x77, 0x1a, 0x4b]),
            (
                "Mon, 21 Oct 2013 20:13:21 GMT",
                &[
                    0xd0, 0x7a, 0xbe, 0x94, 0x10, 0x54, 0xd4, 0x44, 0xa8, 0x20, 0x05, 0x95, 0x04,
                    0x0b, 0x81, 0x66, 0xe0, 0x82, 0xa6, 0x2d, 0x1b, 0xff,
                ],
            ),
            (
                "https://www.example.com",
                &[
                    0x9d, 0x29, 0xad, 0x17, 0x18, 0x63, 0xc7, 0x8f, 0x0b, 0x97, 0xc8, 0xe9, 0xae,
                    0x82, 0xae, 0x43, 0xd3,
                ],
            ),
        ];
        for (text, coded) in cases {
            assert_eq!(enc(text.as_bytes()), *coded, "{text}");
            assert_eq!(dec(coded).unwrap(), text.as_bytes(), "{text}");
            assert_eq!(encoded_len(text.as_bytes()), coded.len());
        }
    }

    #[test]
    fn every_byte_alone_and_long_codes_in_a_row() {
        for b in 0..=255u8 {
            assert_eq!(dec(&enc(&[b])).unwrap(), [b]);
        }
        let all: Vec<u8> = (0..=255u8).rev().chain(0..=255).collect();
        assert_eq!(dec(&enc(&all)).unwrap(), all);
        // Every pair, as the fast table decodes two symbols at once.
        for a in 0..=255u8 {
            for b in 0..=255u8 {
                assert_eq!(dec(&enc(&[a, b])).unwrap(), [a, b]);
            }
        }
    }

    #[test]
    fn bad_strings_are_refused() {
        // EOS itself (30 ones), padded: the RFC treats a decoded EOS as an error.
        assert_eq!(dec(&[0xff, 0xff, 0xff, 0xff]), Err(BAD));
        // 'a' (00011) then EOS then padding.
        assert_eq!(dec(&[0x1f, 0xff, 0xff, 0xff, 0xff]), Err(BAD));
        // Eight bits of padding: a whole byte of ones.
        assert_eq!(dec(&[0xff]), Err(BAD));
        // 'a' then 11 ones.
        assert_eq!(dec(&[0x1f, 0xff]), Err(BAD));
        // Padding that is not all ones: 'a' (00011) then 000.
        assert_eq!(dec(&[0x18]), Err(BAD));
        // '0' (00000) then 111 is fine; 'a' then 110 is not.
        assert_eq!(dec(&[0x07]).unwrap(), b"0");
        assert_eq!(dec(&[0x1e]), Err(BAD));
        // An unfinished long code: 16 ones then 0 padding bits that are not ones.
        assert_eq!(dec(&[0xff, 0xfe]), Err(BAD));
        assert_eq!(dec(&[]).unwrap(), b"");
    }

    proptest! {
        #[test]
        fn round_trip(bytes in proptest::collection::vec(any::<u8>(), 0..300)) {
            let coded = enc(&bytes);
            prop_assert_eq!(coded.len(), encoded_len(&bytes));
            prop_assert_eq!(dec(&coded).unwrap(), bytes);
        }

        #[test]
        fn round_trip_text(text in "[ -~]{0,200}") {
            prop_assert_eq!(dec(&enc(text.as_bytes())).unwrap(), text.as_bytes());
        }

        /// Anything decodes or is refused without a panic, and never to more than 8/5 of it.
        #[test]
        fn arbitrary_input(bytes in proptest::collection::vec(any::<u8>(), 0..200)) {
            let mut out = Vec::new();
            let _ = decode(&bytes, &mut out);
            prop_assert!(out.len() <= bytes.len() * 8 / 5);
        }

        /// Truncating a valid string: decodes to a prefix of the original or is refused.
        #[test]
        fn truncated(bytes in proptest::collection::vec(any::<u8>(), 1..100), cut in any::<prop::sample::Index>()) {
            let coded = enc(&bytes);
            let cut = cut.index(coded.len());
            if let Ok(out) = dec(&coded[..cut]) {
                prop_assert!(bytes.starts_with(&out));
            }
        }
    }
}

//! HPACK's tests: RFC 7541 Appendix C's examples, a model of the dynamic table, and
//! arbitrary blocks.
use super::*;
use proptest::prelude::*;

type Fields = Vec<(Vec<u8>, Vec<u8>)>;

fn hex(s: &str) -> Vec<u8> {
    let digits: Vec<u8> = s.bytes().filter(|b| !b.is_ascii_whitespace()).collect();
    let nibble = |c: u8| (c as char).to_digit(16).unwrap() as u8;
    digits
        .chunks(2)
        .map(|p| nibble(p[0]) << 4 | nibble(p[1]))
        .collect()
}

/// Fields written as the RFC's examples write them, "name: value" a line.
fn fields(text: &str) -> Fields {
    let line = |l: &str| {
        let colon = 1 + l[1..].find(':').unwrap(); // a pseudo-header's name starts with ':'
        (l[..colon].into(), l[colon + 1..].trim_start().into())
    };
    text.lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .map(line)
        .collect()
}

fn decode(d: &mut Decoder, block: &[u8]) -> Result<Fields, HpackError> {
    let mut out = Vec::new();
    d.decode(block, |n, v| out.push((n.to_vec(), v.to_vec())))?;
    Ok(out)
}

/// The dynamic table, newest first.
fn table(d: &Decoder) -> Fields {
    let entry = |i| {
        d.get(62 + i)
            .map(|(n, v): (&[u8], &[u8])| (n.to_vec(), v.to_vec()))
    };
    (0..d.entries.len()).map(|i| entry(i).unwrap()).collect()
}

/// One decoder through RFC blocks: (block, fields, table after it, table size after it).
fn chain(max: usize, steps: &[(&str, &str, &str, usize)]) {
    let mut d = Decoder::with_max_table_size(max);
    for (i, &(block, want, entries, size)) in steps.iter().enumerate() {
        assert_eq!(
            decode(&mut d, &hex(block)).unwrap(),
            fields(want),
            "block {i}"
        );
        assert_eq!(
            (table(&d), d.table_size()),
            (fields(entries), size),
            "block {i}"
        );
    }
}

/// C.2: one block each, on a fresh decoder (block, fields, table after, its size).
#[rustfmt::skip]
const C2: [(&str, &str, &str, usize); 4] = [
    ("400a 6375 7374 6f6d 2d6b 6579 0d63 7573 746f 6d2d 6865 6164 6572",
     "custom-key: custom-header", "custom-key: custom-header", 55),
    ("040c 2f73 616d 706c 652f 7061 7468", ":path: /sample/path", "", 0),
    ("1008 7061 7373 776f 7264 0673 6563 7265 74", "password: secret", "", 0),
    ("82", ":method: GET", "", 0),
];

#[test]
fn c2_one_field_of_each_representation() {
    for step in C2 {
        chain(4096, &[step]);
    }
}

/// C.3 and C.4's three requests: fields, the table after, its size.
#[rustfmt::skip]
const REQUESTS: [(&str, &str, usize); 3] = [
    (":method: GET\n:scheme: http\n:path: /\n:authority: www.example.com",
     ":authority: www.example.com", 57),
    (":method: GET\n:scheme: http\n:path: /\n:authority: www.example.com
      cache-control: no-cache",
     "cache-control: no-cache\n:authority: www.example.com", 110),
    (":method: GET\n:scheme: https\n:path: /index.html\n:authority: www.example.com
      custom-key: custom-value",
     "custom-key: custom-value\ncache-control: no-cache\n:authority: www.example.com", 164),
];

/// C.5 and C.6's three responses (on a 256-byte table): fields, the table after, its size.
#[rustfmt::skip]
const RESPONSES: [(&str, &str, usize); 3] = [
    (":status: 302\ncache-control: private\ndate: Mon, 21 Oct 2013 20:13:21 GMT
      location: https://www.example.com",
     "location: https://www.example.com\ndate: Mon, 21 Oct 2013 20:13:21 GMT
      cache-control: private\n:status: 302", 222),
    (":status: 307\ncache-control: private\ndate: Mon, 21 Oct 2013 20:13:21 GMT
      location: https://www.example.com",
     ":status: 307\nlocation: https://www.example.com\ndate: Mon, 21 Oct 2013 20:13:21 GMT
      cache-control: private", 222),
    (":status: 200\ncache-control: private\ndate: Mon, 21 Oct 2013 20:13:22 GMT
      location: https://www.example.com\ncontent-encoding: gzip
      set-cookie: foo=ASDJKHQKBZXOQWEOPIUAXQWEOIU; max-age=3600; version=1",
     "set-cookie: foo=ASDJKHQKBZXOQWEOPIUAXQWEOIU; max-age=3600; version=1
      content-encoding: gzip\ndate: Mon, 21 Oct 2013 20:13:22 GMT", 215),
];

fn rfc_chain(max: usize, blocks: [&str; 3], want: [(&str, &str, usize); 3]) {
    let steps: Vec<_> = blocks
        .iter()
        .zip(want)
        .map(|(b, (f, t, n))| (*b, f, t, n))
        .collect();
    chain(max, &steps);
}

#[test]
fn c3_requests_without_huffman() {
    let blocks = [
        "8286 8441 0f77 7777 2e65 7861 6d70 6c65 2e63 6f6d",
        "8286 84be 5808 6e6f 2d63 6163 6865",
        "8287 85bf 400a 6375 7374 6f6d 2d6b 6579 0c63 7573 746f 6d2d 7661 6c75 65",
    ];
    rfc_chain(4096, blocks, REQUESTS);
}

#[test]
fn c4_requests_with_huffman() {
    let blocks = [
        "8286 8441 8cf1 e3c2 e5f2 3a6b a0ab 90f4 ff",
        "8286 84be 5886 a8eb 1064 9cbf",
        "8287 85bf 4088 25a8 49e9 5ba9 7d7f 8925 a849 e95b b8e8 b4bf",
    ];
    rfc_chain(4096, blocks, REQUESTS);
}

#[test]
fn c5_responses_without_huffman_evict() {
    let blocks = [
        "4803 3330 3258 0770 7269 7661 7465 611d 4d6f 6e2c 2032 3120 4f63 7420 3230 3133 2032 303a 3133 3a32
         3120 474d 546e 1768 7474 7073 3a2f 2f77 7777 2e65 7861 6d70 6c65 2e63 6f6d",
        "4803 3330 37c1 c0bf",
        "88c1 611d 4d6f 6e2c 2032 3120 4f63 7420 3230 3133 2032 303a 3133 3a32 3220 474d 54c0 5a04 677a 6970
         7738 666f 6f3d 4153 444a 4b48 514b 425a 584f 5157 454f 5049 5541 5851 5745 4f49 553b 206d 6178 2d61
         6765 3d33 3630 303b 2076 6572 7369 6f6e 3d31",
    ];
    rfc_chain(256, blocks, RESPONSES);
}

#[test]
fn c6_responses_with_huffman_evict() {
    let blocks = [
        "4882 6402 5885 aec3 771a 4b61 96d0 7abe 9410 54d4 44a8 2005 9504 0b81 66e0 82a6 2d1b ff6e 919d 29ad
         1718 63c7 8f0b 97c8 e9ae 82ae 43d3",
        "4883 640e ffc1 c0bf",
        "88c1 6196 d07a be94 1054 d444 a820 0595 040b 8166 e084 a62d 1bff c05a 839b d9ab 77ad 94e7 821d d7f2
         e6c7 b335 dfdf cd5b 3960 d5af 2708 7f36 72c1 ab27 0fb5 291f 9587 3160 65c0 03ed 4ee5 b106 3d50 07",
    ];
    rfc_chain(256, blocks, RESPONSES);
}

fn int(bytes: &[u8], n: u32) -> Result<(usize, usize), HpackError> {
    let mut pos = 0;
    read_int(bytes, &mut pos, n).map(|v| (v, pos))
}

#[test]
fn integers() {
    // C.1.1 (the bits above the prefix are not the integer's), C.1.2, C.1.3.
    assert_eq!(int(&[0xea], 5), Ok((10, 1)));
    assert_eq!(int(&[0x1f, 0x9a, 0x0a], 5), Ok((1337, 3)));
    assert_eq!(int(&[0x2a], 8), Ok((42, 1)));
    // A full prefix is always followed by a byte, even to add 0.
    assert_eq!(int(&[0x1e], 5), Ok((30, 1)));
    assert_eq!(int(&[0x1f, 0x00], 5), Ok((31, 2)));
    assert_eq!(int(&[0xff, 0x00], 8), Ok((255, 2)));
    assert_eq!(int(&[0x1f], 5), Err(TRUNCATED));
    assert_eq!(int(&[0x1f, 0x80], 5), Err(TRUNCATED));
    // u32::MAX is the most; past it, or past 5 continuation bytes, is an overflow.
    let mut max = Vec::new();
    write_int(&mut max, 0, 5, u32::MAX as usize);
    assert_eq!(int(&max, 5), Ok((u32::MAX as usize, 6)));
    assert_eq!(int(&hex("1f e1 ff ff ff 0f"), 5), Err(OVERFLOW));
    assert_eq!(int(&hex("1f 80 80 80 80 80 00"), 5), Err(OVERFLOW));
    assert_eq!(int(&hex("7f ff ff ff ff ff 01"), 7), Err(OVERFLOW));
    assert_eq!(int(&[0xff; 64], 8), Err(OVERFLOW));
}

#[test]
fn errors() {
    let err = |block: &str| Decoder::new().decode(&hex(block), |_, _| {}).unwrap_err();
    assert_eq!(err("80"), INDEX_ZERO);
    assert_eq!(err("be"), INDEX_PAST); // 62 with an empty dynamic table
    assert_eq!(err("7e 00"), INDEX_PAST); // a literal's name index
    assert_eq!(err("0f 2f 00"), INDEX_PAST); // 15 + 47 = 62 in a 4-bit prefix
    assert_eq!(err("3fe21f"), UPDATE_ABOVE); // 4097
    assert_eq!(err("82 20"), UPDATE_LATE);
    assert_eq!(err("400a 6375"), STRING_PAST);
    assert_eq!(err("04 7f 00"), STRING_PAST); // a length of 127
    assert_eq!(err("41"), TRUNCATED);
    assert_eq!(err("00"), TRUNCATED);
    assert_eq!(err("ffffffffffff01"), OVERFLOW);
    let bad_huffman = huffman::decode(&[0xff], &mut Vec::new()).unwrap_err();
    assert_eq!(err("04 81 ff"), bad_huffman);
    let phrase = "an index past the static and dynamic tables";
    assert_eq!(INDEX_PAST.to_string(), phrase);
}

#[test]
fn size_updates_and_evictions() {
    let mut d = Decoder::new();
    let mut dec = |block: &str| decode(&mut d, &hex(block)).unwrap();
    dec("8286 8441 0f77 7777 2e65 7861 6d70 6c65 2e63 6f6d");
    // Two updates at the start (to 0, then to the limit, 4096): the table is emptied.
    assert_eq!(dec("20 3fe11f 82"), fields(":method: GET"));
    assert_eq!(d.table_size(), 0);
    assert_eq!(decode(&mut d, &hex("be")), Err(INDEX_PAST));
    // custom-key: custom-header (55) fits in 58 (31 + 27), not in 40 (31 + 9): too large,
    // it empties the table and is not inserted, but the field is still decoded.
    let key = "400a 6375 7374 6f6d 2d6b 6579 0d63 7573 746f 6d2d 6865 6164 6572";
    let field = fields("custom-key: custom-header");
    decode(&mut d, &hex(&format!("3f1b {key} 82 {key}"))).unwrap();
    assert_eq!((table(&d), d.table_size()), (field.clone(), 55));
    assert_eq!(decode(&mut d, &hex(&format!("3f09 {key}"))), Ok(field));
    assert_eq!(d.table_size(), 0);
    // A name taken from the entry that its own insertion evicts: copied first.
    decode(&mut d, &hex(&format!("3f1b {key}"))).unwrap();
    let both = fields("custom-key: new\ncustom-key: new");
    assert_eq!(decode(&mut d, &hex("7e 03 6e65 77 be")), Ok(both));
    assert_eq!(d.table_size(), 45);
}

#[test]
fn encode_field_forms() {
    let long = "v".repeat(300);
    let long_field = [hex("0006 782d 6c6f 6e67 7fad 01"), long.clone().into()].concat();
    #[rustfmt::skip]
    let cases = [
        (":method", "GET", hex("82")),
        (":scheme", "https", hex("87")),
        (":path", "/", hex("84")),
        ("accept-encoding", "gzip, deflate", hex("90")),
        ("accept", "", hex("93")),
        (":path", "/sample/path", hex("040c 2f73 616d 706c 652f 7061 7468")), // C.2.2
        (":status", "201", hex("08 03 323031")),
        ("user-agent", "x", hex("0f2b 01 78")), // 58 = 15 + 43
        ("custom-key", "v", hex("000a 6375 7374 6f6d 2d6b 6579 01 76")),
        ("x-long", &long, long_field), // 300 = 127 + 0x2d + (1 << 7)
    ];
    let mut block = Vec::new();
    for (name, value, want) in &cases {
        let mut out = Vec::new();
        encode_field(name.as_bytes(), value.as_bytes(), &mut out);
        assert_eq!(out, *want, "{name}: {value}");
        block.extend_from_slice(&out);
    }
    let mut d = Decoder::new();
    let decoded = decode(&mut d, &block).unwrap();
    assert!(decoded
        .iter()
        .zip(&cases)
        .all(|((n, v), c)| (&n[..], &v[..]) == (c.0.as_bytes(), c.1.as_bytes())));
    assert_eq!((decoded.len(), d.table_size()), (cases.len(), 0));
}

/// What a test encoder that uses all of HPACK sends, to check the decoder against a model.
#[derive(Debug, Clone)]
enum Op {
    /// Incremental indexing of (name, value), the name an entry's if there is an index.
    Insert(Option<prop::sample::Index>, Vec<u8>, Vec<u8>, bool),
    /// Without indexing (or never indexed when the last is true).
    Literal(Vec<u8>, Vec<u8>, bool, bool),
    /// Static or dynamic.
    Indexed(prop::sample::Index),
}

fn op() -> impl Strategy<Value = Op> {
    let bytes = || proptest::collection::vec(any::<u8>(), 0..40);
    let index = any::<prop::sample::Index>;
    prop_oneof![
        (
            proptest::option::of(index()),
            bytes(),
            bytes(),
            any::<bool>()
        )
            .prop_map(|(i, n, v, h)| Op::Insert(i, n, v, h)),
        (bytes(), bytes(), any::<bool>(), any::<bool>())
            .prop_map(|(n, v, h, never)| Op::Literal(n, v, h, never)),
        index().prop_map(Op::Indexed),
    ]
}

fn write_str(out: &mut Vec<u8>, s: &[u8], huffman: bool) {
    if huffman {
        write_int(out, 0x80, 7, huffman::encoded_len(s));
        huffman::encode(s, out);
    } else {
        write_string(out, s);
    }
}

fn size(entries: &Fields) -> usize {
    entries.iter().map(|(n, v)| n.len() + v.len() + 32).sum()
}

/// The model: entries newest first, and the capacity. Encodes one block of `ops` (after a
/// size update if any) and returns the fields it means.
fn model_block(
    model: &mut (Fields, usize),
    update: Option<usize>,
    ops: &[Op],
    out: &mut Vec<u8>,
) -> Fields {
    let (entries, capacity) = model;
    let evict = |e: &mut Fields, max: usize| {
        while size(e) > max {
            e.pop();
        }
    };
    if let Some(new) = update {
        write_int(out, 0x20, 5, new);
        *capacity = new;
        evict(entries, new);
    }
    let mut fields = Vec::new();
    for op in ops {
        match op.clone() {
            Op::Insert(index, mut name, value, huffman) => {
                if let Some(i) = index
                    .filter(|_| !entries.is_empty())
                    .map(|i| i.index(entries.len()))
                {
                    write_int(out, 0x40, 6, 62 + i);
                    name = entries[i].0.clone();
                } else {
                    out.push(0x40);
                    write_str(out, &name, huffman);
                }
                write_str(out, &value, huffman);
                fields.push((name.clone(), value.clone()));
                let new = name.len() + value.len() + 32;
                evict(entries, capacity.saturating_sub(new));
                if new <= *capacity {
                    entries.insert(0, (name, value));
                }
            }
            Op::Literal(name, value, huffman, never) => {
                out.push(if never { 0x10 } else { 0x00 });
                write_str(out, &name, huffman);
                write_str(out, &value, !huffman);
                fields.push((name, value));
            }
            Op::Indexed(i) => {
                let i = i.index(STATIC.len() + entries.len());
                write_int(out, 0x80, 7, i + 1);
                let (n, v) = STATIC.get(i).map_or_else(
                    || entries[i - 61].clone(),
                    |(n, v)| (n.to_vec(), v.to_vec()),
                );
                fields.push((n, v));
            }
        }
    }
    fields
}

proptest! {
    #[test]
    fn int_round_trip(n in 1u32..=8, v in 0..=u32::MAX as usize, flags in any::<u8>()) {
        let mut out = Vec::new();
        write_int(&mut out, flags & !((1 << n) - 1) as u8, n, v);
        prop_assert_eq!(int(&out, n), Ok((v, out.len())));
    }

    /// Blocks of every representation, table size updates among them, through one decoder:
    /// its fields and table equal the model's after each block.
    #[test]
    fn decoder_matches_a_model(
        blocks in proptest::collection::vec(
            (proptest::option::of(0usize..=300), proptest::collection::vec(op(), 0..12)),
            1..6,
        )
    ) {
        let mut d = Decoder::with_max_table_size(300);
        let mut model = (Vec::new(), 300);
        for (update, ops) in &blocks {
            let mut block = Vec::new();
            let want = model_block(&mut model, *update, ops, &mut block);
            prop_assert_eq!(decode(&mut d, &block).unwrap(), want);
            prop_assert_eq!(table(&d), model.0.clone());
            prop_assert_eq!(d.table_size(), size(&model.0));
        }
    }

    /// Any bytes: decoded or refused, never a panic; and no field is bigger than the table
    /// or than the block's Huffman expansion.
    #[test]
    fn arbitrary_blocks(blocks in proptest::collection::vec(proptest::collection::vec(any::<u8>(), 0..512), 1..4)) {
        let mut d = Decoder::new();
        for block in &blocks {
            let bound = 4096 + block.len() * 8 / 5;
            let _ = d.decode(block, |n, v| assert!(n.len() + v.len() <= bound));
        }
    }

    /// Static names and values, new names, long values (multi-byte lengths).
    #[test]
    fn encode_field_round_trip(
        fields in proptest::collection::vec(
            (
                prop_oneof![
                    (0..STATIC.len()).prop_map(|i| STATIC[i].0.to_vec()),
                    "[a-z0-9-]{1,20}".prop_map(String::into_bytes),
                ],
                prop_oneof![
                    (0..STATIC.len()).prop_map(|i| STATIC[i].1.to_vec()),
                    proptest::collection::vec(any::<u8>(), 0..300),
                ],
            ),
            0..10,
        )
    ) {
        let mut block = Vec::new();
        for (n, v) in &fields {
            encode_field(n, v, &mut block);
        }
        let mut d = Decoder::new();
        prop_assert_eq!(decode(&mut d, &block).unwrap(), fields);
        prop_assert_eq!(d.table_size(), 0);
    }
}

/// `cargo test --release -p loadmark-engine --lib bench_nginx -- --ignored --nocapture`
#[test]
#[ignore]
fn bench_nginx_response_block() {
    // As nginx sends it: ":status: 200" indexed, the rest literals without indexing, with
    // static names and Huffman-coded values.
    let mut block = vec![0x88];
    let fields = fields(
        "server: nginx/1.22.1\ndate: Tue, 14 Apr 2026 10:00:00 GMT
                         content-type: text/plain\ncontent-length: 13",
    );
    for (name, value) in &fields {
        write_int(&mut block, 0, 4, static_names(name).unwrap().0);
        write_str(&mut block, value, true);
    }
    let mut d = Decoder::new();
    let (mut total, n) = (0, 2_000_000);
    for round in 0..3 {
        let start = std::time::Instant::now();
        for _ in 0..n {
            let block = std::hint::black_box(&block[..]);
            d.decode(block, |n, v| total += n.len() + v.len()).unwrap();
        }
        let ns = start.elapsed().as_nanos() as f64 / n as f64;
        eprintln!(
            "round {round}: {} byte block, {ns:.1} ns per block ({total})",
            block.len()
        );
    }
}

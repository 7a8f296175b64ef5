//! The response parser on its hot path: a keep-alive response read in one piece, a chunked
//! one, and a 10 KiB body. Run with `cargo bench -p loadmark-wire`.

use criterion::{black_box, criterion_group, criterion_main, Criterion, Throughput};
use loadmark_wire::http1::{Feed, Limits, ResponseParser};

fn parse_all(parser: &mut ResponseParser, bytes: &[u8]) -> u64 {
    parser.reset(false);
    match parser.feed(bytes).unwrap() {
        Feed::Done { response, .. } => response.body_bytes,
        Feed::NeedMore { .. } => unreachable!("whole response given"),
    }
}

fn bench(c: &mut Criterion) {
    let json = b"HTTP/1.1 200 OK\r\nServer: nginx/1.22.1\r\nDate: Sun, 22 Nov 2026 21:00:00 GMT\r\nContent-Type: application/json\r\nContent-Length: 100\r\nConnection: keep-alive\r\n\r\n{\"id\":12345,\"name\":\"anchor-bench\",\"ok\":true,\"tags\":[\"a\",\"b\",\"c\"],\"msg\":\"xxxxxxxxxxxxxxxxxxxxxxxxxxx\"}";
    let mut chunked = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n".to_vec();
    for _ in 0..4 {
        chunked.extend_from_slice(b"400\r\n");
        chunked.extend(std::iter::repeat_n(b'a', 0x400));
        chunked.extend_from_slice(b"\r\n");
    }
    chunked.extend_from_slice(b"0\r\n\r\n");
    let mut big = b"HTTP/1.1 200 OK\r\nContent-Length: 10240\r\n\r\n".to_vec();
    big.extend(std::iter::repeat_n(b'a', 10240));

    let mut parser = ResponseParser::new(Limits::default());
    let mut group = c.benchmark_group("parse_response");
    for (name, bytes) in [
        ("json_100B", &json[..]),
        ("chunked_4KiB", &chunked[..]),
        ("body_10KiB", &big[..]),
    ] {
        group.throughput(Throughput::Bytes(bytes.len() as u64));
        group.bench_function(name, |b| {
            b.iter(|| parse_all(&mut parser, black_box(bytes)))
        });
    }
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);

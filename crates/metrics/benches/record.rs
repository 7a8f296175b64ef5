//! The recording path every response takes: `Recorder::record` into HDR histograms, closed
//! and open loop. Run with `cargo bench -p loadmark-metrics`.

use std::time::{Duration, Instant};

use criterion::{black_box, criterion_group, criterion_main, Criterion};
use loadmark_metrics::{Recorder, Sample};

fn bench(c: &mut Criterion) {
    let origin = Instant::now();
    let mut recorder = Recorder::new(origin);
    let started = origin + Duration::from_millis(5);
    let closed = Sample {
        scheduled: None,
        started,
        first_byte: started + Duration::from_micros(180),
        ended: started + Duration::from_micros(240),
        status: 200,
        bytes_read: 230,
        bytes_written: 80,
    };
    let open = Sample {
        scheduled: Some(started - Duration::from_micros(30)),
        ..closed
    };
    c.bench_function("record_closed_loop", |b| {
        b.iter(|| recorder.record(black_box(&closed)))
    });
    c.bench_function("record_open_loop", |b| {
        b.iter(|| recorder.record(black_box(&open)))
    });
}

criterion_group!(benches, bench);
criterion_main!(benches);

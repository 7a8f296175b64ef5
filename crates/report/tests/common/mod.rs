//! Reports built from exact samples, for the renderer and gate tests.
#![allow(dead_code)]

use std::time::{Duration, Instant, UNIX_EPOCH};

use loadmark_metrics::{Aggregate, ErrorKind, Recorder, Sample};
use loadmark_plan::{Load, Plan, RequestSpec, Stop, Target, Timeouts, TlsPolicy};
use loadmark_report::{Environment, Report, RunFacts};

/// A closed-loop report whose requests end every `1s / per_second` for `seconds` seconds,
/// latencies cycling through `latencies_us`; every `fail_every`-th is a 503 (0: none), and
/// `errors` timeouts are added.
pub fn report_of(
    seconds: u64,
    per_second: u64,
    latencies_us: &[u64],
    fail_every: u64,
    errors: u64,
) -> Report {
    let origin = Instant::now();
    let mut recorder = Recorder::new(origin);
    let n = seconds * per_second;
    for i in 0..n {
        let ended = origin + Duration::from_micros(i * 1_000_000 / per_second + 1);
        let latency = Duration::from_micros(latencies_us[i as usize % latencies_us.len()]);
        let started = ended.checked_sub(latency).unwrap_or(origin);
        recorder.record(&Sample {
            scheduled: None,
            started,
            first_byte: started + latency / 2,
            ended,
            status: if fail_every > 0 && i % fail_every == fail_every - 1 {
                503
            } else {
                200
            },
            bytes_read: 100,
            bytes_written: 50,
        });
    }
    for e in 0..errors {
        recorder.record_error(
            ErrorKind::Timeout,
            origin + Duration::from_millis(e * 10),
            &"timed out",
        );
    }
    let mut aggregate = Aggregate::new(1, 0);
    aggregate.add(recorder.finish());
    let facts = RunFacts {
        started_at: UNIX_EPOCH + Duration::from_secs(1_795_381_503),
        elapsed: Duration::from_secs(seconds),
        measured: Duration::from_secs(seconds),
        interrupted: false,
        client_cpu_user: Duration::from_millis(40),
        client_cpu_system: Duration::from_millis(60),
        busiest_worker: 0.35,
        target_addr: "127.0.0.1:8080".into(),
    };
    Report::new(&plan(), &facts, aggregate.finish(), env())
}

pub fn plan() -> Plan {
    Plan {
        request: RequestSpec {
            method: "GET".into(),
            url: Target::parse("http://127.0.0.1:8080/api/features").unwrap(),
            headers: Vec::new(),
            body: Vec::new(),
            keep_alive: true,
        },
        load: Load::Closed {
            connections: 3,
            threads: 1,
        },
        stop: Stop::Duration(Duration::from_secs(3)),
        timeouts: Timeouts::default(),
        warmup: Duration::ZERO,
        tls: TlsPolicy::Verify,
        mix: Default::default(),
        websocket: None,
    }
}

pub fn env() -> Environment {
    Environment {
        cpu_model: "Test CPU @ 3.00GHz".into(),
        cores: 2,
        memory_bytes: 24 << 30,
        os: "Debian GNU/Linux 12 (bookworm)".into(),
        kernel: "6.1.0-test".into(),
    }
}

//! Reports built from exact samples, for the renderer and gate tests.
#![allow(dead_code)]

use std::time::{Duration, Instant, UNIX_EPOCH};

use loadmark_metrics::{Aggregate, ErrorKind, Recorder, Sample};
use loadmark_plan::{Load, Plan, RequestSpec, Stop, Target, Timeouts, TlsPolicy};
use loadmark_report::{Build, Environment, Report, RunFacts};

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
    let facts = facts(seconds, 0.35);
    Report::new(&plan(), &facts, aggregate.finish(), env())
}

/// A run's facts: `seconds` long, all measured, 40 ms user and 60 ms system CPU, the busiest
/// load thread at `busiest_worker`.
pub fn facts(seconds: u64, busiest_worker: f64) -> RunFacts {
    RunFacts {
        started_at: UNIX_EPOCH + Duration::from_secs(1_795_381_503),
        elapsed: Duration::from_secs(seconds),
        measured: Duration::from_secs(seconds),
        interrupted: false,
        client_cpu_user: Duration::from_millis(40),
        client_cpu_system: Duration::from_millis(60),
        busiest_worker,
        target_addr: "127.0.0.1:8080".into(),
        contention: None,
    }
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
        protocol: Default::default(),
        script: None,
        checks: Vec::new(),
        scenario: None,
        scenarios: Vec::new(),
        cookies: false,
    }
}

pub fn env() -> Environment {
    Environment {
        cpu_model: "Test CPU @ 3.00GHz".into(),
        cores: 2,
        memory_bytes: 24 << 30,
        os: "Debian GNU/Linux 12 (bookworm)".into(),
        kernel: "6.1.0-test".into(),
        build: None,
        host: None,
    }
}

/// A WebSocket echo run: 4 sessions, round trips from the schedule, pings, a server close.
pub fn ws_report() -> Report {
    let origin = Instant::now();
    let mut recorder = Recorder::new(origin);
    recorder.record_connection(origin, Duration::from_micros(900));
    for i in 0..2000u64 {
        let intended = origin + Duration::from_micros(1_000 + i * 1_000);
        let sent = intended + Duration::from_micros(50 + i % 300);
        let ended = sent + Duration::from_micros(100 + (i * 7919) % 2_000);
        let ws = recorder.websocket(sent);
        ws.messages_sent += 1;
        ws.payload_bytes_sent += 128 + i % 3968;
        recorder.record_round_trip(Some(intended), sent, ended);
        let ws = recorder.websocket(ended);
        ws.messages_received += 1;
        ws.payload_bytes_received += 128 + i % 3968;
        recorder.record_bytes(ended, 136 + i % 3968, 142 + i % 3968);
        if i % 100 == 0 {
            let ws = recorder.websocket(ended);
            ws.pings_sent += 1;
            ws.pongs_received += 1;
            ws.ping_rtt.record(150 + i / 10).unwrap();
        }
    }
    {
        let end = origin + Duration::from_millis(2_100);
        let ws = recorder.websocket(end);
        ws.sessions_opened = 4;
        ws.sessions_completed = 3;
        *ws.upgrade_status.entry(101).or_default() += 4;
        *ws.upgrade_status.entry(403).or_default() += 1;
        *ws.close_codes.entry(1000).or_default() += 3;
        *ws.close_codes.entry(1001).or_default() += 1;
        for _ in 0..4 {
            ws.session_duration.record(2_000_000).unwrap();
        }
    }
    recorder.record_error(
        ErrorKind::Handshake,
        origin + Duration::from_millis(500),
        &"upgrade answered 403 Forbidden, expected 101 Switching Protocols",
    );
    recorder.record_error(
        ErrorKind::Closed,
        origin + Duration::from_millis(1_500),
        &"the server closed the session with 1001 (going away) 1.5s in",
    );
    let mut aggregate = Aggregate::new(1, 0);
    aggregate.add(recorder.finish());
    let plan = loadmark_plan::Settings {
        connections: Some(4),
        threads: Some(1),
        duration: Some(Duration::from_secs(2)),
        ..Default::default()
    }
    .to_ws_plan(
        RequestSpec {
            method: "GET".into(),
            url: Target::parse_ws("ws://127.0.0.1:8080/ws/echo").unwrap(),
            headers: Vec::new(),
            body: Vec::new(),
            keep_alive: true,
        },
        loadmark_plan::WsSpec {
            mode: loadmark_plan::WsMode::Echo,
            payload: loadmark_plan::WsPayload::Random {
                min: 128,
                max: 4096,
            },
            binary: false,
            interval: Some(Duration::from_millis(4)),
            session_duration: Some(Duration::from_secs(10)),
            ping: Some(Duration::from_millis(100)),
            reply_match: None,
        },
        1,
    )
    .unwrap();
    let facts = RunFacts {
        started_at: UNIX_EPOCH + Duration::from_secs(1_795_381_503),
        elapsed: Duration::from_secs(2),
        measured: Duration::from_secs(2),
        interrupted: false,
        client_cpu_user: Duration::from_millis(20),
        client_cpu_system: Duration::from_millis(30),
        busiest_worker: 0.2,
        target_addr: "127.0.0.1:8080".into(),
        contention: None,
    };
    Report::new(&plan, &facts, aggregate.finish(), test_environment())
}

/// The fixed machine every golden report ran on.
pub fn test_environment() -> Environment {
    Environment {
        cpu_model: "Test CPU @ 3.00GHz".into(),
        cores: 2,
        memory_bytes: 24 << 30,
        os: "Debian GNU/Linux 12 (bookworm)".into(),
        kernel: "6.1.0-test".into(),
        build: Some(Build {
            version: "0.1.0".into(),
            commit: "0123456789ab".into(),
            features: vec!["mimalloc".into()],
            target: "x86_64-unknown-linux-musl".into(),
        }),
        host: Some(loadmark_report::HostState {
            usable_cpus: 1,
            cpuidle_driver: "haltpoll".into(),
            guest_halt_poll_ns: Some(200_000),
            clocksource: "tsc".into(),
        }),
    }
}

/// Checks `json` (a saved report) against `loadmark schema result`, naming every violation.
pub fn assert_valid_report(json: &str) {
    assert_valid(&loadmark_report::result_schema(), json);
}

/// Checks `json` (a plan bundle) against `loadmark schema bundle`.
pub fn assert_valid_bundle(json: &str) {
    assert_valid(&loadmark_report::bundle_schema(), json);
}

fn assert_valid(schema: &serde_json::Value, json: &str) {
    let validator = jsonschema::validator_for(schema).expect("the published schema is valid");
    let instance: serde_json::Value = serde_json::from_str(json).expect("JSON");
    let errors: Vec<String> = validator
        .iter_errors(&instance)
        .map(|e| format!("{} at {}", e, e.instance_path()))
        .collect();
    assert!(
        errors.is_empty(),
        "not valid against the schema:\n{}",
        errors.join("\n")
    );
}

/// An open-loop run at 200 req/s for 3 s: latency from the intended time, each request sent
/// 40-200 µs late, 5 requests dropped.
pub fn open_report() -> Report {
    let origin = Instant::now();
    let mut recorder = Recorder::new(origin);
    for i in 0..600u64 {
        let intended = origin + Duration::from_micros(i * 5_000 + 1);
        let started = intended + Duration::from_micros(40 + i % 160);
        let ended = started + Duration::from_micros(300 + (i * 7) % 900);
        recorder.record(&Sample {
            scheduled: Some(intended),
            started,
            first_byte: started + Duration::from_micros(200),
            ended,
            status: 200,
            bytes_read: 100,
            bytes_written: 50,
        });
    }
    let mut totals = {
        let mut aggregate = Aggregate::new(1, 0);
        aggregate.add(recorder.finish());
        aggregate.finish()
    };
    totals.snapshot.dropped = 5;
    let mut plan = plan();
    plan.load = Load::Open {
        rate: loadmark_plan::Profile::constant(200.0, Duration::from_secs(3)),
        max_connections: 10,
        connections: None,
        threads: 1,
    };
    let facts = facts(3, 0.2);
    Report::new(&plan, &facts, totals, env())
}

/// A plan bundle of `steps` steps (connections 1, 2, 3, ...) on two targets, with a compare
/// table of p99 by connections and target.
pub fn many_steps_bundle(steps: u64) -> loadmark_report::Bundle {
    let mut bundle = loadmark_report::Bundle::of_report(report_of(3, 100, &[500], 0, 0));
    bundle.name = Some("Many steps".into());
    bundle.plan_file = "plan.yaml".into();
    bundle.steps.clear();
    for i in 0..steps {
        let c = i / 2 + 1;
        let target = if i % 2 == 0 { "alpha" } else { "beta" };
        let lat: Vec<u64> = (0..10).map(|k| 300 * c + k * 41 + 100 * (i % 2)).collect();
        bundle.steps.push(loadmark_report::BundleStep {
            number: i as usize + 1,
            target: target.into(),
            params: vec![
                ("target".into(), target.into()),
                ("connections".into(), c.to_string()),
            ],
            command: format!("loadmark run http://127.0.0.1:8080/ -c {c} -d 3s"),
            report: report_of(3, 100 + 40 * i, &lat, 0, 0),
            server: None,
            services: Vec::new(),
            notes: Vec::new(),
            capacity: None,
        });
    }
    bundle.compare = vec![loadmark_plan::CompareFile {
        title: None,
        rows: "connections".into(),
        columns: "target".into(),
        metric: loadmark_plan::CompareMetric::P99,
    }];
    bundle
}

/// Two scenarios at once for 5 s: `browse` (50 req/s from second 0, 2 ms) and `checkout`
/// (20 req/s from second 2, 8 ms, every 10th a 503), each request recorded for the run and
/// for its scenario's one step, as the engine records them.
pub fn scenarios_report() -> Report {
    use loadmark_metrics::{ScenarioSlot, StepOutcome};
    let origin = Instant::now();
    let mut recorder = Recorder::new(origin);
    let step = vec!["get".to_string()];
    // The recorder takes requests in the order they end, as a worker ends them.
    let mut ends: Vec<(u64, &str, u64)> = Vec::new();
    for (name, from_s, per_second) in [("browse", 0u64, 50u64), ("checkout", 2, 20)] {
        for i in 0..(5 - from_s) * per_second {
            ends.push((from_s * 1_000_000 + i * 1_000_000 / per_second + 1, name, i));
        }
    }
    ends.sort_unstable();
    for (end_us, name, i) in ends {
        let ended = origin + Duration::from_micros(end_us);
        let base_us = if name == "browse" { 2_000 } else { 8_000 };
        let latency = Duration::from_micros(base_us + i % 7 * 100);
        let started = ended - latency;
        let status = if name == "checkout" && i % 10 == 9 {
            503
        } else {
            200
        };
        recorder.record(&Sample {
            scheduled: None,
            started,
            first_byte: started + latency / 2,
            ended,
            status,
            bytes_read: 100,
            bytes_written: 50,
        });
        let s = recorder.scenario_in(ended, ScenarioSlot::Named(name));
        s.record_step(
            0,
            &step,
            StepOutcome::Response {
                status,
                latency_us: latency.as_micros() as u64,
            },
        );
        s.iterations += 1;
    }
    let mut aggregate = Aggregate::new(1, 0);
    aggregate.add(recorder.finish());
    let mut plan = plan();
    plan.scenarios = [("browse", 0u64), ("checkout", 2)]
        .into_iter()
        .map(|(name, start)| loadmark_plan::NamedScenario {
            name: name.into(),
            steps: Vec::new(),
            load: plan.load.clone(),
            stop: Stop::Duration(Duration::from_secs(5 - start)),
            start: Duration::from_secs(start),
            thresholds: Vec::new(),
        })
        .collect();
    let facts = facts(5, 0.2);
    Report::new(&plan, &facts, aggregate.finish(), env())
}

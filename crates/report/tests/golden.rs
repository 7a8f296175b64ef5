//! Golden files of every renderer: a fixed report must render byte for byte as saved.
//! Regenerate after an intended change with `UPDATE_GOLDEN=1 cargo test -p loadmark-report`.

mod common;

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant, UNIX_EPOCH};

use loadmark_metrics::{Aggregate, ErrorKind, Recorder, Sample};
use loadmark_plan::{Load, Plan, RequestSpec, Stop, Target, Timeouts, TlsPolicy};
use loadmark_report::{render_json, render_text, Report, RunFacts};

fn fixed_report() -> Report {
    let origin = Instant::now();
    let mut recorder = Recorder::new(origin);
    for i in 0..3000u64 {
        let ended = origin + Duration::from_micros(1_000 + i * 1_000);
        let latency = Duration::from_micros(200 + (i * 7919) % 5_000);
        let started = ended - latency;
        recorder.record(&Sample {
            scheduled: None,
            started,
            first_byte: started + latency / 2,
            ended,
            status: if i % 100 == 99 { 503 } else { 200 },
            bytes_read: 120,
            bytes_written: 80,
        });
        if i % 1000 == 0 {
            recorder.record_connection(ended, Duration::from_micros(150 + i / 10));
        }
    }
    recorder.record_error(
        ErrorKind::Timeout,
        origin + Duration::from_millis(2_500),
        &"no complete response within 10s (--timeout); 0 bytes received",
    );
    let mut aggregate = Aggregate::new(1, 0);
    let mut report = recorder.finish();
    report.in_flight = 3;
    aggregate.add(report);
    let plan = Plan {
        request: RequestSpec {
            method: "GET".into(),
            url: Target::parse("http://127.0.0.1:8080/api/features").unwrap(),
            headers: vec![
                ("Client-Id".into(), "golden".into()),
                ("Authorization".into(), "Bearer secret".into()),
            ],
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
    };
    let facts = RunFacts {
        started_at: UNIX_EPOCH + Duration::from_secs(1_795_381_503),
        elapsed: Duration::from_secs(3),
        measured: Duration::from_secs(3),
        interrupted: false,
        client_cpu_user: Duration::from_millis(40),
        client_cpu_system: Duration::from_millis(60),
        busiest_worker: 0.35,
        target_addr: "127.0.0.1:8080".into(),
        contention: None,
    };
    Report::new(
        &plan,
        &facts,
        aggregate.finish(),
        common::test_environment(),
    )
}

fn check(name: &str, actual: &str) {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("testdata")
        .join(name);
    if std::env::var_os("UPDATE_GOLDEN").is_some() {
        std::fs::write(&path, actual).unwrap();
        return;
    }
    let expected = std::fs::read_to_string(&path)
        .unwrap_or_else(|_| panic!("{} missing: run with UPDATE_GOLDEN=1", path.display()));
    assert!(
        expected == actual,
        "{name} differs from the golden file; if intended, regenerate with UPDATE_GOLDEN=1\n--- actual ---\n{actual}"
    );
}

#[test]
fn text_golden() {
    let text = render_text(&fixed_report());
    assert!(text.contains("3001 completed"), "{text}");
    assert!(
        text.contains("WARNING: 31 of 3001 requests failed"),
        "{text}"
    );
    check("run.txt", &text);
}

#[test]
fn json_golden_and_round_trip() {
    let report = fixed_report();
    let json = render_json(&report);
    assert!(!json.contains("Bearer secret"));
    check("run.json", &json);
    common::assert_valid_report(&json);
    // Compared as text: a mismatch then prints a readable diff, not two huge structs.
    let again = render_json(&Report::from_json(&json).unwrap());
    assert!(again == json, "JSON does not round-trip");
}

#[test]
fn newer_schema_is_refused() {
    let json =
        render_json(&fixed_report()).replacen("\"schema_version\": 2", "\"schema_version\": 99", 1);
    let err = Report::from_json(&json).unwrap_err().to_string();
    assert!(err.contains("upgrade loadmark"), "{err}");
}

/// A report written by schema 1 (percentiles as pairs, `totals.service` and `totals.lag`)
/// still loads, with the same figures, and is written again in the current schema.
#[test]
fn a_schema_1_result_still_loads() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("testdata/run-v1.json");
    let old_text = std::fs::read_to_string(path).unwrap();
    assert!(old_text.contains("\"schema_version\": 1") && old_text.contains("\"service\":"));
    let old = Report::from_json(&old_text).unwrap();
    let now = fixed_report();
    assert_eq!(old.summary.latency, now.summary.latency);
    assert_eq!(old.totals.latency, now.totals.latency);
    assert_eq!(old.totals.service, now.totals.service);
    assert_eq!(old.summary.requests, now.summary.requests);
    let again = render_json(&old);
    assert!(
        again.contains("\"schema_version\": 2"),
        "written again, it is written in the current schema"
    );
    common::assert_valid_report(&again);
}

#[test]
fn websocket_text_markdown_and_json() {
    let report = common::ws_report();
    let ws = report
        .summary
        .websocket
        .as_ref()
        .expect("a WebSocket summary");
    assert_eq!((ws.messages_sent, ws.messages_received), (2000, 2000));
    assert_eq!((ws.upgrades_passed, ws.upgrades_failed), (4, 1));
    assert_eq!(ws.requested_send_rate, Some(1000.0));
    assert!(report.run.latency_definition.contains("intended send time"));
    let text = render_text(&report);
    assert!(
        text.contains("upgrade check (101): 4 passed, 1 failed (101: 4, 403: 1)"),
        "{text}"
    );
    assert!(
        text.contains("sent 2000 (1000.00/s of 1000/s requested)"),
        "{text}"
    );
    assert!(text.contains("Server closes 1000: 3, 1001: 1"), "{text}");
    check("ws.txt", &text);
    let md = loadmark_report::render_markdown(&loadmark_report::Bundle::of_report(report.clone()));
    assert!(md.contains("## WebSocket"), "{md}");
    assert!(
        !md.contains("All steps") && !md.contains("loadmark bench"),
        "one run is no plan: {md}"
    );
    check("ws.md", &md);
    let csv = loadmark_report::render_csv(&report);
    let sent: u64 = csv
        .lines()
        .skip(1)
        .map(|l| l.split(',').nth(10).unwrap().parse::<u64>().unwrap())
        .sum();
    // The CSV leaves out the fragment after the run's 2 s; the JSON series keeps it.
    let tail: u64 = report
        .series
        .iter()
        .filter(|p| p.partial_s.is_some())
        .map(|p| p.messages_sent)
        .sum();
    assert!(tail > 0, "the fixture ends past 2 s");
    assert_eq!(
        sent + tail,
        2000,
        "the CSV series carries messages per second: {csv}"
    );
    let summary = loadmark_report::render_csv_summary(&report);
    assert!(
        summary
            .trim_end()
            .ends_with(&format!(",1000.000,1000.000,4,,,,,,,0{}", ",".repeat(13))),
        "{summary}"
    );
    let json = render_json(&report);
    assert!(json.contains("\"messages_sent\": 2000"), "{json}");
    common::assert_valid_report(&json);
    let again = render_json(&Report::from_json(&json).unwrap());
    assert!(again == json, "WebSocket JSON does not round-trip");
}

/// A run where nothing succeeded has empty histograms: every renderer says `n/a` where a
/// figure does not exist, never `0µs`, which would claim something was fast.
#[test]
fn empty_histograms_read_n_a() {
    let r = common::report_of(2, 0, &[100], 0, 5);
    assert_eq!(r.summary.requests.responses, 0);
    assert_eq!(r.summary.requests.errors, 5);
    let text = render_text(&r);
    assert!(
        text.contains("TTFB          p50 n/a  p99 n/a  max n/a"),
        "{text}"
    );
    assert!(text.contains("min n/a  mean n/a"), "{text}");
    assert!(text.contains("opened: p50 n/a"), "{text}");
    let md = loadmark_report::render_markdown(&loadmark_report::Bundle::of_report(r.clone()));
    let html = loadmark_report::render_html(&r);
    for (name, out) in [("text", &text), ("markdown", &md), ("html", &html)] {
        assert!(!out.contains(" 0µs"), "{name}: {out}");
        assert!(
            !out.contains(">0µs<") && !out.contains("| 0µs"),
            "{name}: {out}"
        );
    }
}

/// The open-loop fixture (service time, schedule lag, drops) follows the published schema too.
#[test]
fn open_loop_json_follows_the_schema() {
    let json = render_json(&common::open_report());
    assert!(json.contains("\"schedule_lag\"") && json.contains("\"service_time\""));
    common::assert_valid_report(&json);
    let bundle = loadmark_report::Bundle::of_report(common::open_report());
    common::assert_valid_bundle(&bundle.to_json());
}

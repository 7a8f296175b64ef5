//! `--check` end to end over loopback (issue 17): counted in the report the binary writes
//! (checked against the published schema), thresholds on checks decide the exit code, and a
//! malformed check is a usage error naming the flag and the column, before any load.

mod common;

use common::*;

use std::process::Output;

fn text(o: &Output) -> String {
    format!(
        "{}\n--- stderr ---\n{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

#[test]
fn malformed_check_is_a_usage_error_naming_flag_and_column() {
    let server = target();
    let url = format!("http://{}/json", server.local_addr());
    let o = loadmark()
        .args(["run", &url, "-n", "20", "-q", "--check", "json /ok = true"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    let t = text(&o);
    assert!(t.contains("--check"), "{t}");
    assert!(t.contains("column 10: expected"), "{t}");
    assert_eq!(
        server.requests_served(),
        0,
        "no load before the usage error"
    );
}

#[test]
fn checks_are_counted_in_the_report_and_gate_the_exit_code() {
    let server = target();
    let dir = temp_dir("checks", "gate");
    let json = dir.join("r.json");
    // /flaky/2/4 always answers the wrong body, /flaky/2/3 always the right one.
    let wrong = format!("http://{}/flaky/2/4", server.local_addr());
    let o = loadmark()
        .args(["run", &wrong, "-n", "150", "-c", "3", "-q", "-o"])
        .arg(&json)
        .args([
            "--check",
            "status == 200",
            "--check",
            "ok: json /ok == true",
        ])
        .args(["--threshold", "checks>99%", "--threshold", "check:ok>=0%"])
        .arg("--junit")
        .arg(dir.join("junit.xml"))
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(3), "checks>99% fails: {}", text(&o));
    assert_eq!(server.requests_served(), 150);
    let r = report_json(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let checks = r.summary.checks.as_ref().expect("checks in the report");
    let ok = checks.get("ok").unwrap();
    assert_eq!((ok.passed, ok.failed), (0, 150));
    assert_eq!(
        ok.first_failure.as_deref(),
        Some("status 200; body: {\"ok\":false,\"items\":[]}")
    );
    assert_eq!(checks.get("status == 200").unwrap().passed, 150);
    assert_eq!(
        r.failed(),
        150,
        "a 200 that failed a check is a failed request"
    );
    assert_eq!(r.summary.requests.errors, 0, "and not a transport error");
    assert_eq!(r.summary.latency.count, 150, "its latency is recorded");
    let results: Vec<(&str, bool)> = r
        .thresholds
        .iter()
        .map(|t| (t.threshold.as_str(), t.passed))
        .collect();
    assert_eq!(results, [("checks>99%", false), ("check:ok>=0%", true)]);
    assert!(text(&o).contains("thresholds failed"), "{}", text(&o));
    // JUnit: a test case per threshold and per check; the failed check is a failure.
    let junit = std::fs::read_to_string(dir.join("junit.xml")).unwrap();
    assert!(junit.contains("tests=\"4\" failures=\"2\""), "{junit}");
    assert!(
        junit.contains("<testcase classname=\"loadmark.checks\" name=\"ok\">\n      <failure message=\"check ok failed on 150 of 150 responses"),
        "{junit}"
    );

    // Merging two reports adds the check counts exactly.
    let merged = dir.join("m.json");
    let o = loadmark()
        .arg("merge")
        .args([&json, &json])
        .arg("-o")
        .arg(&merged)
        .output()
        .unwrap();
    // The merged run is judged as a run is: every request failed a check (issue 42).
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    assert!(
        text(&o).contains("the run failed: every request failed: 0 errors, 300 responses (300 x 200), 300 2xx/3xx responses that failed a check"),
        "{}",
        text(&o)
    );
    let m = report_json(&std::fs::read_to_string(&merged).unwrap()).unwrap();
    let ok = m
        .summary
        .checks
        .as_ref()
        .unwrap()
        .get("ok")
        .unwrap()
        .clone();
    assert_eq!((ok.passed, ok.failed), (0, 300));

    let right = format!("http://{}/flaky/2/3", server.local_addr());
    let o = loadmark()
        .args(["run", &right, "-n", "50", "-c", "2", "-q"])
        .args([
            "--check",
            "ok: json /ok == true",
            "--check",
            "json /items length == 3",
        ])
        .args(["--threshold", "checks>99.9%", "--threshold", "check:ok>99%"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let t = text(&o);
    assert!(t.contains("PASS  check:ok>99%  (actual 100.000%)"), "{t}");
    assert!(t.contains("json /items length == 3"), "{t}");
}

#[test]
fn threshold_on_an_unknown_check_fails_with_no_data() {
    let server = target();
    let url = format!("http://{}/json", server.local_addr());
    let o = loadmark()
        .args(["run", &url, "-n", "10", "-c", "1", "-q"])
        .args(["--check", "status == 200", "--threshold", "check:nosuch>1%"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(3), "{}", text(&o));
    assert!(
        text(&o).contains("check:nosuch>1%  (actual no data)"),
        "{}",
        text(&o)
    );
}

/// A response or WebSocket reply that fails a check is a failed request for `--fail-on
/// failed`, as the report counts it; without --fail-on the run still passes (its requests
/// succeeded), and thresholds keep exit code 3.
#[test]
fn fail_on_failed_counts_responses_and_replies_that_failed_a_check() {
    let server = target();
    let http = format!("http://{}/status", server.local_addr());
    let ws = format!("ws://{}/ws/echo", server.local_addr());
    let http_run = |extra: &[&str]| {
        loadmark()
            .args(["run", &http, "-n", "20", "-c", "2", "-t", "1"])
            .args(["--check", "status == 201"])
            .args(extra)
            .output()
            .unwrap()
    };
    let ws_run = |extra: &[&str]| {
        loadmark()
            .args(["ws", &ws, "-c", "2", "-n", "20", "--mode", "request"])
            .args(["--message", "hello", "--check", "body == bye"])
            .args(extra)
            .output()
            .unwrap()
    };

    let o = http_run(&["--fail-on", "failed"]);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    let t = text(&o);
    assert!(t.contains("20 of 20 requests failed"), "{t}");
    assert!(
        t.contains("every request failed")
            && t.contains("20 2xx/3xx responses that failed a check"),
        "{t}"
    );
    // Checks are not a status class nor transport errors, but a run whose every response
    // failed a check failed, whatever --fail-on names (one exit-code rule, issue 42).
    for all_failed in [&[][..], &["--fail-on", "4xx"], &["--fail-on", "errors"]] {
        let o = http_run(all_failed);
        assert_eq!(o.status.code(), Some(1), "{all_failed:?}: {}", text(&o));
        assert!(text(&o).contains("every request failed"), "{}", text(&o));
    }
    let o = http_run(&["--fail-on", "failed", "--threshold", "checks>99%"]);
    assert_eq!(
        o.status.code(),
        Some(3),
        "thresholds come first: {}",
        text(&o)
    );

    let o = ws_run(&["--fail-on", "failed"]);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    let t = text(&o);
    assert!(t.contains("20 of 20 replies failed a check"), "{t}");
    assert_eq!(server.ws_messages_received(), 20);
    // Every reply failed a check: the run failed without --fail-on too (one rule).
    let o = ws_run(&[]);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    // Replies that pass every check: nothing failed.
    let o = loadmark()
        .args(["ws", &ws, "-c", "2", "-n", "20", "--mode", "request"])
        .args(["--message", "hello", "--check", "body == hello"])
        .args(["--fail-on", "failed"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
}

/// Over `--http2` a run judges each response's status and latency, in both loops: a check
/// asked for is made (it once passed silently as "0 of 0"). One that reads headers or the
/// body is refused before any load: the HTTP/2 drivers do not keep every stream's response.
#[test]
fn http2_runs_check_the_status_and_refuse_checks_on_the_body() {
    let server = target_h2();
    let dir = temp_dir("checks", "http2");
    let url = format!("http://{}/json", server.local_addr());
    for (name, load) in [
        ("closed", vec!["-n", "120", "-c", "2"]),
        ("open", vec!["-R", "400", "-d", "300ms"]),
    ] {
        let json = dir.join(format!("{name}.json"));
        let o = loadmark()
            .args(["run", &url, "--http2", "-q", "-o"])
            .arg(&json)
            .args(&load)
            .args(["--check", "status == 201", "--check", "fast: latency < 10s"])
            .output()
            .unwrap();
        assert_eq!(
            o.status.code(),
            Some(1),
            "{name}: every request failed a check: {}",
            text(&o)
        );
        let r = report_json(&std::fs::read_to_string(&json).unwrap()).unwrap();
        let checks = r.summary.checks.as_ref().expect("checks in the report");
        let responses = r.summary.requests.responses;
        assert!(responses >= 100, "{name}: {responses}");
        let status = checks.get("status == 201").unwrap();
        assert_eq!((status.passed, status.failed), (0, responses), "{name}");
        assert_eq!(checks.get("fast").unwrap().passed, responses, "{name}");
        assert_eq!(r.failed(), responses, "{name}");
    }
    let served = server.requests_served();
    let o = loadmark()
        .args(["run", &url, "--http2", "-n", "10", "-q"])
        .args(["--check", "json /ok == true"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(
        text(&o).contains("--check on headers or the body"),
        "{}",
        text(&o)
    );
    assert_eq!(
        server.requests_served(),
        served,
        "no load before the usage error"
    );
}

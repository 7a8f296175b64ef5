//! `--remote-write`: a real Prometheus (Debian's package, installed by .ci/run) started by the
//! test on loopback with its remote-write receiver on; loadmark pushes to it, and the test
//! reads the stored series back through Prometheus' HTTP API.

mod common;

use std::path::Path;

use common::prometheus::{query_range, start_prometheus};
use common::{loadmark, port, report_json, target, temp_dir, wait_until, Daemon};

/// Prometheus with no scrape targets, receiving remote writes on a leased loopback port.
fn start_receiver(dir: &Path) -> (Daemon, String) {
    start_prometheus(
        dir,
        "global:\n  scrape_interval: 1m\n",
        &["--web.enable-remote-write-receiver"],
    )
}

#[test]
fn a_real_prometheus_receives_the_pushed_totals_of_the_report() {
    let server = target();
    let dir = temp_dir("remote_write", "prometheus");
    let (_prometheus, prom) = start_receiver(&dir);
    let report = dir.join("r.json");
    let url = format!("http://{}/status", server.local_addr());
    // Bounded: 4 s at 200 requests/s.
    let out = loadmark()
        .args(["run", &url, "-R", "200", "-t", "1", "-d", "4s", "-q"])
        .args(["--run-id", "rw", "--remote-write"])
        .arg(format!("http://{prom}/api/v1/write"))
        .arg("-o")
        .arg(&report)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(
        !stderr.contains("--remote-write"),
        "every push was accepted: {stderr}"
    );
    let saved = report_json(&std::fs::read_to_string(&report).unwrap()).unwrap();
    // The last push (loadmark_finished 1) was accepted before loadmark exited, so it is
    // queryable now; the wait only covers Prometheus' own commit.
    wait_until("the final push stored", || {
        query_range(&prom, "loadmark_finished{run_id=\"rw\"}")
            .iter()
            .any(|s| s.1 == 1.0)
    });
    let requests = query_range(&prom, "loadmark_requests_total{run_id=\"rw\",step=\"1\"}");
    assert_eq!(
        requests.last().map(|s| s.1 as u64),
        Some(saved.summary.requests.completed),
        "the pushed total is the report's: {requests:?}"
    );
    assert!(
        requests.len() >= 3,
        "a push per second, each stored: {requests:?}"
    );
    assert!(
        requests
            .windows(2)
            .all(|w| w[0].0 <= w[1].0 && w[0].1 <= w[1].1),
        "{requests:?}"
    );
    let count = query_range(
        &prom,
        "loadmark_latency_seconds_count{run_id=\"rw\",step=\"1\"}",
    );
    assert_eq!(
        count.last().map(|s| s.1 as u64),
        Some(saved.totals.latency.len())
    );
    let open = query_range(&prom, "loadmark_open_connections{run_id=\"rw\",step=\"1\"}");
    assert_eq!(
        open.last().map(|s| s.1),
        Some(0.0),
        "every connection closed at the end: {open:?}"
    );
    server.shutdown();
}

#[test]
fn a_receiver_that_is_not_there_is_a_warning_not_a_failed_run() {
    let server = target();
    let url = format!("http://{}/status", server.local_addr());
    // A leased port nobody listens on: every push is refused at once.
    let nobody = format!("http://127.0.0.1:{}/api/v1/write", port());
    let out = loadmark()
        .args([
            "run",
            &url,
            "-c",
            "1",
            "-n",
            "50",
            "-q",
            "--remote-write",
            &nobody,
        ])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(
        stderr.contains(&format!("warning: --remote-write {nobody}: "))
            && stderr.contains("pushes failed"),
        "{stderr}"
    );
    let bad = loadmark()
        .args([
            "run",
            &url,
            "-n",
            "1",
            "--remote-write",
            "https://127.0.0.1:1/w",
        ])
        .output()
        .unwrap();
    assert_eq!(bad.status.code(), Some(2), "a usage error");
    assert!(String::from_utf8_lossy(&bad.stderr).contains("https is not supported"));
    server.shutdown();
}

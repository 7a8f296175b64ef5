//! `--remote-write`: a real Prometheus (Debian's package, installed by .ci/run) started by the
//! test on loopback with its remote-write receiver on; loadmark pushes to it, and the test
//! reads the stored series back through Prometheus' HTTP API.

mod common;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::process::Command;
use std::time::Duration;

use common::{
    loadmark, port, report_json, retry_on_port_conflict, target, temp_dir, wait_until, Daemon,
};

fn http_get(addr: &str, path: &str) -> std::io::Result<(u16, String)> {
    let mut s = TcpStream::connect(addr)?;
    s.set_read_timeout(Some(Duration::from_secs(30)))?;
    write!(
        s,
        "GET {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n"
    )?;
    let mut text = String::new();
    s.read_to_string(&mut text)?;
    let status = text.get(9..12).and_then(|c| c.parse().ok()).unwrap_or(0);
    let body = text
        .split_once("\r\n\r\n")
        .map_or("", |(_, b)| b)
        .to_string();
    Ok((status, body))
}

/// The raw samples of the one series `selector` names over the last 10 minutes.
fn samples(prom: &str, selector: &str) -> Vec<(f64, f64)> {
    let query: String = format!("{selector}[10m]")
        .bytes()
        .map(|b| match b {
            b'a'..=b'z' | b'A'..=b'Z' | b'0'..=b'9' | b'_' | b'-' | b'.' => (b as char).to_string(),
            _ => format!("%{b:02X}"),
        })
        .collect();
    let (status, body) = http_get(prom, &format!("/api/v1/query?query={query}")).unwrap();
    assert_eq!(status, 200, "{body}");
    let v: serde_json::Value = serde_json::from_str(&body).unwrap();
    v["data"]["result"][0]["values"]
        .as_array()
        .map(|values| {
            values
                .iter()
                .map(|s| {
                    (
                        s[0].as_f64().unwrap(),
                        s[1].as_str().unwrap().parse().unwrap(),
                    )
                })
                .collect()
        })
        .unwrap_or_default()
}

/// Prometheus with no scrape targets, receiving remote writes on a leased loopback port.
fn start_receiver(dir: &Path) -> (Daemon, String) {
    retry_on_port_conflict("prometheus", || {
        let addr = format!("127.0.0.1:{}", port());
        std::fs::write(
            dir.join("prometheus.yml"),
            "global:\n  scrape_interval: 1m\n",
        )
        .unwrap();
        let mut cmd = Command::new("prometheus");
        cmd.arg(format!(
            "--config.file={}",
            dir.join("prometheus.yml").display()
        ))
        .arg(format!(
            "--storage.tsdb.path={}",
            dir.join("data").display()
        ))
        .arg(format!("--web.listen-address={addr}"))
        .arg("--web.enable-remote-write-receiver");
        let daemon = Daemon::spawn("prometheus", cmd)
            .map_err(|e| format!("prometheus (Debian's package; .ci/run installs it): {e}"))?;
        // Ready in about a second when idle; a minute on a loaded two-core machine.
        daemon.wait_for_line(Duration::from_secs(60), |l| {
            l.contains("Server is ready to receive web requests")
                .then_some(())
        })?;
        Ok((daemon, addr))
    })
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
        samples(&prom, "loadmark_finished{run_id=\"rw\"}")
            .iter()
            .any(|s| s.1 == 1.0)
    });
    let requests = samples(&prom, "loadmark_requests_total{run_id=\"rw\",step=\"1\"}");
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
    let count = samples(
        &prom,
        "loadmark_latency_seconds_count{run_id=\"rw\",step=\"1\"}",
    );
    assert_eq!(
        count.last().map(|s| s.1 as u64),
        Some(saved.totals.latency.len())
    );
    let open = samples(&prom, "loadmark_open_connections{run_id=\"rw\",step=\"1\"}");
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

//! A real Prometheus (Debian's package, installed by .ci/run) for the live tests, and the
//! small HTTP client the tests read it and loadmark's endpoint with.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::process::Command;
use std::time::Duration;

use super::{port, retry_on_port_conflict, Daemon};

/// One HTTP/1.1 GET over loopback: status and body.
pub fn http_get(addr: &str, path: &str, accept: &str) -> std::io::Result<(u16, String)> {
    let mut s = TcpStream::connect(addr)?;
    s.set_read_timeout(Some(Duration::from_secs(30)))?;
    write!(
        s,
        "GET {path} HTTP/1.1\r\nHost: {addr}\r\nAccept: {accept}\r\nConnection: close\r\n\r\n"
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

fn percent_encode(text: &str) -> String {
    text.bytes()
        .map(|b| match b {
            b'a'..=b'z' | b'A'..=b'Z' | b'0'..=b'9' | b'_' | b'-' | b'.' => (b as char).to_string(),
            _ => format!("%{b:02X}"),
        })
        .collect()
}

/// The raw samples of the one series `selector` names over the last 10 minutes: (time, value).
pub fn query_range(prom: &str, selector: &str) -> Vec<(f64, f64)> {
    let query = percent_encode(&format!("{selector}[10m]"));
    let (status, body) = http_get(prom, &format!("/api/v1/query?query={query}"), "*/*").unwrap();
    assert_eq!(status, 200, "{body}");
    let v: serde_json::Value = serde_json::from_str(&body).unwrap();
    let Some(values) = v["data"]["result"][0]["values"].as_array() else {
        return Vec::new();
    };
    values
        .iter()
        .map(|s| {
            (
                s[0].as_f64().unwrap(),
                s[1].as_str().unwrap().parse::<f64>().unwrap(),
            )
        })
        .collect()
}

/// Prometheus on a leased loopback port with `config` as its prometheus.yml (in `dir`, with
/// its data) and `extra` flags; its address once it says it is ready.
pub fn start_prometheus(dir: &Path, config: &str, extra: &[&str]) -> (Daemon, String) {
    retry_on_port_conflict("prometheus", || {
        let addr = format!("127.0.0.1:{}", port());
        std::fs::write(dir.join("prometheus.yml"), config).unwrap();
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
        .args(extra);
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

//! Watching a run live: the streamed result read while the run goes, and the OpenMetrics
//! endpoint scraped by a real Prometheus (Debian's package, installed by .ci/run).

mod common;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use common::{loadmark, report_json, target, temp_dir};
use loadmark_metrics::Snapshot;
use loadmark_report::{Stream, StreamLine};

/// Kills and reaps a child process when the test ends, however it ends.
struct Guard(Child);

impl Drop for Guard {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[test]
fn the_stream_is_readable_during_the_run_and_adds_up_to_the_report_exactly() {
    let server = target();
    let dir = temp_dir("live", "stream");
    let (stream, report) = (dir.join("s.jsonl"), dir.join("r.json"));
    let url = format!("http://{}/", server.local_addr());
    let mut child = Guard(
        loadmark()
            .args([
                "run", &url, "-c", "4", "-t", "2", "-d", "4s", "--warmup", "1s", "-q",
            ])
            .arg("--stream")
            .arg(&stream)
            .arg("-o")
            .arg(&report)
            .stdout(Stdio::null())
            .spawn()
            .unwrap(),
    );
    // While the run goes (4 s), complete lines appear and each one parses on its own.
    let deadline = Instant::now() + Duration::from_secs(30);
    let mut seen_while_running = 0;
    while child.0.try_wait().unwrap().is_none() && Instant::now() < deadline {
        let text = std::fs::read_to_string(&stream).unwrap_or_default();
        let complete: Vec<&str> = text
            .split_inclusive('\n')
            .filter(|l| l.ends_with('\n'))
            .collect();
        for line in &complete {
            serde_json::from_str::<StreamLine>(line).expect("every complete line parses");
        }
        seen_while_running = seen_while_running.max(complete.len());
        std::thread::sleep(Duration::from_millis(100));
    }
    assert!(child.0.wait().unwrap().success());
    assert!(
        seen_while_running >= 3,
        "the start line and at least two seconds were readable before the run ended (saw {seen_while_running})"
    );
    let text = std::fs::read_to_string(&stream).unwrap();
    let parsed = Stream::parse(&text).unwrap();
    let summary = parsed.summary.expect("the last line is the report");
    let saved = report_json(&std::fs::read_to_string(&report).unwrap()).unwrap();
    assert_eq!(summary, saved, "the summary line is the report -o wrote");
    let points: Vec<_> = parsed.seconds.iter().map(|s| s.point.clone()).collect();
    assert_eq!(
        points, saved.series,
        "the streamed seconds are the report's series, partial_s included"
    );
    let mut sum = Snapshot::default();
    for s in parsed.seconds.iter().filter(|s| !s.point.warmup) {
        assert_eq!(s.point.responses, s.snapshot.responses);
        sum.merge(&s.snapshot);
    }
    assert_eq!(
        sum, saved.totals,
        "the seconds after warm-up add up to the totals exactly"
    );
    assert!(saved.summary.requests.responses > 0 && parsed.seconds[0].point.warmup);
    // `loadmark report` reads the stream as it reads a saved report.
    let out = loadmark()
        .arg("report")
        .arg(&stream)
        .args(["--format", "json"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        report_json(&String::from_utf8_lossy(&out.stdout)).unwrap(),
        saved
    );
    server.shutdown();
}

/// One HTTP/1.1 GET over loopback; the body.
fn http_get(addr: &str, path: &str) -> std::io::Result<(u16, String)> {
    let mut s = TcpStream::connect(addr)?;
    s.set_read_timeout(Some(Duration::from_secs(10)))?;
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

fn percent_encode(text: &str) -> String {
    text.bytes()
        .map(|b| match b {
            b'a'..=b'z' | b'A'..=b'Z' | b'0'..=b'9' | b'_' | b'-' | b'.' => (b as char).to_string(),
            _ => format!("%{b:02X}"),
        })
        .collect()
}

fn prometheus_binary() -> &'static str {
    for p in ["/usr/bin/prometheus", "/usr/sbin/prometheus"] {
        if Path::new(p).exists() {
            return p;
        }
    }
    panic!(
        "Debian's prometheus package is needed (.ci/run installs it: apt-get install prometheus)"
    );
}

/// Starts Prometheus on a loopback port. Prometheus cannot be handed a bound socket, so the
/// port is picked free and, if another process takes it first, picked again.
fn start_prometheus(dir: &Path) -> (Guard, String) {
    for attempt in 0..5 {
        let port = common::port();
        let addr = format!("127.0.0.1:{port}");
        let log = std::fs::File::create(dir.join(format!("prometheus-{attempt}.log"))).unwrap();
        let child = Command::new(prometheus_binary())
            .arg(format!(
                "--config.file={}",
                dir.join("prometheus.yml").display()
            ))
            .arg(format!(
                "--storage.tsdb.path={}",
                dir.join("data").display()
            ))
            .arg(format!("--web.listen-address={addr}"))
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .unwrap();
        let mut guard = Guard(child);
        // Ready within a minute even on a busy two-core machine (it takes ~1 s idle).
        let deadline = Instant::now() + Duration::from_secs(60);
        while Instant::now() < deadline {
            if guard.0.try_wait().unwrap().is_some() {
                break; // exited: the port was taken, or worse; the log says
            }
            if matches!(http_get(&addr, "/-/ready"), Ok((200, _))) {
                return (guard, addr);
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        let log = std::fs::read_to_string(dir.join(format!("prometheus-{attempt}.log"))).unwrap();
        assert!(
            log.contains("address already in use"),
            "prometheus did not start:\n{log}"
        );
        drop(guard);
    }
    panic!("no free port for prometheus after 5 tries");
}

#[test]
fn a_real_prometheus_scrapes_the_same_totals_and_rate_as_the_report() {
    let server = target();
    let dir = temp_dir("live", "prometheus");
    std::fs::write(dir.join("targets.json"), "[]").unwrap();
    std::fs::write(
        dir.join("prometheus.yml"),
        format!(
            "global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\nscrape_configs:\n  - job_name: loadmark\n    file_sd_configs:\n      - files: ['{}']\n        refresh_interval: 1s\n",
            dir.join("targets.json").display()
        ),
    )
    .unwrap();
    let (_prometheus, prom) = start_prometheus(&dir);
    let url = format!("http://{}/", server.local_addr());
    let report = dir.join("r.json");
    let mut child = Guard(
        loadmark()
            .args(["run", &url, "-R", "300", "-t", "1", "-d", "6s", "-q"])
            .args(["--metrics-listen", "127.0.0.1:0", "--metrics-linger", "30s"])
            .args(["--run-id", "prom-test"])
            .arg("-o")
            .arg(&report)
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap(),
    );
    // loadmark binds port 0 and says which port it got.
    let mut stderr = BufReader::new(child.0.stderr.take().unwrap());
    let mut line = String::new();
    let endpoint = loop {
        line.clear();
        assert!(
            stderr.read_line(&mut line).unwrap() > 0,
            "loadmark ended before naming its endpoint"
        );
        if let Some(rest) = line.split("OpenMetrics at http://").nth(1) {
            break rest.split('/').next().unwrap().to_string();
        }
    };
    let tmp = dir.join("targets.json.tmp");
    std::fs::write(&tmp, format!("[{{\"targets\":[\"{endpoint}\"]}}]")).unwrap();
    std::fs::rename(&tmp, dir.join("targets.json")).unwrap();
    let mut rest = String::new();
    stderr.read_to_string(&mut rest).unwrap();
    assert!(child.0.wait().unwrap().success(), "{rest}");
    assert!(
        !rest.contains("no scrape came"),
        "the final numbers were scraped: {rest}"
    );
    let saved = report_json(&std::fs::read_to_string(&report).unwrap()).unwrap();

    let query = percent_encode("loadmark_requests_total{run_id=\"prom-test\"}[10m]");
    let (status, body) = http_get(&prom, &format!("/api/v1/query?query={query}")).unwrap();
    assert_eq!(status, 200, "{body}");
    let v: serde_json::Value = serde_json::from_str(&body).unwrap();
    let values = v["data"]["result"][0]["values"]
        .as_array()
        .unwrap_or_else(|| panic!("no samples: {body}"));
    let sample = |i: usize| {
        let s = &values[i];
        (
            s[0].as_f64().unwrap(),
            s[1].as_str().unwrap().parse::<f64>().unwrap(),
        )
    };
    let (t_last, v_last) = sample(values.len() - 1);
    assert_eq!(
        v_last as u64, saved.summary.requests.completed,
        "the last scraped request total is the report's"
    );
    // The first sample scraped with data, and the last: counters carry the time of the end
    // of the second they hold, so their slope is the run's own rate.
    let first = (0..values.len()).find(|&i| sample(i).1 > 0.0).unwrap();
    let (t_first, v_first) = sample(first);
    assert!(
        t_last - t_first >= 2.0,
        "scraped across at least two seconds: {body}"
    );
    let rate = (v_last - v_first) / (t_last - t_first);
    let rps = saved.summary.rps;
    assert!(
        (rate - rps).abs() / rps < 0.02,
        "Prometheus' rate {rate:.1}/s agrees with the report's {rps:.1} req/s within 2%"
    );
    server.shutdown();
}

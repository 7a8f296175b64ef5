//! Columns and named styles from the command line and from plans, against the built-in
//! target over loopback.

mod common;

use common::*;

#[test]
fn run_columns_and_style_reach_markdown_html_and_csv() {
    let server = target();
    let url = format!("http://{}/json", server.local_addr());
    let dir = temp_dir("styles", "run");
    let out = loadmark()
        .args([
            "run",
            &url,
            "-c",
            "2",
            "-n",
            "200",
            "-q",
            "--format",
            "md",
            "--columns",
            "rps,rps_stdev,latency_mean,latency_stdev,p0,p95,connect_mean,ttfb_mean,2xx",
            "--style",
            "wrk",
            "-o",
        ])
        .arg(dir.join("r.md"))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let md = std::fs::read_to_string(dir.join("r.md")).unwrap();
    assert!(
        md.contains("| # | step | req/s | req/s stdev | latency mean | latency stdev | latency min | p95 | connect mean | TTFB mean | 2xx |"),
        "{md}"
    );
    assert!(
        md.contains(" | 200 |\n"),
        "the 2xx column counts every response: {md}"
    );
    assert!(
        md.contains("## Each step in wrk's layout") && md.contains("200 requests in"),
        "{md}"
    );
    let csv = loadmark()
        .args([
            "run",
            &url,
            "-c",
            "1",
            "-n",
            "50",
            "-q",
            "--format",
            "csv-summary",
            "--columns",
            "requests,ttfb_p50",
        ])
        .output()
        .unwrap();
    let csv = String::from_utf8_lossy(&csv.stdout);
    let mut lines = csv.lines();
    assert!(
        lines.next().unwrap().ends_with(",requests,ttfb_p50_us"),
        "{csv}"
    );
    let row: Vec<&str> = lines.next().unwrap().split(',').collect();
    assert_eq!(row[row.len() - 2], "50", "{csv}");
    assert!(row[row.len() - 1].parse::<f64>().unwrap() > 0.0, "{csv}");
    let html = loadmark()
        .args([
            "run",
            &url,
            "-c",
            "1",
            "-n",
            "20",
            "-q",
            "--format",
            "html",
            "--columns",
            "rps_max,others",
            "--style",
            "taurus",
        ])
        .output()
        .unwrap();
    let html = String::from_utf8_lossy(&html.stdout);
    assert!(html.contains("<th>req/s max</th><th>others</th>"), "{html}");
    assert!(html.contains("Samples count: 20, 0.00% failures"), "{html}");
    // 200 + 50 + 20 requests: the server's own count agrees.
    assert_eq!(server.requests_served(), 270);
}

#[test]
fn unknown_columns_and_styles_are_refused_where_they_are_written() {
    let out = loadmark()
        .args(["run", "http://127.0.0.1:1/", "--columns", "rps,p99,rsp"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("--columns") && stderr.contains("unknown column \"rsp\""),
        "{stderr}"
    );
    let dir = temp_dir("styles", "plan");
    std::fs::write(
        dir.join("p.yaml"),
        "targets:\n  a: {url: 'http://127.0.0.1:1/'}\nreport:\n  style: bombardier\n  columns: [rps, latency_avg, p99.5, ttfb_median]\n",
    )
    .unwrap();
    let out = loadmark()
        .args(["bench", "--check", "p.yaml"])
        .current_dir(&dir)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("p.yaml:5:"), "{stderr}");
    assert!(
        stderr.contains("unknown column \"ttfb_median\"; the columns are rps"),
        "{stderr}"
    );
    std::fs::write(
        dir.join("s.yaml"),
        "targets:\n  a: {url: 'http://127.0.0.1:1/'}\nreport: {style: wrk2}\n",
    )
    .unwrap();
    let out = loadmark()
        .args(["bench", "--check", "s.yaml"])
        .current_dir(&dir)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("s.yaml:3:") && stderr.contains("wrk2"),
        "{stderr}"
    );
}

/// `run --style wrk` on the terminal: the text report, then the run in wrk's layout (it
/// used to reach Markdown and HTML only, and the terminal showed nothing new).
#[test]
fn run_style_shows_its_layout_in_the_text_report() {
    let server = target();
    let url = format!("http://{}/status", server.local_addr());
    let run = |extra: &[&str]| {
        let mut args = vec!["run", &url, "-c", "2", "-t", "1", "-n", "100", "-q"];
        args.extend(extra);
        let out = loadmark().args(&args).output().unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).unwrap()
    };
    let wrk = run(&["--style", "wrk"]);
    assert!(
        wrk.contains("100 responses"),
        "the text report first: {wrk}"
    );
    assert!(
        wrk.contains(
            "In wrk's layout, computed by loadmark from its own measurements (not wrk output):"
        ),
        "{wrk}"
    );
    for line in [
        "  1 threads and 2 connections",
        "  Thread Stats   Avg      Stdev     Max   +/- Stdev",
        "  100 requests in ",
        "Requests/sec: ",
    ] {
        assert!(wrk.contains(line), "{line:?} missing: {wrk}");
    }
    let ab = run(&["--style", "ab"]);
    assert!(ab.contains("In ab's layout"), "{ab}");
    let plain = run(&[]);
    assert!(
        !plain.contains("layout") && !plain.contains("Thread Stats"),
        "{plain}"
    );
    assert_eq!(server.requests_served(), 300);
}

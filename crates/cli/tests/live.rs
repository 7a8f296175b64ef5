//! Watching a run live: the streamed result read while the run goes, the OpenMetrics
//! endpoint checked by promtool and the OpenMetrics parser and scraped by a real Prometheus
//! (Debian's packages, installed by .ci/run). The terminal view is in tests/tui.rs,
//! the web dashboard in tests/dashboard.rs.

mod common;

use std::io::Write;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use common::prometheus::{self, http_get, query_range};
use common::{
    loadmark, port, report_json, retry_on_port_conflict, target, temp_dir, wait_until, Daemon,
};
use loadmark_metrics::Snapshot;
use loadmark_report::{Report, Stream, StreamLine};

/// How long a run stopped by SIGINT may take to end and write its report: it ends at once
/// when idle; a busy two-core machine can stall it for seconds.
const STOP_PATIENCE: Duration = Duration::from_secs(60);

/// Complete lines of a file another process is writing (a last line without its newline is
/// still being written).
fn complete_lines(path: &Path) -> Vec<String> {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    text.split_inclusive('\n')
        .filter(|l| l.ends_with('\n'))
        .map(str::to_string)
        .collect()
}

fn spawn(name: &str, args: &[&str]) -> Daemon {
    let mut cmd = loadmark();
    cmd.args(args);
    Daemon::spawn(name, cmd).unwrap()
}

#[test]
fn the_stream_is_readable_during_the_run_and_adds_up_to_the_report_exactly() {
    let server = target();
    let dir = temp_dir("live", "stream");
    let (stream, report) = (dir.join("s.jsonl"), dir.join("r.json"));
    let url = format!("http://{}/status", server.local_addr());
    // Bounded at 60 s; the test stops it once it has seen seconds stream in.
    let run = spawn(
        "loadmark run --stream",
        &[
            "run",
            &url,
            "-R",
            "200",
            "-t",
            "1",
            "-d",
            "60s",
            "--warmup",
            "1s",
            "-q",
            "--stream",
            stream.to_str().unwrap(),
            "-o",
            report.to_str().unwrap(),
        ],
    );
    // While the run goes: the start line, the warm-up second and two measured seconds, each
    // a complete line that parses on its own.
    wait_until("four complete stream lines", || {
        complete_lines(&stream).len() >= 4
    });
    let while_running = complete_lines(&stream);
    for line in &while_running {
        serde_json::from_str::<StreamLine>(line).expect("every complete line parses");
    }
    run.signal(libc::SIGINT);
    let status = run.wait(STOP_PATIENCE).unwrap();
    assert_eq!(
        status.code(),
        Some(130),
        "interrupted, report still written"
    );

    let text = std::fs::read_to_string(&stream).unwrap();
    assert!(
        text.starts_with(&while_running.concat()),
        "lines are only ever appended"
    );
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
    assert!(saved.summary.requests.responses >= 200 && parsed.seconds[0].point.warmup);
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

#[test]
fn merge_reads_the_stream_files_of_a_split_run_as_it_reads_their_reports() {
    let server = target();
    let dir = temp_dir("live", "merge");
    let url = format!("http://{}/status", server.local_addr());
    for i in 0..2 {
        let (s, r) = (
            dir.join(format!("s{i}.jsonl")),
            dir.join(format!("r{i}.json")),
        );
        let out = loadmark()
            .args([
                "run", &url, "-c", "2", "-t", "1", "-n", "400", "-q", "--run-id", "m",
            ])
            .args(["--segment", &format!("{i}/2")])
            .arg("--stream")
            .arg(&s)
            .arg("-o")
            .arg(&r)
            .stdout(Stdio::null())
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let first = complete_lines(&s).remove(0);
        let StreamLine::Start(start) = serde_json::from_str(&first).unwrap() else {
            panic!("the first line is the start line: {first}");
        };
        assert_eq!(
            (start.run_id.as_str(), start.segment.as_deref()),
            ("m", Some(&*format!("{i}/2")))
        );
    }
    let merge = |a: &str, b: &str| {
        let out = loadmark()
            .arg("merge")
            .arg(dir.join(a))
            .arg(dir.join(b))
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        report_json(&String::from_utf8_lossy(&out.stdout)).unwrap()
    };
    let from_streams = merge("s0.jsonl", "s1.jsonl");
    let from_reports = merge("r0.json", "r1.json");
    assert_eq!(from_streams.totals, from_reports.totals);
    assert_eq!(from_streams.summary.requests.completed, 400);
    assert_eq!(from_streams.series, from_reports.series);
    server.shutdown();
}

/// What Prometheus sends: OpenMetrics first.
const OPENMETRICS: &str =
    "application/openmetrics-text;version=1.0.0,text/plain;version=0.0.4;q=0.5";

fn sample(text: &str, series: &str) -> Option<f64> {
    text.lines()
        .find_map(|l| l.strip_prefix(series)?.strip_prefix(' '))
        .and_then(|v| v.split(' ').next()?.parse().ok())
}

/// Runs a validator over the exposition on its standard input; panics with what it said.
fn validate(what: &str, mut cmd: Command, text: &str) {
    let mut child = cmd
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("{what} (.ci/run installs it): {e}"));
    child
        .stdin
        .take()
        .unwrap()
        .write_all(text.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    let said = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        out.status.success(),
        "{what} rejects the exposition: {said}\n{text}"
    );
    // promtool's linter prints nothing for clean input; its findings are failures here.
    assert!(
        !said.contains(" is not") && !said.contains("should"),
        "{what}: {said}"
    );
}

/// Scrapes as Prometheus does and checks the OpenMetrics text with a strict parser.
fn check_openmetrics(endpoint: &str) -> String {
    let (status, om) = http_get(endpoint, "/metrics", OPENMETRICS).unwrap();
    assert_eq!(status, 200);
    assert!(om.ends_with("# EOF\n"));
    let mut parser = Command::new("/usr/bin/python3");
    parser.args([
        "-c",
        "import sys\nfrom prometheus_client.openmetrics.parser import text_string_to_metric_families as p\nfor f in p(sys.stdin.read()): pass",
    ]);
    validate(
        "the OpenMetrics parser of Debian's python3-prometheus-client",
        parser,
        &om,
    );
    om
}

/// Both formats, OpenMetrics and Prometheus text (promtool), while the run goes.
fn check_both_formats(endpoint: &str) -> String {
    let om = check_openmetrics(endpoint);
    let (status, text) = http_get(endpoint, "/metrics", "text/plain").unwrap();
    assert_eq!(status, 200);
    let mut promtool = Command::new("promtool");
    promtool.args(["check", "metrics"]);
    validate("promtool check metrics", promtool, &text);
    om
}

#[test]
fn the_exposition_passes_promtool_and_the_openmetrics_parser_and_ends_at_the_reports_totals() {
    let server = target();
    let dir = temp_dir("live", "exposition");
    let report = dir.join("r.json");
    let url = format!("http://{}/status/503", server.local_addr());
    let run = spawn(
        "loadmark run --metrics-listen",
        &[
            "run",
            &url,
            "-R",
            "200",
            "-t",
            "1",
            "-d",
            "60s",
            "-q",
            "--run-id",
            "e",
            "--metrics-listen",
            "127.0.0.1:0",
            "--metrics-linger",
            "60s",
            "-o",
            report.to_str().unwrap(),
        ],
    );
    let endpoint = run
        .wait_for_line(STOP_PATIENCE, |l| {
            Some(
                l.split("OpenMetrics at http://")
                    .nth(1)?
                    .split('/')
                    .next()?
                    .to_string(),
            )
        })
        .unwrap();
    let requests = "loadmark_requests_total{run_id=\"e\",step=\"1\"}";
    wait_until("a measured second in the exposition", || {
        http_get(&endpoint, "/metrics", OPENMETRICS)
            .ok()
            .and_then(|(_, t)| sample(&t, requests))
            .is_some_and(|v| v > 0.0)
    });
    let during = check_both_formats(&endpoint);
    assert_eq!(
        sample(&during, "loadmark_finished{run_id=\"e\",step=\"1\"}"),
        Some(0.0)
    );
    assert_eq!(
        sample(&during, "loadmark_target_rate{run_id=\"e\",step=\"1\"}"),
        Some(200.0)
    );
    run.signal(libc::SIGINT);
    // The run is over and the endpoint lingers for one more scrape: that one is final.
    run.wait_for_line(STOP_PATIENCE, |l| {
        l.contains("keeping http://").then_some(())
    })
    .unwrap();
    // The endpoint closes after this scrape.
    let last = check_openmetrics(&endpoint);
    assert_eq!(run.wait(STOP_PATIENCE).unwrap().code(), Some(130));
    let saved: Report = report_json(&std::fs::read_to_string(&report).unwrap()).unwrap();
    let l = "run_id=\"e\",step=\"1\"";
    assert_eq!(
        sample(&last, &format!("loadmark_finished{{{l}}}")),
        Some(1.0)
    );
    assert_eq!(
        sample(&last, requests),
        Some(saved.summary.requests.completed as f64)
    );
    assert_eq!(
        sample(
            &last,
            &format!("loadmark_responses_total{{{l},class=\"5xx\",code=\"503\"}}")
        ),
        Some(saved.totals.status.get(503) as f64)
    );
    assert_eq!(
        sample(&last, &format!("loadmark_latency_seconds_count{{{l}}}")),
        Some(saved.totals.latency.len() as f64)
    );
    assert_eq!(
        sample(
            &last,
            &format!("loadmark_latency_seconds_bucket{{{l},le=\"+Inf\"}}")
        ),
        Some(saved.totals.latency.len() as f64)
    );
    server.shutdown();
}

/// Prometheus (Debian's package) on a leased loopback port, scraping `target` every second.
fn start_prometheus(dir: &Path, target: &str) -> (Daemon, String) {
    prometheus::start_prometheus(
        dir,
        &format!(
            "global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\nscrape_configs:\n  - job_name: loadmark\n    static_configs:\n      - targets: ['{target}']\n"
        ),
        &[],
    )
}

#[test]
fn a_real_prometheus_scrapes_the_same_totals_and_rate_as_the_report() {
    let server = target();
    let url = format!("http://{}/status", server.local_addr());
    // A rate over scraped samples needs at least two scrapes during the run: a stalled
    // Prometheus can miss them, so that claim may try again; the totals must hold each time.
    loadmark_test_support::timing_attempts("Prometheus' rate", 3, || {
        let dir = temp_dir("live", "prometheus");
        let report = dir.join("r.json");
        // loadmark listens on a leased port so Prometheus' config names it before it starts.
        let (run, prom, _prometheus) = retry_on_port_conflict("loadmark --metrics-listen", || {
            let listen = format!("127.0.0.1:{}", port());
            let (prometheus, prom) = start_prometheus(&dir, &listen);
            let run = spawn(
                "loadmark run --metrics-listen",
                &[
                    "run",
                    &url,
                    "-R",
                    "300",
                    "-t",
                    "1",
                    "-d",
                    "8s",
                    "-q",
                    "--run-id",
                    "prom",
                    "--metrics-listen",
                    &listen,
                    "--metrics-linger",
                    "60s",
                    "-o",
                    report.to_str().unwrap(),
                ],
            );
            run.wait_for_line(STOP_PATIENCE, |l| {
                l.contains("OpenMetrics at").then_some(())
            })?;
            Ok((run, prom, prometheus))
        });
        let status = run.wait(Duration::from_secs(120)).unwrap();
        assert!(
            status.success(),
            "the final numbers were scraped within the linger"
        );
        let saved = report_json(&std::fs::read_to_string(&report).unwrap()).unwrap();
        // The final exposition is the only one with loadmark_finished 1; once Prometheus holds
        // that sample it holds the final counters, committed with it in the same scrape.
        wait_until("Prometheus storing the final scrape", || {
            query_range(&prom, "loadmark_finished{run_id=\"prom\"}")
                .iter()
                .any(|s| s.1 == 1.0)
        });
        let values = query_range(&prom, "loadmark_requests_total{run_id=\"prom\"}");
        // Samples Prometheus refused, to explain a mismatch.
        let refused: Vec<_> = ["out_of_order", "duplicate_timestamp", "out_of_bounds"]
            .iter()
            .map(|k| {
                let name = format!("prometheus_target_scrapes_sample_{k}_total");
                (name.clone(), query_range(&prom, &name).last().map(|v| v.1))
            })
            .collect();
        let &(t_last, v_last) = values.last().expect("samples");
        assert_eq!(
            v_last as u64, saved.summary.requests.completed,
            "the scraped total is the report's: {values:?}; refused: {refused:?}"
        );
        // Counters carry the time of the end of the second they hold, so their slope between
        // two scrapes is the run's own rate over those seconds.
        let Some(&(t_first, v_first)) = values.iter().find(|s| s.1 > 0.0) else {
            return Err(format!("no sample during the run: {values:?}"));
        };
        if t_last - t_first < 2.0 {
            return Err(format!(
                "scrapes spanned only {:.1} s: {values:?}",
                t_last - t_first
            ));
        }
        let rate = (v_last - v_first) / (t_last - t_first);
        let rps = saved.summary.rps;
        assert!(
            (rate - rps).abs() / rps < 0.02,
            "Prometheus' rate {rate:.2}/s agrees with the report's {rps:.2} req/s within 2%: {values:?}"
        );
        Ok(())
    });
    server.shutdown();
}

/// Runs `args` (with a metrics endpoint that lingers) to its end and returns the final
/// exposition, checked by the OpenMetrics parser, and the process's exit code.
fn final_exposition(args: &[&str]) -> (String, Option<i32>) {
    let mut all: Vec<&str> = args.to_vec();
    all.extend(["--metrics-listen", "127.0.0.1:0", "--metrics-linger", "60s"]);
    let run = spawn("loadmark with --metrics-listen", &all);
    let endpoint = run
        .wait_for_line(STOP_PATIENCE, |l| {
            Some(
                l.split("OpenMetrics at http://")
                    .nth(1)?
                    .split('/')
                    .next()?
                    .to_string(),
            )
        })
        .unwrap();
    // Bounded runs (a few hundred requests); a loaded machine may take a while.
    run.wait_for_line(Duration::from_secs(120), |l| {
        l.contains("keeping http://").then_some(())
    })
    .unwrap();
    let last = check_openmetrics(&endpoint);
    let code = run.wait(STOP_PATIENCE).unwrap().code();
    (last, code)
}

#[test]
fn bench_exposes_every_plan_step_under_its_step_label() {
    let server = target();
    let dir = temp_dir("live", "bench");
    std::fs::write(
        dir.join("plan.yaml"),
        format!(
            "name: live\ntargets:\n  api:\n    url: http://{}/status\nload: {{requests: 200}}\nsweep: {{connections: [1, 2]}}\n",
            server.local_addr()
        ),
    )
    .unwrap();
    let plan = dir.join("plan.yaml");
    let out = dir.join("out");
    let (last, code) = final_exposition(&[
        "bench",
        plan.to_str().unwrap(),
        "-o",
        out.to_str().unwrap(),
        "-q",
        "--run-id",
        "b",
    ]);
    assert_eq!(code, Some(0));
    let bundle: loadmark_report::Bundle =
        common::bundle_json(&std::fs::read_to_string(out.join("bundle.json")).unwrap()).unwrap();
    assert_eq!(bundle.steps.len(), 2);
    for (i, step) in bundle.steps.iter().enumerate() {
        let l = format!("run_id=\"b\",step=\"{}\"", i + 1);
        assert_eq!(
            sample(&last, &format!("loadmark_requests_total{{{l}}}")),
            Some(step.report.summary.requests.completed as f64),
            "step {} keeps its final numbers: {last}",
            i + 1
        );
        assert_eq!(
            sample(&last, &format!("loadmark_finished{{{l}}}")),
            Some(1.0)
        );
    }
    server.shutdown();
}

#[test]
fn ws_exposes_its_message_counts() {
    let server = target();
    let dir = temp_dir("live", "ws");
    let report = dir.join("r.json");
    let url = format!("ws://{}/ws/echo", server.local_addr());
    let (last, code) = final_exposition(&[
        "ws",
        &url,
        "-n",
        "60",
        "-q",
        "--run-id",
        "w",
        "-o",
        report.to_str().unwrap(),
    ]);
    assert_eq!(code, Some(0));
    let saved = report_json(&std::fs::read_to_string(&report).unwrap()).unwrap();
    let ws = saved.totals.websocket.as_deref().expect("a WebSocket run");
    let l = "run_id=\"w\",step=\"1\"";
    assert!(ws.messages_sent > 0);
    assert_eq!(
        sample(
            &last,
            &format!("loadmark_ws_messages_total{{{l},direction=\"sent\"}}")
        ),
        Some(ws.messages_sent as f64)
    );
    assert_eq!(
        sample(
            &last,
            &format!("loadmark_ws_messages_total{{{l},direction=\"received\"}}")
        ),
        Some(ws.messages_received as f64)
    );
    assert_eq!(
        sample(&last, &format!("loadmark_ws_sessions_opened_total{{{l}}}")),
        Some(ws.sessions_opened as f64)
    );
    assert_eq!(
        sample(&last, &format!("loadmark_open_sessions{{{l}}}")),
        Some(0.0),
        "every session closed at the end"
    );
    server.shutdown();
}

#[test]
fn the_open_connections_gauge_is_the_connections_asked_for_and_zero_at_the_end() {
    let server = target();
    let url = format!("http://{}/status", server.local_addr());
    // Closed loop, keep-alive: the six connections stay open for the whole run. Bounded at
    // 60 s; the test stops it once the gauge shows them.
    let run = spawn(
        "loadmark run --metrics-listen",
        &[
            "run",
            &url,
            "-c",
            "6",
            "-t",
            "2",
            "-d",
            "60s",
            "-q",
            "--run-id",
            "oc",
            "--metrics-listen",
            "127.0.0.1:0",
            "--metrics-linger",
            "60s",
        ],
    );
    let endpoint = run
        .wait_for_line(STOP_PATIENCE, |l| {
            Some(
                l.split("OpenMetrics at http://")
                    .nth(1)?
                    .split('/')
                    .next()?
                    .to_string(),
            )
        })
        .unwrap();
    let l = "run_id=\"oc\",step=\"1\"";
    let gauge = format!("loadmark_open_connections{{{l}}}");
    // The gauge is the latest hand-over's (about a second old): it reaches 6 once every
    // connection has connected, and stays there while they are kept alive.
    wait_until("six open connections in the exposition", || {
        http_get(&endpoint, "/metrics", OPENMETRICS)
            .ok()
            .and_then(|(_, t)| sample(&t, &gauge))
            == Some(6.0)
    });
    let during = check_openmetrics(&endpoint);
    assert_eq!(sample(&during, &gauge), Some(6.0), "{during}");
    assert_eq!(
        sample(&during, &format!("loadmark_target_connections{{{l}}}")),
        Some(6.0)
    );
    assert!(
        sample(
            &during,
            &format!("loadmark_busiest_thread_cpu_ratio{{{l}}}")
        )
        .is_some_and(|v| (0.0..=1.5).contains(&v)),
        "a thread's share of one core (1.5: getrusage and the wall clock are read apart): {during}"
    );
    assert!(
        !during.contains("loadmark_open_sessions"),
        "sessions only for WebSocket runs"
    );
    run.signal(libc::SIGINT);
    run.wait_for_line(STOP_PATIENCE, |l| {
        l.contains("keeping http://").then_some(())
    })
    .unwrap();
    // Every connection was closed when the load stopped.
    let last = check_openmetrics(&endpoint);
    assert_eq!(sample(&last, &gauge), Some(0.0), "{last}");
    assert_eq!(run.wait(STOP_PATIENCE).unwrap().code(), Some(130));
    server.shutdown();
}

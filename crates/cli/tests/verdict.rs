//! One exit-code rule for every command (issue 42): `run`, `ws` and `bench` against a server
//! that is down all exit 1 and say why, and a latency of nothing reads "n/a", never 0.

mod common;

use common::*;

use std::net::{SocketAddr, TcpListener};
use std::process::Output;

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// A server that accepts every connection and drops it at once, before reading a byte: it
/// listens, and nothing it does is an answer.
fn dropping_server() -> SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    // Lives as long as the test process; each connection is closed as it is accepted.
    std::thread::spawn(move || {
        for conn in listener.incoming() {
            drop(conn);
        }
    });
    addr
}

/// No latency was measured: every text says n/a, none shows a time of zero.
fn assert_no_zero_latency(what: &str, text: &str) {
    const ZEROS: [&str; 6] = ["0µs", "0us", "0.00us", "0ms", "0.00ms", "0.000"];
    let hit = text.lines().find(|l| {
        l.split_whitespace()
            .any(|word| ZEROS.contains(&word.trim_end_matches(',')))
    });
    assert!(
        hit.is_none(),
        "{what} shows a latency of zero ({hit:?}):\n{text}"
    );
    assert!(text.contains("n/a"), "{what} says n/a:\n{text}");
}

#[test]
fn run_against_a_dead_server_exits_1_whether_it_refuses_or_drops() {
    let (_held, port) = refusing_port();
    let refused = format!("http://127.0.0.1:{port}/");
    let o = loadmark()
        .args(["run", &refused, "-n", "20", "-c", "2", "-q"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("loadmark: the run failed: no request succeeded (no 2xx/3xx response): 20 errors, 0 responses; connect:"),
        "{}",
        stderr(&o)
    );
    let text = stdout(&o);
    assert!(text.contains("p50 n/a  p99 n/a  max n/a"), "{text}");
    assert!(
        !text.contains("Histogram"),
        "no histogram of nothing: {text}"
    );
    assert_no_zero_latency("run's text report", &text);

    let dropped = format!("http://{}/", dropping_server());
    let o = loadmark()
        .args(["run", &dropped, "-n", "20", "-c", "2", "-q"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("the run failed: no request succeeded"),
        "{}",
        stderr(&o)
    );
    assert_no_zero_latency("run's text report", &stdout(&o));

    // A threshold on a run that measured nothing fails ("no data"): the user's gate speaks
    // first (exit 3), and the run's failure is still said.
    let o = loadmark()
        .args([
            "run",
            &refused,
            "-n",
            "5",
            "-c",
            "1",
            "-q",
            "--threshold",
            "p99<50ms",
        ])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(3), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("thresholds failed: p99<50ms"),
        "{}",
        stderr(&o)
    );
    assert!(
        stderr(&o).contains("the run failed: no request succeeded"),
        "{}",
        stderr(&o)
    );
}

#[test]
fn every_response_failing_a_check_is_a_failed_run() {
    let server = target();
    let url = format!("http://{}/status", server.local_addr());
    let o = loadmark()
        .args([
            "run",
            &url,
            "-n",
            "30",
            "-c",
            "2",
            "-q",
            "--check",
            "status == 201",
        ])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(
        stderr(&o).contains(
            "the run failed: every request failed: 0 errors, 30 responses (30 x 200), 30 2xx/3xx responses that failed a check"
        ),
        "{}",
        stderr(&o)
    );
    assert_eq!(server.requests_served(), 30);
    // One that passes once is not.
    let o = loadmark()
        .args([
            "run",
            &url,
            "-n",
            "30",
            "-c",
            "2",
            "-q",
            "--check",
            "status == 200",
        ])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
}

#[test]
fn ws_against_a_dead_server_exits_1() {
    let (_held, port) = refusing_port();
    let o = loadmark()
        .args([
            "ws",
            &format!("ws://127.0.0.1:{port}/ws/echo"),
            "--sessions",
            "2",
            "-d",
            "1s",
            "-q",
        ])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("the run failed: no WebSocket session opened"),
        "{}",
        stderr(&o)
    );
    assert_no_zero_latency("ws's text report", &stdout(&o));

    let o = loadmark()
        .args([
            "ws",
            &format!("ws://{}/ws/echo", dropping_server()),
            "--sessions",
            "2",
            "-d",
            "1s",
            "-q",
        ])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("the run failed: no WebSocket session opened"),
        "{}",
        stderr(&o)
    );
}

#[test]
fn bench_against_a_dead_server_exits_1_and_its_documents_say_n_a() {
    let (_held, port) = refusing_port();
    let dir = temp_dir("verdict", "bench");
    std::fs::write(
        dir.join("plan.yaml"),
        format!(
            "name: Down\ntargets:\n  down: {{url: 'http://127.0.0.1:{port}/'}}\n\
             load: {{connections: 2, duration: 1s}}\nreport: {{style: wrk}}\n"
        ),
    )
    .unwrap();
    let o = loadmark()
        .args(["bench", "plan.yaml", "-o", "out", "-q"])
        .current_dir(&dir)
        .output()
        .unwrap();
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(
        err.contains(
            "loadmark: step 1: the run failed: no request succeeded (no 2xx/3xx response)"
        ),
        "{err}"
    );
    // The per-step line: no p99 of nothing.
    assert!(
        err.contains("loadmark: step 1: 0 req/s, p99 n/a, "),
        "{err}"
    );
    // The documents are still written, and say n/a where nothing was measured.
    let md = std::fs::read_to_string(dir.join("out/BENCHMARKS.md")).unwrap();
    let row = md
        .lines()
        .find(|l| l.starts_with("| 1 | down |"))
        .unwrap_or_else(|| panic!("no step row:\n{md}"));
    assert!(row.contains("| n/a | n/a | n/a | n/a | n/a |"), "{row}");
    let style = &md[md
        .find("## Each step in wrk's layout")
        .expect("the wrk block")..];
    assert_no_zero_latency("BENCHMARKS.md's wrk block", style);
    // And the table on stdout.
    let out = stdout(&o);
    assert!(out.starts_with("Down (plan.yaml): 1 step ran\n"), "{out}");
    assert!(out.contains("n/a"), "{out}");
    assert_no_zero_latency("bench's stdout", &out);
}

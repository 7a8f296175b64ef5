//! The CLI's HTTP/2, Unix-socket and pipelining flags end to end: `loadmark serve --http2
//! --unix-socket` as a subprocess, `loadmark run` against it, the report's protocol line.

mod common;

use std::process::Command;

use loadmark_test_support::{Daemon, TempDir, PATIENCE};

fn loadmark(args: &[&str]) -> (bool, Option<i32>, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_loadmark"))
        .args(args)
        .output()
        .unwrap();
    (
        out.status.success(),
        out.status.code(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn http2_unix_socket_and_pipelining_runs_against_loadmark_serve() {
    let dir = TempDir::new("protocols");
    let sock = dir.path().join("t.sock");
    let mut serve = Command::new(env!("CARGO_BIN_EXE_loadmark"));
    serve
        .args(["serve", "--port", "0", "--http2", "--unix-socket"])
        .arg(&sock);
    let server = Daemon::spawn("loadmark serve", serve).unwrap();
    // The server binds port 0 and says which port it got.
    let port: u16 = server
        .wait_for_line(PATIENCE, |line| {
            let rest = line.strip_prefix("loadmark target listening on http://127.0.0.1:")?;
            rest.split(' ').next()?.parse().ok()
        })
        .unwrap();
    let url = format!("http://127.0.0.1:{port}/status");

    let (ok, _, out, err) = loadmark(&[
        "run",
        &url,
        "--http2",
        "--streams",
        "4",
        "-c",
        "2",
        "-n",
        "400",
    ]);
    assert!(ok, "{err}");
    assert!(
        out.contains("HTTP/2, 4 streams per connection, 200.0 requests per connection"),
        "{out}"
    );
    assert!(out.contains("400 completed"), "{out}");

    // More streams than the server allows (128, as nginx): the limit is in the result.
    let json = dir.path().join("limit.json");
    let (ok, _, out, err) = loadmark(&[
        "run",
        &url,
        "--http2",
        "--streams",
        "200",
        "-c",
        "1",
        "-n",
        "600",
        "-o",
        json.to_str().unwrap(),
    ]);
    assert!(ok, "{err}");
    assert!(
        out.contains("the server allowed 128 concurrent streams per connection"),
        "{out}"
    );
    let report = common::report_json(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let p = report.summary.protocol.as_ref().unwrap();
    assert_eq!(p.used, "HTTP/2", "{p:?}");
    assert_eq!(p.streams_per_connection, Some(200), "{p:?}");
    assert_eq!(p.server_max_concurrent_streams, Some(128), "{p:?}");
    assert_eq!(
        p.requests_per_connection.as_ref().unwrap().max,
        600,
        "{p:?}"
    );

    let sock_arg = sock.to_str().unwrap();
    for extra in [&[][..], &["--http2", "--streams", "8"][..]] {
        let mut args = vec![
            "run",
            "http://app.local/status",
            "--unix-socket",
            sock_arg,
            "-c",
            "1",
            "-n",
            "100",
        ];
        args.extend_from_slice(extra);
        let (ok, _, out, err) = loadmark(&args);
        assert!(ok, "{err}");
        assert!(out.contains("over the Unix socket"), "{out}");
        assert!(out.contains("100 completed"), "{out}");
    }

    let (ok, _, out, err) = loadmark(&["run", &url, "--pipeline", "16", "-c", "2", "-n", "320"]);
    assert!(ok, "{err}");
    assert!(
        out.contains("pipelining, up to 16 requests in flight per connection"),
        "{out}"
    );
    assert!(out.contains("320 completed"), "{out}");
}

#[test]
fn conflicting_protocol_flags_are_usage_errors_naming_both() {
    let url = "http://127.0.0.1:9/";
    let (_, code, _, err) = loadmark(&["run", url, "--http2", "--pipeline", "4", "-n", "1"]);
    assert_eq!(code, Some(2), "{err}");
    assert!(
        err.contains("--pipeline") && err.contains("--http2"),
        "{err}"
    );
    let (_, code, _, err) = loadmark(&["run", url, "--streams", "4", "-n", "1"]);
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("--http2"), "{err}");
}

/// `--http2-fallback` (issue 16): against a TLS server that offers no h2, the run goes over
/// HTTP/1.1 and every form of the report says so; without it the run is refused, naming the
/// option. The stream limit and requests per connection ride in the JSON result.
#[test]
fn http2_fallback_and_the_protocol_summary_in_text_and_json() {
    let dir = TempDir::new("fallback");
    let mut serve = Command::new(env!("CARGO_BIN_EXE_loadmark"));
    serve.args(["serve", "--port", "0", "--tls"]);
    let server = Daemon::spawn("loadmark serve --tls", serve).unwrap();
    let port: u16 = server
        .wait_for_line(PATIENCE, |line| {
            let rest = line.strip_prefix("loadmark target listening on https://127.0.0.1:")?;
            rest.split(' ').next()?.parse().ok()
        })
        .unwrap();
    let url = format!("https://127.0.0.1:{port}/status");
    let json = dir.path().join("r.json");
    let (ok, _, out, err) = loadmark(&[
        "run",
        &url,
        "--http2",
        "--http2-fallback",
        "--insecure",
        "-c",
        "2",
        "-n",
        "200",
        "-o",
        json.to_str().unwrap(),
    ]);
    assert!(ok, "{err}");
    assert!(out.contains("200 completed"), "{out}");
    assert!(
        out.contains("HTTP/2 not offered, so HTTP/1.1 was used (--http2-fallback)"),
        "{out}"
    );
    assert!(
        // The two connections share one count: their split is the scheduler's.
        out.contains("HTTP/1.1, 100.0 requests per connection (min ")
            && out.contains("; 2 connections)"),
        "{out}"
    );
    let report = common::report_json(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let p = report.summary.protocol.as_ref().unwrap();
    assert_eq!(p.used, "HTTP/1.1", "{p:?}");
    assert!(
        p.http2_fallback.as_deref().unwrap().contains("ALPN"),
        "{p:?}"
    );
    assert_eq!(
        p.requests_per_connection.as_ref().unwrap().connections,
        2,
        "{p:?}"
    );
    assert!(report.plan.protocol.http2.as_ref().unwrap().fallback);

    let (ok, code, _, err) = loadmark(&["run", &url, "--http2", "--insecure", "-n", "10"]);
    assert!(!ok);
    assert_ne!(code, Some(0));
    assert!(err.contains("--http2-fallback"), "{err}");

    let (_, code, _, err) = loadmark(&["run", &url, "--http2-fallback", "-n", "1"]);
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("--http2"), "{err}");
}

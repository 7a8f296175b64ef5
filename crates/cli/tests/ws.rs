//! `loadmark ws` end to end: the binary against the built-in target's WebSocket endpoints.

mod common;

use common::*;

use std::process::Stdio;
use std::time::Duration;

#[test]
fn ws_echo_reports_messages_both_ways_and_the_server_agrees() {
    let server = target();
    let dir = temp_dir("ws", "echo");
    let out = dir.join("ws.json");
    let url = format!("ws://{}/ws/echo", server.local_addr());
    let run = loadmark()
        .args([
            "ws",
            &url,
            "--sessions",
            "4",
            "--interval",
            "10ms",
            "--payload",
            "128..4096",
            "--ping",
            "200ms",
            "-d",
            "1s",
            "-q",
            "--threshold",
            "errors<1%",
            "-o",
        ])
        .arg(&out)
        .stdout(Stdio::piped())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&run.stdout);
    assert!(
        run.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&run.stderr)
    );
    assert!(
        stdout.contains("upgrade check (101): 4 passed, 0 failed"),
        "{stdout}"
    );
    assert!(stdout.contains("Round trip"), "{stdout}");
    assert!(stdout.contains("Ping RTT"), "{stdout}");
    let report = report_json(&std::fs::read_to_string(&out).unwrap()).unwrap();
    let ws = report.summary.websocket.as_ref().unwrap();
    assert_eq!(ws.messages_sent, ws.messages_received);
    assert_eq!(report.summary.requests.responses, ws.messages_sent);
    assert_eq!(server.ws_messages_received(), ws.messages_sent);
    assert_eq!(server.ws_sessions(), 4);
    assert!(report.run.latency_definition.contains("intended send time"));
    // Renders again from the file, in every format.
    for format in ["text", "md", "html", "csv"] {
        let again = loadmark()
            .args(["report", "--format", format])
            .arg(&out)
            .output()
            .unwrap();
        assert!(again.status.success(), "{format}");
        assert!(!again.stdout.is_empty(), "{format}");
    }
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn ws_request_mode_counts_exactly() {
    let server = target();
    let url = format!("ws://{}/ws/json", server.local_addr());
    let run = loadmark()
        .args([
            "ws",
            &url,
            "-c",
            "3",
            "-n",
            "300",
            "--message",
            "{\"id\":{{seq}},\"lat\":{{rand_f 30 45}},\"lon\":{{rand_f -10 10}}}",
            "--reply-match",
            "id",
            "-q",
            "--format",
            "json",
        ])
        .output()
        .unwrap();
    assert!(
        run.status.success(),
        "{}",
        String::from_utf8_lossy(&run.stderr)
    );
    let report = report_json(&String::from_utf8_lossy(&run.stdout)).unwrap();
    assert_eq!(report.summary.requests.responses, 300);
    assert_eq!(report.summary.requests.errors, 0);
    assert_eq!(server.ws_messages_received(), 300);
}

/// Sessions ramp with `--stages` as `run`'s connections do: up to 6 sessions, held, then
/// down to 0, each surplus session closed politely (Close 1000) as the count falls; every
/// message the report counts, the server counted, and the series shows the ramp.
#[test]
fn ws_sessions_ramp_with_stages_and_close_politely_on_the_way_down() {
    let server = target();
    let url = format!("ws://{}/ws/echo", server.local_addr());
    let run = loadmark()
        .args(["ws", &url, "--stages", "1s:6,1s:6,1s:0", "-t", "2"])
        .args(["-i", "5ms", "-q", "--format", "json"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert!(run.status.success(), "{stderr}");
    let report = report_json(&String::from_utf8_lossy(&run.stdout)).unwrap();
    let ws = report.summary.websocket.as_ref().unwrap();
    // Six slots, each one session for its life: opened while ramping up, ended by loadmark
    // (retired on the way down, or at the end), none by the server, no error.
    assert_eq!(
        (ws.sessions_opened, ws.sessions_completed),
        (6, 6),
        "{ws:?}"
    );
    assert_eq!(server.ws_sessions(), 6);
    assert_eq!(
        report.summary.requests.errors, 0,
        "{:?}",
        report.summary.errors
    );
    assert_eq!(server.ws_messages_received(), ws.messages_sent);
    assert_eq!(ws.messages_received, ws.messages_sent);
    let opened: Vec<u64> = report.series.iter().map(|p| p.connections_opened).collect();
    assert_eq!(opened.iter().sum::<u64>(), 6, "{opened:?}");
    assert!(opened.iter().skip(2).all(|&n| n == 0), "{opened:?}");
    // Messages go out every 5 ms per session: the hold second carries the most.
    let sent: Vec<u64> = report.series.iter().map(|p| p.responses).collect();
    assert!(
        sent.len() >= 3 && sent[1] > sent[2] && sent[1] > sent[0] / 2,
        "{sent:?}"
    );
    assert!(
        matches!(report.plan.load, loadmark_plan::Load::Ramp { .. }),
        "{:?}",
        report.plan.load
    );
}

/// `-R` is an open loop of messages: the rate split over the sessions, each message due on
/// its schedule whether or not earlier ones were answered, its round trip from that time.
#[test]
fn ws_rate_sends_on_schedule_split_over_the_sessions() {
    let server = target();
    let url = format!("ws://{}/ws/echo", server.local_addr());
    let run = loadmark()
        .args([
            "ws", &url, "-c", "10", "-R", "1000", "-d", "1s", "-q", "--format", "json",
        ])
        .output()
        .unwrap();
    assert!(
        run.status.success(),
        "{}",
        String::from_utf8_lossy(&run.stderr)
    );
    let report = report_json(&String::from_utf8_lossy(&run.stdout)).unwrap();
    let ws = report.summary.websocket.as_ref().unwrap();
    // A message every 10 ms on each of 10 sessions: 1000 in the second (a session that
    // opened late owes none from before it opened), each answered and counted by both ends.
    assert!((950..=1000).contains(&ws.messages_sent), "{ws:?}");
    assert_eq!(server.ws_messages_received(), ws.messages_sent);
    assert_eq!(ws.messages_received, ws.messages_sent);
    assert_eq!(
        report.plan.websocket.as_ref().unwrap().interval,
        Some(Duration::from_millis(10))
    );
    assert!(report.run.latency_definition.contains("intended send time"));
    let refused = loadmark()
        .args(["ws", &url, "-R", "100", "--mode", "request"])
        .output()
        .unwrap();
    assert_eq!(refused.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&refused.stderr).contains("request mode waits for each reply"));
}

/// Issue 20: replies that carry an error status are counted by `--check`, shown in the
/// report with the first failing reply, and a threshold on checks fails the run (exit 3).
#[test]
fn ws_reply_checks_count_error_replies_and_gate_the_run() {
    let server = target();
    let url = format!("ws://{}/ws/json", server.local_addr());
    let run = loadmark()
        .args([
            "ws",
            &url,
            "-c",
            "2",
            "-n",
            "200",
            "--message",
            "{\"id\":{{seq}},\"action\":\"nearby\",\"status\":{{rand_int 399 400}}}",
            "--check",
            "found: json /status < 400",
            "--threshold",
            "checks>99%",
        ])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&run.stdout);
    let bad = server.ws_error_replies();
    assert!(bad > 0 && bad < 200, "{bad}");
    assert_eq!(run.status.code(), Some(3), "{stdout}");
    let row: Vec<&str> = stdout
        .lines()
        .find(|l| l.trim_start().starts_with("found "))
        .unwrap_or_else(|| panic!("a row for the check: {stdout}"))
        .split_whitespace()
        .collect();
    let (passed, failed) = ((200 - bad).to_string(), bad.to_string());
    assert_eq!(
        row[1..5],
        [passed.as_str(), "passed", failed.as_str(), "failed"],
        "{stdout}"
    );
    assert!(
        stdout.contains(&format!("{bad} of 200 replies failed a check")),
        "{stdout}"
    );
    assert!(
        stdout.contains("reply; {\"id\":"),
        "the first failing reply: {stdout}"
    );
}

#[test]
fn ws_bad_input_exits_2_naming_the_problem() {
    let cases: Vec<(Vec<&str>, &str)> = vec![
        (vec!["ws", "http://127.0.0.1:1/"], "ws://"),
        (
            vec!["ws", "ws://127.0.0.1:1/", "--mode", "stream"],
            "--mode",
        ),
        (
            vec!["ws", "ws://127.0.0.1:1/", "--mode", "echo"],
            "--interval",
        ),
        (
            vec![
                "ws",
                "ws://127.0.0.1:1/",
                "--mode",
                "request",
                "--interval",
                "5ms",
            ],
            "--interval",
        ),
        (
            vec![
                "ws",
                "ws://127.0.0.1:1/",
                "--interval",
                "5ms",
                "--payload",
                "9..3",
            ],
            "--payload",
        ),
        (
            vec!["ws", "ws://127.0.0.1:1/", "--message", "{{nope}}"],
            "--message",
        ),
        (
            vec![
                "ws",
                "ws://127.0.0.1:1/",
                "--interval",
                "5ms",
                "--reply-match",
                "id",
            ],
            "--reply-match",
        ),
        // A reply has no status or headers, and only request mode has replies (issue 20).
        (
            vec!["ws", "ws://127.0.0.1:1/", "--check", "status == 200"],
            "json /status == 200",
        ),
        (
            vec![
                "ws",
                "ws://127.0.0.1:1/",
                "--interval",
                "5ms",
                "--check",
                "body size > 0",
            ],
            "--mode request",
        ),
    ];
    for (args, needle) in cases {
        let out = loadmark().args(&args).output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(stderr.contains(needle), "{args:?}: {stderr}");
    }
    // The run command points WebSocket URLs to `loadmark ws`.
    let out = loadmark()
        .args(["run", "ws://127.0.0.1:1/"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("loadmark ws"));
}

#[test]
fn ctrl_c_stops_a_ws_run_and_still_writes_the_report() {
    let server = target();
    let dir = temp_dir("ws", "sigint");
    let out = dir.join("ws.json");
    let url = format!("ws://{}/ws/echo", server.local_addr());
    let mut child = loadmark()
        .args([
            "ws",
            &url,
            "-c",
            "4",
            "--interval",
            "5ms",
            "-d",
            "60s",
            "-q",
            "-o",
        ])
        .arg(&out)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let t0 = std::time::Instant::now();
    while server.ws_messages_received() < 200 {
        assert!(
            t0.elapsed() < std::time::Duration::from_secs(20),
            "load never started"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    // SAFETY: signalling the child this test spawned, by its PID.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(130));
    let report = report_json(&std::fs::read_to_string(&out).unwrap()).unwrap();
    let ws = report.summary.websocket.as_ref().unwrap();
    assert!(report.run.interrupted && ws.messages_sent >= 200, "{ws:?}");
    // Every message sent was answered or is reported in flight: none vanished.
    assert_eq!(
        ws.messages_sent,
        report.summary.requests.responses
            + report.summary.requests.errors
            + report.summary.requests.in_flight_at_end
    );
    std::fs::remove_dir_all(dir).unwrap();
}

//! The `loadmark` binary end to end, against the built-in target over loopback.

mod common;

use common::*;

use std::process::Stdio;
use std::time::{Duration, Instant};

#[test]
fn run_writes_a_json_report_that_matches_the_server_and_renders_again() {
    let server = target();
    let dir = temp_dir("cli", "json");
    let out = dir.join("result.json");
    let url = format!("http://{}/json", server.local_addr());
    let status = loadmark()
        .args([
            "run",
            &url,
            "-n",
            "500",
            "-c",
            "5",
            "-t",
            "1",
            "-H",
            "Authorization: Bearer s3cret",
            "-o",
        ])
        .arg(&out)
        .stdout(Stdio::piped())
        .output()
        .unwrap();
    assert!(
        status.status.success(),
        "{}",
        String::from_utf8_lossy(&status.stderr)
    );
    let stdout = String::from_utf8(status.stdout).unwrap();
    assert!(stdout.contains("500 responses"), "{stdout}");
    let text = std::fs::read_to_string(&out).unwrap();
    assert!(!text.contains("s3cret"), "secrets are redacted in reports");
    let report = report_json(&text).unwrap();
    assert_eq!(report.summary.requests.responses, 500);
    assert_eq!(report.summary.status.get(200), 500);
    assert_eq!(
        server.requests_served(),
        500,
        "the server counted what loadmark counted"
    );
    assert_eq!(report.totals.latency.len(), 500);
    // JSON is the complete form: it round-trips without loss.
    let again = serde_json::to_string_pretty(&report).unwrap();
    assert_eq!(report_json(&again).unwrap(), report);

    let rendered = loadmark().arg("report").arg(&out).output().unwrap();
    assert!(rendered.status.success());
    assert!(String::from_utf8_lossy(&rendered.stdout).contains("500 responses"));
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn bad_input_exits_2_naming_the_problem_and_sends_nothing() {
    let server = target();
    let url = format!("http://{}/status", server.local_addr());
    let cases: Vec<(Vec<&str>, &str)> = vec![
        (vec!["run", "not-a-url"], "URL"),
        (vec!["run", "ftp://127.0.0.1/"], "scheme"),
        (vec!["run", &url, "-n", "10", "-d", "1s"], "--duration"),
        (vec!["run", &url, "-d", "ten"], "--duration"),
        (vec!["run", &url, "-H", "no colon"], "--header"),
        (vec!["run", &url, "-c", "0"], "--connections"),
        (
            vec!["run", &url, "-o", "/nonexistent-dir/r.json"],
            "--output",
        ),
        (vec!["run", &url, "-o", "result.weird"], "--output"),
        (
            vec!["run", &url, "-o", "r.json", "--format", "md"],
            "--output r.json is a JSON file but --format md asks for Markdown",
        ),
        (
            vec!["run", &url, "--body-file", "/nonexistent-file"],
            "--body-file",
        ),
        (
            vec!["run", "http://127.0.0.1:99999/"],
            "port out of range (1-65535)",
        ),
        (
            vec!["ws", "ws://127.0.0.1:65536/ws/echo"],
            "port out of range (1-65535)",
        ),
    ];
    for (args, expected) in cases {
        let out = loadmark().args(&args).output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(stderr.contains(expected), "{args:?}: {stderr}");
    }
    assert_eq!(server.requests_served(), 0, "no load was sent");
}

#[test]
fn sigint_stops_the_run_and_still_writes_the_report() {
    let server = target();
    let dir = temp_dir("cli", "sigint");
    let out = dir.join("partial.json");
    let url = format!("http://{}/status", server.local_addr());
    let mut child = loadmark()
        .args(["run", &url, "-d", "60s", "-c", "4", "-t", "1", "-o"])
        .arg(&out)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let t0 = Instant::now();
    while server.requests_served() < 1000 {
        assert!(t0.elapsed() < Duration::from_secs(20), "load never started");
        std::thread::sleep(Duration::from_millis(20));
    }
    // SAFETY: signalling the child we spawned, by its PID.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let t1 = Instant::now();
    let status = child.wait().unwrap();
    // Far from the 60 s duration; room for a loaded machine.
    assert!(t1.elapsed() < Duration::from_secs(15), "stopped promptly");
    assert_eq!(status.code(), Some(130));
    let report = report_json(&std::fs::read_to_string(&out).unwrap()).unwrap();
    assert!(report.run.interrupted);
    assert!(report.run.elapsed_s < 30.0);
    let r = &report.summary.requests;
    // Answers the server sent but the client had not read at the signal are in flight.
    assert!(r.responses + r.in_flight_at_end >= 1000, "{r:?}");
    // In-flight requests may or may not have reached the server before the stop.
    let served = server.requests_served();
    assert!(
        r.responses + r.errors <= served && served <= r.responses + r.errors + r.in_flight_at_end,
        "every request the server answered is accounted for: {r:?}, served {served}"
    );
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn no_keepalive_and_post_body_reach_the_server() {
    let server = target();
    let url = format!("http://{}/echo", server.local_addr());
    let out = loadmark()
        .args([
            "run",
            &url,
            "-n",
            "50",
            "-c",
            "2",
            "-t",
            "1",
            "--no-keepalive",
            "-b",
            "{\"a\":1}",
            "--format",
            "json",
        ])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let report = report_json(&String::from_utf8(out.stdout).unwrap()).unwrap();
    assert_eq!(report.summary.requests.responses, 50);
    assert_eq!(report.summary.connections_opened, 50);
    assert_eq!(server.connections_accepted(), 50);
    assert_eq!(report.plan.request.method, "POST");
}

#[test]
fn help_names_the_familiar_flags() {
    let out = loadmark().args(["run", "--help"]).output().unwrap();
    let help = String::from_utf8(out.stdout).unwrap();
    for flag in [
        "--connections",
        "--threads",
        "--duration",
        "--requests",
        "--header",
        "--timeout",
        "--no-keepalive",
        "--warmup",
        "--output",
        "--insecure",
    ] {
        assert!(help.contains(flag), "{flag} missing from --help");
    }
}

#[test]
fn strict_fails_an_overloaded_open_loop_run_and_the_report_says_why() {
    let server = target();
    let dir = temp_dir("cli", "strict");
    let out = dir.join("overload.json");
    // 2 connections of 100 ms each hold at most 20 req/s; 200 req/s are asked for.
    let url = format!("http://{}/delay/100", server.local_addr());
    let run = loadmark()
        .args([
            "run",
            &url,
            "-R",
            "200",
            "-d",
            "1s",
            "--max-connections",
            "2",
            "-t",
            "1",
            "--strict",
            "-o",
        ])
        .arg(&out)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&run.stdout);
    assert_eq!(run.status.code(), Some(4), "{stdout}");
    assert!(stdout.contains("requests were dropped"), "{stdout}");
    assert!(stdout.contains("open loop, 200 req/s"), "{stdout}");
    let report = report_json(&std::fs::read_to_string(&out).unwrap()).unwrap();
    assert!(report.run.health.overloaded);
    assert!(report.summary.dropped >= 150, "{}", report.summary.dropped);
    let r = &report.summary.requests;
    assert_eq!(
        r.responses + r.errors + r.in_flight_at_end + report.summary.dropped,
        200
    );
    std::fs::remove_dir_all(dir).unwrap();
}

/// Runs `args` with stdout a pipe whose reading end is closed before the child starts (as
/// `| head -c 600` closes it once it has read enough): every write to stdout gets EPIPE.
fn with_stdout_closed(args: &[&str]) -> std::process::Output {
    use std::os::fd::{FromRawFd, OwnedFd};
    let mut fds = [0; 2];
    // SAFETY: pipe2 fills `fds` with two new descriptors, each then owned once.
    let (read, write) = unsafe {
        assert_eq!(libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC), 0);
        (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1]))
    };
    drop(read);
    loadmark()
        .args(args)
        .stdout(Stdio::from(write))
        .output()
        .unwrap()
}

/// `loadmark schema result | head -c 600` panicked ("failed printing to stdout: Broken
/// pipe"). A reader that goes away is not an error: each command ends quietly with the code
/// it would have had, and a run still writes its -o report.
#[test]
fn a_closed_stdout_ends_every_command_quietly() {
    let server = target();
    let dir = temp_dir("cli", "epipe");
    let json = dir.join("r.json");
    let json = json.to_str().unwrap();
    let url = format!("http://{}/json", server.local_addr());
    let script: std::path::PathBuf = [env!("CARGO_MANIFEST_DIR"), "tests", "scripts"]
        .iter()
        .collect();
    let report_lua = script.join("report.lua");
    let cases: Vec<(Vec<&str>, i32)> = vec![
        (vec!["schema", "result"], 0),
        (vec!["schema", "plan"], 0),
        (vec!["completions", "bash"], 0),
        (
            vec!["run", &url, "-n", "20", "-c", "2", "-q", "-o", json],
            0,
        ),
        (vec!["report", json], 0),
        (vec!["report", json, "--format", "html"], 0),
        (vec!["merge", json, json], 0),
        (vec!["compare", json, json], 0),
        // done() prints through Lua's print.
        (
            vec![
                "run",
                &url,
                "-n",
                "5",
                "-q",
                "-s",
                report_lua.to_str().unwrap(),
            ],
            0,
        ),
        // The run's own exit code is kept.
        (
            vec![
                "run",
                &url,
                "-n",
                "5",
                "-q",
                "--check",
                "status == 201",
                "--fail-on",
                "failed",
            ],
            1,
        ),
    ];
    for (args, code) in cases {
        let o = with_stdout_closed(&args);
        let stderr = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(code), "{args:?}: {stderr}");
        for bad in ["panicked", "Broken pipe", "loadmark: error"] {
            assert!(!stderr.contains(bad), "{args:?}: {stderr}");
        }
        if args[0] == "run" && args.contains(&"-o") {
            assert!(stderr.contains("report written to"), "{stderr}");
            let report = report_json(&std::fs::read_to_string(json).unwrap()).unwrap();
            assert_eq!(report.summary.requests.responses, 20);
        }
    }
}

/// oha, hey, ab, wrk and bombardier take the URL as their main argument: `loadmark URL` and
/// `loadmark -c 2 -n 20 URL` are `loadmark run ...` (`ws` for a ws:// URL), checked on the
/// server; a mistyped subcommand still gets clap's error, and the way to load a URL.
#[test]
fn a_url_or_load_flags_without_a_subcommand_mean_run() {
    let server = target();
    let addr = server.local_addr();
    let url = format!("http://{addr}/status");
    let ws_url = format!("ws://{addr}/ws/echo");
    let cases: Vec<Vec<&str>> = vec![
        vec![&url, "-n", "20", "-c", "2", "-t", "1", "-q", "--json"],
        vec!["-c", "2", "-n", "20", "-t", "1", "-q", "--json", &url],
        vec!["-t", "1", "-c", "2", "-d", "1s", "-q", "--json", &url],
        vec![&ws_url, "-n", "20", "-c", "2", "-t", "1", "-q", "--json"],
    ];
    // Requests the server answered: at least the responses counted, at most those and the
    // ones still in flight when the -d run ended.
    let (mut answered, mut in_flight) = (0, 0);
    for args in cases {
        let out = loadmark().args(&args).output().unwrap();
        assert!(
            out.status.success(),
            "{args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let report = report_json(&String::from_utf8_lossy(&out.stdout)).unwrap();
        if args[0] == ws_url {
            let ws = report.summary.websocket.as_ref().expect("a WebSocket run");
            assert_eq!(ws.sessions_opened, 2, "{args:?}");
            // The server counts each upgrade request as one it served.
            answered += ws.sessions_opened;
        } else {
            assert!(report.plan.websocket.is_none(), "{args:?}");
            assert!(report.summary.requests.responses >= 20, "{args:?}");
            answered += report.summary.requests.responses;
            in_flight += report.summary.requests.in_flight_at_end;
        }
    }
    let served = server.requests_served();
    assert!(
        (answered..=answered + in_flight).contains(&served),
        "served {served}, responses {answered}, in flight {in_flight}"
    );

    let out = loadmark().args(["rnu", &url]).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("unrecognized subcommand 'rnu'"), "{stderr}");
    assert!(
        stderr.contains("tip: to load a URL: loadmark run URL"),
        "{stderr}"
    );
    assert_eq!(server.requests_served(), served, "a typo sends nothing");

    // Help, version and the subcommands themselves are what they were.
    let help = loadmark().arg("--help").output().unwrap();
    assert!(help.status.success());
    assert!(String::from_utf8_lossy(&help.stdout).contains("Usage: loadmark <COMMAND>"));
    let version = loadmark().arg("--version").output().unwrap();
    assert!(String::from_utf8_lossy(&version.stdout).starts_with("loadmark "));
    let run_help = loadmark().args(["-c", "2", "--help"]).output().unwrap();
    assert!(String::from_utf8_lossy(&run_help.stdout).contains("Usage: loadmark run"));
}

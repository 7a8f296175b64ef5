//! `loadmark grpc` against real gRPC servers that are not ours, on loopback (issue 36): the
//! grpc-go helloworld greeter (built from the Go module proxy into target/ci-grpc by
//! .ci/run) and a Python grpcio server with reflection (grpc_support/server.py, in the venv
//! target/ci-grpc/py). Counts are the servers' own; statuses are counted by name.

mod common;
#[path = "grpc_support/render.rs"]
mod render;
#[path = "grpc_support/tls.rs"]
mod tls;

use common::*;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::Duration;

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn support(name: &str) -> String {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/grpc_support")
        .join(name)
        .display()
        .to_string()
}

fn tool(path: PathBuf) -> PathBuf {
    assert!(
        path.exists(),
        "{} is missing: .ci/run installs it",
        path.display()
    );
    path
}

/// A server started on a port of the test's choosing, stopped (by its process group) on drop.
fn start(name: &str, command: impl Fn(u16) -> Command) -> (Daemon, u16) {
    retry_on_port_conflict(name, || {
        let port = port();
        let daemon = Daemon::spawn(name, command(port)).map_err(|e| e.to_string())?;
        daemon.wait_for_port(port, Duration::from_secs(20))?;
        Ok((daemon, port))
    })
}

/// Runs `loadmark grpc ARGS --format json -q` and returns its report.
fn run(args: &[&str]) -> (Output, serde_json::Value) {
    let out = loadmark()
        .arg("grpc")
        .args(args)
        .args(["-q", "--format", "json", "--timeout", "5s"])
        .output()
        .unwrap();
    let json = serde_json::from_slice(&out.stdout).unwrap_or(serde_json::Value::Null);
    (out, json)
}

/// Calls counted under each status name.
fn codes(report: &serde_json::Value) -> Vec<(String, u64)> {
    report["totals"]["grpc"]["codes"]
        .as_array()
        .map(|codes| {
            codes
                .iter()
                .map(|c| {
                    (
                        c["name"].as_str().unwrap().to_string(),
                        c["count"].as_u64().unwrap(),
                    )
                })
                .collect()
        })
        .unwrap_or_default()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

#[test]
fn go_greeter_counts_every_call_as_ok_and_ghz_data_after_d_is_refused() {
    let bin = tool(workspace().join("target/ci-grpc/bin/greeter_server"));
    let (greeter, port) = start("greeter_server", |port| {
        let mut c = Command::new(&bin);
        c.arg("-port").arg(port.to_string());
        c
    });
    let addr = format!("127.0.0.1:{port}");
    let proto = support("helloworld.proto");
    let (out, report) = run(&[
        &addr,
        "--proto",
        &proto,
        "--call",
        "helloworld.Greeter/SayHello",
        "--data",
        r#"{"name":"loadmark"}"#,
        "-c",
        "3",
        "--streams",
        "2",
        "-n",
        "120",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(codes(&report), [("OK".to_string(), 120)]);
    assert_eq!(report["summary"]["requests"]["errors"], 0);
    // The greeter logs each call it received.
    wait_until("the greeter logged 120 calls", || {
        greeter.output().matches("Received: loadmark").count() >= 120
    });
    assert_eq!(greeter.output().matches("Received: loadmark").count(), 120);

    // ghz's -d is the request: refused, naming --data, before any call.
    let (out, _) = run(&[
        &addr,
        "--proto",
        &proto,
        "--call",
        "helloworld.Greeter/SayHello",
        "-d",
        r#"{"name":"x"}"#,
    ]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("--data"), "{}", stderr(&out));
    // The greeter has no reflection service: said so, with what to give instead.
    let (out, _) = run(&[&addr, "--call", "helloworld.Greeter/SayHello", "-n", "1"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("UNIMPLEMENTED") && stderr(&out).contains("--proto"),
        "{}",
        stderr(&out)
    );
    assert_eq!(greeter.output().matches("Received:").count(), 120);
    greeter.stop(Duration::from_secs(5));
}

#[test]
fn python_server_reflection_and_proto_agree_and_statuses_are_counted_by_name() {
    let python = tool(workspace().join("target/ci-grpc/py/bin/python"));
    let dir = temp_dir("grpc", "python");
    let count_file = dir.path().join("count");
    let (server, port) = start("server.py", |port| {
        let mut c = Command::new(&python);
        c.arg(support("server.py"))
            .arg(port.to_string())
            .arg(&count_file);
        c
    });
    let addr = format!("127.0.0.1:{port}");
    let count = || {
        std::fs::read_to_string(&count_file)
            .ok()
            .and_then(|s| s.parse::<u64>().ok())
            .unwrap_or(0)
    };
    let call = "loadmark.test.Tester/Echo";
    let data = r#"{"name":"x","meta":{"tag":"t"}}"#;
    // From the .proto files (an import followed through -i) and from reflection (the
    // dependency fetched by name): the same calls, the same counts.
    let includes = support("");
    let (out, by_proto) = run(&[
        &addr,
        "--proto",
        &support("tester.proto"),
        "-i",
        &includes,
        "--call",
        call,
        "--data",
        data,
        "-c",
        "2",
        "-n",
        "40",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let (out, by_reflection) = run(&[&addr, "--call", call, "--data", data, "-c", "2", "-n", "40"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(codes(&by_proto), [("OK".to_string(), 40)]);
    assert_eq!(codes(&by_reflection), codes(&by_proto));
    assert_eq!(
        by_proto["totals"]["bytes_written"],
        by_reflection["totals"]["bytes_written"]
    );
    assert_eq!(count(), 80);

    // Failures by name, with the server's message; a failed call is a failed request.
    let mut unavailable = serde_json::Value::Null;
    for (code, name) in [
        (14, "UNAVAILABLE"),
        (4, "DEADLINE_EXCEEDED"),
        (8, "RESOURCE_EXHAUSTED"),
    ] {
        let data = format!(r#"{{"code":{code}}}"#);
        let (out, report) = run(&[&addr, "--call", call, "--data", &data, "-c", "1", "-n", "5"]);
        if code == 14 {
            unavailable = report.clone();
        }
        // Every call failed: the run failed (exit 1), its report is still printed.
        assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
        assert_eq!(codes(&report), [(name.to_string(), 5)]);
        assert_eq!(report["summary"]["requests"]["completed"], 5);
        assert_eq!(
            report["totals"]["grpc"]["codes"][0]["first_message"],
            "failing as asked"
        );
    }
    assert_eq!(count(), 95);

    // The text report never says "Errors none" alone over calls that failed.
    let out = loadmark()
        .arg("grpc")
        .args([
            &addr,
            "--call",
            call,
            "--data",
            r#"{"code":14}"#,
            "-c",
            "1",
            "-n",
            "5",
        ])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("none on the wire; 5 calls ended with a non-OK gRPC status"),
        "{text}"
    );
    assert_eq!(count(), 100);

    // Bad input is refused before any call, naming what is wrong.
    let (out, _) = run(&[&addr, "--call", "loadmark.test.Tester/Nope"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("its methods: Echo"),
        "{}",
        stderr(&out)
    );
    let (out, _) = run(&[&addr, "--call", call, "--data", r#"{"nam":"x"}"#]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("loadmark.test.EchoRequest"),
        "{}",
        stderr(&out)
    );
    // A per-call template whose first rendering is no EchoRequest: refused, showing it
    // (tests/grpc_data.rs has templates that encode).
    let (out, _) = run(&[&addr, "--call", call, "--data", r#"{"name":{{seq}}}"#]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains(r#"--data (as the first call renders it: {"name":0})"#),
        "{}",
        stderr(&out)
    );
    let bad = dir.path().join("bad.proto");
    std::fs::write(&bad, "syntax = \"proto3\";\nmessage M { strin x = 1; }\n").unwrap();
    let (out, _) = run(&[&addr, "--proto", bad.to_str().unwrap(), "--call", call]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("bad.proto:2:"), "{}", stderr(&out));
    assert_eq!(count(), 100);

    // A server stream found by reflection, cancelled by loadmark when its duration is over:
    // each call ends by plan, not as a failure, and the server saw each cancel.
    let (out, report) = run(&[
        &addr,
        "--call",
        "loadmark.test.Tester/Tick",
        "--data",
        r#"{"name":"t"}"#,
        "-c",
        "2",
        "-n",
        "4",
        "--stream-call-duration",
        "300ms",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(codes(&report), []);
    assert_eq!(report["summary"]["grpc"]["ended_by_client"], 4);
    assert_eq!(report["summary"]["requests"]["errors"], 0);
    // A reply every 50 ms for 300 ms: at most 6 each (7 with a late cancel), at least one.
    let received = report["summary"]["grpc"]["messages_received"]
        .as_u64()
        .unwrap();
    assert!((4..=28).contains(&received), "{received}");
    assert!(report["summary"]["latency"]["min_us"].as_u64().unwrap() >= 300_000);
    let cancelled = || {
        std::fs::read_to_string(dir.path().join("count.cancelled"))
            .ok()
            .and_then(|s| s.parse::<u64>().ok())
            .unwrap_or(0)
    };
    wait_until("the server saw 4 cancels", || cancelled() >= 4);
    assert_eq!(cancelled(), 4);
    assert_eq!(count(), 100);
    server.stop(Duration::from_secs(5));

    // Markdown, HTML and CSV say what the text and JSON reports say.
    render::renders_the_grpc_figures(dir.path(), &unavailable, &report);
}

/// The report's threshold results as (threshold, passed, actual).
fn thresholds(report: &serde_json::Value) -> Vec<(String, bool, String)> {
    report["thresholds"]
        .as_array()
        .unwrap_or_else(|| panic!("no thresholds in {report}"))
        .iter()
        .map(|t| {
            (
                t["threshold"].as_str().unwrap().to_string(),
                t["passed"].as_bool().unwrap(),
                t["actual"].as_str().unwrap_or("no data").to_string(),
            )
        })
        .collect()
}

/// `--threshold status:NAME`: calls by their grpc-status name from a real server, as a
/// share of the calls or a count; a name gRPC does not have is refused before any call.
#[test]
fn status_thresholds_hold_or_fail_on_the_calls_counted_by_code_name() {
    let python = tool(workspace().join("target/ci-grpc/py/bin/python"));
    let dir = temp_dir("grpc", "thresholds");
    let count_file = dir.path().join("count");
    let (server, port) = start("server.py", |port| {
        let mut c = Command::new(&python);
        c.arg(support("server.py"))
            .arg(port.to_string())
            .arg(&count_file);
        c
    });
    let addr = format!("127.0.0.1:{port}");
    let call = "loadmark.test.Tester/Echo";
    let with = |data: &str, limits: &[&str]| {
        let mut args = vec![
            addr.as_str(),
            "--call",
            call,
            "--data",
            data,
            "-c",
            "1",
            "-n",
            "10",
        ];
        for t in limits {
            args.extend(["--threshold", t]);
        }
        run(&args)
    };
    // Every call OK: none UNAVAILABLE, all OK.
    let (out, report) = with(
        r#"{"name":"x"}"#,
        &[
            "status:UNAVAILABLE < 0.1%",
            "status:ok>=100%",
            "status:OK<50%",
        ],
    );
    assert_eq!(out.status.code(), Some(3), "{}", stderr(&out));
    assert_eq!(
        thresholds(&report),
        [
            (
                "status:UNAVAILABLE < 0.1%".to_string(),
                true,
                "0.000%".to_string()
            ),
            ("status:ok>=100%".to_string(), true, "100.000%".to_string()),
            ("status:OK<50%".to_string(), false, "100.000%".to_string()),
        ]
    );
    // Every call UNAVAILABLE (14): counted by name or by number.
    let (out, report) = with(
        r#"{"code":14}"#,
        &["status:14<=9", "status:UNAVAILABLE<=10"],
    );
    assert_eq!(out.status.code(), Some(3), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("thresholds failed: status:14<=9"),
        "{}",
        stderr(&out)
    );
    assert_eq!(
        thresholds(&report),
        [
            ("status:14<=9".to_string(), false, "10".to_string()),
            ("status:UNAVAILABLE<=10".to_string(), true, "10".to_string()),
        ]
    );
    // A typo is a usage error listing the names, before any call.
    let (out, _) = with(r#"{"name":"x"}"#, &["status:UNAVAILBLE<1%"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("\"UNAVAILBLE\" is not a gRPC status code")
            && stderr(&out).contains("DEADLINE_EXCEEDED, NOT_FOUND"),
        "{}",
        stderr(&out)
    );
    let served = std::fs::read_to_string(&count_file).unwrap();
    assert_eq!(served.trim(), "20");
    server.stop(Duration::from_secs(5));
}

/// The report's gRPC summary field `name` as a number.
fn grpc_figure(report: &serde_json::Value, name: &str) -> u64 {
    report["summary"]["grpc"][name]
        .as_u64()
        .unwrap_or_else(|| panic!("summary.grpc.{name} missing: {}", report["summary"]["grpc"]))
}

/// grpc-go's route_guide server (server, client and bidi streams), on features the test
/// writes itself: every count below follows from them and from what the test sent.
#[test]
fn route_guide_streams_count_every_message_both_ways_and_a_cancelled_stream_is_ended_by_loadmark() {
    let bin = tool(workspace().join("target/ci-grpc/bin/route_guide_server"));
    let dir = temp_dir("grpc", "route_guide");
    // 23 features inside the rectangle asked for below, 5 outside it.
    let inside: Vec<(i32, i32)> = (1..=23).map(|i| (i * 10, i * 20)).collect();
    let outside: Vec<(i32, i32)> = (1..=5).map(|i| (5_000 + i, 10)).collect();
    let features: Vec<serde_json::Value> = inside
        .iter()
        .chain(&outside)
        .map(|(lat, lon)| {
            serde_json::json!({"location": {"latitude": lat, "longitude": lon}, "name": format!("f{lat}")})
        })
        .collect();
    let db = dir.path().join("features.json");
    std::fs::write(&db, serde_json::to_string(&features).unwrap()).unwrap();
    let (server, port) = start("route_guide_server", |port| {
        let mut c = Command::new(&bin);
        c.arg("-port")
            .arg(port.to_string())
            .arg("-json_db_file")
            .arg(&db);
        c
    });
    let addr = format!("127.0.0.1:{port}");
    let proto = support("route_guide.proto");
    let call = |method: &str, data: &str, extra: &[&str]| {
        let mut args = vec![
            addr.as_str(),
            "--proto",
            &proto,
            "--call",
            method,
            "--data",
            data,
        ];
        args.extend_from_slice(extra);
        let (out, report) = run(&args);
        assert!(out.status.success(), "{method}: {}", stderr(&out));
        assert_eq!(report["summary"]["requests"]["errors"], 0, "{method}");
        report
    };
    let rect = r#"{"lo":{"latitude":0,"longitude":0},"hi":{"latitude":1000,"longitude":1000}}"#;

    // Server streaming, read to the trailers: every feature in the rectangle, every call.
    let report = call(
        "routeguide.RouteGuide/ListFeatures",
        rect,
        &["-c", "2", "--streams", "2", "-n", "12"],
    );
    assert_eq!(codes(&report), [("OK".to_string(), 12)]);
    assert_eq!(
        grpc_figure(&report, "messages_received"),
        12 * inside.len() as u64
    );
    assert_eq!(grpc_figure(&report, "messages_sent"), 12);
    assert_eq!(grpc_figure(&report, "ended_by_client"), 0);
    assert_eq!(
        report["summary"]["grpc"]["first_message"]["count"], 12,
        "every call's first message timed"
    );
    // Gaps: every message after the first of its call.
    assert_eq!(
        report["summary"]["grpc"]["message_gap"]["count"],
        12 * (inside.len() as u64 - 1)
    );

    // Cancelled by loadmark after 7 messages: complete calls with no grpc-status, counted
    // apart and not failures; exactly 7 messages each, whatever else came in the same read.
    let report = call(
        "routeguide.RouteGuide/ListFeatures",
        rect,
        &["-c", "2", "-n", "10", "--stream-call-count", "7"],
    );
    assert_eq!(codes(&report), []);
    assert_eq!(grpc_figure(&report, "ended_by_client"), 10);
    assert_eq!(grpc_figure(&report, "messages_received"), 70);
    assert_eq!(report["summary"]["requests"]["responses"], 10);
    assert!(
        report["run"]["latency_definition"]
            .as_str()
            .unwrap()
            .contains("cancel"),
        "{}",
        report["run"]["latency_definition"]
    );

    // Client streaming, paced: 5 points per call, one per 10 ms, cycling through the 3
    // given; the server answers each call once, after the half-close.
    let points = r#"[{"latitude":1,"longitude":1},{"latitude":2,"longitude":2},{"latitude":3,"longitude":3}]"#;
    let report = call(
        "routeguide.RouteGuide/RecordRoute",
        points,
        &[
            "-c",
            "2",
            "-n",
            "4",
            "--stream-call-count",
            "5",
            "--stream-interval",
            "10ms",
        ],
    );
    assert_eq!(codes(&report), [("OK".to_string(), 4)]);
    assert_eq!(grpc_figure(&report, "messages_sent"), 20);
    assert_eq!(grpc_figure(&report, "messages_received"), 4);
    // Paced: no call can end before its last message went out, 40 ms after its first.
    assert!(report["summary"]["latency"]["min_us"].as_u64().unwrap() >= 40_000);

    // Bidi: the server answers each note with every note at its location so far, so M
    // notes at one location (in any order, over any calls) get M(M+1)/2 answers: the count
    // proves the server received every note. Each run uses a location of its own.
    let bidi = |latitude: i32, extra: &[&str]| {
        let note =
            format!(r#"{{"location":{{"latitude":{latitude},"longitude":1}},"message":"m"}}"#);
        call("routeguide.RouteGuide/RouteChat", &note, extra)
    };
    // All of a call's notes in one body.
    let report = bidi(7_001, &["-c", "2", "-n", "6", "--stream-call-count", "4"]);
    assert_eq!(codes(&report), [("OK".to_string(), 6)]);
    let m = 6 * 4;
    assert_eq!(grpc_figure(&report, "messages_sent"), m);
    assert_eq!(grpc_figure(&report, "messages_received"), m * (m + 1) / 2);
    // Paced by count: a DATA frame per note.
    let report = bidi(
        7_002,
        &[
            "-c",
            "1",
            "-n",
            "3",
            "--stream-call-count",
            "3",
            "--stream-interval",
            "5ms",
        ],
    );
    let m = 3 * 3;
    assert_eq!(codes(&report), [("OK".to_string(), 3)]);
    assert_eq!(grpc_figure(&report, "messages_sent"), m);
    assert_eq!(grpc_figure(&report, "messages_received"), m * (m + 1) / 2);
    // Paced for a duration: notes due at 0, 50, 100 and 150 ms of a 200 ms call (the
    // schedule decides, not the timer's luck), then the half-close.
    let report = bidi(
        7_003,
        &[
            "-c",
            "2",
            "-n",
            "4",
            "--stream-call-duration",
            "200ms",
            "--stream-interval",
            "50ms",
        ],
    );
    let m = 4 * 4;
    assert_eq!(codes(&report), [("OK".to_string(), 4)]);
    assert_eq!(grpc_figure(&report, "messages_sent"), m);
    assert_eq!(grpc_figure(&report, "messages_received"), m * (m + 1) / 2);

    // Stream flags where they mean nothing are refused before any call, naming why.
    for (method, flags, says) in [
        (
            "routeguide.RouteGuide/GetFeature",
            &["--stream-call-count", "2"][..],
            "unary",
        ),
        (
            "routeguide.RouteGuide/ListFeatures",
            &["--stream-interval", "10ms"][..],
            "--stream-call-count or --stream-call-duration",
        ),
        (
            "routeguide.RouteGuide/RecordRoute",
            &["--stream-call-duration", "1s"][..],
            "needs --stream-interval",
        ),
    ] {
        let mut args = vec![
            addr.as_str(),
            "--proto",
            &proto,
            "--call",
            method,
            "--data",
            rect,
        ];
        args.extend_from_slice(flags);
        let (out, _) = run(&args);
        assert_eq!(out.status.code(), Some(2), "{method} {flags:?}");
        assert!(stderr(&out).contains(says), "{}", stderr(&out));
    }
    server.stop(Duration::from_secs(5));
}

/// The built-in target's gRPC service (`loadmark serve --http2`), described by its own
/// reflection: every call shape, its counts equal to the target's own.
#[test]
fn the_built_in_target_serves_each_call_shape_by_reflection_and_counts_what_it_served() {
    let server = loadmark_target::start(loadmark_target::ServerConfig {
        addr: ([127, 0, 0, 1], 0).into(),
        threads: 1,
        http2: true,
        ..Default::default()
    })
    .unwrap();
    let addr = server.local_addr().to_string();
    let call = |method: &str, data: &str, extra: &[&str]| {
        let method = format!("loadmark.target.Target/{method}");
        let mut args = vec![addr.as_str(), "--call", &method, "--data", data];
        args.extend_from_slice(extra);
        let (out, report) = run(&args);
        // A run in which no call ended OK failed, as a run without a 2xx does (exit 1).
        let expected = if method.ends_with("/Fail") {
            Some(1)
        } else {
            Some(0)
        };
        assert_eq!(out.status.code(), expected, "{method}: {}", stderr(&out));
        if expected == Some(1) {
            assert!(
                stderr(&out).contains("no call succeeded (no OK grpc-status)"),
                "{}",
                stderr(&out)
            );
        }
        assert_eq!(report["summary"]["requests"]["errors"], 0, "{method}");
        report
    };
    let served = || {
        (
            server.grpc_calls(),
            server.grpc_messages_received(),
            server.grpc_messages_sent(),
        )
    };

    // Unary echo, by reflection and by the target's .proto: the same calls, counted by both.
    // The same messages on the wire: both schemas encode the JSON to the same bytes. Bytes
    // written, not read: the answers carry the server's `date` header, whose HPACK encoding
    // grows by a literal each time the second turns during a run (CI saw 2,204 against
    // 2,252 bytes read). One connection each, so the requests share one HPACK state.
    let report = call(
        "Echo",
        r#"{"text":"hi"}"#,
        &["-c", "1", "--streams", "2", "-n", "50"],
    );
    assert_eq!(codes(&report), [("OK".to_string(), 50)]);
    assert_eq!(served(), (50, 50, 50));
    let proto = workspace()
        .join("crates/target/proto/loadmark_target.proto")
        .display()
        .to_string();
    let by_proto = call(
        "Echo",
        r#"{"text":"hi"}"#,
        &["--proto", &proto, "-c", "1", "--streams", "2", "-n", "50"],
    );
    assert_eq!(codes(&by_proto), [("OK".to_string(), 50)]);
    assert_eq!(
        by_proto["totals"]["bytes_written"], report["totals"]["bytes_written"],
        "the same requests"
    );
    assert_eq!(served(), (100, 100, 100));

    // A chosen status, with its message.
    let report = call("Fail", r#"{"code":14,"message":"down now"}"#, &["-n", "5"]);
    assert_eq!(codes(&report), [("UNAVAILABLE".to_string(), 5)]);
    assert_eq!(
        report["totals"]["grpc"]["codes"][0]["first_message"],
        "down now"
    );
    assert_eq!(served(), (105, 105, 100));

    // Server stream: 6 messages a call, 5 ms apart, read to the trailers.
    let report = call(
        "Stream",
        r#"{"count":6,"intervalMs":5}"#,
        &["-c", "2", "-n", "8"],
    );
    assert_eq!(codes(&report), [("OK".to_string(), 8)]);
    assert_eq!(grpc_figure(&report, "messages_received"), 48);
    assert_eq!(served(), (113, 113, 148));
    // Cancelled by loadmark after 3 of 1000: the target sees each cancel.
    let report = call(
        "Stream",
        r#"{"count":1000,"intervalMs":5}"#,
        &["-c", "2", "-n", "6", "--stream-call-count", "3"],
    );
    assert_eq!(codes(&report), []);
    assert_eq!(grpc_figure(&report, "ended_by_client"), 6);
    assert_eq!(grpc_figure(&report, "messages_received"), 18);
    wait_until("the target saw 6 cancels", || server.grpc_cancelled() >= 6);
    assert_eq!(server.grpc_cancelled(), 6);

    // Client stream, paced: the target read every message loadmark sent.
    let before = served();
    let report = call(
        "Collect",
        r#"[{"text":"a"},{"text":"bc"}]"#,
        &[
            "-c",
            "2",
            "-n",
            "4",
            "--stream-call-count",
            "5",
            "--stream-interval",
            "2ms",
        ],
    );
    assert_eq!(codes(&report), [("OK".to_string(), 4)]);
    assert_eq!(grpc_figure(&report, "messages_sent"), 20);
    assert_eq!(served().1 - before.1, 20);
    assert_eq!(served().2 - before.2, 4);

    // Bidi echo: every message back, in one body and paced.
    for extra in [
        &["-c", "2", "-n", "6", "--stream-call-count", "4"][..],
        &[
            "-c",
            "2",
            "-n",
            "4",
            "--stream-call-count",
            "3",
            "--stream-interval",
            "2ms",
        ][..],
    ] {
        let before = served();
        let report = call("Chat", r#"{"text":"x"}"#, extra);
        let sent = grpc_figure(&report, "messages_sent");
        assert_eq!(grpc_figure(&report, "messages_received"), sent, "{extra:?}");
        assert_eq!(served().1 - before.1, sent);
        assert_eq!(served().2 - before.2, sent);
    }
    assert_eq!(server.grpc_calls(), 113 + 6 + 4 + 6 + 4);
    server.shutdown();
}

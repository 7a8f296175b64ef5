//! `loadmark grpc` against real gRPC servers that are not ours, on loopback (issue 36): the
//! grpc-go helloworld greeter (built from the Go module proxy into target/ci-grpc by
//! .ci/run) and a Python grpcio server with reflection (grpc_support/server.py, in the venv
//! target/ci-grpc/py). Counts are the servers' own; statuses are counted by name.

mod common;

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
    for (code, name) in [
        (14, "UNAVAILABLE"),
        (4, "DEADLINE_EXCEEDED"),
        (8, "RESOURCE_EXHAUSTED"),
    ] {
        let data = format!(r#"{{"code":{code}}}"#);
        let (out, report) = run(&[&addr, "--call", call, "--data", &data, "-c", "1", "-n", "5"]);
        assert!(out.status.success(), "{}", stderr(&out));
        assert_eq!(codes(&report), [(name.to_string(), 5)]);
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
    let bad = dir.path().join("bad.proto");
    std::fs::write(&bad, "syntax = \"proto3\";\nmessage M { strin x = 1; }\n").unwrap();
    let (out, _) = run(&[&addr, "--proto", bad.to_str().unwrap(), "--call", call]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("bad.proto:2:"), "{}", stderr(&out));
    assert_eq!(count(), 100);
    server.stop(Duration::from_secs(5));
}

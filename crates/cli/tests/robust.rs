//! Interruptions, secrets and resource limits, end to end through the binary.

mod common;

use common::*;

use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

fn loadmark() -> Command {
    let dir = Path::new(env!("CARGO_BIN_EXE_loadmark"))
        .parent()
        .unwrap()
        .to_path_buf();
    let mut c = Command::new(env!("CARGO_BIN_EXE_loadmark"));
    c.env(
        "PATH",
        format!(
            "{}:{}",
            dir.display(),
            std::env::var("PATH").unwrap_or_default()
        ),
    );
    c
}

fn signal(child: &std::process::Child, sig: i32) {
    // SAFETY: signalling the child this test spawned, by its PID.
    unsafe { libc::kill(child.id() as i32, sig) };
}

#[test]
fn sigterm_stops_the_run_and_writes_the_report() {
    let server = target();
    let dir = temp_dir("robust", "term");
    let out = dir.join("r.json");
    let url = format!("http://{}/status", server.local_addr());
    let mut child = loadmark()
        .args(["run", &url, "-d", "60s", "-c", "2", "-t", "1", "-q", "-o"])
        .arg(&out)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let t0 = Instant::now();
    while server.requests_served() < 500 {
        assert!(t0.elapsed() < Duration::from_secs(20), "load never started");
        std::thread::sleep(Duration::from_millis(20));
    }
    signal(&child, libc::SIGTERM);
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(130));
    let report = report_json(&std::fs::read_to_string(&out).unwrap()).unwrap();
    assert!(report.run.interrupted && report.summary.requests.responses >= 500);
}

/// A server that ignores SIGTERM makes the first Ctrl-C wait for the stop grace; the second
/// Ctrl-C exits at once, and still kills the server loadmark launched.
#[test]
fn a_second_signal_exits_at_once_and_kills_launched_servers() {
    let dir = temp_dir("robust", "twice");
    let port = free_port();
    let plan = format!(
        "targets:\n  stubborn:\n    url: http://127.0.0.1:{port}/\n    launch:\n      command: \"trap '' TERM; exec python3 -m http.server {port} --bind 127.0.0.1\"\n      stop_grace: 30s\nload: {{duration: 30s, connections: 1}}\n"
    );
    std::fs::write(dir.join("plan.yaml"), plan).unwrap();
    let mut child = loadmark()
        .args(["bench", "plan.yaml", "-o", "out", "-q"])
        .current_dir(&dir)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let t0 = Instant::now();
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(
            t0.elapsed() < Duration::from_secs(20),
            "server never started"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    std::thread::sleep(Duration::from_millis(700));
    signal(&child, libc::SIGINT);
    std::thread::sleep(Duration::from_millis(700));
    let t1 = Instant::now();
    signal(&child, libc::SIGINT);
    let status = child.wait().unwrap();
    assert!(
        t1.elapsed() < Duration::from_secs(3),
        "the second signal exits at once"
    );
    assert_eq!(status.code(), Some(130));
    let t2 = Instant::now();
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_ok() {
        assert!(
            t2.elapsed() < Duration::from_secs(3),
            "the launched server was killed"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn secrets_are_redacted_in_documents_unless_asked_for() {
    let dir = temp_dir("robust", "secrets");
    let port = free_port();
    let plan = format!(
        "targets:\n  api:\n    url: http://127.0.0.1:{port}/status\n    launch: {{command: loadmark serve --port {port}}}\nrequest:\n  headers:\n    Authorization: Bearer s3cret-token\n    X-Api-Key: k3y-value\nload: {{requests: 20, connections: 1}}\n"
    );
    std::fs::write(dir.join("plan.yaml"), plan).unwrap();
    let out = loadmark()
        .args(["bench", "plan.yaml", "-o", "out", "-q"])
        .current_dir(&dir)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let md = std::fs::read_to_string(dir.join("out/BENCHMARKS.md")).unwrap();
    let json = std::fs::read_to_string(dir.join("out/bundle.json")).unwrap();
    let printed = String::from_utf8_lossy(&out.stderr);
    for text in [&md, &json, &printed.to_string()] {
        assert!(
            !text.contains("s3cret-token") && !text.contains("k3y-value"),
            "leaked: {text}"
        );
    }
    assert!(md.contains("<redacted>"));
    bundle_json(&json).unwrap();
    let out = loadmark()
        .args(["bench", "plan.yaml", "-o", "shown", "-q", "--show-secrets"])
        .current_dir(&dir)
        .output()
        .unwrap();
    assert!(out.status.success());
    assert!(std::fs::read_to_string(dir.join("shown/BENCHMARKS.md"))
        .unwrap()
        .contains("s3cret-token"));
}

#[test]
fn too_many_connections_for_the_file_limit_is_said_up_front() {
    let server = target();
    let url = format!("http://{}/status", server.local_addr());
    let mut cmd = loadmark();
    cmd.args(["run", &url, "-c", "500", "-n", "1000"]);
    // SAFETY: only async-signal-safe setrlimit between fork and exec.
    unsafe {
        cmd.pre_exec(|| {
            let lim = libc::rlimit {
                rlim_cur: 256,
                rlim_max: 256,
            };
            if libc::setrlimit(libc::RLIMIT_NOFILE, &lim) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    let out = cmd.output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("564 open files are needed") && stderr.contains("ulimit -n 564"),
        "{stderr}"
    );
    assert_eq!(server.requests_served(), 0, "nothing was sent");
}

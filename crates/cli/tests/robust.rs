//! Interruptions, secrets and resource limits, end to end through the binary.

mod common;

use common::*;

use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Command, Stdio};

use loadmark_test_support::PATIENCE;
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
    // The server counts an answer when it sends it; the client may not have read the last
    // ones (one per connection) when the signal came: those are in flight, not lost.
    let r = &report.summary.requests;
    assert!(report.run.interrupted, "{r:?}");
    assert!(r.responses + r.in_flight_at_end >= 500, "{r:?}");
}

/// A server that ignores SIGTERM makes the first Ctrl-C wait for the stop grace; the second
/// Ctrl-C exits at once, and still kills the server loadmark launched.
#[test]
fn a_second_signal_exits_at_once_and_kills_launched_servers() {
    let dir = temp_dir("robust", "twice");
    // The plan names python's port: a leased one, and another if python finds it taken.
    let (bench, port) = retry_on_port_conflict("loadmark bench", || {
        let port = port();
        let plan = format!(
            "targets:\n  stubborn:\n    url: http://127.0.0.1:{port}/\n    launch:\n      command: \"trap '' TERM; exec python3 -m http.server {port} --bind 127.0.0.1\"\n      stop_grace: 30s\nload: {{duration: 30s, connections: 1}}\n"
        );
        std::fs::write(dir.join("plan.yaml"), plan).unwrap();
        let mut command = loadmark();
        command
            .args(["bench", "plan.yaml", "-o", "out", "-q"])
            .current_dir(&dir);
        // Its own process group, killed on drop should the test fail half way.
        let bench = Daemon::spawn("loadmark bench", command).map_err(|e| e.to_string())?;
        // Launched and ready (its readiness check passed) means the handler is installed.
        bench.wait_for_port(port, PATIENCE)?;
        Ok((bench, port))
    });
    bench.signal(libc::SIGINT);
    // The first signal is handled (the run stops, python gets SIGTERM and ignores it) before
    // the second is sent, so the second is seen as the second.
    bench
        .wait_for_line(PATIENCE, |l| l.contains("loadmark: stopping").then_some(()))
        .unwrap();
    let t1 = Instant::now();
    bench.signal(libc::SIGINT);
    // Not the 30 s stop grace: the second signal cut it short (room for a loaded machine).
    let status = bench.wait(Duration::from_secs(15)).unwrap();
    assert!(
        t1.elapsed() < Duration::from_secs(15),
        "the second signal exits at once"
    );
    assert_eq!(status.code(), Some(130));
    // Killed, not left running: nothing else would ever stop it (it ignores SIGTERM).
    wait_until("the launched server to be killed", || {
        std::net::TcpStream::connect(("127.0.0.1", port)).is_err()
    });
}

#[test]
fn secrets_are_redacted_in_documents_unless_asked_for() {
    let dir = temp_dir("robust", "secrets");
    let out = retry_on_port_conflict("loadmark bench", || {
        let port = port();
        let plan = format!(
            "targets:\n  api:\n    url: http://127.0.0.1:{port}/status\n    launch: {{command: loadmark serve --port {port}}}\nrequest:\n  headers:\n    Authorization: Bearer s3cret-token\n    X-Api-Key: k3y-value\nload: {{requests: 20, connections: 1}}\n"
        );
        std::fs::write(dir.join("plan.yaml"), plan).unwrap();
        let out = loadmark()
            .args(["bench", "plan.yaml", "-o", "out", "-q"])
            .current_dir(&dir)
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        if !out.status.success() && is_port_conflict(&stderr) {
            return Err(stderr.into_owned());
        }
        Ok(out)
    });
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
    // The same port again: the first run stopped its server, and loadmark serve reuses the
    // address; a foreign taker in between would show as "Address already in use" here.
    let out = loadmark()
        .args(["bench", "plan.yaml", "-o", "shown", "-q", "--show-secrets"])
        .current_dir(&dir)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
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

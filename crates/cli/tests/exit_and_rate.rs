//! Exit codes a script can trust (issue 20) and the open-loop flags wrk2 and vegeta users
//! type: every run against a real server, counts checked on the server's side.

mod common;

use std::process::Output;

use common::{loadmark, refusing_port, target};

fn run(args: &[&str]) -> Output {
    loadmark().args(args).output().unwrap()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

#[test]
fn rate_with_a_count_sends_exactly_that_many_over_the_connections_opened_up_front() {
    let server = target();
    let url = format!("http://{}/status", server.local_addr());
    let o = run(&["run", &url, "-R", "2000", "-n", "500", "-c", "8", "-t", "1"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(text.contains("for 500 requests"), "{text}");
    assert!(text.contains("8 connections opened up front"), "{text}");
    assert_eq!(server.requests_served(), 500, "exactly -n requests");
    assert!(
        server.connections_accepted() >= 8,
        "the 8 connections are opened up front: {}",
        server.connections_accepted()
    );
}

#[test]
fn a_run_in_which_nothing_succeeds_exits_1_and_says_why() {
    let server = target();
    // Every response is a 500.
    let url = format!("http://{}/status/500", server.local_addr());
    let o = run(&["run", &url, "-n", "50", "-c", "2"]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("no request succeeded"),
        "{}",
        stderr(&o)
    );
    assert!(stderr(&o).contains("50 x 500"), "{}", stderr(&o));
    assert!(
        String::from_utf8_lossy(&o.stdout).contains("Status codes"),
        "the report is still printed"
    );

    // Nothing listening: refused connections.
    let (_held, port) = refusing_port();
    let refused = format!("http://127.0.0.1:{port}/");
    let o = run(&["run", &refused, "-n", "20", "-c", "2"]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(stderr(&o).contains("connect"), "{}", stderr(&o));

    // TLS spoken to a plain HTTP server: every handshake fails.
    let tls = format!("https://{}/status", server.local_addr());
    let o = run(&["run", &tls, "-n", "10", "-c", "1"]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(stderr(&o).contains("tls"), "{}", stderr(&o));
}

/// Answers requests alternately 200 and `status`, keeping connections open.
fn alternating(status: u16) -> std::net::SocketAddr {
    use std::io::{Read, Write};
    use std::sync::atomic::{AtomicU64, Ordering};
    use std::sync::Arc;
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let count = Arc::new(AtomicU64::new(0));
    std::thread::spawn(move || {
        for mut conn in listener.incoming().flatten() {
            let count = count.clone();
            std::thread::spawn(move || {
                let mut seen = Vec::new();
                let mut buf = [0u8; 4096];
                loop {
                    while let Some(end) = seen.windows(4).position(|w| w == b"\r\n\r\n") {
                        seen.drain(..end + 4);
                        let code = if count.fetch_add(1, Ordering::SeqCst).is_multiple_of(2) {
                            200
                        } else {
                            status
                        };
                        let reply = format!("HTTP/1.1 {code} X\r\nContent-Length: 2\r\n\r\nok");
                        if conn.write_all(reply.as_bytes()).is_err() {
                            return;
                        }
                    }
                    match conn.read(&mut buf) {
                        Ok(0) | Err(_) => return,
                        Ok(n) => seen.extend_from_slice(&buf[..n]),
                    }
                }
            });
        }
    });
    addr
}

#[test]
fn fail_on_turns_a_class_of_failures_into_exit_1() {
    let five = format!("http://{}/", alternating(503));
    let four = format!("http://{}/", alternating(404));
    // Half the responses succeed: without --fail-on the run passes.
    let o = run(&["run", &five, "-n", "20", "-c", "1"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    for (url, class, code) in [
        (&five, "5xx", 1),
        (&four, "5xx", 0),
        (&four, "4xx", 1),
        (&five, "failed", 1),
        (&five, "errors", 0),
    ] {
        let o = run(&["run", url, "-n", "20", "-c", "1", "--fail-on", class]);
        assert_eq!(
            o.status.code(),
            Some(code),
            "{url} --fail-on {class}: {}",
            stderr(&o)
        );
        if code == 1 {
            assert!(
                stderr(&o).contains(&format!("--fail-on {class}")),
                "{}",
                stderr(&o)
            );
        }
    }
    let o = run(&["run", &five, "--fail-on", "nonsense", "-n", "1"]);
    assert_eq!(
        o.status.code(),
        Some(2),
        "an unknown class is a usage error"
    );
    assert!(stderr(&o).contains("4xx"), "{}", stderr(&o));
}

/// Pins the calling thread, or (through `pre_exec`) a child, to `cpu`.
fn pin_to(cpu: usize) -> std::io::Result<()> {
    // SAFETY: a cpu_set_t filled by the libc macros, for the calling thread.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_SET(cpu, &mut set);
        if libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) != 0 {
            return Err(std::io::Error::last_os_error());
        }
    }
    Ok(())
}

/// Issue 42, item 7: when another process takes the load thread's CPU, the lag finding says
/// the lag was the machine's, how long the thread waited and how busy the CPUs were, and
/// does not blame the server.
#[test]
fn an_open_loop_sharing_its_cpu_with_a_hog_says_the_lag_was_the_machines() {
    use std::os::unix::process::CommandExt;
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::Arc;
    let server = target();
    let url = format!("http://{}/status", server.local_addr());
    // The last CPU this test may use: the hog and loadmark share it.
    let cpu = (0..libc::CPU_SETSIZE as usize)
        .rev()
        .find(|&c| unsafe {
            let mut set: libc::cpu_set_t = std::mem::zeroed();
            libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set) == 0
                && libc::CPU_ISSET(c, &set)
        })
        .unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    let hog = {
        let stop = stop.clone();
        std::thread::spawn(move || {
            pin_to(cpu).unwrap();
            let mut spins = 0u64;
            while !stop.load(Ordering::Relaxed) {
                spins = std::hint::black_box(spins.wrapping_add(1));
            }
        })
    };
    let o = unsafe {
        loadmark()
            .args(["run", &url, "-R", "2000", "-d", "2s", "--json"])
            .pre_exec(move || pin_to(cpu))
            .output()
            .unwrap()
    };
    stop.store(true, Ordering::Relaxed);
    hog.join().unwrap();
    let report = common::report_json(&String::from_utf8_lossy(&o.stdout)).unwrap();
    let contention = report
        .run
        .client_cpu
        .contention
        .as_ref()
        .expect("the CPU wait is measured");
    assert!(
        contention.waited_s > 0.004,
        "sharing a CPU with a busy loop, the load thread waited for it: {contention:?}"
    );
    let findings = report.run.health.findings.join("\n");
    assert!(
        findings.contains("waited")
            && findings.contains("for a CPU")
            && findings.contains("other processes on their cores")
            && findings.contains("taskset"),
        "the lag is named as the machine's: {findings}"
    );
    assert!(
        !report.run.health.overloaded,
        "a lag of the client's CPU is not the server's overload: {findings}"
    );
    assert_eq!(report.summary.dropped, 0, "{findings}");
}

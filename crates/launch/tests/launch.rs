//! Launches real processes; every wait is bounded. `kill_all_launched` lives in its own test
//! binary (tests/kill_all.rs) because it kills every server of the process, including those
//! of tests running in parallel here.
//!
//! Ports: a server that must be told its port gets a leased one (`port()`) and is retried on
//! a conflict; "nothing listens here" is a `refusing_port()` held for the whole test. Upper
//! time bounds only tell "prompt" from a wait of 30 s or more, so they leave seconds of room
//! for a loaded machine.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use loadmark_launch::{launch, LaunchError, LaunchSpec, Readiness};
use loadmark_test_support::{port, refusing_port, retry_on_port_conflict, wait_until, TempDir};

/// The bound for "promptly" where the slow alternative takes 30 s (a `sleep 30` running to
/// its end, a 60 s delay): far from both, whatever else the machine is doing.
const PROMPT: Duration = Duration::from_secs(15);

fn spec(test: &str, command: &str, ready: Readiness) -> (LaunchSpec, TempDir) {
    let dir = TempDir::new(&format!("launch-{test}"));
    let mut spec = LaunchSpec::new(test, command, ready, dir.join("logs/server.log"));
    spec.cwd = Some(dir.to_path_buf());
    spec.ready_timeout = Duration::from_secs(30);
    spec.stop_grace = Duration::from_secs(10);
    (spec, dir)
}

/// Fields 3 (state) and 5 (pgrp) of /proc/[pid]/stat.
fn stat(pid: i32) -> Option<(char, i32)> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let mut fields = text[text.rfind(')')? + 1..].split_whitespace();
    let state = fields.next()?.chars().next()?;
    let pgrp = fields.nth(1)?.parse().ok()?;
    Some((state, pgrp))
}

/// Running, as opposed to gone or a zombie (an orphan's zombie may wait long for a container
/// init that does not reap; it holds nothing).
fn alive(pid: i32) -> bool {
    stat(pid).is_some_and(|(state, _)| state != 'Z')
}

fn group(pgid: i32) -> Vec<i32> {
    std::fs::read_dir("/proc")
        .unwrap()
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse().ok())
        .filter(|&pid| stat(pid).is_some_and(|(state, pgrp)| pgrp == pgid && state != 'Z'))
        .collect()
}

#[test]
fn python_http_server_becomes_ready_and_stops_gracefully() {
    // python needs its port on the command line: a leased one, retried if something foreign
    // sits on it (python then exits with "Address already in use").
    let (server, spec, addr, _dir) = retry_on_port_conflict("python3 -m http.server", || {
        let addr = SocketAddr::from(([127, 0, 0, 1], port()));
        let command = format!("python3 -m http.server {} --bind 127.0.0.1", addr.port());
        let (mut spec, dir) = spec(
            "python",
            &command,
            Readiness::Http(format!("http://{addr}/")),
        );
        spec.env.push(("PYTHONUNBUFFERED".into(), "1".into()));
        let server = launch(&spec).map_err(|e| e.to_string())?;
        Ok((server, spec, addr, dir))
    });
    let pid = server.pid() as i32;
    assert!(alive(pid));
    assert_eq!(server.log_path(), spec.log_path);
    // Ready means it answers now, and its request log (stderr) reaches the log file.
    let mut stream = TcpStream::connect(addr).unwrap();
    stream.write_all(b"GET / HTTP/1.0\r\n\r\n").unwrap();
    let mut response = String::new();
    stream.read_to_string(&mut response).unwrap();
    assert!(response.starts_with("HTTP/1.0 200"), "{response}");
    wait_until("the request to be logged", || {
        server
            .last_log_lines(5)
            .iter()
            .any(|l| l.contains("\"GET / HTTP/1.0\" 200"))
    });
    // The launch header is in the file but not among this launch's lines.
    let log = std::fs::read_to_string(&spec.log_path).unwrap();
    assert!(log.starts_with("=== loadmark: launching `python`"), "{log}");
    assert!(!server
        .last_log_lines(100)
        .iter()
        .any(|l| l.starts_with("===")));

    // Graceful means the whole group exited within the grace period after SIGTERM.
    let stopped = server.stop().unwrap();
    assert!(stopped.graceful, "{stopped:?}");
    assert!(
        stopped.exit.is_some() || stopped.signal == Some(libc::SIGTERM),
        "{stopped:?}"
    );
    assert!(!alive(pid));
    assert!(group(pid).is_empty());
    assert!(
        TcpStream::connect(addr).is_err(),
        "port still open after stop"
    );
}

#[test]
fn a_command_that_exits_at_once_is_reported_with_its_output() {
    // Held for the whole test: nothing else can start listening there (issue 23).
    let held = refusing_port();
    let (spec, _dir) = spec(
        "exits",
        "echo starting; echo 'fatal: bad config line 3' >&2; exit 3",
        Readiness::Port(held.addr()),
    );
    match launch(&spec) {
        Err(e @ LaunchError::ExitedEarly { .. }) => {
            let text = e.to_string();
            let LaunchError::ExitedEarly {
                name,
                status,
                last_lines,
                ..
            } = e
            else {
                unreachable!()
            };
            assert_eq!(name, "exits");
            assert_eq!(status, "exit status: 3");
            assert_eq!(last_lines, vec!["starting", "fatal: bad config line 3"]);
            assert!(text.starts_with("`exits` exited before it was ready (exit status: 3)"));
            assert!(text.contains("\n  | fatal: bad config line 3"), "{text}");
        }
        other => panic!("expected ExitedEarly, got {other:?}"),
    }
}

#[test]
fn env_and_cwd_are_applied_and_only_this_launchs_lines_are_shown() {
    let held = refusing_port();
    let (mut spec, _dir) = spec(
        "env",
        "echo \"var=$LOADMARK_TEST_VAR\"; pwd; exit 0",
        Readiness::Port(held.addr()),
    );
    spec.env
        .push(("LOADMARK_TEST_VAR".into(), "forty two".into()));
    // Run twice into the same log: the second error shows only its own lines.
    assert!(launch(&spec).is_err());
    match launch(&spec) {
        Err(e @ LaunchError::ExitedEarly { .. }) => {
            assert!(
                e.to_string()
                    .contains("servers must stay in the foreground"),
                "{e}"
            );
            let LaunchError::ExitedEarly { last_lines, .. } = e else {
                unreachable!()
            };
            let cwd = spec.cwd.as_ref().unwrap().canonicalize().unwrap();
            assert_eq!(
                last_lines,
                vec!["var=forty two".to_string(), cwd.display().to_string()]
            );
        }
        other => panic!("expected ExitedEarly, got {other:?}"),
    }
    let log = std::fs::read_to_string(&spec.log_path).unwrap();
    assert_eq!(
        log.matches("var=forty two").count(),
        2,
        "appended, not truncated"
    );
}

#[test]
fn a_server_that_never_listens_is_not_ready_and_is_killed() {
    let held = refusing_port();
    let addr = held.addr();
    let (mut spec, _dir) = spec("silent", "echo hello; sleep 30", Readiness::Port(addr));
    spec.ready_timeout = Duration::from_millis(300);
    let started = Instant::now();
    match launch(&spec) {
        Err(e @ LaunchError::NotReady { .. }) => {
            let elapsed = started.elapsed();
            assert!(elapsed >= Duration::from_millis(300), "{elapsed:?}");
            // Not the 30 s of the sleep: the group was stopped at the timeout.
            assert!(elapsed < PROMPT, "{elapsed:?}");
            let text = e.to_string();
            assert!(
                text.starts_with(&format!(
                    "`silent` was not ready within 300ms (waited for a TCP connection to {addr}; last attempt: connect to {addr}:"
                )),
                "{text}"
            );
            assert!(text.ends_with("\n  | hello"), "{text}");
        }
        other => panic!("expected NotReady, got {other:?}"),
    }
    // Its whole group is gone: look for any process still running the log's header command.
    let leftovers: Vec<i32> = std::fs::read_dir("/proc")
        .unwrap()
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse().ok())
        .filter(|&pid: &i32| {
            alive(pid)
                && std::fs::read_link(format!("/proc/{pid}/cwd")).is_ok_and(|cwd| {
                    Some(cwd) == spec.cwd.as_ref().map(|d| d.canonicalize().unwrap())
                })
        })
        .collect();
    assert!(
        leftovers.is_empty(),
        "still running in the server's cwd: {leftovers:?}"
    );
}

#[test]
fn a_command_not_found_says_so() {
    let (spec, _dir) = spec(
        "missing",
        "no-such-server-binary --port 1",
        Readiness::Delay(Duration::from_secs(60)),
    );
    let started = Instant::now();
    let e = launch(&spec).unwrap_err();
    // Not the 60 s delay: the exit was seen at once.
    assert!(started.elapsed() < PROMPT, "did not fail fast");
    let text = e.to_string();
    assert!(
        text.starts_with(
            "`missing` exited before it was ready (exit status: 127) - command not found"
        ),
        "{text}"
    );
    assert!(text.contains("no-such-server-binary: not found"), "{text}");
}

#[test]
fn a_missing_working_directory_is_a_spawn_error() {
    let (mut spec, _dir) = spec("nocwd", "true", Readiness::Delay(Duration::ZERO));
    spec.cwd = Some(PathBuf::from("/nonexistent/loadmark/dir"));
    match launch(&spec) {
        Err(e @ LaunchError::Spawn { .. }) => {
            let text = e.to_string();
            assert!(text.contains("`nocwd`"), "{text}");
            assert!(
                text.contains("/nonexistent/loadmark/dir does not exist"),
                "{text}"
            );
        }
        other => panic!("expected Spawn, got {other:?}"),
    }
}

#[test]
fn a_server_ignoring_sigterm_is_killed_after_the_grace_period() {
    let (mut spec, _dir) = spec(
        "stubborn",
        "trap '' TERM; echo up; sleep 30",
        Readiness::Delay(Duration::from_millis(100)),
    );
    spec.stop_grace = Duration::from_millis(500);
    let server = launch(&spec).unwrap();
    let pid = server.pid() as i32;
    wait_until("sleep to start", || group(pid).len() == 2);
    let members = group(pid);
    let started = Instant::now();
    let stopped = server.stop().unwrap();
    let elapsed = started.elapsed();
    assert!(elapsed >= Duration::from_millis(500), "{elapsed:?}");
    // Not the 30 s of the sleep: SIGKILL came at the end of the grace period.
    assert!(elapsed < PROMPT, "{elapsed:?}");
    assert!(!stopped.graceful);
    assert_eq!(stopped.signal, Some(libc::SIGKILL));
    assert_eq!(stopped.exit, None);
    assert!(members.iter().all(|&p| !alive(p)), "{members:?}");
}

#[test]
fn stop_reaches_every_process_of_the_group() {
    let (spec, _dir) = spec(
        "group",
        "sleep 30 & sleep 30",
        Readiness::Delay(Duration::from_millis(50)),
    );
    let server = launch(&spec).unwrap();
    let pid = server.pid() as i32;
    wait_until("both sleeps to start", || group(pid).len() == 3);
    let members = group(pid);
    assert!(members.contains(&pid));
    let stopped = server.stop().unwrap();
    assert!(stopped.graceful, "{stopped:?}");
    assert_eq!(stopped.signal, Some(libc::SIGTERM));
    assert!(members.iter().all(|&p| !alive(p)), "{members:?}");
}

#[test]
fn dropping_without_stop_cleans_up() {
    let (mut spec, _dir) = spec(
        "dropped",
        "sleep 30 & sleep 30",
        Readiness::Delay(Duration::from_millis(50)),
    );
    spec.stop_grace = Duration::from_millis(200);
    let server = launch(&spec).unwrap();
    let pid = server.pid() as i32;
    wait_until("both sleeps to start", || group(pid).len() == 3);
    let members = group(pid);
    drop(server);
    assert!(members.iter().all(|&p| !alive(p)), "{members:?}");
    // Reaped, not a zombie: the leader's /proc entry is gone entirely.
    assert!(stat(pid).is_none());
}

#[test]
fn something_already_listening_is_refused_before_starting() {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let (spec, _dir) = spec("stale", "touch started", Readiness::Port(addr));
    match launch(&spec) {
        Err(e @ LaunchError::AlreadyListening { .. }) => {
            assert!(e.to_string().contains(&addr.to_string()), "{e}");
        }
        other => panic!("expected AlreadyListening, got {other:?}"),
    }
    assert!(
        !spec.cwd.as_ref().unwrap().join("started").exists(),
        "command ran"
    );
}

#[test]
fn https_readiness_is_refused_before_starting() {
    let (spec, _dir) = spec(
        "tls",
        "touch started",
        Readiness::Http("https://127.0.0.1:8443/health".into()),
    );
    match launch(&spec) {
        Err(e @ LaunchError::InvalidReadiness { .. }) => {
            assert!(e.to_string().contains("https is not supported"), "{e}");
        }
        other => panic!("expected InvalidReadiness, got {other:?}"),
    }
    assert!(
        !spec.cwd.as_ref().unwrap().join("started").exists(),
        "command ran"
    );
}

/// A server answering every request with `status`, until dropped.
struct FixedServer {
    addr: SocketAddr,
    /// Requests answered.
    answered: Arc<AtomicUsize>,
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl FixedServer {
    fn start(status: &'static str) -> FixedServer {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        listener.set_nonblocking(true).unwrap();
        let addr = listener.local_addr().unwrap();
        let stop = Arc::new(AtomicBool::new(false));
        let answered = Arc::new(AtomicUsize::new(0));
        let (flag, count) = (stop.clone(), answered.clone());
        let thread = std::thread::spawn(move || {
            // Only a backstop should the test leak it; tests drop it long before.
            let deadline = Instant::now() + Duration::from_secs(120);
            while !flag.load(Ordering::SeqCst) && Instant::now() < deadline {
                match listener.accept() {
                    Ok((mut stream, _)) => {
                        stream.set_nonblocking(false).unwrap();
                        stream
                            .set_read_timeout(Some(Duration::from_secs(1)))
                            .unwrap();
                        let mut buf = [0u8; 1024];
                        let _ = stream.read(&mut buf);
                        let response = format!("HTTP/1.1 {status}\r\nContent-Length: 0\r\n\r\n");
                        if stream.write_all(response.as_bytes()).is_ok() {
                            count.fetch_add(1, Ordering::SeqCst);
                        }
                    }
                    Err(_) => std::thread::sleep(Duration::from_millis(5)),
                }
            }
        });
        FixedServer {
            addr,
            answered,
            stop,
            thread: Some(thread),
        }
    }
}

impl Drop for FixedServer {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        let _ = self.thread.take().map(|t| t.join());
    }
}

#[test]
fn http_readiness_needs_a_2xx() {
    let server = FixedServer::start("503 Service Unavailable");
    let (mut spec, _dir) = spec(
        "unhealthy",
        "sleep 30",
        Readiness::Http(format!("http://{}/health", server.addr)),
    );
    spec.ready_timeout = Duration::from_millis(300);
    match launch(&spec) {
        // The last attempt, at the deadline, has only a few ms: on a loaded machine it can
        // time out instead of reading the 503, so what proves the point is that the server
        // was asked, answered only 503, and that was not ready.
        Err(LaunchError::NotReady { last_attempt, .. }) => assert!(
            last_attempt == "HTTP 503"
                || last_attempt.starts_with("read response")
                || last_attempt.starts_with("connect to"),
            "{last_attempt}"
        ),
        other => panic!("expected NotReady, got {other:?}"),
    }
    // The server counts an answer after writing it, on its own thread: let it catch up.
    wait_until("the server to be probed", || {
        server.answered.load(Ordering::SeqCst) >= 1
    });
}

#[test]
fn a_healthy_url_answering_before_the_launch_is_refused() {
    let server = FixedServer::start("200 OK");
    let (spec, _dir) = spec(
        "shadowed",
        "touch started",
        Readiness::Http(format!("http://{}/", server.addr)),
    );
    assert!(matches!(
        launch(&spec),
        Err(LaunchError::AlreadyListening { .. })
    ));
    assert!(
        !spec.cwd.as_ref().unwrap().join("started").exists(),
        "command ran"
    );
}

#[test]
fn a_log_that_cannot_be_created_is_an_error() {
    let (mut spec, _dir) = spec("nolog", "true", Readiness::Delay(Duration::ZERO));
    spec.log_path = PathBuf::from("/proc/loadmark/server.log");
    match launch(&spec) {
        Err(e @ LaunchError::Log { .. }) => {
            assert!(e.to_string().contains("/proc/loadmark"), "{e}")
        }
        other => panic!("expected Log, got {other:?}"),
    }
}

#[test]
fn a_server_that_dies_after_becoming_ready_is_seen_as_not_running() {
    // It crashes when told (the file `crash` appears), not after a fixed time that a stalled
    // test thread could miss.
    let (spec, dir) = spec(
        "crashes",
        "while [ ! -e crash ]; do sleep 0.01; done; echo 'segfault (pretend)'; exit 139",
        Readiness::Delay(Duration::from_millis(20)),
    );
    let server = launch(&spec).unwrap();
    assert!(server.is_running());
    std::fs::write(dir.join("crash"), "").unwrap();
    wait_until("the server to exit", || !server.is_running());
    assert_eq!(server.last_log_lines(1), vec!["segfault (pretend)"]);
    let stopped = server.stop().unwrap();
    assert_eq!(stopped.exit, Some(139));
    assert_eq!(stopped.signal, None);
}

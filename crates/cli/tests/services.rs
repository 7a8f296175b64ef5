//! A plan's `services:` end to end: a backend (nginx serving a file) kept up while two relay
//! stacks (the built-in target's `/relay`) are measured one after the other, and a service
//! that dies mid-plan.
//!
//! Ports: a launched server's port must be in the plan text before it starts. Each test
//! holds its ports bound (not listening) with SO_REUSEPORT for its whole life, and the
//! servers bind them with SO_REUSEPORT too (`loadmark serve --reuse-port`, nginx's
//! `reuseport`): no other process can take them meanwhile, and connections reach only the
//! listening server.

mod common;

use common::*;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// A loopback port held bound with SO_REUSEPORT, never listening, for as long as the
/// returned socket lives.
fn reserved_port() -> (std::net::TcpStream, u16) {
    // SAFETY: plain syscalls on a socket this function owns.
    unsafe {
        let fd = libc::socket(libc::AF_INET, libc::SOCK_STREAM | libc::SOCK_CLOEXEC, 0);
        assert!(fd >= 0);
        let sock = <std::net::TcpStream as std::os::fd::FromRawFd>::from_raw_fd(fd);
        let one: libc::c_int = 1;
        assert_eq!(
            libc::setsockopt(
                fd,
                libc::SOL_SOCKET,
                libc::SO_REUSEPORT,
                &one as *const _ as *const libc::c_void,
                std::mem::size_of::<libc::c_int>() as libc::socklen_t,
            ),
            0
        );
        let mut addr: libc::sockaddr_in = std::mem::zeroed();
        addr.sin_family = libc::AF_INET as libc::sa_family_t;
        addr.sin_addr.s_addr = u32::from_ne_bytes([127, 0, 0, 1]);
        let len = std::mem::size_of::<libc::sockaddr_in>() as libc::socklen_t;
        assert_eq!(
            libc::bind(fd, &addr as *const _ as *const libc::sockaddr, len),
            0
        );
        let mut bound: libc::sockaddr_in = std::mem::zeroed();
        let mut blen = len;
        libc::getsockname(fd, &mut bound as *mut _ as *mut libc::sockaddr, &mut blen);
        (sock, u16::from_be(bound.sin_port))
    }
}

fn loadmark_dir() -> PathBuf {
    Path::new(env!("CARGO_BIN_EXE_loadmark"))
        .parent()
        .unwrap()
        .to_path_buf()
}

/// Runs `loadmark ARGS` in `dir` with loadmark itself on PATH.
fn run(args: &[&str], dir: &Path) -> Output {
    let path = format!(
        "{}:{}",
        loadmark_dir().display(),
        std::env::var("PATH").unwrap_or_default()
    );
    Command::new(env!("CARGO_BIN_EXE_loadmark"))
        .args(args)
        .current_dir(dir)
        .env("PATH", path)
        .output()
        .unwrap()
}

fn pid_alive(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|s| !s.contains(") Z "))
}

const DATA: &str = r#"{"items":[{"id":1,"name":"alpha"},{"id":2,"name":"beta"}],"total":2}"#;

/// nginx serving `data.json` from `dir` on `port`, every request logged (one line each).
fn nginx_conf(dir: &Path, port: u16) {
    std::fs::create_dir_all(dir.join("www")).unwrap();
    std::fs::create_dir_all(dir.join("tmp")).unwrap();
    std::fs::write(dir.join("www/data.json"), DATA).unwrap();
    std::fs::write(
        dir.join("nginx.conf"),
        format!(
            "worker_processes 1;\npid nginx.pid;\nerror_log stderr warn;\nevents {{ worker_connections 1024; }}\n\
             http {{\n  access_log access.log;\n  client_body_temp_path tmp; proxy_temp_path tmp; fastcgi_temp_path tmp;\n  uwsgi_temp_path tmp; scgi_temp_path tmp;\n  keepalive_requests 1000000;\n\
             server {{ listen 127.0.0.1:{port} reuseport; root www; default_type application/json; }}\n}}\n"
        ),
    )
    .unwrap();
}

#[test]
fn relay_stacks_share_one_backend_service_started_once_and_stopped_once() {
    let dir = temp_dir("services", "relay");
    let (_b, backend) = reserved_port();
    let (_f, flask) = reserved_port();
    let (_n, node) = reserved_port();
    nginx_conf(&dir, backend);
    let relay = |port: u16| {
        format!("http://127.0.0.1:{port}/relay?url=http://127.0.0.1:{backend}/data.json")
    };
    let plan = format!(
        r#"name: Relay stacks
services:
  backend:
    command: exec nginx -p "$PWD" -c nginx.conf -g 'daemon off;'
    ready: {{port: "127.0.0.1:{backend}"}}
targets:
  flask:
    url: "{}"
    launch: {{command: loadmark serve --port {flask} --reuse-port}}
    depends_on: [backend]
  node:
    url: "{}"
    launch: {{command: loadmark serve --port {node} --reuse-port}}
    depends_on: [backend]
load: {{requests: 300, connections: 4}}
monitor: {{interval: 100ms}}
"#,
        relay(flask),
        relay(node)
    );
    std::fs::write(dir.join("plan.yaml"), &plan).unwrap();

    let check = run(&["bench", "--check", "plan.yaml"], &dir);
    let stdout = String::from_utf8_lossy(&check.stdout);
    assert!(check.status.success(), "{stdout}");
    assert!(
        stdout.contains(
            "order:\n  start service backend\n  step 1\n  step 2\n  stop service backend\n"
        ),
        "{stdout}"
    );

    let out = run(&["bench", "plan.yaml", "-o", "out", "-q"], &dir);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    // Started once, before the first step; stopped once, after the last.
    assert_eq!(
        stderr.matches("starting service backend").count(),
        1,
        "{stderr}"
    );
    assert_eq!(
        stderr.matches("stopping service backend").count(),
        1,
        "{stderr}"
    );
    let started = stderr.find("starting service backend").unwrap();
    let stopped = stderr.find("stopping service backend").unwrap();
    assert!(started < stderr.find("step 1/2").unwrap(), "{stderr}");
    assert!(stopped > stderr.find("step 2:").unwrap(), "{stderr}");

    let bundle =
        bundle_json(&std::fs::read_to_string(dir.join("out/bundle.json")).unwrap()).unwrap();
    assert_eq!(bundle.services.len(), 1);
    assert_eq!(bundle.steps.len(), 2);
    let mut backend_pids = Vec::new();
    for step in &bundle.steps {
        let s = &step.report.summary;
        assert_eq!(s.requests.responses, 300, "step {}", step.number);
        assert_eq!(
            step.report.failed(),
            0,
            "step {}: {:?}",
            step.number,
            s.errors
        );
        assert_eq!(s.status.class(2), 300);
        let svc = &step.services[0];
        assert_eq!(svc.name, "backend");
        assert!(
            svc.usage.rss_peak_bytes > 0 && !svc.usage.samples.is_empty(),
            "{svc:?}"
        );
        backend_pids.push(svc.usage.pid);
        assert!(step.notes.is_empty(), "{:?}", step.notes);
    }
    assert_eq!(
        backend_pids[0], backend_pids[1],
        "one backend for both steps"
    );
    assert!(!pid_alive(backend_pids[0]), "the backend was stopped");
    // Every relayed request reached the backend, and nothing else did.
    let log = std::fs::read_to_string(dir.join("access.log")).unwrap();
    assert_eq!(log.lines().count(), 600);
    assert_eq!(log.matches("GET /data.json").count(), 600);
    for name in ["flask", "node"] {
        let log = std::fs::read_to_string(dir.join(format!("out/logs/{name}.log"))).unwrap();
        assert!(log.contains("served 300 requests"), "{name}: {log}");
    }
    let md = std::fs::read_to_string(dir.join("out/BENCHMARKS.md")).unwrap();
    assert!(md.contains("## Services"), "{md}");
    assert!(md.contains("| backend | `exec nginx"), "{md}");
    assert!(md.contains("| 1 | service backend |"), "{md}");
    assert!(md.contains("| 2 | service backend |"), "{md}");
    let html = run(&["report", "out/bundle.json", "--format", "html"], &dir);
    assert!(String::from_utf8_lossy(&html.stdout).contains("service backend"));
}

#[test]
fn a_service_that_dies_mid_plan_fails_the_steps_that_need_it_with_its_last_lines() {
    let dir = temp_dir("services", "dies");
    let (_a, a) = reserved_port();
    let (_b, b) = reserved_port();
    // The service lives until target b's launch creates `die`, and b's launch goes on only
    // once the service has exited (its shell is a zombie, or gone): so it is dead before b's
    // first step is checked, however the scheduler orders things on a loaded machine (when b
    // did not wait, the plan could end before the service noticed `die`). b's steps must
    // report it, or not run and say why.
    let plan = format!(
        r#"services:
  cache:
    command: "echo $$ > cache.pid; echo cache up; while [ ! -e die ]; do sleep 0.02; done; echo 'cache: out of memory'; exit 3"
    ready: {{delay: 0s}}
targets:
  a:
    url: http://127.0.0.1:{a}/status
    launch: {{command: loadmark serve --port {a} --reuse-port}}
    depends_on: [cache]
  b:
    url: http://127.0.0.1:{b}/status
    launch: {{command: "while [ ! -s cache.pid ]; do sleep 0.02; done; p=$(cat cache.pid); touch die; while [ -e /proc/$p ] && ! grep -q ') Z ' /proc/$p/stat; do sleep 0.02; done; exec loadmark serve --port {b} --reuse-port"}}
    depends_on: [cache]
load: {{requests: 50, connections: 2}}
sweep: {{connections: [1, 2]}}
"#
    );
    std::fs::write(dir.join("plan.yaml"), &plan).unwrap();
    let out = run(&["bench", "plan.yaml", "-o", "out", "-q"], &dir);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    let bundle =
        bundle_json(&std::fs::read_to_string(dir.join("out/bundle.json")).unwrap()).unwrap();
    // a's two steps ran with the cache up.
    let ran_a: Vec<_> = bundle.steps.iter().filter(|s| s.target == "a").collect();
    assert_eq!(ran_a.len(), 2);
    assert!(ran_a
        .iter()
        .all(|s| s.notes.is_empty() && s.report.failed() == 0));
    // b's steps: each either did not run or carries the note.
    let b_notes = bundle
        .steps
        .iter()
        .filter(|s| s.target == "b")
        .flat_map(|s| s.notes.clone())
        .chain(bundle.notes.clone())
        .collect::<Vec<_>>();
    let not_run = bundle.notes.len();
    let ran_b = bundle.steps.iter().filter(|s| s.target == "b").count();
    assert_eq!(not_run + ran_b, 2, "{b_notes:?}");
    assert!(!b_notes.is_empty());
    for note in &b_notes {
        assert!(note.contains("service cache (pid "), "{note}");
        assert!(note.contains("exited with status 3"), "{note}");
        assert!(note.contains("cache: out of memory"), "{note}");
    }
    let md = std::fs::read_to_string(dir.join("out/BENCHMARKS.md")).unwrap();
    assert!(md.contains("cache: out of memory"), "{md}");
}

//! HTTP/3 end to end (issue 37): `loadmark run --http3` against the built-in target's QUIC
//! listener (`serve --http3 --tls`) and against Caddy (HTTP/3 on by default) serving a static
//! file and a reverse proxy to the built-in target; counts equal the servers' counts, large
//! bodies go both ways. Misbehaving peers are in tests/http3_hostile.rs.

mod common;

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use loadmark_report::Report;
use loadmark_target::{start, RunningServer, ServerConfig};
use loadmark_test_support::{retry_on_port_conflict, wait_until, Daemon, TempDir, PATIENCE};

struct Ran {
    ok: bool,
    code: Option<i32>,
    out: String,
    err: String,
}

fn loadmark(args: &[&str]) -> Ran {
    let out = common::loadmark().args(args).output().unwrap();
    Ran {
        ok: out.status.success(),
        code: out.status.code(),
        out: String::from_utf8_lossy(&out.stdout).into_owned(),
        err: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

/// Runs `loadmark run ARGS -o DIR/NAME.json` and reads the report it wrote.
fn run_json(dir: &Path, name: &str, args: &[&str]) -> (Ran, Report) {
    let path = dir.join(format!("{name}.json"));
    let mut all = vec!["run"];
    all.extend_from_slice(args);
    all.extend(["-o", path.to_str().unwrap()]);
    let ran = loadmark(&all);
    let text = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("{name}: no report ({e}): {}{}", ran.out, ran.err));
    (ran, common::report_json(&text).unwrap())
}

/// The built-in target with TLS and HTTP/3 on a free port; its certificate in `dir`.
fn h3_target(dir: &Path) -> (RunningServer, String) {
    let server = start(ServerConfig {
        addr: ([127, 0, 0, 1], 0).into(),
        tls: true,
        http3: true,
        ..Default::default()
    })
    .unwrap();
    let pem = dir.join("target.pem");
    std::fs::write(&pem, server.tls_cert_pem().unwrap()).unwrap();
    (server, pem.to_str().unwrap().to_string())
}

#[test]
fn closed_and_open_loops_over_http3_match_the_servers_counts_with_large_bodies_both_ways() {
    let dir = TempDir::new("http3-target");
    let (server, pem) = h3_target(dir.path());
    let base = format!("https://127.0.0.1:{}", server.local_addr().port());

    // Closed loop, certificate verified with --cacert: 2 connections × 4 streams, exactly 400.
    let url = format!("{base}/json");
    let args = ["--http3", "--cacert", &pem, "-c", "2", "--streams", "4"];
    let (ran, r) = run_json(
        dir.path(),
        "closed",
        &[&[url.as_str()][..], &args, &["-n", "400"]].concat(),
    );
    assert!(ran.ok, "{}{}", ran.out, ran.err);
    assert_eq!(r.summary.requests.responses, 400, "{}", ran.out);
    assert_eq!(r.summary.requests.errors, 0, "{}", ran.out);
    assert_eq!(server.http3_requests(), 400);
    assert_eq!(server.requests_served(), 400, "nothing went over TCP");
    let p = r.summary.protocol.as_ref().unwrap();
    assert_eq!(p.used, "HTTP/3");
    assert_eq!(p.streams_per_connection, Some(4));
    let spread = p.requests_per_connection.as_ref().unwrap();
    assert_eq!(
        (spread.connections, spread.min + spread.max),
        (2, 400),
        "{spread:?}"
    );
    let quic = p.quic.as_ref().expect("QUIC figures");
    assert_eq!(quic.connections, 2, "{quic:?}");
    assert!(
        quic.handshake_ms.min > 0.0 && quic.handshake_ms.max < 5_000.0,
        "{quic:?}"
    );
    assert!(
        quic.packets_sent >= 400 / 4 && quic.datagrams_received > 0,
        "{quic:?}"
    );
    assert!(quic.cwnd_min_bytes > 0, "{quic:?}");
    assert!(
        ran.out.contains("HTTP/3, 4 streams per connection"),
        "{}",
        ran.out
    );
    assert!(ran.out.contains("QUIC: 2 handshakes"), "{}", ran.out);

    // Open loop: 200 req/s for 2 s, every due request answered (none dropped at this rate).
    let before = server.http3_requests();
    let (ran, r) = run_json(
        dir.path(),
        "open",
        &[
            &url,
            "--http3",
            "--insecure",
            "-R",
            "200",
            "-d",
            "2s",
            "--streams",
            "8",
        ],
    );
    assert!(ran.ok, "{}{}", ran.out, ran.err);
    let s = &r.summary;
    assert_eq!(s.requests.responses + s.dropped, 400, "{}", ran.out);
    assert_eq!(s.requests.errors, 0, "{}", ran.out);
    assert_eq!(s.requests.in_flight_at_end, 0, "{}", ran.out);
    assert_eq!(server.http3_requests() - before, s.requests.responses);
    assert!(s.schedule_lag.is_some(), "an open-loop report");

    // Large bodies both ways: a 1 MiB POST echoed back, then a 4 MiB GET.
    let body = dir.path().join("body.bin");
    let mib: Vec<u8> = (0..1u32 << 20).map(|i| (i % 251) as u8).collect();
    std::fs::write(&body, &mib).unwrap();
    let before = server.http3_requests();
    let echo = format!("{base}/echo");
    let body = body.to_str().unwrap();
    let large = [
        "--http3",
        "--insecure",
        "-c",
        "2",
        "--streams",
        "2",
        "-n",
        "12",
    ];
    let (ran, r) = run_json(
        dir.path(),
        "post",
        &[&[&echo[..], "-p", body][..], &large].concat(),
    );
    assert!(ran.ok, "{}{}", ran.out, ran.err);
    assert_eq!(r.summary.requests.responses, 12, "{}", ran.out);
    assert_eq!(r.summary.status.get(200), 12, "{}", ran.out);
    assert!(
        r.summary.bytes_written >= 12 << 20,
        "{}",
        r.summary.bytes_written
    );
    assert!(
        r.summary.bytes_read >= 12 << 20,
        "echoed: {}",
        r.summary.bytes_read
    );
    let bytes = format!("{base}/bytes/{}", 4 << 20);
    let (ran, r) = run_json(dir.path(), "get", &[&[&bytes[..]][..], &large].concat());
    assert!(ran.ok, "{}{}", ran.out, ran.err);
    assert_eq!(r.summary.requests.responses, 12, "{}", ran.out);
    assert!(
        r.summary.bytes_read >= 12 * (4 << 20),
        "{}",
        r.summary.bytes_read
    );
    assert_eq!(server.http3_requests() - before, 24);
}

#[test]
fn zero_rtt_resumes_connections_after_the_first_and_counts_early_requests_apart() {
    let dir = TempDir::new("http3-0rtt");
    let (server, pem) = h3_target(dir.path());
    let base = format!("https://127.0.0.1:{}", server.local_addr().port());
    let url = format!("{base}/json");
    let zero = [
        "--http3",
        "--http3-0rtt",
        "--cacert",
        &pem,
        "--no-keepalive",
    ];

    // Closed loop, a connection per request: the first 2 handshakes are full, the other
    // 78 resume; the server took one ticket for each connection that went early.
    let (ran, r) = run_json(
        dir.path(),
        "closed",
        &[&[url.as_str()][..], &zero, &["-c", "2", "-n", "80"]].concat(),
    );
    assert!(ran.ok, "{}{}", ran.out, ran.err);
    let s = &r.summary;
    assert_eq!(
        (s.requests.responses, s.requests.errors),
        (80, 0),
        "{}",
        ran.out
    );
    assert_eq!(server.http3_requests(), 80);
    let p = s.protocol.as_ref().unwrap();
    let spread = p.requests_per_connection.as_ref().unwrap();
    assert_eq!((spread.connections, spread.max), (80, 1), "{spread:?}");
    let quic = p.quic.as_ref().unwrap();
    let z = quic.zero_rtt.as_ref().expect("0-RTT figures");
    assert_eq!(quic.connections, 80, "{quic:?}");
    assert!(z.connections > 0 && z.connections <= 78, "{z:?}");
    assert_eq!(
        (z.accepted, z.rejected, z.requests_rejected),
        (z.connections, 0, 0)
    );
    assert_eq!(z.accepted, server.quic_resumptions(), "{z:?}");
    assert!(
        z.requests_early > 0 && z.requests_early <= z.accepted,
        "{z:?}"
    );
    assert!(z.handshake_ms.is_some(), "{z:?}");
    assert_eq!(s.retries, 0);
    assert!(
        ran.out
            .contains(&format!("0-RTT: {} connections resumed", z.connections)),
        "{}",
        ran.out
    );
    assert!(ran.out.contains("1-RTT handshake"), "{}", ran.out);

    // Open loop, 2 streams per connection: requests go early there too.
    let (resumed, served) = (server.quic_resumptions(), server.http3_requests());
    let (ran, r) = run_json(
        dir.path(),
        "open",
        &[
            &[url.as_str()][..],
            &zero,
            &["-R", "50", "-d", "2s", "--streams", "2"],
        ]
        .concat(),
    );
    assert!(ran.ok, "{}{}", ran.out, ran.err);
    let s = &r.summary;
    assert_eq!(s.requests.responses + s.dropped, 100, "{}", ran.out);
    assert_eq!((s.requests.errors, s.requests.in_flight_at_end), (0, 0));
    assert_eq!(server.http3_requests() - served, s.requests.responses);
    let z = (s.protocol.as_ref().unwrap().quic.as_ref())
        .and_then(|q| q.zero_rtt.clone())
        .expect("0-RTT figures");
    assert!(z.accepted > 0 && z.requests_early > 0, "{z:?}");
    assert_eq!(z.accepted, server.quic_resumptions() - resumed, "{z:?}");

    // A POST is not safe to replay: it waits for the handshake, so none goes early.
    let resumed = server.quic_resumptions();
    let echo = format!("{base}/echo");
    let (ran, r) = run_json(
        dir.path(),
        "post",
        &[
            &[echo.as_str()][..],
            &zero,
            &["-c", "1", "-n", "20", "-m", "POST", "--body", "x=1"],
        ]
        .concat(),
    );
    assert!(ran.ok, "{}{}", ran.out, ran.err);
    assert_eq!(r.summary.requests.responses, 20, "{}", ran.out);
    let z = (r.summary.protocol.as_ref().unwrap().quic.as_ref())
        .and_then(|q| q.zero_rtt.clone())
        .expect("0-RTT figures");
    assert!(z.accepted > 0, "{z:?}");
    assert_eq!(z.requests_early, 0, "a POST never goes early: {z:?}");
    assert_eq!(z.accepted, server.quic_resumptions() - resumed);

    // Without --http3 the flag is refused, naming what it needs.
    let ran = loadmark(&["run", &url, "--http3-0rtt", "-n", "1"]);
    assert_eq!(ran.code, Some(2), "{}", ran.err);
    assert!(ran.err.contains("--http3"), "{}", ran.err);
}

#[test]
fn http3_needs_https_and_refuses_what_it_cannot_carry() {
    let ran = loadmark(&["run", "http://127.0.0.1:9/", "--http3", "-n", "1"]);
    assert_eq!(ran.code, Some(2), "{}", ran.err);
    assert!(ran.err.contains("HTTP/3 needs https://"), "{}", ran.err);
    for extra in [&["--http2"][..], &["--pipeline", "4"][..]] {
        let mut args = vec!["run", "https://127.0.0.1:9/", "--http3", "-n", "1"];
        args.extend_from_slice(extra);
        let ran = loadmark(&args);
        assert_eq!(ran.code, Some(2), "{extra:?}: {}", ran.err);
        assert!(ran.err.contains("--http3"), "{}", ran.err);
    }
    let ran = loadmark(&["serve", "--port", "0", "--http3"]);
    assert_eq!(ran.code, Some(2), "{}", ran.err);
    assert!(ran.err.contains("--tls"), "{}", ran.err);
}

#[test]
fn checks_read_http3_responses_status_headers_and_body_in_both_loops() {
    let dir = TempDir::new("http3-checks");
    let (server, _pem) = h3_target(dir.path());
    let base = format!("https://127.0.0.1:{}", server.local_addr().port());
    let checks = [
        "--check",
        "status == 200",
        "--check",
        "ok: json /ok == true",
        "--check",
        "header content-type contains json",
    ];
    // /flaky/2/3 always answers the right body, /flaky/2/4 always the wrong one.
    for (name, path, ok) in [
        ("right", "/flaky/2/3", true),
        ("wrong", "/flaky/2/4", false),
    ] {
        let url = format!("{base}{path}");
        let (ran, r) = run_json(
            dir.path(),
            name,
            &[
                &[
                    &url[..],
                    "--http3",
                    "--insecure",
                    "-c",
                    "2",
                    "--streams",
                    "3",
                ][..],
                &["-n", "120"],
                &checks,
            ]
            .concat(),
        );
        // Failed checks make a failed run (exit 1), as over HTTP/1.1.
        assert_eq!(ran.ok, ok, "{}{}", ran.out, ran.err);
        assert_eq!(r.summary.requests.responses, 120, "{}", ran.out);
        let c = r.summary.checks.as_ref().expect("checks in the report");
        assert_eq!(c.get("status == 200").unwrap().passed, 120);
        let header = c.get("header content-type contains json").unwrap();
        assert_eq!(header.passed, 120, "{header:?}");
        let json = c.get("ok").unwrap();
        if ok {
            assert_eq!((json.passed, json.failed), (120, 0), "{json:?}");
        } else {
            assert_eq!((json.passed, json.failed), (0, 120), "{json:?}");
            let seen = json.first_failure.as_deref().unwrap();
            assert!(seen.contains("\"ok\":false"), "{seen}");
        }
    }
    // The open loop checks what it answered.
    let url = format!("{base}/flaky/2/4");
    let (ran, r) = run_json(
        dir.path(),
        "open",
        &[
            &[&url[..], "--http3", "--insecure", "-R", "100", "-d", "1s"][..],
            &checks,
        ]
        .concat(),
    );
    let answered = r.summary.requests.responses;
    assert!(answered > 0, "{}{}", ran.out, ran.err);
    let c = r.summary.checks.as_ref().expect("checks in the report");
    assert_eq!(c.get("ok").unwrap().failed, answered);
    assert_eq!(c.get("status == 200").unwrap().passed, answered);
}

#[test]
fn plan_files_and_scenario_steps_speak_http3_with_counts_equal_to_the_servers() {
    let dir = TempDir::new("http3-plans");
    let (server, _pem) = h3_target(dir.path());
    let port = server.local_addr().port();
    let bench = |plan: &str| {
        std::fs::write(dir.path().join("plan.yaml"), plan).unwrap();
        let _ = std::fs::remove_dir_all(dir.path().join("out"));
        let out = common::loadmark()
            .current_dir(dir.path())
            .args(["bench", "plan.yaml", "-o", "out", "-q"])
            .output()
            .unwrap();
        let text = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(out.status.success(), "{text}");
        let bundle = std::fs::read_to_string(dir.path().join("out/bundle.json")).unwrap();
        common::bundle_json(&bundle).unwrap().steps.remove(0).report
    };

    // A plain plan: `load.http3` is `--http3`, with its checks.
    let r = bench(&format!(
        "targets:\n  t: {{url: 'https://127.0.0.1:{port}/json'}}\n\
         load: {{http3: true, streams: 4, connections: 2, requests: 200, insecure: true}}\n\
         checks: [status == 200]\n"
    ));
    assert_eq!(r.summary.requests.responses, 200);
    assert_eq!(server.http3_requests(), 200);
    assert_eq!(server.requests_served(), 200, "nothing over TCP");
    let p = r.summary.protocol.as_ref().unwrap();
    assert_eq!(p.used, "HTTP/3");
    assert_eq!(r.summary.checks.as_ref().unwrap().passed(), 200);

    // A journey mixing HTTP/1.1 over TLS and HTTP/3: login over TCP, the token carried to
    // HTTP/3 steps; one QUIC connection per user.
    let r = bench(&format!(
        "targets:\n  shop: {{url: 'https://127.0.0.1:{port}'}}\n\
         scenario:\n\
         \x20 - name: login\n\
         \x20   request: {{method: POST, url: /login, body: '{{\"user\":\"u{{{{seq}}}}\"}}'}}\n\
         \x20   extract: {{token: json /token}}\n\
         \x20 - name: list\n\
         \x20   request: {{url: /items, protocol: h3, headers: {{Authorization: 'Bearer {{{{token}}}}'}}}}\n\
         \x20   check: [status == 200, 'listed: json /items length > 0']\n\
         \x20 - name: json\n\
         \x20   request: {{url: /json, protocol: h3}}\n\
         \x20   check: [status == 200]\n\
         load: {{users: 5, iterations: 100, insecure: true}}\n"
    ));
    let s = r.summary.scenario.as_ref().expect("a scenario summary");
    assert_eq!((s.iterations, s.aborted), (100, 0), "{s:?}");
    for name in ["login", "list", "json"] {
        let st = s.steps.iter().find(|st| st.name == name).unwrap();
        assert_eq!((st.requests, st.status.class(2)), (100, 100), "{name}");
        assert_eq!(st.checks_failed, 0, "{name}");
    }
    assert_eq!(
        server.http3_requests(),
        200 + 200,
        "list and json over HTTP/3"
    );
    assert_eq!(server.requests_served(), 200 + 300);
    assert_eq!(server.logins(), 100);
    assert_eq!(
        server.auth_failures(),
        0,
        "every HTTP/3 step carried its token"
    );
    let quic = r.summary.protocol.as_ref().and_then(|p| p.quic.as_ref());
    assert_eq!(quic.expect("QUIC figures").connections, 5, "one per user");
}

/// Runs `loadmark bench` on `plan` in `dir` and returns the first step's report.
fn bench_plan(dir: &Path, plan: &str) -> Report {
    std::fs::write(dir.join("plan.yaml"), plan).unwrap();
    let _ = std::fs::remove_dir_all(dir.join("out"));
    let out = common::loadmark()
        .current_dir(dir)
        .args(["bench", "plan.yaml", "-o", "out", "-q"])
        .output()
        .unwrap();
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.status.success(), "{text}");
    let bundle = std::fs::read_to_string(dir.join("out/bundle.json")).unwrap();
    common::bundle_json(&bundle).unwrap().steps.remove(0).report
}

#[test]
fn h3_steps_run_under_the_open_model_and_beside_another_scenario_with_the_servers_counts() {
    let dir = TempDir::new("http3-scenario-models");
    let (server, _pem) = h3_target(dir.path());
    let port = server.local_addr().port();

    // Open model: 50 iterations per second for 2 s, each a TCP step then an HTTP/3 one.
    let r = bench_plan(
        dir.path(),
        &format!(
            "targets:\n  t: {{url: 'https://127.0.0.1:{port}'}}\n\
             scenario:\n\
             \x20 - {{name: tcp, request: {{url: /status}}}}\n\
             \x20 - {{name: quic, request: {{url: /json, protocol: h3}}, check: [status == 200]}}\n\
             load: {{iterations_per_second: 50, users: 20, duration: 2s, insecure: true}}\n"
        ),
    );
    let s = r.summary.scenario.as_ref().expect("a scenario summary");
    assert_eq!(s.iterations + s.dropped, 100, "{s:?}");
    assert_eq!(s.aborted, 0, "{s:?}");
    let quic = s.steps.iter().find(|st| st.name == "quic").unwrap();
    assert_eq!(quic.requests, s.iterations, "{s:?}");
    assert_eq!(quic.status.class(2), quic.requests);
    assert_eq!(quic.checks_failed, 0);
    assert_eq!(server.http3_requests(), quic.requests);
    assert_eq!(server.requests_served(), 2 * quic.requests);
    let figures = r.summary.protocol.as_ref().and_then(|p| p.quic.as_ref());
    assert!(
        figures.expect("QUIC figures").connections <= 20,
        "a connection per user"
    );

    // Two scenarios at once: a closed HTTP/3 one and an open TCP one.
    let (h3_before, all_before) = (server.http3_requests(), server.requests_served());
    let r = bench_plan(
        dir.path(),
        &format!(
            "targets:\n  t: {{url: 'https://127.0.0.1:{port}'}}\n\
             scenarios:\n\
             \x20 quic:\n\
             \x20   steps: [{{name: json, request: {{url: /json, protocol: h3}}}}]\n\
             \x20   load: {{users: 4, iterations: 200}}\n\
             \x20 tcp:\n\
             \x20   steps: [{{name: status, request: {{url: /status}}}}]\n\
             \x20   load: {{iterations_per_second: 50, iterations: 50}}\n\
             load: {{insecure: true}}\n"
        ),
    );
    let named = |name: &str| {
        (r.summary.scenarios.iter())
            .find(|s| s.name == name)
            .unwrap_or_else(|| panic!("no scenario {name}"))
    };
    let (quic, tcp) = (named("quic"), named("tcp"));
    assert_eq!((quic.scenario.iterations, quic.requests), (200, 200));
    assert_eq!(quic.scenario.steps[0].status.class(2), 200);
    assert_eq!((tcp.scenario.iterations, tcp.scenario.dropped), (50, 0));
    assert_eq!(server.http3_requests() - h3_before, 200);
    assert_eq!(server.requests_served() - all_before, 250);
    assert_eq!(r.summary.requests.completed, 250);
    let figures = r.summary.protocol.as_ref().and_then(|p| p.quic.as_ref());
    assert_eq!(
        figures.expect("QUIC figures").connections,
        4,
        "one per user"
    );
}

/// Caddy 2 (Debian's `caddy`, installed by .ci/run): HTTPS on `port` with its internal CA,
/// HTTP/3 on the same UDP port (its default), JSON access log in `dir`.
fn caddy(dir: &Path, port: u16, backend: u16) -> Daemon {
    let site = dir.join("site");
    std::fs::create_dir_all(site.join("static")).unwrap();
    let file: Vec<u8> = (0..256 * 1024u32).map(|i| (i % 253) as u8).collect();
    std::fs::write(site.join("static/file.bin"), file).unwrap();
    let http_port = common::port();
    let caddyfile = format!(
        "{{\n  admin off\n  auto_https disable_redirects\n  skip_install_trust\n  \
         http_port {http_port}\n  storage file_system {data}\n}}\n\
         https://127.0.0.1:{port} {{\n  bind 127.0.0.1\n  tls internal\n  \
         log {{\n    output file {log}\n    format json\n  }}\n  \
         handle /ready {{\n    respond \"ready\"\n  }}\n  \
         handle /static/* {{\n    root * {site}\n    file_server\n  }}\n  \
         handle {{\n    reverse_proxy 127.0.0.1:{backend}\n  }}\n}}\n",
        data = dir.join("data").display(),
        log = dir.join("access.log").display(),
        site = site.display(),
    );
    let config = dir.join("Caddyfile");
    std::fs::write(&config, caddyfile).unwrap();
    let mut command = Command::new("caddy");
    command
        .args(["run", "--adapter", "caddyfile", "--config"])
        .arg(&config)
        .env("HOME", dir)
        .env("XDG_DATA_HOME", dir.join("xdg-data"))
        .env("XDG_CONFIG_HOME", dir.join("xdg-config"));
    Daemon::spawn("caddy", command).unwrap()
}

/// Requests Caddy's access log recorded over HTTP/3 for paths starting with `prefix`.
fn caddy_h3_requests(log: &Path, prefix: &str) -> (u64, u64) {
    let text = std::fs::read_to_string(log).unwrap_or_default();
    let (mut h3, mut other) = (0, 0);
    for line in text.lines() {
        let Ok(entry) = serde_json::from_str::<serde_json::Value>(line) else {
            continue;
        };
        let request = &entry["request"];
        if !request["uri"].as_str().unwrap_or("").starts_with(prefix) {
            continue;
        }
        match request["proto"].as_str() {
            Some("HTTP/3.0") => h3 += 1,
            _ => other += 1,
        }
    }
    (h3, other)
}

#[test]
fn caddy_serves_a_static_file_and_a_reverse_proxy_over_http3_with_counts_that_match() {
    if Command::new("caddy").arg("version").output().is_err() {
        panic!("caddy is not installed: .ci/run installs Debian's caddy");
    }
    let dir = TempDir::new("http3-caddy");
    let backend = common::target();
    let (port, server) = retry_on_port_conflict("caddy", || {
        let port = common::port();
        let server = caddy(dir.path(), port, backend.local_addr().port());
        server.wait_for_port(port, PATIENCE)?;
        Ok((port, server))
    });
    // Caddy's internal CA signs the certificate: trusting its root verifies the chain.
    let root = dir.path().join("data/pki/authorities/local/root.crt");
    wait_until("Caddy's root certificate", || root.exists());
    let root = root.to_str().unwrap().to_string();
    let log = dir.path().join("access.log");
    let base = format!("https://127.0.0.1:{port}");
    // Caddy listens before its certificate is issued (handshakes fail with internal_error
    // until then): ready once a request over HTTP/3 is answered.
    let ready = format!("{base}/ready");
    wait_until("Caddy answering over HTTP/3", || {
        loadmark(&["run", &ready, "--http3", "--cacert", &root, "-n", "1"]).ok
    });

    let args = [
        "--http3",
        "--cacert",
        &root,
        "-c",
        "2",
        "--streams",
        "4",
        "-n",
        "200",
    ];
    let url = format!("{base}/static/file.bin");
    let (ran, r) = run_json(dir.path(), "static", &[&[&url[..]][..], &args].concat());
    assert!(ran.ok, "{}{}\n{}", ran.out, ran.err, server.output());
    assert_eq!(r.summary.requests.responses, 200, "{}", ran.out);
    assert_eq!(r.summary.status.get(200), 200, "{}", ran.out);
    assert!(
        r.summary.bytes_read >= 200 * 256 * 1024,
        "{}",
        r.summary.bytes_read
    );
    assert!(r.summary.protocol.as_ref().unwrap().quic.is_some());
    wait_until("Caddy's log of the static requests", || {
        caddy_h3_requests(&log, "/static/") == (200, 0)
    });

    let url = format!("{base}/json");
    let (ran, r) = run_json(dir.path(), "proxied", &[&[&url[..]][..], &args].concat());
    assert!(ran.ok, "{}{}", ran.out, ran.err);
    assert_eq!(r.summary.requests.responses, 200, "{}", ran.out);
    assert_eq!(
        backend.requests_served(),
        200,
        "the proxy passed each on once"
    );
    wait_until("Caddy's log of the proxied requests", || {
        caddy_h3_requests(&log, "/json") == (200, 0)
    });

    // Open loop through the proxy: what Caddy logged is what was answered.
    let (ran, r) = run_json(
        dir.path(),
        "open",
        &[&url, "--http3", "--cacert", &root, "-R", "100", "-d", "2s"],
    );
    assert!(ran.ok, "{}{}", ran.out, ran.err);
    let answered = r.summary.requests.responses;
    assert_eq!(answered + r.summary.dropped, 200, "{}", ran.out);
    assert_eq!(r.summary.requests.errors, 0, "{}", ran.out);
    wait_until("Caddy's log of the open loop", || {
        caddy_h3_requests(&log, "/json") == (200 + answered, 0)
    });
    assert_eq!(backend.requests_served(), 200 + answered);
    server.stop(Duration::from_secs(5));
}

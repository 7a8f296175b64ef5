//! Taurus (bzt) configs run as plans: against the built-in target over loopback, with the
//! server's own count as the check; refusals located; --explain; -o overrides.

mod common;

use common::*;

use std::path::Path;

fn bzt(addr: std::net::SocketAddr) -> String {
    format!(
        r#"execution:
- concurrency: 3
  ramp-up: 1s
  hold-for: 1s
  scenario: api

scenarios:
  api:
    default-address: http://{addr}
    headers:
      X-Client: taurus
    requests:
    - url: /json
      headers: {{Accept: application/json}}
    - url: /echo
      method: POST
      body: 'hello'
"#
    )
}

#[test]
fn a_taurus_config_runs_with_counts_equal_to_the_servers_own() {
    let server = target();
    let dir = temp_dir("taurus", "run");
    std::fs::write(dir.join("bzt.yml"), bzt(server.local_addr())).unwrap();
    let out = loadmark()
        .args(["bench", "bzt.yml", "-o", "out", "-q"])
        .current_dir(&dir)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    let bundle =
        bundle_json(&std::fs::read_to_string(dir.join("out/bundle.json")).unwrap()).unwrap();
    assert_eq!(bundle.steps.len(), 1);
    let r = &bundle.steps[0].report;
    let s = &r.summary;
    assert_eq!(r.failed(), 0, "{:?}", s.errors);
    assert!(s.requests.responses > 10, "{:?}", s.requests);
    // A run stopped by time may leave requests in flight that the server did or did not
    // answer before the connections closed; every one it answered is one loadmark counted
    // or one still in flight. (`an_exact_count_...` checks equality with a fixed count.)
    let served = server.requests_served();
    let counted = s.requests.responses + s.requests.in_flight_at_end;
    assert!(
        served >= s.requests.responses && served <= counted,
        "server {served}, loadmark {:?}",
        s.requests
    );
    // Both requests went, with the scenario's and their own headers.
    let plan = &r.plan;
    assert!(plan
        .request
        .headers
        .contains(&("X-Client".into(), "taurus".into())));
    assert_eq!(plan.mix.others.len(), 1);
    assert_eq!(plan.mix.others[0].1.method, "POST");
    assert!(
        bundle.steps[0]
            .command
            .contains("--stages '1s:1->3,1s:3->3'"),
        "{}",
        bundle.steps[0].command
    );
}

#[test]
fn an_exact_count_matches_the_server_exactly() {
    let server = target();
    let dir = temp_dir("taurus", "count");
    let text =
        bzt(server.local_addr()).replace("  ramp-up: 1s\n  hold-for: 1s\n", "  iterations: 25\n");
    std::fs::write(dir.join("bzt.yml"), text).unwrap();
    let out = loadmark()
        .args([
            "bench",
            "bzt.yml",
            "-o",
            "out",
            "-q",
            "-o",
            "execution.concurrency=4",
        ])
        .current_dir(&dir)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let bundle =
        bundle_json(&std::fs::read_to_string(dir.join("out/bundle.json")).unwrap()).unwrap();
    // 25 iterations × 4 users (the override) × 2 requests.
    assert_eq!(bundle.steps[0].report.summary.requests.responses, 200);
    assert_eq!(server.requests_served(), 200);
}

#[test]
fn explain_prints_the_native_plan_and_refusals_name_the_place() {
    let dir = temp_dir("taurus", "explain");
    let addr: std::net::SocketAddr = "127.0.0.1:1".parse().unwrap();
    std::fs::write(dir.join("bzt.yml"), bzt(addr)).unwrap();
    let out = loadmark()
        .args([
            "bench",
            "--explain",
            "bzt.yml",
            "-o",
            "execution.concurrency=600",
        ])
        .current_dir(&dir)
        .output()
        .unwrap();
    let native = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{native}");
    assert!(native.contains("translated from Taurus"), "{native}");
    assert!(native.contains("stages: 1s:1->600,1s:600"), "{native}");
    std::fs::write(dir.join("native.yaml"), native.as_bytes()).unwrap();
    let check = loadmark()
        .args(["bench", "--check", "native.yaml"])
        .current_dir(&dir)
        .output()
        .unwrap();
    assert!(
        check.status.success(),
        "{}",
        String::from_utf8_lossy(&check.stderr)
    );
    std::fs::write(
        dir.join("sel.yml"),
        "execution:\n- executor: selenium\n  concurrency: 1\n  hold-for: 1m\n  scenario: s\n",
    )
    .unwrap();
    let out = loadmark()
        .args(["bench", "sel.yml"])
        .current_dir(&dir)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("sel.yml:2:3: execution.executor: \"selenium\""),
        "{stderr}"
    );
}

#[test]
fn the_example_taurus_config_checks() {
    let example = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/taurus.yml");
    let out = loadmark()
        .args(["bench", "--check"])
        .arg(&example)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stdout.contains("OK, 1 step"), "{stdout}");
    assert!(
        stdout.contains("--stages '10s:1->20,1m:20->20'"),
        "{stdout}"
    );
}

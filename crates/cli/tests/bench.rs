//! `loadmark bench` end to end: real servers launched as subprocesses (the built-in target,
//! nginx), sweeps and comparisons, the document and bundle checked against what happened.

mod common;

use common::*;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use loadmark_report::Bundle;

fn loadmark_dir() -> PathBuf {
    Path::new(env!("CARGO_BIN_EXE_loadmark"))
        .parent()
        .unwrap()
        .to_path_buf()
}

/// Runs `loadmark ARGS` with loadmark itself on PATH, so plans can launch `loadmark serve`.
fn loadmark(args: &[&str], dir: &Path) -> Output {
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
    Path::new(&format!("/proc/{pid}")).exists()
        && !std::fs::read_to_string(format!("/proc/{pid}/stat"))
            .unwrap_or_default()
            .contains(") Z ")
}

fn run_plan(dir: &Path, plan: &str) -> (Output, Option<Bundle>, String) {
    std::fs::write(dir.join("plan.yaml"), plan).unwrap();
    let _ = std::fs::remove_dir_all(dir.join("out"));
    let out = loadmark(&["bench", "plan.yaml", "-o", "out", "-q"], dir);
    let bundle = std::fs::read_to_string(dir.join("out/bundle.json"))
        .ok()
        .map(|t| bundle_json(&t).unwrap());
    let md = std::fs::read_to_string(dir.join("out/BENCHMARKS.md")).unwrap_or_default();
    (out, bundle, md)
}

/// Runs the plan `plan(ports)` writes for `n` leased ports (a plan names its servers' ports
/// before they start); leased afresh and run again if a launched server found one taken.
fn run_plan_on_ports(
    dir: &Path,
    n: usize,
    plan: impl Fn(&[u16]) -> String,
) -> (Output, Option<Bundle>, String) {
    retry_on_port_conflict("loadmark bench", || {
        let ports: Vec<u16> = (0..n).map(|_| port()).collect();
        let (out, bundle, md) = run_plan(dir, &plan(&ports));
        let stderr = String::from_utf8_lossy(&out.stderr);
        if !out.status.success() && is_port_conflict(&stderr) {
            return Err(stderr.into_owned());
        }
        Ok((out, bundle, md))
    })
}

#[test]
fn a_sweep_runs_every_step_and_the_totals_match_the_servers_own_count() {
    let dir = temp_dir("bench", "sweep");
    let (out, bundle, md) = run_plan_on_ports(&dir, 1, |p| {
        format!(
        "name: sweep\ntargets:\n  api:\n    url: http://127.0.0.1:{port}/json\n    launch: {{command: loadmark serve --port {port}}}\nload: {{requests: 200}}\nsweep: {{connections: [1, 2, 5]}}\nmonitor: {{interval: 200ms}}\n",
        port = p[0]
    )
    });
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let bundle = bundle.unwrap();
    assert_eq!(bundle.steps.len(), 3);
    for (step, conns) in bundle.steps.iter().zip([1, 2, 5]) {
        assert_eq!(step.report.summary.requests.responses, 200);
        assert_eq!(
            step.params,
            vec![("connections".to_string(), conns.to_string())]
        );
        assert!(step.command.contains(&format!("-c {conns}")) && step.command.contains("-n 200"));
        let usage = step
            .server
            .as_ref()
            .expect("the launched server was monitored");
        assert!(
            usage.rss_peak_bytes > 1 << 20 && usage.rss_peak_bytes < 1 << 30,
            "{usage:?}"
        );
        assert!(!usage.samples.is_empty());
        assert!(!pid_alive(usage.pid), "the launched server was stopped");
    }
    // The server logs its own count when it stops: it must equal loadmark's total.
    let log = std::fs::read_to_string(dir.join("out/logs/api.log")).unwrap();
    assert!(log.contains("served 600 requests"), "{log}");
    assert!(md.contains("| 3 | connections=5 |"), "{md}");
    assert!(md.contains("## Environment") && md.contains("## Server resources"));
    assert!(md.contains("launched: `loadmark serve --port"));
    // The saved bundle renders the same document again.
    let again = loadmark(&["report", "out/bundle.json", "--format", "md"], &dir);
    assert_eq!(String::from_utf8_lossy(&again.stdout), md);
}

#[test]
fn a_comparison_table_puts_systems_side_by_side() {
    let dir = temp_dir("bench", "compare");
    let (out, bundle, md) = run_plan_on_ports(&dir, 2, |p| {
        format!(
            r#"targets:
  a: {{url: "http://127.0.0.1:{a}/status", labels: {{system: A, cache: memory}}, launch: {{command: loadmark serve --port {a}}}}}
  b: {{url: "http://127.0.0.1:{b}/status", labels: {{system: B, cache: memory}}, launch: {{command: loadmark serve --port {b}}}}}
load: {{duration: 1s, keepalive: false, connections: 4}}
compare:
  - {{rows: cache, columns: system, metric: rps}}
"#,
            a = p[0],
            b = p[1]
        )
    });
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let bundle = bundle.unwrap();
    assert_eq!(bundle.steps.len(), 2);
    assert!(md.contains("| cache \\ system | A | B |"), "{md}");
    let row = md
        .lines()
        .find(|l| l.starts_with("| memory |"))
        .expect("a row for memory");
    assert!(!row.contains('—'), "both cells filled: {row}");
    for step in &bundle.steps {
        assert!(!step.report.plan.request.keep_alive);
        // One connection per request; a request still connecting at the end has none yet.
        let r = &step.report.summary.requests;
        let opened = step.report.summary.connections_opened;
        assert!(
            opened >= r.completed && opened <= r.completed + r.in_flight_at_end,
            "{opened} {r:?}"
        );
    }
}

#[test]
fn check_lists_steps_and_bad_plans_name_file_line_and_column() {
    let dir = temp_dir("bench", "check");
    std::fs::write(
        dir.join("ok.yaml"),
        "targets:\n  api: {url: 'http://127.0.0.1:1/'}\nsweep: {connections: [1, 2]}\n",
    )
    .unwrap();
    let out = loadmark(&["bench", "--check", "ok.yaml"], &dir);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout}");
    assert!(
        stdout.contains("OK, 2 steps") && stdout.contains("loadmark run http://127.0.0.1:1/ -c 2"),
        "{stdout}"
    );
    std::fs::write(
        dir.join("bad.yaml"),
        "targets:\n  api:\n    url: http://127.0.0.1:1/\n    lables: {a: b}\n",
    )
    .unwrap();
    let out = loadmark(&["bench", "bad.yaml"], &dir);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("bad.yaml:4:"), "{stderr}");
    assert!(stderr.contains("did you mean `labels`?"), "{stderr}");
    let schema = loadmark(&["schema"], &dir);
    let schema: serde_json::Value = serde_json::from_slice(&schema.stdout).unwrap();
    assert!(schema["properties"]["targets"].is_object());
}

#[test]
fn a_server_that_fails_to_start_is_a_clear_error_with_its_last_lines() {
    let dir = temp_dir("bench", "fail");
    // Nothing may answer there before the launch: held, bound but not listening.
    let (_held, port) = refusing_port();
    let plan = format!(
        "targets:\n  broken:\n    url: http://127.0.0.1:{port}/\n    launch: {{command: \"echo 'config error: no such database' >&2; exit 3\"}}\n"
    );
    let (out, _, _) = run_plan(&dir, &plan);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("step 1") && stderr.contains("broken"),
        "{stderr}"
    );
    assert!(
        stderr.contains("config error: no such database"),
        "{stderr}"
    );
}

/// The example plans' fixed ports (184xx) replaced by leased ones, and nginx's configs
/// (`nginx/*.conf`, with the same ports replaced) and files (`nginx/www`) copied into `dir`,
/// so runs in parallel checkouts cannot collide and nginx writes its pids and logs into the
/// test's directory, not the source tree.
fn example_on_leased_ports(text: &str, examples: &Path, dir: &Path) -> (String, Vec<(u16, u16)>) {
    let mut text = text.replace("cwd: .", &format!("cwd: {}", dir.display()));
    let mut confs: Vec<(String, String)> = std::fs::read_dir(examples.join("nginx"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "conf"))
        .map(|p| {
            let name = p.file_name().unwrap().to_string_lossy().into_owned();
            (name, std::fs::read_to_string(&p).unwrap())
        })
        .collect();
    let mut moved = Vec::new();
    for fixed in 18400..18500u16 {
        if text.contains(&fixed.to_string()) {
            let leased = port();
            text = text.replace(&fixed.to_string(), &leased.to_string());
            for (_, conf) in &mut confs {
                *conf = conf.replace(&fixed.to_string(), &leased.to_string());
            }
            moved.push((fixed, leased));
        }
    }
    for sub in ["nginx/tmp", "nginx/www"] {
        std::fs::create_dir_all(dir.join(sub)).unwrap();
    }
    for (name, conf) in confs {
        std::fs::write(dir.join("nginx").join(name), conf).unwrap();
    }
    for file in std::fs::read_dir(examples.join("nginx/www")).unwrap() {
        let file = file.unwrap().path();
        std::fs::copy(&file, dir.join("nginx/www").join(file.file_name().unwrap())).unwrap();
    }
    (text, moved)
}

/// Every example plan is valid, and runs, shortened, against the built-in target and nginx.
#[test]
fn the_example_plans_run_shortened() {
    let examples = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../examples")
        .canonicalize()
        .unwrap();
    for name in [
        "feature-flags",
        "concurrency-sweep",
        "stack-comparison",
        "cache-comparison",
        "websocket-echo",
        "relay-stacks",
        "bombardier-style",
        "checks",
        "journey",
        "grpc-journey",
    ] {
        let text = std::fs::read_to_string(examples.join(format!("{name}.yaml"))).unwrap();
        let short = text
            .replace("duration: 30s", "duration: 1s")
            .replace("duration: 20s", "duration: 1s")
            .replace("duration: 10s", "duration: 1s")
            .replace("  warmup: 2s\n", "")
            .replace("requests: 2000", "requests: 50")
            .replace("connections: 1000", "connections: 20")
            .replace("connections: [1, 100, 600]", "connections: [1, 20]")
            .replace("connections: [200, 400]", "connections: [4, 8]")
            .replace("connections: [1, 50, 200]", "connections: [1, 20]")
            .replace("connections: 125", "connections: 10")
            .replace("users: 50", "users: 10")
            .replace("session_duration: 10s", "session_duration: 500ms")
            .replace("pause: 2s", "pause: 0s")
            // Paths relative to the example, which runs from a copy elsewhere.
            .replace("../crates/", &format!("{}/../crates/", examples.display()));
        let dir = temp_dir("bench", name);
        let (out, bundle, md, moved) = retry_on_port_conflict(name, || {
            let (plan, moved) = example_on_leased_ports(&short, &examples, &dir);
            let (out, bundle, md) = run_plan(&dir, &plan);
            let stderr = String::from_utf8_lossy(&out.stderr);
            if !out.status.success() && is_port_conflict(&stderr) {
                return Err(stderr.into_owned());
            }
            Ok((out, bundle, md, moved))
        });
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{name}: {stderr}");
        let bundle = bundle.unwrap();
        assert!(!bundle.steps.is_empty());
        if name == "checks" {
            let checks = bundle.steps[0].report.summary.checks.as_ref().unwrap();
            assert_eq!(checks.checks.len(), 5);
            assert_eq!(checks.failed_responses, 0, "{checks:?}");
            assert!(md.contains("## Checks"), "{md}");
        }
        if name == "journey" {
            let s = bundle.steps[0].report.summary.scenario.as_ref().unwrap();
            let names: Vec<&str> = s.steps.iter().map(|st| st.name.as_str()).collect();
            assert_eq!(names, ["login", "list", "open"]);
            assert!(s.iterations > 0 && s.aborted == 0, "{s:?}");
            assert!(
                s.steps
                    .iter()
                    .all(|st| st.status.not_success() == 0 && st.checks_failed == 0),
                "{s:?}"
            );
            assert!(md.contains("## Scenario steps"), "{md}");
        }
        if name == "grpc-journey" {
            let report = &bundle.steps[0].report;
            let s = report.summary.scenario.as_ref().unwrap();
            assert!(s.iterations > 0 && s.aborted == 0, "{s:?}");
            assert!(
                s.steps
                    .iter()
                    .all(|st| st.checks_failed == 0 && st.checks_passed > 0),
                "{s:?}"
            );
            let json = serde_json::to_value(report).unwrap();
            let codes = &json["totals"]["grpc"]["codes"];
            assert_eq!(codes.as_array().map(Vec::len), Some(1), "{codes}");
            assert_eq!(codes[0]["name"], "OK");
            // Three gRPC steps an iteration (those of an iteration cut by the end count too).
            assert!(
                codes[0]["count"].as_u64().unwrap() >= 3 * s.iterations,
                "{codes}"
            );
        }
        for step in &bundle.steps {
            let s = &step.report.summary;
            assert!(
                s.requests.responses > 0,
                "{name} step {}: no responses",
                step.number
            );
            assert_eq!(
                s.requests.errors, 0,
                "{name} step {}: {:?}",
                step.number, s.errors
            );
        }
        assert!(md.contains("## Results"), "{name}");
        if name == "websocket-echo" {
            assert!(md.contains("## WebSocket"), "{md}");
            let ws = bundle.steps[1].report.summary.websocket.clone().unwrap();
            assert_eq!(ws.messages_received, ws.messages_sent, "{ws:?}");
            assert!(ws.sessions_opened >= 8 && ws.upgrades_failed == 0, "{ws:?}");
            let ws_port = moved.iter().find(|(fixed, _)| *fixed == 18405).unwrap().1;
            assert!(
                md.contains(&format!("loadmark ws ws://127.0.0.1:{ws_port}/ws/echo")),
                "{md}"
            );
        }
        if name == "stack-comparison" {
            assert!(md.contains("| stack \\ connections | 1 | 20 |"), "{md}");
            let nginx = bundle.steps.iter().find(|s| s.target == "nginx").unwrap();
            assert!(nginx.server.as_ref().unwrap().rss_peak_bytes > 0);
        }
        if name == "bombardier-style" {
            assert!(md.contains("## Each step in bombardier's layout"), "{md}");
            assert!(
                md.contains("| req/s | req/s stdev | req/s max | latency mean |"),
                "{md}"
            );
            let s = &bundle.steps[0].report.summary;
            assert!(
                md.contains(&format!(
                    "    1xx - 0, 2xx - {}, 3xx - 0",
                    s.status.class(2)
                )),
                "{md}"
            );
        }
        if name == "relay-stacks" {
            // One backend for all four steps, monitored in each, stopped at the end.
            let pids: Vec<u32> = bundle
                .steps
                .iter()
                .map(|s| s.services[0].usage.pid)
                .collect();
            assert!(
                pids.iter().all(|&p| p == pids[0]) && !pid_alive(pids[0]),
                "{pids:?}"
            );
            assert!(md.contains("| 4 | service backend |"), "{md}");
        }
    }
}

#[test]
fn weighted_requests_and_templates_reach_the_server_as_planned() {
    let dir = temp_dir("bench", "mix");
    std::fs::write(
        dir.join("codes.csv"),
        "code,name\n200,ok\n404,missing\n503,busy\n",
    )
    .unwrap();
    let (out, bundle, _) = run_plan_on_ports(&dir, 1, |p| {
        format!(
            r#"targets:
  api:
    url: http://127.0.0.1:{port}
    launch: {{command: loadmark serve --port {port}}}
data: codes.csv
requests:
  - {{path: "/status/{{{{csv code}}}}", weight: 1}}
load: {{requests: 300, connections: 1, threads: 1}}
"#,
            port = p[0]
        )
    });
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let s = &bundle.unwrap().steps[0].report.summary;
    // One worker walks the rows in order: exactly a third each.
    assert_eq!(
        (s.status.get(200), s.status.get(404), s.status.get(503)),
        (100, 100, 100)
    );

    let (out, bundle, md) = run_plan_on_ports(&dir, 1, |p| {
        format!(
            r#"targets:
  api:
    url: http://127.0.0.1:{port}
    launch: {{command: loadmark serve --port {port}}}
requests:
  - {{path: /status/200, weight: 3}}
  - {{path: "/status/{{{{rand_int 201 202}}}}", weight: 1}}
load: {{requests: 4000, connections: 2}}
"#,
            port = p[0]
        )
    });
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let s = &bundle.unwrap().steps[0].report.summary;
    let templated = s.status.get(201) + s.status.get(202);
    assert_eq!(s.status.get(200) + templated, 4000);
    assert!(
        (800..=1200).contains(&templated),
        "weight 1 of 4: {templated}"
    );
    assert!(
        s.status.get(201) > 0 && s.status.get(202) > 0,
        "random keys vary"
    );
    assert!(md.contains("requests:"), "the plan is quoted");

    std::fs::write(
        dir.join("bad.yaml"),
        "targets:\n  api: {url: 'http://127.0.0.1:1'}\nrequests:\n  - {path: '/x/{{csv nope}}'}\n",
    )
    .unwrap();
    let out = loadmark(&["bench", "--check", "bad.yaml"], &dir);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("bad.yaml:4:") && stderr.contains("{{csv nope}}"),
        "{stderr}"
    );
}

#[test]
fn an_attached_server_is_monitored_and_open_loop_steps_run_from_the_plan() {
    let dir = temp_dir("bench", "attach");
    // The server binds port 0 and says which port it got: nothing can collide.
    let mut serve = Command::new(env!("CARGO_BIN_EXE_loadmark"));
    serve.args(["serve", "--port", "0"]);
    let server = Daemon::spawn("loadmark serve", serve).unwrap();
    let port: u16 = server
        .wait_for_line(loadmark_test_support::PATIENCE, |line| {
            let rest = line.strip_prefix("loadmark target listening on http://127.0.0.1:")?;
            rest.split(' ').next()?.parse().ok()
        })
        .unwrap();
    let plan = format!(
        "targets:\n  running:\n    url: http://127.0.0.1:{port}/json\n    attach: {{pid: {}}}\nload: {{rate: 200, duration: 2s}}\nmonitor: {{interval: 250ms}}\n",
        server.pid()
    );
    let (out, bundle, md) = run_plan(&dir, &plan);
    let alive = pid_alive(server.pid());
    let server_pid = server.pid();
    drop(server);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(alive, "an attached server is left running");
    let step = &bundle.unwrap().steps[0];
    assert!(step.command.contains("-R 200"), "{}", step.command);
    assert_eq!(
        step.report.summary.requests.responses + step.report.summary.dropped,
        400
    );
    let usage = step
        .server
        .as_ref()
        .expect("the attached server was monitored");
    assert_eq!(usage.pid, server_pid);
    assert!(usage.rss_peak_bytes > 1 << 20);
    assert!(md.contains(&format!("attached: pid {server_pid}")), "{md}");
}

/// A target behind a Unix socket (issue 16): its requests go over the socket and its server
/// is found for the monitor by the socket it listens on (`attach: {socket: PATH}`).
#[test]
fn a_server_behind_a_unix_socket_is_loaded_and_monitored_by_its_socket() {
    let dir = temp_dir("bench", "attach-socket");
    let sock = dir.join("app.sock");
    let mut serve = Command::new(env!("CARGO_BIN_EXE_loadmark"));
    serve
        .args(["serve", "--port", "0", "--unix-socket"])
        .arg(&sock);
    let server = Daemon::spawn("loadmark serve --unix-socket", serve).unwrap();
    server
        .wait_for_line(loadmark_test_support::PATIENCE, |line| {
            line.starts_with("loadmark target listening on")
                .then_some(())
        })
        .unwrap();
    let sock = sock.display();
    let plan = format!(
        "targets:\n  app:\n    url: http://app.local/json\n    unix: {sock}\n    attach: {{socket: {sock}}}\nload: {{requests: 200, connections: 2}}\nmonitor: {{interval: 250ms}}\n"
    );
    let (out, bundle, md) = run_plan(&dir, &plan);
    let server_pid = server.pid();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let step = &bundle.unwrap().steps[0];
    assert_eq!(step.report.summary.requests.responses, 200);
    let usage = step.server.as_ref().expect("the server was monitored");
    assert_eq!(usage.pid, server_pid);
    assert!(
        md.contains(&format!("attached: the listener of {sock}")),
        "{md}"
    );
    // The step's command runs it again, over the socket.
    assert!(
        step.command.contains(&format!("--unix-socket {sock}")),
        "{}",
        step.command
    );

    // Nobody listens on another socket: the step fails, naming the field and the socket.
    let plan = format!(
        "targets:\n  app:\n    url: http://app.local/json\n    unix: {sock}\n    attach: {{socket: {sock}.none}}\nload: {{requests: 10}}\nmonitor: {{interval: 250ms}}\n"
    );
    let (out, _, _) = run_plan(&dir, &plan);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{stderr}");
    assert!(
        stderr.contains("targets.app.attach.socket") && stderr.contains("app.sock.none"),
        "{stderr}"
    );

    // Two ways to find one server is a plan error.
    let plan = format!(
        "targets:\n  app:\n    url: http://app.local/json\n    attach: {{socket: {sock}, pid: {server_pid}}}\nload: {{requests: 10}}\n"
    );
    let (out, _, _) = run_plan(&dir, &plan);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("exactly one of pid, process, socket or port"),
        "{stderr}"
    );
    drop(server);
}

/// A plan's `loadmark` steps run this binary even when no `loadmark` is on PATH (as under
/// `cargo run`), and `bench --check` names any other program PATH lacks.
#[test]
fn plans_run_this_loadmark_and_check_warns_about_missing_programs() {
    let dir = temp_dir("bench", "own-binary");
    let without_loadmark = "/usr/local/bin:/usr/bin:/bin";
    let bench = |args: &[&str]| {
        Command::new(env!("CARGO_BIN_EXE_loadmark"))
            .args(args)
            .current_dir(&dir)
            .env("PATH", without_loadmark)
            .output()
            .unwrap()
    };
    let (out, port) = retry_on_port_conflict("loadmark bench", || {
        let port = port();
        let plan = format!(
            "targets:\n  api:\n    url: http://127.0.0.1:{port}/status\n    launch: {{command: loadmark serve --port {port}}}\nload: {{requests: 50, connections: 2}}\n"
        );
        std::fs::write(dir.join("plan.yaml"), plan).unwrap();
        let out = bench(&["bench", "plan.yaml", "-o", "out", "-q"]);
        let stderr = String::from_utf8_lossy(&out.stderr);
        if !out.status.success() && is_port_conflict(&stderr) {
            return Err(stderr.into_owned());
        }
        Ok((out, port))
    });
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let bundle =
        bundle_json(&std::fs::read_to_string(dir.join("out/bundle.json")).unwrap()).unwrap();
    assert_eq!(bundle.steps[0].report.summary.requests.responses, 50);

    std::fs::write(
        dir.join("missing.yaml"),
        format!("targets:\n  api:\n    url: http://127.0.0.1:{port}/\n    launch: {{command: no-such-server-xyz --port {port}}}\nload: {{requests: 5}}\n"),
    )
    .unwrap();
    let out = bench(&["bench", "missing.yaml", "--check"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "a warning, not a refusal: {err}");
    assert!(
        err.contains("targets.api.launch.command runs `no-such-server-xyz`, which is not on PATH"),
        "{err}"
    );
    let out = bench(&["bench", "plan.yaml", "--check"]);
    assert!(
        !String::from_utf8_lossy(&out.stderr).contains("warning"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

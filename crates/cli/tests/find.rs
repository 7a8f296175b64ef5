//! `loadmark find` end to end, against the built-in target with a known capacity
//! (`ServerConfig::capacity`: one queue served at exactly N req/s): the capacity found is
//! within ±5% of N when errors decide (a short queue refuses the excess with 503) and when
//! latency decides (a long queue makes waits grow), a client that cannot hold the rate is
//! reported as client-limited, and a bad objective is a located usage error. Steps are short
//! (--hold 1s, no warm-up) and start near the answer, so each search takes seconds.

mod common;

use std::time::Duration;

use common::loadmark;
use loadmark_report::{CapacityResult, SearchEnd};
use loadmark_target::{start, Capacity, RunningServer, ServerConfig};

fn server(rate: f64, queue: Duration) -> RunningServer {
    start(ServerConfig {
        addr: ([127, 0, 0, 1], 0).into(),
        capacity: Some(Capacity { rate, queue }),
        ..Default::default()
    })
    .unwrap()
}

/// Runs a search against `url` and returns its JSON result and exit code.
fn find(url: &str, args: &[&str]) -> (CapacityResult, Option<i32>) {
    let out = loadmark()
        .args(["find", url, "--json", "-q", "--step-warmup", "0s"])
        .args([
            "--timeout",
            "2s",
            "--repeats",
            "1",
            "--precision",
            "3",
            "-t",
            "1",
        ])
        .args(args)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let result = CapacityResult::from_json(&stdout)
        .unwrap_or_else(|e| panic!("{e}: {stdout}\n{}", String::from_utf8_lossy(&out.stderr)));
    (result, out.status.code())
}

/// A search starting at 60% of `cap`: one rise past it, then the bisection.
fn found_near(cap: f64, queue_ms: u64, hold: &str, slos: &[&str]) -> CapacityResult {
    let s = server(cap, Duration::from_millis(queue_ms));
    let url = format!("http://{}/status", s.local_addr());
    let from = format!("{}", (cap * 0.6).round());
    // Longer than the queue: whatever an overloaded step left queued drains before the next.
    let cooldown = format!("{}ms", queue_ms + 200);
    let mut args = vec![
        "--from",
        &from,
        "--to",
        "100000",
        "--cooldown",
        &cooldown,
        "--hold",
        hold,
    ];
    for slo in slos {
        args.extend(["--slo", slo]);
    }
    let (r, code) = find(&url, &args);
    s.shutdown();
    let table = loadmark_report::render_capacity_text(&r);
    assert_eq!(r.end, SearchEnd::Found, "{table}");
    assert_eq!(code, Some(0), "{table}");
    let c = r.capacity.unwrap();
    assert!(
        (c - cap).abs() <= cap * 0.05,
        "capacity {c} vs {cap}\n{table}"
    );
    let i = r.interval.as_ref().unwrap();
    assert!(i.low <= c && c < i.high, "{table}");
    // Each end ran at least twice and its majority says what it is.
    assert!(i.runs_low >= 2 && 2 * i.broke_low < i.runs_low, "{table}");
    assert!(
        i.runs_high >= 2 && 2 * i.broke_high > i.runs_high,
        "{table}"
    );
    r
}

#[test]
fn errors_decide_at_1500_per_second() {
    let r = found_near(1500.0, 50, "1s", &["p99 < 500ms", "failed < 1%"]);
    assert!(
        r.broke_first.iter().any(|b| b.starts_with("failed < 1%")),
        "{r:?}"
    );
}

#[test]
fn errors_decide_at_3000_per_second() {
    found_near(3000.0, 50, "1s", &["p99 < 500ms", "failed < 1%"]);
}

#[test]
fn errors_decide_at_5000_per_second_and_every_format_renders() {
    let r = found_near(5000.0, 50, "1s", &["p99 < 500ms", "failed < 1%"]);
    let html = loadmark_report::render_capacity_html(&r);
    assert!(html.contains("data-chart=\"latency-offered\""));
    assert!(html.contains("data-chart=\"latency-achieved\""));
    assert!(html.contains("capacity "), "the capacity is marked");
    let md = loadmark_report::render_capacity_markdown(&r);
    assert!(md.contains("| Capacity |"), "{md}");
    let json: serde_json::Value = serde_json::from_str(&r.to_json()).unwrap();
    assert!(json["capacity"].as_f64().unwrap() > 4000.0);
    assert!(json["curve"].as_array().unwrap().len() >= 4);
}

#[test]
fn latency_decides_with_a_long_queue() {
    // 500 ms of queue: past capacity waits grow by (rate/N - 1) s every second, so over a
    // 3 s step p99 breaks 100 ms about 3% above N, long before anything is refused; below
    // N, a hiccup of the machine's does not reach 100 ms.
    let r = found_near(2500.0, 500, "3s", &["p99 < 100ms", "failed < 1%"]);
    assert!(
        r.broke_first.iter().all(|b| !b.starts_with("failed")),
        "latency, not errors, decided: {:?}",
        r.broke_first
    );
    assert!(r.broke_first.iter().any(|b| b.starts_with("p99 < 100ms")));
}

#[test]
fn a_client_that_cannot_hold_the_rate_is_reported_as_client_limited() {
    // A wrk script whose response() spins: the one load thread holds a few hundred
    // responses a second, the server tens of thousands.
    let dir = common::temp_dir("find", "client-limited");
    let script = dir.path().join("slow.lua");
    std::fs::write(
        &script,
        "function response(status, headers, body)\n  local x = 0\n  for i = 1, 3000000 do x = x + i end\nend\n",
    )
    .unwrap();
    let s = common::target();
    let url = format!("http://{}/status", s.local_addr());
    let script = script.to_str().unwrap();
    let (r, code) = find(
        &url,
        &[
            "-s",
            script,
            "--slo",
            "p99 < 50ms",
            "--from",
            "5000",
            "--cooldown",
            "0s",
            "--hold",
            "1s",
        ],
    );
    s.shutdown();
    let table = loadmark_report::render_capacity_text(&r);
    assert_eq!(r.end, SearchEnd::ClientLimited, "{table}");
    assert_eq!(code, Some(4));
    assert_eq!(r.capacity, None, "a client limit is never a capacity");
    assert!(r.message.contains("--slurm N"), "{}", r.message);
    // The step ran again before the client was blamed.
    assert_eq!(r.curve.len(), 3, "{table}");
    assert!(r
        .curve
        .iter()
        .all(|p| p.note.as_deref() == Some("client late")));
}

#[test]
fn a_bad_objective_is_a_located_usage_error() {
    let out = loadmark()
        .args(["find", "http://127.0.0.1:1/", "--slo", "p99 < 20ms"])
        .args(["--slo", "p99 < 20xs"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("--slo #2: objective \"p99 < 20xs\", at character 7: \"20xs\" is not a non-negative number"),
        "{err}"
    );
    let out = loadmark()
        .args(["find", "http://127.0.0.1:1/", "--slo", "p99 > 20ms"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("at character 5"));
}

/// `loadmark` with itself on PATH, so a plan can launch `loadmark serve`.
fn bench(dir: &std::path::Path, plan: &str) -> std::process::Output {
    std::fs::write(dir.join("plan.yaml"), plan).unwrap();
    let _ = std::fs::remove_dir_all(dir.join("out"));
    let bin = std::path::Path::new(env!("CARGO_BIN_EXE_loadmark"));
    let path = format!(
        "{}:{}",
        bin.parent().unwrap().display(),
        std::env::var("PATH").unwrap_or_default()
    );
    loadmark()
        .args(["bench", "plan.yaml", "-o", "out"])
        .current_dir(dir)
        .env("PATH", path)
        .output()
        .unwrap()
}

/// A stack comparison by capacity: one plan, two targets (two `loadmark serve --capacity`
/// processes the plan launches, 1,200 and 2,400 req/s), one `find:` for both. Each step's
/// capacity is within ±5% of its server's, the bundle keeps it per step (as the published
/// schema says), and the document's table and `compare: {metric: capacity}` show it with
/// the objective that broke first.
#[test]
fn a_plan_finds_each_stacks_capacity_under_the_same_objectives() {
    let dir = common::temp_dir("find", "plan");
    let caps = [1200.0, 2400.0];
    let out = common::retry_on_port_conflict("loadmark bench", || {
        let ports = [common::port(), common::port()];
        let target = |name: &str, port: u16, cap: f64| {
            format!(
                "  {name}: {{url: 'http://127.0.0.1:{port}/status', labels: {{stack: {name}}}, launch: {{command: 'loadmark serve --port {port} --capacity {cap} --queue 50ms'}}}}\n"
            )
        };
        // From 80% of each capacity (×1.5 a step): one rise past it, then the bisection.
        let plan = format!(
            "name: capacity by stack\ntargets:\n{}{}load: {{threads: 1, timeout: 2s}}\nfind:\n  slo: ['p99 < 500ms', 'failed < 1%']\n  from: 960\n  factor: 1.5\n  to: 100000\n  hold: 1s\n  warmup: 0s\n  cooldown: 250ms\n  repeats: 1\n  precision: 3\ncompare:\n  - {{rows: stack, columns: target, metric: capacity}}\n",
            target("small", ports[0], caps[0]),
            target("large", ports[1], caps[1]),
        );
        let out = bench(dir.path(), &plan);
        let stderr = String::from_utf8_lossy(&out.stderr);
        if !out.status.success() && common::is_port_conflict(&stderr) {
            return Err(stderr.into_owned());
        }
        Ok(out)
    });
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    let text = std::fs::read_to_string(dir.path().join("out/bundle.json")).unwrap();
    let bundle = common::bundle_json(&text).unwrap();
    assert_eq!(bundle.steps.len(), 2);
    for (step, cap) in bundle.steps.iter().zip(caps) {
        let r = step.capacity.as_ref().expect("a search's result per step");
        let table = loadmark_report::render_capacity_text(r);
        assert_eq!(r.end, SearchEnd::Found, "{table}\n{stderr}");
        let c = r.capacity.unwrap();
        assert!((c - cap).abs() <= cap * 0.05, "{c} vs {cap}\n{table}");
        assert_eq!(r.objectives, ["p99 < 500ms", "failed < 1%"]);
        assert!(!r.broke_first.is_empty(), "{table}");
        // The step's report is a run at the capacity.
        assert_eq!(step.report.plan.load.threads(), 1);
        assert!((step.report.summary.rps - c).abs() <= c * 0.1, "{table}");
        assert!(step.command.starts_with("loadmark find http://127.0.0.1:"));
        assert!(step
            .command
            .contains("--slo 'p99 < 500ms' --slo 'failed < 1%' --from 960"));
    }
    let small = bundle.steps[0].capacity.as_ref().unwrap().capacity.unwrap();
    let md = std::fs::read_to_string(dir.path().join("out/BENCHMARKS.md")).unwrap();
    assert!(md.contains("| capacity/s | broke first |"), "{md}");
    assert!(
        md.contains("capacity req/s (objective that broke first)"),
        "{md}"
    );
    // `1,188 (failed < 1% (was 4.1%))`: thousands separated, then what broke first.
    let whole = small.round() as u64;
    let cell = format!("| {},{:03} (", whole / 1000, whole % 1000);
    assert!(md.contains(&cell), "{cell} in\n{md}");
    assert!(md.contains("## Step 2: capacity of target=large"), "{md}");
    assert!(stderr.contains("search at 960/s → achieved"), "{stderr}");
}

#[test]
fn a_bad_objective_in_a_plan_is_located_in_the_file() {
    let dir = common::temp_dir("find", "plan-objective");
    let plan = "targets:\n  a: {url: 'http://127.0.0.1:1/'}\nfind:\n  slo:\n    - p99 < 5ms\n    - p99 < 5 parsecs\n";
    let out = bench(dir.path(), plan);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("plan.yaml:6:7: objective \"p99 < 5 parsecs\", at character 7:"),
        "{err}"
    );
}

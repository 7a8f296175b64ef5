//! CI gates end to end over loopback: thresholds and JUnit on `run`, `merge`, `compare`.

mod common;

use common::*;

use std::path::Path;
use std::process::Output;

/// Tests here run load; one at a time, so the comparison test measures its own runs only.
static LOAD: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn one_at_a_time() -> std::sync::MutexGuard<'static, ()> {
    LOAD.lock().unwrap_or_else(|e| e.into_inner())
}

fn run(args: &[&str]) -> Output {
    loadmark().args(args).output().unwrap()
}

fn text(o: &Output) -> String {
    format!(
        "{}\n--- stderr ---\n{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

fn path(p: &Path) -> &str {
    p.to_str().unwrap()
}

#[test]
fn unknown_or_malformed_threshold_is_a_usage_error_before_any_load() {
    let server = target();
    let url = format!("http://{}/status", server.local_addr());
    for bad in ["p999<5ms", "latency<5ms", "p99<50", "errors", "rps>5%"] {
        let o = run(&["run", &url, "-n", "50", "-c", "1", "-q", "--threshold", bad]);
        assert_eq!(o.status.code(), Some(2), "{bad}: {}", text(&o));
        assert!(text(&o).contains("--threshold"), "{}", text(&o));
    }
    assert_eq!(
        server.requests_served(),
        0,
        "no load before the usage error"
    );
}

#[test]
fn thresholds_pass_fail_with_exit_code_3_and_junit() {
    let _serial = one_at_a_time();
    let server = target();
    let url = format!("http://{}/status", server.local_addr());
    let dir = temp_dir("gate", "thresholds");
    let json = dir.join("r.json");
    let junit = dir.join("junit.xml");
    let o = run(&[
        "run",
        &url,
        "-n",
        "300",
        "-c",
        "2",
        "-t",
        "1",
        "-q",
        "--threshold",
        "p99<5s",
        "--threshold",
        "errors<1%",
        "--threshold",
        "rps>1",
        "--threshold",
        "failed<=0",
        "--junit",
        path(&junit),
        "-o",
        path(&json),
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert!(
        text(&o).contains("Thresholds    4 of 4 passed"),
        "{}",
        text(&o)
    );
    let report = report_json(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert_eq!(report.thresholds.len(), 4);
    assert!(report.thresholds.iter().all(|t| t.passed));
    let xml = std::fs::read_to_string(&junit).unwrap();
    assert!(xml.contains("tests=\"4\" failures=\"0\""), "{xml}");

    let o = run(&[
        "run",
        &url,
        "-n",
        "300",
        "-c",
        "2",
        "-t",
        "1",
        "-q",
        "--threshold",
        "p50<1us",
        "--threshold",
        "rps>100000000",
        "--threshold",
        "p99<5s",
        "--junit",
        path(&junit),
        "--format",
        "json",
    ]);
    assert_eq!(o.status.code(), Some(3), "{}", text(&o));
    assert!(
        text(&o).contains("thresholds failed: p50<1us, rps>100000000"),
        "{}",
        text(&o)
    );
    let report = report_json(&String::from_utf8_lossy(&o.stdout)).unwrap();
    let passed: Vec<bool> = report.thresholds.iter().map(|t| t.passed).collect();
    assert_eq!(passed, [false, false, true]);
    let xml = std::fs::read_to_string(&junit).unwrap();
    assert!(xml.contains("tests=\"3\" failures=\"2\""), "{xml}");
    assert_eq!(xml.matches("<failure ").count(), 2, "{xml}");
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn merge_adds_two_real_runs() {
    let _serial = one_at_a_time();
    let server = target();
    let url = format!("http://{}/status", server.local_addr());
    let dir = temp_dir("gate", "merge");
    let (a, b, all) = (dir.join("a.json"), dir.join("b.json"), dir.join("all.json"));
    for (file, n) in [(&a, "200"), (&b, "300")] {
        let o = run(&[
            "run",
            &url,
            "-n",
            n,
            "-c",
            "2",
            "-t",
            "1",
            "-q",
            "-o",
            path(file),
        ]);
        assert!(o.status.success(), "{}", text(&o));
    }
    let o = run(&["merge", path(&a), path(&b), "-o", path(&all)]);
    assert!(o.status.success(), "{}", text(&o));
    let merged = report_json(&std::fs::read_to_string(&all).unwrap()).unwrap();
    assert_eq!(merged.summary.requests.responses, 500);
    assert_eq!(merged.totals.latency.len(), 500);
    let ra = report_json(&std::fs::read_to_string(&a).unwrap()).unwrap();
    let rb = report_json(&std::fs::read_to_string(&b).unwrap()).unwrap();
    let mut h = ra.totals.latency.clone();
    h.add(&rb.totals.latency).unwrap();
    assert_eq!(
        merged.totals.latency.value_at_quantile(0.99),
        h.value_at_quantile(0.99)
    );
    let o = run(&["merge", path(&a), path(&dir.join("missing.json"))]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn report_renders_csv_series_and_summary() {
    let _serial = one_at_a_time();
    let server = target();
    let url = format!("http://{}/status", server.local_addr());
    let dir = temp_dir("gate", "csv");
    let (json, csv) = (dir.join("r.json"), dir.join("r.csv"));
    let o = run(&[
        "run",
        &url,
        "-n",
        "200",
        "-c",
        "2",
        "-t",
        "1",
        "-q",
        "-o",
        path(&json),
    ]);
    assert!(o.status.success(), "{}", text(&o));
    let o = run(&["report", path(&json), "-o", path(&csv)]);
    assert!(o.status.success(), "{}", text(&o));
    let series = std::fs::read_to_string(&csv).unwrap();
    assert!(series.starts_with("second,warmup,responses,"), "{series}");
    let total: u64 = series
        .lines()
        .skip(1)
        .map(|l| l.split(',').nth(2).unwrap().parse::<u64>().unwrap())
        .sum();
    assert_eq!(total, 200);
    let o = run(&["report", path(&json), "--format", "csv-summary"]);
    let summary = String::from_utf8(o.stdout).unwrap();
    assert_eq!(summary.lines().count(), 2, "{summary}");
    assert!(
        summary.lines().nth(1).unwrap().contains(",200,200,0,"),
        "{summary}"
    );
    let html = dir.join("r.html");
    let o = run(&["report", path(&json), "-o", path(&html)]);
    assert!(o.status.success(), "{}", text(&o));
    let page = std::fs::read_to_string(&html).unwrap();
    // Its only scripts are the inlined interactive charts: nothing loaded from elsewhere.
    assert!(page.starts_with("<!DOCTYPE html>") && page.contains("id=\"lm-charts\""));
    assert!(!page.contains("<script src") && !page.contains(" src=\""));
    for chart in ["spectrum", "rps", "latency-over-time", "errors"] {
        assert!(page.contains(&format!("data-chart=\"{chart}\"")), "{chart}");
    }
    std::fs::remove_dir_all(dir).unwrap();
}

fn comparison(
    baseline: &Path,
    candidate: &Path,
    extra: &[&str],
) -> (Option<i32>, serde_json::Value) {
    let mut args = vec![
        "compare",
        path(baseline),
        path(candidate),
        "--format",
        "json",
    ];
    args.extend_from_slice(extra);
    let o = run(&args);
    let json = serde_json::from_slice(&o.stdout).unwrap_or_else(|e| panic!("{e}: {}", text(&o)));
    (o.status.code(), json)
}

fn verdicts(c: &serde_json::Value) -> Vec<(String, String)> {
    c["metrics"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| {
            (
                m["metric"].as_str().unwrap().to_string(),
                m["verdict"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

/// Three real 4-second runs of the built-in target: the added delay must be flagged slower,
/// the repeat of the same configuration must not be flagged.
#[test]
fn compare_flags_a_real_slowdown_and_not_a_repeat() {
    let _serial = one_at_a_time();
    let server = target();
    let dir = temp_dir("gate", "compare");
    // Server-side delays dominate the latency, so the CPU noise of a shared machine (other
    // tests run beside this one) does not move the figures; CPU-bound /status runs would.
    // They are long enough that a stall of a few ms (seen on CI's virtual machines) is small
    // beside them: with 2 ms delays this test failed in 5 of 11 runs on an idle machine.
    let runs = [
        ("base", "/delay/50"),
        ("again", "/delay/50"),
        ("delay", "/delay/200"),
    ];
    for (name, route) in runs {
        let url = format!("http://{}{route}", server.local_addr());
        let out = dir.join(format!("{name}.json"));
        let o = run(&[
            "run",
            &url,
            "-d",
            "4s",
            "-c",
            "2",
            "-t",
            "1",
            "-q",
            "-o",
            path(&out),
        ]);
        assert!(o.status.success(), "{}", text(&o));
    }
    let (base, again, delay) = (
        dir.join("base.json"),
        dir.join("again.json"),
        dir.join("delay.json"),
    );

    let (code, c) = comparison(&base, &delay, &["--fail-if", "p99>+25%"]);
    let v = verdicts(&c);
    for metric in ["p50", "p99", "rps"] {
        let verdict = &v.iter().find(|(m, _)| m == metric).unwrap().1;
        assert_eq!(verdict, "worse", "{metric}: {c:#}");
    }
    assert_eq!(
        code,
        Some(3),
        "--fail-if p99>+25% fails on the delay: {c:#}"
    );
    assert_eq!(c["gates"][0]["passed"], false);

    // The tails are left out: four per-second samples per run allow p = 0.029 at best, which
    // any steady drift of a shared machine between two runs reaches (CI runs on an otherwise
    // idle machine saw the repeat's every second worse in max, 6.5 -> 15.6 ms, and in p99,
    // +6.8%). The centre must not move, and the p99 gate must not fail.
    let (code, c) = comparison(&base, &again, &["--fail-if", "p99>+25%"]);
    let centre: Vec<_> = verdicts(&c)
        .into_iter()
        .filter(|(m, _)| ["rps", "p50", "p90", "error_rate"].contains(&m.as_str()))
        .collect();
    assert_eq!(centre.len(), 4, "{c:#}");
    assert!(
        centre.iter().all(|(_, v)| v == "no_significant_change"),
        "the same configuration twice is not a change: {c:#}"
    );
    assert_eq!(code, Some(0), "{c:#}");

    let o = run(&["compare", path(&base), path(&delay), "--format", "md"]);
    let md = String::from_utf8_lossy(&o.stdout);
    assert!(md.contains("| p99 |") && md.contains("**slower**"), "{md}");
    let o = run(&["compare", path(&base), path(&delay)]);
    assert!(String::from_utf8_lossy(&o.stdout).contains("slower"));
    let o = run(&["compare", path(&base), path(&delay), "--fail-if", "p42>+1%"]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn plan_file_thresholds_gate_bench() {
    let _serial = one_at_a_time();
    let server = target();
    let dir = temp_dir("gate", "bench");
    let plan = dir.join("plan.yaml");
    let out = dir.join("out");
    let write = |thresholds: &str| {
        std::fs::write(
            &plan,
            format!(
                "targets:\n  api: {{url: 'http://{}/status'}}\nload: {{requests: 100, connections: 2, threads: 1}}\nthresholds: {thresholds}\n",
                server.local_addr()
            ),
        )
        .unwrap()
    };
    write("['p99<5s', 'bogus<1ms']");
    let o = run(&["bench", path(&plan), "-o", path(&out), "-q"]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(text(&o).contains("unknown metric"), "{}", text(&o));
    assert_eq!(
        server.requests_served(),
        0,
        "no load before the usage error"
    );

    write("['p99<5s', 'rps>100000000']");
    let o = run(&["bench", path(&plan), "-o", path(&out), "-q"]);
    assert_eq!(o.status.code(), Some(3), "{}", text(&o));
    // The one exit-code rule names each step's failed thresholds (issue 42).
    assert!(
        text(&o).contains("step 1: thresholds failed: rps>100000000"),
        "{}",
        text(&o)
    );
    let bundle = std::fs::read_to_string(out.join("bundle.json")).unwrap();
    let bundle = bundle_json(&bundle).unwrap();
    let passed: Vec<bool> = bundle.steps[0]
        .report
        .thresholds
        .iter()
        .map(|t| t.passed)
        .collect();
    assert_eq!(passed, [true, false]);
    let md = std::fs::read_to_string(out.join("BENCHMARKS.md")).unwrap();
    assert!(md.contains("threshold FAIL  rps>100000000"), "{md}");
    std::fs::remove_dir_all(dir).unwrap();
}

/// Runs that measure different things are refused by `merge` and `compare` (exit 2, naming
/// the difference) unless `--force`, and a forced result says what was forced.
#[test]
fn merge_and_compare_refuse_unlike_runs_unless_forced() {
    let _serial = one_at_a_time();
    let server = target();
    let addr = server.local_addr();
    let dir = temp_dir("gate", "unlike");
    let runs: [(&str, Vec<String>); 4] = [
        (
            "status",
            vec![
                "run".into(),
                format!("http://{addr}/status"),
                "-n".into(),
                "60".into(),
            ],
        ),
        (
            "json",
            vec![
                "run".into(),
                format!("http://{addr}/json"),
                "-n".into(),
                "60".into(),
            ],
        ),
        (
            "open",
            vec![
                "run".into(),
                format!("http://{addr}/status"),
                "-R".into(),
                "100".into(),
                "-d".into(),
                "1s".into(),
            ],
        ),
        (
            "ws",
            vec![
                "ws".into(),
                format!("ws://{addr}/ws/echo"),
                "-n".into(),
                "60".into(),
            ],
        ),
    ];
    for (name, args) in &runs {
        let out = dir.join(format!("{name}.json"));
        let mut all: Vec<&str> = args.iter().map(String::as_str).collect();
        all.extend(["-c", "2", "-t", "1", "-q", "-o", path(&out)]);
        if *name == "open" {
            all.retain(|a| *a != "-c" && *a != "2");
        }
        let o = run(&all);
        assert!(o.status.success(), "{name}: {}", text(&o));
    }
    let f = |n: &str| dir.join(format!("{n}.json"));

    // merge: another URL, another protocol.
    let o = run(&["merge", path(&f("status")), path(&f("json"))]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("URL:") && err.contains("/json") && err.contains("--force"),
        "{err}"
    );
    let o = run(&["merge", path(&f("status")), path(&f("ws"))]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("protocol: "),
        "{}",
        text(&o)
    );
    let o = run(&["merge", path(&f("status")), path(&f("open"))]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("load model: "),
        "{}",
        text(&o)
    );
    let merged = dir.join("forced.json");
    let o = run(&[
        "merge",
        path(&f("status")),
        path(&f("json")),
        "--force",
        "-o",
        path(&merged),
    ]);
    assert!(o.status.success(), "{}", text(&o));
    let m = report_json(&std::fs::read_to_string(&merged).unwrap()).unwrap();
    assert_eq!(m.summary.requests.responses, 120);
    assert!(
        m.run
            .health
            .findings
            .iter()
            .any(|f| f.contains("--force") && f.contains("URL")),
        "{:?}",
        m.run.health.findings
    );
    let o = run(&["report", path(&merged)]);
    assert!(
        String::from_utf8_lossy(&o.stdout).contains("merged with --force"),
        "{}",
        text(&o)
    );

    // compare: HTTP against WebSocket, closed against open loop; another endpoint is fine.
    let o = run(&["compare", path(&f("status")), path(&f("json"))]);
    assert!(o.status.success(), "{}", text(&o));
    assert!(!String::from_utf8_lossy(&o.stdout).contains("FORCED"));
    for (other, words) in [("ws", "protocol: "), ("open", "load model: ")] {
        let o = run(&["compare", path(&f("status")), path(&f(other))]);
        assert_eq!(o.status.code(), Some(2), "{other}: {}", text(&o));
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(
            err.contains(words) && err.contains("--force"),
            "{other}: {err}"
        );
    }
    let o = run(&["compare", path(&f("status")), path(&f("ws")), "--force"]);
    assert!(o.status.success(), "{}", text(&o));
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(
        out.contains("FORCED (--force): the runs differ in protocol"),
        "{out}"
    );
    let o = run(&[
        "compare",
        path(&f("status")),
        path(&f("ws")),
        "--force",
        "--format",
        "json",
    ]);
    let c: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert!(
        c["forced"][0].as_str().unwrap().starts_with("protocol"),
        "{c:#}"
    );
    std::fs::remove_dir_all(dir).unwrap();
}

/// `loadmark schema result` and `schema bundle` print the published schemas (the ones every
/// report of this suite is checked against); `loadmark schema` is still the plan's.
#[test]
fn schema_prints_the_result_bundle_and_plan_schemas() {
    let o = run(&["schema", "result"]);
    assert!(o.status.success(), "{}", text(&o));
    let s: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(
        s["properties"]["schema_version"]["const"],
        loadmark_report::SCHEMA_VERSION
    );
    assert!(s["title"].as_str().unwrap().starts_with("loadmark result"));
    let percentile = &s["$defs"]["Percentile"]["properties"];
    assert!(
        percentile["p"].is_object() && percentile["us"].is_object(),
        "{s:#}"
    );
    let totals = &s["$defs"]["Snapshot"]["properties"];
    assert!(totals["service_time"].is_object() && totals["service"].is_null());
    let o = run(&["schema", "bundle"]);
    let b: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert!(b["properties"]["steps"].is_object(), "{b:#}");
    let o = run(&["schema"]);
    let p: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert!(p["properties"]["targets"].is_object());
}

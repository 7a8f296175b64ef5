//! The HTML report in a real browser: Debian's chromium, headless, opens the pages from disk;
//! no console messages at all, every chart laid out with its data drawn (measured in the
//! browser's DOM), and a screenshot of each page saved under `target/test-artifacts/`.
//! The interactive charts, driven by playwright-core (`browser_support/interact.js`, from
//! target/ci-node as .ci/run installs it): no request but the page, hover values equal to the
//! JSON result's for that second, cursors linked on time, drag-zoom and double-click reset,
//! legend toggles, and print showing the SVG again.
//!
//! When chromium is missing the test installs it (`apt-get install chromium`, as root); it is
//! skipped with a message only if that is impossible, or with `LOADMARK_SKIP_BROWSER=1`.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

use common::report_of;
use loadmark_report::{
    compare, render_capacity_html, render_comparison_html, render_html, render_html_bundle, Bundle,
    BundleStep, CompareSettings, ServerUsage, UsageSample,
};

const CHROMIUM: &str = "chromium";

/// Measures every chart in the page and writes the result into `<pre id="lm-check">`.
const PROBE: &str = r#"<script>
console.log("lm-probe-ran");
const out = [];
for (const f of document.querySelectorAll("figure.chart")) {
  // An interactive chart (uPlot, over its hidden SVG): its canvas and its series with data.
  const u = f.classList.contains("lm-on") ? window.lmCharts[f.dataset.chart] : null;
  const box = (u ? u.root : f.querySelector("svg")).getBoundingClientRect();
  let drawn = 0;
  if (u) drawn = u.series.slice(1).filter((s, i) => u.data[i + 1].some((v) => v != null)).length;
  for (const p of u ? [] : f.querySelectorAll("path.series")) {
    if (p.getTotalLength() > 0 || p.dataset.points === "1") drawn++;
  }
  for (const r of f.querySelectorAll("rect.bar")) {
    if (r.getBBox().height > 0) drawn++;
  }
  out.push(f.dataset.chart + " " + Math.round(box.width) + " " + Math.round(box.height) + " " + drawn);
}
const pre = document.createElement("pre");
pre.id = "lm-check";
pre.textContent = out.join(";");
document.body.appendChild(pre);
</script>"#;

fn chromium_available() -> bool {
    Command::new(CHROMIUM)
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success())
}

/// Installs Debian's chromium when it is missing; false (with the reason printed) if it cannot.
fn ensure_chromium() -> bool {
    if chromium_available() {
        return true;
    }
    eprintln!("browser test: chromium not found; installing Debian's chromium with apt-get");
    let ok = Command::new("sh")
        .args([
            "-c",
            "timeout 900 apt-get update -qq && DEBIAN_FRONTEND=noninteractive timeout 900 apt-get install -y -qq --no-install-recommends chromium",
        ])
        .status()
        .is_ok_and(|s| s.success());
    if !ok || !chromium_available() {
        eprintln!("browser test SKIPPED: chromium is not installed and could not be installed (apt-get needs root and Debian's package lists)");
        return false;
    }
    true
}

fn chromium(args: &[&str], page: &Path) -> (String, String) {
    let url = format!("file://{}", page.display());
    let o = Command::new("timeout")
        .arg("120")
        .arg(CHROMIUM)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-background-networking",
            "--disable-dev-shm-usage",
            "--disable-extensions",
            "--no-first-run",
            "--hide-scrollbars",
            "--enable-logging=stderr",
            "--v=0",
        ])
        .args(args)
        .arg(&url)
        .output()
        .expect("chromium runs");
    assert!(
        o.status.success(),
        "chromium failed: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    (
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

fn artifacts() -> PathBuf {
    let dir = std::env::var_os("LOADMARK_ARTIFACTS")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../target/test-artifacts")
        });
    std::fs::create_dir_all(&dir).unwrap();
    // Absolute and without `..`: the browser names the page's URL so.
    dir.canonicalize().unwrap()
}

/// Opens `html` from disk: checks the console and every chart, saves a screenshot.
fn check_in_browser(name: &str, html: &str, expected_charts: &[&str]) {
    let dir = artifacts();
    let page = dir.join(format!("{name}.html"));
    std::fs::write(&page, html).unwrap();
    let probed = dir.join(format!("{name}.probe.html"));
    std::fs::write(
        &probed,
        html.replace("</body>", &format!("{PROBE}\n</body>")),
    )
    .unwrap();

    let (dom, log) = chromium(&["--dump-dom"], &probed);
    let console: Vec<&str> = log.lines().filter(|l| l.contains("CONSOLE")).collect();
    assert!(
        console.iter().any(|l| l.contains("lm-probe-ran")),
        "the console capture works: {log}"
    );
    let others: Vec<&&str> = console
        .iter()
        .filter(|l| !l.contains("lm-probe-ran"))
        .collect();
    assert!(
        others.is_empty(),
        "console messages from the page: {others:?}"
    );

    let at = dom.find("<pre id=\"lm-check\">").expect("probe ran") + "<pre id=\"lm-check\">".len();
    let result = &dom[at..at + dom[at..].find("</pre>").unwrap()];
    let charts: Vec<(&str, u32, u32, u32)> = result
        .split(';')
        .map(|c| {
            let f: Vec<&str> = c.split(' ').collect();
            (
                f[0],
                f[1].parse().unwrap(),
                f[2].parse().unwrap(),
                f[3].parse().unwrap(),
            )
        })
        .collect();
    for want in expected_charts {
        let (_, w, h, drawn) = charts
            .iter()
            .find(|c| c.0 == *want)
            .unwrap_or_else(|| panic!("chart {want} missing: {result}"));
        assert!(*w > 300 && *h > 100, "{want} laid out at {w}x{h}");
        assert!(*drawn > 0, "{want} drew no data: {result}");
    }

    let shot = dir.join(format!("{name}.png"));
    let _ = std::fs::remove_file(&shot);
    chromium(
        &[
            &format!("--screenshot={}", shot.display()),
            "--window-size=1000,2800",
        ],
        &page,
    );
    let size = std::fs::metadata(&shot).map(|m| m.len()).unwrap_or(0);
    assert!(
        size > 10_000,
        "screenshot {} is {size} bytes",
        shot.display()
    );
    eprintln!("browser test: screenshot saved to {}", shot.display());
}

fn sweep_bundle() -> Bundle {
    let mut bundle = Bundle::of_report(report_of(3, 100, &[500], 0, 0));
    bundle.name = Some("Connections sweep".into());
    bundle.steps.clear();
    for (i, c) in [1u64, 2, 4, 8].iter().enumerate() {
        let lat: Vec<u64> = (0..10).map(|k| 400 * c + k * 37).collect();
        bundle.steps.push(BundleStep {
            number: i + 1,
            target: "builtin".into(),
            params: vec![("connections".into(), c.to_string())],
            command: format!("loadmark run http://127.0.0.1:8080/ -c {c} -d 3s"),
            report: report_of(3, 100 * c, &lat, 20, 1),
            server: Some(ServerUsage {
                pid: 42,
                rss_start_bytes: 10 << 20,
                rss_peak_bytes: 12 << 20,
                rss_end_bytes: 11 << 20,
                cpu_mean_percent: 20.0,
                cpu_peak_percent: 25.0,
                threads_peak: 2,
                fds_peak: 10,
                samples: (0..6)
                    .map(|k| UsageSample {
                        at_ms: k * 500,
                        cpu_percent: 10.0 * *c as f64 + k as f64,
                        rss_bytes: (10 << 20) + k * 4096 * c,
                    })
                    .collect(),
            }),
            services: Vec::new(),
            notes: Vec::new(),
            capacity: None,
        });
    }
    bundle
}

#[test]
fn html_reports_render_in_chromium() {
    if std::env::var_os("LOADMARK_SKIP_BROWSER").is_some() {
        eprintln!("browser test SKIPPED: LOADMARK_SKIP_BROWSER is set");
        return;
    }
    if !ensure_chromium() {
        return;
    }
    let run = report_of(5, 200, &[300, 900, 1_500, 2_500, 20_000], 50, 2);
    check_in_browser(
        "report-run",
        &render_html(&run),
        &["spectrum", "rps", "latency-over-time", "errors"],
    );
    check_in_browser(
        "report-bundle",
        &render_html_bundle(&sweep_bundle()),
        &[
            "spectrum",
            "rps",
            "latency-over-time",
            "errors",
            "sweep-rps",
            "sweep-p99",
            "bars-rps",
            "bars-p99",
            "server-rss",
            "server-cpu",
        ],
    );
    // Eight steps: the charts over time become small multiples, each laid out and drawn.
    let many: Vec<String> = ["rps", "latency-over-time", "errors"]
        .iter()
        .flat_map(|id| (1..=8).map(move |n| format!("{id}-step{n}")))
        .chain(["spectrum".to_string(), "bars-rps".to_string()])
        .collect();
    check_in_browser(
        "report-many-steps",
        &render_html_bundle(&common::many_steps_bundle(8)),
        &many.iter().map(String::as_str).collect::<Vec<_>>(),
    );
    check_in_browser(
        "report-open-loop",
        &render_html(&common::open_report()),
        &["spectrum", "rps", "latency-over-time", "errors"],
    );
    check_in_browser(
        "report-websocket",
        &render_html(&common::ws_report()),
        &["spectrum", "rps", "latency-over-time", "errors", "messages"],
    );
    let slow = report_of(5, 150, &[600, 1_800, 3_000, 5_000, 40_000], 40, 2);
    let c = compare(
        "base.json",
        &run,
        "slow.json",
        &slow,
        CompareSettings::default(),
    );
    check_in_browser(
        "report-compare",
        &render_comparison_html(&c),
        &[
            "compare-req-s",
            "compare-p50",
            "compare-p99",
            "compare-max",
            "compare-error-rate",
        ],
    );
}

/// Runs `interact.js` (playwright-core driving Debian's chromium) over `jobs`; its findings.
fn interact(jobs: &serde_json::Value) -> Vec<serde_json::Value> {
    let workspace = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..");
    let node_modules = workspace.join("target/ci-node/node_modules");
    assert!(
        node_modules.join("playwright-core").exists(),
        "{} is missing: npm install playwright-core in target/ci-node (.ci/run does)",
        node_modules.display()
    );
    let file = artifacts().join("interact-jobs.json");
    std::fs::write(&file, jobs.to_string()).unwrap();
    let script =
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/browser_support/interact.js");
    let out = Command::new("timeout")
        .args(["120", "node"])
        .arg(script)
        .arg(&file)
        .env("NODE_PATH", &node_modules)
        .output()
        .expect("node runs");
    assert!(
        out.status.success(),
        "interact.js failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("interact.js prints JSON")
}

/// The number in a legend cell ("200/s", "p99 20.001 ms", "3 s"): its first word that is one.
fn number_in(cell: &serde_json::Value) -> f64 {
    let text = cell.as_str().unwrap();
    text.split_whitespace()
        .find_map(|w| w.trim_end_matches("/s").trim_end_matches('%').parse().ok())
        .unwrap_or_else(|| panic!("no number in {text:?}"))
}

/// Every page: no console message, no page error, no request but the page itself, every
/// interactive chart laid out over its hidden SVG, and print showing the SVG again.
fn assert_clean(found: &serde_json::Value, charts: &[&str]) {
    let page = found["page"].as_str().unwrap();
    assert_eq!(found["console"], serde_json::json!([]), "{page}: console");
    assert_eq!(found["errors"], serde_json::json!([]), "{page}: errors");
    assert_eq!(
        found["requests"],
        serde_json::json!([format!("file://{page}")]),
        "{page}: requests"
    );
    for id in charts {
        let c = &found["charts"][id];
        assert!(
            c["width"].as_u64().unwrap() >= 280 && c["height"].as_u64().unwrap() >= 150,
            "{page}: {id} laid out: {c}"
        );
        assert!(c["points"].as_u64().unwrap() > 0, "{page}: {id}: {c}");
        assert_eq!(c["svg_hidden"], true, "{page}: {id}");
    }
    assert_eq!(found["noscript"]["plots"], 0, "{page}: without script");
    assert!(
        found["noscript"]["svgs"].as_u64().unwrap() >= charts.len() as u64,
        "{page}: every SVG shown without script: {}",
        found["noscript"]
    );
    assert_eq!(found["print"]["svg"], "block", "{page}: printed SVG");
    assert_eq!(found["print"]["plot"], "none", "{page}: canvas not printed");
}

#[test]
fn interactive_charts_show_the_json_values_zoom_and_toggle() {
    if std::env::var_os("LOADMARK_SKIP_BROWSER").is_some() {
        eprintln!("browser test SKIPPED: LOADMARK_SKIP_BROWSER is set");
        return;
    }
    if !ensure_chromium() {
        return;
    }
    let dir = artifacts();
    let run = report_of(5, 200, &[300, 900, 1_500, 2_500, 20_000], 50, 2);
    let json: serde_json::Value =
        serde_json::from_str(&loadmark_report::render_json(&run)).unwrap();
    let sweep = sweep_bundle();
    let many = common::many_steps_bundle(8);
    let scenarios = common::scenarios_report();
    let scenarios_json: serde_json::Value =
        serde_json::from_str(&loadmark_report::render_json(&scenarios)).unwrap();
    let capacity = capacity_result();
    let mut jobs = Vec::new();
    for (name, html) in [
        ("interactive-capacity", render_capacity_html(&capacity)),
        ("interactive-scenarios", render_html(&scenarios)),
        ("interactive-run", render_html(&run)),
        ("interactive-bundle", render_html_bundle(&sweep)),
        ("interactive-many-steps", render_html_bundle(&many)),
    ] {
        std::fs::write(dir.join(format!("{name}.html")), html).unwrap();
    }
    let page = |name: &str| dir.join(format!("{name}.html")).display().to_string();
    let shot = |name: &str| dir.join(format!("{name}.png")).display().to_string();
    jobs.push(serde_json::json!({
        "page": page("interactive-run"), "shot": shot("interactive-run"),
        "hover": [
            {"chart": "rps", "x": 2, "linked": ["latency-over-time", "errors"]},
            {"chart": "spectrum", "x": 2},
        ],
        "zoom": "rps", "toggle": "latency-over-time",
    }));
    jobs.push(serde_json::json!({
        "page": page("interactive-bundle"), "shot": shot("interactive-bundle"),
        "hover": [
            {"chart": "rps", "x": 1, "linked": ["latency-over-time"]},
            {"chart": "sweep-p99", "x": 4},
            {"chart": "server-cpu", "x": 1.5},
        ],
        "zoom": "latency-over-time", "toggle": "rps",
    }));
    jobs.push(serde_json::json!({
        "page": page("interactive-many-steps"), "shot": shot("interactive-many-steps"),
        "hover": [{"chart": "rps-step1", "x": 1, "linked": ["rps-step8", "latency-over-time-step8"]}],
        "zoom": "rps-step2", "toggle": "latency-over-time-step3",
    }));
    jobs.push(serde_json::json!({
        "page": page("interactive-scenarios"), "shot": shot("interactive-scenarios"),
        "hover": [{"chart": "scenario-rps", "x": 3, "linked": ["scenario-p99", "rps"]}],
        "zoom": "scenario-p99", "toggle": "scenario-rps",
    }));
    jobs.push(serde_json::json!({
        "page": page("interactive-capacity"), "shot": shot("interactive-capacity"),
        "hover": [{"chart": "latency-offered", "x": 4000}],
        "zoom": "latency-offered", "toggle": "latency-achieved",
    }));
    let found = interact(&serde_json::Value::Array(jobs));

    // One run: hover second 2 of req/s, and the other charts over time follow the cursor.
    let r = &found[0];
    assert_clean(r, &["spectrum", "rps", "latency-over-time", "errors"]);
    let second = &json["series"][2];
    let rps = &r["hover"][0];
    assert_eq!(rps["x"], 2, "{rps}");
    assert_eq!(number_in(&rps["legend"][0]), 2.0, "{rps}");
    assert_eq!(
        number_in(&rps["legend"][1]),
        second["responses"].as_f64().unwrap()
    );
    let latency = &rps["linked"][0];
    assert_eq!(latency["x"], 2, "linked on time: {latency}");
    for (cell, field) in [
        (1, "latency_p50_us"),
        (2, "latency_p99_us"),
        (3, "latency_max_us"),
    ] {
        assert_eq!(
            number_in(&latency["legend"][cell]),
            second[field].as_f64().unwrap() / 1000.0,
            "{field}: {latency}"
        );
    }
    let errors = &rps["linked"][1];
    let (transport, failed) = (
        second["errors"].as_f64().unwrap(),
        second["failed"].as_f64().unwrap(),
    );
    assert_eq!(number_in(&errors["legend"][1]), transport, "{errors}");
    assert_eq!(
        number_in(&errors["legend"][2]),
        failed - transport,
        "{errors}"
    );
    assert!(failed > transport, "the fixture has failed responses");
    // The spectrum at two nines: the curve and the p99 marker read the JSON's p99.
    let spectrum = &r["hover"][1];
    let p99 = json["summary"]["latency"]["percentiles_us"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["p"] == 99.0)
        .unwrap()["us"]
        .as_f64()
        .unwrap()
        / 1000.0;
    assert!(
        spectrum["legend"][0].as_str().unwrap().starts_with("99%"),
        "{spectrum}"
    );
    assert!(
        spectrum["legend"][2].as_str().unwrap().starts_with("p99 "),
        "{spectrum}"
    );
    assert_eq!(number_in(&spectrum["legend"][2]), p99, "{spectrum}");
    assert_eq!(number_in(&spectrum["legend"][1]), p99, "{spectrum}");
    zoomed_and_reset(&r["zoom"]);
    toggled(&r["toggle"]);

    // A bundle of four steps overlaid: one line per step.
    let b = &found[1];
    assert_clean(b, &["spectrum", "rps", "latency-over-time", "errors"]);
    assert_eq!(b["charts"]["rps"]["series"], 4);
    let hover = &b["hover"][0];
    for (i, step) in sweep.steps.iter().enumerate() {
        assert_eq!(
            number_in(&hover["legend"][i + 1]),
            step.report.series[1].responses as f64,
            "step {}: {hover}",
            step.number
        );
    }
    assert_eq!(hover["linked"][0]["x"], 1, "{hover}");
    // The sweep's p99 at 4 connections, and the server's CPU sample at 1.5 s, per step.
    let sweep_p99 = &b["hover"][1];
    assert_eq!(number_in(&sweep_p99["legend"][0]), 4.0, "{sweep_p99}");
    let p99_at_4 = sweep.steps[2].report.totals.latency.value_at_quantile(0.99) as f64 / 1000.0;
    assert!(
        (number_in(&sweep_p99["legend"][1]) - p99_at_4).abs() < 0.01,
        "{sweep_p99} against {p99_at_4}"
    );
    let cpu = &b["hover"][2];
    assert_eq!(number_in(&cpu["legend"][0]), 1.5, "{cpu}");
    for (i, step) in sweep.steps.iter().enumerate() {
        let sample = &step.server.as_ref().unwrap().samples[3];
        assert_eq!(sample.at_ms, 1_500);
        assert_eq!(
            number_in(&cpu["legend"][i + 1]),
            sample.cpu_percent,
            "{cpu}"
        );
    }
    zoomed_and_reset(&b["zoom"]);
    toggled(&b["toggle"]);

    // Eight steps: one chart per step, every one linked to the cursor of the first.
    let m = &found[2];
    let ids: Vec<String> = ["rps", "latency-over-time", "errors"]
        .iter()
        .flat_map(|id| (1..=8).map(move |n| format!("{id}-step{n}")))
        .collect();
    assert_clean(m, &ids.iter().map(String::as_str).collect::<Vec<_>>());
    let hover = &m["hover"][0];
    assert_eq!(
        number_in(&hover["legend"][1]),
        many.steps[0].report.series[1].responses as f64
    );
    let last = &hover["linked"][0];
    assert_eq!(last["x"], 1, "linked on time: {last}");
    assert_eq!(
        number_in(&last["legend"][1]),
        many.steps[7].report.series[1].responses as f64
    );
    assert_eq!(
        number_in(&hover["linked"][1]["legend"][1]),
        many.steps[7].report.series[1].latency_p50_us as f64 / 1000.0
    );
    zoomed_and_reset(&m["zoom"]);
    toggled(&m["toggle"]);

    // Two scenarios at once: a line each, the values of the JSON's second for each scenario,
    // linked on time with the run's own req/s.
    let s = &found[3];
    assert_clean(
        s,
        &[
            "spectrum",
            "rps",
            "latency-over-time",
            "errors",
            "scenario-rps",
            "scenario-p99",
        ],
    );
    assert_eq!(s["charts"]["scenario-rps"]["series"], 2);
    let hover = &s["hover"][0];
    let second = &scenarios_json["series"][3];
    let of = |name: &str| {
        second["scenarios"]
            .as_array()
            .unwrap()
            .iter()
            .find(|x| x["name"] == name)
            .unwrap_or_else(|| panic!("{name} in {second}"))
            .clone()
    };
    for (cell, name) in [(1, "browse"), (2, "checkout")] {
        let figures = of(name);
        assert!(figures["requests"].as_u64().unwrap() > 0, "{second}");
        assert_eq!(
            number_in(&hover["legend"][cell]),
            figures["requests"].as_f64().unwrap(),
            "{name}: {hover}"
        );
        let p99 = &hover["linked"][0];
        assert_eq!(p99["x"], 3, "linked on time: {p99}");
        assert_eq!(
            number_in(&p99["legend"][cell]),
            figures["latency_p99_us"].as_f64().unwrap() / 1000.0,
            "{name}: {p99}"
        );
    }
    assert_eq!(
        number_in(&hover["linked"][1]["legend"][1]),
        second["responses"].as_f64().unwrap(),
        "the run's req/s at the same second: {hover}"
    );
    zoomed_and_reset(&s["zoom"]);
    toggled(&s["toggle"]);

    // A capacity search: p50/p90/p99 against the offered rate with the knee and the capacity
    // marked; hovering 4,000/s reads that step's percentiles.
    let c = &found[4];
    assert_clean(c, &["latency-offered", "latency-achieved"]);
    let at = &c["hover"][0];
    assert_eq!(number_in(&at["legend"][0]), 4000.0, "{at}");
    for (cell, p) in [(1, 0.5), (2, 0.8), (3, 4.0)] {
        assert_eq!(number_in(&at["legend"][cell]), p, "{at}");
    }
    zoomed_and_reset(&c["zoom"]);
    toggled(&c["toggle"]);
    for name in [
        "interactive-capacity",
        "interactive-scenarios",
        "interactive-run",
        "interactive-bundle",
        "interactive-many-steps",
    ] {
        let size = std::fs::metadata(dir.join(format!("{name}.png"))).map_or(0, |m| m.len());
        assert!(size > 10_000, "screenshot {name}.png is {size} bytes");
    }
}

/// A capacity search of five steps (p99 2, 3, 4, 12 and 90 ms at 1,000-8,000/s).
fn capacity_result() -> loadmark_report::CapacityResult {
    let step = |offered: f64, achieved: f64, p99_ms: u64, met: bool| {
        serde_json::json!({
            "offered": offered, "achieved": achieved, "p50_us": 500, "p90_us": 800,
            "p99_us": p99_ms * 1000, "completed": 1000, "errors": 0, "failed": 0, "met": met,
            "repeat": false,
        })
    };
    let curve: Vec<serde_json::Value> = vec![
        step(1000.0, 1000.0, 2, true),
        step(2000.0, 2000.0, 3, true),
        step(4000.0, 3990.0, 4, true),
        step(6000.0, 5990.0, 12, false),
        step(8000.0, 7000.0, 90, false),
    ];
    serde_json::from_value(serde_json::json!({
        "schema_version": 1, "kind": "capacity", "loadmark_version": "0.1.0",
        "url": "http://127.0.0.1:8080/", "unit": "requests", "protocol": "HTTP/1.1",
        "objectives": ["p99 < 10ms"], "capacity": 4000.0, "achieved_at_capacity": 3990.0,
        "end": "found", "message": "capacity 4,000 requests/s", "knee": 4000.0,
        "step_rule": "2 s per step", "curve": curve,
    }))
    .expect("a capacity result")
}

/// A drag over the middle half narrows the x scale; a double click restores it.
fn zoomed_and_reset(z: &serde_json::Value) {
    let f = |v: &serde_json::Value, i: usize| v[i].as_f64().unwrap();
    let (lo, hi) = (f(&z["before"], 0), f(&z["before"], 1));
    let (zlo, zhi) = (f(&z["zoomed"], 0), f(&z["zoomed"], 1));
    assert!(zlo > lo && zhi < hi && zhi > zlo, "drag zoomed in: {z}");
    assert!(
        (zhi - zlo) < 0.7 * (hi - lo),
        "to about half the range: {z}"
    );
    assert_eq!(z["reset"], z["before"], "double click resets: {z}");
}

/// A click on a series' legend entry hides it, a second shows it again.
fn toggled(t: &serde_json::Value) {
    assert_eq!(t["before"], true, "{t}");
    assert_eq!(t["after"], false, "{t}");
    assert_eq!(t["off"], true, "legend entry greyed: {t}");
    assert_eq!(t["again"], true, "{t}");
}

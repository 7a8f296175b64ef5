//! The HTML report in a real browser: Debian's chromium, headless, opens the pages from disk;
//! no console messages at all, every chart laid out with its data drawn (measured in the
//! browser's DOM), and a screenshot of each page saved under `target/test-artifacts/`.
//!
//! When chromium is missing the test installs it (`apt-get install chromium`, as root); it is
//! skipped with a message only if that is impossible, or with `LOADMARK_SKIP_BROWSER=1`.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

use common::report_of;
use loadmark_report::{
    compare, render_comparison_html, render_html, render_html_bundle, Bundle, BundleStep,
    CompareSettings, ServerUsage, UsageSample,
};

const CHROMIUM: &str = "chromium";

/// Measures every chart in the page and writes the result into `<pre id="lm-check">`.
const PROBE: &str = r#"<script>
console.log("lm-probe-ran");
const out = [];
for (const f of document.querySelectorAll("figure.chart")) {
  const box = f.querySelector("svg").getBoundingClientRect();
  let drawn = 0;
  for (const p of f.querySelectorAll("path.series")) {
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
    dir
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

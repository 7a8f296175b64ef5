//! The HTML page: golden files of a run and of a sweep bundle, and every chart drawn with data.

mod common;

use std::path::PathBuf;

use common::report_of;
use loadmark_report::{
    render_html, render_html_bundle, Bundle, BundleStep, ServerUsage, ThresholdResult, UsageSample,
};

fn check(name: &str, actual: &str) {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("testdata")
        .join(name);
    if std::env::var_os("UPDATE_GOLDEN").is_some() {
        std::fs::write(&path, actual).unwrap();
        return;
    }
    let expected = std::fs::read_to_string(&path)
        .unwrap_or_else(|_| panic!("{} missing: run with UPDATE_GOLDEN=1", path.display()));
    assert!(
        expected == actual,
        "{name} differs from the golden file; if intended, regenerate with UPDATE_GOLDEN=1"
    );
}

/// `data-points` of the chart named `name`.
fn points(html: &str, name: &str) -> usize {
    let marker = format!("data-chart=\"{name}\" data-points=\"");
    let at = html
        .find(&marker)
        .unwrap_or_else(|| panic!("no chart {name}"))
        + marker.len();
    html[at..].split('"').next().unwrap().parse().unwrap()
}

fn self_contained(html: &str) {
    assert!(html.starts_with("<!DOCTYPE html>"));
    assert!(!html.contains("<script"), "no JavaScript needed");
    assert!(!html.contains("http://www.w3.org/1999") && !html.contains("src="));
    assert!(
        !html.contains("https://"),
        "nothing fetched from the network"
    );
    assert!(
        !html.contains("NaN") && !html.contains("inf"),
        "every coordinate is a number"
    );
}

#[test]
fn run_page() {
    let mut r = report_of(5, 200, &[300, 900, 1_500, 2_500, 20_000], 50, 2);
    r.thresholds = vec![ThresholdResult {
        threshold: "p99<50ms".into(),
        passed: true,
        actual: Some("20.01ms".into()),
    }];
    let html = render_html(&r);
    self_contained(&html);
    for chart in ["spectrum", "rps", "latency-over-time", "errors"] {
        assert!(points(&html, chart) > 0, "{chart}");
    }
    assert!(html.contains("99.9%"), "the nines axis is labelled");
    assert!(html.contains("latency (ms)") && html.contains("responses/s"));
    assert!(html.contains("Test CPU @ 3.00GHz"), "environment block");
    assert!(html.contains("PASS  p99&lt;50ms"), "thresholds listed");
    assert!(html.contains("class=\"legend\""));
    check("run.html", &html);
}

#[test]
fn sweep_page_with_server_usage() {
    let mut bundle = Bundle::of_report(report_of(3, 100, &[500], 0, 0));
    bundle.name = Some("Sweep <connections>".into());
    bundle.steps.clear();
    for (i, c) in [1u64, 2, 4, 8].iter().enumerate() {
        let lat: Vec<u64> = (0..10).map(|k| 400 * c + k * 37).collect();
        bundle.steps.push(BundleStep {
            number: i + 1,
            target: "builtin".into(),
            params: vec![("connections".into(), c.to_string())],
            command: format!("loadmark run http://127.0.0.1:8080/ -c {c} -d 3s"),
            report: report_of(3, 100 * c, &lat, 0, 0),
            server: Some(ServerUsage {
                pid: 42,
                rss_start_bytes: 10 << 20,
                rss_peak_bytes: 12 << 20,
                rss_end_bytes: 11 << 20,
                cpu_mean_percent: 20.0 * *c as f64,
                cpu_peak_percent: 25.0 * *c as f64,
                threads_peak: 2,
                fds_peak: 10,
                samples: (0..6)
                    .map(|k| UsageSample {
                        at_ms: k * 500,
                        cpu_percent: 10.0 * *c as f64 + k as f64,
                        rss_bytes: (10 << 20) + k * 4096,
                    })
                    .collect(),
            }),
        });
    }
    let html = render_html_bundle(&bundle);
    self_contained(&html);
    assert!(html.contains("<h1>Sweep &lt;connections&gt;</h1>"));
    for chart in [
        "spectrum",
        "rps",
        "latency-over-time",
        "sweep-rps",
        "sweep-p99",
        "bars-rps",
        "bars-p99",
        "server-rss",
        "server-cpu",
    ] {
        assert!(points(&html, chart) > 0, "{chart}");
    }
    assert_eq!(points(&html, "sweep-rps"), 4);
    assert!(html.contains("Responses per second versus connections"));
    assert!(html.contains("RSS (MiB)") && html.contains("CPU (%)"));
    check("bundle.html", &html);
}

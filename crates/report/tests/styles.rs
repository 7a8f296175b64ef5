//! Named styles (wrk, bombardier, ab, Taurus) and plan-chosen columns: golden files for a
//! closed-loop, an open-loop and a WebSocket step, and the chosen columns in Markdown, HTML
//! and CSV. Regenerate with `UPDATE_GOLDEN=1 cargo test -p loadmark-report --test styles`.

mod common;

use std::path::PathBuf;

use loadmark_plan::{Column, TableStyle};
use loadmark_report::{
    render_bundle_csv_summary, render_html_bundle, render_markdown, Bundle, BundleStep,
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
        "{name} differs from the golden file; if intended, regenerate with UPDATE_GOLDEN=1\n--- actual ---\n{actual}"
    );
}

/// Closed loop (1% 503s, 2 timeouts), open loop, WebSocket: one step each.
fn three_kinds() -> Bundle {
    let mut bundle = Bundle::of_report(common::report_of(3, 200, &[400, 900, 2500, 700], 100, 2));
    bundle.name = Some("Three kinds of step".into());
    bundle.plan_file = "plan.yaml".into();
    let reports = [
        (
            "closed",
            common::report_of(3, 200, &[400, 900, 2500, 700], 100, 2),
        ),
        ("open", common::open_report()),
        ("ws", common::ws_report()),
    ];
    bundle.steps = reports
        .into_iter()
        .enumerate()
        .map(|(i, (target, report))| BundleStep {
            number: i + 1,
            target: target.into(),
            params: vec![("target".into(), target.into())],
            command: loadmark_report::equivalent_command(&report.plan),
            report,
            server: None,
            services: Vec::new(),
            notes: Vec::new(),
            capacity: None,
        })
        .collect();
    bundle
}

#[test]
fn each_style_renders_closed_open_and_websocket_steps() {
    for (style, name) in [
        (TableStyle::Wrk, "wrk"),
        (TableStyle::Bombardier, "bombardier"),
        (TableStyle::Ab, "ab"),
        (TableStyle::Taurus, "taurus"),
    ] {
        let mut b = three_kinds();
        b.style = Some(style);
        let md = render_markdown(&b);
        assert!(
            md.contains(&format!("## Each step in {name}'s layout")),
            "{md}"
        );
        assert_eq!(
            md.matches("computed by loadmark from its own measurements")
                .count(),
            3,
            "every block says whose figures these are"
        );
        assert!(md.contains(&format!("(not {name} output)")));
        check(&format!("style-{name}.md"), &md);
        let html = render_html_bundle(&b);
        assert!(
            html.contains(&format!("Each step in {name}&#39;s layout"))
                || html.contains(&format!("Each step in {name}'s layout")),
            "{html}"
        );
        assert_eq!(html.matches("<pre>").count(), 3);
    }
}

#[test]
fn style_figures_are_loadmarks_own() {
    let mut b = three_kinds();
    let closed = &b.steps[0].report.summary;
    let (rps, responses, errors) = (
        closed.rps,
        closed.requests.responses,
        closed.requests.errors,
    );
    let c5 = closed.status.class(5);
    b.style = Some(TableStyle::Bombardier);
    let md = render_markdown(&b);
    assert!(
        md.contains(&format!(
            "2xx - {}, 3xx - 0, 4xx - 0, 5xx - {c5}",
            responses - c5
        )),
        "{md}"
    );
    assert!(md.contains(&format!("    others - {errors}")), "{md}");
    b.style = Some(TableStyle::Wrk);
    let md = render_markdown(&b);
    assert!(md.contains(&format!("Requests/sec: {rps:>10.2}")), "{md}");
    assert!(
        md.contains("Socket errors: connect 0, read 0, write 0, timeout 2"),
        "{md}"
    );
    b.style = Some(TableStyle::Taurus);
    let md = render_markdown(&b);
    let failed = b.steps[0].report.failed();
    let completed = b.steps[0].report.summary.requests.completed;
    assert!(
        md.contains(&format!(
            "Samples count: {completed}, {:.2}% failures",
            failed as f64 * 100.0 / completed as f64
        )),
        "{md}"
    );
}

#[test]
fn chosen_columns_appear_in_markdown_html_and_csv() {
    let mut b = three_kinds();
    b.columns = [
        "rps",
        "rps_stdev",
        "rps_max",
        "latency_mean",
        "latency_stdev",
        "p0",
        "p95",
        "connect_mean",
        "ttfb_mean",
        "5xx",
    ]
    .iter()
    .map(|n| Column::parse(n).unwrap())
    .collect();
    let md = render_markdown(&b);
    assert!(
        md.contains("| # | step | req/s | req/s stdev | req/s max | latency mean | latency stdev | latency min | p95 | connect mean | TTFB mean | 5xx |"),
        "{md}"
    );
    let s = &b.steps[0].report.summary;
    let row = md
        .lines()
        .find(|l| l.starts_with("| 1 | target=closed |"))
        .unwrap();
    assert!(row.ends_with(&format!(" {} |", s.status.class(5))), "{row}");
    assert!(
        row.contains(&loadmark_report::format_us(s.latency.mean_us)),
        "{row}"
    );
    let html = render_html_bundle(&b);
    assert!(
        html.contains("<th>req/s stdev</th><th>req/s max</th><th>latency mean</th>"),
        "{html}"
    );
    assert!(html.contains("<th>TTFB mean</th><th>5xx</th>"));
    let csv = render_bundle_csv_summary(&b);
    let mut lines = csv.lines();
    let header = lines.next().unwrap();
    assert!(
        header.ends_with(",rps_per_s,rps_stdev_per_s,rps_max_per_s,latency_mean_us,latency_stdev_us,latency_min_us,p95_us,connect_mean_us,ttfb_mean_us,5xx"),
        "{header}"
    );
    let first = lines.next().unwrap();
    let fields: Vec<&str> = first.split(',').collect();
    assert_eq!(fields.last().unwrap(), &s.status.class(5).to_string());
    let mean: f64 = fields[fields.len() - 7].parse().unwrap();
    assert!((mean - s.latency.mean_us).abs() < 0.01, "{first}");
    check("columns.md", &md);
}

//! The HTML page: golden files of a run and of a sweep bundle, and every chart drawn with data.

mod common;

use std::path::PathBuf;

use common::report_of;
use loadmark_metrics::{CheckStat, CheckStats};
use loadmark_report::{
    render_csv_summary, render_html, render_html_bundle, render_markdown, render_text, Bundle,
    BundleStep, ServerUsage, ThresholdResult, UsageSample,
};

/// uPlot's own code and style stand in the golden files as one line each: they are vendored
/// files (crates/report/assets/uplot/), not the renderer's output.
fn without_uplot(html: &str) -> String {
    html.replacen(
        include_str!("../assets/uplot/uPlot.iife.min.js").trim_end(),
        "/* uPlot: crates/report/assets/uplot/uPlot.iife.min.js */",
        1,
    )
    .replacen(
        include_str!("../assets/uplot/uPlot.min.css"),
        "/* uPlot: crates/report/assets/uplot/uPlot.min.css */",
        1,
    )
}

fn check(name: &str, actual: &str) {
    let actual = without_uplot(actual);
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("testdata")
        .join(name);
    if std::env::var_os("UPDATE_GOLDEN").is_some() {
        std::fs::write(&path, &actual).unwrap();
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

/// The page apart from its scripts, and the scripts' contents.
fn split_scripts(html: &str) -> (String, Vec<&str>) {
    let mut page = String::new();
    let mut scripts = Vec::new();
    let mut rest = html;
    while let Some(at) = rest.find("<script") {
        page.push_str(&rest[..at]);
        let body = at + rest[at..].find('>').unwrap() + 1;
        let end = body + rest[body..].find("</script>").expect("script closed");
        scripts.push(&rest[body..end]);
        rest = &rest[end + "</script>".len()..];
    }
    page.push_str(rest);
    (page, scripts)
}

fn self_contained(html: &str) {
    assert!(html.starts_with("<!DOCTYPE html>"));
    let (page, scripts) = split_scripts(html);
    assert!(!page.contains("http://www.w3.org/1999") && !page.contains("src="));
    assert!(
        !page.contains("https://"),
        "nothing fetched from the network"
    );
    assert!(
        !page.contains("NaN") && !page.contains("inf"),
        "every coordinate is a number"
    );
    // The interactive charts: their data, uPlot, and the code that draws them; none loads
    // anything (uPlot names its home only in its banner comment).
    assert_eq!(scripts.len(), 3, "data, uPlot, charts");
    let data: serde_json::Value = serde_json::from_str(scripts[0]).expect("chart data is JSON");
    assert!(!data.as_array().unwrap().is_empty());
    assert!(scripts[1].starts_with("/*! https://github.com/leeoniya/uPlot (v1.6.32) */"));
    for s in &scripts {
        let code = s.replacen("/*! https://github.com/leeoniya/uPlot", "", 1);
        for word in [
            "https://",
            "http://",
            "fetch(",
            "XMLHttpRequest",
            "EventSource",
            "WebSocket",
            "import(",
            "sendBeacon",
            "src=",
            "url(",
        ] {
            assert!(!code.contains(word), "a script mentions {word}");
        }
    }
}

#[test]
fn run_page() {
    let mut r = report_of(5, 200, &[300, 900, 1_500, 2_500, 20_000], 50, 2);
    r.thresholds = vec![ThresholdResult {
        threshold: "p99<50ms".into(),
        passed: true,
        actual: Some("20.01ms".into()),
        scenario: None,
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
            services: Vec::new(),
            notes: Vec::new(),
            capacity: None,
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

/// The `<table data-table=NAME>` block (up to its end), to look inside one table.
fn table<'a>(html: &'a str, name: &str) -> &'a str {
    let at = html
        .find(&format!("data-table=\"{name}\""))
        .unwrap_or_else(|| panic!("no table {name}"));
    let end = html[at..].find("</table>").map_or(html.len(), |e| at + e);
    &html[at..end]
}

#[test]
fn the_page_says_what_the_text_report_says() {
    let r = report_of(5, 200, &[300, 900, 1_500, 2_500, 20_000], 50, 2);
    let html = render_html(&r);
    let counts = table(&html, "counts");
    assert!(
        counts.contains("1002 completed in 5.00s: 1000 responses, 2 errors"),
        "{counts}"
    );
    assert!(counts.contains("Client CPU") && counts.contains("Connections opened"));
    let phases = table(&html, "phases");
    for row in ["<td>latency</td>", "<td>TTFB</td>", "<td>connect</td>"] {
        assert!(phases.contains(row), "{row}: {phases}");
    }
    let status = table(&html, "status");
    assert!(
        status.contains("<td>200</td><td>980</td>") && status.contains("<td>503</td><td>20</td>"),
        "{status}"
    );
    assert!(status.contains("<td>5xx</td><td>20</td>"), "{status}");
    let errors = table(&html, "errors");
    assert!(
        errors.contains("<td>timeout</td><td>2</td><td class=\"text\">timed out</td>"),
        "{errors}"
    );
    // HdrHistogram's percentile axis: 50, 90, 99, 99.9 ...
    for tick in [">50%<", ">90%<", ">99%<", ">99.9%<"] {
        assert!(html.contains(tick), "{tick}");
    }
}

#[test]
fn open_loop_pages_show_requested_and_achieved_rate_lag_and_drops() {
    let html = render_html(&common::open_report());
    let counts = table(&html, "counts");
    assert!(
        counts.contains("Requested rate</th><td>200.0 req/s on average"),
        "{counts}"
    );
    assert!(
        counts.contains("Achieved rate</th><td>200.0 req/s sent (100.0% of the requested rate)"),
        "{counts}"
    );
    assert!(
        counts.contains("Dropped</th><td>5 requests were due"),
        "{counts}"
    );
    let phases = table(&html, "phases");
    assert!(
        phases.contains("<td>service time</td><td>600</td>"),
        "{phases}"
    );
    assert!(
        phases.contains("<td>schedule lag</td><td>600</td>"),
        "{phases}"
    );
}

#[test]
fn websocket_pages_speak_of_round_trips_and_messages() {
    let html = render_html(&common::ws_report());
    assert!(html.contains("Round trips per second over time"), "{html}");
    assert!(html.contains("Failed messages over time"));
    assert!(html.contains("<th>round trips/s</th>") && html.contains("<th>round trips</th>"));
    assert!(!html.contains("req/s") && !html.contains("Responses per second"));
    assert!(!html.contains("Failed requests"));
    let phases = table(&html, "phases");
    assert!(phases.contains("<td>round trip</td>") && phases.contains("<td>handshake</td>"));
    assert!(!phases.contains("TTFB"), "{phases}");
}

/// Checks on a WebSocket run judge replies (issue 20): the page says so, as the text does.
#[test]
fn websocket_checks_count_replies_not_responses() {
    let mut r = common::ws_report();
    r.summary.checks = Some(CheckStats {
        checks: vec![CheckStat {
            name: "ok".into(),
            passed: 48,
            failed: 2,
            first_failure: Some("reply: nope".into()),
        }],
        failed_responses: 2,
        checked_responses: 50,
        failed_success_responses: 2,
    });
    let html = render_html(&r);
    assert!(
        html.contains("<p>Checks: 2 of 50 replies failed a check.</p>"),
        "{html}"
    );
    assert!(!html.contains("responses failed a check"), "{html}");
    assert!(
        render_text(&r).contains("Checks        2 of 50 replies failed a check"),
        "the text says the same"
    );
    let md = render_markdown(&Bundle::of_report(r.clone()));
    assert!(
        md.contains("Replies that failed a check count as failed."),
        "{md}"
    );
    assert!(!md.contains("Responses with a 2xx/3xx status"), "{md}");
    // An HTTP run's checks still judge responses.
    let mut http = report_of(1, 50, &[300], 0, 0);
    http.summary.checks = r.summary.checks.clone();
    let html = render_html(&http);
    assert!(
        html.contains("<p>Checks: 2 of 50 responses failed a check.</p>"),
        "{html}"
    );
    let md = render_markdown(&Bundle::of_report(http));
    assert!(md.contains("Responses with a 2xx/3xx status"), "{md}");
    assert!(!md.contains("Replies that failed"), "{md}");
}

/// Requests sent again on a new connection (issue 20): the HTML and Markdown reports say it
/// in the text's words, and the CSV summary ends with the count.
#[test]
fn retries_are_in_every_form() {
    let mut r = report_of(2, 100, &[300, 500], 0, 0);
    let said =
        "3 requests sent again on a new connection: a reused one closed before any response byte";
    let html = render_html(&r);
    assert!(!html.contains("Retries"), "no row without retries");
    r.summary.retries = 3;
    let text = render_text(&r);
    assert!(text.contains(said), "{text}");
    let counts = table(&render_html(&r), "counts").to_string();
    assert!(
        counts.contains(&format!("<tr><th>Retries</th><td>{said}</td></tr>")),
        "{counts}"
    );
    let md = render_markdown(&Bundle::of_report(r.clone()));
    assert!(md.contains(&format!("- Step 1 (target): {said}")), "{md}");
    let csv = render_csv_summary(&r);
    let (head, row) = (csv.lines().next().unwrap(), csv.lines().nth(1).unwrap());
    assert!(
        head.contains(",iterations_dropped,retries,grpc_method,"),
        "{csv}"
    );
    // The gRPC columns after it are empty for an HTTP run.
    assert!(row.ends_with(&format!(",3{}", ",".repeat(13))), "{csv}");
    r.summary.retries = 1;
    assert!(
        render_text(&r).contains("1 request sent again on a new connection")
            && render_html(&r).contains("1 request sent again on a new connection")
    );
}

#[test]
fn many_steps_become_small_multiples_and_comparisons_are_tables() {
    let html = render_html_bundle(&common::many_steps_bundle(8));
    self_contained(&html);
    for id in ["rps", "latency-over-time", "errors"] {
        assert!(html.contains(&format!("data-multiples=\"{id}\"")), "{id}");
        for n in 1..=8 {
            assert!(points(&html, &format!("{id}-step{n}")) > 0, "{id}-step{n}");
        }
        assert!(
            !html.contains(&format!("data-chart=\"{id}\" ")),
            "no overlaid {id} chart"
        );
    }
    // One shared y scale: every small rps chart has the same top tick.
    let tops: Vec<&str> = (1..=8)
        .map(|n| {
            let at = html.find(&format!("data-chart=\"rps-step{n}\"")).unwrap();
            let chart = &html[at..at + html[at..].find("</figure>").unwrap()];
            let first = chart.find("text-anchor=\"end\" class=\"tick\">").unwrap();
            let rest = &chart[first..];
            // The y ticks are written bottom (0) to top; the sixth is the top.
            rest.split("text-anchor=\"end\" class=\"tick\">")
                .nth(6)
                .unwrap()
                .split('<')
                .next()
                .unwrap()
        })
        .collect();
    assert!(tops.windows(2).all(|w| w[0] == w[1]), "{tops:?}");
    // The percentile spectrum stays one chart: its point is to lay the steps side by side.
    let at = html.find("data-chart=\"spectrum\"").unwrap();
    let spectrum = &html[at..at + html[at..].find("</figure>").unwrap()];
    assert_eq!(spectrum.matches("<path class=\"series\"").count(), 8);
    let compare = table(&html, "compare");
    assert!(
        compare.contains("<th>connections \\ target</th><th>alpha</th><th>beta</th>"),
        "{compare}"
    );
    assert!(compare.contains("<tr><td>4</td>"), "{compare}");
    assert_eq!(html.matches("<details data-step=").count(), 8);
    // Four steps stay one chart each.
    let four = render_html_bundle(&common::many_steps_bundle(4));
    assert!(points(&four, "rps") > 0 && !four.contains("data-multiples"));
}

//! Several scenarios in one plan (`scenarios:`): each with its own load model, start and
//! thresholds, run at once against the built-in target; each one's counts equal what the
//! server counted for it, its thresholds decide the exit code, merging keeps them exact,
//! and plan errors name file, line and column.

use super::*;

/// A closed journey with a login (the server counts logins and wrong tokens), a ramp over
/// HTTP/2 (the server counts HTTP/2 requests) and an open-model health check from 1 s.
fn three_scenarios(addr: std::net::SocketAddr, health_thresholds: &str) -> String {
    format!(
        r#"targets:
  shop: {{url: 'http://{addr}'}}
scenarios:
  buyers:
    steps:
      - name: login
        request: {{method: POST, url: /login, body: '{{"user":"u{{{{seq}}}}"}}'}}
        extract: {{token: json /token}}
        check: [status == 200]
      - name: list
        request: {{url: /items, headers: {{Authorization: 'Bearer {{{{token}}}}'}}}}
    load: {{users: 10, iterations: 300}}
    thresholds: [p99<2s, errors<1%, checks>=100%]
  browsers:
    steps:
      - name: json
        request: {{url: /json, protocol: h2}}
    load: {{stages: '1s:0->4,1s:4'}}
  health:
    steps: [{{name: status, request: {{url: /status}}}}]
    load: {{iterations_per_second: 50, iterations: 100}}
    start: 1s
    thresholds: {health_thresholds}
load: {{threads: 2}}
"#
    )
}

fn named<'a>(r: &'a Report, name: &str) -> &'a loadmark_report::NamedScenarioSummary {
    r.summary
        .scenarios
        .iter()
        .find(|s| s.name == name)
        .unwrap_or_else(|| panic!("no scenario {name}"))
}

#[test]
fn three_scenarios_with_their_own_load_models_and_starts_each_count_exactly() {
    let server = shop_h2();
    let dir = temp_dir("scenarios", "several");
    let (out, bundle) = bench(&dir, &three_scenarios(server.local_addr(), "['rps>1000']"));
    // health's own threshold fails (50 iterations per second): exit code 3, named.
    assert_eq!(out.status.code(), Some(3), "{}", text(&out));
    assert!(text(&out).contains("health: rps>1000"), "{}", text(&out));
    let bundle = bundle.unwrap();
    let r = &bundle.steps[0].report;
    let (buyers, browsers, health) = (named(r, "buyers"), named(r, "browsers"), named(r, "health"));
    // buyers: closed, 300 iterations of login + list, every token carried.
    assert_eq!(
        (buyers.scenario.iterations, buyers.scenario.aborted),
        (300, 0)
    );
    assert_eq!(buyers.requests, 600);
    assert_eq!(server.logins(), 300);
    assert_eq!(server.auth_failures(), 0);
    // browsers: a ramp over HTTP/2, the server's HTTP/2 count is its count.
    assert!(browsers.requests > 0);
    assert_eq!(server.http2_requests(), browsers.requests);
    assert_eq!(
        browsers.scenario.steps[0].status.class(2),
        browsers.requests
    );
    // health: open model from 1 s, 100 iterations at 50/s, none dropped.
    assert_eq!(
        (health.scenario.iterations, health.scenario.dropped),
        (100, 0)
    );
    assert_eq!(health.start_s, 1.0);
    assert!(
        (1.5..3.0).contains(&health.measured_s),
        "{}",
        health.measured_s
    );
    assert!(r.run.elapsed_s >= 2.9, "{}", r.run.elapsed_s);
    // The whole run's totals are the three added, and the server's.
    let all = buyers.requests + browsers.requests + health.requests;
    assert_eq!(r.summary.requests.completed, all);
    assert_eq!(server.requests_served(), all);
    // Each scenario's thresholds were checked on its own figures.
    let verdicts: Vec<(String, bool)> =
        r.thresholds.iter().map(|t| (t.label(), t.passed)).collect();
    assert_eq!(
        verdicts,
        [
            ("buyers: p99<2s".to_string(), true),
            ("buyers: errors<1%".to_string(), true),
            ("buyers: checks>=100%".to_string(), true),
            ("health: rps>1000".to_string(), false),
        ]
    );
    // Merging adds each scenario by name, exactly.
    let merged = loadmark_report::merge_reports(&[r.clone(), r.clone()]).unwrap();
    assert_eq!(named(&merged, "buyers").scenario.iterations, 600);
    assert_eq!(named(&merged, "health").requests, 200);
    assert_eq!(
        named(&merged, "browsers").latency.count,
        2 * browsers.latency.count
    );
    // Every format has a section per scenario.
    let md = std::fs::read_to_string(dir.join("out/BENCHMARKS.md")).unwrap();
    for expected in [
        "1 shop · buyers | login | 300 |",
        "Scenario health (from 1s",
    ] {
        assert!(md.contains(expected), "{expected}: {md}");
    }
    // Each scenario's seconds add up to its requests; health's begin at its start.
    let per_second = |r: &Report, name: &str| -> Vec<(u64, u64)> {
        r.series
            .iter()
            .filter_map(|p| {
                p.scenarios
                    .iter()
                    .find(|x| x.name == name)
                    .map(|x| (p.second, x.requests))
            })
            .collect()
    };
    for s in [buyers, browsers, health] {
        let seconds = per_second(r, &s.name);
        assert_eq!(
            seconds.iter().map(|x| x.1).sum::<u64>(),
            s.requests,
            "{}: {seconds:?}",
            s.name
        );
    }
    assert!(per_second(r, "health")
        .iter()
        .all(|&(second, _)| second >= 1));
    let merged_health: u64 = per_second(&merged, "health").iter().map(|x| x.1).sum();
    assert_eq!(merged_health, 200, "merged seconds add by scenario");
    let html = loadmark_report::render_html_bundle(&bundle);
    assert!(html.contains("Scenario browsers (from 0s"), "{html}");
    for chart in ["scenario-rps", "scenario-p99"] {
        assert!(html.contains(&format!("data-chart=\"{chart}\"")), "{chart}");
    }
    let text_report = loadmark_report::render_text(r);
    assert!(text_report.contains("Scenario buyers"), "{text_report}");
}

#[test]
fn several_scenarios_errors_name_file_line_column() {
    let dir = temp_dir("scenarios", "several-errors");
    let head = "targets:\n  a: {url: 'http://127.0.0.1:1'}\n";
    let cases = [
        (
            format!("{head}scenario:\n  - request: {{url: /x}}\nscenarios:\n  b: {{steps: [{{request: {{url: /y}}}}]}}\n"),
            "plan.yaml:5:1",
            "not both",
        ),
        (
            format!("{head}scenarios:\n  b:\n    steps:\n      - name: one\n        request: {{url: /x}}\n      - name: two\n        request: {{url: '/{{{{tokn}}}}'}}\n"),
            "plan.yaml:8:9",
            "scenarios.b: scenario step two",
        ),
        (
            format!("{head}scenarios:\n  b: {{steps: [{{request: {{url: /y}}}}]}}\nload: {{users: 3}}\n"),
            "plan.yaml:5:",
            "each scenario sets its own load",
        ),
        (
            format!("{head}scenarios:\n  b:\n    steps: [{{request: {{url: /y}}}}]\n    start: 500ms\n"),
            "plan.yaml:6:5",
            "whole seconds",
        ),
        (
            format!("{head}scenarios:\n  b:\n    steps: [{{request: {{url: /y}}}}]\n    load: {{threads: 2}}\n"),
            "plan.yaml:",
            "unknown field `threads`",
        ),
        (
            format!("{head}scenarios:\n  b:\n    steps: [{{request: {{url: /y}}}}]\n    thresholds: [p99<fast]\n"),
            "plan.yaml: scenarios.b.thresholds",
            "p99<fast",
        ),
    ];
    for (plan, place, says) in cases {
        std::fs::write(dir.join("plan.yaml"), &plan).unwrap();
        let out = loadmark()
            .current_dir(&dir)
            .args(["bench", "--check", "plan.yaml"])
            .output()
            .unwrap();
        let t = text(&out);
        assert_eq!(out.status.code(), Some(2), "{plan}\n{t}");
        assert!(
            t.contains(place) && t.contains(says),
            "{place} {says}: {plan}\n{t}"
        );
    }
    let schema = loadmark().args(["schema", "plan"]).output().unwrap();
    let schema: serde_json::Value = serde_json::from_slice(&schema.stdout).unwrap();
    assert!(schema["properties"]["scenarios"].is_object(), "{schema}");
}

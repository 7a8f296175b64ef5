//! Comparison verdicts and their text and Markdown golden files.

mod common;

use std::path::PathBuf;

use common::report_of;
use loadmark_report::{
    compare, render_comparison_html, render_comparison_markdown, render_comparison_text,
    CompareSettings, Compared, FailIf, Verdict,
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

#[test]
fn slower_candidate_is_flagged_and_gated() {
    let base = report_of(6, 200, &[400, 500, 600, 900, 2_000], 0, 0);
    let slow = report_of(6, 150, &[800, 1_000, 1_200, 1_800, 4_000], 40, 0);
    let mut c = compare(
        "base.json",
        &base,
        "slow.json",
        &slow,
        CompareSettings::default(),
    );
    assert_eq!(c.get(Compared::P50).verdict, Verdict::Worse);
    assert_eq!(c.get(Compared::P99).verdict, Verdict::Worse);
    assert_eq!(c.get(Compared::Rps).verdict, Verdict::Worse);
    assert_eq!(c.get(Compared::ErrorRate).verdict, Verdict::Worse);
    c.gates = ["p99>+10%", "rps<-50%"]
        .iter()
        .map(|g| FailIf::parse(g).unwrap().check(&c))
        .collect();
    assert!(!c.gates[0].passed && c.gates[1].passed);
    check("compare.txt", &render_comparison_text(&c));
    check("compare.md", &render_comparison_markdown(&c));
    let html = render_comparison_html(&c);
    assert!(
        html.contains("data-chart=\"compare-p99\" data-points=\"2\""),
        "{html}"
    );
    assert!(html.contains("<td class=\"warn\">slower</td>") && !html.contains("<script"));
    check("compare.html", &html);

    let same = compare("a", &base, "b", &base, CompareSettings::default());
    assert!(same
        .metrics
        .iter()
        .all(|m| m.verdict == Verdict::NoSignificantChange));
}

#[test]
fn short_runs_are_never_flagged() {
    let base = report_of(3, 200, &[400], 0, 0);
    let slow = report_of(3, 100, &[4_000], 0, 0);
    let c = compare("a", &base, "b", &slow, CompareSettings::default());
    assert!(c
        .metrics
        .iter()
        .all(|m| m.verdict == Verdict::NoSignificantChange));
    assert!(c.note.as_deref().unwrap().contains("fewer than 4"));
    let gate = FailIf::parse("p99>+10%").unwrap().check(&c);
    assert!(
        gate.passed && gate.detail.contains("within noise"),
        "{gate}"
    );
}

#[test]
fn a_run_that_measured_no_latency_compares_as_n_a_never_0_us() {
    let base = report_of(6, 200, &[400, 500, 600], 0, 0);
    let dead = report_of(6, 0, &[400], 0, 500);
    let c = compare(
        "base.json",
        &base,
        "dead.json",
        &dead,
        CompareSettings::default(),
    );
    for metric in [Compared::P50, Compared::P99, Compared::Max] {
        let m = c.get(metric);
        assert_eq!(m.candidate, None, "{metric:?}");
        assert_eq!(m.verdict, Verdict::NoSignificantChange);
    }
    let text = render_comparison_text(&c);
    let p99 = text
        .lines()
        .find(|l| l.trim_start().starts_with("p99 "))
        .unwrap();
    assert!(p99.contains("n/a") && !p99.contains(" 0µs"), "{text}");
    assert!(render_comparison_markdown(&c).contains("| n/a |"));
    let json = serde_json::to_value(&c).unwrap();
    let p50 = json["metrics"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["metric"] == "p50")
        .unwrap();
    assert!(p50["candidate"].is_null(), "{p50}");
    // Dead against dead: every latency is n/a on both sides, never "0µs → 0µs, no change".
    let c = compare("a", &dead, "b", &dead, CompareSettings::default());
    assert!(!render_comparison_text(&c).contains("0µs"));
}

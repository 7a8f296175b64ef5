//! JUnit XML of threshold results, so CI systems list each threshold as a test.
//!
//! Imports `model` only.

use std::fmt::Write as _;

use crate::model::ThresholdResult;

/// One `<testsuite>` named `suite` with a `<testcase>` per threshold; failed thresholds carry
/// a `<failure>` with the observed value.
pub fn render_junit(suite: &str, results: &[ThresholdResult]) -> String {
    render_junit_with_checks(suite, results, None)
}

/// As [`render_junit`], plus a `<testcase>` per response check (issue 17): a check that
/// failed on any response is a failed test case, with its counts and first failure.
pub fn render_junit_with_checks(
    suite: &str,
    results: &[ThresholdResult],
    checks: Option<&loadmark_metrics::CheckStats>,
) -> String {
    // (class, name, failure message or None, output)
    let mut cases: Vec<(&str, String, Option<String>, String)> = Vec::new();
    for r in results {
        let actual = r.actual.as_deref().unwrap_or("no data");
        let failure =
            (!r.passed).then(|| format!("threshold {} failed: actual {actual}", r.label()));
        cases.push((
            "loadmark.thresholds",
            r.label(),
            failure,
            format!("actual {actual}"),
        ));
    }
    for c in checks.iter().flat_map(|c| &c.checks) {
        let counts = format!("{} passed, {} failed", c.passed, c.failed);
        let failure = (c.failed > 0).then(|| {
            format!(
                "check {} failed on {} of {} responses; first: {}",
                c.name,
                c.failed,
                c.passed + c.failed,
                c.first_failure.as_deref().unwrap_or("")
            )
        });
        cases.push(("loadmark.checks", c.name.clone(), failure, counts));
    }
    let failures = cases.iter().filter(|c| c.2.is_some()).count();
    let mut o = String::from("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
    let _ = writeln!(
        o,
        "<testsuites name=\"loadmark\" tests=\"{}\" failures=\"{failures}\">",
        cases.len()
    );
    let _ = writeln!(
        o,
        "  <testsuite name=\"{}\" tests=\"{}\" failures=\"{failures}\" errors=\"0\">",
        xml_escape(suite),
        cases.len()
    );
    for (class, name, failure, out) in &cases {
        let name = xml_escape(name);
        match failure {
            None => {
                let _ = writeln!(
                    o,
                    "    <testcase classname=\"{class}\" name=\"{name}\">\n      <system-out>{}</system-out>\n    </testcase>",
                    xml_escape(out)
                );
            }
            Some(message) => {
                let kind = if *class == "loadmark.checks" {
                    "check"
                } else {
                    "threshold"
                };
                let _ = writeln!(
                    o,
                    "    <testcase classname=\"{class}\" name=\"{name}\">\n      <failure message=\"{m}\" type=\"{kind}\">{out}</failure>\n    </testcase>",
                    m = xml_escape(message),
                    out = xml_escape(out)
                );
            }
        }
    }
    o.push_str("  </testsuite>\n</testsuites>\n");
    o
}

fn xml_escape(s: &str) -> String {
    let mut o = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '<' => o.push_str("&lt;"),
            '>' => o.push_str("&gt;"),
            '&' => o.push_str("&amp;"),
            '"' => o.push_str("&quot;"),
            '\'' => o.push_str("&apos;"),
            c if (c as u32) < 0x20 && !matches!(c, '\n' | '\t' | '\r') => {}
            c => o.push(c),
        }
    }
    o
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_and_counts() {
        let xml = render_junit(
            "GET http://h/?a=1&b=2",
            &[
                ThresholdResult {
                    threshold: "p99<50ms".into(),
                    passed: true,
                    actual: Some("1.20ms".into()),
                    scenario: None,
                },
                ThresholdResult {
                    threshold: "rps>10000".into(),
                    passed: false,
                    actual: None,
                    scenario: None,
                },
            ],
        );
        assert!(xml.contains("tests=\"2\" failures=\"1\""), "{xml}");
        assert!(xml.contains("name=\"p99&lt;50ms\""), "{xml}");
        assert!(xml.contains("a=1&amp;b=2"), "{xml}");
        assert!(xml.contains("actual no data</failure>"), "{xml}");
        assert_eq!(xml.matches("<testcase ").count(), 2);
    }
}

//! JUnit XML of threshold results, so CI systems list each threshold as a test.

use std::fmt::Write as _;

use crate::threshold::ThresholdResult;

/// One `<testsuite>` named `suite` with a `<testcase>` per threshold; failed thresholds carry
/// a `<failure>` with the observed value.
pub fn render_junit(suite: &str, results: &[ThresholdResult]) -> String {
    let failures = results.iter().filter(|r| !r.passed).count();
    let mut o = String::from("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
    let _ = writeln!(
        o,
        "<testsuites name=\"loadmark\" tests=\"{}\" failures=\"{failures}\">",
        results.len()
    );
    let _ = writeln!(
        o,
        "  <testsuite name=\"{}\" tests=\"{}\" failures=\"{failures}\" errors=\"0\">",
        xml_escape(suite),
        results.len()
    );
    for r in results {
        let actual = r.actual.as_deref().unwrap_or("no data");
        let name = xml_escape(&r.threshold);
        if r.passed {
            let _ = writeln!(
                o,
                "    <testcase classname=\"loadmark.thresholds\" name=\"{name}\">\n      <system-out>actual {}</system-out>\n    </testcase>",
                xml_escape(actual)
            );
        } else {
            let _ = writeln!(
                o,
                "    <testcase classname=\"loadmark.thresholds\" name=\"{name}\">\n      <failure message=\"threshold {name} failed: actual {a}\" type=\"threshold\">actual {a}</failure>\n    </testcase>",
                a = xml_escape(actual)
            );
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
                },
                ThresholdResult {
                    threshold: "rps>10000".into(),
                    passed: false,
                    actual: None,
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

//! Merging adds histograms and counters exactly, in any order.

mod common;

use common::report_of;
use loadmark_metrics::new_histogram;
use loadmark_report::{merge_reports, render_json, MergeError};

fn latencies(seed: u64, n: usize) -> Vec<u64> {
    (0..n as u64)
        .map(|i| 100 + (i * 7919 + seed * 104_729) % (20_000 + seed * 1_000))
        .collect()
}

#[test]
fn merged_percentiles_equal_one_histogram_of_all_samples() {
    let inputs = [(1, 3, 200), (2, 2, 150), (3, 4, 90)];
    let mut all = new_histogram();
    let mut reports = Vec::new();
    for (seed, seconds, per_second) in inputs {
        let lat = latencies(seed, 997);
        let n = (seconds * per_second) as usize;
        for i in 0..n {
            all.record(lat[i % lat.len()]).unwrap();
        }
        reports.push(report_of(seconds, per_second, &lat, 50, seed));
    }
    let merged = merge_reports(&reports).unwrap();
    assert_eq!(merged.totals.latency, all);
    for q in [0.5, 0.9, 0.99, 0.999, 1.0] {
        assert_eq!(
            merged.totals.latency.value_at_quantile(q),
            all.value_at_quantile(q)
        );
    }
    assert_eq!(
        merged.summary.latency.percentile(99.0),
        Some(all.value_at_quantile(0.99))
    );
    let responses: u64 = reports.iter().map(|r| r.summary.requests.responses).sum();
    assert_eq!(merged.summary.requests.responses, responses);
    assert_eq!(merged.summary.requests.responses, 600 + 300 + 360);
    assert_eq!(merged.summary.requests.errors, 1 + 2 + 3);
    assert_eq!(
        merged.summary.status.get(503),
        reports
            .iter()
            .map(|r| r.summary.status.get(503))
            .sum::<u64>()
    );
    // Series add per second index: second 0 has all three, second 3 only the 4 s run.
    assert_eq!(merged.series[0].responses, 200 + 150 + 90);
    assert_eq!(merged.series[3].responses, 90);
    let series_total: u64 = merged.series.iter().map(|p| p.responses).sum();
    assert_eq!(series_total, responses);
    // Side by side runs: the longest measured time, all responses over it.
    assert!((merged.summary.rps - responses as f64 / 4.0).abs() < 1e-9);
}

#[test]
fn merge_order_does_not_matter() {
    let a = report_of(2, 100, &latencies(1, 101), 0, 0);
    let b = report_of(3, 70, &latencies(2, 89), 7, 1);
    let mut c = report_of(1, 300, &latencies(3, 57), 0, 2);
    c.run.target_addr = "127.0.0.1:9090".into();
    let orders = [
        vec![a.clone(), b.clone(), c.clone()],
        vec![c.clone(), a.clone(), b.clone()],
        vec![b.clone(), c.clone(), a.clone()],
        vec![b.clone(), a.clone(), c.clone()],
    ];
    let first = render_json(&merge_reports(&orders[0]).unwrap());
    common::assert_valid_report(&first);
    for order in &orders[1..] {
        assert!(render_json(&merge_reports(order).unwrap()) == first);
    }
    // Merging pairwise then again gives the same histograms as merging all at once.
    let ab = merge_reports(&[a.clone(), b.clone()]).unwrap();
    let abc = merge_reports(&[ab, c.clone()]).unwrap();
    assert_eq!(abc.totals, merge_reports(&orders[0]).unwrap().totals);
}

#[test]
fn nothing_or_mixed_kinds_is_refused() {
    assert!(matches!(merge_reports(&[]), Err(MergeError::Empty)));
    let a = report_of(1, 10, &[100], 0, 0);
    let mut b = a.clone();
    b.run.latency_definition = "open".into();
    match merge_reports(&[a.clone(), b]) {
        Err(MergeError::Differ(d)) => {
            assert_eq!(d.len(), 1, "{d:?}");
            assert!(
                d[0].starts_with("latency definition: report 1 has from the first byte"),
                "{d:?}"
            );
        }
        other => panic!("{other:?}"),
    }
    let mut c = a.clone();
    c.plan.request.url = loadmark_plan::Target::parse("http://127.0.0.1:8080/other").unwrap();
    let names = ["a.json".to_string(), "c.json".to_string()];
    match loadmark_report::merge_reports_with(&[a.clone(), c.clone()], &names, false) {
        Err(MergeError::Differ(d)) => assert_eq!(
            d,
            ["URL: a.json has http://127.0.0.1:8080/api/features, c.json has http://127.0.0.1:8080/other"]
        ),
        other => panic!("{other:?}"),
    }
    let forced = loadmark_report::merge_reports_with(&[a, c], &names, true).unwrap();
    assert_eq!(forced.summary.requests.responses, 20);
    assert!(forced.run.health.findings[0]
        .starts_with("merged with --force although the reports differ in URL: a.json has"));
}

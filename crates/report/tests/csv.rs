//! CSV renderers: golden files, and the rows add up to the summary.

mod common;

use std::path::PathBuf;

use loadmark_report::{render_bundle_csv, render_csv, render_csv_summary, Bundle};

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
fn series_and_summary_csv() {
    let r = common::report_of(3, 100, &[300, 900, 1_500, 20_000], 50, 2);
    let series = render_csv(&r);
    let rows: Vec<Vec<&str>> = series.lines().map(|l| l.split(',').collect()).collect();
    assert_eq!(rows[0][2], "responses");
    assert!(rows.iter().all(|row| row.len() == rows[0].len()));
    let total: u64 = rows[1..]
        .iter()
        .map(|row| row[2].parse::<u64>().unwrap())
        .sum();
    assert_eq!(total, r.summary.requests.responses);
    check("run.series.csv", &series);

    let summary = render_csv_summary(&r);
    let lines: Vec<&str> = summary.lines().collect();
    assert_eq!(lines.len(), 2);
    assert_eq!(
        lines[0].split(',').count(),
        lines[1].split(',').count(),
        "{summary}"
    );
    assert!(lines[1].contains(",300,"), "{summary}");
    check("run.summary.csv", &summary);

    let bundle = render_bundle_csv(&Bundle::of_report(r));
    assert!(bundle.starts_with("step,target,params,second,"));
    assert!(
        bundle.lines().nth(1).unwrap().starts_with("1,target,,0,"),
        "{bundle}"
    );
}

//! `loadmark k8s`: the Indexed Job and ConfigMap, golden-tested (regenerate with
//! UPDATE_GOLDEN=1). Kubernetes cannot run here; `.ci/run` also validates the golden file
//! against the Kubernetes schemas with `kubernetes-validate` when it can install it.

mod common;

use common::loadmark;

const DIR: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/testdata");

fn k8s(extra: &[&str]) -> std::process::Output {
    loadmark()
        .arg("k8s")
        .arg(format!("{DIR}/k8s-plan.yaml"))
        .args(extra)
        .output()
        .unwrap()
}

#[test]
fn the_indexed_job_matches_its_golden_file() {
    let o = k8s(&[
        "--workers",
        "8",
        "--image",
        "registry.example/loadmark:0.1.0",
        "--name",
        "api-split",
        "--start-at",
        "2026-12-01T10:00:00Z",
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let got = String::from_utf8(o.stdout).unwrap();
    let path = format!("{DIR}/k8s-job.yaml");
    if std::env::var_os("UPDATE_GOLDEN").is_some() {
        std::fs::write(&path, &got).unwrap();
    }
    let want = std::fs::read_to_string(&path).expect("golden file: run with UPDATE_GOLDEN=1");
    assert_eq!(got, want, "regenerate with UPDATE_GOLDEN=1 if intended");
    // What the Job promises, checked on the text too: a future start, N of N, no retries.
    for line in [
        "completionMode: Indexed",
        "completions: 8",
        "parallelism: 8",
        "backoffLimit: 0",
        "restartPolicy: Never",
        "- env/8",
        "- \"2026-12-01T10:00:00Z\"",
    ] {
        assert!(got.contains(line), "{line}");
    }
    // The plan in the ConfigMap is the plan the workers run: it reads back as JSON.
    let plan_line = got
        .lines()
        .find_map(|l| l.strip_prefix("  plan.json: "))
        .unwrap();
    let json: String = serde_json::from_str(plan_line).unwrap();
    let plan: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert_eq!(plan["load"]["kind"], "open");
}

#[test]
fn bad_k8s_flags_are_usage_errors_that_say_what_was_expected() {
    for (args, says) in [
        (&["--workers", "0", "--image", "i"][..], "--workers"),
        (
            &["--workers", "2", "--image", "i", "--name", "Bad_Name"][..],
            "--name Bad_Name",
        ),
        (
            &["--workers", "2", "--image", "i", "--start-at", "tomorrow"][..],
            "--start-at",
        ),
    ] {
        let o = k8s(args);
        assert_eq!(o.status.code(), Some(2), "{args:?}");
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(err.contains(says), "{args:?}: {err}");
    }
}

#[test]
fn a_pod_log_merges_as_it_is() {
    // A worker's framed result in a log (with other lines around it) reads as its report.
    let server = common::target();
    let dir = common::temp_dir("k8s", "logs");
    let url = format!("http://127.0.0.1:{}/status", server.local_addr().port());
    let plan = loadmark()
        .args(["run", &url, "-n", "20", "-c", "2", "-q", "--format", "json"])
        .output()
        .unwrap();
    let report = common::report_json(&String::from_utf8_lossy(&plan.stdout)).unwrap();
    let plan_json = serde_json::to_string(&report.plan).unwrap();
    let mut logs = Vec::new();
    for i in 0..2 {
        let o = loadmark()
            .args([
                "worker",
                "--plan-json",
                &plan_json,
                "--segment",
                "env/2",
                "--run-id",
                "pods",
            ])
            .env("JOB_COMPLETION_INDEX", i.to_string())
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        let log = dir.join(format!("pod-{i}.log"));
        let mut text = b"pod starting\n".to_vec();
        text.extend_from_slice(&o.stdout);
        std::fs::write(&log, text).unwrap();
        logs.push(log.display().to_string());
    }
    let o = loadmark()
        .args(["merge", &logs[0], &logs[1]])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let merged = common::report_json(&String::from_utf8_lossy(&o.stdout)).unwrap();
    assert_eq!(merged.summary.requests.responses, 20);
    assert_eq!(server.requests_served(), 20 + 20);
    let parts = &merged.split.as_ref().unwrap().parts;
    assert_eq!(
        parts.iter().map(|p| p.responses).collect::<Vec<_>>(),
        [10, 10]
    );
}

//! `loadmark grpc` under every load model (issue 36: "closed loop, open loop and ramps,
//! segments ... as for HTTP"), against the built-in target's unary echo in this process: a
//! count, a connection ramp and a rate ramp (`--stages`), an open loop, and a count split in
//! two segments. What each report counts is what the target served, call for call.

mod common;

use common::*;

/// `loadmark grpc ADDR --call Echo ARGS -q --format json`: its exit code and report.
fn echo(addr: &str, args: &[&str]) -> (Option<i32>, serde_json::Value, String) {
    let out = loadmark()
        .args(["grpc", addr, "--call", "loadmark.target.Target/Echo"])
        .args(["--data", r#"{"text":"call {{seq}}"}"#, "-t", "1"])
        .args(args)
        .args(["-q", "--format", "json"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    let report = serde_json::from_slice(&out.stdout).unwrap_or(serde_json::Value::Null);
    (out.status.code(), report, stderr)
}

/// Calls the report counts OK, and every call it counts by status.
fn ok_and_all(report: &serde_json::Value) -> (u64, u64) {
    let codes = report["totals"]["grpc"]["codes"].as_array().unwrap();
    let count = |c: &serde_json::Value| c["count"].as_u64().unwrap();
    let ok = codes.iter().filter(|c| c["name"] == "OK").map(count).sum();
    (ok, codes.iter().map(count).sum())
}

#[test]
fn every_load_model_counts_the_calls_the_target_served() {
    let server = target_h2();
    let addr = server.local_addr().to_string();
    let models: [(&str, &[&str]); 4] = [
        ("closed", &["-c", "4", "-n", "400"]),
        (
            "connection ramp",
            &["-c", "1", "--stages", "500ms:4,500ms:4"],
        ),
        ("open", &["-R", "300", "-d", "1s"]),
        (
            "rate ramp",
            &["-R", "100", "--stages", "500ms:400,500ms:400"],
        ),
    ];
    for (model, load) in models {
        let before = server.grpc_calls();
        let (code, report, stderr) = echo(&addr, load);
        assert_eq!(code, Some(0), "{model}: {stderr}");
        let requests = &report["summary"]["requests"];
        assert_eq!(requests["errors"], 0, "{model}: {requests}");
        let (ok, all) = ok_and_all(&report);
        assert_eq!(ok, all, "{model}: every call OK");
        assert_eq!(requests["responses"], all, "{model}");
        // Nothing is left in flight at the end of a count; a timed run may end with calls
        // the target serves after the report is written.
        let in_flight = requests["in_flight_at_end"].as_u64().unwrap();
        let served = server.grpc_calls() - before;
        assert!(
            (all..=all + in_flight).contains(&served),
            "{model}: the target served {served}, the report counts {all} (+{in_flight} in flight)"
        );
        match model {
            "closed" => assert_eq!(all, 400),
            // The schedule's calls, each sent and answered (none dropped on this target).
            "open" => assert!((298..=300).contains(&all), "{model}: {all}"),
            // 100 a second rising to 400 over 0.5 s (125 calls), then 400 for 0.5 s (200).
            "rate ramp" => assert!((322..=326).contains(&all), "{model}: {all}"),
            // Closed loop for a second, one connection rising to four: as many as it served.
            _ => assert!(all > 0, "{model}: {report}"),
        }
    }

    // A count split in two segments: each takes its half, and together every call once.
    let before = server.grpc_calls();
    let mut total = 0;
    for segment in ["0/2", "1/2"] {
        let (code, report, stderr) = echo(&addr, &["-c", "2", "-n", "300", "--segment", segment]);
        assert_eq!(code, Some(0), "segment {segment}: {stderr}");
        let (ok, all) = ok_and_all(&report);
        assert_eq!((ok, all), (150, 150), "segment {segment}");
        total += all;
    }
    assert_eq!(server.grpc_calls() - before, total);
    assert_eq!(total, 300);
}

//! `loadmark grpc` against a gRPC server that misbehaves on purpose (issue 36): a real HTTP/2
//! server on loopback (the `h2` crate, hyper's HTTP/2, not loadmark's), one way of breaking
//! the gRPC protocol per method of grpc_support/hostile.proto. Every call ends within
//! bounds and is counted under the status a gRPC client gives it: the status counts equal
//! the calls the server took, and a call that got no answer is also an error of its kind.

mod common;
#[path = "grpc_support/h2_server.rs"]
mod h2_server;

use h2_server::{bounded_run, codes, hostile_server};

use std::time::Duration;

/// The errors counted under each kind (the kinds with any).
fn errors(report: &serde_json::Value) -> Vec<(String, u64)> {
    let by_kind = report["summary"]["errors"]
        .as_object()
        .unwrap_or_else(|| panic!("no summary.errors in {report}"));
    by_kind
        .iter()
        .map(|(kind, e)| (kind.clone(), e["count"].as_u64().unwrap_or(0)))
        .filter(|(_, count)| *count > 0)
        .collect()
}

#[test]
fn every_hostile_answer_is_classified_as_a_grpc_client_would_and_none_hangs() {
    let (addr, served) = hostile_server();
    const CALLS: u64 = 8;
    let calls = CALLS.to_string();
    let load = ["-c", "2", "--streams", "2", "-n", calls.as_str()];
    // (method, the status every call ends with, words of its message, error kind if the
    // call got no answer)
    let cases: [(&str, &str, &str, Option<&str>); 7] = [
        ("TrailersOnly", "UNAVAILABLE", "hostile and down", None),
        (
            "TooLarge",
            "RESOURCE_EXHAUSTED",
            "over the limit of 4194304",
            None,
        ),
        (
            "CompressedUnasked",
            "INTERNAL",
            "without grpc-encoding",
            None,
        ),
        ("UnknownFlag", "INTERNAL", "compressed flag 2", None),
        ("NoStatusOnData", "INTERNAL", "without grpc-status", None),
        (
            "NoStatusInTrailers",
            "INTERNAL",
            "without grpc-status",
            None,
        ),
        (
            "Reset",
            "INTERNAL",
            "RST_STREAM INTERNAL_ERROR",
            Some("protocol"),
        ),
    ];
    for (method, status, words, error) in cases {
        let (report, took) = bounded_run(addr, method, &load, Duration::from_secs(30));
        assert!(took < Duration::from_secs(10), "{method} took {took:?}");
        let counted = codes(&report);
        assert_eq!(counted.len(), 1, "{method}: {counted:?}");
        let (name, count, message) = &counted[0];
        assert_eq!((name.as_str(), *count), (status, CALLS), "{method}");
        assert!(message.contains(words), "{method}: {message:?}");
        let expected: Vec<(String, u64)> = error
            .map(|kind| (kind.to_string(), CALLS))
            .into_iter()
            .collect();
        assert_eq!(errors(&report), expected, "{method}");
        // Calls without an answer are told apart, so `failed` counts them once.
        let unanswered = report["totals"]["grpc"]["unanswered"].as_u64().unwrap_or(0);
        assert_eq!(
            unanswered,
            if error.is_some() { CALLS } else { 0 },
            "{method}"
        );
    }

    // A server that answers nothing: each call ends at its deadline (--timeout) as
    // DEADLINE_EXCEEDED, a timeout error too.
    let (report, took) = bounded_run(
        addr,
        "Stall",
        &["-c", "2", "--streams", "2", "-n", "4", "--timeout", "300ms"],
        Duration::from_secs(30),
    );
    assert!(took < Duration::from_secs(10), "Stall took {took:?}");
    let counted = codes(&report);
    assert_eq!(counted.len(), 1, "{counted:?}");
    assert_eq!(
        (counted[0].0.as_str(), counted[0].1),
        ("DEADLINE_EXCEEDED", 4)
    );
    assert_eq!(errors(&report), [("timeout".to_string(), 4)]);
    assert_eq!(report["totals"]["grpc"]["unanswered"], 4);

    // The server took every call the runs made, no more.
    let served = served.lock().unwrap().calls.clone();
    for (method, ..) in cases {
        assert_eq!(served.get(method), Some(&CALLS), "{method}: {served:?}");
    }
    assert_eq!(served.len(), cases.len() + 1, "{served:?}");
}

/// `--max-recv-message-size` (ghz's): TooLarge's message says it is 5 MiB. Under a 1 MiB
/// limit each call ends as RESOURCE_EXHAUSTED naming that limit; under 8 MiB the message is
/// let in, and the call waits for bytes the server never sends until its deadline.
#[test]
fn the_receive_limit_is_the_one_asked_for() {
    let (addr, served) = hostile_server();
    let load = ["-c", "1", "-n", "3", "--timeout", "300ms"];
    let (report, _) = bounded_run(
        addr,
        "TooLarge",
        &[&["--max-recv-message-size", "1MiB"][..], &load].concat(),
        Duration::from_secs(30),
    );
    let counted = codes(&report);
    assert_eq!(counted.len(), 1, "{counted:?}");
    assert_eq!(
        (counted[0].0.as_str(), counted[0].1),
        ("RESOURCE_EXHAUSTED", 3)
    );
    assert!(
        counted[0]
            .2
            .contains("of 5242880 bytes, over the limit of 1048576"),
        "{counted:?}"
    );
    let (report, _) = bounded_run(
        addr,
        "TooLarge",
        &[&["--max-recv-message-size", "8MiB"][..], &load].concat(),
        Duration::from_secs(30),
    );
    let counted = codes(&report);
    assert_eq!(counted.len(), 1, "{counted:?}");
    assert_eq!(
        (counted[0].0.as_str(), counted[0].1),
        ("DEADLINE_EXCEEDED", 3)
    );
    assert_eq!(errors(&report), [("timeout".to_string(), 3)]);
    assert_eq!(served.lock().unwrap().calls.get("TooLarge"), Some(&6));
}
